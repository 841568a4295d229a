//! The sorted scan of a Gini node of a few classes with whole weights, four positions to
//! an instruction ([`class_scan`]): where [`super::scan::Sorted`] moves one row at a time
//! and updates the children's sums of squares by `w (2x + w)`, this one takes the class
//! weights left of four positions at once as prefix sums and squares them.
//!
//! Invariant: it returns the (proxy, position) [`super::scan::Sorted`] returns, bit for
//! bit. Every class weight, weight and sum of squares is an integer below 2^53 (the
//! criterion's [`super::criterion::Criterion::exact_scan`]), so neither the order of the
//! additions nor squaring the sums instead of adding up their changes changes a bit of
//! them, and each proxy is then the same two divisions and one addition.

use super::scan::{offer_proxy, Packing};
use crate::probe::{self, Count, Switch};

// the lanes read a pair's value and tag as the two halves of 8 bytes
const _: () = assert!(
    std::mem::size_of::<(f32, u32)>() == 8
        && std::mem::offset_of!((f32, u32), 0) == 0
        && std::mem::offset_of!((f32, u32), 1) == 4
);

/// The most classes [`class_scan`] takes: with more, the lanes' work per class (a
/// compare and a prefix sum each) costs what it saves (SPORF at 5 and 8 classes fitted in
/// the sorted scan's time).
pub(super) const MAX_CLASSES: usize = 4;

/// (proxy, position) of the best split of a node's sorted, packed pairs
/// ([`super::scan::Sorted`] with [`super::scan::Packed`]) for Gini over 2 to
/// [`MAX_CLASSES`] classes with exact statistics: the node's class weights `totals`, its
/// weight, `min_samples_leaf` and the minimum leaf weight (`limits`), no missing value and
/// no monotonic constraint. `None` where it does not apply (the processor lacks AVX2, or
/// the node has another number of classes: the caller scans as before) — else the best
/// split, `Some(None)` when no position is admissible.
pub(super) fn class_scan(
    pairs: &[(f32, u32)],
    packing: Packing,
    totals: &[f64],
    limits: (f64, usize, f64),
) -> Option<Option<(f64, usize)>> {
    // (tests grow forests without the lanes, to compare)
    if !probe::on(Switch::Lanes) {
        return None;
    }
    #[cfg(target_arch = "x86_64")]
    if (2..=MAX_CLASSES).contains(&totals.len()) && std::arch::is_x86_feature_detected!("avx2") {
        probe::count(Count::LaneScans);
        // SAFETY (each call): the processor has AVX2, checked just above
        return Some(unsafe {
            match totals.len() {
                2 => avx2::scan::<2>(pairs, packing, as_array(totals), limits),
                3 => avx2::scan::<3>(pairs, packing, as_array(totals), limits),
                _ => avx2::scan::<4>(pairs, packing, as_array(totals), limits),
            }
        });
    }
    let _ = (pairs, packing, totals, limits);
    None
}

/// `totals` (`K` of them) as an array.
fn as_array<const K: usize>(totals: &[f64]) -> [f64; K] {
    std::array::from_fn(|c| totals[c])
}

/// The scan's running state after some positions: the left child's weight and class
/// weights, and the best (proxy, position) so far.
struct Tail<const K: usize> {
    w_l: f64,
    left: [f64; K],
    best: Option<(f64, usize)>,
}

