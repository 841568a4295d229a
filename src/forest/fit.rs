//! Preparing a fit (every input checked before anything is allocated for the trees) and
//! growing a range of trees in the fit's pool.

use super::sampling::{tree_columns, tree_sample};
use crate::cancel;
use crate::data::{check_target_scale, check_weights, FeatureMatrix, Targets};
use crate::error::{Error, Result};
use crate::limits;
use crate::params::{Criterion, ForestParams, TreeConfig};
use crate::prune::prune_cost_complexity;
use crate::rng::{Purpose, Rng};
use crate::sparse::Features;
use crate::threads::thread_pool;
use crate::tree::{Fill, Grower, RowWeights, Tree, TreesGrowing, Workspace};
use rayon::prelude::*;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A grown tree and, when out-of-bag estimates are asked for, the rows it did not draw (a
/// bitset over the rows, `oob::zero_bits`).
pub(crate) type Grown = (Tree, Option<Vec<u64>>);

/// Shared, read-only inputs of a fit.
pub(crate) struct FitData<'a> {
    pub(crate) params: &'a ForestParams,
    pub(crate) cfg: TreeConfig,
    pub(crate) x: FeatureMatrix<'a>,
    pub(crate) y: Targets,
    /// The checked sample weights; `None` when every row weighs 1 (no vector of ones).
    pub(crate) sample_weight: Option<Vec<f64>>,
}

/// Grows trees `range` of a forest in the fit's pool, each from its (seed, tree index)
/// streams; returns them in index order, each with its out-of-bag rows when OOB is requested.
/// `held` bytes of trees already belong to the forest (the memory guard counts them); the
/// whole request is checked against the memory limit when the range starts at tree 0.
///
/// # Errors
/// [`Error::ResourceLimit`] when the memory guard stops growth, [`Error::Cancelled`].
pub(crate) fn grow_trees(
    data: &FitData<'_>,
    range: std::ops::Range<usize>,
    held: u64,
    progress: Option<&AtomicUsize>,
) -> Result<Vec<Grown>> {
    let growth = Growth { data, range, held };
    let mut grown = grow_batch(&[growth], data.params.n_threads(), progress)?;
    Ok(grown.pop().unwrap_or_default())
}

/// One forest's share of a batch: its prepared data, the trees to grow and the bytes of
/// trees it already holds.
pub(crate) struct Growth<'d, 'a> {
    pub(crate) data: &'d FitData<'a>,
    pub(crate) range: std::ops::Range<usize>,
    pub(crate) held: u64,
}

/// Trees grown on at least this many training rows hand the memory their growth freed back
/// to the system once grown ([`crate::alloc::release_free_memory`]). On fewer a tree takes
/// milliseconds and frees little: at 70,000 rows the call made 40 trees about 3% slower
/// (1.395 s against 1.350, medians of 3); at 300,000 no difference was measurable (1.828
/// against 1.837 s, 10 trees).
const RELEASE_ROWS: usize = 1 << 18;

