//! The interventional game's exact Shapley values for one tree, one row `x` and one
//! background row `b` (see the module docs of [`crate::explain`]).
//!
//! A coalition `S` is the set of features the hybrid row takes from `x` (the rest from
//! `b`). The tree is walked depth first over partial decisions: at an inner node, the
//! features of its projection that differ between `x` and `b` and are not decided yet are
//! decided only as far as the side the hybrid row takes depends on them — the node's `2^u`
//! sides over its `u` undecided features are split into cubes on which the side is
//! constant, each cube deciding the features it fixes. A feature equal in `x` and `b`, or
//! one a node's side does not depend on, is never decided there. Every full coalition
//! reaches exactly one leaf, so the tree's value is the sum over the reached cells of
//! `leaf value × [A ⊆ S, B ∩ S = ∅]`, each of whose Shapley values is closed-form.

use super::{Limits, Prepared, Sink, TooBig};

/// A feature not decided yet, taken from `x` (in the coalition), or from `b`.
const OPEN: u8 = 0;
const FROM_X: u8 = 1;
const FROM_B: u8 = 2;

/// Buffers of the walk, reused across trees and rows.
pub(crate) struct CellScratch {
    /// Per feature: [`OPEN`], [`FROM_X`] or [`FROM_B`].
    state: Vec<u8>,
    /// Decided features, in the order decided.
    decided: Vec<u32>,
    /// Of them, taken from `x`.
    n_from_x: usize,
    /// (node, decided count to return to, start and end of its decisions in `arena`).
    stack: Vec<(u32, u32, u32, u32)>,
    /// Decisions (feature, state) the stacked entries make on arrival.
    arena: Vec<(u32, u8)>,
    /// A node's undecided differing features and the child of each assignment of them.
    open: Vec<u32>,
    sides: Vec<u32>,
}

impl CellScratch {
    pub(crate) fn new(p: usize) -> Self {
        CellScratch {
            state: vec![OPEN; p],
            decided: Vec::new(),
            n_from_x: 0,
            stack: Vec::new(),
            arena: Vec::new(),
            open: Vec::new(),
            sides: Vec::new(),
        }
    }

    /// Undoes decisions back to `len` of them.
    fn undo_to(&mut self, len: usize) {
        while self.decided.len() > len {
            let f = self.decided.pop().expect("len < decided") as usize;
            if self.state[f] == FROM_X {
                self.n_from_x -= 1;
            }
            self.state[f] = OPEN;
        }
    }

    fn decide(&mut self, f: u32, state: u8) {
        self.state[f as usize] = state;
        self.decided.push(f);
        if state == FROM_X {
            self.n_from_x += 1;
        }
    }
}

/// Whether `x` and `b` agree on a value (NaN agrees with NaN).
#[inline]
pub(crate) fn same(x: f64, b: f64) -> bool {
    x == b || (x.is_nan() && b.is_nan())
}

/// Adds tree `tree`'s exact interventional Shapley values of row `x` against background
/// row `b` (times the leaf values) to `sink`.
pub(crate) fn explain(
    tree: &Prepared<'_>,
    x: &[f64],
    b: &[f64],
    limits: Limits,
    weights: &CellWeights,
    s: &mut CellScratch,
    sink: &mut Sink,
) -> Result<(), TooBig> {
    let t = tree.tree;
    s.undo_to(0);
    s.stack.clear();
    s.arena.clear();
    s.stack.push((0, 0, 0, 0));
    // cells reached plus hybrid sides evaluated: the exact attempt's work, bounded
    let mut work = 0usize;
    let result = loop {
        let Some((node, back, a0, a1)) = s.stack.pop() else {
            break Ok(());
        };
        s.undo_to(back as usize);
        for i in a0..a1 {
            let (f, st) = s.arena[i as usize];
            s.decide(f, st);
        }
        s.arena.truncate(a0 as usize);
        let node = node as usize;
        if t.is_leaf(node) {
            work += 1;
            if work > limits.max_terms {
                break Err(TooBig);
            }
            leaf_cell(s, weights, sink, t.leaf_value(node));
            continue;
        }
        s.open.clear();
        for &f in tree.features(node) {
            let fi = f as usize;
            if s.state[fi] == OPEN && !same(x[fi], b[fi]) {
                s.open.push(f);
            }
        }
        let u = s.open.len();
        work += 1 << u.min(limits.max_node_features + 1);
        if u > limits.max_node_features || work > limits.max_terms {
            break Err(TooBig);
        }
        // the side of each assignment of the open features (bit i: open[i] from x)
        s.sides.clear();
        for mask in 0..1u32 << u {
            for (i, &f) in s.open.iter().enumerate() {
                s.state[f as usize] = if mask >> i & 1 == 1 { FROM_X } else { FROM_B };
            }
            let state = &s.state;
            let child = tree.child_by(node, |j| if state[j] == FROM_X { x[j] } else { b[j] });
            s.sides.push(child as u32);
        }
        for &f in &s.open {
            s.state[f as usize] = OPEN;
        }
        let back = s.decided.len() as u32;
        let at = s.arena.len() as u32;
        match (u, s.sides.as_slice()) {
            // nothing to decide, or one feature the side does not depend on
            (0, &[child]) | (1, &[child, _]) if u == 0 || s.sides[0] == s.sides[1] => {
                s.stack.push((child, back, at, at));
            }
            // one feature deciding the side (every split of an axis tree)
            (1, &[from_b, from_x]) => {
                let f = s.open[0];
                s.arena.push((f, FROM_B));
                s.stack.push((from_b, back, at, at + 1));
                s.arena.push((f, FROM_X));
                s.stack.push((from_x, back, at + 1, at + 2));
            }
            _ => push_cubes(s, back, u),
        }
    };
    s.undo_to(0);
    result
}

