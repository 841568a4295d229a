//! Tests of categorical columns ([`crate::columns`]): the split search's level maps,
//! prediction through them (plain and packed walks), the formats, and the checks.

use super::unsupervised_tests::isolation;
use super::Forest;
use crate::params::{Criterion, ForestParams, MaxFeatures, Splitter, Task};
use crate::projection::{Density, Projection, SparseSigned, WeightScale};
use crate::rng::Rng;
use ndarray::Array2;

/// Rows of (a level of `levels`, a noise column, a numeric signal column); the class is
/// whether the level is in `members` (XOR the signal's sign when `with_signal`).
fn table(n: usize, levels: u32, members: &[u32], with_signal: bool) -> (Array2<f32>, Vec<f64>) {
    let mut rng = Rng::from_seed(7);
    let mut x = Array2::<f32>::zeros((n, 3));
    let mut y = Vec::with_capacity(n);
    for i in 0..n {
        let level = rng.below(levels as usize) as u32;
        let s = rng.normal() as f32;
        x[[i, 0]] = level as f32;
        x[[i, 1]] = rng.normal() as f32;
        x[[i, 2]] = s;
        let member = members.contains(&level);
        y.push(f64::from(u8::from(if with_signal {
            member != (s > 0.0)
        } else {
            member
        })));
    }
    (x, y)
}

fn stump(levels: u32) -> ForestParams {
    ForestParams {
        n_estimators: 1,
        bootstrap: false,
        max_depth: Some(1),
        max_features: MaxFeatures::All,
        categorical: vec![levels, 0, 0],
        ..ForestParams::classification(2)
    }
}

fn accuracy(f: &Forest, x: &Array2<f32>, y: &[f64]) -> f64 {
    let p = f.predict(x.view(), 1).unwrap();
    let right = (0..y.len())
        .filter(|&i| f64::from(u8::from(p[[i, 1]] > 0.5)) == y[i])
        .count();
    right as f64 / y.len() as f64
}

#[test]
fn one_split_sends_a_set_of_levels_left() {
    let (x, y) = table(600, 8, &[1, 4, 5, 7], false);
    let f = Forest::fit(&stump(8), x.view(), &y, None).unwrap();
    assert_eq!(accuracy(&f, &x, &y), 1.0, "a stump on the levels is exact");
    // the same column as plain numbers: a stump cannot separate an unordered set
    let numeric = ForestParams {
        categorical: Vec::new(),
        ..stump(8)
    };
    let g = Forest::fit(&numeric, x.view(), &y, None).unwrap();
    assert!(accuracy(&g, &x, &y) < 0.8);
    // regression on the same levels
    let p = ForestParams {
        task: Task::Regression,
        criterion: Criterion::SquaredError,
        ..stump(8)
    };
    let r = Forest::fit(&p, x.view(), &y, None).unwrap();
    let pred = r.predict(x.view(), 1).unwrap();
    assert!((0..y.len()).all(|i| (pred[[i, 0]] - y[i]).abs() < 1e-9));
}

#[test]
fn three_classes_are_ordered_along_their_principal_direction() {
    let mut rng = Rng::from_seed(3);
    let n = 900;
    let x = Array2::from_shape_fn((n, 3), |(_, j)| {
        if j == 0 {
            rng.below(6) as f32
        } else {
            rng.normal() as f32
        }
    });
    // levels {0, 3} class 0, {1, 4} class 1, {2, 5} class 2
    let y: Vec<f64> = (0..n).map(|i| f64::from(x[[i, 0]] as u8 % 3)).collect();
    let p = ForestParams {
        max_depth: Some(2),
        ..ForestParams {
            task: Task::Classification { n_classes: 3 },
            ..stump(6)
        }
    };
    let f = Forest::fit(&p, x.view(), &y, None).unwrap();
    let pred = f.predict(x.view(), 1).unwrap();
    let right = (0..n)
        .filter(|&i| {
            let c = (0..3)
                .max_by(|&a, &b| pred[[i, a]].total_cmp(&pred[[i, b]]))
                .unwrap();
            c as f64 == y[i]
        })
        .count();
    assert_eq!(right, n, "two splits on the levels separate three classes");
}

/// Rows of (a level of 12, a noise column, a numeric column s); the class is whether
/// `s` plus the level's effect is positive: a boundary oblique in (s, level's effect).
fn oblique_table(n: usize, seed: u64) -> (Array2<f32>, Vec<f64>) {
    let effect = [
        -1.4, 0.9, -0.3, 1.6, 0.2, -0.9, 1.1, -1.7, 0.5, -0.6, 1.3, 0.0,
    ];
    let mut rng = Rng::from_seed(seed);
    let mut x = Array2::<f32>::zeros((n, 3));
    let mut y = Vec::with_capacity(n);
    for i in 0..n {
        let level = rng.below(12);
        let s = rng.normal();
        x[[i, 0]] = level as f32;
        x[[i, 1]] = rng.normal() as f32;
        x[[i, 2]] = s as f32;
        y.push(f64::from(u8::from(s + effect[level] > 0.0)));
    }
    (x, y)
}

