//! The histogram part of the split search ([`super::parts`]): the node's projected values
//! binned ([`super::bins`]) and the bin boundaries scanned ([`Binned`]). Approximate
//! equal-width bins on large nodes when the histogram splitter asks for them; exact bins
//! (one distinct value a bin) when every feature of the candidate is discrete.
//!
//! Invariant: exact bins decline (the next part sorts) unless every bin holds a single
//! value, so their boundaries are the sorted scan's positions and the split is the
//! sorted part's, bit for bit; approximate bins find the best bin boundary, whose
//! threshold lies strictly between the values on either side of it. Criteria whose
//! statistics do not fit a bin never take this part.

use super::bins::{self, Binned, Bins};
use super::criterion::Criterion;
use super::monotonic::Bounds;
use super::scan::Missing;
use super::splitter::{Node, SplitSearch};
use super::workspace::Workspace;
use crate::projection::ProjRef;

impl<C: Criterion> SplitSearch<'_, C> {
    /// Fills `bins` (assigned to the values of `samples`) from the rows' weights and
    /// targets.
    pub(super) fn fill_by_row(&self, bins: &mut Bins, per_bin: usize, samples: &[u32]) {
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

    /// Which histogram, if any, scans `n` values on `[lo, hi]` ([`bins::kind`]); criteria
    /// whose statistics do not fit a bin always sort.
    pub(super) fn histogram_kind(
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

    /// Whether every feature of `proj` looks discrete (see [`crate::data::FeatureMatrix::is_discrete`]).
    pub(super) fn all_discrete(&self, proj: ProjRef<'_>) -> bool {
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
    pub(super) fn hist_split(
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
}
