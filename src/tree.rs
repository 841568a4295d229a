//! One projection tree: storage and growth.
//!
//! Storage is a table (struct of arrays). Node `i` is a leaf when
//! `left[i] == LEAF`; otherwise a row goes to `left[i]` when its projection
//! `sum_j w_j x_j` is `<= threshold[i]`, else to `right[i]` (always `left[i] + 1`).
//! Node `i`'s projection is `proj_idx[proj_ptr[i]..proj_ptr[i+1]]` (with weights in
//! `proj_w`, or a patch descriptor in patch forests); leaves have an empty range.
//! Only leaves store values (class distribution or mean): for a leaf, `right[i]` is
//! its row `r` in the leaf-value table, `value[r*n_outputs..(r+1)*n_outputs]`. An
//! inner node's value is the weighted mean of its children's ([`Tree::node_values`]).
//!
//! Growth: the in-bag rows live in one permutation array; a node owns the range
//! `samples[start..end]`, and after a split `samples[start..start+n_left]` go left.

use crate::data::{FeatureMatrix, Targets};
use crate::error::{Error, Result};
use crate::params::{Criterion, Splitter, TreeConfig};
use crate::projection::{PatchGeometry, ProjRef, ProjectionBuf, ProjectionSampler, SamplerScratch};
use crate::rng::Rng;
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Marks a leaf in [`Tree::left`] and [`Tree::right`].
pub const LEAF: u32 = u32::MAX;
/// Impurities at or below this are treated as pure nodes.
const PURE: f64 = 1e-7;

/// A fitted tree as a flat table.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Tree {
    pub n_outputs: usize,
    pub left: Vec<u32>,
    pub right: Vec<u32>,
    pub threshold: Vec<f32>,
    pub proj_ptr: Vec<u32>,
    pub proj_idx: Vec<u32>,
    pub proj_w: Vec<f32>,
    pub impurity: Vec<f64>,
    pub n_node_samples: Vec<u32>,
    pub weighted_n_node_samples: Vec<f64>,
    pub depth: Vec<u32>,
    /// Leaf values, one row of `n_outputs` per leaf in node order.
    pub value: Vec<f64>,
}

impl Tree {
    pub fn n_nodes(&self) -> usize {
        self.left.len()
    }

    #[inline]
    pub fn is_leaf(&self, node: usize) -> bool {
        self.left[node] == LEAF
    }

    pub fn n_leaves(&self) -> usize {
        self.left.iter().filter(|&&l| l == LEAF).count()
    }

    pub fn max_depth(&self) -> usize {
        self.depth.iter().copied().max().unwrap_or(0) as usize
    }

    /// The projection of inner node `node`.
    #[inline]
    pub fn proj<'a>(&'a self, node: usize, geometry: Option<&'a PatchGeometry>) -> ProjRef<'a> {
        let (a, b) = (
            self.proj_ptr[node] as usize,
            self.proj_ptr[node + 1] as usize,
        );
        match geometry {
            Some(geometry) => ProjRef::Patch {
                desc: &self.proj_idx[a..b],
                geometry,
            },
            None => ProjRef::Sparse {
                idx: &self.proj_idx[a..b],
                w: &self.proj_w[a..b],
            },
        }
    }

    /// Releases the spare capacity growth left in every table.
    fn shrink_to_fit(&mut self) {
        self.left.shrink_to_fit();
        self.right.shrink_to_fit();
        self.threshold.shrink_to_fit();
        self.proj_ptr.shrink_to_fit();
        self.proj_idx.shrink_to_fit();
        self.proj_w.shrink_to_fit();
        self.impurity.shrink_to_fit();
        self.n_node_samples.shrink_to_fit();
        self.weighted_n_node_samples.shrink_to_fit();
        self.depth.shrink_to_fit();
        self.value.shrink_to_fit();
    }

    /// The values (class distribution or mean) of leaf `leaf`.
    #[inline]
    pub fn leaf_value(&self, leaf: usize) -> &[f64] {
        debug_assert!(self.is_leaf(leaf));
        self.leaf_row(self.right[leaf] as usize)
    }

    /// Row `r` of the leaf-value table.
    #[inline]
    pub fn leaf_row(&self, r: usize) -> &[f64] {
        &self.value[r * self.n_outputs..(r + 1) * self.n_outputs]
    }

    /// The values of every node, inner nodes included (the weighted mean of their
    /// children's), as an n_nodes × n_outputs table.
    pub fn node_values(&self) -> Vec<f64> {
        let k = self.n_outputs;
        let mut out = vec![0.0; self.n_nodes() * k];
        // children come after their parent: fill from the back
        for node in (0..self.n_nodes()).rev() {
            if self.is_leaf(node) {
                out[node * k..(node + 1) * k].copy_from_slice(self.leaf_value(node));
                continue;
            }
            let (l, r) = (self.left[node] as usize, self.right[node] as usize);
            let w = &self.weighted_n_node_samples;
            let total = w[l] + w[r];
            for c in 0..k {
                out[node * k + c] = if total > 0.0 {
                    (w[l] * out[l * k + c] + w[r] * out[r * k + c]) / total
                } else {
                    0.0
                };
            }
        }
        out
    }

    /// The leaf reached by a row whose feature j is `get(j)`.
    #[inline]
    pub fn leaf_by(&self, geometry: Option<&PatchGeometry>, get: impl Fn(usize) -> f32) -> usize {
        let mut node = 0usize;
        while self.left[node] != LEAF {
            let mut v = 0.0f32;
            self.proj(node, geometry).for_each(|j, w| v += w * get(j));
            node = if v <= self.threshold[node] {
                self.left[node]
            } else {
                self.right[node]
            } as usize;
        }
        node
    }

    /// The leaf reached by a row given as a slice.
    #[inline]
    pub fn leaf(&self, geometry: Option<&PatchGeometry>, row: &[f32]) -> usize {
        let mut node = 0usize;
        while self.left[node] != LEAF {
            let v = self.proj(node, geometry).dot(row);
            node = if v <= self.threshold[node] {
                self.left[node]
            } else {
                self.right[node]
            } as usize;
        }
        node
    }

    /// Weighted impurity decrease of every split, shared among each projection's features
    /// in proportion to |weight|, normalised to sum to 1 (all zeros for a single leaf).
    pub fn feature_importances(
        &self,
        n_features: usize,
        geometry: Option<&PatchGeometry>,
    ) -> Vec<f64> {
        let mut imp = vec![0.0; n_features];
        for node in 0..self.n_nodes() {
            if self.is_leaf(node) {
                continue;
            }
            let (l, r) = (self.left[node] as usize, self.right[node] as usize);
            let w = &self.weighted_n_node_samples;
            let decrease =
                w[node] * self.impurity[node] - w[l] * self.impurity[l] - w[r] * self.impurity[r];
            let proj = self.proj(node, geometry);
            let mut total_w = 0.0f64;
            proj.for_each(|_, wt| total_w += wt.abs() as f64);
            if total_w > 0.0 {
                proj.for_each(|j, wt| imp[j] += decrease.max(0.0) * wt.abs() as f64 / total_w);
            }
        }
        normalise(&mut imp);
        imp
    }

