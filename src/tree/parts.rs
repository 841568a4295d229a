//! The parts of the split search, and the one dispatcher that picks them
//! ([`SplitSearch::candidate_split`]).
//!
//! A candidate's split at a node is found in two steps, and each step is a choice among
//! parts made here, in the documented order below: the first part that applies takes
//! the candidate. (Within a part, the sparse and missing-value ones choose between a
//! histogram and a sort of their own values by the same rule, `bins::kind`.) Each part lives in a room of its own, whose module doc states
//! its invariant. The shared one: a part finds the split the plain path finds (the
//! node's rows projected one candidate at a time, sorted and scanned at every position
//! between distinct values), bit for bit (the same proxy, threshold and side of the
//! missing rows), unless it is the approximation the user asked for (approximate
//! histogram bins, the random splitter, a rule without targets), whose split its own
//! room defines.
//!
//! Before both steps, a single categorical term at a node of too few rows for two groups
//! of its levels, none missing, is found constant without either
//! ([`SplitSearch::too_few_rows_for_levels`], `categorical`): the plain path finds it
//! constant too.
//!
//! **Values** ([`Values`]): where a candidate's projected values at the node come from.
//! 1. [`Values::Sparse`] (`sparse_split`): sparse X whose criterion statistics are exact
//!    for the tree's weights, a linear candidate and a splitter that scans every
//!    distinct value. The part scores the candidate's nonzeros, its zeros moved as one
//!    block, and finds the split itself; no later step runs.
//! 2. [`Values::Levels`] (`categorical`): a candidate with categorical terms, read
//!    through level maps fitted to the node's rows. A single term with no missing row,
//!    under the searched scans, with finite level values and at most 65,536 of them, has
//!    its rows binned by level here and no values written ([`Read::LevelBins`]): only
//!    [`Scan::LevelBins`] can follow, and it reads the bins.
//! 3. [`Values::Pooled`] (`pooled_batch`): a pooled candidate on dense X, computed with
//!    the next pooled candidates of the node, sharing their pieces' sums.
//! 4. [`Values::TermBatch`] (`term_batch`): the node's explicit candidates, projected
//!    together before the search where they share features.
//! 5. [`Values::Projected`] (`Workspace::project_node`): the node's rows projected on
//!    this candidate alone.
//!
//! **Scan** ([`Scan`]): how the values are scanned. The tree fixes the family once
//! ([`Scans`]: a rule without targets, the random splitter, or the searched scans); the
//! candidate's values choose within it, in this order:
//! 1. [`Scan::ValueRule`] (`value_split`): trees without targets.
//! 2. [`Scan::RandomMissing`], [`Scan::Random`] (`random_split`): the random splitter's
//!    one threshold, with and without missing rows.
//! 3. [`Scan::Missing`] (`missing_split`): values missing on some rows: the present ones
//!    scanned (sorted or binned) with the missing rows on either side.
//! 4. [`Scan::LevelBins`] (`categorical`): one categorical term, a bin per level; it
//!    declines a term of one level or of more levels than its bins hold.
//! 5. [`Scan::Histogram`] (`hist_split`): approximate bins on large nodes when asked for,
//!    or exact bins when every feature of the candidate is discrete; exact bins decline
//!    when a bin would hold two values.
//! 6. [`Scan::Sorted`] (`sorted_split`, `scan_lanes`): sort and scan; Gini over a few
//!    classes with whole weights four positions at a time.
//!
//! A part that declines hands the candidate to the next that applies (levels to the
//! histogram or the sort, the histogram to the sort). A candidate whose values are
//! missing on every row, or (for the random and searched scans without missing rows)
//! constant, is settled here, before any scan; the other parts say themselves when
//! their values cannot split.
//!
//! The choices that hold for a whole tree are made once, when its search is made
//! ([`SplitSearch::new`]): the sparse zero block, the scan family, the packed row tags
//! of the sorted and binned scans, and whether tied values may sort in any order.
//!
//! Adding a part (another kind of column, a scan on an accelerator): a variant of
//! [`Values`] or [`Scan`], its room, and its place in the order above.

