//! Shapley values of a forest's predictions (SHAP): for every row, how much each feature
//! moved the forest's output away from its expected value, for every tree family (axis,
//! sparse and dense oblique, patches, pooled filters, dictionaries, user projections) and
//! rotation ensembles.
//!
//! A forest's output is the mean of its trees' leaf values, so its Shapley values are the
//! mean of each tree's; each tree is explained exactly by one of two games.
//!
//! * **Path-dependent** ([`Game::PathDependent`], shap's `tree_path_dependent`, no
//!   background data). `v(S)` is the tree's output when only the features in `S` are
//!   known: at an inner node whose projection's features are all in `S` the row goes where
//!   its projected value sends it; at a node with some feature outside `S` it goes down
//!   both children, weighted by the fraction of the node's training weight each child
//!   received (its cover). For an axis-aligned tree this is exactly the game of Lundberg et
//!   al.'s TreeSHAP (2018, 2020). `v(∅)`, the expected value, is the cover-weighted mean
//!   of the leaves.
//!
//!   Exact algorithm (`path`): on one root-to-leaf path a leaf's weight is a product of
//!   node factors `r + (a - r)·[F ⊆ S]` (`r` the cover fraction, `a` whether the row goes
//!   that way, `F` the node's features). One-feature nodes fold into per-feature zero and
//!   one fractions (TreeSHAP's); nodes of several features multiply out into merged terms
//!   `c·[M ⊆ S]`. Owen's formula — a feature's Shapley value is the integral over
//!   `t ∈ [0, 1]` of the derivative of the game's multilinear extension at `(t, …, t)` —
//!   then costs a Gauss-Legendre rule exact for the path's degree: for an axis tree
//!   `O(D)` a feature and leaf (`D` distinct features on the path), TreeSHAP's order; an
//!   oblique path costs its terms, at most [`Limits::max_terms`] (up to two to the power
//!   of its several-feature splits: the game is a product of AND gates over shared
//!   features). No algorithm polynomial in the tree can do better unless P = #P: the
//!   values of one-path trees with two-feature splits count a graph's independent sets
//!   (the test `the_oblique_path_games_values_count_independent_sets`, and
//!   `docs/explain.md`).
//!
//!   Interaction values ([`Forest::shap_interaction_values`], shap's
//!   `shap_interaction_values`) are the mixed derivatives' integrals on the same rule.
//!
//! * **Interventional** ([`Game::Interventional`], shap's `interventional`).
//!   `v(S) = mean_b f(x_S, b_rest)` over background rows `b`: the hybrid row takes the
//!   features in `S` from `x` and the rest from `b`, and every projection (oblique, patch
//!   or pooled) is evaluated on the hybrid row itself. For one `(x, b)` pair the exact
//!   algorithm (`cells`) walks the tree deciding, at each node, only the features whose
//!   membership in `S` changes the side the hybrid row takes there; every decided set
//!   reaching a leaf is a cube `[A ⊆ S, B ∩ S = ∅]` whose Shapley values are closed-form
//!   (`(|A|-1)!|B|!/(|A|+|B|)!` to each feature of `A`, minus `|A|!(|B|-1)!/(|A|+|B|)!` to
//!   each of `B`). For an axis tree every node decides at most one feature and the cubes
//!   are the leaves the hybrids reach, as in shap's algorithm; an oblique node decides at
//!   most [`Limits::max_node_features`] at once, and a pair's cells and evaluated sides
//!   number at most [`Limits::max_terms`].
//!
//! Where an exact computation would exceed those bounds, that one tree's values for that
//! row (and background row) are estimated instead (`estimate`): antithetic permutation
//! sampling of the same game, unbiased, whose sampling variance is reported
//! ([`Shap::std_err`]) and counted ([`Shap::n_estimated`]). Sampled or exact, the values
//! of a row add up to its prediction minus the expected value (local accuracy), and a
//! feature no split uses gets exactly 0.
//!
//! A rotation ensemble ([`shap_values_rotated`]) is explained on its original features:
//! its trees read `scaled @ Q`, so each split on a rotated coordinate is an oblique split
//! on the scaled features with a nonzero loading in it, evaluated exactly as the ensemble
//! computes it (the per-feature scaling keeps a feature known or unknown).
//!
//! Rows are explained in parallel, each by one thread in tree order, so the values do not
//! depend on the number of threads; the estimates' random streams are keyed by the row,
//! tree and background indices.

