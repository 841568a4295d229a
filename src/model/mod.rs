//! The model file (`.of`): a fitted estimator as the Python package saves it, readable and
//! predictable from Rust. This module is the one implementation of the format; the Python
//! package reads and writes it through the pyo3 boundary.
//!
//! A file is one frame (see [`crate::serialize`]) with magic `OBLQMODL`, version
//! [`MODEL_FORMAT_VERSION`], and a postcard payload holding
//!
//! | part | content |
//! |---|---|
//! | [`Header`] | estimator kind, task, classes with their numpy dtype, feature names, n_features, the estimator's parameters and Python-side fitted attributes as plain data, and the projection record ([`ProjectionRecord`]: the family's registry tag and arguments) |
//! | [`Body`] | one core [`Forest`]; or a rotation ensemble (scaling, rotations, trees per rotation, one forest per rotation); or an autoencoder's forest with its Nyström leaf map |
//! | missing section | per tree of every forest (in [`Body::forests`] order), the nodes whose missing values go against the default side (see [`crate::serialize`]) |
//! | kind sections | per forest (in [`Body::forests`] order), what an honest forest or one that keeps leaf values adds: its honest fraction, the training targets, each tree's leaf rows (see [`crate::serialize`]) |
//! | column sections | per forest, the levels of its categorical columns |
//!
//! Every model is written as version 5; files of versions 1 to 4 (whose header had no
//! record, and which had only the sections their model needed) are read by `compat`.
//!
//! Invariant: a [`Model`] exists only after [`check()`] accepted it, on reading and on
//! writing alike. `check` compares every header field with the core model (n_features,
//! task, classes and their dtypes, estimator kind, the projection record, sizes of every
//! array) and names the field on a mismatch; on reading, every forest's
//! tables and values are validated first ([`crate::serialize`]), so a model that loads
//! predicts finite values (class probabilities summing to 1 per output) for every finite
//! input. Nothing is allocated from a header number: lengths come from decoded data,
//! which is bounded by the bytes present. Files are read from regular files only (never
//! devices or FIFOs), at most their declared length, and saved over regular files or new
//! paths only, whole or not at all (`atomic`). Reading, decoding and validating stop soon
//! after the call's [`crate::Cancel`] token is cancelled (Ctrl-C from Python). Thread
//! counts are never read from a file: a loaded model predicts on one thread until
//! [`Model::set_n_jobs`].
//!
//! Rooms: `header` holds the plain types of a file (estimator kind, class labels,
//! parameters, the projection record, bodies); `check` compares a header with its
//! forests; `schema` checks its parameters, attribute names and projection family against
//! the estimators' schema (`schema.txt`, generated from the Python estimators); `file`
//! frames, writes and reads the bytes (of every layout, through `payload`: a payload and
//! its sections both ways); `compat` reads (and, for tests, writes) the versions before
//! the record; `atomic` replaces a file safely; this file holds [`Model`]
//! and its predictions.

mod atomic;
mod cells;
mod check;
mod compat;
mod file;
mod header;
mod payload;
mod schema;

pub use self::cells::Cell;
pub use self::check::check;
#[cfg(feature = "python")]
pub(crate) use self::check::differing_args;
pub use self::compat::{save_file_legacy, write_legacy};
pub use self::file::{
    save_file, save_file_unchecked, write, write_unchecked, MODEL_FORMAT_VERSION,
};
pub use self::header::{
    Body, ClassLabels, Encoder, Estimator, Header, Label, ModelFile, Param, ProjectionRecord,
    Rotation, Scaling, MAX_FEATURES, MAX_LABEL_WIDTH,
};
pub use crate::serialize::MODEL_MAGIC;
pub use crate::value::{ArrayData, Value};

use crate::error::{Error, Result};
use crate::explain::{Game, Shap};
use crate::forest::Forest;
use crate::params::Task;
use ndarray::{Array2, ArrayView2};
use std::path::Path;

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
    /// Isolation forests: whether each row is an inlier (scikit-learn's `+1`) rather than
    /// an outlier (`-1`), i.e. [`Model::decision_function`] `>= 0`.
    Inliers(Vec<bool>),
}

impl Model {
    /// Reads and checks a model file.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when `path` is not a regular file (a device, FIFO or
    /// directory) or cannot be read; [`Error::CorruptModel`] naming what is wrong with its
    /// contents; [`Error::UnsupportedVersion`] for another format version.
    pub fn load(path: impl AsRef<Path>) -> Result<Model> {
        Model::checked(file::read_path(path.as_ref())?)
    }

