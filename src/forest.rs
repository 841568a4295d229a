//! A forest: trees grown in parallel, each from its own random streams keyed by
//! (seed, tree index), so the fitted forest is the same for every thread count.
//! Predictions add trees in index order for the same reason.

use crate::cancel;
use crate::data::{check_target_scale, check_weights, FeatureMatrix, Targets};
use crate::error::{Error, Result};
use crate::limits;
use crate::params::{Criterion, ForestParams, Task, TreeConfig};
use crate::projection::{AnySampler, CompactDescriptors};
use crate::prune::prune_cost_complexity;
use crate::rng::{Purpose, Rng};
use crate::sparse::{Features, Layout, RowBlock, SparseMatrix};
use crate::threads::{n_threads, thread_pool};
use crate::tree::{normalise, Grower, PackedTree, Tree, Workspace};
use ndarray::{Array2, Array3, ArrayView2};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

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
        for (s, v) in self.sums[row * k..(row + 1) * k].iter_mut().zip(value) {
            *s += v;
        }
        self.counts[row] += 1;
    }
}

/// A fitted projection forest.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Forest {
    pub(crate) params: ForestParams,
    pub(crate) n_features: usize,
    pub(crate) trees: Vec<Tree>,
    #[serde(skip)]
    pub(crate) oob: Option<OobPrediction>,
    /// The prediction layout, built on first use (not serialized: derived from `trees`).
    #[serde(skip)]
    pub(crate) packed: OnceLock<Vec<PackedTree>>,
}

/// Two forests are equal when they hold the same trees grown with the same parameters
/// (caches and out-of-bag bookkeeping aside).
impl PartialEq for Forest {
    fn eq(&self, other: &Self) -> bool {
        // n_jobs is how a forest was grown, not what it is
        let (a, b) = (&self.params, &other.params);
        ForestParams {
            n_jobs: 1,
            ..a.clone()
        } == ForestParams {
            n_jobs: 1,
            ..b.clone()
        } && self.n_features == other.n_features
            && self.trees == other.trees
    }
}

/// Shared, read-only inputs of a fit.
pub(crate) struct FitData<'a> {
    pub(crate) params: &'a ForestParams,
    pub(crate) cfg: TreeConfig,
    pub(crate) x: FeatureMatrix<'a>,
    y: Targets,
    sample_weight: Vec<f64>,
}

