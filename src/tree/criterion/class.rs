//! Class criteria: Gini impurity and Shannon entropy over class weights, for one output or
//! several, as one implementation ([`Classes`]) generic over the rule that scores class
//! weights ([`ClassRule`]: [`GiniRule`], [`EntropyRule`]) and over whether rows carry one
//! class or one per output (`MULTI`, a constant, so the single-output loops stay free of
//! the multi-output ones' work).
//!
//! Statistics: a node's class weights (each output's block side by side over several
//! outputs: a row adds its weight to its k slots). A child's proxy comes from the sum of
//! its class weights' terms (`w_c^2`, or `w_c log2 w_c`), which a scan keeps per child and
//! updates by the change of one term per class a row moves.

use super::{Criterion, ScanStats};
use crate::tree::RowWeights;
use std::marker::PhantomData;

/// How a class criterion scores class weights. `k` is the number of outputs (1 for one);
/// over several outputs the impurity is the mean of theirs, and the proxies carry the
/// same `1 / k`.
pub(crate) trait ClassRule {
    /// Whether the running sums of terms stay integers when class weights are integers
    /// (Gini's `w (2x + w)`; entropy's logarithms do not).
    const INTEGER_TERMS: bool;
    /// Whether a child's sum of terms is the sum of its class weights' squares and its
    /// proxy that sum over its weight (Gini's), so that a scan may square class weights
    /// instead of adding up the terms' changes ([`super::Criterion::squares_class_weights`]).
    const SQUARES: bool;
    /// A class weight's term in the sums a child's proxy is made of.
    fn term(x: f64) -> f64;
    /// The change of the sum of terms when class weight `x` grows by `w`.
    fn added(x: f64, w: f64) -> f64;
    /// The change of the sum of terms when class weight `x` shrinks by `w`.
    fn removed(x: f64, w: f64) -> f64;
    /// The impurity of class weights `sums` of a node of weight `w > 0`.
    fn impurity(sums: &[f64], w: f64, k: f64) -> f64;
    /// The proxy of a node whose terms sum to `t`, of weight `w`.
    fn node_proxy(t: f64, w: f64, k: f64) -> f64;
    /// The proxy of a split of one output from its children's sums of terms.
    fn proxy(t_l: f64, t_r: f64, w_l: f64, w_r: f64) -> f64;
    /// The proxy of a split of `k` outputs from its children's sums of terms.
    fn proxy_over(t_l: f64, t_r: f64, w_l: f64, w_r: f64, k: f64) -> f64;
    /// The proxy of a split with left class weights `left` out of `total`.
    fn split_proxy(left: &[f64], total: &[f64], w_l: f64, w_r: f64, k: usize) -> f64;
}

/// Gini impurity `1 - sum_c p_c^2`; proxy `sum_c w_c^2 / w` per child (over k outputs,
/// `1 - (1/k) sum_oc p_oc^2` and `sum_oc w_oc^2 / (k w)`).
pub(crate) struct GiniRule;

/// Shannon entropy in bits; proxy `sum_c w_c log2 w_c - w log2 w` per child (minus the
/// child's weighted entropy; over k outputs, the mean of the outputs' entropies and
/// `(1/k) sum_oc w_oc log2 w_oc - w log2 w`).
pub(crate) struct EntropyRule;

impl ClassRule for GiniRule {
    const INTEGER_TERMS: bool = true;
    const SQUARES: bool = true;
    #[inline(always)]
    fn term(x: f64) -> f64 {
        x * x
    }
    #[inline(always)]
    fn added(x: f64, w: f64) -> f64 {
        w * (2.0 * x + w)
    }
    #[inline(always)]
    fn removed(x: f64, w: f64) -> f64 {
        -(w * (2.0 * x - w))
    }
    fn impurity(sums: &[f64], w: f64, k: f64) -> f64 {
        1.0 - sums.iter().map(|s| (s / w) * (s / w)).sum::<f64>() / k
    }
    fn node_proxy(t: f64, w: f64, k: f64) -> f64 {
        t / (w * k)
    }
    #[inline(always)]
    fn proxy(t_l: f64, t_r: f64, w_l: f64, w_r: f64) -> f64 {
        t_l / w_l + t_r / w_r
    }
    #[inline(always)]
    fn proxy_over(t_l: f64, t_r: f64, w_l: f64, w_r: f64, k: f64) -> f64 {
        (t_l / w_l + t_r / w_r) / k
    }
    fn split_proxy(left: &[f64], total: &[f64], w_l: f64, w_r: f64, k: usize) -> f64 {
        let (mut a, mut b) = (0.0, 0.0);
        for (l, t) in left.iter().zip(total.iter()) {
            a += l * l;
            b += (t - l) * (t - l);
        }
        (a / w_l + b / w_r) / k as f64
    }
}

