//! How a forest is grown, apart from what its trees are ([`Growth`]): the second of the
//! two parameter types, beside [`crate::params::ForestParams`] (the fitted model's).

use crate::error::Result;
use crate::value::Value;
use serde::{Deserialize, Serialize};

/// How a forest is grown, beyond what its trees are: settings applied while growing
/// (pruning, constraints, screening, threads), so never part of a model's bytes. A warm
/// start, a pickle of the parameters and a worker growing trees for a cluster are each
/// given the whole of it; a model read from bytes has [`Growth::default`] (one thread,
/// nothing applied, classifiers' `min_category_samples`, whatever its task: a warm start
/// of a regressor passes its own). A new growth setting is a field here, its row in the
/// Python parameter table, and the code that applies it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Growth {
    /// Minimal cost-complexity pruning of every grown tree ([`crate::prune`]); 0 prunes
    /// nothing. Applied as each tree is grown, so the stored trees are the pruned ones.
    pub ccp_alpha: f64,
    /// Monotonic constraint per feature (scikit-learn's `monotonic_cst`): 1 increasing, -1
    /// decreasing, 0 none; empty for no constraint. Regression and binary classification
    /// (on the probability of class 1). An oblique projection `sum_j w_j x_j` may split
    /// only when its constrained terms agree in direction (`sign(w_j) * cst_j`), and then
    /// orders its children that way, so predictions are monotonic for every family.
    pub monotonic_cst: Vec<i8>,
    /// Worker threads; -1 means all cores. Never changes the fitted model.
    pub n_jobs: i64,
    /// Candidate screening at large nodes: at a node of `n` rows, more than twice this
    /// many, every candidate projection is scored on this many of its rows or `16 *
    /// sqrt(n)`, whichever is more, drawn at random, and only the four best are scored on
    /// all of them; the best of those splits the
    /// node (with its exact threshold). `None` scores every candidate on every row. For
    /// the splitters "best" and "hist" of forests with targets.
    pub candidate_samples: Option<usize>,
    /// Categorical columns: at a node, the levels with fewer in-bag rows than this are
    /// taken together as one group when the levels are ordered ([`crate::columns`]), so a
    /// column of many rare levels cannot split a node by the noise of its levels. 1 gives
    /// the exact optimal partition (Fisher 1958; Breiman et al. 1984).
    pub min_category_samples: usize,
    /// Whether an oblique projection may take categorical columns among its terms (read
    /// through the node's level maps, [`crate::columns`]). `false` leaves categorical
    /// columns to splits of their own: a sampled projection of several terms drops its
    /// categorical ones (keeping its first term when none is left).
    pub categorical_in_projections: bool,
}

impl Growth {
    /// Sets the growth setting `name` (the field of the same name) from a plain value, as
    /// a caller that holds settings by name (the Python boundary) gives them: a new setting
    /// is a field and its arm here.
    ///
    /// # Errors
    /// [`crate::Error::InvalidInput`] for a name that is no setting or a value of the wrong
    /// kind (ranges are [`crate::params::ForestParams::check`]'s).
    pub fn set(&mut self, name: &str, value: &Value) -> Result<()> {
        let wrong = |what: &str| {
            crate::Error::InvalidInput(format!("growth setting {name}: {what}, got {value:?}"))
        };
        match (name, value) {
            ("ccp_alpha", Value::Float(v)) => self.ccp_alpha = *v,
            ("ccp_alpha", Value::Int(v)) => self.ccp_alpha = *v as f64,
            ("ccp_alpha", _) => return Err(wrong("must be a number")),
            ("monotonic_cst", Value::None) => self.monotonic_cst = Vec::new(),
            ("monotonic_cst", Value::Ints(v)) => {
                self.monotonic_cst = v
                    .iter()
                    .map(|&c| i8::try_from(c).map_err(|_| wrong("entries must be -1, 0 or 1")))
                    .collect::<Result<_>>()?
            }
            ("monotonic_cst", _) => return Err(wrong("must be None or a list of ints")),
            ("n_jobs", Value::Int(v)) => self.n_jobs = *v,
            ("n_jobs", _) => return Err(wrong("must be an integer")),
            ("candidate_samples", Value::None) => self.candidate_samples = None,
            ("candidate_samples", Value::Int(v)) => {
                let v = usize::try_from(*v).map_err(|_| wrong("must be None or a count"))?;
                self.candidate_samples = Some(v)
            }
            ("candidate_samples", _) => return Err(wrong("must be None or a count")),
            ("min_category_samples", Value::Int(v)) => {
                self.min_category_samples =
                    usize::try_from(*v).map_err(|_| wrong("must be a count"))?
            }
            ("min_category_samples", _) => return Err(wrong("must be a count")),
            ("categorical_in_projections", Value::Bool(v)) => self.categorical_in_projections = *v,
            ("categorical_in_projections", _) => return Err(wrong("must be a bool")),
            _ => {
                return Err(crate::Error::InvalidInput(format!(
                    "{name:?} is no growth setting (ccp_alpha, monotonic_cst, n_jobs, \
                     candidate_samples, min_category_samples, categorical_in_projections)"
                )))
            }
        }
        Ok(())
    }
}

impl Default for Growth {
    /// One thread, no pruning, no constraint, no screening.
    fn default() -> Self {
        Growth {
            ccp_alpha: 0.0,
            monotonic_cst: Vec::new(),
            n_jobs: 1,
            candidate_samples: None,
            min_category_samples: DEFAULT_MIN_CATEGORY_SAMPLES,
            categorical_in_projections: true,
        }
    }
}

/// The default of [`Growth::min_category_samples`] (and of classifiers').
pub const DEFAULT_MIN_CATEGORY_SAMPLES: usize = 3;

/// Regressors' default of [`Growth::min_category_samples`]
/// ([`crate::params::ForestParams::regression`]): on the real tables of
/// `benches/categorical_bench.py` pooling only the levels of one row is the more accurate
/// for regression, while on classes a level of two rows is pure half the time, so that a
/// column of noise levels misleads classifiers at 2.
pub const DEFAULT_MIN_CATEGORY_SAMPLES_REGRESSION: usize = 2;
