//! Split rules of forests without targets ([`crate::params::Task::Unsupervised`]): they
//! score a candidate's projected values, not targets. [`Unlabelled`] is the criterion the
//! builder holds for such trees (a node's statistics are its weight; no node is pure, a
//! node stops when no candidate varies on it or a size rule stops it), and [`ValueRule`]
//! scores the splits of one candidate's values from their [`Moments`]: two-means (the
//! within-side sum of squares) or Fast-BIC (a hard two-Gaussian mixture against one
//! Gaussian). The walk over a candidate's values is the split search's
//! (`super::super::value_split`).
//!
//! Invariant: a rule's score is scale-free (the same split of `a·v + b` scores the same for
//! any `a > 0`), so candidates of different scales compare by how well they cluster; it is
//! also the split's improvement (the node proxy of [`Unlabelled`] is 0), which the builder
//! compares with `min_impurity_decrease` times the root's weight: two-means' is never
//! negative, Fast-BIC's is negative when one Gaussian fits the node better than two, and
//! then the node stays a leaf (at the default `min_impurity_decrease = 0`).

use super::{Criterion, ScanStats};
use crate::params;

/// Weighted moments of projected values: weight, sum of `w·v` and of `w·v²` (values
/// centred on a reference near their mean, so the sums of squares keep their precision).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Moments {
    pub(crate) w: f64,
    pub(crate) s: f64,
    pub(crate) q: f64,
}

impl Moments {
    /// Adds value `v` with weight `w`.
    #[inline(always)]
    pub(crate) fn add(&mut self, v: f64, w: f64) {
        self.w += w;
        self.s += w * v;
        self.q += w * v * v;
    }

    /// The moments of `total` without these.
    #[inline(always)]
    pub(crate) fn rest(self, total: Moments) -> Moments {
        Moments {
            w: total.w - self.w,
            s: total.s - self.s,
            q: total.q - self.q,
        }
    }

    /// The sum of squares around the mean (0 for no weight).
    #[inline(always)]
    pub(crate) fn sse(self) -> f64 {
        if self.w > 0.0 {
            (self.q - self.s * self.s / self.w).max(0.0)
        } else {
            0.0
        }
    }
}

/// How a split of one candidate's projected values is scored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ValueRule {
    /// The between-sides sum of squares (the within-side sum of squares it leaves is the
    /// smallest), as a fraction of the node's.
    TwoMeans,
    /// The BIC gain of the better hard two-Gaussian mixture (one variance or two) over one
    /// Gaussian (Madhyastha et al. 2020, "Fast-BIC").
    FastBic,
}

impl ValueRule {
    /// The rule of `criterion`, if it scores projected values.
    pub(crate) fn of(criterion: params::Criterion) -> Option<ValueRule> {
        match criterion {
            params::Criterion::TwoMeans => Some(ValueRule::TwoMeans),
            params::Criterion::FastBic => Some(ValueRule::FastBic),
            _ => None,
        }
    }

    /// The score of splitting `total` (the node's present rows, `n` of them) into `left`
    /// and the rest: larger is better; `None` when the values do not vary.
    /// Two-means: the fraction of the sum of squares the split removes, times the weight
    /// (in `[0, w]`). Fast-BIC: `BIC(one Gaussian) - BIC(two)` (counts of rows in the
    /// penalty), negative when the node's values show no two clusters: its best split then
    /// peels the most extreme values off, which the builder does not make (see the module
    /// invariant) rather than growing chains of such peels.
    #[inline]
    pub(crate) fn score(self, left: Moments, total: Moments, n: usize) -> Option<f64> {
        let sse = total.sse();
        if sse <= 0.0 {
            return None;
        }
        let right = left.rest(total);
        let (sse_l, sse_r) = (left.sse(), right.sse());
        match self {
            ValueRule::TwoMeans => {
                let removed = ((sse - sse_l - sse_r) / sse).clamp(0.0, 1.0);
                Some(total.w * removed)
            }
            ValueRule::FastBic => {
                let w = total.w;
                let (w_l, w_r) = (left.w, right.w);
                let var0 = sse / w;
                // A cluster's variance is at least the node's over its rows: two nearly
                // equal values split off as a cluster of their own would otherwise have a
                // variance near 0 and an unbounded likelihood, and the trees would peel
                // ties off instead of finding clusters. So a tiny cluster gains at most
                // about ln(n) per row; a cluster of many rows keeps its own variance.
                let floor = var0 / n as f64;
                let variance = |sse: f64, w: f64| (sse / w).max(floor);
                let prior = 2.0 * (w_l * (w_l / w).ln() + w_r * (w_r / w).ln());
                let ln_n = (n as f64).ln();
                // one variance for both clusters: 4 parameters against the Gaussian's 2
                let pooled = variance(sse_l + sse_r, w);
                let same = prior - w * (pooled / var0).ln() - 2.0 * ln_n;
                // a variance each: 5 parameters
                let (v_l, v_r) = (variance(sse_l, w_l), variance(sse_r, w_r));
                let diff = prior - w_l * (v_l / var0).ln() - w_r * (v_r / var0).ln() - 3.0 * ln_n;
                Some(same.max(diff))
            }
        }
    }
}

