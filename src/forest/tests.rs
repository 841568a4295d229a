//! Tests of the forest: growth, prediction paths, inspection, bytes, cancellation.

use super::*;
use crate::params::Criterion;
use crate::params::{MaxFeatures, Splitter};
use crate::projection::{
    AxisAligned, Density, ForestRc, Gaussian, Patches, Projection, SparseSigned, WeightScale,
};
use crate::rng::Rng;
use ndarray::Array2;

/// n rows of p features uniform in [-1, 1) from `rng`.
pub(super) fn uniform_x(rng: &mut Rng, n: usize, p: usize) -> Array2<f32> {
    Array2::from_shape_fn((n, p), |_| (rng.unit() * 2.0 - 1.0) as f32)
}

fn data(n: usize, p: usize, seed: u64) -> (Array2<f32>, Vec<f64>) {
    let x = uniform_x(&mut Rng::from_seed(seed), n, p);
    let y = x
        .rows()
        .into_iter()
        .map(|r| ((r[0] > 0.0) ^ (r[1] > 0.0)) as u8 as f64)
        .collect();
    (x, y)
}

fn sporf(n_estimators: usize) -> ForestParams {
    let mut p = ForestParams::classification(2);
    p.projection = Projection::new(SparseSigned {
        density: Density::FeatureCombinations(2.0),
        scaling: WeightScale::None,
    });
    p.max_features = MaxFeatures::All;
    p.n_estimators = n_estimators;
    p.seed = 11;
    p
}

fn robust_sporf(n_estimators: usize) -> ForestParams {
    let mut p = sporf(n_estimators);
    p.projection = Projection::new(SparseSigned {
        density: Density::FeatureCombinations(2.0),
        scaling: WeightScale::Robust,
    });
    p
}

#[test]
fn robust_scaling_makes_sporf_independent_of_the_features_units() {
    let (x, y) = data(300, 6, 4);
    let mut p = robust_sporf(6);
    // powers of two change no rounding: the same splits, bit for bit
    let mut rescaled = x.clone();
    rescaled.column_mut(0).mapv_inplace(|v| v * 1024.0);
    rescaled.column_mut(3).mapv_inplace(|v| v / 64.0);
    let a = Forest::fit(&p, x.view(), &y, None).unwrap();
    let b = Forest::fit(&p, rescaled.view(), &y, None).unwrap();
    for (s, t) in a.trees.iter().zip(&b.trees) {
        assert_eq!((&s.left, &s.threshold), (&t.left, &t.threshold));
    }
    assert_eq!(
        a.predict(x.view(), 1).unwrap(),
        b.predict(rescaled.view(), 1).unwrap()
    );
    // without scaling the wide column takes over the projections it enters
    p.projection = sporf(1).projection;
    let a = Forest::fit(&p, x.view(), &y, None).unwrap();
    let b = Forest::fit(&p, rescaled.view(), &y, None).unwrap();
    assert_ne!(a.trees[0].threshold, b.trees[0].threshold);
    // the scales are in the stored weights: a scaled forest round-trips, and an
    // unscaled one keeps its version-2 bytes
    // (in version 3, which readers without the scaled variant refuse by its number)
    let scaled = Forest::fit(&robust_sporf(6), x.view(), &y, None).unwrap();
    let bytes = scaled.to_bytes().unwrap();
    assert_eq!(Forest::from_bytes(&bytes).unwrap(), scaled);
    assert_eq!(bytes[8..12], 3u32.to_le_bytes());
    assert_eq!(a.to_bytes().unwrap()[8..12], 2u32.to_le_bytes());
}

#[test]
fn sporf_importances_share_a_split_equally_among_its_features() {
    let (x, y) = data(300, 6, 5);
    let p = robust_sporf(4);
    let mut rescaled = x.clone();
    rescaled.column_mut(1).mapv_inplace(|v| v * 1024.0);
    let a = Forest::fit(&p, x.view(), &y, None).unwrap();
    let b = Forest::fit(&p, rescaled.view(), &y, None).unwrap();
    assert_eq!(a.feature_importances(), b.feature_importances());
}

#[test]
fn forest_does_not_depend_on_thread_count() {
    let (x, y) = data(300, 6, 1);
    let mut p = sporf(8);
    let one = Forest::fit(&p, x.view(), &y, None).unwrap();
    p.growth.n_jobs = 3;
    let three = Forest::fit(&p, x.view(), &y, None).unwrap();
    assert!(
        one == three,
        "the same seed grows the same forest on 1 and 3 threads"
    );
    assert_eq!(one.to_bytes().unwrap(), three.to_bytes().unwrap());
}

#[test]
fn in_bag_counts_and_decision_paths_match_the_grown_trees() {
    let (x, y) = data(200, 5, 2);
    let mut p = sporf(4);
    p.oob = true;
    let forest = Forest::fit(&p, x.view(), &y, None).unwrap();
    let oob = forest.oob().unwrap();
    let mut not_in_bag = vec![0u32; 200];
    for t in 0..4 {
        let counts = forest.in_bag_counts(t, 200).unwrap();
        assert_eq!(counts.iter().sum::<u32>(), 200, "a bootstrap draws n rows");
        let distinct = counts.iter().filter(|&&c| c > 0).count() as u32;
        assert_eq!(forest.trees()[t].n_node_samples[0], distinct);
        for (n, &c) in not_in_bag.iter_mut().zip(&counts) {
            *n += (c == 0) as u32;
        }
    }
    assert_eq!(
        not_in_bag, oob.counts,
        "in-bag rows are the ones OOB left out"
    );
    assert!(forest.in_bag_counts(4, 200).is_err());

    // OOB computed afterwards from the seeds equals OOB gathered while growing
    let mut later = Forest::fit(&sporf(4), x.view(), &y, None).unwrap();
    assert!(later.oob().is_none());
    later.compute_oob(x.view(), 2).unwrap();
    assert_eq!(later.oob().unwrap().sums, oob.sums);
    assert_eq!(later.oob().unwrap().counts, oob.counts);

    let leaves = forest.apply(x.view(), 1).unwrap();
    let (indptr, indices, ptr) = forest.decision_path(x.view(), 1).unwrap();
    assert_eq!(indptr.len(), 201);
    for i in 0..200 {
        let row = &indices[indptr[i] as usize..indptr[i + 1] as usize];
        for t in 0..4 {
            let path: Vec<i64> = row
                .iter()
                .filter(|&&v| v >= ptr[t] && v < ptr[t + 1])
                .map(|&v| v - ptr[t])
                .collect();
            let tree = &forest.trees()[t];
            assert_eq!(path[0], 0, "paths start at the root");
            assert_eq!(*path.last().unwrap(), leaves[[i, t]]);
            assert_eq!(path.len() as u32, tree.depth[leaves[[i, t]] as usize] + 1);
        }
    }
}

