//! The split search of a candidate on sparse X at the cost of its nonzeros, as
//! scikit-learn's sparse splitter does it: only the node's rows with a nonzero projected
//! value are gathered ([`crate::data::FeatureMatrix::project_nonzeros`], from the stored
//! entries of the candidate's columns) and sorted; the rows projected to zero sit between
//! the negative and the positive values as one block, which the scan moves at once, its
//! statistics the node's minus the nonzero rows' ([`SparseSorted`]).
//!
//! Invariant: the split found is the one the sorted scan of every row finds on the dense
//! matrix (the model is the dense forest's, byte for byte, as `crate::sparse` promises).
//! The walk offers the same positions in the same order, and its statistics at each are
//! the same numbers, because this path is taken only when the criterion's running
//! statistics are exact for the tree's weights ([`super::criterion::Criterion::exact_scan`]:
//! Gini with integer weights, e.g. bootstrap counts), so neither the order of the rows
//! within the block nor moving them as one sum changes a bit. Other criteria and weights
//! (entropy, regression, fractional sample weights), pooled projections, the random
//! splitter and approximate histograms gather every row of the node
//! ([`super::workspace::project`]).

use super::bins;
use super::criterion::{Criterion, ScanStats};
use super::monotonic::Bounds;
use super::scan::{midpoint, offer, sort_pairs, ScanDriver};
use super::splitter::{Node, SplitSearch};
use super::workspace::{partition_room, partition_rows, project_nonzeros, Workspace};
use crate::params::Splitter;
use crate::probe::{self, Count};
use crate::projection::ProjRef;
use crate::tree::RowWeights;

/// A sorted scan over a sparse candidate's values: the nonzero ones sorted (`pairs`, the
/// first `n_neg` negative), and `n_zero` rows of value 0 between them with weight `w_zero`
/// and histogram-bin statistics `zero_bin`. Step `i` of the walk moves one nonzero row, or
/// every zero row at once; the positions and admissibility rules are
/// [`super::scan::Sorted`]'s (`limits` = node weight, min_samples_leaf, min leaf weight).
pub(super) struct SparseSorted<'a> {
    pub(super) pairs: &'a [(f32, u32)],
    pub(super) n_neg: usize,
    pub(super) n_zero: usize,
    pub(super) w_zero: f64,
    pub(super) zero_bin: &'a [f64],
    pub(super) weights: RowWeights<'a>,
    pub(super) limits: (f64, usize, f64),
}

/// The value moved by step `i` of a [`SparseSorted`] walk over `pairs` (`n_neg` negative)
/// with a zero block when `zeros`.
#[inline(always)]
fn step_value(pairs: &[(f32, u32)], n_neg: usize, zeros: bool, i: usize) -> f32 {
    let z = usize::from(zeros);
    if i < n_neg {
        pairs[i].0
    } else if i < n_neg + z {
        0.0
    } else {
        pairs[i - z].0
    }
}

