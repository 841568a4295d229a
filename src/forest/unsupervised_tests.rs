//! Tests of forests without targets (`Task::Unsupervised`): unsupervised (two-means,
//! Fast-BIC) and isolation forests grown by the one tree engine.

use super::*;
use crate::params::{Criterion, MaxFeatures, SampleCount, Splitter};
use crate::projection::{
    AxisAligned, Density, Gaussian, PatchGeometry, Patches, Projection, SparseSigned, WeightScale,
};
use crate::rng::Rng;
use crate::tree::criterion::average_path_length;
use ndarray::Array2;

/// `n` rows of `p` features: two clusters apart along `x0 + x1` (a direction no single
/// feature shows well), every feature with unit noise; the cluster of each row.
fn rotated_clusters(n: usize, p: usize, seed: u64) -> (Array2<f32>, Vec<usize>) {
    let mut rng = Rng::from_seed(seed);
    let labels: Vec<usize> = (0..n).map(|i| i % 2).collect();
    let x = Array2::from_shape_fn((n, p), |(i, j)| {
        let shift = if j < 2 {
            2.5 * (2.0 * labels[i] as f64 - 1.0)
        } else {
            0.0
        };
        (rng.normal() * if j < 2 { 0.6 } else { 1.0 } + shift) as f32
    });
    (x, labels)
}

fn unsupervised(criterion: Criterion, projection: Projection) -> ForestParams {
    ForestParams {
        task: Task::Unsupervised {
            tree_features: None,
        },
        criterion,
        projection,
        max_features: MaxFeatures::All,
        n_estimators: 8,
        min_samples_split: SampleCount::Sqrt,
        seed: 5,
        ..ForestParams::classification(2)
    }
}

/// Isolation-forest parameters as the Python estimator sets them (ψ = `max_samples`).
pub(crate) fn isolation(projection: Projection, max_samples: usize) -> ForestParams {
    ForestParams {
        task: Task::Unsupervised {
            tree_features: None,
        },
        criterion: Criterion::TwoMeans,
        splitter: Splitter::Random,
        projection,
        max_features: MaxFeatures::Count(1),
        n_estimators: 50,
        max_depth: Some((max_samples as f64).log2().ceil() as usize),
        bootstrap: false,
        max_samples: Some(SampleCount::Count(max_samples)),
        seed: 3,
        ..ForestParams::classification(2)
    }
}

fn sporf() -> Projection {
    Projection::new(SparseSigned {
        density: Density::FeatureCombinations(2.0),
        scaling: WeightScale::None,
    })
}

/// The fraction of trees whose root split separates the two clusters (at most `errors`
/// rows on the wrong side).
fn roots_separating(forest: &Forest, x: &Array2<f32>, labels: &[usize], errors: usize) -> f64 {
    let mut good = 0;
    for tree in forest.trees() {
        let wrong = x
            .rows()
            .into_iter()
            .zip(labels)
            .filter(|(r, &l)| {
                let v = tree
                    .proj(0, forest.descriptors())
                    .dot(r.as_slice().unwrap());
                (v <= tree.threshold[0]) != (l == 0)
            })
            .count();
        good += usize::from(wrong.min(x.nrows() - wrong) <= errors);
    }
    good as f64 / forest.trees().len() as f64
}

#[test]
fn value_rules_split_the_root_between_the_clusters_on_oblique_candidates() {
    let (x, labels) = rotated_clusters(400, 6, 1);
    for criterion in [Criterion::TwoMeans, Criterion::FastBic] {
        let f = Forest::fit(&unsupervised(criterion, sporf()), x.view(), &[], None).unwrap();
        // (the clusters overlap a little: a few rows fall on the other side)
        assert!(
            roots_separating(&f, &x, &labels, 12) >= 0.75,
            "{criterion:?}: {}",
            roots_separating(&f, &x, &labels, 12)
        );
        let leaves: Vec<usize> = f.trees().iter().map(|t| t.n_leaves()).collect();
        match criterion {
            // two-means splits down to min_samples_split = sqrt(400) = 20 rows
            Criterion::TwoMeans => assert!(leaves.iter().all(|&l| l > 8), "{leaves:?}"),
            // Fast-BIC stops where one Gaussian fits a node better than two: little more
            // than the two clusters
            _ => assert!(leaves.iter().all(|&l| (2..=8).contains(&l)), "{leaves:?}"),
        }
    }
}

