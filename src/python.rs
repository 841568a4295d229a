//! The pyo3 boundary (cargo feature `python`). It converts numpy arrays and
//! typed parameter objects (`_core.ForestParams`, `_core.Projection`) into the crate's
//! types, releases the GIL for every
//! computation, turns panics into errors, and maps [`Error`] to Python in one
//! place. No forest logic lives here.

use crate::cancel::Cancel;
use crate::error::Error;
use crate::forest::Forest;
use crate::params::{Criterion, ForestParams, MaxFeatures, SampleCount, Splitter, Task};
use crate::projection::{
    ArgValue, Density, Family, FamilyArgs, PatchGeometry, ProjectionKind, WeightScale,
};
use crate::sparse::{Features, Layout, SparseView};
use numpy::{
    IntoPyArray, PyArray1, PyArray2, PyArray3, PyReadonlyArray1, PyReadonlyArray1 as R1,
    PyReadonlyArray2,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{IntoPyDict, PyBool, PyBytes, PyDict, PyFloat, PyInt, PyString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

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

/// Runs `f` without the GIL, with panics turned into [`Error::Internal`], and
/// interruptible: about every 50 ms the calling thread takes the GIL back briefly to run
/// Python's signal handlers; when one raises (Ctrl-C's KeyboardInterrupt), the work is
/// cancelled, waited for, and that exception is returned.
fn compute<T: Send>(py: Python<'_>, f: impl FnOnce() -> Result<T, Error> + Send) -> PyResult<T> {
    compute_with(py, &Cancel::new(), f)
}

/// [`compute`] under `cancel`, which Python may also trip from another thread.
fn compute_with<T: Send>(
    py: Python<'_>,
    cancel: &Cancel,
    f: impl FnOnce() -> Result<T, Error> + Send,
) -> PyResult<T> {
    let raised: Arc<Mutex<Option<PyErr>>> = Arc::default();
    let slot = raised.clone();
    let poll = move || match Python::attach(|py| py.check_signals()) {
        Ok(()) => false,
        Err(e) => {
            *slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
            true
        }
    };
    let result = py.detach(|| {
        cancel.run_polling(poll, || match catch_unwind(AssertUnwindSafe(f)) {
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
    });
    // a handler's exception wins even over a result that was complete: the signal was
    // consumed and must reach the caller
    if let Some(e) = raised.lock().unwrap_or_else(|p| p.into_inner()).take() {
        return Err(e);
    }
    result.map_err(PyErr::from)
}

fn bad(name: &str, what: &str) -> PyErr {
    ForestError::new_err(format!("invalid parameter {name}: {what}"))
}

/// A Python int (not a bool or a float) that fits an `i64`, for parameter `key`.
fn int_arg(v: &Bound<'_, PyAny>, key: &str) -> PyResult<i64> {
    if v.is_instance_of::<PyBool>() || v.is_instance_of::<PyFloat>() {
        return Err(bad(key, "must be an integer"));
    }
    v.extract::<i64>()
        .map_err(|_| bad(key, "must be an integer"))
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
            "poisson" => Ok(Criterion::Poisson),
            "absolute_error" => Ok(Criterion::AbsoluteError),
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
/// X from Python: a 2-D float32 numpy array (C or F order), or sparse X as the tuple
/// `(format, (n_rows, n_cols), indptr, indices, data)` with format "csr" or "csc" and
/// uint64, uint32 and float32 arrays (what `obliqueforest._forest.core_X` builds; the
/// core checks the rest: sorted unique indices in range, finite values).
enum XArg<'py> {
    Dense(PyReadonlyArray2<'py, f32>),
    Sparse {
        layout: Layout,
        shape: (usize, usize),
        indptr: PyReadonlyArray1<'py, u64>,
        indices: PyReadonlyArray1<'py, u32>,
        data: PyReadonlyArray1<'py, f32>,
    },
}

impl<'a, 'py> FromPyObject<'a, 'py> for XArg<'py> {
    type Error = PyErr;
    fn extract(v: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if let Ok(x) = v.extract::<PyReadonlyArray2<'py, f32>>() {
            return Ok(XArg::Dense(x));
        }
        type Parts<'py> = (
            String,
            (usize, usize),
            PyReadonlyArray1<'py, u64>,
            PyReadonlyArray1<'py, u32>,
            PyReadonlyArray1<'py, f32>,
        );
        let (format, shape, indptr, indices, data) = v.extract::<Parts<'py>>().map_err(|_| {
            bad(
                "X",
                "must be a 2-D float32 array or a (format, shape, indptr, indices, data) \
                 tuple of uint64/uint32/float32 arrays",
            )
        })?;
        let layout = match format.as_str() {
            "csr" => Layout::Csr,
            "csc" => Layout::Csc,
            other => return Err(bad("X", &format!("unknown sparse format {other:?}"))),
        };
        Ok(XArg::Sparse {
            layout,
            shape,
            indptr,
            indices,
            data,
        })
    }
}

