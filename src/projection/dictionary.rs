//! The dictionary family: each split node samples candidates among the atoms of a fixed
//! dictionary, the columns of a sparse `n_features × n_atoms` matrix given by the user
//! (wavelet or domain filters, or graph neighbourhood averages). A node's projection is
//! stored as one word, the atom's index, and read back through the dictionary, which the
//! forest's parameters (and so its model file) carry. It is a registered family (tag
//! `"dictionary"`, see [`super::family`]): this file is all the crate has of it.
//!
//! Invariant after [`Dictionary::check`]: at least one atom; `atom_ptr` rises from 0 to
//! `atom_idx.len()`; every atom has at least one term, its feature indices are below
//! `n_features` and its weights are finite and nonzero.

use super::{
    DataStats, CompactDescriptors, FamilyArgs, ProjectionBuf, ProjectionFamily, RegisteredFamily,
    SamplerScratch,
};
use crate::error::{invalid, Result};
use crate::rng::Rng;
use crate::value::Value;
use serde::{Deserialize, Serialize};

/// A projection dictionary: atom `a` has features `atom_idx[atom_ptr[a]..atom_ptr[a+1]]`
/// with weights `atom_w[...]` (a CSC matrix of shape `n_features × n_atoms`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Dictionary {
    /// Rows of the matrix: the number of features the atoms are defined over.
    pub n_features: usize,
    /// Column offsets, `n_atoms + 1` of them.
    pub atom_ptr: Vec<u32>,
    /// Feature index of each term.
    pub atom_idx: Vec<u32>,
    /// Weight of each term.
    pub atom_w: Vec<f32>,
    /// Atoms drawn (without replacement) at each split node; `None` draws `max_features`
    /// (resolved as usual); never more than there are atoms.
    pub n_candidates: Option<usize>,
}

impl Dictionary {
    /// A dictionary from the CSC arrays of an `n_features × n_atoms` matrix (as scipy
    /// holds them), checked with [`Self::check`].
    ///
    /// # Errors
    /// [`crate::Error::InvalidParameter`] naming `atoms` for offsets or indices that do not
    /// fit, or anything [`Self::check`] rejects.
    pub fn from_csc(
        n_features: usize,
        indptr: &[i64],
        indices: &[i64],
        data: &[f32],
        n_candidates: Option<usize>,
    ) -> Result<Dictionary> {
        let words = |a: &[i64], what: &str| -> Result<Vec<u32>> {
            a.iter()
                .map(|&v| u32::try_from(v).map_err(|_| invalid("atoms", format!("{what} {v}"))))
                .collect()
        };
        let dict = Dictionary {
            n_features,
            atom_ptr: words(indptr, "offset out of range:")?,
            atom_idx: words(indices, "feature index out of range:")?,
            atom_w: data.to_vec(),
            n_candidates,
        };
        dict.check(n_features)?;
        Ok(dict)
    }

    /// The number of atoms.
    pub fn n_atoms(&self) -> usize {
        self.atom_ptr.len().saturating_sub(1)
    }

    /// The terms of atom `a`.
    fn atom(&self, a: usize) -> (&[u32], &[f32]) {
        let (s, e) = (self.atom_ptr[a] as usize, self.atom_ptr[a + 1] as usize);
        (&self.atom_idx[s..e], &self.atom_w[s..e])
    }
}

