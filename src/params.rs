//! Forest parameters. [`ForestParams`] holds what the user asked for, with
//! scikit-learn's names; [`ForestParams::check`] validates it against the data
//! and resolves it into a [`TreeConfig`] of plain numbers. Only a checked
//! configuration can grow trees.
//!
//! Every count a user gives is bounded here, before anything is allocated from it
//! ([`MAX_ESTIMATORS`], [`MAX_CANDIDATES`], [`MAX_DRAWS`] bootstrap draws, and the
//! projection family's own bound on the entries sampled per node), so that no parameter
//! can make a fit abort on an allocation or overflow an index.

use crate::error::{invalid, Result};
pub use crate::growth::{
    Growth, DEFAULT_MIN_CATEGORY_SAMPLES, DEFAULT_MIN_CATEGORY_SAMPLES_REGRESSION,
};
use crate::projection::{AxisAligned, Projection};
use serde::{Deserialize, Serialize};

/// The largest `n_estimators` accepted: far beyond any useful forest, far below counts
/// whose tree table alone would exhaust memory.
pub const MAX_ESTIMATORS: usize = 1 << 20;
/// The largest number of candidate projections per split node (`max_features` resolved).
/// Each candidate costs a pass over the node's rows, so more is never useful; the bound
/// keeps the candidate buffers and the samplers' index arithmetic (p·d) far from overflow.
pub const MAX_CANDIDATES: usize = 1 << 20;
/// The most features (columns of X) a forest may be grown on: the fit and every fitted
/// model keep per-feature tables (importances, scales, a sparse matrix's column offsets),
/// and a model file may declare at most this many.
pub const MAX_FEATURES: usize = 1 << 24;
/// The largest number of bootstrap draws per tree (`max_samples` resolved): a row's draw
/// count is a `u32`, and each draw takes time.
pub const MAX_DRAWS: usize = u32::MAX as usize;

/// Classification (with its number of classes) or regression, of one target column or
/// of several at once (multi-output: one tree per estimator whose splits serve every
/// output, as scikit-learn's forests grow them).
///
/// The multi-output variants come after the single-output ones so that a single-output
/// model serializes to the bytes it always had (postcard writes a variant's index).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Task {
    /// Class codes `0..n_classes`.
    Classification {
        /// The number of classes.
        n_classes: usize,
    },
    /// Real targets.
    Regression,
    /// Several class columns; column `o` has codes `0..n_classes[o]`. A node's value is the
    /// concatenation of each output's class distribution.
    MultiClassification {
        /// The number of classes of each output (at least two outputs).
        n_classes: Vec<usize>,
    },
    /// Several real target columns; a node's value is the mean of each.
    MultiRegression {
        /// The number of target columns (at least two).
        n_outputs: usize,
    },
    /// No targets: trees grown on X alone (unsupervised and isolation forests), split by
    /// a rule on the projected values ([`Criterion::TwoMeans`], [`Criterion::FastBic`]; with
    /// [`Splitter::Random`] and one candidate per node, a uniformly random cut: isolation
    /// trees). A leaf keeps one value, the path length of its rows normalised by the
    /// average path length of the tree's sample (`(depth + c(n_leaf)) / c(rows per tree)`,
    /// Liu et al. 2008), so a forest's prediction is isolation forest's `E[h(x)] / c(ψ)`
    /// ([`crate::Forest::score_samples`]).
    Unsupervised {
        /// Features each tree may use, drawn without replacement from the tree's own
        /// stream (random subspaces; scikit-learn's IsolationForest `max_features`); `None`
        /// for all of them. Needs a family with explicit projections when fewer than all.
        tree_features: Option<usize>,
    },
}

impl Task {
    /// Values stored per node: class probabilities (of every output, concatenated), or
    /// one mean per output.
    pub fn n_outputs(&self) -> usize {
        match self {
            Task::Classification { n_classes } => *n_classes,
            Task::Regression => 1,
            Task::MultiClassification { n_classes } => {
                n_classes.iter().fold(0usize, |a, &b| a.saturating_add(b))
            }
            Task::MultiRegression { n_outputs } => *n_outputs,
            Task::Unsupervised { .. } => 1,
        }
    }

    /// Target columns (scikit-learn's `n_outputs_`): 1 for the single-output tasks, 0 for
    /// [`Task::Unsupervised`].
    pub fn n_targets(&self) -> usize {
        match self {
            Task::Classification { .. } | Task::Regression => 1,
            Task::MultiClassification { n_classes } => n_classes.len(),
            Task::MultiRegression { n_outputs } => *n_outputs,
            Task::Unsupervised { .. } => 0,
        }
    }

    /// The number of classes of each target column (`None` for regression).
    pub fn class_counts(&self) -> Option<Vec<usize>> {
        match self {
            Task::Classification { n_classes } => Some(vec![*n_classes]),
            Task::MultiClassification { n_classes } => Some(n_classes.clone()),
            Task::Regression | Task::MultiRegression { .. } | Task::Unsupervised { .. } => None,
        }
    }

