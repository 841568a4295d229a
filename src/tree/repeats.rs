//! Candidates that repeat an earlier candidate of the same draw ([`Repeats`]), so that the
//! split search scores each distinct projection once.
//!
//! A sparse sampler often draws the same projection twice at a node: SPORF at its
//! defaults draws about 2p candidates of 1.5 terms on average, about a third of them a
//! single feature, so several name a feature an earlier one named. A candidate with the
//! same terms as an earlier one projects every row to the same value, so its best split
//! has the earlier one's proxy and cannot replace it (a split replaces the best only by
//! scoring strictly more). A *mirror* (the same features, every weight negated) orders
//! the rows the other way and offers the same partitions of them, each with its children
//! swapped; when the scan's statistics are exact ([`super::criterion::Criterion::exact_scan`]:
//! whole-number weights, a proxy `f(left) + f(right)`), each partition scores the same
//! proxy either way, so a mirror cannot replace its original either.
//!
//! Invariant: a repeat's original comes earlier in the draw and is not itself a repeat,
//! and a repeat scores (on any rows of the node) exactly what its original scores; so
//! skipping repeats changes no split, no tree and no random number.

use crate::probe::{self, Count};
use crate::projection::ProjectionBuf;

const NONE: u32 = u32::MAX;

/// The repeats of one draw of candidates ([`Repeats::find`]), and the table of first
/// features that finds them in one pass over the draw.
#[derive(Debug, Default)]
pub(super) struct Repeats {
    /// For each candidate of the draw: the earlier candidate it repeats, or `NONE`.
    of: Vec<u32>,
    /// For each candidate: the previous candidate whose first term has the same feature.
    previous: Vec<u32>,
    /// An open-addressed table of (draw stamp, feature, the latest candidate whose first
    /// term is that feature), at least twice as many slots as candidates, so that it stays
    /// in the first-level cache where a table indexed by feature would not (60,000
    /// features of text data take 480 KB; a draw of 245 candidates, 6 KB here). A slot of
    /// another stamp is empty: the table is never cleared between draws.
    latest: Vec<(u32, u32, u32)>,
    stamp: u32,
}

impl Repeats {
    /// Finds the repeats of the explicit candidates `cand` (features in `idx`, weights in
    /// `w`): candidates with the same features in the same order and the same weights as
    /// an earlier one, and with `mirrors` also those whose every weight is negated.
    pub(super) fn find(&mut self, cand: &ProjectionBuf, mirrors: bool) {
        let d = cand.len();
        self.of.clear();
        self.of.resize(d, NONE);
        self.previous.clear();
        self.previous.resize(d, NONE);
        if self.latest.len() < 2 * d {
            // (all stamps 0: empty for every draw)
            self.latest = vec![(0, 0, NONE); (2 * d).next_power_of_two().max(16)];
        }
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            // the stamps wrapped: entries of an old draw could read as this one's
            self.latest.fill((0, 0, NONE));
            self.stamp = 1;
        }
        let mask = self.latest.len() - 1;
        let shift = 64 - self.latest.len().trailing_zeros();
        for c in 0..d {
            let (a, b) = (cand.ptr[c] as usize, cand.ptr[c + 1] as usize);
            if a == b {
                continue;
            }
            let j = cand.idx[a];
            // Fibonacci hashing, then the next slot until j's or an empty one
            let mut slot = (u64::from(j).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> shift) as usize;
            while self.latest[slot].0 == self.stamp && self.latest[slot].1 != j {
                slot = (slot + 1) & mask;
            }
            let (stamp, _, latest) = self.latest[slot];
            let mut e = if stamp == self.stamp { latest } else { NONE };
            self.previous[c] = e;
            self.latest[slot] = (self.stamp, j, c as u32);
            while e != NONE {
                let earlier = e as usize;
                if same_up_to_sign(cand, earlier, c, mirrors) {
                    // (an earlier repeat's original is this one's too)
                    let original = self.of[earlier];
                    self.of[c] = if original == NONE { e } else { original };
                    // (tests count the repeats found)
                    probe::count(Count::RepeatsFound);
                    break;
                }
                e = self.previous[earlier];
            }
        }
    }

    /// Forgets the last draw: no candidate is a repeat.
    pub(super) fn clear(&mut self) {
        self.of.clear();
    }

    /// The earlier candidate that candidate `c` repeats, if any.
    pub(super) fn original(&self, c: usize) -> Option<usize> {
        self.of.get(c).filter(|&&o| o != NONE).map(|&o| o as usize)
    }
}