impl ProjectionFamily for Dictionary {
    /// Checks the dictionary against the data width (see the module invariant): errors
    /// name `atoms` (wrong number of rows, an empty dictionary or atom, an index out of
    /// range, a non-finite weight) or `n_candidates`.
    fn check(&self, n_features: usize) -> Result<()> {
        if self.n_features != n_features {
            return Err(invalid(
                "atoms",
                format!(
                    "the atoms have {} rows (features) but X has {n_features} features",
                    self.n_features
                ),
            ));
        }
        if self.n_atoms() == 0 {
            return Err(invalid("atoms", "the dictionary is empty (no atoms)"));
        }
        if self.n_atoms() >= u32::MAX as usize {
            return Err(invalid("atoms", "too many atoms"));
        }
        if self.atom_ptr[0] != 0
            || self.atom_ptr.windows(2).any(|p| p[0] > p[1])
            || *self.atom_ptr.last().unwrap_or(&0) as usize != self.atom_idx.len()
            || self.atom_w.len() != self.atom_idx.len()
        {
            return Err(invalid("atoms", "malformed sparse matrix offsets"));
        }
        for a in 0..self.n_atoms() {
            let (idx, w) = self.atom(a);
            if idx.is_empty() {
                return Err(invalid(
                    "atoms",
                    format!("atom {a} is empty (all zeros); every atom needs a nonzero"),
                ));
            }
            if let Some(&j) = idx.iter().find(|&&j| j as usize >= n_features) {
                return Err(invalid(
                    "atoms",
                    format!("atom {a} uses feature {j}, but there are {n_features}"),
                ));
            }
            if w.iter().any(|w| !w.is_finite() || *w == 0.0) {
                return Err(invalid(
                    "atoms",
                    format!("atom {a} has a zero or non-finite weight"),
                ));
            }
        }
        if self.n_candidates == Some(0) {
            return Err(invalid("n_candidates", "must be at least 1 or None"));
        }
        Ok(())
    }

    fn entries_per_candidate(&self, _n_features: usize) -> f64 {
        self.atom_idx.len() as f64 / self.n_atoms().max(1) as f64
    }

    /// Distinct atoms, uniformly (`n_candidates` of them when set).
    fn sample(
        &self,
        _data: &DataStats,
        rng: &mut Rng,
        d: usize,
        s: &mut SamplerScratch,
        out: &mut ProjectionBuf,
    ) {
        out.clear();
        let d = self.n_candidates.unwrap_or(d);
        rng.distinct(self.n_atoms(), d, &mut s.pool, &mut s.chosen);
        for &a in &s.chosen {
            out.idx.push(a);
            out.close();
        }
    }

    fn descriptors(&self) -> Option<&dyn CompactDescriptors> {
        Some(self)
    }

    fn args(&self) -> FamilyArgs {
        let ints = |v: &[u32]| Value::int_array(v.iter().map(|&v| i64::from(v)).collect());
        FamilyArgs::new()
            .with("n_features", Value::Int(self.n_features as i64))
            .with("indptr", ints(&self.atom_ptr))
            .with("indices", ints(&self.atom_idx))
            .with(
                "data",
                Value::float_array(self.atom_w.iter().map(|&w| f64::from(w)).collect()),
            )
            .with(
                "n_candidates",
                self.n_candidates
                    .map_or(Value::None, |c| Value::Int(c as i64)),
            )
    }
}

/// `_core.Projection.family("dictionary", n_features=, indptr=, indices=, data=,
/// n_candidates=)`: the CSC arrays of the atoms' matrix, as [`Dictionary::from_csc`].
impl RegisteredFamily for Dictionary {
    const TAG: &'static str = "dictionary";

    fn from_args(args: &mut FamilyArgs) -> Result<Self> {
        let n_features = args.count("n_features")?;
        let indptr = args.ints("indptr")?;
        let indices = args.ints("indices")?;
        // weights beyond float32's range become infinite: `check` names them
        let data: Vec<f32> = args.floats("data")?.into_iter().map(|w| w as f32).collect();
        let n_candidates = args.opt_count("n_candidates")?;
        Dictionary::from_csc(n_features, &indptr, &indices, &data, n_candidates)
    }
}

