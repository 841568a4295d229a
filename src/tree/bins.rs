//! Histograms of a candidate's projected values at one node ([`Bins`]) and their walk
//! ([`Binned`]): a scan of the bin boundaries only, in O(n) instead of a sort's
//! O(n log n). Approximate bins (equal width, `splitter="hist"` on large nodes) or exact
//! ones (projections of discrete columns, one distinct value per bin, where the bin
//! boundaries are exactly the sorted scan's positions); [`kind`] says which, if any.
//!
//! Invariant: bins are ordered by value and equal values share a bin, so a split after
//! bin `b` sends left exactly the rows of bins `..=b`, and [`Bins::threshold`] separates
//! them from the rest.

use super::criterion::ScanStats;
use super::scan::{midpoint, offer, Missing, ScanDriver};
use crate::params::Splitter;
use crate::prefetch::AHEAD;

/// Histogram of one candidate's projected values at one node: each row's bin, and per bin
/// the statistics the criterion needs (class weights, or the weighted target sum), the
/// weight and the row count. Rows are added to one of several interleaved copies in turn
/// and the copies summed after, so that runs of rows in one bin (binary data) do not make
/// a chain of dependent read-modify-writes.
#[derive(Default)]
pub(super) struct Bins {
    of_row: RowBins,
    /// A value of each bin (the exact path checks every row against it).
    pub(super) value: Vec<f32>,
    stats: Vec<f64>,
    w: Vec<f64>,
    pub(super) n: Vec<u32>,
    pub(super) n_bins: usize,
}

impl Bins {
    /// Bins `vals` into `n_bins` equal-width bins on `[lo, hi]`. The bin is monotone in the
    /// value, so bins are ordered and equal values share a bin. With `exact`, returns false
    /// (and stops) when some bin holds two distinct values.
    pub(super) fn assign(
        &mut self,
        vals: &[f32],
        lo: f32,
        hi: f32,
        n_bins: usize,
        exact: bool,
    ) -> bool {
        let scale = n_bins as f64 / (f64::from(hi) - f64::from(lo));
        let top = (n_bins - 1) as f64;
        self.n_bins = n_bins;
        let bin = |v: f32| ((f64::from(v) - f64::from(lo)) * scale).min(top);
        if n_bins <= 256 {
            let rows = self.of_row.bytes();
            rows.extend(vals.iter().map(|&v| bin(v) as u8));
        } else {
            let rows = self.of_row.wide();
            rows.extend(vals.iter().map(|&v| bin(v) as u16));
        }
        if !exact {
            return true;
        }
        self.value.clear();
        self.value.resize(n_bins, 0.0);
        let value = &mut self.value;
        with_rows!(&self.of_row, rows => {
            for (&b, &v) in rows.iter().zip(vals) {
                value[usize::from(b)] = v;
            }
            rows.iter().zip(vals).all(|(&b, &v)| value[usize::from(b)] == v)
        })
    }

    /// Takes the rows' bins as given (`bins`, one per row; at most 65,536 bins, each of
    /// one value, `values` holding the bins' values in increasing order): exact bins
    /// without binning by width.
    pub(super) fn assign_given(&mut self, bins: impl Iterator<Item = usize>, values: &[f32]) {
        let n_bins = values.len();
        self.n_bins = n_bins;
        if n_bins <= 256 {
            let rows = self.of_row.bytes();
            rows.extend(bins.map(|b| b as u8));
        } else {
            let rows = self.of_row.wide();
            rows.extend(bins.map(|b| b as u16));
        }
        self.value.clear();
        self.value.extend_from_slice(values);
    }

