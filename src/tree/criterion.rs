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
//!
//! Multi-output targets (k columns) have criteria of their own ([`MultiGini`],
//! [`MultiEntropy`], [`MultiSquaredError`]; [`Poisson`] takes any k), so the
//! single-output loops stay exactly what they were. Their statistics are the outputs'
//! blocks side by side (each output's class weights, or each output's sums), and a
//! node's impurity is the mean of its outputs' impurities, as in scikit-learn (which
//! divides its sums over outputs by `n_outputs`): the proxies carry the same `1 / k`, so
//! the invariant above holds for them too. Their rows each add to k slots of a bin, so
//! they are not binned ([`Criterion::binned`]).

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
    /// Completes a node's statistics from its rows after [`Self::add_sample`] saw each
    /// of them, for criteria whose statistics are not sums (the median's); a no-op for
    /// the others.
    #[inline(always)]
    fn finish_node(&self, _sums: &mut [f64], _rows: &[u32], _weights: &[f64]) {}
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
    /// [`Self::split_proxy`] of one split given by a threshold: `rows` with projected
    /// values `vals` go left when `<= t`, `left` holds the left rows' statistics. Criteria
    /// whose statistics are not sums ([`AbsoluteError`]) compute it from the rows.
    #[inline(always)]
    fn split_proxy_at(
        &self,
        left: &[f64],
        total: &[f64],
        (w_l, w_r): (f64, f64),
        _split: (&[u32], &[f32], f32, &[f64]),
    ) -> f64 {
        self.split_proxy(left, total, w_l, w_r)
    }
    /// Whether a histogram bin can hold this criterion's statistics ([`Self::bin_slot`]
    /// puts a row in one slot); when not, the split search always sorts.
    fn binned(&self) -> bool {
        true
    }
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
    /// Sees the whole order of a sorted scan before its first move (the rows sorted by
    /// projected value, with the row weights): criteria that cannot update a child
    /// incrementally in both directions ([`AbsoluteError`]) precompute the right
    /// children here; a no-op for the others.
    #[inline(always)]
    fn prepare(&mut self, _pairs: &[(f32, u32)], _weights: &[f64]) {}
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

impl<'a> Gini<'a> {
    /// A scan over class weights (`total` all on the right) borrowing only the codes.
    #[inline(always)]
    fn scan_over<'s>(self, total: &[f64], left: &'s mut [f64], right: &'s mut [f64]) -> GiniScan<'s>
    where
        'a: 's,
    {
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

impl<'a> Entropy<'a> {
    /// A scan over class weights (`total` all on the right) borrowing only the codes.
    #[inline(always)]
    fn scan_over<'s>(
        self,
        total: &[f64],
        left: &'s mut [f64],
        right: &'s mut [f64],
    ) -> EntropyScan<'s>
    where
        'a: 's,
    {
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
        self.scan_over(total, left, right)
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
        self.scan_over(total, left, right)
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

/// A class-weight scan ([`GiniScan`], [`EntropyScan`]) seen one class slot at a time, so
/// that [`MultiClassScan`] can move a row's k slots and scale the proxy by the outputs.
pub(crate) trait ClassMoves {
    /// Moves weight `w` of slot `c` from the right child to the left one.
    fn move_slot(&mut self, c: usize, w: f64);
    /// The proxy of the current split over `k` outputs whose blocks share the scan.
    fn proxy_over(&self, w_l: f64, w_r: f64, k: f64) -> f64;
}

impl ClassMoves for GiniScan<'_> {
    #[inline(always)]
    fn move_slot(&mut self, c: usize, w: f64) {
        self.move_class(c, w);
    }
    #[inline(always)]
    fn proxy_over(&self, w_l: f64, w_r: f64, k: f64) -> f64 {
        (self.sq_l / w_l + self.sq_r / w_r) / k
    }
}

impl ClassMoves for EntropyScan<'_> {
    #[inline(always)]
    fn move_slot(&mut self, c: usize, w: f64) {
        self.move_class(c, w);
    }
    #[inline(always)]
    fn proxy_over(&self, w_l: f64, w_r: f64, k: f64) -> f64 {
        (self.t_l + self.t_r) / k - xlog2x(w_l) - xlog2x(w_r)
    }
}

/// Running statistics of a multi-output class criterion: each row moves its k slots.
pub(crate) struct MultiClassScan<'a, S> {
    slots: &'a [u32],
    k: usize,
    inner: S,
}

