//! Out-of-bag estimates: each row's sum of the predictions of the trees that did not draw
//! it, and how many trees those are. A fit with `oob` adds them tree by tree as the trees
//! grow; [`Forest::compute_oob`] recomputes them for a grown forest from the trees' seeds.
//! Either way a row's sum adds its trees' values in tree index order, so the two agree bit
//! for bit.

use super::{Forest, Grown};
use crate::cancel;
use crate::data::FeatureMatrix;
use crate::error::{Error, Result};
use crate::sparse::{Features, Row};
use crate::threads::{n_threads, thread_pool};
use crate::tree::PackedTree;
use rayon::prelude::*;

/// Out-of-bag sums of tree predictions and the number of trees each row was out of bag for.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OobPrediction {
    /// Shape (n_samples, n_outputs), row-major.
    pub sums: Vec<f64>,
    /// Trees each row was out of bag for.
    pub counts: Vec<u32>,
}

impl OobPrediction {
    /// Counts one tree's out-of-bag prediction `value` (its leaf's values) for `row`.
    /// Every OOB sum is built by this call, tree by tree in index order and rows in
    /// ascending order within a tree, so that forests joined from parts
    /// ([`crate::part`]) add the same numbers in the same order as a single fit.
    pub(crate) fn add(&mut self, row: usize, value: &[f64]) {
        let k = value.len();
        add_row(&mut self.sums[row * k..], &mut self.counts[row], value);
    }

    /// [`OobPrediction::add`] for every out-of-bag row of every grown tree (`grown`: trees
    /// in index order, each with its out-of-bag rows as a bitset) on the fit's rows `x`,
    /// walked down `packed` (the trees' prediction layouts). Blocks of rows are summed in
    /// parallel on the current rayon pool, each row over its trees in index order: the
    /// numbers and the order of [`OobPrediction::add`] tree by tree, rows ascending. Each
    /// tree's out-of-bag rows of a block go down it together, node by node, where the tree
    /// has fewer nodes than those rows (as a micro-forest's small trees do), reading X's
    /// columns in place when X lies by column ([`PackedTree::leaves_among_by_column`]);
    /// else row by row, on the block copied by row (dense X of up to [`BY_ROW_FEATURES`]
    /// features, once a block, the same values; [`PackedTree::leaves_among`]) or on X
    /// itself. A cancelled call skips the blocks not yet started (the caller checks
    /// [`cancel::check`]).
    pub(crate) fn add_trees(
        &mut self,
        grown: &[Grown],
        x: &FeatureMatrix<'_>,
        packed: &[PackedTree],
    ) {
        /// Rows a task sums (a whole number of bitset words).
        const BLOCK: usize = 2048;
        let k = self.sums.len() / self.counts.len().max(1);
        let p = x.n_features;
        let carried = cancel::carry();
        // X's own columns where it lies by column: the node-by-node walks read them in
        // place; rows by row are copied only for trees walked row by row
        let columns = x.unit_columns();
        self.sums
            .par_chunks_mut(BLOCK * k.max(1))
            .zip(self.counts.par_chunks_mut(BLOCK))
            .enumerate()
            .for_each(|(b, (sums, counts))| {
                if carried.run(cancel::requested) {
                    return;
                }
                let lo = b * BLOCK;
                let words = lo / 64..(lo + counts.len()).div_ceil(64);
                let block_columns: Option<Vec<&[f32]>> = columns
                    .as_ref()
                    .map(|c| c.iter().map(|c| &c[lo..lo + counts.len()]).collect());
                let (mut rows, mut reached, mut block) = (Vec::new(), Vec::new(), Vec::new());
                // whether the block is copied by row (None: not asked yet)
                let mut by_row = None;
                // each out-of-bag row's leaf, at the row's index in the block
                let mut leaves = vec![0u32; counts.len()];
                for (t, (tree, bits)) in grown.iter().enumerate() {
                    let Some(bits) = bits.as_deref() else {
                        continue;
                    };
                    rows.clear();
                    rows.extend(ones(&bits[words.clone()]).map(|i| i as u32));
                    let by_column = block_columns
                        .as_deref()
                        .is_some_and(|c| packed[t].leaves_among_by_column(c, &rows, &mut leaves));
                    if !by_column {
                        let copied = *by_row.get_or_insert_with(|| {
                            p <= BY_ROW_FEATURES && x.copy_rows_by_row(lo, counts.len(), &mut block)
                        });
                        if copied {
                            packed[t].leaves_among(&block, p, &rows, &mut leaves, &mut reached);
                        } else {
                            reached.resize(rows.len(), 0);
                            let row = |r: usize| TrainingRow(x, lo + rows[r] as usize);
                            packed[t].leaves_by(row, &mut reached);
                            for (&i, &leaf) in rows.iter().zip(&reached) {
                                leaves[i as usize] = leaf;
                            }
                        }
                    }
                    // (a classifier's few outputs as a constant: the sums unrolled)
                    match k {
                        1 => add_rows::<1>(tree, &rows, &leaves, sums, counts),
                        2 => add_rows::<2>(tree, &rows, &leaves, sums, counts),
                        3 => add_rows::<3>(tree, &rows, &leaves, sums, counts),
                        4 => add_rows::<4>(tree, &rows, &leaves, sums, counts),
                        _ => {
                            for &i in &rows {
                                let i = i as usize;
                                let value = tree.leaf_value(leaves[i] as usize);
                                add_row(&mut sums[i * k..], &mut counts[i], value);
                            }
                        }
                    }
                }
            });
    }
}

