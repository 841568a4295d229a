//! The header-vs-body check of a model file: every header field is compared with the
//! forests it describes (n_features, task, classes, estimator kind, sizes of every array),
//! and the first that disagrees is named. A [`super::Model`] exists only after [`check`]
//! (and [`validated`] on reading) accepted it.
//!
//! The projection is checked generically, from data: the header's projection record (a
//! registry tag and its arguments, [`super::ProjectionRecord`]) must name a family its
//! estimator may grow (the schema's `families` line, generated from the Python
//! estimators) and, built through the projection registry, equal every forest's
//! projection. Nothing here knows a projection class of Python, a preset's parameters or
//! their defaults (the estimators' names and the body each stores are the file format's
//! own): whether the parameters resolve to the record is the Python loader's judgement
//! (`obliqueforest._io.load`), which compares through [`differing_args`] too.

use super::header::{
    field, Body, ClassLabels, Estimator, Header, ModelFile, Param, Rotation, Scaling, MAX_FEATURES,
    MAX_LABEL_WIDTH,
};
use crate::error::Result;
use crate::forest::Forest;
use crate::params::Task;
use crate::projection::{FamilyArgs, Projection};
use crate::serialize;
use crate::value::Value;
use std::borrow::Borrow;

/// The longest parameter or attribute name.
const MAX_NAME: usize = 128;
/// The most dimensions of an array value.
const MAX_NDIM: usize = 32;

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
    check_kind(header, forest, what)
}