/// Grows a forest from prepared data, with the discrete-column hint on or off.
fn fit_with_hint(params: &ForestParams, x: &Array2<f32>, y: &[f64], hint: bool) -> Forest {
    let mut data = prepare(params, x.view(), y, None).unwrap();
    data.x.set_discrete_hint(hint);
    Forest::grown(&data, None).unwrap()
}

#[test]
fn exact_histogram_path_grows_the_trees_sorting_grows() {
    // integer features (the histogram path's case) and integer targets, so every
    // gini and squared-error statistic is an exact sum and both paths must choose the
    // very same splits
    let mut rng = Rng::from_seed(9);
    let x = Array2::from_shape_fn((3000, 5), |(_, j)| (rng.below(3 + 2 * j) as f32) - 2.0);
    let y: Vec<f64> = x
        .rows()
        .into_iter()
        .map(|r| ((r[0] + r[1] > 0.0) as u8 + (r[2] * r[3] > 1.0) as u8) as f64)
        .collect();
    for proj in [
        Projection::new(AxisAligned),
        Projection::new(SparseSigned {
            density: Density::FeatureCombinations(2.0),
            scaling: WeightScale::None,
        }),
    ] {
        let mut clf = sporf(4);
        clf.task = crate::params::Task::Classification { n_classes: 3 };
        clf.projection = proj.clone();
        let mut reg = ForestParams::regression();
        reg.projection = proj;
        reg.n_estimators = 4;
        for (params, crit) in [
            (clf.clone(), crate::params::Criterion::Gini),
            (clf, crate::params::Criterion::Entropy),
            (reg, crate::params::Criterion::SquaredError),
        ] {
            let params = ForestParams {
                criterion: crit,
                ..params
            };
            let hist = fit_with_hint(&params, &x, &y, true);
            let sort = fit_with_hint(&params, &x, &y, false);
            assert!(hist.trees().iter().map(|t| t.n_nodes()).sum::<usize>() > 40);
            if crit != crate::params::Criterion::Entropy {
                assert!(hist == sort, "{crit:?}: the histogram path changed a split");
                continue;
            }
            // entropy sums logarithms, which round differently when a bin's rows move
            // at once: near-ties may flip, so only the predictions must agree
            let (a, b) = (
                hist.predict(x.view(), 1).unwrap(),
                sort.predict(x.view(), 1).unwrap(),
            );
            let differ = a
                .rows()
                .into_iter()
                .zip(b.rows())
                .filter(|(r, s)| (r[0] - s[0]).abs() + (r[1] - s[1]).abs() > 1e-9)
                .count();
            assert!(
                differ * 100 <= x.nrows(),
                "entropy: {differ} rows predicted differently"
            );
        }
    }
}

/// XOR data whose feature 2 is missing exactly on the rows of class 1 with x0 > 0.5,
/// and 10% of every other entry missing at random.
fn missing_data(n: usize, seed: u64) -> (Array2<f32>, Vec<f64>) {
    let (mut x, y) = data(n, 4, seed);
    let mut rng = Rng::from_seed(seed + 100);
    for i in 0..n {
        for j in 0..4 {
            if j == 2 && y[i] == 1.0 && x[[i, 0]] > 0.5 || j != 2 && rng.unit() < 0.1 {
                x[[i, j]] = f32::NAN;
            }
        }
    }
    (x, y)
}

#[test]
fn missing_values_learn_a_side_and_every_walk_follows_it() {
    let (x, y) = missing_data(600, 21);
    for (proj, splitter) in [
        (Projection::new(AxisAligned), Splitter::Best),
        (
            Projection::new(SparseSigned {
                density: Density::FeatureCombinations(2.0),
                scaling: WeightScale::None,
            }),
            Splitter::Best,
        ),
        (Projection::new(AxisAligned), Splitter::Random),
        (
            Projection::new(AxisAligned),
            Splitter::Histogram { max_bins: 16 },
        ),
    ] {
        let mut p = sporf(6);
        p.projection = proj;
        p.splitter = splitter;
        let f = Forest::fit(&p, x.view(), &y, None).unwrap();
        f.validate().unwrap();
        assert!(
            f.trees().iter().any(|t| !t.missing_flip.is_empty()),
            "{splitter:?}: some split sends its missing rows against the default"
        );
        // fully grown trees fit the training rows, missing ones included
        let proba = f.predict(x.view(), 1).unwrap();
        let wrong = proba
            .rows()
            .into_iter()
            .zip(&y)
            .filter(|(r, &c)| (r[1] > r[0]) != (c == 1.0))
            .count();
        assert!(
            wrong * 50 < y.len(),
            "{splitter:?}: {wrong} training rows wrong"
        );
        // plain and packed walks agree on rows with missing values
        for (t, pt) in f.trees().iter().zip(f.packed()) {
            let mut out = vec![0u32; x.nrows()];
            let flat: Vec<f32> = x.iter().copied().collect();
            pt.leaves(&flat, 4, &mut out);
            for (i, row) in x.rows().into_iter().enumerate() {
                let row = row.to_vec();
                let leaf = t.leaf(f.descriptors(), &row);
                assert_eq!(leaf, pt.leaf(&row));
                assert_eq!(leaf, out[i] as usize);
                assert_eq!(leaf, t.leaf_by(f.descriptors(), |j| row[j]));
            }
        }
        // the directions survive the bytes, which carry the next format version
        let bytes = f.to_bytes().unwrap();
        assert_eq!(
            bytes[8..12],
            crate::serialize::FORMAT_VERSION_MISSING.to_le_bytes()
        );
        let back = Forest::from_bytes(&bytes).unwrap();
        assert!(back == f);
        assert_eq!(back.predict(x.view(), 1).unwrap(), proba);
    }
}

