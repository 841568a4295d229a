//! The split search of one node ([`SplitSearch`]): sample the candidate projections,
//! project the node's rows on each, and find the best threshold — by sorting and scanning
//! every position ([`super::scan`]), by scanning a histogram's bin boundaries
//! ([`super::bins`]: approximate bins on large nodes when asked for; exact bins when every
//! feature of the projection is discrete), or at one random threshold. The scans are
//! generic over the criterion's running statistics ([`ScanStats`]) and the walk
//! ([`ScanDriver`]), so each pair is one static loop. The search reads the data, the
//! configuration, the sampler and the criterion, and writes only the worker's scratch
//! ([`Workspace`]); what it finds is returned ([`Best`]), and the builder grows the tree
//! from it.
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

use super::bins::{self, Binned, Bins};
use super::criterion::{Criterion, RowSplit, ScanStats};
use super::monotonic::{admissible, direction, Bounds, Monotone};
use super::pooled_batch::MAX_VALUES;
use super::scan::{
    finite_range, midpoint, sort_pairs, ByRow, Missing, Packed, Packing, PairRows, ScanDriver,
    Sorted,
};
use super::scan_lanes::class_scan;
use super::workspace::Workspace;
use crate::data::FeatureMatrix;
use crate::params::{Splitter, TreeConfig};
use crate::prefetch::AHEAD;
use crate::probe::{self, Switch};
use crate::projection::{ProjRef, ProjectionBuf, Sampler};
use crate::rng::Rng;
use crate::tree::RowWeights;

/// On sparse X, how many candidates ahead of the one scored the split search asks for the
/// bounds of their columns (`indptr`, scattered over X's columns: a cache miss each), and
/// for the columns' first entries (read from those bounds). At deep nodes a candidate's
/// scan is short, so the one that follows gives a miss too little time.
const BOUNDS_AHEAD: usize = 16;
/// On sparse X, how many candidates ahead the split search asks for their columns' entries.
const COLUMNS_AHEAD: usize = 5;

/// Everything the split search of one tree reads: the configuration, the sampler, the
/// data, the criterion over the targets, and the rows' weights in this tree (bootstrap
/// counts × sample weights).
pub(super) struct SplitSearch<'a, C> {
    pub(super) cfg: &'a TreeConfig,
    pub(super) sampler: &'a Sampler<'a>,
    pub(super) x: &'a FeatureMatrix<'a>,
    pub(super) crit: C,
    pub(super) weights: RowWeights<'a>,
    /// Sparse X whose criterion statistics are exact for these weights: a candidate's rows
    /// projected to zero move as one block ([`super::sparse_split`]).
    pub(super) zeros_as_block: bool,
    /// Whether the sorted scans carry each row's weight and class in its pair
    /// ([`Packing`]), gathered once per node into `ws.packed`.
    pub(super) packing: Option<Packing>,
    /// Whether the criterion's statistics are exact for these weights
    /// ([`Criterion::exact_scan`]), so the sorted scans may take tied values in any order.
    pub(super) any_tie_order: bool,
}

/// The node a split is searched for: its rows `ws.samples[start..end]`, their criterion
/// statistics and weight, the minimum weight of a leaf, and its bounds under monotonic
/// constraints.
#[derive(Clone, Copy)]
pub(super) struct Node<'a> {
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) stats: &'a [f64],
    pub(super) w: f64,
    pub(super) min_weight_leaf: f64,
    pub(super) bounds: Bounds,
}

impl Node<'_> {
    /// Rows.
    pub(super) fn n(&self) -> usize {
        self.end - self.start
    }
}

/// The best split found at a node: its proxy, threshold and candidate.
pub(super) struct Best {
    pub(super) proxy: f64,
    pub(super) threshold: f32,
    /// The candidate's index in `ws.cand`.
    pub(super) cand: usize,
    /// Whether the rows whose projection is missing go left; `None` when the node has no
    /// such row under this candidate.
    pub(super) missing: Option<bool>,
    /// The split's monotonic direction ([`super::monotonic`]); 0 without constraints.
    pub(super) dir: i8,
}

/// A split found for one candidate: (proxy, threshold, side of the missing rows).
pub(super) type Found = Option<(f64, f32, Option<bool>)>;

