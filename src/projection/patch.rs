//! MORF patches (Perry et al., Sect. 3.1): a candidate sums a contiguous patch of a
//! structured sample (an image, a series, channels of either). [`PatchGeometry`] says where
//! patches may lie and reads a stored patch descriptor back as features; the Haar and pooled
//! families ([`super::haar`], [`super::pooled`]) build on the same geometry.
//!
//! A patch descriptor is the channel count (0 without a channel axis), the channels, then
//! start and length per spatial axis. Invariant (checked on load by
//! the geometry's [`CompactDescriptors::is_valid`]): a patch lies inside the sample, or wraps once on a
//! periodic axis.

use super::{
    CompactDescriptors, DataStats, FamilyArgs, ProjectionBuf, ProjectionFamily,
    RegisteredFamily, SamplerScratch, MAX_AXES,
};
use crate::error::{invalid, Result};
use crate::rng::Rng;
use crate::value::Value;
use serde::{Deserialize, Serialize};

/// The shape of one sample and where patches may lie in it (MORF, Sect. 3.1).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PatchGeometry {
    /// Shape of one sample, e.g. `[28, 28]` or `[3, 32, 32]`; its product is n_features.
    pub data_shape: Vec<usize>,
    /// The axis of `data_shape` holding channels, if any.
    pub channel_axis: Option<usize>,
    /// Minimum patch size per non-channel axis.
    pub min_patch_size: Vec<usize>,
    /// Maximum patch size per non-channel axis.
    pub max_patch_size: Vec<usize>,
    /// Whether each non-channel axis wraps around.
    pub periodic: Vec<bool>,
}

impl PatchGeometry {
    /// Draws a candidate's channels into the first words of its descriptor: their count
    /// and sorted indices (a random non-empty subset), or 0 without a channel axis.
    pub(crate) fn sample_channels(
        &self,
        rng: &mut Rng,
        s: &mut SamplerScratch,
        out: &mut ProjectionBuf,
    ) {
        if let Some(ca) = self.channel_axis {
            let n_ch = self.data_shape[ca];
            let k = rng.between(1, n_ch);
            rng.distinct(n_ch, k, &mut s.pool, &mut s.chosen);
            s.chosen.sort_unstable();
            out.idx.push(k as u32);
            out.idx.extend_from_slice(&s.chosen);
        } else {
            out.idx.push(0);
        }
    }

    /// Where a patch of `h` positions lies along spatial axis `i` (of `size` positions):
    /// anywhere on a periodic axis, else MORF's zero-padded corner clipped to the sample.
    /// Returns (start, length).
    pub(crate) fn place_patch(
        &self,
        rng: &mut Rng,
        i: usize,
        size: usize,
        h: usize,
    ) -> (usize, usize) {
        if self.periodic[i] {
            (rng.below(size), h)
        } else {
            let u = rng.below(size + h - 1) as i64 - (h as i64 - 1);
            let start = u.max(0) as usize;
            let end = ((u + h as i64) as usize).min(size);
            (start, end - start)
        }
    }