#[test]
fn missing_directions_in_bytes_are_validated_and_absent_without_nan() {
    let (x, y) = data(300, 4, 5);
    let plain = Forest::fit(&sporf(3), x.view(), &y, None).unwrap();
    let bytes = plain.to_bytes().unwrap();
    assert_eq!(
        bytes[8..12],
        2u32.to_le_bytes(),
        "no NaN: the version before"
    );
    // a row with NaN at prediction goes to the heavier child where no NaN was seen
    let t = &plain.trees()[0];
    let row = [f32::NAN; 4];
    let mut node = 0;
    while !t.is_leaf(node) {
        let (l, r) = (t.left[node] as usize, t.right[node] as usize);
        let w = &t.weighted_n_node_samples;
        node = if w[l] > w[r] { l } else { r };
    }
    assert_eq!(t.leaf(plain.descriptors(), &row), node);
    // a direction at a leaf, out of order or out of range is refused
    let (xm, ym) = missing_data(300, 6);
    let f = Forest::fit(&sporf(3), xm.view(), &ym, None).unwrap();
    let leaf = (0..f.trees[0].n_nodes())
        .find(|&i| f.trees[0].is_leaf(i))
        .unwrap();
    for bad in [vec![leaf as u32], vec![0, 0], vec![u32::MAX]] {
        let mut g = f.clone();
        g.trees[0].missing_flip = bad.clone();
        assert!(
            matches!(
                Forest::from_bytes(&g.to_bytes().unwrap()),
                Err(Error::CorruptModel(_))
            ),
            "{bad:?}"
        );
    }
    // an older reader refuses the version with the section by its number
    let mut newer = f.to_bytes().unwrap();
    newer[8] = 6;
    assert!(matches!(
        Forest::from_bytes(&newer),
        Err(Error::UnsupportedVersion { found: 6, .. })
    ));
}

#[test]
fn missing_values_grow_the_same_trees_by_histogram_and_by_sorting() {
    // integer features with missing entries, integer targets: the exact histogram
    // path and the sort must choose the same splits and the same missing sides
    let mut rng = Rng::from_seed(4);
    let mut x = Array2::from_shape_fn((3000, 4), |(_, j)| (rng.below(3 + 2 * j) as f32) - 2.0);
    let y: Vec<f64> = x
        .rows()
        .into_iter()
        .map(|r| ((r[0] + r[1] > 0.0) as u8 + (r[2] > 1.0) as u8) as f64)
        .collect();
    for (i, mut row) in x.rows_mut().into_iter().enumerate() {
        if y[i] == 2.0 && i % 3 == 0 {
            row[1] = f32::NAN;
        }
        if i % 7 == 0 {
            row[3] = f32::NAN;
        }
    }
    let mut p = ForestParams::regression();
    p.n_estimators = 4;
    p.projection = Projection::new(AxisAligned);
    let hist = fit_with_hint(&p, &x, &y, true);
    let sort = fit_with_hint(&p, &x, &y, false);
    assert!(hist.trees().iter().any(|t| !t.missing_flip.is_empty()));
    assert!(
        hist == sort,
        "the histogram path changed a split or a missing side"
    );
}

#[test]
fn histogram_splitter_is_exact_when_bins_resolve_every_value_and_close_otherwise() {
    let mut p = sporf(6);
    p.projection = Projection::new(AxisAligned);
    // 40 evenly spaced values a feature, 64 bins (nodes of 512+ rows): every value has
    // a bin of its own
    let mut rng = Rng::from_seed(3);
    let x = Array2::from_shape_fn((6000, 4), |_| rng.below(40) as f32 * 0.25);
    let y: Vec<f64> = x
        .rows()
        .into_iter()
        .map(|r| (r[0] + 0.5 * r[1] > 6.0) as u8 as f64)
        .collect();
    let exact = fit_with_hint(&p, &x, &y, false);
    p.splitter = Splitter::Histogram { max_bins: 64 };
    assert!(fit_with_hint(&p, &x, &y, false).trees() == exact.trees());
    // continuous data, 32 bins: approximate thresholds, yet every split is consistent
    // with the rows (validate, fully grown trees fit the training data) and the
    // forest generalises about as well
    let (x, y) = data(8000, 4, 12);
    let (xt, yt) = data(4000, 4, 13);
    let mut p = sporf(10);
    let exact = Forest::fit(&p, x.view(), &y, None).unwrap();
    p.splitter = Splitter::Histogram { max_bins: 32 };
    let hist = Forest::fit(&p, x.view(), &y, None).unwrap();
    hist.validate().unwrap();
    let err = |f: &Forest| {
        let proba = f.predict(xt.view(), 1).unwrap();
        proba
            .rows()
            .into_iter()
            .zip(&yt)
            .filter(|(r, &c)| (r[1] > r[0]) != (c == 1.0))
            .count() as f64
            / yt.len() as f64
    };
    let (e_exact, e_hist) = (err(&exact), err(&hist));
    assert!(e_hist < e_exact + 0.02, "hist {e_hist} vs exact {e_exact}");
    assert!(
        exact.trees() != hist.trees(),
        "32 bins on 8000 continuous rows must change some split"
    );
}

#[test]
fn only_leaves_store_values_and_inner_values_are_recovered() {
    let (x, y) = data(300, 4, 21);
    let mut p = sporf(3);
    p.bootstrap = false;
    let f = Forest::fit(&p, x.view(), &y, None).unwrap();
    let ones = y.iter().filter(|&&c| c == 1.0).count() as f64 / y.len() as f64;
    for t in f.trees() {
        assert_eq!(t.value.len(), 2 * t.n_leaves());
        let all = t.node_values();
        assert_eq!(all.len(), 2 * t.n_nodes());
        // the root's value is the class distribution of the whole training set
        assert!((all[1] - ones).abs() < 1e-12 && (all[0] + all[1] - 1.0).abs() < 1e-12);
        for node in (0..t.n_nodes()).filter(|&i| t.is_leaf(i)) {
            assert_eq!(&all[2 * node..2 * node + 2], t.leaf_value(node));
        }
    }
}

#[test]
fn packed_forest_matches_tree_predictions() {
    let (x, y) = data(400, 6, 2);
    let patch = crate::projection::PatchGeometry {
        data_shape: vec![2, 3],
        channel_axis: None,
        min_patch_size: vec![1, 1],
        max_patch_size: vec![2, 3],
        periodic: vec![false, true],
    };
    for proj in [
        Projection::new(AxisAligned),
        Projection::new(Gaussian),
        Projection::new(ForestRc { n_combined: 2 }),
        Projection::new(Patches { geometry: patch }),
    ] {
        let p = ForestParams {
            projection: proj,
            ..sporf(5)
        };
        let f = Forest::fit(&p, x.view(), &y, None).unwrap();
        let packed = f.packed();
        assert_eq!(packed.len(), 5);
        let flat: Vec<f32> = x.iter().copied().collect();
        let mut lanes = vec![0u32; x.nrows()];
        for (t, pt) in f.trees().iter().zip(packed) {
            pt.leaves(&flat, 6, &mut lanes);
            for (row, &lane_leaf) in x.rows().into_iter().zip(&lanes) {
                let row = row.to_vec();
                let plain = t.leaf(f.descriptors(), &row);
                assert_eq!(plain, pt.leaf(&row));
                assert_eq!(plain, lane_leaf as usize);
                assert_eq!(t.leaf_row(pt.leaf_row(plain)), t.leaf_value(plain));
                if let Some(c) = pt.pure_class(plain) {
                    let mut one_hot = vec![0.0; t.n_outputs];
                    one_hot[c] = 1.0;
                    assert_eq!(t.leaf_value(plain), &one_hot[..]);
                }
            }
        }
    }
}

