//! Which rows each tree grows on, and with what weight: the bootstrap sample, or the
//! subsample drawn without replacement of a forest without targets (each drawn from the
//! tree's own stream, so it can be recomputed from the seed), scikit-learn's
//! "balanced_subsample" class weights over it, and the sample weights; which features a
//! random-subspace tree may use; and, for an honest forest, which of the tree's rows grow
//! its structure and which fill its leaves.
//!
//! Honest trees (Wager & Athey 2018): the rows a tree draws (bootstrap count > 0, or every
//! row without bootstrap) are split at random, from the tree's own `Honest` stream, into a
//! structure part, which alone the split search sees, and an honest part of
//! `round(honest_fraction × drawn)` rows (at least one of each part when two rows or more
//! are drawn), which fills the leaves once the tree is grown. Both keep their weights
//! (bootstrap count × sample weight × class weight). The split depends on the seed, the
//! tree and the number of rows only, so a tree's honest rows can be recomputed
//! ([`honest_mask`]).

use super::FitData;
use crate::alloc::with_capacity_huge;
use crate::data::Targets;
use crate::rng::{Purpose, Rng};

/// How often tree `t` of a forest seeded with `seed` draws each of `n` rows into its
/// bootstrap sample of `n_draws` rows. The one place the bootstrap is drawn: growing a tree
/// and [`super::Forest::in_bag_counts`] both call it, so the in-bag rows reported afterwards are
/// the ones the tree was grown on.
pub(super) fn bootstrap_counts(seed: u64, t: usize, n: usize, n_draws: usize) -> Vec<u32> {
    let mut counts = vec![0u32; n];
    let mut rng = Rng::for_tree(seed, t as u64, Purpose::Bootstrap);
    for _ in 0..n_draws {
        counts[rng.below(n)] += 1;
    }
    counts
}

/// How often tree `t` of a forest seeded with `seed` draws each of `n` rows when it draws
/// `k` distinct rows (a subsample without replacement: counts of 0 or 1). Floyd's
/// algorithm: `k` draws from the tree's bootstrap stream, whatever `n`.
pub(super) fn subsample_counts(seed: u64, t: usize, n: usize, k: usize) -> Vec<u32> {
    let mut counts = vec![0u32; n];
    let mut rng = Rng::for_tree(seed, t as u64, Purpose::Bootstrap);
    for j in n - k.min(n)..n {
        let r = rng.below(j + 1);
        // r was drawn before: take j, which no earlier step could draw
        let pick = if counts[r] == 1 { j } else { r };
        counts[pick] = 1;
    }
    counts
}

/// The rows tree `t` draws, as counts per row: its bootstrap sample or its subsample;
/// `None` when it grows on every row once. The one place both are chosen (growing a tree,
/// and [`crate::Forest::in_bag_counts`] reporting its rows afterwards).
pub(crate) fn draw_counts(
    params: &crate::params::ForestParams,
    cfg: &crate::params::TreeConfig,
    t: usize,
    n: usize,
) -> Option<Vec<u32>> {
    match cfg.subsample {
        Some(k) => Some(subsample_counts(params.seed, t, n, k)),
        None if params.bootstrap => Some(bootstrap_counts(params.seed, t, n, cfg.n_draws)),
        None => None,
    }
}

