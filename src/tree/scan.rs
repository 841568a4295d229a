//! The walks of a split scan: the positions of one candidate's sorted projected values
//! ([`Sorted`]), generic over the criterion's running statistics ([`ScanStats`]) so that
//! each (walk, criterion) pair is one monomorphised loop, with the admissibility rules
//! every walk shares ([`offer`]) and the sort ([`sort_pairs`]) and threshold
//! ([`midpoint`]) they rely on. The histogram's walk is in [`super::bins`].
//!
//! Invariant: a walk's position `i` names the split whose left child holds the rows moved
//! so far, and its threshold (the midpoint of the values on either side) sends exactly
//! those rows left.

use super::criterion::{Criterion, ScanStats};
use crate::prefetch::AHEAD;
use crate::tree::RowWeights;

/// A way of walking the split positions of one candidate, generic over the criterion's
/// running statistics so that each (walk, criterion) pair is one monomorphised loop.
pub(super) trait ScanDriver {
    /// (proxy, position) of the best admissible split.
    fn run<T: ScanStats>(self, stats: T) -> Option<(f64, usize)>;
}

/// The rows of a node whose projection is missing, as a scan sees them: `n` of them, of
/// which `n_left` (all or none) with weight `w_left` sit on the left before the scan starts
/// (the scan's statistics must have them there too); with `to_end`, the scan also offers
/// the position after the last present value (every present row left, the missing ones
/// right).
#[derive(Clone, Copy)]
pub(super) struct Missing {
    pub(super) n: usize,
    pub(super) n_left: usize,
    pub(super) w_left: f64,
    pub(super) to_end: bool,
}

impl Missing {
    /// No missing row: the plain scan.
    pub(super) const NONE: Missing = Missing {
        n: 0,
        n_left: 0,
        w_left: 0.0,
        to_end: false,
    };
}

/// Every position of sorted (value, sample) pairs of the present rows: position i splits
/// between `pairs[i]` and `pairs[i + 1]`, where the values differ (and after the last pair
/// when `missing.to_end`); honours `min_samples_leaf` and the minimum leaf weight
/// (`limits` = node weight, min_samples_leaf, min leaf weight) counting the missing rows
/// on their side. `stay_right` are the missing rows when they stay on the right (criteria
/// that see rows, not sums, are told them: [`ScanStats::prepare`]).
/// The pairs carry their rows as `rows` says: their samples ([`ByRow`]), or their weights
/// and criterion slots ([`Packed`]).
pub(super) struct Sorted<'a, R> {
    pub(super) pairs: &'a [(f32, u32)],
    pub(super) rows: R,
    pub(super) limits: (f64, usize, f64),
    pub(super) missing: Missing,
    pub(super) stay_right: &'a [u32],
}

impl<R: PairRows> ScanDriver for Sorted<'_, R> {
    #[inline]
    fn run<T: ScanStats>(self, mut stats: T) -> Option<(f64, usize)> {
        let (pairs, rows, missing) = (self.pairs, self.rows, self.missing);
        let (w_node, min_leaf, min_weight_leaf) = self.limits;
        let m = pairs.len();
        let n = m + missing.n;
        // without missing rows: 0 and w_node exactly, as before missing values existed
        let (mut w_l, mut w_r) = (missing.w_left, w_node - missing.w_left);
        let mut best: Option<(f64, usize)> = None;
        rows.prepare(&mut stats, pairs, self.stay_right);
        let stop = if missing.to_end { m } else { m - 1 };
        for i in 0..stop {
            if let Some(&(_, ahead)) = pairs.get(i + AHEAD) {
                rows.prefetch(&stats, ahead);
            }
            let w = rows.move_left(&mut stats, pairs[i].1);
            w_l += w;
            w_r -= w;
            if (i + 1 == m || pairs[i].0 != pairs[i + 1].0)
                && offer(
                    &stats,
                    (missing.n_left + i + 1, n, min_leaf),
                    (w_l, w_r, min_weight_leaf),
                    i,
                    &mut best,
                )
            {
                break;
            }
        }
        best
    }
}