#[test]
fn unsupervised_leaves_keep_normalised_path_lengths() {
    let (x, _) = rotated_clusters(300, 4, 2);
    let p = unsupervised(Criterion::TwoMeans, Projection::new(AxisAligned));
    let f = Forest::fit(&p, x.view(), &[], None).unwrap();
    let c_psi = average_path_length(300.0);
    for tree in f.trees() {
        for node in (0..tree.n_nodes()).filter(|&i| tree.is_leaf(i)) {
            let want = (f64::from(tree.depth[node])
                + average_path_length(f64::from(tree.n_node_samples[node])))
                / c_psi;
            assert!((tree.leaf_value(node)[0] - want).abs() < 1e-12);
        }
        // min_samples_split = sqrt(300) = 18: a node of fewer rows is a leaf
        for node in 0..tree.n_nodes() {
            if !tree.is_leaf(node) {
                assert!(tree.n_node_samples[node] >= 18);
            }
        }
    }
    let scores = f.score_samples(x.view(), 1).unwrap();
    assert!(scores.iter().all(|&s| (-1.0..0.0).contains(&s)));
}

#[test]
fn isolation_trees_subsample_rows_without_replacement_and_stop_at_the_depth_limit() {
    let (x, _) = rotated_clusters(1000, 3, 3);
    let p = isolation(Projection::new(AxisAligned), 64);
    let f = Forest::fit(&p, x.view(), &[], None).unwrap();
    for (t, tree) in f.trees().iter().enumerate() {
        assert_eq!(tree.n_node_samples[0], 64);
        assert!(tree.max_depth() <= 6);
        let counts = f.in_bag_counts(t, 1000).unwrap();
        assert_eq!(counts.iter().filter(|&&c| c == 1).count(), 64);
        assert!(counts.iter().all(|&c| c <= 1));
    }
    // trees draw different rows
    assert_ne!(
        f.in_bag_counts(0, 1000).unwrap(),
        f.in_bag_counts(1, 1000).unwrap()
    );
}

#[test]
fn subsample_draws_distinct_rows_uniformly() {
    let mut seen = vec![0u32; 50];
    for t in 0..2000 {
        let counts = super::sampling::subsample_counts(9, t, 50, 10);
        assert_eq!(counts.iter().sum::<u32>(), 10);
        for (s, c) in seen.iter_mut().zip(&counts) {
            *s += c;
        }
    }
    // each row in about a fifth of the subsamples (400 of 2000)
    assert!(seen.iter().all(|&c| (320..480).contains(&c)), "{seen:?}");
    // all rows when k >= n
    assert_eq!(super::sampling::subsample_counts(1, 0, 7, 9), vec![1; 7]);
}

#[test]
fn isolation_scores_outliers_lower_for_every_family() {
    let (mut x, _) = rotated_clusters(500, 4, 4);
    // five far rows
    for i in 0..5 {
        x.row_mut(i).fill(9.0 + i as f32);
    }
    for projection in [
        Projection::new(AxisAligned),
        sporf(),
        Projection::new(Gaussian),
    ] {
        let f = Forest::fit(&isolation(projection, 128), x.view(), &[], None).unwrap();
        let s = f.score_samples(x.view(), 1).unwrap();
        let worst_outlier = s[..5].iter().copied().fold(f64::MIN, f64::max);
        let mut inliers: Vec<f64> = s[5..].to_vec();
        inliers.sort_by(f64::total_cmp);
        // every outlier scores below 98% of the inliers
        assert!(
            worst_outlier < inliers[10],
            "{worst_outlier} {:?}",
            &inliers[..12]
        );
    }
}

#[test]
fn forests_without_targets_do_not_depend_on_thread_count() {
    let (x, _) = rotated_clusters(300, 5, 6);
    let mut subspace = isolation(sporf(), 100);
    subspace.task = Task::Unsupervised {
        tree_features: Some(3),
    };
    for mut p in [
        unsupervised(Criterion::FastBic, sporf()),
        isolation(Projection::new(Gaussian), 100),
        subspace,
    ] {
        let one = Forest::fit(&p, x.view(), &[], None).unwrap();
        p.growth.n_jobs = 3;
        let three = Forest::fit(&p, x.view(), &[], None).unwrap();
        assert_eq!(one.to_bytes().unwrap(), three.to_bytes().unwrap());
        // written with the missing section (version 3), which version-2 readers refuse by
        // its number; no kind section (that is version 4's)
        assert_eq!(
            one.to_bytes().unwrap()[8..12],
            crate::serialize::FORMAT_VERSION_MISSING.to_le_bytes()
        );
        let again = Forest::from_bytes(&one.to_bytes().unwrap()).unwrap();
        assert_eq!(again, one);
        assert_eq!(
            again.score_samples(x.view(), 2).unwrap(),
            one.score_samples(x.view(), 1).unwrap()
        );
    }
}