    /// Whether targets are class codes.
    pub fn is_classification(&self) -> bool {
        matches!(
            self,
            Task::Classification { .. } | Task::MultiClassification { .. }
        )
    }
}

/// Impurity criterion.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Criterion {
    /// Gini impurity (classification).
    Gini,
    /// Shannon entropy, "entropy" or "log_loss" (classification).
    Entropy,
    /// Squared error (regression).
    SquaredError,
    /// Half Poisson deviance (regression of non-negative targets with a positive sum).
    Poisson,
    /// Absolute error around the weighted median (regression).
    AbsoluteError,
    /// Squared error with Friedman's improvement score for choosing splits, scikit-learn's
    /// "friedman_mse" (regression): impurity and leaf values as [`Criterion::SquaredError`].
    FriedmanMse,
    /// Two-means on the projected values ([`Task::Unsupervised`]; treeple's "twomeans"):
    /// a candidate's threshold minimises the within-side sum of squares of its projected
    /// values, and candidates compare by the fraction of the node's sum of squares along
    /// them that their split removes (so a projection's scale does not decide).
    TwoMeans,
    /// Fast-BIC on the projected values ([`Task::Unsupervised`]; Madhyastha et al. 2020,
    /// treeple's "fastbic"): the split whose hard two-Gaussian mixture (equal or separate
    /// variances, whichever fits better) has the best BIC gain over one Gaussian; a node
    /// where one Gaussian fits better than any two (a negative gain, under
    /// `min_impurity_decrease = 0`) stays a leaf.
    FastBic,
}

impl Criterion {
    /// Whether the criterion scores projected values rather than targets
    /// ([`Task::Unsupervised`]).
    pub fn is_unsupervised(self) -> bool {
        matches!(self, Criterion::TwoMeans | Criterion::FastBic)
    }
}

/// How thresholds are chosen for a candidate projection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Splitter {
    /// Scan every midpoint between distinct consecutive projected values.
    Best,
    /// One threshold uniform between the node's smallest and largest projected value
    /// (extremely randomized trees).
    Random,
    /// As `Best` on nodes of fewer than [`Splitter::HIST_MIN_ROWS_PER_BIN`] × `max_bins`
    /// rows; larger nodes bin each candidate's projected values into `max_bins` equal-width
    /// bins between the node's smallest and largest value (adaptive histograms) and scan
    /// the bin boundaries only, in O(n) instead of O(n log n). Thresholds stay midpoints
    /// between observed values, so every split separates the rows exactly as scanned.
    Histogram {
        /// Bins per candidate, in `[2, MAX_BINS]`.
        max_bins: usize,
    },
}

impl Splitter {
    /// A histogram node has at least this many rows per bin.
    pub const HIST_MIN_ROWS_PER_BIN: usize = 8;
    /// The largest `max_bins` accepted.
    pub const MAX_BINS: usize = 65_536;
}

/// The number d of candidate projections sampled at each split node.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum MaxFeatures {
    /// d = p.
    All,
    /// d = max(1, floor(sqrt(p))).
    Sqrt,
    /// d = max(1, floor(log2(p))).
    Log2,
    /// d given directly (may exceed p for oblique samplers).
    Count(usize),
    /// d = max(1, floor(f * p)); f may exceed 1 for oblique samplers.
    Fraction(f64),
}

/// A sample count given absolutely or as a fraction of the training rows.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum SampleCount {
    /// A number of rows.
    Count(usize),
    /// A fraction of the training rows.
    Fraction(f64),
    /// The square root of the training rows, rounded up (treeple's unsupervised forests
    /// split nodes of at least `sqrt(n)` rows, so that leaves hold several rows).
    Sqrt,
}

impl SampleCount {
    /// `ceil(sqrt(n_samples))`.
    fn sqrt_of(n_samples: usize) -> usize {
        (n_samples as f64).sqrt().ceil() as usize
    }
}

