//! The path-dependent game's exact Shapley values for one tree and one row (see the
//! module docs of [`crate::explain`]).
//!
//! The tree is walked depth first; at each leaf the path's node factors
//! `r + (a - r)·[F ⊆ S]` are grouped into components (features that share a node), each
//! component multiplied out into its Möbius terms `c_M [M ⊆ S]`, and a feature `i` gets
//! `Σ_M c_M Σ_j W_j / (|M| + j)` over its component's terms with `i ∈ M`, where `W` is the
//! product of the other components' size polynomials `P_C(t) = Σ_M c_M t^|M|`. A
//! component of one feature has the two terms `z = Π r` (∅) and `o - z` (`{f}`, with
//! `o = Π a`), as TreeSHAP's zero and one fractions.

use super::{Limits, Prepared, Sink, TooBig};

/// Buffers of the walk, reused across trees and rows.
pub(crate) struct PathScratch {
    /// (node, parent, depth) still to visit.
    stack: Vec<(u32, u32, u32)>,
    /// The current path: (inner node, the child taken).
    steps: Vec<(u32, u32)>,
    /// The child the row itself goes to, per inner node.
    xgo: Vec<u32>,
    /// Per feature: its slot on the current path, valid while `stamp` is `cur`.
    slot: Vec<u32>,
    stamp: Vec<u32>,
    cur: u32,
    /// Features of the slots, in the order first met on the path.
    slot_feature: Vec<u32>,
    /// One-feature components: (z, o) per slot.
    zo: Vec<(f64, f64)>,
    /// Union-find parents over slots (oblique trees).
    parent: Vec<u32>,
    /// Polynomials: the product of all components', a quotient, a temporary.
    full: Vec<f64>,
    quotient: Vec<f64>,
    tmp: Vec<f64>,
    /// 1 / m for m in 0.. (index 0 unused).
    inv: Vec<f64>,
    /// Oblique components: member slots, steps, Möbius terms, per-slot shares.
    comps: Vec<Component>,
    terms: Vec<(u64, f64)>,
    next_terms: Vec<(u64, f64)>,
    share: Vec<f64>,
}

/// One component of an oblique path.
#[derive(Default)]
struct Component {
    /// Slots in the component, its local feature order.
    slots: Vec<u32>,
    /// The path steps whose features lie in the component.
    steps: Vec<u32>,
    /// Möbius terms (mask over `slots`, coefficient).
    terms: Vec<(u64, f64)>,
    /// `P_C(t)`: coefficient of `t^m` at `m`.
    poly: Vec<f64>,
}

impl PathScratch {
    pub(crate) fn new(p: usize) -> Self {
        PathScratch {
            stack: Vec::new(),
            steps: Vec::new(),
            xgo: Vec::new(),
            slot: vec![0; p],
            stamp: vec![0; p],
            cur: 0,
            slot_feature: Vec::new(),
            zo: Vec::new(),
            parent: Vec::new(),
            full: Vec::new(),
            quotient: Vec::new(),
            tmp: Vec::new(),
            inv: vec![0.0],
            comps: Vec::new(),
            terms: Vec::new(),
            next_terms: Vec::new(),
            share: Vec::new(),
        }
    }

    /// A new stamp: every feature's slot becomes stale.
    fn next_stamp(&mut self) {
        self.cur = self.cur.wrapping_add(1);
        if self.cur == 0 {
            self.stamp.fill(0);
            self.cur = 1;
        }
        self.slot_feature.clear();
    }

    /// The slot of feature `f` on the current path, made when new (`new` tells).
    #[inline]
    fn slot_of(&mut self, f: u32) -> (usize, bool) {
        let fi = f as usize;
        if self.stamp[fi] == self.cur {
            (self.slot[fi] as usize, false)
        } else {
            self.stamp[fi] = self.cur;
            let s = self.slot_feature.len();
            self.slot[fi] = s as u32;
            self.slot_feature.push(f);
            (s, true)
        }
    }

