//! The pooled-filter family: MORF's patch sums and Haar differences ([`HaarPatches`]),
//! plus translation-invariant candidates that slide a small 1-D filter along one spatial
//! axis of a window and keep its largest (or smallest) response: "somewhere in this
//! window there is a rise of this width". Sums over fixed windows see where a pattern
//! is; a pooled filter sees whether it is there, wherever it moved (mnist1d's digits are
//! shifted templates: `benches/pooled_prototype.py`, `benches/results/structured.md`).
//!
//! A pooled candidate is a [`Pooling`] projection: its pieces are the filter at each
//! position of the window, each a linear sum the engine computes as it does any other
//! (so training, prediction, sparse X and missing values need nothing new), combined by
//! [`super::Pool`]. The filter has cells of `h` positions along axis `k`: a sum (one
//! cell, weights 1), a first difference (cells +1, −1) or a second difference (+1, −2,
//! +1); across the other spatial axes and the channels it covers the window's patch, as
//! a MORF patch does.
//!
//! A descriptor is either a [`HaarPatches`] descriptor (ending in its op word, at most
//! the number of spatial axes), or a patch descriptor of the window (channels, then start
//! and length per spatial axis) followed by five words: `k`, the filter kind (0 sum, 1
//! first, 2 second difference), `h`, the pool (0 max, 1 min) and [`POOLED`]. Invariant
//! (checked on load by [`CompactDescriptors::is_valid`]): the window lies inside the
//! sample along `k` (no wrap) and holds the filter's `(kind + 1) · h` positions at least
//! once; the terms of piece `p` are the filter placed `p` positions from the window's
//! start, taps in order, and within a tap the window's patch in
//! [`PatchGeometry::for_each_feature`]'s order.

use super::haar::HaarPatches;
use super::{
    CompactDescriptors, DataStats, FamilyArgs, PatchGeometry, Pool, Pooling, ProjectionBuf,
    ProjectionFamily, RegisteredFamily, SamplerScratch, Sliding,
};
use crate::error::{check_probability, invalid, Result};
use crate::rng::Rng;
use crate::value::Value;
use serde::{Deserialize, Serialize};

/// The last word of a pooled descriptor (a Haar op word is at most the axis count).
pub const POOLED: u32 = u32::MAX;

/// Words after a pooled descriptor's window: axis, kind, h, pool, [`POOLED`].
const TAIL: usize = 5;

/// MORF patches, Haar differences and pooled filters over a structured sample.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PooledPatches {
    /// The geometry, and what a candidate that is not pooled is.
    pub haar: HaarPatches,
    /// The probability that a candidate is a pooled filter, in [0, 1].
    pub pooled: f64,
    /// The widest filter cell `h` (drawn uniformly in `1..=max_filter`, fewer when the
    /// axis is short), at least 1.
    pub max_filter: usize,
    /// The shortest window a filter slides over (the whole axis when it is shorter), at
    /// least 1; half the candidates pool over the whole axis.
    pub min_window: usize,
}

/// The cells' weights of each filter kind: a sum, a first and a second difference.
const CELLS: [&[f32]; 3] = [&[1.0], &[1.0, -1.0], &[1.0, -2.0, 1.0]];

/// A pooled descriptor's parts: (window words, spatial axis position `k`, kind, h, pool).
fn split(desc: &[u32]) -> Option<(&[u32], usize, u32, usize, Pool)> {
    let n = desc.len().checked_sub(TAIL)?;
    let (window, tail) = desc.split_at(n);
    if tail[4] != POOLED || tail[3] > 1 {
        return None;
    }
    let pool = if tail[3] == 0 { Pool::Max } else { Pool::Min };
    Some((window, tail[0] as usize, tail[1], tail[2] as usize, pool))
}

impl PooledPatches {
    fn geometry(&self) -> &PatchGeometry {
        &self.haar.geometry
    }

