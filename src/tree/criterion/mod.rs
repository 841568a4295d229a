//! Impurity criteria: each criterion's math in one place.
//!
//! A [`Criterion`] says what statistics a node keeps (class weights, or the weight, the
//! weighted target sum and the weighted sum of squares), the node's impurity and value,
//! and a split's *proxy*, cheap to update while rows move from the right child to the
//! left one ([`ScanStats`]). Invariant: `proxy(split) - node_proxy(node)` is the split's
//! *improvement*, so the best proxy is the best split. For every criterion but
//! [`FriedmanMse`] the proxy is the sum of the children's [`Criterion::node_proxy`] and
//! the improvement is the split's weighted impurity decrease; Friedman's score is not a
//! sum over children (its `node_proxy` is 0).
//!
//! The split loops are generic over the criterion, so each (walk, criterion) pair
//! compiles to one loop without dynamic dispatch.
//!
//! Rooms: [`class`] (Gini and entropy, one output or several, as one generic
//! implementation), [`regression`] (squared error, Friedman's, Poisson: criteria whose
//! statistics are weighted target sums), [`absolute`] (absolute error around the median),
//! [`unsupervised`] (the split rules of forests without targets, which score projected
//! values instead: [`Criterion::value_rule`]).
//!
//! Multi-output targets (k columns): the statistics are the outputs' blocks side by side
//! (each output's class weights, or each output's sums), and a node's impurity is the mean
//! of its outputs' impurities, as in scikit-learn (which divides its sums over outputs by
//! `n_outputs`): the proxies carry the same `1 / k`, so the invariant above holds for them
//! too. Their rows each add to k slots of a bin, so class and squared-error criteria over
//! several outputs are not binned ([`Criterion::binned`]); the single-output loops stay
//! exactly what they were.

use crate::tree::RowWeights;

pub(crate) mod absolute;
pub(crate) mod class;
pub(crate) mod regression;
pub(crate) mod unsupervised;

pub(crate) use absolute::AbsoluteError;
pub(crate) use class::{Entropy, Gini, MultiEntropy, MultiGini};
pub(crate) use regression::{FriedmanMse, MultiSquaredError, Poisson, SquaredError};
pub(crate) use unsupervised::{average_path_length, Moments, Unlabelled, ValueRule};

/// The statistics and impurity of one criterion over a tree's targets.
pub(crate) trait Criterion: Copy + Send + Sync {
    /// The running statistics of a split scan.
    type Scan<'s>: ScanStats
    where
        Self: 's;

    /// Length of a node's statistics vector.
    fn stat_len(&self, n_outputs: usize) -> usize;
    /// Adds row `s` with weight `w` to a node's statistics.
    fn add_sample(&self, sums: &mut [f64], s: usize, w: f64);
    /// Completes a node's statistics from its rows after [`Self::add_sample`] saw each
    /// of them, for criteria whose statistics are not sums (the median's); a no-op for
    /// the others.
    #[inline(always)]
    fn finish_node(&self, _sums: &mut [f64], _rows: &[u32], _weights: RowWeights<'_>) {}
    /// Impurity of a node with statistics `sums` and weight `w > 0`.
    fn impurity(&self, sums: &[f64], w: f64) -> f64;
    /// Appends the node's value (class distribution, or the mean) to `out`.
    fn push_value(&self, sums: &[f64], w: f64, out: &mut Vec<f64>);
    /// The proxy of leaving a node with statistics `sums` and weight `w` unsplit.
    fn node_proxy(&self, sums: &[f64], w: f64) -> f64;
    /// The proxy of a split with left statistics `left` (filled by [`Self::add_sample`])
    /// out of the node's `total`, and child weights `w_l`, `w_r`.
    fn split_proxy(&self, left: &[f64], total: &[f64], w_l: f64, w_r: f64) -> f64;
    /// The children's monotone values ([`super::monotonic`]) of a split with left
    /// statistics `left` out of the node's `total`, and child weights `w_l`, `w_r`.
    fn split_values(&self, left: &[f64], total: &[f64], w_l: f64, w_r: f64) -> (f64, f64);
    /// [`Self::split_proxy`] of one split given by a threshold ([`RowSplit`]), `left`
    /// holding the left rows' statistics. Criteria whose statistics are not sums
    /// ([`AbsoluteError`]) compute it from the rows.
    #[inline(always)]
    fn split_proxy_at(
        &self,
        left: &[f64],
        total: &[f64],
        (w_l, w_r): (f64, f64),
        _split: RowSplit<'_>,
    ) -> f64 {
        self.split_proxy(left, total, w_l, w_r)
    }
    /// Whether a scan's running statistics over rows of these weights are exact (integers
    /// well below 2^53), so that no bit of them depends on the order in which rows and bins
    /// move: sparse X then moves a candidate's zero rows as one block and still finds the
    /// dense scan's split ([`super::sparse_split`]). A criterion that says so keeps its node
    /// statistics in histogram-bin form ([`Self::bin_slot`]: a node's statistics are the
    /// bin holding all its rows). False unless the criterion proves it.
    fn exact_scan(&self, _weights: RowWeights<'_>) -> bool {
        false
    }
    /// Whether a histogram bin can hold this criterion's statistics ([`Self::bin_slot`]
    /// puts a row in one slot); when not, the split search always sorts.
    fn binned(&self) -> bool {
        true
    }
    /// The rule that scores a candidate's projected values instead of targets (forests
    /// without targets, [`Unlabelled`]); `None` (the default) for the target criteria, whose
    /// split search never takes that path.
    #[inline(always)]
    fn value_rule(&self) -> Option<ValueRule> {
        None
    }
    /// `Some(slots)` when a row's statistics are its weight in one of `slots` slots
    /// ([`Self::bin_slot`] with factor 1, moved by [`ScanStats::move_slot`]): a sorted
    /// scan can then carry a row as its weight and slot ([`super::scan::Packing`]). `None`
    /// (the default) for criteria that read more of a row.
    fn packable_slots(&self, _n_outputs: usize) -> Option<usize> {
        None
    }
    /// Whether the scan's proxy is `t_l / w_l + t_r / w_r`, `t` a child's sum of its class
    /// weights' squares, over one slot per class (Gini over one output): with
    /// [`Self::exact_scan`], a sorted scan may then square the children's class weights
    /// instead of adding up the changes of their sums ([`super::scan_lanes`]). False unless
    /// the criterion says so.
    fn squares_class_weights(&self) -> bool {
        false
    }
    /// Statistics per histogram bin.
    fn bin_width(&self, n_outputs: usize) -> usize;
    /// Where row `s`'s weight goes in its bin's statistics, and with what factor.
    fn bin_slot(&self, s: usize) -> (usize, f64);
    /// Asks the cache for row `s`'s target, which [`Self::bin_slot`] and
    /// [`Self::add_sample`] read (a hint; none for the criteria that do not say).
    #[inline(always)]
    fn prefetch(&self, _s: usize) {}
    /// A scan starting with every row of a node with statistics `total` on the right;
    /// `left` and `right` are scratch of [`Self::stat_len`] entries.
    fn scan<'s>(
        &'s self,
        total: &[f64],
        left: &'s mut [f64],
        right: &'s mut [f64],
    ) -> Self::Scan<'s>;
}