mod cells;
mod estimate;
mod interactions;
mod path;

pub use interactions::{shap_interaction_values_rotated, Interactions};

use crate::alloc;
use crate::cancel;
use crate::error::{Error, Result};
use crate::forest::Forest;
use crate::projection::CompactDescriptors;
use crate::threads::{n_threads, thread_pool};
use crate::tree::Tree;
use ndarray::{Array3, ArrayView2};
use rayon::prelude::*;

/// Which game's Shapley values [`Forest::shap_values`] computes.
#[derive(Clone, Copy, Debug)]
pub enum Game<'a> {
    /// Features outside the coalition follow the training cover (no background data).
    PathDependent,
    /// Features outside the coalition take each background row's values in turn.
    Interventional {
        /// Background rows (n_background × n_features), at least one.
        background: ArrayView2<'a, f32>,
    },
}

/// The bounds beyond which one tree's values for a row are estimated, not computed
/// exactly.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Terms one exact computation may hold: the terms of a path (path-dependent), or the
    /// cells reached and hybrid sides evaluated for one (row, background row) pair
    /// (interventional).
    pub max_terms: usize,
    /// Undecided features an interventional node may decide at once (it evaluates
    /// `2^k` hybrid sides).
    pub max_node_features: usize,
    /// Permutations (in antithetic pairs) of an estimate.
    pub n_permutations: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_terms: 1 << 14,
            max_node_features: 10,
            n_permutations: 64,
        }
    }
}

/// Shapley values of a forest's outputs.
#[derive(Clone, Debug)]
pub struct Shap {
    /// `values[[i, j, c]]`: feature `j`'s share of row `i`'s output `c` (n × p × outputs).
    pub values: Array3<f64>,
    /// The game's value of the empty coalition, per output: the cover-weighted mean leaf
    /// (path-dependent) or the mean prediction over the background (interventional).
    pub expected_value: Vec<f64>,
    /// Standard errors of the values, when some were estimated (zero where exact).
    pub std_err: Option<Array3<f64>>,
    /// (row, tree) pairs — (row, tree, background row) triples for the interventional
    /// game — whose values were estimated.
    pub n_estimated: u64,
}

/// How a tree reads the explained features.
#[derive(Clone, Copy)]
pub(crate) enum Input<'f> {
    /// Directly (through its family's descriptors, if compact).
    Direct(Option<&'f dyn CompactDescriptors>),
    /// Through a rotation `Q` (p × p, row-major): the tree's feature `j` is the float32 of
    /// `Σ_l s_l Q[l, j]`, summed in float64 in feature order over the nonzero weights (as
    /// a rotation ensemble computes its trees' input from the scaled rows `s`).
    Rotated(&'f [f64]),
}

/// What one tree brings to every explanation: each inner node's distinct features.
pub(crate) struct Prepared<'f> {
    tree: &'f Tree,
    input: Input<'f>,
    /// Features of the explained rows.
    p: usize,
    /// Offsets into `feats` per node (`n_nodes + 1`; leaves have none).
    feat_ptr: Vec<u32>,
    /// Distinct features of each inner node's projection, ascending.
    feats: Vec<u32>,
    /// The fraction of its parent's training weight each node received (1 at the root;
    /// half each where the parent had none).
    frac: Vec<f64>,
    /// Features some split uses, ascending.
    used: Vec<u32>,
    /// The most distinct features a root-to-leaf path can meet: at most the used
    /// features and the sum of the node feature counts along the longest path.
    max_path_features: usize,
}

