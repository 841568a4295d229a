//! The memory guard: an estimate of a forest's size, and a budget that stops a fit with
//! [`Error::ResourceLimit`] before the model outgrows it.
//!
//! Two checks use the budget ([`memory_limit`], process-wide):
//! - before any tree grows, a *lower bound* of the model's size (fully grown classifiers
//!   keep at least about one leaf per class, each holding a value per class; out-of-bag
//!   sums hold a value per row and class) times the trees asked for: requests that cannot
//!   fit are refused at once;
//! - while trees grow, the trees grown so far extrapolated to all trees asked for: once
//!   over the budget, no further tree starts, and the fit fails (the trees already
//!   running finish, so the overshoot is at most one tree per thread).

use crate::error::{Error, Result};
use crate::params::{ForestParams, SampleCount, Task};
use crate::tree::Tree;
use std::sync::atomic::{AtomicU64, Ordering};

/// How much memory a fitted model may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemoryLimit {
    /// No limit.
    Unlimited,
    /// 80% of the memory available (Linux's `MemAvailable`) when a fit starts; no limit
    /// where that is unknown.
    Auto,
    /// At most this many bytes.
    Bytes(u64),
}

/// [`MemoryLimit`] packed in one atomic: 0 unlimited, `u64::MAX` auto, else bytes.
static LIMIT: AtomicU64 = AtomicU64::new(u64::MAX);

/// Sets the process-wide memory limit for fitted models (the default is [`MemoryLimit::Auto`]).
pub fn set_memory_limit(limit: MemoryLimit) {
    let packed = match limit {
        MemoryLimit::Unlimited => 0,
        MemoryLimit::Auto => u64::MAX,
        MemoryLimit::Bytes(b) => b.clamp(1, u64::MAX - 1),
    };
    LIMIT.store(packed, Ordering::Relaxed);
}

/// The process-wide memory limit for fitted models.
pub fn memory_limit() -> MemoryLimit {
    match LIMIT.load(Ordering::Relaxed) {
        0 => MemoryLimit::Unlimited,
        u64::MAX => MemoryLimit::Auto,
        b => MemoryLimit::Bytes(b),
    }
}

/// The budget in bytes for a fit starting now, if any.
pub fn budget_bytes() -> Option<u64> {
    match memory_limit() {
        MemoryLimit::Unlimited => None,
        MemoryLimit::Bytes(b) => Some(b),
        MemoryLimit::Auto => available_memory().map(|b| b / 5 * 4),
    }
}

/// Linux's estimate of the memory available to new allocations, in bytes.
fn available_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kb.checked_mul(1024)
}

/// Bytes per node of the tree tables: children, threshold, projection offset, depth and
/// sample count (4 bytes each), impurity and weighted count (8 each).
const NODE_BYTES: u64 = 6 * 4 + 2 * 8;
/// Bytes per node of the packed prediction layout.
const PACKED_NODE_BYTES: u64 = 16;

/// Memory held by a grown tree, with its packed prediction layout.
pub fn tree_bytes(t: &Tree) -> u64 {
    let nodes = t.n_nodes() as u64;
    let terms = t.proj_idx.len() as u64;
    nodes * (NODE_BYTES + PACKED_NODE_BYTES) + terms * 16 + t.value.len() as u64 * 8
}

/// A lower bound of the memory a forest of `params` grown on `n_samples` rows takes, with
/// `n_classes_present` distinct classes among the targets (classification).
pub fn forest_bytes_lower_bound(
    params: &ForestParams,
    n_samples: usize,
    n_classes_present: usize,
) -> u64 {
    let k = params.task.n_outputs() as u64;
    let fully_grown = params.max_depth.is_none()
        && params.max_leaf_nodes.is_none()
        && params.min_samples_leaf == SampleCount::Count(1)
        && params.min_samples_split == SampleCount::Count(2)
        && params.min_impurity_decrease == 0.0
        && params.min_weight_fraction_leaf == 0.0;
    // pure leaves, one class each at least; half of them, as duplicated rows with
    // different labels may share a leaf and a bootstrap sample may miss classes
    let leaves = match params.task {
        Task::Classification { .. } if fully_grown => (n_classes_present as u64 / 2).max(1),
        _ => 1,
    };
    let per_tree =
        leaves * (k * 8 + NODE_BYTES + PACKED_NODE_BYTES) + (leaves - 1) * (NODE_BYTES + 16);
    let oob = if params.oob {
        n_samples as u64 * (k * 8 + 4)
    } else {
        0
    };
    (params.n_estimators as u64).saturating_mul(per_tree) + oob
}