impl<S: ClassMoves> ScanStats for MultiClassScan<'_, S> {
    #[inline(always)]
    fn move_left(&mut self, s: usize, w: f64) {
        for &c in &self.slots[s * self.k..(s + 1) * self.k] {
            self.inner.move_slot(c as usize, w);
        }
    }
    #[inline(always)]
    fn move_bin(&mut self, bin: &[f64]) {
        for (c, &w) in bin.iter().enumerate() {
            if w != 0.0 {
                self.inner.move_slot(c, w);
            }
        }
    }
    #[inline(always)]
    fn proxy(&self, w_l: f64, w_r: f64) -> f64 {
        self.inner.proxy_over(w_l, w_r, self.k as f64)
    }
    #[inline(always)]
    fn child_values(&self, _w_l: f64, _w_r: f64) -> (f64, f64) {
        (f64::NAN, f64::NAN) // monotonic constraints are refused here (ForestParams::check)
    }
}

/// Gini over k class outputs: the mean of the outputs' Gini impurities,
/// `1 - (1/k) sum_o sum_c p_oc^2`; proxy `sum_oc w_oc^2 / (k w)` per child.
#[derive(Clone, Copy)]
pub(crate) struct MultiGini<'a> {
    /// Each row's k slots, row-major (see [`crate::data::Targets::MultiClasses`]).
    pub(crate) slots: &'a [u32],
    /// Outputs.
    pub(crate) k: usize,
}

/// Entropy over k class outputs: the mean of the outputs' entropies (bits); proxy
/// `(1/k) sum_oc w_oc log2 w_oc - w log2 w` per child.
#[derive(Clone, Copy)]
pub(crate) struct MultiEntropy<'a> {
    /// Each row's k slots, row-major.
    pub(crate) slots: &'a [u32],
    /// Outputs.
    pub(crate) k: usize,
}

/// Adds a row's weight to each of its k slots.
#[inline(always)]
fn add_slots(slots: &[u32], k: usize, sums: &mut [f64], s: usize, w: f64) {
    for &c in &slots[s * k..(s + 1) * k] {
        sums[c as usize] += w;
    }
}

impl<'a> Criterion for MultiGini<'a> {
    type Scan<'s>
        = MultiClassScan<'s, GiniScan<'s>>
    where
        Self: 's;

    fn split_values(&self, _: &[f64], _: &[f64], _: f64, _: f64) -> (f64, f64) {
        (f64::NAN, f64::NAN) // monotonic constraints are refused here (ForestParams::check)
    }

