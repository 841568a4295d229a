//! One projection tree: storage and validation here; growth in layers below it, as
//! scikit-learn separates them:
//!
//! * `criterion`: each impurity criterion's math (node statistics, impurity, the split
//!   proxy and its running update) behind one `Criterion` trait, in rooms (class,
//!   regression, absolute error);
//! * `scan` and `bins`: the walks over one candidate's split positions — sorted values,
//!   or a histogram's bin boundaries — generic over the criterion's running statistics so
//!   the scan loops are statically dispatched; `scan_lanes`: the sorted scan of a Gini
//!   node of two to four classes with whole weights, four positions to an AVX2 instruction;
//! * `splitter`: the split search of one node over its candidate projections (draw,
//!   redraw, screen, batch and score them, keep the best), reading the data, the
//!   configuration, the sampler and the criterion;
//! * `parts`: the one dispatcher of the search's parts, in a documented order; where a
//!   candidate's values come from (`sparse_split`: sparse X at the cost of a candidate's
//!   nonzeros, its zeros moved as one block; `categorical`: level maps fitted to the
//!   node; a node's batch; the plain projection) and how they are scanned (`value_split`
//!   for trees without targets, whose rule scores the projected values; `random_split`;
//!   `missing_split`; `categorical`'s level bins; `hist_split`; `sorted_split`, the plain
//!   path), each part in its own room with its invariant;
//! * `term_batch`: a node's explicit candidates projected together (each feature gathered
//!   once a block of rows, the same values as one candidate at a time);
//! * `workspace`: the per-worker buffers both the search and the builder reuse, and the
//!   projection of a node's rows;
//! * `builder`: grows a tree depth-first or best-first from the split search (the one
//!   dynamic choice, of the criterion, is made here);
//! * `monotonic`: monotonic constraints on the split search and the node values;
//! * [`packed`]: the prediction layout.
//!
//! Storage is a table (struct of arrays). Node `i` is a leaf when
//! `left[i] == LEAF`; otherwise a row goes to `left[i]` when its projection
//! `sum_j w_j x_j` is `<= threshold[i]`, else to `right[i]` (always `left[i] + 1`).
//! Node `i`'s projection is `proj_idx[proj_ptr[i]..proj_ptr[i+1]]` (with weights in
//! `proj_w`, or a patch descriptor in patch forests); leaves have an empty range.
//! Only leaves store values (class distribution or mean, or for several outputs each
//! output's block in output order): for a leaf, `right[i]` is
//! its row `r` in the leaf-value table, `value[r*n_outputs..(r+1)*n_outputs]`. An
//! inner node's value is the weighted mean of its children's ([`Tree::node_values`]).
//!
//! Growth: the in-bag rows live in one permutation array; a node owns the range
//! `samples[start..end]`, and after a split `samples[start..start+n_left]` go left.
//!
//! Missing values (NaN): a projection with a NaN term is NaN for that row (the dot product
//! propagates it; weights are never skipped for a missing value). Such a row goes to the
//! child [`Tree::missing_goes_left`] names: by default the child with more weighted
//! training rows (the right one on ties; scikit-learn's rule for a node that saw no missing
//! value), except at the nodes listed in `missing_flip`, where the split search found it
//! better to send the node's missing rows the other way. A tree grown on data without NaN
//! has an empty `missing_flip`.
//!
//! Filling a grown tree (`fill`, apart from the split search): the rows of an honest tree's honest part, or the rows a
//! tree grew on when its forest keeps leaf values, are routed down the finished tree; an
//! honest tree's leaf values are recomputed from them (the criterion's own leaf value),
//! and a forest that keeps leaf values records each leaf's rows ([`LeafRows`]). A leaf
//! that no such row reaches takes the rows of its nearest ancestor that some reach. The
//! node statistics (impurity, row counts and weights) stay those of the rows the tree was
//! grown on.

