//! The split search of one node ([`SplitSearch`]): draw the candidate projections (again
//! when all are constant), skip repeats, screen them on a sample of rows where that pays
//! ([`super::screening`]), batch their projections ([`super::term_batch`],
//! [`super::pooled_batch`]), score them in parallel on a large node
//! ([`super::par_candidates`]), and keep the best. Each candidate's split is found by
//! the parts of [`super::parts`], whose one dispatcher picks where its values come from
//! and how they are scanned. The search reads the data, the configuration, the sampler
//! and the criterion, and writes only the worker's scratch ([`Workspace`]); what it finds
//! is returned ([`Best`]), and the builder grows the tree from it.
//!
//! Invariant: every threshold returned lies strictly between the largest projected value
//! sent left and the smallest sent right, so partitioning by `<= threshold` reproduces the
//! split that was scored; of equal proxies the first candidate's split wins.

use super::criterion::{Criterion, ScanStats, ValueRule};
use super::monotonic::{admissible, direction, Bounds, Monotone};
use super::scan::{Packing, ScanDriver};
use super::workspace::Workspace;
use crate::data::FeatureMatrix;
use crate::params::{Splitter, TreeConfig};
use crate::probe::{self, Switch};
use crate::projection::{ProjectionBuf, Sampler};
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
/// counts × sample weights); made, with its per-tree choices, by [`SplitSearch::new`].
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
    /// The scans this tree's candidates take ([`super::parts`]).
    pub(super) scans: Scans,
}

/// The scans a tree's candidates take, fixed once per tree
/// ([`SplitSearch::new`], in [`super::parts`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Scans {
    /// A tree without targets: its rule scores the values.
    ValueRule(ValueRule),
    /// The random splitter: one threshold a candidate.
    Random,
    /// The best and histogram splitters: every position, or every bin boundary.
    Searched,
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
        // axis sampler to see about every feature, so most such nodes do not end as impure
        // leaves. The rounds draw with replacement, so some do (with 3 columns, one of them
        // varying, and one candidate a round, 20%); trying every column after the rounds
        // was measured and dropped: on noisy tables those leaves average more rows, and the
        // forests were less accurate on the whole (benches/results/categorical_10_splits.md).
        let rounds = 1 + self
            .x
            .n_features
            .div_ceil(self.cfg.n_candidates.max(1))
            .min(MAX_REDRAWS);
        for _ in 0..rounds {
            self.sampler
                .sample(rng, self.cfg.n_candidates, &mut ws.scratch, cand);
            let kinds = &self.cfg.categorical;
            if !(kinds.is_empty() || self.cfg.growth.categorical_in_projections) {
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
        let cst = &self.cfg.growth.monotonic_cst[..];
        let mono = if cst.is_empty() {
            None
        } else {
            Some((direction(cst, proj)?, node.bounds))
        };
        let found = self.candidate_split(ws, rng, node, (cand, c, proj), mono, to_beat)?;
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

    /// Whether the search skips candidates that repeat an earlier one ([`super::repeats::Repeats`]), and
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
        let applies = self.scans == Scans::Searched && self.sampler.descriptors().is_none();
        let mirrors = self.any_tie_order
            && matches!(self.cfg.splitter, Splitter::Best)
            && self.cfg.growth.monotonic_cst.is_empty()
            && !self.x.has_missing()
            && !self.zeros_as_block;
        applies.then_some(mirrors)
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
}

/// At most this many extra draws of candidates at a node whose candidates were all
/// constant (each costs one pass over the node's rows per candidate, only at such nodes).
const MAX_REDRAWS: usize = 64;