/// Running split statistics of one criterion while rows move from the right child to the
/// left one in sorted order.
pub(crate) trait ScanStats {
    /// Sees the whole order of a sorted scan before its first move (the rows sorted by
    /// projected value, with the row weights) and the rows that stay on the right
    /// throughout (a node's missing rows, when the scan keeps them there); rows the scan
    /// starts with on the left have moved already. Criteria that cannot update a child
    /// incrementally in both directions ([`AbsoluteError`]) precompute the right children
    /// here; a no-op for the others.
    #[inline(always)]
    fn prepare(&mut self, _pairs: &[(f32, u32)], _weights: RowWeights<'_>, _stay_right: &[u32]) {}
    /// Moves row `sample` with weight `w` to the left child.
    fn move_left(&mut self, sample: usize, w: f64);
    /// Asks the cache for what [`Self::move_left`] of row `sample` will read (a hint).
    #[inline(always)]
    fn prefetch(&self, _sample: usize) {}
    /// Moves a row of weight `w` whose statistics are that weight in `slot`; called only
    /// for criteria with [`Criterion::packable_slots`], the same move as
    /// [`Self::move_left`] of that row.
    #[inline(always)]
    fn move_slot(&mut self, _slot: usize, _w: f64) {
        unreachable!("rows are packed only under criteria with packable slots")
    }
    /// Moves a histogram bin's statistics (see [`Criterion::bin_slot`]).
    fn move_bin(&mut self, bin: &[f64]);
    /// The proxy of the current split with child weights `w_l`, `w_r` (both > 0).
    fn proxy(&self, w_l: f64, w_r: f64) -> f64;
    /// The children's monotone values ([`super::monotonic`]): their means, or their
    /// probabilities of class 1.
    fn child_values(&self, w_l: f64, w_r: f64) -> (f64, f64);
}

/// One split of a node's rows given by a threshold: `rows` with projected values `vals`
/// go left when `<= threshold`, and those whose value is missing (NaN) go left when
/// `missing_left`; `weights` are the tree's row weights.
#[derive(Clone, Copy)]
pub(crate) struct RowSplit<'a> {
    pub(crate) rows: &'a [u32],
    pub(crate) vals: &'a [f32],
    pub(crate) threshold: f32,
    pub(crate) missing_left: bool,
    pub(crate) weights: RowWeights<'a>,
}

impl RowSplit<'_> {
    /// Whether a row with projected value `v` goes left.
    #[inline(always)]
    pub(crate) fn goes_left(&self, v: f32) -> bool {
        v <= self.threshold || (self.missing_left && v.is_nan())
    }
}

/// Whether weight `w` is a whole number >= 0 that a u64 holds (-0.0 included; NaN,
/// infinities, negative and fractional weights not): `w.fract() == 0.0 && w >= 0.0` below
/// 2^64, without the libm `trunc` call `fract` compiles to on the baseline x86-64 target
/// (no SSE4.1 rounding), which the per-tree checks of every row's weight would pay.
#[inline]
pub(crate) fn whole_weight(w: f64) -> bool {
    w >= 0.0 && (w as u64) as f64 == w
}

#[cfg(test)]
mod tests;