mod bins;
pub(crate) mod builder;
mod categorical;
pub(crate) mod criterion;
mod fill;
mod fork;
mod growing;
mod hist_split;
mod missing_split;
pub(crate) mod monotonic;
pub mod packed;
mod par_candidates;
mod parts;
mod pooled_batch;
mod random_split;
mod repeats;
mod scan;
mod scan_lanes;
mod screening;
mod sorted_split;
pub(crate) mod sparse_split;
pub(crate) mod splitter;
pub(crate) mod term_batch;
mod value_split;
mod weights;
mod workspace;

pub(crate) use builder::Grower;
pub(crate) use fill::Fill;
pub(crate) use growing::TreesGrowing;
pub use packed::PackedTree;
pub(crate) use weights::RowWeights;
pub(crate) use workspace::Workspace;

use crate::columns::LevelMaps;
use crate::error::{Error, Result};
use crate::projection::{CompactDescriptors, ProjRef};
use serde::{Deserialize, Serialize};

/// Marks a leaf in [`Tree::left`] and [`Tree::right`].
pub const LEAF: u32 = u32::MAX;

/// A fitted tree as a flat table.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Tree {
    /// Values per leaf: classes, or 1; for a multi-output task, the outputs' blocks side
    /// by side (each output's classes, or one mean per output).
    pub n_outputs: usize,
    /// Left child of each node, or [`LEAF`].
    pub left: Vec<u32>,
    /// Right child (`left + 1`) of an inner node; a leaf's row in the value table.
    pub right: Vec<u32>,
    /// Rows whose projection is `<= threshold` go left.
    pub threshold: Vec<f32>,
    /// Offsets of each node's projection in `proj_idx` (`n_nodes + 1`).
    pub proj_ptr: Vec<u32>,
    /// Feature indices (explicit projections) or descriptor words (compact ones).
    pub proj_idx: Vec<u32>,
    /// Weights parallel to `proj_idx`; empty for compact descriptors.
    pub proj_w: Vec<f32>,
    /// Impurity of each node.
    pub impurity: Vec<f64>,
    /// In-bag rows of each node.
    pub n_node_samples: Vec<u32>,
    /// In-bag weight of each node.
    pub weighted_n_node_samples: Vec<f64>,
    /// Depth of each node (the root is 0).
    pub depth: Vec<u32>,
    /// Leaf values, one row of `n_outputs` per leaf in node order.
    pub value: Vec<f64>,
    /// Inner nodes, ascending, whose rows with a missing (NaN) projection go against the
    /// default rule of [`Tree::missing_goes_left`]. Not part of the serde encoding: the
    /// model formats carry it in a section of their own, present only when some tree has
    /// one (so files of trees grown without NaN keep their bytes).
    #[serde(skip)]
    pub missing_flip: Vec<u32>,
    /// The training rows of each leaf, when the forest keeps leaf values (quantile
    /// regression forests). Not part of the serde encoding: the formats carry it in their
    /// kind section, written only for such forests.
    #[serde(skip)]
    pub leaf_rows: Option<LeafRows>,
    /// The level maps of the categorical terms of its nodes' projections
    /// ([`crate::columns`]); empty for a tree grown on numeric columns. Not part of the
    /// serde encoding: the formats carry it in their column section.
    #[serde(skip)]
    pub level_maps: LevelMaps,
}

/// The training rows that fill each leaf of a tree (a forest grown with
/// `store_leaf_values`): leaf-value row `r` (leaves in node order) holds the rows
/// `rows[ptr[r]..ptr[r + 1]]`, ascending and distinct, each counted `counts[k]` times
/// (its bootstrap count, 1 without bootstrap); a row's weight in the leaf is its count
/// times its sample weight (kept once per forest). An honest tree's leaves hold their
/// honest rows. A leaf no such row reached holds the rows of its nearest ancestor that
/// some reached.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LeafRows {
    /// Offsets into `rows` per leaf-value row (`n_leaves + 1`).
    pub ptr: Vec<u32>,
    /// Training row indices.
    pub rows: Vec<u32>,
    /// Each row's count (bootstrap draws), parallel to `rows`, at least 1.
    pub counts: Vec<u32>,
}

