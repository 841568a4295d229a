//! The pyo3 boundary (cargo feature `python`). It converts numpy arrays and
//! parameter dicts into the crate's types, releases the GIL for every
//! computation, turns panics into errors, and maps [`Error`] to Python in one
//! place. No forest logic lives here.

use crate::error::Error;
use crate::forest::Forest;
use crate::params::{Criterion, ForestParams, MaxFeatures, SampleCount, Splitter, Task};
use crate::projection::{Density, PatchGeometry, ProjectionKind};
use numpy::{
    IntoPyArray, PyArray1, PyArray2, PyArray3, PyReadonlyArray1, PyReadonlyArray1 as R1,
    PyReadonlyArray2,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyString};
use std::collections::HashSet;
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

/// Reads a parameter dict, remembering which keys were used.
struct Params<'py> {
    dict: Bound<'py, PyDict>,
    used: HashSet<String>,
}

fn bad(name: &str, what: &str) -> PyErr {
    ForestError::new_err(format!("invalid parameter {name}: {what}"))
}

impl<'py> Params<'py> {
    fn get(&mut self, key: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.used.insert(key.to_string());
        Ok(self.dict.get_item(key)?.filter(|v| !v.is_none()))
    }
    fn req(&mut self, key: &str) -> PyResult<Bound<'py, PyAny>> {
        self.get(key)?.ok_or_else(|| bad(key, "is required"))
    }
    fn int(v: &Bound<'py, PyAny>, key: &str) -> PyResult<i64> {
        if v.is_instance_of::<PyBool>() || v.is_instance_of::<PyFloat>() {
            return Err(bad(key, "must be an integer"));
        }
        v.extract::<i64>()
            .map_err(|_| bad(key, "must be an integer"))
    }
    fn usize(&mut self, key: &str, default: usize) -> PyResult<usize> {
        match self.get(key)? {
            None => Ok(default),
            Some(v) => usize::try_from(Self::int(&v, key)?).map_err(|_| bad(key, "must be >= 0")),
        }
    }
    fn opt_usize(&mut self, key: &str) -> PyResult<Option<usize>> {
        match self.get(key)? {
            None => Ok(None),
            Some(v) => usize::try_from(Self::int(&v, key)?)
                .map(Some)
                .map_err(|_| bad(key, "must be >= 0")),
        }
    }
    fn f64(&mut self, key: &str, default: f64) -> PyResult<f64> {
        match self.get(key)? {
            None => Ok(default),
            Some(v) => v.extract::<f64>().map_err(|_| bad(key, "must be a number")),
        }
    }
    fn bool(&mut self, key: &str, default: bool) -> PyResult<bool> {
        match self.get(key)? {
            None => Ok(default),
            Some(v) => v.extract::<bool>().map_err(|_| bad(key, "must be a bool")),
        }
    }
    fn string(&mut self, key: &str, default: &str) -> PyResult<String> {
        match self.get(key)? {
            None => Ok(default.to_string()),
            Some(v) => v
                .extract::<String>()
                .map_err(|_| bad(key, "must be a string")),
        }
    }
    fn count(&mut self, key: &str, default: SampleCount) -> PyResult<SampleCount> {
        Ok(self.opt_count(key)?.unwrap_or(default))
    }
    fn opt_count(&mut self, key: &str) -> PyResult<Option<SampleCount>> {
        match self.get(key)? {
            None => Ok(None),
            Some(v) if v.is_instance_of::<PyFloat>() => {
                Ok(Some(SampleCount::Fraction(v.extract()?)))
            }
            Some(v) => {
                let i = Self::int(&v, key)?;
                usize::try_from(i)
                    .map(|c| Some(SampleCount::Count(c)))
                    .map_err(|_| bad(key, "must be >= 0"))
            }
        }
    }
    fn usize_list(&mut self, key: &str) -> PyResult<Vec<usize>> {
        let v = self.req(key)?;
        v.extract::<Vec<usize>>()
            .map_err(|_| bad(key, "must be a list of non-negative integers"))
    }
    fn finish(self) -> PyResult<()> {
        for k in self.dict.keys() {
            let k: String = k.extract()?;
            if !self.used.contains(&k) {
                return Err(bad(&k, "unknown parameter"));
            }
        }
        Ok(())
    }
}

fn parse_projection(d: &Bound<'_, PyAny>) -> PyResult<ProjectionKind> {
    let dict = d
        .cast::<PyDict>()
        .map_err(|_| bad("projection", "must be a dict"))?
        .clone();
    let mut p = Params {
        dict,
        used: HashSet::new(),
    };
    let kind = p.string("kind", "axis")?;
    let out = match kind.as_str() {
        "axis" => ProjectionKind::AxisAligned,
        "sparse" => {
            let density = p.get("density")?;
            let combos = p.get("feature_combinations")?;
            let density = match (density, combos) {
                (Some(d), None) => Density::Fraction(
                    d.extract()
                        .map_err(|_| bad("density", "must be a number"))?,
                ),
                (None, Some(c)) => Density::FeatureCombinations(
                    c.extract()
                        .map_err(|_| bad("feature_combinations", "must be a number"))?,
                ),
                (None, None) => Density::FeatureCombinations(3.0),
                (Some(_), Some(_)) => {
                    return Err(bad(
                        "density",
                        "give density or feature_combinations, not both",
                    ))
                }
            };
            ProjectionKind::SparseSigned { density }
        }
        "forest_rc" => ProjectionKind::ForestRc {
            n_combined: p.usize("n_combined", 2)?,
        },
        "gaussian" => ProjectionKind::Gaussian,
        "patch" => {
            let data_shape = p.usize_list("data_shape")?;
            let channel_axis = p.opt_usize("channel_axis")?;
            let min_patch_size = p.usize_list("min_patch_size")?;
            let max_patch_size = p.usize_list("max_patch_size")?;
            let periodic = p
                .req("periodic")?
                .extract::<Vec<bool>>()
                .map_err(|_| bad("periodic", "must be a list of bools"))?;
            ProjectionKind::Patch(PatchGeometry {
                data_shape,
                channel_axis,
                min_patch_size,
                max_patch_size,
                periodic,
            })
        }
        other => return Err(bad("projection", &format!("unknown kind {other:?}"))),
    };
    p.finish()?;
    Ok(out)
}

