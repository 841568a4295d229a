//! The random splitter's part of the split search ([`super::parts`]): one threshold a
//! candidate, drawn uniformly between its smallest and largest present value
//! (Extra-Trees, Geurts et al. 2006), scored once; with missing rows, scored with them on
//! either side.
//!
//! Invariant: one random number is drawn per candidate that varies (none for a constant
//! one, none when the present values are all equal), in candidate order, so the tree is
//! the same whatever else the search skips; the threshold is in `[lo, hi)`, so at least
//! the smallest value goes left.

use super::criterion::{Criterion, RowSplit};
use super::monotonic::Bounds;
use super::splitter::{Found, Node, SplitSearch};
use super::workspace::Workspace;
use crate::rng::Rng;

impl<C: Criterion> SplitSearch<'_, C> {
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
    pub(super) fn random_split_missing(
        &self,
        ws: &mut Workspace,
        rng: &mut Rng,
        node: Node<'_>,
    ) -> Found {
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

    /// The random splitter's split of the node's rows at threshold `t`: (proxy, t) when
    /// admissible.
    pub(super) fn random_split(
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