#[test]
fn fully_grown_tree_fits_training_data() {
    let (x, y) = data(200, 4, 3);
    let mut p = sporf(1);
    p.bootstrap = false;
    let f = Forest::fit(&p, x.view(), &y, None).unwrap();
    let proba = f.predict(x.view(), 1).unwrap();
    for (row, &t) in proba.rows().into_iter().zip(&y) {
        assert_eq!(row[1], t, "pure leaves reproduce the labels");
    }
}

#[test]
fn max_depth_and_max_leaf_nodes_are_honoured() {
    let (x, y) = data(500, 4, 4);
    let mut p = sporf(3);
    p.max_depth = Some(2);
    let f = Forest::fit(&p, x.view(), &y, None).unwrap();
    assert!(f.trees().iter().all(|t| t.max_depth() <= 2));
    p.max_depth = None;
    p.max_leaf_nodes = Some(5);
    let f = Forest::fit(&p, x.view(), &y, None).unwrap();
    assert!(f.trees().iter().all(|t| t.n_leaves() == 5));
}

#[test]
fn model_bytes_round_trip_and_reject_damage() {
    let (x, y) = data(200, 4, 5);
    let f = Forest::fit(&sporf(3), x.view(), &y, None).unwrap();
    let bytes = f.to_bytes().unwrap();
    assert_eq!(Forest::from_bytes(&bytes).unwrap(), f);
    assert!(matches!(
        Forest::from_bytes(&bytes[..bytes.len() - 1]),
        Err(Error::CorruptModel(_))
    ));
    let mut flipped = bytes.clone();
    flipped[40] ^= 1;
    assert!(matches!(
        Forest::from_bytes(&flipped),
        Err(Error::CorruptModel(_))
    ));
    let mut newer = bytes.clone();
    newer[8] = 9;
    assert!(matches!(
        Forest::from_bytes(&newer),
        Err(Error::UnsupportedVersion { .. })
    ));
}

#[test]
fn loader_rejects_structurally_invalid_trees_with_valid_checksum() {
    let (x, y) = data(200, 4, 6);
    let mut f = Forest::fit(&sporf(2), x.view(), &y, None).unwrap();
    f.trees[0].left[0] = 0; // a cycle
    let bytes = f.to_bytes().unwrap();
    assert!(matches!(
        Forest::from_bytes(&bytes),
        Err(Error::CorruptModel(_))
    ));
    let mut f = Forest::fit(&sporf(2), x.view(), &y, None).unwrap();
    f.trees[0].proj_idx[0] = 99; // feature out of range
    assert!(matches!(
        Forest::from_bytes(&f.to_bytes().unwrap()),
        Err(Error::CorruptModel(_))
    ));
    let mut f = Forest::fit(&sporf(2), x.view(), &y, None).unwrap();
    let last = f.trees[0].depth.len() - 1;
    f.trees[0].depth[last] = u32::MAX; // depths inconsistent with the tree
    assert!(matches!(
        Forest::from_bytes(&f.to_bytes().unwrap()),
        Err(Error::CorruptModel(_))
    ));
}

#[test]
fn bad_input_is_an_error_not_a_panic() {
    let (x, y) = data(50, 3, 7);
    let p = sporf(2);
    let mut inf = x.clone();
    inf[[3, 1]] = f32::INFINITY;
    assert!(Forest::fit(&p, inf.view(), &y, None).is_err());
    let f = Forest::fit(&p, x.view(), &y, None).unwrap();
    assert!(f.predict(inf.view(), 1).is_err());
    assert!(Forest::fit(&p, x.view(), &y[..10], None).is_err());
    assert!(Forest::fit(&p, x.view(), &y, Some(&[-1.0; 50])).is_err());
    let f = Forest::fit(&p, x.view(), &y, None).unwrap();
    let narrow = Array2::<f32>::zeros((4, 2));
    assert!(matches!(
        f.predict(narrow.view(), 1),
        Err(Error::FeatureMismatch { .. })
    ));
    let bad_params = ForestParams {
        max_features: MaxFeatures::Count(0),
        ..p
    };
    assert!(matches!(
        Forest::fit(&bad_params, x.view(), &y, None),
        Err(Error::InvalidParameter { .. })
    ));
}

#[test]
fn cancelled_fit_and_predict_return_cancelled_and_another_thread_can_cancel() {
    let (x, y) = data(3000, 6, 8);
    let f = Forest::fit(&sporf(4), x.view(), &y, None).unwrap();
    let cancelled = crate::Cancel::new();
    cancelled.cancel();
    assert_eq!(
        cancelled
            .run(|| Forest::fit(&sporf(4), x.view(), &y, None))
            .err(),
        Some(Error::Cancelled)
    );
    for n_jobs in [1, 2] {
        let r = cancelled.run(|| f.predict(x.view(), n_jobs));
        assert_eq!(r.err(), Some(Error::Cancelled));
    }
    // a fit of many trees, cancelled from another thread while it grows
    let cancel = crate::Cancel::new();
    let mut p = sporf(100_000);
    p.growth.n_jobs = 2;
    let started = std::time::Instant::now();
    let result = std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(std::time::Duration::from_millis(200));
            cancel.cancel();
        });
        cancel.run(|| Forest::fit(&p, x.view(), &y, None))
    });
    assert_eq!(result.err(), Some(Error::Cancelled));
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    // and the token of another call is not this one's
    assert!(Forest::fit(&sporf(2), x.view(), &y, None).is_ok());
}

#[test]
fn cancelling_one_fit_leaves_a_concurrent_fit_on_the_same_pool_alone() {
    let (x, y) = data(2000, 6, 10);
    let mut p = sporf(24);
    p.growth.n_jobs = 2;
    let reference = Forest::fit(&p, x.view(), &y, None).unwrap();
    for _ in 0..3 {
        let cancel = crate::Cancel::new();
        let mut long = sporf(100_000);
        long.growth.n_jobs = 2;
        // (a pool runs its queued work first: the other fit waits for the cancel)
        let (stopped, other) = std::thread::scope(|s| {
            let stopped = s.spawn(|| cancel.run(|| Forest::fit(&long, x.view(), &y, None)));
            let other = s.spawn(|| Forest::fit(&p, x.view(), &y, None).unwrap());
            std::thread::sleep(std::time::Duration::from_millis(100));
            cancel.cancel();
            (stopped.join().unwrap(), other.join().unwrap())
        });
        assert_eq!(stopped.err(), Some(Error::Cancelled));
        assert!(other == reference, "a cancel reached another call's trees");
    }
}