use super::criterion::{Criterion, ValueRule};
use super::monotonic::Bounds;
use super::pooled_batch::MAX_VALUES;
use super::random_split::{present_range, random_threshold};
use super::scan::{finite_range, Packing};
use super::splitter::{Found, Node, Scans, SplitSearch};
use super::workspace::Workspace;
use crate::data::FeatureMatrix;
use crate::params::{Splitter, TreeConfig};
use crate::projection::{ProjRef, ProjectionBuf, Sampler};
use crate::rng::Rng;
use crate::tree::RowWeights;

/// Where a candidate's projected values come from (see the module doc for the order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Values {
    /// The nonzeros of a candidate on sparse X, its zeros one block; the part also scans.
    Sparse,
    /// A candidate with categorical terms, through the node's level maps.
    Levels,
    /// A pooled candidate, with the next ones of the node.
    Pooled,
    /// The node's term batch.
    TermBatch,
    /// The node's rows projected on the candidate alone.
    Projected,
}

/// What a values part left for the scan parts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Read {
    /// The candidate's values at the node's rows, in `ws.vals`.
    Values,
    /// One categorical term's rows binned by level in `ws.bins` (no values written, none
    /// missing): the bins' values span `[lo, hi]`, or `None` for a single bin (the term is
    /// constant at the node).
    LevelBins(Option<(f32, f32)>),
}

/// How one candidate's values are scanned (see the module doc for the order).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Scan {
    /// The tree's rule without targets.
    ValueRule(ValueRule),
    /// The random splitter, some rows missing.
    RandomMissing,
    /// The random splitter on the present values' range `[lo, hi]`.
    Random { lo: f32, hi: f32 },
    /// Some rows missing: present values scanned, missing rows on either side.
    Missing,
    /// One categorical term, a bin per level; its values span `[lo, hi]`; the rows' bins
    /// are in `ws.bins` already when `assigned`.
    LevelBins { lo: f32, hi: f32, assigned: bool },
    /// `n_bins` bins on `[lo, hi]`, exact (one value a bin) or approximate.
    Histogram {
        lo: f32,
        hi: f32,
        n_bins: usize,
        exact: bool,
    },
    /// Sort and scan.
    Sorted,
}

/// What a scan part made of a candidate.
enum Outcome {
    /// The candidate cannot split the node.
    Constant,
    /// Its best admissible split, when it beats the best so far.
    Scored(Found),
    /// The part declines; the next part in the order takes the candidate.
    Declined,
}

impl Scans {
    /// The scans of a tree grown with `splitter` by a criterion with this `rule` (trees
    /// without targets have one).
    fn for_tree(splitter: Splitter, rule: Option<ValueRule>) -> Self {
        match (rule, splitter) {
            (Some(rule), _) => Scans::ValueRule(rule),
            (None, Splitter::Random) => Scans::Random,
            (None, Splitter::Best | Splitter::Histogram { .. }) => Scans::Searched,
        }
    }
}

impl<'a, C: Criterion> SplitSearch<'a, C> {
    /// The split search of one tree, its per-tree choices made (see the module doc).
    pub(super) fn new(
        cfg: &'a TreeConfig,
        sampler: &'a Sampler<'a>,
        x: &'a FeatureMatrix<'a>,
        crit: C,
        weights: RowWeights<'a>,
    ) -> Self {
        let exact = crit.exact_scan(weights);
        SplitSearch {
            cfg,
            sampler,
            x,
            crit,
            weights,
            zeros_as_block: x.is_sparse() && exact && cfg.categorical.is_empty(),
            any_tie_order: exact,
            packing: Packing::of(&crit, cfg.n_outputs, weights),
            scans: Scans::for_tree(cfg.splitter, crit.value_rule()),
        }
    }