/// How a sorted pair's 32 bits name its row, for the scan that moves it ([`Sorted`]).
pub(super) trait PairRows: Copy {
    /// Lets the statistics see the whole order before the first move
    /// ([`ScanStats::prepare`]).
    fn prepare<T: ScanStats>(self, stats: &mut T, pairs: &[(f32, u32)], stay_right: &[u32]);
    /// Asks the cache for what moving the row of `tag` will read (a hint).
    fn prefetch<T: ScanStats>(self, stats: &T, tag: u32);
    /// Moves the row of `tag` to the left child; returns its weight.
    fn move_left<T: ScanStats>(self, stats: &mut T, tag: u32) -> f64;
}

/// Pairs tagged with their sample: its weight (in this slice) and its target are read per
/// move, in value order, i.e. at random.
#[derive(Clone, Copy)]
pub(super) struct ByRow<'a>(pub(super) RowWeights<'a>);

impl PairRows for ByRow<'_> {
    #[inline(always)]
    fn prepare<T: ScanStats>(self, stats: &mut T, pairs: &[(f32, u32)], stay_right: &[u32]) {
        stats.prepare(pairs, self.0, stay_right);
    }
    #[inline(always)]
    fn prefetch<T: ScanStats>(self, stats: &T, tag: u32) {
        // read in value order: asked for some rows ahead, or every read of a large node
        // waits for memory
        self.0.prefetch(tag as usize);
        stats.prefetch(tag as usize);
    }
    #[inline(always)]
    fn move_left<T: ScanStats>(self, stats: &mut T, tag: u32) -> f64 {
        let (s, w) = (tag as usize, self.0[tag as usize]);
        stats.move_left(s, w);
        w
    }
}

/// Pairs tagged with their row's weight and criterion slot ([`Packing`]): the scan reads
/// nothing but the pairs.
#[derive(Clone, Copy)]
pub(super) struct Packed(pub(super) Packing);

impl PairRows for Packed {
    #[inline(always)]
    fn prepare<T: ScanStats>(self, _: &mut T, _: &[(f32, u32)], _: &[u32]) {
        // (the criteria that pack see sums only: their `prepare` does nothing)
    }
    #[inline(always)]
    fn prefetch<T: ScanStats>(self, _: &T, _: u32) {}
    #[inline(always)]
    fn move_left<T: ScanStats>(self, stats: &mut T, tag: u32) -> f64 {
        let (slot, w) = self.0.unpack(tag);
        stats.move_slot(slot, w);
        w
    }
}

/// A row's weight and criterion slot in the 32 bits of a sorted pair: the weight, a whole
/// number, above `bits` bits of slot. A tree packs its rows when its criterion puts each
/// row's weight in one slot ([`Criterion::packable_slots`]) and every weight is a whole
/// number that fits (bootstrap counts without fractional sample weights): its sorted scans
/// then read a row's weight and slot from the pair instead of from two arrays in value
/// order (at random, beyond the caches on large nodes), and add the same numbers in the
/// same order.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Packing {
    bits: u32,
}

impl Packing {
    /// The packing of rows with these `weights` under `crit`, if they fit.
    pub(super) fn of<C: Criterion>(
        crit: &C,
        n_outputs: usize,
        weights: RowWeights<'_>,
    ) -> Option<Self> {
        let slots = crit.packable_slots(n_outputs)?;
        let bits = usize::BITS - slots.saturating_sub(1).leading_zeros();
        if bits >= 32 {
            return None;
        }
        let most = f64::from(u32::MAX >> bits);
        let fits = weights.whole_max().is_some_and(|w| w <= most);
        fits.then_some(Packing { bits })
    }

    /// The tag of a row with weight `w` (a whole number that fits) in `slot`.
    #[inline(always)]
    pub(super) fn pack(self, slot: usize, w: f64) -> u32 {
        ((w as u32) << self.bits) | slot as u32
    }

