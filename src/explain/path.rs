//! The path-dependent game's exact Shapley values for one tree and one row (see the
//! module docs of [`crate::explain`]).
//!
//! On a root-to-leaf path the leaf's weight in `v(S)` is the product of the node factors
//! `r + (a - r)·[F ⊆ S]` (`r` the cover fraction of the child taken, `a` whether the row
//! itself goes there, `F` the node's features). The factors of one-feature nodes are
//! gathered per feature: feature `f`'s nodes multiply to `z_f` when `f ∉ S` and `o_f` when
//! `f ∈ S` (TreeSHAP's zero and one fractions). The factors of nodes with several features
//! are multiplied out into terms `c · [M ⊆ S]`, merged when their sets `M` agree, and
//! dropped when a feature of `M` has `o_f = 0`. So the leaf's weight is
//! `Σ_terms c Π_{f∈M} o_f s_f Π_{f∉M} (z_f (1 - s_f) + o_f s_f)` — a single term (`M = ∅`,
//! `c = 1`) for an axis tree.
//!
//! Owen's formula gives feature `i` the value `∫₀¹ ∂_i V(t) dt`, where `V(t)` is the
//! weight's expectation when each feature is in `S` independently with probability `t`:
//! a polynomial in `t` of degree at most the path's distinct features, so the integral is
//! exact on a Gauss-Legendre rule of half as many points. At each point the walk keeps the
//! product `Π_f L_f(t)` of the features' expected factors `L_f(t) = z_f (1 - t) + o_f t`
//! (each node multiplies one factor in on the way down; the levels above are kept for the
//! way back), and the reciprocals `1 / L_f(t)`. A term's expectation is
//! `c Π_f L_f(t) Π_{f∈M} (o_f t / L_f(t))`, and its derivative in feature `i` is that
//! divided by `t` when `i ∈ M`, else times `(o_i - z_i) / L_i(t)`. Every factor is a sum
//! of non-negative parts: no cancellation, no division chain. For an axis tree this is
//! TreeSHAP's game and values; its cost a leaf is the path's features times the points.

use super::{Limits, Prepared, Sink, TooBig};

/// Buffers of the walk, reused across trees and rows.
pub(crate) struct PathScratch {
    /// (node, parent, depth) still to visit.
    stack: Vec<(u32, u32, u32)>,
    /// The child the row itself goes to, per inner node.
    xgo: Vec<u32>,
    /// Features of the data.
    p: usize,
    /// The path's state.
    path: PathState,
}

impl PathScratch {
    pub(crate) fn new(p: usize) -> Self {
        PathScratch {
            stack: Vec::new(),
            xgo: Vec::new(),
            p,
            path: PathState::default(),
        }
    }
}

/// Adds tree `tree`'s exact path-dependent Shapley values of row `x` (times its leaf
/// values) to `sink`.
pub(crate) fn explain(
    tree: &Prepared<'_>,
    x: &[f64],
    limits: Limits,
    s: &mut PathScratch,
    sink: &mut Sink,
    mut pairs: Option<&mut [f64]>,
) -> Result<(), TooBig> {
    let t = tree.tree;
    if s.xgo.len() < t.n_nodes() {
        s.xgo.resize(t.n_nodes(), 0);
    }
    s.stack.clear();
    s.path.reset(tree, s.p);
    s.stack.push((0, u32::MAX, 0));
    while let Some((node, parent, depth)) = s.stack.pop() {
        if depth > 0 {
            s.path.undo_to(depth);
            let r = tree.frac[node as usize];
            let a = f64::from(u8::from(s.xgo[parent as usize] == node));
            if !s
                .path
                .apply(tree.features(parent as usize), (r, a), depth, limits)?
            {
                continue; // every leaf below weighs 0
            }
        }
        let node = node as usize;
        if t.is_leaf(node) {
            s.path.leaf(depth, sink, t.leaf_value(node));
            if let Some(out) = pairs.as_deref_mut() {
                s.path.leaf_pairs(depth, out, s.p, t.leaf_value(node));
            }
            continue;
        }
        s.xgo[node] = tree.child_by(node, |j| x[j]) as u32;
        let (l, r) = (t.left[node], t.right[node]);
        s.stack.push((r, node as u32, depth + 1));
        s.stack.push((l, node as u32, depth + 1));
    }
    Ok(())
}