/// The most features for which [`OobPrediction::add_trees`] copies a block of rows by row
/// (2,048 rows of 128 features: 1 MiB a task).
const BY_ROW_FEATURES: usize = 128;

impl Forest {
    /// Computes the out-of-bag predictions of every tree from scratch on the training rows
    /// `x` (dense or sparse, as at fit), from the in-bag rows each tree's seed draws
    /// ([`Forest::in_bag_counts`]), and keeps them as if the forest had been grown with
    /// `oob = true` (later warm starts add to them): what a warm start that switches OOB on
    /// needs. Each row's sum adds its out-of-bag trees in index order, so it equals a fit
    /// with `oob = true`.
    ///
    /// # Errors
    /// A forest grown without bootstrap (no row is out of bag), a feature-count mismatch,
    /// infinity in `x`, `x`'s row count rejected by `max_samples`, or cancellation.
    pub fn compute_oob<'x>(&mut self, x: impl Into<Features<'x>>, n_jobs: i64) -> Result<()> {
        if !self.params.bootstrap {
            return Err(Error::InvalidParameter {
                name: "oob_score",
                reason: "Out of bag estimation only available if bootstrap=True".into(),
            });
        }
        let x = x.into();
        let (n, k) = (x.nrows(), self.n_outputs());
        let out_of_bag = self.out_of_bag_bits(n, n_jobs)?;
        // per row: k sums, then the count of trees
        let sums = self.per_block(x, k + 1, n_jobs, |start, rows, out| {
            self.leaves_of_block(rows, |t, r, leaf| {
                let i = start + r;
                if is_out_of_bag(&out_of_bag, t, i) {
                    let out = &mut out[r * (k + 1)..(r + 1) * (k + 1)];
                    for (s, v) in out.iter_mut().zip(self.trees[t].leaf_value(leaf)) {
                        *s += v;
                    }
                    out[k] += 1.0;
                }
            });
        })?;
        let mut oob = OobPrediction {
            sums: Vec::with_capacity(n * k),
            counts: Vec::with_capacity(n),
        };
        for row in sums.chunks_exact(k + 1) {
            oob.sums.extend_from_slice(&row[..k]);
            oob.counts.push(row[k] as u32);
        }
        self.oob = Some(oob);
        self.params.oob = true;
        Ok(())
    }

    /// Per tree, a bitset over the `n` training rows: bit i is set when row i is out of the
    /// tree's bootstrap sample ([`Forest::in_bag_counts`], recomputed from its seed).
    ///
    /// # Errors
    /// As [`Forest::in_bag_counts`]; `n_jobs == 0`; cancellation.
    pub(crate) fn out_of_bag_bits(&self, n: usize, n_jobs: i64) -> Result<Vec<Vec<u64>>> {
        let out_of_bag_of = |t: usize| -> Result<Vec<u64>> {
            cancel::check()?;
            Ok(zero_bits(&self.in_bag_counts(t, n)?))
        };
        let n_trees = self.trees.len();
        let threads = n_threads(Some(n_jobs))?;
        if threads == 1 {
            (0..n_trees).map(out_of_bag_of).collect()
        } else {
            let carried = cancel::carry();
            cancel::install(&*thread_pool(threads)?, || {
                (0..n_trees)
                    .into_par_iter()
                    .map(|t| carried.run(|| out_of_bag_of(t)))
                    .collect()
            })
        }
    }
}