    /// Sums every row's weight into its bin: `row(k)` of the `k`-th row says where in its
    /// bin's `per_bin` statistics its weight goes, with what factor, and the weight; `ask(k)`
    /// asks the cache for what `row(k)` will read (called some rows ahead).
    pub(super) fn fill(
        &mut self,
        per_bin: usize,
        row: impl Fn(usize) -> (usize, f64, f64),
        ask: impl Fn(usize),
    ) {
        const COPIES: usize = 4;
        let n_bins = self.n_bins;
        // the extra copies pay for their clearing only on nodes with many rows per bin
        let n_rows = with_rows!(&self.of_row, rows => rows.len());
        let copies = if n_rows >= 16 * n_bins { COPIES } else { 1 };
        let width = n_bins * per_bin;
        self.stats.clear();
        self.stats.resize(copies * width, 0.0);
        self.w.clear();
        self.w.resize(copies * n_bins, 0.0);
        self.n.clear();
        self.n.resize(copies * n_bins, 0);
        let (stats, bin_w, bin_n) = (&mut self.stats, &mut self.w, &mut self.n);
        with_rows!(&self.of_row, rows => {
            for (k, &b) in rows.iter().enumerate() {
                if k + AHEAD < n_rows {
                    ask(k + AHEAD);
                }
                let b = usize::from(b);
                let c = if copies == 1 { 0 } else { k % COPIES };
                let (at, factor, w) = row(k);
                stats[c * width + b * per_bin + at] += factor * w;
                bin_w[c * n_bins + b] += w;
                bin_n[c * n_bins + b] += 1;
            }
        });
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
    pub(super) fn threshold(&self, vals: &[f32], b: usize, exact: bool) -> f32 {
        if exact {
            let next = (b + 1..self.n_bins).find(|&c| self.n[c] > 0).unwrap_or(b);
            return midpoint(self.value[b], self.value[next]);
        }
        let (mut below, mut above) = (f32::NEG_INFINITY, f32::INFINITY);
        with_rows!(&self.of_row, rows => {
            for (&r, &v) in rows.iter().zip(vals) {
                if usize::from(r) <= b {
                    below = if v > below { v } else { below };
                } else {
                    above = if v < above { v } else { above };
                }
            }
        });
        midpoint(below, above)
    }
}

/// Each row's bin at the node being searched: one byte per row when there are at most 256
/// bins (the default `max_bins`), two otherwise.
enum RowBins {
    Bytes(Vec<u8>),
    Wide(Vec<u16>),
}

impl Default for RowBins {
    fn default() -> Self {
        RowBins::Bytes(Vec::new())
    }
}

impl RowBins {
    /// The one-byte form, emptied (its memory kept when it already was that form).
    fn bytes(&mut self) -> &mut Vec<u8> {
        if !matches!(self, RowBins::Bytes(_)) {
            *self = RowBins::Bytes(Vec::new());
        }
        let RowBins::Bytes(v) = self else {
            unreachable!()
        };
        v.clear();
        v
    }

    /// The two-byte form, emptied.
    fn wide(&mut self) -> &mut Vec<u16> {
        if !matches!(self, RowBins::Wide(_)) {
            *self = RowBins::Wide(Vec::new());
        }
        let RowBins::Wide(v) = self else {
            unreachable!()
        };
        v.clear();
        v
    }
}

/// Runs `$body` with `$rows` bound to the row bins as a slice of their element type.
macro_rules! with_rows {
    ($bins:expr, $rows:ident => $body:expr) => {
        match $bins {
            RowBins::Bytes(v) => {
                let $rows: &[u8] = v;
                $body
            }
            RowBins::Wide(v) => {
                let $rows: &[u16] = v;
                $body
            }
        }
    };
}
use with_rows;

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

/// Which histogram, if any, scans `n` values on `[lo, hi]` under `splitter`, for a
/// criterion whose statistics fit a bin: the approximate one on large nodes when asked for,
/// else the exact one when every feature of the projection looks discrete (it gives up,
/// and the values are sorted, when a bin turns out to hold two distinct values;
/// `discrete` says whether they all look discrete, asked only when it matters).
/// (bins, exact).
pub(super) fn kind(
    splitter: Splitter,
    discrete: impl FnOnce() -> bool,
    lo: f32,
    hi: f32,
    n: usize,
) -> Option<(usize, bool)> {
    match splitter {
        Splitter::Histogram { max_bins } if n >= max_bins * Splitter::HIST_MIN_ROWS_PER_BIN => {
            Some((max_bins, false))
        }
        // (at least 2 bins: smaller nodes never qualify)
        _ if n >= 2 * EXACT_HIST_MIN_ROWS_PER_BIN && discrete() => {
            let n_bins = exact_bins(lo, hi, n);
            // worth it over a sort with enough rows for the bins
            (n >= EXACT_HIST_MIN_ROWS.min(EXACT_HIST_MIN_ROWS_PER_BIN * n_bins))
                .then_some((n_bins, true))
        }
        _ => None,
    }
}

/// The boundaries after each non-empty bin of a histogram of the present values (but the
/// last, unless `missing.to_end`): position b splits after bin b. Same admissibility rules
/// as [`super::scan::Sorted`], with `n` the node's rows.
pub(super) struct Binned<'a> {
    pub(super) bins: &'a Bins,
    pub(super) per_bin: usize,
    pub(super) n: usize,
    pub(super) limits: (f64, usize, f64),
    pub(super) missing: Missing,
}