    /// Adds to `counts[j]` the number of split projections that use feature j.
    pub fn add_projection_counts(&self, geometry: Option<&PatchGeometry>, counts: &mut [f64]) {
        for node in 0..self.n_nodes() {
            if !self.is_leaf(node) {
                self.proj(node, geometry).for_each(|j, _| counts[j] += 1.0);
            }
        }
    }

    /// Checks every index and length, so that traversal can never go out of bounds or loop.
    pub(crate) fn validate(
        &self,
        n_features: usize,
        geometry: Option<&PatchGeometry>,
    ) -> Result<()> {
        let n = self.n_nodes();
        let bad = |what: &str| Err(Error::CorruptModel(format!("tree table: {what}")));
        if n == 0 || n >= LEAF as usize {
            return bad("node count");
        }
        for len in [
            self.right.len(),
            self.threshold.len(),
            self.impurity.len(),
            self.n_node_samples.len(),
        ] {
            if len != n {
                return bad("array lengths differ");
            }
        }
        if self.weighted_n_node_samples.len() != n
            || self.depth.len() != n
            || self.proj_ptr.len() != n + 1
        {
            return bad("array lengths differ");
        }
        if self.n_outputs == 0 || self.value.len() != self.n_leaves() * self.n_outputs {
            return bad("value table size");
        }
        if self.depth[0] != 0 {
            return bad("root depth");
        }
        if self.proj_ptr[0] != 0
            || self.proj_ptr[n] as usize != self.proj_idx.len()
            || self.proj_idx.len() >= MULTI as usize
        {
            return bad("projection offsets");
        }
        if geometry.is_none() && self.proj_w.len() != self.proj_idx.len() {
            return bad("projection weights length");
        }
        if geometry.is_some() && !self.proj_w.is_empty() {
            return bad("patch forest with weights");
        }
        let mut leaf_rows = 0u32;
        for i in 0..n {
            let (a, b) = (self.proj_ptr[i] as usize, self.proj_ptr[i + 1] as usize);
            if a > b || b > self.proj_idx.len() {
                return bad("projection offsets");
            }
            let (l, r) = (self.left[i], self.right[i]);
            if l == LEAF {
                if r != leaf_rows || a != b {
                    return bad("leaf with a projection or out-of-order value row");
                }
                leaf_rows += 1;
                continue;
            }
            // children always come after their parent: traversal terminates
            if l as usize <= i || r != l + 1 || r as usize >= n || a == b {
                return bad("child index");
            }
            // depths must describe the tree (reported as max_depth, used by tree complexity)
            if self.depth[l as usize] != self.depth[i].saturating_add(1)
                || self.depth[r as usize] != self.depth[i].saturating_add(1)
            {
                return bad("node depths");
            }
            if self.threshold[i].is_nan() {
                return bad("NaN threshold");
            }
            match geometry {
                None if self.proj_idx[a..b]
                    .iter()
                    .any(|&j| j as usize >= n_features) =>
                {
                    return bad("feature index out of range")
                }
                Some(g) if !g.valid_descriptor(&self.proj_idx[a..b]) => {
                    return bad("patch descriptor")
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// Flags the packed `a` field of a node whose projection has several features.
const MULTI: u32 = 1 << 31;

/// One node of a [`PackedTree`]: 16 bytes, one cache line holds four.
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C)]
struct PackedNode {
    /// Single feature index, or `MULTI | start` into the packed projection arrays; for a
    /// leaf, its row in the leaf-value table.
    a: u32,
    /// The single feature's weight (f32 bits), or the projection's length; for a leaf,
    /// 1 + its class when its value is one-hot, else 0.
    b: u32,
    threshold: f32,
    /// Left child (the right child is `left + 1`), or [`LEAF`].
    left: u32,
}

/// A tree laid out for prediction (SPORF paper, Sect. 6.4.3, "forest packing"): nodes as
/// one array of 16-byte records with children adjacent, the common single-feature split
/// stored inline so traversal touches one record per level. Node indices are those of
/// the [`Tree`] it was built from, so leaves map back to `Tree::value` directly.
#[derive(Clone, Debug, PartialEq)]
pub struct PackedTree {
    nodes: Vec<PackedNode>,
    /// (feature, weight) of multi-feature projections, interleaved: one cache line, not two.
    proj: Vec<(u32, f32)>,
}

impl PackedTree {
    /// Packs a tree for prediction.
    pub fn new(tree: &Tree, geometry: Option<&PatchGeometry>) -> PackedTree {
        let mut p = PackedTree {
            nodes: Vec::with_capacity(tree.n_nodes()),
            proj: Vec::new(),
        };
        for node in 0..tree.n_nodes() {
            let (a, b, threshold, left) = if tree.is_leaf(node) {
                // a leaf points to itself, which is how a walk recognises it; its `a` holds
                // its row in the tree's leaf-value table, its `b` 1 + the class of a one-hot
                // value (a pure classification leaf), else 0
                let value = tree.leaf_value(node);
                let b = match value.iter().position(|&v| v != 0.0) {
                    Some(c) if value[c] == 1.0 && value[c + 1..].iter().all(|&v| v == 0.0) => {
                        1 + c as u32
                    }
                    _ => 0,
                };
                (tree.right[node], b, f32::INFINITY, node as u32)
            } else {
                // patches are expanded here (prediction cache only; the model keeps the
                // compact descriptor), in the order training summed them
                let start = p.proj.len();
                tree.proj(node, geometry)
                    .for_each(|j, w| p.proj.push((j as u32, w)));
                let (a, b) = if p.proj.len() - start == 1 {
                    let (j, w) = p.proj.pop().unwrap_or((0, 0.0));
                    (j, w.to_bits())
                } else {
                    (MULTI | start as u32, (p.proj.len() - start) as u32)
                };
                (a, b, tree.threshold[node], tree.left[node])
            };
            p.nodes.push(PackedNode {
                a,
                b,
                threshold,
                left,
            });
        }
        p
    }

    #[inline(always)]
    fn project(&self, nd: PackedNode, row: &[f32]) -> f32 {
        if nd.a & MULTI == 0 {
            f32::from_bits(nd.b) * row[nd.a as usize]
        } else {
            let start = (nd.a & !MULTI) as usize;
            let end = start + nd.b as usize;
            let mut s = 0.0f32;
            for &(j, w) in &self.proj[start..end] {
                s += w * row[j as usize];
            }
            s
        }
    }

    /// The leaf (node index) a row reaches; identical to [`Tree::leaf`].
    #[inline]
    pub fn leaf(&self, row: &[f32]) -> usize {
        let mut i = 0usize;
        loop {
            let nd = self.nodes[i];
            if nd.left as usize == i {
                return i;
            }
            i = nd.left as usize + (self.project(nd, row) > nd.threshold) as usize;
        }
    }

    /// The leaves of every row of a row-major block (`p` features a row) into `out`.
    /// Eight rows go down the tree side by side, so eight independent chains of dependent
    /// loads are in flight instead of one; a lane that reaches its leaf takes the next row
    /// at once, so the work follows the total path length, not the deepest leaf.
    pub fn leaves(&self, rows: &[f32], p: usize, out: &mut [u32]) {
        const LANES: usize = 8;
        let n = out.len();
        if n < LANES {
            for (k, o) in out.iter_mut().enumerate() {
                *o = self.leaf(&rows[k * p..(k + 1) * p]) as u32;
            }
            return;
        }
        let mut row = [0usize; LANES];
        let mut idx = [0u32; LANES];
        for (l, r) in row.iter_mut().enumerate() {
            *r = l;
        }
        let mut next = LANES;
        let mut active = LANES;
        let mut live = [true; LANES];
        while active > 0 {
            for l in 0..LANES {
                if !live[l] {
                    continue;
                }
                let i = idx[l];
                let nd = self.nodes[i as usize];
                if nd.left == i {
                    // at its leaf: record it and start the next row in this lane
                    out[row[l]] = i;
                    if next < n {
                        row[l] = next;
                        idx[l] = 0;
                        next += 1;
                    } else {
                        live[l] = false;
                        active -= 1;
                    }
                } else {
                    let r = &rows[row[l] * p..(row[l] + 1) * p];
                    idx[l] = nd.left + (self.project(nd, r) > nd.threshold) as u32;
                }
            }
        }
    }

    /// The class of leaf `node` when its value is one-hot (1 for that class, 0 for the
    /// others), so that adding it to a sum is adding 1 at the class.
    #[inline]
    pub fn pure_class(&self, node: usize) -> Option<usize> {
        (self.nodes[node].b as usize).checked_sub(1)
    }

    /// The row of leaf `node` in its tree's leaf-value table ([`Tree::leaf_row`]).
    #[inline]
    pub fn leaf_row(&self, node: usize) -> usize {
        self.nodes[node].a as usize
    }

    /// Bytes used by the packed layout (the leaf values stay in the [`Tree`]).
    pub fn n_bytes(&self) -> usize {
        self.nodes.len() * std::mem::size_of::<PackedNode>() + self.proj.len() * 8
    }
}

pub(crate) fn normalise(v: &mut [f64]) {
    let s: f64 = v.iter().sum();
    if s > 0.0 {
        v.iter_mut().for_each(|x| *x /= s);
    }
}

/// A chosen split waiting to be applied.
struct Pending {
    node: u32,
    start: usize,
    end: usize,
    depth: u32,
    improvement: f64,
    threshold: f32,
    proj: (usize, usize),
}

impl PartialEq for Pending {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Pending {
    // best-first: largest improvement first, ties to the older node
    fn cmp(&self, o: &Self) -> Ordering {
        self.improvement
            .total_cmp(&o.improvement)
            .then(o.node.cmp(&self.node))
    }
}

/// Per-worker memory reused across nodes and trees.
#[derive(Default)]
pub struct Workspace {
    samples: Vec<u32>,
    pairs: Vec<(f32, u32)>,
    sort_buf: Vec<(f32, u32)>,
    vals: Vec<f32>,
    cand: ProjectionBuf,
    scratch: SamplerScratch,
    left: Vec<f64>,
    right: Vec<f64>,
    node_sums: Vec<f64>,
    arena_idx: Vec<u32>,
    arena_w: Vec<f32>,
    node_proj: Vec<(u32, u32)>,
    node_values: Vec<f64>,
    right_rows: Vec<u32>,
    terms: Vec<(usize, f32)>,
    bins: Bins,
}

/// Histogram of one candidate's projected values at one node: each row's bin, and per bin
/// the statistics the criterion needs (class weights, or the weighted target sum), the
/// weight and the row count. Rows are added to one of several interleaved copies in turn
/// and the copies summed after, so that runs of rows in one bin (binary data) do not make
/// a chain of dependent read-modify-writes.
#[derive(Default)]
struct Bins {
    of_row: Vec<u16>,
    /// A value of each bin (the exact path checks every row against it).
    value: Vec<f32>,
    stats: Vec<f64>,
    w: Vec<f64>,
    n: Vec<u32>,
    n_bins: usize,
}

impl Bins {
    /// Bins `vals` into `n_bins` equal-width bins on `[lo, hi]`. The bin is monotone in the
    /// value, so bins are ordered and equal values share a bin. With `exact`, returns false
    /// (and stops) when some bin holds two distinct values.
    fn assign(&mut self, vals: &[f32], lo: f32, hi: f32, n_bins: usize, exact: bool) -> bool {
        let scale = n_bins as f64 / (f64::from(hi) - f64::from(lo));
        let top = (n_bins - 1) as f64;
        self.n_bins = n_bins;
        self.of_row.clear();
        self.of_row.extend(
            vals.iter()
                .map(|&v| ((f64::from(v) - f64::from(lo)) * scale).min(top) as u16),
        );
        if !exact {
            return true;
        }
        self.value.clear();
        self.value.resize(n_bins, 0.0);
        for (&b, &v) in self.of_row.iter().zip(vals) {
            self.value[b as usize] = v;
        }
        let value = &self.value;
        self.of_row
            .iter()
            .zip(vals)
            .all(|(&b, &v)| value[b as usize] == v)
    }

    /// Sums every row's weight into its bin; `slot(sample)` says where in the bin's
    /// `per_bin` statistics the row's weight goes and with what factor.
    fn fill(
        &mut self,
        samples: &[u32],
        weights: &[f64],
        per_bin: usize,
        slot: impl Fn(usize) -> (usize, f64),
    ) {
        const COPIES: usize = 4;
        let n_bins = self.n_bins;
        // the extra copies pay for their clearing only on nodes with many rows per bin
        let copies = if samples.len() >= 16 * n_bins {
            COPIES
        } else {
            1
        };
        let width = n_bins * per_bin;
        self.stats.clear();
        self.stats.resize(copies * width, 0.0);
        self.w.clear();
        self.w.resize(copies * n_bins, 0.0);
        self.n.clear();
        self.n.resize(copies * n_bins, 0);
        for (k, (&b, &s)) in self.of_row.iter().zip(samples).enumerate() {
            let (b, s) = (b as usize, s as usize);
            let c = if copies == 1 { 0 } else { k % COPIES };
            let w = weights[s];
            let (at, factor) = slot(s);
            self.stats[c * width + b * per_bin + at] += factor * w;
            self.w[c * n_bins + b] += w;
            self.n[c * n_bins + b] += 1;
        }
        for c in 1..copies {
            for i in 0..width {
                self.stats[i] += self.stats[c * width + i];
            }
            for b in 0..n_bins {
                self.w[b] += self.w[c * n_bins + b];
                self.n[b] += self.n[c * n_bins + b];
            }
        }
    }

    /// The threshold for a split after bin `b`: the midpoint between the largest value in
    /// bins `..=b` and the smallest in the bins after.
    fn threshold(&self, vals: &[f32], b: usize, exact: bool) -> f32 {
        if exact {
            let next = (b + 1..self.n_bins).find(|&c| self.n[c] > 0).unwrap_or(b);
            return midpoint(self.value[b], self.value[next]);
        }
        let (mut below, mut above) = (f32::NEG_INFINITY, f32::INFINITY);
        for (&r, &v) in self.of_row.iter().zip(vals) {
            if r as usize <= b {
                below = if v > below { v } else { below };
            } else {
                above = if v < above { v } else { above };
            }
        }
        midpoint(below, above)
    }
}

/// Bins of the exact histogram path (projections of discrete columns).
const EXACT_BINS: usize = 256;
/// Smallest node for which the exact histogram path is tried; smaller ones sort...
const EXACT_HIST_MIN_ROWS: usize = 64;
/// ...unless it has this many rows per bin (few bins: integer values on a short span).
const EXACT_HIST_MIN_ROWS_PER_BIN: usize = 4;

/// Bins for the exact histogram path over `n` values in `[lo, hi]`: one per integer when
/// `lo` and `hi` are integers at most 255 apart (integer values then fill one bin each, so
/// few bins are cleared and scanned, e.g. 2 for a 0/1 column), else up to 256.
fn exact_bins(lo: f32, hi: f32, n: usize) -> usize {
    let span = f64::from(hi) - f64::from(lo);
    if lo.fract() == 0.0 && hi.fract() == 0.0 && span < EXACT_BINS as f64 {
        span as usize + 1
    } else {
        EXACT_BINS.min(n)
    }
}

/// Everything fixed while growing one tree.
pub struct Grower<'a, S: ProjectionSampler> {
    pub cfg: &'a TreeConfig,
    pub sampler: &'a S,
    pub geometry: Option<&'a PatchGeometry>,
    pub x: &'a FeatureMatrix<'a>,
    pub y: &'a Targets,
}

struct Best {
    proxy: f64,
    threshold: f32,
    cand: usize,
}

impl<S: ProjectionSampler> Grower<'_, S> {
    /// Grows one tree on the rows with positive `weights` (bootstrap counts × sample weights).
    pub fn grow(&self, weights: &[f64], rng: &mut Rng, ws: &mut Workspace) -> Tree {
        let k = self.cfg.n_outputs;
        let stat_len = if matches!(self.y, Targets::Classes(_)) {
            k
        } else {
            3
        };
        ws.left.resize(stat_len, 0.0);
        ws.right.resize(stat_len, 0.0);
        ws.node_sums.resize(stat_len, 0.0);
        ws.samples.clear();
        ws.samples
            .extend((0..weights.len() as u32).filter(|&i| weights[i as usize] > 0.0));
        ws.arena_idx.clear();
        ws.arena_w.clear();
        ws.node_proj.clear();
        ws.node_values.clear();
        let mut tree = Tree {
            n_outputs: k,
            ..Tree::default()
        };
        let n_in_bag = ws.samples.len();
        let root_weight: f64 = ws.samples.iter().map(|&s| weights[s as usize]).sum();
        let min_weight_leaf = self.cfg.min_weight_fraction_leaf * root_weight;

        let mut stack: Vec<Pending> = Vec::new();
        let mut heap: BinaryHeap<Pending> = BinaryHeap::new();
        let best_first = self.cfg.max_leaf_nodes.is_some();
        let push = |p: Pending, stack: &mut Vec<Pending>, heap: &mut BinaryHeap<Pending>| {
            if best_first {
                heap.push(p)
            } else {
                stack.push(p)
            }
        };
        if let Some(p) = self.add_node(
            &mut tree,
            ws,
            weights,
            rng,
            0,
            n_in_bag,
            0,
            root_weight,
            min_weight_leaf,
        ) {
            push(p, &mut stack, &mut heap);
        }
        let mut n_leaves = 1usize;
        loop {
            let next = if best_first { heap.pop() } else { stack.pop() };
            let Some(p) = next else { break };
            if crate::cancel::requested() {
                break; // cancel: leave the rest as leaves; the forest drops this tree
            }
            if self.cfg.max_leaf_nodes.is_some_and(|m| n_leaves >= m) {
                break;
            }
            let n_left = self.partition(ws, &p);
            if n_left == 0 || n_left == p.end - p.start {
                continue; // cannot happen with a consistent projection; keep the node a leaf
            }
            let node = p.node as usize;
            ws.node_proj[node] = (p.proj.0 as u32, p.proj.1 as u32);
            tree.threshold[node] = p.threshold;
            let mid = p.start + n_left;
            let l = self.add_node(
                &mut tree,
                ws,
                weights,
                rng,
                p.start,
                mid,
                p.depth + 1,
                root_weight,
                min_weight_leaf,
            );
            let left_id = tree.n_nodes() as u32 - 1;
            let r = self.add_node(
                &mut tree,
                ws,
                weights,
                rng,
                mid,
                p.end,
                p.depth + 1,
                root_weight,
                min_weight_leaf,
            );
            let right_id = tree.n_nodes() as u32 - 1;
            tree.left[node] = left_id;
            tree.right[node] = right_id;
            n_leaves += 1;
            // depth-first: the right child waits under the left one
            if let Some(r) = r {
                push(r, &mut stack, &mut heap);
            }
            if let Some(l) = l {
                push(l, &mut stack, &mut heap);
            }
        }
        // lay the projections of inner nodes out in node order (CSR), and the leaves' values
        tree.proj_ptr.push(0);
        let mut leaf_rows = 0u32;
        for node in 0..tree.n_nodes() {
            if tree.is_leaf(node) {
                tree.right[node] = leaf_rows;
                leaf_rows += 1;
                tree.value
                    .extend_from_slice(&ws.node_values[node * k..(node + 1) * k]);
            } else {
                let (a, b) = ws.node_proj[node];
                tree.proj_idx
                    .extend_from_slice(&ws.arena_idx[a as usize..b as usize]);
                if self.geometry.is_none() {
                    tree.proj_w
                        .extend_from_slice(&ws.arena_w[a as usize..b as usize]);
                }
            }
            tree.proj_ptr.push(tree.proj_idx.len() as u32);
        }
        tree.shrink_to_fit();
        tree
    }

    /// Appends a node for `samples[start..end]` and, when it may split, finds its split.
    #[allow(clippy::too_many_arguments)]
    fn add_node(
        &self,
        tree: &mut Tree,
        ws: &mut Workspace,
        weights: &[f64],
        rng: &mut Rng,
        start: usize,
        end: usize,
        depth: u32,
        root_weight: f64,
        min_weight_leaf: f64,
    ) -> Option<Pending> {
        let node = tree.n_nodes();
        ws.node_sums.fill(0.0);
        let mut w_node = 0.0;
        for &s in &ws.samples[start..end] {
            let w = weights[s as usize];
            w_node += w;
            match self.y {
                Targets::Classes(c) => ws.node_sums[c[s as usize] as usize] += w,
                Targets::Values(v) => {
                    let y = v[s as usize];
                    ws.node_sums[0] += w;
                    ws.node_sums[1] += w * y;
                    ws.node_sums[2] += w * y * y;
                }
            }
        }
        let impurity = self.impurity(&ws.node_sums, w_node);
        tree.left.push(LEAF);
        tree.right.push(LEAF);
        tree.threshold.push(0.0);
        tree.impurity.push(impurity);
        tree.n_node_samples.push((end - start) as u32);
        tree.weighted_n_node_samples.push(w_node);
        tree.depth.push(depth);
        ws.node_proj.push((0, 0));
        // every node's value waits here; the tree keeps the leaves' only
        match self.y {
            Targets::Classes(_) => ws.node_values.extend(ws.node_sums.iter().map(|s| {
                if w_node > 0.0 {
                    s / w_node
                } else {
                    0.0
                }
            })),
            Targets::Values(_) => ws.node_values.push(if w_node > 0.0 {
                ws.node_sums[1] / w_node
            } else {
                0.0
            }),
        }
        let n = end - start;
        let cfg = self.cfg;
        if depth as usize >= cfg.max_depth
            || n < cfg.min_samples_split
            || n < 2 * cfg.min_samples_leaf
            || w_node < 2.0 * min_weight_leaf
            || impurity <= PURE
        {
            return None;
        }
        // the node totals leave the workspace while its buffers are borrowed by the search
        let sums = std::mem::take(&mut ws.node_sums);
        let found = self.find_split(ws, weights, rng, start, end, &sums, w_node, min_weight_leaf);
        let parent = self.parent_proxy(&sums, w_node);
        ws.node_sums = sums;
        let (best, proj) = found?;
        let improvement = best.proxy - parent;
        if improvement / root_weight + 1e-10 < cfg.min_impurity_decrease {
            return None;
        }
        Some(Pending {
            node: node as u32,
            start,
            end,
            depth,
            improvement,
            threshold: best.threshold,
            proj,
        })
    }

    fn impurity(&self, sums: &[f64], w: f64) -> f64 {
        if w <= 0.0 {
            return 0.0;
        }
        match self.cfg.criterion {
            Criterion::Gini => 1.0 - sums.iter().map(|s| (s / w) * (s / w)).sum::<f64>(),
            Criterion::Entropy => -sums
                .iter()
                .filter(|&&s| s > 0.0)
                .map(|s| (s / w) * (s / w).log2())
                .sum::<f64>(),
            Criterion::SquaredError => (sums[2] / w - (sums[1] / w).powi(2)).max(0.0),
        }
    }

    /// The proxy (improvement plus a node constant) of not splitting.
    fn parent_proxy(&self, sums: &[f64], w: f64) -> f64 {
        match self.cfg.criterion {
            Criterion::Gini => sums.iter().map(|s| s * s).sum::<f64>() / w,
            Criterion::Entropy => sums.iter().map(|&s| xlog2x(s)).sum::<f64>() - xlog2x(w),
            Criterion::SquaredError => sums[1] * sums[1] / w,
        }
    }

    /// Projected values of `samples[start..end]` under projection `proj`, into `out`.
    #[inline]
    fn project(
        &self,
        proj: ProjRef<'_>,
        samples: &[u32],
        terms: &mut Vec<(usize, f32)>,
        out: &mut Vec<f32>,
    ) {
        terms.clear();
        proj.for_each(|j, w| terms.push((j, w)));
        self.x.project_rows(terms, samples, out);
    }

    #[allow(clippy::too_many_arguments)]
    fn find_split(
        &self,
        ws: &mut Workspace,
        weights: &[f64],
        rng: &mut Rng,
        start: usize,
        end: usize,
        stats: &[f64],
        w_node: f64,
        min_weight_leaf: f64,
    ) -> Option<(Best, (usize, usize))> {
        self.sampler
            .sample(rng, self.cfg.n_candidates, &mut ws.scratch, &mut ws.cand);
        let mut best: Option<Best> = None;
        let n = end - start;
        let min_leaf = self.cfg.min_samples_leaf;
        for c in 0..ws.cand.len() {
            if crate::cancel::requested() {
                return None; // cancel: no split, so the node stays a leaf
            }
            self.x.keep_sums_finite(&mut ws.cand, c); // overflow: huge data, halved weights
            let proj = ws.cand.get(c, self.geometry);
            self.project(proj, &ws.samples[start..end], &mut ws.terms, &mut ws.vals);
            let found = match self.cfg.splitter {
                Splitter::Best | Splitter::Histogram { .. } => {
                    // a constant projection cannot split: skip it before paying for a sort
                    // (common with sparse or binary data, e.g. image backgrounds)
                    let Some((lo, hi)) = finite_range(&ws.vals) else {
                        continue;
                    };
                    // which histogram, if any: the approximate one on large nodes when asked
                    // for, else the exact one when every feature of the projection looks
                    // discrete (it gives up, and the values are sorted, when a bin turns
                    // out to hold two distinct values)
                    let hist = match self.cfg.splitter {
                        Splitter::Histogram { max_bins }
                            if n >= max_bins * Splitter::HIST_MIN_ROWS_PER_BIN =>
                        {
                            Some((max_bins, false))
                        }
                        // (at least 2 bins: smaller nodes never qualify)
                        _ if n >= 2 * EXACT_HIST_MIN_ROWS_PER_BIN && self.all_discrete(proj) => {
                            let n_bins = exact_bins(lo, hi, n);
                            // worth it over a sort with enough rows for the bins
                            (n >= EXACT_HIST_MIN_ROWS.min(EXACT_HIST_MIN_ROWS_PER_BIN * n_bins))
                                .then_some((n_bins, true))
                        }
                        _ => None,
                    };
                    let from_hist = hist.and_then(|(n_bins, exact)| {
                        self.hist_split(
                            ws,
                            weights,
                            stats,
                            start,
                            end,
                            (lo, hi, n_bins, exact),
                            (w_node, min_leaf, min_weight_leaf),
                            best.as_ref().map(|b| b.proxy),
                        )
                    });
                    match from_hist {
                        Some(found) => found,
                        None => {
                            ws.pairs.clear();
                            ws.pairs.extend(
                                ws.vals
                                    .iter()
                                    .copied()
                                    .zip(ws.samples[start..end].iter().copied()),
                            );
                            sort_pairs(&mut ws.pairs, &mut ws.sort_buf);
                            let Workspace {
                                pairs, left, right, ..
                            } = ws;
                            self.scan_with(
                                stats,
                                left,
                                right,
                                Sorted {
                                    pairs,
                                    weights,
                                    limits: (w_node, min_leaf, min_weight_leaf),
                                },
                            )
                            .map(|(proxy, i)| (proxy, midpoint(pairs[i].0, pairs[i + 1].0)))
                        }
                    }
                }
                Splitter::Random => {
                    let (lo, hi) = ws
                        .vals
                        .iter()
                        .fold((f32::INFINITY, f32::NEG_INFINITY), |(a, b), &v| {
                            (a.min(v), b.max(v))
                        });
                    if !(lo.is_finite() && hi.is_finite()) || lo == hi {
                        continue;
                    }
                    let mut t = lo + (rng.unit() as f32) * (hi - lo);
                    if t >= hi || t < lo {
                        t = lo;
                    }
                    self.random_split(
                        ws,
                        weights,
                        stats,
                        start,
                        end,
                        t,
                        w_node,
                        min_leaf,
                        min_weight_leaf,
                    )
                }
            };
            if let Some((proxy, threshold)) = found {
                if best.as_ref().is_none_or(|b| proxy > b.proxy) {
                    best = Some(Best {
                        proxy,
                        threshold,
                        cand: c,
                    });
                }
            }
        }
        let best = best?;
        let (a, b) = (
            ws.cand.ptr[best.cand] as usize,
            ws.cand.ptr[best.cand + 1] as usize,
        );
        let at = ws.arena_idx.len();
        ws.arena_idx.extend_from_slice(&ws.cand.idx[a..b]);
        if self.geometry.is_none() {
            ws.arena_w.extend_from_slice(&ws.cand.w[a..b]);
        }
        Some((best, (at, ws.arena_idx.len())))
    }

    /// Runs `driver` over the split statistics of this tree's criterion, starting from all
    /// rows on the right: (proxy, position) of the best split it finds.
    fn scan_with(
        &self,
        stats: &[f64],
        left: &mut [f64],
        right: &mut [f64],
        driver: impl ScanDriver,
    ) -> Option<(f64, usize)> {
        left.fill(0.0);
        right.copy_from_slice(stats);
        match (self.y, self.cfg.criterion) {
            (Targets::Classes(cls), Criterion::Gini) => {
                let sq_r = right.iter().map(|s| s * s).sum();
                driver.run(GiniScan {
                    cls,
                    left,
                    right,
                    sq_l: 0.0,
                    sq_r,
                })
            }
            (Targets::Classes(cls), _) => {
                let t_r = right.iter().map(|&s| xlog2x(s)).sum();
                driver.run(EntropyScan {
                    cls,
                    left,
                    right,
                    t_l: 0.0,
                    t_r,
                })
            }
            (Targets::Values(y), _) => driver.run(SquaredErrorScan {
                y,
                s_l: 0.0,
                s_r: stats[1],
            }),
        }
    }

    /// Whether every feature of `proj` looks discrete (see [`FeatureMatrix::is_discrete`]).
    fn all_discrete(&self, proj: ProjRef<'_>) -> bool {
        let mut all = true;
        proj.for_each(|j, _| all &= self.x.is_discrete(j));
        all
    }

    /// Split search over a histogram of the node's projected values (`ws.vals`) with
    /// `n_bins` equal-width bins on `[lo, hi]`: (proxy, threshold) of the best bin boundary.
    /// With `exact`, gives up (`None`) unless every bin holds a single distinct value, in
    /// which case the bin boundaries are exactly the sorted scan's candidate thresholds.
    /// A split no better than `to_beat` is dropped (`Some(None)`) before its threshold is
    /// computed.
    #[allow(clippy::too_many_arguments)]
    fn hist_split(
        &self,
        ws: &mut Workspace,
        weights: &[f64],
        stats: &[f64],
        start: usize,
        end: usize,
        (lo, hi, n_bins, exact): (f32, f32, usize, bool),
        limits: (f64, usize, f64),
        to_beat: Option<f64>,
    ) -> Option<Option<(f64, f32)>> {
        let per_bin = match self.y {
            Targets::Classes(_) => self.cfg.n_outputs,
            Targets::Values(_) => 1,
        };
        if !ws.bins.assign(&ws.vals, lo, hi, n_bins, exact) {
            return None;
        }
        let samples = &ws.samples[start..end];
        match self.y {
            Targets::Classes(c) => ws
                .bins
                .fill(samples, weights, per_bin, |s| (c[s] as usize, 1.0)),
            Targets::Values(y) => ws.bins.fill(samples, weights, per_bin, |s| (0, y[s])),
        }
        let found = self.scan_with(
            stats,
            &mut ws.left,
            &mut ws.right,
            Binned {
                bins: &ws.bins,
                per_bin,
                n: end - start,
                limits,
            },
        );
        // the threshold takes a pass over the rows (approximate bins): only for a new best
        Some(
            found
                .filter(|&(proxy, _)| to_beat.is_none_or(|b| proxy > b))
                .map(|(proxy, b)| (proxy, ws.bins.threshold(&ws.vals, b, exact))),
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn random_split(
        &self,
        ws: &mut Workspace,
        weights: &[f64],
        total: &[f64],
        start: usize,
        end: usize,
        t: f32,
        w_node: f64,
        min_leaf: usize,
        min_weight_leaf: f64,
    ) -> Option<(f64, f32)> {
        ws.left.fill(0.0);
        let (mut w_l, mut n_l) = (0.0f64, 0usize);
        for (k, &s) in ws.samples[start..end].iter().enumerate() {
            if ws.vals[k] <= t {
                let w = weights[s as usize];
                n_l += 1;
                w_l += w;
                match self.y {
                    Targets::Classes(c) => ws.left[c[s as usize] as usize] += w,
                    Targets::Values(v) => ws.left[1] += w * v[s as usize],
                }
            }
        }
        let n = end - start;
        let w_r = w_node - w_l;
        if n_l < min_leaf
            || n - n_l < min_leaf
            || w_l < min_weight_leaf
            || w_r < min_weight_leaf
            || w_l <= 0.0
            || w_r <= 0.0
        {
            return None;
        }
        let proxy = match (self.y, self.cfg.criterion) {
            (Targets::Classes(_), Criterion::Gini) => {
                let (mut a, mut b) = (0.0, 0.0);
                for (l, t) in ws.left.iter().zip(total.iter()) {
                    a += l * l;
                    b += (t - l) * (t - l);
                }
                a / w_l + b / w_r
            }
            (Targets::Classes(_), _) => {
                let mut s = -xlog2x(w_l) - xlog2x(w_r);
                for (l, t) in ws.left.iter().zip(total.iter()) {
                    s += xlog2x(*l) + xlog2x(t - l);
                }
                s
            }
            (Targets::Values(_), _) => {
                let (sl, sr) = (ws.left[1], total[1] - ws.left[1]);
                sl * sl / w_l + sr * sr / w_r
            }
        };
        Some((proxy, t))
    }

    /// Moves the rows of `p` whose projection is `<= threshold` to the front, keeping the
    /// order of both sides; returns their count.
    fn partition(&self, ws: &mut Workspace, p: &Pending) -> usize {
        let proj = match self.geometry {
            Some(g) => ProjRef::Patch {
                desc: &ws.arena_idx[p.proj.0..p.proj.1],
                geometry: g,
            },
            None => ProjRef::Sparse {
                idx: &ws.arena_idx[p.proj.0..p.proj.1],
                w: &ws.arena_w[p.proj.0..p.proj.1],
            },
        };
        self.project(
            proj,
            &ws.samples[p.start..p.end],
            &mut ws.terms,
            &mut ws.vals,
        );
        // stable: rows keep their (initially ascending) order in both children, so the
        // gathers of every later node walk X in address order
        let samples = &mut ws.samples[p.start..p.end];
        ws.right_rows.clear();
        let mut i = 0;
        for k in 0..samples.len() {
            let s = samples[k];
            if ws.vals[k] <= p.threshold {
                samples[i] = s;
                i += 1;
            } else {
                ws.right_rows.push(s);
            }
        }
        samples[i..].copy_from_slice(&ws.right_rows);
        i
    }
}

/// Running split statistics of one criterion while samples move from the right child to
/// the left one in sorted order; `proxy` equals the weighted impurity decrease up to a
/// constant of the node.
trait ScanStats {
    fn move_left(&mut self, sample: usize, w: f64);
    /// Moves a histogram bin's statistics (class weights, or the weighted target sum).
    fn move_bin(&mut self, bin: &[f64]);
    fn proxy(&self, w_l: f64, w_r: f64) -> f64;
}

struct GiniScan<'a> {
    cls: &'a [u32],
    left: &'a mut [f64],
    right: &'a mut [f64],
    sq_l: f64,
    sq_r: f64,
}

impl GiniScan<'_> {
    /// Moves weight `w` of class `c` from the right child to the left one.
    #[inline(always)]
    fn move_class(&mut self, c: usize, w: f64) {
        self.sq_l += w * (2.0 * self.left[c] + w);
        self.sq_r -= w * (2.0 * self.right[c] - w);
        self.left[c] += w;
        self.right[c] -= w;
    }
}

impl ScanStats for GiniScan<'_> {
    #[inline(always)]
    fn move_left(&mut self, s: usize, w: f64) {
        self.move_class(self.cls[s] as usize, w);
    }
    #[inline(always)]
    fn move_bin(&mut self, bin: &[f64]) {
        for (c, &w) in bin.iter().enumerate() {
            if w != 0.0 {
                self.move_class(c, w);
            }
        }
    }
    #[inline(always)]
    fn proxy(&self, w_l: f64, w_r: f64) -> f64 {
        self.sq_l / w_l + self.sq_r / w_r
    }
}

struct EntropyScan<'a> {
    cls: &'a [u32],
    left: &'a mut [f64],
    right: &'a mut [f64],
    t_l: f64,
    t_r: f64,
}