    /// (bits of the slot, their mask) in a tag.
    #[inline(always)]
    pub(super) fn fields(self) -> (u32, u32) {
        (self.bits, (1u32 << self.bits) - 1)
    }

    /// (slot, weight) of a tag.
    #[inline(always)]
    pub(super) fn unpack(self, tag: u32) -> (usize, f64) {
        let (bits, mask) = self.fields();
        ((tag & mask) as usize, f64::from(tag >> bits))
    }
}

/// Offers the split at `at`, with `n_l` of the node's `n` rows and weight `w_l` on the left,
/// to `best`: kept when both children honour `min_samples_leaf` and the minimum leaf weight
/// and it beats `best`. Returns true when no later position can honour
/// `min_samples_leaf` (the scan can stop).
#[inline(always)]
pub(super) fn offer<T: ScanStats>(
    stats: &T,
    rows: (usize, usize, usize),
    weights: (f64, f64, f64),
    at: usize,
    best: &mut Option<(f64, usize)>,
) -> bool {
    offer_proxy(|w_l, w_r| stats.proxy(w_l, w_r), rows, weights, at, best)
}

/// [`offer`] with the split's proxy from `proxy(w_l, w_r)`, computed only for an
/// admissible split.
#[inline(always)]
pub(super) fn offer_proxy(
    proxy: impl FnOnce(f64, f64) -> f64,
    (n_l, n, min_leaf): (usize, usize, usize),
    (w_l, w_r, min_weight_leaf): (f64, f64, f64),
    at: usize,
    best: &mut Option<(f64, usize)>,
) -> bool {
    if n_l < min_leaf {
        return false;
    }
    if n - n_l < min_leaf {
        return true;
    }
    if w_l < min_weight_leaf || w_r < min_weight_leaf || w_l <= 0.0 || w_r <= 0.0 {
        return false;
    }
    let proxy = proxy(w_l, w_r);
    if best.is_none_or(|b| proxy > b.0) {
        *best = Some((proxy, at));
    }
    false
}

/// The smallest and largest of `vals` when all are finite and they differ.
#[inline]
pub(super) fn finite_range(vals: &[f32]) -> Option<(f32, f32)> {
    let (mut lo, mut hi, mut finite) = (f32::INFINITY, f32::NEG_INFINITY, true);
    for &v in vals {
        finite &= v.is_finite();
        lo = if v < lo { v } else { lo };
        hi = if v > hi { v } else { hi };
    }
    (finite && lo < hi).then_some((lo, hi))
}

/// The threshold between adjacent distinct values `a < b`: their midpoint, or `a` when
/// rounding would put the midpoint on `b` (so `a` goes left and `b` right either way).
#[inline]
pub(super) fn midpoint(a: f32, b: f32) -> f32 {
    let t = a + (b - a) / 2.0;
    if t >= a && t < b {
        t
    } else {
        a
    }
}

/// Sorts (value, sample) pairs by value: LSD radix sort on the order-preserving bit
/// pattern of the f32 key (a pass skipped when every key shares its digit): three 11-bit
/// passes for nodes whose pairs fit in a core's L2 cache, four 8-bit ones for middle-sized
/// nodes and for the largest ones (beyond L2, scattering to 2,048 places a pass costs more
/// than a fourth pass to 256: ~7 against ~12-14 ns a pair at 10^6-10^7 pairs here), pdqsort
/// for small ones.
/// The radix sorts are stable (equal values keep their order). With `any_tie_order` (the
/// scan's statistics are exact, so the order of equal values changes no bit of a split:
/// [`super::criterion::Criterion::exact_scan`]) small nodes sort the pairs as 64-bit
/// integers (key above tag), about a third faster than comparing floats.
pub(super) fn sort_pairs(
    pairs: &mut Vec<(f32, u32)>,
    buf: &mut Vec<(f32, u32)>,
    any_tie_order: bool,
) {
    const MIDDLE: usize = 2048;
    const LARGE: usize = 1 << 18; // 2 MiB of pairs
    let n = pairs.len();
    if n < SMALL && any_tie_order {
        sort_as_integers(pairs);
    } else if n < SMALL {
        pairs.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
    } else if !(MIDDLE..LARGE).contains(&n) {
        radix_sort::<256, 4>(pairs, buf);
    } else {
        radix_sort::<2048, 3>(pairs, buf);
    }
}

