//! The model file (`.of`): a fitted estimator as the Python package saves it, readable and
//! predictable from Rust. This module is the one implementation of the format; the Python
//! package reads and writes it through the pyo3 boundary.
//!
//! A file is one frame (see [`crate::serialize`]) with magic `OBLQMODL`, version
//! [`MODEL_FORMAT_VERSION`], and a postcard payload holding
//!
//! | part | content |
//! |---|---|
//! | [`Header`] | estimator kind, task, classes with their numpy dtype, feature names, n_features, the estimator's parameters and Python-side fitted attributes as plain data |
//! | [`Body`] | one core [`Forest`]; or a rotation ensemble (scaling, rotations, trees per rotation, one forest per rotation); or an autoencoder's forest with its Nyström leaf map |
//! | missing section (version 2 only) | per tree of every forest (in [`Body::forests`] order), the nodes whose missing values go against the default side (see [`crate::serialize`]) |
//!
//! A model whose trees never learned a missing-value side (every model fitted on data
//! without NaN) is written as version 1, byte for byte as before version 2 existed; a
//! reader of version 1 only refuses a version 2 file by its version.
//!
//! Invariant: a [`Model`] exists only after [`check`] accepted it, on reading and on
//! writing alike. `check` compares every header field with the core model (n_features,
//! task, classes, estimator kind, projection family, sizes of every array) and names the
//! field on a mismatch. Nothing is allocated from a header number: lengths come from
//! decoded data, which is bounded by the bytes present. Files are read from regular files
//! only (never devices or FIFOs), at most their declared length. Thread counts are never
//! read from a file: a loaded model predicts on one thread until [`Model::set_n_jobs`].

use crate::error::{Error, Result};
use crate::forest::Forest;
use crate::params::Task;
use crate::projection::Projection;
use crate::serialize::{self, corrupt, CrcWriter, Frame, HEADER};
pub use crate::value::{ArrayData, Value};
use ndarray::{Array2, ArrayView2};
use serde::{Deserialize, Serialize};
use std::borrow::Borrow;
use std::fmt;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::Path;

/// The first bytes of every model file.
pub const MODEL_MAGIC: &[u8; 8] = b"OBLQMODL";
/// The model file version this library writes and reads.
///
/// Version 1 replaced the Python-only layout `OBLQPY01` (a JSON header around core forest
/// bytes) of obliqueforest 0.1, which is not read: refit and save again. Version 2 is
/// version 1 followed by a missing-value section, and its task and classes may be
/// multi-output ones; it is written only for a multi-output model or when some tree
/// learned a missing-value side, so other models are still written (and read) as version
/// 1, and older readers refuse version 2 by its number.
pub const MODEL_FORMAT_VERSION: u32 = 2;
/// The model file version without a missing-value section.
const MODEL_FORMAT_VERSION_PLAIN: u32 = 1;
/// The most features a model file may declare. A file's feature count sizes per-feature
/// arrays (importances), and a bare count costs no bytes in the file, so it is capped.
pub const MAX_FEATURES: u64 = 1 << 24;
/// The widest numpy string dtype (`<U…`) accepted beyond the longest class label.
pub const MAX_LABEL_WIDTH: u64 = 1 << 10;
/// The longest parameter or attribute name.
const MAX_NAME: usize = 128;
/// The most dimensions of an array value.
const MAX_NDIM: usize = 32;

/// The estimator a model file holds (the Python class it was saved from).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[allow(clippy::upper_case_acronyms)]
pub enum Estimator {
    /// `obliqueforest.RandomForestClassifier`.
    RandomForestClassifier,
    /// `obliqueforest.RandomForestRegressor`.
    RandomForestRegressor,
    /// `obliqueforest.SPORFClassifier`.
    SPORFClassifier,
    /// `obliqueforest.SPORFRegressor`.
    SPORFRegressor,
    /// `obliqueforest.MORFClassifier`.
    MORFClassifier,
    /// `obliqueforest.MORFRegressor`.
    MORFRegressor,
    /// `obliqueforest.ObliqueForestClassifier`.
    ObliqueForestClassifier,
    /// `obliqueforest.ObliqueForestRegressor`.
    ObliqueForestRegressor,
    /// `obliqueforest.RotationEnsembleClassifier`.
    RotationEnsembleClassifier,
    /// `obliqueforest.RotationEnsembleRegressor`.
    RotationEnsembleRegressor,
    /// `obliqueforest.ForestAutoencoder`.
    ForestAutoencoder,
}

impl Estimator {
    /// Every estimator kind, in declaration order.
    pub const ALL: [Estimator; 11] = [
        Estimator::RandomForestClassifier,
        Estimator::RandomForestRegressor,
        Estimator::SPORFClassifier,
        Estimator::SPORFRegressor,
        Estimator::MORFClassifier,
        Estimator::MORFRegressor,
        Estimator::ObliqueForestClassifier,
        Estimator::ObliqueForestRegressor,
        Estimator::RotationEnsembleClassifier,
        Estimator::RotationEnsembleRegressor,
        Estimator::ForestAutoencoder,
    ];

    /// The Python class name.
    pub fn name(self) -> &'static str {
        match self {
            Estimator::RandomForestClassifier => "RandomForestClassifier",
            Estimator::RandomForestRegressor => "RandomForestRegressor",
            Estimator::SPORFClassifier => "SPORFClassifier",
            Estimator::SPORFRegressor => "SPORFRegressor",
            Estimator::MORFClassifier => "MORFClassifier",
            Estimator::MORFRegressor => "MORFRegressor",
            Estimator::ObliqueForestClassifier => "ObliqueForestClassifier",
            Estimator::ObliqueForestRegressor => "ObliqueForestRegressor",
            Estimator::RotationEnsembleClassifier => "RotationEnsembleClassifier",
            Estimator::RotationEnsembleRegressor => "RotationEnsembleRegressor",
            Estimator::ForestAutoencoder => "ForestAutoencoder",
        }
    }

    /// The estimator with Python class name `name`.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a name that is not one of [`Estimator::ALL`].
    pub fn from_name(name: &str) -> Result<Estimator> {
        Estimator::ALL
            .into_iter()
            .find(|e| e.name() == name)
            .ok_or_else(|| Error::InvalidInput(format!("{name:?} is not a savable estimator")))
    }

    /// `Some(true)` for classifiers, `Some(false)` for regressors, `None` for the
    /// autoencoder (whose forest may be either).
    pub fn is_classifier(self) -> Option<bool> {
        use Estimator::*;
        match self {
            RandomForestClassifier
            | SPORFClassifier
            | MORFClassifier
            | ObliqueForestClassifier
            | RotationEnsembleClassifier => Some(true),
            ForestAutoencoder => None,
            _ => Some(false),
        }
    }

    /// Whether a forest of this estimator may use `projection`.
    fn allows(self, projection: &Projection) -> bool {
        use Estimator::*;
        let tag = projection.tag();
        match self {
            RandomForestClassifier
            | RandomForestRegressor
            | RotationEnsembleClassifier
            | RotationEnsembleRegressor => tag == "axis",
            SPORFClassifier | SPORFRegressor => tag == "sparse_signed",
            MORFClassifier | MORFRegressor => matches!(tag, "patch" | "haar" | "pooled"),
            ObliqueForestClassifier | ObliqueForestRegressor | ForestAutoencoder => true,
        }
    }
}

