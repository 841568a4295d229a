//! Serving latency through the model-file API ([`Model`]), as the `predict` example serves:
//! a 100-tree forest grown on sparse parity (Tomita et al. 2020, Sect. 6.1; n = 5000,
//! p = 20), written to model-file bytes and read back, then
//!
//! * `model_predict/one_row`: `Model::predict_proba` on one row (f64 in, the call a
//!   request handler makes; input cast and checks included);
//! * `model_predict/batch`: 10,000 rows on one thread, reported as rows/s.
//!
//! Run with `cargo bench --bench model`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ndarray::Array2;
use obliqueforest::model::{Body, Header, Param, ProjectionRecord, Value};
use obliqueforest::rng::Rng;
use obliqueforest::{ClassLabels, Estimator, Forest, ForestParams, Model, Task};
use std::hint::black_box;

const P: usize = 20;

fn sparse_parity(n: usize, seed: u64) -> (Array2<f64>, Vec<f64>) {
    let mut rng = Rng::from_seed(seed);
    let x = Array2::from_shape_simple_fn((n, P), || 2.0 * rng.unit() - 1.0);
    let y = x
        .rows()
        .into_iter()
        .map(|r| (r.iter().take(3).filter(|&&v| v > 0.0).count() % 2) as f64)
        .collect();
    (x, y)
}

fn model() -> Model {
    let (x, y) = sparse_parity(5000, 7);
    let mut params = ForestParams::classification(2);
    params.n_estimators = 100;
    params.growth.n_jobs = -1;
    params.seed = 1;
    let forest = Forest::fit(&params, x.mapv(|v| v as f32).view(), &y, None).expect("fit");
    let header = Header {
        estimator: Estimator::RandomForestClassifier,
        task: Task::Classification { n_classes: 2 },
        n_features: P as u64,
        feature_names: None,
        classes: Some(ClassLabels::Int {
            bytes: 8,
            values: vec![0, 1],
        }),
        params: vec![("n_estimators".into(), Param::Value(Value::Int(100)))],
        attributes: vec![],
        projection: ProjectionRecord::of(&forest.params().projection),
    };
    let bytes = Model::new(header, Body::Forest(forest))
        .and_then(|m| m.to_bytes())
        .expect("model");
    Model::from_bytes(&bytes).expect("read back")
}

fn bench(c: &mut Criterion) {
    let model = model();
    let (x, _) = sparse_parity(10_000, 11);
    let mut g = c.benchmark_group("model_predict");
    let row = x.slice(ndarray::s![0..1, ..]).to_owned();
    g.bench_function(BenchmarkId::new("one_row", "rf,p=20,trees=100"), |b| {
        b.iter(|| black_box(model.predict_proba(black_box(row.view())).expect("predict")))
    });
    g.throughput(Throughput::Elements(x.nrows() as u64));
    g.bench_function(
        BenchmarkId::new("batch", "rf,p=20,trees=100,n=10000"),
        |b| b.iter(|| black_box(model.predict_proba(black_box(x.view())).expect("predict"))),
    );
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30);
    targets = bench
}
criterion_main!(benches);
