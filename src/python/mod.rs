//! The pyo3 boundary (cargo feature `python`). It converts numpy arrays and
//! typed parameter objects (`_core.ForestParams`, `_core.Projection`) into the crate's
//! types, releases the GIL for every computation, turns panics into errors, and maps
//! [`Error`] to Python in one place. No forest logic lives here.
//!
//! Rooms: this file holds the error mapping, the GIL-free [`compute`] guard, the small
//! argument extractors and the module's registration; [`convert`] turns Python objects into
//! the crate's inputs (X, parameters' enums, plain values); [`params`] builds
//! `_core.Projection` and `_core.ForestParams`; [`forest`] wraps a fitted forest, its parts
//! and progress; [`model_file`] turns the Python parts of a model into a model file and back.

mod convert;
mod forest;
mod model_file;
mod params;

use crate::cancel::Cancel;
use crate::error::Error;
use numpy::{IntoPyArray, PyArray2, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyString, PyType};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};

/// The extension's Rust allocations: large ones mapped and unmapped on their own, so that a
/// fit's freed per-row buffers go back to the system ([`crate::alloc::MappedLarge`]). The
/// interpreter and NumPy keep their allocator.
#[global_allocator]
static ALLOCATOR: crate::alloc::MappedLarge = crate::alloc::MappedLarge;

// named by the module's full path, which pickle finds the classes under (errors raised in
// a worker process, by Dask or joblib, travel back pickled)
pyo3::create_exception!(
    obliqueforest._core,
    ForestError,
    PyValueError,
    "An error raised by the obliqueforest Rust core."
);

pyo3::create_exception!(
    obliqueforest._core,
    ForestInternalError,
    ForestError,
    "An internal error of the obliqueforest Rust core: a panic or a broken invariant, \
     never bad input (a bug; please report it). A subclass of ForestError, so that code \
     which handles ForestError keeps working and tests can tell a bug from a refusal."
);

/// The one mapping of core errors to Python: [`Error::Internal`] (panics included, see
/// `compute`) to `ForestInternalError`, an allocation the machine refused
/// ([`Error::OutOfMemory`]) to Python's `MemoryError`, a file the system could not read
/// or write ([`Error::Io`]) to the `OSError` of its kind (`FileNotFoundError`,
/// `PermissionError`, ...) that is also a `ForestError` (`file_error_types`), everything
/// else to `ForestError`.
impl From<Error> for PyErr {
    fn from(e: Error) -> PyErr {
        match e {
            Error::Internal(_) => ForestInternalError::new_err(e.to_string()),
            Error::OutOfMemory(_) => pyo3::exceptions::PyMemoryError::new_err(e.to_string()),
            Error::Io { kind, errno, .. } => {
                let message = e.to_string();
                Python::attach(|py| file_error(py, kind, errno, &message))
                    .unwrap_or_else(|failed| failed)
            }
            _ => ForestError::new_err(e.to_string()),
        }
    }
}

/// The file errors' classes: for each of `FileNotFoundError`, `PermissionError`,
/// `IsADirectoryError` and `OSError`, a subclass of it and of `ForestError`, so that
/// `except FileNotFoundError` and `except ForestError` both catch a missing model file.
/// Made once, when first needed.
static FILE_ERRORS: PyOnceLock<Vec<Py<PyType>>> = PyOnceLock::new();

/// The OS errors [`FILE_ERRORS`] derive from, in its order, with their subclasses' names.
const FILE_ERROR_BASES: [(&str, &str); 4] = [
    ("FileNotFoundError", "ForestFileNotFoundError"),
    ("PermissionError", "ForestPermissionError"),
    ("IsADirectoryError", "ForestIsADirectoryError"),
    ("OSError", "ForestOSError"),
];

fn file_error_types(py: Python<'_>) -> PyResult<&Vec<Py<PyType>>> {
    FILE_ERRORS.get_or_try_init(py, || {
        let builtins = py.import("builtins")?;
        let make = builtins.getattr("type")?;
        let forest = py.get_type::<ForestError>();
        FILE_ERROR_BASES
            .iter()
            .map(|(base, name)| {
                let namespace = PyDict::new(py);
                namespace.set_item("__module__", "obliqueforest._core")?;
                namespace.set_item(
                    "__doc__",
                    format!("A model file the system could not read or write: a {base} and a ForestError."),
                )?;
                let bases = (builtins.getattr(*base)?, forest.clone());
                let class = make.call1((*name, bases, namespace))?;
                Ok(class.cast_into::<PyType>()?.unbind())
            })
            .collect()
    })
}

/// The Python exception of [`Error::Io`]: an `OSError` subclass chosen by `kind`, with
/// `errno` when the system gave one (`str()` is "[Errno 2] cannot read ...").
fn file_error(
    py: Python<'_>,
    kind: std::io::ErrorKind,
    errno: Option<i32>,
    message: &str,
) -> PyResult<PyErr> {
    use std::io::ErrorKind;
    let i = match kind {
        ErrorKind::NotFound => 0,
        ErrorKind::PermissionDenied => 1,
        ErrorKind::IsADirectory => 2,
        _ => 3,
    };
    let class = file_error_types(py)?[i].bind(py);
    let value = match errno {
        Some(n) => class.call1((n, message))?,
        None => class.call1((message,))?,
    };
    Ok(PyErr::from_value(value))
}