/// Everything that defines how a forest is grown.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ForestParams {
    /// Classification (with its classes) or regression.
    pub task: Task,
    /// The impurity criterion (it must fit the task).
    pub criterion: Criterion,
    /// How thresholds are searched.
    pub splitter: Splitter,
    /// The projection family candidates are drawn from.
    pub projection: Projection,
    /// Candidate projections per split node.
    pub max_features: MaxFeatures,
    /// Trees, at most [`MAX_ESTIMATORS`].
    pub n_estimators: usize,
    /// Maximum depth; `None` for unlimited.
    pub max_depth: Option<usize>,
    /// Minimum rows to split a node.
    pub min_samples_split: SampleCount,
    /// Minimum rows in each leaf.
    pub min_samples_leaf: SampleCount,
    /// Minimum fraction of the total weight in each leaf, in `[0, 0.5]`.
    pub min_weight_fraction_leaf: f64,
    /// Split only if the weighted impurity decrease (over the root weight) is at least this.
    pub min_impurity_decrease: f64,
    /// Grow best-first with at most this many leaves.
    pub max_leaf_nodes: Option<usize>,
    /// Draw a bootstrap sample per tree.
    pub bootstrap: bool,
    /// Bootstrap draws per tree (at most n_samples); `None` for n_samples.
    pub max_samples: Option<SampleCount>,
    /// Reweight classes to balance each tree's bootstrap sample ("balanced_subsample").
    pub class_weight_subsample: bool,
    /// Record out-of-bag predictions while fitting.
    pub oob: bool,
    /// The forest's seed: tree t draws from streams keyed by (seed, t).
    pub seed: u64,
    /// Honest trees (Wager & Athey 2018): the fraction of each tree's in-bag rows set
    /// aside from the split search to fill its leaves afterwards, in `[0, 1)`; 0 grows
    /// ordinary trees. See [`crate::forest`]'s honest sampling. Not part of the plain
    /// serde encoding: the formats carry it in their kind section, written only when it
    /// is not 0 (so other models keep their bytes).
    #[serde(skip)]
    pub honest_fraction: f64,
    /// Keep, per leaf, the training rows that fill it and their weights, and the training
    /// targets once per forest (quantile regression forests, Meinshausen 2006);
    /// regression only. Carried like `honest_fraction`.
    #[serde(skip)]
    pub store_leaf_values: bool,
    /// The kind of each column: its number of levels for a categorical column (values are
    /// the level codes `0..levels`, NaN for missing), 0 for a numeric one; empty when every
    /// column is numeric. See [`crate::columns`]. Not part of the plain serde encoding: the
    /// formats carry it in a column section, written only when it is not empty (so models
    /// of numeric data keep their bytes).
    #[serde(skip)]
    pub categorical: Vec<u32>,
    /// The names of each categorical column's levels (the strings behind codes
    /// `0..levels`), empty for a numeric column; empty when not given. Carried with
    /// `categorical`, so a model file can read rows of strings
    /// ([`crate::model::Model::encode_cells`]).
    #[serde(skip)]
    pub level_names: Vec<Vec<String>>,
    /// How the trees are grown beyond what they are ([`Growth`]): never part of a model's
    /// bytes; a warm start is given it whole ([`crate::Forest::grow_more`]).
    #[serde(skip)]
    pub growth: Growth,
}

impl ForestParams {
    /// These parameters with the default growth settings: what two forests' parameters
    /// are compared as. The growth settings are how a forest was grown, never part of its
    /// bytes (a forest read back has [`Growth::default`], whatever its task's defaults):
    /// the thread count never changes a tree, and the others are applied to the trees
    /// themselves, which the comparisons compare.
    pub(crate) fn without_growth(&self) -> ForestParams {
        ForestParams {
            growth: Growth::default(),
            ..self.clone()
        }
    }
}

/// The data's shape: at least one row and one feature, at most [`MAX_FEATURES`] features.
fn check_data(n_samples: usize, n_features: usize) -> Result<()> {
    if n_features == 0 {
        return Err(invalid("X", "needs at least one feature"));
    }
    if n_features > MAX_FEATURES {
        return Err(invalid(
            "X",
            format!(
                "has {n_features} features; at most {MAX_FEATURES} (2**24) are supported \
                 (select or hash features first, e.g. sklearn's HashingVectorizer with \
                 n_features <= 2**24)"
            ),
        ));
    }
    if n_samples == 0 {
        return Err(invalid("X", "needs at least one sample"));
    }
    Ok(())
}

impl ForestParams {
    /// Defaults of scikit-learn's RandomForestClassifier (gini, sqrt, 100 trees, bootstrap).
    pub fn classification(n_classes: usize) -> Self {
        ForestParams {
            task: Task::Classification { n_classes },
            criterion: Criterion::Gini,
            splitter: Splitter::Best,
            projection: Projection::new(AxisAligned),
            max_features: MaxFeatures::Sqrt,
            n_estimators: 100,
            max_depth: None,
            min_samples_split: SampleCount::Count(2),
            min_samples_leaf: SampleCount::Count(1),
            min_weight_fraction_leaf: 0.0,
            min_impurity_decrease: 0.0,
            max_leaf_nodes: None,
            bootstrap: true,
            max_samples: None,
            class_weight_subsample: false,
            oob: false,
            seed: 0,
            honest_fraction: 0.0,
            store_leaf_values: false,
            categorical: Vec::new(),
            level_names: Vec::new(),
            growth: Growth::default(),
        }
    }

    /// Defaults of scikit-learn's RandomForestRegressor (squared error, all features); rare
    /// levels of categorical columns pooled below
    /// [`DEFAULT_MIN_CATEGORY_SAMPLES_REGRESSION`] rows.
    pub fn regression() -> Self {
        ForestParams {
            task: Task::Regression,
            criterion: Criterion::SquaredError,
            max_features: MaxFeatures::All,
            growth: Growth {
                min_category_samples: DEFAULT_MIN_CATEGORY_SAMPLES_REGRESSION,
                ..Growth::default()
            },
            ..Self::classification(2)
        }
    }

