//! Every game against brute force (all `2^p` coalitions) on small problems, for axis,
//! sparse and dense oblique trees; local accuracy; the estimates against the exact values.

use super::estimate::{HybridGame, PathGame, TreeGame};
use super::*;
use crate::params::ForestParams;
use crate::projection::{Density, Gaussian, Projection, SparseSigned, WeightScale};
use ndarray::Array2;

fn data(n: usize, p: usize, seed: u64) -> (Array2<f32>, Vec<f64>, Vec<f64>) {
    let mut rng = crate::rng::Rng::from_seed(seed);
    let x = Array2::from_shape_fn((n, p), |_| (rng.unit() * 4.0 - 2.0) as f32);
    let reg: Vec<f64> = x
        .rows()
        .into_iter()
        .map(|r| f64::from(r[0] * r[1] + r[2] - 0.5 * r[3].abs()))
        .collect();
    let cls: Vec<f64> = reg.iter().map(|v| f64::from(u8::from(*v > 0.2))).collect();
    (x, reg, cls)
}

fn forests() -> Vec<(&'static str, Forest, Array2<f32>)> {
    let (x, reg, cls) = data(120, 5, 7);
    let mut out = Vec::new();
    let projections = [
        ("axis", Projection::new(crate::projection::AxisAligned)),
        (
            "sporf",
            Projection::new(SparseSigned {
                density: Density::FeatureCombinations(2.0),
                scaling: WeightScale::Robust,
            }),
        ),
        ("gaussian", Projection::new(Gaussian)),
    ];
    for (name, projection) in projections {
        for (task, y) in [("regression", &reg), ("classification", &cls)] {
            let mut params = if task == "regression" {
                ForestParams::regression()
            } else {
                ForestParams::classification(2)
            };
            params.projection = projection.clone();
            params.n_estimators = 3;
            params.max_depth = Some(6);
            params.seed = 3;
            let forest = Forest::fit(&params, x.view(), y, None).unwrap();
            out.push((name, forest, x.clone()));
        }
    }
    out
}

/// Shapley values of `v` over `p` players by the definition.
fn brute_force(p: usize, k: usize, v: &dyn Fn(&[bool]) -> Vec<f64>) -> Vec<f64> {
    let values: Vec<Vec<f64>> = (0..1usize << p)
        .map(|mask| v(&(0..p).map(|j| mask >> j & 1 == 1).collect::<Vec<_>>()))
        .collect();
    let fact = |m: usize| (1..=m).map(|i| i as f64).product::<f64>();
    let mut phi = vec![0.0; p * k];
    for j in 0..p {
        for mask in 0..1usize << p {
            if mask >> j & 1 == 1 {
                continue;
            }
            let s = (mask as u32).count_ones() as usize;
            let w = fact(s) * fact(p - s - 1) / fact(p);
            for c in 0..k {
                phi[j * k + c] += w * (values[mask | 1 << j][c] - values[mask][c]);
            }
        }
    }
    phi
}

fn forest_game<'a>(
    forest: &'a Forest,
    x: &[f32],
    background: Option<&Array2<f32>>,
) -> impl Fn(&[bool]) -> Vec<f64> + 'a {
    let (p, k) = (forest.n_features(), forest.n_outputs());
    let x: Vec<f64> = x.iter().map(|&v| f64::from(v)).collect();
    let background = background.map(|b| b.mapv(f64::from));
    move |in_s: &[bool]| {
        let trees: Vec<Prepared<'_>> = forest
            .trees()
            .iter()
            .map(|t| Prepared::new(t, Input::Direct(forest.descriptors()), p))
            .collect();
        let mut total = vec![0.0; k];
        let mut out = vec![0.0; k];
        let mut stack = Vec::new();
        for tree in &trees {
            match &background {
                None => {
                    PathGame { tree, x: &x }.value(in_s, &mut stack, &mut out);
                    total.iter_mut().zip(&out).for_each(|(t, o)| *t += o);
                }
                Some(bg) => {
                    for b in bg.rows() {
                        let b: Vec<f64> = b.to_vec();
                        HybridGame { tree, x: &x, b: &b }.value(in_s, &mut stack, &mut out);
                        let w = 1.0 / bg.nrows() as f64;
                        total.iter_mut().zip(&out).for_each(|(t, o)| *t += w * o);
                    }
                }
            }
        }
        total.iter().map(|t| t / trees.len() as f64).collect()
    }
}