/// The criterion of a tree without targets: a node's statistics are its weight, its
/// impurity is 1 (so no node counts as pure), its value a placeholder for the path length
/// the builder writes into each leaf, and its splits come from the value rule.
#[derive(Clone, Copy)]
pub(crate) struct Unlabelled {
    pub(crate) rule: ValueRule,
}

impl Criterion for Unlabelled {
    type Scan<'s>
        = WeightScan
    where
        Self: 's;

    fn stat_len(&self, _n_outputs: usize) -> usize {
        1
    }
    #[inline(always)]
    fn add_sample(&self, sums: &mut [f64], _s: usize, w: f64) {
        sums[0] += w;
    }
    fn impurity(&self, _sums: &[f64], _w: f64) -> f64 {
        1.0
    }
    fn push_value(&self, _sums: &[f64], _w: f64, out: &mut Vec<f64>) {
        out.push(0.0);
    }
    fn node_proxy(&self, _sums: &[f64], _w: f64) -> f64 {
        0.0
    }
    fn split_proxy(&self, _left: &[f64], _total: &[f64], _w_l: f64, _w_r: f64) -> f64 {
        0.0
    }
    fn split_values(&self, _left: &[f64], _total: &[f64], _w_l: f64, _w_r: f64) -> (f64, f64) {
        (0.0, 0.0)
    }
    fn binned(&self) -> bool {
        false
    }
    fn bin_width(&self, _n_outputs: usize) -> usize {
        1
    }
    fn bin_slot(&self, _s: usize) -> (usize, f64) {
        (0, 1.0)
    }
    fn value_rule(&self) -> Option<ValueRule> {
        Some(self.rule)
    }
    fn scan<'s>(
        &'s self,
        _total: &[f64],
        _left: &'s mut [f64],
        _right: &'s mut [f64],
    ) -> Self::Scan<'s> {
        WeightScan
    }
}

/// The (unused) target scan of [`Unlabelled`]: its splits are scored by the value rule.
pub(crate) struct WeightScan;

impl ScanStats for WeightScan {
    fn move_left(&mut self, _sample: usize, _w: f64) {}
    fn move_bin(&mut self, _bin: &[f64]) {}
    fn proxy(&self, _w_l: f64, _w_r: f64) -> f64 {
        0.0
    }
    fn child_values(&self, _w_l: f64, _w_r: f64) -> (f64, f64) {
        (0.0, 0.0)
    }
}

/// The average path length of an unsuccessful search in a binary search tree of `n`
/// keys, `c(n)` of Liu et al. (2008): 0 for `n <= 1`, 1 for `n = 2`, else
/// `2 (ln(n - 1) + γ) - 2 (n - 1) / n` (scikit-learn's `_average_path_length`).
pub(crate) fn average_path_length(n: f64) -> f64 {
    if n <= 1.0 {
        0.0
    } else if n <= 2.0 {
        1.0
    } else {
        2.0 * ((n - 1.0).ln() + EULER_GAMMA) - 2.0 * (n - 1.0) / n
    }
}

/// The Euler–Mascheroni constant.
const EULER_GAMMA: f64 = 0.577_215_664_901_532_9;

#[cfg(test)]
mod tests {
    use super::*;