impl EntropyScan<'_> {
    /// Moves weight `w` of class `c` from the right child to the left one.
    #[inline(always)]
    fn move_class(&mut self, c: usize, w: f64) {
        self.t_l += xlog2x(self.left[c] + w) - xlog2x(self.left[c]);
        self.t_r += xlog2x(self.right[c] - w) - xlog2x(self.right[c]);
        self.left[c] += w;
        self.right[c] -= w;
    }
}

impl ScanStats for EntropyScan<'_> {
    #[inline(always)]
    fn move_left(&mut self, s: usize, w: f64) {
        self.move_class(self.cls[s] as usize, w);
    }
    #[inline(always)]
    fn move_bin(&mut self, bin: &[f64]) {
        for (c, &w) in bin.iter().enumerate() {
            if w != 0.0 {
                self.move_class(c, w);
            }
        }
    }
    #[inline(always)]
    fn proxy(&self, w_l: f64, w_r: f64) -> f64 {
        self.t_l - xlog2x(w_l) + self.t_r - xlog2x(w_r)
    }
}

struct SquaredErrorScan<'a> {
    y: &'a [f64],
    s_l: f64,
    s_r: f64,
}

impl ScanStats for SquaredErrorScan<'_> {
    #[inline(always)]
    fn move_left(&mut self, s: usize, w: f64) {
        let wy = w * self.y[s];
        self.s_l += wy;
        self.s_r -= wy;
    }
    #[inline(always)]
    fn move_bin(&mut self, bin: &[f64]) {
        self.s_l += bin[0];
        self.s_r -= bin[0];
    }
    #[inline(always)]
    fn proxy(&self, w_l: f64, w_r: f64) -> f64 {
        self.s_l * self.s_l / w_l + self.s_r * self.s_r / w_r
    }
}

