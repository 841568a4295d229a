//! The split search of one node: sample the candidate projections, project the node's
//! rows on each, and find the best threshold — by sorting and scanning every position, by
//! scanning a histogram's bin boundaries (approximate bins on large nodes when asked for;
//! exact bins when every feature of the projection is discrete), or at one random
//! threshold. The scans are generic over the criterion's running statistics
//! ([`ScanStats`]) and the walk ([`ScanDriver`]), so each pair is one static loop.
//!
//! Invariant: every threshold returned lies strictly between the largest projected value
//! sent left and the smallest sent right, so partitioning by `<= threshold` reproduces the
//! split that was scored.
//!
//! Missing values: when X holds NaN ([`crate::data::FeatureMatrix::has_missing`]), a
//! candidate whose projected values include NaN (rows with a missing term) is scanned over
//! its present values twice, with the missing rows on the right and then on the left (as
//! scikit-learn's splitter does), also offering the split of every present row left and
//! every missing row right (threshold +inf); the best split records the side its missing
//! rows took ([`Best::missing`]). Candidates without NaN, and all data without NaN, take
//! the plain scans.

use super::builder::{Builder, Workspace};
use super::criterion::{Criterion, ScanStats};
use super::monotonic::{admissible, direction, Bounds, Monotone};
use crate::params::Splitter;
use crate::projection::ProjRef;
use crate::rng::Rng;

/// The best split found so far at a node: its proxy, threshold and candidate.
pub(super) struct Best {
    pub(super) proxy: f64,
    pub(super) threshold: f32,
    pub(super) cand: usize,
    /// Whether the rows whose projection is missing go left; `None` when the node has no
    /// such row under this candidate.
    pub(super) missing: Option<bool>,
    /// The split's monotonic direction ([`super::monotonic`]); 0 without constraints.
    pub(super) dir: i8,
}

/// A split found for one candidate: (proxy, threshold, side of the missing rows).
type Found = Option<(f64, f32, Option<bool>)>;