    /// The non-channel axes, in order.
    pub fn spatial_axes(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.data_shape.len()).filter(move |&a| Some(a) != self.channel_axis)
    }

    fn n_channels(&self) -> usize {
        self.channel_axis.map_or(1, |c| self.data_shape[c])
    }

    /// Row-major strides of `data_shape`.
    pub(crate) fn strides(&self) -> [usize; MAX_AXES] {
        let mut s = [0usize; MAX_AXES];
        let mut acc = 1;
        for a in (0..self.data_shape.len()).rev() {
            s[a] = acc;
            acc *= self.data_shape[a];
        }
        s
    }

    /// Checks the geometry against the data width.
    ///
    /// # Errors
    /// [`crate::Error::InvalidParameter`] naming `data_shape`, `channel_axis`,
    /// `min_patch_size`, `max_patch_size` or `periodic`.
    pub fn check(&self, n_features: usize) -> Result<()> {
        let shape = &self.data_shape;
        if shape.is_empty() || shape.len() > MAX_AXES {
            return Err(invalid(
                "data_shape",
                format!("must have 1 to {MAX_AXES} axes"),
            ));
        }
        if shape.contains(&0) {
            return Err(invalid("data_shape", "every axis must have length >= 1"));
        }
        let product = shape.iter().try_fold(1usize, |a, &b| a.checked_mul(b));
        if product != Some(n_features) {
            return Err(invalid(
                "data_shape",
                format!("{shape:?} holds {product:?} values but X has {n_features} features"),
            ));
        }
        if let Some(c) = self.channel_axis {
            if c >= shape.len() {
                return Err(invalid(
                    "channel_axis",
                    format!("{c} is not an axis of data_shape {shape:?}"),
                ));
            }
            if shape.len() == 1 {
                return Err(invalid(
                    "channel_axis",
                    "data_shape needs an axis besides the channels",
                ));
            }
        }
        let n_spatial = self.spatial_axes().count();
        for (name, v) in [
            ("min_patch_size", &self.min_patch_size),
            ("max_patch_size", &self.max_patch_size),
        ] {
            if v.len() != n_spatial {
                return Err(invalid(
                    name,
                    format!(
                        "needs {n_spatial} entries (one per non-channel axis), got {}",
                        v.len()
                    ),
                ));
            }
        }
        if self.periodic.len() != n_spatial {
            return Err(invalid(
                "periodic",
                format!("needs {n_spatial} entries (one per non-channel axis)"),
            ));
        }
        for (i, a) in self.spatial_axes().enumerate() {
            let (lo, hi) = (self.min_patch_size[i], self.max_patch_size[i]);
            if lo == 0 {
                return Err(invalid("min_patch_size", "patch sizes must be at least 1"));
            }
            if lo > hi {
                return Err(invalid(
                    "min_patch_size",
                    format!("{lo} exceeds max_patch_size {hi} on axis {a}"),
                ));
            }
            if hi > shape[a] {
                return Err(invalid(
                    "max_patch_size",
                    format!("{hi} does not fit axis {a} of length {}", shape[a]),
                ));
            }
        }
        Ok(())
    }

    /// Checks that a stored patch descriptor fits this geometry (model loading).
    pub(crate) fn valid_descriptor(&self, desc: &[u32]) -> bool {
        let Some((&n_ch, rest)) = desc.split_first() else {
            return false;
        };
        let n_ch = n_ch as usize;
        let n_spatial = self.spatial_axes().count();
        let want_ch = if self.channel_axis.is_some() { n_ch } else { 0 };
        if n_ch != want_ch || rest.len() != n_ch + 2 * n_spatial {
            return false;
        }
        if self.channel_axis.is_some()
            && (n_ch == 0
                || rest[..n_ch]
                    .iter()
                    .any(|&c| c as usize >= self.n_channels()))
        {
            return false;
        }
        self.spatial_axes().enumerate().all(|(i, a)| {
            let (start, len) = (rest[n_ch + 2 * i] as usize, rest[n_ch + 2 * i + 1] as usize);
            let size = self.data_shape[a];
            len >= 1 && len <= size && start < size && (self.periodic[i] || start + len <= size)
        })
    }

    /// Calls `f(feature)` for every feature inside the patch `desc`.
    #[inline]
    pub fn for_each_feature(&self, desc: &[u32], mut f: impl FnMut(usize)) {
        let strides = self.strides();
        let n_ch = desc[0] as usize;
        let channels = &desc[1..1 + n_ch];
        let boxes = &desc[1 + n_ch..];
        let mut axes = [0usize; MAX_AXES];
        let mut n_axes = 0;
        for a in self.spatial_axes() {
            axes[n_axes] = a;
            n_axes += 1;
        }
        let mut counter = [0usize; MAX_AXES];
        let channel_offsets = channels
            .iter()
            .map(|&c| c as usize * self.channel_axis.map_or(0, |ca| strides[ca]));
        let run = |base: usize, counter: &mut [usize; MAX_AXES], f: &mut dyn FnMut(usize)| {
            counter[..n_axes].fill(0);
            loop {
                let mut flat = base;
                for k in 0..n_axes {
                    let (start, size) = (boxes[2 * k] as usize, self.data_shape[axes[k]]);
                    let mut coord = start + counter[k];
                    if coord >= size {
                        coord -= size; // periodic wrap; valid descriptors never exceed one turn
                    }
                    flat += coord * strides[axes[k]];
                }
                f(flat);
                // odometer over the patch, last axis fastest
                let mut k = n_axes;
                loop {
                    if k == 0 {
                        return;
                    }
                    k -= 1;
                    counter[k] += 1;
                    if counter[k] < boxes[2 * k + 1] as usize {
                        break;
                    }
                    counter[k] = 0;
                }
            }
        };
        if n_ch == 0 {
            run(0, &mut counter, &mut f);
        } else {
            for off in channel_offsets {
                run(off, &mut counter, &mut f);
            }
        }
    }
}

