//! SPORF's sparse signed projections (Tomita et al. 2020, Sect. 3.1): ⌈λ·p·d⌉ nonzeros
//! placed uniformly at random in a p×d matrix, each ±1 with equal probability (over the
//! feature's interquartile range with [`WeightScale::Robust`]); empty columns are dropped.

use super::{
    DataNeeds, DataStats, FamilyArgs, ProjectionBuf, ProjectionFamily, RegisteredFamily,
    SamplerScratch,
};
use crate::error::{invalid, Result};
use crate::prefetch::prefetch;
use crate::rng::Rng;
use crate::value::Value;
use serde::{Deserialize, Serialize};

/// How dense a sparse signed projection matrix is.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum Density {
    /// λ: the fraction of nonzero entries in the p×d matrix, in (0, 1].
    Fraction(f64),
    /// λ·p: the average number of features per projection (capped at p).
    FeatureCombinations(f64),
}

/// How SPORF's ±1 weights treat features measured in different units.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum WeightScale {
    /// ±1 on the raw values (the paper's SPORF): a feature with a wide spread dominates
    /// every projection it enters.
    #[default]
    None,
    /// ±1/s_j, where s_j is feature j's interquartile range in the training data (its
    /// range when that is 0, and 1 for a constant feature): each projection sums features
    /// in comparable units, so a forest does not depend on the units of its features.
    /// The scales are computed whenever trees are grown and are part of the stored weights,
    /// so prediction needs nothing else.
    Robust,
}

/// SPORF: sparse ±1 projections of the given density and weight scale.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SparseSigned {
    /// How many nonzeros.
    pub density: Density,
    /// The unit each feature's ±1 is in ([`WeightScale`]).
    pub scaling: WeightScale,
}

impl SparseSigned {
    /// λ, the fraction of nonzero entries of the p×d matrix, for `n_features` = p.
    fn density(&self, n_features: usize) -> f64 {
        match self.density {
            Density::Fraction(d) => d,
            Density::FeatureCombinations(c) => (c / n_features as f64).min(1.0),
        }
    }
}

impl ProjectionFamily for SparseSigned {
    /// The density in (0, 1], or a positive finite number of features per projection.
    fn check(&self, _n_features: usize) -> Result<()> {
        match self.density {
            Density::Fraction(d) if !(d > 0.0 && d <= 1.0) => {
                Err(invalid("density", format!("must be in (0, 1], got {d}")))
            }
            Density::FeatureCombinations(c) if !(c > 0.0 && c.is_finite()) => Err(invalid(
                "feature_combinations",
                format!("must be > 0, got {c}"),
            )),
            _ => Ok(()),
        }
    }

    fn entries_per_candidate(&self, n_features: usize) -> f64 {
        match self.density {
            Density::Fraction(d) => d * n_features as f64,
            Density::FeatureCombinations(c) => c.min(n_features as f64),
        }
    }

    fn needs(&self) -> DataNeeds {
        DataNeeds {
            robust_scales: self.scaling == WeightScale::Robust,
            ..DataNeeds::default()
        }
    }

    fn sample(
        &self,
        data: &DataStats,
        rng: &mut Rng,
        d: usize,
        s: &mut SamplerScratch,
        out: &mut ProjectionBuf,
    ) {
        let inv_scale = match self.scaling {
            WeightScale::Robust => data.robust_inverse_scales.as_deref(),
            WeightScale::None => None,
        };
        out.clear();
        let p = data.n_features as u64;
        let total = p * d as u64;
        let nnz = ((self.density(data.n_features) * total as f64).ceil() as u64).clamp(1, total);
        s.positions.clear();
        if nnz * 2 > total {
            // dense enough: partial Fisher-Yates over all positions
            rng.distinct_u64(total, nnz as usize, &mut s.pool, &mut s.positions);
            s.positions.sort_unstable();
        } else {
            // sparse: draw, sort, drop repeats, top up
            while (s.positions.len() as u64) < nnz {
                let missing = nnz as usize - s.positions.len();
                for _ in 0..missing {
                    s.positions
                        .push(((rng.next_u64() as u128 * total as u128) >> 64) as u64);
                }
                s.positions.sort_unstable();
                s.positions.dedup();
            }
        }
        // positions are column-major (col * p + row): consecutive runs are one projection
        let mut current = u64::MAX;
        for &pos in &s.positions {
            let (col, row) = (pos / p, pos % p);
            if col != current && current != u64::MAX {
                out.close();
            }
            current = col;
            out.idx.push(row as u32);
            if let Some(scales) = inv_scale {
                // wide X's scales are rarely cached: ask for them all before reading any
                prefetch(scales, row as usize);
            }
        }
        if current != u64::MAX {
            out.close();
        }
        // a coin a term, in term order
        for &row in &out.idx {
            let unit = inv_scale.map_or(1.0, |s| s[row as usize]);
            out.w.push(if rng.coin() { unit } else { -unit });
        }
    }