/// A way of walking the split positions of one candidate, generic over the criterion's
/// running statistics so that each (walk, criterion) pair is one monomorphised loop.
trait ScanDriver {
    /// (proxy, position) of the best admissible split.
    fn run<S: ScanStats>(self, stats: S) -> Option<(f64, usize)>;
}

/// Every position of sorted (value, sample) pairs: position i splits between `pairs[i]`
/// and `pairs[i + 1]`, where the values differ; honours `min_samples_leaf` and the minimum
/// leaf weight (`limits` = node weight, min_samples_leaf, min leaf weight).
struct Sorted<'a> {
    pairs: &'a [(f32, u32)],
    weights: &'a [f64],
    limits: (f64, usize, f64),
}

impl ScanDriver for Sorted<'_> {
    #[inline]
    fn run<S: ScanStats>(self, mut stats: S) -> Option<(f64, usize)> {
        let (pairs, weights) = (self.pairs, self.weights);
        let (w_node, min_leaf, min_weight_leaf) = self.limits;
        let n = pairs.len();
        let (mut w_l, mut w_r) = (0.0f64, w_node);
        let mut best: Option<(f64, usize)> = None;
        for i in 0..n - 1 {
            let s = pairs[i].1 as usize;
            let w = weights[s];
            stats.move_left(s, w);
            w_l += w;
            w_r -= w;
            if pairs[i].0 != pairs[i + 1].0
                && offer(
                    &stats,
                    (i + 1, n, min_leaf),
                    (w_l, w_r, min_weight_leaf),
                    i,
                    &mut best,
                )
            {
                break;
            }
        }
        best
    }
}