impl Forest {
    /// Grows a forest on `x` (n_samples × n_features: a dense array in any memory order,
    /// or a [`crate::sparse::SparseView`], CSR or CSC, never densified) and `y` (class codes
    /// `0..n_classes` as floats, or real targets; for the multi-output tasks
    /// n_samples × n_outputs values, row-major, each output's codes in `0..n_classes[o]`).
    /// Sparse X grows the forest its dense array grows, bit for bit ([`crate::sparse`]).
    ///
    /// Runs in a pool of `params.n_jobs` threads (see [`crate::threads`]); stops early
    /// under a cancelled [`crate::Cancel`] token or over the memory limit
    /// ([`crate::limits`]).
    ///
    /// # Errors
    /// Invalid parameters, infinity in the data (NaN is a missing value), mismatched
    /// lengths, bad weights, regression targets too large for the criterion's sums, Poisson
    /// targets that are negative or sum to zero; [`Error::Cancelled`];
    /// [`Error::ResourceLimit`] when the model would outgrow the memory limit.
    pub fn fit<'x>(
        params: &ForestParams,
        x: impl Into<Features<'x>>,
        y: &[f64],
        sample_weight: Option<&[f64]>,
    ) -> Result<Forest> {
        Self::fit_with_progress(params, x, y, sample_weight, None)
    }

    /// [`Forest::fit`], counting finished trees in `progress` (read it from another thread).
    ///
    /// # Errors
    /// As [`Forest::fit`].
    pub fn fit_with_progress<'x>(
        params: &ForestParams,
        x: impl Into<Features<'x>>,
        y: &[f64],
        sample_weight: Option<&[f64]>,
        progress: Option<&AtomicUsize>,
    ) -> Result<Forest> {
        Self::grown(&prepare(params, x, y, sample_weight)?, progress)
    }

    /// A new forest of `n_estimators` trees grown on prepared data, laid out for prediction.
    fn grown(data: &FitData<'_>, progress: Option<&AtomicUsize>) -> Result<Forest> {
        let mut forest = Forest {
            params: data.params.clone(),
            n_features: data.x.n_features,
            trees: Vec::new(),
            oob: None,
            packed: OnceLock::new(),
        };
        forest.grow(data, data.params.n_estimators, progress)?;
        forest.packed(); // lay out for prediction now, not inside the first predict call
        Ok(forest)
    }

    /// Grows `n_more` further trees with the same parameters and seed (warm start), on
    /// `n_jobs` threads when given (the trees do not depend on it), else on the first fit's,
    /// pruned with `ccp_alpha` when given, else the first fit's (0 for a loaded model), and
    /// under `monotonic_cst` when given, else the first fit's (none for a loaded model).
    /// `x`, `y` and the weights must be the training data of the first fit for OOB estimates
    /// to mean anything. The new trees add to the out-of-bag record when the forest has
    /// one; a forest without (truncated, read from bytes) stays without.
    ///
    /// # Errors
    /// As [`Forest::fit`], plus a feature-count mismatch.
    #[allow(clippy::too_many_arguments)] // the fit's inputs plus the three per-call overrides
    pub fn grow_more<'x>(
        &mut self,
        x: impl Into<Features<'x>>,
        y: &[f64],
        sample_weight: Option<&[f64]>,
        n_more: usize,
        n_jobs: Option<i64>,
        ccp_alpha: Option<f64>,
        monotonic_cst: Option<&[i8]>,
        progress: Option<&AtomicUsize>,
    ) -> Result<()> {
        let x = x.into();
        if x.ncols() != self.n_features {
            return Err(Error::FeatureMismatch {
                expected: self.n_features,
                got: x.ncols(),
            });
        }
        let mut params = self.params.clone();
        params.n_jobs = n_jobs.unwrap_or(params.n_jobs);
        params.ccp_alpha = ccp_alpha.unwrap_or(params.ccp_alpha);
        if let Some(cst) = monotonic_cst {
            params.monotonic_cst = cst.to_vec();
        }
        // the grown forest's size is checked like a first fit's (bounded before growing)
        params.n_estimators = self.trees.len().saturating_add(n_more);
        // a forest without an out-of-bag record (truncated, or read from bytes) starts none:
        // sums over the new trees alone would pass for the whole forest's (compute_oob
        // rebuilds a record first when one is wanted)
        params.oob &= self.oob.is_some();
        let data = prepare(&params, x, y, sample_weight)?;
        self.params.n_jobs = params.n_jobs;
        self.params.ccp_alpha = params.ccp_alpha;
        self.params.monotonic_cst.clone_from(&params.monotonic_cst);
        self.grow(&data, n_more, progress)?;
        self.params.n_estimators = self.trees.len();
        Ok(())
    }

    fn grow(
        &mut self,
        data: &FitData<'_>,
        n_more: usize,
        progress: Option<&AtomicUsize>,
    ) -> Result<()> {
        let first = self.trees.len();
        let descriptors = data.params.projection.descriptors();
        let held = self.trees.iter().map(limits::tree_bytes).sum();
        let grown = grow_trees(data, first..first + n_more, held, progress)?;
        let n = data.x.n_samples;
        let k = data.cfg.n_outputs;
        if data.params.oob {
            let oob = self.oob.get_or_insert_with(|| OobPrediction {
                sums: vec![0.0; n * k],
                counts: vec![0; n],
            });
            if oob.counts.len() != n {
                return Err(Error::InvalidInput(
                    "warm start with a different number of rows".into(),
                ));
            }
            for (tree, rows) in &grown {
                for &row in rows.iter().flatten() {
                    let leaf = tree.leaf_by(descriptors, |j| data.x.get(row as usize, j));
                    oob.add(row as usize, tree.leaf_value(leaf));
                }
            }
        }
        self.trees.extend(grown.into_iter().map(|(t, _)| t));
        self.packed = OnceLock::new();
        Ok(())
    }

    /// The parameters the forest was grown with.
    pub fn params(&self) -> &ForestParams {
        &self.params
    }
    /// Columns of the training data.
    pub fn n_features(&self) -> usize {
        self.n_features
    }
    /// Values per prediction (classes, or 1).
    pub fn n_outputs(&self) -> usize {
        self.params.task.n_outputs()
    }
    /// The trees, in index order.
    pub fn trees(&self) -> &[Tree] {
        &self.trees
    }
    /// How the stored projections' compact descriptors read as terms (patch and
    /// dictionary forests), `None` when they are explicit.
    pub fn descriptors(&self) -> Option<&dyn CompactDescriptors> {
        self.params.projection.descriptors()
    }
    /// Out-of-bag predictions, when fitted with `oob = true`.
    pub fn oob(&self) -> Option<&OobPrediction> {
        self.oob.as_ref()
    }

    /// Computes the out-of-bag predictions of every tree from scratch on the training rows
    /// `x`, from the in-bag rows each tree's seed draws ([`Forest::in_bag_counts`]), and
    /// keeps them as if the forest had been grown with `oob = true` (later warm starts add
    /// to them): what a warm start that switches OOB on needs. The sums are added tree by
    /// tree in index order, rows ascending, so they equal a fit with `oob = true`.
    ///
    /// # Errors
    /// A forest grown without bootstrap (no row is out of bag), a feature-count mismatch,
    /// `x`'s row count rejected by `max_samples`, or cancellation.
    pub fn compute_oob(&mut self, x: ArrayView2<'_, f32>, n_jobs: i64) -> Result<()> {
        if !self.params.bootstrap {
            return Err(Error::InvalidParameter {
                name: "oob_score",
                reason: "Out of bag estimation only available if bootstrap=True".into(),
            });
        }
        let rows = self.rows(&x)?;
        let (n, k) = (rows.nrows(), self.n_outputs());
        let descriptors = self.descriptors();
        let mut oob = OobPrediction {
            sums: vec![0.0; n * k],
            counts: vec![0; n],
        };
        // (row, leaf) of one tree's out-of-bag rows
        let walk = |t: usize| -> Result<Vec<(u32, u32)>> {
            cancel::check()?;
            let tree = &self.trees[t];
            let counts = self.in_bag_counts(t, n)?;
            Ok((0..n)
                .filter(|&i| counts[i] == 0)
                .map(|i| {
                    let row = rows.row(i);
                    (i as u32, tree.leaf_by(descriptors, |j| row[j]) as u32)
                })
                .collect())
        };
        let threads = n_threads(Some(n_jobs))?;
        // trees in chunks, so that memory stays a few trees' out-of-bag rows per thread
        let ids: Vec<usize> = (0..self.trees.len()).collect();
        for chunk in ids.chunks(4 * threads) {
            let walked: Vec<Result<Vec<(u32, u32)>>> = if threads == 1 {
                chunk.iter().map(|&t| walk(t)).collect()
            } else {
                let carried = cancel::carry();
                cancel::install(&*thread_pool(threads)?, || {
                    chunk.par_iter().map(|&t| carried.run(|| walk(t))).collect()
                })
            };
            for (&t, leaves) in chunk.iter().zip(walked) {
                for (row, leaf) in leaves? {
                    oob.add(row as usize, self.trees[t].leaf_value(leaf as usize));
                }
            }
        }
        self.oob = Some(oob);
        self.params.oob = true;
        Ok(())
    }

    /// The packed prediction layout, built on first use.
    pub fn packed(&self) -> &[PackedTree] {
        self.packed.get_or_init(|| {
            self.trees
                .iter()
                .map(|t| PackedTree::new(t, self.descriptors()))
                .collect()
        })
    }

    /// Calls `f(tree index, row index in block, leaf)` for every tree (in index order) and
    /// every row of a block.
    #[inline]
    fn leaves_of_block(&self, rows: RowBlock<'_>, mut f: impl FnMut(usize, usize, usize)) {
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

    /// Keeps the first `n` trees.
    pub fn truncate(&mut self, n: usize) {
        self.trees.truncate(n);
        self.packed = OnceLock::new();
        self.params.n_estimators = self.trees.len();
        self.oob = None;
    }

    /// A forest made of the trees at `indices` (repeats allowed).
    ///
    /// # Errors
    /// An index out of range or an empty selection.
    pub fn select(&self, indices: &[usize]) -> Result<Forest> {
        if indices.is_empty() {
            return Err(Error::InvalidInput("select at least one tree".into()));
        }
        let trees = indices
            .iter()
            .map(|&i| {
                self.trees
                    .get(i)
                    .cloned()
                    .ok_or_else(|| Error::InvalidInput(format!("tree {i} does not exist")))
            })
            .collect::<Result<Vec<_>>>()?;
        let mut params = self.params.clone();
        params.n_estimators = trees.len();
        Ok(Forest {
            params,
            n_features: self.n_features,
            trees,
            oob: None,
            packed: OnceLock::new(),
        })
    }

    fn rows<'a>(
        &self,
        x: &'a ArrayView2<'a, f32>,
    ) -> Result<ndarray::CowArray<'a, f32, ndarray::Ix2>> {
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
        Ok(x.as_standard_layout())
    }

    /// Runs `f(rows, out)` over blocks of rows in parallel; `rows` holds whole rows
    /// (row-major and n_features wide, or CSR rows of sparse X, converted once from CSC)
    /// and `out` their `width`-wide output rows. Blocks let a caller walk one tree over
    /// many rows while its nodes are in cache.
    fn per_block<'x, T: Send + Clone + Default>(
        &self,
        x: impl Into<Features<'x>>,
        width: usize,
        n_jobs: i64,
        f: impl Fn(RowBlock<'_>, &mut [T]) + Sync,
    ) -> Result<Vec<T>> {
        let p = self.n_features;
        let (dense, csr);
        let (flat, csr) = match x.into() {
            Features::Dense(x) => {
                dense = x;
                (Some(self.rows(&dense)?), None)
            }
            Features::Sparse(x) => {
                if x.dim().1 != p {
                    return Err(Error::FeatureMismatch {
                        expected: p,
                        got: x.dim().1,
                    });
                }
                csr = SparseMatrix::in_layout(x, Layout::Csr);
                (None, Some(&csr))
            }
        };
        let n_rows = match (&flat, csr) {
            (Some(rows), _) => rows.nrows(),
            (None, Some(x)) => x.view().dim().0,
            (None, None) => 0,
        };
        let flat = match &flat {
            Some(rows) => rows
                .as_slice()
                .ok_or_else(|| Error::Internal("rows not contiguous".into()))?,
            None => &[],
        };
        let mut out = vec![T::default(); n_rows * width];
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
            let rows = match csr {
                Some(x) => RowBlock::Csr {
                    x: x.view(),
                    start,
                    end,
                },
                None => RowBlock::Dense {
                    rows: &flat[start * p..end * p],
                    p,
                },
            };
            f(rows, chunk);
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
        let n_trees = self.trees.len() as f64;
        let out = self.per_block(x, k, n_jobs, |rows, out| {
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
        })?;
        Array2::from_shape_vec((n, k), out).map_err(|e| Error::Internal(e.to_string()))
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
        let out = self.per_block(x, k * t, n_jobs, |rows, out| {
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
        let out = self.per_block(x, t, n_jobs, |rows, out| {
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

    /// Per row, the box given by the axis-aligned splits on its paths through all trees:
    /// (lower, upper), each n_samples × n_features; ±inf where unconstrained. A split the
    /// row passed with its feature missing (NaN, following the node's missing-value side)
    /// does not bound that feature.
    ///
    /// # Errors
    /// As [`Forest::predict`].
    pub fn leaf_bounds<'x>(
        &self,
        x: impl Into<Features<'x>>,
        n_jobs: i64,
    ) -> Result<(Array2<f64>, Array2<f64>)> {
        let x = x.into();
        let (p, n) = (self.n_features, x.nrows());
        let out = self.per_block(x, 2 * p, n_jobs, |rows, out| {
            let out = out.chunks_exact_mut(2 * p);
            match rows {
                RowBlock::Dense { rows, p } => rows
                    .chunks_exact(p)
                    .zip(out)
                    .for_each(|(row, o)| self.row_bounds(row, o)),
                RowBlock::Csr { x, start, .. } => out
                    .enumerate()
                    .for_each(|(k, o)| self.row_bounds(RowBlock::sparse_row(&x, start + k), o)),
            }
        })?;
        let both =
            Array2::from_shape_vec((n, 2 * p), out).map_err(|e| Error::Internal(e.to_string()))?;
        Ok((
            both.slice(ndarray::s![.., ..p]).to_owned(),
            both.slice(ndarray::s![.., p..]).to_owned(),
        ))
    }

    /// [`Forest::leaf_bounds`] of one row into `out` (lower bounds, then upper ones).
    fn row_bounds(&self, row: impl crate::sparse::Row, out: &mut [f64]) {
        let g = self.descriptors();
        let (lo, hi) = out.split_at_mut(self.n_features);
        lo.fill(f64::NEG_INFINITY);
        hi.fill(f64::INFINITY);
        for tree in &self.trees {
            let mut node = 0usize;
            while !tree.is_leaf(node) {
                let proj = tree.proj(node, g);
                // the value `ProjRef::dot` forms (pooled ones included), in the same order
                let v = proj.value_by(|j| row.at(j));
                let next = tree.child(node, v);
                let go_left = next == tree.left[node] as usize;
                // a missing value is not bounded by the split it went through
                if let crate::projection::ProjRef::Sparse { idx: [j], w: [w] } = proj {
                    if *w != 0.0 && !v.is_nan() {
                        let cut = tree.threshold[node] as f64 / *w as f64;
                        let j = *j as usize;
                        // w·x <= t  ⇔  x <= t/w for w > 0, x >= t/w for w < 0
                        if go_left == (*w > 0.0) {
                            hi[j] = hi[j].min(cut);
                        } else {
                            lo[j] = lo[j].max(cut);
                        }
                    }
                }
                node = next;
            }
        }
    }

    /// Per leaf, in the forest-wide numbering of [`Forest::apply_leaves`], the box given by
    /// the axis-aligned splits on its path from the root: (lower, upper), each
    /// total leaves × n_features, ±inf where unconstrained. A leaf holds the points x with
    /// lower < x <= upper along every feature; multi-feature (oblique, patch) splits leave
    /// the box unconstrained, as in [`Forest::leaf_bounds`], which is the intersection of
    /// the boxes of the leaves a row reaches. The box bounds present values only: a row
    /// missing feature j (NaN) may reach a leaf whose box bounds j, through the
    /// missing-value side of a split on j.
    pub fn leaf_boxes(&self) -> (Array2<f64>, Array2<f64>) {
        let (p, g) = (self.n_features, self.descriptors());
        let n_leaves = self.leaf_offsets().last().copied().unwrap_or(0);
        let mut lower = Array2::from_elem((n_leaves, p), f64::NEG_INFINITY);
        let mut upper = Array2::from_elem((n_leaves, p), f64::INFINITY);
        let mut leaf = 0usize;
        for tree in &self.trees {
            // leaves are numbered in node order, so record each leaf's box by node index first
            let mut boxes: Vec<Option<(Vec<f64>, Vec<f64>)>> = vec![None; tree.n_nodes()];
            let mut stack = vec![(0usize, vec![f64::NEG_INFINITY; p], vec![f64::INFINITY; p])];
            while let Some((node, lo, hi)) = stack.pop() {
                if tree.is_leaf(node) {
                    boxes[node] = Some((lo, hi));
                    continue;
                }
                let (mut llo, mut lhi, mut rlo, mut rhi) = (lo.clone(), hi.clone(), lo, hi);
                if let crate::projection::ProjRef::Sparse { idx: [j], w: [w] } = tree.proj(node, g)
                {
                    if *w != 0.0 {
                        let cut = tree.threshold[node] as f64 / *w as f64;
                        let j = *j as usize;
                        // w·x <= t  ⇔  x <= t/w for w > 0, x >= t/w for w < 0
                        if *w > 0.0 {
                            lhi[j] = lhi[j].min(cut);
                            rlo[j] = rlo[j].max(cut);
                        } else {
                            llo[j] = llo[j].max(cut);
                            rhi[j] = rhi[j].min(cut);
                        }
                    }
                }
                stack.push((tree.left[node] as usize, llo, lhi));
                stack.push((tree.right[node] as usize, rlo, rhi));
            }
            for (lo, hi) in boxes.into_iter().flatten() {
                lower.row_mut(leaf).assign(&ndarray::ArrayView1::from(&lo));
                upper.row_mut(leaf).assign(&ndarray::ArrayView1::from(&hi));
                leaf += 1;
            }
        }
        (lower, upper)
    }

    /// Forest-wide leaf ids (as [`Forest::apply_leaves`]) reached by the rows of `z` when
    /// every split node follows a replacement rule instead of its projection: at node `i` of
    /// tree `t` a row goes left iff `(z[dim[k]] <= threshold[k]) != flip[k]`, with
    /// `k = s + i` and `s` the number of nodes of the trees before `t`. The rule arrays are
    /// indexed by node (entries of leaves are ignored). The autoencoder's split relabeling
    /// decoder routes latent vectors this way through splits relabeled in latent space.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when a rule array's length is not the forest's total number
    /// of nodes, or a split node's `dim` is not a column of `z`.
    pub fn apply_leaves_with_rules(
        &self,
        z: ArrayView2<'_, f64>,
        dim: &[i64],
        threshold: &[f64],
        flip: &[bool],
    ) -> Result<Array2<i64>> {
        let total: usize = self.trees.iter().map(|t| t.n_nodes()).sum();
        if dim.len() != total || threshold.len() != total || flip.len() != total {
            return Err(Error::InvalidInput(format!(
                "rule arrays have lengths {}, {}, {}; the forest has {total} nodes",
                dim.len(),
                threshold.len(),
                flip.len()
            )));
        }
        let mut start = 0usize;
        for tree in &self.trees {
            for node in (0..tree.n_nodes()).filter(|&i| !tree.is_leaf(i)) {
                let d = dim[start + node];
                if d < 0 || d as usize >= z.ncols() {
                    return Err(Error::InvalidInput(format!(
                        "rule dimension {d} is not a column of z (z has {} columns)",
                        z.ncols()
                    )));
                }
            }
            start += tree.n_nodes();
        }
        let off = self.leaf_offsets();
        let mut out = Array2::zeros((z.nrows(), self.trees.len()));
        let mut start = 0usize;
        for (t, tree) in self.trees.iter().enumerate() {
            let mut rank = Vec::with_capacity(tree.n_nodes());
            let mut r = 0usize;
            for i in 0..tree.n_nodes() {
                rank.push(r);
                r += usize::from(tree.is_leaf(i));
            }
            for (row, z_row) in z.rows().into_iter().enumerate() {
                let mut node = 0usize;
                while !tree.is_leaf(node) {
                    let k = start + node;
                    let go_left = (z_row[dim[k] as usize] <= threshold[k]) != flip[k];
                    node = if go_left {
                        tree.left[node]
                    } else {
                        tree.right[node]
                    } as usize;
                }
                out[[row, t]] = (off[t] + rank[node]) as i64;
            }
            start += tree.n_nodes();
        }
        Ok(out)
    }

    /// How often tree `tree` drew each of the `n_samples` training rows into its bootstrap
    /// sample, recomputed from the tree's seed (nothing is stored); all ones when the forest
    /// was grown without bootstrap. `n_samples` must be the number of rows of the fit.
    ///
    /// # Errors
    /// A tree index out of range, or `n_samples` that the forest's `max_samples` rejects.
    pub fn in_bag_counts(&self, tree: usize, n_samples: usize) -> Result<Vec<u32>> {
        if tree >= self.trees.len() {
            return Err(Error::InvalidInput(format!(
                "tree {tree} does not exist (the forest has {} trees)",
                self.trees.len()
            )));
        }
        if !self.params.bootstrap {
            return Ok(vec![1; n_samples]);
        }
        let cfg = self.params.check(n_samples, self.n_features)?;
        Ok(bootstrap_counts(
            self.params.seed,
            tree,
            n_samples,
            cfg.n_draws,
        ))
    }

    /// The nodes each row passes through, as a CSR indicator over the forest's nodes
    /// (scikit-learn's `decision_path`): returns `(indptr, indices, n_nodes_ptr)` where row
    /// `i` visits the forest-wide nodes `indices[indptr[i]..indptr[i + 1]]` (ascending), and
    /// tree `t`'s node `j` is column `n_nodes_ptr[t] + j`. A path is the chain of ancestors
    /// of the leaf [`Forest::apply`] reaches, so it follows prediction's arithmetic exactly.
    ///
    /// # Errors
    /// As [`Forest::predict`].
    #[allow(clippy::type_complexity)]
    pub fn decision_path<'x>(
        &self,
        x: impl Into<Features<'x>>,
        n_jobs: i64,
    ) -> Result<(Vec<i64>, Vec<i64>, Vec<i64>)> {
        let leaves = self.apply(x, n_jobs)?;
        let mut n_nodes_ptr = vec![0i64];
        let parents: Vec<Vec<u32>> = self
            .trees
            .iter()
            .map(|t| {
                let mut parent = vec![u32::MAX; t.n_nodes()];
                for node in (0..t.n_nodes()).filter(|&i| !t.is_leaf(i)) {
                    parent[t.left[node] as usize] = node as u32;
                    parent[t.right[node] as usize] = node as u32;
                }
                n_nodes_ptr.push(n_nodes_ptr[n_nodes_ptr.len() - 1] + t.n_nodes() as i64);
                parent
            })
            .collect();
        let mut indptr = Vec::with_capacity(leaves.nrows() + 1);
        indptr.push(0i64);
        let mut indices = Vec::new();
        let mut path = Vec::new();
        for row in leaves.rows() {
            for (t, &leaf) in row.iter().enumerate() {
                path.clear();
                let mut node = leaf as u32;
                while node != u32::MAX {
                    path.push(n_nodes_ptr[t] + node as i64);
                    node = parents[t][node as usize];
                }
                // ancestors carry smaller ids than their descendants in both growth orders
                indices.extend(path.iter().rev());
            }
            indptr.push(indices.len() as i64);
        }
        Ok((indptr, indices, n_nodes_ptr))
    }

    /// Mean decrease in impurity per feature (each tree normalised, averaged, renormalised).
    pub fn feature_importances(&self) -> Vec<f64> {
        let mut imp = vec![0.0; self.n_features];
        for t in &self.trees {
            for (a, b) in imp.iter_mut().zip(t.feature_importances(
                self.n_features,
                self.descriptors(),
                self.params.projection.unit_weights(),
            )) {
                *a += b;
            }
        }
        normalise(&mut imp);
        imp
    }

    /// How often each feature is part of a split projection, normalised to sum to 1
    /// (the count-based importance of MORF, Sect. 3.2).
    pub fn projection_counts(&self) -> Vec<f64> {
        let mut c = vec![0.0; self.n_features];
        for t in &self.trees {
            t.add_projection_counts(self.descriptors(), &mut c);
        }
        normalise(&mut c);
        c
    }

    /// Checks the structure of a forest read from outside (every index in range).
    ///
    /// # Errors
    /// [`Error::CorruptModel`] describing the first inconsistency.
    pub fn validate(&self) -> Result<()> {
        if self.n_features == 0 || self.trees.is_empty() {
            return Err(Error::CorruptModel("empty forest".into()));
        }
        match &self.params.task {
            Task::Classification { n_classes: 0 } => {
                return Err(Error::CorruptModel("zero classes".into()))
            }
            Task::MultiClassification { n_classes }
                if n_classes.len() < 2 || n_classes.contains(&0) =>
            {
                return Err(Error::CorruptModel("multi-output classes".into()))
            }
            Task::MultiRegression { n_outputs } if *n_outputs < 2 => {
                return Err(Error::CorruptModel("multi-output outputs".into()))
            }
            _ => {}
        }
        self.params
            .projection
            .check(self.n_features)
            .map_err(|e| Error::CorruptModel(e.to_string()))?;
        for t in &self.trees {
            if t.n_outputs != self.n_outputs() {
                return Err(Error::CorruptModel("tree output width".into()));
            }
            t.validate(self.n_features, self.descriptors())?;
        }
        Ok(())
    }
}

/// Grows trees `range` of a forest in the fit's pool, each from its (seed, tree index)
/// streams; returns them in index order, each with its out-of-bag rows when OOB is requested.
/// `held` bytes of trees already belong to the forest (the memory guard counts them); the
/// whole request is checked against the memory limit when the range starts at tree 0.
///
/// # Errors
/// [`Error::ResourceLimit`] when the memory guard stops growth, [`Error::Cancelled`].
pub(crate) fn grow_trees(
    data: &FitData<'_>,
    range: std::ops::Range<usize>,
    held: u64,
    progress: Option<&AtomicUsize>,
) -> Result<Vec<(Tree, Option<Vec<u32>>)>> {
    let pool = thread_pool(data.params.n_threads())?;
    // (a scaling's per-feature scales are read from the data on the fit's threads)
    let sampler = cancel::install(&pool, || data.params.projection.sampler_for(&data.x));
    let grower = Grower {
        cfg: &data.cfg,
        sampler: &sampler,
        x: &data.x,
        y: &data.y,
    };
    let budget = limits::budget_bytes();
    if range.start == 0 {
        limits::check_request(data.params, data.x.n_samples, data.y.n_present(), budget)?;
    }
    let tally = limits::Tally::new(budget, held, range.len());
    let carried = cancel::carry();
    let grown: Vec<(Tree, Option<Vec<u32>>)> = cancel::install(&pool, || {
        range
            .into_par_iter()
            .map_init(Workspace::default, |ws, t| {
                if tally.over() || carried.run(cancel::requested) {
                    return None; // stopped (memory guard, cancel): start no more trees
                }
                // a cancelled builder stops splitting; its tree is dropped below
                let tree_result = carried.run(|| grow_one(data, &grower, t, ws));
                tally.add(&tree_result.0);
                if let Some(p) = progress {
                    p.fetch_add(1, Ordering::Relaxed);
                }
                Some(tree_result)
            })
            .flatten() // in index order, without a slot per tree never grown
            .collect()
    });
    cancel::check()?;
    if tally.over() {
        return Err(tally.error());
    }
    Ok(grown)
}

pub(crate) fn prepare<'a, 'x: 'a>(
    params: &'a ForestParams,
    x: impl Into<Features<'x>>,
    y: &[f64],
    sample_weight: Option<&[f64]>,
) -> Result<FitData<'a>> {
    let x: Features<'a> = x.into().reborrow();
    let (n, p) = x.dim();
    let cfg = params.check(n, p)?;
    let k = params.task.n_targets();
    if y.len() != n.saturating_mul(k) {
        return Err(Error::InvalidInput(if k == 1 {
            format!("y has {} entries but X has {n} rows", y.len())
        } else {
            format!(
                "y has {} entries but X has {n} rows of {k} outputs (n × k, row-major)",
                y.len()
            )
        }));
    }
    let y = Targets::for_task(y, &params.task)?;
    if params.criterion == Criterion::Poisson {
        check_poisson_targets(&y)?;
    }
    let sample_weight = check_weights(sample_weight, n)?;
    check_target_scale(&y, &sample_weight)?;
    // in the fit's pool: a copy into Fortran order is split over its threads
    let x = cancel::install(&*thread_pool(params.n_threads())?, || {
        FeatureMatrix::from_features(x)
    })?;
    // as scikit-learn: a constrained split has no rule for rows whose projection is missing
    if x.has_missing() && !cfg.monotonic_cst.is_empty() {
        return Err(Error::InvalidInput(
            "monotonic_cst is not supported with missing values (NaN in X), as in \
             scikit-learn; impute X or drop the constraints"
                .into(),
        ));
    }
    // the running medians of absolute_error's scan have no block for the missing rows
    if x.has_missing() && params.criterion == crate::params::Criterion::AbsoluteError {
        return Err(Error::InvalidInput(
            "criterion='absolute_error' does not support missing values (NaN in X); impute X \
             or use 'squared_error' or 'poisson'"
                .into(),
        ));
    }
    // explicit projections have their weights halved when sums could overflow
    // (`FeatureMatrix::keep_sums_finite`); stored descriptors cannot be, so refuse instead
    // of growing trees that cannot split
    if let Some(l1) = params
        .projection
        .descriptors()
        .and_then(|d| d.max_weight_l1())
    {
        let bound = l1 * f64::from(x.max_abs());
        if bound > f64::from(f32::MAX) {
            return Err(Error::InvalidInput(format!(
                "X has values up to {:.3e} in magnitude: sums over this projection family's \
                 patches or atoms (|weights| up to {l1} in all) could exceed float32's range \
                 (3.4e38), in which the engine computes; rescale X (e.g. divide it by a \
                 constant)",
                x.max_abs()
            )));
        }
    }
    Ok(FitData {
        params,
        cfg,
        x,
        y,
        sample_weight,
    })
}