    fn ensure_inv(&mut self, m: usize) {
        while self.inv.len() <= m {
            let i = self.inv.len();
            self.inv.push(1.0 / i as f64);
        }
    }
}

/// Adds tree `tree`'s exact path-dependent Shapley values of row `x` (times its leaf
/// values) to `sink`.
pub(crate) fn explain(
    tree: &Prepared<'_>,
    x: &[f32],
    limits: Limits,
    s: &mut PathScratch,
    sink: &mut Sink,
) -> Result<(), TooBig> {
    let t = tree.tree;
    if s.xgo.len() < t.n_nodes() {
        s.xgo.resize(t.n_nodes(), 0);
    }
    s.stack.clear();
    s.steps.clear();
    s.stack.push((0, u32::MAX, 0));
    while let Some((node, parent, depth)) = s.stack.pop() {
        s.steps.truncate(depth.saturating_sub(1) as usize);
        if depth > 0 {
            s.steps.push((parent, node));
        }
        let node = node as usize;
        if t.is_leaf(node) {
            let value = t.leaf_value(node);
            if tree.axis {
                axis_leaf(tree, s, sink, value);
            } else {
                oblique_leaf(tree, limits, s, sink, value)?;
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

/// The cover fraction `r` and whether the row goes that way (`a`) of each path step.
#[inline]
fn step_factors(tree: &Prepared<'_>, xgo: &[u32], (node, child): (u32, u32)) -> (f64, f64) {
    let r = tree.cover(node as usize, child as usize);
    let a = f64::from(u8::from(xgo[node as usize] == child));
    (r, a)
}

/// A leaf of a tree whose splits each use one feature: TreeSHAP's case.
fn axis_leaf(tree: &Prepared<'_>, s: &mut PathScratch, sink: &mut Sink, value: &[f64]) {
    s.next_stamp();
    s.zo.clear();
    let mut constant = 1.0;
    for i in 0..s.steps.len() {
        let step = s.steps[i];
        let (r, a) = step_factors(tree, &s.xgo, step);
        match tree.features(step.0 as usize) {
            // no feature: always followed as the row goes
            [] => constant *= a,
            [f, ..] => {
                let (slot, new) = s.slot_of(*f);
                if new {
                    s.zo.push((r, a));
                } else {
                    s.zo[slot].0 *= r;
                    s.zo[slot].1 *= a;
                }
            }
        }
    }
    if constant == 0.0 || s.zo.is_empty() {
        return;
    }
    let d = s.zo.len();
    s.ensure_inv(d);
    s.full.clear();
    s.full.push(1.0);
    for &(z, o) in &s.zo {
        multiply_linear(&mut s.full, z, o - z);
    }
    for slot in 0..d {
        let (z, o) = s.zo[slot];
        let e = o - z;
        if e == 0.0 {
            continue;
        }
        divide_linear(&s.full, z, e, &mut s.quotient);
        let mut g = 0.0;
        for (j, w) in s.quotient.iter().enumerate() {
            g += w * s.inv[j + 1];
        }
        sink.add(s.slot_feature[slot] as usize, constant * e * g, value);
    }
}

/// `poly *= (z + e t)`.
#[inline]
fn multiply_linear(poly: &mut Vec<f64>, z: f64, e: f64) {
    poly.push(0.0);
    for m in (1..poly.len()).rev() {
        poly[m] = poly[m] * z + poly[m - 1] * e;
    }
    poly[0] *= z;
}

/// `out = full / (z + e t)` for a `full` that `(z + e t)` divides, dividing from the end
/// whose coefficient is the larger in magnitude (each step then multiplies the error by
/// at most 1).
#[inline]
fn divide_linear(full: &[f64], z: f64, e: f64, out: &mut Vec<f64>) {
    let d = full.len() - 1;
    out.clear();
    out.resize(d, 0.0);
    if d == 0 {
        return;
    }
    if z.abs() >= e.abs() {
        out[0] = full[0] / z;
        for m in 1..d {
            out[m] = (full[m] - e * out[m - 1]) / z;
        }
    } else {
        out[d - 1] = full[d] / e;
        for m in (1..d).rev() {
            out[m - 1] = (full[m] - z * out[m]) / e;
        }
    }
}

/// `out = a * b` (polynomials).
fn multiply(a: &[f64], b: &[f64], out: &mut Vec<f64>) {
    out.clear();
    out.resize(a.len() + b.len() - 1, 0.0);
    for (i, x) in a.iter().enumerate() {
        if *x == 0.0 {
            continue;
        }
        for (j, y) in b.iter().enumerate() {
            out[i + j] += x * y;
        }
    }
}

/// Union-find root of `i`, halving paths.
#[inline]
fn root(parent: &mut [u32], mut i: usize) -> usize {
    while parent[i] as usize != i {
        parent[i] = parent[parent[i] as usize];
        i = parent[i] as usize;
    }
    i
}

/// A leaf of a tree with oblique splits: components, their Möbius terms, the shares.
fn oblique_leaf(
    tree: &Prepared<'_>,
    limits: Limits,
    s: &mut PathScratch,
    sink: &mut Sink,
    value: &[f64],
) -> Result<(), TooBig> {
    s.next_stamp();
    s.parent.clear();
    let mut constant = 1.0;
    // slots, joined when they share a node
    for i in 0..s.steps.len() {
        let node = s.steps[i].0 as usize;
        let feats = tree.features(node);
        if feats.is_empty() {
            let (_, a) = step_factors(tree, &s.xgo, s.steps[i]);
            constant *= a;
            continue;
        }
        let mut first = usize::MAX;
        for &f in feats {
            let (slot, new) = s.slot_of(f);
            if new {
                s.parent.push(slot as u32);
            }
            if first == usize::MAX {
                first = root(&mut s.parent, slot);
            } else {
                let r = root(&mut s.parent, slot);
                if r != first {
                    // the smaller root stays: components keep first-met order
                    let (lo, hi) = (first.min(r), first.max(r));
                    s.parent[hi] = lo as u32;
                    first = lo;
                }
            }
        }
    }
    let n_slots = s.slot_feature.len();
    if constant == 0.0 || n_slots == 0 {
        return Ok(());
    }
    // components: one per root, members in slot order
    let mut comp_of = std::mem::take(&mut s.tmp);
    comp_of.clear();
    comp_of.resize(n_slots, f64::NAN); // component index as f64 (reused buffer)
    let mut n_comps = 0usize;
    let mut local = vec![0u32; n_slots];
    for slot in 0..n_slots {
        let r = root(&mut s.parent, slot);
        if comp_of[r].is_nan() {
            comp_of[r] = n_comps as f64;
            if s.comps.len() <= n_comps {
                s.comps.push(Component::default());
            }
            let c = &mut s.comps[n_comps];
            c.slots.clear();
            c.steps.clear();
            n_comps += 1;
        }
        let c = comp_of[r] as usize;
        local[slot] = s.comps[c].slots.len() as u32;
        s.comps[c].slots.push(slot as u32);
    }
    for i in 0..s.steps.len() {
        if let Some(&f) = tree.features(s.steps[i].0 as usize).first() {
            let r = root(&mut s.parent, s.slot[f as usize] as usize);
            s.comps[comp_of[r] as usize].steps.push(i as u32);
        }
    }
    s.tmp = comp_of;
    // each component's Möbius terms and size polynomial
    for c in 0..n_comps {
        if s.comps[c].slots.len() > 64 {
            return Err(TooBig);
        }
        mobius_terms(tree, limits, s, c, &local)?;
    }
    let d = n_slots;
    s.ensure_inv(d);
    s.full.clear();
    s.full.push(1.0);
    for c in 0..n_comps {
        let poly = std::mem::take(&mut s.comps[c].poly);
        multiply(&s.full, &poly, &mut s.quotient);
        std::mem::swap(&mut s.full, &mut s.quotient);
        s.comps[c].poly = poly;
    }
    for c in 0..n_comps {
        component_shares(s, c, n_comps);
        let comp = &s.comps[c];
        for (li, &slot) in comp.slots.iter().enumerate() {
            let share = s.share[li];
            if share != 0.0 {
                sink.add(s.slot_feature[slot as usize] as usize, constant * share, value);
            }
        }
    }
    Ok(())
}

/// Component `c`'s Möbius terms (merged by mask, zeros dropped) and size polynomial.
fn mobius_terms(
    tree: &Prepared<'_>,
    limits: Limits,
    s: &mut PathScratch,
    c: usize,
    local: &[u32],
) -> Result<(), TooBig> {
    let mut terms = std::mem::take(&mut s.terms);
    let mut next = std::mem::take(&mut s.next_terms);
    terms.clear();
    terms.push((0u64, 1.0));
    for &i in &s.comps[c].steps {
        let step = s.steps[i as usize];
        let (r, a) = step_factors(tree, &s.xgo, step);
        let mut fm = 0u64;
        for &f in tree.features(step.0 as usize) {
            fm |= 1u64 << local[s.slot[f as usize] as usize];
        }
        let d = a - r;
        next.clear();
        for &(m, coef) in &terms {
            if m & fm == fm {
                // F already inside M: the two terms meet, r + (a - r) = a
                if a != 0.0 {
                    next.push((m, coef * a));
                }
                continue;
            }
            if r != 0.0 {
                next.push((m, coef * r));
            }
            if d != 0.0 {
                next.push((m | fm, coef * d));
            }
        }
        next.sort_unstable_by_key(|t| t.0);
        terms.clear();
        for &(m, coef) in &next {
            match terms.last_mut() {
                Some(last) if last.0 == m => last.1 += coef,
                _ => terms.push((m, coef)),
            }
        }
        terms.retain(|t| t.1 != 0.0);
        if terms.len() > limits.max_terms {
            s.terms = terms;
            s.next_terms = next;
            return Err(TooBig);
        }
    }
    let comp = &mut s.comps[c];
    comp.poly.clear();
    comp.poly.resize(comp.slots.len() + 1, 0.0);
    for &(m, coef) in &terms {
        comp.poly[m.count_ones() as usize] += coef;
    }
    comp.terms.clear();
    comp.terms.extend_from_slice(&terms);
    s.terms = terms;
    s.next_terms = next;
    Ok(())
}

/// `s.share[i]`: the Shapley value of component `c`'s `i`-th feature (before the leaf
/// value), from the product `W` of the other components' polynomials.
fn component_shares(s: &mut PathScratch, c: usize, n_comps: usize) {
    let comp = &s.comps[c];
    let deg = comp.poly.len() - 1;
    let linear_divisor = deg == 1 && (comp.poly[0] != 0.0 || comp.poly[1] != 0.0);
    let mut w = std::mem::take(&mut s.quotient);
    if linear_divisor {
        divide_linear(&s.full, comp.poly[0], comp.poly[1], &mut w);
    } else {
        // the product of the others, multiplied out (no division by a wider polynomial)
        w.clear();
        w.push(1.0);
        let mut tmp = Vec::new();
        for (o, other) in s.comps[..n_comps].iter().enumerate() {
            if o != c {
                multiply(&w, &other.poly, &mut tmp);
                std::mem::swap(&mut w, &mut tmp);
            }
        }
    }
    // g[m] = Σ_j W_j / (m + j) for the sizes m of this component's terms
    let mut g = vec![0.0; deg + 1];
    for (m, gm) in g.iter_mut().enumerate().skip(1) {
        *gm = w
            .iter()
            .enumerate()
            .map(|(j, wj)| wj * s.inv[m + j])
            .sum();
    }
    s.share.clear();
    s.share.resize(comp.slots.len(), 0.0);
    for &(mask, coef) in &comp.terms {
        if mask == 0 {
            continue;
        }
        let v = coef * g[mask.count_ones() as usize];
        let mut bits = mask;
        while bits != 0 {
            s.share[bits.trailing_zeros() as usize] += v;
            bits &= bits - 1;
        }
    }
    s.quotient = w;
}