#[test]
fn both_games_match_brute_force_for_every_family() {
    for (name, forest, x) in forests() {
        let (p, k) = (forest.n_features(), forest.n_outputs());
        let background = x.slice(ndarray::s![100..106, ..]).to_owned();
        let rows = x.slice(ndarray::s![0..6, ..]).to_owned();
        for bg in [None, Some(&background)] {
            let game = match bg {
                None => Game::PathDependent,
                Some(b) => Game::Interventional {
                    background: b.view(),
                },
            };
            let shap = forest.shap_values(rows.view(), game, 2).unwrap();
            assert_eq!(shap.n_estimated, 0, "{name}");
            for i in 0..rows.nrows() {
                let row = rows.row(i).to_vec();
                let want = brute_force(p, k, &forest_game(&forest, &row, bg));
                for j in 0..p {
                    for c in 0..k {
                        let got = shap.values[[i, j, c]];
                        assert!(
                            (got - want[j * k + c]).abs() < 1e-9,
                            "{name} bg={} row {i} feature {j} output {c}: {got} vs {}",
                            bg.is_some(),
                            want[j * k + c]
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn values_add_up_to_the_prediction_and_unused_features_get_zero() {
    for (name, forest, x) in forests() {
        let (p, k) = (forest.n_features(), forest.n_outputs());
        let pred = forest.predict(x.view(), 1).unwrap();
        let background = x.slice(ndarray::s![0..20, ..]).to_owned();
        for game in [
            Game::PathDependent,
            Game::Interventional {
                background: background.view(),
            },
        ] {
            let shap = forest.shap_values(x.view(), game, 1).unwrap();
            for i in 0..x.nrows() {
                for c in 0..k {
                    let sum: f64 = (0..p).map(|j| shap.values[[i, j, c]]).sum();
                    let want = pred[[i, c]] - shap.expected_value[c];
                    assert!((sum - want).abs() < 1e-9, "{name} row {i}: {sum} vs {want}");
                }
            }
        }
    }
    // feature 4 carries no signal: a forest restricted to features 0..3 never uses it
    let (x, reg, _) = data(200, 5, 1);
    let mut params = ForestParams::regression();
    params.n_estimators = 4;
    let mut x_masked = x.clone();
    x_masked.column_mut(4).fill(0.0); // constant: never split on
    let forest = Forest::fit(&params, x_masked.view(), &reg, None).unwrap();
    let shap = forest
        .shap_values(x.view(), Game::PathDependent, 1)
        .unwrap();
    assert!(shap
        .values
        .index_axis(ndarray::Axis(1), 4)
        .iter()
        .all(|&v| v == 0.0));
}

#[test]
fn estimates_are_unbiased_and_keep_local_accuracy() {
    for (name, forest, x) in forests() {
        let k = forest.n_outputs();
        let rows = x.slice(ndarray::s![0..4, ..]).to_owned();
        let background = x.slice(ndarray::s![50..53, ..]).to_owned();
        for game in [
            Game::PathDependent,
            Game::Interventional {
                background: background.view(),
            },
        ] {
            let exact = forest.shap_values(rows.view(), game, 1).unwrap();
            let tiny = Limits {
                max_terms: 1,
                max_node_features: 0,
                n_permutations: 400,
            };
            let est = forest.shap_values_with(rows.view(), game, tiny, 1).unwrap();
            if est.n_estimated == 0 {
                // an axis tree's path-dependent values are polynomial: never estimated
                assert!(
                    name == "axis" && matches!(game, Game::PathDependent),
                    "{name}"
                );
                assert_eq!(est.values, exact.values);
                continue;
            }
            let se = est.std_err.as_ref().expect("estimated values carry errors");
            for ((e, x), s) in est.values.iter().zip(exact.values.iter()).zip(se.iter()) {
                assert!(
                    (e - x).abs() <= 5.0 * s + 1e-9,
                    "{name}: {e} vs {x} (se {s})"
                );
            }
            for i in 0..rows.nrows() {
                for c in 0..k {
                    let a: f64 = est.values.index_axis(ndarray::Axis(0), i).column(c).sum();
                    let b: f64 = exact.values.index_axis(ndarray::Axis(0), i).column(c).sum();
                    assert!((a - b).abs() < 1e-9, "{name}: local accuracy {a} vs {b}");
                }
            }
        }
    }
}

#[test]
fn the_values_do_not_depend_on_threads_and_bad_input_is_refused() {
    let (_, forest, x) = forests().swap_remove(2);
    let one = forest
        .shap_values(x.view(), Game::PathDependent, 1)
        .unwrap();
    let two = forest
        .shap_values(x.view(), Game::PathDependent, 2)
        .unwrap();
    assert_eq!(one.values, two.values);
    let narrow = Array2::<f32>::zeros((2, 3));
    assert!(matches!(
        forest.shap_values(narrow.view(), Game::PathDependent, 1),
        Err(Error::FeatureMismatch { .. })
    ));
    let empty = Array2::<f32>::zeros((0, 5));
    let err = forest
        .shap_values(
            x.view(),
            Game::Interventional {
                background: empty.view(),
            },
            1,
        )
        .unwrap_err();
    assert!(err.to_string().contains("background"), "{err}");
    let mut inf = x.clone();
    inf[[0, 0]] = f32::INFINITY;
    assert!(forest
        .shap_values(inf.view(), Game::PathDependent, 1)
        .is_err());
}

/// shap's interaction values by the definition: for `i ≠ j`, the Shapley interaction index
/// halved; the diagonal, the Shapley value minus the row's interactions.
fn brute_force_interactions(p: usize, k: usize, v: &dyn Fn(&[bool]) -> Vec<f64>) -> Vec<f64> {
    let values: Vec<Vec<f64>> = (0..1usize << p)
        .map(|mask| v(&(0..p).map(|j| mask >> j & 1 == 1).collect::<Vec<_>>()))
        .collect();
    let fact = |m: usize| (1..=m).map(|i| i as f64).product::<f64>();
    let mut out = vec![0.0; p * p * k];
    for i in 0..p {
        for j in 0..p {
            if i == j {
                continue;
            }
            for mask in 0..1usize << p {
                if mask >> i & 1 == 1 || mask >> j & 1 == 1 {
                    continue;
                }
                let s = (mask as u32).count_ones() as usize;
                let w = fact(s) * fact(p - s - 2) / (2.0 * fact(p - 1));
                for c in 0..k {
                    let d = values[mask | 1 << i | 1 << j][c]
                        - values[mask | 1 << i][c]
                        - values[mask | 1 << j][c]
                        + values[mask][c];
                    out[(i * p + j) * k + c] += w * d;
                }
            }
        }
    }
    let phi = brute_force(p, k, v);
    for i in 0..p {
        for c in 0..k {
            let off: f64 = (0..p)
                .filter(|&j| j != i)
                .map(|j| out[(i * p + j) * k + c])
                .sum();
            out[(i * p + i) * k + c] = phi[i * k + c] - off;
        }
    }
    out
}

#[test]
fn interaction_values_match_brute_force_for_every_family() {
    for (name, forest, x) in forests() {
        let (p, k) = (forest.n_features(), forest.n_outputs());
        let rows = x.slice(ndarray::s![0..5, ..]).to_owned();
        let got = forest
            .shap_interaction_values(rows.view(), Limits::default(), 2)
            .unwrap();
        let shap = forest
            .shap_values(rows.view(), Game::PathDependent, 1)
            .unwrap();
        assert_eq!(got.expected_value, shap.expected_value);
        for i in 0..rows.nrows() {
            let row = rows.row(i).to_vec();
            let want = brute_force_interactions(p, k, &forest_game(&forest, &row, None));
            for a in 0..p {
                for b in 0..p {
                    for c in 0..k {
                        let g = got.values[[i, a, b, c]];
                        let w = want[(a * p + b) * k + c];
                        assert!(
                            (g - w).abs() < 1e-9,
                            "{name} row {i} ({a},{b},{c}): {g} vs {w}"
                        );
                    }
                }
            }
        }
    }
    let (_, forest, x) = forests().swap_remove(2);
    let err = forest
        .shap_interaction_values(
            x.view(),
            Limits {
                max_terms: 1,
                ..Limits::default()
            },
            1,
        )
        .unwrap_err();
    assert!(err.to_string().contains("max_terms"), "{err}");
}