/// Offers the split at `at`, with `n_l` of the node's `n` rows and weight `w_l` on the left,
/// to `best`: kept when both children honour `min_samples_leaf` and the minimum leaf weight
/// and it beats `best`. Returns true when no later position can honour
/// `min_samples_leaf` (the scan can stop).
#[inline(always)]
fn offer<S: ScanStats>(
    stats: &S,
    (n_l, n, min_leaf): (usize, usize, usize),
    (w_l, w_r, min_weight_leaf): (f64, f64, f64),
    at: usize,
    best: &mut Option<(f64, usize)>,
) -> bool {
    if n_l < min_leaf {
        return false;
    }
    if n - n_l < min_leaf {
        return true;
    }
    if w_l < min_weight_leaf || w_r < min_weight_leaf || w_l <= 0.0 || w_r <= 0.0 {
        return false;
    }
    let proxy = stats.proxy(w_l, w_r);
    if best.is_none_or(|b| proxy > b.0) {
        *best = Some((proxy, at));
    }
    false
}

/// The boundaries after each non-empty bin of a histogram (but the last): position b
/// splits after bin b. Same admissibility rules as [`Sorted`], with `n` the node's rows.
struct Binned<'a> {
    bins: &'a Bins,
    per_bin: usize,
    n: usize,
    limits: (f64, usize, f64),
}