    fn moments(v: &[f64]) -> Moments {
        let mut m = Moments::default();
        v.iter().for_each(|&x| m.add(x, 1.0));
        m
    }

    /// The best split position of sorted `v` under `rule` (left = the first `i + 1`).
    fn best(rule: ValueRule, v: &[f64]) -> usize {
        let total = moments(v);
        (0..v.len() - 1)
            .max_by(|&a, &b| {
                let s = |i: usize| rule.score(moments(&v[..=i]), total, v.len()).unwrap();
                s(a).total_cmp(&s(b))
            })
            .unwrap()
    }

    #[test]
    fn two_means_minimises_the_within_side_sum_of_squares() {
        let v = [0.0, 0.1, 0.3, 0.2, 5.0, 5.2, 5.1, 9.0];
        let mut sorted = v.to_vec();
        sorted.sort_by(f64::total_cmp);
        let total = moments(&sorted);
        let within = |i: usize| moments(&sorted[..=i]).sse() + moments(&sorted[i + 1..]).sse();
        let direct = (0..7)
            .min_by(|&a, &b| within(a).total_cmp(&within(b)))
            .unwrap();
        assert_eq!(best(ValueRule::TwoMeans, &sorted), direct);
        // the score is the weighted fraction of the node's sum of squares removed
        let s = ValueRule::TwoMeans
            .score(moments(&sorted[..=direct]), total, 8)
            .unwrap();
        assert!((s - 8.0 * (1.0 - within(direct) / total.sse())).abs() < 1e-9);
    }

    #[test]
    fn value_rules_are_scale_free() {
        let v: Vec<f64> = (0..40)
            .map(|i| ((i * 37) % 23) as f64 + (i / 20) as f64 * 30.0)
            .collect();
        let mut sorted = v.clone();
        sorted.sort_by(f64::total_cmp);
        for rule in [ValueRule::TwoMeans, ValueRule::FastBic] {
            let scaled: Vec<f64> = sorted.iter().map(|x| 1e6 * x - 3.0).collect();
            let (t, ts) = (moments(&sorted), moments(&scaled));
            for i in [3, 19, 30] {
                let a = rule.score(moments(&sorted[..=i]), t, 40).unwrap();
                let b = rule.score(moments(&scaled[..=i]), ts, 40).unwrap();
                assert!(
                    (a - b).abs() < 1e-6 * a.abs().max(1.0),
                    "{rule:?} {i}: {a} {b}"
                );
            }
        }
    }

    #[test]
    fn fast_bic_prefers_two_clusters_only_where_there_are_two() {
        // two well separated groups: the gap wins and the gain is large; one uniform
        // group: every split loses against one Gaussian
        let two: Vec<f64> = (0..30)
            .map(|i| (i % 15) as f64 * 0.1 + (i / 15) as f64 * 10.0)
            .collect();
        let mut two_sorted = two.clone();
        two_sorted.sort_by(f64::total_cmp);
        assert_eq!(best(ValueRule::FastBic, &two_sorted), 14);
        let t = moments(&two_sorted);
        assert!(
            ValueRule::FastBic
                .score(moments(&two_sorted[..15]), t, 30)
                .unwrap()
                > 40.0
        );
        let one: Vec<f64> = (0..30).map(|i| i as f64).collect();
        let t = moments(&one);
        for i in 0..29 {
            let s = ValueRule::FastBic
                .score(moments(&one[..=i]), t, 30)
                .unwrap();
            assert!(s < 0.0, "split {i} of a uniform group gains {s}");
        }
        // no variation: nothing to score
        let flat = moments(&[2.0; 5]);
        assert_eq!(ValueRule::FastBic.score(moments(&[2.0; 2]), flat, 5), None);
    }

    #[test]
    fn average_path_length_matches_scikit_learn() {
        // sklearn.ensemble._iforest._average_path_length([1, 2, 3, 256])
        assert_eq!(average_path_length(1.0), 0.0);
        assert_eq!(average_path_length(2.0), 1.0);
        assert!((average_path_length(3.0) - 1.207_392_357_6).abs() < 1e-9);
        assert!((average_path_length(256.0) - 10.244_770_920_1).abs() < 1e-9);
    }
}
