//! The pyo3 boundary (cargo feature `python`). It converts numpy arrays and
//! typed parameter objects (`_core.ForestParams`, `_core.Projection`) into the crate's
//! types, releases the GIL for every
//! computation, turns panics into errors, and maps [`Error`] to Python in one
//! place. No forest logic lives here.

use crate::error::Error;
use crate::forest::Forest;
use crate::params::{Criterion, ForestParams, MaxFeatures, SampleCount, Splitter, Task};
use crate::projection::{Density, Dictionary, PatchGeometry, ProjectionKind};
use numpy::{
    IntoPyArray, PyArray1, PyArray2, PyArray3, PyReadonlyArray1, PyReadonlyArray1 as R1,
    PyReadonlyArray2,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

pyo3::create_exception!(
    _core,
    ForestError,
    PyValueError,
    "An error raised by the obliqueforest Rust core."
);

impl From<Error> for PyErr {
    fn from(e: Error) -> PyErr {
        ForestError::new_err(e.to_string())
    }
}

/// Runs `f` without the GIL and with panics turned into [`Error::Internal`].
fn compute<T: Send>(py: Python<'_>, f: impl FnOnce() -> Result<T, Error> + Send) -> PyResult<T> {
    py.detach(|| match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => {
            let msg = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            Err(Error::Internal(format!("panic in the Rust core: {msg}")))
        }
    })
    .map_err(PyErr::from)
}

fn bad(name: &str, what: &str) -> PyErr {
    ForestError::new_err(format!("invalid parameter {name}: {what}"))
}

/// Extracts parameter `name` as a `T`, naming the parameter in the error.
fn named<'py, T>(v: &Bound<'py, PyAny>, name: &str) -> PyResult<T>
where
    T: for<'a> FromPyObject<'a, 'py, Error = PyErr>,
{
    v.extract::<T>()
        .map_err(|e| bad(name, &e.value(v.py()).to_string()))
}

/// Like [`named`], with Python's None as `None`.
fn named_opt<'py, T>(v: &Bound<'py, PyAny>, name: &str) -> PyResult<Option<T>>
where
    T: for<'a> FromPyObject<'a, 'py, Error = PyErr>,
{
    if v.is_none() {
        Ok(None)
    } else {
        named(v, name).map(Some)
    }
}

/// A non-negative Python int (not a bool or a float) that fits a `usize`: no count from
/// Python can wrap or be truncated on its way into the core.
struct Count(usize);

impl<'a, 'py> FromPyObject<'a, 'py> for Count {
    type Error = PyErr;
    fn extract(v: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if v.is_instance_of::<PyBool>() || v.is_instance_of::<PyFloat>() {
            return Err(PyValueError::new_err("must be an integer"));
        }
        let big = v
            .extract::<i128>()
            .map_err(|_| PyValueError::new_err("must be an integer"))?;
        if big < 0 {
            return Err(PyValueError::new_err(format!("must be >= 0, got {big}")));
        }
        usize::try_from(big)
            .map(Count)
            .map_err(|_| PyValueError::new_err(format!("{big} is too large")))
    }
}

impl<'a, 'py> FromPyObject<'a, 'py> for Criterion {
    type Error = PyErr;
    fn extract(v: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        match v.extract::<String>()?.as_str() {
            "gini" => Ok(Criterion::Gini),
            "entropy" | "log_loss" => Ok(Criterion::Entropy),
            "squared_error" => Ok(Criterion::SquaredError),
            other => Err(PyValueError::new_err(format!(
                "unknown criterion {other:?}"
            ))),
        }
    }
}

/// `None` (all features), `"sqrt"`, `"log2"`, an int count or a float fraction.
impl<'a, 'py> FromPyObject<'a, 'py> for MaxFeatures {
    type Error = PyErr;
    fn extract(v: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if v.is_none() {
            Ok(MaxFeatures::All)
        } else if v.is_instance_of::<PyString>() {
            match v.extract::<String>()?.as_str() {
                "sqrt" => Ok(MaxFeatures::Sqrt),
                "log2" => Ok(MaxFeatures::Log2),
                other => Err(PyValueError::new_err(format!("unknown option {other:?}"))),
            }
        } else if v.is_instance_of::<PyFloat>() {
            Ok(MaxFeatures::Fraction(v.extract()?))
        } else {
            Ok(MaxFeatures::Count(v.extract::<Count>()?.0))
        }
    }
}