/// Stacks the children of a node over the cubes of its open features on which the side
/// is constant: a feature is fixed only where the side depends on it.
fn push_cubes(s: &mut CellScratch, back: u32, u: usize) {
    // (next variable, fixed variables, their values), depth first
    let mut work = vec![(0usize, 0u32, 0u32)];
    while let Some((v, fixed, vals)) = work.pop() {
        if let Some(child) = constant_side(&s.sides, u, fixed, vals) {
            let a0 = s.arena.len() as u32;
            for i in 0..u {
                if fixed >> i & 1 == 1 {
                    let st = if vals >> i & 1 == 1 { FROM_X } else { FROM_B };
                    s.arena.push((s.open[i], st));
                }
            }
            s.stack.push((child, back, a0, s.arena.len() as u32));
            continue;
        }
        // the first free variable the side depends on within this cube
        let mut w = v;
        while w < u && !depends_on(&s.sides, u, fixed, vals, w) {
            w += 1;
        }
        debug_assert!(w < u, "a non-constant cube depends on some free variable");
        let bit = 1u32 << w;
        work.push((w + 1, fixed | bit, vals));
        work.push((w + 1, fixed | bit, vals | bit));
    }
}

/// The child every assignment in the cube (`fixed` variables at `vals`) goes to, when
/// they all go to one.
fn constant_side(sides: &[u32], u: usize, fixed: u32, vals: u32) -> Option<u32> {
    let mut first = None;
    for mask in 0..1u32 << u {
        if mask & fixed != vals & fixed {
            continue;
        }
        match first {
            None => first = Some(sides[mask as usize]),
            Some(c) if c != sides[mask as usize] => return None,
            _ => {}
        }
    }
    first
}

/// Whether, within the cube, flipping variable `w` changes the side somewhere.
fn depends_on(sides: &[u32], u: usize, fixed: u32, vals: u32, w: usize) -> bool {
    let bit = 1u32 << w;
    (0..1u32 << u).any(|mask| {
        mask & bit == 0
            && mask & fixed == vals & fixed & !bit
            && sides[mask as usize] != sides[(mask | bit) as usize]
    })
}

/// The Shapley values of a cell `[A ⊆ S, B ∩ S = ∅]` by its sizes `(|A|, |B|)`: each
/// feature of `A` gets `(a-1)! b! / (a+b)!`, each of `B` minus `a! (b-1)! / (a+b)!`; a
/// table for the usual sizes, logarithms of factorials beyond it.
pub(crate) struct CellWeights {
    ln_fact: Vec<f64>,
    side: usize,
    table: Vec<(f64, f64)>,
}

impl CellWeights {
    /// Weights for cells of up to `p` decided features.
    pub(crate) fn new(p: usize) -> Self {
        let mut ln_fact = vec![0.0; p + 2];
        for m in 1..ln_fact.len() {
            ln_fact[m] = ln_fact[m - 1] + (m as f64).ln();
        }
        let side = p.min(64) + 1;
        let mut w = CellWeights {
            ln_fact,
            side,
            table: Vec::new(),
        };
        w.table = (0..side * side)
            .map(|i| w.computed(i / side, i % side))
            .collect();
        w
    }

    fn computed(&self, a: usize, b: usize) -> (f64, f64) {
        if a + b >= self.ln_fact.len() {
            return (0.0, 0.0); // a cell no path can make
        }
        let f = &self.ln_fact;
        let total = f[a + b];
        let wa = if a > 0 {
            (f[a - 1] + f[b] - total).exp()
        } else {
            0.0
        };
        let wb = if b > 0 {
            -(f[a] + f[b - 1] - total).exp()
        } else {
            0.0
        };
        (wa, wb)
    }

    #[inline]
    fn get(&self, a: usize, b: usize) -> (f64, f64) {
        if a < self.side && b < self.side {
            self.table[a * self.side + b]
        } else {
            self.computed(a, b)
        }
    }
}

/// The Shapley values of the cell `[A ⊆ S, B ∩ S = ∅]` times the leaf's values.
fn leaf_cell(s: &CellScratch, weights: &CellWeights, sink: &mut Sink, value: &[f64]) {
    let a = s.n_from_x;
    let bn = s.decided.len() - a;
    if a + bn == 0 {
        return;
    }
    let (wa, wb) = weights.get(a, bn);
    for &f in &s.decided {
        let w = if s.state[f as usize] == FROM_X {
            wa
        } else {
            wb
        };
        sink.add(f as usize, w, value);
    }
}