    /// Every term has weight ±1 (over its feature's scale): importances share a split
    /// among its features equally.
    fn unit_weights(&self) -> bool {
        true
    }

    fn args(&self) -> FamilyArgs {
        let (density, combinations) = match self.density {
            Density::Fraction(d) => (Value::Float(d), Value::None),
            Density::FeatureCombinations(c) => (Value::None, Value::Float(c)),
        };
        let scaling = match self.scaling {
            WeightScale::None => Value::None,
            WeightScale::Robust => Value::Str("robust".into()),
        };
        FamilyArgs::new()
            .with("density", density)
            .with("feature_combinations", combinations)
            .with("scaling", scaling)
    }
}

/// `_core.Projection.family("sparse_signed", density=, feature_combinations=, scaling=)`:
/// exactly one of `density` (λ) and `feature_combinations` (λ·p); `scaling` "robust" or
/// None.
impl RegisteredFamily for SparseSigned {
    const TAG: &'static str = "sparse_signed";

    fn from_args(args: &mut FamilyArgs) -> Result<Self> {
        let density = match (
            args.opt_float("density")?,
            args.opt_float("feature_combinations")?,
        ) {
            (Some(d), None) => Density::Fraction(d),
            (None, Some(c)) => Density::FeatureCombinations(c),
            _ => {
                return Err(invalid(
                    "density",
                    "give exactly one of density and feature_combinations",
                ))
            }
        };
        let scaling = match args.opt_str("scaling")?.as_deref() {
            None => WeightScale::None,
            Some("robust") => WeightScale::Robust,
            Some(other) => {
                return Err(invalid(
                    "scaling",
                    format!("must be 'robust' or None, got {other:?}"),
                ))
            }
        };
        Ok(SparseSigned { density, scaling })
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::draw;
    use super::*;

    fn paper(density: f64) -> SparseSigned {
        SparseSigned {
            density: Density::Fraction(density),
            scaling: WeightScale::None,
        }
    }

    #[test]
    fn sparse_sampler_draws_expected_density() {
        let (p, d) = (50usize, 50usize);
        let s = paper(3.0 / p as f64);
        let mut total = 0;
        for seed in 0..20 {
            let out = draw(&s, p, d, seed);
            assert_eq!(out.idx.len(), 3 * d); // ceil(λ p d) nonzeros exactly
            assert!(out.len() <= d);
            assert!(out.w.iter().all(|&w| w == 1.0 || w == -1.0));
            for i in 0..out.len() {
                let (a, b) = (out.ptr[i] as usize, out.ptr[i + 1] as usize);
                assert!(b > a, "empty projections are dropped");
                let mut f = out.idx[a..b].to_vec();
                f.dedup();
                assert_eq!(f.len(), b - a, "a feature appears once per projection");
            }
            total += out.w.iter().filter(|&&w| w > 0.0).count();
        }
        let frac = total as f64 / (20.0 * 150.0);
        assert!((0.45..0.55).contains(&frac), "signs balanced: {frac}");
    }

    #[test]
    fn sparse_sampler_allows_more_candidates_than_features_and_full_density() {
        let out = draw(&paper(1.0), 4, 9, 3);
        assert_eq!(out.len(), 9);
        assert_eq!(out.idx.len(), 36);
    }
}