impl<'f> Prepared<'f> {
    fn new(tree: &'f Tree, input: Input<'f>, p: usize) -> Self {
        let descriptors = match input {
            Input::Direct(d) => d,
            Input::Rotated(_) => None,
        };
        let n = tree.n_nodes();
        let (mut feat_ptr, mut feats) = (Vec::with_capacity(n + 1), Vec::new());
        let mut node_feats = Vec::new();
        let mut seen = vec![false; p];
        feat_ptr.push(0u32);
        for node in 0..n {
            if !tree.is_leaf(node) {
                node_feats.clear();
                tree.proj(node, descriptors).for_each(|j, _| match input {
                    Input::Direct(_) => node_feats.push(j as u32),
                    Input::Rotated(q) => {
                        node_feats.extend((0..p).filter(|&l| q[l * p + j] != 0.0).map(|l| l as u32))
                    }
                });
                node_feats.sort_unstable();
                node_feats.dedup();
                for &j in &node_feats {
                    seen[j as usize] = true;
                }
                feats.extend_from_slice(&node_feats);
            }
            feat_ptr.push(feats.len() as u32);
        }
        let used: Vec<u32> = (0..p as u32).filter(|&j| seen[j as usize]).collect();
        // per node: the feature count of the nodes above it (parents come first)
        let mut above = vec![0usize; n];
        let mut max_path = 0;
        for node in 0..n {
            if tree.is_leaf(node) {
                max_path = max_path.max(above[node]);
            } else {
                let k = above[node] + (feat_ptr[node + 1] - feat_ptr[node]) as usize;
                above[tree.left[node] as usize] = k;
                above[tree.right[node] as usize] = k;
            }
        }
        let mut frac = vec![1.0; n];
        let w = &tree.weighted_n_node_samples;
        for node in (0..n).filter(|&i| !tree.is_leaf(i)) {
            let (l, r) = (tree.left[node] as usize, tree.right[node] as usize);
            let total = w[l] + w[r];
            (frac[l], frac[r]) = if total > 0.0 {
                (w[l] / total, w[r] / total)
            } else {
                (0.5, 0.5)
            };
        }
        let max_path_features = max_path.min(used.len());
        Prepared {
            tree,
            input,
            p,
            feat_ptr,
            feats,
            frac,
            used,
            max_path_features,
        }
    }

    /// The distinct features of node `node`.
    #[inline]
    fn features(&self, node: usize) -> &[u32] {
        &self.feats[self.feat_ptr[node] as usize..self.feat_ptr[node + 1] as usize]
    }

    /// The child a row whose feature `j` is `get(j)` goes to from inner node `node`.
    #[inline]
    fn child_by(&self, node: usize, get: impl Fn(usize) -> f64) -> usize {
        let v = match self.input {
            // the rows came as float32: the cast back is exact
            Input::Direct(d) => self.tree.proj(node, d).value_by(|j| get(j) as f32),
            Input::Rotated(q) => {
                let p = self.p;
                self.tree.proj(node, None).value_by(|j| {
                    let mut s = 0.0f64;
                    for l in 0..p {
                        let w = q[l * p + j];
                        if w != 0.0 {
                            s += get(l) * w;
                        }
                    }
                    s as f32
                })
            }
        };
        self.tree.child(node, v)
    }