/// A path's features, their factors at the rule's points, and its terms.
#[derive(Default)]
struct PathState {
    /// Points of the rule (before padding to a multiple of 4).
    n: usize,
    /// Points and weights of the rule on [0, 1], padded with weight 0.
    t: Vec<f64>,
    w: Vec<f64>,
    /// `Π_f L_f(t)` at the points, per depth (`t.len()` each).
    full: Vec<f64>,
    /// Per feature: (z, o) while on the path, its slot (position in `uniq`), and the
    /// reciprocals of `L_f` at the points (`t.len()` each).
    zo: Vec<(f64, f64)>,
    slot: Vec<u32>,
    on: Vec<bool>,
    recip: Vec<f64>,
    /// The path's distinct features, in the order met (slot `i` is `uniq[i]`).
    uniq: Vec<u32>,
    /// (depth, feature, its (z, o) before, whether the step brought it).
    undo: Vec<(u32, u32, (f64, f64), bool)>,
    /// Terms (set of slots, coefficient) of every level, and per level (depth, start).
    terms: Vec<(u128, f64)>,
    levels: Vec<(u32, usize)>,
    /// Leaf scratch: weights times the product, per term its values at the points, and
    /// per slot the sums of its terms.
    wf: Vec<f64>,
    term_q: Vec<f64>,
    rho: Vec<f64>,
    total: Vec<f64>,
    within: Vec<f64>,
    next: Vec<(u128, f64)>,
    spill: Vec<(u128, f64)>,
}

/// Slots a term's set can name.
const MAX_SLOTS: usize = 128;

impl PathState {
    fn reset(&mut self, tree: &Prepared<'_>, p: usize) {
        // V(t) has degree at most the path's distinct features; the rule of n points
        // integrates its derivatives (degree one less) exactly when 2n - 1 >= d - 1
        let d = tree.max_path_features.max(1);
        let n = d.div_ceil(2);
        if self.n != n || self.t.is_empty() {
            let padded = n.div_ceil(4) * 4;
            (self.t, self.w) = gauss_legendre(n);
            self.t.resize(padded, 0.5);
            self.w.resize(padded, 0.0);
            self.n = n;
        }
        let np = self.t.len();
        self.full.clear();
        self.full.resize(np, 1.0);
        self.zo.clear();
        self.zo.resize(p, (1.0, 1.0));
        self.slot.resize(p, 0);
        self.on.clear();
        self.on.resize(p, false);
        self.recip.clear();
        self.recip.resize(p * np, 1.0);
        self.uniq.clear();
        self.undo.clear();
        self.terms.clear();
        self.terms.push((0, 1.0));
        self.levels.clear();
        self.levels.push((0, 0));
    }

    /// Undoes every step made at depth `depth` or deeper.
    fn undo_to(&mut self, depth: u32) {
        while let Some(&(d, f, zo, new)) = self.undo.last() {
            if d < depth {
                break;
            }
            self.undo.pop();
            let fi = f as usize;
            self.zo[fi] = zo;
            if new {
                self.on[fi] = false;
                self.uniq.pop();
            }
            self.set_recip(fi);
        }
        while self.levels.len() > 1 && self.levels.last().expect("non-empty").0 >= depth {
            let (_, start) = self.levels.pop().expect("non-empty");
            self.terms.truncate(start);
        }
    }

    /// `recip[f]` = `1 / L_f(t)` at every point.
    fn set_recip(&mut self, f: usize) {
        let np = self.t.len();
        let (z, o) = self.zo[f];
        let e = o - z;
        for (r, t) in self.recip[f * np..(f + 1) * np].iter_mut().zip(&self.t) {
            *r = 1.0 / (z + e * t);
        }
    }

    /// Puts feature `f` on the path (with `z = o = 1`) at `depth`, if it is not.
    fn enter(&mut self, f: u32, depth: u32) -> Result<(), TooBig> {
        let fi = f as usize;
        if !self.on[fi] {
            if self.uniq.len() == MAX_SLOTS {
                return Err(TooBig);
            }
            self.undo.push((depth, f, self.zo[fi], true));
            self.on[fi] = true;
            self.slot[fi] = self.uniq.len() as u32;
            self.uniq.push(f);
        }
        Ok(())
    }

