//! The pooled candidates of one node computed together ([`PooledBatch`]), on dense X.
//!
//! A pooled filter's value on a row is the max (min) over its window's positions of piece
//! sums, each summed from 0 in the projection's term order ([`Sliding::for_each_term`]).
//! The candidates drawn at a node often slide filters along the same line of features (on
//! a 1-D series, all of them do), and a piece's running sum after its first `t` taps then
//! depends only on the line, the piece's position and the first `t` tap weights: so the
//! filters of one line share a trie of their tap weights, evaluated once per position of
//! the line for every row, and each candidate only pools its window's pieces from it. Every
//! value is the same f32 operations in the same order as the candidate's own sum
//! ([`super::workspace::project`], [`crate::projection::ProjRef::value_by`]), so the values
//! are those prediction computes, bit for bit. Rows go in blocks: the line's features of a
//! block's rows are gathered once, contiguously per feature, and every sum runs along the
//! block.
//!
//! Invariant: [`PooledBatch::values`] answers only for the candidates of the last
//! [`PooledBatch::compute`] since the last [`PooledBatch::reset`] (every draw of candidates
//! resets it).

use std::ops::Range;

use crate::data::FeatureMatrix;
use crate::projection::{CompactDescriptors, Pool, ProjectionBuf, Sliding};

/// Rows summed together (the gathered features of a block stay in cache).
const BLOCK: usize = 64;
/// Rows summed in one vector register or two (`BLOCK` is a multiple).
const LANES: usize = 8;
const _: () = assert!(BLOCK % LANES == 0);
/// The most values one batch holds (16 MiB); candidates beyond go in the next batch.
pub(super) const MAX_VALUES: usize = 1 << 22;
/// No trie node: the parent of the first tap.
const ROOT: usize = usize::MAX;

/// A pooled candidate of the batch.
struct Filter {
    s: Sliding,
    /// Its first tap's features at position 0, in `PooledBatch::bases`.
    base: Range<usize>,
    /// The first filter of the batch on the same line (the same base and stride).
    line: usize,
    /// Its last tap's node in the line's trie.
    end: usize,
}

/// One tap of a trie of tap weights: the running sum after the taps up to this one.
struct Tap {
    parent: usize,
    w: f32,
    /// Its index in the filter (the depth in the trie, from 0).
    t: usize,
    /// The positions where a filter through this tap has a piece: from the first
    /// filter's first to the last one's end (a parent's span holds its children's).
    span: Range<usize>,
}

/// The values of a batch of pooled candidates at one node, and the scratch that computes
/// them (one per worker, in the [`super::workspace::Workspace`]).
#[derive(Default)]
pub(crate) struct PooledBatch {
    /// The candidates the last batch looked at.
    covered: Range<usize>,
    /// The rows its values are for: their range in the workspace's samples.
    rows: Range<usize>,
    /// Per covered candidate, its index in `filters` (`u32::MAX`: not a sliding filter).
    slot: Vec<u32>,
    /// Rows of the node.
    n: usize,
    /// Filter `i`'s values are `values[i * n..(i + 1) * n]`.
    values: Vec<f32>,
    filters: Vec<Filter>,
    bases: Vec<usize>,
    members: Vec<usize>,
    trie: Vec<Tap>,
    /// The gathered features of a block: slot `(a - first position) * base + i` holds
    /// feature `base[i] + a * stride` of the block's rows, `BLOCK` floats per slot.
    xb: Vec<f32>,
    /// The running sum of every trie node at one position, `BLOCK` floats per node.
    sums: Vec<f32>,
    /// The pooled value so far of each filter of the line on the block's rows.
    acc: Vec<f32>,
}

impl PooledBatch {
    /// Forgets the candidates (they are redrawn).
    pub(super) fn reset(&mut self) {
        self.covered = 0..0;
    }

