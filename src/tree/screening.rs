//! Candidate screening at large nodes ([`crate::params::Growth::candidate_samples`]):
//! every candidate scored on a random sample of the node's rows, the best few on all of
//! them ([`SplitSearch::screened_search`]).
//!
//! Invariant: a screened node's rows leave the search in the order they entered it, so the
//! finalists, the partition and every node below see the rows as they would without the
//! screen (on sparse X, ascending: the zero-block search screens too, and grows the trees
//! of X's dense array).

use super::criterion::Criterion;
use super::splitter::{Best, Node, Scans, SplitSearch};
use super::workspace::{node_stats, Workspace};
use crate::projection::ProjectionBuf;
use crate::rng::Rng;

impl<C: Criterion> SplitSearch<'_, C> {
    /// The rows on which `node`'s candidates are compared, when it screens them: at nodes
    /// of more than twice [`crate::params::Growth::candidate_samples`] rows, under the
    /// splitters that scan thresholds, of trees with targets, that many rows or
    /// [`SCREEN_GROWTH`]` * sqrt(n)` of the node's `n`, whichever is more.
    pub(super) fn screening(&self, node: Node<'_>) -> Option<usize> {
        let m = self.cfg.growth.candidate_samples?;
        let n = node.n();
        let applies = n > 2 * m && self.scans == Scans::Searched && self.cfg.categorical.is_empty();
        let grown = (SCREEN_GROWTH * (n as f64).sqrt()) as usize;
        applies.then_some(m.max(grown).min(n / 2))
    }

    /// Candidate screening: moves `m` of the node's rows, drawn at random, to the front of
    /// its range, scores every candidate on them, puts the rows back in their order, scores
    /// the [`SCREEN_FINALISTS`] best on all the node's rows, and returns the best of those
    /// splits (exact thresholds); `None` when none of them splits the node (or the fit is
    /// cancelled). The node's rows keep their order, so sparse X (whose search reads them
    /// ascending) grows the trees its dense array grows.
    pub(super) fn screened_search(
        &self,
        ws: &mut Workspace,
        cand: &mut ProjectionBuf,
        rng: &mut Rng,
        node: Node<'_>,
        m: usize,
    ) -> Option<Best> {
        let (start, n) = (node.start, node.n());
        // the node's rows go back to this order once the screen is scored, so that the
        // finalists, the partition and every node below see the rows in the order they
        // had (on sparse X, ascending), whichever rows the screen drew
        let mut order = std::mem::take(&mut ws.screen_order);
        order.clear();
        order.extend_from_slice(&ws.samples[start..node.end]);
        for i in 0..m {
            let j = i + rng.below(n - i);
            ws.samples.swap(start + i, start + j);
        }
        ws.packed_for = None; // the rows moved
        if self.zeros_as_block {
            // sparse X's search reads a node's rows ascending and marked: the screen's
            // (the scores of exact statistics do not depend on the rows' order)
            self.leave_sparse_node(ws, node);
            ws.samples[start..start + m].sort_unstable();
        }
        let mut stats = std::mem::take(&mut ws.screen_stats);
        stats.resize(node.stats.len(), 0.0);
        let w = node_stats(
            &self.crit,
            &mut stats,
            &ws.samples[start..start + m],
            self.weights,
        );
        let screen = Node {
            end: start + m,
            stats: &stats,
            w,
            min_weight_leaf: node.min_weight_leaf * w / node.w,
            ..node
        };
        if self.zeros_as_block {
            self.enter_sparse_node(ws, screen);
        }
        // every candidate's score on the screen rows (no early exit: all are ranked)
        // (a repeat is ranked with its original's score: it takes a finalist's place as it
        // would if it were scored)
        let mut ranked: Vec<(f64, usize)> = Vec::with_capacity(cand.len());
        let mut screen_score = vec![None; cand.len()];
        self.batch_terms(ws, cand, screen);
        for c in 0..cand.len() {
            if crate::cancel::requested() {
                break;
            }
            let score = match ws.repeats.original(c) {
                Some(original) => screen_score[original],
                None => match self.score_candidate(ws, cand, c, rng, screen, None) {
                    Some(Some(found)) => Some(found.proxy),
                    _ => None,
                },
            };
            screen_score[c] = score;
            if let Some(proxy) = score {
                ranked.push((proxy, c));
            }
        }
        ws.term_batch.reset();
        if self.zeros_as_block {
            self.leave_sparse_node(ws, screen);
        }
        ws.screen_stats = stats;
        ws.samples[start..node.end].copy_from_slice(&order);
        ws.screen_order = order;
        ws.packed_for = None; // the rows moved back
        if self.zeros_as_block {
            self.enter_sparse_node(ws, node);
        }
        // best first; ties to the earlier candidate, as the full search keeps the first
        ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        // the finalists are scored on every row; the best of them splits the node
        let finalists: Vec<usize> = ranked
            .iter()
            .take(SCREEN_FINALISTS)
            .map(|&(_, c)| c)
            .filter(|&c| ws.repeats.original(c).is_none())
            .collect();
        if self.scores_in_parallel(node, finalists.len()) {
            // a large node: its finalists on the pool's threads
            return self.score_parallel(ws, cand, node, &finalists)?.0;
        }
        let mut best: Option<Best> = None;
        for (_, c) in ranked.into_iter().take(SCREEN_FINALISTS) {
            if crate::cancel::requested() {
                return None;
            }
            if ws.repeats.original(c).is_some() {
                continue; // its original ranks before it (same score, earlier) and was scored
            }
            let to_beat = best.as_ref().map(|b| b.proxy);
            if let Some(Some(found)) = self.score_candidate(ws, cand, c, rng, node, to_beat) {
                best = Some(found);
            }
        }
        best
    }
}

/// A screened node of `n` rows ranks its candidates on at least `16 * sqrt(n)` of them (and
/// at least `candidate_samples`): the noise of a candidate's score on `m` rows falls as
/// `1 / sqrt(m)`, so a screen that grows with the node ranks more reliably at the nodes of
/// a few thousand rows, where one of 512 rows misranked (sparse parity at 20,000 rows, 3
/// seeds: test error 0.0017 against 0.0009 without screening; with this rule 0.0007,
/// still 24% less fit time than without screening), while at large nodes the screen
/// stays a small share of the finalists' full scans (`d * 16 sqrt(n)` values against
/// `4 n`: 4% more fit time at 10^6 rows than the 512-row screen;
/// benches/results/screening_pays.md).
const SCREEN_GROWTH: f64 = 16.0;

/// The candidates a screened node scores on all its rows, the best screened first: the
/// best of them splits the node. One finalist was measurably worse on sparse parity
/// (test error 0.065 against 0.050 without screening, 5,000 rows, 3 seeds); four
/// match it (0.053) for 20% more fit time at 10^6 rows (benches/results/sporf_screening.md).
const SCREEN_FINALISTS: usize = 4;