/// Class labels with the numpy dtype they had in Python (`classes_`), sorted and distinct.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ClassLabels {
    /// numpy `bool`.
    Bool(Vec<bool>),
    /// numpy `int8` … `int64` (`bytes` is the item size).
    /// The labels and the item size in bytes (1, 2, 4 or 8).
    Int {
        /// Item size in bytes (1, 2, 4 or 8).
        bytes: u8,
        /// The labels, sorted and distinct.
        values: Vec<i64>,
    },
    /// numpy `uint8` … `uint64`.
    /// The labels and the item size in bytes (1, 2, 4 or 8).
    UInt {
        /// Item size in bytes (1, 2, 4 or 8).
        bytes: u8,
        /// The labels, sorted and distinct.
        values: Vec<u64>,
    },
    /// numpy `float16` … `float64`.
    /// The labels and the item size in bytes (2, 4 or 8).
    Float {
        /// Item size in bytes (2, 4 or 8).
        bytes: u8,
        /// The labels, sorted and distinct.
        values: Vec<f64>,
    },
    /// numpy `<U{width}`.
    /// The labels and the dtype's width in characters.
    Str {
        /// The dtype's width in characters.
        width: u64,
        /// The labels, sorted and distinct.
        values: Vec<String>,
    },
    /// numpy `object` holding Python strings (what a pandas text column gives).
    Object(Vec<String>),
    /// The labels of each output of a multi-output classifier (`classes_` as a list of
    /// arrays), each of the kinds above. Last, so that the single-output kinds keep the
    /// bytes they always had.
    PerOutput(Vec<ClassLabels>),
}

/// One class label.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Label<'a> {
    /// A bool label.
    Bool(bool),
    /// A signed integer label.
    Int(i64),
    /// An unsigned integer label.
    UInt(u64),
    /// A float label.
    Float(f64),
    /// A text label.
    Str(&'a str),
}

impl fmt::Display for Label<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Label::Bool(v) => write!(f, "{}", if *v { "True" } else { "False" }),
            Label::Int(v) => write!(f, "{v}"),
            Label::UInt(v) => write!(f, "{v}"),
            Label::Float(v) => write!(f, "{v:?}"),
            Label::Str(v) => write!(f, "{v}"),
        }
    }
}

impl ClassLabels {
    /// The number of classes.
    pub fn len(&self) -> usize {
        match self {
            ClassLabels::Bool(v) => v.len(),
            ClassLabels::Int { values, .. } => values.len(),
            ClassLabels::UInt { values, .. } => values.len(),
            ClassLabels::Float { values, .. } => values.len(),
            ClassLabels::Str { values, .. } | ClassLabels::Object(values) => values.len(),
            ClassLabels::PerOutput(outputs) => outputs.iter().map(ClassLabels::len).sum(),
        }
    }

    /// The labels of each output: one entry for a single-output classifier.
    pub fn outputs(&self) -> Vec<&ClassLabels> {
        match self {
            ClassLabels::PerOutput(outputs) => outputs.iter().collect(),
            single => vec![single],
        }
    }

    /// Whether there are no classes (never true for a checked model).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Label `i` (panics when `i >= len()`, like slice indexing); the labels of a
    /// multi-output classifier count in output order.
    pub fn get(&self, i: usize) -> Label<'_> {
        match self {
            ClassLabels::PerOutput(outputs) => {
                let mut i = i;
                for o in outputs {
                    if i < o.len() {
                        return o.get(i);
                    }
                    i -= o.len();
                }
                panic!("class index out of range")
            }
            ClassLabels::Bool(v) => Label::Bool(v[i]),
            ClassLabels::Int { values, .. } => Label::Int(values[i]),
            ClassLabels::UInt { values, .. } => Label::UInt(values[i]),
            ClassLabels::Float { values, .. } => Label::Float(values[i]),
            ClassLabels::Str { values, .. } | ClassLabels::Object(values) => Label::Str(&values[i]),
        }
    }

    /// The numpy dtype string (`"<i8"`, `"<U5"`, `"|b1"`, `"|O"`, …).
    pub fn numpy_dtype(&self) -> String {
        match self {
            ClassLabels::Bool(_) => "|b1".into(),
            ClassLabels::Int { bytes, .. } => format!("{}i{bytes}", endian(*bytes)),
            ClassLabels::UInt { bytes, .. } => format!("{}u{bytes}", endian(*bytes)),
            ClassLabels::Float { bytes, .. } => format!("<f{bytes}"),
            ClassLabels::Str { width, .. } => format!("<U{width}"),
            ClassLabels::Object(_) | ClassLabels::PerOutput(_) => "|O".into(),
        }
    }

    fn check(&self) -> Result<()> {
        let bad = |m: String| Err(field("classes", m));
        fn increasing<T: PartialOrd>(v: &[T]) -> bool {
            v.windows(2).all(|w| w[0] < w[1])
        }
        match self {
            ClassLabels::Bool(v) if !increasing(v) => {
                bad("labels are not sorted and distinct".into())
            }
            ClassLabels::Int { bytes, values } => {
                if ![1, 2, 4, 8].contains(bytes) {
                    return bad(format!("dtype int{} does not exist", 8 * *bytes as u32));
                }
                let bits = 8 * *bytes as u32;
                let (lo, hi) = (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1);
                if values.iter().any(|&v| (v as i128) < lo || (v as i128) > hi) {
                    return bad(format!("a label does not fit in int{bits}"));
                }
                if !increasing(values) {
                    return bad("labels are not sorted and distinct".into());
                }
                Ok(())
            }
            ClassLabels::UInt { bytes, values } => {
                if ![1, 2, 4, 8].contains(bytes) {
                    return bad(format!("dtype uint{} does not exist", 8 * *bytes as u32));
                }
                let bits = 8 * *bytes as u32;
                if bits < 64 && values.iter().any(|&v| v >> bits != 0) {
                    return bad(format!("a label does not fit in uint{bits}"));
                }
                if !increasing(values) {
                    return bad("labels are not sorted and distinct".into());
                }
                Ok(())
            }
            ClassLabels::Float { bytes, values } => {
                if ![2, 4, 8].contains(bytes) {
                    return bad(format!("dtype float{} does not exist", 8 * *bytes as u32));
                }
                if !increasing(values) {
                    return bad("labels are not sorted and distinct (or NaN)".into());
                }
                Ok(())
            }
            ClassLabels::Str { width, values } => {
                let longest = values.iter().map(|s| s.chars().count()).max().unwrap_or(0) as u64;
                if *width < longest.max(1) || *width > longest.max(MAX_LABEL_WIDTH) {
                    return bad(format!(
                        "dtype <U{width} does not fit labels of at most {longest} characters"
                    ));
                }
                if !increasing(values) {
                    return bad("labels are not sorted and distinct".into());
                }
                Ok(())
            }
            ClassLabels::Object(values) if !increasing(values) => {
                bad("labels are not sorted and distinct".into())
            }
            ClassLabels::PerOutput(outputs) => {
                if outputs.len() < 2 {
                    return bad("a multi-output classifier has at least two outputs".into());
                }
                for o in outputs {
                    if matches!(o, ClassLabels::PerOutput(_)) {
                        return bad("per-output labels are nested".into());
                    }
                    o.check()?;
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

fn endian(bytes: u8) -> &'static str {
    if bytes == 1 {
        "|"
    } else {
        "<"
    }
}

/// Checks that an array value holds as many elements as its shape says.
fn check_value(value: &Value, name: &str) -> Result<()> {
    if let Value::Array { shape, data } = value {
        let size = shape
            .iter()
            .try_fold(1u64, |a, &d| a.checked_mul(d))
            .ok_or_else(|| field(name, "array shape overflows".into()))?;
        if shape.len() > MAX_NDIM || size != data.len() as u64 {
            return Err(field(
                name,
                format!(
                    "array of shape {shape:?} does not hold its {} elements",
                    data.len()
                ),
            ));
        }
    }
    Ok(())
}

/// An estimator parameter as saved: a plain value, a projection object (its class name and
/// fields), or a mapping (e.g. `class_weight={label: weight}`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Param {
    /// A plain value.
    Value(Value),
    /// A projection object (`obliqueforest.projections`).
    Projection {
        /// Its class name.
        name: String,
        /// Its fields (nested dicts flattened to `outer__inner`).
        fields: Vec<(String, Value)>,
    },
    /// A mapping, as (key, value) pairs.
    Map(Vec<(Value, Value)>),
}

/// Everything about a model except its forests.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// The estimator the model was saved from.
    pub estimator: Estimator,
    /// The task of every forest in the body.
    pub task: Task,
    /// The number of input columns (`n_features_in_`).
    pub n_features: u64,
    /// `feature_names_in_`, when the model was fitted on named columns.
    pub feature_names: Option<Vec<String>>,
    /// `classes_` of classifiers; `None` for regressors and the autoencoder.
    pub classes: Option<ClassLabels>,
    /// The estimator's parameters (`get_params(deep=False)`), never `n_jobs`.
    pub params: Vec<(String, Param)>,
    /// Fitted attributes only the Python estimator uses (e.g. a rotation ensemble's
    /// complexities); carried, not interpreted.
    pub attributes: Vec<(String, Value)>,
}

/// How a rotation ensemble scales its input before rotating it (fitted on the training data).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Scaling {
    /// The data are used as they are.
    None,
    /// `(x - min) / span` per feature.
    MinMax {
        /// Per feature, the training minimum.
        min: Vec<f64>,
        /// Per feature, the training range (never 0).
        span: Vec<f64>,
    },
    /// Per feature, the sorted distinct training values; a value maps to its interpolated
    /// rank / (n_values - 1), clipped to [0, 1] (numpy's `interp`).
    Rank {
        /// Per feature, the sorted distinct training values.
        values: Vec<Vec<f64>>,
    },
}