    /// Validates the parameters for data of `n_samples` rows and `n_features` columns and
    /// resolves them into numbers.
    ///
    /// # Errors
    /// [`crate::Error::InvalidParameter`] naming the first offending parameter.
    pub fn check(&self, n_samples: usize, n_features: usize) -> Result<TreeConfig> {
        check_data(n_samples, n_features)?;
        self.check_task()?;
        let n_candidates = self.n_candidates(n_features)?;
        let (min_samples_leaf, min_samples_split) = self.min_samples(n_samples)?;
        self.check_tree_limits(n_features)?;
        let (n_draws, subsample) = self.draws(n_samples)?;
        self.check_kinds()?;
        let tree_features = self.check_unsupervised(n_features)?;
        crate::threads::n_threads(Some(self.growth.n_jobs))?;
        self.projection.check_candidates(n_features, n_candidates)?;
        let kinds = crate::columns::Kinds {
            categorical: &self.categorical,
            level_names: &self.level_names,
            monotonic_cst: &self.growth.monotonic_cst,
            min_category_samples: self.growth.min_category_samples,
            compact_family: self.projection.descriptors().map(|_| self.projection.tag()),
        };
        crate::columns::check(&kinds, n_features)?;
        Ok(TreeConfig {
            n_features,
            n_outputs: self.task.n_outputs(),
            criterion: self.criterion,
            splitter: self.splitter,
            n_candidates,
            max_depth: self.max_depth.unwrap_or(usize::MAX),
            min_samples_split,
            min_samples_leaf,
            min_weight_fraction_leaf: self.min_weight_fraction_leaf,
            min_impurity_decrease: self.min_impurity_decrease,
            max_leaf_nodes: self.max_leaf_nodes,
            n_draws,
            subsample,
            tree_features,
            honest_fraction: self.honest_fraction,
            categorical: self.categorical.clone(),
            growth: self.growth.clone(),
            fork_rows: crate::probe::fork_rows(),
            par_rows: crate::probe::par_rows(),
        })
    }

    /// The task against the criterion (and the task's own counts).
    fn check_task(&self) -> Result<()> {
        let classification = self.task.is_classification();
        match (&self.task, self.criterion) {
            (Task::Classification { n_classes }, Criterion::Gini | Criterion::Entropy) => {
                if *n_classes == 0 {
                    return Err(invalid("n_classes", "must be at least 1"));
                }
            }
            (Task::MultiClassification { n_classes }, Criterion::Gini | Criterion::Entropy) => {
                if n_classes.len() < 2 || n_classes.contains(&0) {
                    return Err(invalid(
                        "n_classes",
                        "a multi-output task needs at least two outputs of at least 1 class",
                    ));
                }
            }
            (Task::MultiRegression { n_outputs }, _) if *n_outputs < 2 => {
                return Err(invalid(
                    "n_outputs",
                    "a multi-output task needs at least two outputs",
                ))
            }
            (
                Task::Regression | Task::MultiRegression { .. },
                Criterion::SquaredError
                | Criterion::Poisson
                | Criterion::AbsoluteError
                | Criterion::FriedmanMse,
            ) => {}
            (Task::Unsupervised { .. }, c) if c.is_unsupervised() => {}
            (Task::Unsupervised { .. }, _) => {
                return Err(invalid(
                    "criterion",
                    "a forest without targets needs 'twomeans' or 'fastbic'",
                ))
            }
            _ if classification => {
                return Err(invalid(
                    "criterion",
                    "classification needs 'gini' or 'entropy'",
                ))
            }
            _ => {
                return Err(invalid(
                    "criterion",
                    "regression needs 'squared_error', 'absolute_error' or 'poisson'",
                ))
            }
        }
        Ok(())
    }

    /// `n_estimators`, `max_depth`, and the candidates per node `max_features` gives.
    fn n_candidates(&self, n_features: usize) -> Result<usize> {
        if self.n_estimators == 0 || self.n_estimators > MAX_ESTIMATORS {
            return Err(invalid(
                "n_estimators",
                format!(
                    "must be in [1, {MAX_ESTIMATORS}], got {}",
                    self.n_estimators
                ),
            ));
        }
        if self.max_depth == Some(0) {
            return Err(invalid("max_depth", "must be at least 1 or None"));
        }
        let p = n_features as f64;
        let n_candidates = match self.max_features {
            MaxFeatures::All => n_features,
            MaxFeatures::Sqrt => (p.sqrt().floor() as usize).max(1),
            MaxFeatures::Log2 => (p.log2().floor() as usize).max(1),
            MaxFeatures::Count(0) => return Err(invalid("max_features", "must be at least 1")),
            MaxFeatures::Count(d) => d,
            MaxFeatures::Fraction(f) if !(f > 0.0 && f.is_finite()) => {
                return Err(invalid(
                    "max_features",
                    format!("fraction must be > 0, got {f}"),
                ))
            }
            MaxFeatures::Fraction(f) => ((f * p).floor() as usize).max(1),
        };
        if n_candidates > MAX_CANDIDATES {
            return Err(invalid(
                "max_features",
                format!(
                    "asks for {n_candidates} candidate projections per node; at most \
                     {MAX_CANDIDATES} are supported"
                ),
            ));
        }
        Ok(n_candidates)
    }

