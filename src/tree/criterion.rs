//! Impurity criteria: each criterion's math in one place.
//!
//! A [`Criterion`] says what statistics a node keeps (class weights, or the weight, the
//! weighted target sum and the weighted sum of squares), the node's impurity and value,
//! and a split's *proxy*: the sum of its children's [`Criterion::node_proxy`], cheap to
//! update while rows move from the right child to the left one ([`ScanStats`]).
//! Invariant: `proxy(left) + proxy(right) - proxy(node)` is the split's weighted impurity
//! decrease, so the best proxy is the best split.
//!
//! The split loops are generic over the criterion, so each (walk, criterion) pair
//! compiles to one loop without dynamic dispatch.

/// The statistics and impurity of one criterion over a tree's targets.
pub(crate) trait Criterion: Copy {
    /// The running statistics of a split scan.
    type Scan<'s>: ScanStats
    where
        Self: 's;

    /// Length of a node's statistics vector.
    fn stat_len(&self, n_outputs: usize) -> usize;
    /// Adds row `s` with weight `w` to a node's statistics.
    fn add_sample(&self, sums: &mut [f64], s: usize, w: f64);
    /// Impurity of a node with statistics `sums` and weight `w > 0`.
    fn impurity(&self, sums: &[f64], w: f64) -> f64;
    /// Appends the node's value (class distribution, or the mean) to `out`.
    fn push_value(&self, sums: &[f64], w: f64, out: &mut Vec<f64>);
    /// The proxy of leaving a node with statistics `sums` and weight `w` unsplit.
    fn node_proxy(&self, sums: &[f64], w: f64) -> f64;
    /// The proxy of a split with left statistics `left` (filled by [`Self::add_sample`])
    /// out of the node's `total`, and child weights `w_l`, `w_r`.
    fn split_proxy(&self, left: &[f64], total: &[f64], w_l: f64, w_r: f64) -> f64;
    /// The children's monotone values ([`super::monotonic`]) of a split with left
    /// statistics `left` out of the node's `total`, and child weights `w_l`, `w_r`.
    fn split_values(&self, left: &[f64], total: &[f64], w_l: f64, w_r: f64) -> (f64, f64);
    /// Statistics per histogram bin.
    fn bin_width(&self, n_outputs: usize) -> usize;
    /// Where row `s`'s weight goes in its bin's statistics, and with what factor.
    fn bin_slot(&self, s: usize) -> (usize, f64);
    /// A scan starting with every row of a node with statistics `total` on the right;
    /// `left` and `right` are scratch of [`Self::stat_len`] entries.
    fn scan<'s>(
        &'s self,
        total: &[f64],
        left: &'s mut [f64],
        right: &'s mut [f64],
    ) -> Self::Scan<'s>;
}

/// Running split statistics of one criterion while rows move from the right child to the
/// left one in sorted order.
pub(crate) trait ScanStats {
    /// Moves row `sample` with weight `w` to the left child.
    fn move_left(&mut self, sample: usize, w: f64);
    /// Moves a histogram bin's statistics (see [`Criterion::bin_slot`]).
    fn move_bin(&mut self, bin: &[f64]);
    /// The proxy of the current split with child weights `w_l`, `w_r` (both > 0).
    fn proxy(&self, w_l: f64, w_r: f64) -> f64;
    /// The children's monotone values ([`super::monotonic`]): their means, or their
    /// probabilities of class 1.
    fn child_values(&self, w_l: f64, w_r: f64) -> (f64, f64);
}

/// Gini impurity `1 - sum_c p_c^2` over class codes; proxy `sum_c w_c^2 / w` per child.
#[derive(Clone, Copy)]
pub(crate) struct Gini<'a> {
    pub(crate) classes: &'a [u32],
}

/// Shannon entropy in bits over class codes; proxy `sum_c w_c log2 w_c - w log2 w` per
/// child (minus the child's weighted entropy).
#[derive(Clone, Copy)]
pub(crate) struct Entropy<'a> {
    pub(crate) classes: &'a [u32],
}