/// Nodes of fewer rows than this sort by comparison ([`sort_pairs`]).
const SMALL: usize = 256;

/// The total order of f32 as unsigned integers: flip negatives, set the sign of positives.
#[inline(always)]
fn order_key(v: f32) -> u32 {
    let b = v.to_bits();
    if b >> 31 == 1 {
        !b
    } else {
        b | 0x8000_0000
    }
}

/// The f32 of an [`order_key`].
#[inline(always)]
fn from_order_key(k: u32) -> f32 {
    f32::from_bits(if k >> 31 == 1 { k & 0x7fff_ffff } else { !k })
}

/// Sorts `pairs` (fewer than [`SMALL`]) by value, ties by tag, as 64-bit integers: key
/// above tag.
fn sort_as_integers(pairs: &mut [(f32, u32)]) {
    let mut keys = [0u64; SMALL];
    let keys = &mut keys[..pairs.len()];
    for (k, p) in keys.iter_mut().zip(pairs.iter()) {
        *k = (u64::from(order_key(p.0)) << 32) | u64::from(p.1);
    }
    keys.sort_unstable();
    for (p, &k) in pairs.iter_mut().zip(keys.iter()) {
        *p = (from_order_key((k >> 32) as u32), k as u32);
    }
}

/// LSD radix sort of `pairs` by the total order of their f32 keys in `PASSES` digits of
/// `DIGITS` values each (a power of two, `DIGITS^PASSES >= 2^32`); `buf` is scratch. One
/// read of the pairs counts every pass's digits.
fn radix_sort<const DIGITS: usize, const PASSES: usize>(
    pairs: &mut Vec<(f32, u32)>,
    buf: &mut Vec<(f32, u32)>,
) {
    let bits = DIGITS.trailing_zeros();
    let mask = DIGITS - 1;
    let digit = |k: u32, pass: usize| ((k >> (pass as u32 * bits)) as usize) & mask;
    let n = pairs.len();
    let mut counts = [[0u32; DIGITS]; PASSES];
    for p in pairs.iter() {
        let k = order_key(p.0);
        for (pass, c) in counts.iter_mut().enumerate() {
            c[digit(k, pass)] += 1;
        }
    }
    buf.clear();
    buf.resize(n, (0.0, 0));
    for (pass, c) in counts.iter_mut().enumerate() {
        if c.iter().any(|&v| v as usize == n) {
            continue; // every key has the same digit here: this pass would not move anything
        }
        let mut sum = 0u32;
        for v in c.iter_mut() {
            let here = *v;
            *v = sum;
            sum += here;
        }
        for p in pairs.iter() {
            let d = digit(order_key(p.0), pass);
            buf[c[d] as usize] = *p;
            c[d] += 1;
        }
        std::mem::swap(pairs, buf);
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::tree::criterion::{Criterion, Gini, SquaredError};

    /// `vals` as sorted (value, sample) pairs, sample i having value `vals[i]` (the scan
    /// tests here, in `bins` and in `scan_lanes`).
    pub(in crate::tree) fn sorted(vals: &[f32]) -> Vec<(f32, u32)> {
        let mut pairs: Vec<(f32, u32)> = vals.iter().copied().zip(0..).collect();
        sort_pairs(&mut pairs, &mut Vec::new(), false);
        pairs
    }

    #[test]
    fn midpoint_separates_adjacent_values() {
        for (a, b) in [
            (1.0f32, 2.0),
            (0.0, f32::MIN_POSITIVE),
            (1.0, 1.0 + f32::EPSILON),
        ] {
            let t = midpoint(a, b);
            assert!(a <= t && t < b, "{a} {t} {b}");
        }
        assert_eq!(midpoint(-1.0, 3.0), 1.0);
    }

    #[test]
    fn finite_range_skips_constant_and_non_finite_candidates() {
        assert_eq!(finite_range(&[2.0, -1.0, 5.0]), Some((-1.0, 5.0)));
        assert_eq!(finite_range(&[3.0, 3.0]), None);
        assert_eq!(finite_range(&[1.0, f32::INFINITY]), None);
        assert_eq!(finite_range(&[]), None);
    }

    #[test]
    fn sorted_scan_finds_the_separating_threshold() {
        // classes follow the value: the best split is between 0.4 and 0.6
        let vals = [0.1f32, 0.9, 0.4, 0.6, 0.2, 0.8];
        let classes = [0, 1, 0, 1, 0, 1];
        let weights = [1.0; 6];
        let crit = Gini::new(&classes, 1);
        let (mut left, mut right) = (vec![0.0; 2], vec![0.0; 2]);
        let pairs = sorted(&vals);
        let (_, at) = Sorted {
            pairs: &pairs,
            rows: ByRow(RowWeights::Values(&weights)),
            limits: (6.0, 1, 0.0),
            missing: Missing::NONE,
            stay_right: &[],
        }
        .run(crit.scan(&[3.0, 3.0], &mut left, &mut right))
        .unwrap();
        assert_eq!(midpoint(pairs[at].0, pairs[at + 1].0), 0.5);
    }

    #[test]
    fn sorted_scan_honours_min_samples_leaf_and_ties() {
        let vals = [1.0f32, 1.0, 1.0, 2.0, 3.0, 4.0];
        let y = [0.0, 0.0, 0.0, 5.0, 5.0, 9.0];
        let weights = [1.0; 6];
        let crit = SquaredError { y: &y };
        let pairs = sorted(&vals);
        let total = [6.0, 19.0, 131.0];
        let best = |min_leaf| {
            let (mut left, mut right) = (vec![0.0; 3], vec![0.0; 3]);
            Sorted {
                pairs: &pairs,
                rows: ByRow(RowWeights::Values(&weights)),
                limits: (6.0, min_leaf, 0.0),
                missing: Missing::NONE,
                stay_right: &[],
            }
            .run(crit.scan(&total, &mut left, &mut right))
            .map(|(_, at)| at)
        };
        // never between equal values; the best cut is after the three zeros
        assert_eq!(best(1), Some(2));
        // min_samples_leaf = 4 leaves no admissible cut of 6 rows
        assert_eq!(best(4), None);
    }

    /// Best (proxy, position) of the sorted scan of `vals` (present rows 0..) with the
    /// rows `missing` (numbered after them) on the side `missing_left`.
    fn scan_missing(
        vals: &[f32],
        classes: &[u32],
        missing_left: bool,
        min_leaf: usize,
    ) -> Option<(f64, usize)> {
        let n_present = vals.len();
        let missing: Vec<u32> = (n_present as u32..classes.len() as u32).collect();
        let weights = vec![1.0; classes.len()];
        let crit = Gini::new(classes, 1);
        let mut total = vec![0.0; 2];
        for s in 0..classes.len() {
            crit.add_sample(&mut total, s, 1.0);
        }
        let (mut left, mut right) = (vec![0.0; 2], vec![0.0; 2]);
        let mut scan = crit.scan(&total, &mut left, &mut right);
        if missing_left {
            for &s in &missing {
                scan.move_left(s as usize, 1.0);
            }
        }
        let n_m = missing.len();
        let pairs = sorted(vals);
        Sorted {
            pairs: &pairs,
            rows: ByRow(RowWeights::Values(&weights)),
            limits: (classes.len() as f64, min_leaf, 0.0),
            missing: Missing {
                n: n_m,
                n_left: if missing_left { n_m } else { 0 },
                w_left: if missing_left { n_m as f64 } else { 0.0 },
                to_end: !missing_left,
            },
            stay_right: if missing_left { &[] } else { &missing },
        }
        .run(scan)
    }

    #[test]
    fn nan_scan_sends_missing_rows_to_the_side_they_resemble() {
        // present: 0.1 0.2 (class 0), 0.8 0.9 (class 1); two missing rows of class 1
        let vals = [0.1f32, 0.9, 0.2, 0.8];
        let classes = [0, 1, 0, 1, 1, 1];
        let (right, at_r) = scan_missing(&vals, &classes, false, 1).unwrap();
        let (left, at_l) = scan_missing(&vals, &classes, true, 1).unwrap();
        // with the missing rows right the cut after 0.2 is pure on both sides: gini proxy
        // 2^2/2 + 4^2/4 = 6, the most a 6-row node can reach
        assert_eq!((right, at_r), (6.0, 1));
        assert!(left < right, "missing rows on the left mix the classes");
        assert_eq!(at_l, 1);
        // mirrored classes: the missing rows belong left
        let classes = [1, 0, 1, 0, 1, 1];
        let (right, _) = scan_missing(&vals, &classes, false, 1).unwrap();
        let (left, at) = scan_missing(&vals, &classes, true, 1).unwrap();
        assert_eq!((left, at), (6.0, 1));
        assert!(right < left);
    }

    #[test]
    fn nan_scan_offers_present_against_missing_and_honours_min_samples_leaf() {
        // every present value equal (class 0), the missing rows class 1: the only cut is
        // after the last present value, which the scan with missing rows right offers
        let vals = [3.0f32; 4];
        let classes = [0, 0, 0, 0, 1, 1];
        assert_eq!(scan_missing(&vals, &classes, false, 1), Some((6.0, 3)));
        assert_eq!(scan_missing(&vals, &classes, true, 1), None);
        // min_samples_leaf counts the missing rows on their side: 2 missing rows < 3
        assert_eq!(scan_missing(&vals, &classes, false, 3), None);
        // with missing rows on the left, the left child starts with them: at
        // min_samples_leaf = 3 the first cut (1 present row + 2 missing) is admissible and
        // the pure one (2 rows right) is not
        let vals = [1.0f32, 2.0, 3.0, 4.0];
        let classes = [1, 1, 0, 0, 1, 1];
        assert_eq!(scan_missing(&vals, &classes, true, 2), Some((6.0, 1)));
        let (proxy, at) = scan_missing(&vals, &classes, true, 3).unwrap();
        assert_eq!(at, 0);
        assert!((proxy - (3.0 + 5.0 / 3.0)).abs() < 1e-12);
    }

    #[test]
    fn packed_rows_scan_as_their_samples_do() {
        // three classes, bootstrap-like whole weights: the packed scan is the same scan
        let mut rng = crate::rng::Rng::from_seed(3);
        let n = 300;
        let vals: Vec<f32> = (0..n)
            .map(|_| (rng.normal() * 4.0).round() as f32)
            .collect();
        let classes: Vec<u32> = (0..n).map(|i| (i % 3) as u32).collect();
        let weights: Vec<f64> = (0..n).map(|i| (i % 4) as f64).collect();
        let crit = Gini::new(&classes, 1);
        let packing =
            Packing::of(&crit, 3, RowWeights::Values(&weights)).expect("whole weights pack");
        let mut total = vec![0.0; 3];
        for (s, &w) in weights.iter().enumerate() {
            crit.add_sample(&mut total, s, w);
        }
        let w_node: f64 = weights.iter().sum();
        let by_row = sorted(&vals);
        let packed: Vec<(f32, u32)> = by_row
            .iter()
            .map(|&(v, s)| {
                (
                    v,
                    packing.pack(classes[s as usize] as usize, weights[s as usize]),
                )
            })
            .collect();
        let (mut l, mut r) = (vec![0.0; 3], vec![0.0; 3]);
        let limits = (w_node, 5, 0.0);
        let (missing, stay_right) = (Missing::NONE, &[][..]);
        let want = Sorted {
            pairs: &by_row,
            rows: ByRow(RowWeights::Values(&weights)),
            limits,
            missing,
            stay_right,
        }
        .run(crit.scan(&total, &mut l, &mut r));
        let got = Sorted {
            pairs: &packed,
            rows: Packed(packing),
            limits,
            missing,
            stay_right,
        }
        .run(crit.scan(&total, &mut l, &mut r));
        assert!(want.is_some());
        assert_eq!(
            got.map(|(p, at)| (p.to_bits(), at)),
            want.map(|(p, at)| (p.to_bits(), at))
        );
        for (slot, w) in [(0usize, 0.0f64), (2, 1.0), (1, 7.0)] {
            assert_eq!(packing.unpack(packing.pack(slot, w)), (slot, w));
        }
    }

    #[test]
    fn rows_pack_only_with_whole_weights_that_fit() {
        let classes = [0u32, 1, 1];
        let gini = Gini::new(&classes, 1);
        assert!(Packing::of(&gini, 2, RowWeights::Values(&[1.0, 2.0, 0.0])).is_some());
        assert!(Packing::of(&gini, 2, RowWeights::Values(&[1.0, 0.5, 1.0])).is_none());
        assert!(Packing::of(&gini, 2, RowWeights::Values(&[1.0, f64::NAN, 1.0])).is_none());
        assert!(Packing::of(&gini, 2, RowWeights::Values(&[1.0, -1.0, 1.0])).is_none());
        // two classes leave 31 bits of weight
        assert!(Packing::of(&gini, 2, RowWeights::Values(&[f64::from(u32::MAX >> 1)])).is_some());
        assert!(Packing::of(
            &gini,
            2,
            RowWeights::Values(&[f64::from(u32::MAX >> 1) + 1.0])
        )
        .is_none());
        // criteria that read more of a row than a slot never pack
        let y = [0.0, 1.0, 2.0];
        assert!(Packing::of(&SquaredError { y: &y }, 1, RowWeights::Values(&[1.0; 3])).is_none());
    }

    #[test]
    fn radix_sort_orders_like_total_cmp() {
        let mut rng = crate::rng::Rng::from_seed(5);
        for n in [0usize, 1, 10, 255, 2047, 2048, 5000, (1 << 18) + 5] {
            let specials = [0.0f32, -0.0, 1e-30, -1e-30, 3e38, -3e38, 1.0, -1.0];
            let mut pairs: Vec<(f32, u32)> = (0..n)
                .map(|i| {
                    let v = if i % 7 == 0 {
                        specials[i % specials.len()]
                    } else {
                        (rng.normal() * 100.0) as f32
                    };
                    (v, i as u32)
                })
                .collect();
            let mut want = pairs.clone();
            want.sort_by(|a, b| a.0.total_cmp(&b.0));
            let mut as_integers = pairs.clone();
            sort_pairs(&mut pairs, &mut Vec::new(), false);
            sort_pairs(&mut as_integers, &mut Vec::new(), true);
            let got: Vec<u32> = pairs.iter().map(|p| p.0.to_bits()).collect();
            let exp: Vec<u32> = want.iter().map(|p| p.0.to_bits()).collect();
            assert_eq!(got, exp, "n = {n}");
            // the radix sorts are stable: tied values (the specials repeat) keep their tags'
            // order (the comparison sort of small nodes need not)
            if n >= SMALL {
                let tags: Vec<u32> = pairs.iter().map(|p| p.1).collect();
                let want_tags: Vec<u32> = want.iter().map(|p| p.1).collect();
                assert_eq!(tags, want_tags, "n = {n}, tags");
            }
            // any tie order: the same values, each still with one of its pairs' tags
            let got: Vec<u32> = as_integers.iter().map(|p| p.0.to_bits()).collect();
            assert_eq!(got, exp, "n = {n}, as integers");
            let mut tags: Vec<(u32, u32)> =
                as_integers.iter().map(|p| (p.0.to_bits(), p.1)).collect();
            let mut want_tags: Vec<(u32, u32)> =
                want.iter().map(|p| (p.0.to_bits(), p.1)).collect();
            tags.sort_unstable();
            want_tags.sort_unstable();
            assert_eq!(tags, want_tags, "n = {n}, as integers");
        }
    }
}
