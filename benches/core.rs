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
//! * `grow_tree_threads`: one bootstrapped tree on 200,000 x 20 rows of sparse parity with
//!   `n_jobs` 1 and 2: only the parallel subtrees of one tree (`tree/fork.rs`) use the
//!   second thread, for the axis forest and SPORF at its defaults.
//! * `predict_batch`: class probabilities of 10,000 rows from a 100-tree forest.
//! * `predict_single_row`: the same forest on one row (the latency of a single call).
//! * `fit_sparse`: 5 trees (`n_jobs = 1`) on sparse X in CSC layout (5,000 x 5,000 at
//!   density 0.01, plus 10 informative columns at 0.3, as `benches/sparse.py`): the axis
//!   forest and SPORF at `max_features = sqrt`, both taking the zero-block scan
//!   (`tree/sparse_split.rs`); `_long`: 8,000 x 2,000 at 0.02, columns long enough that
//!   subtrees grow on copies of their rows' entries (`sparse.rs`' `SparseStore`).
//! * `fit_sporf_defaults`: 5 trees of SPORF at the Python preset's defaults (d = 2p,
//!   1.5 features per projection, robust scaling) against the axis forest at `sqrt`, on
//!   the sparse parity data.
//! * `fit_pooled_morf`: 10 trees of MORF at the Python preset's defaults (pooled filters
//!   with probability 0.25, Haar differences, patches up to 2, d = p/4) on 200 long series
//!   (427 steps, OSULeaf's shape: shifted and scaled class templates plus noise), against
//!   the paper's MORF (`pooled = 0`, sums only).
//! * `fit_categorical`: 10 trees on a mixed table (5,000 rows: 8 numeric columns, one
//!   categorical of 20 levels that carries signal, one of 1,000 levels of noise), the
//!   categorical columns split natively ([`obliqueforest::columns`]) against the same codes
//!   read as numbers (`_codes`), for the axis forest and SPORF.
//!
//! Each family uses the `max_features` default of its Python preset: `sqrt` for the
//! axis-aligned forest and MORF patches, d = p for the oblique samplers.
//!
//! Run with `cargo bench --bench core`; `cargo bench --bench core -- grow_tree` runs one group.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ndarray::{Array2, ArrayView2};
use obliqueforest::projection::{HaarPatches, PooledPatches};
use obliqueforest::rng::Rng;
use obliqueforest::sparse::{Layout, SparseView};
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
            p.growth.n_jobs = n_jobs;
            let id = BenchmarkId::new(f.name, format!("{},trees=20,n_jobs={n_jobs}", f.case));
            group.bench_function(id, |b| b.iter(|| black_box(fit(&p, f.x.view(), &f.y))));
        }
    }
    group.finish();
}

