//! `_core.Projection` and `_core.ForestParams`: typed parameter objects, converted once
//! from Python; the crate's `check()` functions validate them when a forest is fitted.

use super::convert::{from_value, to_arg};
use super::{bad, named, named_opt, Count};
use crate::error::Error;
use crate::params::{ForestParams, Growth, Splitter, Task};
use crate::projection::{FamilyArgs, Projection};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};

/// A projection distribution for the core (`_core.Projection`), built by the classes of
/// `obliqueforest.projections` through `family(tag, **args)`: every family (axis, SPORF,
/// Forest-RC, Gaussian, MORF patches, Haar patches, pooled filters, dictionaries, families
/// registered by a Rust user) by its registry tag. The arguments are converted generically
/// (plain values); the family's own file builds and checks them, and
/// [`crate::projection::Projection::check`] validates them against the data when a forest is
/// fitted.
#[pyclass(name = "Projection", module = "obliqueforest._core", frozen)]
#[derive(Clone)]
pub(super) struct PyProjection {
    pub(super) kind: Projection,
}

/// An argument on which two projections differ: its name and each one's value.
type Difference<'py> = (String, Bound<'py, PyAny>, Bound<'py, PyAny>);

#[pymethods]
impl PyProjection {
    /// The family registered as `tag`, with its arguments (None, bools, ints, floats,
    /// strings and 1-D sequences or arrays of them).
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
            kind: Projection::from_args(tag, family_args)?,
        })
    }

    /// The family's registry tag.
    #[getter]
    fn tag(&self) -> &str {
        self.kind.tag()
    }

    /// The arguments on which this projection and `other`, of the same family, differ:
    /// `(name, this one's value, other's value)` each, as the family gives them (empty
    /// when they are equal). The model loader names with it the parameters that disagree
    /// with a file's projection record.
    fn differences<'py>(
        &self,
        py: Python<'py>,
        other: PyRef<'_, PyProjection>,
    ) -> PyResult<Vec<Difference<'py>>> {
        crate::model::differing_args(&self.kind, &other.kind)
            .into_iter()
            .map(|(k, a, b)| Ok((k, from_value(py, &a)?, from_value(py, &b)?)))
            .collect()
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
pub(super) struct PyForestParams {
    pub(super) inner: ForestParams,
}

#[pymethods]
impl PyForestParams {
    #[new]
    #[pyo3(signature = (
        *, task, n_classes, criterion, splitter, max_bins, projection, max_features,
        n_estimators, max_depth, min_samples_split, min_samples_leaf,
        min_weight_fraction_leaf, min_impurity_decrease, max_leaf_nodes, bootstrap,
        max_samples, class_weight_subsample, oob, seed, growth, n_outputs=None,
        honest_fraction=0.0, store_leaf_values=false, tree_features=None, categorical=None,
        level_names=None
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
        growth: &Bound<'_, PyDict>,
        n_outputs: Option<&Bound<'_, PyAny>>,
        honest_fraction: f64,
        store_leaf_values: bool,
        tree_features: Option<&Bound<'_, PyAny>>,
        categorical: Option<Vec<u32>>,
        level_names: Option<Vec<Vec<String>>>,
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
            ("unsupervised", None) => Task::Unsupervised {
                tree_features: match tree_features {
                    Some(v) => named_opt::<Count>(v, "tree_features")?.map(|c| c.0),
                    None => None,
                },
            },
            ("unsupervised", Some(_)) => {
                return Err(bad("n_classes", "a forest without targets has no classes"))
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
        // the growth settings by name (Growth::set: a new one needs no line here)
        let mut settings = Growth::default();
        for (name, value) in growth.iter() {
            let name: String = name.extract()?;
            settings.set(&name, &to_arg(&name, &value)?)?;
        }
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
                honest_fraction,
                store_leaf_values,
                categorical: categorical.unwrap_or_default(),
                level_names: level_names.unwrap_or_default(),
                growth: settings,
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
        // with the fields a model's plain encoding leaves out (they matter to a fit on a
        // worker): the kind section's and the growth
        let fields = (
            p.honest_fraction,
            p.store_leaf_values,
            &p.categorical,
            &p.level_names,
        );
        let bytes = postcard::to_stdvec(&(p, fields, &p.growth))
            .map_err(|e| PyErr::from(Error::Internal(format!("encode: {e}"))))?;
        let from_bytes = slf.get_type().getattr("_from_bytes")?;
        Ok((from_bytes, (PyBytes::new(py, &bytes),)))
    }

    #[staticmethod]
    fn _from_bytes(data: &[u8]) -> PyResult<Self> {
        type Fields = (f64, bool, Vec<u32>, Vec<Vec<String>>);
        type Encoded = (ForestParams, Fields, Growth);
        let (mut inner, (honest_fraction, store_leaf_values, categorical, names), growth): Encoded =
            postcard::from_bytes(data)
                .map_err(|e| PyErr::from(Error::CorruptModel(format!("decode parameters: {e}"))))?;
        inner.honest_fraction = honest_fraction;
        inner.store_leaf_values = store_leaf_values;
        inner.categorical = categorical;
        inner.level_names = names;
        inner.growth = growth;
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

    /// Levels per column (0 for a numeric one); empty when every column is numeric.
    #[getter]
    fn categorical(&self) -> Vec<u32> {
        self.inner.categorical.clone()
    }

    fn __repr__(&self) -> String {
        format!("{:?}", self.inner)
    }
}
