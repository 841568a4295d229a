//! Tests of parallel subtrees and candidates ([`crate::tree`]'s forks and parallel
//! candidates): with their thresholds lowered so that small data takes them, a forest is
//! the same on one thread and on several (where other threads take subtrees and
//! candidates), for every path of the split search.

use super::unsupervised_tests::isolation;
use super::Forest;
use crate::params::{Criterion, ForestParams, MaxFeatures, SampleCount, Splitter, Task};
use crate::probe::{self, Count};
use crate::projection::{AxisAligned, Density, Gaussian, Projection, SparseSigned, WeightScale};
use crate::rng::Rng;
use crate::sparse::{Layout, SparseView};
use ndarray::Array2;

/// Rows of `p` features, some zero (sparse-like), a categorical column 0 of 6 levels; a
/// class of 3 from a projection of the others.
fn table(n: usize, p: usize, seed: u64) -> (Array2<f32>, Vec<f64>) {
    let mut rng = Rng::from_seed(seed);
    let x = Array2::from_shape_fn((n, p), |(_, j)| match j {
        0 => rng.below(6) as f32,
        _ if rng.unit() < 0.3 => 0.0,
        _ => (rng.unit() * 2.0 - 1.0) as f32,
    });
    let y = x
        .rows()
        .into_iter()
        .map(|r| {
            let s = r[1] + r[2] - r[3] + 0.3 * f32::from(r[0] > 2.0);
            f64::from(u8::from(s > 0.0) + u8::from(s > 0.8))
        })
        .collect();
    (x, y)
}

fn sporf() -> Projection {
    Projection::new(SparseSigned {
        density: Density::FeatureCombinations(2.0),
        scaling: WeightScale::None,
    })
}