/// Squared error around the mean; statistics `[w, sum w y, sum w y^2]`, proxy
/// `(sum w y)^2 / w` per child.
#[derive(Clone, Copy)]
pub(crate) struct SquaredError<'a> {
    pub(crate) y: &'a [f64],
}

impl Gini<'_> {
    #[inline(always)]
    fn sum_sq(sums: &[f64]) -> f64 {
        sums.iter().map(|s| s * s).sum()
    }
}

impl<'a> Criterion for Gini<'a> {
    type Scan<'s>
        = GiniScan<'s>
    where
        Self: 's;

    fn stat_len(&self, n_outputs: usize) -> usize {
        n_outputs
    }
    #[inline(always)]
    fn add_sample(&self, sums: &mut [f64], s: usize, w: f64) {
        sums[self.classes[s] as usize] += w;
    }
    fn impurity(&self, sums: &[f64], w: f64) -> f64 {
        1.0 - sums.iter().map(|s| (s / w) * (s / w)).sum::<f64>()
    }
    fn push_value(&self, sums: &[f64], w: f64, out: &mut Vec<f64>) {
        push_distribution(sums, w, out)
    }
    fn node_proxy(&self, sums: &[f64], w: f64) -> f64 {
        Self::sum_sq(sums) / w
    }
    fn split_proxy(&self, left: &[f64], total: &[f64], w_l: f64, w_r: f64) -> f64 {
        let (mut a, mut b) = (0.0, 0.0);
        for (l, t) in left.iter().zip(total.iter()) {
            a += l * l;
            b += (t - l) * (t - l);
        }
        a / w_l + b / w_r
    }
    fn split_values(&self, left: &[f64], total: &[f64], w_l: f64, w_r: f64) -> (f64, f64) {
        class_one_shares(left, total, w_l, w_r)
    }
    fn bin_width(&self, n_outputs: usize) -> usize {
        n_outputs
    }
    #[inline(always)]
    fn bin_slot(&self, s: usize) -> (usize, f64) {
        (self.classes[s] as usize, 1.0)
    }
    fn scan<'s>(
        &'s self,
        total: &[f64],
        left: &'s mut [f64],
        right: &'s mut [f64],
    ) -> GiniScan<'s> {
        left.fill(0.0);
        right.copy_from_slice(total);
        let sq_r = Self::sum_sq(right);
        GiniScan {
            cls: self.classes,
            left,
            right,
            sq_l: 0.0,
            sq_r,
        }
    }
}

impl<'a> Criterion for Entropy<'a> {
    type Scan<'s>
        = EntropyScan<'s>
    where
        Self: 's;

    fn stat_len(&self, n_outputs: usize) -> usize {
        n_outputs
    }
    #[inline(always)]
    fn add_sample(&self, sums: &mut [f64], s: usize, w: f64) {
        sums[self.classes[s] as usize] += w;
    }
    fn impurity(&self, sums: &[f64], w: f64) -> f64 {
        -sums
            .iter()
            .filter(|&&s| s > 0.0)
            .map(|s| (s / w) * (s / w).log2())
            .sum::<f64>()
    }
    fn push_value(&self, sums: &[f64], w: f64, out: &mut Vec<f64>) {
        push_distribution(sums, w, out)
    }
    fn node_proxy(&self, sums: &[f64], w: f64) -> f64 {
        sums.iter().map(|&s| xlog2x(s)).sum::<f64>() - xlog2x(w)
    }
    fn split_proxy(&self, left: &[f64], total: &[f64], w_l: f64, w_r: f64) -> f64 {
        let mut s = -xlog2x(w_l) - xlog2x(w_r);
        for (l, t) in left.iter().zip(total.iter()) {
            s += xlog2x(*l) + xlog2x(t - l);
        }
        s
    }
    fn split_values(&self, left: &[f64], total: &[f64], w_l: f64, w_r: f64) -> (f64, f64) {
        class_one_shares(left, total, w_l, w_r)
    }
    fn bin_width(&self, n_outputs: usize) -> usize {
        n_outputs
    }
    #[inline(always)]
    fn bin_slot(&self, s: usize) -> (usize, f64) {
        (self.classes[s] as usize, 1.0)
    }
    fn scan<'s>(
        &'s self,
        total: &[f64],
        left: &'s mut [f64],
        right: &'s mut [f64],
    ) -> EntropyScan<'s> {
        left.fill(0.0);
        right.copy_from_slice(total);
        let t_r = right.iter().map(|&s| xlog2x(s)).sum();
        EntropyScan {
            cls: self.classes,
            left,
            right,
            t_l: 0.0,
            t_r,
        }
    }
}