fn parse_params(dict: &Bound<'_, PyDict>) -> PyResult<ForestParams> {
    let mut p = Params {
        dict: dict.clone(),
        used: HashSet::new(),
    };
    let task = match p.string("task", "classification")?.as_str() {
        "classification" => Task::Classification {
            n_classes: p.usize("n_classes", 2)?,
        },
        "regression" => {
            if p.usize("n_classes", 0)? != 0 {
                return Err(bad(
                    "n_classes",
                    "is for classification; leave it out (or 0) for regression",
                ));
            }
            Task::Regression
        }
        other => return Err(bad("task", &format!("unknown task {other:?}"))),
    };
    let default_criterion = if task == Task::Regression {
        "squared_error"
    } else {
        "gini"
    };
    let criterion = match p.string("criterion", default_criterion)?.as_str() {
        "gini" => Criterion::Gini,
        "entropy" | "log_loss" => Criterion::Entropy,
        "squared_error" => Criterion::SquaredError,
        other => return Err(bad("criterion", &format!("unknown criterion {other:?}"))),
    };
    let max_bins = p.usize("max_bins", 256)?;
    let splitter = match p.string("splitter", "best")?.as_str() {
        "best" => Splitter::Best,
        "random" => Splitter::Random,
        "hist" => Splitter::Histogram { max_bins },
        other => return Err(bad("splitter", &format!("unknown splitter {other:?}"))),
    };
    let projection = match p.get("projection")? {
        None => ProjectionKind::AxisAligned,
        Some(d) => parse_projection(&d)?,
    };
    let max_features = match p.get("max_features")? {
        None => MaxFeatures::All,
        Some(v) if v.is_instance_of::<PyString>() => match v.extract::<String>()?.as_str() {
            "sqrt" => MaxFeatures::Sqrt,
            "log2" => MaxFeatures::Log2,
            other => return Err(bad("max_features", &format!("unknown option {other:?}"))),
        },
        Some(v) if v.is_instance_of::<PyFloat>() => MaxFeatures::Fraction(v.extract()?),
        Some(v) => {
            let i = Params::int(&v, "max_features")?;
            MaxFeatures::Count(usize::try_from(i).map_err(|_| bad("max_features", "must be >= 1"))?)
        }
    };
    let params = ForestParams {
        task,
        criterion,
        splitter,
        projection,
        max_features,
        n_estimators: p.usize("n_estimators", 100)?,
        max_depth: p.opt_usize("max_depth")?,
        min_samples_split: p.count("min_samples_split", SampleCount::Count(2))?,
        min_samples_leaf: p.count("min_samples_leaf", SampleCount::Count(1))?,
        min_weight_fraction_leaf: p.f64("min_weight_fraction_leaf", 0.0)?,
        min_impurity_decrease: p.f64("min_impurity_decrease", 0.0)?,
        max_leaf_nodes: p.opt_usize("max_leaf_nodes")?,
        bootstrap: p.bool("bootstrap", true)?,
        max_samples: p.opt_count("max_samples")?,
        class_weight_subsample: p.bool("class_weight_subsample", false)?,
        oob: p.bool("oob", false)?,
        seed: p
            .get("seed")?
            .map(|v| v.extract::<u64>())
            .transpose()
            .map_err(|_| bad("seed", "must be an integer in [0, 2**64)"))?
            .unwrap_or(0),
        n_jobs: p
            .get("n_jobs")?
            .map(|v| Params::int(&v, "n_jobs"))
            .transpose()?
            .unwrap_or(1),
    };
    p.finish()?;
    Ok(params)
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
        params: &Bound<'_, PyDict>,
        progress: Option<PyRef<'_, Progress>>,
    ) -> PyResult<PyForest> {
        let params = parse_params(params)?;
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

    #[pyo3(signature = (x, y, sample_weight, n_more, progress=None, n_jobs=None))]
    #[allow(clippy::too_many_arguments)]
    fn fit_more(
        &mut self,
        py: Python<'_>,
        x: PyReadonlyArray2<'_, f32>,
        y: PyReadonlyArray1<'_, f64>,
        sample_weight: Option<PyReadonlyArray1<'_, f64>>,
        n_more: usize,
        progress: Option<PyRef<'_, Progress>>,
        n_jobs: Option<i64>,
    ) -> PyResult<()> {
        let counter = progress.map(|p| p.done.clone());
        let (x, y) = (
            x.as_array(),
            y.as_slice().map_err(|_| bad("y", "must be contiguous"))?,
        );
        let w = weights_slice(&sample_weight)?;
        let inner = &mut self.inner;
        compute(py, || {
            inner.grow_more(x, y, w, n_more, n_jobs, counter.as_deref())
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
    m.add("ForestError", m.py().get_type::<ForestError>())?;
    m.add("FORMAT_VERSION", crate::serialize::FORMAT_VERSION)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(_panic_for_test, m)?)?;
    Ok(())
}