#[test]
fn oblique_splits_combine_a_categorical_column_with_a_numeric_one() {
    let (x, y) = oblique_table(600, 1);
    let (xt, yt) = oblique_table(3000, 2);
    let sporf = |categorical: Vec<u32>| ForestParams {
        projection: Projection::new(SparseSigned {
            density: Density::FeatureCombinations(2.0),
            scaling: WeightScale::None,
        }),
        max_features: MaxFeatures::Count(6),
        n_estimators: 30,
        seed: 4,
        categorical,
        ..ForestParams::classification(2)
    };
    let f = Forest::fit(&sporf(vec![12, 0, 0]), x.view(), &y, None).unwrap();
    let uses_both = f.trees().iter().any(|t| {
        (0..t.n_nodes()).any(|n| {
            let mut terms = 0;
            t.proj(n, None).for_each(|_, _| terms += 1);
            !t.is_leaf(n) && t.proj(n, None).maps().is_some() && terms > 1
        })
    });
    assert!(
        uses_both,
        "some split combines the categorical column with another"
    );
    let cat = accuracy(&f, &xt, &yt);
    let g = Forest::fit(&sporf(Vec::new()), x.view(), &y, None).unwrap();
    let num = accuracy(&g, &xt, &yt);
    assert!(
        cat > num + 0.01,
        "categorical {cat} vs codes as numbers {num}"
    );
    // the same forest with categorical columns left to splits of their own
    let mut alone = sporf(vec![12, 0, 0]);
    alone.growth.categorical_in_projections = false;
    let h = Forest::fit(&alone, x.view(), &y, None).unwrap();
    let mixed = h.trees().iter().any(|t| {
        (0..t.n_nodes()).any(|n| {
            let mut terms = 0;
            t.proj(n, None).for_each(|_, _| terms += 1);
            !t.is_leaf(n) && t.proj(n, None).maps().is_some() && terms > 1
        })
    });
    assert!(
        !mixed,
        "no split combines the categorical column with another"
    );
    let own = accuracy(&h, &xt, &yt);
    assert!(
        cat > own + 0.005,
        "in projections {cat} vs on their own {own}"
    );
}

#[test]
fn prediction_reads_levels_through_the_maps_on_every_walk() {
    let (x, y) = table(800, 12, &[2, 3, 9], true);
    let mut p = stump(12);
    p.max_depth = None;
    p.n_estimators = 6;
    p.bootstrap = true;
    let f = Forest::fit(&p, x.view(), &y, None).unwrap();
    // rows with unseen levels, fractional codes, negative codes and NaN go where the
    // node sends missing values; the packed walks agree with the plain one
    let mut xt = x.slice(ndarray::s![..64, ..]).to_owned();
    for (i, v) in [40.0, 2.5, -1.0, f32::NAN, 1e9].iter().enumerate() {
        xt[[i, 0]] = *v;
    }
    let leaves = f.apply(xt.view(), 1).unwrap();
    for (t, tree) in f.trees().iter().enumerate() {
        for i in 0..xt.nrows() {
            let row = xt.row(i).to_vec();
            assert_eq!(leaves[[i, t]] as usize, tree.leaf(None, &row));
        }
        assert!(tree.level_maps.n_maps() > 0);
    }
    let missing = {
        let mut m = xt.clone();
        m.column_mut(0).fill(f32::NAN);
        f.apply(m.view(), 1).unwrap()
    };
    for i in 0..5 {
        assert_eq!(leaves.row(i), missing.row(i), "row {i} reads as missing");
    }
    // a large block takes the node-by-node walk
    let big = f.apply(x.view(), 2).unwrap();
    for (t, tree) in f.trees().iter().enumerate() {
        for i in (0..x.nrows()).step_by(7) {
            assert_eq!(big[[i, t]] as usize, tree.leaf(None, &x.row(i).to_vec()));
        }
    }
}