fn grow_tree_threads(c: &mut Criterion) {
    let mut group = c.benchmark_group("grow_tree_threads");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(5));
    group.warm_up_time(Duration::from_millis(500));
    const ROWS: usize = 200_000;
    let (x, y) = sparse_parity(ROWS, P, SEED + 7);
    for (name, projection, max_features) in [
        ("axis", Projection::new(AxisAligned), MaxFeatures::Sqrt),
        ("sporf", sporf_defaults(), MaxFeatures::Fraction(2.0)),
    ] {
        for n_jobs in [1, 2] {
            let mut p = ForestParams::classification(2);
            p.projection = projection.clone();
            p.max_features = max_features;
            p.n_estimators = 1;
            p.seed = SEED;
            p.growth.n_jobs = n_jobs;
            let id = BenchmarkId::new(name, format!("n={ROWS},p={P},trees=1,n_jobs={n_jobs}"));
            group.bench_function(id, |b| b.iter(|| black_box(fit(&p, x.view(), &y))));
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

/// Sparse X as `benches/sparse.py` draws it: `p` columns of uniform values at `density`,
/// the first 10 at 0.3 instead, and the class whether a fixed signed sum of those 10
/// exceeds its median. CSC arrays (indptr, indices, values) and the labels.
#[allow(clippy::type_complexity)]
fn sparse_columns(
    n: usize,
    p: usize,
    density: f64,
    seed: u64,
) -> ((Vec<u64>, Vec<u32>, Vec<f32>), Vec<f64>) {
    const INFORMATIVE: usize = 10;
    let mut rng = Rng::from_seed(seed);
    let weights: Vec<f64> = (0..INFORMATIVE)
        .map(|_| if rng.coin() { 1.0 } else { -1.0 } * (0.5 + rng.unit()))
        .collect();
    let mut score = vec![0.0f64; n];
    let (mut ptr, mut idx, mut val) = (vec![0u64], Vec::new(), Vec::new());
    for j in 0..p {
        let d = if j < INFORMATIVE { 0.3 } else { density };
        let mut rows: Vec<u32> = (0..(n as f64 * d).round() as usize)
            .map(|_| rng.below(n) as u32)
            .collect();
        rows.sort_unstable();
        rows.dedup();
        for &i in &rows {
            let v = rng.unit() as f32;
            idx.push(i);
            val.push(v);
            if let Some(w) = weights.get(j) {
                score[i as usize] += w * f64::from(v);
            }
        }
        ptr.push(idx.len() as u64);
    }
    let mut sorted = score.clone();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[n / 2];
    let y = score
        .iter()
        .map(|&s| f64::from(u8::from(s > median)))
        .collect();
    ((ptr, idx, val), y)
}

/// SPORF as the Python preset sets it: 1.5 features per projection, robust scaling.
fn sporf_defaults() -> Projection {
    Projection::new(SparseSigned {
        density: Density::FeatureCombinations(1.5),
        scaling: WeightScale::Robust,
    })
}

fn fit_sparse(c: &mut Criterion) {
    let mut group = c.benchmark_group("fit_sparse");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(3));
    group.warm_up_time(Duration::from_millis(500));
    // 50 entries a column; and 160 (long columns: subtrees of at most an eighth of the rows
    // grow on copies of their rows' entries)
    for (suffix, (n, p, density)) in [("", (5_000, 5_000, 0.01)), ("_long", (8_000, 2_000, 0.02))] {
        let ((ptr, idx, val), y) = sparse_columns(n, p, density, SEED + 3);
        let x = SparseView::new(Layout::Csc, (n, p), &ptr, &idx, &val).expect("a valid CSC matrix");
        for (name, projection) in [
            ("axis", Projection::new(AxisAligned)),
            ("sporf", sporf_defaults()),
        ] {
            let mut params = ForestParams::classification(2);
            params.projection = projection;
            params.max_features = MaxFeatures::Sqrt;
            params.n_estimators = 5;
            params.seed = SEED;
            let id = BenchmarkId::new(
                format!("{name}{suffix}"),
                format!("n={n},p={p},density={density},trees=5"),
            );
            group.bench_function(id, |b| {
                b.iter(|| black_box(Forest::fit(&params, x, &y, None).expect("bench fit")))
            });
        }
    }
    group.finish();
}

fn fit_sporf_defaults(c: &mut Criterion) {
    let mut group = c.benchmark_group("fit_sporf_defaults");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(5));
    group.warm_up_time(Duration::from_millis(500));
    let (x, y) = sparse_parity(N, P, SEED);
    for (name, projection, max_features) in [
        ("axis", Projection::new(AxisAligned), MaxFeatures::Sqrt),
        ("sporf", sporf_defaults(), MaxFeatures::Fraction(2.0)),
    ] {
        let mut p = ForestParams::classification(2);
        p.projection = projection;
        p.max_features = max_features;
        p.n_estimators = 5;
        p.seed = SEED;
        let id = BenchmarkId::new(name, format!("n={N},p={P},trees=5"));
        group.bench_function(id, |b| b.iter(|| black_box(fit(&p, x.view(), &y))));
    }
    group.finish();
}

/// Long series shaped like UCR's OSULeaf (`n` series of `len` steps, 6 classes): each
/// class a smooth template (a few bumps), every series it shifted by up to a tenth of the
/// length, scaled by 0.8-1.2 and given Gaussian noise of 0.3.
fn long_series(n: usize, len: usize, seed: u64) -> (Array2<f32>, Vec<f64>) {
    const CLASSES: usize = 6;
    let mut rng = Rng::from_seed(seed);
    let templates: Vec<Vec<f64>> = (0..CLASSES)
        .map(|_| {
            let bumps: Vec<(f64, f64, f64)> = (0..4)
                .map(|_| {
                    let at = rng.unit() * len as f64;
                    let width = len as f64 * (0.02 + 0.08 * rng.unit());
                    (at, width, 2.0 * rng.unit() - 1.0)
                })
                .collect();
            (0..len)
                .map(|t| {
                    bumps
                        .iter()
                        .map(|&(at, w, h)| 2.0 * h * (-((t as f64 - at) / w).powi(2)).exp())
                        .sum()
                })
                .collect()
        })
        .collect();
    let mut x = Array2::<f32>::zeros((n, len));
    let mut y = Vec::with_capacity(n);
    let max_shift = len / 10;
    for (i, mut row) in x.rows_mut().into_iter().enumerate() {
        let class = i % CLASSES;
        let shift = rng.below(2 * max_shift + 1) as isize - max_shift as isize;
        let scale = 0.8 + 0.4 * rng.unit();
        for (t, v) in row.iter_mut().enumerate() {
            let s = (t as isize - shift).clamp(0, len as isize - 1) as usize;
            *v = (scale * templates[class][s] + 0.3 * rng.normal()) as f32;
        }
        y.push(class as f64);
    }
    (x, y)
}

