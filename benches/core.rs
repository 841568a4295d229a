//! Criterion benches of the core engine, on seeded synthetic data built here (no files).
//!
//! Groups name an operation, ids a projection family and a case (STYLE.md, convention 9):
//!
//! * `split_search`: the root split of one tree (`max_depth = 1`, one tree, no bootstrap):
//!   d candidate projections, projected values sorted, every threshold scanned; ids ending
//!   in `hist` use `Splitter::Histogram` (256 bins) instead. (The tree builder is internal
//!   since the open-engine refactor, so the fit's column-major copy of X, one pass over X,
//!   is now inside the timing.)
//! * `grow_tree`: one fully grown tree through [`Forest::fit`] (`n_estimators = 1`,
//!   `bootstrap = false`), data preparation included.
//! * `fit_forest`: 20 bootstrapped trees with `n_jobs` 1 and 2.
//! * `predict_batch`: class probabilities of 10,000 rows from a 100-tree forest.
//! * `predict_single_row`: the same forest on one row (the latency of a single call).
//!
//! Each family uses the `max_features` default of its Python preset: `sqrt` for the
//! axis-aligned forest and MORF patches, d = p for the oblique samplers.
//!
//! Run with `cargo bench --bench core`; `cargo bench --bench core -- grow_tree` runs one group.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ndarray::{Array2, ArrayView2};
use obliqueforest::rng::Rng;
use obliqueforest::{
    AxisAligned, Density, Forest, ForestParams, ForestRc, Gaussian, MaxFeatures, PatchGeometry,
    Patches, Projection, SparseSigned, Splitter, WeightScale,
};
use std::hint::black_box;
use std::time::Duration;

const N: usize = 5000;
const P: usize = 20;
const SIDE: usize = 28;
const SEED: u64 = 20_240_601;

/// Sparse parity (Tomita et al. 2020, Sect. 6.1): X uniform in [-1, 1]^p, y = 1 when an
/// odd number of the first three features are positive. Axis-aligned splits see no signal
/// until they are deep, so trees grow large, which is the case worth timing.
fn sparse_parity(n: usize, p: usize, seed: u64) -> (Array2<f32>, Vec<f64>) {
    let mut rng = Rng::from_seed(seed);
    let x = Array2::from_shape_simple_fn((n, p), || (2.0 * rng.unit() - 1.0) as f32);
    let y = x
        .rows()
        .into_iter()
        .map(|r| (r.iter().take(3).filter(|&&v| v > 0.0).count() % 2) as f64)
        .collect();
    (x, y)
}

/// Horizontal (class 0) or vertical (class 1) bars on `side`×`side` binary images, flattened
/// row-major; each line is on with probability 1/3 (the MORF paper's experiment B, simplified).
fn hv_bars(n: usize, side: usize, seed: u64) -> (Array2<f32>, Vec<f64>) {
    let mut rng = Rng::from_seed(seed);
    let mut x = Array2::<f32>::zeros((n, side * side));
    let mut y = Vec::with_capacity(n);
    for (i, mut row) in x.rows_mut().into_iter().enumerate() {
        let vertical = i % 2 == 1;
        for line in 0..side {
            if rng.below(3) == 0 {
                for k in 0..side {
                    let (r, c) = if vertical { (k, line) } else { (line, k) };
                    row[r * side + c] = 1.0;
                }
            }
        }
        y.push(if vertical { 1.0 } else { 0.0 });
    }
    (x, y)
}

/// A projection family: its bench id, projection kind, `max_features` and data.
#[derive(Clone)]
struct Family {
    name: &'static str,
    case: String,
    projection: Projection,
    max_features: MaxFeatures,
    x: Array2<f32>,
    y: Vec<f64>,
}

fn families() -> Vec<Family> {
    let (x, y) = sparse_parity(N, P, SEED);
    let tabular = format!("n={N},p={P}");
    let mut out: Vec<Family> = [
        ("axis", Projection::new(AxisAligned), MaxFeatures::Sqrt),
        (
            "sporf",
            Projection::new(SparseSigned {
                density: Density::FeatureCombinations(3.0),
                scaling: WeightScale::None,
            }),
            MaxFeatures::All,
        ),
        (
            "forest_rc",
            Projection::new(ForestRc { n_combined: 3 }),
            MaxFeatures::All,
        ),
        ("gaussian", Projection::new(Gaussian), MaxFeatures::All),
    ]
    .into_iter()
    .map(|(name, projection, max_features)| Family {
        name,
        case: tabular.clone(),
        projection,
        max_features,
        x: x.clone(),
        y: y.clone(),
    })
    .collect();
    let (xi, yi) = hv_bars(N, SIDE, SEED + 1);
    out.push(Family {
        name: "patch",
        case: format!("n={N},image={SIDE}x{SIDE}"),
        projection: Projection::new(Patches {
            geometry: PatchGeometry {
                data_shape: vec![SIDE, SIDE],
                channel_axis: None,
                min_patch_size: vec![1, 1],
                max_patch_size: vec![8, 8],
                periodic: vec![false, false],
            },
        }),
        max_features: MaxFeatures::Sqrt,
        x: xi,
        y: yi,
    });
    out
}