    /// Whether the last batch looked at candidate `c` on the rows `rows` (a range of the
    /// workspace's samples: a search may score candidates on part of a node's rows).
    pub(super) fn covers(&self, c: usize, rows: &Range<usize>) -> bool {
        self.covered.contains(&c) && self.rows == *rows
    }

    /// Candidate `c`'s values on the rows `rows`, when the batch computed them.
    pub(super) fn values(&self, c: usize, rows: &Range<usize>) -> Option<&[f32]> {
        if !self.covers(c, rows) {
            return None;
        }
        let k = self.slot[c - self.covered.start];
        (k != u32::MAX).then(|| &self.values[k as usize * self.n..][..self.n])
    }

    /// Computes the values on the rows `samples` (the range `rows` of the workspace's
    /// samples) of the sliding filters among candidates `from..` of `cand` (as many as
    /// `max_values` values allow, at least one filter; [`MAX_VALUES`] in the split search);
    /// `missing`: whether X holds NaN.
    pub(super) fn compute(
        &mut self,
        x: &FeatureMatrix<'_>,
        (cand, family): (&ProjectionBuf, &dyn CompactDescriptors),
        from: usize,
        (rows, samples): (Range<usize>, &[u32]),
        missing: bool,
        max_values: usize,
    ) {
        debug_assert_eq!(rows.len(), samples.len());
        self.rows = rows;
        let n = samples.len();
        let most = (max_values / n.max(1)).max(1);
        self.n = n;
        self.filters.clear();
        self.bases.clear();
        self.slot.clear();
        let mut c = from;
        while c < cand.len() && self.filters.len() < most {
            let desc = &cand.idx[cand.ptr[c] as usize..cand.ptr[c + 1] as usize];
            let at = self.bases.len();
            match family.sliding(desc, &mut self.bases) {
                Some(s) => {
                    self.slot.push(self.filters.len() as u32);
                    let i = self.filters.len();
                    self.filters.push(Filter {
                        s,
                        base: at..self.bases.len(),
                        line: i,
                        end: ROOT,
                    });
                }
                None => self.slot.push(u32::MAX),
            }
            c += 1;
        }
        self.covered = from..c;
        // the lines: filters with the same base and stride
        for i in 0..self.filters.len() {
            let (fi, bi) = (&self.filters[i], &self.bases[self.filters[i].base.clone()]);
            let line = (0..i).find(|&k| {
                let fk = &self.filters[k];
                fk.line == k && fk.s.stride == fi.s.stride && self.bases[fk.base.clone()] == *bi
            });
            self.filters[i].line = line.unwrap_or(i);
        }
        self.values.clear();
        self.values.resize(self.filters.len() * n, 0.0);
        for line in 0..self.filters.len() {
            if self.filters[line].line == line {
                self.compute_line(x, line, samples, missing);
            }
        }
    }