    fn stat_len(&self, n_outputs: usize) -> usize {
        n_outputs
    }
    #[inline(always)]
    fn add_sample(&self, sums: &mut [f64], s: usize, w: f64) {
        add_slots(self.slots, self.k, sums, s, w);
    }
    fn impurity(&self, sums: &[f64], w: f64) -> f64 {
        1.0 - sums.iter().map(|s| (s / w) * (s / w)).sum::<f64>() / self.k as f64
    }
    fn push_value(&self, sums: &[f64], w: f64, out: &mut Vec<f64>) {
        push_distribution(sums, w, out)
    }
    fn node_proxy(&self, sums: &[f64], w: f64) -> f64 {
        Gini::sum_sq(sums) / (w * self.k as f64)
    }
    fn split_proxy(&self, left: &[f64], total: &[f64], w_l: f64, w_r: f64) -> f64 {
        Gini { classes: &[] }.split_proxy(left, total, w_l, w_r) / self.k as f64
    }
    fn binned(&self) -> bool {
        false
    }
    fn bin_width(&self, n_outputs: usize) -> usize {
        n_outputs
    }
    fn bin_slot(&self, s: usize) -> (usize, f64) {
        // never binned: a row has k slots
        (self.slots[s * self.k] as usize, 1.0)
    }
    fn scan<'s>(
        &'s self,
        total: &[f64],
        left: &'s mut [f64],
        right: &'s mut [f64],
    ) -> Self::Scan<'s> {
        MultiClassScan {
            slots: self.slots,
            k: self.k,
            inner: Gini {
                classes: self.slots,
            }
            .scan_over(total, left, right),
        }
    }
}

impl<'a> Criterion for MultiEntropy<'a> {
    type Scan<'s>
        = MultiClassScan<'s, EntropyScan<'s>>
    where
        Self: 's;

    fn split_values(&self, _: &[f64], _: &[f64], _: f64, _: f64) -> (f64, f64) {
        (f64::NAN, f64::NAN) // monotonic constraints are refused here (ForestParams::check)
    }

    fn stat_len(&self, n_outputs: usize) -> usize {
        n_outputs
    }
    #[inline(always)]
    fn add_sample(&self, sums: &mut [f64], s: usize, w: f64) {
        add_slots(self.slots, self.k, sums, s, w);
    }
    fn impurity(&self, sums: &[f64], w: f64) -> f64 {
        Entropy { classes: &[] }.impurity(sums, w) / self.k as f64
    }
    fn push_value(&self, sums: &[f64], w: f64, out: &mut Vec<f64>) {
        push_distribution(sums, w, out)
    }
    fn node_proxy(&self, sums: &[f64], w: f64) -> f64 {
        sums.iter().map(|&s| xlog2x(s)).sum::<f64>() / self.k as f64 - xlog2x(w)
    }
    fn split_proxy(&self, left: &[f64], total: &[f64], w_l: f64, w_r: f64) -> f64 {
        let s: f64 = left
            .iter()
            .zip(total.iter())
            .map(|(l, t)| xlog2x(*l) + xlog2x(t - l))
            .sum();
        s / self.k as f64 - xlog2x(w_l) - xlog2x(w_r)
    }
    fn binned(&self) -> bool {
        false
    }
    fn bin_width(&self, n_outputs: usize) -> usize {
        n_outputs
    }
    fn bin_slot(&self, s: usize) -> (usize, f64) {
        // never binned: a row has k slots
        (self.slots[s * self.k] as usize, 1.0)
    }
    fn scan<'s>(
        &'s self,
        total: &[f64],
        left: &'s mut [f64],
        right: &'s mut [f64],
    ) -> Self::Scan<'s> {
        MultiClassScan {
            slots: self.slots,
            k: self.k,
            inner: Entropy {
                classes: self.slots,
            }
            .scan_over(total, left, right),
        }
    }
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
        = SumsScan<'s>
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
        out.extend(
            sums[1..1 + self.k]
                .iter()
                .map(|s| if w > 0.0 { s / w } else { 0.0 }),
        );
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
    ) -> SumsScan<'s> {
        SumsScan::new(self.y, self.k, total, left, right, SumsProxy::Squared)
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
        = SumsScan<'s>
    where
        Self: 's;

    fn split_values(&self, left: &[f64], total: &[f64], w_l: f64, w_r: f64) -> (f64, f64) {
        // the means of a single output (several outputs refuse monotonic constraints)
        (left[1] / w_l, (total[1] - left[1]) / w_r)
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
        out.extend(
            sums[1..1 + self.k]
                .iter()
                .map(|s| if w > 0.0 { s / w } else { 0.0 }),
        );
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
    ) -> SumsScan<'s> {
        SumsScan::new(self.y, self.k, total, left, right, SumsProxy::Poisson)
    }
}

