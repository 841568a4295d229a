//! Dense random projections: every candidate weighs every feature with an N(0, 1) weight,
//! except columns missing (NaN) on every row, which would make every projection missing.

use super::{DataNeeds, DataStats, FamilyArgs, ProjectionBuf, ProjectionFamily, RegisteredFamily};
use super::SamplerScratch;
use crate::error::Result;
use crate::rng::Rng;
use serde::{Deserialize, Serialize};

/// Dense projections over every feature with N(0, 1) weights.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Gaussian;

impl ProjectionFamily for Gaussian {
    fn check(&self, _n_features: usize) -> Result<()> {
        Ok(())
    }

    fn entries_per_candidate(&self, n_features: usize) -> f64 {
        n_features as f64
    }

    fn needs(&self) -> DataNeeds {
        DataNeeds {
            missing_columns: true,
            ..DataNeeds::default()
        }
    }

    fn sample(
        &self,
        data: &DataStats,
        rng: &mut Rng,
        d: usize,
        _s: &mut SamplerScratch,
        out: &mut ProjectionBuf,
    ) {
        // the columns missing on every row, when there are any
        let unusable = data
            .all_missing
            .as_deref()
            .filter(|m| m.iter().any(|&missing| missing));
        out.clear();
        for _ in 0..d {
            for f in 0..data.n_features {
                if unusable.is_some_and(|m| m[f]) {
                    continue;
                }
                out.idx.push(f as u32);
                out.w.push(rng.normal() as f32);
            }
            out.close();
        }
    }

    fn args(&self) -> FamilyArgs {
        FamilyArgs::new()
    }
}

/// `_core.Projection.family("gaussian")`.
impl RegisteredFamily for Gaussian {
    const TAG: &'static str = "gaussian";

    fn from_args(_args: &mut FamilyArgs) -> Result<Self> {
        Ok(Gaussian)
    }
}