impl<const K: usize> Tail<K> {
    /// Positions `from..` one at a time, as the lanes do them, after `self`.
    fn finish(
        mut self,
        pairs: &[(f32, u32)],
        packing: Packing,
        totals: [f64; K],
        (w_node, min_leaf, min_weight_leaf): (f64, usize, f64),
        from: usize,
    ) -> Option<(f64, usize)> {
        let m = pairs.len();
        for i in from..m.saturating_sub(1) {
            let (slot, w) = packing.unpack(pairs[i].1);
            self.w_l += w;
            self.left[slot] += w;
            if pairs[i].0 == pairs[i + 1].0 {
                continue;
            }
            let left = &self.left;
            let proxy = |w_l: f64, w_r: f64| {
                let (mut t_l, mut t_r) = (0.0, 0.0);
                for (&l, &t) in left.iter().zip(&totals) {
                    t_l += l * l;
                    t_r += (t - l) * (t - l);
                }
                t_l / w_l + t_r / w_r
            };
            let (rows, weights) = (
                (i + 1, m, min_leaf),
                (self.w_l, w_node - self.w_l, min_weight_leaf),
            );
            if offer_proxy(proxy, rows, weights, i, &mut self.best) {
                break;
            }
        }
        self.best
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{Packing, Tail};
    use std::arch::x86_64::*;

    /// [`super::class_scan`] over `K` classes on a processor with AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn scan<const K: usize>(
        pairs: &[(f32, u32)],
        packing: Packing,
        totals: [f64; K],
        limits: (f64, usize, f64),
    ) -> Option<(f64, usize)> {
        let (w_node, min_leaf, min_weight_leaf) = limits;
        let m = pairs.len();
        let (bits, slot_mask) = packing.fields();
        // lanes: positions i..i+4 need the values of pairs i..i+5
        let blocks = m.saturating_sub(1) / 4;
        let evens_odds = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
        let shift = _mm_cvtsi32_si128(bits as i32);
        let slot_mask = _mm_set1_epi32(slot_mask as i32);
        let slot_of: [__m256i; K] = std::array::from_fn(|c| _mm256_set1_epi64x(c as i64));
        let total: [__m256d; K] = std::array::from_fn(|c| _mm256_set1_pd(totals[c]));
        let wv = _mm256_set1_pd(w_node);
        let min_w = _mm256_set1_pd(min_weight_leaf);
        let zero = _mm256_setzero_pd();
        // n_l = i + 1 + lane must be in [min_leaf, m - min_leaf]
        let lo = _mm256_set1_pd(min_leaf as f64);
        let hi = _mm256_set1_pd(m as f64 - min_leaf as f64);
        // carried: the weight and the class weights (class 0's is the rest) left of the block
        let mut carried_w = zero;
        let mut carried = [zero; K];
        let mut n_l = _mm256_setr_pd(1.0, 2.0, 3.0, 4.0);
        let four = _mm256_set1_pd(4.0);
        let mut best = _mm256_set1_pd(f64::NEG_INFINITY);
        let mut best_at = zero; // n_l of each lane's best
        let base = pairs.as_ptr();
        for b in 0..blocks {
            let i = 4 * b;
            // SAFETY: i + 5 <= m, so pairs i..i+4 and i+1..i+5 are in the slice
            let here =
                _mm256_permutevar8x32_epi32(_mm256_loadu_si256(base.add(i).cast()), evens_odds);
            let next =
                _mm256_permutevar8x32_epi32(_mm256_loadu_si256(base.add(i + 1).cast()), evens_odds);
            let vals = _mm_castsi128_ps(_mm256_castsi256_si128(here));
            let next_vals = _mm_castsi128_ps(_mm256_castsi256_si128(next));
            let tags = _mm256_extracti128_si256::<1>(here);
            let w = _mm256_cvtepi32_pd(_mm_srl_epi32(tags, shift));
            let slots = _mm256_cvtepi32_epi64(_mm_and_si128(tags, slot_mask));
            let w_l = _mm256_add_pd(carried_w, prefix(w));
            carried_w = _mm256_permute4x64_pd::<0xFF>(w_l);
            // class c's weight left of each position, c >= 1; class 0's is the rest
            let mut left = [zero; K];
            let mut others = zero;
            for c in 1..K {
                let of_c = _mm256_castsi256_pd(_mm256_cmpeq_epi64(slots, slot_of[c]));
                left[c] = _mm256_add_pd(carried[c], prefix(_mm256_and_pd(w, of_c)));
                carried[c] = _mm256_permute4x64_pd::<0xFF>(left[c]);
                others = _mm256_add_pd(others, left[c]);
            }
            left[0] = _mm256_sub_pd(w_l, others);
            let differ =
                _mm256_castsi256_pd(_mm256_cvtepi32_epi64(_mm_castps_si128(_mm_cmp_ps::<
                    _CMP_NEQ_UQ,
                >(
                    vals, next_vals
                ))));
            let w_r = _mm256_sub_pd(wv, w_l);
            let ok = _mm256_and_pd(
                _mm256_and_pd(
                    _mm256_and_pd(differ, _mm256_cmp_pd::<_CMP_GE_OQ>(n_l, lo)),
                    _mm256_and_pd(
                        _mm256_cmp_pd::<_CMP_LE_OQ>(n_l, hi),
                        _mm256_cmp_pd::<_CMP_GE_OQ>(w_l, min_w),
                    ),
                ),
                _mm256_and_pd(
                    _mm256_and_pd(
                        _mm256_cmp_pd::<_CMP_GE_OQ>(w_r, min_w),
                        _mm256_cmp_pd::<_CMP_GT_OQ>(w_l, zero),
                    ),
                    _mm256_cmp_pd::<_CMP_GT_OQ>(w_r, zero),
                ),
            );
            if _mm256_movemask_pd(ok) != 0 {
                let (mut t_l, mut t_r) = (zero, zero);
                for c in 0..K {
                    let r = _mm256_sub_pd(total[c], left[c]);
                    t_l = _mm256_add_pd(t_l, _mm256_mul_pd(left[c], left[c]));
                    t_r = _mm256_add_pd(t_r, _mm256_mul_pd(r, r));
                }
                let proxy = _mm256_add_pd(_mm256_div_pd(t_l, w_l), _mm256_div_pd(t_r, w_r));
                let take = _mm256_and_pd(ok, _mm256_cmp_pd::<_CMP_GT_OQ>(proxy, best));
                best = _mm256_blendv_pd(best, proxy, take);
                best_at = _mm256_blendv_pd(best_at, n_l, take);
            }
            n_l = _mm256_add_pd(n_l, four);
        }
        // the lanes' best: the largest proxy, the earliest position among equals (each
        // lane kept its earliest), as one scan keeps the first of equal proxies
        let (proxies, at) = (lanes(best), lanes(best_at));
        let mut found: Option<(f64, usize)> = None;
        for (&p, &a) in proxies.iter().zip(&at) {
            if p == f64::NEG_INFINITY {
                continue;
            }
            let i = a as usize - 1;
            if found.is_none_or(|(q, j)| p > q || (p == q && i < j)) {
                found = Some((p, i));
            }
        }
        let w_l = lanes(carried_w)[0];
        let mut left: [f64; K] = std::array::from_fn(|c| lanes(carried[c])[0]);
        left[0] = w_l - left[1..].iter().sum::<f64>();
        let tail = Tail {
            w_l,
            left,
            best: found,
        };
        tail.finish(pairs, packing, totals, limits, 4 * blocks)
    }