impl ScanDriver for Binned<'_> {
    #[inline]
    fn run<S: ScanStats>(self, mut stats: S) -> Option<(f64, usize)> {
        let (bins, per_bin, n) = (self.bins, self.per_bin, self.n);
        let (w_node, min_leaf, min_weight_leaf) = self.limits;
        let last = bins.n[..bins.n_bins].iter().rposition(|&c| c > 0)?;
        let (mut w_l, mut w_r, mut n_l) = (0.0f64, w_node, 0usize);
        let mut best: Option<(f64, usize)> = None;
        for b in 0..last {
            if bins.n[b] == 0 {
                continue;
            }
            stats.move_bin(&bins.stats[b * per_bin..(b + 1) * per_bin]);
            w_l += bins.w[b];
            w_r -= bins.w[b];
            n_l += bins.n[b] as usize;
            if offer(
                &stats,
                (n_l, n, min_leaf),
                (w_l, w_r, min_weight_leaf),
                b,
                &mut best,
            ) {
                break;
            }
        }
        best
    }
}

/// The smallest and largest of `vals` when all are finite and they differ.
#[inline]
fn finite_range(vals: &[f32]) -> Option<(f32, f32)> {
    let (mut lo, mut hi, mut finite) = (f32::INFINITY, f32::NEG_INFINITY, true);
    for &v in vals {
        finite &= v.is_finite();
        lo = if v < lo { v } else { lo };
        hi = if v > hi { v } else { hi };
    }
    (finite && lo < hi).then_some((lo, hi))
}