/// Bytes for a message: "1.23 GB", "456 kB", ...
fn gib(b: u64) -> String {
    match b {
        0..=9_999 => format!("{b} bytes"),
        10_000..=9_999_999 => format!("{:.0} kB", b as f64 / 1e3),
        10_000_000..=9_999_999_999 => format!("{:.0} MB", b as f64 / 1e6),
        _ => format!("{:.2} GB", b as f64 / 1e9),
    }
}

/// Refuses a fit whose lower-bound size is over the budget.
///
/// # Errors
/// [`Error::ResourceLimit`] naming the estimate and the budget.
pub fn check_request(
    params: &ForestParams,
    n_samples: usize,
    n_classes_present: usize,
    budget: Option<u64>,
) -> Result<()> {
    let Some(budget) = budget else {
        return Ok(());
    };
    let need = forest_bytes_lower_bound(params, n_samples, n_classes_present);
    if need <= budget {
        return Ok(());
    }
    Err(Error::ResourceLimit(format!(
        "{} trees on {n_samples} rows with {} outputs need at least {} for the model, over \
         the memory limit of {}; use fewer trees, max_depth, max_leaf_nodes or \
         min_samples_leaf, or raise the limit (obliqueforest.set_memory_limit)",
        params.n_estimators,
        params.task.n_outputs(),
        gib(need),
        gib(budget)
    )))
}

/// Running total of the trees of one fit, extrapolated to all the trees asked for.
pub(crate) struct Tally {
    budget: Option<u64>,
    base: u64,
    total_trees: u64,
    grown: AtomicU64,
    bytes: AtomicU64,
}

impl Tally {
    /// `base` bytes are already held (warm start), `n_more` trees are to grow.
    pub(crate) fn new(budget: Option<u64>, base: u64, n_more: usize) -> Self {
        Tally {
            budget,
            base,
            total_trees: n_more as u64,
            grown: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
        }
    }

    /// Counts a grown tree.
    pub(crate) fn add(&self, t: &Tree) {
        self.bytes.fetch_add(tree_bytes(t), Ordering::Relaxed);
        self.grown.fetch_add(1, Ordering::Relaxed);
    }

    /// The projected size of the whole forest.
    fn projected(&self) -> (u64, u64) {
        let grown = self.grown.load(Ordering::Relaxed);
        let bytes = self.bytes.load(Ordering::Relaxed);
        let projected = if grown == 0 {
            self.base
        } else {
            self.base + (bytes as f64 / grown as f64 * self.total_trees as f64) as u64
        };
        (grown, projected)
    }

    /// Whether the forest is on course to outgrow the budget.
    pub(crate) fn over(&self) -> bool {
        self.budget.is_some_and(|b| self.projected().1 > b)
    }

    /// The error for a fit stopped by [`Tally::over`].
    pub(crate) fn error(&self) -> Error {
        let (grown, projected) = self.projected();
        Error::ResourceLimit(format!(
            "the forest would take about {} ({grown} of {} trees grown, {} each on \
             average), over the memory limit of {}; use fewer trees, max_depth, \
             max_leaf_nodes or min_samples_leaf, or raise the limit \
             (obliqueforest.set_memory_limit)",
            gib(projected),
            self.total_trees,
            gib(self.bytes.load(Ordering::Relaxed) / grown.max(1)),
            gib(self.budget.unwrap_or(0)),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_round_trips_and_lower_bound_grows_with_classes_and_trees() {
        // (the process-wide setting is left alone: other tests fit in parallel)
        assert_eq!(memory_limit(), MemoryLimit::Auto);
        let mut p = ForestParams::classification(10_000);
        p.n_estimators = 100;
        let big = forest_bytes_lower_bound(&p, 100_000, 10_000);
        assert!(big > 30_000_000_000, "{big}");
        assert!(check_request(&p, 100_000, 10_000, Some(24_000_000_000)).is_err());
        assert!(check_request(&p, 100_000, 10_000, None).is_ok());
        p.max_depth = Some(3);
        assert!(forest_bytes_lower_bound(&p, 100_000, 10_000) < 100_000_000);
        let mut two = ForestParams::classification(2);
        two.n_estimators = 100;
        assert!(check_request(&two, 1_000_000, 2, Some(1_000_000)).is_ok());
    }
}
