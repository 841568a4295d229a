//! Model files from Python: the parts dict `obliqueforest._io` takes an estimator apart into
//! (parameters, classes, attributes, forests) to and from [`crate::model`], which owns the
//! format, writes, reads and checks it.

use super::convert::{from_value, to_value};
use super::forest::PyForest;
use super::{compute, ForestError};
use crate::forest::Forest;
use crate::model::{
    self as mf, Body, ClassLabels, Encoder, Estimator, Header, ModelFile, Param, ProjectionRecord,
    Rotation, Scaling,
};
use crate::value::Value;
use numpy::IntoPyArray;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

fn model_err(what: &str, reason: impl std::fmt::Display) -> PyErr {
    ForestError::new_err(format!("cannot save the model: {what}: {reason}"))
}

/// Model field `name` as a plain value; errors name the field.
fn field_value(name: &str, obj: &Bound<'_, PyAny>) -> PyResult<Value> {
    to_value(obj, &|reason| model_err(name, reason))
}

fn to_param(name: &str, obj: &Bound<'_, PyAny>) -> PyResult<Param> {
    if let Ok(d) = obj.cast::<PyDict>() {
        if let Some(kind) = d.get_item("__projection__")? {
            let mut fields = Vec::new();
            for (k, v) in d.iter() {
                let k: String = k.extract()?;
                if k != "__projection__" {
                    fields.push((k.clone(), field_value(&k, &v)?));
                }
            }
            return Ok(Param::Projection {
                name: kind.extract()?,
                fields,
            });
        }
        let mut pairs = Vec::new();
        for (k, v) in d.iter() {
            pairs.push((field_value(name, &k)?, field_value(name, &v)?));
        }
        return Ok(Param::Map(pairs));
    }
    Ok(Param::Value(field_value(name, obj)?))
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
    py.import("numpy")?.call_method1("array", (list, dtype))
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
        attributes.push((k.clone(), field_value(&k, &v)?));
    }
    let (tag, args): (String, Bound<'py, PyDict>) = get("projection")?
        .extract()
        .map_err(|_| model_err("projection", "must be a (tag, arguments) pair"))?;
    let mut projection = ProjectionRecord { tag, args: vec![] };
    for (k, v) in args.iter() {
        let k: String = k.extract()?;
        projection.args.push((k.clone(), field_value(&k, &v)?));
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
        projection,
    };
    Ok((header, body))
}

/// How [`write_parts`] writes: checked, unchecked, or unchecked in the layout of versions
/// 1 to 4.
#[derive(Clone, Copy)]
enum Writer {
    Checked,
    Unchecked,
    Legacy,
}

fn write_parts(
    py: Python<'_>,
    path: std::path::PathBuf,
    parts: &Bound<'_, PyDict>,
    writer: Writer,
) -> PyResult<()> {
    let mut refs = Vec::new();
    let (header, body) = parse_parts(parts, &mut refs)?;
    let forests: Vec<&Forest> = refs.iter().map(|r| &r.inner).collect();
    let file = ModelFile {
        header,
        body: body.map(|i| forests[i]),
    };
    compute(py, || match writer {
        Writer::Checked => mf::save_file(&file, &path),
        Writer::Unchecked => mf::save_file_unchecked(&file, &path),
        Writer::Legacy => mf::save_file_legacy(&file, &path),
    })
}

/// Writes a model file from its parts (see `_io.py`); checks them first.
#[pyfunction]
pub(super) fn save_model(
    py: Python<'_>,
    path: std::path::PathBuf,
    parts: &Bound<'_, PyDict>,
) -> PyResult<()> {
    write_parts(py, path, parts, Writer::Checked)
}

/// Writes parts without checking them: tests craft bad files with it; `legacy=True` writes
/// them as the writer of versions 1 to 4 did (their header without the projection
/// record), for the tests of the reader of those versions.
#[pyfunction]
#[pyo3(signature = (path, parts, legacy = false))]
pub(super) fn _save_model_unchecked_for_test(
    py: Python<'_>,
    path: std::path::PathBuf,
    parts: &Bound<'_, PyDict>,
    legacy: bool,
) -> PyResult<()> {
    let writer = if legacy {
        Writer::Legacy
    } else {
        Writer::Unchecked
    };
    write_parts(py, path, parts, writer)
}

/// Reads and checks a model file; returns its parts (the forests as `Forest` objects).
#[pyfunction]
pub(super) fn load_model<'py>(
    py: Python<'py>,
    path: std::path::PathBuf,
) -> PyResult<Bound<'py, PyDict>> {
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
    let args = PyDict::new(py);
    for (k, v) in &h.projection.args {
        args.set_item(k, from_value(py, v)?)?;
    }
    d.set_item("projection", (&h.projection.tag, args))?;
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

/// The Python class names of the estimators a model file may hold
/// (`model::Estimator::ALL`, in declaration order): the package's one list of
/// estimators is checked against them.
#[pyfunction]
pub(super) fn estimator_names() -> Vec<&'static str> {
    Estimator::ALL.iter().map(|e| e.name()).collect()
}