/// Runs `f` without the GIL, with panics turned into [`Error::Internal`], and
/// interruptible: about every 50 ms the calling thread takes the GIL back briefly to run
/// Python's signal handlers; when one raises (Ctrl-C's KeyboardInterrupt), the work is
/// cancelled, waited for, and that exception is returned.
pub(super) fn compute<T: Send>(
    py: Python<'_>,
    f: impl FnOnce() -> Result<T, Error> + Send,
) -> PyResult<T> {
    compute_with(py, &Cancel::new(), f)
}

/// [`compute`] under `cancel`, which Python may also trip from another thread.
pub(super) fn compute_with<T: Send>(
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
    let result = py.detach(|| cancel.run_polling(poll, || caught(f)));
    // a handler's exception wins even over a result that was complete: the signal was
    // consumed and must reach the caller
    if let Some(e) = raised.lock().unwrap_or_else(|p| p.into_inner()).take() {
        return Err(e);
    }
    result.map_err(PyErr::from)
}

/// `f`'s result, a panic turned into [`Error::Internal`].
fn caught<T>(f: impl FnOnce() -> Result<T, Error>) -> Result<T, Error> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| {
        let msg = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        Err(Error::Internal(format!("panic in the Rust core: {msg}")))
    })
}

/// Work of at most this many multiply-adds (a few milliseconds) runs without [`compute`]'s
/// polling of signals, whose start costs more than a small product.
const QUICK_WORK: usize = 1 << 22;

/// [`compute`], or for `work` of at most [`QUICK_WORK`] the same without the polling
/// (without the GIL, panics caught).
fn compute_sized<T: Send>(
    py: Python<'_>,
    work: usize,
    f: impl FnOnce() -> Result<T, Error> + Send,
) -> PyResult<T> {
    if work <= QUICK_WORK {
        return py.detach(|| caught(f)).map_err(PyErr::from);
    }
    compute(py, f)
}

pub(super) fn bad(name: &str, what: &str) -> PyErr {
    ForestError::new_err(format!("invalid parameter {name}: {what}"))
}

/// A Python int (not a bool or a float) that fits an `i64`, for parameter `key`.
pub(super) fn int_arg(v: &Bound<'_, PyAny>, key: &str) -> PyResult<i64> {
    if v.is_instance_of::<PyBool>() || v.is_instance_of::<PyFloat>() {
        return Err(bad(key, "must be an integer"));
    }
    v.extract::<i64>()
        .map_err(|_| bad(key, "must be an integer"))
}

/// Extracts parameter `name` as a `T`, naming the parameter in the error.
pub(super) fn named<'py, T>(v: &Bound<'py, PyAny>, name: &str) -> PyResult<T>
where
    T: for<'a> FromPyObject<'a, 'py, Error = PyErr>,
{
    v.extract::<T>()
        .map_err(|e| bad(name, &e.value(v.py()).to_string()))
}

/// Like [`named`], with Python's None as `None`.
pub(super) fn named_opt<'py, T>(v: &Bound<'py, PyAny>, name: &str) -> PyResult<Option<T>>
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
pub(super) struct Count(pub(super) usize);

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

/// Sets the process-wide memory limit for fitted models: None (no limit), "auto" (the
/// default) or a number of bytes. "auto" is 80% of the memory this process can still
/// allocate when a fit starts: the smallest of the host's available memory, the room under
/// its cgroup memory limits (v2 ``memory.max`` less ``memory.current``, v1
/// ``memory.limit_in_bytes`` less ``memory.usage_in_bytes``; a container's limit) and the
/// room under its ``RLIMIT_AS`` (``ulimit -v``) and ``RLIMIT_DATA``. A fit refuses at once
/// when a lower bound of the model's size plus the buffers of the trees growing at once (12
/// bytes a row and thread) is over the limit, and stops (ForestError) once the trees grown
/// so far project the forest over what those buffers leave.
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

/// The memory budget in bytes that the limit stands for now (`"auto"` resolved against
/// the memory the process can still allocate), or None without a limit: what Python-side
/// results sized by user data (an unsupervised forest's proximity matrix) are held to.
#[pyfunction]
fn memory_budget() -> Option<u64> {
    crate::limits::budget_bytes()
}

/// The orthogonal factor of the square matrix `a`, R's diagonal positive
/// ([`crate::linalg::orthogonal_factor`]): the rotation ensembles' Haar rotations.
#[pyfunction]
fn orthogonal_factor<'py>(
    py: Python<'py>,
    a: PyReadonlyArray2<'py, f64>,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let a = a.as_array();
    if a.nrows() != a.ncols() {
        return Err(PyValueError::new_err(format!(
            "a square matrix is needed, got shape {:?}",
            a.dim()
        )));
    }
    let work = a.nrows().saturating_pow(3);
    let q = compute_sized(py, work, || Ok(crate::linalg::orthogonal_factor(a)))?;
    Ok(q.into_pyarray(py))
}