impl ClassRule for EntropyRule {
    const INTEGER_TERMS: bool = false;
    const SQUARES: bool = false;
    #[inline(always)]
    fn term(x: f64) -> f64 {
        xlog2x(x)
    }
    #[inline(always)]
    fn added(x: f64, w: f64) -> f64 {
        xlog2x(x + w) - xlog2x(x)
    }
    #[inline(always)]
    fn removed(x: f64, w: f64) -> f64 {
        xlog2x(x - w) - xlog2x(x)
    }
    fn impurity(sums: &[f64], w: f64, k: f64) -> f64 {
        -sums
            .iter()
            .filter(|&&s| s > 0.0)
            .map(|s| (s / w) * (s / w).log2())
            .sum::<f64>()
            / k
    }
    fn node_proxy(t: f64, w: f64, k: f64) -> f64 {
        t / k - xlog2x(w)
    }
    #[inline(always)]
    fn proxy(t_l: f64, t_r: f64, w_l: f64, w_r: f64) -> f64 {
        t_l - xlog2x(w_l) + t_r - xlog2x(w_r)
    }
    #[inline(always)]
    fn proxy_over(t_l: f64, t_r: f64, w_l: f64, w_r: f64, k: f64) -> f64 {
        (t_l + t_r) / k - xlog2x(w_l) - xlog2x(w_r)
    }
    fn split_proxy(left: &[f64], total: &[f64], w_l: f64, w_r: f64, k: usize) -> f64 {
        if k == 1 {
            // (one output keeps the summation order it always had: models keep their bytes)
            let mut s = -xlog2x(w_l) - xlog2x(w_r);
            for (l, t) in left.iter().zip(total.iter()) {
                s += xlog2x(*l) + xlog2x(t - l);
            }
            return s;
        }
        let s: f64 = left
            .iter()
            .zip(total.iter())
            .map(|(l, t)| xlog2x(*l) + xlog2x(t - l))
            .sum();
        s / k as f64 - xlog2x(w_l) - xlog2x(w_r)
    }
}

/// A class criterion under rule `R`: over class codes (`MULTI = false`, `k = 1`: row `s`
/// has class `codes[s]`), or over the slots of k outputs (`MULTI = true`: row `s` has slots
/// `codes[s * k..(s + 1) * k]`, see [`crate::data::Targets::MultiClasses`]).
pub(crate) struct Classes<'a, R, const MULTI: bool> {
    codes: &'a [u32],
    k: usize,
    rule: PhantomData<fn() -> R>,
}

// (by hand: the derives would ask `R: Clone`)
impl<R, const MULTI: bool> Clone for Classes<'_, R, MULTI> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<R, const MULTI: bool> Copy for Classes<'_, R, MULTI> {}

/// Gini impurity over class codes.
pub(crate) type Gini<'a> = Classes<'a, GiniRule, false>;
/// Shannon entropy over class codes.
pub(crate) type Entropy<'a> = Classes<'a, EntropyRule, false>;
/// Gini over k class outputs: the mean of the outputs' Gini impurities.
pub(crate) type MultiGini<'a> = Classes<'a, GiniRule, true>;
/// Entropy over k class outputs: the mean of the outputs' entropies.
pub(crate) type MultiEntropy<'a> = Classes<'a, EntropyRule, true>;

impl<'a, R, const MULTI: bool> Classes<'a, R, MULTI> {
    /// The criterion over `codes` of `k` outputs (1 unless `MULTI`).
    pub(crate) fn new(codes: &'a [u32], k: usize) -> Self {
        debug_assert!(MULTI || k == 1);
        Classes {
            codes,
            k,
            rule: PhantomData,
        }
    }

    /// The slots row `s` adds its weight to.
    #[inline(always)]
    fn slots(&self, s: usize) -> &'a [u32] {
        if MULTI {
            &self.codes[s * self.k..(s + 1) * self.k]
        } else {
            std::slice::from_ref(&self.codes[s])
        }
    }
}

impl<'a, R: ClassRule, const MULTI: bool> Criterion for Classes<'a, R, MULTI> {
    type Scan<'s>
        = ClassScan<'s, R, MULTI>
    where
        Self: 's;