impl CompactDescriptors for PatchGeometry {
    fn for_each_term(&self, desc: &[u32], f: &mut dyn FnMut(usize, f32)) {
        self.for_each_feature(desc, |i| f(i, 1.0))
    }
    fn is_valid(&self, desc: &[u32]) -> bool {
        self.valid_descriptor(desc)
    }
    fn max_weight_l1(&self) -> Option<f64> {
        // unit weights: the largest patch, over every channel
        let area: f64 = self
            .spatial_axes()
            .zip(&self.max_patch_size)
            .map(|(a, &hi)| hi.min(self.data_shape[a]) as f64)
            .product();
        Some(area * self.n_channels() as f64)
    }
}

impl PatchGeometry {
    /// The geometry from a family's arguments `data_shape`, `channel_axis`,
    /// `min_patch_size`, `max_patch_size` and `periodic` (checked against the data by
    /// [`PatchGeometry::check`] when a forest is fitted).
    ///
    /// # Errors
    /// [`crate::Error::InvalidParameter`] naming a missing or mistyped argument.
    pub fn from_args(args: &mut FamilyArgs) -> Result<PatchGeometry> {
        Ok(PatchGeometry {
            data_shape: args.counts("data_shape")?,
            channel_axis: args.opt_count("channel_axis")?,
            min_patch_size: args.counts("min_patch_size")?,
            max_patch_size: args.counts("max_patch_size")?,
            periodic: args.bools("periodic")?,
        })
    }

    /// The arguments [`PatchGeometry::from_args`] builds this geometry from.
    pub fn args(&self) -> FamilyArgs {
        let ints = |v: &[usize]| Value::int_array(v.iter().map(|&v| v as i64).collect());
        FamilyArgs::new()
            .with("data_shape", ints(&self.data_shape))
            .with(
                "channel_axis",
                self.channel_axis
                    .map_or(Value::None, |c| Value::Int(c as i64)),
            )
            .with("min_patch_size", ints(&self.min_patch_size))
            .with("max_patch_size", ints(&self.max_patch_size))
            .with("periodic", Value::bool_array(self.periodic.clone()))
    }
}

/// MORF's plain patches: for each axis a size uniform in [min, max], then a corner uniform
/// over the zero-padded range u ∈ {−h+1, …, H−1} (clipped to the sample), so every feature
/// is equally likely to be covered; periodic axes take u ∈ {0, …, H−1} and wrap. With a
/// channel axis, the patch spans a random non-empty subset of channels.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Patches {
    /// Where patches lie.
    pub geometry: PatchGeometry,
}

impl ProjectionFamily for Patches {
    fn check(&self, n_features: usize) -> Result<()> {
        self.geometry.check(n_features)
    }

    fn entries_per_candidate(&self, _n_features: usize) -> f64 {
        (1 + 3 * self.geometry.data_shape.len()) as f64
    }

    fn sample(
        &self,
        _data: &DataStats,
        rng: &mut Rng,
        d: usize,
        s: &mut SamplerScratch,
        out: &mut ProjectionBuf,
    ) {
        let g = &self.geometry;
        out.clear();
        for _ in 0..d {
            g.sample_channels(rng, s, out);
            for (i, a) in g.spatial_axes().enumerate() {
                let size = g.data_shape[a];
                let h = rng.between(g.min_patch_size[i], g.max_patch_size[i]);
                let (start, len) = g.place_patch(rng, i, size, h);
                out.idx.push(start as u32);
                out.idx.push(len as u32);
            }
            out.close();
        }
    }

    fn descriptors(&self) -> Option<&dyn CompactDescriptors> {
        Some(&self.geometry)
    }