/// [`grow_trees`] for several forests at once, in one pool of `n_threads`: every tree of
/// every forest is one task of the same parallel loop, so small forests (a rotation
/// ensemble's micro-forests) keep every thread busy to the end and share one hand-off to
/// the pool and one read of the memory budget. A tree depends on its forest's data, seed
/// and index only, so each forest's trees are those a call of its own grows. Returns each
/// forest's trees in index order, in the order of `batch`. Each forest's request is checked
/// against the memory limit as its own call checks it; the running tally counts the
/// batch's trees together.
///
/// # Errors
/// As [`grow_trees`].
pub(crate) fn grow_batch(
    batch: &[Growth<'_, '_>],
    n_threads: usize,
    progress: Option<&AtomicUsize>,
) -> Result<Vec<Vec<Grown>>> {
    let pool = thread_pool(n_threads)?;
    // what each family needs of its data (a scaling's per-feature scales), computed once,
    // on the fit's threads
    let stats: Vec<_> = cancel::install(&pool, || {
        batch
            .par_iter()
            .map(|g| g.data.x.stats(g.data.params.projection.get().needs()))
            .collect()
    });
    let samplers: Vec<_> = batch
        .iter()
        .zip(&stats)
        .map(|(g, stats)| g.data.params.projection.sampler(stats))
        .collect();
    let n_trees: usize = batch.iter().map(|g| g.range.len()).sum();
    let threads = pool.current_num_threads();
    let workers = threads.min(n_trees).max(1);
    // (subtrees take free threads only once fewer trees than threads are left)
    let growing = TreesGrowing::new(n_trees, threads);
    let growers: Vec<_> = batch
        .iter()
        .zip(&samplers)
        .map(|(g, sampler)| Grower {
            cfg: &g.data.cfg,
            sampler,
            x: &g.data.x,
            y: &g.data.y,
            growing: Some(&growing),
        })
        .collect();
    let budget = limits::budget_bytes();
    for g in batch.iter().filter(|g| g.range.start == 0) {
        let (params, n) = (g.data.params, g.data.x.n_samples);
        limits::check_request(params, n, g.data.y.n_present(), workers, budget)?;
    }
    // the trees may take what the growing ones' buffers leave
    let n_max = batch.iter().map(|g| g.data.x.n_samples).max().unwrap_or(0);
    let working = limits::working_bytes_lower_bound(n_max, workers);
    let held = batch.iter().map(|g| g.held).sum();
    let tally = limits::Tally::new(budget.map(|b| b.saturating_sub(working)), held, n_trees);
    if n_max >= RELEASE_ROWS {
        // what the caller freed before the fit (a Python caller's encoding of the targets,
        // a converted copy of X) would otherwise stay in glibc's heap under the trees'
        // buffers: 8 bytes a row from scikit-learn's class encoding
        crate::alloc::release_free_memory();
    }
    let tasks: Vec<(usize, usize)> = batch
        .iter()
        .enumerate()
        .flat_map(|(f, g)| g.range.clone().map(move |t| (f, t)))
        .collect();
    let carried = cancel::carry();
    let grown: Vec<(usize, Grown)> = cancel::install(&pool, || {
        tasks
            .into_par_iter()
            .map_init(Workspace::default, |ws, (f, t)| {
                if tally.over() || carried.run(cancel::requested) {
                    return None; // stopped (memory guard, cancel): start no more trees
                }
                // a cancelled builder stops splitting; its tree is dropped below
                let tree_result = carried.run(|| grow_one(batch[f].data, &growers[f], t, ws));
                growing.finished_one();
                if batch[f].data.x.n_samples >= RELEASE_ROWS {
                    crate::alloc::release_free_memory();
                }
                let oob_rows = tree_result.1.as_deref().map_or(0, std::mem::size_of_val);
                let oob_rows = oob_rows as u64;
                tally.add(&tree_result.0, oob_rows);
                if let Some(p) = progress {
                    p.fetch_add(1, Ordering::Relaxed);
                }
                Some((f, tree_result))
            })
            .flatten() // in task order, without a slot per tree never grown
            .collect()
    });
    cancel::check()?;
    if tally.over() {
        return Err(tally.error());
    }
    let mut forests: Vec<Vec<_>> = batch
        .iter()
        .map(|g| Vec::with_capacity(g.range.len()))
        .collect();
    for (f, tree) in grown {
        forests[f].push(tree);
    }
    Ok(forests)
}

/// [`prepare`] of one fit per `(params[i], xs[i])`, all on the same targets and weights:
/// every forest's inputs are checked first, then the copies of X are made in one hand-off
/// to the pool of the largest `n_jobs` (a rotation ensemble prepares its 50 small forests
/// in one call), then each copy is checked against its forest's parameters.
///
/// # Errors
/// As [`prepare`] for any of the forests.
pub(crate) fn prepare_all<'a, 'x: 'a>(
    params: &'a [ForestParams],
    xs: Vec<Features<'x>>,
    y: &[f64],
    sample_weight: Option<&[f64]>,
) -> Result<Vec<FitData<'a>>> {
    let checked = params
        .iter()
        .zip(&xs)
        .map(|(p, x)| check_inputs(p, x.dim(), y, sample_weight))
        .collect::<Result<Vec<_>>>()?;
    let n_threads = params.iter().map(ForestParams::n_threads).max();
    let pool = thread_pool(n_threads.unwrap_or(1))?;
    let xs = cancel::install(&pool, || {
        xs.into_par_iter()
            .map(|x| FeatureMatrix::from_features(x.reborrow()))
            .collect::<Result<Vec<_>>>()
    })?;
    params
        .iter()
        .zip(checked)
        .zip(xs)
        .map(|((p, c), x)| with_x(p, c, x))
        .collect()
}