    /// Appends one pooled candidate to `out`.
    fn sample_pooled(&self, rng: &mut Rng, s: &mut SamplerScratch, out: &mut ProjectionBuf) {
        let g = self.geometry();
        g.sample_channels(rng, s, out);
        let n_spatial = g.spatial_axes().count();
        let k = rng.below(n_spatial);
        let size_k = g.data_shape[g.spatial_axes().nth(k).unwrap_or(0)];
        let mut kind = rng.below(3);
        if (kind + 1) > size_k {
            kind = 0;
        }
        let h = rng.between(1, self.max_filter.min(size_k / (kind + 1)));
        let span = (kind + 1) * h;
        for (i, a) in g.spatial_axes().enumerate() {
            let size = g.data_shape[a];
            let (start, len) = if i == k {
                if rng.coin() {
                    (0, size)
                } else {
                    let len = rng.between(self.min_window.max(span).min(size), size);
                    (rng.below(size - len + 1), len)
                }
            } else {
                let h = rng.between(g.min_patch_size[i], g.max_patch_size[i]);
                g.place_patch(rng, i, size, h)
            };
            out.idx.push(start as u32);
            out.idx.push(len as u32);
        }
        let pool = u32::from(rng.coin());
        out.idx
            .extend_from_slice(&[k as u32, kind as u32, h as u32, pool, POOLED]);
        out.close();
    }

    /// Terms per piece of the pooled descriptor with window `window`, axis `k` and filter
    /// span `span`: the span times the patch across the other axes and the channels.
    fn piece_len(&self, window: &[u32], k: usize, span: usize) -> usize {
        let n_ch = window[0] as usize;
        let across: usize = (0..self.geometry().spatial_axes().count())
            .filter(|&i| i != k)
            .map(|i| window[1 + n_ch + 2 * i + 1] as usize)
            .product();
        span * across * n_ch.max(1)
    }
}

impl ProjectionFamily for PooledPatches {
    /// The Haar family's checks, `pooled` in [0, 1], `max_filter` and `min_window` >= 1.
    fn check(&self, n_features: usize) -> Result<()> {
        self.haar.check(n_features)?;
        check_probability("pooled", self.pooled)?;
        if self.max_filter == 0 {
            return Err(invalid("max_filter", "must be at least 1"));
        }
        if self.min_window == 0 {
            return Err(invalid("min_window", "must be at least 1"));
        }
        Ok(())
    }

    fn entries_per_candidate(&self, n_features: usize) -> f64 {
        self.haar.entries_per_candidate(n_features) + TAIL as f64
    }

    fn sample(
        &self,
        _data: &DataStats,
        rng: &mut Rng,
        d: usize,
        s: &mut SamplerScratch,
        out: &mut ProjectionBuf,
    ) {
        let n_diff_axes = self.haar.difference_axes().count();
        out.clear();
        for _ in 0..d {
            if rng.unit() < self.pooled {
                self.sample_pooled(rng, s, out);
            } else {
                self.haar.sample_one(rng, n_diff_axes, s, out);
            }
        }
    }

    fn descriptors(&self) -> Option<&dyn CompactDescriptors> {
        Some(self)
    }

    fn args(&self) -> FamilyArgs {
        self.haar
            .args()
            .with("pooled", Value::Float(self.pooled))
            .with("max_filter", Value::Int(self.max_filter as i64))
            .with("min_window", Value::Int(self.min_window as i64))
    }
}

/// `_core.Projection.family("pooled", <the "haar" arguments>, pooled=, max_filter=,
/// min_window=)`.
impl RegisteredFamily for PooledPatches {
    const TAG: &'static str = "pooled";

    fn from_args(args: &mut FamilyArgs) -> Result<Self> {
        Ok(PooledPatches {
            haar: HaarPatches::from_args(args)?,
            pooled: args.float("pooled")?,
            max_filter: args.count("max_filter")?,
            min_window: args.count("min_window")?,
        })
    }
}

impl CompactDescriptors for PooledPatches {
    fn for_each_term(&self, desc: &[u32], f: &mut dyn FnMut(usize, f32)) {
        let mut base = Vec::new();
        match self.sliding(desc, &mut base) {
            Some(s) => s.for_each_term(&base, f),
            None => self.haar.for_each_term(desc, f),
        }
    }

    fn sliding(&self, desc: &[u32], base: &mut Vec<usize>) -> Option<Sliding> {
        let (window, k, kind, h, pool) = split(desc)?;
        let g = self.geometry();
        let axis = g.spatial_axes().nth(k).expect("a valid descriptor");
        let stride = g.strides()[axis];
        let n_ch = window[0] as usize;
        let (start, len) = (1 + n_ch + 2 * k, 1 + n_ch + 2 * k + 1);
        let (first, len_k) = (window[start] as usize, window[len] as usize);
        let cells = *CELLS.get(kind as usize)?;
        debug_assert!(first + len_k <= g.data_shape[axis]);
        // the features of one tap at the window's start (the window never wraps along
        // `k`), moved to position 0
        let mut cell = window.to_vec();
        cell[len] = 1;
        g.for_each_feature(&cell, |j| base.push(j - first * stride));
        Some(Sliding {
            pool,
            stride,
            first,
            positions: len_k + 1 - cells.len() * h,
            cell: h,
            cells,
        })
    }

