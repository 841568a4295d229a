//! `_core.Forest` (a fitted forest: fit, predict and inspect, each X as dense or sparse),
//! `_core.ForestPart` (trees grown apart, joined later) and `_core.Progress`.

use super::convert::{from_value, weights_slice, XArg, XRef};
use super::params::PyForestParams;
use super::{bad, compute, compute_with, named, Count};
use crate::cancel::Cancel;
use crate::error::Error;
use crate::forest::Forest;
use crate::params::Task;
use crate::sparse::Features;
use numpy::{IntoPyArray, PyArray1, PyArray2, PyArray3, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// A counter of finished trees and a cancel switch, shared with another Python thread
/// during a fit (the thread that shows progress, or handles Ctrl-C for worker threads).
#[pyclass(module = "obliqueforest._core", frozen)]
pub(super) struct Progress {
    done: Arc<AtomicUsize>,
    cancel: Cancel,
}

#[pymethods]
impl Progress {
    #[new]
    fn new() -> Self {
        Progress {
            done: Arc::new(AtomicUsize::new(0)),
            cancel: Cancel::new(),
        }
    }
    #[getter]
    fn trees_done(&self) -> usize {
        self.done.load(Ordering::Relaxed)
    }
    /// Stops every fit using this object soon; they raise ForestError("cancelled").
    fn cancel(&self) {
        self.cancel.cancel();
    }
    #[getter]
    fn cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }
}

/// A fitted projection forest (see `_core.pyi`).
#[pyclass(name = "Forest", module = "obliqueforest._core")]
pub(super) struct PyForest {
    pub(super) inner: Forest,
}

/// The explain module's bounds, the defaults where not given.
fn explain_limits(
    max_terms: Option<usize>,
    n_permutations: Option<usize>,
) -> crate::explain::Limits {
    let mut limits = crate::explain::Limits::default();
    limits.max_terms = max_terms.unwrap_or(limits.max_terms);
    limits.n_permutations = n_permutations.unwrap_or(limits.n_permutations);
    limits
}

/// Shapley values, expected value, standard errors (where some were estimated) and the
/// estimated count, as Python takes them.
type ShapTuple<'py> = (
    Bound<'py, PyArray3<f64>>,
    Bound<'py, PyArray1<f64>>,
    Option<Bound<'py, PyArray3<f64>>>,
    u64,
);

/// [`crate::explain::Shap`] as Python takes it.
fn shap_tuple<'py>(py: Python<'py>, shap: crate::explain::Shap) -> ShapTuple<'py> {
    (
        shap.values.into_pyarray(py),
        shap.expected_value.into_pyarray(py),
        shap.std_err.map(|e| e.into_pyarray(py)),
        shap.n_estimated,
    )
}

/// Shapley values of a rotation ensemble on its original features
/// (`explain::shap_values_rotated`): `forests[k]` reads `scaled @ rotations[k]`.
#[pyfunction]
#[pyo3(signature = (forests, rotations, scaled, background=None, n_jobs=1, max_terms=None, n_permutations=None))]
#[allow(clippy::type_complexity, clippy::too_many_arguments)]
pub(super) fn shap_values_rotated<'py>(
    py: Python<'py>,
    forests: Vec<PyRef<'py, PyForest>>,
    rotations: numpy::PyReadonlyArray3<'py, f64>,
    scaled: PyReadonlyArray2<'py, f64>,
    background: Option<PyReadonlyArray2<'py, f64>>,
    n_jobs: i64,
    max_terms: Option<usize>,
    n_permutations: Option<usize>,
) -> PyResult<ShapTuple<'py>> {
    let limits = explain_limits(max_terms, n_permutations);
    let inner: Vec<&Forest> = forests.iter().map(|f| &f.inner).collect();
    let rotations: Vec<f64> = rotations.as_array().iter().copied().collect();
    let (x, bg) = (scaled.as_array(), background.as_ref().map(|b| b.as_array()));
    let shap = compute(py, || {
        crate::explain::shap_values_rotated(&inner, &rotations, x, bg, limits, n_jobs)
    })?;
    Ok(shap_tuple(py, shap))
}