/// What [`prepare`] checks and converts before it copies X.
struct Checked {
    cfg: TreeConfig,
    y: Targets,
    sample_weight: Option<Vec<f64>>,
}

/// Checks the parameters, targets and weights of a fit on an `n` x `p` X, and converts the
/// targets.
fn check_inputs(
    params: &ForestParams,
    (n, p): (usize, usize),
    y: &[f64],
    sample_weight: Option<&[f64]>,
) -> Result<Checked> {
    let cfg = params.check(n, p)?;
    let k = params.task.n_targets();
    if y.len() != n.saturating_mul(k) {
        return Err(Error::InvalidInput(if k == 0 {
            format!(
                "a forest without targets takes no y, got {} values",
                y.len()
            )
        } else if k == 1 {
            format!("y has {} entries but X has {n} rows", y.len())
        } else {
            format!(
                "y has {} entries but X has {n} rows of {k} outputs (n × k, row-major)",
                y.len()
            )
        }));
    }
    let y = Targets::for_task(y, &params.task)?;
    if params.criterion == Criterion::Poisson {
        check_poisson_targets(&y)?;
    }
    let sample_weight = match sample_weight {
        Some(w) => Some(check_weights(Some(w), n)?),
        None => None,
    };
    let total_weight = sample_weight.as_ref().map_or(n as f64, |w| w.iter().sum());
    check_target_scale(&y, total_weight)?;
    Ok(Checked {
        cfg,
        y,
        sample_weight,
    })
}

/// Checks and converts a fit's inputs (every input checked before anything is allocated
/// for the trees) and copies X in the fit's pool.
///
/// # Errors
/// [`Error::InvalidInput`] for parameters, targets, weights or X the fit cannot take.
pub(crate) fn prepare<'a, 'x: 'a>(
    params: &'a ForestParams,
    x: impl Into<Features<'x>>,
    y: &[f64],
    sample_weight: Option<&[f64]>,
) -> Result<FitData<'a>> {
    let x: Features<'a> = x.into().reborrow();
    let checked = check_inputs(params, x.dim(), y, sample_weight)?;
    // in the fit's pool: a copy into Fortran order is split over its threads
    let x = cancel::install(&*thread_pool(params.n_threads())?, || {
        FeatureMatrix::from_features(x)
    })?;
    with_x(params, checked, x)
}

/// The checks of X's copy against the fit's parameters, and the prepared fit.
fn with_x<'a>(
    params: &'a ForestParams,
    checked: Checked,
    x: FeatureMatrix<'a>,
) -> Result<FitData<'a>> {
    let Checked {
        cfg,
        y,
        sample_weight,
    } = checked;
    // as scikit-learn: a constrained split has no rule for rows whose projection is missing
    if x.has_missing() && !cfg.growth.monotonic_cst.is_empty() {
        return Err(Error::InvalidInput(
            "monotonic_cst is not supported with missing values (NaN in X), as in \
             scikit-learn; impute X or drop the constraints"
                .into(),
        ));
    }
    crate::columns::check_codes(&cfg.categorical, x.n_samples, |i, j| x.get(i, j))?;
    // an honest leaf's value comes from rows the constrained split search did not see, so
    // the constraints' bounds would not hold
    if params.honest_fraction > 0.0 && !cfg.growth.monotonic_cst.is_empty() {
        return Err(Error::InvalidInput(
            "monotonic_cst is not supported with honest_fraction > 0 (honest leaf values \
             come from rows the constrained split search did not see)"
                .into(),
        ));
    }
    // explicit projections have their weights halved when sums could overflow
    // (`FeatureMatrix::keep_sums_finite`); stored descriptors cannot be, so refuse instead
    // of growing trees that cannot split
    if let Some(l1) = params
        .projection
        .descriptors()
        .and_then(|d| d.max_weight_l1())
    {
        let bound = l1 * f64::from(x.max_abs());
        if bound > f64::from(f32::MAX) {
            return Err(Error::InvalidInput(format!(
                "X has values up to {:.3e} in magnitude: sums over this projection family's \
                 patches or atoms (|weights| up to {l1} in all) could exceed float32's range \
                 (3.4e38), in which the engine computes; rescale X (e.g. divide it by a \
                 constant)",
                x.max_abs()
            )));
        }
    }
    Ok(FitData {
        params,
        cfg,
        x,
        y,
        sample_weight,
    })
}