fn fit_pooled_morf(c: &mut Criterion) {
    const SERIES: usize = 200;
    const LEN: usize = 427;
    let mut group = c.benchmark_group("fit_pooled_morf");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(5));
    group.warm_up_time(Duration::from_millis(500));
    let (x, y) = long_series(SERIES, LEN, SEED + 4);
    let haar = HaarPatches {
        geometry: PatchGeometry {
            data_shape: vec![LEN],
            channel_axis: None,
            min_patch_size: vec![1],
            max_patch_size: vec![2],
            periodic: vec![false],
        },
        differences: 0.5,
    };
    let morf = |pooled: f64| PooledPatches {
        haar: haar.clone(),
        pooled,
        max_filter: 3,
        min_window: LEN / 4,
    };
    let paper = Patches {
        geometry: PatchGeometry {
            max_patch_size: vec![LEN / 4],
            ..haar.geometry.clone()
        },
    };
    for (name, projection) in [
        ("pooled_morf", Projection::new(morf(0.25))),
        ("paper_morf", Projection::new(paper)),
    ] {
        let mut p = ForestParams::classification(6);
        p.projection = projection;
        p.max_features = MaxFeatures::Fraction(0.25);
        p.n_estimators = 10;
        p.seed = SEED;
        let id = BenchmarkId::new(name, format!("n={SERIES},len={LEN},trees=10"));
        group.bench_function(id, |b| b.iter(|| black_box(fit(&p, x.view(), &y))));
    }
    group.finish();
}

/// A mixed table: 8 numeric columns, a 20-level column whose levels shift the class
/// (an unordered effect), a 1,000-level column of noise; the class is whether the sum of
/// the first two numeric columns and the level's effect is positive.
fn mixed_table(n: usize, seed: u64) -> (Array2<f32>, Vec<f64>) {
    let mut rng = Rng::from_seed(seed);
    let effect: Vec<f64> = (0..20).map(|_| 2.0 * rng.normal()).collect();
    let mut x = Array2::<f32>::zeros((n, 10));
    let mut y = Vec::with_capacity(n);
    for i in 0..n {
        for j in 0..8 {
            x[[i, j]] = rng.normal() as f32;
        }
        let level = rng.below(20);
        x[[i, 8]] = level as f32;
        x[[i, 9]] = rng.below(1000) as f32;
        let s = f64::from(x[[i, 0]] + x[[i, 1]]) + effect[level];
        y.push(f64::from(u8::from(s > 0.0)));
    }
    (x, y)
}

fn fit_categorical(c: &mut Criterion) {
    let mut group = c.benchmark_group("fit_categorical");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(4));
    group.warm_up_time(Duration::from_millis(500));
    let (x, y) = mixed_table(N, SEED + 5);
    let mut kinds = vec![0u32; 10];
    kinds[8] = 20;
    kinds[9] = 1000;
    for (name, projection, max_features) in [
        ("axis", Projection::new(AxisAligned), MaxFeatures::Sqrt),
        ("sporf", sporf_defaults(), MaxFeatures::Fraction(2.0)),
    ] {
        for (suffix, categorical) in [("", kinds.clone()), ("_codes", Vec::new())] {
            let mut p = ForestParams::classification(2);
            p.projection = projection.clone();
            p.max_features = max_features;
            p.n_estimators = 10;
            p.seed = SEED;
            p.categorical = categorical;
            let id = BenchmarkId::new(format!("{name}{suffix}"), format!("n={N},p=10,trees=10"));
            group.bench_function(id, |b| b.iter(|| black_box(fit(&p, x.view(), &y))));
        }
    }
    group.finish();
}

criterion_group!(
    benches,
    split_search,
    grow_tree,
    fit_forest,
    grow_tree_threads,
    predict,
    fit_sparse,
    fit_sporf_defaults,
    fit_pooled_morf,
    fit_categorical
);
criterion_main!(benches);