#[test]
fn memory_tally_stops_growth_over_its_budget() {
    let (x, y) = data(500, 4, 9);
    let one = Forest::fit(&sporf(1), x.view(), &y, None).unwrap();
    let per_tree = crate::limits::tree_bytes(&one.trees()[0]);
    let tally = crate::limits::Tally::new(Some(per_tree * 10), 0, 50);
    assert!(!tally.over());
    tally.add(&one.trees()[0], 0);
    assert!(
        tally.over(),
        "50 trees of this size are over 10 trees' budget"
    );
    assert!(matches!(tally.error(), Error::ResourceLimit(_)));
    let roomy = crate::limits::Tally::new(Some(per_tree * 100), 0, 50);
    roomy.add(&one.trees()[0], 0);
    assert!(!roomy.over());
}

/// `x` as (indptr, indices, data) of CSR (`by_rows`) or CSC, storing its nonzeros
/// and, where `explicit` says so, some of its zeros.
fn compressed(
    x: &Array2<f32>,
    by_rows: bool,
    explicit: impl Fn(usize, usize) -> bool,
) -> (Vec<u64>, Vec<u32>, Vec<f32>) {
    let (n, p) = x.dim();
    let (major, minor) = if by_rows { (n, p) } else { (p, n) };
    let (mut ptr, mut idx, mut val) = (vec![0u64], Vec::new(), Vec::new());
    for a in 0..major {
        for b in 0..minor {
            let (i, j) = if by_rows { (a, b) } else { (b, a) };
            if x[[i, j]] != 0.0 || explicit(i, j) {
                idx.push(b as u32);
                val.push(x[[i, j]]);
            }
        }
        ptr.push(idx.len() as u64);
    }
    (ptr, idx, val)
}

#[test]
fn sparse_x_grows_and_predicts_the_dense_forest_bit_for_bit() {
    use crate::sparse::{Layout, SparseView};
    // mostly zeros, an empty column (3) and an empty row (7), -0.0 entries stored
    let (mut x, _) = data(240, 12, 21);
    for ((i, j), v) in x.indexed_iter_mut() {
        if j == 3 || i == 7 || (i * 7 + j * 3) % 5 != 0 {
            *v = 0.0;
        }
        if (i + j) % 31 == 0 && *v == 0.0 {
            *v = -0.0;
        }
    }
    let y: Vec<f64> = x
        .rows()
        .into_iter()
        .map(|r| f64::from(u8::from(r[0] + r[1] - r[2] > 0.0)))
        .collect();
    let explicit = |i: usize, j: usize| (i * j) % 11 == 1;
    let csr = compressed(&x, true, explicit);
    let csc = compressed(&x, false, explicit);
    let csr = SparseView::new(Layout::Csr, (240, 12), &csr.0, &csr.1, &csr.2).unwrap();
    let csc = SparseView::new(Layout::Csc, (240, 12), &csc.0, &csc.1, &csc.2).unwrap();
    let kinds = [
        Projection::new(AxisAligned),
        Projection::new(SparseSigned {
            density: Density::FeatureCombinations(2.0),
            scaling: WeightScale::None,
        }),
        Projection::new(ForestRc { n_combined: 3 }),
        Projection::new(Gaussian),
    ];
    for kind in kinds {
        let mut p = sporf(6);
        p.projection = kind;
        p.oob = true;
        let dense = Forest::fit(&p, x.view(), &y, None).unwrap();
        for sparse in [csr, csc] {
            let f = Forest::fit(&p, sparse, &y, None).unwrap();
            assert_eq!(f.to_bytes().unwrap(), dense.to_bytes().unwrap());
            assert_eq!(f.oob(), dense.oob());
            for test in [csr, csc] {
                assert_eq!(
                    dense.predict(x.view(), 1).unwrap(),
                    f.predict(test, 2).unwrap()
                );
                assert_eq!(dense.apply(x.view(), 1).unwrap(), f.apply(test, 1).unwrap());
                assert_eq!(
                    dense.leaf_bounds(x.view(), 1).unwrap(),
                    f.leaf_bounds(test, 1).unwrap()
                );
            }
        }
    }
    // a node whose rows are few against a long column takes the binary-search gather
    let mut p = sporf(3);
    p.max_depth = Some(40);
    p.bootstrap = false;
    let dense = Forest::fit(&p, x.view(), &y, None).unwrap();
    let f = Forest::fit(&p, csc, &y, None).unwrap();
    assert_eq!(f.to_bytes().unwrap(), dense.to_bytes().unwrap());
    let narrow = SparseView::new(Layout::Csr, (1, 5), &[0, 0], &[], &[]).unwrap();
    assert!(matches!(
        f.predict(narrow, 1),
        Err(Error::FeatureMismatch { .. })
    ));
}

