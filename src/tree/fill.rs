//! Filling a grown tree from rows its split search did not weigh (honest trees), or
//! recording the rows each leaf holds (forests that keep leaf values). It runs after the
//! tree is grown and reads only the data, the tree's projections and the criterion's leaf
//! value ([`Filler`]), not the split search.
//!
//! The rows with a positive fill weight are routed down the finished tree, each node's
//! rows partitioned in place as the builder partitions them (the same projection, the
//! same float32 sums, the same side for a missing value), so a row reaches the leaf that
//! prediction sends it to. Invariant: when a node's range `samples[start..end]` is split,
//! its children own `samples[start..mid]` and `samples[mid..end]`, each ascending; a
//! node's range keeps the same rows (not the same order) while its descendants are
//! split. A leaf that no row reaches takes the rows of its nearest ancestor that some
//! reach (every leaf of a tree with at least one fill row has rows): for an honest tree,
//! the parent's honest estimate stands in for an empty leaf.

use super::criterion::Criterion;
use super::workspace::{node_stats, partition_room, stable_partition, Workspace};
use super::{LeafRows, Tree};
use crate::data::FeatureMatrix;
use crate::projection::CompactDescriptors;

/// The rows that fill a grown tree.
pub(crate) struct Fill<'a> {
    /// Each row's weight among the rows that fill the leaves (0: not one of them): the
    /// honest part of an honest tree, else the rows the tree grew on.
    pub(crate) weights: &'a [f64],
    /// Recompute every leaf's value from its fill rows (honest trees).
    pub(crate) values: bool,
    /// Record each leaf's rows ([`LeafRows`]).
    pub(crate) keep_rows: bool,
    /// Each row's count in its weight (bootstrap draws); 1 for every row when `None`.
    pub(crate) multiplicity: Option<&'a [u32]>,
}

/// What filling reads: the data, the family's descriptors (patch forests) and the
/// criterion whose leaf value an honest tree's leaves take.
pub(super) struct Filler<'a, C> {
    pub(super) x: &'a FeatureMatrix<'a>,
    pub(super) descriptors: Option<&'a dyn CompactDescriptors>,
    pub(super) crit: C,
}

impl<C: Criterion> Filler<'_, C> {
    /// `tree` filled from `fill` (see the module doc).
    pub(super) fn fill(&self, mut tree: Tree, fill: &Fill<'_>, ws: &mut Workspace) -> Tree {
        let w = fill.weights;
        ws.samples.clear();
        ws.samples
            .extend((0..w.len() as u32).filter(|&i| w[i as usize] > 0.0));
        let m = ws.samples.len();
        // per leaf-value row: the range of the rows that fill it
        let mut ranges = vec![(0usize, 0usize); tree.n_leaves()];
        let mut stack = vec![(0usize, 0usize, m, (0usize, m))];
        while let Some((node, start, end, held)) = stack.pop() {
            // the nearest range, this node's or an ancestor's, that some row reaches
            let held = if end > start { (start, end) } else { held };
            if tree.is_leaf(node) {
                ranges[tree.right[node] as usize] = held;
                continue;
            }
            let mid = start + self.route(&tree, node, start, end, ws);
            stack.push((tree.right[node] as usize, mid, end, held));
            stack.push((tree.left[node] as usize, start, mid, held));
        }
        if fill.values && m > 0 {
            self.leaf_values(&mut tree, &ranges, w, ws);
        }
        if fill.keep_rows {
            let mut rows = LeafRows {
                ptr: Vec::with_capacity(ranges.len() + 1),
                ..LeafRows::default()
            };
            rows.ptr.push(0);
            for &(a, b) in &ranges {
                let at = rows.rows.len();
                rows.rows.extend_from_slice(&ws.samples[a..b]);
                // an ancestor's range is no longer in ascending order
                rows.rows[at..].sort_unstable();
                rows.counts.extend(
                    rows.rows[at..]
                        .iter()
                        .map(|&i| fill.multiplicity.map_or(1, |c| c[i as usize])),
                );
                rows.ptr.push(rows.rows.len() as u32);
            }
            tree.leaf_rows = Some(rows);
        }
        tree
    }

    /// Partitions the rows `samples[start..end]` of inner node `node` between its
    /// children as prediction sends them; returns the left child's count.
    fn route(
        &self,
        tree: &Tree,
        node: usize,
        start: usize,
        end: usize,
        ws: &mut Workspace,
    ) -> usize {
        let proj = tree.proj(node, self.descriptors);
        ws.project_node(self.x, proj, start, end);
        let left = tree.left[node] as usize;
        stable_partition(
            &mut ws.samples[start..end],
            &ws.vals,
            partition_room(&mut ws.pairs, &mut ws.sort_buf),
            |v| tree.child(node, v) == left,
        )
    }

    /// Every leaf's value recomputed by the criterion from the rows of its range, with
    /// the fill weights `w`.
    fn leaf_values(
        &self,
        tree: &mut Tree,
        ranges: &[(usize, usize)],
        w: &[f64],
        ws: &mut Workspace,
    ) {
        let crit = self.crit;
        let k = tree.n_outputs;
        for (r, &(a, b)) in ranges.iter().enumerate() {
            let total = node_stats(&crit, &mut ws.node_sums, &ws.samples[a..b], w.into());
            ws.node_values.clear();
            crit.push_value(&ws.node_sums, total, &mut ws.node_values);
            tree.value[r * k..(r + 1) * k].copy_from_slice(&ws.node_values[..k]);
        }
    }
}