/// Which proxy a [`SumsScan`] computes from its children's weighted target sums.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum SumsProxy {
    /// `(1/k) sum_o S_o^2 / w` per child ([`MultiSquaredError`]).
    Squared,
    /// `(1/k) sum_o S_o ln(S_o / w)` per child, -inf for a sum at or below epsilon
    /// ([`Poisson`]).
    Poisson,
}

/// Running statistics of criteria whose proxy needs each output's weighted target sum per
/// child: `s_l[o]`, `s_r[o]` (in the scan's scratch).
pub(crate) struct SumsScan<'a> {
    y: &'a [f64],
    k: usize,
    s_l: &'a mut [f64],
    s_r: &'a mut [f64],
    kind: SumsProxy,
}

impl<'a> SumsScan<'a> {
    fn new(
        y: &'a [f64],
        k: usize,
        total: &[f64],
        left: &'a mut [f64],
        right: &'a mut [f64],
        kind: SumsProxy,
    ) -> Self {
        let (s_l, s_r) = (&mut left[..k], &mut right[..k]);
        s_l.fill(0.0);
        s_r.copy_from_slice(&total[1..1 + k]);
        SumsScan {
            y,
            k,
            s_l,
            s_r,
            kind,
        }
    }
}

impl ScanStats for SumsScan<'_> {
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
            p += match self.kind {
                SumsProxy::Squared => l * l / w_l + r * r / w_r,
                SumsProxy::Poisson => {
                    if l <= f64::EPSILON || r <= f64::EPSILON {
                        return f64::NEG_INFINITY;
                    }
                    l * (l / w_l).ln() + r * (r / w_r).ln()
                }
            };
        }
        p / self.k as f64
    }
    #[inline(always)]
    fn child_values(&self, w_l: f64, w_r: f64) -> (f64, f64) {
        // the means of a single output (several outputs refuse monotonic constraints)
        (self.s_l[0] / w_l, self.s_r[0] / w_r)
    }
}

/// Absolute error around the weighted median over k >= 1 real outputs (scikit-learn's
/// "absolute_error"): per output `(1/w) sum w |y - median|`, averaged over outputs; a
/// node's value is each output's weighted median (the mean of the two middle values when
/// the weight below the lower one is exactly half, as scikit-learn takes it).
///
/// Its statistics are not sums: a node's are `[w, (1/k) sum_o AD_o, median_0..]`
/// (`AD_o` the weighted absolute deviation), completed from the rows by
/// [`Criterion::finish_node`] (a sort per output, O(n log n)); the proxy of a child is
/// `-(1/k) sum_o AD_o`. A sorted scan precomputes every right child's deviation in one
/// backward pass ([`ScanStats::prepare`]) and adds the left child's row by row, each
/// with a running weighted median of two heaps: O(k n log n) per candidate, as
/// scikit-learn's; a random threshold's split is valued from its rows
/// ([`Criterion::split_proxy_at`]), O(k n log n) too. It is the slowest criterion (heap
/// updates per row instead of a few additions) and is never binned.
#[derive(Clone, Copy)]
pub(crate) struct AbsoluteError<'a> {
    /// Targets, n × k row-major.
    pub(crate) y: &'a [f64],
    /// Outputs.
    pub(crate) k: usize,
}

/// One heap entry of a [`RunningMedian`]: a target and its weight, ordered by target.
#[derive(Clone, Copy)]
struct Entry {
    y: f64,
    w: f64,
}

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        self.y.total_cmp(&o.y).is_eq()
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.y.total_cmp(&o.y)
    }
}