/// Whether candidates `a` and `b` have the same features in the same order and the same
/// weights, or (with `mirrors`) every weight negated.
fn same_up_to_sign(cand: &ProjectionBuf, a: usize, b: usize, mirrors: bool) -> bool {
    let terms = |c: usize| cand.ptr[c] as usize..cand.ptr[c + 1] as usize;
    let (ta, tb) = (terms(a), terms(b));
    if ta.len() != tb.len() || cand.idx[ta.clone()] != cand.idx[tb.clone()] {
        return false;
    }
    let (wa, wb) = (&cand.w[ta], &cand.w[tb]);
    wa == wb || (mirrors && wa.iter().zip(wb).all(|(x, y)| *x == -*y))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buf(cands: &[&[(u32, f32)]]) -> ProjectionBuf {
        let mut out = ProjectionBuf::default();
        out.clear();
        for terms in cands {
            for &(j, w) in *terms {
                out.idx.push(j);
                out.w.push(w);
            }
            out.close();
        }
        out
    }

    #[test]
    fn repeats_and_mirrors_name_their_first_original() {
        let cand = buf(&[
            &[(3, 1.0)],
            &[(3, 1.0), (5, -1.0)],
            &[(3, -1.0)],           // mirror of 0
            &[(3, 1.0)],            // repeat of 0
            &[(3, -1.0), (5, 1.0)], // mirror of 1
            &[(3, 2.0)],            // another weight: not a repeat
            &[(5, 1.0), (3, -1.0)], // other order: not a repeat
            &[(3, 1.0), (5, -1.0)], // repeat of 1
        ]);
        let mut r = Repeats::default();
        r.find(&cand, true);
        let of: Vec<_> = (0..cand.len()).map(|c| r.original(c)).collect();
        assert_eq!(
            of,
            [None, None, Some(0), Some(0), Some(1), None, None, Some(1)]
        );
        r.find(&cand, false);
        let of: Vec<_> = (0..cand.len()).map(|c| r.original(c)).collect();
        assert_eq!(of, [None, None, None, Some(0), None, None, None, Some(1)]);
        // a new draw does not see the last one's candidates
        let other = buf(&[&[(5, 1.0)], &[(3, 1.0)]]);
        r.find(&other, true);
        assert_eq!((r.original(0), r.original(1)), (None, None));
        r.clear();
        assert_eq!(r.original(3), None);
    }

    /// Large random draws (many features sharing the table's slots, repeats several deep):
    /// each candidate's original is the first earlier candidate with the same terms (up to
    /// sign with mirrors), as an all-pairs comparison finds it; and a smaller draw after a
    /// larger one sees none of its entries.
    #[test]
    fn originals_are_the_first_equal_candidates_of_large_draws() {
        let mut rng = crate::rng::Rng::from_seed(3);
        let mut r = Repeats::default();
        for (d, features) in [(700, 40), (700, 300), (300, 5_000), (50, 3), (700, 1 << 30)] {
            let mut cand = ProjectionBuf::default();
            cand.clear();
            for _ in 0..d {
                for _ in 0..rng.below(3) {
                    cand.idx.push(rng.below(features) as u32);
                    cand.w.push(if rng.coin() { 1.0 } else { -1.0 });
                }
                cand.close();
            }
            for mirrors in [false, true] {
                r.find(&cand, mirrors);
                for c in 0..d {
                    let first = (0..c).find(|&e| {
                        cand.ptr[e] != cand.ptr[e + 1] && same_up_to_sign(&cand, e, c, mirrors)
                    });
                    let expected = first.filter(|_| cand.ptr[c] != cand.ptr[c + 1]);
                    assert_eq!(r.original(c), expected, "draw of {d}, candidate {c}");
                }
            }
        }
    }

    /// Every kind of tree the split search grows, with and without skipping repeats: the same
    /// bytes (the trees, their out-of-bag records), and repeats were found.
    #[test]
    fn skipping_repeats_changes_no_tree() {
        use crate::forest::Forest;
        use crate::params::{Criterion, ForestParams, MaxFeatures, SampleCount, Splitter};
        use crate::probe::Switch;
        use crate::projection::{Density, Projection, SparseSigned, WeightScale};
        use crate::rng::Rng;
        use ndarray::Array2;

        let (n, p) = (2500, 6);
        let mut rng = Rng::from_seed(9);
        let mut x = Array2::<f32>::zeros((n, p));
        for v in x.iter_mut() {
            // few distinct values on some features: ties and exact histograms
            *v = (rng.below(1000) as f32 / 100.0).floor() * 0.5;
        }
        for i in 0..n {
            x[[i, 1]] = rng.below(1_000_000) as f32 / 1e6;
        }
        let label =
            |r: ndarray::ArrayView1<f32>| f64::from(u8::from(r[0] - r[1] * 4.0 + r[2] > 3.0));
        let y: Vec<f64> = x.rows().into_iter().map(label).collect();
        let y3: Vec<f64> = x
            .rows()
            .into_iter()
            .map(|r| (r[0] as f64).min(2.0).floor())
            .collect();
        let target: Vec<f64> = x
            .rows()
            .into_iter()
            .map(|r| f64::from(r[0] * r[1] - r[3]))
            .collect();
        let fractional: Vec<f64> = (0..n).map(|i| 0.25 + (i % 7) as f64 * 0.3).collect();
        let mut missing = x.clone();
        for i in (0..n).step_by(9) {
            missing[[i, 2]] = f32::NAN;
        }

        let base = |mut q: ForestParams| {
            q.projection = Projection::new(SparseSigned {
                density: Density::FeatureCombinations(1.5),
                scaling: WeightScale::Robust,
            });
            q.max_features = MaxFeatures::Fraction(2.0);
            q.n_estimators = 4;
            q.min_samples_leaf = SampleCount::Count(2);
            q.oob = true;
            q.seed = 3;
            q
        };
        let class = base(ForestParams::classification(2));
        // (name, parameters, X, y, sample weights)
        type Case<'a> = (
            &'a str,
            ForestParams,
            &'a Array2<f32>,
            &'a [f64],
            Option<&'a [f64]>,
        );
        let mut cases: Vec<Case> = vec![
            ("gini", class.clone(), &x, &y, None),
            (
                "gini, fractional weights",
                class.clone(),
                &x,
                &y,
                Some(&fractional),
            ),
            ("gini, missing values", class.clone(), &missing, &y, None),
        ];
        let mut screened = class.clone();
        screened.growth.candidate_samples = Some(200);
        cases.push(("gini, screened", screened, &x, &y, None));
        let three = base(ForestParams::classification(3));
        cases.push(("gini, three classes", three, &x, &y3, None));
        let mut entropy = class.clone();
        entropy.criterion = Criterion::Entropy;
        cases.push(("entropy", entropy, &x, &y, None));
        let mut hist = class.clone();
        hist.splitter = Splitter::Histogram { max_bins: 16 };
        cases.push(("gini, hist", hist, &x, &y, None));
        let mut mono = class.clone();
        mono.growth.monotonic_cst = vec![1, -1, 0, 0, 0, 0];
        cases.push(("gini, monotonic", mono, &x, &y, None));
        let mut regression = base(ForestParams::regression());
        regression.criterion = Criterion::SquaredError;
        cases.push(("squared error", regression.clone(), &x, &target, None));
        regression.growth.candidate_samples = Some(200);
        cases.push(("squared error, screened", regression, &x, &target, None));

        let _held = probe::hold();
        let before = probe::counted(Count::RepeatsFound);
        for (name, params, x, y, weights) in cases {
            probe::set(Switch::SkipRepeats, false);
            let all = Forest::fit(&params, x.view(), y, weights).unwrap();
            probe::set(Switch::SkipRepeats, true);
            let skipped = Forest::fit(&params, x.view(), y, weights).unwrap();
            // (not assert_eq: a forest's bytes would fill the log)
            let same = all.to_bytes().unwrap() == skipped.to_bytes().unwrap();
            assert!(same, "{name}: other trees when repeats are skipped");
            assert_eq!(all.oob(), skipped.oob(), "{name}");
        }
        assert!(probe::counted(Count::RepeatsFound) > before + 1000);
    }
}