#[test]
fn the_formats_keep_the_columns_and_maps() {
    let (x, y) = table(400, 5, &[1, 2], true);
    let mut p = stump(5);
    p.max_depth = None;
    p.n_estimators = 3;
    let f = Forest::fit(&p, x.view(), &y, None).unwrap();
    let bytes = f.to_bytes().unwrap();
    assert_eq!(u32::from_le_bytes(bytes[8..12].try_into().unwrap()), 5);
    let back = Forest::from_bytes(&bytes).unwrap();
    assert_eq!(back.params.categorical, vec![5, 0, 0]);
    assert_eq!(back.trees(), f.trees());
    assert_eq!(
        back.predict(x.view(), 1).unwrap(),
        f.predict(x.view(), 1).unwrap()
    );
    // a numeric forest keeps the versions before
    let numeric = Forest::fit(
        &ForestParams {
            categorical: Vec::new(),
            ..p.clone()
        },
        x.view(),
        &y,
        None,
    )
    .unwrap();
    assert!(u32::from_le_bytes(numeric.to_bytes().unwrap()[8..12].try_into().unwrap()) < 5);
    // damaged maps are refused
    let mut bad = f.clone();
    let t = &mut bad.trees[0];
    t.level_maps.levels.reverse();
    let err = Forest::from_bytes(&bad.to_bytes().unwrap()).unwrap_err();
    assert!(err.to_string().contains("level maps"), "{err}");
}

#[test]
fn the_same_seed_grows_the_same_trees_on_any_thread_count() {
    let (x, y) = table(700, 9, &[0, 5], true);
    let mut p = stump(9);
    p.max_depth = None;
    p.n_estimators = 8;
    p.max_features = MaxFeatures::Sqrt;
    let one = Forest::fit(&p, x.view(), &y, None).unwrap();
    p.growth.n_jobs = 2;
    let two = Forest::fit(&p, x.view(), &y, None).unwrap();
    assert_eq!(one.trees(), two.trees());
}

#[test]
fn codes_out_of_range_and_bad_kinds_are_refused() {
    let (mut x, y) = table(100, 4, &[1], false);
    x[[3, 0]] = 4.0;
    let err = Forest::fit(&stump(4), x.view(), &y, None).unwrap_err();
    assert!(err.to_string().contains("X[3, 0]"), "{err}");
    x[[3, 0]] = 1.5;
    assert!(Forest::fit(&stump(4), x.view(), &y, None).is_err());
    x[[3, 0]] = f32::NAN; // missing: fine
    Forest::fit(&stump(4), x.view(), &y, None).unwrap();
    let wrong_len = ForestParams {
        categorical: vec![4, 0],
        ..stump(4)
    };
    let err = Forest::fit(&wrong_len, x.view(), &y, None).unwrap_err();
    assert!(err.to_string().contains("categorical_features"), "{err}");
    let mut mono = stump(4);
    mono.growth.monotonic_cst = vec![1, 0, 0];
    let err = Forest::fit(&mono, x.view(), &y, None).unwrap_err();
    assert!(err.to_string().contains("monotonic_cst"), "{err}");
}

#[test]
fn rare_levels_are_taken_together() {
    // 400 levels of 2 rows each carry only noise: pooled, they cannot split the root
    let mut rng = Rng::from_seed(9);
    let n = 800;
    let x = Array2::from_shape_fn((n, 3), |(i, j)| match j {
        0 => (i / 2) as f32,
        _ => rng.normal() as f32,
    });
    let y: Vec<f64> = (0..n).map(|_| f64::from(u8::from(rng.coin()))).collect();
    let mut p = stump(400);
    p.max_features = MaxFeatures::All;
    let f = Forest::fit(&p, x.view(), &y, None).unwrap();
    assert_eq!(
        f.trees()[0].level_maps.n_maps(),
        0,
        "the root splits on a numeric column"
    );
    p.growth.min_category_samples = 1;
    let g = Forest::fit(&p, x.view(), &y, None).unwrap();
    assert!(
        g.trees()[0].level_maps.n_maps() > 0,
        "without pooling the noise of the levels wins"
    );
}

#[test]
fn isolation_and_unsupervised_forests_split_categorical_columns() {
    let (x, _) = table(512, 7, &[1], false);
    let mut p = isolation(Projection::new(crate::projection::AxisAligned), 128);
    p.categorical = vec![7, 0, 0];
    let f = Forest::fit(&p, x.view(), &[], None).unwrap();
    assert!(f.trees().iter().any(|t| t.level_maps.n_maps() > 0));
    let scores = f.score_samples(x.view(), 1).unwrap();
    assert!(scores.iter().all(|s| s.is_finite()));
}