/// Interaction values of a rotation ensemble on its original features
/// (`explain::shap_interaction_values_rotated`); returns (values (n, p, p, outputs),
/// expected value).
#[pyfunction]
#[pyo3(signature = (forests, rotations, scaled, n_jobs=1, max_terms=None))]
#[allow(clippy::type_complexity)]
pub(super) fn shap_interaction_values_rotated<'py>(
    py: Python<'py>,
    forests: Vec<PyRef<'py, PyForest>>,
    rotations: numpy::PyReadonlyArray3<'py, f64>,
    scaled: PyReadonlyArray2<'py, f64>,
    n_jobs: i64,
    max_terms: Option<usize>,
) -> PyResult<(Bound<'py, numpy::PyArray4<f64>>, Bound<'py, PyArray1<f64>>)> {
    let limits = explain_limits(max_terms, None);
    let inner: Vec<&Forest> = forests.iter().map(|f| &f.inner).collect();
    let rotations: Vec<f64> = rotations.as_array().iter().copied().collect();
    let x = scaled.as_array();
    let out = compute(py, || {
        crate::explain::shap_interaction_values_rotated(&inner, &rotations, x, limits, n_jobs)
    })?;
    Ok((
        out.values.into_pyarray(py),
        out.expected_value.into_pyarray(py),
    ))
}