/// The borrowed arrays of an [`XArg`], taken with the GIL and read without it.
#[derive(Clone, Copy)]
enum XRef<'a> {
    Dense(ndarray::ArrayView2<'a, f32>),
    Sparse(Layout, (usize, usize), &'a [u64], &'a [u32], &'a [f32]),
}

impl XArg<'_> {
    fn view(&self) -> PyResult<XRef<'_>> {
        Ok(match self {
            XArg::Dense(x) => XRef::Dense(x.as_array()),
            XArg::Sparse {
                layout,
                shape,
                indptr,
                indices,
                data,
            } => {
                let contiguous = |_| bad("X", "sparse arrays must be contiguous");
                XRef::Sparse(
                    *layout,
                    *shape,
                    indptr.as_slice().map_err(contiguous)?,
                    indices.as_slice().map_err(contiguous)?,
                    data.as_slice().map_err(contiguous)?,
                )
            }
        })
    }
}

impl<'a> XRef<'a> {
    /// The core's input, sparse arrays checked (one pass over them, without the GIL).
    fn features(self) -> Result<Features<'a>, Error> {
        Ok(match self {
            XRef::Dense(x) => Features::Dense(x),
            XRef::Sparse(layout, shape, indptr, indices, data) => {
                Features::Sparse(SparseView::new(layout, shape, indptr, indices, data)?)
            }
        })
    }
}

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
    #[pyo3(signature = (*, density, feature_combinations, scaling=None))]
    fn sparse(
        density: Option<f64>,
        feature_combinations: Option<f64>,
        scaling: Option<&str>,
    ) -> PyResult<Self> {
        let scaling = match scaling {
            None => WeightScale::None,
            Some("robust") => WeightScale::Robust,
            Some(other) => {
                return Err(bad(
                    "scaling",
                    &format!("must be 'robust' or None, got {other:?}"),
                ))
            }
        };
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
            kind: ProjectionKind::SparseSigned { density, scaling },
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

    /// A registered projection family by its tag, with its arguments (None, bools, ints,
    /// floats, strings and 1-D sequences or arrays of them) converted generically; the
    /// family's own file builds and checks it.
    #[staticmethod]
    #[pyo3(signature = (tag, **args))]
    fn family(tag: &str, args: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let mut family_args = FamilyArgs::new();
        for (k, v) in args.into_iter().flat_map(|d| d.iter()) {
            let k: String = k.extract()?;
            let v = to_arg(&k, &v)?;
            family_args = family_args.with(&k, v);
        }
        Ok(PyProjection {
            kind: ProjectionKind::Family(Family::from_args(tag, family_args)?),
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
        max_samples, class_weight_subsample, oob, seed, ccp_alpha, monotonic_cst, n_jobs,
        n_outputs=None
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
        monotonic_cst: Option<Vec<i8>>,
        n_jobs: &Bound<'_, PyAny>,
        n_outputs: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        // n_classes: a count, or one count per output (multi-output classification)
        let per_output =
            n_classes.is_instance_of::<PyList>() || n_classes.is_instance_of::<PyTuple>();
        let class_counts: Option<Vec<usize>> = if per_output {
            Some(
                n_classes
                    .try_iter()?
                    .map(|c| Ok(named::<Count>(&c?, "n_classes")?.0))
                    .collect::<PyResult<_>>()?,
            )
        } else {
            named_opt::<Count>(n_classes, "n_classes")?.map(|c| vec![c.0])
        };
        let n_outputs = match n_outputs {
            Some(v) => named::<Count>(v, "n_outputs")?.0,
            None => 1,
        };
        let task = match (task, class_counts) {
            ("classification", Some(c)) if c.len() != n_outputs => {
                return Err(bad(
                    "n_outputs",
                    &format!("{n_outputs} outputs but n_classes for {}", c.len()),
                ))
            }
            ("classification", Some(c)) if c.len() == 1 && !per_output => {
                Task::Classification { n_classes: c[0] }
            }
            ("classification", Some(n_classes)) => Task::MultiClassification { n_classes },
            ("classification", None) => return Err(bad("n_classes", "classification needs it")),
            ("regression", None) if n_outputs == 1 => Task::Regression,
            ("regression", None) => Task::MultiRegression { n_outputs },
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
                monotonic_cst: monotonic_cst.unwrap_or_default(),
                n_jobs,
            },
        })
    }

    /// Pickling (obliqueforest.dask sends parameters to its workers): the parameters in
    /// postcard's serde encoding, read back by `_from_bytes`.
    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyBytes>,))> {
        let py = slf.py();
        let p = &slf.get().inner;
        // with the fields a model file leaves out (they matter to a fit on a worker)
        let bytes = postcard::to_stdvec(&(p, p.ccp_alpha, &p.monotonic_cst, p.n_jobs))
            .map_err(|e| PyErr::from(Error::Internal(format!("encode: {e}"))))?;
        let from_bytes = slf.get_type().getattr("_from_bytes")?;
        Ok((from_bytes, (PyBytes::new(py, &bytes),)))
    }

    #[staticmethod]
    fn _from_bytes(data: &[u8]) -> PyResult<Self> {
        let (mut inner, ccp_alpha, monotonic_cst, n_jobs): (ForestParams, f64, Vec<i8>, i64) =
            postcard::from_bytes(data)
                .map_err(|e| PyErr::from(Error::CorruptModel(format!("decode parameters: {e}"))))?;
        inner.ccp_alpha = ccp_alpha;
        inner.monotonic_cst = monotonic_cst;
        inner.n_jobs = n_jobs;
        Ok(PyForestParams { inner })
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

/// A counter of finished trees and a cancel switch, shared with another Python thread
/// during a fit (the thread that shows progress, or handles Ctrl-C for worker threads).
#[pyclass(module = "obliqueforest._core", frozen)]
struct Progress {
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
        x: XArg<'_>,
        y: PyReadonlyArray1<'_, f64>,
        sample_weight: Option<PyReadonlyArray1<'_, f64>>,
        params: PyRef<'_, PyForestParams>,
        progress: Option<PyRef<'_, Progress>>,
    ) -> PyResult<PyForest> {
        let params = params.inner.clone();
        let (counter, cancel) = progress
            .map(|p| (Some(p.done.clone()), p.cancel.clone()))
            .unwrap_or_default();
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

    #[pyo3(signature = (
        x, y, sample_weight, n_more, progress=None, n_jobs=None, ccp_alpha=None,
        monotonic_cst=None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn fit_more(
        &mut self,
        py: Python<'_>,
        x: XArg<'_>,
        y: PyReadonlyArray1<'_, f64>,
        sample_weight: Option<PyReadonlyArray1<'_, f64>>,
        n_more: &Bound<'_, PyAny>,
        progress: Option<PyRef<'_, Progress>>,
        n_jobs: Option<i64>,
        ccp_alpha: Option<f64>,
        monotonic_cst: Option<Vec<i8>>,
    ) -> PyResult<()> {
        let n_more = named::<Count>(n_more, "n_more")?.0;
        let (counter, cancel) = progress
            .map(|p| (Some(p.done.clone()), p.cancel.clone()))
            .unwrap_or_default();
        let (x, y) = (
            x.view()?,
            y.as_slice().map_err(|_| bad("y", "must be contiguous"))?,
        );
        let w = weights_slice(&sample_weight)?;
        let inner = &mut self.inner;
        compute_with(py, &cancel, || {
            inner.grow_more(
                x.features()?,
                y,
                w,
                n_more,
                n_jobs,
                ccp_alpha,
                monotonic_cst.as_deref(),
                counter.as_deref(),
            )
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

    /// A forest of a registered family: `(tag, args)`, the arguments that
    /// `_core.Projection.family(tag, **args)` builds the same family from (integer
    /// sequences as int64 arrays, float ones as float64 arrays); None for other families.
    fn projection_family<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<Option<(String, Bound<'py, PyDict>)>> {
        let Some(f) = self.inner.params().projection.family() else {
            return Ok(None);
        };
        let d = PyDict::new(py);
        for (k, v) in f.get().args().iter() {
            d.set_item(k, from_arg(py, v)?)?;
        }
        Ok(Some((f.tag().to_string(), d)))
    }

    #[getter]
    fn n_jobs(&self) -> i64 {
        self.inner.params().n_jobs
    }
    /// Memory held by the trees and their prediction layout, in bytes.
    #[getter]
    fn n_bytes(&self) -> u64 {
        self.inner
            .trees()
            .iter()
            .map(crate::limits::tree_bytes)
            .sum()
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

    /// Computes the out-of-bag predictions of every tree on the training rows `x` (a warm
    /// start that switches `oob_score` on).
    fn compute_oob(
        &mut self,
        py: Python<'_>,
        x: PyReadonlyArray2<'_, f32>,
        n_jobs: i64,
    ) -> PyResult<()> {
        let x = x.as_array();
        let inner = &mut self.inner;
        compute(py, || inner.compute_oob(x, n_jobs))
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

/// The number of threads `n_jobs` stands for (None is 1, -1 all cores, -2 all but one,
/// counts above the cores capped): the package's one rule, `threads::n_threads`.
#[pyfunction]
#[pyo3(signature = (n_jobs=None))]
fn n_threads(n_jobs: Option<Bound<'_, PyAny>>) -> PyResult<usize> {
    let n_jobs = match n_jobs {
        None => None,
        Some(v) if v.is_none() => None,
        Some(v) => {
            let is_int = v.is_instance_of::<PyInt>() && !v.is_instance_of::<PyBool>();
            let j = match int_arg(&v, "n_jobs") {
                Ok(j) => j,
                // an int beyond 64 bits means as many (or as few) threads as possible
                Err(_) if is_int => {
                    if v.gt(0)? {
                        i64::MAX
                    } else {
                        i64::MIN
                    }
                }
                Err(_) => return Err(bad("n_jobs", "must be an integer or None")),
            };
            Some(j)
        }
    };
    Ok(crate::threads::n_threads(n_jobs)?)
}

/// Sets the process-wide memory limit for fitted models: None (no limit), "auto" (80% of
/// the memory available when a fit starts) or a number of bytes.
#[pyfunction]
fn set_memory_limit(limit: Option<Bound<'_, PyAny>>) -> PyResult<()> {
    use crate::limits::MemoryLimit;
    let limit = match limit {
        None => MemoryLimit::Unlimited,
        Some(v) if v.is_none() => MemoryLimit::Unlimited,
        Some(v) if v.is_instance_of::<PyString>() => match v.extract::<String>()?.as_str() {
            "auto" => MemoryLimit::Auto,
            other => return Err(bad("limit", &format!("unknown option {other:?}"))),
        },
        Some(v) => {
            let b = int_arg(&v, "limit")
                .ok()
                .and_then(|b| u64::try_from(b).ok())
                .filter(|&b| b > 0)
                .ok_or_else(|| {
                    bad(
                        "limit",
                        "must be None, 'auto' or a positive number of bytes",
                    )
                })?;
            MemoryLimit::Bytes(b)
        }
    };
    crate::limits::set_memory_limit(limit);
    Ok(())
}

/// The memory limit for fitted models: None, "auto" or a number of bytes.
#[pyfunction]
fn memory_limit(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    use crate::limits::MemoryLimit;
    Ok(match crate::limits::memory_limit() {
        MemoryLimit::Unlimited => py.None().into_bound(py),
        MemoryLimit::Auto => PyString::new(py, "auto").into_any(),
        MemoryLimit::Bytes(b) => b.into_pyobject(py)?.into_any(),
    })
}

/// Trees `start..end` of a forest, grown apart from the others (`obliqueforest.dask` grows
/// them on a cluster's workers); `Forest.from_parts` joins them (see `_core.pyi`).
#[pyclass(name = "ForestPart", module = "obliqueforest._core", frozen)]
struct PyForestPart {
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
                Task::MultiClassification { .. } | Task::MultiRegression { .. } => {
                    return Err(bad("n_classes", "is for single-output classification"))
                }
            }
        }
        let counter = progress.map(|p| p.done.clone());
        let (x, y) = (
            x.view()?,
            y.as_slice().map_err(|_| bad("y", "must be contiguous"))?,
        );
        let w = weights_slice(&sample_weight)?;
        let inner = compute(py, || {
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

/// Raises an internal error from inside the panic guard (tests use it to prove that a
/// panic in the core reaches Python as an exception, not a crash).
#[pyfunction]
fn _panic_for_test(py: Python<'_>) -> PyResult<()> {
    compute(py, || -> Result<(), Error> {
        panic!("deliberate test panic")
    })
}

// ---------------------------------------------------------------------------------------
// Model files: conversion between the Python parts dict and `crate::model` (the format
// itself lives in `model.rs`).

use crate::model::{
    self as mf, ArrayData, Body, ClassLabels, Encoder, Estimator, Header, ModelFile, Param,
    Rotation, Scaling, Value,
};
use pyo3::types::{PyList, PyTuple};

fn model_err(what: &str, reason: impl std::fmt::Display) -> PyErr {
    ForestError::new_err(format!("cannot save the model: {what}: {reason}"))
}

fn numpy<'py>(py: Python<'py>) -> PyResult<Bound<'py, PyModule>> {
    py.import("numpy")
}

/// A Python object as a plain [`Value`].
fn to_value(name: &str, obj: &Bound<'_, PyAny>) -> PyResult<Value> {
    let py = obj.py();
    let np = numpy(py)?;
    if obj.is_none() {
        return Ok(Value::None);
    }
    if obj.is_instance(&np.getattr("ndarray")?)? {
        let dtype = obj.getattr("dtype")?;
        let kind: String = dtype.getattr("kind")?.extract()?;
        let itemsize: usize = dtype.getattr("itemsize")?.extract()?;
        let shape: Vec<u64> = obj.getattr("shape")?.extract()?;
        let flat = obj.call_method1("ravel", ("C",))?;
        let data = match kind.as_str() {
            "f" if itemsize == 4 => ArrayData::F32(flat.call_method0("tolist")?.extract()?),
            "f" => ArrayData::F64(
                flat.call_method1("astype", ("float64",))?
                    .call_method0("tolist")?
                    .extract()?,
            ),
            "i" | "u" => ArrayData::I64(
                flat.call_method0("tolist")?
                    .extract()
                    .map_err(|_| model_err(name, "integer array values beyond int64"))?,
            ),
            "b" => ArrayData::Bool(flat.call_method0("tolist")?.extract()?),
            "U" | "O" if shape.len() == 1 => {
                return Ok(Value::Strs(
                    flat.call_method0("tolist")?.extract().map_err(|_| {
                        model_err(name, "only arrays of strings can be saved as text")
                    })?,
                ))
            }
            other => return Err(model_err(name, format!("arrays of dtype kind {other:?}"))),
        };
        return Ok(Value::Array { shape, data });
    }
    let obj = if obj.is_instance(&np.getattr("generic")?)? {
        obj.call_method0("item")?
    } else {
        obj.clone()
    };
    if obj.is_instance_of::<PyBool>() {
        return Ok(Value::Bool(obj.extract()?));
    }
    if obj.is_instance_of::<pyo3::types::PyInt>() {
        return Ok(Value::Int(
            obj.extract()
                .map_err(|_| model_err(name, "integer beyond int64"))?,
        ));
    }
    if obj.is_instance_of::<PyFloat>() {
        return Ok(Value::Float(obj.extract()?));
    }
    if obj.is_instance_of::<PyString>() {
        return Ok(Value::Str(obj.extract()?));
    }
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        let items: Vec<Bound<'_, PyAny>> = obj.try_iter()?.collect::<PyResult<_>>()?;
        let all = |f: &dyn Fn(&Bound<'_, PyAny>) -> bool| items.iter().all(f);
        if all(&|v| v.is_instance_of::<PyBool>()) {
            return Ok(Value::Bools(obj.extract()?));
        }
        if all(&|v| v.is_instance_of::<pyo3::types::PyInt>() && !v.is_instance_of::<PyBool>()) {
            return Ok(Value::Ints(
                obj.extract()
                    .map_err(|_| model_err(name, "integer beyond int64"))?,
            ));
        }
        if all(&|v| {
            (v.is_instance_of::<pyo3::types::PyInt>() || v.is_instance_of::<PyFloat>())
                && !v.is_instance_of::<PyBool>()
        }) {
            return Ok(Value::Floats(obj.extract()?));
        }
        if all(&|v| v.is_instance_of::<PyString>()) {
            return Ok(Value::Strs(obj.extract()?));
        }
    }
    Err(model_err(
        name,
        format!(
            "a {} has no plain form (numbers, strings, lists and arrays of them)",
            obj.get_type().name()?
        ),
    ))
}

fn from_value<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::None => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Int(i) => i.into_pyobject(py)?.into_any(),
        Value::Float(f) => f.into_pyobject(py)?.into_any(),
        Value::Str(s) => PyString::new(py, s).into_any(),
        Value::Bools(v) => PyList::new(py, v)?.into_any(),
        Value::Ints(v) => PyList::new(py, v)?.into_any(),
        Value::Floats(v) => PyList::new(py, v)?.into_any(),
        Value::Strs(v) => PyList::new(py, v)?.into_any(),
        Value::Array { shape, data } => {
            let shape: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
            let flat = match data {
                ArrayData::F64(v) => v.clone().into_pyarray(py).into_any(),
                ArrayData::F32(v) => v.clone().into_pyarray(py).into_any(),
                ArrayData::I64(v) => v.clone().into_pyarray(py).into_any(),
                ArrayData::Bool(v) => v.clone().into_pyarray(py).into_any(),
            };
            flat.call_method1("reshape", (shape,))?
        }
    })
}

fn to_param(name: &str, obj: &Bound<'_, PyAny>) -> PyResult<Param> {
    if let Ok(d) = obj.cast::<PyDict>() {
        if let Some(kind) = d.get_item("__projection__")? {
            let mut fields = Vec::new();
            for (k, v) in d.iter() {
                let k: String = k.extract()?;
                if k != "__projection__" {
                    fields.push((k.clone(), to_value(&k, &v)?));
                }
            }
            return Ok(Param::Projection {
                name: kind.extract()?,
                fields,
            });
        }
        let mut pairs = Vec::new();
        for (k, v) in d.iter() {
            pairs.push((to_value(name, &k)?, to_value(name, &v)?));
        }
        return Ok(Param::Map(pairs));
    }
    Ok(Param::Value(to_value(name, obj)?))
}

fn from_param<'py>(py: Python<'py>, p: &Param) -> PyResult<Bound<'py, PyAny>> {
    Ok(match p {
        Param::Value(v) => from_value(py, v)?,
        Param::Projection { name, fields } => {
            let d = PyDict::new(py);
            d.set_item("__projection__", name)?;
            for (k, v) in fields {
                d.set_item(k, from_value(py, v)?)?;
            }
            d.into_any()
        }
        Param::Map(pairs) => {
            let d = PyDict::new(py);
            for (k, v) in pairs {
                d.set_item(from_value(py, k)?, from_value(py, v)?)?;
            }
            d.into_any()
        }
    })
}

/// `classes_` as labels. A tuple `(kind, itemsize, values)` stands for an array of that
/// numpy dtype kind and item size (tests use it for dtypes too large to build).
fn to_classes(obj: &Bound<'_, PyAny>) -> PyResult<ClassLabels> {
    // a multi-output classifier's classes_: a list of arrays, one per output
    if obj.is_instance_of::<PyList>() {
        return Ok(ClassLabels::PerOutput(
            obj.try_iter()?
                .map(|c| to_classes(&c?))
                .collect::<PyResult<_>>()?,
        ));
    }
    let (kind, itemsize, values): (String, u64, Bound<'_, PyAny>) =
        if obj.is_instance_of::<PyTuple>() {
            obj.extract()?
        } else {
            let dtype = obj.getattr("dtype")?;
            (
                dtype.getattr("kind")?.extract()?,
                dtype.getattr("itemsize")?.extract()?,
                obj.call_method0("tolist")?,
            )
        };
    let bytes = u8::try_from(itemsize).unwrap_or(0);
    let err = |what: &str| model_err("classes_", what.to_string());
    Ok(match kind.as_str() {
        "b" => ClassLabels::Bool(values.extract()?),
        "i" => ClassLabels::Int {
            bytes,
            values: values.extract()?,
        },
        "u" => ClassLabels::UInt {
            bytes,
            values: values.extract()?,
        },
        "f" => ClassLabels::Float {
            bytes,
            values: values.extract()?,
        },
        "U" => ClassLabels::Str {
            width: itemsize / 4,
            values: values.extract()?,
        },
        "O" => ClassLabels::Object(values.extract().map_err(|_| {
            err("object-dtype labels can be saved when they are all strings; convert them with astype(str)")
        })?),
        other => return Err(err(&format!("labels of numpy dtype kind {other:?} cannot be saved"))),
    })
}

fn from_classes<'py>(py: Python<'py>, c: &ClassLabels) -> PyResult<Bound<'py, PyAny>> {
    let list = match c {
        ClassLabels::PerOutput(outputs) => {
            let arrays = outputs
                .iter()
                .map(|o| from_classes(py, o))
                .collect::<PyResult<Vec<_>>>()?;
            return Ok(PyList::new(py, arrays)?.into_any());
        }
        ClassLabels::Bool(v) => PyList::new(py, v)?,
        ClassLabels::Int { values, .. } => PyList::new(py, values)?,
        ClassLabels::UInt { values, .. } => PyList::new(py, values)?,
        ClassLabels::Float { values, .. } => PyList::new(py, values)?,
        ClassLabels::Str { values, .. } | ClassLabels::Object(values) => PyList::new(py, values)?,
    };
    let dtype = c.numpy_dtype();
    numpy(py)?.call_method1("array", (list, dtype))
}

