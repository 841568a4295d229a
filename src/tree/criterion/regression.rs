//! Regression criteria whose statistics are weighted target sums: squared error (one
//! output, [`SquaredError`], or several, [`MultiSquaredError`]), squared error scored by
//! Friedman's improvement ([`FriedmanMse`]) and half Poisson deviance ([`Poisson`]). The multi-output scans keep each output's weighted target sum per child
//! ([`SumsScan`]) and are generic over the rule that scores them ([`SumsRule`]), so each
//! is one static loop.

use super::{Criterion, ScanStats};
use std::marker::PhantomData;

/// Squared error around the mean; statistics `[w, sum w y, sum w y^2]`, proxy
/// `(sum w y)^2 / w` per child.
#[derive(Clone, Copy)]
pub(crate) struct SquaredError<'a> {
    pub(crate) y: &'a [f64],
}

impl<'a> Criterion for SquaredError<'a> {
    type Scan<'s>
        = SumScan<'s, SquaredSum>
    where
        Self: 's;

    fn stat_len(&self, _n_outputs: usize) -> usize {
        3
    }
    #[inline(always)]
    fn prefetch(&self, s: usize) {
        crate::prefetch::prefetch(self.y, s);
    }
    #[inline(always)]
    fn add_sample(&self, sums: &mut [f64], s: usize, w: f64) {
        let y = self.y[s];
        sums[0] += w;
        sums[1] += w * y;
        sums[2] += w * y * y;
    }
    fn impurity(&self, sums: &[f64], w: f64) -> f64 {
        (sums[2] / w - (sums[1] / w).powi(2)).max(0.0)
    }
    fn push_value(&self, sums: &[f64], w: f64, out: &mut Vec<f64>) {
        push_means(sums, 1, w, out)
    }
    fn node_proxy(&self, sums: &[f64], w: f64) -> f64 {
        sums[1] * sums[1] / w
    }
    fn split_proxy(&self, left: &[f64], total: &[f64], w_l: f64, w_r: f64) -> f64 {
        let (sl, sr) = (left[1], total[1] - left[1]);
        sl * sl / w_l + sr * sr / w_r
    }
    fn split_values(&self, left: &[f64], total: &[f64], w_l: f64, w_r: f64) -> (f64, f64) {
        first_means(left, total, w_l, w_r)
    }
    fn bin_width(&self, _n_outputs: usize) -> usize {
        1
    }
    #[inline(always)]
    fn bin_slot(&self, s: usize) -> (usize, f64) {
        (0, self.y[s])
    }
    fn scan<'s>(
        &'s self,
        total: &[f64],
        left: &'s mut [f64],
        right: &'s mut [f64],
    ) -> Self::Scan<'s> {
        left.fill(0.0);
        right.copy_from_slice(total);
        SumScan::new(self.y, total[1], 0.0)
    }
}

/// How a [`SumScan`] scores a split from its children's weighted target sums `s_l`,
/// `s_r` and weights `w_l`, `w_r` (`scale` is the scan's constant).
pub(crate) trait SumRule {
    fn proxy(s_l: f64, s_r: f64, w_l: f64, w_r: f64, scale: f64) -> f64;
}

/// `S^2 / w` per child ([`SquaredError`]).
pub(crate) struct SquaredSum;

/// Friedman's improvement ([`FriedmanMse`]), `scale = k^2 w`.
pub(crate) struct FriedmanSum;

impl SumRule for SquaredSum {
    #[inline(always)]
    fn proxy(s_l: f64, s_r: f64, w_l: f64, w_r: f64, _scale: f64) -> f64 {
        s_l * s_l / w_l + s_r * s_r / w_r
    }
}

impl SumRule for FriedmanSum {
    #[inline(always)]
    fn proxy(s_l: f64, s_r: f64, w_l: f64, w_r: f64, scale: f64) -> f64 {
        friedman(s_l, s_r, w_l, w_r, scale)
    }
}

/// Running statistics of a scan that needs one weighted target sum per child (row `s`
/// adds `w y[s]`), scored by rule `R`.
pub(crate) struct SumScan<'a, R> {
    y: &'a [f64],
    s_l: f64,
    s_r: f64,
    scale: f64,
    rule: PhantomData<fn() -> R>,
}