#[test]
fn random_subspace_trees_use_only_their_features() {
    let (x, _) = rotated_clusters(300, 8, 7);
    let mut p = isolation(sporf(), 128);
    p.task = Task::Unsupervised {
        tree_features: Some(3),
    };
    let f = Forest::fit(&p, x.view(), &[], None).unwrap();
    let mut used_by_some = [false; 8];
    for (t, tree) in f.trees().iter().enumerate() {
        let allowed = super::sampling::tree_columns(p.seed, t, 8, 3);
        assert_eq!(allowed.len(), 3);
        for &j in &tree.proj_idx {
            assert!(
                allowed.contains(&j),
                "tree {t} uses {j}, allowed {allowed:?}"
            );
            used_by_some[j as usize] = true;
        }
    }
    assert!(
        used_by_some.iter().all(|&u| u),
        "the trees cover every feature"
    );
}

#[test]
fn missing_rows_go_with_the_heavier_side() {
    let (mut x, _) = rotated_clusters(400, 3, 8);
    for i in (0..400).step_by(7) {
        x[(i, 0)] = f32::NAN;
    }
    for p in [
        unsupervised(Criterion::TwoMeans, sporf()),
        isolation(Projection::new(AxisAligned), 128),
    ] {
        let f = Forest::fit(&p, x.view(), &[], None).unwrap();
        for tree in f.trees() {
            assert!(
                tree.missing_flip.is_empty(),
                "the default side, never a flip"
            );
        }
        let s = f.score_samples(x.view(), 1).unwrap();
        assert!(s.iter().all(|v| v.is_finite()));
    }
}

#[test]
fn sparse_x_grows_the_forest_its_dense_array_grows() {
    let (x, _) = rotated_clusters(200, 5, 9);
    let x = x.mapv(|v| if v.abs() < 0.7 { 0.0 } else { v });
    let (mut indptr, mut indices, mut data) = (vec![0u64], vec![], vec![]);
    for r in x.rows() {
        for (j, &v) in r.iter().enumerate() {
            if v != 0.0 {
                indices.push(j as u32);
                data.push(v);
            }
        }
        indptr.push(indices.len() as u64);
    }
    let sparse = crate::sparse::SparseView::new(
        crate::sparse::Layout::Csr,
        (200, 5),
        &indptr,
        &indices,
        &data,
    )
    .unwrap();
    for p in [
        unsupervised(Criterion::FastBic, sporf()),
        isolation(Projection::new(AxisAligned), 64),
    ] {
        let dense = Forest::fit(&p, x.view(), &[], None).unwrap();
        let from_sparse = Forest::fit(&p, sparse, &[], None).unwrap();
        assert_eq!(dense.to_bytes().unwrap(), from_sparse.to_bytes().unwrap());
    }
}

#[test]
fn check_refuses_what_a_forest_without_targets_cannot_do() {
    let base = unsupervised(Criterion::TwoMeans, Projection::new(AxisAligned));
    let rejected = |p: &ForestParams| match p.check(50, 4) {
        Err(Error::InvalidParameter { name, .. }) => name.to_string(),
        other => panic!("expected an invalid parameter, got {other:?}"),
    };
    let with = |f: &dyn Fn(&mut ForestParams)| {
        let mut p = base.clone();
        f(&mut p);
        p
    };
    assert_eq!(
        rejected(&with(&|p| p.criterion = Criterion::Gini)),
        "criterion"
    );
    assert_eq!(rejected(&with(&|p| p.oob = true)), "oob_score");
    assert_eq!(rejected(&with(&|p| p.growth.ccp_alpha = 0.1)), "ccp_alpha");
    assert_eq!(
        rejected(&with(&|p| p.splitter = Splitter::Histogram { max_bins: 8 })),
        "splitter"
    );
    let subspace = |k| Task::Unsupervised {
        tree_features: Some(k),
    };
    assert_eq!(rejected(&with(&|p| p.task = subspace(0))), "tree_features");
    assert_eq!(rejected(&with(&|p| p.task = subspace(5))), "tree_features");
    let patches = Projection::new(Patches {
        geometry: PatchGeometry {
            data_shape: vec![2, 2],
            channel_axis: None,
            min_patch_size: vec![1, 1],
            max_patch_size: vec![2, 2],
            periodic: vec![false, false],
        },
    });
    assert_eq!(
        rejected(&with(&|p| {
            p.task = subspace(2);
            p.projection = patches.clone();
        })),
        "tree_features"
    );
    // supervised tasks refuse the value rules, and keep refusing max_samples without
    // bootstrap (scikit-learn's rule)
    let mut clf = ForestParams::classification(2);
    clf.criterion = Criterion::FastBic;
    assert_eq!(rejected(&clf), "criterion");
    let mut clf = ForestParams::classification(2);
    clf.bootstrap = false;
    clf.max_samples = Some(SampleCount::Count(10));
    assert_eq!(rejected(&clf), "max_samples");
    // a forest without targets takes no y
    let (x, _) = rotated_clusters(50, 4, 1);
    let err = Forest::fit(&base, x.view(), &[0.0; 50], None).unwrap_err();
    assert!(err.to_string().contains("takes no y"), "{err}");
    // and a forest with targets gives no anomaly scores
    let y: Vec<f64> = (0..50).map(|i| (i % 2) as f64).collect();
    let f = Forest::fit(&ForestParams::classification(2), x.view(), &y, None).unwrap();
    assert!(f.score_samples(x.view(), 1).is_err());
}