impl<'a> Criterion for SquaredError<'a> {
    type Scan<'s>
        = SquaredErrorScan<'s>
    where
        Self: 's;

    fn stat_len(&self, _n_outputs: usize) -> usize {
        3
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
        out.push(if w > 0.0 { sums[1] / w } else { 0.0 });
    }
    fn node_proxy(&self, sums: &[f64], w: f64) -> f64 {
        sums[1] * sums[1] / w
    }
    fn split_proxy(&self, left: &[f64], total: &[f64], w_l: f64, w_r: f64) -> f64 {
        let (sl, sr) = (left[1], total[1] - left[1]);
        sl * sl / w_l + sr * sr / w_r
    }
    fn split_values(&self, left: &[f64], total: &[f64], w_l: f64, w_r: f64) -> (f64, f64) {
        (left[1] / w_l, (total[1] - left[1]) / w_r)
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
    ) -> SquaredErrorScan<'s> {
        left.fill(0.0);
        right.copy_from_slice(total);
        SquaredErrorScan {
            y: self.y,
            s_l: 0.0,
            s_r: total[1],
        }
    }
}

/// The weight shares of class 1 in the two children (0 without a class 1).
#[inline(always)]
fn class_one_shares(left: &[f64], total: &[f64], w_l: f64, w_r: f64) -> (f64, f64) {
    match (left.get(1), total.get(1)) {
        (Some(l), Some(t)) => (l / w_l, (t - l) / w_r),
        _ => (0.0, 0.0),
    }
}

/// Appends class weights over the node weight (all zeros for an empty node).
fn push_distribution(sums: &[f64], w: f64, out: &mut Vec<f64>) {
    out.extend(sums.iter().map(|s| if w > 0.0 { s / w } else { 0.0 }));
}

/// [`Gini`]'s running statistics: class weights and their sums of squares per child.
pub(crate) struct GiniScan<'a> {
    cls: &'a [u32],
    left: &'a mut [f64],
    right: &'a mut [f64],
    sq_l: f64,
    sq_r: f64,
}

impl GiniScan<'_> {
    /// Moves weight `w` of class `c` from the right child to the left one.
    #[inline(always)]
    fn move_class(&mut self, c: usize, w: f64) {
        self.sq_l += w * (2.0 * self.left[c] + w);
        self.sq_r -= w * (2.0 * self.right[c] - w);
        self.left[c] += w;
        self.right[c] -= w;
    }
}

impl ScanStats for GiniScan<'_> {
    #[inline(always)]
    fn move_left(&mut self, s: usize, w: f64) {
        self.move_class(self.cls[s] as usize, w);
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
        self.sq_l / w_l + self.sq_r / w_r
    }
    #[inline(always)]
    fn child_values(&self, w_l: f64, w_r: f64) -> (f64, f64) {
        let share = |sums: &[f64], w: f64| sums.get(1).map_or(0.0, |c| c / w);
        (share(self.left, w_l), share(self.right, w_r))
    }
}

/// [`Entropy`]'s running statistics: class weights and their sums of `w log2 w` per child.
pub(crate) struct EntropyScan<'a> {
    cls: &'a [u32],
    left: &'a mut [f64],
    right: &'a mut [f64],
    t_l: f64,
    t_r: f64,
}