/// An int count or a float fraction of the training rows.
impl<'a, 'py> FromPyObject<'a, 'py> for SampleCount {
    type Error = PyErr;
    fn extract(v: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if v.is_instance_of::<PyFloat>() {
            Ok(SampleCount::Fraction(v.extract()?))
        } else {
            Ok(SampleCount::Count(v.extract::<Count>()?.0))
        }
    }
}

/// A projection distribution for the core (`_core.Projection`), built by the classes of
/// `obliqueforest.projections`. The constructors only convert; [`ProjectionKind::check`]
/// validates when a forest is fitted.
#[pyclass(name = "Projection", module = "obliqueforest._core", frozen)]
#[derive(Clone)]
struct PyProjection {
    kind: ProjectionKind,
}

#[pymethods]
impl PyProjection {
    #[staticmethod]
    fn axis() -> Self {
        PyProjection {
            kind: ProjectionKind::AxisAligned,
        }
    }

    #[staticmethod]
    #[pyo3(signature = (*, density, feature_combinations))]
    fn sparse(density: Option<f64>, feature_combinations: Option<f64>) -> PyResult<Self> {
        let density = match (density, feature_combinations) {
            (Some(d), None) => Density::Fraction(d),
            (None, Some(c)) => Density::FeatureCombinations(c),
            _ => {
                return Err(bad(
                    "density",
                    "give exactly one of density and feature_combinations",
                ))
            }
        };
        Ok(PyProjection {
            kind: ProjectionKind::SparseSigned { density },
        })
    }

    #[staticmethod]
    #[pyo3(signature = (*, n_combined))]
    fn forest_rc(n_combined: &Bound<'_, PyAny>) -> PyResult<Self> {
        Ok(PyProjection {
            kind: ProjectionKind::ForestRc {
                n_combined: named::<Count>(n_combined, "n_combined")?.0,
            },
        })
    }

    #[staticmethod]
    fn gaussian() -> Self {
        PyProjection {
            kind: ProjectionKind::Gaussian,
        }
    }

    #[staticmethod]
    #[pyo3(signature = (*, data_shape, channel_axis, min_patch_size, max_patch_size, periodic))]
    fn patch(
        data_shape: &Bound<'_, PyAny>,
        channel_axis: &Bound<'_, PyAny>,
        min_patch_size: &Bound<'_, PyAny>,
        max_patch_size: &Bound<'_, PyAny>,
        periodic: Vec<bool>,
    ) -> PyResult<Self> {
        let counts = |v: &Bound<'_, PyAny>, name: &str| -> PyResult<Vec<usize>> {
            Ok(named::<Vec<Count>>(v, name)?
                .into_iter()
                .map(|c| c.0)
                .collect())
        };
        Ok(PyProjection {
            kind: ProjectionKind::Patch(PatchGeometry {
                data_shape: counts(data_shape, "data_shape")?,
                channel_axis: named_opt::<Count>(channel_axis, "channel_axis")?.map(|c| c.0),
                min_patch_size: counts(min_patch_size, "min_patch_size")?,
                max_patch_size: counts(max_patch_size, "max_patch_size")?,
                periodic,
            }),
        })
    }

    /// A projection dictionary: CSC arrays of an `n_features × n_atoms` matrix whose
    /// columns are the atoms.
    #[staticmethod]
    #[pyo3(signature = (*, n_features, indptr, indices, data, n_candidates))]
    fn dictionary(
        n_features: &Bound<'_, PyAny>,
        indptr: PyReadonlyArray1<'_, i64>,
        indices: PyReadonlyArray1<'_, i64>,
        data: PyReadonlyArray1<'_, f32>,
        n_candidates: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        let dictionary = Dictionary::from_csc(
            named::<Count>(n_features, "atoms")?.0,
            &indptr.as_array().to_vec(),
            &indices.as_array().to_vec(),
            &data.as_array().to_vec(),
            named_opt::<Count>(n_candidates, "n_candidates")?.map(|c| c.0),
        )?;
        Ok(PyProjection {
            kind: ProjectionKind::Dictionary(dictionary),
        })
    }

    fn __repr__(&self) -> String {
        format!("{:?}", self.kind)
    }
}