    fn pooling(&self, desc: &[u32]) -> Option<Pooling> {
        let (window, k, kind, h, pool) = split(desc)?;
        Some(Pooling {
            pool,
            piece_len: self.piece_len(window, k, (kind as usize + 1) * h),
        })
    }

    fn is_valid(&self, desc: &[u32]) -> bool {
        let Some((window, k, kind, h, _)) = split(desc) else {
            return self.haar.is_valid(desc);
        };
        let g = self.geometry();
        if !g.valid_descriptor(window) || kind > 2 || h == 0 || h > self.max_filter {
            return false;
        }
        let Some(axis) = g.spatial_axes().nth(k) else {
            return false;
        };
        let n_ch = window[0] as usize;
        let (start, len) = (
            window[1 + n_ch + 2 * k] as usize,
            window[1 + n_ch + 2 * k + 1] as usize,
        );
        start + len <= g.data_shape[axis] && (kind as usize + 1) * h <= len
    }

    fn max_weight_l1(&self) -> Option<f64> {
        // a piece: |weights| up to 4h per position along k, over a patch across the
        // other axes and every channel (bounded by the largest patch, times the channels)
        let pooled = self
            .geometry()
            .max_weight_l1()
            .map(|w| 4.0 * self.max_filter as f64 * w);
        match (self.haar.max_weight_l1(), pooled) {
            (Some(a), Some(b)) => Some(a.max(b)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::projection::Projection;
    use crate::projection::ProjRef;
    use crate::{Forest, ForestParams, MaxFeatures};
    use ndarray::Array2;

    fn pooled(shape: Vec<usize>, pooled: f64) -> PooledPatches {
        let n = shape.len();
        PooledPatches {
            haar: HaarPatches {
                geometry: PatchGeometry {
                    data_shape: shape,
                    channel_axis: None,
                    min_patch_size: vec![1; n],
                    max_patch_size: vec![2; n],
                    periodic: vec![false; n],
                },
                differences: 0.5,
            },
            pooled,
            max_filter: 3,
            min_window: 4,
        }
    }

    fn value(f: &PooledPatches, desc: &[u32], row: &[f32]) -> f32 {
        ProjRef::Compact { desc, family: f }.dot(row)
    }

    #[test]
    fn pooled_value_is_the_max_or_min_over_filter_positions() {
        let f = pooled(vec![8], 1.0);
        // window [1, 7), first difference of cells of 2 (+1 +1 -1 -1), max then min
        let max = [0, 1, 6, 0, 1, 2, 0, POOLED];
        let min = [0, 1, 6, 0, 1, 2, 1, POOLED];
        assert!(f.is_valid(&max) && f.is_valid(&min));
        let row = [9.0f32, 1.0, 2.0, 0.0, 0.0, 5.0, 1.0, -9.0];
        // positions 1, 2, 3 of the 4-tap filter inside [1, 7)
        let pieces: Vec<f32> = (1..4)
            .map(|p| row[p] + row[p + 1] - row[p + 2] - row[p + 3])
            .collect();
        assert_eq!(pieces, vec![3.0, -3.0, -6.0]);
        assert_eq!(value(&f, &max, &row), 3.0);
        assert_eq!(value(&f, &min, &row), -6.0);
        let p = f.pooling(&max).unwrap();
        assert_eq!((p.pool, p.piece_len), (Pool::Max, 4));
        let mut n = 0;
        f.for_each_term(&max, &mut |_, _| n += 1);
        assert_eq!(n, 12, "every term of every piece");
        // second difference of cells of 1 over the whole axis: +1 -2 +1
        let second = [0, 0, 8, 0, 2, 1, 0, POOLED];
        let mut terms = vec![];
        f.for_each_term(&second, &mut |j, w| terms.push((j, w)));
        assert_eq!(&terms[..3], &[(0, 1.0), (1, -2.0), (2, 1.0)]);
        assert_eq!(terms.len(), 3 * 6);
        // a missing feature in any piece makes the value missing
        let mut holed = row;
        holed[6] = f32::NAN;
        assert!(value(&f, &max, &holed).is_nan());
        assert!(Pool::Max.combine(1.0, f32::NAN).is_nan());
        assert!(Pool::Min.combine(f32::NAN, 1.0).is_nan());
    }

    #[test]
    fn pooled_descriptors_are_checked_on_load() {
        let f = pooled(vec![8], 1.0);
        assert!(!f.is_valid(&[0, 4, 6, 0, 0, 1, 0, POOLED]), "window outside");
        assert!(!f.is_valid(&[0, 0, 3, 0, 2, 2, 0, POOLED]), "filter wider than window");
        assert!(f.is_valid(&[0, 0, 3, 0, 2, 1, 0, POOLED]), "filter as wide as the window");
        assert!(!f.is_valid(&[0, 0, 8, 0, 3, 1, 0, POOLED]), "no kind 3");
        assert!(!f.is_valid(&[0, 0, 8, 0, 0, 4, 0, POOLED]), "h above max_filter");
        assert!(!f.is_valid(&[0, 0, 8, 0, 0, 0, 0, POOLED]), "h = 0");
        assert!(!f.is_valid(&[0, 0, 8, 1, 0, 1, 0, POOLED]), "no axis 1");
        assert!(!f.is_valid(&[0, 0, 8, 0, 0, 1, 2, POOLED]), "no pool 2");
        assert!(!f.is_valid(&[0, 0, 8, 0, 0, POOLED]), "truncated");
        assert!(f.is_valid(&[0, 2, 2, 1]), "a Haar difference");
        assert!(f.pooling(&[0, 2, 2, 1]).is_none());
        // channels: the filter covers the chosen channels at every tap
        let mut f = pooled(vec![3, 10], 1.0);
        f.haar.geometry.channel_axis = Some(0);
        f.haar.geometry.min_patch_size = vec![1];
        f.haar.geometry.max_patch_size = vec![2];
        f.haar.geometry.periodic = vec![false];
        f.check(30).unwrap();
        // channels 0 and 2, window [2, 10), first difference of cells of 1, min
        let desc = [2, 0, 2, 2, 8, 0, 1, 1, 1, POOLED];
        assert!(f.is_valid(&desc));
        assert!(!f.is_valid(&[2, 0, 3, 2, 8, 0, 1, 1, 1, POOLED]), "no channel 3");
        assert_eq!(f.pooling(&desc).unwrap().piece_len, 4);
        let mut terms = vec![];
        f.for_each_term(&desc, &mut |j, w| terms.push((j, w)));
        assert_eq!(terms.len(), 4 * 7);
        assert_eq!(&terms[..4], &[(2, 1.0), (22, 1.0), (3, -1.0), (23, -1.0)]);
        let row: Vec<f32> = (0..30).map(|j| ((j * 7) % 5) as f32).collect();
        let want = (0..7)
            .map(|p| row[2 + p] + row[22 + p] - row[3 + p] - row[23 + p])
            .fold(f32::INFINITY, f32::min);
        assert_eq!(value(&f, &desc, &row), want);
        // every drawn descriptor is valid, in 1-D and 2-D, about the asked share pooled
        for shape in [vec![40], vec![6, 9]] {
            let n_features: usize = shape.iter().product();
            let f = pooled(shape, 0.5);
            let mut out = ProjectionBuf::default();
            f.sample(
                &DataStats::of_width(0),
                &mut Rng::from_seed(5),
                2_000,
                &mut SamplerScratch::default(),
                &mut out,
            );
            let mut n_pooled = 0;
            for i in 0..out.len() {
                let desc = &out.idx[out.ptr[i] as usize..out.ptr[i + 1] as usize];
                assert!(f.is_valid(desc), "{desc:?}");
                if let Some(p) = f.pooling(desc) {
                    n_pooled += 1;
                    let mut base = vec![];
                    let s = f.sliding(desc, &mut base).expect("a sliding filter");
                    assert_eq!(s.pooling(base.len()), p, "{desc:?}");
                    let mut n = 0;
                    f.for_each_term(desc, &mut |j, _| {
                        assert!(j < n_features);
                        n += 1;
                    });
                    assert!(n > 0 && n % p.piece_len == 0, "{desc:?}");
                }
            }
            assert!((850..1150).contains(&n_pooled), "{n_pooled}");
        }
    }

    /// Shifted bumps: class 1 has a rise somewhere, class 0 a fall.
    fn shifted(n: usize) -> (Array2<f32>, Vec<f64>) {
        let mut rng = Rng::from_seed(11);
        let mut x = Array2::from_shape_fn((n, 32), |_| (rng.unit() * 0.3) as f32);
        let y: Vec<f64> = (0..n).map(|i| (i % 2) as f64).collect();
        for i in 0..n {
            let at = rng.below(28);
            let sign = if y[i] == 1.0 { 1.0 } else { -1.0 };
            for t in 0..4 {
                x[[i, at + t]] += sign * (t as f32 - 1.5);
            }
        }
        (x, y)
    }

    #[test]
    fn pooled_forest_predicts_with_the_values_it_was_grown_on() {
        let (mut x, _) = shifted(300);
        let y: Vec<f64> = x.rows().into_iter().map(|r| f64::from(r.sum())).collect();
        x[[3, 5]] = f32::NAN;
        x[[7, 20]] = f32::NAN;
        let mut params = ForestParams::regression();
        params.projection = Projection::new(pooled(vec![32], 0.7));
        params.max_features = MaxFeatures::Count(8);
        params.n_estimators = 4;
        params.bootstrap = false;
        let forest = Forest::fit(&params, x.view(), &y, None).unwrap();
        let g = forest.descriptors();
        let mut n_pooled = 0;
        for (tree, packed) in forest.trees().iter().zip(forest.packed()) {
            for node in 0..tree.n_nodes() {
                n_pooled += usize::from(!tree.is_leaf(node) && tree.proj(node, g).pooling().is_some());
            }            // a feature counts once per split, however many pieces it is in
            let mut counts = vec![0.0; 32];
            tree.add_projection_counts(g, &mut counts);
            let n_inner = (tree.n_nodes() - tree.n_leaves()) as f64;
            assert!(counts.iter().all(|&c| c <= n_inner), "{counts:?}");

            // every training row reaches a leaf that counted it when the tree was grown,
            // by the tree's walk and by the packed layout
            let mut reached = vec![0u32; tree.n_nodes()];
            for row in x.rows() {
                let row = row.to_vec();
                let leaf = tree.leaf(g, &row);
                assert_eq!(leaf, packed.leaf(&row));
                assert_eq!(leaf, tree.leaf_by(g, |j| row[j]));
                reached[leaf] += 1;
            }
            for (node, &n) in reached.iter().enumerate() {
                if tree.is_leaf(node) {
                    assert_eq!(n, tree.n_node_samples[node], "leaf {node}");
                }
            }
        }
        assert!(n_pooled > 10, "{n_pooled} pooled splits");
        let loaded = Forest::from_bytes(&forest.to_bytes().unwrap()).unwrap();
        assert_eq!(loaded, forest);
        assert_eq!(
            loaded.predict(x.view(), 1).unwrap(),
            forest.predict(x.view(), 1).unwrap()
        );
    }

    #[test]
    fn pooled_filters_find_shifted_patterns() {
        let (x, y) = shifted(400);
        let (xt, yt) = shifted(1_000);
        let accuracy = |pooled_share: f64| {
            let mut params = ForestParams::classification(2);
            params.projection =
                Projection::new(pooled(vec![32], pooled_share));
            params.max_features = MaxFeatures::Count(8);
            params.n_estimators = 20;
            let forest = Forest::fit(&params, x.view(), &y, None).unwrap();
            let proba = forest.predict(xt.view(), 1).unwrap();
            let right = proba
                .rows()
                .into_iter()
                .zip(&yt)
                .filter(|(p, &t)| (p[1] > 0.5) == (t == 1.0))
                .count();
            right as f64 / yt.len() as f64
        };
        let (plain, with_pooled) = (accuracy(0.0), accuracy(0.5));
        assert!(with_pooled > plain + 0.05 && with_pooled > 0.98, "{plain} -> {with_pooled}");
        let bad = PooledPatches {
            pooled: 1.5,
            ..pooled(vec![32], 0.5)
        };
        assert!(bad.check(32).unwrap_err().to_string().contains("pooled"));
    }
}