    fn args(&self) -> FamilyArgs {
        self.geometry.args()
    }
}

/// `_core.Projection.family("patch", data_shape=, channel_axis=, min_patch_size=,
/// max_patch_size=, periodic=)`.
impl RegisteredFamily for Patches {
    const TAG: &'static str = "patch";

    fn from_args(args: &mut FamilyArgs) -> Result<Self> {
        Ok(Patches {
            geometry: PatchGeometry::from_args(args)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::draw;
    use super::*;

    fn geometry(shape: Vec<usize>, lo: usize, hi: usize, periodic: bool) -> PatchGeometry {
        let n = shape.len();
        PatchGeometry {
            data_shape: shape,
            channel_axis: None,
            min_patch_size: vec![lo; n],
            max_patch_size: vec![hi; n],
            periodic: vec![periodic; n],
        }
    }

    #[test]
    fn patch_sampler_covers_every_feature_equally() {
        let g = geometry(vec![6, 5], 1, 3, false);
        let s = Patches {
            geometry: g.clone(),
        };
        let mut counts = vec![0usize; 30];
        let out = draw(&s, 30, 200_000, 5);
        for i in 0..out.len() {
            out.get(i, Some(&g as &dyn CompactDescriptors))
                .for_each(|f, _| counts[f] += 1);
        }
        let mean = counts.iter().sum::<usize>() as f64 / 30.0;
        for c in &counts {
            assert!((*c as f64 - mean).abs() < 0.03 * mean, "{counts:?}");
        }
    }

    #[test]
    fn patch_sampler_wraps_only_on_periodic_axes() {
        let g = PatchGeometry {
            periodic: vec![true, false],
            ..geometry(vec![6, 6], 2, 4, false)
        };
        let s = Patches {
            geometry: g.clone(),
        };
        let out = draw(&s, 36, 5_000, 6);
        let (mut wrapped_rows, mut wrapped_cols) = (0, 0);
        for i in 0..out.len() {
            let desc = &out.idx[out.ptr[i] as usize..out.ptr[i + 1] as usize];
            assert!(g.valid_descriptor(desc));
            let mut rows = vec![];
            let mut cols = vec![];
            out.get(i, Some(&g as &dyn CompactDescriptors))
                .for_each(|f, _| {
                    rows.push(f / 6);
                    cols.push(f % 6);
                });
            let span = |v: &Vec<usize>| v.iter().max().unwrap() - v.iter().min().unwrap() + 1;
            let distinct = |v: &Vec<usize>| {
                let mut v = v.clone();
                v.sort();
                v.dedup();
                v.len()
            };
            if span(&rows) > distinct(&rows) {
                wrapped_rows += 1;
            }
            if span(&cols) > distinct(&cols) {
                wrapped_cols += 1;
            }
        }
        assert!(wrapped_rows > 100, "periodic axis wraps");
        assert_eq!(wrapped_cols, 0, "non-periodic axis never wraps");
    }

    #[test]
    fn patch_geometry_rejects_shapes_that_do_not_fit() {
        assert!(geometry(vec![5, 5], 1, 3, false).check(24).is_err());
        assert!(geometry(vec![5, 5], 1, 6, false).check(25).is_err());
        assert!(geometry(vec![5, 5], 3, 2, false).check(25).is_err());
        assert!(geometry(vec![5, 5], 1, 5, false).check(25).is_ok());
    }

    #[test]
    fn patch_sampler_picks_channel_subsets() {
        let g = PatchGeometry {
            data_shape: vec![3, 10],
            channel_axis: Some(0),
            min_patch_size: vec![2],
            max_patch_size: vec![4],
            periodic: vec![false],
        };
        g.check(30).unwrap();
        let out = draw(
            &Patches {
                geometry: g.clone(),
            },
            30,
            300,
            7,
        );
        let mut n_ch_seen = [0; 4];
        for i in 0..out.len() {
            let desc = &out.idx[out.ptr[i] as usize..out.ptr[i + 1] as usize];
            assert!(g.valid_descriptor(desc));
            n_ch_seen[desc[0] as usize] += 1;
        }
        assert!(n_ch_seen[1] > 0 && n_ch_seen[2] > 0 && n_ch_seen[3] > 0);
    }
}
