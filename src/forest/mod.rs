//! A forest: trees grown in parallel, each from its own random streams keyed by
//! (seed, tree index), so the fitted forest is the same for every thread count.
//! Predictions add trees in index order for the same reason.
//!
//! Rooms: this file holds the fitted [`Forest`], its growth (a fit, a warm start) and its
//! accessors; `fit.rs` checks a fit's data and grows trees in the fit's pool; `sampling.rs`
//! says which rows each tree sees and with what weight (bootstrap counts, class balance);
//! `oob.rs` keeps the out-of-bag estimates; `predict.rs` walks rows through the trees
//! (predictions, leaves); `quantiles.rs` predicts conditional quantiles from the training
//! targets the leaves keep (quantile regression forests); `inspect.rs` explains a fitted
//! forest (paths, boxes, rules, importances, in-bag and honest rows).
//!
//! Kinds of forest differ in values chosen at fit, never in a copy of the builder: how
//! each tree samples rows (`sampling.rs`: the bootstrap, and for honest forests the split
//! of a tree's rows into a structure part and an honest part that fills the leaves), and
//! what a leaf keeps (its value, recomputed from the honest rows for honest trees; its
//! rows, for forests grown with `store_leaf_values`, with the targets once per forest).
//!
//! The data path of a fit: [`Forest::fit`] → `fit::prepare` (parameters checked
//! against the data, targets and weights checked, X read once into a
//! [`crate::data::FeatureMatrix`]) → `fit::grow_trees` (the family's data statistics
//! computed once, then trees in parallel: `sampling.rs` draws each tree's rows, the tree
//! builder grows it (its large nodes' subtrees and candidates on free threads of the same
//! pool), [`crate::prune`] prunes it) → the trees in index order, laid out for
//! prediction ([`crate::tree::PackedTree`]). [`Forest::fit_many`] and
//! [`Forest::grow_more_many`] grow several forests' trees in one parallel loop
//! (`fit::grow_batch`, which `fit::grow_trees` runs for a single forest).

mod fit;
mod inspect;
mod oob;
mod predict;
mod quantiles;
mod sampling;

use fit::{grow_batch, prepare_all, Grown, Growth};
pub(crate) use fit::{grow_trees, prepare, FitData};
pub(crate) use oob::ones;
pub use oob::OobPrediction;
pub use quantiles::LeafTargets;
pub(crate) use quantiles::QuantileOrder;

use crate::error::{Error, Result};
use crate::limits;
use crate::params::{ForestParams, Task};
use crate::projection::CompactDescriptors;
use crate::sparse::Features;
use crate::tree::{PackedTree, Tree};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::sync::atomic::AtomicUsize;
use std::sync::OnceLock;

/// A fitted projection forest.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Forest {
    pub(crate) params: ForestParams,
    pub(crate) n_features: usize,
    pub(crate) trees: Vec<Tree>,
    #[serde(skip)]
    pub(crate) oob: Option<OobPrediction>,
    /// The prediction layout, built on first use (not serialized: derived from `trees`).
    #[serde(skip)]
    pub(crate) packed: OnceLock<Vec<PackedTree>>,
    /// The training targets the leaves' rows refer to, when the forest keeps leaf values
    /// (`store_leaf_values`); the formats carry it in their kind section.
    #[serde(skip)]
    pub(crate) leaf_targets: Option<LeafTargets>,
    /// The targets of each output in ascending order, built on first use by the quantile
    /// predictions (derived from `leaf_targets`).
    #[serde(skip)]
    pub(crate) quantile_order: OnceLock<QuantileOrder>,
}

/// Two forests are equal when they hold the same trees grown with the same parameters
/// (caches and out-of-bag bookkeeping aside).
impl PartialEq for Forest {
    fn eq(&self, other: &Self) -> bool {
        // the growth settings are how a forest was grown, not what it is
        self.params.without_growth() == other.params.without_growth()
            && self.n_features == other.n_features
            && self.trees == other.trees
            && self.leaf_targets == other.leaf_targets
    }
}

/// The nodes of the trees whose prediction layouts an out-of-bag walk holds at once
/// ([`Forest::absorb`]; about 16 bytes a node, so some 64 MiB): the walk of a forest of
/// large trees takes the memory of a few of them, not of the forest. (Unit tests walk
/// groups of a tree or two.)
const OOB_LAYOUT_NODES: usize = crate::probe::test_or(1 << 22, 100);

