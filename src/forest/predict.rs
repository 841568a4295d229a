//! Walking rows through the trees: predictions (the mean of the leaves' values), each
//! tree's values, and the leaves rows reach. Rows are split into blocks over the threads;
//! within a block each tree walks every row while its nodes are in cache, and every row adds
//! its trees in index order, so results do not depend on the blocking.

use super::Forest;
use crate::alloc;
use crate::cancel;
use crate::error::{Error, Result};
use crate::params::Task;
use crate::sparse::{Features, Layout, RowBlock, SparseMatrix};
use crate::threads::{n_threads, thread_pool};
use ndarray::{Array2, Array3, ArrayView2};
use rayon::prelude::*;

impl Forest {
    /// Calls `f(tree index, row index in block, leaf)` for every tree (in index order) and
    /// every row of a block.
    #[inline]
    pub(super) fn leaves_of_block(
        &self,
        rows: RowBlock<'_>,
        mut f: impl FnMut(usize, usize, usize),
    ) {
        let mut leaves = vec![0u32; rows.len()];
        for (t, tree) in self.packed().iter().enumerate() {
            match rows {
                RowBlock::Dense { rows, p } => tree.leaves(rows, p, &mut leaves),
                RowBlock::Csr { x, start, .. } => {
                    tree.leaves_by(|k| RowBlock::sparse_row(&x, start + k), &mut leaves)
                }
            }
            for (r, &leaf) in leaves.iter().enumerate() {
                f(t, r, leaf as usize);
            }
        }
    }

    /// Checks dense rows to predict: the model's features, no infinity.
    fn check_rows(&self, x: &ArrayView2<'_, f32>) -> Result<()> {
        if x.ncols() != self.n_features {
            return Err(Error::FeatureMismatch {
                expected: self.n_features,
                got: x.ncols(),
            });
        }
        // NaN is a missing value (it follows each node's missing-value side); infinity is
        // refused
        let no_inf = |ok: bool, v: &f32| ok & (v.abs() != f32::INFINITY);
        let finite = match x.as_slice_memory_order() {
            // chunks without an early exit vectorise; the exit comes per chunk
            Some(s) => s.chunks(4096).all(|c| c.iter().fold(true, no_inf)),
            None => x.iter().fold(true, no_inf),
        };
        if !finite {
            return Err(Error::InvalidInput(
                "X contains infinity; infinite values are not supported (a missing value is NaN)"
                    .into(),
            ));
        }
        Ok(())
    }

