//! Tests of the kinds of forest chosen at fit: honest trees and kept leaf values
//! (quantile regression forests).

use super::*;
use crate::params::MaxFeatures;
use crate::projection::{Density, Projection, SparseSigned, WeightScale};
use crate::rng::Rng;
use ndarray::Array2;

/// n rows of p uniform features; y = x0 + noise whose scale grows with |x1|.
fn data(n: usize, p: usize, seed: u64) -> (Array2<f32>, Vec<f64>) {
    let mut rng = Rng::from_seed(seed);
    let x = super::tests::uniform_x(&mut rng, n, p);
    let y = x
        .rows()
        .into_iter()
        .map(|r| f64::from(r[0]) + (0.1 + f64::from(r[1].abs())) * rng.normal())
        .collect();
    (x, y)
}

fn regression(n_estimators: usize) -> ForestParams {
    let mut p = ForestParams::regression();
    p.projection = Projection::new(SparseSigned {
        density: Density::FeatureCombinations(1.5),
        scaling: WeightScale::None,
    });
    p.max_features = MaxFeatures::All;
    p.n_estimators = n_estimators;
    p.min_samples_leaf = crate::params::SampleCount::Count(3);
    p.seed = 3;
    p
}

/// The rows of each leaf of `tree` among `rows` (row → leaf by traversal).
fn grouped(forest: &Forest, t: usize, x: &Array2<f32>, counts: &[u32]) -> Vec<Vec<(u32, u32)>> {
    let tree = &forest.trees[t];
    let mut by_leaf = vec![Vec::new(); tree.n_leaves()];
    for (i, &c) in counts.iter().enumerate() {
        if c > 0 {
            let leaf = tree.leaf(forest.descriptors(), x.row(i).as_slice().unwrap());
            by_leaf[tree.right[leaf] as usize].push((i as u32, c));
        }
    }
    by_leaf
}

#[test]
fn kept_leaf_rows_are_the_in_bag_rows_prediction_sends_to_each_leaf() {
    let (x, y) = data(300, 4, 1);
    let mut p = regression(4);
    p.store_leaf_values = true;
    let forest = Forest::fit(&p, x.view(), &y, None).unwrap();
    let plain = Forest::fit(
        &{
            let mut q = p.clone();
            q.store_leaf_values = false;
            q.growth.candidate_samples = None;
            q
        },
        x.view(),
        &y,
        None,
    )
    .unwrap();
    for t in 0..4 {
        // keeping leaf values changes nothing else
        assert_eq!(
            Tree {
                leaf_rows: None,
                ..forest.trees[t].clone()
            },
            plain.trees[t]
        );
        let counts = forest.in_bag_counts(t, 300).unwrap();
        let rows = forest.trees[t].leaf_rows.as_ref().unwrap();
        for (r, want) in grouped(&forest, t, &x, &counts).iter().enumerate() {
            let (got_rows, got_counts) = rows.leaf(r);
            let got: Vec<(u32, u32)> = got_rows
                .iter()
                .copied()
                .zip(got_counts.iter().copied())
                .collect();
            assert_eq!(&got, want, "tree {t}, leaf {r}");
        }
    }
    assert_eq!(forest.leaf_targets().unwrap().y, y);
}

#[test]
fn honest_leaves_hold_the_mean_of_their_honest_rows_or_their_parents() {
    let (x, y) = data(400, 4, 2);
    let mut p = regression(3);
    p.honest_fraction = 0.5;
    p.store_leaf_values = true;
    let forest = Forest::fit(&p, x.view(), &y, None).unwrap();
    for t in 0..3 {
        let honest = forest.honest_counts(t, 400).unwrap();
        let in_bag = forest.in_bag_counts(t, 400).unwrap();
        let drawn = in_bag.iter().filter(|&&c| c > 0).count();
        let n_honest = honest.iter().filter(|&&c| c > 0).count();
        assert_eq!(n_honest, (0.5 * drawn as f64).round() as usize);
        assert!(honest.iter().zip(&in_bag).all(|(&h, &c)| h == 0 || h == c));
        let tree = &forest.trees[t];
        // the split search saw the structure rows only
        let structure: u32 = in_bag.iter().zip(&honest).map(|(&c, &h)| c - h).sum();
        assert_eq!(tree.weighted_n_node_samples[0], f64::from(structure));
        let rows = tree.leaf_rows.as_ref().unwrap();
        let mut filled = 0;
        for (r, want) in grouped(&forest, t, &x, &honest).iter().enumerate() {
            let (got_rows, got_counts) = rows.leaf(r);
            if want.is_empty() {
                // an empty leaf takes an ancestor's honest rows: more than one leaf's worth
                assert!(!got_rows.is_empty());
                continue;
            }
            filled += 1;
            let got: Vec<(u32, u32)> = got_rows
                .iter()
                .copied()
                .zip(got_counts.iter().copied())
                .collect();
            assert_eq!(&got, want);
            let (s, w) = want.iter().fold((0.0, 0.0), |(s, w), &(i, c)| {
                (s + f64::from(c) * y[i as usize], w + f64::from(c))
            });
            assert!((tree.leaf_row(r)[0] - s / w).abs() < 1e-9);
        }
        assert!(filled > 0);
    }
    // the same forest at any thread count
    let mut two = p;
    two.growth.n_jobs = 2;
    let again = Forest::fit(&two, x.view(), &y, None).unwrap();
    assert_eq!(again, forest);
}

