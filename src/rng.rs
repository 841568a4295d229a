//! Random streams. Every random choice in a fit comes from a ChaCha8 generator
//! keyed by the forest seed and positioned on a stream derived from
//! (tree index, purpose), so a tree's randomness never depends on which thread
//! grows it or on how many threads there are.

use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

/// What a stream is used for; separate purposes never share random numbers.
#[derive(Clone, Copy, Debug)]
pub enum Purpose {
    /// Bootstrap sample counts.
    Bootstrap = 1,
    /// Projection sampling and split choices while growing a tree.
    Grow = 2,
    /// Which in-bag rows of an honest tree fill its leaves instead of growing it.
    Honest = 3,
    /// The features a random-subspace tree may use.
    Features = 4,
}

/// A portable random generator with the few draws the engine needs.
#[derive(Clone, Debug)]
pub struct Rng(ChaCha8Rng);

impl Rng {
    /// The generator for tree `tree` and `purpose` of a forest seeded with `seed`.
    pub fn for_tree(seed: u64, tree: u64, purpose: Purpose) -> Self {
        let mut inner = ChaCha8Rng::seed_from_u64(seed);
        inner.set_stream((tree << 4) | purpose as u64);
        Rng(inner)
    }

    /// A generator from a plain seed (tests, benches).
    pub fn from_seed(seed: u64) -> Self {
        Rng(ChaCha8Rng::seed_from_u64(seed))
    }

    /// 64 uniformly random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform integer in `0..n` (Lemire's multiply-shift with rejection); `n > 0`.
    #[inline]
    pub fn below(&mut self, n: usize) -> usize {
        debug_assert!(n > 0);
        let n = n as u64;
        let mut m = (self.next_u64() as u128) * (n as u128);
        if (m as u64) < n {
            let threshold = n.wrapping_neg() % n;
            while (m as u64) < threshold {
                m = (self.next_u64() as u128) * (n as u128);
            }
        }
        (m >> 64) as usize
    }

    /// Uniform integer in `lo..=hi`.
    #[inline]
    pub fn between(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    /// Uniform float in `[0, 1)` with 53 random bits.
    #[inline]
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// A fair coin.
    #[inline]
    pub fn coin(&mut self) -> bool {
        self.next_u64() >> 63 == 1
    }

    /// Standard normal draw (Box-Muller; one of the pair is discarded for simplicity).
    pub fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.unit(); // (0, 1]
        let u2 = self.unit();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// Writes `k` distinct values of `0..n` into `out` (partial Fisher-Yates). The pool is
    /// restored to the identity afterwards, so the draw depends only on this generator,
    /// never on earlier draws that shared the pool.
    pub fn distinct(&mut self, n: usize, k: usize, pool: &mut IndexPool, out: &mut Vec<u32>) {
        pool.reset(n);
        let k = k.min(n);
        out.clear();
        pool.swaps.clear();
        for i in 0..k {
            let j = i + self.below(n - i);
            pool.perm.swap(i, j);
            out.push(pool.perm[i] as u32);
            pool.swaps.push(j);
        }
        pool.undo();
    }

    /// Writes `k` distinct values of `0..n` (u64) into `out`; see [`Rng::distinct`].
    pub fn distinct_u64(&mut self, n: u64, k: usize, pool: &mut IndexPool, out: &mut Vec<u64>) {
        pool.reset(n as usize);
        out.clear();
        pool.swaps.clear();
        for i in 0..k.min(n as usize) {
            let j = i + self.below(n as usize - i);
            pool.perm.swap(i, j);
            out.push(pool.perm[i] as u64);
            pool.swaps.push(j);
        }
        pool.undo();
    }
}

/// Reusable memory for drawing distinct indices; holds the identity permutation between
/// draws.
#[derive(Clone, Debug, Default)]
pub struct IndexPool {
    perm: Vec<usize>,
    swaps: Vec<usize>,
}

impl IndexPool {
    fn reset(&mut self, n: usize) {
        if self.perm.len() != n {
            self.perm.clear();
            self.perm.extend(0..n);
        }
    }
    fn undo(&mut self) {
        for (i, &j) in self.swaps.iter().enumerate().rev() {
            self.perm.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rng_streams_are_independent_of_creation_order() {
        let mut a = Rng::for_tree(7, 3, Purpose::Grow);
        let _ = Rng::for_tree(7, 2, Purpose::Grow).next_u64();
        let mut b = Rng::for_tree(7, 3, Purpose::Grow);
        assert_eq!(a.next_u64(), b.next_u64());
        let mut c = Rng::for_tree(7, 3, Purpose::Bootstrap);
        assert_ne!(Rng::for_tree(7, 3, Purpose::Grow).next_u64(), c.next_u64());
    }

    #[test]
    fn rng_below_is_in_range_and_roughly_uniform() {
        let mut r = Rng::from_seed(1);
        let mut counts = [0usize; 7];
        for _ in 0..70_000 {
            counts[r.below(7)] += 1;
        }
        for c in counts {
            assert!((9_000..11_000).contains(&c), "{counts:?}");
        }
    }

    #[test]
    fn rng_distinct_draws_distinct_values() {
        let mut r = Rng::from_seed(2);
        let (mut pool, mut out) = (IndexPool::default(), Vec::new());
        r.distinct(10, 6, &mut pool, &mut out);
        let mut s = out.clone();
        s.sort();
        s.dedup();
        assert_eq!(s.len(), 6);
        assert!(out.iter().all(|&v| v < 10));
    }

    #[test]
    fn rng_distinct_does_not_depend_on_pool_history() {
        let mut pool = IndexPool::default();
        let mut first = Vec::new();
        Rng::from_seed(3).distinct(50, 7, &mut pool, &mut first);
        let mut noise = Vec::new();
        Rng::from_seed(99).distinct(50, 30, &mut pool, &mut noise);
        let mut again = Vec::new();
        Rng::from_seed(3).distinct(50, 7, &mut IndexPool::default(), &mut again);
        let mut reused = Vec::new();
        Rng::from_seed(3).distinct(50, 7, &mut pool, &mut reused);
        assert_eq!(first, again);
        assert_eq!(first, reused);
    }
}