    /// Runs `f(start, rows, out)` over blocks of rows in parallel; `start` is the block's
    /// first row, `rows` holds whole rows
    /// (row-major and n_features wide, or CSR rows of sparse X, converted once from CSC)
    /// and `out` their `width`-wide output rows. Blocks let a caller walk one tree over
    /// many rows while its nodes are in cache. Dense X in another memory order (Fortran
    /// order, a strided view) is copied to row-major one block at a time, so the memory a
    /// call takes beyond its output is a block per thread, whatever the number of rows.
    pub(super) fn per_block<'x, T: Send + Clone + Default>(
        &self,
        x: impl Into<Features<'x>>,
        width: usize,
        n_jobs: i64,
        f: impl Fn(usize, RowBlock<'_>, &mut [T]) + Sync,
    ) -> Result<Vec<T>> {
        let p = self.n_features;
        let csr;
        let (dense, csr) = match x.into() {
            Features::Dense(x) => {
                self.check_rows(&x)?;
                (Some(x), None)
            }
            Features::Sparse(x) => {
                if x.dim().1 != p {
                    return Err(Error::FeatureMismatch {
                        expected: p,
                        got: x.dim().1,
                    });
                }
                csr = SparseMatrix::in_layout(x, Layout::Csr)?;
                (None, Some(&csr))
            }
        };
        let n_rows = match (&dense, csr) {
            (Some(rows), _) => rows.nrows(),
            (None, Some(x)) => x.view().dim().0,
            (None, None) => 0,
        };
        // row-major X is read where it is; other layouts block by block
        let flat = dense.as_ref().and_then(|x| x.as_slice());
        let mut out = alloc::table(n_rows, width, "the prediction output")?;
        if width == 0 || out.is_empty() {
            return Ok(out);
        }
        // Each tree's nodes are streamed once per block, so blocks should be large (a forest
        // rarely fits in cache): one block per thread ...
        let threads = n_threads(Some(n_jobs))?;
        // ... as long as its rows sit in half of a 1 MiB L2 while the trees walk it
        let fits_cache = (1usize << 19) / (4 * p.max(1));
        let block = n_rows.div_ceil(threads).min(fits_cache).clamp(64, 16384);
        // a cancelled call skips its remaining blocks (and returns an error, not `out`)
        let run = |(b, chunk): (usize, &mut [T])| {
            if cancel::requested() {
                return;
            }
            let (start, end) = (b * block, b * block + chunk.len() / width);
            let copy: Vec<f32>;
            let rows = match (csr, flat, &dense) {
                (Some(x), _, _) => RowBlock::Csr {
                    x: x.view(),
                    start,
                    end,
                },
                (None, Some(flat), _) => RowBlock::Dense {
                    rows: &flat[start * p..end * p],
                    p,
                },
                (None, None, Some(x)) => {
                    copy = x
                        .slice(ndarray::s![start..end, ..])
                        .iter()
                        .copied()
                        .collect();
                    RowBlock::Dense { rows: &copy, p }
                }
                (None, None, None) => return,
            };
            f(start, rows, chunk);
        };
        if threads == 1 || n_rows <= block {
            // no pool for small or single-threaded calls: latency matters there
            out.chunks_mut(block * width).enumerate().for_each(run);
        } else {
            let carried = cancel::carry();
            cancel::install(&*thread_pool(threads)?, || {
                out.par_chunks_mut(block * width)
                    .enumerate()
                    .for_each(|item| carried.run(|| run(item)))
            });
        }
        cancel::check()?;
        Ok(out)
    }

