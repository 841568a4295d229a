//! Quantile regression forests (Meinshausen 2006): conditional quantiles of the target
//! from the training targets in the leaves a row reaches.
//!
//! A forest grown with `store_leaf_values` keeps the training targets and sample weights
//! once ([`LeafTargets`]) and, per leaf, the rows that fill it with their counts
//! ([`crate::tree::LeafRows`]: the in-bag rows, or an honest tree's honest rows).
//!
//! The weights of a row x: each tree t whose leaf `L_t(x)` holds rows gives training row
//! i the share `c_ti s_i / W_t` of that leaf (count × sample weight over the leaf's
//! total), and the forest's weight of row i is the mean of its shares over those trees
//! (Meinshausen's weights), scaled to add up to `N`, the mean over those trees of the
//! leaf's total `W_t` (its counts when every sample weight is 1): with leaves of equal
//! size, a weight is then a count. Sample weights are frequency weights: a whole-number
//! weight w gives a row's target the multiplicity of w copies of the row, so a fit with
//! integer weights has the quantiles of the same fit on the rows repeated (fractional
//! weights extend this; weights far from 1 everywhere, e.g. normalised to sum to 1,
//! shrink or inflate the sample the interpolation sees).
//! The q-quantile is numpy's default ("linear", Hyndman & Fan's type 7) quantile of the
//! sample in which each target appears as often as its weight says, extended to real
//! weights: with the targets ascending and `C_j` their cumulative weights, the copies of
//! target j sit at positions up to `C_j - 1`, the first copy of the next one at `C_j`,
//! and the quantile is the value at position `q (C_total - 1)`, interpolated linearly
//! between the last copy of one target and the first of the next. These are the
//! definitions of the quantile-forest package's `predict` with `weighted_quantile=True,
//! weighted_leaves=True` (there, sample weights only exclude rows of weight 0), so both
//! give the same quantiles from the same forest.
//!
//! Out-of-bag quantiles use, for each training row, only the trees that did not draw it.
//! A row that no tree gives weights gets NaN. Each row's quantiles depend on its own
//! leaves only, so results do not depend on the thread count.

use super::oob::is_out_of_bag;
use super::{FitData, Forest};
use crate::cancel;
use crate::data::Targets;
use crate::error::{Error, Result};
use crate::sparse::Features;
use ndarray::Array3;
use serde::{Deserialize, Serialize};

/// The training targets a forest that keeps leaf values refers to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LeafTargets {
    /// n × outputs targets, row-major.
    pub y: Vec<f64>,
    /// The fit's sample weights (as the fit used them, maybe rescaled by a power of two);
    /// empty when every weight is 1.
    pub sample_weight: Vec<f64>,
}

impl LeafTargets {
    /// The targets of a fit whose forest keeps leaf values, `None` for other fits.
    pub(crate) fn of(data: &FitData<'_>) -> Option<LeafTargets> {
        if !data.params.store_leaf_values {
            return None;
        }
        let y = match &data.y {
            Targets::Values(y) | Targets::MultiValues { y, .. } => y.clone(),
            Targets::Classes(_) | Targets::MultiClasses { .. } | Targets::Unlabelled => {
                return None
            }
        };
        let sample_weight = match &data.sample_weight {
            Some(w) if w.iter().any(|&v| v != 1.0) => w.clone(),
            _ => Vec::new(),
        };
        Some(LeafTargets { y, sample_weight })
    }

    fn weight(&self, row: usize) -> f64 {
        self.sample_weight.get(row).copied().unwrap_or(1.0)
    }

    /// Bytes held.
    pub(crate) fn n_bytes(&self) -> u64 {
        8 * (self.y.len() + self.sample_weight.len()) as u64
    }
}

/// The targets of each output in ascending order, and each row's position in that order.
#[derive(Clone, Debug, Default)]
pub(crate) struct QuantileOrder {
    /// Per output, the targets ascending.
    sorted: Vec<Vec<f64>>,
    /// Per output, each training row's position in `sorted`.
    rank: Vec<Vec<u32>>,
}

impl QuantileOrder {
    fn new(targets: &LeafTargets, k: usize) -> Self {
        let n = targets.y.len() / k;
        let mut out = QuantileOrder::default();
        for o in 0..k {
            let value = |i: u32| targets.y[i as usize * k + o];
            let mut order: Vec<u32> = (0..n as u32).collect();
            order.sort_by(|&a, &b| value(a).total_cmp(&value(b)).then(a.cmp(&b)));
            let mut rank = vec![0u32; n];
            for (pos, &i) in order.iter().enumerate() {
                rank[i as usize] = pos as u32;
            }
            out.sorted.push(order.iter().map(|&i| value(i)).collect());
            out.rank.push(rank);
        }
        out
    }
}

/// Per-row scratch of the quantile computation.
#[derive(Default)]
struct Scratch {
    /// (training row, weight) over the trees used, before scaling.
    entries: Vec<(u32, f64)>,
    /// (position in one output's order, weight), merged.
    ranked: Vec<(u32, f64)>,
    values: Vec<f64>,
    cum: Vec<f64>,
}

