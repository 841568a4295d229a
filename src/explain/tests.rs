//! Every game against brute force (all `2^p` coalitions) on small problems, for axis,
//! sparse and dense oblique trees; local accuracy; the estimates against the exact values.

use super::estimate::{HybridGame, PathGame, TreeGame};
use super::*;
use crate::params::ForestParams;
use crate::projection::{Density, Gaussian, Projection, SparseSigned, WeightScale};
use crate::tree::LEAF;
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

/// A one-path tree whose inner nodes are `splits` (features, weights, threshold; the path
/// goes left, to a child of `fracs[k]` of the node's weight, the sibling is a leaf of
/// value 0) ending in a leaf of value 1, as the only tree of a regression forest on `p`
/// features.
fn one_path_forest(p: usize, splits: &[(Vec<u32>, f32, f64)]) -> Forest {
    let (x, reg, _) = data(40, p, 5);
    let mut params = ForestParams::regression();
    params.projection = Projection::new(SparseSigned {
        density: Density::FeatureCombinations(2.0),
        scaling: WeightScale::Robust,
    });
    params.n_estimators = 1;
    let mut forest = Forest::fit(&params, x.view(), &reg, None).unwrap();
    let n_nodes = 2 * splits.len() + 1;
    let mut tree = forest.trees[0].clone();
    tree.left = vec![LEAF; n_nodes];
    tree.right = vec![0; n_nodes];
    tree.threshold = vec![0.0; n_nodes];
    tree.proj_ptr = vec![0];
    (tree.proj_idx, tree.proj_w) = (Vec::new(), Vec::new());
    tree.impurity = vec![0.0; n_nodes];
    tree.n_node_samples = vec![1; n_nodes];
    tree.weighted_n_node_samples = vec![1.0; n_nodes];
    tree.depth = vec![0; n_nodes];
    // path node k is node 2k - 1 (the root 0), its sibling leaf 2k + 2; the last leaf 2k + 1
    let path = |k: usize| if k == 0 { 0 } else { 2 * k - 1 };
    for (k, (_, threshold, frac)) in splits.iter().enumerate() {
        let node = path(k);
        tree.left[node] = (2 * k + 1) as u32;
        tree.right[node] = (2 * k + 2) as u32;
        tree.threshold[node] = *threshold;
        let w = tree.weighted_n_node_samples[node];
        tree.weighted_n_node_samples[2 * k + 1] = w * frac;
        tree.weighted_n_node_samples[2 * k + 2] = w * (1.0 - frac);
        tree.depth[2 * k + 1] = k as u32 + 1;
        tree.depth[2 * k + 2] = k as u32 + 1;
    }
    let mut leaf_values = Vec::new();
    for node in 0..n_nodes {
        if let Some(k) = (0..splits.len()).find(|&k| path(k) == node) {
            tree.proj_idx.extend(&splits[k].0);
            tree.proj_w
                .extend(std::iter::repeat_n(1.0, splits[k].0.len()));
        } else {
            tree.right[node] = leaf_values.len() as u32;
            leaf_values.push(f64::from(u8::from(node == n_nodes - 2)));
        }
        tree.proj_ptr.push(tree.proj_idx.len() as u32);
    }
    tree.value = leaf_values;
    forest.trees = vec![tree];
    forest
}

