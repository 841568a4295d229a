//! The Haar-patch family: MORF patches (Perry et al., Sect. 3.1) that are either a sum
//! over a patch or the difference of two adjacent patches of the same shape (a
//! Haar-like edge filter at any scale: "this window is brighter than the next one"),
//! so that a split can read a local contrast rather than a local mean. MORF's sums over
//! windows average an oscillating signal away; their differences keep it
//! (`benches/results/structured.md`).
//!
//! A projection is stored as a patch descriptor of the geometry ([`PatchGeometry`]:
//! channel count, channels, then start and length per spatial axis) followed by one
//! word: 0 for a sum, or `k + 1` for a difference along spatial axis k, whose second
//! patch starts `length` positions further along that axis. Invariant (checked on load
//! by [`CompactDescriptors::is_valid`]): both patches lie inside the sample, or wrap on a
//! periodic axis; the second patch never overlaps the first.

use super::{
    DataStats, CompactDescriptors, FamilyArgs, PatchGeometry, ProjectionBuf, ProjectionFamily,
    RegisteredFamily, SamplerScratch,
};
use crate::error::{check_probability, Result};
use crate::rng::Rng;
use crate::value::Value;
use serde::{Deserialize, Serialize};

/// Sums over patches and differences of adjacent patches of a structured sample.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HaarPatches {
    /// Where patches lie (as for MORF's plain patches).
    pub geometry: PatchGeometry,
    /// The probability that a candidate is a difference (else a sum), in [0, 1]; a
    /// difference needs an axis with room for two patches of the minimum size, and is
    /// drawn as a sum when there is none.
    pub differences: f64,
}

impl HaarPatches {
    /// The spatial axes (by position among the spatial axes) with room for two adjacent
    /// patches of the minimum size.
    pub(super) fn difference_axes(&self) -> impl Iterator<Item = usize> + '_ {
        let g = &self.geometry;
        g.spatial_axes()
            .enumerate()
            .filter(|&(i, a)| 2 * g.min_patch_size[i] <= g.data_shape[a])
            .map(|(i, _)| i)
    }

    /// Appends one candidate (a sum, or with probability `differences` a difference
    /// along one of the `n_diff_axes` axes with room) to `out`.
    pub(crate) fn sample_one(
        &self,
        rng: &mut Rng,
        n_diff_axes: usize,
        s: &mut SamplerScratch,
        out: &mut ProjectionBuf,
    ) {
        let g = &self.geometry;
        g.sample_channels(rng, s, out);
            // which axis a difference runs along, if this candidate is one
            let diff_axis = (n_diff_axes > 0 && rng.unit() < self.differences)
                .then(|| self.difference_axes().nth(rng.below(n_diff_axes)))
                .flatten();
            for (i, a) in g.spatial_axes().enumerate() {
                let size = g.data_shape[a];
                let (lo, hi) = (g.min_patch_size[i], g.max_patch_size[i]);
                let (start, len) = if diff_axis == Some(i) {
                    // two patches side by side: inside, or wrapping on a periodic axis
                    let h = rng.between(lo, hi.min(size / 2));
                    let n_starts = if g.periodic[i] { size } else { size - 2 * h + 1 };
                    (rng.below(n_starts), h)
                } else {
                    let h = rng.between(lo, hi);
                    g.place_patch(rng, i, size, h)
                };
                out.idx.push(start as u32);
                out.idx.push(len as u32);
            }
            out.idx.push(diff_axis.map_or(0, |k| k as u32 + 1));
            out.close();
    }
}

impl ProjectionFamily for HaarPatches {
    /// The geometry's checks, and `differences` in [0, 1].
    fn check(&self, n_features: usize) -> Result<()> {
        self.geometry.check(n_features)?;
        check_probability("differences", self.differences)
    }

    fn entries_per_candidate(&self, _n_features: usize) -> f64 {
        (2 + 3 * self.geometry.data_shape.len()) as f64
    }

    fn sample(
        &self,
        _data: &DataStats,
        rng: &mut Rng,
        d: usize,
        s: &mut SamplerScratch,
        out: &mut ProjectionBuf,
    ) {
        let n_diff_axes = self.difference_axes().count();
        out.clear();
        for _ in 0..d {
            self.sample_one(rng, n_diff_axes, s, out);
        }
    }

    fn descriptors(&self) -> Option<&dyn CompactDescriptors> {
        Some(self)
    }

    fn args(&self) -> FamilyArgs {
        self.geometry
            .args()
            .with("differences", Value::Float(self.differences))
    }
}

/// `_core.Projection.family("haar", data_shape=, channel_axis=, min_patch_size=,
/// max_patch_size=, periodic=, differences=)`: MORF's geometry and the probability of a
/// difference.
impl RegisteredFamily for HaarPatches {
    const TAG: &'static str = "haar";

    fn from_args(args: &mut FamilyArgs) -> Result<Self> {
        Ok(HaarPatches {
            geometry: PatchGeometry::from_args(args)?,
            differences: args.float("differences")?,
        })
    }
}

impl CompactDescriptors for HaarPatches {
    fn for_each_term(&self, desc: &[u32], f: &mut dyn FnMut(usize, f32)) {
        let g = &self.geometry;
        let (&op, patch) = desc.split_last().expect("a valid descriptor");
        g.for_each_feature(patch, |i| f(i, 1.0));
        if op == 0 {
            return;
        }
        // the second patch: every feature moved `len` along the difference axis (wrapping
        // on a periodic axis; a valid descriptor never needs it on another)
        let k = op as usize - 1;
        let axis = g.spatial_axes().nth(k).expect("a valid descriptor");
        let (size, stride) = (g.data_shape[axis], g.strides()[axis]);
        let n_ch = patch[0] as usize;
        let len = patch[1 + n_ch + 2 * k + 1] as usize;
        g.for_each_feature(patch, |i| {
            let c = (i / stride) % size;
            let c2 = if c + len >= size { c + len - size } else { c + len };
            f(i - c * stride + c2 * stride, -1.0)
        });
    }