fn opt_item<'py>(d: &Bound<'py, PyDict>, key: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
    Ok(d.get_item(key)?.filter(|v| !v.is_none()))
}

fn f64_vec(obj: &Bound<'_, PyAny>) -> PyResult<Vec<f64>> {
    obj.call_method1("ravel", ("C",))
        .and_then(|f| f.call_method0("tolist"))
        .or_else(|_| Ok::<_, PyErr>(obj.clone()))?
        .extract()
}

/// Reads the parts dict into a header and a body whose forests are indices into `refs`.
fn parse_parts<'py>(
    parts: &Bound<'py, PyDict>,
    refs: &mut Vec<PyRef<'py, PyForest>>,
) -> PyResult<(Header, Body<usize>)> {
    let get = |k: &str| {
        parts
            .get_item(k)?
            .ok_or_else(|| model_err(k, "missing from the parts"))
    };
    let estimator = Estimator::from_name(&get("estimator")?.extract::<String>()?)?;
    let mut forest_of = |obj: &Bound<'py, PyAny>| -> PyResult<usize> {
        refs.push(obj.extract::<PyRef<'py, PyForest>>()?);
        Ok(refs.len() - 1)
    };
    let body = if let Some(f) = opt_item(parts, "forest")? {
        Body::Forest(forest_of(&f)?)
    } else if let Some(r) = opt_item(parts, "rotation")? {
        let r = r.cast::<PyDict>()?.clone();
        let item = |k: &str| r.get_item(k)?.ok_or_else(|| model_err(k, "missing"));
        let scaling = match opt_item(&r, "scaling")? {
            None => Scaling::None,
            Some(s) => {
                let kind: String = s.get_item(0)?.extract()?;
                match kind.as_str() {
                    "minmax" => Scaling::MinMax {
                        min: f64_vec(&s.get_item(1)?)?,
                        span: f64_vec(&s.get_item(2)?)?,
                    },
                    "rank" => Scaling::Rank {
                        values: s
                            .get_item(1)?
                            .try_iter()?
                            .map(|a| f64_vec(&a?))
                            .collect::<PyResult<_>>()?,
                    },
                    other => return Err(model_err("scaling", format!("unknown {other:?}"))),
                }
            }
        };
        let mut forests = Vec::new();
        for f in item("forests")?.try_iter()? {
            let f = f?;
            forests.push(if f.is_none() {
                None
            } else {
                Some(forest_of(&f)?)
            });
        }
        Body::Rotation(Rotation {
            scaling,
            rotations: f64_vec(&item("rotations")?)?,
            n_trees: item("n_trees")?.call_method0("tolist")?.extract()?,
            forests,
        })
    } else if let Some(e) = opt_item(parts, "encoder")? {
        let e = e.cast::<PyDict>()?.clone();
        let item = |k: &str| e.get_item(k)?.ok_or_else(|| model_err(k, "missing"));
        Body::Encoder(Encoder {
            forest: forest_of(&item("forest")?)?,
            n_components: item("n_components")?.extract()?,
            leaf_map: f64_vec(&item("leaf_map")?)?,
            leaf_mass: f64_vec(&item("leaf_mass")?)?,
        })
    } else {
        return Err(model_err("forest", "the parts hold no forest"));
    };
    let first = *body
        .forests()
        .first()
        .ok_or_else(|| model_err("forests", "the parts hold no forest"))?;
    let task = refs[*first].inner.params().task.clone();
    let mut params = Vec::new();
    for (k, v) in get("params")?.cast::<PyDict>()?.iter() {
        let k: String = k.extract()?;
        params.push((k.clone(), to_param(&k, &v)?));
    }
    let mut attributes = Vec::new();
    for (k, v) in get("attributes")?.cast::<PyDict>()?.iter() {
        let k: String = k.extract()?;
        attributes.push((k.clone(), to_value(&k, &v)?));
    }
    let header = Header {
        estimator,
        task,
        n_features: get("n_features")?.extract()?,
        feature_names: opt_item(parts, "feature_names")?
            .map(|v| v.extract())
            .transpose()
            .map_err(|_| model_err("feature_names_in_", "must be strings"))?,
        classes: opt_item(parts, "classes")?
            .map(|c| to_classes(&c))
            .transpose()?,
        params,
        attributes,
    };
    Ok((header, body))
}