    /// The split of `node` under candidate `c` of `cand`, `proj` (with its monotonic
    /// direction and the node's bounds, under constraints): `None` when the candidate
    /// cannot split the node (constant on it, or missing on every row); `Some(None)` when
    /// it varies but no split is admissible or beats `to_beat` (the best proxy so far,
    /// which some parts use to skip computing a threshold). The one dispatcher of the
    /// split search's parts (see the module doc).
    pub(super) fn candidate_split(
        &self,
        ws: &mut Workspace,
        rng: &mut Rng,
        node: Node<'_>,
        (cand, c, proj): (&ProjectionBuf, usize, ProjRef<'_>),
        mono: Option<(i8, Bounds)>,
        to_beat: Option<f64>,
    ) -> Option<Found> {
        let at = node.start..node.end;
        ws.cat.new_values(); // (whichever caller asks: no level bins of an earlier candidate)
        if self.too_few_rows_for_levels(ws, node, proj) {
            return None; // (constant: see there)
        }
        let read = match self.values_part(ws, node, c, proj) {
            Values::Sparse => {
                let found = self.sparse_split(ws, node, proj, mono)?;
                return Some(found.map(|(proxy, threshold)| (proxy, threshold, None)));
            }
            Values::Levels => self.project_categorical(ws, rng, node, proj),
            Values::Pooled => {
                self.pooled_values(ws, node, (cand, c, proj));
                Read::Values
            }
            Values::TermBatch => {
                let vals = ws.term_batch.values(c, &at).unwrap_or_default();
                ws.vals.clear();
                ws.vals.extend_from_slice(vals);
                Read::Values
            }
            Values::Projected => {
                ws.project_node(self.x, proj, at.start, at.end);
                Read::Values
            }
        };
        let mut scan = match read {
            Read::Values => self.scan_part(ws, node, proj)?,
            Read::LevelBins(range) => {
                let (lo, hi) = range?; // (one bin: constant)
                Scan::LevelBins {
                    lo,
                    hi,
                    assigned: true,
                }
            }
        };
        loop {
            match self.run_scan(scan, ws, rng, node, proj, mono, to_beat) {
                Outcome::Constant => return None,
                Outcome::Scored(found) => return Some(found),
                Outcome::Declined => scan = self.after(scan, proj, node.n()),
            }
        }
    }

    /// The values part of candidate `c`, `proj`, at `node` (in the module doc's order).
    fn values_part(&self, ws: &Workspace, node: Node<'_>, c: usize, proj: ProjRef<'_>) -> Values {
        let at = node.start..node.end;
        if self.sparse_applies(node.n(), proj) {
            Values::Sparse
        } else if self.has_categorical_terms(proj) {
            Values::Levels
        } else if self.sampler.descriptors().is_some()
            && !self.x.is_sparse()
            && proj.pooling().is_some()
        {
            Values::Pooled
        } else if ws.term_batch.values(c, &at).is_some() {
            Values::TermBatch
        } else {
            Values::Projected
        }
    }

    /// `ws.vals`: pooled candidate `c` of `cand`, `proj`, at `node`, from the node's pooled
    /// batch, computed first (for this and the next pooled candidates) unless it holds
    /// the candidate already.
    fn pooled_values(
        &self,
        ws: &mut Workspace,
        node: Node<'_>,
        (cand, c, proj): (&ProjectionBuf, usize, ProjRef<'_>),
    ) {
        let at = node.start..node.end;
        if let Some(family) = self.sampler.descriptors() {
            if !ws.pooled.covers(c, &at) {
                let rows = (at.clone(), &ws.samples[at.clone()]);
                let missing = self.x.has_missing();
                ws.pooled
                    .compute(self.x, (cand, family), c, rows, missing, MAX_VALUES);
            }
        }
        match ws.pooled.values(c, &at) {
            Some(vals) => {
                ws.vals.clear();
                ws.vals.extend_from_slice(vals);
            }
            None => ws.project_node(self.x, proj, at.start, at.end),
        }
    }

    /// The first scan part for the candidate whose values are in `ws.vals` (in the module
    /// doc's order); `None` when they cannot split the node.
    fn scan_part(&self, ws: &Workspace, node: Node<'_>, proj: ProjRef<'_>) -> Option<Scan> {
        if let Scans::ValueRule(rule) = self.scans {
            return Some(Scan::ValueRule(rule)); // (it judges constant values itself)
        }
        // NaN only where X has some: one pass over the values, else none at all
        let n_missing = if self.x.has_missing() {
            ws.vals.iter().filter(|v| v.is_nan()).count()
        } else {
            0
        };
        if n_missing == node.n() {
            return None; // missing on every row: nothing to split
        }
        Some(match (self.scans, n_missing > 0) {
            (Scans::Random, true) => Scan::RandomMissing,
            (_, true) => Scan::Missing,
            (Scans::Random, false) => {
                let (lo, hi) = present_range(&ws.vals);
                if !(lo.is_finite() && hi.is_finite()) || lo == hi {
                    return None;
                }
                Scan::Random { lo, hi }
            }
            (_, false) => {
                // a constant projection cannot split: skip it before paying for a sort
                // (common with sparse or binary data, e.g. image backgrounds)
                let (lo, hi) = finite_range(&ws.vals)?;
                if ws.cat.level_bins {
                    Scan::LevelBins {
                        lo,
                        hi,
                        assigned: false,
                    }
                } else {
                    self.histogram_or_sort(lo, hi, proj, node.n())
                }
            }
        })
    }

    /// The part after `declined` for candidate `proj` at a node of `n` rows.
    fn after(&self, declined: Scan, proj: ProjRef<'_>, n: usize) -> Scan {
        match declined {
            Scan::LevelBins { lo, hi, assigned } => {
                // (bins the values part assigned are at least two and fit: never declined)
                debug_assert!(!assigned, "assigned level bins declined");
                self.histogram_or_sort(lo, hi, proj, n)
            }
            _ => Scan::Sorted,
        }
    }

    /// The histogram scan of candidate `proj`'s `n` values on `[lo, hi]` when one
    /// applies ([`Self::histogram_kind`]), else the sort.
    fn histogram_or_sort(&self, lo: f32, hi: f32, proj: ProjRef<'_>, n: usize) -> Scan {
        match self.histogram_kind(|| self.all_discrete(proj), lo, hi, n) {
            Some((n_bins, exact)) => Scan::Histogram {
                lo,
                hi,
                n_bins,
                exact,
            },
            None => Scan::Sorted,
        }
    }

    /// Runs scan part `scan` on the candidate's values in `ws.vals` (or its level bins).
    #[allow(clippy::too_many_arguments)]
    fn run_scan(
        &self,
        scan: Scan,
        ws: &mut Workspace,
        rng: &mut Rng,
        node: Node<'_>,
        proj: ProjRef<'_>,
        mono: Option<(i8, Bounds)>,
        to_beat: Option<f64>,
    ) -> Outcome {
        let with_no_side = |f: Option<(f64, f32)>| f.map(|(p, t)| (p, t, None));
        match scan {
            Scan::ValueRule(rule) => match self.value_split(ws, rng, node, rule) {
                Some(found) => Outcome::Scored(found),
                None => Outcome::Constant,
            },
            Scan::RandomMissing => Outcome::Scored(self.random_split_missing(ws, rng, node)),
            Scan::Random { lo, hi } => {
                let t = random_threshold(rng, lo, hi);
                Outcome::Scored(with_no_side(self.random_split(ws, node, t, mono)))
            }
            Scan::Missing => {
                let discrete = self.all_discrete(proj);
                Outcome::Scored(self.split_missing(ws, node, discrete, to_beat))
            }
            Scan::LevelBins { assigned, .. } => {
                match self.level_split(ws, node, assigned, to_beat, mono) {
                    Some(found) => Outcome::Scored(with_no_side(found)),
                    None => Outcome::Declined,
                }
            }
            Scan::Histogram {
                lo,
                hi,
                n_bins,
                exact,
            } => match self.hist_split(ws, node, (lo, hi, n_bins, exact), to_beat, mono) {
                Some(found) => Outcome::Scored(with_no_side(found)),
                None => Outcome::Declined,
            },
            Scan::Sorted => Outcome::Scored(with_no_side(self.sorted_split(ws, node, mono))),
        }
    }
}