/// The X's of a batched call as the core's features (a malformed sparse one refused).
fn batch_features(views: Vec<XRef<'_>>) -> Result<Vec<Features<'_>>, Error> {
    views.into_iter().map(XRef::features).collect()
}

impl Progress {
    /// The tree counter and the cancel token a fit shares with `progress` (a private
    /// pair when there is none).
    fn parts(progress: Option<PyRef<'_, Progress>>) -> (Option<Arc<AtomicUsize>>, Cancel) {
        progress
            .map(|p| (Some(p.done.clone()), p.cancel.clone()))
            .unwrap_or_default()
    }
}

#[pymethods]
impl PyForest {
    #[staticmethod]
    #[pyo3(signature = (x, y, sample_weight, params, progress=None))]
    fn fit(
        py: Python<'_>,
        x: XArg<'_>,
        y: PyReadonlyArray1<'_, f64>,
        sample_weight: Option<PyReadonlyArray1<'_, f64>>,
        params: PyRef<'_, PyForestParams>,
        progress: Option<PyRef<'_, Progress>>,
    ) -> PyResult<PyForest> {
        let params = params.inner.clone();
        let (counter, cancel) = Progress::parts(progress);
        let (x, y) = (
            x.view()?,
            y.as_slice().map_err(|_| bad("y", "must be contiguous"))?,
        );
        let w = weights_slice(&sample_weight)?;
        let inner = compute_with(py, &cancel, || {
            Forest::fit_with_progress(&params, x.features()?, y, w, counter.as_deref())
        })?;
        Ok(PyForest { inner })
    }

    #[staticmethod]
    #[pyo3(signature = (xs, y, sample_weight, params, progress=None))]
    fn fit_many(
        py: Python<'_>,
        xs: Vec<XArg<'_>>,
        y: PyReadonlyArray1<'_, f64>,
        sample_weight: Option<PyReadonlyArray1<'_, f64>>,
        params: Vec<PyRef<'_, PyForestParams>>,
        progress: Option<PyRef<'_, Progress>>,
    ) -> PyResult<Vec<PyForest>> {
        let params: Vec<_> = params.iter().map(|p| p.inner.clone()).collect();
        let (counter, cancel) = Progress::parts(progress);
        let views = xs.iter().map(XArg::view).collect::<PyResult<Vec<_>>>()?;
        let y = y.as_slice().map_err(|_| bad("y", "must be contiguous"))?;
        let w = weights_slice(&sample_weight)?;
        let forests = compute_with(py, &cancel, || {
            Forest::fit_many(&params, batch_features(views)?, y, w, counter.as_deref())
        })?;
        Ok(forests
            .into_iter()
            .map(|inner| PyForest { inner })
            .collect())
    }

    /// Grows `n_more` further trees as `params` says (a warm start after `set_params`):
    /// `Forest::grow_more_with`, on a forest the caller copied first.
    #[pyo3(signature = (x, y, sample_weight, params, n_more, progress=None))]
    #[allow(clippy::too_many_arguments)] // fit's arguments and the tree count
    fn fit_more(
        &mut self,
        py: Python<'_>,
        x: XArg<'_>,
        y: PyReadonlyArray1<'_, f64>,
        sample_weight: Option<PyReadonlyArray1<'_, f64>>,
        params: PyRef<'_, PyForestParams>,
        n_more: &Bound<'_, PyAny>,
        progress: Option<PyRef<'_, Progress>>,
    ) -> PyResult<()> {
        let params = params.inner.clone();
        let n_more = named::<Count>(n_more, "n_more")?.0;
        let (counter, cancel) = Progress::parts(progress);
        let (x, y) = (
            x.view()?,
            y.as_slice().map_err(|_| bad("y", "must be contiguous"))?,
        );
        let w = weights_slice(&sample_weight)?;
        let inner = &mut self.inner;
        compute_with(py, &cancel, || {
            inner.grow_more_with(&params, x.features()?, y, w, n_more, counter.as_deref())
        })
    }

    #[staticmethod]
    #[pyo3(signature = (forests, xs, y, sample_weight, n_more, progress=None))]
    fn fit_more_many(
        py: Python<'_>,
        mut forests: Vec<PyRefMut<'_, PyForest>>,
        xs: Vec<XArg<'_>>,
        y: PyReadonlyArray1<'_, f64>,
        sample_weight: Option<PyReadonlyArray1<'_, f64>>,
        n_more: Vec<usize>,
        progress: Option<PyRef<'_, Progress>>,
    ) -> PyResult<()> {
        let (counter, cancel) = Progress::parts(progress);
        let views = xs.iter().map(XArg::view).collect::<PyResult<Vec<_>>>()?;
        let y = y.as_slice().map_err(|_| bad("y", "must be contiguous"))?;
        let w = weights_slice(&sample_weight)?;
        let mut inner: Vec<&mut Forest> = forests.iter_mut().map(|f| &mut f.inner).collect();
        compute_with(py, &cancel, || {
            let xs = batch_features(views)?;
            Forest::grow_more_many(&mut inner, xs, y, w, &n_more, counter.as_deref())
        })
    }

    /// An independent copy (a warm start grows one while other threads predict).
    fn copy(&self, py: Python<'_>) -> PyForest {
        let inner = &self.inner;
        PyForest {
            inner: py.detach(|| inner.clone()),
        }
    }

    fn truncate(&mut self, n_trees: usize) -> PyResult<()> {
        if n_trees == 0 {
            return Err(bad("n_trees", "a forest keeps at least one tree"));
        }
        self.inner.truncate(n_trees);
        Ok(())
    }

    fn select_trees(&self, indices: PyReadonlyArray1<'_, i64>) -> PyResult<PyForest> {
        let idx = indices
            .as_array()
            .iter()
            .map(|&i| usize::try_from(i).map_err(|_| bad("indices", "must be >= 0")))
            .collect::<PyResult<Vec<_>>>()?;
        Ok(PyForest {
            inner: self.inner.select(&idx)?,
        })
    }

    /// The forest's projection family: `(tag, args)`, the arguments that
    /// `_core.Projection.family(tag, **args)` builds the same family from (integer
    /// sequences as int64 arrays, float ones as float64 arrays).
    fn projection_family<'py>(&self, py: Python<'py>) -> PyResult<(String, Bound<'py, PyDict>)> {
        let projection = &self.inner.params().projection;
        let d = PyDict::new(py);
        for (k, v) in projection.get().args().iter() {
            d.set_item(k, from_value(py, v)?)?;
        }
        Ok((projection.tag().to_string(), d))
    }

    #[getter]
    fn n_jobs(&self) -> i64 {
        self.inner.params().growth.n_jobs
    }
    /// Memory held by the trees, their prediction layout and kept leaf values, in bytes.
    #[getter]
    fn n_bytes(&self) -> u64 {
        self.inner.n_bytes()
    }
    #[getter]
    fn n_trees(&self) -> usize {
        self.inner.trees().len()
    }
    #[getter]
    fn n_features(&self) -> usize {
        self.inner.n_features()
    }
    #[getter]
    fn n_outputs(&self) -> usize {
        self.inner.n_outputs()
    }
    /// Target columns (scikit-learn's `n_outputs_`).
    #[getter]
    fn n_targets(&self) -> usize {
        self.inner.params().task.n_targets()
    }
    /// The number of classes of each target column; None for regression.
    #[getter]
    fn class_counts(&self) -> Option<Vec<usize>> {
        self.inner.params().task.class_counts()
    }
    #[getter]
    fn is_classifier(&self) -> bool {
        self.inner.params().task.is_classification()
    }

    #[pyo3(signature = (x, n_jobs=1))]
    fn predict<'py>(
        &self,
        py: Python<'py>,
        x: XArg<'py>,
        n_jobs: i64,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let x = x.view()?;
        Ok(compute(py, || self.inner.predict(x.features()?, n_jobs))?.into_pyarray(py))
    }

    /// scikit-learn's `IsolationForest.score_samples` of a forest without targets
    /// (`Forest::score_samples`).
    #[pyo3(signature = (x, n_jobs=1))]
    fn score_samples<'py>(
        &self,
        py: Python<'py>,
        x: XArg<'py>,
        n_jobs: i64,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let x = x.view()?;
        Ok(compute(py, || self.inner.score_samples(x.features()?, n_jobs))?.into_pyarray(py))
    }

    #[pyo3(signature = (x, n_jobs=1))]
    fn predict_trees<'py>(
        &self,
        py: Python<'py>,
        x: XArg<'py>,
        n_jobs: i64,
    ) -> PyResult<Bound<'py, PyArray3<f64>>> {
        let x = x.view()?;
        Ok(compute(py, || self.inner.predict_trees(x.features()?, n_jobs))?.into_pyarray(py))
    }

    /// Shapley values (`Forest::shap_values_with`): the path-dependent game without a
    /// background, else the interventional one; returns (values (n, p, outputs), expected
    /// value (outputs,), standard errors or None, estimated count).
    #[pyo3(signature = (x, background=None, n_jobs=1, max_terms=None, n_permutations=None))]
    #[allow(clippy::type_complexity)]
    fn shap_values<'py>(
        &self,
        py: Python<'py>,
        x: PyReadonlyArray2<'py, f32>,
        background: Option<PyReadonlyArray2<'py, f32>>,
        n_jobs: i64,
        max_terms: Option<usize>,
        n_permutations: Option<usize>,
    ) -> PyResult<ShapTuple<'py>> {
        let limits = explain_limits(max_terms, n_permutations);
        let (x, bg) = (x.as_array(), background.as_ref().map(|b| b.as_array()));
        let game = match bg {
            None => crate::explain::Game::PathDependent,
            Some(background) => crate::explain::Game::Interventional { background },
        };
        let shap = compute(py, || self.inner.shap_values_with(x, game, limits, n_jobs))?;
        Ok(shap_tuple(py, shap))
    }

    /// Shapley interaction values of the path-dependent game
    /// (`Forest::shap_interaction_values`): (values (n, p, p, outputs), expected value).
    #[pyo3(signature = (x, n_jobs=1, max_terms=None))]
    #[allow(clippy::type_complexity)]
    fn shap_interaction_values<'py>(
        &self,
        py: Python<'py>,
        x: PyReadonlyArray2<'py, f32>,
        n_jobs: i64,
        max_terms: Option<usize>,
    ) -> PyResult<(Bound<'py, numpy::PyArray4<f64>>, Bound<'py, PyArray1<f64>>)> {
        let limits = explain_limits(max_terms, None);
        let x = x.as_array();
        let out = compute(py, || self.inner.shap_interaction_values(x, limits, n_jobs))?;
        Ok((
            out.values.into_pyarray(py),
            out.expected_value.into_pyarray(py),
        ))
    }

    #[pyo3(signature = (x, n_jobs=1))]
    fn apply<'py>(
        &self,
        py: Python<'py>,
        x: XArg<'py>,
        n_jobs: i64,
    ) -> PyResult<Bound<'py, PyArray2<i64>>> {
        let x = x.view()?;
        Ok(compute(py, || self.inner.apply(x.features()?, n_jobs))?.into_pyarray(py))
    }

    #[pyo3(signature = (x, n_jobs=1))]
    fn apply_leaves<'py>(
        &self,
        py: Python<'py>,
        x: XArg<'py>,
        n_jobs: i64,
    ) -> PyResult<Bound<'py, PyArray2<i64>>> {
        let x = x.view()?;
        Ok(compute(py, || self.inner.apply_leaves(x.features()?, n_jobs))?.into_pyarray(py))
    }

    /// Conditional quantiles, shape (n_samples, n_outputs, len(quantiles))
    /// (`Forest::predict_quantiles`); with `oob`, the out-of-bag quantiles of the training
    /// rows `x` (`Forest::oob_quantiles`).
    #[pyo3(signature = (x, quantiles, n_jobs=1, oob=false))]
    fn predict_quantiles<'py>(
        &self,
        py: Python<'py>,
        x: XArg<'py>,
        quantiles: Vec<f64>,
        n_jobs: i64,
        oob: bool,
    ) -> PyResult<Bound<'py, PyArray3<f64>>> {
        let x = x.view()?;
        let f = &self.inner;
        Ok(compute(py, || {
            if oob {
                f.oob_quantiles(x.features()?, &quantiles, n_jobs)
            } else {
                f.predict_quantiles(x.features()?, &quantiles, n_jobs)
            }
        })?
        .into_pyarray(py))
    }

    /// Whether the forest keeps its leaves' training targets (`store_leaf_values`).
    #[getter]
    fn has_leaf_values(&self) -> bool {
        self.inner.leaf_targets().is_some()
    }

    /// The fraction of each tree's rows that filled its leaves (0: not honest).
    /// Levels per column (0 for a numeric one); empty when every column is numeric.
    #[getter]
    fn categorical(&self) -> Vec<u32> {
        self.inner.params().categorical.clone()
    }

    #[getter]
    fn honest_fraction(&self) -> f64 {
        self.inner.params().honest_fraction
    }

    fn honest_counts<'py>(
        &self,
        py: Python<'py>,
        tree: usize,
        n_samples: usize,
    ) -> PyResult<Bound<'py, PyArray1<u32>>> {
        Ok(compute(py, || self.inner.honest_counts(tree, n_samples))?.into_pyarray(py))
    }

    fn in_bag_counts<'py>(
        &self,
        py: Python<'py>,
        tree: usize,
        n_samples: usize,
    ) -> PyResult<Bound<'py, PyArray1<u32>>> {
        Ok(compute(py, || self.inner.in_bag_counts(tree, n_samples))?.into_pyarray(py))
    }

    #[pyo3(signature = (x, n_jobs=1))]
    #[allow(clippy::type_complexity)]
    fn decision_path<'py>(
        &self,
        py: Python<'py>,
        x: XArg<'py>,
        n_jobs: i64,
    ) -> PyResult<(
        Bound<'py, PyArray1<i64>>,
        Bound<'py, PyArray1<i64>>,
        Bound<'py, PyArray1<i64>>,
    )> {
        let x = x.view()?;
        let (indptr, indices, n_nodes_ptr) =
            compute(py, || self.inner.decision_path(x.features()?, n_jobs))?;
        Ok((
            indptr.into_pyarray(py),
            indices.into_pyarray(py),
            n_nodes_ptr.into_pyarray(py),
        ))
    }

    /// Per row and node of tree `tree`: the node's projected value and whether the row goes
    /// left (see `Forest::node_decisions`).
    #[pyo3(signature = (x, tree, n_jobs=1))]
    #[allow(clippy::type_complexity)]
    fn node_decisions<'py>(
        &self,
        py: Python<'py>,
        x: XArg<'py>,
        tree: usize,
        n_jobs: i64,
    ) -> PyResult<(Bound<'py, PyArray2<f32>>, Bound<'py, PyArray2<bool>>)> {
        let x = x.view()?;
        let (values, left) = compute(py, || {
            self.inner.node_decisions(x.features()?, tree, n_jobs)
        })?;
        Ok((values.into_pyarray(py), left.into_pyarray(py)))
    }

    fn leaf_offsets<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        self.inner
            .leaf_offsets()
            .into_iter()
            .map(|v| v as i64)
            .collect::<Vec<_>>()
            .into_pyarray(py)
    }

    #[pyo3(signature = (x, n_jobs=1))]
    #[allow(clippy::type_complexity)]
    fn leaf_bounds<'py>(
        &self,
        py: Python<'py>,
        x: XArg<'py>,
        n_jobs: i64,
    ) -> PyResult<(Bound<'py, PyArray2<f64>>, Bound<'py, PyArray2<f64>>)> {
        let x = x.view()?;
        let (lo, hi) = compute(py, || self.inner.leaf_bounds(x.features()?, n_jobs))?;
        Ok((lo.into_pyarray(py), hi.into_pyarray(py)))
    }

    /// Per-leaf boxes (lower, upper), each total leaves × n_features (see `Forest::leaf_boxes`).
    #[allow(clippy::type_complexity)]
    fn leaf_boxes<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyArray2<f64>>, Bound<'py, PyArray2<f64>>)> {
        let (lo, hi) = compute(py, || Ok(self.inner.leaf_boxes()))?;
        Ok((lo.into_pyarray(py), hi.into_pyarray(py)))
    }

    /// Leaf ids of `z`'s rows under per-node replacement split rules
    /// (see `Forest::apply_leaves_with_rules`).
    fn apply_leaves_with_rules<'py>(
        &self,
        py: Python<'py>,
        z: PyReadonlyArray2<'py, f64>,
        dim: PyReadonlyArray1<'py, i64>,
        threshold: PyReadonlyArray1<'py, f64>,
        flip: PyReadonlyArray1<'py, bool>,
    ) -> PyResult<Bound<'py, PyArray2<i64>>> {
        let (z, dim, threshold, flip) = (
            z.as_array(),
            dim.as_slice()?,
            threshold.as_slice()?,
            flip.as_slice()?,
        );
        Ok(compute(py, || {
            self.inner.apply_leaves_with_rules(z, dim, threshold, flip)
        })?
        .into_pyarray(py))
    }

    /// The forest's seed: tree t draws from the streams keyed by (seed, t).
    #[getter]
    fn seed(&self) -> u64 {
        self.inner.params().seed
    }

    /// Whether the forest keeps out-of-bag predictions.
    #[getter]
    fn has_oob(&self) -> bool {
        self.inner.oob().is_some()
    }

    /// Computes the out-of-bag predictions of every tree on the training rows `x`, dense or
    /// sparse (a warm start that switches `oob_score` on).
    #[pyo3(signature = (x, n_jobs=1))]
    fn compute_oob(&mut self, py: Python<'_>, x: XArg<'_>, n_jobs: i64) -> PyResult<()> {
        let x = x.view()?;
        let inner = &mut self.inner;
        compute(py, || inner.compute_oob(x.features()?, n_jobs))
    }

    #[allow(clippy::type_complexity)]
    fn oob_prediction<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyArray2<f64>>, Bound<'py, PyArray1<i64>>)> {
        let oob = self
            .inner
            .oob()
            .ok_or_else(|| bad("oob", "the forest was not fitted with oob=True"))?;
        let k = self.inner.n_outputs();
        let n = oob.counts.len();
        let sums = ndarray::Array2::from_shape_vec((n, k), oob.sums.clone())
            .map_err(|e| PyErr::from(Error::Internal(e.to_string())))?;
        let counts: Vec<i64> = oob.counts.iter().map(|&c| c as i64).collect();
        Ok((sums.into_pyarray(py), counts.into_pyarray(py)))
    }

    fn feature_importances<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        self.inner.feature_importances().into_pyarray(py)
    }

    fn projection_counts<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        self.inner.projection_counts().into_pyarray(py)
    }

    #[allow(clippy::type_complexity)]
    fn tree_stats<'py>(
        &self,
        py: Python<'py>,
    ) -> (
        Bound<'py, PyArray1<i64>>,
        Bound<'py, PyArray1<i64>>,
        Bound<'py, PyArray1<i64>>,
    ) {
        let t = self.inner.trees();
        let nodes: Vec<i64> = t.iter().map(|t| t.n_nodes() as i64).collect();
        let depth: Vec<i64> = t.iter().map(|t| t.max_depth() as i64).collect();
        let leaves: Vec<i64> = t.iter().map(|t| t.n_leaves() as i64).collect();
        (
            nodes.into_pyarray(py),
            depth.into_pyarray(py),
            leaves.into_pyarray(py),
        )
    }

    fn tree_nodes<'py>(&self, py: Python<'py>, tree: usize) -> PyResult<Bound<'py, PyDict>> {
        let t = self
            .inner
            .trees()
            .get(tree)
            .ok_or_else(|| bad("tree", &format!("{tree} is out of range")))?;
        let g = self.inner.descriptors();
        let n = t.n_nodes();
        // scikit-learn's convention: -1 for the children of a leaf
        let child = |v: &Vec<u32>| {
            v.iter()
                .enumerate()
                .map(|(i, &c)| if t.is_leaf(i) { -1 } else { c as i64 })
                .collect::<Vec<_>>()
        };
        let (mut ptr, mut feats, mut weights) = (vec![0i64], Vec::new(), Vec::new());
        // per node: 0 for a linear projection (the sum of its terms), 1 (2) for the max
        // (min) over its pieces of `piece_len` consecutive terms each
        let (mut pool, mut piece_len) = (vec![0u8; n], vec![0i64; n]);
        for node in 0..n {
            if !t.is_leaf(node) {
                let proj = t.proj(node, g);
                proj.for_each(|j, w| {
                    feats.push(j as i64);
                    weights.push(w as f64);
                });
                if let Some(p) = proj.pooling() {
                    pool[node] = 1 + u8::from(p.pool == crate::projection::Pool::Min);
                    piece_len[node] = p.piece_len as i64;
                }
            }
            ptr.push(feats.len() as i64);
        }
        let d = PyDict::new(py);
        d.set_item("left", child(&t.left).into_pyarray(py))?;
        d.set_item("right", child(&t.right).into_pyarray(py))?;
        d.set_item(
            "threshold",
            t.threshold
                .iter()
                .map(|&v| v as f64)
                .collect::<Vec<_>>()
                .into_pyarray(py),
        )?;
        d.set_item("proj_ptr", ptr.into_pyarray(py))?;
        d.set_item("proj_features", feats.into_pyarray(py))?;
        d.set_item("proj_weights", weights.into_pyarray(py))?;
        d.set_item("proj_pool", pool.into_pyarray(py))?;
        d.set_item("proj_piece_len", piece_len.into_pyarray(py))?;
        super::convert::set_level_maps(&d, &t.level_maps, n)?;
        d.set_item("impurity", t.impurity.clone().into_pyarray(py))?;
        d.set_item(
            "n_node_samples",
            t.n_node_samples
                .iter()
                .map(|&v| v as i64)
                .collect::<Vec<_>>()
                .into_pyarray(py),
        )?;
        d.set_item(
            "weighted_n_node_samples",
            t.weighted_n_node_samples.clone().into_pyarray(py),
        )?;
        d.set_item(
            "missing_go_to_left",
            t.missing_go_to_left()
                .into_iter()
                .map(u8::from)
                .collect::<Vec<_>>()
                .into_pyarray(py),
        )?;
        let value = ndarray::Array2::from_shape_vec((n, t.n_outputs), t.node_values())
            .map_err(|e| PyErr::from(Error::Internal(e.to_string())))?;
        d.set_item("value", value.into_pyarray(py))?;
        d.set_item(
            "depth",
            t.depth
                .iter()
                .map(|&v| v as i64)
                .collect::<Vec<_>>()
                .into_pyarray(py),
        )?;
        Ok(d)
    }

    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let b = compute(py, || self.inner.to_bytes())?;
        Ok(PyBytes::new(py, &b))
    }

    #[staticmethod]
    fn from_bytes(py: Python<'_>, data: &[u8]) -> PyResult<PyForest> {
        let inner = compute(py, || Forest::from_bytes(data))?;
        Ok(PyForest { inner })
    }

    fn params<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let p = self.inner.params();
        let d = PyDict::new(py);
        d.set_item("n_estimators", p.n_estimators)?;
        d.set_item("seed", p.seed)?;
        d.set_item("n_features", self.inner.n_features())?;
        d.set_item("n_outputs", self.inner.n_outputs())?;
        d.set_item("summary", format!("{p:?}"))?;
        Ok(d)
    }

    fn __getstate__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        self.to_bytes(py)
    }

    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyBytes>,))> {
        let py = slf.py();
        let from_bytes = slf.get_type().getattr("from_bytes")?;
        let bytes = slf.borrow().to_bytes(py)?;
        Ok((from_bytes, (bytes,)))
    }
}