    /// The four lanes of `x`.
    #[inline(always)]
    unsafe fn lanes(x: __m256d) -> [f64; 4] {
        let mut out = [0.0; 4];
        _mm256_storeu_pd(out.as_mut_ptr(), x);
        out
    }

    /// `[a, a+b, a+b+c, a+b+c+d]` of `[a, b, c, d]`.
    #[inline(always)]
    unsafe fn prefix(x: __m256d) -> __m256d {
        let zero = _mm256_setzero_pd();
        // [0, a, b, c]
        let by1 = _mm256_blend_pd::<0b0001>(_mm256_permute4x64_pd::<0b10_01_00_00>(x), zero);
        let s = _mm256_add_pd(x, by1);
        // [0, 0, s0, s1]
        let by2 = _mm256_permute2f128_pd::<0x08>(s, s);
        _mm256_add_pd(s, by2)
    }
}

#[cfg(test)]
mod tests {
    use super::super::criterion::{Criterion, Gini};
    use super::super::scan::tests::sorted;
    use super::super::scan::{Missing, Packed, Packing, ScanDriver, Sorted};
    use super::*;

    /// The lanes' (proxy, position) against the one-row-at-a-time scan, bit for bit, on
    /// nodes of 1 to 70 rows (every tail length) of 2 to 9 classes (9: not taken), ties,
    /// zero and large weights, classes in runs, mixed or rare, and limits that cut the
    /// positions at either end.
    #[test]
    fn lanes_find_the_split_the_sorted_scan_finds() {
        let _held = probe::hold();
        let mut rng = crate::rng::Rng::from_seed(11);
        let (mut lanes_ran, mut cases, mut split_in_lanes) = (0, 0, 0);
        for k in 2..=MAX_CLASSES + 1 {
            for n in 1..=70usize {
                for variant in 0..12 {
                    let vals: Vec<f32> = (0..n)
                        .map(|_| match variant % 4 {
                            0 => rng.normal() as f32,
                            1 => (rng.normal() * 2.0).round() as f32, // many ties
                            2 => (rng.below(3) as f32) - 1.0,         // few values
                            _ => rng.normal() as f32 * 1e-30,
                        })
                        .collect();
                    let signs: Vec<bool> = (0..n).map(|_| rng.coin()).collect();
                    let vals: Vec<f32> = vals
                        .iter()
                        .zip(&signs)
                        .map(|(&v, &neg)| if v == 0.0 && neg { -0.0 } else { v })
                        .collect();
                    let classes: Vec<u32> = (0..n)
                        .map(|i| match variant / 4 {
                            0 => rng.below(k) as u32,
                            // in runs of the values
                            1 => ((vals[i] + 3.0).max(0.0) as usize).min(k - 1) as u32,
                            _ => u32::from(i % 7 == 0) * (k as u32 - 1), // one class rare
                        })
                        .collect();
                    let weights: Vec<f64> = (0..n)
                        .map(|_| match rng.below(8) {
                            0 => 0.0,
                            7 => 1000.0,
                            w => w as f64,
                        })
                        .collect();
                    let crit = Gini::new(&classes, 1);
                    assert!(crit.squares_class_weights());
                    let packing = Packing::of(&crit, k, crate::tree::RowWeights::Values(&weights))
                        .expect("whole weights pack");
                    let mut total = vec![0.0; k];
                    for (s, &w) in weights.iter().enumerate() {
                        crit.add_sample(&mut total, s, w);
                    }
                    let w_node: f64 = weights.iter().sum();
                    let pairs: Vec<(f32, u32)> = sorted(&vals)
                        .iter()
                        .map(|&(v, s)| {
                            let s = s as usize;
                            (v, packing.pack(classes[s] as usize, weights[s]))
                        })
                        .collect();
                    for limits in [
                        (w_node, 1, 0.0),
                        (w_node, 5, 0.0),
                        (w_node, 1, 0.3 * w_node),
                        (w_node, n / 3 + 1, 2.0),
                    ] {
                        let (mut l, mut r) = (vec![0.0; k], vec![0.0; k]);
                        let want = Sorted {
                            pairs: &pairs,
                            rows: Packed(packing),
                            limits,
                            missing: Missing::NONE,
                            stay_right: &[],
                        }
                        .run(crit.scan(&total, &mut l, &mut r));
                        let Some(got) = class_scan(&pairs, packing, &total, limits) else {
                            // no AVX2 here, or too many classes: the sorted scan runs instead
                            assert!(k > MAX_CLASSES || !cfg!(target_arch = "x86_64") || !avx2());
                            continue;
                        };
                        assert!(k <= MAX_CLASSES);
                        lanes_ran += 1;
                        let bits = |f: Option<(f64, usize)>| f.map(|(p, at)| (p.to_bits(), at));
                        assert_eq!(
                            bits(got),
                            bits(want),
                            "k {k}, n {n}, variant {variant}, {limits:?}"
                        );
                        cases += usize::from(want.is_some());
                        let in_lanes = |at: usize| at < 4 * (n.saturating_sub(1) / 4);
                        split_in_lanes += usize::from(want.is_some_and(|(_, at)| in_lanes(at)));
                    }
                }
            }
        }
        if lanes_ran > 0 {
            // most cases split, and many at a position the lanes (not the tail) found
            assert!(cases > lanes_ran / 2, "{cases} of {lanes_ran}");
            assert!(split_in_lanes > cases / 2, "{split_in_lanes} of {cases}");
        }
    }