/// The parameters of a fit (`_core.ForestParams`): every field given, converted to the
/// crate's [`ForestParams`] with its types; [`ForestParams::check`] validates them against
/// the data when the forest is fitted. Python builds it in one place
/// (`obliqueforest._params.core_params`).
#[pyclass(name = "ForestParams", module = "obliqueforest._core", frozen)]
#[derive(Clone)]
struct PyForestParams {
    inner: ForestParams,
}

#[pymethods]
impl PyForestParams {
    #[new]
    #[pyo3(signature = (
        *, task, n_classes, criterion, splitter, max_bins, projection, max_features,
        n_estimators, max_depth, min_samples_split, min_samples_leaf,
        min_weight_fraction_leaf, min_impurity_decrease, max_leaf_nodes, bootstrap,
        max_samples, class_weight_subsample, oob, seed, ccp_alpha, n_jobs
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        task: &str,
        n_classes: &Bound<'_, PyAny>,
        criterion: &Bound<'_, PyAny>,
        splitter: &str,
        max_bins: &Bound<'_, PyAny>,
        projection: PyRef<'_, PyProjection>,
        max_features: &Bound<'_, PyAny>,
        n_estimators: &Bound<'_, PyAny>,
        max_depth: &Bound<'_, PyAny>,
        min_samples_split: &Bound<'_, PyAny>,
        min_samples_leaf: &Bound<'_, PyAny>,
        min_weight_fraction_leaf: f64,
        min_impurity_decrease: f64,
        max_leaf_nodes: &Bound<'_, PyAny>,
        bootstrap: bool,
        max_samples: &Bound<'_, PyAny>,
        class_weight_subsample: bool,
        oob: bool,
        seed: &Bound<'_, PyAny>,
        ccp_alpha: f64,
        n_jobs: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        let n_classes = named_opt::<Count>(n_classes, "n_classes")?.map(|c| c.0);
        let task = match (task, n_classes) {
            ("classification", Some(n_classes)) => Task::Classification { n_classes },
            ("classification", None) => return Err(bad("n_classes", "classification needs it")),
            ("regression", None) => Task::Regression,
            ("regression", Some(_)) => {
                return Err(bad("n_classes", "is for classification; give None"))
            }
            (other, _) => return Err(bad("task", &format!("unknown task {other:?}"))),
        };
        let splitter = match splitter {
            "best" => Splitter::Best,
            "random" => Splitter::Random,
            "hist" => Splitter::Histogram {
                max_bins: named::<Count>(max_bins, "max_bins")?.0,
            },
            other => return Err(bad("splitter", &format!("unknown splitter {other:?}"))),
        };
        let seed = seed
            .extract::<u64>()
            .map_err(|_| bad("seed", "must be an integer in [0, 2**64)"))?;
        let n_jobs = n_jobs
            .extract::<i64>()
            .map_err(|_| bad("n_jobs", "must be an integer"))?;
        Ok(PyForestParams {
            inner: ForestParams {
                task,
                criterion: named(criterion, "criterion")?,
                splitter,
                projection: projection.kind.clone(),
                max_features: named(max_features, "max_features")?,
                n_estimators: named::<Count>(n_estimators, "n_estimators")?.0,
                max_depth: named_opt::<Count>(max_depth, "max_depth")?.map(|c| c.0),
                min_samples_split: named(min_samples_split, "min_samples_split")?,
                min_samples_leaf: named(min_samples_leaf, "min_samples_leaf")?,
                min_weight_fraction_leaf,
                min_impurity_decrease,
                max_leaf_nodes: named_opt::<Count>(max_leaf_nodes, "max_leaf_nodes")?.map(|c| c.0),
                bootstrap,
                max_samples: named_opt(max_samples, "max_samples")?,
                class_weight_subsample,
                oob,
                seed,
                ccp_alpha,
                n_jobs,
            },
        })
    }

    /// The same parameters with another seed.
    fn with_seed(&self, seed: u64) -> Self {
        let mut out = self.clone();
        out.inner.seed = seed;
        out
    }

    #[getter]
    fn n_estimators(&self) -> usize {
        self.inner.n_estimators
    }

    fn __repr__(&self) -> String {
        format!("{:?}", self.inner)
    }
}