impl LeafRows {
    /// The rows and counts of leaf-value row `r`.
    #[inline]
    pub fn leaf(&self, r: usize) -> (&[u32], &[u32]) {
        let (a, b) = (self.ptr[r] as usize, self.ptr[r + 1] as usize);
        (&self.rows[a..b], &self.counts[a..b])
    }

    /// Checks the table against a tree of `n_leaves` leaves grown on `n_samples` rows:
    /// offsets that start at 0, never decrease and end at the entries, rows below
    /// `n_samples` and ascending within a leaf, counts of at least 1.
    ///
    /// # Errors
    /// [`Error::CorruptModel`] naming what is wrong.
    pub(crate) fn validate(&self, n_leaves: usize, n_samples: usize) -> Result<()> {
        let bad = |what: &str| Err(Error::CorruptModel(format!("leaf rows: {what}")));
        if self.ptr.len() != n_leaves + 1
            || self.ptr[0] != 0
            || self.ptr[n_leaves] as usize != self.rows.len()
            || self.counts.len() != self.rows.len()
        {
            return bad("offsets or lengths");
        }
        for r in 0..n_leaves {
            let (a, b) = (self.ptr[r] as usize, self.ptr[r + 1] as usize);
            if a > b {
                return bad("offsets decrease");
            }
            let rows = &self.rows[a..b];
            if rows.iter().any(|&i| i as usize >= n_samples)
                || rows.windows(2).any(|w| w[0] >= w[1])
            {
                return bad("a row out of range or out of order");
            }
        }
        if self.counts.contains(&0) {
            return bad("a count of 0");
        }
        Ok(())
    }

    /// Bytes held.
    pub(crate) fn n_bytes(&self) -> u64 {
        4 * (self.ptr.len() + self.rows.len() + self.counts.len()) as u64
    }
}

impl Tree {
    /// Nodes, inner and leaves.
    pub fn n_nodes(&self) -> usize {
        self.left.len()
    }

    /// Whether `node` is a leaf.
    #[inline]
    pub fn is_leaf(&self, node: usize) -> bool {
        self.left[node] == LEAF
    }

    /// Leaves.
    pub fn n_leaves(&self) -> usize {
        self.left.iter().filter(|&&l| l == LEAF).count()
    }

    /// Depth of the deepest node.
    pub fn max_depth(&self) -> usize {
        self.depth.iter().copied().max().unwrap_or(0) as usize
    }

