//! Which rows each tree grows on, and with what weight: the bootstrap sample (drawn from
//! the tree's own stream, so it can be recomputed from the seed), scikit-learn's
//! "balanced_subsample" class weights over it, and the sample weights.

use super::FitData;
use crate::data::Targets;
use crate::rng::{Purpose, Rng};

/// How often tree `t` of a forest seeded with `seed` draws each of `n` rows into its
/// bootstrap sample of `n_draws` rows. The one place the bootstrap is drawn: growing a tree
/// and [`Forest::in_bag_counts`] both call it, so the in-bag rows reported afterwards are
/// the ones the tree was grown on.
pub(super) fn bootstrap_counts(seed: u64, t: usize, n: usize, n_draws: usize) -> Vec<u32> {
    let mut counts = vec![0u32; n];
    let mut rng = Rng::for_tree(seed, t as u64, Purpose::Bootstrap);
    for _ in 0..n_draws {
        counts[rng.below(n)] += 1;
    }
    counts
}

/// "balanced_subsample": each row's weight is multiplied, for every output (one for a
/// single-output task, whose slots are its classes), by `total / (present classes × class weight)` of its class in the
/// bootstrap sample (`counts`), as scikit-learn's `compute_sample_weight` multiplies the
/// outputs' balanced weights. `slots` are the rows' k class slots (row-major) among
/// `n_slots`.
fn balance_classes(weights: &mut [f64], counts: &[u32], slots: &[u32], k: usize, n_slots: usize) {
    let mut per_slot = vec![0.0f64; n_slots];
    let mut owner = vec![usize::MAX; n_slots];
    for (i, &cnt) in counts.iter().enumerate() {
        for (o, &c) in slots[i * k..(i + 1) * k].iter().enumerate() {
            per_slot[c as usize] += cnt as f64;
            owner[c as usize] = o;
        }
    }
    // every row has one class per output: each output's bootstrap total is the same
    let total: f64 = counts.iter().map(|&c| c as f64).sum();
    let mut present = vec![0.0f64; k];
    for (c, &o) in owner.iter().enumerate() {
        if o < k && per_slot[c] > 0.0 {
            present[o] += 1.0;
        }
    }
    for (i, w) in weights.iter_mut().enumerate() {
        for (o, &c) in slots[i * k..(i + 1) * k].iter().enumerate() {
            let pc = per_slot[c as usize];
            *w *= if pc > 0.0 {
                total / (present[o] * pc)
            } else {
                0.0
            };
        }
    }
}

/// Tree `t`'s row weights (bootstrap counts × sample weights × "balanced_subsample" class
/// weights) and, when it draws a bootstrap sample, its counts. A bootstrap sample whose
/// drawn rows all have zero weight (sparse sample weights) would grow an empty tree: such a
/// tree sees every row with its own weight instead.
pub(super) fn tree_sample(data: &FitData<'_>, t: usize) -> (Vec<f64>, Option<Vec<u32>>) {
    let mut weights = data.sample_weight.clone();
    if !data.params.bootstrap {
        return (weights, None);
    }
    let n = data.x.n_samples;
    let counts = bootstrap_counts(data.params.seed, t, n, data.cfg.n_draws);
    if data.params.class_weight_subsample {
        let n_slots = data.cfg.n_outputs;
        match &data.y {
            Targets::MultiClasses { slots, k } => {
                balance_classes(&mut weights, &counts, slots, *k, n_slots)
            }
            Targets::Classes(classes) => {
                balance_classes(&mut weights, &counts, classes, 1, n_slots)
            }
            Targets::Values(_) | Targets::MultiValues { .. } => {}
        }
    }
    for (w, &c) in weights.iter_mut().zip(&counts) {
        *w *= c as f64;
    }
    if weights.iter().all(|&w| w == 0.0) {
        weights.clone_from(&data.sample_weight);
    }
    (weights, Some(counts))
}
