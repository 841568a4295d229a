//! Monotonic constraints (scikit-learn's `monotonic_cst`), for every projection family.
//!
//! A constraint `cst[j] = 1` asks that the prediction never decreases as feature j grows
//! with the other features fixed (`-1`: never increases). The monotone value is the mean
//! (regression) or the probability of class 1 (binary classification).
//!
//! For an axis-aligned split on feature j this is scikit-learn's rule. A projection
//! `v = sum_k w_k x_k` grows with x_j when `w_j > 0`, so a split on it must order its
//! children's values by `sign(w_j) * cst[j]`: its *direction* `+1` (left value <= right
//! value), `-1` (left >= right), or `0` when no constrained feature is in it. A projection
//! whose constrained terms disagree cannot order its children for all of them and is not
//! split on.
//!
//! Invariant: every node has bounds `[lo, hi]` containing its subtree's values. A split
//! with direction `+1` and child values `v_l <= v_r` gives the left child `[lo, mid]` and
//! the right one `[mid, hi]` with `mid = (v_l + v_r) / 2` (mirrored for `-1`); a split
//! with direction 0 passes `[lo, hi]` to both. A split is admissible only when both child
//! values lie in the node's bounds, and node values are clipped to them. Moving x_j up
//! changes a row's path only at splits whose projection contains j, each of which sends it
//! into a subtree whose bounds lie on the constrained side of the other subtree's, so the
//! prediction moves the constrained way (as for axis-aligned trees).

use super::criterion::ScanStats;
use crate::projection::ProjRef;
use crate::tree::RowWeights;

/// The direction a split on `proj` must order its children's values in under `cst`:
/// `Some(1)`, `Some(-1)`, `Some(0)` (no constrained term), or `None` when its constrained
/// terms disagree.
pub(super) fn direction(cst: &[i8], proj: ProjRef<'_>) -> Option<i8> {
    let (mut up, mut down) = (false, false);
    proj.for_each(|j, w| {
        let c = cst[j] as f32 * w;
        up |= c > 0.0;
        down |= c < 0.0;
    });
    match (up, down) {
        (true, true) => None,
        (true, false) => Some(1),
        (false, true) => Some(-1),
        (false, false) => Some(0),
    }
}

/// The bounds `[lo, hi]` of a node's subtree values.
#[derive(Clone, Copy, Debug)]
pub(super) struct Bounds {
    pub(super) lo: f64,
    pub(super) hi: f64,
}

impl Bounds {
    /// No bound (the root).
    pub(super) const NONE: Bounds = Bounds {
        lo: f64::NEG_INFINITY,
        hi: f64::INFINITY,
    };

    /// Whether a split with child values `v_l`, `v_r` and direction `dir` is admissible.
    #[inline(always)]
    pub(super) fn admits(&self, dir: i8, v_l: f64, v_r: f64) -> bool {
        let inside = v_l >= self.lo && v_l <= self.hi && v_r >= self.lo && v_r <= self.hi;
        inside && (v_l - v_r) * dir as f64 <= 0.0
    }

    /// The bounds of the (left, right) children of a split with direction `dir` and child
    /// values `v_l`, `v_r`.
    pub(super) fn children(&self, dir: i8, v_l: f64, v_r: f64) -> (Bounds, Bounds) {
        let mid = 0.5 * (v_l + v_r);
        let below = Bounds {
            lo: self.lo,
            hi: mid,
        };
        let above = Bounds {
            lo: mid,
            hi: self.hi,
        };
        match dir {
            1 => (below, above),
            -1 => (above, below),
            _ => (*self, *self),
        }
    }

    /// Clips a node's value (a mean, or a binary class distribution) to the bounds.
    pub(super) fn clip(&self, value: &mut [f64]) {
        match value {
            [mean] => *mean = mean.clamp(self.lo, self.hi),
            [p0, p1] => {
                *p1 = p1.clamp(self.lo, self.hi);
                *p0 = 1.0 - *p1;
            }
            _ => {}
        }
    }
}