#[test]
fn sparse_zero_block_scan_grows_the_dense_forest_bit_for_bit() {
    use crate::sparse::{Layout, SparseView};
    let _held = crate::probe::hold();
    // 2,500 rows (radix-sorted nodes at the top, pdqsort below), 60 columns at density
    // ~0.06: counts (discrete: the dense exact histogram path), signed reals, a column
    // stored everywhere, one with a single entry; three classes
    let (n, p) = (2_500, 60);
    let mut rng = Rng::from_seed(7);
    let x = Array2::from_shape_fn((n, p), |(_, j)| {
        let on = j == 5 || (j != 9 && rng.unit() < 0.06);
        match (on, j % 3) {
            (false, _) => 0.0,
            (true, 0) => (1 + rng.below(4)) as f32,
            _ => (rng.unit() * 2.0 - 1.0) as f32,
        }
    });
    let mut x = x;
    x[[17, 9]] = 2.5;
    let y: Vec<f64> = x
        .rows()
        .into_iter()
        .map(|r| {
            let s = r[0] + r[1] - r[2] + r[3] + 0.5 * r[5];
            f64::from(u8::from(s > 0.3) + u8::from(s > 1.5))
        })
        .collect();
    let csc = compressed(&x, false, |i, j| (i + j) % 97 == 0);
    let csc = SparseView::new(Layout::Csc, (n, p), &csc.0, &csc.1, &csc.2).unwrap();
    let axis = Projection::new(AxisAligned);
    let signed = Projection::new(SparseSigned {
        density: Density::FeatureCombinations(2.5),
        scaling: WeightScale::Robust,
    });
    let base = |projection: &Projection| {
        let mut q = ForestParams::classification(3);
        q.projection = projection.clone();
        q.max_features = MaxFeatures::Sqrt;
        q.n_estimators = 3;
        q.seed = 5;
        q
    };
    let mut cases = vec![];
    for projection in [&axis, &signed] {
        cases.push(("defaults", base(projection), None));
        let mut q = base(projection);
        q.min_samples_leaf = crate::params::SampleCount::Count(7);
        q.max_features = MaxFeatures::All;
        cases.push(("min_samples_leaf", q, None));
        let mut q = base(projection);
        q.splitter = Splitter::Histogram { max_bins: 32 };
        cases.push(("hist", q, None));
        let mut q = base(projection);
        q.bootstrap = false;
        q.max_leaf_nodes = Some(40);
        cases.push(("best-first", q, None));
        // integer sample weights keep the sums exact; fractional ones take the general path
        let w_int: Vec<f64> = (0..n).map(|i| (i % 3) as f64).collect();
        cases.push(("integer weights", base(projection), Some(w_int)));
        let w_frac: Vec<f64> = (0..n).map(|i| 0.5 + (i % 7) as f64 * 0.3).collect();
        cases.push(("fractional weights", base(projection), Some(w_frac)));
        let mut q = base(projection);
        q.criterion = Criterion::Entropy;
        cases.push(("entropy", q, None));
        // candidates screened on 64 rows at nodes of more than 128: the rows keep their
        // order, so the zero-block search sees the dense search's screens
        let mut q = base(projection);
        q.growth.candidate_samples = Some(64);
        cases.push(("screened", q, None));
        let w_frac: Vec<f64> = (0..n).map(|i| 0.5 + (i % 7) as f64 * 0.3).collect();
        let mut q = base(projection);
        q.growth.candidate_samples = Some(64);
        cases.push(("screened, fractional weights", q, Some(w_frac)));
    }
    let mut q = ForestParams::classification(3);
    q.n_estimators = 2;
    q.task = Task::Classification { n_classes: 3 };
    q.max_features = MaxFeatures::Sqrt;
    q.growth.monotonic_cst = (0..p).map(|j| i8::from(j == 1)).collect();
    let y2: Vec<f64> = y.iter().map(|&c| f64::from(c > 0.0)).collect();
    q.task = Task::Classification { n_classes: 2 };
    let scans = || crate::probe::counted(crate::probe::Count::SparseScans);
    let copies = || crate::probe::counted(crate::probe::Count::LocalCopies);
    // the sparse forest with subtrees of 16 rows or more (up to an eighth of X's) grown on
    // copies of their rows' entries (dense X copies none under these limits), and how
    // many subtrees were copied
    let grow_copied = |q: &ForestParams, y: &[f64], w: Option<&[f64]>| {
        let before = copies();
        crate::probe::set_local_limits(Some([0, 16, usize::MAX]));
        let copied = Forest::fit(q, csc, y, w).unwrap();
        crate::probe::set_local_limits(None);
        (copied, copies() - before)
    };
    for (name, q, w) in cases {
        let dense = Forest::fit(&q, x.view(), &y, w.as_deref()).unwrap();
        let before = scans();
        let sparse = Forest::fit(&q, csc, &y, w.as_deref()).unwrap();
        if name == "defaults" {
            assert!(scans() > before + 100, "the zero-block scan was taken");
        }
        // subtrees grown on copies of their rows' entries: the same trees
        let (copied, n_copies) = grow_copied(&q, &y, w.as_deref());
        if q.max_leaf_nodes.is_none() {
            assert!(n_copies > 10, "{name}: subtrees grown on copies");
        }
        let same = copied.to_bytes().unwrap() == dense.to_bytes().unwrap();
        assert!(same, "{name}: a sparse subtree grown on a copy differs");
        assert!(dense.trees().iter().all(|t| t.n_nodes() > 15), "{name}");
        assert_eq!(
            sparse.to_bytes().unwrap(),
            dense.to_bytes().unwrap(),
            "{name}"
        );
    }
    let dense = Forest::fit(&q, x.view(), &y2, None).unwrap();
    let sparse = Forest::fit(&q, csc, &y2, None).unwrap();
    assert_eq!(
        sparse.to_bytes().unwrap(),
        dense.to_bytes().unwrap(),
        "monotonic"
    );
    // monotonic constraints and regression, their subtrees grown on copies too
    let mut r = ForestParams::regression();
    r.criterion = Criterion::SquaredError;
    r.projection = signed.clone();
    r.max_features = MaxFeatures::Sqrt;
    r.n_estimators = 2;
    r.seed = 3;
    let target: Vec<f64> = x
        .rows()
        .into_iter()
        .map(|v| f64::from(v[0] - 2.0 * v[3]))
        .collect();
    for (name, params, y) in [("monotonic", &q, &y2), ("regression", &r, &target)] {
        let dense = Forest::fit(params, x.view(), y, None).unwrap();
        let (copied, n_copies) = grow_copied(params, y, None);
        assert!(n_copies > 0, "{name}: subtrees grown on copies");
        let same = copied.to_bytes().unwrap() == dense.to_bytes().unwrap();
        assert!(same, "{name}: a sparse subtree grown on a copy differs");
    }
}

#[test]
fn multi_output_with_a_repeated_column_grows_the_single_output_trees() {
    // two identical outputs: every proxy is the single output's, so the same splits
    let (x, y) = data(300, 5, 4);
    let twice: Vec<f64> = y.iter().flat_map(|&v| [v, v]).collect();
    for (single, multi) in [
        (sporf(3), {
            let mut p = sporf(3);
            p.task = Task::MultiClassification {
                n_classes: vec![2, 2],
            };
            p
        }),
        (
            ForestParams {
                task: Task::Regression,
                criterion: Criterion::SquaredError,
                ..sporf(3)
            },
            ForestParams {
                task: Task::MultiRegression { n_outputs: 2 },
                criterion: Criterion::SquaredError,
                ..sporf(3)
            },
        ),
    ] {
        let one = Forest::fit(&single, x.view(), &y, None).unwrap();
        let two = Forest::fit(&multi, x.view(), &twice, None).unwrap();
        for (a, b) in one.trees().iter().zip(two.trees()) {
            assert_eq!(a.left, b.left);
            assert_eq!(a.threshold, b.threshold);
            let k = a.n_outputs;
            for leaf in 0..a.n_leaves() {
                let (va, vb) = (a.leaf_row(leaf), b.leaf_row(leaf));
                assert_eq!(va, &vb[..k]);
                assert_eq!(va, &vb[k..]);
            }
        }
        let p = two.predict(x.view(), 1).unwrap();
        assert_eq!(p.ncols(), 2 * one.n_outputs());
    }
}

