//! The split search of trees without targets: a candidate's projected values are split by
//! a [`ValueRule`] (two-means or Fast-BIC, [`super::criterion::unsupervised`]) instead of
//! by a criterion over targets. `splitter="best"` sorts the node's present values and
//! scores every position between distinct values; `splitter="random"` scores one
//! threshold drawn uniformly between the smallest and largest value (with one candidate
//! per node: isolation forest's random cut, Liu et al. 2008; on oblique candidates the
//! extended isolation forest's random hyperplane, Hariri et al. 2019).
//!
//! Missing values: rows whose projection is missing (NaN) take no part in the score and
//! go with the side holding more weight of present rows (the right one on ties), which is
//! the side prediction's default rule sends them to (so the tree stores no flip for them).
//! A candidate whose present values are all equal cannot be scored and counts as
//! constant.
//!
//! Invariant (as the splitter's): the threshold lies strictly between the largest value
//! sent left and the smallest sent right.

use super::criterion::{Criterion, Moments, ValueRule};
use super::random_split::{present_range, random_threshold};
use super::scan::{midpoint, sort_pairs};
use super::splitter::{Found, Node, SplitSearch};
use super::workspace::Workspace;
use crate::params::Splitter;
use crate::rng::Rng;

impl<C: Criterion> SplitSearch<'_, C> {
    /// The split of `node` under the candidate whose values are in `ws.vals` (in the
    /// order of the node's rows), scored by `rule`: `None` when its present values do
    /// not vary, `Some(None)` when no split honours the leaf limits.
    pub(super) fn value_split(
        &self,
        ws: &mut Workspace,
        rng: &mut Rng,
        node: Node<'_>,
        rule: ValueRule,
    ) -> Option<Found> {
        let has_missing = self.x.has_missing() && ws.vals.iter().any(|v| v.is_nan());
        if has_missing {
            self.separate_missing(ws, node);
        }
        let Workspace {
            vals,
            pairs,
            sort_buf,
            present,
            samples,
            ..
        } = ws;
        let rows: &[u32] = if has_missing {
            present
        } else {
            &samples[node.start..node.end]
        };
        let (lo, hi) = present_range(vals);
        if lo >= hi {
            return None; // constant, or missing on every row
        }
        // centred on the midrange: the sums of squares keep their precision
        let mid = f64::from(lo) + (f64::from(hi) - f64::from(lo)) / 2.0;
        let weights = self.weights;
        let mut total = Moments::default();
        for (&v, &s) in vals.iter().zip(rows) {
            total.add(f64::from(v) - mid, weights[s as usize]);
        }
        let n = rows.len();
        let (min_leaf, min_weight) = (self.cfg.min_samples_leaf, node.min_weight_leaf);
        let admits = |n_l: usize, w_l: f64| {
            let w_r = total.w - w_l;
            n_l >= min_leaf
                && n - n_l >= min_leaf
                && w_l >= min_weight
                && w_r >= min_weight
                && w_l > 0.0
                && w_r > 0.0
        };
        // (score, threshold, weight of the present rows sent left)
        let found = match self.cfg.splitter {
            Splitter::Random => {
                let t = random_threshold(rng, lo, hi);
                let mut left = Moments::default();
                let mut n_l = 0;
                for (&v, &s) in vals.iter().zip(rows) {
                    if v <= t {
                        left.add(f64::from(v) - mid, weights[s as usize]);
                        n_l += 1;
                    }
                }
                if !admits(n_l, left.w) {
                    return Some(None);
                }
                rule.score(left, total, n).map(|score| (score, t, left.w))
            }
            Splitter::Best | Splitter::Histogram { .. } => {
                pairs.clear();
                pairs.extend(vals.iter().copied().zip(rows.iter().copied()));
                sort_pairs(pairs, sort_buf, false);
                let mut left = Moments::default();
                let mut best: Option<(f64, usize, f64)> = None;
                for i in 0..n - 1 {
                    let (v, s) = pairs[i];
                    left.add(f64::from(v) - mid, weights[s as usize]);
                    let n_l = i + 1;
                    if v == pairs[i + 1].0 || n_l < min_leaf {
                        continue;
                    }
                    if n - n_l < min_leaf {
                        break;
                    }
                    if !admits(n_l, left.w) {
                        continue;
                    }
                    let Some(score) = rule.score(left, total, n) else {
                        continue;
                    };
                    if best.is_none_or(|b| score > b.0) {
                        best = Some((score, i, left.w));
                    }
                }
                best.map(|(score, i, w_l)| (score, midpoint(pairs[i].0, pairs[i + 1].0), w_l))
            }
        };
        // the missing rows join the heavier side (the right one on ties): prediction's
        // default side for a node's missing rows
        Some(found.map(|(score, t, w_l)| {
            let missing = has_missing.then_some(w_l > total.w - w_l);
            (score, t, missing)
        }))
    }
}
