//! Forest parameters. [`ForestParams`] holds what the user asked for, with
//! scikit-learn's names; [`ForestParams::check`] validates it against the data
//! and resolves it into a [`TreeConfig`] of plain numbers. Only a checked
//! configuration can grow trees.

use crate::error::{invalid, Result};
use crate::projection::ProjectionKind;
use serde::{Deserialize, Serialize};

/// Classification (with its number of classes) or regression.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Task {
    Classification { n_classes: usize },
    Regression,
}

impl Task {
    /// Values stored per node: class probabilities, or one mean.
    pub fn n_outputs(&self) -> usize {
        match self {
            Task::Classification { n_classes } => *n_classes,
            Task::Regression => 1,
        }
    }
}

/// Impurity criterion.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Criterion {
    Gini,
    Entropy,
    SquaredError,
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
    Histogram { max_bins: usize },
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
    Count(usize),
    Fraction(f64),
}

/// Everything that defines how a forest is grown.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ForestParams {
    pub task: Task,
    pub criterion: Criterion,
    pub splitter: Splitter,
    pub projection: ProjectionKind,
    pub max_features: MaxFeatures,
    pub n_estimators: usize,
    pub max_depth: Option<usize>,
    pub min_samples_split: SampleCount,
    pub min_samples_leaf: SampleCount,
    pub min_weight_fraction_leaf: f64,
    pub min_impurity_decrease: f64,
    pub max_leaf_nodes: Option<usize>,
    pub bootstrap: bool,
    pub max_samples: Option<SampleCount>,
    /// Reweight classes to balance each tree's bootstrap sample ("balanced_subsample").
    pub class_weight_subsample: bool,
    /// Record out-of-bag predictions while fitting.
    pub oob: bool,
    pub seed: u64,
    /// Worker threads; -1 means all cores. Never changes the fitted model, so it is not
    /// part of the serialized model either (a loaded model uses one thread until told).
    #[serde(skip, default = "one_thread")]
    pub n_jobs: i64,
}

impl ForestParams {
    /// Defaults of scikit-learn's RandomForestClassifier (gini, sqrt, 100 trees, bootstrap).
    pub fn classification(n_classes: usize) -> Self {
        ForestParams {
            task: Task::Classification { n_classes },
            criterion: Criterion::Gini,
            splitter: Splitter::Best,
            projection: ProjectionKind::AxisAligned,
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
            n_jobs: 1,
        }
    }

    /// Defaults of scikit-learn's RandomForestRegressor (squared error, all features).
    pub fn regression() -> Self {
        ForestParams {
            task: Task::Regression,
            criterion: Criterion::SquaredError,
            max_features: MaxFeatures::All,
            ..Self::classification(2)
        }
    }

    /// Validates the parameters for data of `n_samples` rows and `n_features` columns and
    /// resolves them into numbers.
    ///
    /// # Errors
    /// [`crate::Error::InvalidParameter`] naming the first offending parameter.
    pub fn check(&self, n_samples: usize, n_features: usize) -> Result<TreeConfig> {
        if n_features == 0 {
            return Err(invalid("X", "needs at least one feature"));
        }
        if n_samples == 0 {
            return Err(invalid("X", "needs at least one sample"));
        }
        match (self.task, self.criterion) {
            (Task::Classification { n_classes }, Criterion::Gini | Criterion::Entropy) => {
                if n_classes == 0 {
                    return Err(invalid("n_classes", "must be at least 1"));
                }
            }
            (Task::Regression, Criterion::SquaredError) => {}
            (Task::Classification { .. }, _) => {
                return Err(invalid(
                    "criterion",
                    "classification needs 'gini' or 'entropy'",
                ))
            }
            (Task::Regression, _) => {
                return Err(invalid("criterion", "regression needs 'squared_error'"))
            }
        }
        if self.n_estimators == 0 {
            return Err(invalid("n_estimators", "must be at least 1"));
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
        let min_samples_leaf = match self.min_samples_leaf {
            SampleCount::Count(0) => return Err(invalid("min_samples_leaf", "must be at least 1")),
            SampleCount::Count(c) => c,
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
            SampleCount::Fraction(f) if !(f > 0.0 && f <= 1.0) => {
                return Err(invalid(
                    "min_samples_split",
                    format!("fraction must be in (0, 1], got {f}"),
                ))
            }
            SampleCount::Fraction(f) => ((f * n_samples as f64).ceil() as usize).max(2),
        };
        if !(0.0..=0.5).contains(&self.min_weight_fraction_leaf) {
            return Err(invalid("min_weight_fraction_leaf", "must be in [0, 0.5]"));
        }
        if !(self.min_impurity_decrease >= 0.0 && self.min_impurity_decrease.is_finite()) {
            return Err(invalid(
                "min_impurity_decrease",
                "must be a finite number >= 0",
            ));
        }
        if let Some(m) = self.max_leaf_nodes {
            if m < 2 {
                return Err(invalid("max_leaf_nodes", "must be at least 2 or None"));
            }
        }
        let n_draws = match (self.bootstrap, self.max_samples) {
            (_, None) => n_samples,
            (false, Some(_)) => {
                return Err(invalid(
                    "max_samples",
                    "can only be set when bootstrap=True",
                ))
            }
            (true, Some(SampleCount::Count(0))) => {
                return Err(invalid("max_samples", "must be at least 1"))
            }
            (true, Some(SampleCount::Count(c))) => c,
            (true, Some(SampleCount::Fraction(f))) if !(f > 0.0 && f <= 1.0) => {
                return Err(invalid(
                    "max_samples",
                    format!("fraction must be in (0, 1], got {f}"),
                ))
            }
            (true, Some(SampleCount::Fraction(f))) => {
                ((f * n_samples as f64).round() as usize).max(1)
            }
        };
        if self.oob && !self.bootstrap {
            return Err(invalid(
                "oob_score",
                "out-of-bag estimates need bootstrap=True",
            ));
        }
        if self.class_weight_subsample && !matches!(self.task, Task::Classification { .. }) {
            return Err(invalid(
                "class_weight",
                "'balanced_subsample' is for classification only",
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
        crate::threads::n_threads(Some(self.n_jobs))?;
        self.projection.check(n_features)?;
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
        })
    }

    /// The number of worker threads `n_jobs` stands for on this machine.
    pub fn n_threads(&self) -> usize {
        crate::threads::n_threads(Some(self.n_jobs)).unwrap_or(1)
    }
}

fn one_thread() -> i64 {
    1
}

/// Resolved, validated settings for growing one tree.
#[derive(Clone, Debug)]
pub struct TreeConfig {
    pub n_features: usize,
    pub n_outputs: usize,
    pub criterion: Criterion,
    pub splitter: Splitter,
    pub n_candidates: usize,
    pub max_depth: usize,
    pub min_samples_split: usize,
    pub min_samples_leaf: usize,
    pub min_weight_fraction_leaf: f64,
    pub min_impurity_decrease: f64,
    pub max_leaf_nodes: Option<usize>,
    /// Bootstrap draws per tree (or n_samples without bootstrap).
    pub n_draws: usize,
}