#[test]
fn multi_output_targets_are_checked() {
    let (x, y) = data(20, 3, 1);
    let mut p = sporf(2);
    p.task = Task::MultiClassification {
        n_classes: vec![2, 3],
    };
    // n values for n × 2 targets
    assert!(Forest::fit(&p, x.view(), &y, None).is_err());
    let mut bad: Vec<f64> = y.iter().flat_map(|&v| [v, 0.0]).collect();
    bad[1] = 3.0; // output 1 has 3 classes: codes 0..3
    assert!(Forest::fit(&p, x.view(), &bad, None).is_err());
    bad[1] = 2.0;
    assert!(Forest::fit(&p, x.view(), &bad, None).is_ok());
    let mut r = ForestParams::regression();
    r.criterion = Criterion::Poisson;
    r.n_estimators = 2;
    let neg: Vec<f64> = (0..20).map(|i| i as f64 - 1.0).collect();
    assert!(Forest::fit(&r, x.view(), &neg, None).is_err());
    assert!(Forest::fit(&r, x.view(), &[0.0; 20], None).is_err());
    assert!(Forest::fit(&r, x.view(), &neg[1..], None).is_err());
    let ok: Vec<f64> = (0..20).map(|i| (i % 4) as f64).collect();
    assert!(Forest::fit(&r, x.view(), &ok, None).is_ok());
}

#[test]
fn public_types_are_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Forest>();
    assert_send_sync::<Tree>();
    assert_send_sync::<ForestParams>();
}

#[test]
fn gaussian_projections_leave_out_a_column_missing_on_every_row() {
    // y = sign(x0 + x1); column 2 is NaN everywhere: every dense projection over it would be
    // missing on every row, and the forest would learn nothing
    let mut rng = Rng::from_seed(4);
    let x = Array2::from_shape_fn((400, 4), |(_, j)| {
        if j == 2 {
            f32::NAN
        } else {
            (2.0 * rng.unit() - 1.0) as f32
        }
    });
    let y: Vec<f64> = x
        .rows()
        .into_iter()
        .map(|r| f64::from(u8::from(r[0] + r[1] > 0.0)))
        .collect();
    let mut p = ForestParams::classification(2);
    p.projection = Projection::new(Gaussian);
    p.max_features = MaxFeatures::Count(8);
    p.n_estimators = 10;
    let forest = Forest::fit(&p, x.view(), &y, None).unwrap();
    let proba = forest.predict(x.view(), 1).unwrap();
    let right = proba
        .rows()
        .into_iter()
        .zip(&y)
        .filter(|(q, &t)| (q[1] > 0.5) == (t == 1.0))
        .count();
    assert!(right > 380, "{right} of 400");
    // no stored projection uses the missing column
    for t in forest.trees() {
        assert!(!t.proj_idx.contains(&2));
    }
}

#[test]
fn grow_more_adds_to_an_oob_record_and_starts_none() {
    let (x, y) = data(200, 4, 2);
    let mut p = sporf(3);
    p.oob = true;
    let mut seven = p.clone();
    seven.n_estimators = 7;
    let whole = Forest::fit(&seven, x.view(), &y, None).unwrap();
    let mut grown = Forest::fit(&p, x.view(), &y, None).unwrap();
    let growth = grown.params().growth.clone();
    grown
        .grow_more(x.view(), &y, None, 4, &growth, None)
        .unwrap();
    assert_eq!(
        grown.oob(),
        whole.oob(),
        "the record covers all seven trees"
    );
    assert!(whole.oob().is_some());
    // truncated: the record is gone, and the next trees do not start a partial one
    let mut cut = Forest::fit(&p, x.view(), &y, None).unwrap();
    cut.truncate(3);
    cut.grow_more(x.view(), &y, None, 4, &growth, None).unwrap();
    assert!(cut.oob().is_none());
    assert_eq!(cut.to_bytes().unwrap(), whole.to_bytes().unwrap());
}

#[test]
fn forests_grown_together_are_the_forests_grown_alone() {
    // fit_many and grow_more_many: one parallel loop over every tree of several forests
    let (x, y) = data(300, 5, 8);
    let mut flipped = x.clone();
    flipped.column_mut(1).mapv_inplace(|v| -v);
    let mut oob = sporf(6);
    oob.oob = true;
    oob.growth.n_jobs = 2;
    let mut rf = ForestParams::classification(2);
    rf.n_estimators = 3;
    rf.seed = 5;
    let params = [oob.clone(), rf.clone(), oob.clone()];
    let xs = [x.view(), x.view(), flipped.view()];
    let together = Forest::fit_many(
        &params,
        xs.iter().map(|&v| v.into()).collect(),
        &y,
        None,
        None,
    )
    .unwrap();
    for ((p, &v), f) in params.iter().zip(&xs).zip(&together) {
        let alone = Forest::fit(p, v, &y, None).unwrap();
        assert_eq!(f.to_bytes().unwrap(), alone.to_bytes().unwrap());
        assert_eq!(f.oob(), alone.oob());
        assert_eq!(f.params().growth.n_jobs, alone.params().growth.n_jobs);
    }
    // warm starts: 4 more trees each, with and without an out-of-bag record
    let mut grown_together = together.clone();
    grown_together[2].truncate(6);
    let mut refs: Vec<&mut Forest> = grown_together.iter_mut().collect();
    let views = xs.iter().map(|&v| v.into()).collect();
    Forest::grow_more_many(&mut refs, views, &y, None, &[4, 2, 4], None).unwrap();
    for ((f, &v), (alone, more)) in grown_together
        .iter()
        .zip(&xs)
        .zip(together.into_iter().zip([4, 2, 4]))
    {
        let mut alone = alone;
        if f.oob().is_none() {
            alone.truncate(alone.trees().len());
        }
        let growth = alone.params().growth.clone();
        alone.grow_more(v, &y, None, more, &growth, None).unwrap();
        assert_eq!(f.to_bytes().unwrap(), alone.to_bytes().unwrap());
        assert_eq!(f.oob(), alone.oob());
    }
    assert!(grown_together[0].oob().is_some() && grown_together[2].oob().is_none());
    // one list shorter than the others is refused
    let refused = Forest::fit_many(&params[..2], vec![x.view().into()], &y, None, None);
    assert!(matches!(refused, Err(Error::InvalidInput(m)) if m.contains("one per forest")));
    // each forest's inputs are checked as its own fit checks them, before and after X's copy
    let mut nan_x = x.clone();
    nan_x[[0, 0]] = f32::NAN;
    let mut constrained = rf.clone();
    constrained.growth.monotonic_cst = vec![1, 0, 0, 0, 0];
    let short = x.slice(ndarray::s![..100, ..]);
    for (p, v) in [(&constrained, nan_x.view()), (&rf, short)] {
        let batch = [rf.clone(), p.clone()];
        let views = vec![x.view().into(), v.into()];
        let together = Forest::fit_many(&batch, views, &y, None, None).map(|_| ());
        let alone = Forest::fit(p, v, &y, None).map(|_| ());
        let (Err(together), Err(alone)) = (together, alone) else {
            panic!("both fits must be refused");
        };
        assert_eq!(together.to_string(), alone.to_string());
    }
}