    /// Reads and checks a model from the bytes of a model file.
    ///
    /// # Errors
    /// As [`Model::load`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Model> {
        Model::checked(file::read_bytes(bytes)?)
    }

    /// Builds a model from its parts, checking them as a loaded file is checked.
    ///
    /// # Errors
    /// As [`check()`].
    pub fn new(header: Header, body: Body<Forest>) -> Result<Model> {
        Model::checked(ModelFile { header, body })
    }

    fn checked(file: ModelFile<Forest>) -> Result<Model> {
        Ok(Model {
            file: check::validated(file)?,
            n_jobs: 1,
        })
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
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when a rotated value is beyond float32's range (as the
    /// Python estimator refuses it).
    fn rotated(&self, r: &Rotation<Forest>, scaled: &Array2<f64>, k: usize) -> Result<Array2<f32>> {
        let p = self.n_features();
        let q = &r.rotations[k * p * p..(k + 1) * p * p];
        let mut out = Array2::<f32>::zeros((scaled.nrows(), p));
        let mut largest = 0.0f64;
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
                if o[j].is_infinite() {
                    largest = largest.max(s.abs());
                }
            }
        }
        if largest > 0.0 {
            return Err(Error::InvalidInput(format!(
                "a rotation maps X to values up to {largest:.3e} in magnitude, beyond float32's \
                 range ({:.3e}) in which the engine computes; rescale X",
                f32::MAX
            )));
        }
        Ok(out)
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
                        let mean = f.predict(self.rotated(r, &scaled, i)?.view(), self.n_jobs)?;
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

    /// Shapley values of [`Model::predict_raw`]'s outputs for every row of `x`: the
    /// path-dependent game without a `background`, the interventional game against its
    /// rows with one (see [`crate::explain`]). For a classifier, `values[[i, j, c]]` is
    /// feature `j`'s share of row `i`'s probability of class `c`; each row's shares add up
    /// to its output minus [`Shap::expected_value`].
    ///
    /// ```no_run
    /// use ndarray::array;
    /// use obliqueforest::model::Model;
    ///
    /// let model = Model::load("model.of")?;
    /// let rows = array![[5.1, 3.5, 1.4, 0.2], [6.7, 3.0, 5.2, 2.3]];
    /// let shap = model.shap_values(rows.view(), None)?;
    /// for (j, name) in model.feature_names().unwrap_or_default().iter().enumerate() {
    ///     println!("{name}: {:+.3}", shap.values[[0, j, 0]]);
    /// }
    /// # Ok::<(), obliqueforest::Error>(())
    /// ```
    ///
    /// A rotation ensemble's values are on the original features: its trees' splits on
    /// rotated coordinates are oblique splits on them.
    ///
    /// # Errors
    /// As [`Model::predict_raw`] for `x` and `background`.
    pub fn shap_values(
        &self,
        x: ArrayView2<'_, f64>,
        background: Option<ArrayView2<'_, f64>>,
    ) -> Result<Shap> {
        let forest = match &self.file.body {
            Body::Forest(f) => f,
            Body::Encoder(e) => &e.forest,
            Body::Rotation(r) => {
                // the trees read the scaled rows rotated; the scaling keeps each feature
                // known or unknown, so the game is played on the original features
                let p = self.n_features();
                let (mut forests, mut rotations) = (Vec::new(), Vec::new());
                for (k, f) in r.forests.iter().enumerate() {
                    if let Some(f) = f {
                        forests.push(f);
                        rotations.extend_from_slice(&r.rotations[k * p * p..(k + 1) * p * p]);
                    }
                }
                let scaled = self.scaled(r, x)?;
                let background = background.map(|b| self.scaled(r, b)).transpose()?;
                return crate::explain::shap_values_rotated(
                    &forests,
                    &rotations,
                    scaled.view(),
                    background.as_ref().map(|b| b.view()),
                    crate::explain::Limits::default(),
                    self.n_jobs,
                );
            }
        };
        let x = self.to_f32(x)?;
        let background = background.map(|b| self.to_f32(b)).transpose()?;
        let game = match &background {
            None => Game::PathDependent,
            Some(b) => Game::Interventional {
                background: b.view(),
            },
        };
        forest.shap_values(x.view(), game, self.n_jobs)
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

    /// Class indices (classifiers) or values (regressors) for each row; for an isolation
    /// forest, whether each row is an inlier.
    ///
    /// # Errors
    /// As [`Model::predict_raw`]; [`Error::InvalidInput`] for an unsupervised forest,
    /// which does not predict (its [`Model::apply`] gives the leaves).
    pub fn predict(&self, x: ArrayView2<'_, f64>) -> Result<Predictions> {
        match self.estimator() {
            Estimator::IsolationForest => {
                let d = self.decision_function(x)?;
                return Ok(Predictions::Inliers(d.iter().map(|&v| v >= 0.0).collect()));
            }
            e if e.is_unsupervised() => {
                return Err(Error::InvalidInput(format!(
                    "a {} does not predict; its apply gives each row's leaves",
                    e.name()
                )))
            }
            _ => {}
        }
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

    /// Conditional quantiles of the target at each row (a regressor fitted with
    /// `store_leaf_values=True`: a quantile regression forest, see
    /// [`Forest::predict_quantiles`]), shape (n_samples, n_outputs, quantiles.len()): what
    /// the Python estimator's `predict_quantiles` gives (which drops the output axis for
    /// one output).
    ///
    /// # Errors
    /// As [`Model::predict_raw`]; [`Error::InvalidInput`] for a model without leaf values
    /// (or a rotation ensemble or autoencoder), a quantile outside [0, 1].
    pub fn predict_quantiles(
        &self,
        x: ArrayView2<'_, f64>,
        quantiles: &[f64],
    ) -> Result<ndarray::Array3<f64>> {
        match &self.file.body {
            Body::Forest(f) if !self.is_classifier() => {
                f.predict_quantiles(self.to_f32(x)?.view(), quantiles, self.n_jobs)
            }
            _ => Err(Error::InvalidInput(format!(
                "a {} does not predict quantiles",
                self.estimator().name()
            ))),
        }
    }

    /// An isolation forest's `score_samples`: the opposite of each row's anomaly score,
    /// `-2^(-E[h(x)] / c(ψ))` ([`Forest::score_samples`]); the lower, the more anomalous.
    ///
    /// # Errors
    /// As [`Model::predict_raw`]; [`Error::InvalidInput`] for a model that is not an
    /// isolation forest.
    pub fn score_samples(&self, x: ArrayView2<'_, f64>) -> Result<Vec<f64>> {
        match (&self.file.body, self.estimator()) {
            (Body::Forest(f), Estimator::IsolationForest) => {
                f.score_samples(self.to_f32(x)?.view(), self.n_jobs)
            }
            _ => Err(Error::InvalidInput(format!(
                "a {} has no anomaly scores",
                self.estimator().name()
            ))),
        }
    }

    /// An isolation forest's `decision_function`: [`Model::score_samples`] minus the
    /// fitted `offset_`, negative for outliers.
    ///
    /// # Errors
    /// As [`Model::score_samples`].
    pub fn decision_function(&self, x: ArrayView2<'_, f64>) -> Result<Vec<f64>> {
        let scores = self.score_samples(x)?;
        let offset = check::offset(&self.file.header)?;
        Ok(scores.into_iter().map(|s| s - offset).collect())
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
                        parts.push(f.apply(self.rotated(r, &scaled, i)?.view(), self.n_jobs)?);
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
mod validation_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::ForestParams;

    /// An axis-aligned classifier of 4 trees on 120 rows of 3 features, and its rows.
    pub(super) fn forest(n_classes: usize) -> (Forest, Array2<f32>) {
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

    /// The header of [`forest`]'s classifier saved from a `RandomForestClassifier`.
    pub(super) fn header(n_classes: usize) -> Header {
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
            projection: ProjectionRecord::of(&crate::projection::Projection::new(
                crate::projection::AxisAligned,
            )),
        }
    }

    #[test]
    fn model_round_trips_and_predicts_like_its_forest() {
        let (f, x) = forest(2);
        let expected = f.predict(x.view(), 1).unwrap();
        let model = Model::new(header(2), Body::Forest(f)).unwrap();
        let bytes = model.to_bytes().unwrap();
        assert_eq!(bytes[8..12], MODEL_FORMAT_VERSION.to_le_bytes());
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

    /// A classifier of [`forest`]'s rows with two outputs: the sign of x0 + x1, and x2 in
    /// 3 classes.
    pub(super) fn multi_output_forest() -> (Forest, Array2<f32>) {
        let (_, x) = forest(2);
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
        (Forest::fit(&params, x.view(), &y, None).unwrap(), x)
    }

    #[test]
    fn multi_output_model_round_trips_its_classes_per_output() {
        let (f, x) = multi_output_forest();
        let mut h = header(2);
        h.task = f.params().task.clone();
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
        assert_eq!(bytes[8..12], MODEL_FORMAT_VERSION.to_le_bytes());
        assert_eq!(
            f.to_bytes().unwrap()[8..12],
            crate::serialize::FORMAT_VERSION_MISSING.to_le_bytes()
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
    fn model_predicts_quantiles_and_checks_its_kind_against_the_header() {
        let (_, x) = forest(2);
        let y: Vec<f64> = x
            .rows()
            .into_iter()
            .map(|r| f64::from(r[0] - r[1]))
            .collect();
        let mut params = ForestParams::regression();
        params.n_estimators = 4;
        params.store_leaf_values = true;
        params.honest_fraction = 0.25;
        let f = Forest::fit(&params, x.view(), &y, None).unwrap();
        let h = Header {
            estimator: Estimator::RandomForestRegressor,
            task: Task::Regression,
            classes: None,
            params: vec![
                ("n_estimators".into(), Param::Value(Value::Int(4))),
                ("store_leaf_values".into(), Param::Value(Value::Bool(true))),
                ("honest_fraction".into(), Param::Value(Value::Float(0.25))),
            ],
            ..header(2)
        };
        let want = f.predict_quantiles(x.view(), &[0.1, 0.5], 1).unwrap();
        let bytes = Model::new(h.clone(), Body::Forest(f.clone()))
            .unwrap()
            .to_bytes()
            .unwrap();
        assert_eq!(bytes[8..12], MODEL_FORMAT_VERSION.to_le_bytes());
        let again = Model::from_bytes(&bytes).unwrap();
        let xf = x.mapv(|v| v as f64);
        assert_eq!(
            again.predict_quantiles(xf.view(), &[0.1, 0.5]).unwrap(),
            want
        );
        let mut wrong = h;
        wrong.params[2].1 = Param::Value(Value::Float(0.5));
        let err = Model::new(wrong, Body::Forest(f)).unwrap_err().to_string();
        assert!(err.contains("honest_fraction"), "{err}");
        let (c, _) = forest(2);
        let classifier = Model::new(header(2), Body::Forest(c)).unwrap();
        assert!(classifier.predict_quantiles(xf.view(), &[0.5]).is_err());
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

#[cfg(test)]
mod cells_tests {
    use super::tests::header;
    use super::*;
    use crate::params::ForestParams;

    #[test]
    fn rows_of_strings_predict_through_the_level_names() {
        // column 0: a category of three levels; class "yes" for level "b"
        let x = Array2::from_shape_fn((90, 3), |(i, j)| match j {
            0 => (i % 3) as f32,
            _ => ((i * 7 + j * 13) % 17) as f32,
        });
        let y: Vec<f64> = (0..90).map(|i| f64::from(u8::from(i % 3 == 1))).collect();
        let mut p = ForestParams::classification(2);
        p.n_estimators = 4;
        p.categorical = vec![3, 0, 0];
        p.level_names = vec![vec!["a".into(), "b".into(), "c".into()], vec![], vec![]];
        let f = Forest::fit(&p, x.view(), &y, None).unwrap();
        let model = Model::from_bytes(
            &Model::new(header(2), Body::Forest(f))
                .unwrap()
                .to_bytes()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(model.level_names()[0], ["a", "b", "c"]);
        let cells = vec![
            vec![Cell::Str("b"), Cell::Num(1.0), Cell::Str("2")],
            vec![Cell::Str("c"), Cell::Missing, Cell::Str("")],
            vec![Cell::Str("never seen"), Cell::Num(0.0), Cell::Num(0.0)],
        ];
        let xs = model.encode_cells(&cells).unwrap();
        assert_eq!(xs[[0, 0]], 1.0);
        assert!(xs[[2, 0]] == 3.0 && xs[[1, 2]].is_nan());
        let Predictions::Classes(c) = model.predict(xs.view()).unwrap() else {
            panic!("a classifier predicts classes")
        };
        assert_eq!(c[..2], [1, 0]);
        let err = model
            .encode_cells(&[vec![Cell::Str("a"), Cell::Str("x"), Cell::Num(0.0)]])
            .unwrap_err();
        assert!(err.to_string().contains("column 1 (row 0)"), "{err}");
    }
}