    /// The values of the filters on the line of filter `line`.
    fn compute_line(&mut self, x: &FeatureMatrix<'_>, line: usize, samples: &[u32], missing: bool) {
        let PooledBatch {
            n,
            values,
            filters,
            bases,
            members,
            trie,
            xb,
            sums,
            acc,
            ..
        } = self;
        let n = *n;
        let (stride, base) = (filters[line].s.stride, &bases[filters[line].base.clone()]);
        let nb = base.len();
        // the trie of the line's tap weights, and the positions its filters cover:
        // pieces start in q0..q1, taps read positions a0..a1
        trie.clear();
        members.clear();
        let (mut q0, mut q1, mut a1) = (usize::MAX, 0, 0);
        for (i, filter) in filters.iter_mut().enumerate().skip(line) {
            if filter.line != line {
                continue;
            }
            members.push(i);
            let s = filter.s;
            let mut node = ROOT;
            let pieces = s.first..s.first + s.positions;
            for t in 0..s.taps() {
                let w = s.weight(t);
                node = match trie
                    .iter()
                    .position(|k| k.parent == node && k.w.to_bits() == w.to_bits())
                {
                    Some(k) => {
                        let span = &mut trie[k].span;
                        *span = span.start.min(pieces.start)..span.end.max(pieces.end);
                        k
                    }
                    None => {
                        let span = pieces.clone();
                        trie.push(Tap {
                            parent: node,
                            w,
                            t,
                            span,
                        });
                        trie.len() - 1
                    }
                };
            }
            filter.end = node;
            q0 = q0.min(s.first);
            q1 = q1.max(s.first + s.positions);
            a1 = a1.max(s.first + s.positions - 1 + s.taps());
        }
        xb.resize((a1 - q0) * nb * BLOCK, 0.0);
        sums.resize(trie.len() * BLOCK, 0.0);
        acc.resize(members.len() * BLOCK, 0.0);
        for r0 in (0..n).step_by(BLOCK) {
            let rows = &samples[r0..n.min(r0 + BLOCK)];
            let bl = rows.len();
            // sums run over whole vectors of lanes: those past the block's rows hold
            // stale values, read by no one
            let lanes = bl.next_multiple_of(LANES);
            for a in q0..a1 {
                for (i, &j) in base.iter().enumerate() {
                    let slot = (a - q0) * nb + i;
                    x.gather_column(j + a * stride, rows, &mut xb[slot * BLOCK..][..bl]);
                }
            }
            for q in q0..q1 {
                // every tap's running sum at position q, parents first
                for (k, tap) in trie.iter().enumerate() {
                    if !tap.span.contains(&q) {
                        continue; // no filter through this tap has a piece at q
                    }
                    let a = q + tap.t;
                    debug_assert!(a < a1);
                    let (done, rest) = sums.split_at_mut(k * BLOCK);
                    let sum = &mut rest[..lanes];
                    for i in 0..nb {
                        let xv = &xb[((a - q0) * nb + i) * BLOCK..][..lanes];
                        add_tap(sum, (i == 0).then_some((tap.parent, &*done)), tap.w, xv);
                    }
                }
                // each filter pools its pieces starting at q
                for (m, &i) in members.iter().enumerate() {
                    let (s, end) = (filters[i].s, filters[i].end);
                    if q < s.first || q >= s.first + s.positions {
                        continue;
                    }
                    let piece = &sums[end * BLOCK..][..lanes];
                    let out = &mut acc[m * BLOCK..][..lanes];
                    if q == s.first {
                        out.copy_from_slice(piece);
                    } else {
                        pool_into(s.pool, missing, out, piece);
                    }
                }
            }
            for (m, &i) in members.iter().enumerate() {
                values[i * n + r0..][..bl].copy_from_slice(&acc[m * BLOCK..][..bl]);
            }
        }
    }
}

/// `sum += w * x` row by row, or with `from = Some((parent, sums))` `sum = start + w * x`
/// where `start` is the parent node's sums (0 for the root).
#[inline]
fn add_tap(sum: &mut [f32], from: Option<(usize, &[f32])>, w: f32, xv: &[f32]) {
    match from {
        None => sum.iter_mut().zip(xv).for_each(|(s, &v)| *s += w * v),
        Some((ROOT, _)) => sum.iter_mut().zip(xv).for_each(|(s, &v)| *s = 0.0 + w * v),
        Some((parent, done)) => {
            let p = &done[parent * BLOCK..][..sum.len()];
            sum.iter_mut()
                .zip(p)
                .zip(xv)
                .for_each(|((s, &p), &v)| *s = p + w * v);
        }
    }
}