/// scikit-learn's restrictions on Poisson targets: none negative, and a positive sum (the
/// deviance needs a positive mean).
///
/// # Errors
/// [`Error::InvalidInput`] otherwise.
fn check_poisson_targets(y: &Targets) -> Result<()> {
    let (Targets::Values(y) | Targets::MultiValues { y, .. }) = y else {
        return Ok(());
    };
    if y.iter().any(|&v| v < 0.0) {
        return Err(Error::InvalidInput(
            "Some value(s) of y are negative which is not allowed for Poisson regression.".into(),
        ));
    }
    if y.iter().sum::<f64>() <= 0.0 {
        return Err(Error::InvalidInput(
            "Sum of y is not strictly positive which is necessary for Poisson regression.".into(),
        ));
    }
    Ok(())
}

/// Grows tree `t` (pruned, then filled: an honest tree's leaf values from its honest
/// rows, the leaves' rows when the forest keeps them); returns it with its out-of-bag rows
/// when OOB is requested.
fn grow_one(data: &FitData<'_>, grower: &Grower<'_>, t: usize, ws: &mut Workspace) -> Grown {
    let mut sample = tree_sample(data, t);
    let oob = if data.params.oob {
        sample.out_of_bag()
    } else {
        None
    };
    if !data.params.store_leaf_values {
        // nothing reads the counts while the tree grows (4 bytes a row per worker)
        sample.counts = None;
    }
    let mut rng = Rng::for_tree(data.params.seed, t as u64, Purpose::Grow);
    let keep_rows = data.params.store_leaf_values;
    let mut honest = sample.honest.is_some();
    let mut fill_weights = sample.fill_weights();
    if honest && fill_weights.iter().all(|&w| w <= 0.0) {
        // an honest part with no row of positive weight (fewer than two distinct rows
        // drawn, or zero sample weights) would fill no leaf: the tree keeps the leaves of
        // the rows it grew on, as an ordinary tree, rather than empty ones
        honest = false;
        fill_weights = sample.structure_weights();
    }
    let fill = (honest || keep_rows).then(|| Fill {
        weights: &fill_weights,
        values: honest,
        keep_rows,
        multiplicity: sample.multiplicity(),
    });
    let alpha = data.params.growth.ccp_alpha;
    let prune = |tree| prune_cost_complexity(tree, alpha);
    let structure = sample.structure_weights();
    let weights = match &sample.compact {
        Some(counts) => RowWeights::Counts(counts),
        None => RowWeights::Values(&structure),
    };
    let (p, k) = (data.x.n_features, data.cfg.tree_features);
    let tree = if k < p {
        // a random-subspace tree: its family samples over its own columns
        let columns = tree_columns(data.params.seed, t, p, k);
        let stats = grower.sampler.data().columns(&columns);
        let sampler = grower.sampler.restricted(&stats, &columns);
        let sub = Grower {
            cfg: grower.cfg,
            sampler: &sampler,
            x: grower.x,
            y: grower.y,
            growing: grower.growing,
        };
        sub.grow(weights, fill.as_ref(), prune, &mut rng, ws)
    } else {
        grower.grow(weights, fill.as_ref(), prune, &mut rng, ws)
    };
    (tree, oob)
}