    /// Mean over trees of the leaf values: class probabilities or the regression estimate,
    /// shape (n_samples, n_outputs).
    ///
    /// Rows are split into blocks over `n_jobs` threads (the package's rule,
    /// [`crate::threads::n_threads`]); a cancelled [`crate::Cancel`] token stops it between
    /// blocks.
    ///
    /// # Errors
    /// Wrong number of features, infinity in `x` (NaN is a missing value), `n_jobs == 0`,
    /// or [`Error::Cancelled`].
    pub fn predict<'x>(&self, x: impl Into<Features<'x>>, n_jobs: i64) -> Result<Array2<f64>> {
        let x = x.into();
        let (k, n) = (self.n_outputs(), x.nrows());
        let out = self.per_block(x, k, n_jobs, |_, rows, out| self.mean_leaves(rows, out))?;
        Array2::from_shape_vec((n, k), out).map_err(|e| Error::Internal(e.to_string()))
    }

    /// [`Forest::predict`] of a block of rows into `out` (n_outputs wide rows, zeros).
    fn mean_leaves(&self, rows: RowBlock<'_>, out: &mut [f64]) {
        let k = self.n_outputs();
        let n_trees = self.trees.len() as f64;
        // trees in index order for every row: the sum does not depend on blocking
        let packed = self.packed();
        self.leaves_of_block(rows, |t, r, leaf| {
            let out = &mut out[r * k..(r + 1) * k];
            match packed[t].pure_class(leaf) {
                // a one-hot leaf (most leaves of a fully grown classifier): adding its
                // zeros changes nothing, so add its one only
                Some(c) => out[c] += 1.0,
                None => {
                    let values = self.trees[t].leaf_row(packed[t].leaf_row(leaf));
                    for (s, v) in out.iter_mut().zip(values) {
                        *s += v;
                    }
                }
            }
        });
        out.iter_mut().for_each(|s| *s /= n_trees);
    }

    /// scikit-learn's `IsolationForest.score_samples` for a forest without targets: the
    /// opposite of Liu et al.'s (2008) anomaly score, `-2^(-E[h(x)] / c(ψ))`, where the
    /// mean normalised path length `E[h(x)] / c(ψ)` is the forest's prediction (its leaves
    /// keep their normalised path lengths, [`crate::params::Task::Unsupervised`]). In
    /// `[-1, 0)`; the lower, the more anomalous a row (about -0.5 for none).
    ///
    /// # Errors
    /// As [`Forest::predict`]; [`Error::InvalidInput`] for a forest grown with targets.
    pub fn score_samples<'x>(&self, x: impl Into<Features<'x>>, n_jobs: i64) -> Result<Vec<f64>> {
        if !matches!(self.params.task, Task::Unsupervised { .. }) {
            return Err(Error::InvalidInput(
                "anomaly scores are the path lengths of a forest without targets (an \
                 isolation forest); this forest was grown on targets"
                    .into(),
            ));
        }
        // one pass: each block's mean path lengths become its scores while in cache
        self.per_block(x, self.n_outputs(), n_jobs, |_, rows, out| {
            self.mean_leaves(rows, out);
            out.iter_mut().for_each(|h| *h = -(-*h).exp2());
        })
    }

    /// Each tree's leaf values, shape (n_trees, n_samples, n_outputs).
    ///
    /// # Errors
    /// As [`Forest::predict`].
    pub fn predict_trees<'x>(
        &self,
        x: impl Into<Features<'x>>,
        n_jobs: i64,
    ) -> Result<Array3<f64>> {
        let x = x.into();
        let k = self.n_outputs();
        let (t, n) = (self.trees.len(), x.nrows());
        let out = self.per_block(x, k * t, n_jobs, |_, rows, out| {
            self.leaves_of_block(rows, |ti, r, leaf| {
                let at = r * k * t + ti * k;
                out[at..at + k].copy_from_slice(self.trees[ti].leaf_value(leaf));
            });
        })?;
        let a =
            Array3::from_shape_vec((n, t, k), out).map_err(|e| Error::Internal(e.to_string()))?;
        Ok(a.permuted_axes([1, 0, 2]).as_standard_layout().into_owned())
    }

    /// The leaf (node index within its tree) each row reaches in each tree, shape (n_samples, n_trees).
    ///
    /// # Errors
    /// As [`Forest::predict`].
    pub fn apply<'x>(&self, x: impl Into<Features<'x>>, n_jobs: i64) -> Result<Array2<i64>> {
        let x = x.into();
        let (t, n) = (self.trees.len(), x.nrows());
        let out = self.per_block(x, t, n_jobs, |_, rows, out| {
            self.leaves_of_block(rows, |ti, r, leaf| out[r * t + ti] = leaf as i64);
        })?;
        Array2::from_shape_vec((n, t), out).map_err(|e| Error::Internal(e.to_string()))
    }

    /// Offsets of each tree's leaves in the forest-wide leaf numbering, length n_trees + 1.
    pub fn leaf_offsets(&self) -> Vec<usize> {
        let mut off = vec![0usize];
        for t in &self.trees {
            off.push(off.last().copied().unwrap_or(0) + t.n_leaves());
        }
        off
    }

    /// Forest-wide leaf ids (0..total leaves), shape (n_samples, n_trees); tree t's leaves are
    /// numbered in node order starting at `leaf_offsets()[t]`.
    ///
    /// # Errors
    /// As [`Forest::predict`].
    pub fn apply_leaves<'x>(&self, x: impl Into<Features<'x>>, n_jobs: i64) -> Result<Array2<i64>> {
        let x = x.into();
        let off = self.leaf_offsets();
        let ranks: Vec<Vec<u32>> = self
            .trees
            .iter()
            .map(|t| {
                let mut r = 0u32;
                (0..t.n_nodes())
                    .map(|i| {
                        let v = r;
                        if t.is_leaf(i) {
                            r += 1;
                        }
                        v
                    })
                    .collect()
            })
            .collect();
        let mut a = self.apply(x, n_jobs)?;
        for mut row in a.rows_mut() {
            for (t, v) in row.iter_mut().enumerate() {
                *v = (off[t] + ranks[t][*v as usize] as usize) as i64;
            }
        }
        Ok(a)
    }
}
