//! Minimal cost-complexity pruning (Breiman et al., *Classification and Regression Trees*,
//! 1984, ch. 3), scikit-learn's `ccp_alpha`.
//!
//! A node's risk is `R(t) = impurity(t) · w(t) / w(root)` with `w` the weighted number of
//! in-bag rows, and a subtree `T` costs `R_α(T) = Σ_{leaves l of T} R(l) + α·|leaves(T)|`.
//! The pruned tree is the smallest subtree of the grown one that minimises `R_α` — the tree
//! the weakest-link sequence reaches at `α`. One bottom-up pass finds it: a node becomes a
//! leaf when `R(t) + α` is at most the best cost of its two subtrees (a tie collapses, which
//! gives the smallest minimiser). Invariant of the result: the same node order (children
//! after their parent, right child = left child + 1), leaf values in node order, and a
//! collapsed node's value is the weighted mean of its children's (its own distribution).

use crate::tree::{Tree, LEAF};

/// The smallest subtree of `tree` minimising cost-complexity at `alpha`; `tree` itself
/// when `alpha` is 0 (or not positive), as scikit-learn skips pruning then.
pub fn prune_cost_complexity(tree: Tree, alpha: f64) -> Tree {
    let n = tree.n_nodes();
    let root_w = tree.weighted_n_node_samples.first().copied().unwrap_or(0.0);
    if alpha.is_nan() || alpha <= 0.0 || n <= 1 || root_w <= 0.0 {
        return tree;
    }
    let risk = |i: usize| tree.impurity[i] * tree.weighted_n_node_samples[i] / root_w;
    // best[i]: the least cost over the subtrees rooted at i (children come after parents)
    let mut best = vec![0.0f64; n];
    let mut collapse = vec![false; n];
    for i in (0..n).rev() {
        let own = risk(i) + alpha;
        if tree.is_leaf(i) {
            best[i] = own;
            continue;
        }
        let below = best[tree.left[i] as usize] + best[tree.right[i] as usize];
        collapse[i] = own <= below;
        best[i] = own.min(below);
    }
    // nodes still reached from the root, and which of them are leaves now
    let mut keep = vec![false; n];
    keep[0] = true;
    for i in 0..n {
        if keep[i] && !tree.is_leaf(i) && !collapse[i] {
            keep[tree.left[i] as usize] = true;
            keep[tree.right[i] as usize] = true;
        }
    }
    let mut new_id = vec![LEAF; n];
    for (next, i) in (0..n).filter(|&i| keep[i]).enumerate() {
        new_id[i] = next as u32;
    }
    let k = tree.n_outputs;
    let values = tree.node_values();
    let mut out = Tree {
        n_outputs: k,
        ..Tree::default()
    };
    out.proj_ptr.push(0);
    let mut leaf_rows = 0u32;
    for i in (0..n).filter(|&i| keep[i]) {
        let leaf = tree.is_leaf(i) || collapse[i];
        if leaf {
            out.left.push(LEAF);
            out.right.push(leaf_rows);
            out.threshold.push(0.0);
            out.value.extend_from_slice(&values[i * k..(i + 1) * k]);
            leaf_rows += 1;
        } else {
            out.left.push(new_id[tree.left[i] as usize]);
            out.right.push(new_id[tree.right[i] as usize]);
            out.threshold.push(tree.threshold[i]);
            let (a, b) = (tree.proj_ptr[i] as usize, tree.proj_ptr[i + 1] as usize);
            out.proj_idx.extend_from_slice(&tree.proj_idx[a..b]);
            // patch forests store descriptors only, without weights
            if !tree.proj_w.is_empty() {
                out.proj_w.extend_from_slice(&tree.proj_w[a..b]);
            }
        }
        if !tree.level_maps.node_ptr.is_empty() {
            // a kept split keeps its categorical terms' level maps
            let (a, b) = if leaf {
                (0, 0)
            } else {
                let ptr = &tree.level_maps.node_ptr;
                (ptr[i] as usize, ptr[i + 1] as usize)
            };
            let maps = &mut out.level_maps;
            if maps.node_ptr.is_empty() {
                maps.node_ptr.push(0);
            }
            maps.extend_from(&tree.level_maps, (a, b));
            maps.node_ptr.push(maps.n_maps() as u32);
        }
        out.proj_ptr.push(out.proj_idx.len() as u32);
        out.impurity.push(tree.impurity[i]);
        out.n_node_samples.push(tree.n_node_samples[i]);
        out.weighted_n_node_samples
            .push(tree.weighted_n_node_samples[i]);
        out.depth.push(tree.depth[i]);
    }
    // a kept split keeps its children (and their weights), so its missing-value side too
    out.missing_flip = tree
        .missing_flip
        .iter()
        .filter(|&&i| keep[i as usize] && !collapse[i as usize])
        .map(|&i| new_id[i as usize])
        .collect();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forest::Forest;
    use crate::params::{ForestParams, MaxFeatures};
    use crate::rng::Rng;
    use ndarray::Array2;

    fn grown(seed: u64, regression: bool) -> Tree {
        let mut rng = Rng::from_seed(seed);
        let x = Array2::from_shape_fn((120, 3), |_| rng.unit() as f32);
        let y: Vec<f64> = x
            .rows()
            .into_iter()
            .map(|r| {
                let noisy = (r[0] + 0.3 * r[1] > 0.6) as u8 as f64;
                if regression {
                    noisy + r[2] as f64
                } else {
                    noisy
                }
            })
            .collect();
        let mut p = if regression {
            ForestParams::regression()
        } else {
            ForestParams::classification(2)
        };
        p.n_estimators = 1;
        p.max_features = MaxFeatures::All;
        p.seed = seed;
        let forest = Forest::fit(&p, x.view(), &y, None).unwrap();
        forest.trees()[0].clone()
    }

    /// R_α of the subtree that keeps the inner nodes in `inner` (a set closed under parents).
    fn cost(tree: &Tree, inner: &[bool], alpha: f64) -> (f64, usize) {
        let root_w = tree.weighted_n_node_samples[0];
        let (mut total, mut leaves) = (0.0, 0);
        let mut stack = vec![0usize];
        while let Some(i) = stack.pop() {
            if tree.is_leaf(i) || !inner[i] {
                total += tree.impurity[i] * tree.weighted_n_node_samples[i] / root_w + alpha;
                leaves += 1;
            } else {
                stack.push(tree.left[i] as usize);
                stack.push(tree.right[i] as usize);
            }
        }
        (total, leaves)
    }

    #[test]
    fn pruned_tree_is_the_smallest_cost_complexity_minimiser() {
        for (seed, regression) in [(1, false), (2, false), (3, true)] {
            let tree = grown(seed, regression);
            // collapse candidates: every inner node; search all prunings by random
            // subsets closed under parents, and check none beats the pruned tree
            let n = tree.n_nodes();
            for alpha in [1e-4, 2e-3, 1e-2, 5e-2] {
                let pruned = prune_cost_complexity(tree.clone(), alpha);
                let root_w = pruned.weighted_n_node_samples[0];
                let pruned_cost: f64 = (0..pruned.n_nodes())
                    .filter(|&i| pruned.is_leaf(i))
                    .map(|i| pruned.impurity[i] * pruned.weighted_n_node_samples[i] / root_w)
                    .sum::<f64>()
                    + alpha * pruned.n_leaves() as f64;
                let mut rng = Rng::from_seed(seed + 100);
                for _ in 0..300 {
                    let mut inner = vec![false; n];
                    inner[0] = true;
                    for i in 0..n {
                        if inner[i] && !tree.is_leaf(i) {
                            for c in [tree.left[i] as usize, tree.right[i] as usize] {
                                inner[c] = rng.unit() < 0.9;
                            }
                        }
                    }
                    let (c, leaves) = cost(&tree, &inner, alpha);
                    assert!(
                        c >= pruned_cost - 1e-12,
                        "a random pruning costs {c} < {pruned_cost} at alpha {alpha}"
                    );
                    if (c - pruned_cost).abs() <= 1e-12 {
                        assert!(leaves >= pruned.n_leaves(), "the smallest minimiser");
                    }
                }
                // the unpruned tree is one candidate as well
                let all = vec![true; n];
                assert!(cost(&tree, &all, alpha).0 >= pruned_cost - 1e-12);
            }
        }
    }

    #[test]
    fn pruning_nests_and_keeps_the_tree_valid() {
        let tree = grown(5, false);
        assert_eq!(prune_cost_complexity(tree.clone(), 0.0), tree);
        let mut last = tree.n_leaves();
        for alpha in [1e-5, 1e-3, 1e-2, 3e-2, 0.1, 1.0] {
            let pruned = prune_cost_complexity(tree.clone(), alpha);
            pruned.validate(3, None).unwrap();
            assert!(pruned.n_leaves() <= last, "more pruning never adds leaves");
            last = pruned.n_leaves();
            // pruning twice at the same alpha changes nothing (warm starts rely on it)
            assert_eq!(prune_cost_complexity(pruned.clone(), alpha), pruned);
            // the root's value is the class distribution of the whole in-bag sample
            let v = pruned.node_values();
            let full = tree.node_values();
            assert!((v[0] - full[0]).abs() < 1e-12 && (v[1] - full[1]).abs() < 1e-12);
        }
        assert_eq!(last, 1, "a large alpha leaves only the root");
    }
}