impl ScanDriver for SparseSorted<'_> {
    #[inline]
    fn run<T: ScanStats>(self, mut stats: T) -> Option<(f64, usize)> {
        let (w_node, min_leaf, min_weight_leaf) = self.limits;
        let zeros = self.n_zero > 0;
        let z = usize::from(zeros);
        let n = self.pairs.len() + self.n_zero;
        let steps = self.pairs.len() + z;
        let (mut w_l, mut w_r, mut n_l) = (0.0f64, w_node, 0usize);
        let mut best: Option<(f64, usize)> = None;
        let value = |i| step_value(self.pairs, self.n_neg, zeros, i);
        for i in 0..steps.saturating_sub(1) {
            if zeros && i == self.n_neg {
                stats.move_bin(self.zero_bin);
                w_l += self.w_zero;
                w_r -= self.w_zero;
                n_l += self.n_zero;
            } else {
                let s = self.pairs[if i < self.n_neg { i } else { i - z }].1 as usize;
                let w = self.weights[s];
                stats.move_left(s, w);
                w_l += w;
                w_r -= w;
                n_l += 1;
            }
            if value(i) != value(i + 1)
                && offer(
                    &stats,
                    (n_l, n, min_leaf),
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

impl<C: Criterion> SplitSearch<'_, C> {
    /// Whether candidate `proj` at a node of `n` rows takes the sparse path: the tree moves
    /// zeros as a block ([`SplitSearch::zeros_as_block`]), the projection is linear, and the
    /// splitter scans every distinct value (the best splitter, or the histogram one on a
    /// node too small for its approximate bins; exact bins find the sorted scan's split).
    #[inline]
    pub(super) fn sparse_applies(&self, n: usize, proj: ProjRef<'_>) -> bool {
        self.zeros_as_block
            && match self.cfg.splitter {
                Splitter::Best => true,
                // without the discrete hint, `kind` names the approximate histogram only
                Splitter::Histogram { .. } => {
                    bins::kind(self.cfg.splitter, || false, 0.0, 1.0, n).is_none()
                }
                Splitter::Random => false,
            }
            && proj.pooling().is_none()
    }

    /// Before the search of `node`'s candidates: its rows marked in `ws.node_mask`
    /// ([`Self::leave_sparse_node`] clears them).
    pub(super) fn enter_sparse_node(&self, ws: &mut Workspace, node: Node<'_>) {
        ws.node_mask.resize(self.x.n_samples.div_ceil(64), 0);
        for &s in &ws.samples[node.start..node.end] {
            ws.node_mask[s as usize >> 6] |= 1 << (s & 63);
        }
    }

    /// After the search of `node`: no row is marked in `ws.node_mask`.
    pub(super) fn leave_sparse_node(&self, ws: &mut Workspace, node: Node<'_>) {
        for &s in &ws.samples[node.start..node.end] {
            ws.node_mask[s as usize >> 6] = 0;
        }
    }

    /// The sorted scan of candidate `proj` on sparse X from its nonzeros: `None` when it is
    /// constant on the node (or has a non-finite value, as [`super::scan::finite_range`]
    /// says), else (proxy, threshold) of its best split if any, the split the dense scan
    /// finds. `ws.node_mask` marks the node's rows ([`Self::enter_sparse_node`]).
    pub(super) fn sparse_split(
        &self,
        ws: &mut Workspace,
        node: Node<'_>,
        proj: ProjRef<'_>,
        mono: Option<(i8, Bounds)>,
    ) -> Option<Option<(f64, f32)>> {
        probe::count(Count::SparseScans);
        let samples = &ws.samples[node.start..node.end];
        project_nonzeros(
            self.x,
            proj,
            samples,
            Some(&ws.node_mask),
            &mut ws.terms,
            &mut ws.pairs,
        );
        let n_zero = samples.len() - ws.pairs.len();
        let (mut lo, mut hi, mut finite) = if n_zero > 0 {
            (0.0f32, 0.0f32, true)
        } else {
            (f32::INFINITY, f32::NEG_INFINITY, true)
        };
        for &(v, _) in &ws.pairs {
            finite &= v.is_finite();
            lo = lo.min(v);
            hi = hi.max(v);
        }
        if !(finite && lo < hi) {
            return None;
        }
        sort_pairs(&mut ws.pairs, &mut ws.sort_buf, false);
        let n_neg = ws.pairs.partition_point(|p| p.0 < 0.0);
        // the zero rows' statistics: the node's (in bin form: `exact_scan`) less the
        // nonzero rows' (exact sums)
        ws.zero_bin.clear();
        ws.zero_bin.extend_from_slice(node.stats);
        let mut w_nonzero = 0.0;
        for &(_, s) in &ws.pairs {
            let w = self.weights[s as usize];
            let (at, factor) = self.crit.bin_slot(s as usize);
            ws.zero_bin[at] -= factor * w;
            w_nonzero += w;
        }
        let Workspace {
            pairs,
            zero_bin,
            left,
            right,
            ..
        } = ws;
        let driver = SparseSorted {
            pairs,
            n_neg,
            n_zero,
            w_zero: node.w - w_nonzero,
            zero_bin,
            weights: self.weights,
            limits: self.limits(node),
        };
        let found = self.scan_with(node.stats, (left, right), &[], mono, driver);
        let value = |i| step_value(pairs, n_neg, n_zero > 0, i);
        Some(found.map(|(proxy, i)| (proxy, midpoint(value(i), value(i + 1)))))
    }
}

impl<C: Criterion> SplitSearch<'_, C> {
    /// The partition of the builder ([`super::builder`]) for a linear split of sparse X in
    /// a tree that moves zeros as a block: the rows sent away from the zeros' side are
    /// found from the stored entries (rows projected above a threshold >= 0 go right, or
    /// at or below a negative one go left), then one pass over the node's rows moves them,
    /// keeping the order of both sides. Returns the left count, or `None` on dense X or a
    /// pooled projection (the builder projects every row).
    pub(super) fn partition_sparse(
        &self,
        ws: &mut Workspace,
        (start, end): (usize, usize),
        proj: ProjRef<'_>,
        threshold: f32,
    ) -> Option<usize> {
        if !self.zeros_as_block || proj.pooling().is_some() {
            return None;
        }
        let samples = &ws.samples[start..end];
        project_nonzeros(self.x, proj, samples, None, &mut ws.terms, &mut ws.pairs);
        // the rows on the other side than the zeros, ascending
        let zeros_left = 0.0 <= threshold;
        ws.present.clear();
        ws.present.extend(
            ws.pairs
                .iter()
                .filter(|&&(v, _)| (v <= threshold) != zeros_left)
                .map(|&(_, s)| s),
        );
        ws.present.sort_unstable();
        let samples = &mut ws.samples[start..end];
        let room = partition_room(&mut ws.pairs, &mut ws.sort_buf);
        let (away, mut next) = (&ws.present, 0);
        Some(partition_rows(samples, room, |_, s| {
            let is_away = next < away.len() && away[next] == s;
            next += usize::from(is_away);
            is_away != zeros_left
        }))
    }
}
