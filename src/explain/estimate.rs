//! Estimated Shapley values of one tree's game, where the exact algorithms would exceed
//! their bounds: antithetic permutation sampling (Castro et al. 2009; each permutation
//! paired with its reverse), unbiased, with the sample variance of the mean. Every
//! permutation's marginal contributions add up to `v(all) - v(∅)`, so the estimates keep
//! local accuracy; features the game never reads are not players and get exactly 0.

use super::Prepared;
use crate::rng::Rng;

/// A tree's game on one row: its players and the value of a coalition.
pub(crate) trait TreeGame {
    /// The features whose membership can change the value, ascending.
    fn players(&self, out: &mut Vec<u32>);
    /// `v(S)` for the coalition `in_s` (per feature), written to `out` (one per output).
    fn value(&self, in_s: &[bool], stack: &mut Vec<(u32, f64)>, out: &mut [f64]);
}

/// The path-dependent game of a tree and a row.
pub(crate) struct PathGame<'a, 'f> {
    pub(crate) tree: &'a Prepared<'f>,
    pub(crate) x: &'a [f64],
}

impl TreeGame for PathGame<'_, '_> {
    fn players(&self, out: &mut Vec<u32>) {
        out.clear();
        out.extend_from_slice(&self.tree.used);
    }

    fn value(&self, in_s: &[bool], stack: &mut Vec<(u32, f64)>, out: &mut [f64]) {
        let t = self.tree.tree;
        out.fill(0.0);
        stack.clear();
        stack.push((0, 1.0));
        while let Some((node, weight)) = stack.pop() {
            let node = node as usize;
            if t.is_leaf(node) {
                for (o, v) in out.iter_mut().zip(t.leaf_value(node)) {
                    *o += weight * v;
                }
                continue;
            }
            let known = self.tree.features(node).iter().all(|&f| in_s[f as usize]);
            if known {
                let child = self.tree.child_by(node, |j| self.x[j]);
                stack.push((child as u32, weight));
            } else {
                for child in [t.left[node] as usize, t.right[node] as usize] {
                    let w = weight * self.tree.frac[child];
                    if w != 0.0 {
                        stack.push((child as u32, w));
                    }
                }
            }
        }
    }
}

/// The interventional game of a tree, a row `x` and a background row `b`.
pub(crate) struct HybridGame<'a, 'f> {
    pub(crate) tree: &'a Prepared<'f>,
    pub(crate) x: &'a [f64],
    pub(crate) b: &'a [f64],
}

impl TreeGame for HybridGame<'_, '_> {
    fn players(&self, out: &mut Vec<u32>) {
        out.clear();
        out.extend(
            self.tree
                .used
                .iter()
                .copied()
                .filter(|&f| !super::cells::same(self.x[f as usize], self.b[f as usize])),
        );
    }

    fn value(&self, in_s: &[bool], _: &mut Vec<(u32, f64)>, out: &mut [f64]) {
        let t = self.tree.tree;
        let mut node = 0usize;
        while !t.is_leaf(node) {
            node = self
                .tree
                .child_by(node, |j| if in_s[j] { self.x[j] } else { self.b[j] });
        }
        out.copy_from_slice(t.leaf_value(node));
    }
}

/// The random stream of row `row`, tree `tree` and background row `b` (`usize::MAX` for
/// none): splitmix64 of the three.
pub(crate) fn seed(row: usize, tree: usize, b: usize) -> u64 {
    let mut z = (row as u64)
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add((tree as u64).rotate_left(21))
        .wrapping_add((b as u64).rotate_left(42));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Buffers of the sampling, reused.
pub(crate) struct EstimateScratch {
    k: usize,
    in_s: Vec<bool>,
    players: Vec<u32>,
    order: Vec<u32>,
    stack: Vec<(u32, f64)>,
    prev: Vec<f64>,
    cur: Vec<f64>,
    /// One pair's contributions, players × outputs.
    pair: Vec<f64>,
    sum: Vec<f64>,
    sum_sq: Vec<f64>,
}

impl EstimateScratch {
    pub(crate) fn new(p: usize, k: usize) -> Self {
        EstimateScratch {
            k,
            in_s: vec![false; p],
            players: Vec::new(),
            order: Vec::new(),
            stack: Vec::new(),
            prev: vec![0.0; k],
            cur: vec![0.0; k],
            pair: Vec::new(),
            sum: Vec::new(),
            sum_sq: Vec::new(),
        }
    }

    /// Adds the estimated values of `game` (from `n_permutations`, at least two pairs)
    /// to `out` (p × k) and their variances to `var`.
    pub(crate) fn run(
        &mut self,
        game: &dyn TreeGame,
        seed: u64,
        n_permutations: usize,
        out: &mut [f64],
        var: &mut [f64],
    ) {
        let k = self.k;
        game.players(&mut self.players);
        let np = self.players.len();
        if np == 0 {
            return;
        }
        let pairs = (n_permutations / 2).max(2);
        let mut rng = Rng::from_seed(seed);
        self.sum.clear();
        self.sum.resize(np * k, 0.0);
        self.sum_sq.clear();
        self.sum_sq.resize(np * k, 0.0);
        for _ in 0..pairs {
            // a uniform permutation of the players' positions (Fisher-Yates)
            self.order.clear();
            self.order.extend(0..np as u32);
            for i in (1..np).rev() {
                self.order.swap(i, rng.below(i + 1));
            }
            self.pair.clear();
            self.pair.resize(np * k, 0.0);
            for reverse in [false, true] {
                self.walk(game, reverse);
            }
            for (i, c) in self.pair.iter().enumerate() {
                let sample = c / 2.0;
                self.sum[i] += sample;
                self.sum_sq[i] += sample * sample;
            }
        }
        let m = pairs as f64;
        for (pi, &f) in self.players.iter().enumerate() {
            let f = f as usize;
            for c in 0..k {
                let i = pi * k + c;
                let mean = self.sum[i] / m;
                let s2 = ((self.sum_sq[i] - m * mean * mean) / (m - 1.0)).max(0.0);
                out[f * k + c] += mean;
                var[f * k + c] += s2 / m;
            }
        }
    }

    /// Adds the players in `order` (or its reverse) one by one, each one's marginal
    /// contribution to `pair`.
    fn walk(&mut self, game: &dyn TreeGame, reverse: bool) {
        let k = self.k;
        game.value(&self.in_s, &mut self.stack, &mut self.prev);
        let np = self.order.len();
        for step in 0..np {
            let pos = self.order[if reverse { np - 1 - step } else { step }] as usize;
            self.in_s[self.players[pos] as usize] = true;
            game.value(&self.in_s, &mut self.stack, &mut self.cur);
            for c in 0..k {
                self.pair[pos * k + c] += self.cur[c] - self.prev[c];
            }
            std::mem::swap(&mut self.prev, &mut self.cur);
        }
        for &f in &self.players {
            self.in_s[f as usize] = false;
        }
    }
}