/// Why no algorithm polynomial in the path can give the oblique path-dependent game's
/// exact values (unless P = #P), shown on this implementation: they count a graph's
/// independent sets of every size, a #P-complete problem (see `docs/explain.md`).
///
/// For a graph on `n` vertices, features `0..n` are its vertices and feature `n` a vertex
/// `*` joined to all of them. The row's value 1 everywhere sends it off the path at each
/// two-feature split `x_u + x_v <= 0` of an edge `uv` (covers 1/2), and along it at each
/// axis split `x_v <= 1` (covers `t`). So `v(S) = 2^-|E'| [S independent] t^|V \ S|`,
/// and `-2^|E'| φ_*(t) = Σ_a I_a w_a t^(n-a)` with `I_a` the independent sets of size `a`
/// and `w_a = a!(n-a)!/(n+1)!`: `n` values of `t` give every `I_a`.
#[test]
fn the_oblique_path_games_values_count_independent_sets() {
    let n = 6;
    let edges = [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 0), (0, 3)];
    let star = n as u32;
    let independent = |s: &[bool]| edges.iter().all(|&(u, v)| !(s[u] && s[v]));
    let mut want = vec![0u64; n + 1];
    for mask in 0..1usize << n {
        let s: Vec<bool> = (0..n).map(|j| mask >> j & 1 == 1).collect();
        if independent(&s) {
            want[mask.count_ones() as usize] += 1;
        }
    }
    let mut splits: Vec<(Vec<u32>, f32, f64)> = edges
        .iter()
        .map(|&(u, v)| (vec![u as u32, v as u32], 0.0, 0.5))
        .chain((0..star).map(|v| (vec![v, star], 0.0, 0.5)))
        .collect();
    let n_edges = splits.len() as i32;
    let fact = |m: usize| (1..=m).map(|i| i as f64).product::<f64>();
    let limits = Limits {
        max_terms: 1 << 20,
        ..Limits::default()
    };
    let row = Array2::<f32>::ones((1, n + 1));
    let ts: Vec<f64> = (0..n).map(|k| (k + 1) as f64 / (n + 2) as f64).collect();
    let mut system = Vec::new();
    for (k, &t) in ts.iter().enumerate() {
        splits.truncate(n_edges as usize);
        splits.extend((0..star).map(|v| (vec![v], 1.0, t)));
        let forest = one_path_forest(n + 1, &splits);
        let shap = forest
            .shap_values_with(row.view(), Game::PathDependent, limits, 1)
            .unwrap();
        assert_eq!(shap.n_estimated, 0);
        if k == 0 {
            // the tree plays the game above, for every feature
            let game = |s: &[bool]| {
                let edge_ok = independent(s) && !(s[n] && s[..n].iter().any(|&b| b));
                let off = s[..n].iter().filter(|&&b| !b).count() as i32;
                vec![f64::from(u8::from(edge_ok)) * 0.5f64.powi(n_edges) * t.powi(off)]
            };
            let brute = brute_force(n + 1, 1, &game);
            for (j, b) in brute.iter().enumerate() {
                let got = shap.values[[0, j, 0]];
                assert!(
                    (got - b).abs() < 1e-12 * b.abs().max(1e-3),
                    "{j}: {got} vs {b}"
                );
            }
        }
        let p_t = -shap.values[[0, n, 0]] * 2f64.powi(n_edges);
        system.push((
            (1..=n).map(|a| t.powi((n - a) as i32)).collect::<Vec<_>>(),
            p_t,
        ));
    }
    // solve the Vandermonde system for the coefficients I_a w_a (Gaussian elimination)
    for c in 0..n {
        let pivot = (c..n)
            .max_by(|&a, &b| system[a].0[c].abs().total_cmp(&system[b].0[c].abs()))
            .unwrap();
        system.swap(c, pivot);
        for r in 0..n {
            if r != c {
                let f = system[r].0[c] / system[c].0[c];
                let (row_c, rhs_c) = (system[c].0.clone(), system[c].1);
                system[r]
                    .0
                    .iter_mut()
                    .zip(&row_c)
                    .for_each(|(x, y)| *x -= f * y);
                system[r].1 -= f * rhs_c;
            }
        }
    }
    for a in 1..=n {
        let w = fact(a) * fact(n - a) / fact(n + 1);
        let count = system[a - 1].1 / system[a - 1].0[a - 1] / w;
        assert!(
            (count - want[a] as f64).abs() < 1e-6,
            "size {a}: {count} vs {}",
            want[a]
        );
    }
    assert_eq!(&want[1..4], &[6, 8, 2]); // a check of the brute force itself
}