/// A weighted median under insertions: `lo` (a max-heap) holds the smallest targets
/// whose weight reaches half the total, `hi` (a min-heap) the rest; with the weights and
/// weighted sums of each side, the absolute deviation around the median `m = max(lo)`
/// is `m w_lo - s_lo + s_hi - m w_hi`.
#[derive(Default)]
pub(crate) struct RunningMedian {
    lo: std::collections::BinaryHeap<Entry>,
    hi: std::collections::BinaryHeap<std::cmp::Reverse<Entry>>,
    w_lo: f64,
    s_lo: f64,
    w_hi: f64,
    s_hi: f64,
}

impl RunningMedian {
    fn clear(&mut self) {
        self.lo.clear();
        self.hi.clear();
        (self.w_lo, self.s_lo, self.w_hi, self.s_hi) = (0.0, 0.0, 0.0, 0.0);
    }

    fn insert(&mut self, y: f64, w: f64) {
        if self.lo.peek().is_none_or(|top| y <= top.y) {
            self.lo.push(Entry { y, w });
            self.w_lo += w;
            self.s_lo += w * y;
        } else {
            self.hi.push(std::cmp::Reverse(Entry { y, w }));
            self.w_hi += w;
            self.s_hi += w * y;
        }
        let half = (self.w_lo + self.w_hi) / 2.0;
        while self.w_lo < half {
            let Some(std::cmp::Reverse(e)) = self.hi.pop() else {
                break;
            };
            self.w_hi -= e.w;
            self.s_hi -= e.w * e.y;
            self.w_lo += e.w;
            self.s_lo += e.w * e.y;
            self.lo.push(e);
        }
        while self.lo.len() > 1 {
            let top = self.lo.peek().copied().unwrap_or(Entry { y: 0.0, w: 0.0 });
            if self.w_lo - top.w < half {
                break;
            }
            self.lo.pop();
            self.w_lo -= top.w;
            self.s_lo -= top.w * top.y;
            self.w_hi += top.w;
            self.s_hi += top.w * top.y;
            self.hi.push(std::cmp::Reverse(top));
        }
    }

    /// Weighted absolute deviation around the median (0 when empty).
    fn deviation(&self) -> f64 {
        let Some(m) = self.lo.peek().map(|e| e.y) else {
            return 0.0;
        };
        (m * self.w_lo - self.s_lo + self.s_hi - m * self.w_hi).max(0.0)
    }

    /// The weighted median, scikit-learn's way (see [`AbsoluteError`]).
    fn median(&self) -> f64 {
        let Some(m) = self.lo.peek().map(|e| e.y) else {
            return 0.0;
        };
        match self.hi.peek() {
            Some(std::cmp::Reverse(up)) if self.w_lo == self.w_hi => (m + up.y) / 2.0,
            _ => m,
        }
    }
}

thread_local! {
    /// The running medians and right-child deviations of [`AbsoluteError`]'s scans on this
    /// thread (a tree grows on one thread, one scan at a time).
    static MEDIANS: std::cell::RefCell<(Vec<RunningMedian>, Vec<f64>)> =
        const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
}

impl<'a> Criterion for AbsoluteError<'a> {
    type Scan<'s>
        = AbsoluteErrorScan<'s>
    where
        Self: 's;

    fn split_values(&self, _: &[f64], _: &[f64], _: f64, _: f64) -> (f64, f64) {
        (f64::NAN, f64::NAN) // monotonic constraints are refused here (ForestParams::check)
    }