    fn stat_len(&self, n_outputs: usize) -> usize {
        n_outputs
    }
    #[inline(always)]
    fn prefetch(&self, s: usize) {
        crate::prefetch::prefetch(self.codes, s * self.k);
    }
    #[inline(always)]
    fn add_sample(&self, sums: &mut [f64], s: usize, w: f64) {
        for &c in self.slots(s) {
            sums[c as usize] += w;
        }
    }
    fn impurity(&self, sums: &[f64], w: f64) -> f64 {
        R::impurity(sums, w, self.k as f64)
    }
    fn push_value(&self, sums: &[f64], w: f64, out: &mut Vec<f64>) {
        out.extend(sums.iter().map(|s| if w > 0.0 { s / w } else { 0.0 }));
    }
    fn node_proxy(&self, sums: &[f64], w: f64) -> f64 {
        R::node_proxy(sums.iter().map(|&s| R::term(s)).sum(), w, self.k as f64)
    }
    fn split_proxy(&self, left: &[f64], total: &[f64], w_l: f64, w_r: f64) -> f64 {
        R::split_proxy(left, total, w_l, w_r, self.k)
    }
    fn split_values(&self, left: &[f64], total: &[f64], w_l: f64, w_r: f64) -> (f64, f64) {
        if MULTI {
            return (f64::NAN, f64::NAN); // monotonic constraints are refused here
        }
        // the weight shares of class 1 in the two children (0 without a class 1)
        match (left.get(1), total.get(1)) {
            (Some(l), Some(t)) => (l / w_l, (t - l) / w_r),
            _ => (0.0, 0.0),
        }
    }
    fn binned(&self) -> bool {
        !MULTI // a row of several outputs has k slots, a bin holds one per row
    }
    /// Gini over one output with integer weights (bootstrap counts, no fractional sample
    /// weights): class weights, their squares and the running terms `w (2x + w)` are
    /// integers up to 3 W^2 for a total weight W, exact while that stays below 2^53.
    fn exact_scan(&self, weights: RowWeights<'_>) -> bool {
        if MULTI || !R::INTEGER_TERMS {
            return false;
        }
        weights
            .whole_total()
            .is_some_and(|total| 4.0 * total * total < (1u64 << 53) as f64)
    }
    fn packable_slots(&self, n_outputs: usize) -> Option<usize> {
        (!MULTI).then_some(n_outputs) // one output: a row's weight goes to its class
    }
    fn squares_class_weights(&self) -> bool {
        !MULTI && R::SQUARES
    }
    fn bin_width(&self, n_outputs: usize) -> usize {
        n_outputs
    }
    #[inline(always)]
    fn bin_slot(&self, s: usize) -> (usize, f64) {
        (self.slots(s)[0] as usize, 1.0)
    }
    fn scan<'s>(
        &'s self,
        total: &[f64],
        left: &'s mut [f64],
        right: &'s mut [f64],
    ) -> ClassScan<'s, R, MULTI> {
        left.fill(0.0);
        right.copy_from_slice(total);
        let t_r = right.iter().map(|&s| R::term(s)).sum();
        ClassScan {
            crit: Classes::new(self.codes, self.k),
            left,
            right,
            t_l: 0.0,
            t_r,
        }
    }
}

/// [`Classes`]' running statistics: class weights and their sums of terms per child.
pub(crate) struct ClassScan<'a, R, const MULTI: bool> {
    crit: Classes<'a, R, MULTI>,
    left: &'a mut [f64],
    right: &'a mut [f64],
    t_l: f64,
    t_r: f64,
}

impl<R: ClassRule, const MULTI: bool> ClassScan<'_, R, MULTI> {
    /// Moves weight `w` of slot `c` from the right child to the left one.
    #[inline(always)]
    fn move_class(&mut self, c: usize, w: f64) {
        self.t_l += R::added(self.left[c], w);
        self.t_r += R::removed(self.right[c], w);
        self.left[c] += w;
        self.right[c] -= w;
    }
}

impl<R: ClassRule, const MULTI: bool> ScanStats for ClassScan<'_, R, MULTI> {
    #[inline(always)]
    fn prefetch(&self, s: usize) {
        crate::prefetch::prefetch(self.crit.codes, s * self.crit.k);
    }
    #[inline(always)]
    fn move_left(&mut self, s: usize, w: f64) {
        for &c in self.crit.slots(s) {
            self.move_class(c as usize, w);
        }
    }
    #[inline(always)]
    fn move_slot(&mut self, c: usize, w: f64) {
        self.move_class(c, w);
    }
    #[inline(always)]
    fn move_bin(&mut self, bin: &[f64]) {
        for (c, &w) in bin.iter().enumerate() {
            if w != 0.0 {
                self.move_class(c, w);
            }
        }
    }
    #[inline(always)]
    fn proxy(&self, w_l: f64, w_r: f64) -> f64 {
        if MULTI {
            R::proxy_over(self.t_l, self.t_r, w_l, w_r, self.crit.k as f64)
        } else {
            R::proxy(self.t_l, self.t_r, w_l, w_r)
        }
    }
    #[inline(always)]
    fn child_values(&self, w_l: f64, w_r: f64) -> (f64, f64) {
        if MULTI {
            return (f64::NAN, f64::NAN); // monotonic constraints are refused here
        }
        let share = |sums: &[f64], w: f64| sums.get(1).map_or(0.0, |c| c / w);
        (share(self.left, w_l), share(self.right, w_r))
    }
}

/// `x log2 x`, with `0 log2 0 = 0`.
#[inline]
pub(crate) fn xlog2x(x: f64) -> f64 {
    if x > 0.0 {
        x * x.log2()
    } else {
        0.0
    }
}