/// The threshold between adjacent distinct values `a < b`: their midpoint, or `a` when
/// rounding would put the midpoint on `b` (so `a` goes left and `b` right either way).
#[inline]
fn midpoint(a: f32, b: f32) -> f32 {
    let t = a + (b - a) / 2.0;
    if t >= a && t < b {
        t
    } else {
        a
    }
}

/// Sorts (value, sample) pairs by value: LSD radix sort on the order-preserving bit
/// pattern of the f32 key (three 11-bit passes, a pass skipped when every key shares its
/// digit) for large nodes, pdqsort for small ones.
fn sort_pairs(pairs: &mut Vec<(f32, u32)>, buf: &mut Vec<(f32, u32)>) {
    const SMALL: usize = 2048;
    const BITS: u32 = 11;
    const BUCKETS: usize = 1 << BITS;
    let n = pairs.len();
    if n < SMALL {
        pairs.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
        return;
    }
    // the total order of f32 as unsigned integers: flip negatives, set the sign of positives
    let key = |v: f32| {
        let b = v.to_bits();
        if b >> 31 == 1 {
            !b
        } else {
            b | 0x8000_0000
        }
    };
    buf.clear();
    buf.resize(n, (0.0, 0));
    let mut counts = [0u32; BUCKETS];
    for pass in 0..3 {
        let shift = pass * BITS;
        counts.fill(0);
        for p in pairs.iter() {
            counts[((key(p.0) >> shift) as usize) & (BUCKETS - 1)] += 1;
        }
        if counts.iter().any(|&c| c as usize == n) {
            continue; // every key has the same digit here: this pass would not move anything
        }
        let mut sum = 0u32;
        for c in counts.iter_mut() {
            let here = *c;
            *c = sum;
            sum += here;
        }
        for p in pairs.iter() {
            let d = ((key(p.0) >> shift) as usize) & (BUCKETS - 1);
            buf[counts[d] as usize] = *p;
            counts[d] += 1;
        }
        std::mem::swap(pairs, buf);
    }
}

#[inline]
fn xlog2x(x: f64) -> f64 {
    if x > 0.0 {
        x * x.log2()
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::sort_pairs;

    #[test]
    fn radix_sort_orders_like_total_cmp() {
        let mut rng = crate::rng::Rng::from_seed(5);
        for n in [0usize, 1, 10, 255, 2047, 2048, 5000] {
            let specials = [0.0f32, -0.0, 1e-30, -1e-30, 3e38, -3e38, 1.0, -1.0];
            let mut pairs: Vec<(f32, u32)> = (0..n)
                .map(|i| {
                    let v = if i % 7 == 0 {
                        specials[i % specials.len()]
                    } else {
                        (rng.normal() * 100.0) as f32
                    };
                    (v, i as u32)
                })
                .collect();
            let mut want = pairs.clone();
            want.sort_by(|a, b| a.0.total_cmp(&b.0));
            sort_pairs(&mut pairs, &mut Vec::new());
            let got: Vec<u32> = pairs.iter().map(|p| p.0.to_bits()).collect();
            let exp: Vec<u32> = want.iter().map(|p| p.0.to_bits()).collect();
            assert_eq!(got, exp, "n = {n}");
        }
    }
}