/// Pooled patches over a series of `p` steps (patches of 1 to 3 steps, pooled windows).
fn pooled_patches(p: usize) -> crate::projection::PooledPatches {
    use crate::projection::{HaarPatches, PatchGeometry, PooledPatches};
    PooledPatches {
        haar: HaarPatches {
            geometry: PatchGeometry {
                data_shape: vec![p],
                channel_axis: None,
                min_patch_size: vec![1],
                max_patch_size: vec![3],
                periodic: vec![false],
            },
            differences: 0.5,
        },
        pooled: 0.8,
        max_filter: 3,
        min_window: 4,
    }
}

#[test]
fn out_of_bag_sums_add_each_trees_own_walk_of_its_undrawn_rows() {
    // the fit walks the out-of-bag rows with the trees' prediction layouts; each sum must
    // be the one the trees themselves give (Tree::leaf_by), added in tree order
    let (n, p) = (400, 8);
    let (mut x, y) = data(n, p, 5);
    x.column_mut(2)
        .mapv_inplace(|v| if v > 0.1 { 1.0 } else { -2.0 }); // a two-valued column (bits)
    for i in (0..n).step_by(9) {
        x[[i, 4]] = f32::NAN;
    }
    let y_reg: Vec<f64> = x.column(0).iter().map(|&v| f64::from(v * 3.0)).collect();
    let mut regression = ForestParams::regression();
    regression.n_estimators = 5;
    let pooled = ForestParams {
        projection: Projection::new(pooled_patches(p)),
        n_estimators: 5,
        ..ForestParams::classification(2)
    };
    let cases = [
        (
            "rf",
            ForestParams {
                n_estimators: 5,
                ..ForestParams::classification(2)
            },
            &y,
        ),
        ("sporf", sporf(5), &y),
        ("pooled", pooled, &y),
        ("regression", regression, &y_reg),
    ];
    for (name, mut params, y) in cases {
        params.oob = true;
        let forest = Forest::fit(&params, x.view(), y, None).unwrap();
        let k = forest.n_outputs();
        let (mut sums, mut counts) = (vec![0.0; n * k], vec![0u32; n]);
        for (t, tree) in forest.trees().iter().enumerate() {
            let drawn = forest.in_bag_counts(t, n).unwrap();
            for i in (0..n).filter(|&i| drawn[i] == 0) {
                let leaf = tree.leaf_by(forest.descriptors(), |j| x[[i, j]]);
                for (s, v) in sums[i * k..(i + 1) * k]
                    .iter_mut()
                    .zip(tree.leaf_value(leaf))
                {
                    *s += v;
                }
                counts[i] += 1;
            }
        }
        let oob = forest.oob().unwrap();
        let walked = counts.iter().filter(|&&c| c > 0).count();
        assert!(walked > n * 4 / 5, "{name}: most rows are out of some tree");
        assert_eq!(oob.counts, counts, "{name}");
        assert_eq!(oob.sums, sums, "{name}");
    }
}

#[test]
fn subtrees_grown_on_copies_of_their_rows_are_the_same_trees() {
    let _held = crate::probe::hold();
    let (n, p) = (1500, 12);
    let (mut x, y) = data(n, p, 21);
    // a two-valued column (held as bits) and a column with missing values
    x.column_mut(2)
        .mapv_inplace(|v| if v > 0.2 { 1.0 } else { -3.0 });
    let mut x_nan = x.clone();
    for i in (0..n).step_by(7) {
        x_nan[[i, 5]] = f32::NAN;
    }
    let y_reg: Vec<f64> = x
        .rows()
        .into_iter()
        .map(|r| f64::from(r[0] + r[1] * r[3]))
        .collect();
    let weights: Vec<f64> = (0..n).map(|i| 0.5 + (i % 5) as f64 * 0.25).collect();
    let pooled = pooled_patches(p);
    let rf = |n_estimators| {
        let mut q = ForestParams::classification(2);
        q.n_estimators = n_estimators;
        q.seed = 3;
        q
    };
    let regression = |criterion| ForestParams {
        task: Task::Regression,
        criterion,
        ..rf(2)
    };
    type Case<'c> = (
        &'c str,
        ForestParams,
        &'c Array2<f32>,
        &'c [f64],
        Option<&'c [f64]>,
    );
    let cases: Vec<Case<'_>> = vec![
        ("rf", rf(3), &x, &y, None),
        (
            "rf weighted entropy",
            ForestParams {
                criterion: Criterion::Entropy,
                ..rf(2)
            },
            &x,
            &y,
            Some(&weights),
        ),
        ("rf missing", rf(2), &x_nan, &y, None),
        (
            "rf hist",
            ForestParams {
                splitter: Splitter::Histogram { max_bins: 16 },
                ..rf(2)
            },
            &x,
            &y,
            None,
        ),
        ("sporf", sporf(2), &x, &y, None),
        // copies by row (candidates that share features), projected in batches; with
        // missing values, and screened (batches on the screen's rows)
        ("sporf missing", sporf(2), &x_nan, &y, None),
        (
            "sporf robust, screened",
            {
                let mut q = robust_sporf(2);
                q.growth.candidate_samples = Some(48);
                q
            },
            &x,
            &y,
            Some(&weights),
        ),
        ("mse", regression(Criterion::SquaredError), &x, &y_reg, None),
        (
            "mae",
            regression(Criterion::AbsoluteError),
            &x,
            &y_reg,
            None,
        ),
        (
            "pooled",
            ForestParams {
                projection: Projection::new(pooled),
                ..rf(2)
            },
            &x,
            &y,
            None,
        ),
    ];
    let batches = || crate::probe::counted(crate::probe::Count::TermBatches);
    for (name, params, x, y, w) in cases {
        let before = batches();
        crate::probe::set_local_limits(None); // X far below the default's size
        let whole = Forest::fit(&params, x.view(), y, w).unwrap();
        crate::probe::set_local_limits(Some([4 * p * 200, 16, 0]));
        let local = Forest::fit(&params, x.view(), y, w).unwrap();
        crate::probe::set_local_limits(None);
        assert!(
            whole.trees.iter().all(|t| t.n_nodes() > 50),
            "{name}: trees deep enough"
        );
        let same = whole.to_bytes().unwrap() == local.to_bytes().unwrap();
        assert!(same, "{name}: a subtree grown on a copy differs");
        if name.starts_with("sporf") {
            assert!(
                batches() > before + 100,
                "{name}: candidates projected in batches"
            );
        }
    }
}
