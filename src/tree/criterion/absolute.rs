//! Absolute error around the weighted median ([`AbsoluteError`]): the criterion whose
//! statistics are not sums, with its running weighted median ([`RunningMedian`]).

use super::{Criterion, RowSplit, ScanStats};
use crate::tree::RowWeights;

/// Absolute error around the weighted median over k >= 1 real outputs (scikit-learn's
/// "absolute_error"): per output `(1/w) sum w |y - median|`, averaged over outputs; a
/// node's value is each output's weighted median (the mean of the two middle values when
/// the weight below the lower one is exactly half, as scikit-learn takes it).
///
/// Its statistics are not sums: a node's are `[w, (1/k) sum_o AD_o, median_0..]`
/// (`AD_o` the weighted absolute deviation), completed from the rows by
/// [`Criterion::finish_node`] (a sort per output, O(n log n)); the proxy of a child is
/// `-(1/k) sum_o AD_o`. A sorted scan precomputes every right child's deviation in one
/// backward pass ([`ScanStats::prepare`]) and adds the left child's row by row, each
/// with a running weighted median of two heaps: O(k n log n) per candidate, as
/// scikit-learn's; a random threshold's split is valued from its rows
/// ([`Criterion::split_proxy_at`]), O(k n log n) too. It is the slowest criterion (heap
/// updates per row instead of a few additions) and is never binned.
///
/// Missing values: a node's missing rows are in the left child's medians from the start
/// of a scan that sends them left, and in every right child's deviation of a scan that
/// keeps them right (the rows [`ScanStats::prepare`] is told stay there), so both sides
/// are scored as for the other criteria.
#[derive(Clone, Copy)]
pub(crate) struct AbsoluteError<'a> {
    /// Targets, n × k row-major.
    pub(crate) y: &'a [f64],
    /// Outputs.
    pub(crate) k: usize,
}

/// One heap entry of a [`RunningMedian`]: a target and its weight, ordered by target.
#[derive(Clone, Copy)]
struct Entry {
    y: f64,
    w: f64,
}

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        self.y.total_cmp(&o.y).is_eq()
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.y.total_cmp(&o.y)
    }
}

/// A weighted median under insertions: `lo` (a max-heap) holds the smallest targets
/// whose weight reaches half the total, `hi` (a min-heap) the rest; with the weights and
/// weighted sums of each side, the absolute deviation around the median `m = max(lo)`
/// is `m w_lo - s_lo + s_hi - m w_hi`.
#[derive(Default)]
pub(crate) struct RunningMedian {
    lo: std::collections::BinaryHeap<Entry>,
    hi: std::collections::BinaryHeap<std::cmp::Reverse<Entry>>,
    w_lo: f64,
    s_lo: f64,
    w_hi: f64,
    s_hi: f64,
}

impl RunningMedian {
    fn clear(&mut self) {
        self.lo.clear();
        self.hi.clear();
        (self.w_lo, self.s_lo, self.w_hi, self.s_hi) = (0.0, 0.0, 0.0, 0.0);
    }

    fn insert(&mut self, y: f64, w: f64) {
        if self.lo.peek().is_none_or(|top| y <= top.y) {
            self.lo.push(Entry { y, w });
            self.w_lo += w;
            self.s_lo += w * y;
        } else {
            self.hi.push(std::cmp::Reverse(Entry { y, w }));
            self.w_hi += w;
            self.s_hi += w * y;
        }
        let half = (self.w_lo + self.w_hi) / 2.0;
        while self.w_lo < half {
            let Some(std::cmp::Reverse(e)) = self.hi.pop() else {
                break;
            };
            self.w_hi -= e.w;
            self.s_hi -= e.w * e.y;
            self.w_lo += e.w;
            self.s_lo += e.w * e.y;
            self.lo.push(e);
        }
        while self.lo.len() > 1 {
            let top = self.lo.peek().copied().unwrap_or(Entry { y: 0.0, w: 0.0 });
            if self.w_lo - top.w < half {
                break;
            }
            self.lo.pop();
            self.w_lo -= top.w;
            self.s_lo -= top.w * top.y;
            self.w_hi += top.w;
            self.s_hi += top.w * top.y;
            self.hi.push(std::cmp::Reverse(top));
        }
    }

    /// Weighted absolute deviation around the median (0 when empty).
    fn deviation(&self) -> f64 {
        let Some(m) = self.lo.peek().map(|e| e.y) else {
            return 0.0;
        };
        (m * self.w_lo - self.s_lo + self.s_hi - m * self.w_hi).max(0.0)
    }

    /// The weighted median, scikit-learn's way (see [`AbsoluteError`]).
    fn median(&self) -> f64 {
        let Some(m) = self.lo.peek().map(|e| e.y) else {
            return 0.0;
        };
        match self.hi.peek() {
            Some(std::cmp::Reverse(up)) if self.w_lo == self.w_hi => (m + up.y) / 2.0,
            _ => m,
        }
    }
}

/// The scratch of [`AbsoluteError`] on one thread (a tree grows on one thread, one scan
/// at a time): running medians (a scan's left child, one per output; a node's or a random
/// split's children otherwise), the median of the suffixes a scan's backward pass grows,
/// and the right children's deviations it records.
#[derive(Default)]
struct Medians {
    left: Vec<RunningMedian>,
    suffix: RunningMedian,
    right: Vec<f64>,
}

thread_local! {
    static MEDIANS: std::cell::RefCell<Medians> = std::cell::RefCell::new(Medians::default());
}

impl<'a> Criterion for AbsoluteError<'a> {
    type Scan<'s>
        = AbsoluteErrorScan<'s>
    where
        Self: 's;