    /// `min_samples_leaf` and `min_samples_split` as row counts (scikit-learn's rounding).
    fn min_samples(&self, n_samples: usize) -> Result<(usize, usize)> {
        let min_samples_leaf = match self.min_samples_leaf {
            SampleCount::Count(0) => return Err(invalid("min_samples_leaf", "must be at least 1")),
            SampleCount::Count(c) => c,
            SampleCount::Sqrt => SampleCount::sqrt_of(n_samples).max(1),
            SampleCount::Fraction(f) if !(f > 0.0 && f < 1.0) => {
                return Err(invalid(
                    "min_samples_leaf",
                    format!("fraction must be in (0, 1), got {f}"),
                ))
            }
            SampleCount::Fraction(f) => ((f * n_samples as f64).ceil() as usize).max(1),
        };
        let min_samples_split = match self.min_samples_split {
            SampleCount::Count(c) if c < 2 => {
                return Err(invalid("min_samples_split", "must be at least 2"))
            }
            SampleCount::Count(c) => c,
            SampleCount::Sqrt => SampleCount::sqrt_of(n_samples).max(2),
            SampleCount::Fraction(f) if !(f > 0.0 && f <= 1.0) => {
                return Err(invalid(
                    "min_samples_split",
                    format!("fraction must be in (0, 1], got {f}"),
                ))
            }
            SampleCount::Fraction(f) => ((f * n_samples as f64).ceil() as usize).max(2),
        };
        Ok((min_samples_leaf, min_samples_split))
    }

    /// The limits on growth: weight fraction, impurity decrease, pruning, monotonic
    /// constraints, leaf count.
    fn check_tree_limits(&self, n_features: usize) -> Result<()> {
        if !(0.0..=0.5).contains(&self.min_weight_fraction_leaf) {
            return Err(invalid("min_weight_fraction_leaf", "must be in [0, 0.5]"));
        }
        if !(self.min_impurity_decrease >= 0.0 && self.min_impurity_decrease.is_finite()) {
            return Err(invalid(
                "min_impurity_decrease",
                "must be a finite number >= 0",
            ));
        }
        if !(self.growth.ccp_alpha >= 0.0 && self.growth.ccp_alpha.is_finite()) {
            return Err(invalid("ccp_alpha", "must be a finite number >= 0"));
        }
        if !self.growth.monotonic_cst.is_empty() {
            if self.growth.monotonic_cst.len() != n_features {
                return Err(invalid(
                    "monotonic_cst",
                    format!(
                        "has {} entries for {n_features} features",
                        self.growth.monotonic_cst.len()
                    ),
                ));
            }
            if let Some(c) = self
                .growth
                .monotonic_cst
                .iter()
                .find(|c| !(-1..=1).contains(*c))
            {
                return Err(invalid(
                    "monotonic_cst",
                    format!("entries must be -1, 0 or 1, got {c}"),
                ));
            }
            if matches!(self.task, Task::Classification { n_classes } if n_classes > 2) {
                return Err(invalid(
                    "monotonic_cst",
                    "monotonicity constraints are not supported with multiclass classification",
                ));
            }
            if self.task.n_targets() > 1 {
                return Err(invalid(
                    "monotonic_cst",
                    "monotonicity constraints are not supported with multiple outputs",
                ));
            }
            if self.criterion == Criterion::AbsoluteError {
                return Err(invalid(
                    "monotonic_cst",
                    "monotonicity constraints are not supported with criterion='absolute_error'",
                ));
            }
        }
        if let Some(m) = self.max_leaf_nodes {
            if m < 2 {
                return Err(invalid("max_leaf_nodes", "must be at least 2 or None"));
            }
        }
        Ok(())
    }

    /// The rows each tree draws (`max_samples`), and the subsample size when it draws
    /// without replacement.
    fn draws(&self, n_samples: usize) -> Result<(usize, Option<usize>)> {
        // a forest without targets may draw its rows without replacement (isolation
        // forests' subsample): `max_samples` with `bootstrap = false`
        let unsupervised = matches!(self.task, Task::Unsupervised { .. });
        let n_draws = match (self.bootstrap, self.max_samples) {
            (_, None) => n_samples,
            (false, Some(_)) if !unsupervised => {
                // scikit-learn's words (its tests match them)
                return Err(invalid(
                    "max_samples",
                    "`max_sample` cannot be set if `bootstrap=False`. Either switch to \
                     `bootstrap=True` or set `max_sample=None`.",
                ));
            }
            (_, Some(SampleCount::Count(0))) => {
                return Err(invalid("max_samples", "must be at least 1"))
            }
            (_, Some(SampleCount::Count(c))) => c,
            (_, Some(SampleCount::Sqrt)) => SampleCount::sqrt_of(n_samples).max(1),
            (_, Some(SampleCount::Fraction(f))) if !(f > 0.0 && f.is_finite()) => {
                return Err(invalid(
                    "max_samples",
                    format!("fraction must be a finite number > 0, got {f}"),
                ))
            }
            (_, Some(SampleCount::Fraction(f))) => {
                // (saturating: a huge fraction is refused below)
                ((f * n_samples as f64).round() as usize).max(1)
            }
        };
        // without replacement: at most every row (the caller warns, as scikit-learn does)
        let subsample =
            (!self.bootstrap && self.max_samples.is_some()).then_some(n_draws.min(n_samples));
        let n_draws = subsample.unwrap_or(n_draws);
        // draws may outnumber the rows (with replacement), as scikit-learn >= 1.9 allows;
        // each takes time, so they are bounded
        if n_draws > MAX_DRAWS {
            return Err(invalid(
                "max_samples",
                format!("asks for {n_draws} bootstrap draws per tree; at most {MAX_DRAWS}"),
            ));
        }
        Ok((n_draws, subsample))
    }