#[test]
fn quantiles_of_one_unbootstrapped_tree_are_its_leaves_type7_quantiles() {
    let (x, y) = data(200, 3, 3);
    let mut p = regression(1);
    p.bootstrap = false;
    p.min_samples_leaf = crate::params::SampleCount::Count(7);
    p.store_leaf_values = true;
    let forest = Forest::fit(&p, x.view(), &y, None).unwrap();
    let qs = [0.0, 0.1, 0.5, 0.93, 1.0];
    let got = forest.predict_quantiles(x.view(), &qs, 1).unwrap();
    let tree = &forest.trees[0];
    for i in 0..200 {
        let leaf = tree.leaf(forest.descriptors(), x.row(i).as_slice().unwrap());
        let (rows, _) = tree
            .leaf_rows
            .as_ref()
            .unwrap()
            .leaf(tree.right[leaf] as usize);
        let mut ys: Vec<f64> = rows.iter().map(|&r| y[r as usize]).collect();
        ys.sort_by(f64::total_cmp);
        for (j, &q) in qs.iter().enumerate() {
            let h = q * (ys.len() - 1) as f64;
            let (lo, hi) = (h.floor() as usize, h.ceil() as usize);
            let want = ys[lo] + (h - lo as f64) * (ys[hi] - ys[lo]);
            assert!((got[[i, 0, j]] - want).abs() < 1e-9, "row {i} q {q}");
        }
    }
}

#[test]
fn quantiles_are_ordered_reproducible_and_out_of_bag_where_asked() {
    let (x, y) = data(300, 4, 4);
    let mut p = regression(20);
    p.store_leaf_values = true;
    let forest = Forest::fit(&p, x.view(), &y, None).unwrap();
    let qs = [0.05, 0.5, 0.95];
    let a = forest.predict_quantiles(x.view(), &qs, 1).unwrap();
    assert_eq!(a, forest.predict_quantiles(x.view(), &qs, 3).unwrap());
    for row in a.outer_iter() {
        assert!(row[[0, 0]] <= row[[0, 1]] && row[[0, 1]] <= row[[0, 2]]);
    }
    let oob = forest.oob_quantiles(x.view(), &qs, 2).unwrap();
    assert_eq!(oob.dim(), (300, 1, 3));
    assert_ne!(oob, a, "in-bag rows weigh themselves");
    // too few trees leave some row out of bag of none: NaN there
    let one = Forest::fit(
        &ForestParams {
            n_estimators: 1,
            ..p.clone()
        },
        x.view(),
        &y,
        None,
    )
    .unwrap();
    let q = one.oob_quantiles(x.view(), &qs, 1).unwrap();
    let counts = one.in_bag_counts(0, 300).unwrap();
    for (i, &c) in counts.iter().enumerate() {
        assert_eq!(q[[i, 0, 1]].is_nan(), c > 0);
    }
    assert!(forest
        .oob_quantiles(x.slice(ndarray::s![..10, ..]), &qs, 1)
        .is_err());
    assert!(forest.predict_quantiles(x.view(), &[1.5], 1).is_err());
    let plain = Forest::fit(
        &{
            let mut q = p;
            q.store_leaf_values = false;
            q.growth.candidate_samples = None;
            q
        },
        x.view(),
        &y,
        None,
    )
    .unwrap();
    let err = plain.predict_quantiles(x.view(), &qs, 1).unwrap_err();
    assert!(err.to_string().contains("store_leaf_values"), "{err}");
}