fn write_parts(
    py: Python<'_>,
    path: std::path::PathBuf,
    parts: &Bound<'_, PyDict>,
    checked: bool,
) -> PyResult<()> {
    let mut refs = Vec::new();
    let (header, body) = parse_parts(parts, &mut refs)?;
    let forests: Vec<&Forest> = refs.iter().map(|r| &r.inner).collect();
    let file = ModelFile {
        header,
        body: body.map(|i| forests[i]),
    };
    compute(py, || {
        if checked {
            mf::save_file(&file, &path)
        } else {
            mf::save_file_unchecked(&file, &path)
        }
    })
}

/// Writes a model file from its parts (see `_io.py`); checks them first.
#[pyfunction]
fn save_model(py: Python<'_>, path: std::path::PathBuf, parts: &Bound<'_, PyDict>) -> PyResult<()> {
    write_parts(py, path, parts, true)
}

/// Writes parts without checking them: tests craft bad files with it.
#[pyfunction]
fn _save_model_unchecked_for_test(
    py: Python<'_>,
    path: std::path::PathBuf,
    parts: &Bound<'_, PyDict>,
) -> PyResult<()> {
    write_parts(py, path, parts, false)
}

/// Reads and checks a model file; returns its parts (the forests as `Forest` objects).
#[pyfunction]
fn load_model<'py>(py: Python<'py>, path: std::path::PathBuf) -> PyResult<Bound<'py, PyDict>> {
    let model = compute(py, || crate::model::Model::load(&path))?;
    let (h, body) = model.into_parts();
    let d = PyDict::new(py);
    d.set_item("estimator", h.estimator.name())?;
    d.set_item("n_features", h.n_features)?;
    d.set_item("feature_names", h.feature_names)?;
    d.set_item(
        "classes",
        h.classes
            .as_ref()
            .map(|c| from_classes(py, c))
            .transpose()?,
    )?;
    let params = PyDict::new(py);
    for (k, v) in &h.params {
        params.set_item(k, from_param(py, v)?)?;
    }
    d.set_item("params", params)?;
    let attributes = PyDict::new(py);
    for (k, v) in &h.attributes {
        attributes.set_item(k, from_value(py, v)?)?;
    }
    d.set_item("attributes", attributes)?;
    let wrap = |f: Forest| Py::new(py, PyForest { inner: f });
    match body {
        Body::Forest(f) => d.set_item("forest", wrap(f)?)?,
        Body::Rotation(r) => {
            let rd = PyDict::new(py);
            let p = h.n_features as usize;
            let n_rot = r.n_trees.len();
            let scaling = match r.scaling {
                Scaling::None => py.None().into_bound(py),
                Scaling::MinMax { min, span } => {
                    ("minmax", min.into_pyarray(py), span.into_pyarray(py))
                        .into_pyobject(py)?
                        .into_any()
                }
                Scaling::Rank { values } => {
                    let arrays: Vec<_> = values.into_iter().map(|v| v.into_pyarray(py)).collect();
                    ("rank", arrays).into_pyobject(py)?.into_any()
                }
            };
            rd.set_item("scaling", scaling)?;
            rd.set_item(
                "rotations",
                r.rotations
                    .into_pyarray(py)
                    .call_method1("reshape", ((n_rot, p, p),))?,
            )?;
            let n_trees: Vec<i64> = r.n_trees.iter().map(|&n| n as i64).collect();
            rd.set_item("n_trees", n_trees.into_pyarray(py))?;
            let forests = r
                .forests
                .into_iter()
                .map(|f| f.map(wrap).transpose())
                .collect::<PyResult<Vec<_>>>()?;
            rd.set_item("forests", forests)?;
            d.set_item("rotation", rd)?;
        }
        Body::Encoder(e) => {
            let ed = PyDict::new(py);
            let d_ = e.n_components as usize;
            let n_leaves = e.leaf_mass.len();
            ed.set_item("n_components", e.n_components)?;
            ed.set_item(
                "leaf_map",
                e.leaf_map
                    .into_pyarray(py)
                    .call_method1("reshape", ((n_leaves, d_),))?,
            )?;
            ed.set_item("leaf_mass", e.leaf_mass.into_pyarray(py))?;
            ed.set_item("forest", wrap(e.forest)?)?;
            d.set_item("encoder", ed)?;
        }
    }
    Ok(d)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyForest>()?;
    m.add_class::<Progress>()?;
    m.add_class::<PyForestPart>()?;
    m.add_class::<PyForestParams>()?;
    m.add_class::<PyProjection>()?;
    m.add("ForestError", m.py().get_type::<ForestError>())?;
    m.add("FORMAT_VERSION", crate::serialize::FORMAT_VERSION)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(_panic_for_test, m)?)?;
    m.add_function(wrap_pyfunction!(n_threads, m)?)?;
    m.add_function(wrap_pyfunction!(set_memory_limit, m)?)?;
    m.add_function(wrap_pyfunction!(memory_limit, m)?)?;
    m.add_function(wrap_pyfunction!(save_model, m)?)?;
    m.add_function(wrap_pyfunction!(load_model, m)?)?;
    m.add_function(wrap_pyfunction!(_save_model_unchecked_for_test, m)?)?;
    m.add_function(wrap_pyfunction!(estimator_names, m)?)?;
    m.add_function(wrap_pyfunction!(part_forest, m)?)?;
    m.add("MODEL_FORMAT_VERSION", crate::model::MODEL_FORMAT_VERSION)?;
    Ok(())
}