/// scikit-learn's restrictions on Poisson targets: none negative, and a positive sum (the
/// deviance needs a positive mean).
///
/// # Errors
/// [`Error::InvalidInput`] otherwise.
fn check_poisson_targets(y: &Targets) -> Result<()> {
    let (Targets::Values(y) | Targets::MultiValues { y, .. }) = y else {
        return Ok(());
    };
    if y.iter().any(|&v| v < 0.0) {
        return Err(Error::InvalidInput(
            "Some value(s) of y are negative which is not allowed for Poisson regression.".into(),
        ));
    }
    if y.iter().sum::<f64>() <= 0.0 {
        return Err(Error::InvalidInput(
            "Sum of y is not strictly positive which is necessary for Poisson regression.".into(),
        ));
    }
    Ok(())
}

/// How often tree `t` of a forest seeded with `seed` draws each of `n` rows into its
/// bootstrap sample of `n_draws` rows. The one place the bootstrap is drawn: growing a tree
/// and [`Forest::in_bag_counts`] both call it, so the in-bag rows reported afterwards are
/// the ones the tree was grown on.
fn bootstrap_counts(seed: u64, t: usize, n: usize, n_draws: usize) -> Vec<u32> {
    let mut counts = vec![0u32; n];
    let mut rng = Rng::for_tree(seed, t as u64, Purpose::Bootstrap);
    for _ in 0..n_draws {
        counts[rng.below(n)] += 1;
    }
    counts
}