    /// Applies the factor of a step at `depth` from a node with features `feats`, with
    /// cover fraction `r` and `a` = whether the row goes that way; false when every leaf
    /// below weighs 0.
    fn apply(
        &mut self,
        feats: &[u32],
        (r, a): (f64, f64),
        depth: u32,
        limits: Limits,
    ) -> Result<bool, TooBig> {
        let np = self.t.len();
        let d = depth as usize;
        if self.full.len() < (d + 1) * np {
            self.full.resize((d + 1) * np, 0.0);
        }
        for &f in feats {
            self.enter(f, depth)?;
        }
        let (above, here) = self.full.split_at_mut(d * np);
        let (above, here) = (&above[(d - 1) * np..], &mut here[..np]);
        if let [f] = feats {
            // one feature: its (z, o) take the factor
            let fi = *f as usize;
            let (z, o) = self.zo[fi];
            self.undo.push((depth, *f, (z, o), false));
            let (z2, o2) = (z * r, o * a);
            self.zo[fi] = (z2, o2);
            if z2 == 0.0 && o2 == 0.0 {
                return Ok(false);
            }
            let old = &self.recip[fi * np..(fi + 1) * np];
            let e2 = o2 - z2;
            for q in 0..np {
                here[q] = above[q] * old[q] * (z2 + e2 * self.t[q]);
            }
            self.set_recip(fi);
            return Ok(true);
        }
        here.copy_from_slice(above);
        if feats.is_empty() {
            // no feature: always followed as the row goes
            self.multiply_terms(0, a, 0.0, depth, limits)?;
        } else {
            let mut fm = 0u128;
            for &f in feats {
                fm |= 1u128 << self.slot[f as usize];
            }
            self.multiply_terms(fm, r, a - r, depth, limits)?;
        }
        Ok(self.terms.len() > self.levels.last().expect("a level").1)
    }

    /// A new level of terms: each term `(M, c)` of the current level becomes
    /// `(M, c·r)` and `(M ∪ F, c·d)` (`F` the bits `fm`), one term `(M, c·(r + d))` when
    /// `F ⊆ M`; terms with a feature whose `o` is 0 dropped, equal sets merged.
    fn multiply_terms(
        &mut self,
        fm: u128,
        r: f64,
        d: f64,
        depth: u32,
        limits: Limits,
    ) -> Result<(), TooBig> {
        let depth_start = self.levels.last().expect("a level").1;
        let mut dead = 0u128;
        for (i, &f) in self.uniq.iter().enumerate() {
            if self.zo[f as usize].1 == 0.0 {
                dead |= 1u128 << i;
            }
        }
        // the level's terms are sorted by set: those that keep their set stay in order,
        // those moved to M ∪ F are sorted apart, and the two lists merge
        self.next.clear();
        self.spill.clear();
        for &(m, c) in &self.terms[depth_start..] {
            if m & dead != 0 {
                continue;
            }
            if m & fm == fm {
                self.next.push((m, c * (r + d)));
            } else {
                self.next.push((m, c * r));
                if (m | fm) & dead == 0 {
                    self.spill.push((m | fm, c * d));
                }
            }
        }
        self.spill.sort_unstable_by_key(|t| t.0);
        let start = self.terms.len();
        let (mut i, mut j) = (0, 0);
        while i < self.next.len() || j < self.spill.len() {
            let take_next =
                j == self.spill.len() || (i < self.next.len() && self.next[i].0 <= self.spill[j].0);
            let (m, c) = if take_next {
                i += 1;
                self.next[i - 1]
            } else {
                j += 1;
                self.spill[j - 1]
            };
            let n_new = self.terms.len() - start;
            match self.terms.last_mut() {
                Some(last) if n_new > 0 && last.0 == m => last.1 += c,
                _ => self.terms.push((m, c)),
            }
        }
        let mut keep = start;
        for i in start..self.terms.len() {
            if self.terms[i].1 != 0.0 {
                self.terms[keep] = self.terms[i];
                keep += 1;
            }
        }
        self.terms.truncate(keep);
        self.levels.push((depth, start));
        if keep - start > limits.max_terms {
            return Err(TooBig);
        }
        Ok(())
    }