    fn is_valid(&self, desc: &[u32]) -> bool {
        let g = &self.geometry;
        let Some((&op, patch)) = desc.split_last() else {
            return false;
        };
        if !g.valid_descriptor(patch) {
            return false;
        }
        if op == 0 {
            return true;
        }
        let k = op as usize - 1;
        let Some((i, axis)) = g.spatial_axes().enumerate().nth(k) else {
            return false;
        };
        let n_ch = patch[0] as usize;
        let (start, len) = (
            patch[1 + n_ch + 2 * i] as usize,
            patch[1 + n_ch + 2 * i + 1] as usize,
        );
        let size = g.data_shape[axis];
        2 * len <= size && (g.periodic[i] || start + 2 * len <= size)
    }

    fn max_weight_l1(&self) -> Option<f64> {
        // two patches of unit weights
        self.geometry.max_weight_l1().map(|w| 2.0 * w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::projection::Projection;

    fn haar(shape: Vec<usize>, hi: usize, periodic: bool, differences: f64) -> HaarPatches {
        let n = shape.len();
        HaarPatches {
            geometry: PatchGeometry {
                data_shape: shape,
                channel_axis: None,
                min_patch_size: vec![1; n],
                max_patch_size: vec![hi; n],
                periodic: vec![periodic; n],
            },
            differences,
        }
    }

    fn draw(h: &HaarPatches, d: usize, seed: u64) -> ProjectionBuf {
        let mut out = ProjectionBuf::default();
        h.sample(
            &DataStats::of_width(0),
            &mut Rng::from_seed(seed),
            d,
            &mut SamplerScratch::default(),
            &mut out,
        );
        out
    }

    #[test]
    fn haar_differences_are_adjacent_equal_patches_of_opposite_sign() {
        for periodic in [false, true] {
            let h = haar(vec![6, 7], 3, periodic, 0.5);
            h.check(42).unwrap();
            let out = draw(&h, 2_000, 3);
            let (mut sums, mut diffs) = (0, 0);
            for i in 0..out.len() {
                let desc = &out.idx[out.ptr[i] as usize..out.ptr[i + 1] as usize];
                assert!(h.is_valid(desc), "{desc:?}");
                let mut terms = vec![];
                h.for_each_term(desc, &mut |j, w| terms.push((j, w)));
                let plus: Vec<usize> = terms.iter().filter(|t| t.1 > 0.0).map(|t| t.0).collect();
                let minus: Vec<usize> = terms.iter().filter(|t| t.1 < 0.0).map(|t| t.0).collect();
                let mut all: Vec<usize> = terms.iter().map(|t| t.0).collect();
                all.sort_unstable();
                all.dedup();
                assert_eq!(all.len(), terms.len(), "no feature twice: {desc:?}");
                if minus.is_empty() {
                    sums += 1;
                } else {
                    diffs += 1;
                    assert_eq!(plus.len(), minus.len(), "same shape");
                }
            }
            let frac = diffs as f64 / (sums + diffs) as f64;
            assert!((0.45..0.55).contains(&frac), "{frac}");
        }
    }

    #[test]
    fn haar_difference_reads_a_contrast() {
        // 1-D, length 8: difference of [2, 4) and [4, 6)
        let h = haar(vec![8], 4, false, 1.0);
        let desc = [0, 2, 2, 1];
        assert!(h.is_valid(&desc));
        let row = [0.0f32, 0.0, 1.0, 2.0, 5.0, 7.0, 0.0, 0.0];
        let mut v = 0.0;
        h.for_each_term(&desc, &mut |j, w| v += w * row[j]);
        assert_eq!(v, 3.0 - 12.0);
        assert!(!h.is_valid(&[0, 5, 2, 1]), "second patch outside");
        assert!(!h.is_valid(&[0, 2, 2, 2]), "no second spatial axis");
        assert!(!h.is_valid(&[0, 2, 2]), "missing the op word");
    }

    #[test]
    fn haar_forest_round_trips_through_the_registry() {
        use crate::{Forest, ForestParams, MaxFeatures};
        let x = ndarray::Array2::from_shape_fn((200, 16), |(i, j)| {
            ((i * 7 + j * 13) % 17) as f32 / 17.0
        });
        // class: left half brighter than right half
        let y: Vec<f64> = x
            .rows()
            .into_iter()
            .map(|r| f64::from(u8::from(r.iter().take(8).sum::<f32>() > r.iter().skip(8).sum::<f32>())))
            .collect();
        let mut params = ForestParams::classification(2);
        params.projection = Projection::new(haar(vec![16], 8, false, 0.5));
        params.max_features = MaxFeatures::Count(16);
        params.n_estimators = 5;
        let forest = Forest::fit(&params, x.view(), &y, None).unwrap();
        let loaded = Forest::from_bytes(&forest.to_bytes().unwrap()).unwrap();
        assert_eq!(loaded, forest);
        assert_eq!(loaded.predict(x.view(), 1).unwrap(), forest.predict(x.view(), 1).unwrap());
        let bad = haar(vec![16], 8, false, 1.5);
        assert!(bad.check(16).unwrap_err().to_string().contains("differences"));
    }
}
