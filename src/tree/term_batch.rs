//! The explicit candidates of one node projected together ([`TermBatch`]), on dense X.
//!
//! SPORF's candidates at a node share their features: at its defaults on 32 features, ~50
//! candidates of about two terms each draw ~95 terms from at most 32 features. Projected one
//! by one, every term gathers its feature's values on the node's rows, which lie scattered
//! through X (or through the copy of a subtree's rows), one cache line a row and term;
//! projected together, each feature is gathered once for a block of rows, contiguously, and
//! every candidate sums its terms along the block from there.
//!
//! A value is `0 + w_1 x_1 + w_2 x_2 + ...`, one f32 product and one f32 addition a term in
//! the candidate's term order: the operations [`FeatureMatrix::project_rows`] does, so the
//! values, and every split and tree grown from them, are the same bit for bit.
//!
//! Invariant: [`TermBatch::values`] answers only between a [`TermBatch::compute`] and the
//! next [`TermBatch::reset`]; the searches that compute a batch reset it when their loop
//! over the candidates ends (and every draw of candidates resets it).

use std::ops::Range;

use crate::data::FeatureMatrix;
use crate::probe::{self, Count};
use crate::projection::ProjectionBuf;

/// Rows gathered together (a block's features stay in the L1 cache: 32 features take 8 KiB).
const BLOCK: usize = 64;
/// The most values one batch holds (1 MiB); a node whose candidates take more projects them
/// one by one.
const MAX_VALUES: usize = 1 << 18;

/// The values of a node's explicit candidates, and the scratch that computes them (one per
/// worker, in the [`super::workspace::Workspace`]).
#[derive(Default)]
pub(crate) struct TermBatch {
    /// Whether `values` holds the candidates' values on the rows `rows`.
    active: bool,
    /// The rows its values are for: their range in the workspace's samples.
    rows: Range<usize>,
    /// Rows of the batch.
    n: usize,
    /// Per candidate, its place in `values` (`u32::MAX`: not computed).
    slot: Vec<u32>,
    /// Candidate slot `k`'s values are `values[k * n..(k + 1) * n]`.
    values: Vec<f32>,
    /// The features the batch's terms read, in order of first use.
    features: Vec<usize>,
    /// Per feature of X, its place in `features` (`u32::MAX`: none), while a batch is
    /// planned.
    place: Vec<u32>,
    /// Every computed candidate's terms as (place in `features`, weight), in term order;
    /// slot `k`'s are `terms[term_ptr[k]..term_ptr[k + 1]]`.
    terms: Vec<(u32, f32)>,
    term_ptr: Vec<usize>,
    /// A block's gathered features: `features[f]` at `xb[f * BLOCK..]`.
    xb: Vec<f32>,
}

impl TermBatch {
    /// Forgets the values (the candidates are redrawn, or their loop ended).
    pub(super) fn reset(&mut self) {
        self.active = false;
    }

    /// Candidate `c`'s values on the rows `rows` (a range of the workspace's samples), when
    /// the batch computed them.
    pub(super) fn values(&self, c: usize, rows: &Range<usize>) -> Option<&[f32]> {
        if !self.active || self.rows != *rows {
            return None;
        }
        let k = *self.slot.get(c)?;
        (k != u32::MAX).then(|| &self.values[k as usize * self.n..][..self.n])
    }

    /// Projects the explicit candidates of `cand` but those `skip` names on the rows
    /// `samples` (the range `rows` of the workspace's samples) of dense X, when they share
    /// features (more terms than features) and their values fit in [`MAX_VALUES`];
    /// otherwise leaves the batch empty, and the search projects candidate by candidate.
    /// Every computed candidate's weights are first kept from overflowing its sums
    /// ([`FeatureMatrix::keep_sums_finite`], as the search does before projecting it).
    pub(super) fn compute(
        &mut self,
        x: &FeatureMatrix<'_>,
        cand: &mut ProjectionBuf,
        skip: impl Fn(usize) -> bool,
        (rows, samples): (Range<usize>, &[u32]),
    ) {
        debug_assert_eq!(rows.len(), samples.len());
        self.active = false;
        let n = samples.len();
        if x.is_sparse() || n == 0 {
            return;
        }
        self.plan(x, cand, skip);
        let k = self.term_ptr.len() - 1;
        if self.terms.len() <= self.features.len() || k.saturating_mul(n) > MAX_VALUES {
            return; // nothing shared (axis-aligned candidates), or too many values
        }
        self.rows = rows;
        self.n = n;
        self.values.clear();
        self.values.resize(k * n, 0.0);
        self.xb.resize(self.features.len() * BLOCK, 0.0);
        for b0 in (0..n).step_by(BLOCK) {
            let block = &samples[b0..(b0 + BLOCK).min(n)];
            let bl = block.len();
            x.gather_block(&self.features, block, &mut self.xb, BLOCK);
            for (s, ends) in self.term_ptr.windows(2).enumerate() {
                let out = &mut self.values[s * n + b0..][..bl];
                for &(f, w) in &self.terms[ends[0]..ends[1]] {
                    let col = &self.xb[f as usize * BLOCK..][..bl];
                    // one product and one addition (never fused), as project_rows
                    out.iter_mut().zip(col).for_each(|(o, &v)| *o += w * v);
                }
            }
        }
        self.active = true;
        probe::count(Count::TermBatches);
    }

