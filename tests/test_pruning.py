"""Minimal cost-complexity pruning (ccp_alpha), against scikit-learn's trees."""

import pickle

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes, load_wine
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

import obliqueforest as of


def _leaf_sizes(n_node_samples, children_left):
    return sorted(n_node_samples[children_left == -1].tolist())


@pytest.mark.parametrize(
    "load, sk_tree, ours",
    [
        (load_breast_cancer, DecisionTreeClassifier, of.RandomForestClassifier),
        (load_wine, DecisionTreeClassifier, of.RandomForestClassifier),
        (load_diabetes, DecisionTreeRegressor, of.RandomForestRegressor),
    ],
    ids=["breast_cancer", "wine", "diabetes"],
)
def test_pruned_trees_match_scikit_learns_along_the_pruning_path(load, sk_tree, ours):
    X, y = load(return_X_y=True)
    X = X.astype(np.float32)
    if sk_tree is DecisionTreeRegressor:
        X, y = X[:150], y[:150]  # a smaller tree keeps the path short
    alphas = sk_tree(random_state=0).cost_complexity_pruning_path(X, y).ccp_alphas
    # the unpruned trees are the same tree (one tree, every feature, no bootstrap)
    checked = 0
    for alpha in alphas[1 : -1 : max(1, len(alphas) // 8)]:
        # halfway between two breakpoints: no float ties with the path's own values
        theirs = sk_tree(random_state=0, ccp_alpha=alpha * 1.0000001).fit(X, y)
        forest = ours(1, bootstrap=False, max_features=None, ccp_alpha=alpha * 1.0000001)
        tree = forest.set_params(random_state=0).fit(X, y)[0]
        assert tree.get_n_leaves() == theirs.get_n_leaves(), alpha
        assert _leaf_sizes(tree.tree_.n_node_samples, tree.tree_.children_left) == _leaf_sizes(
            theirs.tree_.n_node_samples, theirs.tree_.children_left
        )
        checked += 1
    assert checked >= 3


def test_ccp_alpha_zero_is_no_pruning_and_larger_alpha_prunes_more():
    X, y = load_breast_cancer(return_X_y=True)
    plain = of.SPORFClassifier(n_estimators=5, random_state=0).fit(X, y)
    zero = of.SPORFClassifier(n_estimators=5, ccp_alpha=0.0, random_state=0).fit(X, y)
    assert plain._forest.to_bytes() == zero._forest.to_bytes()
    leaves = [plain.tree_stats()[2].sum()]
    for alpha in [1e-3, 5e-3, 2e-2]:
        pruned = of.SPORFClassifier(n_estimators=5, ccp_alpha=alpha, random_state=0).fit(X, y)
        leaves.append(pruned.tree_stats()[2].sum())
    assert leaves == sorted(leaves, reverse=True) and leaves[-1] < leaves[0] / 3


def test_oob_estimates_use_the_pruned_trees():
    X, y = load_breast_cancer(return_X_y=True)
    forest = of.RandomForestClassifier(n_estimators=20, ccp_alpha=0.01, oob_score=True)
    forest.set_params(random_state=0).fit(X, y)
    sums = np.zeros((len(X), 2))
    counts = np.zeros(len(X))
    for tree, rows in zip(forest, forest.estimators_samples_):
        out = np.ones(len(X), dtype=bool)
        out[rows] = False
        sums[out] += tree.predict_proba(X[out])
        counts[out] += 1
    expected = sums / np.maximum(counts, 1)[:, None]
    np.testing.assert_allclose(forest.oob_decision_function_, expected, rtol=1e-12)


def test_warm_start_prunes_the_new_trees_as_a_one_shot_fit_would():
    X, y = load_wine(return_X_y=True)
    kw = dict(ccp_alpha=0.01, random_state=3)
    once = of.RandomForestClassifier(n_estimators=8, **kw).fit(X, y)
    grown = of.RandomForestClassifier(n_estimators=4, warm_start=True, **kw).fit(X, y)
    grown = pickle.loads(pickle.dumps(grown))  # the core model does not store ccp_alpha
    grown.set_params(n_estimators=8).fit(X, y)
    assert grown._forest.to_bytes() == once._forest.to_bytes()


@pytest.mark.parametrize("alpha", [-0.1, float("nan"), "1"])
def test_bad_ccp_alpha_is_rejected(alpha):
    X, y = load_wine(return_X_y=True)
    with pytest.raises(ValueError, match="ccp_alpha"):
        of.RandomForestClassifier(n_estimators=2, ccp_alpha=alpha).fit(X, y)