/// Fits `params` on one thread and on four (forks at nodes of 40 rows or more, candidates
/// in parallel at 100): the same trees, which the model checker accepts.
fn same_on_any_thread_count(
    name: &str,
    params: &ForestParams,
    fit: impl Fn(&ForestParams) -> Forest,
) {
    let mut params = params.clone();
    params.growth.n_jobs = 1;
    let one = fit(&params);
    params.growth.n_jobs = 4;
    for _ in 0..3 {
        let four = fit(&params);
        assert_eq!(
            one.trees(),
            four.trees(),
            "{name}: threads changed the trees"
        );
    }
    let bytes = one.to_bytes().unwrap();
    let back = Forest::from_bytes(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(back.to_bytes().unwrap(), bytes, "{name}");
    assert!(
        one.trees().iter().all(|t| t.n_nodes() > 31),
        "{name}: trees that fork"
    );
}

#[test]
fn forked_subtrees_grow_the_same_trees_on_any_thread_count() {
    let _held = probe::hold();
    let (x, y) = table(1500, 8, 3);
    let mut with_nan = x.clone();
    for i in (0..1500).step_by(7) {
        with_nan[[i, 1 + i % 5]] = f32::NAN;
    }
    let target: Vec<f64> = x
        .rows()
        .into_iter()
        .map(|r| f64::from(r[1] - 2.0 * r[2]))
        .collect();
    let two: Vec<f64> = target.iter().flat_map(|&v| [v, v.abs()]).collect();
    let base = |projection: Projection| ForestParams {
        projection,
        n_estimators: 2,
        max_features: MaxFeatures::Sqrt,
        seed: 11,
        ..ForestParams::classification(3)
    };
    let mut cases: Vec<(&str, ForestParams, &Array2<f32>, &[f64])> = vec![];
    for projection in [
        Projection::new(AxisAligned),
        sporf(),
        Projection::new(Gaussian),
    ] {
        cases.push(("defaults", base(projection.clone()), &x, &y));
        let hist = ForestParams {
            splitter: Splitter::Histogram { max_bins: 32 },
            ..base(projection.clone())
        };
        cases.push(("hist", hist, &x, &y));
        cases.push(("missing values", base(projection.clone()), &with_nan, &y));
        let categorical = ForestParams {
            categorical: vec![6, 0, 0, 0, 0, 0, 0, 0],
            ..base(projection.clone())
        };
        cases.push(("categorical", categorical, &x, &y));
        let mut screened = base(projection.clone());
        screened.growth.candidate_samples = Some(64);
        cases.push(("screened", screened, &x, &y));
        let mut honest = base(projection);
        honest.honest_fraction = 0.5;
        cases.push(("honest", honest, &x, &y));
    }
    let regression = |criterion| ForestParams {
        criterion,
        projection: sporf(),
        n_estimators: 2,
        max_features: MaxFeatures::Sqrt,
        min_samples_leaf: SampleCount::Count(2),
        ..ForestParams::regression()
    };
    cases.push((
        "squared error",
        regression(Criterion::SquaredError),
        &x,
        &target,
    ));
    cases.push((
        "absolute error",
        regression(Criterion::AbsoluteError),
        &x,
        &target,
    ));
    let mut quantile = regression(Criterion::SquaredError);
    quantile.store_leaf_values = true;
    cases.push(("leaf values", quantile, &x, &target));
    let mut monotonic = regression(Criterion::SquaredError);
    monotonic.growth.monotonic_cst = vec![0, 1, -1, 0, 0, 0, 0, 0];
    cases.push(("monotonic", monotonic, &x, &target));
    let multi = ForestParams {
        task: Task::MultiRegression { n_outputs: 2 },
        ..regression(Criterion::SquaredError)
    };
    cases.push(("two outputs", multi, &x, &two));
    let mut unsupervised = isolation(sporf(), 1500);
    unsupervised.n_estimators = 2;
    unsupervised.max_depth = None;
    cases.push(("isolation", unsupervised, &x, &[]));
    probe::set_fork_rows(Some(40));
    probe::set_par_rows(Some(100));
    let before = probe::counted(Count::Fragments);
    let taken = probe::counted(Count::TakenCandidates);
    for (name, params, x, y) in &cases {
        let fit = |q: &ForestParams| Forest::fit(q, x.view(), y, None).unwrap();
        same_on_any_thread_count(name, params, fit);
    }
    // sparse X, its subtrees also grown on copies of their rows' entries
    let csc = compress(&x);
    let csc = SparseView::new(Layout::Csc, x.dim(), &csc.0, &csc.1, &csc.2).unwrap();
    probe::set_local_limits(Some([0, 16, usize::MAX]));
    let params = base(sporf());
    let sparse = |q: &ForestParams| Forest::fit(q, csc, &y, None).unwrap();
    same_on_any_thread_count("sparse, local copies", &params, sparse);
    probe::set_local_limits(None);
    assert!(
        probe::counted(Count::Fragments) > before,
        "other threads took subtrees"
    );
    assert!(
        probe::counted(Count::TakenCandidates) > taken,
        "other threads took candidates"
    );
    // the fork is taken: its streams grow other trees than the tree's one stream
    probe::set_fork_rows(None);
    let unforked = Forest::fit(&base(sporf()), x.view(), &y, None).unwrap();
    probe::set_fork_rows(Some(40));
    let forked = Forest::fit(&base(sporf()), x.view(), &y, None).unwrap();
    assert_ne!(unforked.trees(), forked.trees());
}

/// `x` in compressed sparse columns (its zeros left out).
fn compress(x: &Array2<f32>) -> (Vec<u64>, Vec<u32>, Vec<f32>) {
    let (mut ptr, mut idx, mut val) = (vec![0u64], Vec::new(), Vec::new());
    for column in x.columns() {
        for (i, &v) in column.iter().enumerate() {
            if v != 0.0 {
                idx.push(i as u32);
                val.push(v);
            }
        }
        ptr.push(idx.len() as u64);
    }
    (ptr, idx, val)
}

#[test]
fn subtrees_are_offered_to_other_threads_once_fewer_trees_than_threads_are_left() {
    let growing = crate::tree::TreesGrowing::new(3, 2);
    assert!(
        !growing.may_spare(),
        "3 trees for 2 threads: each thread has its own"
    );
    growing.finished_one();
    assert!(!growing.may_spare(), "2 trees left for 2 threads");
    growing.finished_one();
    assert!(growing.may_spare(), "1 tree left: a thread may be free");
    growing.finished_one();
    growing.finished_one(); // (a cancelled fit's count stays at 0)
    assert!(growing.may_spare());
    assert!(
        crate::tree::TreesGrowing::new(1, 4).may_spare(),
        "fewer trees than threads"
    );
}