    /// The batch's candidates (`slot`), their terms and the features those read.
    fn plan(
        &mut self,
        x: &FeatureMatrix<'_>,
        cand: &mut ProjectionBuf,
        skip: impl Fn(usize) -> bool,
    ) {
        self.slot.clear();
        self.features.clear();
        self.terms.clear();
        self.term_ptr.clear();
        self.term_ptr.push(0);
        if self.place.len() < x.n_features {
            self.place.resize(x.n_features, u32::MAX);
        }
        for c in 0..cand.len() {
            if skip(c) {
                self.slot.push(u32::MAX);
                continue;
            }
            x.keep_sums_finite(cand, c);
            let (a, b) = (cand.ptr[c] as usize, cand.ptr[c + 1] as usize);
            for (&j, &w) in cand.idx[a..b].iter().zip(&cand.w[a..b]) {
                let place = &mut self.place[j as usize];
                if *place == u32::MAX {
                    *place = self.features.len() as u32;
                    self.features.push(j as usize);
                }
                self.terms.push((*place, w));
            }
            self.slot.push((self.term_ptr.len() - 1) as u32);
            self.term_ptr.push(self.terms.len());
        }
        for &j in &self.features {
            self.place[j] = u32::MAX;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use ndarray::{s, Array2};

    /// `proj`'s values on `samples` as the search projects one candidate.
    fn one_by_one(
        x: &FeatureMatrix<'_>,
        cand: &ProjectionBuf,
        c: usize,
        samples: &[u32],
    ) -> Vec<u32> {
        let (a, b) = (cand.ptr[c] as usize, cand.ptr[c + 1] as usize);
        let terms: Vec<(usize, f32)> = (a..b).map(|t| (cand.idx[t] as usize, cand.w[t])).collect();
        let mut out = Vec::new();
        x.project_rows(&terms, samples, &mut Vec::new(), &mut out);
        out.iter().map(|v| v.to_bits()).collect()
    }

    #[test]
    fn batched_values_are_each_candidates_own_bit_for_bit() {
        let mut rng = Rng::from_seed(9);
        let (n, p) = (300, 24);
        // floats, NaN (missing), a two-valued column (bits in a column copy), signed zeros
        // and few values, and a column of huge values (whose candidates' weights are halved
        // to keep the sums finite)
        let x = Array2::from_shape_fn((n, p), |(_, j)| {
            let u = rng.unit();
            match j % 6 {
                0 if u < 0.05 => f32::NAN,
                1 => [-3.5, 2.0][usize::from(u < 0.5)],
                2 => [0.0, -0.0, 7.0][(u * 3.0) as usize],
                3 if j == 9 => (u as f32 - 0.5) * 3e38,
                _ => (u * 2.0 - 1.0) as f32 * 10f32.powi((u * 7.0) as i32 - 3),
            }
        });
        let fortran = x.t().as_standard_layout().t().to_owned();
        let narrow = x.slice(s![.., ..14]).to_owned();
        let layouts = [
            ("C order, copied by column", x.view()),
            ("Fortran order, borrowed", fortran.view()),
            ("C order, 14 features, borrowed by row", narrow.view()),
        ];
        for (name, view) in layouts {
            let whole = FeatureMatrix::from_view(view).unwrap();
            let p = whole.n_features;
            let rows: Vec<u32> = (0..n as u32).filter(|_| rng.unit() < 0.7).collect();
            let copy = whole.gather_rows(&rows, true).unwrap();
            let some = |m: usize| -> Vec<u32> { (0..m as u32).filter(|i| i % 3 != 1).collect() };
            for (what, x, samples) in [
                ("X's rows", &whole, rows.clone()),
                ("a copy by row", &copy, some(rows.len())),
            ] {
                // 1 to 9 terms (chunks of four beyond four), features drawn with repeats
                let mut cand = ProjectionBuf::default();
                cand.clear();
                for _ in 0..45 {
                    let k = 1 + rng.below(9);
                    let idx: Vec<u32> = (0..k).map(|_| rng.below(p) as u32).collect();
                    let w: Vec<f32> = (0..k)
                        .map(|_| {
                            (rng.unit() * 4.0 - 2.0) as f32 * [1.0, 0.001, 300.0][rng.below(3)]
                        })
                        .collect();
                    cand.push(&idx, &w);
                }
                let drawn = cand.clone();
                let skip = |c: usize| c % 7 == 3;
                let at = 5..5 + samples.len();
                let mut batch = TermBatch::default();
                batch.compute(x, &mut cand, skip, (at.clone(), &samples));
                for c in 0..cand.len() {
                    let got = batch.values(c, &at);
                    if skip(c) {
                        assert!(got.is_none(), "{name}, {what}: candidate {c} was skipped");
                        continue;
                    }
                    let got: Vec<u32> =
                        got.expect("computed").iter().map(|v| v.to_bits()).collect();
                    // as the search scores a candidate: its weights kept from overflowing
                    // its sums, then projected
                    let mut own = drawn.clone();
                    x.keep_sums_finite(&mut own, c);
                    let own = one_by_one(x, &own, c, &samples);
                    assert_eq!(got, own, "{name}, {what}: candidate {c}");
                }
                assert!(
                    batch.values(0, &(4..4 + samples.len())).is_none(),
                    "other rows"
                );
                batch.reset();
                assert!(batch.values(0, &at).is_none(), "reset");
                // axis-aligned candidates share nothing: no batch
                let mut axis = ProjectionBuf::default();
                axis.clear();
                for j in 0..5 {
                    axis.push(&[j], &[1.0]);
                }
                batch.compute(x, &mut axis, |_| false, (at.clone(), &samples));
                assert!(
                    batch.values(0, &at).is_none(),
                    "{name}, {what}: axis candidates"
                );
            }
        }
    }
}