/// A counter of finished trees, readable from another Python thread during a fit.
#[pyclass(module = "obliqueforest._core", frozen)]
struct Progress {
    done: Arc<AtomicUsize>,
}

#[pymethods]
impl Progress {
    #[new]
    fn new() -> Self {
        Progress {
            done: Arc::new(AtomicUsize::new(0)),
        }
    }
    #[getter]
    fn trees_done(&self) -> usize {
        self.done.load(Ordering::Relaxed)
    }
}

/// A fitted projection forest (see `_core.pyi`).
#[pyclass(name = "Forest", module = "obliqueforest._core")]
struct PyForest {
    inner: Forest,
}

fn weights_slice<'a>(w: &'a Option<R1<'a, f64>>) -> PyResult<Option<&'a [f64]>> {
    w.as_ref()
        .map(|w| {
            w.as_slice()
                .map_err(|_| bad("sample_weight", "must be contiguous"))
        })
        .transpose()
}

#[pymethods]
impl PyForest {
    #[staticmethod]
    #[pyo3(signature = (x, y, sample_weight, params, progress=None))]
    fn fit(
        py: Python<'_>,
        x: PyReadonlyArray2<'_, f32>,
        y: PyReadonlyArray1<'_, f64>,
        sample_weight: Option<PyReadonlyArray1<'_, f64>>,
        params: PyRef<'_, PyForestParams>,
        progress: Option<PyRef<'_, Progress>>,
    ) -> PyResult<PyForest> {
        let params = params.inner.clone();
        let counter = progress.map(|p| p.done.clone());
        let (x, y) = (
            x.as_array(),
            y.as_slice().map_err(|_| bad("y", "must be contiguous"))?,
        );
        let w = weights_slice(&sample_weight)?;
        let inner = compute(py, || {
            Forest::fit_with_progress(&params, x, y, w, counter.as_deref())
        })?;
        Ok(PyForest { inner })
    }

    #[pyo3(signature = (x, y, sample_weight, n_more, progress=None, n_jobs=None, ccp_alpha=None))]
    #[allow(clippy::too_many_arguments)]
    fn fit_more(
        &mut self,
        py: Python<'_>,
        x: PyReadonlyArray2<'_, f32>,
        y: PyReadonlyArray1<'_, f64>,
        sample_weight: Option<PyReadonlyArray1<'_, f64>>,
        n_more: &Bound<'_, PyAny>,
        progress: Option<PyRef<'_, Progress>>,
        n_jobs: Option<i64>,
        ccp_alpha: Option<f64>,
    ) -> PyResult<()> {
        let n_more = named::<Count>(n_more, "n_more")?.0;
        let counter = progress.map(|p| p.done.clone());
        let (x, y) = (
            x.as_array(),
            y.as_slice().map_err(|_| bad("y", "must be contiguous"))?,
        );
        let w = weights_slice(&sample_weight)?;
        let inner = &mut self.inner;
        compute(py, || {
            inner.grow_more(x, y, w, n_more, n_jobs, ccp_alpha, counter.as_deref())
        })
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

    /// The atoms of a dictionary forest as CSC arrays `(n_features, indptr, indices, data,
    /// n_candidates)`, or None: what a model file restores a `Dictionary` from.
    #[allow(clippy::type_complexity)]
    fn dictionary_atoms<'py>(
        &self,
        py: Python<'py>,
    ) -> Option<(
        usize,
        Bound<'py, PyArray1<i64>>,
        Bound<'py, PyArray1<i64>>,
        Bound<'py, PyArray1<f32>>,
        Option<usize>,
    )> {
        match &self.inner.params().projection {
            ProjectionKind::Dictionary(d) => Some((
                d.n_features,
                d.atom_ptr
                    .iter()
                    .map(|&v| i64::from(v))
                    .collect::<Vec<_>>()
                    .into_pyarray(py),
                d.atom_idx
                    .iter()
                    .map(|&v| i64::from(v))
                    .collect::<Vec<_>>()
                    .into_pyarray(py),
                d.atom_w.clone().into_pyarray(py),
                d.n_candidates,
            )),
            _ => None,
        }
    }