    fn stat_len(&self, _n_outputs: usize) -> usize {
        2 + self.k
    }
    #[inline(always)]
    fn add_sample(&self, sums: &mut [f64], _s: usize, w: f64) {
        sums[0] += w;
    }
    fn finish_node(&self, sums: &mut [f64], rows: &[u32], weights: &[f64]) {
        let k = self.k;
        let mut total = 0.0;
        MEDIANS.with_borrow_mut(|(medians, _)| {
            medians.resize_with(1, RunningMedian::default);
            let m = &mut medians[0];
            for o in 0..k {
                m.clear();
                for &s in rows {
                    m.insert(self.y[s as usize * k + o], weights[s as usize]);
                }
                total += m.deviation();
                sums[2 + o] = m.median();
            }
        });
        sums[1] = total / k as f64;
    }
    fn impurity(&self, sums: &[f64], w: f64) -> f64 {
        sums[1] / w
    }
    fn push_value(&self, sums: &[f64], _w: f64, out: &mut Vec<f64>) {
        out.extend_from_slice(&sums[2..2 + self.k]);
    }
    fn node_proxy(&self, sums: &[f64], _w: f64) -> f64 {
        -sums[1]
    }
    fn split_proxy(&self, _left: &[f64], _total: &[f64], _w_l: f64, _w_r: f64) -> f64 {
        // never called: the split search asks `split_proxy_at`, which sees the rows
        f64::NEG_INFINITY
    }
    fn split_proxy_at(
        &self,
        _left: &[f64],
        _total: &[f64],
        _w: (f64, f64),
        (rows, vals, t, weights): (&[u32], &[f32], f32, &[f64]),
    ) -> f64 {
        let k = self.k;
        MEDIANS.with_borrow_mut(|(medians, _)| {
            medians.resize_with(2.max(medians.len()), RunningMedian::default);
            let (l, r) = medians.split_at_mut(1);
            let (l, r) = (&mut l[0], &mut r[0]);
            let mut total = 0.0;
            for o in 0..k {
                l.clear();
                r.clear();
                for (&s, &v) in rows.iter().zip(vals) {
                    let side = if v <= t { &mut *l } else { &mut *r };
                    side.insert(self.y[s as usize * k + o], weights[s as usize]);
                }
                total += l.deviation() + r.deviation();
            }
            -total / k as f64
        })
    }
    fn binned(&self) -> bool {
        false
    }
    fn bin_width(&self, _n_outputs: usize) -> usize {
        1
    }
    fn bin_slot(&self, s: usize) -> (usize, f64) {
        // never binned
        (0, self.y[s * self.k])
    }
    fn scan<'s>(
        &'s self,
        _total: &[f64],
        _left: &'s mut [f64],
        _right: &'s mut [f64],
    ) -> AbsoluteErrorScan<'s> {
        AbsoluteErrorScan {
            y: self.y,
            k: self.k,
            moved: 0,
        }
    }
}

/// [`AbsoluteError`]'s running statistics: the left child's running medians (one per
/// output) and the right children's deviations by the number of rows moved, in the
/// thread's scratch ([`MEDIANS`]).
pub(crate) struct AbsoluteErrorScan<'a> {
    y: &'a [f64],
    k: usize,
    moved: usize,
}