fn params(f: &Family, n_estimators: usize, bootstrap: bool) -> ForestParams {
    let mut p = ForestParams::classification(2);
    p.projection = f.projection.clone();
    p.max_features = f.max_features;
    p.n_estimators = n_estimators;
    p.bootstrap = bootstrap;
    p.seed = SEED;
    p
}

fn fit(params: &ForestParams, x: ArrayView2<'_, f32>, y: &[f64]) -> Forest {
    Forest::fit(params, x, y, None).expect("bench data and parameters are valid")
}

fn split_search(c: &mut Criterion) {
    let mut group = c.benchmark_group("split_search");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(2));
    group.warm_up_time(Duration::from_millis(500));
    for (f, splitter) in families().into_iter().flat_map(|f| {
        [
            (f.clone(), Splitter::Best),
            (f, Splitter::Histogram { max_bins: 256 }),
        ]
    }) {
        let mut p = params(&f, 1, false);
        p.max_depth = Some(1);
        p.splitter = splitter;
        group.throughput(Throughput::Elements(f.x.nrows() as u64));
        let case = match splitter {
            Splitter::Histogram { .. } => format!("{},hist", f.case),
            _ => f.case.clone(),
        };
        group.bench_function(BenchmarkId::new(f.name, case), |b| {
            let mut p = p.clone();
            b.iter(|| {
                p.seed += 1;
                black_box(Forest::fit(&p, f.x.view(), &f.y, None).expect("bench fit"))
            })
        });
    }
    group.finish();
}

fn grow_tree(c: &mut Criterion) {
    let mut group = c.benchmark_group("grow_tree");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(3));
    group.warm_up_time(Duration::from_millis(500));
    for f in families() {
        let p = params(&f, 1, false);
        group.bench_function(BenchmarkId::new(f.name, &f.case), |b| {
            b.iter(|| black_box(fit(&p, f.x.view(), &f.y)))
        });
    }
    group.finish();
}

fn fit_forest(c: &mut Criterion) {
    let mut group = c.benchmark_group("fit_forest");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(5));
    group.warm_up_time(Duration::from_millis(500));
    for f in families().into_iter().filter(|f| f.name != "patch") {
        for n_jobs in [1, 2] {
            let mut p = params(&f, 20, true);
            p.n_jobs = n_jobs;
            let id = BenchmarkId::new(f.name, format!("{},trees=20,n_jobs={n_jobs}", f.case));
            group.bench_function(id, |b| b.iter(|| black_box(fit(&p, f.x.view(), &f.y))));
        }
    }
    group.finish();
}

fn predict(c: &mut Criterion) {
    const N_TEST: usize = 10_000;
    let (x_test, _) = sparse_parity(N_TEST, P, SEED + 2);
    let mut batch = c.benchmark_group("predict_batch");
    batch.sample_size(10);
    batch.measurement_time(Duration::from_secs(3));
    batch.warm_up_time(Duration::from_millis(500));
    let forests: Vec<(&str, String, Forest)> = families()
        .into_iter()
        .filter(|f| matches!(f.name, "axis" | "sporf"))
        .map(|f| {
            let forest = fit(&params(&f, 100, true), f.x.view(), &f.y);
            (f.name, f.case, forest)
        })
        .collect();
    for (name, case, forest) in &forests {
        // build the packed layout outside the timed loop, as a served model would have
        black_box(forest.packed());
        batch.throughput(Throughput::Elements(N_TEST as u64));
        for n_jobs in [1, 2] {
            let id = BenchmarkId::new(
                *name,
                format!("{case},trees=100,rows={N_TEST},n_jobs={n_jobs}"),
            );
            batch.bench_function(id, |b| {
                b.iter(|| black_box(forest.predict(x_test.view(), n_jobs).expect("valid rows")))
            });
        }
    }
    batch.finish();

    let mut single = c.benchmark_group("predict_single_row");
    single.sample_size(10);
    single.measurement_time(Duration::from_secs(1));
    single.warm_up_time(Duration::from_millis(300));
    let row = x_test.slice(ndarray::s![0..1, ..]);
    for (name, case, forest) in &forests {
        let id = BenchmarkId::new(*name, format!("{case},trees=100"));
        single.bench_function(id, |b| {
            b.iter(|| black_box(forest.predict(row, 1).expect("valid row")))
        });
    }
    single.finish();
}

criterion_group!(benches, split_search, grow_tree, fit_forest, predict);
criterion_main!(benches);