/// "balanced_subsample" for multi-output classes: each row's weight is multiplied, for
/// every output, by `total / (present classes × class weight)` of its class in the
/// bootstrap sample (`counts`), as scikit-learn's `compute_sample_weight` multiplies the
/// outputs' balanced weights. `slots` are the rows' k class slots (row-major) among
/// `n_slots`.
fn balance_outputs(weights: &mut [f64], counts: &[u32], slots: &[u32], k: usize, n_slots: usize) {
    let mut per_slot = vec![0.0f64; n_slots];
    let mut owner = vec![usize::MAX; n_slots];
    for (i, &cnt) in counts.iter().enumerate() {
        for (o, &c) in slots[i * k..(i + 1) * k].iter().enumerate() {
            per_slot[c as usize] += cnt as f64;
            owner[c as usize] = o;
        }
    }
    // every row has one class per output: each output's bootstrap total is the same
    let total: f64 = counts.iter().map(|&c| c as f64).sum();
    let mut present = vec![0.0f64; k];
    for (c, &o) in owner.iter().enumerate() {
        if o < k && per_slot[c] > 0.0 {
            present[o] += 1.0;
        }
    }
    for (i, w) in weights.iter_mut().enumerate() {
        for (o, &c) in slots[i * k..(i + 1) * k].iter().enumerate() {
            let pc = per_slot[c as usize];
            *w *= if pc > 0.0 {
                total / (present[o] * pc)
            } else {
                0.0
            };
        }
    }
}