impl ScanDriver for Binned<'_> {
    #[inline]
    fn run<T: ScanStats>(self, mut stats: T) -> Option<(f64, usize)> {
        let (bins, per_bin, n, missing) = (self.bins, self.per_bin, self.n, self.missing);
        let (w_node, min_leaf, min_weight_leaf) = self.limits;
        let last = bins.n[..bins.n_bins].iter().rposition(|&c| c > 0)?;
        let (mut w_l, mut w_r, mut n_l) = (missing.w_left, w_node - missing.w_left, missing.n_left);
        let mut best: Option<(f64, usize)> = None;
        let stop = if missing.to_end { last + 1 } else { last };
        for b in 0..stop {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::criterion::{Criterion, Gini};
    use crate::tree::scan::tests::sorted;
    use crate::tree::scan::{midpoint, ByRow, Sorted};

    /// [`Bins::fill`]'s row `k` of `samples`: its slot and factor under `crit`, and weight.
    fn by_row<C: Criterion>(
        crit: &C,
        samples: &[u32],
        weights: &[f64],
        k: usize,
    ) -> (usize, f64, f64) {
        let s = samples[k] as usize;
        let (at, factor) = crit.bin_slot(s);
        (at, factor, weights[s])
    }

    #[test]
    fn exact_bins_give_integers_one_bin_each() {
        assert_eq!(exact_bins(0.0, 1.0, 1000), 2);
        assert_eq!(exact_bins(-3.0, 4.0, 1000), 8);
        assert_eq!(exact_bins(0.0, 1000.0, 1000), EXACT_BINS);
        assert_eq!(exact_bins(0.5, 2.0, 100), 100);
    }

    #[test]
    fn row_bins_take_one_byte_up_to_256_bins_and_two_beyond_with_the_same_counts() {
        // 600 rows, value v in 0..300 twice each, weight 1 + (row % 3)
        let vals: Vec<f32> = (0..600).map(|i| (i % 300) as f32).collect();
        let samples: Vec<u32> = (0..600).collect();
        let weights: Vec<f64> = (0..600).map(|i| 1.0 + (i % 3) as f64).collect();
        for n_bins in [150, 256, 257, 300] {
            let mut bins = Bins::default();
            // [-0.5, 299.5] in n_bins equal bins: value v lands in bin (v + 0.5) * n_bins / 300
            assert!(bins.assign(&vals, -0.5, 299.5, n_bins, n_bins == 300));
            assert_eq!(matches!(bins.of_row, RowBins::Bytes(_)), n_bins <= 256);
            bins.fill(1, |k| (0, 1.0, weights[samples[k] as usize]), |_| {});
            for b in 0..n_bins {
                let in_bin = |v: f32| {
                    (((f64::from(v) + 0.5) * n_bins as f64 / 300.0).min((n_bins - 1) as f64))
                        as usize
                        == b
                };
                let rows: Vec<usize> = (0..600).filter(|&i| in_bin(vals[i])).collect();
                assert_eq!(bins.n[b] as usize, rows.len(), "{n_bins} bins, bin {b}");
                let w: f64 = rows.iter().map(|&i| weights[i]).sum();
                assert_eq!(bins.w[b], w, "{n_bins} bins, bin {b}");
            }
            // one value per bin at 300 bins: the threshold after bin b is b + 0.5
            if n_bins == 300 {
                assert_eq!(bins.threshold(&vals, 41, false), midpoint(41.0, 42.0));
                assert_eq!(bins.threshold(&vals, 41, true), midpoint(41.0, 42.0));
            }
        }
    }

    #[test]
    fn exact_histogram_gives_up_on_two_values_in_a_bin() {
        let mut bins = Bins::default();
        assert!(bins.assign(&[0.0, 1.0, 2.0, 1.0], 0.0, 2.0, 3, true));
        assert!(!bins.assign(&[0.0, 0.2, 2.0], 0.0, 2.0, 3, true));
    }

    #[test]
    fn binned_scan_matches_sorted_scan_on_exact_bins() {
        let vals: Vec<f32> = (0..40).map(|i| ((i * 7) % 5) as f32).collect();
        let classes: Vec<u32> = vals.iter().map(|&v| u32::from(v >= 2.0)).collect();
        let weights: Vec<f64> = (0..40).map(|i| 1.0 + (i % 3) as f64).collect();
        let samples: Vec<u32> = (0..40).collect();
        let crit = Gini::new(&classes, 1);
        let mut total = vec![0.0; 2];
        let w_node: f64 = weights.iter().sum();
        for (s, &w) in weights.iter().enumerate() {
            crit.add_sample(&mut total, s, w);
        }
        let mut bins = Bins::default();
        assert!(bins.assign(&vals, 0.0, 4.0, exact_bins(0.0, 4.0, 40), true));
        bins.fill(2, |k| by_row(&crit, &samples, &weights, k), |_| {});
        let (mut l, mut r) = (vec![0.0; 2], vec![0.0; 2]);
        let (p_bin, b) = Binned {
            bins: &bins,
            per_bin: 2,
            n: 40,
            limits: (w_node, 1, 0.0),
            missing: Missing::NONE,
        }
        .run(crit.scan(&total, &mut l, &mut r))
        .unwrap();
        let pairs = sorted(&vals);
        let (p_sort, at) = Sorted {
            pairs: &pairs,
            rows: ByRow(crate::tree::RowWeights::Values(&weights)),
            limits: (w_node, 1, 0.0),
            missing: Missing::NONE,
            stay_right: &[],
        }
        .run(crit.scan(&total, &mut l, &mut r))
        .unwrap();
        assert!((p_bin - p_sort).abs() < 1e-9);
        assert_eq!(
            bins.threshold(&vals, b, true),
            midpoint(pairs[at].0, pairs[at + 1].0)
        );
    }

    #[test]
    fn nan_scan_binned_matches_sorted_with_missing_rows() {
        let vals: Vec<f32> = (0..40).map(|i| ((i * 7) % 5) as f32).collect();
        let n_miss = 9;
        let classes: Vec<u32> = (0..40 + n_miss)
            .map(|i| {
                if i < 40 {
                    u32::from(vals[i] >= 3.0)
                } else {
                    (i % 3 == 0) as u32
                }
            })
            .collect();
        let weights: Vec<f64> = (0..40 + n_miss).map(|i| 1.0 + (i % 3) as f64).collect();
        let present: Vec<u32> = (0..40).collect();
        let missing: Vec<u32> = (40..40 + n_miss as u32).collect();
        let w_m: f64 = missing.iter().map(|&s| weights[s as usize]).sum();
        let crit = Gini::new(&classes, 1);
        let mut total = vec![0.0; 2];
        let w_node: f64 = weights.iter().sum();
        for (s, &w) in weights.iter().enumerate() {
            crit.add_sample(&mut total, s, w);
        }
        let mut bins = Bins::default();
        assert!(bins.assign(&vals, 0.0, 4.0, exact_bins(0.0, 4.0, 40), true));
        bins.fill(2, |k| by_row(&crit, &present, &weights, k), |_| {});
        let pairs = sorted(&vals);
        for left_side in [false, true] {
            let missing_of = |_| Missing {
                n: n_miss,
                n_left: if left_side { n_miss } else { 0 },
                w_left: if left_side { w_m } else { 0.0 },
                to_end: !left_side,
            };
            let run = |binned: bool| {
                let (mut l, mut r) = (vec![0.0; 2], vec![0.0; 2]);
                let mut scan = crit.scan(&total, &mut l, &mut r);
                if left_side {
                    for &s in &missing {
                        scan.move_left(s as usize, weights[s as usize]);
                    }
                }
                if binned {
                    Binned {
                        bins: &bins,
                        per_bin: 2,
                        n: 40 + n_miss,
                        limits: (w_node, 1, 0.0),
                        missing: missing_of(()),
                    }
                    .run(scan)
                } else {
                    Sorted {
                        pairs: &pairs,
                        rows: ByRow(crate::tree::RowWeights::Values(&weights)),
                        limits: (w_node, 1, 0.0),
                        missing: missing_of(()),
                        stay_right: &[],
                    }
                    .run(scan)
                }
            };
            let ((p_bin, b), (p_sort, at)) = (run(true).unwrap(), run(false).unwrap());
            assert!((p_bin - p_sort).abs() < 1e-9, "missing left: {left_side}");
            // the same cut: after bin b holds exactly the pairs up to `at`
            assert_eq!(bins.value[b], pairs[at].0);
        }
    }
}