impl Forest {
    /// Grows a forest on `x` (n_samples × n_features: a dense array in any memory order,
    /// or a [`crate::sparse::SparseView`], CSR or CSC, never densified) and `y` (class codes
    /// `0..n_classes` as floats, or real targets; for the multi-output tasks
    /// n_samples × n_outputs values, row-major, each output's codes in `0..n_classes[o]`).
    /// Sparse X grows the forest its dense array grows, bit for bit ([`crate::sparse`]).
    ///
    /// Runs in a pool of `params.growth.n_jobs` threads (see [`crate::threads`]); stops early
    /// under a cancelled [`crate::Cancel`] token or over the memory limit
    /// ([`crate::limits`]).
    ///
    /// # Errors
    /// Invalid parameters, infinity in the data (NaN is a missing value), mismatched
    /// lengths, bad weights, regression targets too large for the criterion's sums, Poisson
    /// targets that are negative or sum to zero; [`Error::Cancelled`];
    /// [`Error::ResourceLimit`] when the model would outgrow the memory limit.
    pub fn fit<'x>(
        params: &ForestParams,
        x: impl Into<Features<'x>>,
        y: &[f64],
        sample_weight: Option<&[f64]>,
    ) -> Result<Forest> {
        Self::fit_with_progress(params, x, y, sample_weight, None)
    }

    /// [`Forest::fit`], counting finished trees in `progress` (read it from another thread).
    ///
    /// # Errors
    /// As [`Forest::fit`].
    pub fn fit_with_progress<'x>(
        params: &ForestParams,
        x: impl Into<Features<'x>>,
        y: &[f64],
        sample_weight: Option<&[f64]>,
        progress: Option<&AtomicUsize>,
    ) -> Result<Forest> {
        Self::grown(&prepare(params, x, y, sample_weight)?, progress)
    }

    /// A new forest of `n_estimators` trees grown on prepared data, laid out for prediction.
    fn grown(data: &FitData<'_>, progress: Option<&AtomicUsize>) -> Result<Forest> {
        let mut forest = Forest::empty(data);
        forest.grow(data, data.params.n_estimators, progress)?;
        forest.packed(); // lay out for prediction now, not inside the first predict call
        Ok(forest)
    }

    /// A forest of no trees yet, for `data`.
    fn empty(data: &FitData<'_>) -> Forest {
        Forest {
            params: data.params.clone(),
            n_features: data.x.n_features,
            trees: Vec::new(),
            oob: None,
            packed: OnceLock::new(),
            leaf_targets: LeafTargets::of(data),
            quantile_order: OnceLock::new(),
        }
    }

    /// Grows one forest per `(params[i], xs[i])`, all on the same targets and sample
    /// weights, with every tree of every forest a task of one parallel loop in a pool of
    /// the largest `n_jobs` among `params`: many small forests (a rotation ensemble's
    /// micro-forests, one per rotation of the data) keep every thread busy to the end and
    /// pay the pool's hand-off and the memory guard's reads once. Each forest is the one
    /// [`Forest::fit`] grows from its parameters and data, tree for tree; it is laid out
    /// for prediction on first use rather than at once (the caller may extend or drop it).
    ///
    /// # Errors
    /// As [`Forest::fit`] for any of the forests; `params` and `xs` of different lengths.
    pub fn fit_many<'x>(
        params: &[ForestParams],
        xs: Vec<Features<'x>>,
        y: &[f64],
        sample_weight: Option<&[f64]>,
        progress: Option<&AtomicUsize>,
    ) -> Result<Vec<Forest>> {
        if params.len() != xs.len() {
            return Err(Error::InvalidInput(format!(
                "{} parameter sets for {} feature matrices; give one per forest",
                params.len(),
                xs.len()
            )));
        }
        let data = prepare_all(params, xs, y, sample_weight)?;
        let mut forests: Vec<Forest> = data.iter().map(Forest::empty).collect();
        let mut refs: Vec<&mut Forest> = forests.iter_mut().collect();
        let n_trees: Vec<usize> = params.iter().map(|p| p.n_estimators).collect();
        Forest::extend_all(&mut refs, &data, &n_trees, progress)?;
        Ok(forests)
    }

    /// Grows `n_more` further trees with the same parameters and seed (warm start), grown
    /// as `growth` says (threads, pruning, constraints, screening: the trees do not depend
    /// on the threads): [`Forest::grow_more_with`] of the forest's own parameters with
    /// that growth. A forest read from bytes has the default growth
    /// ([`crate::params::Growth::default`]); `forest.params().growth` is the first fit's.
    ///
    /// # Errors
    /// As [`Forest::grow_more_with`].
    pub fn grow_more<'x>(
        &mut self,
        x: impl Into<Features<'x>>,
        y: &[f64],
        sample_weight: Option<&[f64]>,
        n_more: usize,
        growth: &crate::params::Growth,
        progress: Option<&AtomicUsize>,
    ) -> Result<()> {
        let params = ForestParams {
            growth: growth.clone(),
            ..self.params.clone()
        };
        self.grow_more_with(&params, x, y, sample_weight, n_more, progress)
    }

    /// Grows `n_more` further trees (warm start) as `params` says, as scikit-learn's
    /// forests do after `set_params`: the growth settings (criterion, splitter, max_features,
    /// max_depth, min_samples_*, max_leaf_nodes, ccp_alpha, monotonic_cst,
    /// candidate_samples, n_jobs) are `params`' and become the forest's; the settings its
    /// trees are read by (task, projection, seed, bootstrap, max_samples, honest_fraction,
    /// store_leaf_values, class weighting per bootstrap sample) must be the forest's own,
    /// since its in-bag, out-of-bag and honest rows are recomputed from them. `x`, `y` and
    /// the weights must be the training data of the first fit for OOB estimates to mean
    /// anything. The new trees add to the out-of-bag record when the forest has one and
    /// `params.oob` asks for it; a forest without (truncated, read from bytes) stays
    /// without.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming a setting that differs from the forest's, before
    /// anything changes; as [`Forest::fit`], plus a feature-count mismatch.
    pub fn grow_more_with<'x>(
        &mut self,
        params: &ForestParams,
        x: impl Into<Features<'x>>,
        y: &[f64],
        sample_weight: Option<&[f64]>,
        n_more: usize,
        progress: Option<&AtomicUsize>,
    ) -> Result<()> {
        let x = x.into();
        let params = self.more_params(params, x.ncols(), n_more)?;
        let data = prepare(&params, x, y, sample_weight)?;
        self.take_more(&data)?;
        self.grow(&data, n_more, progress)?;
        self.params.n_estimators = self.trees.len();
        Ok(())
    }

    /// [`Forest::grow_more`] for several forests at once (no per-call overrides): forest
    /// `i` grows `n_more[i]` further trees on `xs[i]`, all on the same targets and sample
    /// weights, every new tree a task of one parallel loop in a pool of the largest
    /// `n_jobs` among the forests (as [`Forest::fit_many`]). Each forest ends as its own
    /// [`Forest::grow_more`] would leave it.
    ///
    /// # Errors
    /// As [`Forest::grow_more`] for any of the forests; lists of different lengths.
    pub fn grow_more_many<'x>(
        forests: &mut [&mut Forest],
        xs: Vec<Features<'x>>,
        y: &[f64],
        sample_weight: Option<&[f64]>,
        n_more: &[usize],
        progress: Option<&AtomicUsize>,
    ) -> Result<()> {
        if forests.len() != xs.len() || forests.len() != n_more.len() {
            return Err(Error::InvalidInput(format!(
                "{} forests, {} feature matrices and {} tree counts; give one of each per \
                 forest",
                forests.len(),
                xs.len(),
                n_more.len()
            )));
        }
        let params = forests
            .iter()
            .zip(&xs)
            .zip(n_more)
            .map(|((f, x), &m)| f.more_params(&f.params, x.ncols(), m))
            .collect::<Result<Vec<_>>>()?;
        let data = prepare_all(&params, xs, y, sample_weight)?;
        for (forest, d) in forests.iter_mut().zip(&data) {
            forest.take_more(d)?;
        }
        Forest::extend_all(forests, &data, n_more, progress)
    }

    /// Grows `n_more[i]` further trees of `forests[i]` on its prepared `data[i]`, every
    /// tree a task of one parallel loop in a pool of the largest `n_jobs` among them, then
    /// adds them (and their out-of-bag rows, one forest per task) to their forests.
    fn extend_all(
        forests: &mut [&mut Forest],
        data: &[FitData<'_>],
        n_more: &[usize],
        progress: Option<&AtomicUsize>,
    ) -> Result<()> {
        let batch: Vec<_> = forests
            .iter()
            .zip(data)
            .zip(n_more)
            .map(|((f, d), &m)| Growth {
                data: d,
                range: f.trees.len()..f.trees.len() + m,
                held: f.n_bytes(),
            })
            .collect();
        let n_threads = data.iter().map(|d| d.params.n_threads()).max();
        let n_threads = n_threads.unwrap_or(1);
        let grown = grow_batch(&batch, n_threads, progress)?;
        let carried = crate::cancel::carry();
        let add = |((forest, d), trees): ((&mut &mut Forest, &FitData<'_>), Vec<Grown>)| {
            carried.run(|| forest.absorb(d, trees))?;
            forest.params.n_estimators = forest.trees.len();
            Ok(())
        };
        if data.iter().all(|d| !d.params.oob) {
            // no out-of-bag rows to walk: the trees join their forests here, without a
            // hand-off to the pool
            return forests.iter_mut().zip(data).zip(grown).try_for_each(add);
        }
        let pool = crate::threads::thread_pool(n_threads)?;
        crate::cancel::install(&pool, || {
            forests
                .par_iter_mut()
                .zip(data)
                .zip(grown)
                .try_for_each(add)
        })
    }

    /// The parameters a warm start of `n_more` trees on `n_features` columns grows with:
    /// `given` (checked against the forest's, [`Forest::check_extension`]), for the grown
    /// size, with an out-of-bag record only when the forest keeps one.
    fn more_params(
        &self,
        given: &ForestParams,
        n_features: usize,
        n_more: usize,
    ) -> Result<ForestParams> {
        if n_features != self.n_features {
            return Err(Error::FeatureMismatch {
                expected: self.n_features,
                got: n_features,
            });
        }
        self.check_extension(given)?;
        let mut params = given.clone();
        // the grown forest's size is checked like a first fit's (bounded before growing)
        params.n_estimators = self.trees.len().saturating_add(n_more);
        // a forest without an out-of-bag record (truncated, or read from bytes) starts none:
        // sums over the new trees alone would pass for the whole forest's (compute_oob
        // rebuilds a record first when one is wanted)
        params.oob &= self.oob.is_some();
        Ok(params)
    }

    /// Refuses warm-start parameters that differ from this forest's in a setting its
    /// fitted trees are read by (see [`Forest::grow_more_with`]), naming the parameter.
    fn check_extension(&self, given: &ForestParams) -> Result<()> {
        let own = &self.params;
        let fixed: [(&'static str, bool, &str); 9] = [
            ("y", given.task == own.task, "the targets' task or classes"),
            (
                "projection",
                given.projection == own.projection,
                "the projection family and its arguments",
            ),
            ("random_state", given.seed == own.seed, "the seed"),
            (
                "bootstrap",
                given.bootstrap == own.bootstrap,
                "whether trees draw bootstrap samples",
            ),
            (
                "max_samples",
                given.max_samples == own.max_samples,
                "the rows each tree draws",
            ),
            (
                "honest_fraction",
                given.honest_fraction == own.honest_fraction,
                "the honest part of each tree's rows",
            ),
            (
                "store_leaf_values",
                given.store_leaf_values == own.store_leaf_values,
                "whether the leaves keep their training rows",
            ),
            (
                "class_weight",
                given.class_weight_subsample == own.class_weight_subsample,
                "class weighting per bootstrap sample (balanced_subsample)",
            ),
            (
                "categorical_features",
                given.categorical == own.categorical && given.level_names == own.level_names,
                "which columns are categorical, and their levels",
            ),
        ];
        match fixed.into_iter().find(|&(_, same, _)| !same) {
            None => Ok(()),
            Some((name, _, what)) => Err(Error::InvalidParameter {
                name,
                reason: format!(
                    "cannot change in a warm start ({what}: the fitted trees were grown \
                     with the first fit's value and are read by it); set it back, or refit \
                     with warm_start=False"
                ),
            }),
        }
    }

    /// Checks that a warm start's prepared data may extend this forest and takes its
    /// growth settings (those [`Forest::check_extension`] leaves free).
    fn take_more(&mut self, data: &FitData<'_>) -> Result<()> {
        if LeafTargets::of(data) != self.leaf_targets {
            return Err(Error::InvalidInput(
                "a warm start of a forest that keeps leaf values (store_leaf_values) needs \
                 the training data of its first fit: the targets or sample weights differ"
                    .into(),
            ));
        }
        let oob = self.params.oob;
        self.params = data.params.clone();
        self.params.oob = oob;
        Ok(())
    }

    fn grow(
        &mut self,
        data: &FitData<'_>,
        n_more: usize,
        progress: Option<&AtomicUsize>,
    ) -> Result<()> {
        Forest::extend_all(&mut [self], std::slice::from_ref(data), &[n_more], progress)
    }

    /// Adds grown trees (with their out-of-bag rows) after the forest's own, summing their
    /// out-of-bag predictions into its record when it keeps one.
    ///
    /// # Errors
    /// [`Error::Cancelled`] while summing: the trees are not added and the forest's
    /// out-of-bag record, partly summed, is dropped (as a truncated forest's is).
    fn absorb(&mut self, data: &FitData<'_>, grown: Vec<Grown>) -> Result<()> {
        let descriptors = data.params.projection.descriptors();
        let n = data.x.n_samples;
        let k = data.cfg.n_outputs;
        if data.params.oob {
            let oob = self.oob.get_or_insert_with(|| OobPrediction {
                sums: vec![0.0; n * k],
                counts: vec![0; n],
            });
            if oob.counts.len() != n {
                return Err(Error::InvalidInput(
                    "warm start with a different number of rows".into(),
                ));
            }
            // the trees' prediction layouts walk the rows eight at a time, a group of trees
            // at a time (in index order, so each row adds its trees in that order)
            let mut rest = &grown[..];
            // (a cancelled fit packs no further group: the check below returns its error)
            while !rest.is_empty() && !crate::cancel::requested() {
                let mut nodes = 0;
                let in_group = rest
                    .iter()
                    .take_while(|(tree, _)| {
                        nodes += tree.n_nodes();
                        nodes <= OOB_LAYOUT_NODES
                    })
                    .count();
                let (group, later) = rest.split_at(in_group.max(1));
                let packed: Vec<PackedTree> = group
                    .par_iter()
                    .map(|(tree, _)| PackedTree::new(tree, descriptors))
                    .collect();
                oob.add_trees(group, &data.x, &packed);
                rest = later;
            }
            if let Err(cancelled) = crate::cancel::check() {
                self.oob = None;
                return Err(cancelled);
            }
        }
        self.trees.extend(grown.into_iter().map(|(t, _)| t));
        self.packed = OnceLock::new();
        Ok(())
    }

    /// Memory held by the trees, their prediction layout and the kept leaf values, in bytes.
    pub fn n_bytes(&self) -> u64 {
        let trees: u64 = self.trees.iter().map(limits::tree_bytes).sum();
        trees + self.leaf_targets.as_ref().map_or(0, LeafTargets::n_bytes)
    }

    /// The training targets (and sample weights) the leaves' rows refer to, for a forest
    /// grown with `store_leaf_values`.
    pub fn leaf_targets(&self) -> Option<&LeafTargets> {
        self.leaf_targets.as_ref()
    }

    /// The parameters the forest was grown with.
    pub fn params(&self) -> &ForestParams {
        &self.params
    }

    /// Columns of the training data.
    pub fn n_features(&self) -> usize {
        self.n_features
    }

    /// Values per prediction (classes, or 1).
    pub fn n_outputs(&self) -> usize {
        self.params.task.n_outputs()
    }

    /// The trees, in index order.
    pub fn trees(&self) -> &[Tree] {
        &self.trees
    }

    /// How the stored projections' compact descriptors read as terms (patch and
    /// dictionary forests), `None` when they are explicit.
    pub fn descriptors(&self) -> Option<&dyn CompactDescriptors> {
        self.params.projection.descriptors()
    }

    /// Out-of-bag predictions, when fitted with `oob = true`.
    pub fn oob(&self) -> Option<&OobPrediction> {
        self.oob.as_ref()
    }

    /// The packed prediction layout, built on first use.
    pub fn packed(&self) -> &[PackedTree] {
        self.packed.get_or_init(|| {
            self.trees
                .iter()
                .map(|t| PackedTree::new(t, self.descriptors()))
                .collect()
        })
    }

    /// Keeps the first `n` trees.
    pub fn truncate(&mut self, n: usize) {
        self.trees.truncate(n);
        self.packed = OnceLock::new();
        self.params.n_estimators = self.trees.len();
        self.oob = None;
    }

    /// A forest made of the trees at `indices` (repeats allowed).
    ///
    /// # Errors
    /// An index out of range or an empty selection.
    pub fn select(&self, indices: &[usize]) -> Result<Forest> {
        if indices.is_empty() {
            return Err(Error::InvalidInput("select at least one tree".into()));
        }
        let trees = indices
            .iter()
            .map(|&i| {
                self.trees
                    .get(i)
                    .cloned()
                    .ok_or_else(|| Error::InvalidInput(format!("tree {i} does not exist")))
            })
            .collect::<Result<Vec<_>>>()?;
        let mut params = self.params.clone();
        params.n_estimators = trees.len();
        Ok(Forest {
            params,
            n_features: self.n_features,
            trees,
            oob: None,
            packed: OnceLock::new(),
            leaf_targets: self.leaf_targets.clone(),
            quantile_order: OnceLock::new(),
        })
    }

    /// Checks the structure of a forest read from outside (every index in range).
    ///
    /// # Errors
    /// [`Error::CorruptModel`] describing the first inconsistency.
    pub fn validate(&self) -> Result<()> {
        if self.n_features == 0 || self.trees.is_empty() {
            return Err(Error::CorruptModel("empty forest".into()));
        }
        if self.n_features > crate::params::MAX_FEATURES {
            return Err(Error::CorruptModel(format!(
                "{} features; at most {} are supported",
                self.n_features,
                crate::params::MAX_FEATURES
            )));
        }
        let kinds = &self.params.categorical;
        if !kinds.is_empty()
            && (kinds.len() != self.n_features
                || kinds.iter().any(|&l| l > crate::columns::MAX_LEVELS)
                || crate::columns::level_names_mismatch(kinds, &self.params.level_names).is_some())
        {
            return Err(Error::CorruptModel("column kinds".into()));
        }
        match &self.params.task {
            Task::Classification { n_classes: 0 } => {
                return Err(Error::CorruptModel("zero classes".into()))
            }
            Task::MultiClassification { n_classes }
                if n_classes.len() < 2 || n_classes.contains(&0) =>
            {
                return Err(Error::CorruptModel("multi-output classes".into()))
            }
            Task::MultiRegression { n_outputs } if *n_outputs < 2 => {
                return Err(Error::CorruptModel("multi-output outputs".into()))
            }
            _ => {}
        }
        self.params
            .projection
            .check(self.n_features)
            .map_err(|e| Error::CorruptModel(e.to_string()))?;
        if !(0.0..1.0).contains(&self.params.honest_fraction) {
            return Err(Error::CorruptModel(format!(
                "honest_fraction {} is outside [0, 1)",
                self.params.honest_fraction
            )));
        }
        let n_rows = self.validate_leaf_targets()?;
        for t in &self.trees {
            if t.n_outputs != self.n_outputs() {
                return Err(Error::CorruptModel("tree output width".into()));
            }
            t.validate(self.n_features, self.descriptors())?;
            match (&t.leaf_rows, n_rows) {
                (Some(rows), Some(n)) => rows.validate(t.n_leaves(), n)?,
                (None, None) => {}
                _ => {
                    return Err(Error::CorruptModel(
                        "leaf rows without the forest's targets, or a tree without them".into(),
                    ))
                }
            }
        }
        Ok(())
    }

    /// Checks the kept targets against the parameters: present exactly when the forest
    /// keeps leaf values (a regression forest), n × outputs finite targets, sample weights
    /// finite and non-negative (none, or one per row). Returns the number of rows.
    fn validate_leaf_targets(&self) -> Result<Option<usize>> {
        let corrupt = |m: &str| Err(Error::CorruptModel(format!("leaf values: {m}")));
        let Some(t) = &self.leaf_targets else {
            return if self.params.store_leaf_values {
                corrupt("the targets are missing")
            } else {
                Ok(None)
            };
        };
        if !self.params.store_leaf_values || self.params.task.is_classification() {
            return corrupt("targets kept by a forest that does not keep leaf values");
        }
        let k = self.params.task.n_targets();
        if t.y.is_empty() || t.y.len() % k != 0 || !t.y.iter().all(|v| v.is_finite()) {
            return corrupt("the targets are not n × outputs finite values");
        }
        let n = t.y.len() / k;
        if !(t.sample_weight.is_empty() || t.sample_weight.len() == n)
            || !t.sample_weight.iter().all(|w| w.is_finite() && *w >= 0.0)
        {
            return corrupt("sample weights are not one finite, non-negative value per row");
        }
        if n > u32::MAX as usize {
            return corrupt("more rows than a leaf can name");
        }
        Ok(Some(n))
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod categorical_tests;
#[cfg(test)]
mod fork_tests;
#[cfg(test)]
mod kinds_tests;
#[cfg(test)]
mod screening_tests;
#[cfg(test)]
pub(crate) mod unsupervised_tests;