/// The `k` features (ascending) tree `t` of a random-subspace forest may use, drawn
/// without replacement from the tree's own stream.
pub(super) fn tree_columns(seed: u64, t: usize, n_features: usize, k: usize) -> Vec<u32> {
    let mut rng = Rng::for_tree(seed, t as u64, Purpose::Features);
    let mut columns = Vec::with_capacity(k);
    rng.distinct(
        n_features,
        k,
        &mut crate::rng::IndexPool::default(),
        &mut columns,
    );
    columns.sort_unstable();
    columns
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

/// Which of the `drawn` rows (`counts[i] > 0`, or every row when `counts` is `None`) of
/// tree `t` of a forest seeded `seed` are honest: a partial Fisher-Yates shuffle of the
/// drawn rows, in ascending order, from the tree's `Honest` stream picks
/// `round(fraction × drawn)` of them, clamped to leave at least one row in each part when
/// two or more are drawn (none when fewer). The one place the honest split is drawn:
/// growing a tree and [`super::Forest::honest_counts`] both call it.
pub(super) fn honest_mask(
    seed: u64,
    t: usize,
    n: usize,
    counts: Option<&[u32]>,
    fraction: f64,
) -> Vec<bool> {
    let mut drawn: Vec<u32> = match counts {
        Some(c) => (0..n as u32).filter(|&i| c[i as usize] > 0).collect(),
        None => (0..n as u32).collect(),
    };
    let m = drawn.len();
    let n_honest = if m < 2 {
        0
    } else {
        ((fraction * m as f64).round() as usize).clamp(1, m - 1)
    };
    let mut rng = Rng::for_tree(seed, t as u64, Purpose::Honest);
    let mut mask = vec![false; n];
    for i in 0..n_honest {
        let j = i + rng.below(m - i);
        drawn.swap(i, j);
        mask[drawn[i] as usize] = true;
    }
    mask
}

/// The rows one tree sees: their weights in the tree, its bootstrap counts, and, for an
/// honest tree, which rows fill its leaves instead of growing it.
pub(super) struct TreeSample {
    /// Bootstrap count × sample weight × "balanced_subsample" class weight of every row;
    /// empty when `compact` holds them.
    pub(super) weights: Vec<f64>,
    /// The weights as a byte a row ([`crate::tree::RowWeights::Counts`]), where they are
    /// whole counts below 256 of rows without sample or class weights, in a tree that is
    /// not honest and keeps no leaf rows (nothing but the split search reads them).
    pub(super) compact: Option<Vec<u8>>,
    /// Bootstrap or subsample counts, when the tree draws its rows ([`draw_counts`]).
    pub(super) counts: Option<Vec<u32>>,
    /// The tree sees every row once although it drew a sample (the fallback of
    /// [`tree_sample`]): its counts are then no multiplicity.
    fallback: bool,
    /// Honest trees: the rows that fill the leaves (the split search gives them no weight).
    pub(super) honest: Option<Vec<bool>>,
}

impl TreeSample {
    /// How often each row counts in its weight: the bootstrap counts, unless the tree
    /// sees every row once (no bootstrap, or the fallback of [`tree_sample`]).
    pub(super) fn multiplicity(&self) -> Option<&[u32]> {
        self.counts.as_deref().filter(|_| !self.fallback)
    }

    /// The rows the tree did not draw (count 0), when it draws a sample.
    pub(super) fn out_of_bag(&self) -> Option<Vec<u64>> {
        Some(super::oob::zero_bits(self.counts.as_ref()?))
    }

    /// The weights the split search sees: the structure part's (every row's weight when
    /// the tree is not honest).
    pub(super) fn structure_weights(&self) -> std::borrow::Cow<'_, [f64]> {
        match &self.honest {
            None => std::borrow::Cow::Borrowed(&self.weights),
            Some(h) => self.part(h, false).into(),
        }
    }

    /// The weights of the rows that fill the leaves: the honest part's, or every row's.
    pub(super) fn fill_weights(&self) -> std::borrow::Cow<'_, [f64]> {
        match &self.honest {
            None => std::borrow::Cow::Borrowed(&self.weights),
            Some(h) => self.part(h, true).into(),
        }
    }

    fn part(&self, honest: &[bool], side: bool) -> Vec<f64> {
        self.weights
            .iter()
            .zip(honest)
            .map(|(&w, &h)| if h == side { w } else { 0.0 })
            .collect()
    }
}

/// Tree `t`'s rows ([`TreeSample`]): weights (bootstrap or subsample counts × sample
/// weights × "balanced_subsample" class weights), its counts when it draws rows
/// ([`draw_counts`]), and the honest split when the
/// forest is honest. A bootstrap sample whose drawn rows all have zero weight (sparse
/// sample weights) would grow an empty tree: such a tree sees every row with its own
/// weight instead.
pub(super) fn tree_sample(data: &FitData<'_>, t: usize) -> TreeSample {
    let fraction = data.cfg.honest_fraction;
    let plain = data.sample_weight.is_none()
        && !data.params.class_weight_subsample
        && fraction == 0.0
        && !data.params.store_leaf_values;
    if plain {
        if let Some(counts) = draw_counts(data.params, &data.cfg, t, data.x.n_samples) {
            if counts.iter().all(|&c| c <= u32::from(u8::MAX)) {
                return TreeSample {
                    weights: Vec::new(),
                    compact: Some(counts.iter().map(|&c| c as u8).collect()),
                    counts: Some(counts),
                    fallback: false,
                    honest: None,
                };
            }
        }
    }
    let (weights, counts, fallback) = weighted_sample(data, t);
    let honest = (fraction > 0.0).then(|| {
        let n = data.x.n_samples;
        honest_mask(data.params.seed, t, n, counts.as_deref(), fraction)
    });
    TreeSample {
        weights,
        compact: None,
        counts,
        fallback,
        honest,
    }
}

/// The weights of [`tree_sample`], its bootstrap counts, and whether the fallback to every
/// row applied.
fn weighted_sample(data: &FitData<'_>, t: usize) -> (Vec<f64>, Option<Vec<u32>>, bool) {
    let n = data.x.n_samples;
    // the fit's sample weights, or ones: the vector of ones exists only per tree
    // (read in sorted-value order by the split search: huge pages, `with_capacity_huge`)
    let given = || {
        let mut w = with_capacity_huge(n);
        match data.sample_weight.as_deref() {
            Some(sw) => w.extend_from_slice(sw),
            None => w.resize(n, 1.0),
        }
        w
    };
    let mut weights = given();
    let Some(counts) = draw_counts(data.params, &data.cfg, t, n) else {
        return (weights, None, false);
    };
    if data.params.class_weight_subsample {
        let n_slots = data.cfg.n_outputs;
        match &data.y {
            Targets::MultiClasses { slots, k } => {
                balance_classes(&mut weights, &counts, slots, *k, n_slots)
            }
            Targets::Classes(classes) => {
                balance_classes(&mut weights, &counts, classes, 1, n_slots)
            }
            Targets::Values(_) | Targets::MultiValues { .. } | Targets::Unlabelled => {}
        }
    }
    for (w, &c) in weights.iter_mut().zip(&counts) {
        *w *= c as f64;
    }
    let fallback = weights.iter().all(|&w| w == 0.0);
    if fallback {
        weights = given();
    }
    (weights, Some(counts), fallback)
}