/// Adds one tree's `value` to a row's sums (the first `value.len()` of `sums`) and counts
/// the tree: every out-of-bag sum of a fit grows by this step.
#[inline]
fn add_row(sums: &mut [f64], count: &mut u32, value: &[f64]) {
    for (s, v) in sums.iter_mut().zip(value) {
        *s += v;
    }
    *count += 1;
}

/// [`add_row`] of each row `i` of `rows` (indices into a block), of its leaf
/// `leaves[i]`'s values in `tree`, for trees of `K` outputs.
#[inline]
fn add_rows<const K: usize>(
    tree: &crate::tree::Tree,
    rows: &[u32],
    leaves: &[u32],
    sums: &mut [f64],
    counts: &mut [u32],
) {
    for &i in rows {
        let i = i as usize;
        let value: &[f64; K] = (tree.leaf_value(leaves[i] as usize))
            .try_into()
            .expect("a leaf's K values");
        let row: &mut [f64; K] = (&mut sums[i * K..(i + 1) * K])
            .try_into()
            .expect("a row's K sums");
        for (s, v) in row.iter_mut().zip(value) {
            *s += v;
        }
        counts[i] += 1;
    }
}

/// The rows drawn 0 times as a bitset (bit i of word i / 64): a tree's out-of-bag rows in
/// 1/32 of the memory of their numbers.
pub(crate) fn zero_bits(counts: &[u32]) -> Vec<u64> {
    // a word from its 64 counts at a time (a loop the compiler vectorises, without the
    // bounds check and read-modify-write of a word per row)
    counts
        .chunks(64)
        .map(|chunk| {
            chunk
                .iter()
                .enumerate()
                .fold(0u64, |word, (b, &c)| word | u64::from(c == 0) << b)
        })
        .collect()
}

/// The positions of the set bits of `words` (bit i of word i / 64), ascending.
pub(crate) fn ones(words: &[u64]) -> impl Iterator<Item = usize> + '_ {
    words.iter().enumerate().flat_map(|(w, &word)| {
        let mut rest = word;
        std::iter::from_fn(move || {
            (rest != 0).then(|| {
                let bit = rest.trailing_zeros() as usize;
                rest &= rest - 1;
                w * 64 + bit
            })
        })
    })
}

/// Whether row `i` is out of tree `t`'s bootstrap sample in [`Forest::out_of_bag_bits`].
#[inline]
pub(crate) fn is_out_of_bag(bits: &[Vec<u64>], t: usize, i: usize) -> bool {
    bits[t][i / 64] >> (i % 64) & 1 == 1
}

/// Row `.1` of a fit's matrix, read where it lies, as the prediction walks read rows.
#[derive(Clone, Copy)]
pub(crate) struct TrainingRow<'a, 'x>(pub(crate) &'a FeatureMatrix<'x>, pub(crate) usize);