    /// The leaf values of the leaf a row whose feature `j` is `get(j)` reaches.
    fn leaf_value_by(&self, get: impl Fn(usize) -> f64) -> &'f [f64] {
        let mut node = 0;
        while !self.tree.is_leaf(node) {
            node = self.child_by(node, &get);
        }
        self.tree.leaf_value(node)
    }

    /// The path-dependent game's `v(∅)`: the leaves' values weighted by the product of
    /// the cover fractions on their paths.
    fn expected_value(&self, k: usize) -> Vec<f64> {
        let t = self.tree;
        let mut ev = vec![0.0; t.n_nodes() * k];
        for node in (0..t.n_nodes()).rev() {
            if t.is_leaf(node) {
                ev[node * k..(node + 1) * k].copy_from_slice(t.leaf_value(node));
                continue;
            }
            let (l, r) = (t.left[node] as usize, t.right[node] as usize);
            let (fl, fr) = (self.frac[l], self.frac[r]);
            for c in 0..k {
                ev[node * k + c] = fl * ev[l * k + c] + fr * ev[r * k + c];
            }
        }
        ev.truncate(k);
        ev
    }
}

/// One tree's values for one row, gathered apart until the tree is done (an exact
/// computation that runs out of bounds is discarded and estimated instead).
pub(crate) struct Sink {
    k: usize,
    acc: Vec<f64>,
    touched: Vec<u32>,
    mark: Vec<bool>,
}

impl Sink {
    fn new(p: usize, k: usize) -> Self {
        Sink {
            k,
            acc: vec![0.0; p * k],
            touched: Vec::new(),
            mark: vec![false; p],
        }
    }

    /// Adds `weight × values` to feature `j`.
    #[inline]
    fn add(&mut self, j: usize, weight: f64, values: &[f64]) {
        if !self.mark[j] {
            self.mark[j] = true;
            self.touched.push(j as u32);
        }
        for (a, v) in self.acc[j * self.k..(j + 1) * self.k]
            .iter_mut()
            .zip(values)
        {
            *a += weight * v;
        }
    }

    /// Moves the gathered values into `out` (p × k) and empties the sink.
    fn commit(&mut self, out: &mut [f64]) {
        let k = self.k;
        for &j in &self.touched {
            let j = j as usize;
            for c in 0..k {
                out[j * k + c] += self.acc[j * k + c];
                self.acc[j * k + c] = 0.0;
            }
            self.mark[j] = false;
        }
        self.touched.clear();
    }

    /// Drops what was gathered.
    fn discard(&mut self) {
        let k = self.k;
        for &j in &self.touched {
            let j = j as usize;
            self.acc[j * k..(j + 1) * k].fill(0.0);
            self.mark[j] = false;
        }
        self.touched.clear();
    }
}

/// An exact computation ran out of its bounds.
pub(crate) struct TooBig;

/// Per-thread buffers of one explanation.
struct Scratch {
    sink: Sink,
    path: path::PathScratch,
    cells: cells::CellScratch,
    est: estimate::EstimateScratch,
    /// The row.
    row: Vec<f64>,
    /// Sampling variances of the row's estimated values (p × k), when some were.
    var: Vec<f64>,
}

impl Forest {
    /// Shapley values of every row of `x` under `game` (see the [`crate::explain`] module
    /// for the games and their exact algorithms), with the default [`Limits`].
    ///
    /// # Errors
    /// As [`Forest::shap_values_with`].
    pub fn shap_values(&self, x: ArrayView2<'_, f32>, game: Game<'_>, n_jobs: i64) -> Result<Shap> {
        self.shap_values_with(x, game, Limits::default(), n_jobs)
    }

    /// [`Forest::shap_values`] with explicit bounds for the exact algorithms.
    ///
    /// # Errors
    /// [`Error::FeatureMismatch`] for `x` or a background with another number of columns
    /// than the forest's features; [`Error::InvalidInput`] for an empty background,
    /// infinite values, or zero bounds; [`Error::OutOfMemory`] when the n × p × outputs
    /// result cannot be allocated; [`Error::Cancelled`]; `n_jobs == 0`.
    pub fn shap_values_with(
        &self,
        x: ArrayView2<'_, f32>,
        game: Game<'_>,
        limits: Limits,
        n_jobs: i64,
    ) -> Result<Shap> {
        let p = self.n_features();
        // the rows as float64 once (exact), then checked
        let x = x.mapv(f64::from);
        check_rows(x.view(), p, "x")?;
        let background = match game {
            Game::Interventional { background } => {
                let b = background.mapv(f64::from);
                check_rows(b.view(), p, "the background")?;
                Some(b)
            }
            Game::PathDependent => None,
        };
        let trees: Vec<Prepared<'_>> = self
            .trees()
            .iter()
            .map(|t| Prepared::new(t, Input::Direct(self.descriptors()), p))
            .collect();
        explain(
            &trees,
            self.n_outputs(),
            x.view(),
            background.as_ref().map(|b| b.view()),
            limits,
            n_jobs,
        )
    }
}