/// A rotation ensemble (Blaser & Fryzlewicz 2021): rotation k sees `scale(x) @ Q_k` and
/// holds `n_trees[k]` trees; the prediction is the tree-count weighted mean.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Rotation<F> {
    /// The scaling applied before rotating.
    pub scaling: Scaling,
    /// The `n_rotations` matrices Q_k, each n_features × n_features, row-major.
    pub rotations: Vec<f64>,
    /// Trees per rotation; their sum is the ensemble's size.
    pub n_trees: Vec<u64>,
    /// One forest per rotation, `None` where `n_trees[k] == 0`.
    pub forests: Vec<Option<F>>,
}

/// A forest autoencoder's encoder: Nyström embedding `Z = (M L) / (M m)` of a row's leaf
/// memberships M (one leaf per tree, forest-wide leaf ids), with the leaf map L
/// (n_leaves × n_components) and leaf masses m.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Encoder<F> {
    /// The forest whose leaves define the embedding.
    pub forest: F,
    /// The embedding's dimension.
    pub n_components: u64,
    /// The leaf map L, n_leaves × n_components, row-major.
    pub leaf_map: Vec<f64>,
    /// Per leaf, its mass m.
    pub leaf_mass: Vec<f64>,
}

/// What predicts: the forests and what surrounds them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Body<F> {
    /// One forest (the forest estimators).
    Forest(F),
    /// A rotation ensemble.
    Rotation(Rotation<F>),
    /// An autoencoder's encoder.
    Encoder(Encoder<F>),
}

impl<F> Body<F> {
    /// The same body with every forest mapped through `f` (in order: the forest, the
    /// rotations' forests, or the encoder's forest).
    pub fn map<G>(self, mut f: impl FnMut(F) -> G) -> Body<G> {
        match self {
            Body::Forest(x) => Body::Forest(f(x)),
            Body::Rotation(r) => Body::Rotation(Rotation {
                scaling: r.scaling,
                rotations: r.rotations,
                n_trees: r.n_trees,
                forests: r.forests.into_iter().map(|x| x.map(&mut f)).collect(),
            }),
            Body::Encoder(e) => Body::Encoder(Encoder {
                forest: f(e.forest),
                n_components: e.n_components,
                leaf_map: e.leaf_map,
                leaf_mass: e.leaf_mass,
            }),
        }
    }

    /// The forests, in the order of [`Body::map`].
    pub fn forests(&self) -> Vec<&F> {
        match self {
            Body::Forest(x) => vec![x],
            Body::Rotation(r) => r.forests.iter().flatten().collect(),
            Body::Encoder(e) => vec![&e.forest],
        }
    }
}

/// The payload of a model file; `F` is [`Forest`] or `&Forest` (for writing borrowed forests).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelFile<F> {
    /// Everything but the forests.
    pub header: Header,
    /// The forests and what surrounds them.
    pub body: Body<F>,
}

fn field(name: &str, reason: String) -> Error {
    Error::CorruptModel(format!("model field `{name}`: {reason}"))
}

fn check_name(kind: &str, name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    if !ok {
        return Err(field(kind, format!("{name:?} is not an identifier")));
    }
    Ok(())
}

fn check_names<'a>(kind: &str, names: impl Iterator<Item = &'a str>) -> Result<()> {
    let mut seen = std::collections::HashSet::new();
    for n in names {
        check_name(kind, n)?;
        if !seen.insert(n) {
            return Err(field(kind, format!("{n:?} appears twice")));
        }
    }
    Ok(())
}

fn check_forest(header: &Header, forest: &Forest, what: &str) -> Result<()> {
    if forest.n_features() as u64 != header.n_features {
        return Err(field(
            "n_features",
            format!(
                "the header says {}, the {what} was fitted with {}",
                header.n_features,
                forest.n_features()
            ),
        ));
    }
    if forest.params().task != header.task {
        return Err(field(
            "task",
            format!(
                "the header says {:?}, the {what} is {:?}",
                header.task,
                forest.params().task
            ),
        ));
    }
    if !header.estimator.allows(&forest.params().projection) {
        return Err(field(
            "estimator",
            format!(
                "a {} does not grow {:?} projections",
                header.estimator.name(),
                forest.params().projection
            ),
        ));
    }
    Ok(())
}

fn n_estimators_param(header: &Header) -> Option<i64> {
    header
        .params
        .iter()
        .find_map(|(k, v)| match (k.as_str(), v) {
            ("n_estimators", Param::Value(Value::Int(n))) => Some(*n),
            _ => None,
        })
}