impl Forest {
    /// Conditional quantiles of the targets at each row of `x` (see the module doc): shape
    /// (n_samples, n_outputs, quantiles.len()), where n_outputs is the number of target
    /// columns.
    ///
    /// # Errors
    /// A forest grown without `store_leaf_values`, a quantile outside [0, 1] (or none),
    /// and the errors of [`Forest::predict`].
    pub fn predict_quantiles<'x>(
        &self,
        x: impl Into<Features<'x>>,
        quantiles: &[f64],
        n_jobs: i64,
    ) -> Result<Array3<f64>> {
        self.quantiles_of(x.into(), quantiles, n_jobs, None)
    }

    /// Out-of-bag quantiles of the training rows `x` (the rows of the fit, in order): each
    /// row's quantiles from the trees that did not draw it, NaN where there is none. Shape
    /// as [`Forest::predict_quantiles`].
    ///
    /// # Errors
    /// As [`Forest::predict_quantiles`]; a forest grown without bootstrap, or `x` with a
    /// number of rows other than the fit's.
    pub fn oob_quantiles<'x>(
        &self,
        x: impl Into<Features<'x>>,
        quantiles: &[f64],
        n_jobs: i64,
    ) -> Result<Array3<f64>> {
        let x = x.into();
        if !self.params.bootstrap {
            return Err(Error::InvalidParameter {
                name: "bootstrap",
                reason: "out-of-bag quantiles are only available if bootstrap=True".into(),
            });
        }
        let n_fit = self.leaf_values()?.y.len() / self.params.task.n_targets();
        if x.nrows() != n_fit {
            return Err(Error::InvalidInput(format!(
                "out-of-bag quantiles need the {n_fit} training rows of the fit, in order; X \
                 has {} rows",
                x.nrows()
            )));
        }
        let bits = self.out_of_bag_bits(n_fit, n_jobs)?;
        self.quantiles_of(x, quantiles, n_jobs, Some(&bits))
    }

    /// The kept targets.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a forest grown without `store_leaf_values`.
    fn leaf_values(&self) -> Result<&LeafTargets> {
        self.leaf_targets.as_ref().ok_or_else(|| {
            Error::InvalidInput(
                "quantiles need the training targets in the leaves: fit the forest with \
                 store_leaf_values=True"
                    .into(),
            )
        })
    }

    fn quantiles_of(
        &self,
        x: Features<'_>,
        quantiles: &[f64],
        n_jobs: i64,
        out_of_bag: Option<&[Vec<u64>]>,
    ) -> Result<Array3<f64>> {
        let targets = self.leaf_values()?;
        if quantiles.is_empty() || quantiles.iter().any(|q| !(0.0..=1.0).contains(q)) {
            return Err(Error::InvalidInput(format!(
                "quantiles must be in [0, 1] (at least one), got {quantiles:?}"
            )));
        }
        let (k, nq, n) = (self.params.task.n_targets(), quantiles.len(), x.nrows());
        let order = self
            .quantile_order
            .get_or_init(|| QuantileOrder::new(targets, k));
        let n_trees = self.trees.len();
        let width = k * nq;
        let out = self.per_block(x, width, n_jobs, |start, rows, out| {
            let n_block = out.len() / width;
            let mut leaves = vec![0u32; n_block * n_trees];
            self.leaves_of_block(rows, |t, r, leaf| leaves[r * n_trees + t] = leaf as u32);
            let mut scratch = Scratch::default();
            for r in 0..n_block {
                // a row's quantiles sort every entry of its leaves, thousands per tree with
                // large leaves: a block can take minutes, so a cancel is looked for per row
                if cancel::requested() {
                    return;
                }
                let used = |t: usize| out_of_bag.is_none_or(|b| is_out_of_bag(b, t, start + r));
                let row_leaves = &leaves[r * n_trees..(r + 1) * n_trees];
                let row_out = &mut out[r * width..(r + 1) * width];
                if !self.row_weights(row_leaves, used, targets, &mut scratch) {
                    row_out.fill(f64::NAN);
                    continue;
                }
                for (o, out) in row_out.chunks_exact_mut(nq).enumerate() {
                    scratch.quantiles(order, o, quantiles, out);
                }
            }
        })?;
        Array3::from_shape_vec((n, k, nq), out).map_err(|e| Error::Internal(e.to_string()))
    }

    /// Fills `scratch.entries` with the weights of one row reaching `leaves` (one per
    /// tree) over the trees `used` picks; false when no tree gives any.
    fn row_weights(
        &self,
        leaves: &[u32],
        used: impl Fn(usize) -> bool,
        targets: &LeafTargets,
        scratch: &mut Scratch,
    ) -> bool {
        scratch.entries.clear();
        let (mut held, mut n_trees) = (0.0f64, 0usize);
        for (t, (tree, &leaf)) in self.trees.iter().zip(leaves).enumerate() {
            let Some(leaf_rows) = tree.leaf_rows.as_ref().filter(|_| used(t)) else {
                continue;
            };
            let (rows, counts) = leaf_rows.leaf(tree.right[leaf as usize] as usize);
            let total: f64 = rows
                .iter()
                .zip(counts)
                .map(|(&i, &c)| f64::from(c) * targets.weight(i as usize))
                .sum();
            if total.is_nan() || total <= 0.0 {
                continue;
            }
            for (&i, &c) in rows.iter().zip(counts) {
                let w = f64::from(c) * targets.weight(i as usize) / total;
                scratch.entries.push((i, w));
            }
            // frequency weights: the leaf holds `total` rows' worth (its counts when
            // every weight is 1), as the same rows repeated would
            held += total;
            n_trees += 1;
        }
        if n_trees == 0 {
            return false;
        }
        let scale = held / n_trees as f64;
        for (_, w) in &mut scratch.entries {
            *w *= scale;
        }
        true
    }
}