/// The Shapley values of a rotation ensemble's mean over all its trees (`forests[k]`'s
/// trees read `scaled @ rotations[k]`, `rotations` being the p × p matrices one after
/// the other), on the original features: `scaled` holds the explained rows after the
/// ensemble's per-feature scaling, which leaves a feature known or unknown as it was.
///
/// # Errors
/// As [`Forest::shap_values_with`]; [`Error::InvalidInput`] for rotations of the wrong
/// size.
pub fn shap_values_rotated(
    forests: &[&Forest],
    rotations: &[f64],
    scaled: ArrayView2<'_, f64>,
    background: Option<ArrayView2<'_, f64>>,
    limits: Limits,
    n_jobs: i64,
) -> Result<Shap> {
    let p = scaled.ncols();
    let (trees, k) = rotated_trees(forests, rotations, p)?;
    check_rows(scaled, p, "x")?;
    if let Some(b) = background {
        check_rows(b, p, "the background")?;
    }
    explain(&trees, k, scaled, background, limits, n_jobs)
}

/// The trees of a rotation ensemble's forests, each reading its rotation of `p` scaled
/// features, and their outputs.
fn rotated_trees<'f>(
    forests: &[&'f Forest],
    rotations: &'f [f64],
    p: usize,
) -> Result<(Vec<Prepared<'f>>, usize)> {
    if forests.is_empty() || rotations.len() != forests.len() * p * p {
        return Err(Error::InvalidInput(format!(
            "{} forests need as many {p} x {p} rotations, got {} values",
            forests.len(),
            rotations.len()
        )));
    }
    let k = forests[0].n_outputs();
    let mut trees = Vec::new();
    for (r, f) in forests.iter().enumerate() {
        if f.n_features() != p || f.n_outputs() != k {
            return Err(Error::InvalidInput(
                "every rotation's forest needs the rows' features and the same outputs".into(),
            ));
        }
        let q = &rotations[r * p * p..(r + 1) * p * p];
        trees.extend(
            f.trees()
                .iter()
                .map(|t| Prepared::new(t, Input::Rotated(q), p)),
        );
    }
    Ok((trees, k))
}