    /// The values (times `value`) of the leaf at `depth` the path ends in.
    fn leaf(&mut self, depth: u32, sink: &mut Sink, value: &[f64]) {
        let np = self.t.len();
        let full = &self.full[depth as usize * np..(depth as usize + 1) * np];
        self.wf.clear();
        self.wf.extend(self.w.iter().zip(full).map(|(w, f)| w * f));
        let start = self.levels.last().expect("a level").1;
        let terms = &self.terms[start..];
        if let [(0, c)] = terms {
            // one term without sets: every axis tree, and paths without wider nodes
            let c = *c;
            for &f in &self.uniq {
                let (z, o) = self.zo[f as usize];
                let e = o - z;
                if e != 0.0 {
                    let integral = dot4(&self.wf, &self.recip[f as usize * np..][..np]);
                    sink.add(f as usize, c * e * integral, value);
                }
            }
            return;
        }
        if terms.is_empty() {
            return;
        }
        // per slot and point: o t / L(t); the slots whose o is 0 (their terms vanish)
        let ns = self.uniq.len();
        self.rho.clear();
        let mut dead = 0u128;
        for (slot, &f) in self.uniq.iter().enumerate() {
            let o = self.zo[f as usize].1;
            if o == 0.0 {
                dead |= 1u128 << slot;
            }
            let recip = &self.recip[f as usize * np..][..np];
            self.rho
                .extend(self.t.iter().zip(recip).map(|(t, r)| o * t * r));
        }
        // per point: every term's expectation, their total, and per slot the part of the
        // terms that hold it
        self.total.clear();
        self.total.resize(np, 0.0);
        self.within.clear();
        self.within.resize(ns * np, 0.0);
        self.term_q.resize(np, 0.0);
        let sums = TermSums {
            rho: &self.rho,
            total: &mut self.total,
            within: &mut self.within,
            term_q: &mut self.term_q,
        };
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx") {
            // SAFETY: the processor has AVX
            unsafe { sums.add_avx(terms, dead) };
        } else {
            sums.add(terms, dead);
        }
        #[cfg(not(target_arch = "x86_64"))]
        sums.add(terms, dead);
        for (slot, &f) in self.uniq.iter().enumerate() {
            let (z, o) = self.zo[f as usize];
            let e = o - z;
            let recip = &self.recip[f as usize * np..][..np];
            let within = &self.within[slot * np..][..np];
            let mut acc = [0.0f64; 4];
            for q in 0..np {
                let v = within[q] / self.t[q] + e * recip[q] * (self.total[q] - within[q]);
                acc[q % 4] += self.wf[q] * v;
            }
            let value_i = (acc[0] + acc[1]) + (acc[2] + acc[3]);
            if value_i != 0.0 {
                sink.add(f as usize, value_i, value);
            }
        }
    }
}

impl PathState {
    /// The Shapley interaction values `Φ_ij = ½ ∫₀¹ ∂_i ∂_j V(t) dt` (`i ≠ j`, the
    /// Shapley interaction index by Owen's extension, as shap's TreeSHAP interaction
    /// values) of the leaf at `depth`, times `value`, added to `out` (p × p × outputs).
    /// A term's mixed derivative is its value times `a_i a_j`, with `a_f = 1 / t` for a
    /// feature of its set and `(o_f - z_f) / L_f(t)` otherwise; summed over the terms
    /// through their totals: all, holding `i`, holding `i` and `j`.
    fn leaf_pairs(&mut self, depth: u32, out: &mut [f64], p: usize, value: &[f64]) {
        let np = self.t.len();
        let k = value.len();
        let full = &self.full[depth as usize * np..(depth as usize + 1) * np];
        self.wf.clear();
        self.wf.extend(self.w.iter().zip(full).map(|(w, f)| w * f));
        let start = self.levels.last().expect("a level").1;
        let ns = self.uniq.len();
        if ns < 2 || self.terms.len() == start {
            return;
        }
        // g_i(q) = (o_i - z_i) / L_i(t_q) per slot
        let mut g = vec![0.0; ns * np];
        for (slot, &f) in self.uniq.iter().enumerate() {
            let (z, o) = self.zo[f as usize];
            let recip = &self.recip[f as usize * np..][..np];
            for q in 0..np {
                g[slot * np + q] = (o - z) * recip[q];
            }
        }
        // per point: the total, per slot the terms holding it, per pair those holding both
        let (mut total, mut within, mut both) =
            (vec![0.0; np], vec![0.0; ns * np], vec![0.0; ns * ns * np]);
        let mut term_q = vec![0.0; np];
        let mut slots = Vec::new();
        for &(m, c) in &self.terms[start..] {
            term_q.iter_mut().for_each(|v| *v = c);
            slots.clear();
            let mut bits = m;
            while bits != 0 {
                let slot = bits.trailing_zeros() as usize;
                let (f, o) = (
                    self.uniq[slot] as usize,
                    self.zo[self.uniq[slot] as usize].1,
                );
                let recip = &self.recip[f * np..][..np];
                for q in 0..np {
                    term_q[q] *= o * self.t[q] * recip[q];
                }
                slots.push(slot);
                bits &= bits - 1;
            }
            for q in 0..np {
                total[q] += term_q[q];
            }
            for &a in &slots {
                for q in 0..np {
                    within[a * np + q] += term_q[q];
                }
                for &b in &slots {
                    for q in 0..np {
                        both[(a * ns + b) * np + q] += term_q[q];
                    }
                }
            }
        }
        for a in 0..ns {
            for b in a + 1..ns {
                let mut acc = 0.0;
                for q in 0..np {
                    let (ga, gb, t) = (g[a * np + q], g[b * np + q], self.t[q]);
                    let (wa, wb, tab) = (
                        within[a * np + q],
                        within[b * np + q],
                        both[(a * ns + b) * np + q],
                    );
                    let v = ga * gb * (total[q] - wa - wb + tab)
                        + (gb * (wa - tab) + ga * (wb - tab)) / t
                        + tab / (t * t);
                    acc += self.wf[q] * v;
                }
                let half = 0.5 * acc;
                if half == 0.0 {
                    continue;
                }
                let (fa, fb) = (self.uniq[a] as usize, self.uniq[b] as usize);
                for c in 0..k {
                    out[(fa * p + fb) * k + c] += half * value[c];
                    out[(fb * p + fa) * k + c] += half * value[c];
                }
            }
        }
    }
}

