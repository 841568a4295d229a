//! Pinned model checksums (test only): the tree-growing refactors must grow byte-identical
//! models. Each case fits a small forest on fixed data with every parameter explicit and
//! compares the CRC-32 of its serialized bytes with the value recorded before the
//! open-engine refactor (issue 18). The Python suite pins sha256 digests of the
//! estimators' models (`tests/test_model_hashes.py`).

use crate::forest::Forest;
use crate::params::{Criterion, ForestParams, MaxFeatures, SampleCount, Splitter, Task};
use crate::projection::{
    AxisAligned, Density, ForestRc, Gaussian, PatchGeometry, Patches, Projection, SparseSigned,
    WeightScale,
};
use ndarray::Array2;

fn data(classes: bool) -> (Array2<f32>, Vec<f64>) {
    let (n, p) = (300, 16);
    let x = Array2::from_shape_fn((n, p), |(i, j)| {
        let v = ((i * 37 + j * 101 + i * j * 7) % 97) as f32 / 13.0 - 3.5;
        if j == 5 {
            (i % 4) as f32 // a discrete column: the exact histogram path
        } else {
            v
        }
    });
    let y = x
        .rows()
        .into_iter()
        .map(|r| {
            let s = r[0] + 0.5 * r[1] - r[2] * r[5] + (r[9] as f64).sin() as f32;
            if classes {
                f64::from(u8::from(s > 0.0) + u8::from(s > 3.0))
            } else {
                f64::from(s)
            }
        })
        .collect();
    (x, y)
}

fn params(task: Task, criterion: Criterion, projection: Projection) -> ForestParams {
    ForestParams {
        task,
        criterion,
        splitter: Splitter::Best,
        projection,
        max_features: MaxFeatures::Count(4),
        n_estimators: 3,
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
        seed: 11,
        ccp_alpha: 0.0,
        monotonic_cst: Vec::new(),
        n_jobs: 1,
    }
}

fn crc(p: &ForestParams) -> u32 {
    let (x, y) = data(matches!(p.task, Task::Classification { .. }));
    let forest = Forest::fit(p, x.view(), &y, None).unwrap();
    crc32fast::hash(&forest.to_bytes().unwrap())
}

#[test]
fn pinned_models_are_byte_identical() {
    let clf = Task::Classification { n_classes: 3 };
    let sparse = Projection::new(SparseSigned {
        density: Density::FeatureCombinations(2.0),
        scaling: WeightScale::None,
    });
    let patch = Projection::new(Patches {
        geometry: PatchGeometry {
            data_shape: vec![4, 4],
            channel_axis: None,
            min_patch_size: vec![1, 1],
            max_patch_size: vec![2, 3],
            periodic: vec![false, true],
        },
    });
    let cases = [
        (
            "axis gini",
            params(clf.clone(), Criterion::Gini, Projection::new(AxisAligned)),
        ),
        (
            "sparse entropy",
            params(clf.clone(), Criterion::Entropy, sparse.clone()),
        ),
        (
            "sparse hist",
            ForestParams {
                splitter: Splitter::Histogram { max_bins: 4 },
                ..params(clf.clone(), Criterion::Gini, sparse.clone())
            },
        ),
        (
            "forest-rc random",
            ForestParams {
                splitter: Splitter::Random,
                ..params(
                    clf.clone(),
                    Criterion::Gini,
                    Projection::new(ForestRc { n_combined: 3 }),
                )
            },
        ),
        (
            "gaussian mse best-first",
            ForestParams {
                max_leaf_nodes: Some(10),
                ..params(
                    Task::Regression,
                    Criterion::SquaredError,
                    Projection::new(Gaussian),
                )
            },
        ),
        ("patch gini", params(clf.clone(), Criterion::Gini, patch)),
    ];
    let got: Vec<(&str, u32)> = cases.iter().map(|(n, p)| (*n, crc(p))).collect();
    // Re-pinned once, deliberately: nodes whose candidates are all constant now draw again
    // (the max_features redraw) instead of ending as leaves; this data has discrete columns,
    // so such nodes occur. The refactor before it left every pin unchanged.
    let want: [(&str, u32); 6] = [
        ("axis gini", 821204729),
        ("sparse entropy", 3162347975),
        ("sparse hist", 3251375988),
        ("forest-rc random", 245394932),
        ("gaussian mse best-first", 8823042),
        ("patch gini", 2732796432),
    ];
    assert_eq!(got, want);
}