/// The Shapley values of the mean of `trees` (outputs `k` each) for the rows `x`: the
/// path-dependent game, or the interventional one against `background`.
fn explain(
    trees: &[Prepared<'_>],
    k: usize,
    x: ArrayView2<'_, f64>,
    background: Option<ArrayView2<'_, f64>>,
    limits: Limits,
    n_jobs: i64,
) -> Result<Shap> {
    let p = x.ncols();
    if limits.max_terms == 0 || limits.n_permutations == 0 {
        return Err(Error::InvalidInput(
            "max_terms and n_permutations must be at least 1".into(),
        ));
    }
    let background = match background {
        Some(b) if b.nrows() == 0 => {
            return Err(Error::InvalidInput(
                "the background needs at least one row".into(),
            ))
        }
        Some(b) => Some(b.as_standard_layout().to_owned()),
        None => None,
    };
    let n_trees = trees.len().max(1) as f64;
    let expected_value = expected_value(trees, k, background.as_ref().map(|b| b.view()));
    let n = x.nrows();
    let width = p * k;
    check_output(n, width, "the Shapley values")?;
    let mut values = alloc::table::<f64>(n, width, "the Shapley values")?;
    let bg = background.as_ref().map(|b| b.view());
    let scale = 1.0 / (n_trees * bg.map_or(1, |b| b.nrows()) as f64);
    let variances = std::sync::Mutex::new(Vec::<(usize, Vec<f64>)>::new());
    let estimated = std::sync::atomic::AtomicU64::new(0);
    let ctx = Context {
        trees,
        background: bg,
        limits,
        p,
        k,
        weights: cells::CellWeights::new(p),
    };
    let explain_row = |s: &mut Scratch, (i, out): (usize, &mut [f64])| {
        if cancel::requested() {
            return;
        }
        s.row.clear();
        s.row.extend(x.row(i).iter().copied());
        let n_est = ctx.row(i, s, out);
        for v in out.iter_mut() {
            *v *= scale;
        }
        if n_est > 0 {
            estimated.fetch_add(n_est, std::sync::atomic::Ordering::Relaxed);
            let var: Vec<f64> = s.var.iter().map(|v| v * scale * scale).collect();
            s.var.fill(0.0);
            variances
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((i, var));
        }
    };
    let init = || Scratch {
        sink: Sink::new(p, k),
        path: path::PathScratch::new(p),
        cells: cells::CellScratch::new(p),
        est: estimate::EstimateScratch::new(p, k),
        row: Vec::with_capacity(p),
        var: vec![0.0; width],
    };
    rows_in_parallel(&mut values, width, n_jobs, init, explain_row)?;
    cancel::check()?;
    let values =
        Array3::from_shape_vec((n, p, k), values).map_err(|e| Error::Internal(e.to_string()))?;
    let variances = variances.into_inner().unwrap_or_else(|e| e.into_inner());
    let std_err = (!variances.is_empty()).then(|| {
        let mut se = Array3::<f64>::zeros((n, p, k));
        for (i, var) in variances {
            for (s, v) in se.index_axis_mut(ndarray::Axis(0), i).iter_mut().zip(var) {
                *s = v.sqrt();
            }
        }
        se
    });
    Ok(Shap {
        values,
        expected_value,
        std_err,
        n_estimated: estimated.into_inner(),
    })
}

/// Runs `f` on every row of `values` (`width` values each) with a per-thread state from
/// `init`: rows in parallel over `n_jobs` threads, each row by one thread, or in order on
/// one; the cancel token carried into the pool's threads.
///
/// # Errors
/// As [`crate::threads::n_threads`] and the pool's creation.
fn rows_in_parallel<S>(
    values: &mut [f64],
    width: usize,
    n_jobs: i64,
    init: impl Fn() -> S + Sync + Send,
    f: impl Fn(&mut S, (usize, &mut [f64])) + Sync + Send,
) -> Result<()> {
    if width == 0 {
        return Ok(());
    }
    let threads = n_threads(Some(n_jobs))?;
    if threads == 1 || values.len() < 2 * width {
        let mut s = init();
        values
            .chunks_mut(width)
            .enumerate()
            .for_each(|item| f(&mut s, item));
    } else {
        let carried = cancel::carry();
        cancel::install(&*thread_pool(threads)?, || {
            values
                .par_chunks_mut(width)
                .enumerate()
                .with_min_len(1)
                .for_each_init(&init, |s, item| carried.run(|| f(s, item)))
        });
    }
    Ok(())
}

/// Refuses rows of the wrong width or with infinite values (NaN is a missing value).
fn check_rows(x: ArrayView2<'_, f64>, p: usize, what: &str) -> Result<()> {
    if x.ncols() != p {
        return Err(Error::FeatureMismatch {
            expected: p,
            got: x.ncols(),
        });
    }
    if x.iter().any(|v| v.is_infinite()) {
        return Err(Error::InvalidInput(format!(
            "{what} contains infinity (NaN is read as a missing value)"
        )));
    }
    Ok(())
}

/// The game's value of the empty coalition for the mean of `trees`: the cover-weighted
/// mean leaf (path-dependent), or the mean output over the `background` rows.
fn expected_value(
    trees: &[Prepared<'_>],
    k: usize,
    background: Option<ArrayView2<'_, f64>>,
) -> Vec<f64> {
    let n_trees = trees.len().max(1) as f64;
    let mut ev = vec![0.0; k];
    match background {
        None => {
            for t in trees {
                for (e, v) in ev.iter_mut().zip(t.expected_value(k)) {
                    *e += v / n_trees;
                }
            }
        }
        Some(b) => {
            let w = 1.0 / (n_trees * b.nrows() as f64);
            for row in b.rows() {
                for t in trees {
                    let leaf = t.leaf_value_by(|j| row[j]);
                    ev.iter_mut().zip(leaf).for_each(|(e, v)| *e += w * v);
                }
            }
        }
    }
    ev
}

/// Refuses an output of `n` rows of `width` float64 values over the memory limit
/// ([`crate::limits::memory_limit`]), naming its size: explain fewer rows a call.
///
/// # Errors
/// [`Error::ResourceLimit`].
pub(crate) fn check_output(n: usize, width: usize, what: &str) -> Result<()> {
    let bytes = (n as u64).saturating_mul(width as u64).saturating_mul(8);
    match crate::limits::budget_bytes() {
        Some(budget) if bytes > budget => Err(Error::ResourceLimit(format!(
            "{what} of {n} rows need {:.2} GiB, over the memory limit of {:.2} GiB; explain \
             the rows in batches, or raise the limit (obliqueforest.set_memory_limit)",
            bytes as f64 / (1u64 << 30) as f64,
            budget as f64 / (1u64 << 30) as f64
        ))),
        _ => Ok(()),
    }
}

/// What every row of one explanation shares.
struct Context<'a, 'f> {
    trees: &'a [Prepared<'f>],
    background: Option<ArrayView2<'a, f64>>,
    limits: Limits,
    p: usize,
    k: usize,
    weights: cells::CellWeights,
}

impl Context<'_, '_> {
    /// Row `i`'s unscaled values (the sum over trees, and background rows) into `out`;
    /// returns how many were estimated, their variances added to `s.var`.
    fn row(&self, i: usize, s: &mut Scratch, out: &mut [f64]) -> u64 {
        let mut n_est = 0u64;
        let x = std::mem::take(&mut s.row);
        for (t, tree) in self.trees.iter().enumerate() {
            if cancel::requested() {
                break; // the call returns Cancelled: a row may hold many trees' work
            }
            match self.background {
                None => {
                    if path::explain(tree, &x, self.limits, &mut s.path, &mut s.sink, None).is_ok()
                    {
                        s.sink.commit(out);
                    } else {
                        s.sink.discard();
                        let seed = estimate::seed(i, t, usize::MAX);
                        let g = estimate::PathGame { tree, x: &x };
                        s.est
                            .run(&g, seed, self.limits.n_permutations, out, &mut s.var);
                        n_est += 1;
                    }
                }
                Some(bg) => {
                    for (b, brow) in bg.rows().into_iter().enumerate() {
                        let brow = brow.as_slice().expect("standard layout");
                        let exact = cells::explain(
                            tree,
                            &x,
                            brow,
                            self.limits,
                            &self.weights,
                            &mut s.cells,
                            &mut s.sink,
                        );
                        if exact.is_ok() {
                            s.sink.commit(out);
                        } else {
                            s.sink.discard();
                            let g = estimate::HybridGame {
                                tree,
                                x: &x,
                                b: brow,
                            };
                            let seed = estimate::seed(i, t, b);
                            s.est
                                .run(&g, seed, self.limits.n_permutations, out, &mut s.var);
                            n_est += 1;
                        }
                    }
                }
            }
        }
        debug_assert_eq!(out.len(), self.p * self.k);
        s.row = x;
        n_est
    }
}

#[cfg(test)]
mod tests;
