//! What a model file holds, as plain types: the estimator kind, class labels with their
//! numpy dtype, parameters and attributes, the projection record ([`Header`]), and the
//! forests with what surrounds them ([`Body`]). Checking them against each other is
//! [`super::check()`]'s; reading and writing them is [`super::file`]'s.

use crate::error::{Error, Result};
use crate::params::Task;
use crate::projection::{FamilyArgs, Projection};
use crate::value::Value;
use serde::{Deserialize, Serialize};
use std::fmt;

/// The error naming the model field `name` that is wrong, and why (the checks of
/// `check` and `schema`).
pub(super) fn field(name: &str, reason: String) -> Error {
    Error::CorruptModel(format!("model field `{name}`: {reason}"))
}

/// The most features a model file may declare. A file's feature count sizes per-feature
/// arrays (importances), and a bare count costs no bytes in the file, so it is capped.
pub const MAX_FEATURES: u64 = crate::params::MAX_FEATURES as u64;
/// The widest numpy string dtype (`<U…`) accepted beyond the longest class label.
pub const MAX_LABEL_WIDTH: u64 = 1 << 10;

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
    /// `obliqueforest.UnsupervisedRandomForest` (a forest without targets).
    UnsupervisedRandomForest,
    /// `obliqueforest.IsolationForest` (a forest without targets; its `offset_` is a
    /// fitted attribute of the file).
    IsolationForest,
}

impl Estimator {
    /// Every estimator kind, in declaration order.
    pub const ALL: [Estimator; 13] = [
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
        Estimator::UnsupervisedRandomForest,
        Estimator::IsolationForest,
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
            Estimator::UnsupervisedRandomForest => "UnsupervisedRandomForest",
            Estimator::IsolationForest => "IsolationForest",
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
    /// autoencoder (whose forest may be either) and the forests without targets.
    pub fn is_classifier(self) -> Option<bool> {
        use Estimator::*;
        match self {
            RandomForestClassifier
            | SPORFClassifier
            | MORFClassifier
            | ObliqueForestClassifier
            | RotationEnsembleClassifier => Some(true),
            ForestAutoencoder | UnsupervisedRandomForest | IsolationForest => None,
            _ => Some(false),
        }
    }

    /// Whether the estimator's forest is grown without targets
    /// ([`crate::params::Task::Unsupervised`]).
    pub fn is_unsupervised(self) -> bool {
        matches!(
            self,
            Estimator::UnsupervisedRandomForest | Estimator::IsolationForest
        )
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
}

fn endian(bytes: u8) -> &'static str {
    if bytes == 1 {
        "|"
    } else {
        "<"
    }
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
    /// The projection family the estimator's parameters resolve to, which every forest of
    /// the body grows (model file version 5 on; a file of an earlier version is given its
    /// forests' own, see `compat.rs`).
    pub projection: ProjectionRecord,
}

/// A projection family as a model file records it: its registry tag and the arguments
/// that build it through the registry ([`Projection::from_args`], which Python's
/// `_core.Projection.family(tag, **args)` calls), as plain values.
///
/// The Python writer records what its estimator's parameters resolve to (the projection
/// object's `_tag` and `_family_args(n_features)`; a rotation ensemble's is axis-aligned,
/// an autoencoder's its forest's); a Rust writer records its forests' own
/// ([`ProjectionRecord::of`]). The checker builds the record and compares it with every
/// forest; which families an estimator may grow is schema data (`schema.txt`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProjectionRecord {
    /// The family's registry tag (`"axis"`, `"sparse_signed"`, `"patch"`, ...).
    pub tag: String,
    /// The family's arguments, by name.
    pub args: Vec<(String, Value)>,
}

impl ProjectionRecord {
    /// The record of `projection`: its tag and its own arguments
    /// ([`crate::projection::ProjectionFamily::args`]).
    ///
    /// ```
    /// use obliqueforest::model::ProjectionRecord;
    /// use obliqueforest::projection::{AxisAligned, Projection};
    ///
    /// let record = ProjectionRecord::of(&Projection::new(AxisAligned));
    /// assert_eq!((record.tag.as_str(), record.args.len()), ("axis", 0));
    /// assert_eq!(record.build()?, Projection::new(AxisAligned));
    /// # Ok::<(), obliqueforest::Error>(())
    /// ```
    pub fn of(projection: &Projection) -> ProjectionRecord {
        ProjectionRecord {
            tag: projection.tag().to_string(),
            args: projection
                .get()
                .args()
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
        }
    }

    /// The family the record describes, built through the registry.
    ///
    /// # Errors
    /// As [`Projection::from_args`]: an unknown tag, an argument the family does not
    /// take, or one it rejects.
    pub fn build(&self) -> Result<Projection> {
        let args = self
            .args
            .iter()
            .fold(FamilyArgs::new(), |args, (k, v)| args.with(k, v.clone()));
        Projection::from_args(&self.tag, args)
    }
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

/// The payload of a model file; `F` is [`crate::Forest`] or `&Forest` (for writing borrowed forests).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelFile<F> {
    /// Everything but the forests.
    pub header: Header,
    /// The forests and what surrounds them.
    pub body: Body<F>,
}
