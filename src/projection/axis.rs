//! Axis-aligned projections (Breiman's random forest): a candidate is one feature with
//! weight 1; a node draws `d` distinct features (at most p).

use super::{DataStats, FamilyArgs, ProjectionBuf, ProjectionFamily, RegisteredFamily};
use super::SamplerScratch;
use crate::error::Result;
use crate::rng::Rng;
use serde::{Deserialize, Serialize};

/// Classic random forest splits: `d` distinct features, weight 1.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AxisAligned;

impl ProjectionFamily for AxisAligned {
    fn check(&self, _n_features: usize) -> Result<()> {
        Ok(())
    }

    fn entries_per_candidate(&self, _n_features: usize) -> f64 {
        1.0
    }

    fn sample(
        &self,
        data: &DataStats,
        rng: &mut Rng,
        d: usize,
        s: &mut SamplerScratch,
        out: &mut ProjectionBuf,
    ) {
        out.clear();
        rng.distinct(data.n_features, d, &mut s.pool, &mut s.chosen);
        for &f in &s.chosen {
            out.idx.push(f);
            out.w.push(1.0);
            out.close();
        }
    }

    fn args(&self) -> FamilyArgs {
        FamilyArgs::new()
    }
}

/// `_core.Projection.family("axis")`.
impl RegisteredFamily for AxisAligned {
    const TAG: &'static str = "axis";

    fn from_args(_args: &mut FamilyArgs) -> Result<Self> {
        Ok(AxisAligned)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::draw;
    use super::*;

    #[test]
    fn axis_sampler_draws_distinct_unit_features() {
        let out = draw(&AxisAligned, 10, 4, 1);
        assert_eq!(out.len(), 4);
        let mut f = out.idx.clone();
        f.sort();
        f.dedup();
        assert_eq!(f.len(), 4);
        assert!(out.w.iter().all(|&w| w == 1.0));
    }
}