/// Checks a model's header against its body (see the module invariant).
///
/// # Errors
/// [`Error::CorruptModel`] naming the first field that disagrees.
pub fn check<F: Borrow<Forest>>(file: &ModelFile<F>) -> Result<()> {
    let h = &file.header;
    if h.n_features == 0 || h.n_features > MAX_FEATURES {
        return Err(field(
            "n_features",
            format!("{} is outside [1, {MAX_FEATURES}]", h.n_features),
        ));
    }
    for f in file.body.forests() {
        let got = f.borrow().n_features();
        if got as u64 != h.n_features {
            return Err(field(
                "n_features",
                format!("the header says {}, the forests have {got}", h.n_features),
            ));
        }
    }
    if let Some(names) = &h.feature_names {
        if names.len() as u64 != h.n_features {
            return Err(field(
                "feature_names",
                format!("{} names for {} features", names.len(), h.n_features),
            ));
        }
    }
    match (h.estimator.is_classifier(), &h.task, &h.classes) {
        (Some(true), Task::Classification { n_classes }, Some(c)) => {
            if c.len() != *n_classes || *n_classes == 0 || c.outputs().len() != 1 {
                return Err(field(
                    "classes",
                    format!("{} labels for a forest of {n_classes} classes", c.len()),
                ));
            }
            c.check()?;
        }
        (Some(true), Task::MultiClassification { n_classes }, Some(c)) => {
            let got: Vec<usize> = match c {
                ClassLabels::PerOutput(_) => c.outputs().iter().map(|o| o.len()).collect(),
                _ => vec![c.len()],
            };
            if &got != n_classes || n_classes.contains(&0) {
                return Err(field(
                    "classes",
                    format!("labels per output {got:?} for a forest of {n_classes:?} classes"),
                ));
            }
            c.check()?;
        }
        (Some(true), _, _) => {
            return Err(field(
                "task",
                format!(
                    "a {} needs a classification forest and its classes",
                    h.estimator.name()
                ),
            ))
        }
        (Some(false), Task::Classification { .. } | Task::MultiClassification { .. }, _) => {
            return Err(field(
                "task",
                format!("a {} needs a regression forest", h.estimator.name()),
            ))
        }
        (Some(false), Task::Regression | Task::MultiRegression { .. }, None) | (None, _, None) => {}
        (_, _, Some(_)) => {
            return Err(field(
                "classes",
                format!("a {} has no classes", h.estimator.name()),
            ))
        }
    }
    check_names("params", h.params.iter().map(|(k, _)| k.as_str()))?;
    for (k, v) in &h.params {
        if k == "n_jobs" {
            return Err(field(
                "params",
                "n_jobs is never read from a file (a loaded model predicts on one thread)".into(),
            ));
        }
        match v {
            Param::Value(v) => check_value(v, k)?,
            Param::Projection { name, fields } => {
                check_name(k, name)?;
                check_names(k, fields.iter().map(|(f, _)| f.as_str()))?;
                for (f, v) in fields {
                    check_value(v, f)?;
                }
            }
            Param::Map(pairs) => {
                for (a, b) in pairs {
                    check_value(a, k)?;
                    check_value(b, k)?;
                }
            }
        }
    }
    check_names("attributes", h.attributes.iter().map(|(k, _)| k.as_str()))?;
    for (k, v) in &h.attributes {
        check_value(v, k)?;
    }
    let p = h.n_features as usize;
    let n_est = n_estimators_param(h);
    let trees_mismatch = |n: u64| {
        field(
            "params",
            format!("n_estimators is {n_est:?} but the model holds {n} trees"),
        )
    };
    use Estimator::*;
    match (&file.body, h.estimator) {
        (Body::Rotation(r), RotationEnsembleClassifier | RotationEnsembleRegressor) => {
            let n_rot = r.n_trees.len();
            if n_rot == 0 || r.forests.len() != n_rot {
                return Err(field(
                    "forests",
                    format!("{} forests for {n_rot} rotations", r.forests.len()),
                ));
            }
            let size = p.checked_mul(p).and_then(|pp| pp.checked_mul(n_rot));
            if size != Some(r.rotations.len()) {
                return Err(field(
                    "rotations",
                    format!(
                        "{} values for {n_rot} rotations of {p} features",
                        r.rotations.len()
                    ),
                ));
            }
            // orthogonal matrices have unit columns: O(R p²) to check, and it bounds every entry
            let unit_columns = r.rotations.chunks_exact(p * p).all(|q| {
                (0..p).all(|j| {
                    let norm: f64 = (0..p).map(|i| q[i * p + j] * q[i * p + j]).sum();
                    (norm - 1.0).abs() <= 1e-6
                })
            });
            if !unit_columns {
                return Err(field(
                    "rotations",
                    "a matrix is not orthogonal (a column's norm is not 1)".into(),
                ));
            }
            let mut total = 0u64;
            for (k, (n, f)) in r.n_trees.iter().zip(&r.forests).enumerate() {
                total = total
                    .checked_add(*n)
                    .ok_or_else(|| field("n_trees", "overflow".into()))?;
                match f {
                    None if *n == 0 => {}
                    Some(f) if f.borrow().trees().len() as u64 == *n => {
                        check_forest(h, f.borrow(), &format!("forest of rotation {k}"))?
                    }
                    _ => {
                        return Err(field(
                            "n_trees",
                            format!("rotation {k}: {n} trees declared, forest disagrees"),
                        ))
                    }
                }
            }
            if total == 0 {
                return Err(field("n_trees", "no trees at all".into()));
            }
            if n_est.is_some_and(|n| n as u64 != total) {
                return Err(trees_mismatch(total));
            }
            match &r.scaling {
                Scaling::None => {}
                Scaling::MinMax { min, span } => {
                    if min.len() != p || span.len() != p {
                        return Err(field("scaling", "min/span length is not n_features".into()));
                    }
                    let ok = min.iter().all(|v| v.is_finite())
                        && span.iter().all(|v| v.is_finite() && *v != 0.0);
                    if !ok {
                        return Err(field("scaling", "non-finite min or zero span".into()));
                    }
                }
                Scaling::Rank { values } => {
                    if values.len() != p {
                        return Err(field("scaling", "rank tables are not n_features".into()));
                    }
                    for v in values {
                        let ok = !v.is_empty()
                            && v.iter().all(|x| x.is_finite())
                            && v.windows(2).all(|w| w[0] < w[1]);
                        if !ok {
                            return Err(field(
                                "scaling",
                                "a rank table is empty, unsorted or not finite".into(),
                            ));
                        }
                    }
                }
            }
        }
        (Body::Encoder(e), ForestAutoencoder) => {
            let f = e.forest.borrow();
            check_forest(h, f, "forest")?;
            let n_leaves = f.leaf_offsets().last().copied().unwrap_or(0);
            let d = e.n_components as usize;
            if d == 0 || n_leaves.checked_mul(d) != Some(e.leaf_map.len()) {
                return Err(field(
                    "leaf_map",
                    format!(
                        "{} values for {n_leaves} leaves × {d} components",
                        e.leaf_map.len()
                    ),
                ));
            }
            if e.leaf_mass.len() != n_leaves {
                return Err(field("leaf_mass", "one mass per leaf expected".into()));
            }
            if !e.leaf_map.iter().chain(&e.leaf_mass).all(|v| v.is_finite()) {
                return Err(field("leaf_map", "non-finite entry".into()));
            }
        }
        (Body::Forest(f), e)
            if !matches!(
                e,
                RotationEnsembleClassifier | RotationEnsembleRegressor | ForestAutoencoder
            ) =>
        {
            let f = f.borrow();
            check_forest(h, f, "forest")?;
            if n_est.is_some_and(|n| n as u64 != f.trees().len() as u64) {
                return Err(trees_mismatch(f.trees().len() as u64));
            }
        }
        (_, e) => {
            return Err(field(
                "estimator",
                format!("a {} is not stored this way", e.name()),
            ))
        }
    }
    Ok(())
}