    fn avx2() -> bool {
        #[cfg(target_arch = "x86_64")]
        return std::arch::is_x86_feature_detected!("avx2");
        #[cfg(not(target_arch = "x86_64"))]
        false
    }

    /// Forests grown with and without the lanes: the same bytes (trees and out-of-bag
    /// records), over two, three and four classes, RF and SPORF, screened nodes, subtrees
    /// grown on copies of their rows, and a forest of five classes (which the lanes leave).
    #[test]
    fn lanes_change_no_tree() {
        use crate::forest::Forest;
        use crate::params::{ForestParams, MaxFeatures, SampleCount};
        use crate::projection::{Density, Projection, SparseSigned, WeightScale};
        use ndarray::Array2;

        let (n, p) = (3000, 6);
        let mut rng = crate::rng::Rng::from_seed(21);
        let mut x = Array2::<f32>::zeros((n, p));
        for v in x.iter_mut() {
            *v = rng.normal() as f32;
        }
        for i in 0..n {
            x[[i, 4]] = (rng.below(6) as f32) * 0.5; // ties
        }
        let labels = |k: usize| -> Vec<f64> {
            x.rows()
                .into_iter()
                .map(|r| {
                    let s = r[0] + 0.7 * r[1] - 0.5 * r[2] + 0.3 * r[4];
                    ((s + 1.5).max(0.0) as usize).min(k - 1) as f64
                })
                .collect()
        };
        let sporf = |mut q: ForestParams| {
            q.projection = Projection::new(SparseSigned {
                density: Density::FeatureCombinations(1.5),
                scaling: WeightScale::Robust,
            });
            q.max_features = MaxFeatures::Fraction(2.0);
            q
        };
        let base = |k: usize| {
            let mut q = ForestParams::classification(k);
            q.n_estimators = 3;
            q.min_samples_leaf = SampleCount::Count(2);
            q.oob = true;
            q.seed = 5;
            q
        };
        let _held = probe::hold();
        let before = probe::counted(Count::LaneScans);
        for k in 2..=5 {
            let y = labels(k);
            let mut screened = sporf(base(k));
            screened.growth.candidate_samples = Some(200);
            for (name, params) in [
                ("rf", base(k)),
                ("sporf", sporf(base(k))),
                ("screened", screened),
            ] {
                // subtrees of at most 400 rows grow on copies of their rows
                probe::set_local_limits(Some([400 * 4 * p, 50, 0]));
                let with = Forest::fit(&params, x.view(), &y, None).unwrap();
                probe::set(Switch::Lanes, false);
                let without = Forest::fit(&params, x.view(), &y, None);
                probe::set(Switch::Lanes, true);
                let without = without.unwrap();
                // (not assert_eq: a forest's bytes would fill the log)
                let same = with.to_bytes().unwrap() == without.to_bytes().unwrap();
                assert!(same, "{name}, {k} classes: other trees with the lanes");
                assert_eq!(with.oob(), without.oob(), "{name}, {k} classes");
            }
        }
        if avx2() {
            let scans = probe::counted(Count::LaneScans) - before;
            assert!(scans > 1000, "{scans} scans by the lanes");
        }
    }
}