impl<C: Criterion> Builder<'_, C> {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn find_split(
        &self,
        ws: &mut Workspace,
        weights: &[f64],
        rng: &mut Rng,
        start: usize,
        end: usize,
        stats: &[f64],
        w_node: f64,
        min_weight_leaf: f64,
        bounds: Bounds,
    ) -> Option<(Best, (usize, usize))> {
        let mut best: Option<Best> = None;
        let cst = &self.cfg.monotonic_cst[..];
        let n = end - start;
        let min_leaf = self.cfg.min_samples_leaf;
        // When every candidate drawn is constant on the node, draw again (scikit-learn keeps
        // drawing features until one varies): a bounded number of rounds, enough for the
        // axis sampler to see about every feature, so such nodes do not end as impure leaves.
        let rounds = 1 + self
            .x
            .n_features
            .div_ceil(self.cfg.n_candidates.max(1))
            .min(MAX_REDRAWS);
        for _ in 0..rounds {
            self.sampler
                .sample(rng, self.cfg.n_candidates, &mut ws.scratch, &mut ws.cand);
            let mut varied = false;
            for c in 0..ws.cand.len() {
                if crate::cancel::requested() {
                    return None; // cancel: no split, so the node stays a leaf
                }
                self.x.keep_sums_finite(&mut ws.cand, c); // overflow: huge data, halved weights
                let proj = ws.cand.get(c, self.sampler.descriptors());
                // under monotonic constraints: the order the split must keep, and the
                // projections that cannot keep one are skipped
                let mono = if cst.is_empty() {
                    None
                } else {
                    match direction(cst, proj) {
                        Some(dir) => Some((dir, bounds)),
                        None => continue,
                    }
                };
                self.project(proj, &ws.samples[start..end], &mut ws.terms, &mut ws.vals);
                // NaN only where X has some: one pass over the values, else none at all
                let n_missing = if self.x.has_missing() {
                    ws.vals.iter().filter(|v| v.is_nan()).count()
                } else {
                    0
                };
                let limits = (w_node, min_leaf, min_weight_leaf);
                let found: Found = if n_missing > 0 {
                    if n_missing == n {
                        continue; // missing on every row: nothing to split
                    }
                    varied = true; // present rows against missing ones, at least
                    let to_beat = best.as_ref().map(|b| b.proxy);
                    match self.cfg.splitter {
                        Splitter::Random => {
                            self.random_split_missing(ws, weights, rng, stats, start, end, limits)
                        }
                        _ => {
                            let discrete = self.all_discrete(proj);
                            self.split_missing(
                                ws, weights, stats, discrete, start, end, limits, to_beat,
                            )
                        }
                    }
                } else {
                    match self.cfg.splitter {
                        Splitter::Best | Splitter::Histogram { .. } => {
                            // a constant projection cannot split: skip it before paying for a sort
                            // (common with sparse or binary data, e.g. image backgrounds)
                            let Some((lo, hi)) = finite_range(&ws.vals) else {
                                continue;
                            };
                            varied = true;
                            // which histogram, if any: the approximate one on large nodes when asked
                            // for, else the exact one when every feature of the projection looks
                            // discrete (it gives up, and the values are sorted, when a bin turns
                            // out to hold two distinct values)
                            let hist = self.histogram_kind(|| self.all_discrete(proj), lo, hi, n);
                            let from_hist = hist.and_then(|(n_bins, exact)| {
                                self.hist_split(
                                    ws,
                                    weights,
                                    stats,
                                    start,
                                    end,
                                    (lo, hi, n_bins, exact),
                                    limits,
                                    best.as_ref().map(|b| b.proxy),
                                    mono,
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
                                        &[],
                                        weights,
                                        mono,
                                        Sorted {
                                            pairs,
                                            weights,
                                            limits,
                                            missing: Missing::NONE,
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
                            varied = true;
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
                                mono,
                            )
                        }
                    }
                    .map(|(proxy, threshold)| (proxy, threshold, None))
                };
                if let Some((proxy, threshold, missing)) = found {
                    if admissible(proxy) && best.as_ref().is_none_or(|b| proxy > b.proxy) {
                        best = Some(Best {
                            proxy,
                            threshold,
                            cand: c,
                            missing,
                            dir: mono.map_or(0, |(dir, _)| dir),
                        });
                    }
                }
            }
            if best.is_some() || varied {
                break; // a split, or candidates that vary but cannot split: no redraw
            }
        }
        let best = best?;
        let (a, b) = (
            ws.cand.ptr[best.cand] as usize,
            ws.cand.ptr[best.cand + 1] as usize,
        );
        let at = ws.arena_idx.len();
        ws.arena_idx.extend_from_slice(&ws.cand.idx[a..b]);
        if self.sampler.descriptors().is_none() {
            ws.arena_w.extend_from_slice(&ws.cand.w[a..b]);
        }
        Some((best, (at, ws.arena_idx.len())))
    }

    /// Runs `driver` over the split statistics of this tree's criterion, starting from all
    /// rows on the right but `on_left` (missing rows sent left): (proxy, position) of the
    /// best split it finds. Under monotonic constraints (`mono` = the split's direction and
    /// the node's bounds), the positions they forbid score `-inf`.
    #[allow(clippy::too_many_arguments)]
    fn scan_with(
        &self,
        stats: &[f64],
        left: &mut [f64],
        right: &mut [f64],
        on_left: &[u32],
        weights: &[f64],
        mono: Option<(i8, Bounds)>,
        driver: impl ScanDriver,
    ) -> Option<(f64, usize)> {
        let mut inner = self.crit.scan(stats, left, right);
        for &s in on_left {
            inner.move_left(s as usize, weights[s as usize]);
        }
        match mono {
            None => driver.run(inner),
            Some((dir, bounds)) => driver.run(Monotone { inner, dir, bounds }),
        }
    }

    /// Which histogram, if any, scans `n` values on `[lo, hi]` under `proj`: the
    /// approximate one on large nodes when asked for, else the exact one when every feature
    /// of the projection looks discrete (it gives up, and the values are sorted, when a bin
    /// turns out to hold two distinct values; `discrete` says whether they all look
    /// discrete, asked only when it matters). (bins, exact).
    fn histogram_kind(
        &self,
        discrete: impl FnOnce() -> bool,
        lo: f32,
        hi: f32,
        n: usize,
    ) -> Option<(usize, bool)> {
        match self.cfg.splitter {
            // criteria whose statistics do not fit a bin always sort
            _ if !self.crit.binned() => None,
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

    /// Moves the missing (NaN) rows of the node's projected values out: afterwards
    /// `ws.vals` holds the present values in row order, `ws.present` their samples and
    /// `ws.missing` the samples of the missing rows. Returns the missing rows' weight.
    fn separate_missing(
        &self,
        ws: &mut Workspace,
        weights: &[f64],
        start: usize,
        end: usize,
    ) -> f64 {
        ws.present.clear();
        ws.missing.clear();
        let mut w_missing = 0.0;
        let mut kept = 0;
        for k in 0..end - start {
            let (v, s) = (ws.vals[k], ws.samples[start + k]);
            if v.is_nan() {
                ws.missing.push(s);
                w_missing += weights[s as usize];
            } else {
                ws.vals[kept] = v;
                ws.present.push(s);
                kept += 1;
            }
        }
        ws.vals.truncate(kept);
        w_missing
    }

    /// Split search of a candidate whose projection is missing on some (not all) rows of the
    /// node: the sorted or binned scan over the present values, with the missing rows on
    /// the right (also offering every present row left, threshold +inf), then on the left;
    /// the better of the two, ties to the right as scikit-learn. A split no better than
    /// `to_beat` is dropped before its threshold is computed.
    #[allow(clippy::too_many_arguments)]
    fn split_missing(
        &self,
        ws: &mut Workspace,
        weights: &[f64],
        stats: &[f64],
        discrete: bool,
        start: usize,
        end: usize,
        limits: (f64, usize, f64),
        to_beat: Option<f64>,
    ) -> Found {
        let w_missing = self.separate_missing(ws, weights, start, end);
        let (m, n_missing) = (ws.present.len(), ws.missing.len());
        let sides = [
            Missing {
                n: n_missing,
                n_left: 0,
                w_left: 0.0,
                to_end: true,
            },
            Missing {
                n: n_missing,
                n_left: n_missing,
                w_left: w_missing,
                to_end: false,
            },
        ];
        // present values that vary may use a histogram; constant ones split from the missing
        // rows only, which the sorted scan of their one value offers
        let hist = finite_range(&ws.vals).and_then(|(lo, hi)| {
            self.histogram_kind(|| discrete, lo, hi, m)
                .map(|(n_bins, exact)| (lo, hi, n_bins, exact))
        });
        let per_bin = self.crit.bin_width(self.cfg.n_outputs);
        let binned = hist
            .is_some_and(|(lo, hi, n_bins, exact)| ws.bins.assign(&ws.vals, lo, hi, n_bins, exact));
        let mut best: Option<(f64, usize, bool)> = None;
        if binned {
            let crit = self.crit;
            ws.bins
                .fill(&ws.present, weights, per_bin, |s| crit.bin_slot(s));
        } else {
            ws.pairs.clear();
            ws.pairs
                .extend(ws.vals.iter().copied().zip(ws.present.iter().copied()));
            sort_pairs(&mut ws.pairs, &mut ws.sort_buf);
        }
        for (side, missing) in sides.into_iter().enumerate() {
            let Workspace {
                pairs,
                bins,
                left,
                right,
                missing: missing_rows,
                ..
            } = &mut *ws;
            let on_left: &[u32] = if side == 1 { missing_rows } else { &[] };
            let found = if binned {
                self.scan_with(
                    stats,
                    left,
                    right,
                    on_left,
                    weights,
                    None,
                    Binned {
                        bins,
                        per_bin,
                        n: m + n_missing,
                        limits,
                        missing,
                    },
                )
            } else {
                self.scan_with(
                    stats,
                    left,
                    right,
                    on_left,
                    weights,
                    None, // (monotonic constraints refuse data with NaN)
                    Sorted {
                        pairs,
                        weights,
                        limits,
                        missing,
                    },
                )
            };
            if let Some((proxy, at)) = found {
                if best.is_none_or(|b| proxy > b.0) {
                    best = Some((proxy, at, side == 1));
                }
            }
        }
        let (proxy, at, missing_left) = best.filter(|b| to_beat.is_none_or(|t| b.0 > t))?;
        // the split after the last present value sends every present row left
        let threshold = if binned {
            let last = (0..ws.bins.n_bins).rposition(|b| ws.bins.n[b] > 0);
            if Some(at) == last {
                f32::INFINITY
            } else {
                ws.bins.threshold(&ws.vals, at, hist.is_some_and(|h| h.3))
            }
        } else if at + 1 == m {
            f32::INFINITY
        } else {
            midpoint(ws.pairs[at].0, ws.pairs[at + 1].0)
        };
        Some((proxy, threshold, Some(missing_left)))
    }

    /// The random splitter on a candidate missing on some (not all) rows: one random
    /// threshold over the present values (none drawn when they are all equal: every present
    /// row goes left, threshold +inf), scored with the missing rows on the right and on the
    /// left; the better of the two, ties to the right.
    #[allow(clippy::too_many_arguments)]
    fn random_split_missing(
        &self,
        ws: &mut Workspace,
        weights: &[f64],
        rng: &mut Rng,
        total: &[f64],
        start: usize,
        end: usize,
        (w_node, min_leaf, min_weight_leaf): (f64, usize, f64),
    ) -> Found {
        // f32::min and max skip NaN
        let (lo, hi) = ws
            .vals
            .iter()
            .fold((f32::INFINITY, f32::NEG_INFINITY), |(a, b), &v| {
                (a.min(v), b.max(v))
            });
        let t = if lo < hi {
            let t = lo + (rng.unit() as f32) * (hi - lo);
            if t >= hi || t < lo {
                lo
            } else {
                t
            }
        } else {
            f32::INFINITY
        };
        let stat_len = ws.left.len();
        ws.left.fill(0.0);
        ws.miss_stats.clear();
        ws.miss_stats.resize(stat_len, 0.0);
        let (mut w_l, mut n_l, mut w_m, mut n_m) = (0.0f64, 0usize, 0.0f64, 0usize);
        for (k, &s) in ws.samples[start..end].iter().enumerate() {
            let (v, w) = (ws.vals[k], weights[s as usize]);
            if v.is_nan() {
                n_m += 1;
                w_m += w;
                self.crit.add_sample(&mut ws.miss_stats, s as usize, w);
            } else if v <= t {
                n_l += 1;
                w_l += w;
                self.crit.add_sample(&mut ws.left, s as usize, w);
            }
        }
        let n = end - start;
        let admissible = |n_l: usize, w_l: f64| {
            let w_r = w_node - w_l;
            n_l >= min_leaf
                && n - n_l >= min_leaf
                && w_l >= min_weight_leaf
                && w_r >= min_weight_leaf
                && w_l > 0.0
                && w_r > 0.0
        };
        let mut best: Option<(f64, bool)> = None;
        if admissible(n_l, w_l) {
            best = Some((
                self.crit.split_proxy(&ws.left, total, w_l, w_node - w_l),
                false,
            ));
        }
        // the missing rows' statistics become the left child's with them
        for (m, l) in ws.miss_stats.iter_mut().zip(&ws.left) {
            *m += l;
        }
        let (n_l, w_l) = (n_l + n_m, w_l + w_m);
        if admissible(n_l, w_l) {
            let proxy = self
                .crit
                .split_proxy(&ws.miss_stats, total, w_l, w_node - w_l);
            if best.is_none_or(|b| proxy > b.0) {
                best = Some((proxy, true));
            }
        }
        best.map(|(proxy, left)| (proxy, t, Some(left)))
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
        mono: Option<(i8, Bounds)>,
    ) -> Option<Option<(f64, f32)>> {
        let per_bin = self.crit.bin_width(self.cfg.n_outputs);
        if !ws.bins.assign(&ws.vals, lo, hi, n_bins, exact) {
            return None;
        }
        let samples = &ws.samples[start..end];
        let crit = self.crit;
        ws.bins
            .fill(samples, weights, per_bin, |s| crit.bin_slot(s));
        let found = self.scan_with(
            stats,
            &mut ws.left,
            &mut ws.right,
            &[],
            weights,
            mono,
            Binned {
                bins: &ws.bins,
                per_bin,
                n: end - start,
                limits,
                missing: Missing::NONE,
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
        mono: Option<(i8, Bounds)>,
    ) -> Option<(f64, f32)> {
        ws.left.fill(0.0);
        let (mut w_l, mut n_l) = (0.0f64, 0usize);
        for (k, &s) in ws.samples[start..end].iter().enumerate() {
            if ws.vals[k] <= t {
                let w = weights[s as usize];
                n_l += 1;
                w_l += w;
                self.crit.add_sample(&mut ws.left, s as usize, w);
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
        if let Some((dir, bounds)) = mono {
            let (v_l, v_r) = self.crit.split_values(&ws.left, total, w_l, w_r);
            if !bounds.admits(dir, v_l, v_r) {
                return None;
            }
        }
        let split = (&ws.samples[start..end], &ws.vals[..], t, weights);
        let proxy = self.crit.split_proxy_at(&ws.left, total, (w_l, w_r), split);
        Some((proxy, t))
    }
}

/// Histogram of one candidate's projected values at one node: each row's bin, and per bin
/// the statistics the criterion needs (class weights, or the weighted target sum), the
/// weight and the row count. Rows are added to one of several interleaved copies in turn
/// and the copies summed after, so that runs of rows in one bin (binary data) do not make
/// a chain of dependent read-modify-writes.
#[derive(Default)]
pub(super) struct Bins {
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

/// At most this many extra draws of candidates at a node whose candidates were all
/// constant (each costs one pass over the node's rows per candidate, only at such nodes).
const MAX_REDRAWS: usize = 64;

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

/// A way of walking the split positions of one candidate, generic over the criterion's
/// running statistics so that each (walk, criterion) pair is one monomorphised loop.
pub(super) trait ScanDriver {
    /// (proxy, position) of the best admissible split.
    fn run<T: ScanStats>(self, stats: T) -> Option<(f64, usize)>;
}

/// The rows of a node whose projection is missing, as a scan sees them: `n` of them, of
/// which `n_left` (all or none) with weight `w_left` sit on the left before the scan starts
/// (the scan's statistics must have them there too); with `to_end`, the scan also offers
/// the position after the last present value (every present row left, the missing ones
/// right).
#[derive(Clone, Copy)]
struct Missing {
    n: usize,
    n_left: usize,
    w_left: f64,
    to_end: bool,
}

impl Missing {
    /// No missing row: the plain scan.
    const NONE: Missing = Missing {
        n: 0,
        n_left: 0,
        w_left: 0.0,
        to_end: false,
    };
}

/// Every position of sorted (value, sample) pairs of the present rows: position i splits
/// between `pairs[i]` and `pairs[i + 1]`, where the values differ (and after the last pair
/// when `missing.to_end`); honours `min_samples_leaf` and the minimum leaf weight
/// (`limits` = node weight, min_samples_leaf, min leaf weight) counting the missing rows
/// on their side.
struct Sorted<'a> {
    pairs: &'a [(f32, u32)],
    weights: &'a [f64],
    limits: (f64, usize, f64),
    missing: Missing,
}

impl ScanDriver for Sorted<'_> {
    #[inline]
    fn run<T: ScanStats>(self, mut stats: T) -> Option<(f64, usize)> {
        let (pairs, weights, missing) = (self.pairs, self.weights, self.missing);
        let (w_node, min_leaf, min_weight_leaf) = self.limits;
        let m = pairs.len();
        let n = m + missing.n;
        // without missing rows: 0 and w_node exactly, as before missing values existed
        let (mut w_l, mut w_r) = (missing.w_left, w_node - missing.w_left);
        let mut best: Option<(f64, usize)> = None;
        stats.prepare(pairs, weights);
        let stop = if missing.to_end { m } else { m - 1 };
        for i in 0..stop {
            let s = pairs[i].1 as usize;
            let w = weights[s];
            stats.move_left(s, w);
            w_l += w;
            w_r -= w;
            if (i + 1 == m || pairs[i].0 != pairs[i + 1].0)
                && offer(
                    &stats,
                    (missing.n_left + i + 1, n, min_leaf),
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
fn offer<T: ScanStats>(
    stats: &T,
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

/// The boundaries after each non-empty bin of a histogram of the present values (but the
/// last, unless `missing.to_end`): position b splits after bin b. Same admissibility rules
/// as [`Sorted`], with `n` the node's rows.
struct Binned<'a> {
    bins: &'a Bins,
    per_bin: usize,
    n: usize,
    limits: (f64, usize, f64),
    missing: Missing,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::criterion::{Gini, SquaredError};

    #[test]
    fn midpoint_separates_adjacent_values() {
        for (a, b) in [
            (1.0f32, 2.0),
            (0.0, f32::MIN_POSITIVE),
            (1.0, 1.0 + f32::EPSILON),
        ] {
            let t = midpoint(a, b);
            assert!(a <= t && t < b, "{a} {t} {b}");
        }
        assert_eq!(midpoint(-1.0, 3.0), 1.0);
    }

    #[test]
    fn finite_range_skips_constant_and_non_finite_candidates() {
        assert_eq!(finite_range(&[2.0, -1.0, 5.0]), Some((-1.0, 5.0)));
        assert_eq!(finite_range(&[3.0, 3.0]), None);
        assert_eq!(finite_range(&[1.0, f32::INFINITY]), None);
        assert_eq!(finite_range(&[]), None);
    }

    #[test]
    fn exact_bins_give_integers_one_bin_each() {
        assert_eq!(exact_bins(0.0, 1.0, 1000), 2);
        assert_eq!(exact_bins(-3.0, 4.0, 1000), 8);
        assert_eq!(exact_bins(0.0, 1000.0, 1000), EXACT_BINS);
        assert_eq!(exact_bins(0.5, 2.0, 100), 100);
    }

    #[test]
    fn exact_histogram_gives_up_on_two_values_in_a_bin() {
        let mut bins = Bins::default();
        assert!(bins.assign(&[0.0, 1.0, 2.0, 1.0], 0.0, 2.0, 3, true));
        assert!(!bins.assign(&[0.0, 0.2, 2.0], 0.0, 2.0, 3, true));
    }

    /// Sorted pairs and weights of `vals` (sample i has value vals[i]).
    fn sorted(vals: &[f32]) -> Vec<(f32, u32)> {
        let mut pairs: Vec<(f32, u32)> = vals.iter().copied().zip(0..).collect();
        sort_pairs(&mut pairs, &mut Vec::new());
        pairs
    }

    #[test]
    fn sorted_scan_finds_the_separating_threshold() {
        // classes follow the value: the best split is between 0.4 and 0.6
        let vals = [0.1f32, 0.9, 0.4, 0.6, 0.2, 0.8];
        let classes = [0, 1, 0, 1, 0, 1];
        let weights = [1.0; 6];
        let crit = Gini { classes: &classes };
        let (mut left, mut right) = (vec![0.0; 2], vec![0.0; 2]);
        let pairs = sorted(&vals);
        let (_, at) = Sorted {
            pairs: &pairs,
            weights: &weights,
            limits: (6.0, 1, 0.0),
            missing: Missing::NONE,
        }
        .run(crit.scan(&[3.0, 3.0], &mut left, &mut right))
        .unwrap();
        assert_eq!(midpoint(pairs[at].0, pairs[at + 1].0), 0.5);
    }

    #[test]
    fn sorted_scan_honours_min_samples_leaf_and_ties() {
        let vals = [1.0f32, 1.0, 1.0, 2.0, 3.0, 4.0];
        let y = [0.0, 0.0, 0.0, 5.0, 5.0, 9.0];
        let weights = [1.0; 6];
        let crit = SquaredError { y: &y };
        let pairs = sorted(&vals);
        let total = [6.0, 19.0, 131.0];
        let best = |min_leaf| {
            let (mut left, mut right) = (vec![0.0; 3], vec![0.0; 3]);
            Sorted {
                pairs: &pairs,
                weights: &weights,
                limits: (6.0, min_leaf, 0.0),
                missing: Missing::NONE,
            }
            .run(crit.scan(&total, &mut left, &mut right))
            .map(|(_, at)| at)
        };
        // never between equal values; the best cut is after the three zeros
        assert_eq!(best(1), Some(2));
        // min_samples_leaf = 4 leaves no admissible cut of 6 rows
        assert_eq!(best(4), None);
    }

    #[test]
    fn binned_scan_matches_sorted_scan_on_exact_bins() {
        let vals: Vec<f32> = (0..40).map(|i| ((i * 7) % 5) as f32).collect();
        let classes: Vec<u32> = vals.iter().map(|&v| u32::from(v >= 2.0)).collect();
        let weights: Vec<f64> = (0..40).map(|i| 1.0 + (i % 3) as f64).collect();
        let samples: Vec<u32> = (0..40).collect();
        let crit = Gini { classes: &classes };
        let mut total = vec![0.0; 2];
        let w_node: f64 = weights.iter().sum();
        for (s, &w) in weights.iter().enumerate() {
            crit.add_sample(&mut total, s, w);
        }
        let mut bins = Bins::default();
        assert!(bins.assign(&vals, 0.0, 4.0, exact_bins(0.0, 4.0, 40), true));
        bins.fill(&samples, &weights, 2, |s| crit.bin_slot(s));
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
            weights: &weights,
            limits: (w_node, 1, 0.0),
            missing: Missing::NONE,
        }
        .run(crit.scan(&total, &mut l, &mut r))
        .unwrap();
        assert!((p_bin - p_sort).abs() < 1e-9);
        assert_eq!(
            bins.threshold(&vals, b, true),
            midpoint(pairs[at].0, pairs[at + 1].0)
        );
    }

    /// Best (proxy, position) of the sorted scan of `vals` (present rows 0..) with the
    /// rows `missing` (numbered after them) on the side `missing_left`.
    fn scan_missing(
        vals: &[f32],
        classes: &[u32],
        missing_left: bool,
        min_leaf: usize,
    ) -> Option<(f64, usize)> {
        let n_present = vals.len();
        let missing: Vec<u32> = (n_present as u32..classes.len() as u32).collect();
        let weights = vec![1.0; classes.len()];
        let crit = Gini { classes };
        let mut total = vec![0.0; 2];
        for s in 0..classes.len() {
            crit.add_sample(&mut total, s, 1.0);
        }
        let (mut left, mut right) = (vec![0.0; 2], vec![0.0; 2]);
        let mut scan = crit.scan(&total, &mut left, &mut right);
        if missing_left {
            for &s in &missing {
                scan.move_left(s as usize, 1.0);
            }
        }
        let n_m = missing.len();
        let pairs = sorted(vals);
        Sorted {
            pairs: &pairs,
            weights: &weights,
            limits: (classes.len() as f64, min_leaf, 0.0),
            missing: Missing {
                n: n_m,
                n_left: if missing_left { n_m } else { 0 },
                w_left: if missing_left { n_m as f64 } else { 0.0 },
                to_end: !missing_left,
            },
        }
        .run(scan)
    }

    #[test]
    fn nan_scan_sends_missing_rows_to_the_side_they_resemble() {
        // present: 0.1 0.2 (class 0), 0.8 0.9 (class 1); two missing rows of class 1
        let vals = [0.1f32, 0.9, 0.2, 0.8];
        let classes = [0, 1, 0, 1, 1, 1];
        let (right, at_r) = scan_missing(&vals, &classes, false, 1).unwrap();
        let (left, at_l) = scan_missing(&vals, &classes, true, 1).unwrap();
        // with the missing rows right the cut after 0.2 is pure on both sides: gini proxy
        // 2^2/2 + 4^2/4 = 6, the most a 6-row node can reach
        assert_eq!((right, at_r), (6.0, 1));
        assert!(left < right, "missing rows on the left mix the classes");
        assert_eq!(at_l, 1);
        // mirrored classes: the missing rows belong left
        let classes = [1, 0, 1, 0, 1, 1];
        let (right, _) = scan_missing(&vals, &classes, false, 1).unwrap();
        let (left, at) = scan_missing(&vals, &classes, true, 1).unwrap();
        assert_eq!((left, at), (6.0, 1));
        assert!(right < left);
    }

    #[test]
    fn nan_scan_offers_present_against_missing_and_honours_min_samples_leaf() {
        // every present value equal (class 0), the missing rows class 1: the only cut is
        // after the last present value, which the scan with missing rows right offers
        let vals = [3.0f32; 4];
        let classes = [0, 0, 0, 0, 1, 1];
        assert_eq!(scan_missing(&vals, &classes, false, 1), Some((6.0, 3)));
        assert_eq!(scan_missing(&vals, &classes, true, 1), None);
        // min_samples_leaf counts the missing rows on their side: 2 missing rows < 3
        assert_eq!(scan_missing(&vals, &classes, false, 3), None);
        // with missing rows on the left, the left child starts with them: at
        // min_samples_leaf = 3 the first cut (1 present row + 2 missing) is admissible and
        // the pure one (2 rows right) is not
        let vals = [1.0f32, 2.0, 3.0, 4.0];
        let classes = [1, 1, 0, 0, 1, 1];
        assert_eq!(scan_missing(&vals, &classes, true, 2), Some((6.0, 1)));
        let (proxy, at) = scan_missing(&vals, &classes, true, 3).unwrap();
        assert_eq!(at, 0);
        assert!((proxy - (3.0 + 5.0 / 3.0)).abs() < 1e-12);
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
        let crit = Gini { classes: &classes };
        let mut total = vec![0.0; 2];
        let w_node: f64 = weights.iter().sum();
        for (s, &w) in weights.iter().enumerate() {
            crit.add_sample(&mut total, s, w);
        }
        let mut bins = Bins::default();
        assert!(bins.assign(&vals, 0.0, 4.0, exact_bins(0.0, 4.0, 40), true));
        bins.fill(&present, &weights, 2, |s| crit.bin_slot(s));
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
                        weights: &weights,
                        limits: (w_node, 1, 0.0),
                        missing: missing_of(()),
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