/// Writes `file` (after [`check`]) as a model frame to `w`, streaming the payload: the
/// forests are never copied into a buffer.
///
/// # Errors
/// [`check`]'s errors, or an I/O error as [`Error::InvalidInput`].
pub fn write<F: Borrow<Forest> + Serialize, W: Write + Seek>(
    file: &ModelFile<F>,
    w: W,
) -> Result<()> {
    check(file)?;
    write_unchecked(file, w)
}

/// [`write()`] without [`check`]: only for tests that craft bad files.
#[doc(hidden)]
pub fn write_unchecked<F: Borrow<Forest> + Serialize, W: Write + Seek>(
    file: &ModelFile<F>,
    mut w: W,
) -> Result<()> {
    let io = |e: std::io::Error| Error::InvalidInput(format!("cannot write the model: {e}"));
    let start = w.stream_position().map_err(io)?;
    w.write_all(&[0u8; HEADER]).map_err(io)?;
    let mut cw = CrcWriter {
        inner: BufWriter::with_capacity(1 << 16, &mut w),
        hasher: crc32fast::Hasher::new(),
        len: 0,
    };
    let encode = |e: postcard::Error| Error::Internal(format!("encode: {e}"));
    postcard::to_io(file, &mut cw).map_err(encode)?;
    let forests = file.body.forests();
    // (the header's task is every forest's; checked too for a model without forests)
    let required =
        file.header.task.n_targets() > 1 || forests.iter().any(|f| (*f).borrow().beyond_v2());
    let section = serialize::missing_section(
        forests.iter().flat_map(|f| (*f).borrow().trees.iter()),
        required,
    );
    if let Some(section) = &section {
        postcard::to_io(section, &mut cw).map_err(encode)?;
    }
    let version = if section.is_some() {
        MODEL_FORMAT_VERSION
    } else {
        MODEL_FORMAT_VERSION_PLAIN
    };
    cw.flush().map_err(io)?;
    let (len, crc) = (cw.len, cw.hasher.clone().finalize());
    drop(cw);
    let end = w.stream_position().map_err(io)?;
    w.seek(SeekFrom::Start(start)).map_err(io)?;
    w.write_all(&serialize::frame_header(MODEL_MAGIC, version, len, crc))
        .map_err(io)?;
    w.seek(SeekFrom::Start(end)).map_err(io)?;
    w.flush().map_err(io)
}

/// Writes `file` to `path` atomically (a temporary file in the same directory, renamed).
///
/// # Errors
/// As [`write()`].
pub fn save_file<F: Borrow<Forest> + Serialize>(file: &ModelFile<F>, path: &Path) -> Result<()> {
    check(file)?;
    save_file_unchecked(file, path)
}