impl EntropyScan<'_> {
    /// Moves weight `w` of class `c` from the right child to the left one.
    #[inline(always)]
    fn move_class(&mut self, c: usize, w: f64) {
        self.t_l += xlog2x(self.left[c] + w) - xlog2x(self.left[c]);
        self.t_r += xlog2x(self.right[c] - w) - xlog2x(self.right[c]);
        self.left[c] += w;
        self.right[c] -= w;
    }
}

impl ScanStats for EntropyScan<'_> {
    #[inline(always)]
    fn move_left(&mut self, s: usize, w: f64) {
        self.move_class(self.cls[s] as usize, w);
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
        self.t_l - xlog2x(w_l) + self.t_r - xlog2x(w_r)
    }
    #[inline(always)]
    fn child_values(&self, w_l: f64, w_r: f64) -> (f64, f64) {
        let share = |sums: &[f64], w: f64| sums.get(1).map_or(0.0, |c| c / w);
        (share(self.left, w_l), share(self.right, w_r))
    }
}

/// [`SquaredError`]'s running statistics: the weighted target sum per child.
pub(crate) struct SquaredErrorScan<'a> {
    y: &'a [f64],
    s_l: f64,
    s_r: f64,
}

impl ScanStats for SquaredErrorScan<'_> {
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
        self.s_l * self.s_l / w_l + self.s_r * self.s_r / w_r
    }
    #[inline(always)]
    fn child_values(&self, w_l: f64, w_r: f64) -> (f64, f64) {
        (self.s_l / w_l, self.s_r / w_r)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * (1.0 + a.abs().max(b.abs()))
    }

    /// Node statistics of rows `rows` (all weight `w[s]`).
    fn stats<C: Criterion>(c: &C, k: usize, rows: &[usize], w: &[f64]) -> (Vec<f64>, f64) {
        let mut sums = vec![0.0; c.stat_len(k)];
        let mut total = 0.0;
        for &s in rows {
            c.add_sample(&mut sums, s, w[s]);
            total += w[s];
        }
        (sums, total)
    }

    /// Checks the criterion's invariants on every split of `0..n` in order: the running
    /// scan, the one-shot split proxy and the node proxies agree, and the proxy gain is the
    /// weighted impurity decrease at every position.
    fn check_criterion<C: Criterion>(c: C, k: usize, n: usize, w: &[f64]) {
        let rows: Vec<usize> = (0..n).collect();
        let (total, w_node) = stats(&c, k, &rows, w);
        let parent = c.node_proxy(&total, w_node);
        let (mut left, mut right) = (vec![0.0; total.len()], vec![0.0; total.len()]);
        let mut scan = c.scan(&total, &mut left, &mut right);
        let mut w_l = 0.0;
        for i in 0..n - 1 {
            scan.move_left(i, w[i]);
            w_l += w[i];
            let w_r = w_node - w_l;
            let (l, _) = stats(&c, k, &rows[..=i], w);
            let (r, _) = stats(&c, k, &rows[i + 1..], w);
            let running = scan.proxy(w_l, w_r);
            let one_shot = c.split_proxy(&l, &total, w_l, w_r);
            let by_children = c.node_proxy(&l, w_l) + c.node_proxy(&r, w_r);
            assert!(close(running, one_shot), "{running} vs {one_shot}");
            assert!(close(running, by_children), "{running} vs {by_children}");
            let decrease = w_node * c.impurity(&total, w_node)
                - w_l * c.impurity(&l, w_l)
                - w_r * c.impurity(&r, w_r);
            assert!(
                close(running - parent, decrease),
                "proxy gain {} vs decrease {decrease}",
                running - parent
            );
        }
    }

    #[test]
    fn gini_proxy_gain_is_the_impurity_decrease() {
        let classes = [0, 1, 1, 2, 0, 2, 2, 1, 0, 0];
        let w = [1.0, 2.0, 0.5, 1.0, 3.0, 1.0, 0.25, 1.0, 2.0, 1.0];
        check_criterion(Gini { classes: &classes }, 3, 10, &w);
    }

    #[test]
    fn entropy_proxy_gain_is_the_impurity_decrease() {
        let classes = [1, 1, 0, 0, 1, 0, 1, 1];
        let w = [1.0, 1.0, 2.0, 0.5, 1.0, 1.0, 3.0, 1.0];
        check_criterion(Entropy { classes: &classes }, 2, 8, &w);
    }

    #[test]
    fn squared_error_proxy_gain_is_the_impurity_decrease() {
        let y = [0.5, -1.0, 2.0, 3.5, 0.0, 1.0, -2.5, 4.0];
        let w = [1.0, 2.0, 1.0, 0.5, 1.0, 1.5, 1.0, 1.0];
        check_criterion(SquaredError { y: &y }, 1, 8, &w);
    }

    #[test]
    fn criteria_value_a_node_as_its_distribution_or_mean() {
        let classes = [0, 2, 2, 1];
        let w = [1.0, 1.0, 2.0, 0.0];
        let g = Gini { classes: &classes };
        let (sums, total) = stats(&g, 3, &[0, 1, 2, 3], &w);
        let mut v = Vec::new();
        g.push_value(&sums, total, &mut v);
        assert_eq!(v, vec![0.25, 0.0, 0.75]);
        assert!(close(g.impurity(&sums, total), 1.0 - 0.0625 - 0.5625));
        let e = Entropy { classes: &classes };
        assert!(close(
            e.impurity(&sums, total),
            -(0.25f64 * 0.25f64.log2() + 0.75 * 0.75f64.log2())
        ));
        let y = [1.0, 3.0, 5.0];
        let se = SquaredError { y: &y };
        let (sums, total) = stats(&se, 1, &[0, 1, 2], &[1.0, 1.0, 2.0]);
        v.clear();
        se.push_value(&sums, total, &mut v);
        assert_eq!(v, vec![3.5]);
        // mean 3.5: (6.25 + 0.25 + 2 * 2.25) / 4
        assert!(close(se.impurity(&sums, total), 2.75));
    }

    #[test]
    fn histogram_bins_move_like_their_rows() {
        // moving a bin's slots equals moving its rows one by one
        let classes = [0, 1, 1, 2, 0, 1];
        let w = [1.0, 2.0, 0.5, 1.0, 3.0, 1.0];
        let c = Gini { classes: &classes };
        let (total, _) = stats(&c, 3, &[0, 1, 2, 3, 4, 5], &w);
        let mut bin = vec![0.0; c.bin_width(3)];
        for (s, &ws) in w.iter().enumerate().take(3) {
            let (at, f) = c.bin_slot(s);
            bin[at] += f * ws;
        }
        let (mut l1, mut r1, mut l2, mut r2) =
            (vec![0.0; 3], vec![0.0; 3], vec![0.0; 3], vec![0.0; 3]);
        let mut by_rows = c.scan(&total, &mut l1, &mut r1);
        (0..3).for_each(|s| by_rows.move_left(s, w[s]));
        let mut by_bin = c.scan(&total, &mut l2, &mut r2);
        by_bin.move_bin(&bin);
        assert!(close(by_rows.proxy(3.5, 5.0), by_bin.proxy(3.5, 5.0)));
        let y = [1.0, -2.0, 4.0];
        let se = SquaredError { y: &y };
        let (total, _) = stats(&se, 1, &[0, 1, 2], &[1.0, 2.0, 1.0]);
        let (mut l1, mut r1) = (vec![0.0; 3], vec![0.0; 3]);
        let mut by_rows = se.scan(&total, &mut l1, &mut r1);
        by_rows.move_left(0, 1.0);
        by_rows.move_left(1, 2.0);
        let mut bin = [0.0];
        for (s, w) in [(0, 1.0), (1, 2.0)] {
            let (at, f) = se.bin_slot(s);
            bin[at] += f * w;
        }
        let (mut l2, mut r2) = (vec![0.0; 3], vec![0.0; 3]);
        let mut by_bin = se.scan(&total, &mut l2, &mut r2);
        by_bin.move_bin(&bin);
        assert!(close(by_rows.proxy(3.0, 1.0), by_bin.proxy(3.0, 1.0)));
    }
}