/// The header's `honest_fraction` and `store_leaf_values`, when it has them, against the
/// forest's (carried by its kind section).
fn check_kind(header: &Header, forest: &Forest, what: &str) -> Result<()> {
    let p = forest.params();
    for (k, v) in &header.params {
        let agrees = match (k.as_str(), v) {
            ("honest_fraction", Param::Value(Value::Float(f))) => *f == p.honest_fraction,
            ("honest_fraction", Param::Value(Value::Int(i))) => *i as f64 == p.honest_fraction,
            ("store_leaf_values", Param::Value(Value::Bool(b))) => *b == p.store_leaf_values,
            ("honest_fraction" | "store_leaf_values", _) => false,
            _ => true,
        };
        if !agrees {
            return Err(field(
                k,
                format!(
                    "the header says {v:?}, the {what} has honest_fraction {} and \
                     store_leaf_values {}",
                    p.honest_fraction, p.store_leaf_values
                ),
            ));
        }
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
/// [`crate::Error::CorruptModel`] naming the first field that disagrees.
pub fn check<F: Borrow<Forest>>(file: &ModelFile<F>) -> Result<()> {
    check_shape(file)?;
    check_stored_values(&file.header)?;
    check_body(file)?;
    check_record(file)?;
    // the parameters' names and values and the attributes' names, as Python checks them
    // (after the body: a file whose body is not its estimator's is named for that)
    super::schema::check(&file.header)
}

/// The header's shape against the forests: n_features, feature names, task and classes,
/// the estimators without targets, an isolation forest's offset.
fn check_shape<F: Borrow<Forest>>(file: &ModelFile<F>) -> Result<()> {
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
            check_classes(c)?;
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
            check_classes(c)?;
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
        (
            Some(false),
            Task::Classification { .. }
            | Task::MultiClassification { .. }
            | Task::Unsupervised { .. },
            _,
        ) => {
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
    // a forest without targets belongs to the estimators without targets, and theirs is one
    let unsupervised = matches!(h.task, Task::Unsupervised { .. });
    if h.estimator.is_unsupervised() != unsupervised && h.estimator != Estimator::ForestAutoencoder
    {
        return Err(field(
            "task",
            format!(
                "a {} needs a forest {} targets",
                h.estimator.name(),
                if unsupervised { "with" } else { "without" }
            ),
        ));
    }
    if h.estimator == Estimator::IsolationForest {
        offset(h)?;
    }
    Ok(())
}

/// The stored parameters' and attributes' names and plain values (any estimator).
fn check_stored_values(h: &Header) -> Result<()> {
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
    let record = &h.projection.args;
    check_names("projection", record.iter().map(|(k, _)| k.as_str()))?;
    for (k, v) in record {
        check_value(v, k)?;
    }
    Ok(())
}

/// The projection record against the forests (after [`check_body`], so that a body
/// without forests, or not its estimator's, is named for that): a family the estimator
/// may grow, which the registry builds, and which every forest grows with the same
/// arguments.
fn check_record<F: Borrow<Forest>>(file: &ModelFile<F>) -> Result<()> {
    let record = &file.header.projection;
    super::schema::check_family(&file.header)?;
    let recorded = record.build().map_err(|e| {
        field(
            "projection",
            format!("the header records a family the registry does not build: {e}"),
        )
    })?;
    for f in file.body.forests() {
        let grown = &f.borrow().params().projection;
        if grown.tag() != recorded.tag() {
            return Err(field(
                "projection",
                format!(
                    "the header records the {:?} family, but a forest of the body grows {:?}",
                    recorded.tag(),
                    grown.tag()
                ),
            ));
        }
        if let Some((name, said, has)) = differing_args(&recorded, grown).into_iter().next() {
            let short = |v: &Value| v.to_string().chars().take(80).collect::<String>();
            return Err(field(
                "projection",
                format!(
                    "the header records {name}={}, but a forest of the body grows its {:?} \
                     projections with {name}={}",
                    short(&said),
                    grown.tag(),
                    short(&has)
                ),
            ));
        }
    }
    Ok(())
}

/// The arguments on which two projections of one family differ, by name, with each one's
/// value as its family gives it ([`crate::projection::ProjectionFamily::args`]), in the
/// order of `a`'s arguments then `b`'s; empty when they are equal. A difference their
/// arguments do not show is named `projection`, each side's value its description. The
/// checker names with it where a record and a forest disagree, and Python's loader where
/// the estimator's parameters and the record do (`_core.Projection.differences`).
pub(crate) fn differing_args(a: &Projection, b: &Projection) -> Vec<(String, Value, Value)> {
    if a == b {
        return vec![];
    }
    let (a_args, b_args) = (a.get().args(), b.get().args());
    let value = |args: &FamilyArgs, name: &str| {
        args.iter()
            .find(|(k, _)| *k == name)
            .map_or(Value::None, |(_, v)| v.clone())
    };
    let mut names: Vec<&str> = a_args.iter().map(|(k, _)| k).collect();
    for (k, _) in b_args.iter() {
        if !names.contains(&k) {
            names.push(k);
        }
    }
    let differing: Vec<_> = names
        .into_iter()
        .filter_map(|name| {
            let (x, y) = (value(&a_args, name), value(&b_args, name));
            (x != y).then(|| (name.to_string(), x, y))
        })
        .collect();
    if differing.is_empty() {
        let describe = |p: &Projection| Value::Str(format!("{p:?}"));
        return vec![("projection".into(), describe(a), describe(b))];
    }
    differing
}

/// The body against the header: the body kind the estimator stores, its sizes, its
/// forests (each against the header), rotations and encoders.
fn check_body<F: Borrow<Forest>>(file: &ModelFile<F>) -> Result<()> {
    let h = &file.header;
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
            check_rotation(h, r, n_est)?
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
            // an embedding adds one leaf-map row per tree and divides by the rows' masses
            // (when positive): at most n_trees · max|L| / (the smallest positive mass)
            if e.leaf_mass.iter().any(|&m| m < 0.0) {
                return Err(field("leaf_mass", "a negative mass".into()));
            }
            let smallest = e
                .leaf_mass
                .iter()
                .copied()
                .filter(|&m| m > 0.0)
                .fold(f64::INFINITY, f64::min);
            let largest = e.leaf_map.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            if smallest.is_finite() && !(f.trees().len() as f64 * largest / smallest).is_finite() {
                return Err(field(
                    "leaf_map",
                    "entries so large (or masses so small) that an embedding overflows".into(),
                ));
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

/// A rotation ensemble's body: as many forests as rotations, orthogonal rotations of the
/// header's features, the trees per rotation against the forests (each checked against
/// the header) and `n_estimators`, finite predictions, and its scaling.
fn check_rotation<F: Borrow<Forest>>(
    h: &Header,
    r: &Rotation<F>,
    n_est: Option<i64>,
) -> Result<()> {
    let p = h.n_features as usize;
    let trees_mismatch = |n: u64| {
        field(
            "params",
            format!("n_estimators is {n_est:?} but the model holds {n} trees"),
        )
    };
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
    // a prediction adds n_trees[k] times rotation k's mean prediction
    let bound: f64 = r
        .forests
        .iter()
        .flatten()
        .map(|f| serialize::leaf_value_bound(f.borrow()))
        .sum();
    if !bound.is_finite() {
        return Err(field(
            "forests",
            "leaf values so large that the ensemble's prediction overflows".into(),
        ));
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
    Ok(())
}

/// An isolation forest's `offset_` (its fitted attribute, which `decision_function`
/// subtracts from the scores).
///
/// # Errors
/// [`crate::Error::CorruptModel`] when the header has no finite float `offset_`.
pub(crate) fn offset(h: &Header) -> Result<f64> {
    match h.attributes.iter().find(|(k, _)| k == "offset_") {
        Some((_, Value::Float(v))) if v.is_finite() => Ok(*v),
        Some((_, v)) => Err(field("offset_", format!("{v:?} is not a finite number"))),
        None => Err(field(
            "attributes",
            "an IsolationForest needs its offset_".into(),
        )),
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

fn check_classes(labels: &ClassLabels) -> Result<()> {
    let bad = |m: String| Err(field("classes", m));
    fn increasing<T: PartialOrd>(v: &[T]) -> bool {
        v.windows(2).all(|w| w[0] < w[1])
    }
    match labels {
        ClassLabels::Bool(v) if !increasing(v) => bad("labels are not sorted and distinct".into()),
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
            let fits = |v: f64| match bytes {
                2 => fits_float16(v),
                4 => v.is_finite() && f64::from(v as f32) == v,
                _ => v.is_finite(),
            };
            if let Some(v) = values.iter().find(|&&v| !fits(v)) {
                return bad(format!(
                    "label {v:?} is not a finite value of dtype float{}",
                    8 * *bytes as u32
                ));
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
                check_classes(o)?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Whether `v` is a finite value of numpy's float16 (11 significant bits, normal exponents
/// from -14, subnormals down to 2^-24, at most 65504 in magnitude).
fn fits_float16(v: f64) -> bool {
    let a = v.abs();
    if a == 0.0 {
        return true;
    }
    if a.is_nan() || a > 65504.0 {
        return false;
    }
    // the weight of the last significant bit at a's binade, as a power of two
    let exponent = ((a.to_bits() >> 52) & 0x7ff) as i32 - 1023;
    let ulp = exponent.max(-14) - 10;
    (a * 2f64.powi(-ulp)).fract() == 0.0
}

/// Validates a decoded model: every forest's tables and values
/// ([`serialize::validate_forest`], which also lays it out for prediction), then the
/// header against them ([`check`]).
///
/// # Errors
/// [`crate::Error::CorruptModel`] naming what is wrong, [`crate::Error::Cancelled`].
pub(super) fn validated(file: ModelFile<Forest>) -> Result<ModelFile<Forest>> {
    for f in file.body.forests() {
        serialize::validate_forest(f)?;
    }
    check(&file)?;
    Ok(file)
}