impl Row for TrainingRow<'_, '_> {
    #[inline(always)]
    fn at(self, j: usize) -> f32 {
        self.0.get(self.1, j)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::{ForestParams, MaxFeatures};
    use crate::projection::{Density, Projection, SparseSigned, WeightScale};
    use crate::rng::Rng;
    use ndarray::Array2;

    /// The out-of-bag record of a fit of `params` with `oob` on `x`, after checking that it
    /// equals the record `compute_oob` recomputes for the same trees, bit for bit.
    fn fit_record_is_recomputed(
        params: &ForestParams,
        x: ndarray::ArrayView2<'_, f32>,
        y: &[f64],
        case: &str,
    ) -> OobPrediction {
        let mut params = params.clone();
        params.oob = true;
        let grown = Forest::fit(&params, x, y, None).unwrap();
        params.oob = false;
        let mut later = Forest::fit(&params, x, y, None).unwrap();
        later.compute_oob(x, 2).unwrap();
        let (a, b) = (grown.oob().unwrap(), later.oob().unwrap());
        assert_eq!(a.counts, b.counts, "{case}");
        assert_eq!(a.sums, b.sums, "{case}");
        a.clone()
    }

    /// The out-of-bag record a fit sums (on blocks of rows copied by row, or on X itself
    /// beyond `BY_ROW_FEATURES` features) equals the one recomputed from the trees' seeds
    /// (`compute_oob`, which walks X through the prediction path), bit for bit: several
    /// blocks of rows, a two-valued column (stored as bits), missing values, X by row and
    /// by column, axis and oblique trees, deep and shallow.
    #[test]
    fn oob_records_of_rows_copied_by_row_are_the_recomputed_ones() {
        for (n, p) in [(4500, 6), (2200, BY_ROW_FEATURES + 2)] {
            let mut rng = Rng::from_seed(4);
            let mut x = Array2::from_shape_fn((n, p), |_| rng.below(1000) as f32 / 100.0);
            for i in 0..n {
                x[[i, 1]] = (i % 3 == 0) as u8 as f32;
                if i % 13 == 0 {
                    x[[i, 2]] = f32::NAN;
                }
            }
            let y: Vec<f64> = (0..n)
                .map(|i| f64::from(u8::from(x[[i, 0]] + 3.0 * x[[i, 1]] > 6.0)))
                .collect();
            let by_column = x.t().to_owned().reversed_axes();
            // (shallow trees have fewer nodes than a block's out-of-bag rows: those rows go
            // down them node by node, the others' row by row)
            for (oblique, max_depth) in [(false, None), (true, None), (false, Some(4))] {
                let mut params = ForestParams::classification(2);
                params.max_depth = max_depth;
                if oblique {
                    params.projection = Projection::new(SparseSigned {
                        density: Density::FeatureCombinations(2.0),
                        scaling: WeightScale::None,
                    });
                    params.max_features = MaxFeatures::Fraction(0.5);
                }
                params.n_estimators = 5;
                params.growth.n_jobs = 2;
                params.seed = 3;
                for view in [x.view(), by_column.view()] {
                    let case = format!("n={n} p={p} oblique={oblique} max_depth={max_depth:?}");
                    let record = fit_record_is_recomputed(&params, view, &y, &case);
                    assert!(record.counts.iter().filter(|&&c| c > 0).count() > n / 2);
                }
            }
        }
    }

    /// The sums of a fit's out-of-bag record for one output (a regression), three and six
    /// classes (unrolled for up to four outputs, else the general loop) equal the
    /// recomputed ones, on X by row and by column.
    #[test]
    fn oob_records_of_any_number_of_outputs_are_the_recomputed_ones() {
        let (n, p) = (1500, 5);
        let mut rng = Rng::from_seed(11);
        let x = Array2::from_shape_fn((n, p), |_| rng.below(1000) as f32 / 100.0);
        let by_column = x.t().to_owned().reversed_axes();
        for (mut params, n_classes) in [
            (ForestParams::regression(), 0u32),
            (ForestParams::classification(3), 3),
            (ForestParams::classification(6), 6),
        ] {
            let y: Vec<f64> = (0..n)
                .map(|i| {
                    let v = x[[i, 0]] + x[[i, 1]];
                    if n_classes == 0 {
                        f64::from(v)
                    } else {
                        f64::from((v as u32) % n_classes)
                    }
                })
                .collect();
            params.n_estimators = 6;
            params.growth.n_jobs = 2;
            params.seed = 5;
            for max_depth in [None, Some(4)] {
                params.max_depth = max_depth;
                for view in [x.view(), by_column.view()] {
                    let case = format!("classes={n_classes} max_depth={max_depth:?}");
                    let record = fit_record_is_recomputed(&params, view, &y, &case);
                    let k = if n_classes == 0 {
                        1
                    } else {
                        n_classes as usize
                    };
                    assert_eq!(record.sums.len(), n * k, "{case}");
                }
            }
        }
    }

    /// `zero_bits` sets bit i of word i / 64 exactly for the rows drawn 0 times, and
    /// `ones` reads them back, at lengths around whole words.
    #[test]
    fn zero_bits_are_the_rows_drawn_zero_times() {
        let mut rng = Rng::from_seed(9);
        for n in [0usize, 1, 63, 64, 65, 127, 128, 200] {
            let counts: Vec<u32> = (0..n).map(|_| rng.below(3) as u32).collect();
            let bits = zero_bits(&counts);
            assert_eq!(bits.len(), n.div_ceil(64), "n={n}");
            for (i, &c) in counts.iter().enumerate() {
                assert_eq!(bits[i / 64] >> (i % 64) & 1 == 1, c == 0, "n={n} row {i}");
            }
            let zeros: Vec<usize> = (0..n).filter(|&i| counts[i] == 0).collect();
            assert_eq!(ones(&bits).collect::<Vec<_>>(), zeros, "n={n}");
        }
    }
}