    /// The settings of the forest's kind: out-of-bag, class weighting per sample, honest
    /// trees, leaf values, histogram bins, candidate screening.
    fn check_kinds(&self) -> Result<()> {
        let classification = self.task.is_classification();
        if self.oob && !self.bootstrap {
            return Err(invalid(
                "oob_score",
                "Out of bag estimation only available if bootstrap=True",
            ));
        }
        if self.class_weight_subsample && !classification {
            return Err(invalid(
                "class_weight",
                "'balanced_subsample' is for classification only",
            ));
        }
        if !(0.0..1.0).contains(&self.honest_fraction) {
            return Err(invalid(
                "honest_fraction",
                format!("must be in [0, 1), got {}", self.honest_fraction),
            ));
        }
        if self.store_leaf_values && classification {
            return Err(invalid(
                "store_leaf_values",
                "is for regression (quantiles of the targets in the leaves)",
            ));
        }
        if matches!(self.task, Task::Unsupervised { .. })
            && (self.honest_fraction > 0.0 || self.store_leaf_values)
        {
            let name = if self.store_leaf_values {
                "store_leaf_values"
            } else {
                "honest_fraction"
            };
            return Err(invalid(
                name,
                "is for forests with targets (a forest without targets has no leaf values to \
                 fill or keep)",
            ));
        }
        if let Splitter::Histogram { max_bins } = self.splitter {
            if !(2..=Splitter::MAX_BINS).contains(&max_bins) {
                return Err(invalid(
                    "max_bins",
                    format!("must be in [2, {}], got {max_bins}", Splitter::MAX_BINS),
                ));
            }
        }
        if self.growth.candidate_samples.is_some_and(|m| m < 2) {
            return Err(invalid(
                "candidate_samples",
                "must be at least 2 (the rows on which a node's candidates are compared)",
            ));
        }
        Ok(())
    }

    /// The rules of a forest without targets ([`Task::Unsupervised`]), and the features
    /// each tree may use (`n_features` for every task but a random-subspace one).
    fn check_unsupervised(&self, n_features: usize) -> Result<usize> {
        let Task::Unsupervised { tree_features } = self.task else {
            return Ok(n_features);
        };
        if self.oob {
            return Err(invalid(
                "oob_score",
                "a forest without targets has no out-of-bag score",
            ));
        }
        if !self.growth.monotonic_cst.is_empty() {
            return Err(invalid(
                "monotonic_cst",
                "monotonicity constraints need targets",
            ));
        }
        if self.growth.ccp_alpha != 0.0 {
            return Err(invalid(
                "ccp_alpha",
                "cost-complexity pruning weighs impurities, which a forest without targets \
                 does not have",
            ));
        }
        if matches!(self.splitter, Splitter::Histogram { .. }) {
            return Err(invalid(
                "splitter",
                "a forest without targets scores sorted projected values ('best') or one \
                 random threshold ('random'), never histograms",
            ));
        }
        let k = tree_features.unwrap_or(n_features);
        if !(1..=n_features).contains(&k) {
            return Err(invalid(
                "tree_features",
                format!("must be in [1, n_features = {n_features}], got {k}"),
            ));
        }
        if k < n_features && self.projection.descriptors().is_some() {
            return Err(invalid(
                "tree_features",
                format!(
                    "the {:?} family stores compact descriptors over all the features; a \
                     subset of features per tree needs a family of explicit projections \
                     (axis, sparse, Forest-RC, Gaussian)",
                    self.projection.tag()
                ),
            ));
        }
        Ok(k)
    }

    /// The number of worker threads `n_jobs` stands for on this machine.
    pub fn n_threads(&self) -> usize {
        crate::threads::n_threads(Some(self.growth.n_jobs)).unwrap_or(1)
    }
}