impl<C: Criterion> SplitSearch<'_, C> {
    /// The best split of `node` over its candidate projections, which stay in `ws.cand`
    /// (the winner is `ws.cand`'s [`Best::cand`]); `None` when no candidate can split.
    pub(super) fn find_split(
        &self,
        ws: &mut Workspace,
        rng: &mut Rng,
        node: Node<'_>,
    ) -> Option<Best> {
        if self.zeros_as_block {
            self.enter_sparse_node(ws, node);
        }
        ws.packed_for = None;
        ws.cat.enter_node();
        // the candidates leave the workspace while its buffers are borrowed by the search
        let mut cand = std::mem::take(&mut ws.cand);
        let best = self.search_candidates(ws, &mut cand, rng, node);
        ws.cand = cand;
        if self.zeros_as_block {
            self.leave_sparse_node(ws, node);
        }
        best
    }

    /// [`Self::find_split`] over the candidates drawn into `cand`.
    fn search_candidates(
        &self,
        ws: &mut Workspace,
        cand: &mut ProjectionBuf,
        rng: &mut Rng,
        node: Node<'_>,
    ) -> Option<Best> {
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
                .sample(rng, self.cfg.n_candidates, &mut ws.scratch, cand);
            let kinds = &self.cfg.categorical;
            if !(kinds.is_empty() || self.cfg.categorical_in_projections) {
                // categorical columns split on their own only
                cand.retain_terms(|j| kinds[j as usize] == 0);
            }
            ws.pooled.reset();
            ws.term_batch.reset();
            match self.repeats_rule() {
                Some(mirrors) => ws.repeats.find(cand, mirrors),
                None => ws.repeats.clear(),
            }
            if let Some(m) = self.screening(node) {
                if let Some(best) = self.screened_search(ws, cand, rng, node, m) {
                    return Some(best);
                }
                // no candidate the screen ranked splits the whole node: score them all
            }
            let (best, varied) = self.score_all(ws, cand, rng, node)?;
            if best.is_some() || varied {
                return best; // a split, or candidates that vary but cannot split: no redraw
            }
        }
        None
    }

    /// Scores every candidate of `cand` on `node`: the best split, and whether some
    /// candidate varies on the node; `None` when the fit is cancelled.
    fn score_all(
        &self,
        ws: &mut Workspace,
        cand: &mut ProjectionBuf,
        rng: &mut Rng,
        node: Node<'_>,
    ) -> Option<(Option<Best>, bool)> {
        let mut best: Option<Best> = None;
        let mut varied = false;
        // sparse X: while a candidate is scored, the columns of the one COLUMNS_AHEAD after
        // it are asked for, their bounds having been asked for BOUNDS_AHEAD before
        let ahead = self.x.is_sparse() && self.sampler.descriptors().is_none();
        if ahead {
            for c in 0..cand.len().min(BOUNDS_AHEAD) {
                self.x.prefetch_column_bounds(cand.entries(c));
            }
            for c in 0..cand.len().min(COLUMNS_AHEAD) {
                self.x.prefetch_columns(cand.entries(c));
            }
        }
        if self.scores_in_parallel(node, cand.len()) {
            return self.score_all_parallel(ws, cand, node); // a large node
        }
        self.batch_terms(ws, cand, node);
        for c in 0..cand.len() {
            if crate::cancel::requested() {
                return None; // cancel: no split, so the node stays a leaf
            }
            if ahead {
                if c + BOUNDS_AHEAD < cand.len() {
                    self.x
                        .prefetch_column_bounds(cand.entries(c + BOUNDS_AHEAD));
                }
                if c + COLUMNS_AHEAD < cand.len() {
                    self.x.prefetch_columns(cand.entries(c + COLUMNS_AHEAD));
                }
            }
            if ws.repeats.original(c).is_some() {
                continue; // scores what its original scored (which set `varied` if it varies)
            }
            let to_beat = best.as_ref().map(|b| b.proxy);
            ws.cat.start_candidate();
            let Some(found) = self.score_candidate(ws, cand, c, rng, node, to_beat) else {
                continue; // constant on the node, or refused by the constraints
            };
            varied = true;
            if found.is_some() {
                best = found;
                ws.cat.keep_as_best(); // its level maps, if it has categorical terms
            }
        }
        ws.term_batch.reset();
        Some((best, varied))
    }

    /// Projects every candidate of `cand` that the search will score on `node` (all but
    /// the repeats) in one batch ([`super::term_batch::TermBatch`]), where the candidates
    /// are explicit projections on dense X; the loop that scores them resets it.
    pub(super) fn batch_terms(&self, ws: &mut Workspace, cand: &mut ProjectionBuf, node: Node<'_>) {
        if self.x.is_sparse()
            || !self.sampler.shares_features(self.cfg.n_candidates)
            || !self.cfg.categorical.is_empty()
        {
            return; // no batch to share (axis-aligned candidates, compact descriptors)
        }
        let at = node.start..node.end;
        let repeats = &ws.repeats;
        ws.term_batch.compute(
            self.x,
            cand,
            |c| repeats.original(c).is_some(),
            (at.clone(), &ws.samples[at]),
        );
    }

    /// Candidate `c` of `cand` at `node`: `None` when it cannot split the node (constant
    /// on it, missing on every row, or refused by the monotonic constraints); otherwise its
    /// best admissible split, if one beats `to_beat`.
    pub(super) fn score_candidate(
        &self,
        ws: &mut Workspace,
        cand: &mut ProjectionBuf,
        c: usize,
        rng: &mut Rng,
        node: Node<'_>,
        to_beat: Option<f64>,
    ) -> Option<Option<Best>> {
        self.x.keep_sums_finite(cand, c); // overflow: huge data, halved weights
        self.score_kept(ws, cand, c, rng, node, to_beat)
    }

    /// [`Self::score_candidate`] of a candidate whose weights were kept finite already.
    pub(super) fn score_kept(
        &self,
        ws: &mut Workspace,
        cand: &ProjectionBuf,
        c: usize,
        rng: &mut Rng,
        node: Node<'_>,
        to_beat: Option<f64>,
    ) -> Option<Option<Best>> {
        let proj = cand.get(c, self.sampler.descriptors());
        // under monotonic constraints: the order the split must keep, and the projections
        // that cannot keep one are skipped
        let cst = &self.cfg.monotonic_cst[..];
        let mono = if cst.is_empty() {
            None
        } else {
            Some((direction(cst, proj)?, node.bounds))
        };
        if let Some(family) = self.sampler.descriptors() {
            // dense X: this and the next pooled candidates at once, sharing sums
            let at = node.start..node.end;
            if !self.x.is_sparse() && !ws.pooled.covers(c, &at) && proj.pooling().is_some() {
                let rows = (at.clone(), &ws.samples[at]);
                let missing = self.x.has_missing();
                ws.pooled
                    .compute(self.x, (cand, family), c, rows, missing, MAX_VALUES);
            }
        }
        let found = self.candidate_split(ws, rng, node, (c, proj), mono, to_beat)?;
        Some(found.and_then(|(proxy, threshold, missing)| {
            (admissible(proxy) && to_beat.is_none_or(|b| proxy > b)).then_some(Best {
                proxy,
                threshold,
                cand: c,
                missing,
                dir: mono.map_or(0, |(dir, _)| dir),
            })
        }))
    }

    /// Whether the search skips candidates that repeat an earlier one ([`Repeats`]), and
    /// whether mirrors count as repeats: `None` where a candidate's score depends on more
    /// than its projected values (the random splitter and trees without targets draw a
    /// random number a candidate; compact descriptors have no explicit weights). Mirrors
    /// score their original's proxy where the scan's statistics are exact and the search
    /// offers every partition of the sorted values (the best splitter, no monotonic
    /// constraints, no missing values, no zero block of sparse X).
    fn repeats_rule(&self) -> Option<bool> {
        // (tests grow trees without skipping repeats, to compare)
        if !probe::on(Switch::SkipRepeats) {
            return None;
        }
        let applies = !matches!(self.cfg.splitter, Splitter::Random)
            && self.crit.value_rule().is_none()
            && self.sampler.descriptors().is_none();
        let mirrors = self.any_tie_order
            && matches!(self.cfg.splitter, Splitter::Best)
            && self.cfg.monotonic_cst.is_empty()
            && !self.x.has_missing()
            && !self.zeros_as_block;
        applies.then_some(mirrors)
    }

    /// The split of `node` under candidate `c` of `ws.cand`, `proj` (its values from the
    /// node's pooled batch when computed there; with its monotonic direction and the
    /// node's bounds, under constraints): `None` when the candidate is constant on the
    /// node (or missing on every row), so it cannot split; `Some(None)` when it varies but
    /// no split is admissible or beats `to_beat` (the best proxy so far, which some paths
    /// use to skip computing a threshold).
    fn candidate_split(
        &self,
        ws: &mut Workspace,
        rng: &mut Rng,
        node: Node<'_>,
        (c, proj): (usize, ProjRef<'_>),
        mono: Option<(i8, Bounds)>,
        to_beat: Option<f64>,
    ) -> Option<Found> {
        let (start, end, n) = (node.start, node.end, node.n());
        if self.sparse_applies(n, proj) {
            // sparse X: the nonzeros only, the same split
            let found = self.sparse_split(ws, node, proj, mono)?;
            return Some(found.map(|(proxy, threshold)| (proxy, threshold, None)));
        }
        if self.project_categorical(ws, rng, node, proj) {
            // categorical terms: read through the node's level maps (`super::categorical`)
        } else if let Some(vals) = ws
            .pooled
            .values(c, &(start..end))
            .or_else(|| ws.term_batch.values(c, &(start..end)))
        {
            ws.vals.clear();
            ws.vals.extend_from_slice(vals);
        } else {
            ws.project_node(self.x, proj, start, end);
        }
        // a tree without targets scores the values themselves (`value_split`)
        if let Some(rule) = self.crit.value_rule() {
            return self.value_split(ws, rng, node, rule);
        }
        // NaN only where X has some: one pass over the values, else none at all
        let n_missing = if self.x.has_missing() {
            ws.vals.iter().filter(|v| v.is_nan()).count()
        } else {
            0
        };
        if n_missing > 0 {
            if n_missing == n {
                return None; // missing on every row: nothing to split
            }
            // present rows against missing ones, at least
            return Some(match self.cfg.splitter {
                Splitter::Random => self.random_split_missing(ws, rng, node),
                _ => {
                    let discrete = self.all_discrete(proj);
                    self.split_missing(ws, node, discrete, to_beat)
                }
            });
        }
        let found = match self.cfg.splitter {
            Splitter::Best | Splitter::Histogram { .. } => {
                // a constant projection cannot split: skip it before paying for a sort
                // (common with sparse or binary data, e.g. image backgrounds)
                let (lo, hi) = finite_range(&ws.vals)?;
                // one categorical term: a bin per level, in the order of their values
                // (`super::categorical`), instead of a sort of the rows
                let from_levels = if ws.cat.level_bins {
                    self.level_split(ws, node, to_beat, mono)
                } else {
                    None
                };
                let hist = || self.histogram_kind(|| self.all_discrete(proj), lo, hi, n);
                let from_hist = from_levels.or_else(|| {
                    hist().and_then(|(n_bins, exact)| {
                        self.hist_split(ws, node, (lo, hi, n_bins, exact), to_beat, mono)
                    })
                });
                match from_hist {
                    Some(found) => found,
                    None => self.sorted_split(ws, node, mono),
                }
            }
            Splitter::Random => {
                let (lo, hi) = present_range(&ws.vals);
                if !(lo.is_finite() && hi.is_finite()) || lo == hi {
                    return None;
                }
                self.random_split(ws, node, random_threshold(rng, lo, hi), mono)
            }
        };
        Some(found.map(|(proxy, threshold)| (proxy, threshold, None)))
    }

    /// The node's scan limits: its weight, `min_samples_leaf` and the minimum leaf weight.
    pub(super) fn limits(&self, node: Node<'_>) -> (f64, usize, f64) {
        (node.w, self.cfg.min_samples_leaf, node.min_weight_leaf)
    }

    /// Runs `driver` over the split statistics of this tree's criterion, starting from all
    /// rows on the right but `on_left` (missing rows sent left): (proxy, position) of the
    /// best split it finds. Under monotonic constraints (`mono` = the split's direction and
    /// the node's bounds), the positions they forbid score `-inf`.
    pub(super) fn scan_with(
        &self,
        stats: &[f64],
        (left, right): (&mut [f64], &mut [f64]),
        on_left: &[u32],
        mono: Option<(i8, Bounds)>,
        driver: impl ScanDriver,
    ) -> Option<(f64, usize)> {
        let mut inner = self.crit.scan(stats, left, right);
        for &s in on_left {
            inner.move_left(s as usize, self.weights[s as usize]);
        }
        match mono {
            None => driver.run(inner),
            Some((dir, bounds)) => driver.run(Monotone { inner, dir, bounds }),
        }
    }

    /// The sorted scan of the node's projected values (`ws.vals`, none missing):
    /// (proxy, threshold) of its best split.
    fn sorted_split(
        &self,
        ws: &mut Workspace,
        node: Node<'_>,
        mono: Option<(i8, Bounds)>,
    ) -> Option<(f64, f32)> {
        let rows = match self.packing {
            Some(packing) => {
                self.pack_node(ws, node, packing);
                &ws.packed[..]
            }
            None => &ws.samples[node.start..node.end],
        };
        ws.pairs.clear();
        ws.pairs
            .extend(ws.vals.iter().copied().zip(rows.iter().copied()));
        sort_pairs(&mut ws.pairs, &mut ws.sort_buf, self.any_tie_order);
        let found = match self.packing {
            Some(packing) => {
                // Gini over a few classes, exact statistics: four positions at a time where
                // the processor can
                let lanes =
                    self.any_tie_order && mono.is_none() && self.crit.squares_class_weights();
                let limits = self.limits(node);
                match lanes.then(|| class_scan(&ws.pairs, packing, node.stats, limits)) {
                    Some(Some(found)) => found,
                    _ => self.scan_sorted(ws, node, mono, Packed(packing)),
                }
            }
            None => self.scan_sorted(ws, node, mono, ByRow(self.weights)),
        };
        let pairs = &ws.pairs;
        found.map(|(proxy, i)| (proxy, midpoint(pairs[i].0, pairs[i + 1].0)))
    }

    /// The sorted scan of `ws.pairs` (the node's sorted values, tagged as `rows` reads
    /// them): (proxy, position) of its best split.
    fn scan_sorted(
        &self,
        ws: &mut Workspace,
        node: Node<'_>,
        mono: Option<(i8, Bounds)>,
        rows: impl PairRows,
    ) -> Option<(f64, usize)> {
        let Workspace {
            pairs, left, right, ..
        } = ws;
        let driver = Sorted {
            pairs,
            rows,
            limits: self.limits(node),
            missing: Missing::NONE,
            stay_right: &[],
        };
        self.scan_with(node.stats, (left, right), &[], mono, driver)
    }

    /// Fills `bins` (assigned to the values of `samples`) from the rows' weights and
    /// targets.
    fn fill_by_row(&self, bins: &mut Bins, per_bin: usize, samples: &[u32]) {
        let (crit, weights) = (self.crit, self.weights);
        bins.fill(
            per_bin,
            |k| {
                let s = samples[k] as usize;
                let (at, factor) = crit.bin_slot(s);
                (at, factor, weights[s])
            },
            // a large node's rows are far apart in the weights and targets
            |k| {
                let s = samples[k] as usize;
                weights.prefetch(s);
                crit.prefetch(s);
            },
        );
    }

    /// `ws.packed`: the tags ([`Packing`]) of the node's rows in the order of its samples;
    /// gathered once per node (and again when its rows move).
    fn pack_node(&self, ws: &mut Workspace, node: Node<'_>, packing: Packing) {
        if ws.packed_for == Some((node.start, node.end)) {
            return;
        }
        let rows = &ws.samples[node.start..node.end];
        ws.packed.clear();
        ws.packed.extend(rows.iter().enumerate().map(|(k, &s)| {
            // the rows are far apart in the weights and targets on large nodes
            if let Some(&ahead) = rows.get(k + AHEAD) {
                self.weights.prefetch(ahead as usize);
                self.crit.prefetch(ahead as usize);
            }
            let (slot, _) = self.crit.bin_slot(s as usize);
            packing.pack(slot, self.weights[s as usize])
        }));
        ws.packed_for = Some((node.start, node.end));
    }

    /// Which histogram, if any, scans `n` values on `[lo, hi]` ([`bins::kind`]); criteria
    /// whose statistics do not fit a bin always sort.
    fn histogram_kind(
        &self,
        discrete: impl FnOnce() -> bool,
        lo: f32,
        hi: f32,
        n: usize,
    ) -> Option<(usize, bool)> {
        if !self.crit.binned() {
            return None;
        }
        bins::kind(self.cfg.splitter, discrete, lo, hi, n)
    }

    /// Moves the missing (NaN) rows of the node's projected values out: afterwards
    /// `ws.vals` holds the present values in row order, `ws.present` their samples and
    /// `ws.missing` the samples of the missing rows. Returns the missing rows' weight.
    pub(super) fn separate_missing(&self, ws: &mut Workspace, node: Node<'_>) -> f64 {
        ws.present.clear();
        ws.missing.clear();
        let mut w_missing = 0.0;
        let mut kept = 0;
        for k in 0..node.n() {
            let (v, s) = (ws.vals[k], ws.samples[node.start + k]);
            if v.is_nan() {
                ws.missing.push(s);
                w_missing += self.weights[s as usize];
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
    fn split_missing(
        &self,
        ws: &mut Workspace,
        node: Node<'_>,
        discrete: bool,
        to_beat: Option<f64>,
    ) -> Found {
        let w_missing = self.separate_missing(ws, node);
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
            self.fill_by_row(&mut ws.bins, per_bin, &ws.present);
        } else {
            ws.pairs.clear();
            ws.pairs
                .extend(ws.vals.iter().copied().zip(ws.present.iter().copied()));
            sort_pairs(&mut ws.pairs, &mut ws.sort_buf, false);
        }
        let limits = self.limits(node);
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
            // (monotonic constraints refuse data with NaN)
            let found = if binned {
                let driver = Binned {
                    bins,
                    per_bin,
                    n: m + n_missing,
                    limits,
                    missing,
                };
                self.scan_with(node.stats, (left, right), on_left, None, driver)
            } else {
                let driver = Sorted {
                    pairs,
                    rows: ByRow(self.weights),
                    limits,
                    missing,
                    stay_right: if side == 0 { missing_rows } else { &[] },
                };
                self.scan_with(node.stats, (left, right), on_left, None, driver)
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

    /// Whether a split with `n_l` of the node's rows and weight `w_l` on the left honours
    /// `min_samples_leaf` and the minimum leaf weight, with rows on both sides.
    fn admits(&self, node: Node<'_>, n_l: usize, w_l: f64) -> bool {
        let (n, min_leaf, w_r) = (node.n(), self.cfg.min_samples_leaf, node.w - w_l);
        n_l >= min_leaf
            && n - n_l >= min_leaf
            && w_l >= node.min_weight_leaf
            && w_r >= node.min_weight_leaf
            && w_l > 0.0
            && w_r > 0.0
    }

    /// The random splitter on a candidate missing on some (not all) rows: one random
    /// threshold over the present values (none drawn when they are all equal: every present
    /// row goes left, threshold +inf), scored with the missing rows on the right and on the
    /// left; the better of the two, ties to the right.
    fn random_split_missing(&self, ws: &mut Workspace, rng: &mut Rng, node: Node<'_>) -> Found {
        let (lo, hi) = present_range(&ws.vals);
        let t = if lo < hi {
            random_threshold(rng, lo, hi)
        } else {
            f32::INFINITY
        };
        let stat_len = ws.left.len();
        ws.left.fill(0.0);
        ws.miss_stats.clear();
        ws.miss_stats.resize(stat_len, 0.0);
        let (mut w_l, mut n_l, mut w_m, mut n_m) = (0.0f64, 0usize, 0.0f64, 0usize);
        let rows = &ws.samples[node.start..node.end];
        for (k, &s) in rows.iter().enumerate() {
            let (v, w) = (ws.vals[k], self.weights[s as usize]);
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
        let split = |missing_left| RowSplit {
            rows,
            vals: &ws.vals,
            threshold: t,
            missing_left,
            weights: self.weights,
        };
        let mut best: Option<(f64, bool)> = None;
        if self.admits(node, n_l, w_l) {
            let w = (w_l, node.w - w_l);
            let proxy = self
                .crit
                .split_proxy_at(&ws.left, node.stats, w, split(false));
            best = Some((proxy, false));
        }
        // the missing rows' statistics become the left child's with them
        for (m, l) in ws.miss_stats.iter_mut().zip(&ws.left) {
            *m += l;
        }
        let (n_l, w_l) = (n_l + n_m, w_l + w_m);
        if self.admits(node, n_l, w_l) {
            let w = (w_l, node.w - w_l);
            let proxy = self
                .crit
                .split_proxy_at(&ws.miss_stats, node.stats, w, split(true));
            if best.is_none_or(|b| proxy > b.0) {
                best = Some((proxy, true));
            }
        }
        best.map(|(proxy, left)| (proxy, t, Some(left)))
    }

    /// Whether every feature of `proj` looks discrete (see [`FeatureMatrix::is_discrete`]).
    fn all_discrete(&self, proj: ProjRef<'_>) -> bool {
        if !self.x.any_discrete() {
            return false; // (a pooled candidate has thousands of terms)
        }
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
    fn hist_split(
        &self,
        ws: &mut Workspace,
        node: Node<'_>,
        (lo, hi, n_bins, exact): (f32, f32, usize, bool),
        to_beat: Option<f64>,
        mono: Option<(i8, Bounds)>,
    ) -> Option<Option<(f64, f32)>> {
        if !ws.bins.assign(&ws.vals, lo, hi, n_bins, exact) {
            return None;
        }
        Some(self.binned_split(ws, node, exact, to_beat, mono))
    }

    /// The scan of the node's rows binned in `ws.bins` (exact bins: every bin one value):
    /// (proxy, threshold) of its best admissible split, when it beats `to_beat`.
    pub(super) fn binned_split(
        &self,
        ws: &mut Workspace,
        node: Node<'_>,
        exact: bool,
        to_beat: Option<f64>,
        mono: Option<(i8, Bounds)>,
    ) -> Option<(f64, f32)> {
        let per_bin = self.crit.bin_width(self.cfg.n_outputs);
        match self.packing {
            Some(packing) => {
                self.pack_node(ws, node, packing);
                let packed = &ws.packed;
                ws.bins.fill(
                    per_bin,
                    |k| {
                        let (slot, w) = packing.unpack(packed[k]);
                        (slot, 1.0, w)
                    },
                    |_| {},
                );
            }
            None => {
                let samples = &ws.samples[node.start..node.end];
                self.fill_by_row(&mut ws.bins, per_bin, samples);
            }
        }
        let driver = Binned {
            bins: &ws.bins,
            per_bin,
            n: node.n(),
            limits: self.limits(node),
            missing: Missing::NONE,
        };
        let found = self.scan_with(node.stats, (&mut ws.left, &mut ws.right), &[], mono, driver);
        // the threshold takes a pass over the rows (approximate bins): only for a new best
        found
            .filter(|&(proxy, _)| to_beat.is_none_or(|b| proxy > b))
            .map(|(proxy, b)| (proxy, ws.bins.threshold(&ws.vals, b, exact)))
    }

    /// The random splitter's split of the node's rows at threshold `t`: (proxy, t) when
    /// admissible.
    fn random_split(
        &self,
        ws: &mut Workspace,
        node: Node<'_>,
        t: f32,
        mono: Option<(i8, Bounds)>,
    ) -> Option<(f64, f32)> {
        ws.left.fill(0.0);
        let (mut w_l, mut n_l) = (0.0f64, 0usize);
        let rows = &ws.samples[node.start..node.end];
        for (k, &s) in rows.iter().enumerate() {
            if ws.vals[k] <= t {
                let w = self.weights[s as usize];
                n_l += 1;
                w_l += w;
                self.crit.add_sample(&mut ws.left, s as usize, w);
            }
        }
        if !self.admits(node, n_l, w_l) {
            return None;
        }
        let w_r = node.w - w_l;
        if let Some((dir, bounds)) = mono {
            let (v_l, v_r) = self.crit.split_values(&ws.left, node.stats, w_l, w_r);
            if !bounds.admits(dir, v_l, v_r) {
                return None;
            }
        }
        let split = RowSplit {
            rows,
            vals: &ws.vals,
            threshold: t,
            missing_left: false,
            weights: self.weights,
        };
        let proxy = self
            .crit
            .split_proxy_at(&ws.left, node.stats, (w_l, w_r), split);
        Some((proxy, t))
    }
}

/// The smallest and largest of the values that are not NaN (`f32::min` and `max` skip
/// NaN); (+inf, -inf) when there are none.
pub(super) fn present_range(vals: &[f32]) -> (f32, f32) {
    vals.iter()
        .fold((f32::INFINITY, f32::NEG_INFINITY), |(a, b), &v| {
            (a.min(v), b.max(v))
        })
}

/// The random splitter's threshold: uniform in `[lo, hi)` (`lo` when rounding reaches `hi`).
pub(super) fn random_threshold(rng: &mut Rng, lo: f32, hi: f32) -> f32 {
    let t = lo + (rng.unit() as f32) * (hi - lo);
    if t >= hi || t < lo {
        lo
    } else {
        t
    }
}

/// At most this many extra draws of candidates at a node whose candidates were all
/// constant (each costs one pass over the node's rows per candidate, only at such nodes).
const MAX_REDRAWS: usize = 64;

#[cfg(test)]
mod tests {
    use crate::data::{FeatureMatrix, Targets};
    use crate::params::{Criterion, ForestParams, MaxFeatures, Splitter, Task};
    use crate::projection::{AxisAligned, DataStats, Projection};
    use crate::rng::Rng;
    use crate::tree::{Grower, Tree, Workspace};
    use ndarray::Array2;

    /// One axis-aligned tree grown on every row of `x` with unit weights.
    fn grow(params: &ForestParams, x: &Array2<f32>, y: &[f64]) -> Tree {
        let (n, p) = x.dim();
        let cfg = params.check(n, p).unwrap();
        let fm = FeatureMatrix::from_view(x.view()).unwrap();
        let targets = Targets::for_task(y, &params.task).unwrap();
        let projection = Projection::new(AxisAligned);
        let stats = DataStats::of_width(p);
        let sampler = projection.sampler(&stats);
        let grower = Grower {
            cfg: &cfg,
            sampler: &sampler,
            x: &fm,
            y: &targets,
        };
        let mut rng = Rng::from_seed(params.seed);
        grower.grow(
            crate::tree::RowWeights::Values(&vec![1.0; n]),
            None,
            |t| t,
            &mut rng,
            &mut Workspace::default(),
        )
    }

    fn absolute_error(splitter: Splitter, max_depth: Option<usize>) -> ForestParams {
        ForestParams {
            criterion: Criterion::AbsoluteError,
            splitter,
            max_depth,
            max_features: MaxFeatures::All,
            ..ForestParams::regression()
        }
    }

    /// Weighted absolute deviation of `y` around its best constant (a median).
    fn deviation(y: &[f64]) -> f64 {
        y.iter()
            .map(|&m| y.iter().map(|v| (v - m).abs()).sum::<f64>())
            .fold(
                0.0f64.max(if y.is_empty() { 0.0 } else { f64::INFINITY }),
                f64::min,
            )
    }

    #[test]
    fn absolute_error_sends_missing_rows_to_the_side_they_resemble() {
        // x = row for rows 0..30 (y 0 below 15, 10 above), missing for rows 30..40
        let x = Array2::from_shape_fn((40, 1), |(i, _)| if i < 30 { i as f32 } else { f32::NAN });
        for (missing_y, goes_left) in [(10.0, false), (0.0, true)] {
            let y: Vec<f64> = (0..40)
                .map(|i| match i {
                    0..15 => 0.0 + (i % 3) as f64 * 0.1,
                    15..30 => 10.0 + (i % 2) as f64 * 0.1,
                    _ => missing_y,
                })
                .collect();
            for splitter in [Splitter::Best, Splitter::Random] {
                let tree = grow(&absolute_error(splitter, Some(1)), &x, &y);
                assert_eq!(tree.n_nodes(), 3, "{splitter:?}");
                assert_eq!(tree.missing_goes_left(0), goes_left, "{splitter:?}");
                if splitter == Splitter::Best {
                    assert!((14.0..15.0).contains(&tree.threshold[0]));
                    // a missing row lands with the rows whose targets it shares
                    let leaf = tree.leaf(None, &[f32::NAN]);
                    assert!((tree.leaf_value(leaf)[0] - missing_y).abs() < 0.2);
                }
                // whatever the threshold, the missing rows took the better side
                let t = tree.threshold[0];
                let (mut l, mut r, mut m) = (vec![], vec![], vec![]);
                for i in 0..40 {
                    let v = x[(i, 0)];
                    let side = if v.is_nan() {
                        &mut m
                    } else if v <= t {
                        &mut l
                    } else {
                        &mut r
                    };
                    side.push(y[i]);
                }
                let with = |a: &[f64], b: &[f64]| [a, b].concat();
                let (left, right) = (
                    deviation(&with(&l, &m)) + deviation(&r),
                    deviation(&l) + deviation(&with(&r, &m)),
                );
                let chosen = if goes_left { left } else { right };
                assert!(chosen <= left.min(right) + 1e-9, "{splitter:?}");
            }
        }
    }

    #[test]
    fn absolute_error_with_missing_values_grows_the_same_tree_sorted_or_histogram() {
        // a discrete column (the exact histogram path of other criteria), a continuous one
        // and a binary one, each with holes; two outputs as well as one
        let (n, p) = (300, 3);
        let x = Array2::from_shape_fn((n, p), |(i, j)| {
            if (i * 7 + j * 3) % 11 == 0 {
                return f32::NAN;
            }
            match j {
                0 => (i % 5) as f32,
                1 => ((i * 37) % 101) as f32 / 7.0,
                _ => (i % 2) as f32,
            }
        });
        let y: Vec<f64> = (0..n)
            .map(|i| (i % 5) as f64 + ((i * 37) % 101) as f64 / 50.0)
            .collect();
        let y2: Vec<f64> = y.iter().flat_map(|&v| [v, (v * 3.0).sin()]).collect();
        for (task, y) in [
            (Task::Regression, &y),
            (Task::MultiRegression { n_outputs: 2 }, &y2),
        ] {
            let params = |splitter| ForestParams {
                task: task.clone(),
                min_samples_leaf: crate::params::SampleCount::Count(3),
                ..absolute_error(splitter, None)
            };
            let sorted = grow(&params(Splitter::Best), &x, y);
            let hist = grow(&params(Splitter::Histogram { max_bins: 4 }), &x, y);
            assert!(sorted.n_nodes() > 20 && !sorted.missing_flip.is_empty());
            sorted.validate(p, None).unwrap();
            assert_eq!(sorted, hist, "{task:?}");
        }
    }
}