/// `out[k] = pool.combine(out[k], v[k])`; without missing values (no NaN) as a plain
/// comparison, which is the same.
#[inline]
fn pool_into(pool: Pool, missing: bool, out: &mut [f32], v: &[f32]) {
    let rows = out.iter_mut().zip(v);
    match (pool, missing) {
        (_, true) => rows.for_each(|(o, &v)| *o = pool.combine(*o, v)),
        (Pool::Max, false) => rows.for_each(|(o, &v)| *o = if v > *o { v } else { *o }),
        (Pool::Min, false) => rows.for_each(|(o, &v)| *o = if v < *o { v } else { *o }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::projection::{
        DataStats, HaarPatches, PatchGeometry, PooledPatches, ProjectionFamily, SamplerScratch,
    };
    use crate::rng::Rng;
    use crate::tree::workspace::{project, Gather};
    use ndarray::{Array2, ShapeBuilder};

    fn family(shape: Vec<usize>, channel_axis: Option<usize>) -> PooledPatches {
        let n = shape.len() - usize::from(channel_axis.is_some());
        PooledPatches {
            haar: HaarPatches {
                geometry: PatchGeometry {
                    data_shape: shape,
                    channel_axis,
                    min_patch_size: vec![1; n],
                    max_patch_size: vec![3; n],
                    periodic: vec![false; n],
                },
                differences: 0.5,
            },
            pooled: 0.8,
            max_filter: 3,
            min_window: 4,
        }
    }

    /// Every candidate's batch values are its `project` values bit for bit, whatever
    /// the data (float columns in either order, columns of bits, NaN, -0.0), the
    /// geometry, the rows and the batches' size.
    #[test]
    fn batch_values_are_each_candidates_own_sums() {
        let mut rng = Rng::from_seed(3);
        let cases = [
            (family(vec![50], None), false),
            (family(vec![3, 9, 7], Some(0)), false),
            (family(vec![6, 8], None), true),
        ];
        let mut n_checked = 0;
        for (f, missing) in &cases {
            let p = f.haar.geometry.data_shape.iter().product::<usize>();
            let n = 150;
            let mut data = Array2::from_shape_fn((n, p), |_| (rng.unit() * 4.0 - 2.0) as f32);
            for j in (0..p).step_by(4) {
                // columns of bits (a row-major copy packs them), some with -0.0
                for i in 0..n {
                    data[[i, j]] = if rng.coin() { -0.0 } else { 1.0 };
                }
            }
            if *missing {
                for _ in 0..40 {
                    data[[rng.below(n), rng.below(p)]] = f32::NAN;
                }
            }
            let fortran = {
                let mut a = Array2::zeros((n, p).f());
                a.assign(&data);
                a
            };
            let mut cand = ProjectionBuf::default();
            f.sample(
                &DataStats::of_width(0),
                &mut rng,
                40,
                &mut SamplerScratch::default(),
                &mut cand,
            );
            let rows: Vec<u32> = (0..n as u32).filter(|_| rng.unit() < 0.7).collect();
            for x in [data.view(), fortran.view()] {
                let x = FeatureMatrix::from_view(x).unwrap();
                assert_eq!(x.has_missing(), *missing);
                for max_values in [MAX_VALUES, 3 * rows.len()] {
                    let mut batch = PooledBatch::default();
                    let (mut gather, mut want) = (Gather::default(), Vec::new());
                    for c in 0..cand.len() {
                        let proj = cand.get(c, Some(f));
                        if proj.pooling().is_none() {
                            continue;
                        }
                        let at = 0..rows.len();
                        if !batch.covers(c, &at) {
                            let samples = (at.clone(), &rows[..]);
                            batch.compute(&x, (&cand, f), c, samples, *missing, max_values);
                        }
                        project(&x, proj, &rows, &mut gather, &mut want);
                        let got = batch.values(c, &at).expect("a pooled candidate");
                        assert!(
                            batch.values(c, &(0..rows.len() - 1)).is_none(),
                            "other rows"
                        );
                        let bits = |v: &[f32]| v.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
                        assert_eq!(bits(got), bits(&want), "candidate {c}");
                        n_checked += 1;
                    }
                    assert!(batch.values(cand.len(), &(0..rows.len())).is_none());
                }
            }
        }
        assert!(n_checked > 150, "{n_checked}");
    }
}