impl CompactDescriptors for Dictionary {
    fn for_each_term(&self, desc: &[u32], f: &mut dyn FnMut(usize, f32)) {
        let (idx, w) = self.atom(desc[0] as usize);
        for (&j, &w) in idx.iter().zip(w) {
            f(j as usize, w)
        }
    }
    fn is_valid(&self, desc: &[u32]) -> bool {
        matches!(desc, [a] if (*a as usize) < self.n_atoms())
    }
    fn max_weight_l1(&self) -> Option<f64> {
        (0..self.n_atoms())
            .map(|a| {
                self.atom(a)
                    .1
                    .iter()
                    .map(|w| f64::from(w.abs()))
                    .sum::<f64>()
            })
            .max_by(f64::total_cmp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::projection::Projection;

    /// Two atoms over 4 features: the mean of features 0 and 1, and feature 3 minus 2.
    fn dict() -> Dictionary {
        Dictionary {
            n_features: 4,
            atom_ptr: vec![0, 2, 4],
            atom_idx: vec![0, 1, 3, 2],
            atom_w: vec![0.5, 0.5, 1.0, -1.0],
            n_candidates: None,
        }
    }

    #[test]
    fn dictionary_sampler_draws_distinct_atoms_read_back_as_terms() {
        let s = dict();
        let mut out = ProjectionBuf::default();
        s.sample(
            &DataStats::of_width(0),
            &mut Rng::from_seed(1),
            5,
            &mut SamplerScratch::default(),
            &mut out,
        );
        assert_eq!(out.len(), 2, "at most n_atoms candidates");
        let mut atoms: Vec<u32> = out.idx.clone();
        atoms.sort();
        assert_eq!(atoms, vec![0, 1]);
        let row = [1.0f32, 3.0, 10.0, 4.0];
        let values: Vec<f32> = (0..2)
            .map(|i| out.get(i, Some(&s as &dyn CompactDescriptors)).dot(&row))
            .collect();
        let want = |a: u32| if a == 0 { 2.0 } else { -6.0 };
        assert_eq!(values, vec![want(out.idx[0]), want(out.idx[1])]);
    }

    #[test]
    fn dictionary_check_names_bad_atoms() {
        let err = |d: Dictionary, p: usize| d.check(p).unwrap_err().to_string();
        assert!(dict().check(4).is_ok());
        assert!(err(dict(), 5).contains("4 rows"));
        let empty = Dictionary {
            atom_ptr: vec![0],
            atom_idx: vec![],
            atom_w: vec![],
            ..dict()
        };
        assert!(err(empty, 4).contains("empty"));
        let zero_atom = Dictionary {
            atom_ptr: vec![0, 2, 2, 4],
            ..dict()
        };
        assert!(err(zero_atom, 4).contains("atom 1 is empty"));
        let nan = Dictionary {
            atom_w: vec![0.5, f32::NAN, 1.0, -1.0],
            ..dict()
        };
        assert!(err(nan, 4).contains("non-finite"));
        assert!(!dict().is_valid(&[2]) && dict().is_valid(&[1]) && !dict().is_valid(&[0, 1]));
    }

    #[test]
    fn dictionary_forest_round_trips_and_rejects_foreign_atoms() {
        use crate::{Forest, ForestParams, MaxFeatures};
        let x = ndarray::Array2::from_shape_fn((120, 4), |(i, j)| {
            ((i * 13 + j * 29) % 31) as f32 / 31.0
        });
        let y: Vec<f64> = x
            .rows()
            .into_iter()
            .map(|r| f64::from(u8::from(r[0] + r[1] > r[2] + r[3])))
            .collect();
        let mut params = ForestParams::classification(2);
        params.projection = Projection::new(dict());
        params.max_features = MaxFeatures::Count(2);
        params.n_estimators = 3;
        let forest = Forest::fit(&params, x.view(), &y, None).unwrap();
        let bytes = forest.to_bytes().unwrap();
        assert_eq!(Forest::from_bytes(&bytes).unwrap(), forest);
        // every stored descriptor is one atom index
        for t in forest.trees() {
            assert!(t.proj_w.is_empty());
            assert!(t.proj_ptr.windows(2).all(|p| p[1] - p[0] <= 1));
        }
        // a node naming an atom the dictionary does not have is a corrupt model
        let mut foreign = forest.clone();
        foreign.trees[0].proj_idx[0] = 2;
        assert!(foreign.validate().is_err());
        foreign.trees[0].proj_idx[0] = 1;
        assert!(foreign.validate().is_ok());
    }
}