impl<'a, R> SumScan<'a, R> {
    /// A scan from every row on the right, whose target sum is `s_r`.
    fn new(y: &'a [f64], s_r: f64, scale: f64) -> Self {
        SumScan {
            y,
            s_l: 0.0,
            s_r,
            scale,
            rule: PhantomData,
        }
    }
}

impl<R: SumRule> ScanStats for SumScan<'_, R> {
    #[inline(always)]
    fn prefetch(&self, s: usize) {
        crate::prefetch::prefetch(self.y, s);
    }
    #[inline(always)]
    fn move_left(&mut self, s: usize, w: f64) {
        let wy = w * self.y[s];
        self.s_l += wy;
        self.s_r -= wy;
    }
    #[inline(always)]
    fn move_bin(&mut self, bin: &[f64]) {
        self.s_l += bin[0];
        self.s_r -= bin[0];
    }
    #[inline(always)]
    fn proxy(&self, w_l: f64, w_r: f64) -> f64 {
        R::proxy(self.s_l, self.s_r, w_l, w_r, self.scale)
    }
    #[inline(always)]
    fn child_values(&self, w_l: f64, w_r: f64) -> (f64, f64) {
        // one output: the children's means (several outputs refuse monotonic constraints)
        (self.s_l / w_l, self.s_r / w_r)
    }
}

/// The children's means of the first output of a split with left statistics `left` out of
/// `total` (`[w, sum w y_0, ..]`): the monotone values of a single output (several
/// outputs refuse monotonic constraints).
#[inline]
fn first_means(left: &[f64], total: &[f64], w_l: f64, w_r: f64) -> (f64, f64) {
    (left[1] / w_l, (total[1] - left[1]) / w_r)
}

/// Squared error over k real outputs: the mean of the outputs' variances; statistics
/// `[w, sum w y_o (k), sum w y_o^2 (k)]`, proxy `(1/k) sum_o (sum w y_o)^2 / w` per child.
#[derive(Clone, Copy)]
pub(crate) struct MultiSquaredError<'a> {
    /// Targets, n × k row-major.
    pub(crate) y: &'a [f64],
    /// Outputs.
    pub(crate) k: usize,
}

impl<'a> Criterion for MultiSquaredError<'a> {
    type Scan<'s>
        = SumsScan<'s, Squared>
    where
        Self: 's;

    fn split_values(&self, _: &[f64], _: &[f64], _: f64, _: f64) -> (f64, f64) {
        (f64::NAN, f64::NAN) // monotonic constraints are refused here (ForestParams::check)
    }

    fn stat_len(&self, _n_outputs: usize) -> usize {
        1 + 2 * self.k
    }
    #[inline(always)]
    fn add_sample(&self, sums: &mut [f64], s: usize, w: f64) {
        let k = self.k;
        sums[0] += w;
        for (o, &y) in self.y[s * k..(s + 1) * k].iter().enumerate() {
            sums[1 + o] += w * y;
            sums[1 + k + o] += w * y * y;
        }
    }
    fn impurity(&self, sums: &[f64], w: f64) -> f64 {
        let k = self.k;
        let total: f64 = (0..k)
            .map(|o| (sums[1 + k + o] / w - (sums[1 + o] / w).powi(2)).max(0.0))
            .sum();
        total / k as f64
    }
    fn push_value(&self, sums: &[f64], w: f64, out: &mut Vec<f64>) {
        push_means(sums, self.k, w, out)
    }
    fn node_proxy(&self, sums: &[f64], w: f64) -> f64 {
        sums[1..1 + self.k].iter().map(|s| s * s).sum::<f64>() / (w * self.k as f64)
    }
    fn split_proxy(&self, left: &[f64], total: &[f64], w_l: f64, w_r: f64) -> f64 {
        let r = 1..1 + self.k;
        let p: f64 = left[r.clone()]
            .iter()
            .zip(&total[r])
            .map(|(l, t)| l * l / w_l + (t - l) * (t - l) / w_r)
            .sum();
        p / self.k as f64
    }
    fn binned(&self) -> bool {
        false
    }
    fn bin_width(&self, _n_outputs: usize) -> usize {
        1
    }
    fn bin_slot(&self, s: usize) -> (usize, f64) {
        // never binned: a row has k values
        (0, self.y[s * self.k])
    }
    fn scan<'s>(
        &'s self,
        total: &[f64],
        left: &'s mut [f64],
        right: &'s mut [f64],
    ) -> Self::Scan<'s> {
        SumsScan::new(self.y, self.k, total, left, right)
    }
}