/// Trees `start..end` of a forest, grown apart from the others (`obliqueforest.dask` grows
/// them on a cluster's workers); `ForestPart.join` (the core's `Forest::from_parts`) joins
/// them (see `_core.pyi`).
#[pyclass(name = "ForestPart", module = "obliqueforest._core", frozen)]
pub(super) struct PyForestPart {
    inner: crate::part::ForestPart,
}

#[pymethods]
impl PyForestPart {
    /// Grows trees `start..end` of the forest `params` describes; `n_classes`, when given,
    /// replaces the classification task's class count (a worker holding some of the
    /// classes grows trees that know all of them).
    #[staticmethod]
    #[pyo3(signature = (
        x, y, sample_weight, params, start, end, n_jobs=None, progress=None, n_classes=None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn grow(
        py: Python<'_>,
        x: XArg<'_>,
        y: PyReadonlyArray1<'_, f64>,
        sample_weight: Option<PyReadonlyArray1<'_, f64>>,
        params: PyRef<'_, PyForestParams>,
        start: usize,
        end: usize,
        n_jobs: Option<i64>,
        progress: Option<PyRef<'_, Progress>>,
        n_classes: Option<usize>,
    ) -> PyResult<PyForestPart> {
        let mut params = params.inner.clone();
        if let Some(n_classes) = n_classes {
            match params.task {
                Task::Classification { .. } => params.task = Task::Classification { n_classes },
                Task::Regression => return Err(bad("n_classes", "is for classification")),
                Task::MultiClassification { .. }
                | Task::MultiRegression { .. }
                | Task::Unsupervised { .. } => {
                    return Err(bad("n_classes", "is for single-output classification"))
                }
            }
        }
        // a Dask worker's watcher trips `progress.cancel()` when the fit is abandoned
        let (counter, cancel) = Progress::parts(progress);
        let (x, y) = (
            x.view()?,
            y.as_slice().map_err(|_| bad("y", "must be contiguous"))?,
        );
        let w = weights_slice(&sample_weight)?;
        let inner = compute_with(py, &cancel, || {
            Forest::grow_part(
                &params,
                x.features()?,
                y,
                w,
                start,
                end,
                n_jobs,
                counter.as_deref(),
            )
        })?;
        Ok(PyForestPart { inner })
    }