/// A criterion's running statistics that reject the split positions a constraint forbids:
/// their proxy is `-inf`, so the scan keeps the best admissible position, and a scan with
/// none admissible returns `-inf` (see [`admissible`]).
pub(super) struct Monotone<T> {
    pub(super) inner: T,
    pub(super) dir: i8,
    pub(super) bounds: Bounds,
}

impl<T: ScanStats> ScanStats for Monotone<T> {
    #[inline(always)]
    fn prepare(&mut self, pairs: &[(f32, u32)], weights: RowWeights<'_>, stay_right: &[u32]) {
        self.inner.prepare(pairs, weights, stay_right)
    }
    #[inline(always)]
    fn move_left(&mut self, sample: usize, w: f64) {
        self.inner.move_left(sample, w)
    }
    #[inline(always)]
    fn prefetch(&self, sample: usize) {
        self.inner.prefetch(sample)
    }
    #[inline(always)]
    fn move_slot(&mut self, slot: usize, w: f64) {
        self.inner.move_slot(slot, w)
    }
    #[inline(always)]
    fn move_bin(&mut self, bin: &[f64]) {
        self.inner.move_bin(bin)
    }
    #[inline(always)]
    fn proxy(&self, w_l: f64, w_r: f64) -> f64 {
        let (v_l, v_r) = self.inner.child_values(w_l, w_r);
        if self.bounds.admits(self.dir, v_l, v_r) {
            self.inner.proxy(w_l, w_r)
        } else {
            f64::NEG_INFINITY
        }
    }
    #[inline(always)]
    fn child_values(&self, w_l: f64, w_r: f64) -> (f64, f64) {
        self.inner.child_values(w_l, w_r)
    }
}

/// Whether a scan's best proxy is an admissible split (not one [`Monotone`] rejected).
#[inline]
pub(super) fn admissible(proxy: f64) -> bool {
    proxy > f64::NEG_INFINITY
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn direction_follows_the_signs_of_the_constrained_terms() {
        let cst = [1, -1, 0];
        let dir = |idx: &[u32], w: &[f32]| direction(&cst, ProjRef::new(idx, w, None));
        assert_eq!(dir(&[0], &[1.0]), Some(1));
        assert_eq!(dir(&[0], &[-1.0]), Some(-1));
        assert_eq!(dir(&[1], &[1.0]), Some(-1));
        assert_eq!(dir(&[0, 1], &[1.0, -2.0]), Some(1), "both terms push up");
        assert_eq!(dir(&[0, 1], &[1.0, 1.0]), None, "the terms disagree");
        assert_eq!(dir(&[2], &[3.0]), Some(0));
        assert_eq!(dir(&[0, 2], &[-1.0, 3.0]), Some(-1));
    }

    #[test]
    fn bounds_admit_ordered_values_inside_and_split_at_the_middle() {
        let b = Bounds { lo: 0.0, hi: 1.0 };
        assert!(b.admits(1, 0.2, 0.8));
        assert!(!b.admits(1, 0.8, 0.2));
        assert!(b.admits(-1, 0.8, 0.2));
        assert!(b.admits(0, 0.8, 0.2));
        assert!(!b.admits(0, 0.8, 1.2), "outside the node's bounds");
        let (l, r) = b.children(1, 0.2, 0.8);
        assert_eq!((l.lo, l.hi, r.lo, r.hi), (0.0, 0.5, 0.5, 1.0));
        let (l, r) = b.children(-1, 0.8, 0.2);
        assert_eq!((l.lo, l.hi, r.lo, r.hi), (0.5, 1.0, 0.0, 0.5));
        let mut v = [0.1, 0.9];
        Bounds { lo: 0.0, hi: 0.5 }.clip(&mut v);
        assert_eq!(v, [0.5, 0.5]);
        let mut m = [-3.0];
        b.clip(&mut m);
        assert_eq!(m, [0.0]);
    }
}