/// [`save_file`] without [`check`]: only for tests that craft bad files.
#[doc(hidden)]
pub fn save_file_unchecked<F: Borrow<Forest> + Serialize>(
    file: &ModelFile<F>,
    path: &Path,
) -> Result<()> {
    let io =
        |e: std::io::Error| Error::InvalidInput(format!("cannot write {}: {e}", path.display()));
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp{}", std::process::id()));
    let tmp = std::path::PathBuf::from(tmp);
    let result = std::fs::File::create(&tmp)
        .map_err(io)
        .and_then(|f| write_unchecked(file, f))
        .and_then(|()| std::fs::rename(&tmp, path).map_err(io));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

fn frame_of(head: &[u8]) -> Result<(Frame, u32)> {
    if head.len() >= 8 && &head[..8] == b"OBLQPY01" {
        return Err(corrupt(
            "this model file was written by obliqueforest 0.1 (layout OBLQPY01), which this \
             version does not read; refit the model and save it again",
        ));
    }
    if head.len() >= 8 && &head[..8] == serialize::MAGIC {
        return Err(corrupt(
            "these are bare core forest bytes (Forest::to_bytes), not a model file; read them \
             with Forest::from_bytes",
        ));
    }
    serialize::read_frame(
        head,
        MODEL_MAGIC,
        MODEL_FORMAT_VERSION_PLAIN,
        MODEL_FORMAT_VERSION,
    )
}

/// A decoded payload with its missing-value section given to its trees.
fn with_section(
    (mut file, section): (ModelFile<Forest>, Option<serialize::MissingSection>),
) -> Result<ModelFile<Forest>> {
    if let Some(section) = section {
        let trees: Vec<&mut crate::tree::Tree> = match &mut file.body {
            Body::Forest(f) => f.trees.iter_mut().collect(),
            Body::Rotation(r) => r
                .forests
                .iter_mut()
                .flatten()
                .flat_map(|f| f.trees.iter_mut())
                .collect(),
            Body::Encoder(e) => e.forest.trees.iter_mut().collect(),
        };
        serialize::attach_missing(trees.into_iter(), section)?;
    }
    Ok(file)
}

fn finish(file: ModelFile<Forest>) -> Result<Model> {
    let forests = file.body.forests();
    for f in &forests {
        f.validate()?;
    }
    check(&file)?;
    for f in forests {
        f.packed();
    }
    Ok(Model { file, n_jobs: 1 })
}

/// A fitted estimator read from a model file: predicts like the Python estimator it was
/// saved from.
#[derive(Clone, Debug)]
pub struct Model {
    file: ModelFile<Forest>,
    n_jobs: i64,
}

/// Predictions of [`Model::predict`]: class labels (by index into [`Model::classes`]) or
/// real values.
#[derive(Clone, Debug, PartialEq)]
pub enum Predictions {
    /// The index of the most probable class of each row (first on ties, like numpy's argmax).
    Classes(Vec<usize>),
    /// The regression estimate of each row.
    Values(Vec<f64>),
    /// Multi-output classifiers: per row and output (row-major, `k` outputs), the index
    /// of the most probable class among that output's labels
    /// ([`ClassLabels::outputs`]).
    ClassesPerOutput {
        /// Outputs.
        k: usize,
        /// n × k class indices, row-major.
        classes: Vec<usize>,
    },
    /// Multi-output regressors: per row and output (row-major) the estimate.
    ValuesPerOutput {
        /// Outputs.
        k: usize,
        /// n × k estimates, row-major.
        values: Vec<f64>,
    },
}

impl Model {
    /// Reads and checks a model file.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when `path` is not a regular file (a device, FIFO or
    /// directory) or cannot be read; [`Error::CorruptModel`] naming what is wrong with its
    /// contents; [`Error::UnsupportedVersion`] for another format version.
    pub fn load(path: impl AsRef<Path>) -> Result<Model> {
        let path = path.as_ref();
        let io =
            |e: std::io::Error| Error::InvalidInput(format!("cannot read {}: {e}", path.display()));
        let not_regular = || {
            Error::InvalidInput(format!(
                "{} is not a regular file (a device, FIFO, socket or directory); models are \
                 read from regular files only",
                path.display()
            ))
        };
        // checked before opening: opening a FIFO blocks until someone writes to it
        if !std::fs::metadata(path).map_err(io)?.is_file() {
            return Err(not_regular());
        }
        let mut file = std::fs::File::open(path).map_err(io)?;
        let meta = file.metadata().map_err(io)?;
        if !meta.is_file() {
            return Err(not_regular());
        }
        let mut head = [0u8; HEADER];
        let got = (&mut file)
            .take(HEADER as u64)
            .read(&mut head)
            .map_err(io)?;
        let (frame, version) = frame_of(&head[..got])?;
        let present = meta.len().saturating_sub(HEADER as u64);
        if present != frame.len {
            return Err(corrupt(format!(
                "the file holds {present} payload bytes, its header says {} (truncated or \
                 appended to?)",
                frame.len
            )));
        }
        serialize::check_crc(BufReader::new(&mut file), &frame)?;
        file.seek(SeekFrom::Start(HEADER as u64)).map_err(io)?;
        finish(with_section(serialize::decode_reader(
            BufReader::with_capacity(1 << 16, file),
            frame.len,
            version == MODEL_FORMAT_VERSION,
        )?)?)
    }

    /// Reads and checks a model from the bytes of a model file.
    ///
    /// # Errors
    /// As [`Model::load`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Model> {
        let (frame, version) = frame_of(bytes)?;
        let payload = &bytes[HEADER..];
        if payload.len() as u64 != frame.len {
            return Err(corrupt(format!(
                "{} payload bytes, the header says {} (truncated?)",
                payload.len(),
                frame.len
            )));
        }
        serialize::check_crc(payload, &frame)?;
        finish(with_section(serialize::decode_slice(
            payload,
            version == MODEL_FORMAT_VERSION,
        )?)?)
    }

    /// Builds a model from its parts, checking them as a loaded file is checked.
    ///
    /// # Errors
    /// As [`check`].
    pub fn new(header: Header, body: Body<Forest>) -> Result<Model> {
        finish(ModelFile { header, body })
    }

    /// The bytes of the model file.
    ///
    /// # Errors
    /// [`Error::Internal`] if encoding fails (it should not).
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut c = std::io::Cursor::new(Vec::new());
        write(&self.file, &mut c)?;
        Ok(c.into_inner())
    }

    /// Writes the model file to `path`.
    ///
    /// # Errors
    /// An I/O error as [`Error::InvalidInput`].
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        save_file(&self.file, path.as_ref())
    }

    /// The header (estimator, task, classes, names, parameters).
    pub fn header(&self) -> &Header {
        &self.file.header
    }
    /// The forests and what surrounds them.
    pub fn body(&self) -> &Body<Forest> {
        &self.file.body
    }
    /// Takes the model apart (the Python boundary hands the forests to the estimators).
    pub fn into_parts(self) -> (Header, Body<Forest>) {
        (self.file.header, self.file.body)
    }
    /// The estimator the model was saved from.
    pub fn estimator(&self) -> Estimator {
        self.file.header.estimator
    }
    /// Whether [`Model::predict_proba`] applies.
    pub fn is_classifier(&self) -> bool {
        self.file.header.task.is_classification() && self.file.header.classes.is_some()
    }
    /// The number of input columns.
    pub fn n_features(&self) -> usize {
        self.file.header.n_features as usize
    }
    /// Column names, when the model was fitted on named columns.
    pub fn feature_names(&self) -> Option<&[String]> {
        self.file.header.feature_names.as_deref()
    }
    /// Class labels of a classifier.
    pub fn classes(&self) -> Option<&ClassLabels> {
        self.file.header.classes.as_ref()
    }
    /// Threads for prediction (-1: all cores); results do not depend on it. Default 1.
    pub fn set_n_jobs(&mut self, n_jobs: i64) {
        self.n_jobs = n_jobs;
    }

    /// Casts rows to float32 as the Python estimators do, refusing what float32 cannot hold.
    fn to_f32(&self, x: ArrayView2<'_, f64>) -> Result<Array2<f32>> {
        if x.ncols() != self.n_features() {
            return Err(Error::FeatureMismatch {
                expected: self.n_features(),
                got: x.ncols(),
            });
        }
        if x.iter().any(|v| v.is_finite() && v.abs() > f32::MAX as f64) {
            return Err(Error::InvalidInput(
                "X has values too large for float32 (|x| > 3.4e38); the forests compute in \
                 float32"
                    .into(),
            ));
        }
        Ok(x.mapv(|v| v as f32))
    }

    fn scaled(&self, r: &Rotation<Forest>, x: ArrayView2<'_, f64>) -> Result<Array2<f64>> {
        if x.ncols() != self.n_features() {
            return Err(Error::FeatureMismatch {
                expected: self.n_features(),
                got: x.ncols(),
            });
        }
        if x.iter().any(|v| v.is_infinite()) {
            return Err(Error::InvalidInput(
                "X contains infinity; infinite values are not supported (a missing value is NaN)"
                    .into(),
            ));
        }
        let mut out = x.to_owned();
        match &r.scaling {
            Scaling::None => {}
            Scaling::MinMax { min, span } => {
                for mut row in out.rows_mut() {
                    for (j, v) in row.iter_mut().enumerate() {
                        *v = (*v - min[j]) / span[j];
                    }
                }
            }
            Scaling::Rank { values } => {
                for (j, xp) in values.iter().enumerate() {
                    let step = 1.0 / (xp.len().max(2) - 1) as f64;
                    for v in out.column_mut(j) {
                        *v = if v.is_nan() {
                            f64::NAN // a missing value stays missing
                        } else if xp.len() == 1 {
                            0.0
                        } else {
                            interp(*v, xp, step)
                        };
                    }
                }
            }
        }
        Ok(out)
    }

    /// Rotation k's input: `scaled @ Q_k` in float64 (each sum in feature order), as float32.
    /// A rotated coordinate is missing (NaN) when a feature with a nonzero weight in it is
    /// (terms of weight 0 are left out, as the Python estimator's `rotate` does).
    fn rotated(&self, r: &Rotation<Forest>, scaled: &Array2<f64>, k: usize) -> Array2<f32> {
        let p = self.n_features();
        let q = &r.rotations[k * p * p..(k + 1) * p * p];
        let mut out = Array2::<f32>::zeros((scaled.nrows(), p));
        for (row, mut o) in scaled.rows().into_iter().zip(out.rows_mut()) {
            for j in 0..p {
                let mut s = 0.0f64;
                for (l, &v) in row.iter().enumerate() {
                    let w = q[l * p + j];
                    if w != 0.0 {
                        s += v * w;
                    }
                }
                o[j] = s as f32;
            }
        }
        out
    }

    /// Class probabilities (classifiers) or the regression estimate as one column, shape
    /// (n_samples, n_outputs): what the Python estimator's `predict_proba` / `predict` give.
    ///
    /// # Errors
    /// Wrong number of columns, infinity or values beyond float32 in `x`.
    pub fn predict_raw(&self, x: ArrayView2<'_, f64>) -> Result<Array2<f64>> {
        match &self.file.body {
            Body::Forest(f) => f.predict(self.to_f32(x)?.view(), self.n_jobs),
            Body::Encoder(e) => e.forest.predict(self.to_f32(x)?.view(), self.n_jobs),
            Body::Rotation(r) => {
                let scaled = self.scaled(r, x)?;
                let k = self.file.header.task.n_outputs();
                let mut total = Array2::<f64>::zeros((x.nrows(), k));
                for (i, f) in r.forests.iter().enumerate() {
                    if let Some(f) = f {
                        let mean = f.predict(self.rotated(r, &scaled, i).view(), self.n_jobs)?;
                        let w = r.n_trees[i] as f64;
                        total.zip_mut_with(&mean, |t, m| *t += w * m);
                    }
                }
                let n: u64 = r.n_trees.iter().sum();
                total.mapv_inplace(|t| t / n as f64);
                Ok(total)
            }
        }
    }

    /// Class probabilities, shape (n_samples, n_classes), columns in the order of
    /// [`Model::classes`].
    ///
    /// # Errors
    /// As [`Model::predict_raw`]; [`Error::InvalidInput`] for a regressor.
    pub fn predict_proba(&self, x: ArrayView2<'_, f64>) -> Result<Array2<f64>> {
        if !self.is_classifier() {
            return Err(Error::InvalidInput(format!(
                "a {} has no class probabilities",
                self.estimator().name()
            )));
        }
        self.predict_raw(x)
    }

    /// Class indices (classifiers) or values (regressors) for each row.
    ///
    /// # Errors
    /// As [`Model::predict_raw`].
    pub fn predict(&self, x: ArrayView2<'_, f64>) -> Result<Predictions> {
        let raw = self.predict_raw(x)?;
        match &self.file.header.task {
            Task::MultiClassification { n_classes } => {
                let k = n_classes.len();
                let mut classes = Vec::with_capacity(raw.nrows() * k);
                for r in raw.rows() {
                    let mut at = 0;
                    for &c in n_classes {
                        let block = r.slice(ndarray::s![at..at + c]);
                        classes.push(first_max(block.iter().copied()));
                        at += c;
                    }
                }
                return Ok(Predictions::ClassesPerOutput { k, classes });
            }
            Task::MultiRegression { n_outputs } => {
                return Ok(Predictions::ValuesPerOutput {
                    k: *n_outputs,
                    values: raw.iter().copied().collect(),
                })
            }
            _ => {}
        }
        if self.is_classifier() {
            Ok(Predictions::Classes(
                raw.rows()
                    .into_iter()
                    .map(|r| {
                        // numpy's argmax: the first maximum
                        r.iter().enumerate().fold(
                            0,
                            |best, (i, &v)| {
                                if v > r[best] {
                                    i
                                } else {
                                    best
                                }
                            },
                        )
                    })
                    .collect(),
            ))
        } else {
            Ok(Predictions::Values(raw.column(0).to_vec()))
        }
    }

    /// The leaf (node index within its tree) each row reaches in each tree, shape
    /// (n_samples, n_trees); for a rotation ensemble, the trees of rotation 0, 1, … in turn.
    ///
    /// # Errors
    /// As [`Model::predict_raw`].
    pub fn apply(&self, x: ArrayView2<'_, f64>) -> Result<Array2<i64>> {
        match &self.file.body {
            Body::Forest(f) => f.apply(self.to_f32(x)?.view(), self.n_jobs),
            Body::Encoder(e) => e.forest.apply(self.to_f32(x)?.view(), self.n_jobs),
            Body::Rotation(r) => {
                let scaled = self.scaled(r, x)?;
                let mut parts = Vec::new();
                for (i, f) in r.forests.iter().enumerate() {
                    if let Some(f) = f {
                        parts.push(f.apply(self.rotated(r, &scaled, i).view(), self.n_jobs)?);
                    }
                }
                let views: Vec<_> = parts.iter().map(|a| a.view()).collect();
                ndarray::concatenate(ndarray::Axis(1), &views)
                    .map_err(|e| Error::Internal(e.to_string()))
            }
        }
    }

    /// The autoencoder's embedding of new rows (its `transform`), shape
    /// (n_samples, n_components).
    ///
    /// # Errors
    /// As [`Model::predict_raw`]; [`Error::InvalidInput`] for a model that is not an
    /// autoencoder.
    pub fn transform(&self, x: ArrayView2<'_, f64>) -> Result<Array2<f64>> {
        let Body::Encoder(e) = &self.file.body else {
            return Err(Error::InvalidInput(format!(
                "a {} has no embedding",
                self.estimator().name()
            )));
        };
        let leaves = e.forest.apply_leaves(self.to_f32(x)?.view(), self.n_jobs)?;
        let d = e.n_components as usize;
        let mut out = Array2::<f64>::zeros((x.nrows(), d));
        for (row, mut o) in leaves.rows().into_iter().zip(out.rows_mut()) {
            let mut mass = 0.0;
            for &leaf in row {
                let leaf = leaf as usize;
                mass += e.leaf_mass[leaf];
                for (c, v) in o.iter_mut().enumerate() {
                    *v += e.leaf_map[leaf * d + c];
                }
            }
            let mass = if mass > 0.0 { mass } else { 1.0 };
            o.mapv_inplace(|v| v / mass);
        }
        Ok(out)
    }
}