    #[getter]
    fn start(&self) -> usize {
        self.inner.start()
    }
    #[getter]
    fn n_trees(&self) -> usize {
        self.inner.forest().trees().len()
    }
    #[getter]
    fn n_samples(&self) -> usize {
        self.inner.n_samples()
    }

    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let b = compute(py, || self.inner.to_bytes())?;
        Ok(PyBytes::new(py, &b))
    }

    #[staticmethod]
    fn from_bytes(py: Python<'_>, data: &[u8]) -> PyResult<PyForestPart> {
        let inner = compute(py, || crate::part::ForestPart::from_bytes(data))?;
        Ok(PyForestPart { inner })
    }

    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyBytes>,))> {
        let py = slf.py();
        let from_bytes = slf.get_type().getattr("from_bytes")?;
        let bytes = slf.get().to_bytes(py)?;
        Ok((from_bytes, (bytes,)))
    }

    /// Appends this part's trees to `forest`, as `forest.fit_more` would grow them
    /// (`Forest::append_part`).
    fn append_to(&self, py: Python<'_>, mut forest: PyRefMut<'_, PyForest>) -> PyResult<()> {
        let inner = &mut forest.inner;
        compute(py, || inner.append_part(&self.inner))
    }

    /// Joins parts covering every tree of a forest into a `Forest` (`Forest::from_parts`).
    #[staticmethod]
    fn join(py: Python<'_>, parts: Vec<PyRef<'_, PyForestPart>>) -> PyResult<PyForest> {
        let parts: Vec<&crate::part::ForestPart> = parts.iter().map(|p| &p.inner).collect();
        let inner = compute(py, || Forest::from_parts(parts))?;
        Ok(PyForest { inner })
    }
}

/// The trees of a part as a forest of their own (`Forest::select` of all of them): a
/// per-tree estimator regrows tree `t` of a forest as the part `t..t + 1`.
#[pyfunction]
pub(super) fn part_forest(part: PyRef<'_, PyForestPart>) -> PyResult<PyForest> {
    let forest = part.inner.forest();
    let all: Vec<usize> = (0..forest.trees().len()).collect();
    Ok(PyForest {
        inner: forest.select(&all)?,
    })
}