/// Resolved, validated settings for growing one tree. Only [`ForestParams::check`] makes
/// one, so a configuration that exists has been validated.
#[derive(Clone, Debug)]
pub struct TreeConfig {
    pub(crate) n_features: usize,
    pub(crate) n_outputs: usize,
    pub(crate) criterion: Criterion,
    pub(crate) splitter: Splitter,
    pub(crate) n_candidates: usize,
    pub(crate) max_depth: usize,
    pub(crate) min_samples_split: usize,
    pub(crate) min_samples_leaf: usize,
    pub(crate) min_weight_fraction_leaf: f64,
    pub(crate) min_impurity_decrease: f64,
    pub(crate) max_leaf_nodes: Option<usize>,
    /// Bootstrap draws per tree (or n_samples without bootstrap; the subsample's rows).
    pub(crate) n_draws: usize,
    /// Rows each tree draws without replacement ([`Task::Unsupervised`] with
    /// `max_samples` and no bootstrap); `None` for a bootstrap sample or every row.
    pub(crate) subsample: Option<usize>,
    /// Features each tree may use ([`Task::Unsupervised`]'s `tree_features`; else all).
    pub(crate) tree_features: usize,
    /// The fraction of each tree's in-bag rows that fill its leaves instead of growing it.
    pub(crate) honest_fraction: f64,
    /// Levels per column, 0 for numeric ones; empty when all are numeric.
    pub(crate) categorical: Vec<u32>,
    /// How the trees are grown, checked against the data (`monotonic_cst` has one entry
    /// per feature or none): the code that applies a growth setting reads it here, so a
    /// new setting needs no field of its own in this type.
    pub(crate) growth: Growth,
    /// The node size from which subtrees fork (`tree::fork`): `None`, the builder's own
    /// (tests set a lower one, through the probes).
    pub(crate) fork_rows: Option<usize>,
    /// The node size from which candidates are scored on several threads
    /// (`tree::par_candidates`): `None`, the search's own (tests set a lower one).
    pub(crate) par_rows: Option<usize>,
}