/// A family argument from Python: None, a bool, int, float or str (numpy scalars
/// included), or a 1-D sequence or array of bools, ints or floats.
fn to_arg(name: &str, obj: &Bound<'_, PyAny>) -> PyResult<ArgValue> {
    let np = obj.py().import("numpy")?;
    let obj = if obj.is_instance(&np.getattr("generic")?)? {
        obj.call_method0("item")?
    } else {
        obj.clone()
    };
    if obj.is_none() {
        return Ok(ArgValue::None);
    }
    if obj.is_instance_of::<PyBool>() {
        return Ok(ArgValue::Bool(obj.extract()?));
    }
    if obj.is_instance_of::<PyInt>() {
        return Ok(ArgValue::Int(int_arg(&obj, name)?));
    }
    if obj.is_instance_of::<PyFloat>() {
        return Ok(ArgValue::Float(obj.extract()?));
    }
    if obj.is_instance_of::<PyString>() {
        return Ok(ArgValue::Str(obj.extract()?));
    }
    let arr = np.call_method1("asarray", (&obj,)).map_err(|_| {
        bad(
            name,
            "must be a number, a string or a 1-D sequence of numbers",
        )
    })?;
    if arr.getattr("ndim")?.extract::<usize>()? != 1 {
        return Err(bad(name, "must be a 1-D sequence"));
    }
    let kind: String = arr.getattr("dtype")?.getattr("kind")?.extract()?;
    match kind.as_str() {
        "b" => Ok(ArgValue::Bools(arr.call_method0("tolist")?.extract()?)),
        "i" | "u" => {
            let a = arr
                .call_method(
                    "astype",
                    ("int64",),
                    Some(&[("casting", "safe")].into_py_dict(obj.py())?),
                )
                .map_err(|_| bad(name, "integers beyond int64"))?;
            Ok(ArgValue::Ints(
                a.extract::<PyReadonlyArray1<'_, i64>>()?
                    .as_array()
                    .to_vec(),
            ))
        }
        "f" => {
            let a = arr.call_method1("astype", ("float64",))?;
            Ok(ArgValue::Floats(
                a.extract::<PyReadonlyArray1<'_, f64>>()?
                    .as_array()
                    .to_vec(),
            ))
        }
        _ => Err(bad(name, "must hold bools, ints or floats")),
    }
}