/// Squared error scored by Friedman's improvement (scikit-learn's "friedman_mse"), over
/// k >= 1 real outputs. A node's statistics, impurity and value are squared error's
/// ([`MultiSquaredError`]'s, which for one output are [`SquaredError`]'s to the bit), but a
/// split is scored by Friedman's improvement (Friedman 2001, "Greedy function
/// approximation", eq. 35), from the children's weighted target sums added over the
/// outputs, `S_l` and `S_r`, as scikit-learn computes it:
/// `((w_r S_l - w_l S_r) / k)^2 / (w_l w_r w)`, `w` the node's weight. For one output this
/// is `w_l w_r (mean_l - mean_r)^2 / w`, the weighted decrease of squared error itself, so
/// the two criteria choose the same splits but where rounding breaks a near tie; over
/// several outputs it scores the difference of the children's means summed over the
/// outputs, not the mean decrease of the outputs' variances, and the splits differ.
///
/// The proxy is the score itself and `node_proxy` is 0, so the improvement (best-first
/// order, `min_impurity_decrease`, which divides it by the root weight as for every
/// criterion) is Friedman's score. A row enters a scan through its targets' sum over the
/// outputs (`row_sums`: `y` itself for one output), so a scan keeps two numbers whatever
/// k, and a histogram bin one statistic per row: several outputs are binned too.
#[derive(Clone, Copy)]
pub(crate) struct FriedmanMse<'a> {
    /// Targets, n × k row-major.
    pub(crate) y: &'a [f64],
    /// Each row's targets summed over the outputs.
    pub(crate) row_sums: &'a [f64],
    /// Outputs.
    pub(crate) k: usize,
}

impl FriedmanMse<'_> {
    /// The node statistics: squared error's.
    #[inline(always)]
    fn squared(&self) -> MultiSquaredError<'_> {
        MultiSquaredError {
            y: self.y,
            k: self.k,
        }
    }

    /// `k^2 w` for a node of statistics `total` (its weight first).
    #[inline(always)]
    fn scale(&self, total: &[f64]) -> f64 {
        (self.k * self.k) as f64 * total[0]
    }
}

/// Friedman's improvement of a split whose children have target sums (over the outputs)
/// `s_l`, `s_r` and weights `w_l`, `w_r`, in a node where `scale = k^2 w`.
#[inline(always)]
fn friedman(s_l: f64, s_r: f64, w_l: f64, w_r: f64, scale: f64) -> f64 {
    let d = w_r * s_l - w_l * s_r;
    d * d / (w_l * w_r * scale)
}

impl<'a> Criterion for FriedmanMse<'a> {
    type Scan<'s>
        = SumScan<'s, FriedmanSum>
    where
        Self: 's;

    fn stat_len(&self, n_outputs: usize) -> usize {
        self.squared().stat_len(n_outputs)
    }
    #[inline(always)]
    fn add_sample(&self, sums: &mut [f64], s: usize, w: f64) {
        self.squared().add_sample(sums, s, w)
    }
    fn impurity(&self, sums: &[f64], w: f64) -> f64 {
        self.squared().impurity(sums, w)
    }
    fn push_value(&self, sums: &[f64], w: f64, out: &mut Vec<f64>) {
        push_means(sums, self.k, w, out)
    }
    fn node_proxy(&self, _sums: &[f64], _w: f64) -> f64 {
        0.0
    }
    fn split_proxy(&self, left: &[f64], total: &[f64], w_l: f64, w_r: f64) -> f64 {
        let r = 1..1 + self.k;
        let s_l: f64 = left[r.clone()].iter().sum();
        let s_r: f64 = left[r.clone()]
            .iter()
            .zip(&total[r])
            .map(|(l, t)| t - l)
            .sum();
        friedman(s_l, s_r, w_l, w_r, self.scale(total))
    }
    fn split_values(&self, left: &[f64], total: &[f64], w_l: f64, w_r: f64) -> (f64, f64) {
        first_means(left, total, w_l, w_r)
    }
    fn bin_width(&self, _n_outputs: usize) -> usize {
        1
    }
    #[inline(always)]
    fn bin_slot(&self, s: usize) -> (usize, f64) {
        (0, self.row_sums[s])
    }
    fn scan<'s>(
        &'s self,
        total: &[f64],
        left: &'s mut [f64],
        right: &'s mut [f64],
    ) -> Self::Scan<'s> {
        left.fill(0.0);
        right.copy_from_slice(total);
        let s_r = total[1..1 + self.k].iter().sum();
        SumScan::new(self.row_sums, s_r, self.scale(total))
    }
}