/// `x @ q` as float32, the same on every machine ([`crate::linalg::rotate`]); column-major
/// when `fortran`; on `n_jobs` threads ([`crate::linalg::rotate_on`]: the same values).
#[pyfunction]
#[pyo3(signature = (x, q, fortran, n_jobs=None))]
fn rotate<'py>(
    py: Python<'py>,
    x: PyReadonlyArray2<'py, f64>,
    q: PyReadonlyArray2<'py, f64>,
    fortran: bool,
    n_jobs: Option<i64>,
) -> PyResult<Bound<'py, PyArray2<f32>>> {
    let (x, q) = (x.as_array(), q.as_array());
    if x.ncols() != q.nrows() {
        return Err(PyValueError::new_err(format!(
            "x has {} columns, the rotation {} rows",
            x.ncols(),
            q.nrows()
        )));
    }
    let threads = crate::threads::n_threads(n_jobs)?;
    let work = x.len().saturating_mul(q.ncols());
    let rotated = compute_sized(py, work, || {
        crate::linalg::rotate_on(x, q, fortran, threads)
    })?;
    Ok(rotated.into_pyarray(py))
}

/// `(S + offset) @ q` as float32 for S in CSR ([`crate::linalg::rotate_csr`]).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn rotate_csr<'py>(
    py: Python<'py>,
    n_rows: usize,
    indptr: PyReadonlyArray1<'py, i64>,
    indices: PyReadonlyArray1<'py, i64>,
    data: PyReadonlyArray1<'py, f64>,
    offset: PyReadonlyArray1<'py, f64>,
    q: PyReadonlyArray2<'py, f64>,
    fortran: bool,
) -> PyResult<Bound<'py, PyArray2<f32>>> {
    let (indptr, indices, data) = (indptr.as_slice()?, indices.as_slice()?, data.as_slice()?);
    let (offset, q) = (offset.as_array(), q.as_array());
    let p = q.nrows();
    let fits = offset.len() == p
        && indptr.len() == n_rows + 1
        && indices.len() == data.len()
        && indptr.first() == Some(&0)
        && indptr.last().is_some_and(|&e| e as usize == data.len())
        && indptr.windows(2).all(|w| w[0] <= w[1])
        && indices.iter().all(|&k| k >= 0 && (k as usize) < p);
    if !fits {
        return Err(PyValueError::new_err(
            "the CSR arrays, offset and rotation do not describe one matrix product",
        ));
    }
    let csr = (n_rows, indptr, indices, data);
    let work = (data.len() + n_rows).saturating_mul(q.ncols());
    let rotated = compute_sized(py, work, || {
        Ok(crate::linalg::rotate_csr(csr, offset, q, fortran))
    })?;
    Ok(rotated.into_pyarray(py))
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
    m.add_class::<forest::PyForest>()?;
    m.add_class::<forest::Progress>()?;
    m.add_class::<forest::PyForestPart>()?;
    m.add_class::<params::PyForestParams>()?;
    m.add_class::<params::PyProjection>()?;
    m.add("ForestError", m.py().get_type::<ForestError>())?;
    m.add(
        "ForestInternalError",
        m.py().get_type::<ForestInternalError>(),
    )?;
    for ((_, name), class) in FILE_ERROR_BASES.iter().zip(file_error_types(m.py())?) {
        m.add(*name, class)?;
    }
    m.add("FORMAT_VERSION", crate::serialize::FORMAT_VERSION)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(_panic_for_test, m)?)?;
    m.add_function(wrap_pyfunction!(n_threads, m)?)?;
    m.add_function(wrap_pyfunction!(orthogonal_factor, m)?)?;
    m.add_function(wrap_pyfunction!(rotate, m)?)?;
    m.add_function(wrap_pyfunction!(forest::shap_values_rotated, m)?)?;
    m.add_function(wrap_pyfunction!(
        forest::shap_interaction_values_rotated,
        m
    )?)?;
    m.add_function(wrap_pyfunction!(rotate_csr, m)?)?;
    m.add_function(wrap_pyfunction!(set_memory_limit, m)?)?;
    m.add_function(wrap_pyfunction!(memory_limit, m)?)?;
    m.add_function(wrap_pyfunction!(memory_budget, m)?)?;
    m.add_function(wrap_pyfunction!(model_file::save_model, m)?)?;
    m.add_function(wrap_pyfunction!(model_file::load_model, m)?)?;
    m.add_function(wrap_pyfunction!(
        model_file::_save_model_unchecked_for_test,
        m
    )?)?;
    m.add_function(wrap_pyfunction!(model_file::estimator_names, m)?)?;
    m.add_function(wrap_pyfunction!(forest::part_forest, m)?)?;
    m.add("MODEL_FORMAT_VERSION", crate::model::MODEL_FORMAT_VERSION)?;
    Ok(())
}
