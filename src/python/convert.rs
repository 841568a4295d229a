//! Python objects into the crate's inputs: X (dense or sparse), sample weights, the
//! parameters' enums, and plain values ([`Value`]) — the one converter of loosely typed data,
//! for a projection family's arguments and a model file's parameters alike.

use super::{bad, Count};
use crate::error::Error;
use crate::params::{Criterion, MaxFeatures, SampleCount};
use crate::sparse::{Features, Layout, SparseView};
use crate::value::{ArrayData, Value};
use numpy::{IntoPyArray, PyReadonlyArray1, PyReadonlyArray1 as R1, PyReadonlyArray2};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

impl<'a, 'py> FromPyObject<'a, 'py> for Criterion {
    type Error = PyErr;
    fn extract(v: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        match v.extract::<String>()?.as_str() {
            "gini" => Ok(Criterion::Gini),
            "entropy" | "log_loss" => Ok(Criterion::Entropy),
            "squared_error" => Ok(Criterion::SquaredError),
            "poisson" => Ok(Criterion::Poisson),
            "absolute_error" => Ok(Criterion::AbsoluteError),
            "friedman_mse" => Ok(Criterion::FriedmanMse),
            "twomeans" => Ok(Criterion::TwoMeans),
            "fastbic" => Ok(Criterion::FastBic),
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

/// An int count, a float fraction of the training rows, or `"sqrt"` (their square root).
impl<'a, 'py> FromPyObject<'a, 'py> for SampleCount {
    type Error = PyErr;
    fn extract(v: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if v.is_instance_of::<PyString>() {
            match v.extract::<String>()?.as_str() {
                "sqrt" => Ok(SampleCount::Sqrt),
                other => Err(PyValueError::new_err(format!("unknown option {other:?}"))),
            }
        } else if v.is_instance_of::<PyFloat>() {
            Ok(SampleCount::Fraction(v.extract()?))
        } else {
            Ok(SampleCount::Count(v.extract::<Count>()?.0))
        }
    }
}

/// X from Python: a 2-D float32 numpy array (C or F order), or sparse X as the tuple
/// `(format, (n_rows, n_cols), indptr, indices, data)` with format "csr" or "csc" and
/// uint64, uint32 and float32 arrays (what `obliqueforest._forest.core_X` builds; the
/// core checks the rest: sorted unique indices in range, finite values).
pub(super) enum XArg<'py> {
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
pub(super) enum XRef<'a> {
    Dense(ndarray::ArrayView2<'a, f32>),
    Sparse(Layout, (usize, usize), &'a [u64], &'a [u32], &'a [f32]),
}

impl XArg<'_> {
    pub(super) fn view(&self) -> PyResult<XRef<'_>> {
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
    pub(super) fn features(self) -> Result<Features<'a>, Error> {
        Ok(match self {
            XRef::Dense(x) => Features::Dense(x),
            XRef::Sparse(layout, shape, indptr, indices, data) => {
                Features::Sparse(SparseView::new(layout, shape, indptr, indices, data)?)
            }
        })
    }
}

pub(super) fn weights_slice<'a>(w: &'a Option<R1<'a, f64>>) -> PyResult<Option<&'a [f64]>> {
    w.as_ref()
        .map(|w| {
            w.as_slice()
                .map_err(|_| bad("sample_weight", "must be contiguous"))
        })
        .transpose()
}

/// A Python object as a plain [`Value`]: None, a bool, int, float or str (numpy scalars
/// included); a list or tuple of bools, ints, floats or strings (as a list value); a numpy
/// array of numbers or bools (as an array value, any shape) or a 1-D one of strings (as a
/// list); any other sequence numpy reads as a 1-D array of numbers (as an array value).
/// `fail` turns a reason into the caller's error (naming a parameter or a model field).
pub(super) fn to_value(obj: &Bound<'_, PyAny>, fail: &dyn Fn(String) -> PyErr) -> PyResult<Value> {
    let py = obj.py();
    let np = py.import("numpy")?;
    if obj.is_none() {
        return Ok(Value::None);
    }
    if obj.is_instance(&np.getattr("ndarray")?)? {
        return array_value(obj, fail);
    }
    let obj = if obj.is_instance(&np.getattr("generic")?)? {
        obj.call_method0("item")?
    } else {
        obj.clone()
    };
    if obj.is_instance_of::<PyBool>() {
        return Ok(Value::Bool(obj.extract()?));
    }
    if obj.is_instance_of::<PyInt>() {
        return Ok(Value::Int(
            obj.extract()
                .map_err(|_| fail("integer beyond int64".into()))?,
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
        let int =
            |v: &Bound<'_, PyAny>| v.is_instance_of::<PyInt>() && !v.is_instance_of::<PyBool>();
        if all(&|v| v.is_instance_of::<PyBool>()) {
            return Ok(Value::Bools(obj.extract()?));
        }
        if all(&int) {
            return Ok(Value::Ints(
                obj.extract()
                    .map_err(|_| fail("integer beyond int64".into()))?,
            ));
        }
        if all(&|v| int(v) || v.is_instance_of::<PyFloat>()) {
            return Ok(Value::Floats(obj.extract()?));
        }
        if all(&|v| v.is_instance_of::<PyString>()) {
            return Ok(Value::Strs(obj.extract()?));
        }
    }
    // other sequences (numpy scalars in a list, ranges, ...): what numpy makes of them
    let no_form = || {
        fail(format!(
            "a {} has no plain form (numbers, strings, lists and arrays of them)",
            obj.get_type()
                .name()
                .map_or_else(|_| "value".into(), |n| n.to_string())
        ))
    };
    let arr = np.call_method1("asarray", (&obj,)).map_err(|_| no_form())?;
    let kind: String = arr.getattr("dtype")?.getattr("kind")?.extract()?;
    if arr.getattr("ndim")?.extract::<usize>()? == 1 && "biuf".contains(kind.as_str()) {
        return array_value(&arr, fail);
    }
    Err(no_form())
}

/// A numpy array as a plain [`Value`] (see [`to_value`]).
fn array_value(obj: &Bound<'_, PyAny>, fail: &dyn Fn(String) -> PyErr) -> PyResult<Value> {
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
                .map_err(|_| fail("integer array values beyond int64".into()))?,
        ),
        "b" => ArrayData::Bool(flat.call_method0("tolist")?.extract()?),
        "U" | "O" if shape.len() == 1 => {
            return Ok(Value::Strs(
                flat.call_method0("tolist")?
                    .extract()
                    .map_err(|_| fail("only arrays of strings can be saved as text".into()))?,
            ))
        }
        other => return Err(fail(format!("arrays of dtype kind {other:?}"))),
    };
    Ok(Value::Array { shape, data })
}

/// A plain [`Value`] for Python: lists as lists, arrays as numpy arrays of their shape.
pub(super) fn from_value<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
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

/// A projection family's argument `name` (see [`to_value`]); errors name the argument.
pub(super) fn to_arg(name: &str, obj: &Bound<'_, PyAny>) -> PyResult<Value> {
    to_value(obj, &|reason| bad(name, &reason))
}

/// Adds the level maps of a tree of `n` nodes ([`crate::columns::LevelMaps`]) to the
/// node table `d` that `_core.Forest.tree_nodes` returns: node i's maps are
/// `map_node_ptr[i]..map_node_ptr[i + 1]`; map m reads its node's term `map_term[m]` and
/// holds the levels `map_levels[map_ptr[m]..map_ptr[m + 1]]` with their `map_values`,
/// and reads `map_unseen[m]` for a level it lacks (NaN: missing).
pub(super) fn set_level_maps(
    d: &Bound<'_, PyDict>,
    maps: &crate::columns::LevelMaps,
    n: usize,
) -> PyResult<()> {
    let py = d.py();
    let node_ptr: Vec<i64> = if maps.node_ptr.is_empty() {
        vec![0; n + 1]
    } else {
        maps.node_ptr.iter().map(|&v| i64::from(v)).collect()
    };
    let ptr: Vec<i64> = if maps.ptr.is_empty() {
        vec![0]
    } else {
        maps.ptr.iter().map(|&v| i64::from(v)).collect()
    };
    let as_i64 = |v: &[u32]| v.iter().map(|&x| i64::from(x)).collect::<Vec<_>>();
    d.set_item("map_node_ptr", node_ptr.into_pyarray(py))?;
    d.set_item("map_term", as_i64(&maps.term).into_pyarray(py))?;
    d.set_item("map_ptr", ptr.into_pyarray(py))?;
    d.set_item("map_levels", as_i64(&maps.levels).into_pyarray(py))?;
    d.set_item(
        "map_unseen",
        maps.unseen
            .iter()
            .map(|&v| f64::from(v))
            .collect::<Vec<_>>()
            .into_pyarray(py),
    )?;
    d.set_item(
        "map_values",
        maps.values
            .iter()
            .map(|&v| f64::from(v))
            .collect::<Vec<_>>()
            .into_pyarray(py),
    )?;
    Ok(())
}