#[test]
fn kinds_round_trip_their_bytes_and_plain_forests_keep_theirs() {
    let (x, y) = data(200, 3, 5);
    let plain = Forest::fit(&regression(3), x.view(), &y, None).unwrap();
    assert_eq!(
        plain.to_bytes().unwrap()[8..12],
        crate::serialize::FORMAT_VERSION_PLAIN.to_le_bytes()
    );
    for (honest, keep) in [(0.3, false), (0.0, true), (0.5, true)] {
        let mut p = regression(3);
        p.honest_fraction = honest;
        p.store_leaf_values = keep;
        let sw: Vec<f64> = (0..200).map(|i| 1.0 + (i % 3) as f64).collect();
        let f = Forest::fit(&p, x.view(), &y, Some(&sw)).unwrap();
        let bytes = f.to_bytes().unwrap();
        assert_eq!(
            bytes[8..12],
            crate::serialize::FORMAT_VERSION_KIND.to_le_bytes()
        );
        let back = Forest::from_bytes(&bytes).unwrap();
        assert_eq!(back, f);
        assert_eq!(back.params().honest_fraction, honest);
        if keep {
            assert_eq!(
                back.predict_quantiles(x.view(), &[0.2, 0.8], 1).unwrap(),
                f.predict_quantiles(x.view(), &[0.2, 0.8], 1).unwrap()
            );
        }
    }
}

#[test]
fn damaged_leaf_values_are_refused_on_load() {
    let (x, y) = data(150, 3, 6);
    let mut p = regression(2);
    p.store_leaf_values = true;
    let f = Forest::fit(&p, x.view(), &y, None).unwrap();
    type Damage = Box<dyn Fn(&mut Forest)>;
    let cases: Vec<Damage> = vec![
        Box::new(|f| f.trees[0].leaf_rows.as_mut().unwrap().rows[0] = 150),
        Box::new(|f| f.trees[1].leaf_rows.as_mut().unwrap().counts[0] = 0),
        Box::new(|f| {
            f.trees[0]
                .leaf_rows
                .as_mut()
                .unwrap()
                .ptr
                .pop()
                .map(|_| ())
                .unwrap()
        }),
        Box::new(|f| f.trees[1].leaf_rows = None),
        Box::new(|f| f.leaf_targets.as_mut().unwrap().y[3] = f64::NAN),
        Box::new(|f| f.leaf_targets.as_mut().unwrap().sample_weight = vec![-1.0; 150]),
        Box::new(|f| f.leaf_targets = None),
        Box::new(|f| f.params.honest_fraction = 1.0),
    ];
    for (k, damage) in cases.iter().enumerate() {
        let mut bad = f.clone();
        damage(&mut bad);
        let err = Forest::from_bytes(&bad.to_bytes().unwrap());
        assert!(
            matches!(err, Err(Error::CorruptModel(_))),
            "case {k}: {err:?}"
        );
    }
}

#[test]
fn kinds_are_checked_and_their_leaf_values_count_against_the_memory_limit() {
    let (x, y) = data(100, 3, 7);
    let mut p = regression(2);
    p.honest_fraction = 1.0;
    assert!(Forest::fit(&p, x.view(), &y, None).is_err());
    p.honest_fraction = 0.5;
    p.growth.monotonic_cst = vec![1, 0, 0];
    assert!(Forest::fit(&p, x.view(), &y, None).is_err());
    let mut c = ForestParams::classification(2);
    c.store_leaf_values = true;
    let labels: Vec<f64> = y.iter().map(|&v| f64::from(u8::from(v > 0.0))).collect();
    assert!(matches!(
        Forest::fit(&c, x.view(), &labels, None),
        Err(Error::InvalidParameter {
            name: "store_leaf_values",
            ..
        })
    ));
    let mut q = regression(2);
    q.store_leaf_values = true;
    let lower = crate::limits::forest_bytes_lower_bound(&q, 100, 0);
    let plain = crate::limits::forest_bytes_lower_bound(&regression(2), 100, 0);
    assert!(lower >= plain + 100 * 8 + 2 * 25 * 8);
    let f = Forest::fit(&q, x.view(), &y, None).unwrap();
    let g = Forest::fit(&regression(2), x.view(), &y, None).unwrap();
    let rows: u64 = f
        .trees
        .iter()
        .map(|t| t.leaf_rows.as_ref().unwrap().n_bytes())
        .sum();
    assert_eq!(f.n_bytes(), g.n_bytes() + rows + 100 * 8);
}