    #[getter]
    fn n_jobs(&self) -> i64 {
        self.inner.params().n_jobs
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
    #[getter]
    fn is_classifier(&self) -> bool {
        matches!(self.inner.params().task, Task::Classification { .. })
    }

    #[pyo3(signature = (x, n_jobs=1))]
    fn predict<'py>(
        &self,
        py: Python<'py>,
        x: PyReadonlyArray2<'py, f32>,
        n_jobs: i64,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let x = x.as_array();
        Ok(compute(py, || self.inner.predict(x, n_jobs))?.into_pyarray(py))
    }

    #[pyo3(signature = (x, n_jobs=1))]
    fn predict_trees<'py>(
        &self,
        py: Python<'py>,
        x: PyReadonlyArray2<'py, f32>,
        n_jobs: i64,
    ) -> PyResult<Bound<'py, PyArray3<f64>>> {
        let x = x.as_array();
        Ok(compute(py, || self.inner.predict_trees(x, n_jobs))?.into_pyarray(py))
    }

    #[pyo3(signature = (x, n_jobs=1))]
    fn apply<'py>(
        &self,
        py: Python<'py>,
        x: PyReadonlyArray2<'py, f32>,
        n_jobs: i64,
    ) -> PyResult<Bound<'py, PyArray2<i64>>> {
        let x = x.as_array();
        Ok(compute(py, || self.inner.apply(x, n_jobs))?.into_pyarray(py))
    }

    #[pyo3(signature = (x, n_jobs=1))]
    fn apply_leaves<'py>(
        &self,
        py: Python<'py>,
        x: PyReadonlyArray2<'py, f32>,
        n_jobs: i64,
    ) -> PyResult<Bound<'py, PyArray2<i64>>> {
        let x = x.as_array();
        Ok(compute(py, || self.inner.apply_leaves(x, n_jobs))?.into_pyarray(py))
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
        x: PyReadonlyArray2<'py, f32>,
        n_jobs: i64,
    ) -> PyResult<(
        Bound<'py, PyArray1<i64>>,
        Bound<'py, PyArray1<i64>>,
        Bound<'py, PyArray1<i64>>,
    )> {
        let x = x.as_array();
        let (indptr, indices, n_nodes_ptr) = compute(py, || self.inner.decision_path(x, n_jobs))?;
        Ok((
            indptr.into_pyarray(py),
            indices.into_pyarray(py),
            n_nodes_ptr.into_pyarray(py),
        ))
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
        x: PyReadonlyArray2<'py, f32>,
        n_jobs: i64,
    ) -> PyResult<(Bound<'py, PyArray2<f64>>, Bound<'py, PyArray2<f64>>)> {
        let x = x.as_array();
        let (lo, hi) = compute(py, || self.inner.leaf_bounds(x, n_jobs))?;
        Ok((lo.into_pyarray(py), hi.into_pyarray(py)))
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
        let g = self.inner.geometry();
        let n = t.n_nodes();
        // scikit-learn's convention: -1 for the children of a leaf
        let child = |v: &Vec<u32>| {
            v.iter()
                .enumerate()
                .map(|(i, &c)| if t.is_leaf(i) { -1 } else { c as i64 })
                .collect::<Vec<_>>()
        };
        let (mut ptr, mut feats, mut weights) = (vec![0i64], Vec::new(), Vec::new());
        for node in 0..n {
            if !t.is_leaf(node) {
                t.proj(node, g).for_each(|j, w| {
                    feats.push(j as i64);
                    weights.push(w as f64);
                });
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

/// Raises an internal error from inside the panic guard (tests use it to prove that a
/// panic in the core reaches Python as an exception, not a crash).
#[pyfunction]
fn _panic_for_test(py: Python<'_>) -> PyResult<()> {
    compute(py, || -> Result<(), Error> {
        panic!("deliberate test panic")
    })
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyForest>()?;
    m.add_class::<Progress>()?;
    m.add_class::<PyForestParams>()?;
    m.add_class::<PyProjection>()?;
    m.add("ForestError", m.py().get_type::<ForestError>())?;
    m.add("FORMAT_VERSION", crate::serialize::FORMAT_VERSION)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(_panic_for_test, m)?)?;
    Ok(())
}