    /// The projection of inner node `node`.
    #[inline]
    pub fn proj<'a>(
        &'a self,
        node: usize,
        family: Option<&'a dyn CompactDescriptors>,
    ) -> ProjRef<'a> {
        let (a, b) = (
            self.proj_ptr[node] as usize,
            self.proj_ptr[node + 1] as usize,
        );
        let w = if family.is_some() {
            &[][..]
        } else {
            &self.proj_w[a..b]
        };
        ProjRef::new(&self.proj_idx[a..b], w, family).with_maps(self.level_maps.of_node(node))
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
        self.missing_flip.shrink_to_fit();
        self.level_maps.shrink_to_fit();
        if let Some(r) = &mut self.leaf_rows {
            r.ptr.shrink_to_fit();
            r.rows.shrink_to_fit();
            r.counts.shrink_to_fit();
        }
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
    pub fn leaf_by(
        &self,
        descriptors: Option<&dyn CompactDescriptors>,
        get: impl Fn(usize) -> f32,
    ) -> usize {
        let mut node = 0usize;
        while self.left[node] != LEAF {
            let v = self.proj(node, descriptors).value_by(&get);
            node = self.child(node, v);
        }
        node
    }

    /// The leaf reached by a row given as a slice.
    #[inline]
    pub fn leaf(&self, descriptors: Option<&dyn CompactDescriptors>, row: &[f32]) -> usize {
        let mut node = 0usize;
        while self.left[node] != LEAF {
            let v = self.proj(node, descriptors).dot(row);
            node = self.child(node, v);
        }
        node
    }

    /// The child of inner node `node` a row with projected value `v` goes to: left when
    /// `v <= threshold`, right when `v > threshold`, and [`Tree::missing_goes_left`]'s
    /// side when `v` is NaN.
    #[inline(always)]
    pub fn child(&self, node: usize, v: f32) -> usize {
        let t = self.threshold[node];
        let left = v <= t || (v.is_nan() && self.missing_goes_left(node));
        if left {
            self.left[node] as usize
        } else {
            self.right[node] as usize
        }
    }

    /// Whether rows whose projection is missing (NaN) at inner node `node` go left: to the
    /// child with more weighted training rows (right on ties), unless the node is in
    /// `missing_flip` (its split search sent its missing rows the other way).
    #[inline]
    pub fn missing_goes_left(&self, node: usize) -> bool {
        self.default_missing_left(node) != self.missing_flip.binary_search(&(node as u32)).is_ok()
    }

    /// The default side of missing values at inner node `node`: left when the left child
    /// holds strictly more weighted training rows (scikit-learn's rule for a node that saw
    /// no missing value in training).
    #[inline]
    pub fn default_missing_left(&self, node: usize) -> bool {
        let w = &self.weighted_n_node_samples;
        w[self.left[node] as usize] > w[self.right[node] as usize]
    }

    /// [`Tree::missing_goes_left`] of every node (false for leaves), as scikit-learn's
    /// `tree_.missing_go_to_left`.
    pub fn missing_go_to_left(&self) -> Vec<bool> {
        (0..self.n_nodes())
            .map(|i| !self.is_leaf(i) && self.missing_goes_left(i))
            .collect()
    }

    /// Weighted impurity decrease of every split, shared among each projection's features
    /// in proportion to |weight| (equally when the weights are `unit_weights`, units of
    /// measurement rather than preferences, as SPORF's), normalised to sum to 1 (all zeros
    /// for a single leaf).
    pub fn feature_importances(
        &self,
        n_features: usize,
        descriptors: Option<&dyn CompactDescriptors>,
        unit_weights: bool,
    ) -> Vec<f64> {
        let share = |wt: f32| {
            if unit_weights {
                1.0
            } else {
                f64::from(wt.abs())
            }
        };
        let mut imp = vec![0.0; n_features];
        for node in 0..self.n_nodes() {
            if self.is_leaf(node) {
                continue;
            }
            let (l, r) = (self.left[node] as usize, self.right[node] as usize);
            let w = &self.weighted_n_node_samples;
            let decrease =
                w[node] * self.impurity[node] - w[l] * self.impurity[l] - w[r] * self.impurity[r];
            let proj = self.proj(node, descriptors);
            let mut total_w = 0.0f64;
            proj.for_each(|_, wt| total_w += share(wt));
            if total_w > 0.0 {
                proj.for_each(|j, wt| imp[j] += decrease.max(0.0) * share(wt) / total_w);
            }
        }
        normalise(&mut imp);
        imp
    }

    /// Adds to `counts[j]` the number of split projections that use feature j (once per
    /// projection, though a pooled one lists it in several pieces).
    pub fn add_projection_counts(
        &self,
        descriptors: Option<&dyn CompactDescriptors>,
        counts: &mut [f64],
    ) {
        let mut pooled = Vec::new();
        for node in 0..self.n_nodes() {
            if self.is_leaf(node) {
                continue;
            }
            let proj = self.proj(node, descriptors);
            if proj.pooling().is_none() {
                proj.for_each(|j, _| counts[j] += 1.0);
                continue;
            }
            pooled.clear();
            proj.for_each(|j, _| pooled.push(j));
            pooled.sort_unstable();
            pooled.dedup();
            pooled.iter().for_each(|&j| counts[j] += 1.0);
        }
    }

    /// Checks every index and length, so that traversal can never go out of bounds or loop,
    /// and every number a prediction or an importance reads: thresholds are never NaN or
    /// `-inf` (`+inf` is a split sending every present row left), projection weights,
    /// impurities, node weights (also non-negative) and leaf values are finite. Stops with
    /// [`Error::Cancelled`] when the call is cancelled (polled once per tree).
    pub(crate) fn validate(
        &self,
        n_features: usize,
        descriptors: Option<&dyn CompactDescriptors>,
    ) -> Result<()> {
        crate::cancel::check()?;
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
        if self.n_outputs == 0
            || Some(self.value.len()) != self.n_leaves().checked_mul(self.n_outputs)
        {
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
        if descriptors.is_none() && self.proj_w.len() != self.proj_idx.len() {
            return bad("projection weights length");
        }
        if descriptors.is_some() && !self.proj_w.is_empty() {
            return bad("weights stored for compact descriptors");
        }
        if !self.proj_w.iter().all(|w| w.is_finite()) {
            return bad("projection weight not finite");
        }
        if !self.value.iter().all(|v| v.is_finite()) {
            return bad("leaf value not finite");
        }
        if !self.impurity.iter().all(|v| v.is_finite())
            || !self
                .weighted_n_node_samples
                .iter()
                .all(|w| w.is_finite() && *w >= 0.0)
        {
            return bad("impurity or node weight not finite");
        }
        // ascending inner nodes (so at most one entry per node: bounded by the table)
        let mut prev: Option<u32> = None;
        for &i in &self.missing_flip {
            if prev.is_some_and(|p| p >= i) || i as usize >= n || self.left[i as usize] == LEAF {
                return bad("missing-value directions");
            }
            prev = Some(i);
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
            if self.threshold[i].is_nan() || self.threshold[i] == f32::NEG_INFINITY {
                return bad("threshold NaN or -inf");
            }
            match descriptors {
                None if self.proj_idx[a..b]
                    .iter()
                    .any(|&j| j as usize >= n_features) =>
                {
                    return bad("feature index out of range")
                }
                Some(g) if !g.is_valid(&self.proj_idx[a..b]) => {
                    return bad("projection descriptor")
                }
                _ => {}
            }
        }
        if self.level_maps.n_maps() > 0
            && (descriptors.is_some() || self.proj_idx.len() >= MAX_CODED_TERMS)
        {
            return bad("level maps on compact descriptors, or too many terms");
        }
        self.level_maps
            .validate(n, |i| (self.proj_ptr[i + 1] - self.proj_ptr[i]) as usize)
    }

    /// Checks that every leaf of a classification tree holds, for each output (blocks of
    /// `n_classes[o]` values side by side), a class distribution: non-negative values that
    /// sum to 1 within `tolerance`. Call after [`Tree::validate`].
    pub(crate) fn validate_distributions(&self, n_classes: &[usize], tolerance: f64) -> Result<()> {
        if n_classes.iter().sum::<usize>() != self.n_outputs {
            return Err(Error::CorruptModel(format!(
                "tree table: {} values per leaf for outputs of {n_classes:?} classes",
                self.n_outputs
            )));
        }
        for row in self.value.chunks_exact(self.n_outputs) {
            let mut at = 0;
            for &k in n_classes {
                let block = &row[at..at + k];
                at += k;
                let sum: f64 = block.iter().sum();
                if block.iter().any(|&p| p < 0.0) || (sum - 1.0).abs() > tolerance {
                    return Err(Error::CorruptModel(format!(
                        "tree table: a leaf's class probabilities {block:?} are not a \
                         distribution (negative, or summing to {sum} instead of 1)"
                    )));
                }
            }
        }
        Ok(())
    }
}

/// Flags the packed `a` field of a node whose projection has several features; a tree's
/// projection entries stay below it so that every offset can be packed.
pub(crate) const MULTI: u32 = 1 << 31;
/// The most projection terms of a tree with level maps (its packed layout flags coded
/// nodes with a bit below [`MULTI`]).
const MAX_CODED_TERMS: usize = 1 << 29;

pub(crate) fn normalise(v: &mut [f64]) {
    let s: f64 = v.iter().sum();
    if s > 0.0 {
        v.iter_mut().for_each(|x| *x /= s);
    }
}
