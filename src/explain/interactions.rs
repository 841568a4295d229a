//! Shapley interaction values of the path-dependent game (shap's
//! `shap_interaction_values`): for `i ≠ j`, half the Shapley interaction index
//! `Φ_ij = ½ ∫₀¹ ∂_i ∂_j V(t) dt` of Owen's extension, the same for `(j, i)`; on the
//! diagonal, each feature's Shapley value minus its interactions, so that a row of the
//! matrix sums to the feature's Shapley value and the whole matrix to the prediction minus
//! the expected value. Computed exactly at each leaf with the path-dependent values
//! (`path`); a tree whose terms exceed the bound is an error here, not an estimate.

use super::{check_rows, expected_value, path, Input, Limits, Prepared, Sink};
use crate::alloc;
use crate::cancel;
use crate::error::{Error, Result};
use crate::forest::Forest;
use ndarray::{Array4, ArrayView2};
use std::sync::Mutex;

/// Shapley interaction values of a forest's outputs.
#[derive(Clone, Debug)]
pub struct Interactions {
    /// `values[[r, i, j, c]]`: the interaction of features `i` and `j` in row `r`'s
    /// output `c` (n × p × p × outputs), symmetric in `i` and `j`.
    pub values: Array4<f64>,
    /// The path-dependent game's value of the empty coalition, per output.
    pub expected_value: Vec<f64>,
}

impl Forest {
    /// Shapley interaction values of the path-dependent game for every row of `x` (see
    /// the module docs of [`crate::explain`]).
    ///
    /// # Errors
    /// As [`Forest::shap_values_with`]; [`Error::OutOfMemory`] when the n × p × p ×
    /// outputs result cannot be allocated; [`Error::InvalidInput`] when a tree's exact
    /// computation needs more than `limits.max_terms` terms.
    pub fn shap_interaction_values(
        &self,
        x: ArrayView2<'_, f32>,
        limits: Limits,
        n_jobs: i64,
    ) -> Result<Interactions> {
        let p = self.n_features();
        let x = x.mapv(f64::from);
        check_rows(x.view(), p, "x")?;
        let trees: Vec<Prepared<'_>> = self
            .trees()
            .iter()
            .map(|t| Prepared::new(t, Input::Direct(self.descriptors()), p))
            .collect();
        interactions(&trees, self.n_outputs(), x.view(), limits, n_jobs)
    }
}

/// [`Forest::shap_interaction_values`] of a rotation ensemble on its original features
/// (the arguments of [`super::shap_values_rotated`]).
///
/// # Errors
/// As [`super::shap_values_rotated`] and [`Forest::shap_interaction_values`].
pub fn shap_interaction_values_rotated(
    forests: &[&Forest],
    rotations: &[f64],
    scaled: ArrayView2<'_, f64>,
    limits: Limits,
    n_jobs: i64,
) -> Result<Interactions> {
    let (trees, k) = super::rotated_trees(forests, rotations, scaled.ncols())?;
    check_rows(scaled, scaled.ncols(), "x")?;
    interactions(&trees, k, scaled, limits, n_jobs)
}

/// The interaction values of the mean of `trees` for the rows `x`.
fn interactions(
    trees: &[Prepared<'_>],
    k: usize,
    x: ArrayView2<'_, f64>,
    limits: Limits,
    n_jobs: i64,
) -> Result<Interactions> {
    let (n, p) = x.dim();
    if limits.max_terms == 0 {
        return Err(Error::InvalidInput("max_terms must be at least 1".into()));
    }
    let width = p
        .checked_mul(p)
        .and_then(|w| w.checked_mul(k))
        .ok_or_else(|| Error::OutOfMemory("the interaction values overflow".into()))?;
    super::check_output(n, width, "the Shapley interaction values")?;
    let mut values = alloc::table::<f64>(n, width, "the Shapley interaction values")?;
    let scale = 1.0 / trees.len().max(1) as f64;
    let failed = Mutex::new(None);
    let explain_row = |s: &mut (Sink, path::PathScratch, Vec<f64>),
                       (i, out): (usize, &mut [f64])| {
        if cancel::requested() {
            return;
        }
        let (sink, scratch, main) = s;
        let row: Vec<f64> = x.row(i).to_vec();
        main.fill(0.0);
        for (t, tree) in trees.iter().enumerate() {
            if cancel::requested() {
                return;
            }
            if path::explain(tree, &row, limits, scratch, sink, Some(&mut *out)).is_err() {
                sink.discard();
                *failed.lock().unwrap_or_else(|e| e.into_inner()) = Some(format!(
                    "row {i}, tree {t}: the exact interaction values need more than \
                     max_terms={} terms (raise max_terms)",
                    limits.max_terms
                ));
                return;
            }
            sink.commit(main);
        }
        // the diagonal: each feature's value minus its interactions
        for a in 0..p {
            for c in 0..k {
                let off: f64 = (0..p)
                    .filter(|&b| b != a)
                    .map(|b| out[(a * p + b) * k + c])
                    .sum();
                out[(a * p + a) * k + c] = main[a * k + c] - off;
            }
        }
        out.iter_mut().for_each(|v| *v *= scale);
    };
    let init = || (Sink::new(p, k), path::PathScratch::new(p), vec![0.0; p * k]);
    super::rows_in_parallel(&mut values, width, n_jobs, init, explain_row)?;
    cancel::check()?;
    if let Some(msg) = failed.into_inner().unwrap_or_else(|e| e.into_inner()) {
        return Err(Error::InvalidInput(msg));
    }
    let values =
        Array4::from_shape_vec((n, p, p, k), values).map_err(|e| Error::Internal(e.to_string()))?;
    Ok(Interactions {
        values,
        expected_value: expected_value(trees, k, None),
    })
}