/// The index of the first maximum (numpy's argmax).
fn first_max(v: impl Iterator<Item = f64>) -> usize {
    let mut best = (0usize, f64::NEG_INFINITY);
    for (i, x) in v.enumerate() {
        if i == 0 || x > best.1 {
            best = (i, x);
        }
    }
    best.0
}

/// numpy's `interp(x, xp, linspace(0, 1, len(xp)))` for sorted, distinct `xp` of length ≥ 2,
/// operation for operation, so a rank-scaled value is the same to the bit.
fn interp(x: f64, xp: &[f64], step: f64) -> f64 {
    if x.is_nan() {
        return x; // a missing value stays missing
    }
    let n = xp.len();
    let fp = |i: usize| {
        if i == n - 1 {
            1.0
        } else {
            i as f64 * step + 0.0
        }
    };
    if x < xp[0] {
        return 0.0;
    }
    if x > xp[n - 1] {
        return 1.0;
    }
    // the last j with xp[j] <= x
    let j = xp.partition_point(|&v| v <= x) - 1;
    if j == n - 1 || xp[j] == x {
        return fp(j);
    }
    let slope = (fp(j + 1) - fp(j)) / (xp[j + 1] - xp[j]);
    let mut y = slope * (x - xp[j]) + fp(j);
    if y.is_nan() {
        y = slope * (x - xp[j + 1]) + fp(j + 1);
        if y.is_nan() && fp(j) == fp(j + 1) {
            y = fp(j);
        }
    }
    y
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::ForestParams;

    fn forest(n_classes: usize) -> (Forest, Array2<f32>) {
        let x = Array2::from_shape_fn((120, 3), |(i, j)| ((i * 7 + j * 13) % 17) as f32 - 8.0);
        let y: Vec<f64> = x
            .rows()
            .into_iter()
            .map(|r| ((r[0] + r[1] > 0.0) as usize % n_classes) as f64)
            .collect();
        let mut params = ForestParams::classification(n_classes);
        params.n_estimators = 4;
        (Forest::fit(&params, x.view(), &y, None).unwrap(), x)
    }

    fn header(n_classes: usize) -> Header {
        Header {
            estimator: Estimator::RandomForestClassifier,
            task: Task::Classification { n_classes },
            n_features: 3,
            feature_names: Some(vec!["a".into(), "b".into(), "c".into()]),
            classes: Some(ClassLabels::Str {
                width: 3,
                values: vec!["no".into(), "yes".into()],
            }),
            params: vec![("n_estimators".into(), Param::Value(Value::Int(4)))],
            attributes: vec![],
        }
    }

    #[test]
    fn model_round_trips_and_predicts_like_its_forest() {
        let (f, x) = forest(2);
        let expected = f.predict(x.view(), 1).unwrap();
        let model = Model::new(header(2), Body::Forest(f)).unwrap();
        let bytes = model.to_bytes().unwrap();
        assert_eq!(bytes[8..12], MODEL_FORMAT_VERSION_PLAIN.to_le_bytes());
        let again = Model::from_bytes(&bytes).unwrap();
        let xf = x.mapv(|v| v as f64);
        assert_eq!(again.predict_proba(xf.view()).unwrap(), expected);
        assert_eq!(again.classes().unwrap().get(1), Label::Str("yes"));
        assert_eq!(again.feature_names().unwrap()[2], "c");
        assert!(matches!(
            again.predict(xf.view()).unwrap(),
            Predictions::Classes(_)
        ));
        assert_eq!(again.apply(xf.view()).unwrap().dim(), (120, 4));
    }

    #[test]
    fn multi_output_model_round_trips_its_classes_per_output() {
        let (_, x) = forest(2);
        // output 0: the sign of x0 + x1 (labels "no"/"yes"); output 1: x2 in 3 classes
        let y: Vec<f64> = x
            .rows()
            .into_iter()
            .flat_map(|r| {
                [
                    (r[0] + r[1] > 0.0) as u8 as f64,
                    ((r[2] + 8.0) as usize % 3) as f64,
                ]
            })
            .collect();
        let mut params = ForestParams::classification(2);
        params.task = Task::MultiClassification {
            n_classes: vec![2, 3],
        };
        params.n_estimators = 4;
        let f = Forest::fit(&params, x.view(), &y, None).unwrap();
        let mut h = header(2);
        h.task = params.task.clone();
        let per_output = ClassLabels::PerOutput(vec![
            ClassLabels::Str {
                width: 3,
                values: vec!["no".into(), "yes".into()],
            },
            ClassLabels::Int {
                bytes: 8,
                values: vec![-1, 0, 7],
            },
        ]);
        h.classes = Some(per_output.clone());
        let model = Model::new(h.clone(), Body::Forest(f.clone())).unwrap();
        let bytes = model.to_bytes().unwrap();
        // written as version 2, which older readers refuse by version
        assert_eq!(bytes[8..12], MODEL_FORMAT_VERSION.to_le_bytes());
        assert_eq!(
            f.to_bytes().unwrap()[8..12],
            crate::serialize::FORMAT_VERSION.to_le_bytes()
        );
        let again = Model::from_bytes(&bytes).unwrap();
        assert_eq!(again.classes(), Some(&per_output));
        assert_eq!(Forest::from_bytes(&f.to_bytes().unwrap()).unwrap(), f);
        let xf = x.mapv(|v| v as f64);
        let Predictions::ClassesPerOutput { k, classes } = again.predict(xf.view()).unwrap() else {
            panic!("a multi-output classifier predicts per output")
        };
        assert_eq!((k, classes.len()), (2, 240));
        let raw = f.predict(x.view(), 1).unwrap();
        for (row, c) in raw.rows().into_iter().zip(classes.chunks(2)) {
            assert_eq!(c[0], first_max(row.iter().copied().take(2)));
            assert_eq!(c[1], first_max(row.iter().copied().skip(2)));
        }
        // labels per output must match the forest's class counts
        h.classes = Some(ClassLabels::PerOutput(vec![
            ClassLabels::Bool(vec![false, true]),
            ClassLabels::Bool(vec![false, true]),
        ]));
        let err = Model::new(h, Body::Forest(f)).unwrap_err().to_string();
        assert!(err.contains("classes"), "{err}");
    }

    #[test]
    fn model_check_names_the_field_that_disagrees() {
        type Mutation = Box<dyn Fn(&mut Header)>;
        let cases: Vec<(Mutation, &str)> = vec![
            (Box::new(|h| h.n_features = 1 << 40), "n_features"),
            (Box::new(|h| h.n_features = 4), "n_features"),
            (
                Box::new(|h| h.estimator = Estimator::RandomForestRegressor),
                "task",
            ),
            (
                Box::new(|h| h.estimator = Estimator::SPORFClassifier),
                "estimator",
            ),
            (
                Box::new(|h| h.feature_names = Some(vec![])),
                "feature_names",
            ),
            (
                Box::new(|h| {
                    h.classes = Some(ClassLabels::Str {
                        width: 2_000_000_000,
                        values: vec!["no".into(), "yes".into()],
                    })
                }),
                "classes",
            ),
            (
                Box::new(|h| h.classes = Some(ClassLabels::Bool(vec![true, false]))),
                "classes",
            ),
            (
                Box::new(|h| {
                    h.params
                        .push(("n_jobs".into(), Param::Value(Value::Int(3000))))
                }),
                "n_jobs",
            ),
            (
                Box::new(|h| h.params[0].1 = Param::Value(Value::Int(5))),
                "n_estimators",
            ),
        ];
        for (mutate, fragment) in cases {
            let (f, _) = forest(2);
            let mut h = header(2);
            mutate(&mut h);
            let err = Model::new(h, Body::Forest(f)).unwrap_err().to_string();
            assert!(err.contains(fragment), "{err} should name {fragment}");
        }
    }

    #[test]
    fn encoder_embeds_rows_by_their_leaves() {
        let (f, x) = forest(2);
        let n_leaves = *f.leaf_offsets().last().unwrap();
        let leaves = f.apply_leaves(x.view(), 1).unwrap();
        let leaf_map: Vec<f64> = (0..n_leaves * 2).map(|i| i as f64).collect();
        let leaf_mass = vec![0.25; n_leaves];
        let h = Header {
            estimator: Estimator::ForestAutoencoder,
            classes: None,
            params: vec![],
            ..header(2)
        };
        let body = Body::Encoder(Encoder {
            forest: f,
            n_components: 2,
            leaf_map,
            leaf_mass,
        });
        let model = Model::from_bytes(&Model::new(h, body).unwrap().to_bytes().unwrap()).unwrap();
        let z = model.transform(x.mapv(|v| v as f64).view()).unwrap();
        // 4 trees of mass 0.25: the mean of the rows' leaf-map rows
        let row0: f64 = leaves.row(0).iter().map(|&l| (2 * l) as f64).sum::<f64>() / 1.0;
        assert_eq!(z[[0, 0]], row0);
        assert!(model.predict_proba(x.mapv(|v| v as f64).view()).is_err());
    }

    #[test]
    fn rank_scaling_matches_numpy_interp() {
        let xp = [1.0, 2.0, 4.0];
        let step = 1.0 / 2.0;
        // np.interp(v, [1, 2, 4], np.linspace(0, 1, 3))
        for (v, want) in [
            (0.0, 0.0),
            (1.0, 0.0),
            (1.5, 0.25),
            (3.0, 0.75),
            (4.0, 1.0),
            (9.0, 1.0),
        ] {
            assert_eq!(interp(v, &xp, step), want);
        }
    }

    #[test]
    fn bytes_of_another_kind_are_named() {
        let (f, _) = forest(2);
        let err = Model::from_bytes(&f.to_bytes().unwrap()).unwrap_err();
        assert!(err.to_string().contains("bare core forest"));
        let model = Model::new(header(2), Body::Forest(f)).unwrap();
        let err = Forest::from_bytes(&model.to_bytes().unwrap()).unwrap_err();
        assert!(err.to_string().contains("model file"));
    }
}