/// A leaf's terms summed at the rule's points.
struct TermSums<'a> {
    /// Per slot and point: `o t / L(t)`.
    rho: &'a [f64],
    /// Per point: the sum of every term's expectation.
    total: &'a mut [f64],
    /// Per slot and point: the sum of the terms that hold the slot.
    within: &'a mut [f64],
    /// One term's expectation per point.
    term_q: &'a mut [f64],
}

impl TermSums<'_> {
    /// Adds the terms (those without a slot in `dead`).
    #[inline(always)]
    fn add(self, terms: &[(u128, f64)], dead: u128) {
        let np = self.term_q.len();
        for &(m, c) in terms {
            if m & dead != 0 {
                continue;
            }
            self.term_q.iter_mut().for_each(|v| *v = c);
            let mut bits = m;
            while bits != 0 {
                let slot = bits.trailing_zeros() as usize;
                let rho = &self.rho[slot * np..][..np];
                for (v, r) in self.term_q.iter_mut().zip(rho) {
                    *v *= r;
                }
                bits &= bits - 1;
            }
            for (v, q) in self.total.iter_mut().zip(self.term_q.iter()) {
                *v += q;
            }
            let mut bits = m;
            while bits != 0 {
                let slot = bits.trailing_zeros() as usize;
                let within = &mut self.within[slot * np..][..np];
                for (v, q) in within.iter_mut().zip(self.term_q.iter()) {
                    *v += q;
                }
                bits &= bits - 1;
            }
        }
    }

    /// [`TermSums::add`] compiled for AVX (the same operations, four points a time).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx")]
    unsafe fn add_avx(self, terms: &[(u128, f64)], dead: u128) {
        self.add(terms, dead);
    }
}

/// `Σ_q a_q b_q` over lengths that are multiples of 4, in four lanes summed in a fixed
/// order (the same bits whatever instructions the compiler picks).
#[inline]
fn dot4(a: &[f64], b: &[f64]) -> f64 {
    let mut acc = [0.0f64; 4];
    for (a, b) in a.chunks_exact(4).zip(b.chunks_exact(4)) {
        for l in 0..4 {
            acc[l] += a[l] * b[l];
        }
    }
    (acc[0] + acc[1]) + (acc[2] + acc[3])
}

/// The points and weights of the `n`-point Gauss-Legendre rule on [0, 1] (exact for
/// polynomials of degree up to `2n - 1`): the roots of the Legendre polynomial `P_n` by
/// Newton's method from Tricomi's estimates.
fn gauss_legendre(n: usize) -> (Vec<f64>, Vec<f64>) {
    let (mut t, mut w) = (vec![0.0; n], vec![0.0; n]);
    for i in 0..n {
        let mut x = (std::f64::consts::PI * (i as f64 + 0.75) / (n as f64 + 0.5)).cos();
        let mut dp = 1.0;
        for _ in 0..100 {
            // P_n(x) and P_n'(x) by the three-term recurrence
            let (mut p0, mut p1) = (1.0, x);
            for k in 2..=n {
                let p2 = ((2 * k - 1) as f64 * x * p1 - (k - 1) as f64 * p0) / k as f64;
                p0 = p1;
                p1 = p2;
            }
            let (pn, pn1) = if n == 1 { (x, 1.0) } else { (p1, p0) };
            dp = n as f64 * (x * pn - pn1) / (x * x - 1.0);
            let step = pn / dp;
            x -= step;
            if step.abs() < 1e-16 {
                break;
            }
        }
        // on [-1, 1]: weight 2 / ((1 - x²) P_n'(x)²); mapped to [0, 1]: halved
        t[i] = (1.0 - x) / 2.0;
        w[i] = 1.0 / ((1.0 - x * x) * dp * dp);
    }
    (t, w)
}
