//! Tests of candidate screening at large nodes (`ForestParams::candidate_samples`).

use super::*;
use crate::params::{MaxFeatures, SampleCount};
use crate::projection::{Density, Projection, SparseSigned, WeightScale};
use crate::rng::Rng;
use ndarray::Array2;

/// n rows of p uniform features; y = 1[x0 + x1 > 0] with 10% of the labels flipped.
fn data(n: usize, p: usize, seed: u64) -> (Array2<f32>, Vec<f64>) {
    let mut rng = Rng::from_seed(seed);
    let x = super::tests::uniform_x(&mut rng, n, p);
    let y = x
        .rows()
        .into_iter()
        .map(|r| {
            let label = r[0] + r[1] > 0.0;
            f64::from(u8::from(label != (rng.below(10) == 0)))
        })
        .collect();
    (x, y)
}

fn sporf(candidate_samples: Option<usize>) -> ForestParams {
    let mut p = ForestParams::classification(2);
    p.projection = Projection::new(SparseSigned {
        density: Density::FeatureCombinations(1.5),
        scaling: WeightScale::None,
    });
    p.max_features = MaxFeatures::Fraction(2.0);
    p.n_estimators = 8;
    p.min_samples_leaf = SampleCount::Count(5);
    p.seed = 5;
    p.growth.candidate_samples = candidate_samples;
    p
}

/// The share of rows whose more probable class (predict's class-1 column > 0.5) is y.
fn accuracy(f: &Forest, x: &Array2<f32>, y: &[f64]) -> f64 {
    let proba = f.predict(x.view(), 1).unwrap();
    let right = proba
        .rows()
        .into_iter()
        .zip(y)
        .filter(|(p, &y)| (p[1] > 0.5) == (y == 1.0))
        .count();
    right as f64 / y.len() as f64
}

#[test]
fn screening_applies_only_to_nodes_of_more_than_twice_its_rows() {
    // 600 rows: no node has more than 2 x 300 in-bag rows, so the trees are the exact ones
    let (x, y) = data(600, 6, 1);
    let exact = Forest::fit(&sporf(None), x.view(), &y, None).unwrap();
    let wide = Forest::fit(&sporf(Some(300)), x.view(), &y, None).unwrap();
    assert_eq!(exact.to_bytes().unwrap(), wide.to_bytes().unwrap());
    // and 64 rows screen the root and the large nodes: other trees
    let screened = Forest::fit(&sporf(Some(64)), x.view(), &y, None).unwrap();
    assert_ne!(exact.to_bytes().unwrap(), screened.to_bytes().unwrap());
}

#[test]
fn screened_forests_do_not_depend_on_thread_count_and_keep_their_accuracy() {
    let (x, y) = data(6000, 8, 2);
    let (xt, yt) = data(4000, 8, 3);
    let mut p = sporf(Some(128));
    let one = Forest::fit(&p, x.view(), &y, None).unwrap();
    p.growth.n_jobs = 3;
    let three = Forest::fit(&p, x.view(), &y, None).unwrap();
    assert_eq!(one.to_bytes().unwrap(), three.to_bytes().unwrap());
    let exact = Forest::fit(&sporf(None), x.view(), &y, None).unwrap();
    let (a_screened, a_exact) = (accuracy(&one, &xt, &yt), accuracy(&exact, &xt, &yt));
    // Bayes accuracy 0.9; a good oblique split on x0 + x1 gets near it either way
    assert!(a_exact > 0.85, "{a_exact}");
    assert!(a_screened > a_exact - 0.02, "{a_screened} vs {a_exact}");
}

#[test]
fn screening_works_with_histograms_missing_values_and_regression() {
    let (mut x, y) = data(3000, 5, 4);
    for i in (0..3000).step_by(7) {
        x[[i, 2]] = f32::NAN;
    }
    let mut p = sporf(Some(100));
    p.splitter = crate::params::Splitter::Histogram { max_bins: 64 };
    let f = Forest::fit(&p, x.view(), &y, None).unwrap();
    assert!(accuracy(&f, &x, &y) > 0.85);
    let mut r = sporf(Some(100));
    r.task = crate::params::Task::Regression;
    r.criterion = crate::params::Criterion::SquaredError;
    let f = Forest::fit(&r, x.view(), &y, None).unwrap();
    assert!(f.trees.iter().all(|t| t.n_nodes() > 50));
}

#[test]
fn candidate_samples_below_two_is_refused() {
    let (x, y) = data(100, 3, 5);
    let err = Forest::fit(&sporf(Some(1)), x.view(), &y, None).unwrap_err();
    assert!(err.to_string().contains("candidate_samples"), "{err}");
}