/// Grows tree `t`; returns it with its out-of-bag rows when OOB is requested.
fn grow_one(
    data: &FitData<'_>,
    grower: &Grower<'_, AnySampler>,
    t: usize,
    ws: &mut Workspace,
) -> (Tree, Option<Vec<u32>>) {
    let n = data.x.n_samples;
    let mut weights = data.sample_weight.clone();
    if data.params.bootstrap {
        let counts = bootstrap_counts(data.params.seed, t, n, data.cfg.n_draws);
        if data.params.class_weight_subsample {
            if let Targets::MultiClasses { slots, k } = &data.y {
                balance_outputs(&mut weights, &counts, slots, *k, data.cfg.n_outputs);
            }
            if let Targets::Classes(c) = &data.y {
                let k = data.cfg.n_outputs;
                let mut per_class = vec![0.0f64; k];
                for (i, &cnt) in counts.iter().enumerate() {
                    per_class[c[i] as usize] += cnt as f64;
                }
                let present = per_class.iter().filter(|&&v| v > 0.0).count() as f64;
                let total: f64 = per_class.iter().sum();
                for (i, w) in weights.iter_mut().enumerate() {
                    let pc = per_class[c[i] as usize];
                    *w *= if pc > 0.0 {
                        total / (present * pc)
                    } else {
                        0.0
                    };
                }
            }
        }
        for (w, &c) in weights.iter_mut().zip(&counts) {
            *w *= c as f64;
        }
        if weights.iter().all(|&w| w == 0.0) {
            // every drawn row has zero weight (sparse sample weights): an empty tree would
            // predict nothing, so this tree sees all rows with their own weights instead
            weights.clone_from(&data.sample_weight);
        }
        let mut rng = Rng::for_tree(data.params.seed, t as u64, Purpose::Grow);
        let tree =
            prune_cost_complexity(grower.grow(&weights, &mut rng, ws), data.params.ccp_alpha);
        let oob = data.params.oob.then(|| {
            counts
                .iter()
                .enumerate()
                .filter(|(_, &c)| c == 0)
                .map(|(i, _)| i as u32)
                .collect()
        });
        (tree, oob)
    } else {
        let mut rng = Rng::for_tree(data.params.seed, t as u64, Purpose::Grow);
        let tree = grower.grow(&weights, &mut rng, ws);
        (prune_cost_complexity(tree, data.params.ccp_alpha), None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::{MaxFeatures, Splitter};
    use crate::projection::{Density, ProjectionKind, WeightScale};
    use ndarray::Array2;

    fn data(n: usize, p: usize, seed: u64) -> (Array2<f32>, Vec<f64>) {
        let mut rng = Rng::from_seed(seed);
        let x = Array2::from_shape_fn((n, p), |_| (rng.unit() * 2.0 - 1.0) as f32);
        let y = x
            .rows()
            .into_iter()
            .map(|r| ((r[0] > 0.0) ^ (r[1] > 0.0)) as u8 as f64)
            .collect();
        (x, y)
    }

    fn sporf(n_estimators: usize) -> ForestParams {
        let mut p = ForestParams::classification(2);
        p.projection = ProjectionKind::SparseSigned {
            density: Density::FeatureCombinations(2.0),
            scaling: WeightScale::None,
        };
        p.max_features = MaxFeatures::All;
        p.n_estimators = n_estimators;
        p.seed = 11;
        p
    }

    fn robust_sporf(n_estimators: usize) -> ForestParams {
        let mut p = sporf(n_estimators);
        p.projection = ProjectionKind::SparseSigned {
            density: Density::FeatureCombinations(2.0),
            scaling: WeightScale::Robust,
        };
        p
    }

    #[test]
    fn robust_scaling_makes_sporf_independent_of_the_features_units() {
        let (x, y) = data(300, 6, 4);
        let mut p = robust_sporf(6);
        // powers of two change no rounding: the same splits, bit for bit
        let mut rescaled = x.clone();
        rescaled.column_mut(0).mapv_inplace(|v| v * 1024.0);
        rescaled.column_mut(3).mapv_inplace(|v| v / 64.0);
        let a = Forest::fit(&p, x.view(), &y, None).unwrap();
        let b = Forest::fit(&p, rescaled.view(), &y, None).unwrap();
        for (s, t) in a.trees.iter().zip(&b.trees) {
            assert_eq!((&s.left, &s.threshold), (&t.left, &t.threshold));
        }
        assert_eq!(
            a.predict(x.view(), 1).unwrap(),
            b.predict(rescaled.view(), 1).unwrap()
        );
        // without scaling the wide column takes over the projections it enters
        p.projection = sporf(1).projection;
        let a = Forest::fit(&p, x.view(), &y, None).unwrap();
        let b = Forest::fit(&p, rescaled.view(), &y, None).unwrap();
        assert_ne!(a.trees[0].threshold, b.trees[0].threshold);
        // the scales are in the stored weights: a scaled forest round-trips, and an
        // unscaled one keeps its version-2 bytes
        // (in version 3, which readers without the scaled variant refuse by its number)
        let scaled = Forest::fit(&robust_sporf(6), x.view(), &y, None).unwrap();
        let bytes = scaled.to_bytes().unwrap();
        assert_eq!(Forest::from_bytes(&bytes).unwrap(), scaled);
        assert_eq!(bytes[8..12], 3u32.to_le_bytes());
        assert_eq!(a.to_bytes().unwrap()[8..12], 2u32.to_le_bytes());
    }

    #[test]
    fn sporf_importances_share_a_split_equally_among_its_features() {
        let (x, y) = data(300, 6, 5);
        let p = robust_sporf(4);
        let mut rescaled = x.clone();
        rescaled.column_mut(1).mapv_inplace(|v| v * 1024.0);
        let a = Forest::fit(&p, x.view(), &y, None).unwrap();
        let b = Forest::fit(&p, rescaled.view(), &y, None).unwrap();
        assert_eq!(a.feature_importances(), b.feature_importances());
    }

    #[test]
    fn grow_more_adds_to_an_oob_record_and_starts_none() {
        let (x, y) = data(200, 4, 2);
        let mut p = sporf(3);
        p.oob = true;
        let mut seven = p.clone();
        seven.n_estimators = 7;
        let whole = Forest::fit(&seven, x.view(), &y, None).unwrap();
        let mut grown = Forest::fit(&p, x.view(), &y, None).unwrap();
        grown
            .grow_more(x.view(), &y, None, 4, None, None, None, None)
            .unwrap();
        assert_eq!(
            grown.oob(),
            whole.oob(),
            "the record covers all seven trees"
        );
        assert!(whole.oob().is_some());
        // truncated: the record is gone, and the next trees do not start a partial one
        let mut cut = Forest::fit(&p, x.view(), &y, None).unwrap();
        cut.truncate(3);
        cut.grow_more(x.view(), &y, None, 4, None, None, None, None)
            .unwrap();
        assert!(cut.oob().is_none());
        assert_eq!(cut.to_bytes().unwrap(), whole.to_bytes().unwrap());
    }

    #[test]
    fn forest_does_not_depend_on_thread_count() {
        let (x, y) = data(300, 6, 1);
        let mut p = sporf(8);
        let one = Forest::fit(&p, x.view(), &y, None).unwrap();
        p.n_jobs = 3;
        let three = Forest::fit(&p, x.view(), &y, None).unwrap();
        assert!(
            one == three,
            "the same seed grows the same forest on 1 and 3 threads"
        );
        assert_eq!(one.to_bytes().unwrap(), three.to_bytes().unwrap());
    }

    #[test]
    fn in_bag_counts_and_decision_paths_match_the_grown_trees() {
        let (x, y) = data(200, 5, 2);
        let mut p = sporf(4);
        p.oob = true;
        let forest = Forest::fit(&p, x.view(), &y, None).unwrap();
        let oob = forest.oob().unwrap();
        let mut not_in_bag = vec![0u32; 200];
        for t in 0..4 {
            let counts = forest.in_bag_counts(t, 200).unwrap();
            assert_eq!(counts.iter().sum::<u32>(), 200, "a bootstrap draws n rows");
            let distinct = counts.iter().filter(|&&c| c > 0).count() as u32;
            assert_eq!(forest.trees()[t].n_node_samples[0], distinct);
            for (n, &c) in not_in_bag.iter_mut().zip(&counts) {
                *n += (c == 0) as u32;
            }
        }
        assert_eq!(
            not_in_bag, oob.counts,
            "in-bag rows are the ones OOB left out"
        );
        assert!(forest.in_bag_counts(4, 200).is_err());

        // OOB computed afterwards from the seeds equals OOB gathered while growing
        let mut later = Forest::fit(&sporf(4), x.view(), &y, None).unwrap();
        assert!(later.oob().is_none());
        later.compute_oob(x.view(), 2).unwrap();
        assert_eq!(later.oob().unwrap().sums, oob.sums);
        assert_eq!(later.oob().unwrap().counts, oob.counts);

        let leaves = forest.apply(x.view(), 1).unwrap();
        let (indptr, indices, ptr) = forest.decision_path(x.view(), 1).unwrap();
        assert_eq!(indptr.len(), 201);
        for i in 0..200 {
            let row = &indices[indptr[i] as usize..indptr[i + 1] as usize];
            for t in 0..4 {
                let path: Vec<i64> = row
                    .iter()
                    .filter(|&&v| v >= ptr[t] && v < ptr[t + 1])
                    .map(|&v| v - ptr[t])
                    .collect();
                let tree = &forest.trees()[t];
                assert_eq!(path[0], 0, "paths start at the root");
                assert_eq!(*path.last().unwrap(), leaves[[i, t]]);
                assert_eq!(path.len() as u32, tree.depth[leaves[[i, t]] as usize] + 1);
            }
        }
    }

    /// Grows a forest from prepared data, with the discrete-column hint on or off.
    fn fit_with_hint(params: &ForestParams, x: &Array2<f32>, y: &[f64], hint: bool) -> Forest {
        let mut data = prepare(params, x.view(), y, None).unwrap();
        data.x.set_discrete_hint(hint);
        Forest::grown(&data, None).unwrap()
    }

    #[test]
    fn exact_histogram_path_grows_the_trees_sorting_grows() {
        // integer features (the histogram path's case) and integer targets, so every
        // gini and squared-error statistic is an exact sum and both paths must choose the
        // very same splits
        let mut rng = Rng::from_seed(9);
        let x = Array2::from_shape_fn((3000, 5), |(_, j)| (rng.below(3 + 2 * j) as f32) - 2.0);
        let y: Vec<f64> = x
            .rows()
            .into_iter()
            .map(|r| ((r[0] + r[1] > 0.0) as u8 + (r[2] * r[3] > 1.0) as u8) as f64)
            .collect();
        for proj in [
            ProjectionKind::AxisAligned,
            ProjectionKind::SparseSigned {
                density: Density::FeatureCombinations(2.0),
                scaling: WeightScale::None,
            },
        ] {
            let mut clf = sporf(4);
            clf.task = crate::params::Task::Classification { n_classes: 3 };
            clf.projection = proj.clone();
            let mut reg = ForestParams::regression();
            reg.projection = proj;
            reg.n_estimators = 4;
            for (params, crit) in [
                (clf.clone(), crate::params::Criterion::Gini),
                (clf, crate::params::Criterion::Entropy),
                (reg, crate::params::Criterion::SquaredError),
            ] {
                let params = ForestParams {
                    criterion: crit,
                    ..params
                };
                let hist = fit_with_hint(&params, &x, &y, true);
                let sort = fit_with_hint(&params, &x, &y, false);
                assert!(hist.trees().iter().map(|t| t.n_nodes()).sum::<usize>() > 40);
                if crit != crate::params::Criterion::Entropy {
                    assert!(hist == sort, "{crit:?}: the histogram path changed a split");
                    continue;
                }
                // entropy sums logarithms, which round differently when a bin's rows move
                // at once: near-ties may flip, so only the predictions must agree
                let (a, b) = (
                    hist.predict(x.view(), 1).unwrap(),
                    sort.predict(x.view(), 1).unwrap(),
                );
                let differ = a
                    .rows()
                    .into_iter()
                    .zip(b.rows())
                    .filter(|(r, s)| (r[0] - s[0]).abs() + (r[1] - s[1]).abs() > 1e-9)
                    .count();
                assert!(
                    differ * 100 <= x.nrows(),
                    "entropy: {differ} rows predicted differently"
                );
            }
        }
    }

    /// XOR data whose feature 2 is missing exactly on the rows of class 1 with x0 > 0.5,
    /// and 10% of every other entry missing at random.
    fn missing_data(n: usize, seed: u64) -> (Array2<f32>, Vec<f64>) {
        let (mut x, y) = data(n, 4, seed);
        let mut rng = Rng::from_seed(seed + 100);
        for i in 0..n {
            for j in 0..4 {
                if j == 2 && y[i] == 1.0 && x[[i, 0]] > 0.5 || j != 2 && rng.unit() < 0.1 {
                    x[[i, j]] = f32::NAN;
                }
            }
        }
        (x, y)
    }

    #[test]
    fn missing_values_learn_a_side_and_every_walk_follows_it() {
        let (x, y) = missing_data(600, 21);
        for (proj, splitter) in [
            (ProjectionKind::AxisAligned, Splitter::Best),
            (
                ProjectionKind::SparseSigned {
                    density: Density::FeatureCombinations(2.0),
                    scaling: WeightScale::None,
                },
                Splitter::Best,
            ),
            (ProjectionKind::AxisAligned, Splitter::Random),
            (
                ProjectionKind::AxisAligned,
                Splitter::Histogram { max_bins: 16 },
            ),
        ] {
            let mut p = sporf(6);
            p.projection = proj;
            p.splitter = splitter;
            let f = Forest::fit(&p, x.view(), &y, None).unwrap();
            f.validate().unwrap();
            assert!(
                f.trees().iter().any(|t| !t.missing_flip.is_empty()),
                "{splitter:?}: some split sends its missing rows against the default"
            );
            // fully grown trees fit the training rows, missing ones included
            let proba = f.predict(x.view(), 1).unwrap();
            let wrong = proba
                .rows()
                .into_iter()
                .zip(&y)
                .filter(|(r, &c)| (r[1] > r[0]) != (c == 1.0))
                .count();
            assert!(
                wrong * 50 < y.len(),
                "{splitter:?}: {wrong} training rows wrong"
            );
            // plain and packed walks agree on rows with missing values
            for (t, pt) in f.trees().iter().zip(f.packed()) {
                let mut out = vec![0u32; x.nrows()];
                let flat: Vec<f32> = x.iter().copied().collect();
                pt.leaves(&flat, 4, &mut out);
                for (i, row) in x.rows().into_iter().enumerate() {
                    let row = row.to_vec();
                    let leaf = t.leaf(f.descriptors(), &row);
                    assert_eq!(leaf, pt.leaf(&row));
                    assert_eq!(leaf, out[i] as usize);
                    assert_eq!(leaf, t.leaf_by(f.descriptors(), |j| row[j]));
                }
            }
            // the directions survive the bytes, which carry the next format version
            let bytes = f.to_bytes().unwrap();
            assert_eq!(bytes[8..12], crate::FORMAT_VERSION.to_le_bytes());
            let back = Forest::from_bytes(&bytes).unwrap();
            assert!(back == f);
            assert_eq!(back.predict(x.view(), 1).unwrap(), proba);
        }
    }

    #[test]
    fn missing_directions_in_bytes_are_validated_and_absent_without_nan() {
        let (x, y) = data(300, 4, 5);
        let plain = Forest::fit(&sporf(3), x.view(), &y, None).unwrap();
        let bytes = plain.to_bytes().unwrap();
        assert_eq!(
            bytes[8..12],
            2u32.to_le_bytes(),
            "no NaN: the version before"
        );
        // a row with NaN at prediction goes to the heavier child where no NaN was seen
        let t = &plain.trees()[0];
        let row = [f32::NAN; 4];
        let mut node = 0;
        while !t.is_leaf(node) {
            let (l, r) = (t.left[node] as usize, t.right[node] as usize);
            let w = &t.weighted_n_node_samples;
            node = if w[l] > w[r] { l } else { r };
        }
        assert_eq!(t.leaf(plain.descriptors(), &row), node);
        // a direction at a leaf, out of order or out of range is refused
        let (xm, ym) = missing_data(300, 6);
        let f = Forest::fit(&sporf(3), xm.view(), &ym, None).unwrap();
        let leaf = (0..f.trees[0].n_nodes())
            .find(|&i| f.trees[0].is_leaf(i))
            .unwrap();
        for bad in [vec![leaf as u32], vec![0, 0], vec![u32::MAX]] {
            let mut g = f.clone();
            g.trees[0].missing_flip = bad.clone();
            assert!(
                matches!(
                    Forest::from_bytes(&g.to_bytes().unwrap()),
                    Err(Error::CorruptModel(_))
                ),
                "{bad:?}"
            );
        }
        // an older reader refuses the version with the section by its number
        let mut newer = f.to_bytes().unwrap();
        newer[8] = 4;
        assert!(matches!(
            Forest::from_bytes(&newer),
            Err(Error::UnsupportedVersion { found: 4, .. })
        ));
    }

    #[test]
    fn missing_values_grow_the_same_trees_by_histogram_and_by_sorting() {
        // integer features with missing entries, integer targets: the exact histogram
        // path and the sort must choose the same splits and the same missing sides
        let mut rng = Rng::from_seed(4);
        let mut x = Array2::from_shape_fn((3000, 4), |(_, j)| (rng.below(3 + 2 * j) as f32) - 2.0);
        let y: Vec<f64> = x
            .rows()
            .into_iter()
            .map(|r| ((r[0] + r[1] > 0.0) as u8 + (r[2] > 1.0) as u8) as f64)
            .collect();
        for (i, mut row) in x.rows_mut().into_iter().enumerate() {
            if y[i] == 2.0 && i % 3 == 0 {
                row[1] = f32::NAN;
            }
            if i % 7 == 0 {
                row[3] = f32::NAN;
            }
        }
        let mut p = ForestParams::regression();
        p.n_estimators = 4;
        p.projection = ProjectionKind::AxisAligned;
        let hist = fit_with_hint(&p, &x, &y, true);
        let sort = fit_with_hint(&p, &x, &y, false);
        assert!(hist.trees().iter().any(|t| !t.missing_flip.is_empty()));
        assert!(
            hist == sort,
            "the histogram path changed a split or a missing side"
        );
    }

    #[test]
    fn histogram_splitter_is_exact_when_bins_resolve_every_value_and_close_otherwise() {
        let mut p = sporf(6);
        p.projection = ProjectionKind::AxisAligned;
        // 40 evenly spaced values a feature, 64 bins (nodes of 512+ rows): every value has
        // a bin of its own
        let mut rng = Rng::from_seed(3);
        let x = Array2::from_shape_fn((6000, 4), |_| rng.below(40) as f32 * 0.25);
        let y: Vec<f64> = x
            .rows()
            .into_iter()
            .map(|r| (r[0] + 0.5 * r[1] > 6.0) as u8 as f64)
            .collect();
        let exact = fit_with_hint(&p, &x, &y, false);
        p.splitter = Splitter::Histogram { max_bins: 64 };
        assert!(fit_with_hint(&p, &x, &y, false).trees() == exact.trees());
        // continuous data, 32 bins: approximate thresholds, yet every split is consistent
        // with the rows (validate, fully grown trees fit the training data) and the
        // forest generalises about as well
        let (x, y) = data(8000, 4, 12);
        let (xt, yt) = data(4000, 4, 13);
        let mut p = sporf(10);
        let exact = Forest::fit(&p, x.view(), &y, None).unwrap();
        p.splitter = Splitter::Histogram { max_bins: 32 };
        let hist = Forest::fit(&p, x.view(), &y, None).unwrap();
        hist.validate().unwrap();
        let err = |f: &Forest| {
            let proba = f.predict(xt.view(), 1).unwrap();
            proba
                .rows()
                .into_iter()
                .zip(&yt)
                .filter(|(r, &c)| (r[1] > r[0]) != (c == 1.0))
                .count() as f64
                / yt.len() as f64
        };
        let (e_exact, e_hist) = (err(&exact), err(&hist));
        assert!(e_hist < e_exact + 0.02, "hist {e_hist} vs exact {e_exact}");
        assert!(
            exact.trees() != hist.trees(),
            "32 bins on 8000 continuous rows must change some split"
        );
    }

    #[test]
    fn only_leaves_store_values_and_inner_values_are_recovered() {
        let (x, y) = data(300, 4, 21);
        let mut p = sporf(3);
        p.bootstrap = false;
        let f = Forest::fit(&p, x.view(), &y, None).unwrap();
        let ones = y.iter().filter(|&&c| c == 1.0).count() as f64 / y.len() as f64;
        for t in f.trees() {
            assert_eq!(t.value.len(), 2 * t.n_leaves());
            let all = t.node_values();
            assert_eq!(all.len(), 2 * t.n_nodes());
            // the root's value is the class distribution of the whole training set
            assert!((all[1] - ones).abs() < 1e-12 && (all[0] + all[1] - 1.0).abs() < 1e-12);
            for node in (0..t.n_nodes()).filter(|&i| t.is_leaf(i)) {
                assert_eq!(&all[2 * node..2 * node + 2], t.leaf_value(node));
            }
        }
    }

    #[test]
    fn packed_forest_matches_tree_predictions() {
        let (x, y) = data(400, 6, 2);
        let patch = crate::projection::PatchGeometry {
            data_shape: vec![2, 3],
            channel_axis: None,
            min_patch_size: vec![1, 1],
            max_patch_size: vec![2, 3],
            periodic: vec![false, true],
        };
        for proj in [
            ProjectionKind::AxisAligned,
            ProjectionKind::Gaussian,
            ProjectionKind::ForestRc { n_combined: 2 },
            ProjectionKind::Patch(patch),
        ] {
            let p = ForestParams {
                projection: proj,
                ..sporf(5)
            };
            let f = Forest::fit(&p, x.view(), &y, None).unwrap();
            let packed = f.packed();
            assert_eq!(packed.len(), 5);
            let flat: Vec<f32> = x.iter().copied().collect();
            let mut lanes = vec![0u32; x.nrows()];
            for (t, pt) in f.trees().iter().zip(packed) {
                pt.leaves(&flat, 6, &mut lanes);
                for (row, &lane_leaf) in x.rows().into_iter().zip(&lanes) {
                    let row = row.to_vec();
                    let plain = t.leaf(f.descriptors(), &row);
                    assert_eq!(plain, pt.leaf(&row));
                    assert_eq!(plain, lane_leaf as usize);
                    assert_eq!(t.leaf_row(pt.leaf_row(plain)), t.leaf_value(plain));
                    if let Some(c) = pt.pure_class(plain) {
                        let mut one_hot = vec![0.0; t.n_outputs];
                        one_hot[c] = 1.0;
                        assert_eq!(t.leaf_value(plain), &one_hot[..]);
                    }
                }
            }
        }
    }

    #[test]
    fn fully_grown_tree_fits_training_data() {
        let (x, y) = data(200, 4, 3);
        let mut p = sporf(1);
        p.bootstrap = false;
        let f = Forest::fit(&p, x.view(), &y, None).unwrap();
        let proba = f.predict(x.view(), 1).unwrap();
        for (row, &t) in proba.rows().into_iter().zip(&y) {
            assert_eq!(row[1], t, "pure leaves reproduce the labels");
        }
    }

    #[test]
    fn max_depth_and_max_leaf_nodes_are_honoured() {
        let (x, y) = data(500, 4, 4);
        let mut p = sporf(3);
        p.max_depth = Some(2);
        let f = Forest::fit(&p, x.view(), &y, None).unwrap();
        assert!(f.trees().iter().all(|t| t.max_depth() <= 2));
        p.max_depth = None;
        p.max_leaf_nodes = Some(5);
        let f = Forest::fit(&p, x.view(), &y, None).unwrap();
        assert!(f.trees().iter().all(|t| t.n_leaves() == 5));
    }

    #[test]
    fn model_bytes_round_trip_and_reject_damage() {
        let (x, y) = data(200, 4, 5);
        let f = Forest::fit(&sporf(3), x.view(), &y, None).unwrap();
        let bytes = f.to_bytes().unwrap();
        assert_eq!(Forest::from_bytes(&bytes).unwrap(), f);
        assert!(matches!(
            Forest::from_bytes(&bytes[..bytes.len() - 1]),
            Err(Error::CorruptModel(_))
        ));
        let mut flipped = bytes.clone();
        flipped[40] ^= 1;
        assert!(matches!(
            Forest::from_bytes(&flipped),
            Err(Error::CorruptModel(_))
        ));
        let mut newer = bytes.clone();
        newer[8] = 9;
        assert!(matches!(
            Forest::from_bytes(&newer),
            Err(Error::UnsupportedVersion { .. })
        ));
    }

    #[test]
    fn loader_rejects_structurally_invalid_trees_with_valid_checksum() {
        let (x, y) = data(200, 4, 6);
        let mut f = Forest::fit(&sporf(2), x.view(), &y, None).unwrap();
        f.trees[0].left[0] = 0; // a cycle
        let bytes = f.to_bytes().unwrap();
        assert!(matches!(
            Forest::from_bytes(&bytes),
            Err(Error::CorruptModel(_))
        ));
        let mut f = Forest::fit(&sporf(2), x.view(), &y, None).unwrap();
        f.trees[0].proj_idx[0] = 99; // feature out of range
        assert!(matches!(
            Forest::from_bytes(&f.to_bytes().unwrap()),
            Err(Error::CorruptModel(_))
        ));
        let mut f = Forest::fit(&sporf(2), x.view(), &y, None).unwrap();
        let last = f.trees[0].depth.len() - 1;
        f.trees[0].depth[last] = u32::MAX; // depths inconsistent with the tree
        assert!(matches!(
            Forest::from_bytes(&f.to_bytes().unwrap()),
            Err(Error::CorruptModel(_))
        ));
    }

    #[test]
    fn bad_input_is_an_error_not_a_panic() {
        let (x, y) = data(50, 3, 7);
        let p = sporf(2);
        let mut inf = x.clone();
        inf[[3, 1]] = f32::INFINITY;
        assert!(Forest::fit(&p, inf.view(), &y, None).is_err());
        let f = Forest::fit(&p, x.view(), &y, None).unwrap();
        assert!(f.predict(inf.view(), 1).is_err());
        assert!(Forest::fit(&p, x.view(), &y[..10], None).is_err());
        assert!(Forest::fit(&p, x.view(), &y, Some(&[-1.0; 50])).is_err());
        let f = Forest::fit(&p, x.view(), &y, None).unwrap();
        let narrow = Array2::<f32>::zeros((4, 2));
        assert!(matches!(
            f.predict(narrow.view(), 1),
            Err(Error::FeatureMismatch { .. })
        ));
        let bad_params = ForestParams {
            max_features: MaxFeatures::Count(0),
            ..p
        };
        assert!(matches!(
            Forest::fit(&bad_params, x.view(), &y, None),
            Err(Error::InvalidParameter { .. })
        ));
    }

    #[test]
    fn cancelled_fit_and_predict_return_cancelled_and_another_thread_can_cancel() {
        let (x, y) = data(3000, 6, 8);
        let f = Forest::fit(&sporf(4), x.view(), &y, None).unwrap();
        let cancelled = crate::Cancel::new();
        cancelled.cancel();
        assert_eq!(
            cancelled
                .run(|| Forest::fit(&sporf(4), x.view(), &y, None))
                .err(),
            Some(Error::Cancelled)
        );
        for n_jobs in [1, 2] {
            let r = cancelled.run(|| f.predict(x.view(), n_jobs));
            assert_eq!(r.err(), Some(Error::Cancelled));
        }
        // a fit of many trees, cancelled from another thread while it grows
        let cancel = crate::Cancel::new();
        let mut p = sporf(100_000);
        p.n_jobs = 2;
        let started = std::time::Instant::now();
        let result = std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(std::time::Duration::from_millis(200));
                cancel.cancel();
            });
            cancel.run(|| Forest::fit(&p, x.view(), &y, None))
        });
        assert_eq!(result.err(), Some(Error::Cancelled));
        assert!(started.elapsed() < std::time::Duration::from_secs(30));
        // and the token of another call is not this one's
        assert!(Forest::fit(&sporf(2), x.view(), &y, None).is_ok());
    }

    #[test]
    fn cancelling_one_fit_leaves_a_concurrent_fit_on_the_same_pool_alone() {
        let (x, y) = data(2000, 6, 10);
        let mut p = sporf(24);
        p.n_jobs = 2;
        let reference = Forest::fit(&p, x.view(), &y, None).unwrap();
        for _ in 0..3 {
            let cancel = crate::Cancel::new();
            let mut long = sporf(100_000);
            long.n_jobs = 2;
            // (a pool runs its queued work first: the other fit waits for the cancel)
            let (stopped, other) = std::thread::scope(|s| {
                let stopped = s.spawn(|| cancel.run(|| Forest::fit(&long, x.view(), &y, None)));
                let other = s.spawn(|| Forest::fit(&p, x.view(), &y, None).unwrap());
                std::thread::sleep(std::time::Duration::from_millis(100));
                cancel.cancel();
                (stopped.join().unwrap(), other.join().unwrap())
            });
            assert_eq!(stopped.err(), Some(Error::Cancelled));
            assert!(other == reference, "a cancel reached another call's trees");
        }
    }

    #[test]
    fn memory_tally_stops_growth_over_its_budget() {
        let (x, y) = data(500, 4, 9);
        let one = Forest::fit(&sporf(1), x.view(), &y, None).unwrap();
        let per_tree = crate::limits::tree_bytes(&one.trees()[0]);
        let tally = crate::limits::Tally::new(Some(per_tree * 10), 0, 50);
        assert!(!tally.over());
        tally.add(&one.trees()[0]);
        assert!(
            tally.over(),
            "50 trees of this size are over 10 trees' budget"
        );
        assert!(matches!(tally.error(), Error::ResourceLimit(_)));
        let roomy = crate::limits::Tally::new(Some(per_tree * 100), 0, 50);
        roomy.add(&one.trees()[0]);
        assert!(!roomy.over());
    }

    /// `x` as (indptr, indices, data) of CSR (`by_rows`) or CSC, storing its nonzeros
    /// and, where `explicit` says so, some of its zeros.
    fn compressed(
        x: &Array2<f32>,
        by_rows: bool,
        explicit: impl Fn(usize, usize) -> bool,
    ) -> (Vec<u64>, Vec<u32>, Vec<f32>) {
        let (n, p) = x.dim();
        let (major, minor) = if by_rows { (n, p) } else { (p, n) };
        let (mut ptr, mut idx, mut val) = (vec![0u64], Vec::new(), Vec::new());
        for a in 0..major {
            for b in 0..minor {
                let (i, j) = if by_rows { (a, b) } else { (b, a) };
                if x[[i, j]] != 0.0 || explicit(i, j) {
                    idx.push(b as u32);
                    val.push(x[[i, j]]);
                }
            }
            ptr.push(idx.len() as u64);
        }
        (ptr, idx, val)
    }

    #[test]
    fn sparse_x_grows_and_predicts_the_dense_forest_bit_for_bit() {
        use crate::sparse::{Layout, SparseView};
        // mostly zeros, an empty column (3) and an empty row (7), -0.0 entries stored
        let (mut x, _) = data(240, 12, 21);
        for ((i, j), v) in x.indexed_iter_mut() {
            if j == 3 || i == 7 || (i * 7 + j * 3) % 5 != 0 {
                *v = 0.0;
            }
            if (i + j) % 31 == 0 && *v == 0.0 {
                *v = -0.0;
            }
        }
        let y: Vec<f64> = x
            .rows()
            .into_iter()
            .map(|r| f64::from(u8::from(r[0] + r[1] - r[2] > 0.0)))
            .collect();
        let explicit = |i: usize, j: usize| (i * j) % 11 == 1;
        let csr = compressed(&x, true, explicit);
        let csc = compressed(&x, false, explicit);
        let csr = SparseView::new(Layout::Csr, (240, 12), &csr.0, &csr.1, &csr.2).unwrap();
        let csc = SparseView::new(Layout::Csc, (240, 12), &csc.0, &csc.1, &csc.2).unwrap();
        let kinds = [
            ProjectionKind::AxisAligned,
            ProjectionKind::SparseSigned {
                density: Density::FeatureCombinations(2.0),
                scaling: WeightScale::None,
            },
            ProjectionKind::ForestRc { n_combined: 3 },
            ProjectionKind::Gaussian,
        ];
        for kind in kinds {
            let mut p = sporf(6);
            p.projection = kind;
            p.oob = true;
            let dense = Forest::fit(&p, x.view(), &y, None).unwrap();
            for sparse in [csr, csc] {
                let f = Forest::fit(&p, sparse, &y, None).unwrap();
                assert_eq!(f.to_bytes().unwrap(), dense.to_bytes().unwrap());
                assert_eq!(f.oob(), dense.oob());
                for test in [csr, csc] {
                    assert_eq!(
                        dense.predict(x.view(), 1).unwrap(),
                        f.predict(test, 2).unwrap()
                    );
                    assert_eq!(dense.apply(x.view(), 1).unwrap(), f.apply(test, 1).unwrap());
                    assert_eq!(
                        dense.leaf_bounds(x.view(), 1).unwrap(),
                        f.leaf_bounds(test, 1).unwrap()
                    );
                }
            }
        }
        // a node whose rows are few against a long column takes the binary-search gather
        let mut p = sporf(3);
        p.max_depth = Some(40);
        p.bootstrap = false;
        let dense = Forest::fit(&p, x.view(), &y, None).unwrap();
        let f = Forest::fit(&p, csc, &y, None).unwrap();
        assert_eq!(f.to_bytes().unwrap(), dense.to_bytes().unwrap());
        let narrow = SparseView::new(Layout::Csr, (1, 5), &[0, 0], &[], &[]).unwrap();
        assert!(matches!(
            f.predict(narrow, 1),
            Err(Error::FeatureMismatch { .. })
        ));
    }

    #[test]
    fn multi_output_with_a_repeated_column_grows_the_single_output_trees() {
        // two identical outputs: every proxy is the single output's, so the same splits
        let (x, y) = data(300, 5, 4);
        let twice: Vec<f64> = y.iter().flat_map(|&v| [v, v]).collect();
        for (single, multi) in [
            (sporf(3), {
                let mut p = sporf(3);
                p.task = Task::MultiClassification {
                    n_classes: vec![2, 2],
                };
                p
            }),
            (
                ForestParams {
                    task: Task::Regression,
                    criterion: Criterion::SquaredError,
                    ..sporf(3)
                },
                ForestParams {
                    task: Task::MultiRegression { n_outputs: 2 },
                    criterion: Criterion::SquaredError,
                    ..sporf(3)
                },
            ),
        ] {
            let one = Forest::fit(&single, x.view(), &y, None).unwrap();
            let two = Forest::fit(&multi, x.view(), &twice, None).unwrap();
            for (a, b) in one.trees().iter().zip(two.trees()) {
                assert_eq!(a.left, b.left);
                assert_eq!(a.threshold, b.threshold);
                let k = a.n_outputs;
                for leaf in 0..a.n_leaves() {
                    let (va, vb) = (a.leaf_row(leaf), b.leaf_row(leaf));
                    assert_eq!(va, &vb[..k]);
                    assert_eq!(va, &vb[k..]);
                }
            }
            let p = two.predict(x.view(), 1).unwrap();
            assert_eq!(p.ncols(), 2 * one.n_outputs());
        }
    }

    #[test]
    fn multi_output_targets_are_checked() {
        let (x, y) = data(20, 3, 1);
        let mut p = sporf(2);
        p.task = Task::MultiClassification {
            n_classes: vec![2, 3],
        };
        // n values for n × 2 targets
        assert!(Forest::fit(&p, x.view(), &y, None).is_err());
        let mut bad: Vec<f64> = y.iter().flat_map(|&v| [v, 0.0]).collect();
        bad[1] = 3.0; // output 1 has 3 classes: codes 0..3
        assert!(Forest::fit(&p, x.view(), &bad, None).is_err());
        bad[1] = 2.0;
        assert!(Forest::fit(&p, x.view(), &bad, None).is_ok());
        let mut r = ForestParams::regression();
        r.criterion = Criterion::Poisson;
        r.n_estimators = 2;
        let neg: Vec<f64> = (0..20).map(|i| i as f64 - 1.0).collect();
        assert!(Forest::fit(&r, x.view(), &neg, None).is_err());
        assert!(Forest::fit(&r, x.view(), &[0.0; 20], None).is_err());
        assert!(Forest::fit(&r, x.view(), &neg[1..], None).is_err());
        let ok: Vec<f64> = (0..20).map(|i| (i % 4) as f64).collect();
        assert!(Forest::fit(&r, x.view(), &ok, None).is_ok());
    }

    #[test]
    fn public_types_are_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Forest>();
        assert_send_sync::<Tree>();
        assert_send_sync::<ForestParams>();
    }
}