impl TreeConfig {
    /// Columns of the training data.
    pub fn n_features(&self) -> usize {
        self.n_features
    }
    /// Values stored per leaf (classes, or 1 for regression).
    pub fn n_outputs(&self) -> usize {
        self.n_outputs
    }
    /// The impurity criterion.
    pub fn criterion(&self) -> Criterion {
        self.criterion
    }
    /// How thresholds are searched.
    pub fn splitter(&self) -> Splitter {
        self.splitter
    }
    /// Candidate projections sampled per split node (`max_features` resolved).
    pub fn n_candidates(&self) -> usize {
        self.n_candidates
    }
    /// Maximum depth (`usize::MAX` for unlimited).
    pub fn max_depth(&self) -> usize {
        self.max_depth
    }
    /// Minimum rows to split a node (resolved to a count).
    pub fn min_samples_split(&self) -> usize {
        self.min_samples_split
    }
    /// Minimum rows per leaf (resolved to a count).
    pub fn min_samples_leaf(&self) -> usize {
        self.min_samples_leaf
    }
    /// Minimum fraction of the root's weight per leaf.
    pub fn min_weight_fraction_leaf(&self) -> f64 {
        self.min_weight_fraction_leaf
    }
    /// Minimum weighted impurity decrease of a split.
    pub fn min_impurity_decrease(&self) -> f64 {
        self.min_impurity_decrease
    }
    /// Maximum leaves (best-first growth), if any.
    pub fn max_leaf_nodes(&self) -> Option<usize> {
        self.max_leaf_nodes
    }
    /// Bootstrap draws per tree (or n_samples without bootstrap; the subsample's rows).
    pub fn n_draws(&self) -> usize {
        self.n_draws
    }
    /// The fraction of each tree's in-bag rows that fill its leaves (0: ordinary trees).
    pub fn honest_fraction(&self) -> f64 {
        self.honest_fraction
    }
    /// Rows each tree draws without replacement, if it subsamples.
    pub fn subsample(&self) -> Option<usize> {
        self.subsample
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use crate::value::Value;

    #[test]
    fn growth_settings_are_set_by_name() {
        let mut g = Growth::default();
        g.set("ccp_alpha", &Value::Int(2)).unwrap();
        g.set("monotonic_cst", &Value::Ints(vec![1, -1, 0]))
            .unwrap();
        g.set("n_jobs", &Value::Int(-1)).unwrap();
        g.set("candidate_samples", &Value::Int(64)).unwrap();
        g.set("min_category_samples", &Value::Int(3)).unwrap();
        let want = Growth {
            ccp_alpha: 2.0,
            monotonic_cst: vec![1, -1, 0],
            n_jobs: -1,
            candidate_samples: Some(64),
            min_category_samples: 3,
            categorical_in_projections: true,
        };
        assert_eq!(g, want);
        g.set("candidate_samples", &Value::None).unwrap();
        assert_eq!(g.candidate_samples, None);
        for (name, value) in [
            ("ccp_alfa", Value::Float(0.1)),
            ("n_jobs", Value::Str("all".into())),
            ("candidate_samples", Value::Int(-1)),
            ("monotonic_cst", Value::Ints(vec![300])),
        ] {
            let e = g.set(name, &value).unwrap_err().to_string();
            assert!(e.contains(name), "{e}");
        }
    }

    fn rejected_param(p: &ForestParams, n: usize, d: usize) -> String {
        match p.check(n, d) {
            Err(Error::InvalidParameter { name, .. }) => name.to_string(),
            other => panic!("expected an invalid parameter, got {other:?}"),
        }
    }

    #[test]
    fn check_resolves_max_features_like_scikit_learn() {
        let mut p = ForestParams::classification(2);
        let d = |p: &ForestParams| p.check(100, 30).unwrap().n_candidates();
        assert_eq!(d(&p), 5, "classification defaults to sqrt");
        assert_eq!(d(&ForestParams::regression()), 30, "regression to all");
        p.max_features = MaxFeatures::Log2;
        assert_eq!(d(&p), 4);
        p.max_features = MaxFeatures::Fraction(2.5);
        assert_eq!(d(&p), 75, "oblique forests may ask for more than p");
        p.max_features = MaxFeatures::Fraction(1e-9);
        assert_eq!(d(&p), 1);
    }

    #[test]
    fn more_features_than_a_model_holds_are_refused_before_any_table_is_built() {
        let p = ForestParams::classification(2);
        assert!(p.check(10, MAX_FEATURES).is_ok());
        assert_eq!(rejected_param(&p, 10, MAX_FEATURES + 1), "X");
        let e = p.check(10, MAX_FEATURES + 1).unwrap_err().to_string();
        assert!(e.contains("2**24"), "{e}");
    }

    #[test]
    fn check_bounds_counts_before_anything_is_allocated() {
        let base = ForestParams::classification(2);
        for d in [MAX_CANDIDATES + 1, 1 << 40, (1 << 62) + 1, usize::MAX] {
            let p = ForestParams {
                max_features: MaxFeatures::Count(d),
                ..base.clone()
            };
            assert_eq!(rejected_param(&p, 10, 4), "max_features");
        }
        let p = ForestParams {
            max_features: MaxFeatures::Fraction(1e300),
            ..base.clone()
        };
        assert_eq!(rejected_param(&p, 10, 4), "max_features");
        let p = ForestParams {
            n_estimators: MAX_ESTIMATORS + 1,
            ..base.clone()
        };
        assert_eq!(rejected_param(&p, 10, 4), "n_estimators");
        let p = ForestParams {
            max_samples: Some(SampleCount::Count(MAX_DRAWS + 1)),
            ..base.clone()
        };
        assert_eq!(rejected_param(&p, 10, 4), "max_samples");
        let p = ForestParams {
            max_samples: Some(SampleCount::Fraction(1e300)),
            ..base.clone()
        };
        assert_eq!(rejected_param(&p, 10, 4), "max_samples");
        for (max_samples, draws) in [
            (SampleCount::Count(10), 10),
            (SampleCount::Count(11), 11),
            (SampleCount::Fraction(2.5), 25),
        ] {
            let p = ForestParams {
                max_samples: Some(max_samples),
                ..base.clone()
            };
            assert_eq!(p.check(10, 4).unwrap().n_draws(), draws);
        }
    }

    #[test]
    fn check_bounds_the_entries_a_node_samples() {
        // 2^20 dense candidates over 100 features: 10^8 weights per node
        let p = ForestParams {
            projection: Projection::new(crate::projection::Gaussian),
            max_features: MaxFeatures::Count(MAX_CANDIDATES),
            ..ForestParams::classification(2)
        };
        assert_eq!(rejected_param(&p, 10, 100), "max_features");
        let p = ForestParams {
            projection: Projection::new(AxisAligned),
            ..p
        };
        assert!(p.check(10, 100).is_ok());
    }

    #[test]
    fn check_rejects_cross_parameter_conflicts() {
        let base = ForestParams::classification(2);
        let cases = [
            (
                ForestParams {
                    oob: true,
                    bootstrap: false,
                    ..base.clone()
                },
                "oob_score",
            ),
            (
                ForestParams {
                    bootstrap: false,
                    max_samples: Some(SampleCount::Fraction(0.5)),
                    ..base.clone()
                },
                "max_samples",
            ),
            (
                ForestParams {
                    criterion: Criterion::SquaredError,
                    ..base.clone()
                },
                "criterion",
            ),
            (
                ForestParams {
                    splitter: Splitter::Histogram { max_bins: 1 },
                    ..base.clone()
                },
                "max_bins",
            ),
            (
                ForestParams {
                    growth: Growth {
                        n_jobs: 0,
                        ..Growth::default()
                    },
                    ..base.clone()
                },
                "n_jobs",
            ),
        ];
        for (p, name) in cases {
            assert_eq!(rejected_param(&p, 10, 4), name);
        }
    }

    #[test]
    fn check_resolves_sample_counts() {
        let p = ForestParams {
            min_samples_leaf: SampleCount::Fraction(0.25),
            min_samples_split: SampleCount::Fraction(0.5),
            max_samples: Some(SampleCount::Fraction(0.3)),
            ..ForestParams::classification(2)
        };
        let cfg = p.check(10, 4).unwrap();
        assert_eq!(
            (
                cfg.min_samples_leaf(),
                cfg.min_samples_split(),
                cfg.n_draws()
            ),
            (3, 5, 3)
        );
    }
}
