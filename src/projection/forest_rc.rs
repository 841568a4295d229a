//! Forest-RC (Breiman 2001): each candidate combines L distinct features with weights
//! uniform in [−1, 1].

use super::{DataStats, FamilyArgs, ProjectionBuf, ProjectionFamily, RegisteredFamily};
use super::SamplerScratch;
use crate::error::{invalid, Result};
use crate::rng::Rng;
use crate::value::Value;
use serde::{Deserialize, Serialize};

/// Forest-RC: each projection combines `n_combined` features (at most p), weights uniform
/// in [−1, 1].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForestRc {
    /// Features per projection.
    pub n_combined: usize,
}

impl ProjectionFamily for ForestRc {
    /// `n_combined` at least 1.
    fn check(&self, _n_features: usize) -> Result<()> {
        if self.n_combined == 0 {
            return Err(invalid("n_combined", "must be at least 1"));
        }
        Ok(())
    }

    fn entries_per_candidate(&self, n_features: usize) -> f64 {
        self.n_combined.min(n_features) as f64
    }

    fn sample(
        &self,
        data: &DataStats,
        rng: &mut Rng,
        d: usize,
        s: &mut SamplerScratch,
        out: &mut ProjectionBuf,
    ) {
        let n_combined = self.n_combined.min(data.n_features);
        out.clear();
        for _ in 0..d {
            rng.distinct(data.n_features, n_combined, &mut s.pool, &mut s.chosen);
            for &f in &s.chosen {
                out.idx.push(f);
                out.w.push((2.0 * rng.unit() - 1.0) as f32);
            }
            out.close();
        }
    }

    fn args(&self) -> FamilyArgs {
        FamilyArgs::new().with("n_combined", Value::Int(self.n_combined as i64))
    }
}

/// `_core.Projection.family("forest_rc", n_combined=)`.
impl RegisteredFamily for ForestRc {
    const TAG: &'static str = "forest_rc";

    fn from_args(args: &mut FamilyArgs) -> Result<Self> {
        Ok(ForestRc {
            n_combined: args.count("n_combined")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::draw;
    use super::*;

    #[test]
    fn forest_rc_sampler_combines_n_features_with_bounded_weights() {
        let out = draw(&ForestRc { n_combined: 3 }, 8, 5, 4);
        assert_eq!(out.len(), 5);
        assert_eq!(out.idx.len(), 15);
        assert!(out.w.iter().all(|w| (-1.0..=1.0).contains(w)));
    }
}