/// Grows forests with the categorical part's fast path `switch` off and then on (the others
/// at their default, on) and asserts the same model bytes: classes, weights, three classes,
/// regression, SPORF classification and regression, absolute error and the histogram
/// splitter, with many levels (rare ones at small nodes) and missing levels. `what` names
/// the path in the failure.
fn the_fast_path_grows_the_same_forests(switch: crate::probe::Switch, what: &str) {
    use crate::probe;
    let mut rng = Rng::from_seed(11);
    let n = 1500;
    let x = Array2::from_shape_fn((n, 4), |(_, j)| match j {
        0 => rng.below(40) as f32, // many levels: rare ones at small nodes
        1 => {
            let v = rng.below(6) as f32;
            if rng.below(10) == 0 {
                f32::NAN
            } else {
                v
            }
        }
        _ => rng.normal() as f32,
    });
    let y2: Vec<f64> = (0..n)
        .map(|i| f64::from(u8::from((x[[i, 0]] as u32 % 3 == 0) != (x[[i, 2]] > 0.0))))
        .collect();
    let y3: Vec<f64> = (0..n).map(|i| f64::from(x[[i, 0]] as u32 % 3)).collect();
    let yr: Vec<f64> = (0..n)
        .map(|i| f64::from(x[[i, 0]]).sin() + f64::from(x[[i, 3]]))
        .collect();
    let weights: Vec<f64> = (0..n).map(|i| 0.5 + (i % 4) as f64).collect();
    let with = |p: ForestParams| ForestParams {
        n_estimators: 4,
        categorical: vec![40, 6, 0, 0],
        ..p
    };
    let rare_below = |rows: usize, p: ForestParams| {
        let mut p = with(p);
        p.growth.min_category_samples = rows;
        p
    };
    let sporf = |p: ForestParams| ForestParams {
        projection: Projection::new(SparseSigned {
            density: Density::FeatureCombinations(1.5),
            scaling: WeightScale::None,
        }),
        ..p
    };
    type Case<'a> = (&'a str, ForestParams, &'a [f64], Option<&'a [f64]>);
    let cases: Vec<Case<'_>> = vec![
        ("gini", with(ForestParams::classification(2)), &y2, None),
        (
            "gini, weights",
            with(ForestParams::classification(2)),
            &y2,
            Some(&weights),
        ),
        (
            "three classes",
            with(ForestParams::classification(3)),
            &y3,
            None,
        ),
        ("regression", with(ForestParams::regression()), &yr, None),
        (
            "sporf",
            sporf(with(ForestParams::classification(2))),
            &y2,
            None,
        ),
        (
            "sporf regression",
            sporf(with(ForestParams::regression())),
            &yr,
            None,
        ),
        (
            "absolute error",
            with(ForestParams {
                criterion: Criterion::AbsoluteError,
                ..ForestParams::regression()
            }),
            &yr,
            None,
        ),
        (
            "hist splitter",
            with(ForestParams {
                splitter: Splitter::Histogram { max_bins: 8 },
                ..ForestParams::classification(2)
            }),
            &y2,
            None,
        ),
        // rare levels pooled from other row counts: every level alone, and from 5 rows
        (
            "gini, every level alone",
            rare_below(1, ForestParams::classification(2)),
            &y2,
            None,
        ),
        (
            "regression, levels of 5 rows",
            rare_below(5, ForestParams::regression()),
            &yr,
            None,
        ),
    ];
    let _held = probe::hold();
    for (name, params, y, w) in cases {
        probe::set(switch, false);
        let slow = Forest::fit(&params, x.view(), y, w).unwrap();
        probe::set(switch, true);
        let fast = Forest::fit(&params, x.view(), y, w).unwrap();
        let same = slow.to_bytes().unwrap() == fast.to_bytes().unwrap();
        assert!(same, "{name}: other trees from {what}");
    }
}

#[test]
fn level_statistics_by_row_grow_the_trees_of_the_sorted_rows() {
    // a column's level statistics summed row by row (no sort by level) are the sorted
    // rows' numbers, rare levels pooled included
    the_fast_path_grows_the_same_forests(
        crate::probe::Switch::LevelsByRow,
        "the level statistics by row",
    );
}

#[test]
fn a_single_terms_level_bins_without_values_grow_the_same_trees() {
    // a single categorical term's rows binned by level without writing its values
    the_fast_path_grows_the_same_forests(
        crate::probe::Switch::BinsWithoutValues,
        "the level bins without values",
    );
}

#[test]
fn a_single_term_at_too_few_rows_for_two_groups_grows_the_same_trees() {
    // a single categorical term at a node of at most min_category_samples rows found
    // constant without its statistics
    the_fast_path_grows_the_same_forests(
        crate::probe::Switch::FewRowsForLevels,
        "the term found constant at few rows",
    );
}

#[test]
fn a_column_of_one_level_scored_alone_grows_the_same_trees() {
    // a categorical column with one level at a node scored without its statistics
    the_fast_path_grows_the_same_forests(crate::probe::Switch::OneLevel, "one level scored alone");
}
