//! The sorted part of the split search ([`super::parts`]'s last scan, which every
//! candidate the others decline reaches): the node's projected values (none missing)
//! paired with their rows, sorted, and scanned at every position between distinct values
//! ([`super::scan::Sorted`]); a Gini node of two to four classes with whole weights scans
//! four positions to an instruction ([`super::scan_lanes`]). When the scan carries each
//! row's class and weight in its pair ([`Packing`]), they are gathered once per node.
//!
//! Invariant: this is the plain path every other part answers to. The threshold is the
//! midpoint of the two values around the best position, strictly between the largest
//! value sent left and the smallest sent right, so partitioning by `<= threshold`
//! reproduces the split scored. Tied values keep the rows' order on nodes the radix sort
//! sorts (256 rows or more) unless the criterion's statistics are exact for the tree's
//! weights (then any order gives the same sums); smaller nodes take the comparison sort's
//! order, the same on every run ([`super::scan::sort_pairs`]).

use super::criterion::Criterion;
use super::monotonic::Bounds;
use super::scan::{midpoint, sort_pairs, ByRow, Missing, Packed, Packing, PairRows, Sorted};
use super::scan_lanes::class_scan;
use super::splitter::{Node, SplitSearch};
use super::workspace::Workspace;
use crate::prefetch::AHEAD;

impl<C: Criterion> SplitSearch<'_, C> {
    /// The sorted scan of the node's projected values (`ws.vals`, none missing):
    /// (proxy, threshold) of its best split.
    pub(super) fn sorted_split(
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

    /// `ws.packed`: the tags ([`Packing`]) of the node's rows in the order of its samples;
    /// gathered once per node (and again when its rows move).
    pub(super) fn pack_node(&self, ws: &mut Workspace, node: Node<'_>, packing: Packing) {
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
}