/// Half Poisson deviance over k >= 1 non-negative real outputs (scikit-learn's
/// "poisson"): per output `(1/w) sum w (y log(y / mean) - y + mean)`, averaged over
/// outputs; statistics `[w, sum w y_o (k), sum w y_o ln y_o (k)]`, proxy
/// `(1/k) sum_o S_o ln(S_o / w)` per child (`S_o = sum w y_o`). As in scikit-learn, a
/// split that leaves a child some output's sum at or below `f64::EPSILON` is never taken
/// (its proxy is -inf: that child's mean would be 0, its log-likelihood -inf). A node
/// whose sum is 0 (all its targets 0) is pure: impurity 0.
#[derive(Clone, Copy)]
pub(crate) struct Poisson<'a> {
    /// Targets, n × k row-major.
    pub(crate) y: &'a [f64],
    /// Outputs.
    pub(crate) k: usize,
}

/// `x ln(x / w)`, 0 when `x <= 0`.
#[inline(always)]
fn x_ln_mean(x: f64, w: f64) -> f64 {
    if x > 0.0 {
        x * (x / w).ln()
    } else {
        0.0
    }
}

impl<'a> Criterion for Poisson<'a> {
    type Scan<'s>
        = SumsScan<'s, PoissonRule>
    where
        Self: 's;

    fn split_values(&self, left: &[f64], total: &[f64], w_l: f64, w_r: f64) -> (f64, f64) {
        first_means(left, total, w_l, w_r)
    }

    fn stat_len(&self, _n_outputs: usize) -> usize {
        1 + 2 * self.k
    }
    #[inline(always)]
    fn add_sample(&self, sums: &mut [f64], s: usize, w: f64) {
        let k = self.k;
        sums[0] += w;
        for (o, &y) in self.y[s * k..(s + 1) * k].iter().enumerate() {
            sums[1 + o] += w * y;
            if y > 0.0 {
                sums[1 + k + o] += w * y * y.ln();
            }
        }
    }
    fn impurity(&self, sums: &[f64], w: f64) -> f64 {
        let k = self.k;
        let total: f64 = (0..k)
            .map(|o| ((sums[1 + k + o] - x_ln_mean(sums[1 + o], w)) / w).max(0.0))
            .sum();
        total / k as f64
    }
    fn push_value(&self, sums: &[f64], w: f64, out: &mut Vec<f64>) {
        push_means(sums, self.k, w, out)
    }
    fn node_proxy(&self, sums: &[f64], w: f64) -> f64 {
        sums[1..1 + self.k]
            .iter()
            .map(|&s| x_ln_mean(s, w))
            .sum::<f64>()
            / self.k as f64
    }
    fn split_proxy(&self, left: &[f64], total: &[f64], w_l: f64, w_r: f64) -> f64 {
        let r = 1..1 + self.k;
        let mut p = 0.0;
        for (&l, &t) in left[r.clone()].iter().zip(&total[r]) {
            let rr = t - l;
            if l <= f64::EPSILON || rr <= f64::EPSILON {
                return f64::NEG_INFINITY;
            }
            p += x_ln_mean(l, w_l) + x_ln_mean(rr, w_r);
        }
        p / self.k as f64
    }
    fn binned(&self) -> bool {
        self.k == 1
    }
    fn bin_width(&self, _n_outputs: usize) -> usize {
        1
    }
    #[inline(always)]
    fn bin_slot(&self, s: usize) -> (usize, f64) {
        (0, self.y[s * self.k])
    }
    fn scan<'s>(
        &'s self,
        total: &[f64],
        left: &'s mut [f64],
        right: &'s mut [f64],
    ) -> Self::Scan<'s> {
        SumsScan::new(self.y, self.k, total, left, right)
    }
}