#[test]
fn pins_of_forests_without_targets() {
    // recorded when the kinds were added: a refactor of the engine keeps these bytes
    let (x, _) = rotated_clusters(300, 5, 10);
    let crc = |p: &ForestParams| {
        crc32fast::hash(
            &Forest::fit(p, x.view(), &[], None)
                .unwrap()
                .to_bytes()
                .unwrap(),
        )
    };
    // random-subspace trees (their features from the tree's Features stream)
    let mut subspace = isolation(sporf(), 64);
    subspace.task = Task::Unsupervised {
        tree_features: Some(3),
    };
    let got = [
        crc(&unsupervised(
            Criterion::TwoMeans,
            Projection::new(AxisAligned),
        )),
        crc(&unsupervised(Criterion::FastBic, sporf())),
        crc(&isolation(Projection::new(AxisAligned), 128)),
        crc(&isolation(Projection::new(Gaussian), 64)),
        crc(&subspace),
    ];
    assert_eq!(
        got,
        [2070880499, 620242903, 700684967, 2739547832, 2260125928],
        "{got:?}"
    );
}

#[test]
fn isolation_model_files_score_and_predict_from_rust() {
    use crate::model::{Body, Estimator, Header, Model, Param, Predictions, ProjectionRecord};
    use crate::value::Value;
    let (mut x, _) = rotated_clusters(400, 3, 11);
    x.row_mut(0).fill(12.0);
    // (projection=None in the header: axis-aligned)
    let f = Forest::fit(
        &isolation(Projection::new(AxisAligned), 128),
        x.view(),
        &[],
        None,
    )
    .unwrap();
    let header = |estimator, attributes: Vec<(String, Value)>| Header {
        estimator,
        task: f.params().task.clone(),
        n_features: 3,
        feature_names: None,
        classes: None,
        params: vec![("n_estimators".into(), Param::Value(Value::Int(50)))],
        attributes,
        projection: ProjectionRecord::of(&f.params().projection),
    };
    let offset = vec![("offset_".to_string(), Value::Float(-0.55))];
    let model = Model::new(
        header(Estimator::IsolationForest, offset.clone()),
        Body::Forest(f.clone()),
    )
    .unwrap();
    let model = Model::from_bytes(&model.to_bytes().unwrap()).unwrap();
    let xf = x.mapv(f64::from);
    let scores = model.score_samples(xf.view()).unwrap();
    assert_eq!(scores, f.score_samples(x.view(), 1).unwrap());
    let decision = model.decision_function(xf.view()).unwrap();
    assert!(decision.iter().zip(&scores).all(|(d, s)| *d == s + 0.55));
    let Predictions::Inliers(inlier) = model.predict(xf.view()).unwrap() else {
        panic!("an isolation forest predicts inliers")
    };
    assert!(!inlier[0], "the far row is an outlier");
    assert_eq!(
        inlier.iter().filter(|&&i| i).count(),
        decision.iter().filter(|&&d| d >= 0.0).count()
    );
    // an isolation forest needs its offset_, and the estimators agree with their tasks
    let err = Model::new(
        header(Estimator::IsolationForest, vec![]),
        Body::Forest(f.clone()),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("offset_"), "{err}");
    let err = Model::new(
        header(Estimator::RandomForestRegressor, offset.clone()),
        Body::Forest(f.clone()),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("task"), "{err}");
    // an unsupervised forest applies but does not predict or score
    let urf = Model::new(
        header(Estimator::UnsupervisedRandomForest, vec![]),
        Body::Forest(f.clone()),
    )
    .unwrap();
    assert_eq!(urf.apply(xf.view()).unwrap().dim(), (400, 50));
    assert!(urf.predict(xf.view()).is_err());
    assert!(urf.score_samples(xf.view()).is_err());
}

#[test]
fn forests_without_targets_refuse_leaf_filling() {
    let (x, _) = rotated_clusters(60, 3, 12);
    for (name, honest, keep) in [
        ("honest_fraction", 0.5, false),
        ("store_leaf_values", 0.0, true),
    ] {
        let mut p = isolation(Projection::new(AxisAligned), 32);
        p.honest_fraction = honest;
        p.store_leaf_values = keep;
        let err = Forest::fit(&p, x.view(), &[], None).unwrap_err();
        assert!(err.to_string().contains(name), "{err}");
    }
}