impl ScanStats for AbsoluteErrorScan<'_> {
    fn prepare(&mut self, pairs: &[(f32, u32)], weights: &[f64]) {
        let (k, n) = (self.k, pairs.len());
        MEDIANS.with_borrow_mut(|(medians, right)| {
            medians.resize_with(k, RunningMedian::default);
            right.clear();
            right.resize(n + 1, 0.0);
            // right[i]: deviation of the rows pairs[i..], summed over outputs
            for (o, m) in medians.iter_mut().enumerate() {
                m.clear();
                for i in (1..n).rev() {
                    let s = pairs[i].1 as usize;
                    m.insert(self.y[s * k + o], weights[s]);
                    right[i] += m.deviation();
                }
                m.clear();
            }
        });
        self.moved = 0;
    }
    #[inline]
    fn move_left(&mut self, s: usize, w: f64) {
        let k = self.k;
        MEDIANS.with_borrow_mut(|(medians, _)| {
            for (o, m) in medians.iter_mut().enumerate().take(k) {
                m.insert(self.y[s * k + o], w);
            }
        });
        self.moved += 1;
    }
    fn move_bin(&mut self, _bin: &[f64]) {
        // never binned
    }
    #[inline]
    fn proxy(&self, _w_l: f64, _w_r: f64) -> f64 {
        MEDIANS.with_borrow(|(medians, right)| {
            let left: f64 = medians.iter().take(self.k).map(|m| m.deviation()).sum();
            -(left + right.get(self.moved).copied().unwrap_or(0.0)) / self.k as f64
        })
    }
    #[inline(always)]
    fn child_values(&self, _w_l: f64, _w_r: f64) -> (f64, f64) {
        (f64::NAN, f64::NAN) // monotonic constraints are refused here (ForestParams::check)
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
        let pairs: Vec<(f32, u32)> = (0..n as u32).map(|i| (i as f32, i)).collect();
        scan.prepare(&pairs, w);
        let mut w_l = 0.0;
        for i in 0..n - 1 {
            scan.move_left(i, w[i]);
            w_l += w[i];
            let w_r = w_node - w_l;
            let (l, _) = stats(&c, k, &rows[..=i], w);
            let (r, _) = stats(&c, k, &rows[i + 1..], w);
            let running = scan.proxy(w_l, w_r);
            let one_shot = c.split_proxy(&l, &total, w_l, w_r);
            if running == f64::NEG_INFINITY {
                // a refused split (Poisson: a child with zero sum) is refused both ways
                assert_eq!(one_shot, running);
                continue;
            }
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
    fn multi_output_criteria_proxy_gain_is_the_impurity_decrease() {
        // two outputs of 3 and 2 classes: slots 0..3 and 3..5
        let slots = [0, 3, 1, 4, 1, 3, 2, 4, 0, 4, 2, 3, 0, 3];
        let w = [1.0, 2.0, 0.5, 1.0, 3.0, 1.0, 0.25];
        check_criterion(
            MultiGini {
                slots: &slots,
                k: 2,
            },
            5,
            7,
            &w,
        );
        check_criterion(
            MultiEntropy {
                slots: &slots,
                k: 2,
            },
            5,
            7,
            &w,
        );
        let y = [
            0.5, 1.0, -1.0, 2.0, 2.0, 0.0, 3.5, -1.0, 0.0, 4.0, 1.0, 1.0, -2.5, 0.5,
        ];
        check_criterion(MultiSquaredError { y: &y, k: 2 }, 2, 7, &w);
        let counts = [
            0.0, 1.0, 2.0, 0.0, 3.0, 1.0, 1.0, 5.0, 0.0, 2.0, 4.0, 1.0, 2.0, 2.0,
        ];
        check_criterion(Poisson { y: &counts, k: 2 }, 2, 7, &w);
        check_criterion(
            Poisson {
                y: &counts[..7],
                k: 1,
            },
            1,
            7,
            &w,
        );
    }

    #[test]
    fn multi_output_impurity_is_the_mean_over_outputs() {
        // output 0 classes [0, 1], output 1 classes [0, 0]: Gini 0.5 and 0
        let slots = [0, 2, 1, 2];
        let g = MultiGini {
            slots: &slots,
            k: 2,
        };
        let (sums, total) = stats(&g, 3, &[0, 1], &[1.0, 1.0]);
        assert!(close(g.impurity(&sums, total), 0.25));
        let mut v = Vec::new();
        g.push_value(&sums, total, &mut v);
        assert_eq!(v, vec![0.5, 0.5, 1.0]);
        let y = [1.0, 10.0, 3.0, 10.0];
        let se = MultiSquaredError { y: &y, k: 2 };
        let (sums, total) = stats(&se, 2, &[0, 1], &[1.0, 1.0]);
        assert!(close(se.impurity(&sums, total), 0.5)); // variances 1 and 0
    }

    /// Weighted absolute deviation around the best constant, by brute force over the
    /// targets (the minimum of a piecewise-linear convex function lies at a target).
    fn brute_deviation(y: &[f64], w: &[f64]) -> f64 {
        y.iter()
            .map(|&m| y.iter().zip(w).map(|(v, w)| w * (v - m).abs()).sum::<f64>())
            .fold(f64::INFINITY, f64::min)
    }

    #[test]
    fn absolute_error_scan_matches_brute_force_and_median_matches_scikit_learn() {
        let y = [3.0, -1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0, 5.0, 3.0];
        let w = [1.0, 2.0, 0.5, 1.0, 3.0, 1.0, 0.25, 1.0, 2.0, 1.0];
        let c = AbsoluteError { y: &y, k: 1 };
        let n = y.len();
        let rows: Vec<u32> = (0..n as u32).collect();
        let mut sums = vec![0.0; c.stat_len(1)];
        rows.iter()
            .for_each(|&s| c.add_sample(&mut sums, s as usize, w[s as usize]));
        c.finish_node(&mut sums, &rows, &w);
        let w_node: f64 = w.iter().sum();
        assert!(close(sums[1], brute_deviation(&y, &w)));
        assert!(close(
            c.impurity(&sums, w_node) * w_node,
            brute_deviation(&y, &w)
        ));
        let (mut l, mut r) = (vec![0.0; 3], vec![0.0; 3]);
        let mut scan = c.scan(&sums, &mut l, &mut r);
        let pairs: Vec<(f32, u32)> = rows.iter().map(|&i| (i as f32, i)).collect();
        scan.prepare(&pairs, &w);
        let mut w_l = 0.0;
        for i in 0..n - 1 {
            scan.move_left(i, w[i]);
            w_l += w[i];
            let want =
                brute_deviation(&y[..=i], &w[..=i]) + brute_deviation(&y[i + 1..], &w[i + 1..]);
            assert!(close(-scan.proxy(w_l, w_node - w_l), want), "at {i}");
        }
        // the same splits given by a threshold on the values (random thresholds)
        let vals: Vec<f32> = (0..n).map(|s| s as f32).collect();
        let mut w_l = 0.0;
        for i in 0..n - 1 {
            w_l += w[i];
            let want =
                brute_deviation(&y[..=i], &w[..=i]) + brute_deviation(&y[i + 1..], &w[i + 1..]);
            let split = (&rows[..], &vals[..], i as f32, &w[..]);
            let at = c.split_proxy_at(&[], &sums, (w_l, w_node - w_l), split);
            assert!(close(-at, want), "threshold at {i}");
        }
        // scikit-learn's weighted medians: 2.5 for [1, 2, 3, 10]; with weights [1, 1, 2, 1]
        // it is 3; with [1, 2, 2, 1] the weight below 2 is exactly half: (2 + 3) / 2
        let y = [1.0, 2.0, 3.0, 10.0];
        let c = AbsoluteError { y: &y, k: 1 };
        for (w, want) in [
            ([1.0, 1.0, 1.0, 1.0], 2.5),
            ([1.0, 1.0, 2.0, 1.0], 3.0),
            ([1.0, 2.0, 2.0, 1.0], 2.5),
        ] {
            let mut sums = vec![0.0; 3];
            c.finish_node(&mut sums, &[0, 1, 2, 3], &w);
            let mut v = Vec::new();
            c.push_value(&sums, 4.0, &mut v);
            assert_eq!(v, vec![want]);
        }
    }

    #[test]
    fn poisson_refuses_a_child_with_zero_sum() {
        let y = [0.0, 0.0, 1.0, 3.0];
        let c = Poisson { y: &y, k: 1 };
        let total = [4.0, 4.0, 3.0 * 3f64.ln()];
        assert_eq!(
            c.split_proxy(&[2.0, 0.0, 0.0], &total, 2.0, 2.0),
            f64::NEG_INFINITY
        );
        assert!(c
            .split_proxy(&[3.0, 1.0, 0.0], &total, 3.0, 1.0)
            .is_finite());
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