/// Appends the means of `k` outputs from statistics `[w, sum w y_o (k), ..]` of a node of
/// weight `w` (0 for an empty node).
fn push_means(sums: &[f64], k: usize, w: f64, out: &mut Vec<f64>) {
    out.extend(
        sums[1..1 + k]
            .iter()
            .map(|s| if w > 0.0 { s / w } else { 0.0 }),
    );
}

/// How a [`SumsScan`] scores one output's children from their weighted target sums
/// `l`, `r` and weights `w_l`, `w_r`: the output's share of the proxy, or `None` when the
/// split must not be taken.
pub(crate) trait SumsRule {
    fn pair(l: f64, r: f64, w_l: f64, w_r: f64) -> Option<f64>;
}

/// `S_o^2 / w` per child ([`MultiSquaredError`]).
pub(crate) struct Squared;

/// `S_o ln(S_o / w)` per child, refusing a sum at or below epsilon ([`Poisson`]).
pub(crate) struct PoissonRule;

impl SumsRule for Squared {
    #[inline(always)]
    fn pair(l: f64, r: f64, w_l: f64, w_r: f64) -> Option<f64> {
        Some(l * l / w_l + r * r / w_r)
    }
}

impl SumsRule for PoissonRule {
    #[inline(always)]
    fn pair(l: f64, r: f64, w_l: f64, w_r: f64) -> Option<f64> {
        if l <= f64::EPSILON || r <= f64::EPSILON {
            return None;
        }
        Some(l * (l / w_l).ln() + r * (r / w_r).ln())
    }
}

/// Running statistics of criteria whose proxy needs each output's weighted target sum per
/// child: `s_l[o]`, `s_r[o]` (in the scan's scratch), scored by rule `R`: the mean over
/// outputs of [`SumsRule::pair`], or -inf when some output refuses the split.
pub(crate) struct SumsScan<'a, R> {
    y: &'a [f64],
    k: usize,
    s_l: &'a mut [f64],
    s_r: &'a mut [f64],
    rule: PhantomData<fn() -> R>,
}

impl<'a, R> SumsScan<'a, R> {
    fn new(
        y: &'a [f64],
        k: usize,
        total: &[f64],
        left: &'a mut [f64],
        right: &'a mut [f64],
    ) -> Self {
        let (s_l, s_r) = (&mut left[..k], &mut right[..k]);
        s_l.fill(0.0);
        s_r.copy_from_slice(&total[1..1 + k]);
        SumsScan {
            y,
            k,
            s_l,
            s_r,
            rule: PhantomData,
        }
    }
}

impl<R: SumsRule> ScanStats for SumsScan<'_, R> {
    #[inline(always)]
    fn prefetch(&self, s: usize) {
        crate::prefetch::prefetch(self.y, s * self.k);
    }
    #[inline(always)]
    fn move_left(&mut self, s: usize, w: f64) {
        let k = self.k;
        for (o, &y) in self.y[s * k..(s + 1) * k].iter().enumerate() {
            self.s_l[o] += w * y;
            self.s_r[o] -= w * y;
        }
    }
    #[inline(always)]
    fn move_bin(&mut self, bin: &[f64]) {
        for (o, &b) in bin.iter().enumerate().take(self.k) {
            self.s_l[o] += b;
            self.s_r[o] -= b;
        }
    }
    #[inline(always)]
    fn proxy(&self, w_l: f64, w_r: f64) -> f64 {
        let mut p = 0.0;
        for (&l, &r) in self.s_l.iter().zip(self.s_r.iter()) {
            match R::pair(l, r, w_l, w_r) {
                Some(v) => p += v,
                None => return f64::NEG_INFINITY,
            }
        }
        p / self.k as f64
    }
    #[inline(always)]
    fn child_values(&self, w_l: f64, w_r: f64) -> (f64, f64) {
        // the means of a single output (several outputs refuse monotonic constraints)
        (self.s_l[0] / w_l, self.s_r[0] / w_r)
    }
}