impl Scratch {
    /// The `quantiles` of output `o` from `self.entries` into `out`.
    fn quantiles(&mut self, order: &QuantileOrder, o: usize, quantiles: &[f64], out: &mut [f64]) {
        let rank = &order.rank[o];
        self.ranked.clear();
        self.ranked
            .extend(self.entries.iter().map(|&(i, w)| (rank[i as usize], w)));
        self.ranked.sort_unstable_by_key(|&(r, _)| r);
        // a row reached in several trees: one entry with the sum of its weights
        self.values.clear();
        self.cum.clear();
        let mut last = u32::MAX;
        let mut total = 0.0;
        for &(r, w) in &self.ranked {
            if w <= 0.0 {
                continue;
            }
            total += w;
            if r == last {
                *self.cum.last_mut().expect("an entry before") = total;
            } else {
                self.values.push(order.sorted[o][r as usize]);
                self.cum.push(total);
                last = r;
            }
        }
        for (q, out) in quantiles.iter().zip(out) {
            *out = weighted_quantile(&self.values, &self.cum, *q);
        }
    }
}

/// The q-quantile of `values` (ascending) whose cumulative weights are `cum` (increasing,
/// the last one at least 1): see the module doc. NaN for no values.
pub(crate) fn weighted_quantile(values: &[f64], cum: &[f64], q: f64) -> f64 {
    let n = values.len();
    if n == 0 {
        return f64::NAN;
    }
    let h = q * (cum[n - 1] - 1.0);
    // the targets whose last copy sits at or before position h
    let below = cum.partition_point(|&c| c - 1.0 <= h);
    if below == 0 {
        return values[0];
    }
    if below >= n {
        return values[n - 1];
    }
    let (lo, hi) = (values[below - 1], values[below]);
    // the next target's first copy sits at position cum[below - 1]
    let first_next = cum[below - 1];
    if h >= first_next || lo == hi {
        return if h >= first_next { hi } else { lo };
    }
    let frac = h - (first_next - 1.0);
    lo + frac * (hi - lo)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// numpy's default quantile of a sample (type 7).
    fn type7(sample: &mut [f64], q: f64) -> f64 {
        sample.sort_by(f64::total_cmp);
        let h = q * (sample.len() - 1) as f64;
        let (lo, hi) = (h.floor() as usize, h.ceil() as usize);
        sample[lo] + (h - lo as f64) * (sample[hi] - sample[lo])
    }

    #[test]
    fn weighted_quantile_with_counts_is_numpys_quantile_of_the_repeated_sample() {
        let values = [-2.0, 0.5, 1.0, 4.0, 7.5];
        let counts = [3u32, 1, 2, 4, 1];
        let mut sample: Vec<f64> = values
            .iter()
            .zip(&counts)
            .flat_map(|(&v, &c)| std::iter::repeat_n(v, c as usize))
            .collect();
        let cum: Vec<f64> = counts
            .iter()
            .scan(0.0, |s, &c| {
                *s += f64::from(c);
                Some(*s)
            })
            .collect();
        for i in 0..=100 {
            let q = f64::from(i) / 100.0;
            let got = weighted_quantile(&values, &cum, q);
            let want = type7(&mut sample, q);
            assert!((got - want).abs() < 1e-12, "q={q}: {got} vs {want}");
        }
    }

    #[test]
    fn weighted_quantile_is_monotone_in_q_for_real_weights() {
        let values = [0.0, 1.0, 3.0, 3.5];
        let cum = [0.4, 2.1, 2.6, 5.0];
        let mut last = f64::NEG_INFINITY;
        for i in 0..=200 {
            let v = weighted_quantile(&values, &cum, f64::from(i) / 200.0);
            assert!(v >= last && (0.0..=3.5).contains(&v));
            last = v;
        }
        assert!(weighted_quantile(&[], &[], 0.5).is_nan());
        assert_eq!(weighted_quantile(&[2.0], &[1.0], 0.9), 2.0);
    }
}