    fn split_values(&self, _: &[f64], _: &[f64], _: f64, _: f64) -> (f64, f64) {
        (f64::NAN, f64::NAN) // monotonic constraints are refused here (ForestParams::check)
    }

    fn stat_len(&self, _n_outputs: usize) -> usize {
        2 + self.k
    }
    #[inline(always)]
    fn add_sample(&self, sums: &mut [f64], _s: usize, w: f64) {
        sums[0] += w;
    }
    fn finish_node(&self, sums: &mut [f64], rows: &[u32], weights: RowWeights<'_>) {
        let k = self.k;
        let mut total = 0.0;
        MEDIANS.with_borrow_mut(|Medians { left: medians, .. }| {
            medians.resize_with(1, RunningMedian::default);
            let m = &mut medians[0];
            for o in 0..k {
                m.clear();
                for &s in rows {
                    m.insert(self.y[s as usize * k + o], weights[s as usize]);
                }
                total += m.deviation();
                sums[2 + o] = m.median();
            }
        });
        sums[1] = total / k as f64;
    }
    fn impurity(&self, sums: &[f64], w: f64) -> f64 {
        sums[1] / w
    }
    fn push_value(&self, sums: &[f64], _w: f64, out: &mut Vec<f64>) {
        out.extend_from_slice(&sums[2..2 + self.k]);
    }
    fn node_proxy(&self, sums: &[f64], _w: f64) -> f64 {
        -sums[1]
    }
    fn split_proxy(&self, _left: &[f64], _total: &[f64], _w_l: f64, _w_r: f64) -> f64 {
        // never called: the split search asks `split_proxy_at`, which sees the rows
        f64::NEG_INFINITY
    }
    fn split_proxy_at(
        &self,
        _left: &[f64],
        _total: &[f64],
        _w: (f64, f64),
        split: RowSplit<'_>,
    ) -> f64 {
        let k = self.k;
        MEDIANS.with_borrow_mut(|Medians { left: medians, .. }| {
            medians.resize_with(2.max(medians.len()), RunningMedian::default);
            let (l, r) = medians.split_at_mut(1);
            let (l, r) = (&mut l[0], &mut r[0]);
            let mut total = 0.0;
            for o in 0..k {
                l.clear();
                r.clear();
                for (&s, &v) in split.rows.iter().zip(split.vals) {
                    let side = if split.goes_left(v) { &mut *l } else { &mut *r };
                    side.insert(self.y[s as usize * k + o], split.weights[s as usize]);
                }
                total += l.deviation() + r.deviation();
            }
            -total / k as f64
        })
    }
    fn binned(&self) -> bool {
        false
    }
    fn bin_width(&self, _n_outputs: usize) -> usize {
        1
    }
    fn bin_slot(&self, s: usize) -> (usize, f64) {
        // never binned
        (0, self.y[s * self.k])
    }
    fn scan<'s>(
        &'s self,
        _total: &[f64],
        _left: &'s mut [f64],
        _right: &'s mut [f64],
    ) -> AbsoluteErrorScan<'s> {
        MEDIANS.with_borrow_mut(|Medians { left, .. }| {
            left.resize_with(self.k.max(left.len()), RunningMedian::default);
            left.iter_mut().for_each(RunningMedian::clear);
        });
        AbsoluteErrorScan {
            y: self.y,
            k: self.k,
            moved: 0,
        }
    }
}

/// [`AbsoluteError`]'s running statistics: the left child's running medians (one per
/// output; the rows a scan starts with on the left, a node's missing rows, are in them
/// before [`ScanStats::prepare`]) and the right children's deviations by the number of
/// sorted rows moved, in the thread's scratch ([`MEDIANS`]).
pub(crate) struct AbsoluteErrorScan<'a> {
    y: &'a [f64],
    k: usize,
    moved: usize,
}

impl ScanStats for AbsoluteErrorScan<'_> {
    fn prepare(&mut self, pairs: &[(f32, u32)], weights: RowWeights<'_>, stay_right: &[u32]) {
        let (k, n) = (self.k, pairs.len());
        MEDIANS.with_borrow_mut(|Medians { suffix, right, .. }| {
            right.clear();
            right.resize(n + 1, 0.0);
            // right[i]: deviation of the rows pairs[i..] and `stay_right`, summed over
            // outputs
            for o in 0..k {
                suffix.clear();
                for &s in stay_right {
                    suffix.insert(self.y[s as usize * k + o], weights[s as usize]);
                }
                right[n] += suffix.deviation();
                for i in (1..n).rev() {
                    let s = pairs[i].1 as usize;
                    suffix.insert(self.y[s * k + o], weights[s]);
                    right[i] += suffix.deviation();
                }
            }
        });
        self.moved = 0;
    }
    #[inline]
    fn move_left(&mut self, s: usize, w: f64) {
        let k = self.k;
        MEDIANS.with_borrow_mut(|Medians { left, .. }| {
            for (o, m) in left.iter_mut().enumerate().take(k) {
                m.insert(self.y[s * k + o], w);
            }
        });
        self.moved += 1;
    }
    fn move_bin(&mut self, _bin: &[f64]) {
        // never binned
    }
    #[inline]
    fn proxy(&self, _w_l: f64, _w_r: f64) -> f64 {
        MEDIANS.with_borrow(|Medians { left, right, .. }| {
            let left: f64 = left.iter().take(self.k).map(|m| m.deviation()).sum();
            -(left + right.get(self.moved).copied().unwrap_or(0.0)) / self.k as f64
        })
    }
    #[inline(always)]
    fn child_values(&self, _w_l: f64, _w_r: f64) -> (f64, f64) {
        (f64::NAN, f64::NAN) // monotonic constraints are refused here (ForestParams::check)
    }
}
