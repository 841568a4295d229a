//! Parallel candidates: a large node's candidate projections scored on several threads.
//!
//! Parallel subtrees ([`super::fork`]) leave the top of a tree to one thread: the root,
//! then two nodes, then four. A node of at least [`PAR_ROWS`] rows therefore scores its
//! candidates (every candidate, or a screened node's finalists) as tasks of the pool, each
//! on its own copy of the node's rows and its own scratch memory, without a score to beat;
//! the best is then taken in the order the one-thread search visits them, the first of
//! equal scores winning, so the split is the one that search finds (a score to beat only
//! spares the computation of a threshold that would lose). Only the paths that draw no
//! random number and read no per-node state beyond the rows take part: dense X, explicit
//! projections (compact descriptors share a pooled batch), no categorical terms (their
//! level maps are per candidate state), trees with targets and the best or hist splitter.
//!
//! The candidates are split in halves with [`rayon::join_context`], as the subtrees are:
//! a half no other thread takes is scored here, in the node's own workspace, after the
//! first; a half another thread takes is scored there on a copy of the node's rows (made
//! once per node, 4 bytes a row) in scratch memory of its own.
//!
//! Why [`PAR_ROWS`] = 65,536: a candidate of that many rows costs about a millisecond
//! (projected, sorted and scanned), against tens of microseconds for a half taken by
//! another thread (its scratch memory) and the node's one copy of its row indices; below
//! it the subtrees already share out the work. A tree has at most `n / 65,536` such nodes
//! a level, so the copies add little to its memory: at the root, one copy of the row
//! indices, and one set of sort buffers for each thread that took candidates.

use super::criterion::Criterion;
use super::fork::held_now;
use super::splitter::{Best, Node, Scans, SplitSearch};
use super::workspace::Workspace;
use crate::cancel::Carry;
use crate::probe::{self, Count};
use crate::projection::ProjectionBuf;
use crate::rng::Rng;
use std::sync::Mutex;

/// Nodes with at least this many rows score their candidates on several threads (the
/// module's rule; why this number: its docs).
pub(super) const PAR_ROWS: usize = 1 << 16;

impl<C: Criterion> SplitSearch<'_, C> {
    /// Whether `node`'s `n_cand` candidates are scored on several threads.
    pub(super) fn scores_in_parallel(&self, node: Node<'_>, n_cand: usize) -> bool {
        // (tests score the candidates of small nodes in parallel)
        let at_least = self.cfg.par_rows.unwrap_or(PAR_ROWS);
        node.n() >= at_least
            && n_cand > 1
            && rayon::current_num_threads() > 1
            && !self.x.is_sparse()
            && self.sampler.descriptors().is_none()
            && self.cfg.categorical.is_empty()
            && self.scans == Scans::Searched
    }

    /// The best split of `node` over every candidate of `cand` but the repeats, and
    /// whether one varies on the node ([`Self::score_parallel`]).
    pub(super) fn score_all_parallel(
        &self,
        ws: &mut Workspace,
        cand: &mut ProjectionBuf,
        node: Node<'_>,
    ) -> Option<(Option<Best>, bool)> {
        let order: Vec<usize> = (0..cand.len())
            .filter(|&c| ws.repeats.original(c).is_none())
            .collect();
        self.score_parallel(ws, cand, node, &order)
    }

    /// The best split of `node` over the candidates `order` of `cand` (in the order the
    /// one-thread search visits them), scored on the pool's threads, and whether one of
    /// them varies on the node; `None` when the fit is cancelled.
    pub(super) fn score_parallel(
        &self,
        ws: &mut Workspace,
        cand: &mut ProjectionBuf,
        node: Node<'_>,
        order: &[usize],
    ) -> Option<(Option<Best>, bool)> {
        for &c in order {
            self.x.keep_sums_finite(cand, c); // as the one-thread search does, first
        }
        // the node's rows, for the threads that take candidates
        let rows = ws.samples[node.start..node.end].to_vec();
        let stat_len = ws.left.len();
        let carried = crate::cancel::carry();
        let held = Mutex::new(ws);
        let scored = self.score_split(&held, (&rows, stat_len), cand, node, order, &carried);
        if crate::cancel::requested() {
            return None; // cancel: no split, so the node stays a leaf
        }
        let mut best: Option<Best> = None;
        let mut varied = false;
        for found in scored.into_iter().flatten() {
            varied = true;
            // strictly better only: the first of equal scores wins, as one thread's search
            let better = |f: &Best| best.as_ref().is_none_or(|b| f.proxy > b.proxy);
            if let Some(found) = found.filter(better) {
                best = Some(found);
            }
        }
        Some((best, varied))
    }

    /// The candidates `order` scored on `node` of the workspace `held`, halves of them
    /// on other threads when one is free (on a copy of the node's `rows` there); the
    /// results in `order`'s order.
    fn score_split(
        &self,
        held: &Mutex<&mut Workspace>,
        (rows, stat_len): (&[u32], usize),
        cand: &ProjectionBuf,
        node: Node<'_>,
        order: &[usize],
        carried: &Carry,
    ) -> Vec<Option<Option<Best>>> {
        if order.len() < 2 {
            let score = |ws: &mut Workspace, node: Node<'_>| {
                let score_one = |&c: &usize| {
                    if crate::cancel::requested() {
                        return None;
                    }
                    // (the paths taken here draw no random number)
                    self.score_kept(ws, cand, c, &mut Rng::from_seed(0), node, None)
                };
                order.iter().map(score_one).collect()
            };
            return match held_now(held) {
                Some(mut ws) => score(&mut ws, node),
                // (held by a half up this thread's stack, which rayon's order of jobs rules
                // out): the node's rows' copy, the same scores
                None => score(&mut scratch(rows, stat_len), rows_node(node, rows)),
            };
        }
        let (a, b) = order.split_at(order.len() / 2);
        let (mut first, second) = rayon::join_context(
            |_| self.score_split(held, (rows, stat_len), cand, node, a, carried),
            |ctx| {
                if !ctx.migrated() {
                    // here, after the first half: in the same workspace
                    return self.score_split(held, (rows, stat_len), cand, node, b, carried);
                }
                probe::count(Count::TakenCandidates);
                carried.run(|| {
                    let mut own = scratch(rows, stat_len);
                    let own = Mutex::new(&mut own);
                    let at = rows_node(node, rows);
                    self.score_split(&own, (rows, stat_len), cand, at, b, carried)
                })
            },
        );
        first.extend(second);
        first
    }
}

/// `node` as the rows' copy `rows` holds it (at `0..n`).
fn rows_node<'a>(node: Node<'a>, rows: &[u32]) -> Node<'a> {
    Node {
        start: 0,
        end: rows.len(),
        ..node
    }
}

/// A workspace for scoring candidates on a copy of the node's `rows` (at `0..n`), with
/// room for criterion statistics of `stat_len`.
fn scratch(rows: &[u32], stat_len: usize) -> Workspace {
    let mut ws = Workspace::default();
    ws.size_for(stat_len, rows.len());
    ws.samples.extend_from_slice(rows);
    ws
}