/// A family argument for Python: sequences of ints or floats as numpy arrays.
fn from_arg<'py>(py: Python<'py>, v: &ArgValue) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        ArgValue::None => py.None().into_bound(py),
        ArgValue::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        ArgValue::Int(i) => i.into_pyobject(py)?.into_any(),
        ArgValue::Float(f) => f.into_pyobject(py)?.into_any(),
        ArgValue::Str(s) => PyString::new(py, s).into_any(),
        ArgValue::Bools(v) => v.clone().into_pyarray(py).into_any(),
        ArgValue::Ints(v) => v.clone().into_pyarray(py).into_any(),
        ArgValue::Floats(v) => v.clone().into_pyarray(py).into_any(),
    })
}

/// The Python class names of the estimators a model file may hold
/// (`model::Estimator::ALL`, in declaration order): the package's one list of
/// estimators is checked against them.
#[pyfunction]
fn estimator_names() -> Vec<&'static str> {
    crate::model::Estimator::ALL
        .iter()
        .map(|e| e.name())
        .collect()
}

/// The trees of a part as a forest of their own (`Forest::select` of all of them): a
/// per-tree estimator regrows tree `t` of a forest as the part `t..t + 1`.
#[pyfunction]
fn part_forest(part: PyRef<'_, PyForestPart>) -> PyResult<PyForest> {
    let forest = part.inner.forest();
    let all: Vec<usize> = (0..forest.trees().len()).collect();
    Ok(PyForest {
        inner: forest.select(&all)?,
    })
}
