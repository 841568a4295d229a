"""Tests for the regularized random-rotation ensembles (obliqueforest.rotation)."""

import hashlib
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import sparse
from obliqueforest.rotation import (
    WEIGHTINGS,
    RotationEnsembleClassifier,
    RotationEnsembleRegressor,
    RotationTreeClassifier,
    RotationTreeRegressor,
    allocate_trees,
    cut_weights,
    exp_weights,
    haar_rotation,
    linear_weights,
    tree_complexity,
)
from sklearn.datasets import load_iris, load_wine, make_friedman1
from sklearn.exceptions import NotFittedError
from sklearn.utils.estimator_checks import parametrize_with_checks

SMALL = {"n_estimators": 12, "n_rotations": 3, "micro_forest_size": 4, "random_state": 0}
ESTIMATORS = [RotationEnsembleClassifier(**SMALL), RotationEnsembleRegressor(**SMALL)]
COMPLEXITY_RANKED = ("rre", "cut", "exp", "bst", "new", "lin")


@pytest.fixture(scope="module")
def iris():
    return load_iris(return_X_y=True)


@pytest.fixture(scope="module")
def wine():
    return load_wine(return_X_y=True)


def _expected_failed_checks(estimator):
    return {
        "check_sample_weight_equivalence_on_dense_data": (
            "bootstrap draws rows uniformly, so a weight of 2 is not the same as a repeated row"
        ),
        "check_sample_weight_equivalence_on_sparse_data": "sparse input is not supported",
    }


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=_expected_failed_checks)
def test_sklearn_estimator_checks_pass(estimator, check):
    check(estimator)


# --------------------------------------------------------------------------- helpers


def test_haar_rotation_is_orthogonal_and_reproducible():
    q1 = haar_rotation(6, np.random.default_rng(3))
    q2 = haar_rotation(6, np.random.default_rng(3))
    np.testing.assert_allclose(q1 @ q1.T, np.eye(6), atol=1e-12)
    np.testing.assert_array_equal(q1, q2)


def test_haar_rotation_is_uniform_in_first_entry_sign_and_scale():
    # Under the Haar measure each entry has mean 0 and variance 1/p; without the
    # sign correction of the QR factor the diagonal would be biased.
    rng = np.random.default_rng(0)
    diag = np.array([haar_rotation(3, rng)[0, 0] for _ in range(4000)])
    assert abs(diag.mean()) < 0.03
    assert abs(np.mean(diag**2) - 1 / 3) < 0.03


def test_rotate_columns_are_each_rotation_one_by_one():
    """The batched product (X times the rotations side by side) gives every rotation's
    column-major copy with the very values of its own product: dense X with missing values
    (rows spanning several of the core's tiles), and scaled sparse X."""
    from obliqueforest._rotation_math import rotate, rotate_columns

    rng = np.random.default_rng(3)
    X = rng.normal(size=(70, 6)) * 10
    X[rng.random(X.shape) < 0.05] = np.nan
    rotations = np.stack([np.eye(6)] + [haar_rotation(6, rng) for _ in range(4)])
    S = sparse.random(70, 6, density=0.3, format="csr", random_state=1)
    est = RotationEnsembleClassifier(**SMALL).fit(S, np.arange(70) % 2)  # minmax
    scaled_sparse = est._scale(S)
    assert not isinstance(scaled_sparse, np.ndarray)  # the sparse path of rotate
    for data in (X, scaled_sparse):
        got = rotate_columns(data, rotations)
        assert len(got) == len(rotations)
        for Q, g in zip(rotations, got):
            want = rotate(data, Q, "F")
            assert g.flags.f_contiguous and g.dtype == np.float32 and g.shape == want.shape
            np.testing.assert_array_equal(g, want)
    assert np.isnan(rotate_columns(X, rotations)[0]).sum() == np.isnan(X).sum()
    assert rotate_columns(X, rotations[:0]) == []


@pytest.mark.parametrize("scaling", ["rank", "minmax"])
def test_the_scaling_is_the_same_on_any_number_of_threads(scaling):
    # (enough values for the rank scaling's columns to run on threads; some missing)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40_000, 3)).round(2)
    X[::7, 1] = np.nan
    y = (X[:, 0] > 0).astype(int)
    scaled = []
    for n_jobs in (1, 2):
        est = RotationEnsembleClassifier(
            n_estimators=4, n_rotations=2, micro_forest_size=2, scaling=scaling, n_jobs=n_jobs
        )
        est.fit(X, y)
        scaled.append(est._scale(X[:30_000]))
    np.testing.assert_array_equal(scaled[0], scaled[1])


def test_tree_complexity_matches_eq5():
    np.testing.assert_allclose(tree_complexity([11, 7], [4, 3], 100), [11.04, 7.03])


@pytest.mark.parametrize("h", [0.05, 0.7, 3.0, 40.0, 1e6])
def test_exp_weights_match_eq7(h):
    R = 25
    w = exp_weights(R, h)
    r = np.arange(1, R + 1)
    if h < 100:
        expected = 2.0 ** (-r / h) * (2.0 ** (1 / h) - 1) / (1 - 2.0 ** (-R / h))
        np.testing.assert_allclose(w, expected, rtol=1e-9, atol=1e-300)
    assert np.isclose(w.sum(), 1.0)
    assert np.all(np.diff(w) <= 1e-15)
    if h >= 1e6:
        np.testing.assert_allclose(w, 1 / R, rtol=1e-4)


def test_cut_and_linear_weights_match_eq6_and_sect5():
    np.testing.assert_allclose(cut_weights(5, 2), [0.5, 0.5, 0, 0, 0])
    np.testing.assert_allclose(linear_weights(4), np.array([4, 3, 2, 1]) / 10)


def test_allocate_trees_sums_to_m_and_is_non_increasing():
    rng = np.random.default_rng(0)
    for _ in range(500):
        R = int(rng.integers(1, 60))
        M = int(rng.integers(1, 3000))
        kind = rng.integers(4)
        if kind == 0:
            w = exp_weights(R, float(rng.uniform(0.05, 3 * R)))
        elif kind == 1:
            w = cut_weights(R, int(rng.integers(1, R + 1)))
        elif kind == 2:
            w = linear_weights(R)
        else:
            w = np.full(R, 1.0 / R)
        counts = allocate_trees(w, M)
        assert counts.sum() == M
        assert np.all(counts >= 0)
        assert np.all(np.diff(counts) <= 0)


def test_allocate_trees_missing_to_top_surplus_from_worst():
    np.testing.assert_array_equal(allocate_trees(cut_weights(6, 3), 1000), [334, 333, 333, 0, 0, 0])
    # 4 x 0.5 rounds up to 4 trees for M=2: the two surplus trees leave the worst.
    np.testing.assert_array_equal(allocate_trees(np.full(4, 0.25), 2), [1, 1, 0, 0])


# --------------------------------------------------------------------------- the algorithm


@pytest.mark.parametrize("weighting", WEIGHTINGS)
def test_rotation_ensemble_tree_counts_sum_to_m_non_increasing_in_rank(iris, weighting):
    X, y = iris
    clf = RotationEnsembleClassifier(
        n_estimators=103, n_rotations=8, micro_forest_size=5, weighting=weighting, random_state=1
    ).fit(X, y)
    counts = clf.n_trees_per_rotation_
    order = clf.rotation_order_
    assert counts.sum() == 103
    assert np.all(np.diff(counts[order]) <= 0)
    assert sorted(order) == list(range(8))
    if weighting in COMPLEXITY_RANKED:
        assert np.all(np.diff(clf.rotation_complexity_[order]) >= 0)
    elif weighting == "oob":
        assert np.all(np.diff(clf.rotation_oob_error_[order]) >= 0)
    kept = [f for f in clf._forests if f is not None]
    assert sum(f.n_trees for f in kept) == 103
    assert len(kept) == np.count_nonzero(counts)


def test_rotation_ensemble_identity_is_rotation_zero(iris):
    X, y = iris
    clf = RotationEnsembleClassifier(n_estimators=20, n_rotations=4, random_state=0).fit(X, y)
    np.testing.assert_array_equal(clf.rotations_[0], np.eye(4))
    for q in clf.rotations_:
        np.testing.assert_allclose(q.T @ q, np.eye(4), atol=1e-12)


def test_rotation_ensemble_new_weighting_covers_rotations_up_to_identity(iris):
    X, y = iris
    clf = RotationEnsembleClassifier(
        n_estimators=60, n_rotations=10, weighting="new", random_state=2
    ).fit(X, y)
    position = int(np.flatnonzero(clf.rotation_order_ == 0)[0])
    ranked = clf.n_trees_per_rotation_[clf.rotation_order_]
    assert np.all(ranked[: position + 1] > 0)
    assert np.all(ranked[position + 1 :] == 0)
    assert ranked.max() - ranked[: position + 1].min() <= 1 + 60 % (position + 1)


@pytest.mark.parametrize("dataset", ["iris", "wine"])
def test_rotation_ensemble_exp_and_bst_simpler_than_rre(dataset, request):
    X, y = request.getfixturevalue(dataset)
    complexity = {}
    for weighting in ("rre", "exp", "bst"):
        clf = RotationEnsembleClassifier(
            n_estimators=200,
            n_rotations=20,
            micro_forest_size=10,
            weighting=weighting,
            max_features=1,
            random_state=0,
        ).fit(X, y)
        complexity[weighting] = clf.complexity_
    assert complexity["exp"] < complexity["rre"]
    assert complexity["bst"] < complexity["rre"]


@pytest.mark.parametrize("weighting", ["cut", "exp"])
@pytest.mark.parametrize("h_criterion", ["weighted_oob", "ensemble_oob"])
def test_h_grid_search_returns_smallest_objective(wine, weighting, h_criterion):
    X, y = wine
    clf = RotationEnsembleClassifier(
        n_estimators=100,
        n_rotations=10,
        weighting=weighting,
        h_criterion=h_criterion,
        random_state=3,
    ).fit(X, y)
    scores = clf.h_scores_
    assert clf.h_ == clf.h_grid_[np.argmin(scores)]
    assert np.all(scores >= scores.min())
    if h_criterion == "weighted_oob":
        # Recompute the paper's objective from the fitted attributes.
        ranked_error = clf.rotation_oob_error_[clf.rotation_order_]
        weight_fn = cut_weights if weighting == "cut" else exp_weights
        expected = [weight_fn(10, h) @ ranked_error for h in clf.h_grid_]
        np.testing.assert_allclose(scores, expected)
    ranked_weights = clf.rotation_weights_[clf.rotation_order_]
    weight_fn = cut_weights if weighting == "cut" else exp_weights
    np.testing.assert_allclose(ranked_weights, weight_fn(10, clf.h_))


def test_h_given_is_used_without_search(iris):
    X, y = iris
    clf = RotationEnsembleClassifier(
        n_estimators=50, n_rotations=5, weighting="cut", h=2, random_state=0
    ).fit(X, y)
    assert clf.h_ == 2 and clf.h_grid_ is None
    assert np.count_nonzero(clf.n_trees_per_rotation_) == 2


def test_h_grid_custom_is_searched(iris):
    X, y = iris
    clf = RotationEnsembleClassifier(
        n_estimators=50, n_rotations=5, weighting="exp", h_grid=[0.5, 2.0, 8.0], random_state=0
    ).fit(X, y)
    assert clf.h_ in (0.5, 2.0, 8.0)
    np.testing.assert_array_equal(clf.h_grid_, [0.5, 2.0, 8.0])


@pytest.mark.parametrize("Estimator", [RotationEnsembleClassifier, RotationEnsembleRegressor])
def test_rotation_ensemble_same_model_for_n_jobs_1_and_2(iris, Estimator):
    X, y = iris
    fitted = [
        Estimator(n_estimators=60, n_rotations=6, n_jobs=n_jobs, random_state=7).fit(X, y)
        for n_jobs in (1, 2)
    ]
    a, b = fitted
    np.testing.assert_array_equal(a.rotations_, b.rotations_)
    np.testing.assert_array_equal(a.rotation_complexity_, b.rotation_complexity_)
    np.testing.assert_array_equal(a.rotation_oob_error_, b.rotation_oob_error_)
    np.testing.assert_array_equal(a.n_trees_per_rotation_, b.n_trees_per_rotation_)
    assert a.complexity_ == b.complexity_
    if Estimator is RotationEnsembleClassifier:
        np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    else:
        np.testing.assert_array_equal(a.predict(X), b.predict(X))


def test_rotation_ensemble_random_state_changes_rotations(iris):
    X, y = iris
    a = RotationEnsembleClassifier(n_estimators=20, n_rotations=3, random_state=0).fit(X, y)
    b = RotationEnsembleClassifier(n_estimators=20, n_rotations=3, random_state=1).fit(X, y)
    assert not np.allclose(a.rotations_[1], b.rotations_[1])


@pytest.mark.parametrize("Estimator", [RotationEnsembleClassifier, RotationEnsembleRegressor])
def test_rotation_ensemble_pickle_round_trip_identical_predictions(iris, Estimator):
    X, y = iris
    est = Estimator(n_estimators=40, n_rotations=5, weighting="exp", random_state=0).fit(X, y)
    clone = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(est.predict(X), clone.predict(X))
    if Estimator is RotationEnsembleClassifier:
        np.testing.assert_array_equal(est.predict_proba(X), clone.predict_proba(X))
    assert clone.complexity_ == est.complexity_


def test_rotation_ensemble_predict_proba_is_tree_weighted_mean(iris):
    X, y = iris
    clf = RotationEnsembleClassifier(n_estimators=30, n_rotations=4, random_state=0).fit(X, y)
    Xs = (X - X.min(axis=0)) / (X.max(axis=0) - X.min(axis=0))
    total = np.zeros((len(X), 3))
    for k, forest in enumerate(clf._forests):
        if forest is not None:
            rotated = (Xs @ clf.rotations_[k]).astype(np.float32)
            total += forest.predict_trees(rotated).sum(axis=0)
    np.testing.assert_allclose(clf.predict_proba(X), total / 30, atol=1e-12)
    np.testing.assert_allclose(clf.predict_proba(X).sum(axis=1), 1.0)


def test_rotation_ensemble_complexity_is_mean_over_final_trees(iris):
    X, y = iris
    clf = RotationEnsembleClassifier(n_estimators=50, n_rotations=5, random_state=0).fit(X, y)
    values = []
    for forest in clf._forests:
        if forest is not None:
            n_nodes, depth, _ = forest.tree_stats()
            values.append(n_nodes + depth / len(X))
    assert np.isclose(clf.complexity_, np.concatenate(values).mean())


def test_rotation_ensemble_oob_score_is_reasonable(iris):
    X, y = iris
    clf = RotationEnsembleClassifier(
        n_estimators=100, n_rotations=5, oob_score=True, random_state=0
    ).fit(X, y)
    assert 0.85 < clf.oob_score_ <= 1.0
    assert clf.oob_decision_function_.shape == (150, 3)


def test_rotation_ensemble_regressor_fits_friedman():
    X, y = make_friedman1(n_samples=300, n_features=6, random_state=0)
    reg = RotationEnsembleRegressor(
        n_estimators=100, n_rotations=5, oob_score=True, random_state=0
    ).fit(X, y)
    assert reg.score(X, y) > 0.9
    assert reg.oob_score_ > 0.5
    assert np.all(np.isfinite(reg.rotation_oob_error_))


def test_rotation_ensemble_feature_importances_sum_to_one(wine):
    X, y = wine
    clf = RotationEnsembleClassifier(n_estimators=40, n_rotations=4, random_state=0).fit(X, y)
    importances = clf.feature_importances_
    assert importances.shape == (13,)
    assert np.all(importances >= 0)
    assert np.isclose(importances.sum(), 1.0)


def test_rotation_ensemble_rank_scaling_ignores_monotone_transforms(iris):
    X, y = iris
    params = {"n_estimators": 30, "n_rotations": 4, "scaling": "rank", "random_state": 0}
    a = RotationEnsembleClassifier(**params).fit(X, y)
    b = RotationEnsembleClassifier(**params).fit(np.exp(X), y)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(np.exp(X)))


def test_rotation_ensemble_rank_scaling_maps_new_values_into_unit_interval(iris):
    X, y = iris
    clf = RotationEnsembleClassifier(n_estimators=10, n_rotations=2, scaling="rank").fit(X, y)
    scaled = clf._scale(np.vstack([X.min(axis=0) - 1, X.max(axis=0) + 1]))
    np.testing.assert_array_equal(scaled, [[0, 0, 0, 0], [1, 1, 1, 1]])


def test_rotation_ensemble_sample_weight_zero_rows_change_model(iris):
    X, y = iris
    weights = np.ones(len(y))
    weights[y == 2] = 0.0
    clf = RotationEnsembleClassifier(n_estimators=20, n_rotations=3, random_state=0)
    clf.fit(X, y, sample_weight=weights)
    assert np.all(clf.predict(X[y != 2]) != 2)


def test_rotation_ensemble_micro_forest_trees_are_reused(iris):
    # With M = R * U and equal weights every micro-forest tree is kept as is.
    X, y = iris
    rre = RotationEnsembleClassifier(
        n_estimators=40, n_rotations=4, micro_forest_size=10, weighting="rre", random_state=5
    ).fit(X, y)
    np.testing.assert_array_equal(rre.n_trees_per_rotation_, [10, 10, 10, 10])
    # The top rotation's first U trees under BST are the RRE micro-forest's trees.
    bst = RotationEnsembleClassifier(
        n_estimators=40, n_rotations=4, micro_forest_size=10, weighting="bst", random_state=5
    ).fit(X, y)
    top = int(bst.rotation_order_[0])
    Xs = (X - X.min(axis=0)) / (X.max(axis=0) - X.min(axis=0))
    rotated = (Xs @ bst.rotations_[top]).astype(np.float32)
    trees_bst = bst._forests[top].predict_trees(rotated)
    trees_rre = rre._forests[top].predict_trees(rotated)
    np.testing.assert_array_equal(trees_bst[:10], trees_rre)
    assert trees_bst.shape[0] == 40


# --------------------------------------------------------------------------- per-tree access

# LIN spreads 30 trees as 10, 8, 6, 4, 2 over the rotations: trees of different
# rotations have different counts, and every tree weighs 1/M in the ensemble.
PER_TREE = {"n_estimators": 30, "n_rotations": 5, "micro_forest_size": 4, "weighting": "lin"}


def _per_tree_data(kind):
    X, y = make_friedman1(n_samples=160, n_features=6, random_state=3)
    X[::7, 2] = np.nan  # missing values go through the rotation as the ensemble's do
    if kind == "clf":
        return X, np.digitize(y, np.quantile(y, [0.3, 0.6]))
    if kind == "clf_multi":
        return X, np.stack([y > np.median(y), np.digitize(y, [10.0, 18.0])], axis=1)
    if kind == "sparse":
        X = np.where(np.abs(X - 0.5) < 0.25, 0.0, np.nan_to_num(X))
        return sparse.csr_matrix(X), y > np.median(y)
    return X, y


def _fit_per_tree(kind, **params):
    X, y = _per_tree_data(kind)
    cls = RotationEnsembleRegressor if kind == "reg" else RotationEnsembleClassifier
    return cls(**{**PER_TREE, **params}, random_state=2).fit(X, y), X, y


@pytest.mark.parametrize("kind", ["clf", "clf_multi", "sparse", "reg"])
def test_rotation_ensemble_mean_of_per_tree_predictions_is_the_prediction(kind):
    est, X, _ = _fit_per_tree(kind)
    assert len(est) == 30
    assert sorted(est.n_trees_per_rotation_) == [2, 4, 6, 8, 10]
    if kind == "reg":
        per_tree = np.stack([t.predict(X) for t in est])
        np.testing.assert_allclose(per_tree.mean(axis=0), est.predict(X), rtol=1e-12)
        return
    per_tree = [t.predict_proba(X) for t in est]
    if kind == "clf_multi":
        for o, want in enumerate(est.predict_proba(X)):
            mean = np.mean([p[o] for p in per_tree], axis=0)
            np.testing.assert_allclose(mean, want, rtol=1e-12, atol=1e-15)
    else:
        mean = np.mean(per_tree, axis=0)
        np.testing.assert_allclose(mean, est.predict_proba(X), rtol=1e-12, atol=1e-15)
    # a tree's label is its own leaf's majority class
    labels = est[7].predict(X)
    if kind == "clf_multi":
        for o, classes in enumerate(est.classes_):
            np.testing.assert_array_equal(labels[:, o], classes[per_tree[7][o].argmax(axis=1)])
    else:
        np.testing.assert_array_equal(labels, est.classes_[per_tree[7].argmax(axis=1)])


def test_rotation_ensemble_trees_come_rotation_by_rotation():
    est, X, _ = _fit_per_tree("clf")
    trees = list(est)
    # (rotation k, index within its forest) of every tree, in the order of estimators_
    where = [(k, i) for k, n in enumerate(est.n_trees_per_rotation_) for i in range(n)]
    assert len(trees) == len(where) == 30
    for t, (k, i) in zip(trees, where):
        assert type(t) is RotationTreeClassifier
        np.testing.assert_array_equal(t.rotation_, est.rotations_[k])
        np.testing.assert_array_equal(t.get_params()["rotation"], est.rotations_[k])
        # tree i of rotation k grew from the streams (seed of rotation k's forest, i)
        assert t.random_state == int(est._forests[k].seed) * 2**20 + i
        assert t.tree_.node_count == t.decision_path(X[:1]).shape[1]
        assert t.criterion == "gini" and t.max_features == "sqrt" and t.scaling == "minmax"
        assert t.n_features_in_ == 6 and list(t.classes_) == [0, 1, 2]
    for index in (3, -1):
        np.testing.assert_array_equal(est[index].apply(X), trees[index].apply(X))
    assert repr(trees[0]).startswith("RotationTreeClassifier(")


def test_rotation_ensemble_apply_and_decision_path_match_the_trees():
    est, X, _ = _fit_per_tree("clf")
    leaves = est.apply(X)
    indicator, n_nodes_ptr = est.decision_path(X)
    assert leaves.shape == (len(X), 30)
    assert len(n_nodes_ptr) == 31 and n_nodes_ptr[0] == 0
    assert indicator.shape == (len(X), n_nodes_ptr[-1])
    for t, tree in enumerate(est):
        a, b = n_nodes_ptr[t], n_nodes_ptr[t + 1]
        assert b - a == tree.tree_.node_count
        np.testing.assert_array_equal(leaves[:, t], tree.apply(X))
        path = indicator[:, a:b].toarray()
        np.testing.assert_array_equal(path, tree.decision_path(X).toarray())
        # the deepest node of each path is the leaf apply reports
        assert np.all(path[np.arange(len(X)), leaves[:, t]] == 1)
        assert np.all(tree.tree_.children_left[leaves[:, t]] == -1)


@pytest.mark.parametrize("kind", ["clf", "reg"])
def test_rotation_ensemble_oob_follows_from_in_bag_rows_and_per_tree_predictions(kind):
    est, X, y = _fit_per_tree(kind, oob_score=True)
    samples = est.estimators_samples_
    assert len(samples) == 30
    sums, counts = 0.0, np.zeros(len(X))
    for tree, in_bag in zip(est, samples):
        assert in_bag.dtype == np.int32 and np.all(np.diff(in_bag) >= 0)
        assert len(in_bag) == len(X)  # a bootstrap sample as large as the data
        out = np.ones(len(X), dtype=bool)
        out[in_bag] = False
        pred = tree.predict_proba(X) if kind == "clf" else tree.predict(X)[:, None]
        sums = sums + pred * out[:, None]
        counts += out
    mean = sums / counts[:, None]
    if kind == "clf":
        np.testing.assert_allclose(mean, est.oob_decision_function_, rtol=1e-12)
    else:
        np.testing.assert_allclose(mean[:, 0], est.oob_prediction_, rtol=1e-12)


def test_rotation_ensemble_without_bootstrap_trees_see_every_row_once():
    est, X, _ = _fit_per_tree("clf", bootstrap=False, h=1.0, weighting="exp")
    for in_bag in est.estimators_samples_:
        np.testing.assert_array_equal(in_bag, np.arange(len(X)))


def test_rotation_ensemble_per_tree_importances_average_to_the_ensemble():
    est, _, _ = _fit_per_tree("clf")
    per_tree = np.array([t.feature_importances_ for t in est])
    np.testing.assert_allclose(per_tree.sum(axis=1), 1.0)
    mean = per_tree.mean(axis=0)
    np.testing.assert_allclose(mean / mean.sum(), est.feature_importances_, rtol=1e-12)


def test_rotation_ensemble_tree_taken_before_a_refit_stays_that_tree():
    # a tree holds its rotation's core forest, its rotation and the fitted scaling, as
    # the forests' trees hold theirs: a refit of the ensemble publishes a new model and
    # leaves the trees taken from the old one as they were
    est, X, y = _fit_per_tree("clf")
    tree = est[-1]
    proba, leaves, importances = tree.predict_proba(X), tree.apply(X), tree.feature_importances_
    est.set_params(scaling="rank", random_state=5).fit(X[:100] * 3.0, y[:100])
    np.testing.assert_array_equal(tree.predict_proba(X), proba)
    np.testing.assert_array_equal(tree.apply(X), leaves)
    np.testing.assert_array_equal(tree.feature_importances_, importances)
    assert not np.array_equal(est[-1].predict_proba(X), proba)


def test_rotation_ensemble_unfitted_has_no_trees():
    est = RotationEnsembleClassifier(**PER_TREE)
    assert bool(est)
    for access in (len, list, lambda e: e.estimators_samples_, lambda e: e.apply([[0.0]])):
        with pytest.raises(NotFittedError):
            access(est)


@pytest.mark.parametrize("kind", ["clf", "reg"])
def test_rotation_ensemble_sklearn_inspection_helpers_run(kind):
    from sklearn.inspection import partial_dependence, permutation_importance

    est, X, y = _fit_per_tree(kind)
    X = np.nan_to_num(X)
    result = permutation_importance(est, X, y, n_repeats=3, random_state=0)
    assert result.importances_mean.shape == (6,)
    # friedman1 ignores its last column (features 5..); the first ones carry the signal
    assert result.importances_mean[[0, 1, 3]].min() > result.importances_mean[5]
    pd = partial_dependence(est, X, [3], grid_resolution=5)
    assert pd["average"].shape[-1] == 5
    # brute force: the mean prediction with feature 3 set to each grid value
    grid_value = pd["grid_values"][0][2]
    X_set = X.copy()
    X_set[:, 3] = grid_value
    want = est.predict_proba(X_set)[:, -1] if kind == "clf" else est.predict(X_set)
    got = pd["average"][-1 if kind == "clf" and pd["average"].shape[0] > 1 else 0][2]
    np.testing.assert_allclose(got, want.mean(), rtol=1e-10)


def test_rotation_ensemble_clone_pickle_and_model_file_keep_per_tree_access(tmp_path):
    from obliqueforest import load
    from sklearn.base import clone

    est, X, _ = _fit_per_tree("clf")
    assert clone(est).get_params() == est.get_params()
    with pytest.raises(NotFittedError):
        len(clone(est))
    per_tree = np.stack([t.predict_proba(X) for t in est])
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(np.stack([t.predict_proba(X) for t in again]), per_tree)
    for a, b in zip(again.estimators_samples_, est.estimators_samples_):
        np.testing.assert_array_equal(a, b)
    est.save(tmp_path / "model.of")
    loaded = load(tmp_path / "model.of")
    np.testing.assert_array_equal(np.stack([t.predict_proba(X) for t in loaded]), per_tree)
    np.testing.assert_array_equal(loaded.apply(X), est.apply(X))
    # the model file records the number of training rows: the in-bag rows follow
    assert len(loaded.estimators_samples_) == 30
    for a, b in zip(loaded.estimators_samples_, est.estimators_samples_):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("n", [0, -3, 2**32, 2.5, True, "160"])
def test_rotation_model_file_with_a_bad_row_count_is_refused(tmp_path, n):
    from obliqueforest import ForestError, load
    from test_model_file import _parts, _write_crafted

    est, _, _ = _fit_per_tree("clf")
    parts = _parts(est)
    assert parts["attributes"]["_n_samples_fit"] == 160
    parts["attributes"]["_n_samples_fit"] = n
    with pytest.raises(ForestError, match="_n_samples_fit"):
        load(_write_crafted(tmp_path, parts))


def test_rotation_model_file_of_an_older_version_loads_without_in_bag_rows(tmp_path):
    from obliqueforest import load
    from test_model_file import _parts, _write_crafted

    est, X, _ = _fit_per_tree("clf")
    parts = _parts(est)
    del parts["attributes"]["_n_samples_fit"]  # written before the row count was saved
    loaded = load(_write_crafted(tmp_path, parts))
    np.testing.assert_array_equal(loaded.predict_proba(X), est.predict_proba(X))
    assert len(loaded) == 30
    with pytest.raises(AttributeError, match="number of training rows"):
        loaded.estimators_samples_  # noqa: B018


def test_rotation_ensemble_final_trees_keep_oob_records_only_for_oob_score(iris):
    # The micro-forests' OOB records serve the ranking; the trees grown beyond them walk
    # their out-of-bag rows only when oob_score asks for the final ensemble's estimate.
    X, y = iris
    params = {"n_estimators": 40, "n_rotations": 4, "micro_forest_size": 5, "weighting": "bst"}
    plain = RotationEnsembleClassifier(**params, random_state=1).fit(X, y)
    scored = RotationEnsembleClassifier(**params, oob_score=True, random_state=1).fit(X, y)
    top = int(plain.rotation_order_[0])
    assert plain.n_trees_per_rotation_[top] == 40
    assert not plain._forests[top].has_oob
    assert scored._forests[top].has_oob
    np.testing.assert_array_equal(plain.predict_proba(X), scored.predict_proba(X))
    assert plain._forests[top].to_bytes() == scored._forests[top].to_bytes()


def _rotated(X, rotation, lo, span):
    """``((X - lo) / span) @ rotation`` in float32, a rotated coordinate missing when a
    feature it weighs is: what a rotation tree splits on, computed here on its own."""
    scaled = (X - lo) / span
    missing = np.isnan(scaled)
    Z = np.where(missing, 0.0, scaled) @ rotation
    Z[(missing.astype(float) @ (rotation != 0)) > 0] = np.nan
    return Z.astype(np.float32)


def _walk(nodes, Z):
    """The leaf each row of Z reaches through the node table of an axis-aligned tree."""
    leaves = np.empty(len(Z), dtype=np.int64)
    for r, z in enumerate(Z):
        i = 0
        while nodes.children_left[i] != -1:
            value = z[nodes.feature[i]]
            left = nodes.missing_go_to_left[i] if np.isnan(value) else value <= nodes.threshold[i]
            i = nodes.children_left[i] if left else nodes.children_right[i]
        leaves[r] = i
    return leaves


def test_rotation_tree_nodes_are_in_the_rotated_coordinates():
    est, X, _ = _fit_per_tree("clf")
    lo, hi = np.nanmin(X, axis=0), np.nanmax(X, axis=0)
    for tree in est:
        nodes = tree.tree_
        inner = nodes.children_left != -1
        assert np.all(nodes.feature[inner] >= 0)  # axis-aligned in the rotated coordinates
        Z = _rotated(X, tree.rotation_, lo, hi - lo)
        np.testing.assert_array_equal(_walk(nodes, Z), tree.apply(X))
        # tree_'s apply and decision_path take X as the tree does
        np.testing.assert_array_equal(nodes.apply(X), tree.apply(X))
        assert (nodes.decision_path(X) != tree.decision_path(X)).nnz == 0


def test_rotation_tree_importances_map_back_by_squared_loadings():
    est, _, _ = _fit_per_tree("reg")
    for tree in est:
        rotated = tree.tree_.compute_feature_importances()  # of the rotated features
        t = tree.tree_
        raw = np.zeros(6)
        for i in np.flatnonzero(t.children_left != -1):
            left, right = t.children_left[i], t.children_right[i]
            w, imp = t.weighted_n_node_samples, t.impurity
            raw[t.feature[i]] += w[i] * imp[i] - w[left] * imp[left] - w[right] * imp[right]
        np.testing.assert_allclose(rotated, raw / raw.sum(), atol=1e-9)
        np.testing.assert_allclose(tree.feature_importances_, tree.rotation_**2 @ rotated)


def test_a_cloned_rotation_tree_regrows_on_its_in_bag_rows():
    from sklearn.base import clone

    # without scaling the tree sees X[rows] @ rotation, the rows of the ensemble's data
    est, X, y = _fit_per_tree("clf", scaling=None)
    for tree, rows in zip(est, est.estimators_samples_):
        again = clone(tree)
        assert type(again) is RotationTreeClassifier and not again.__sklearn_is_fitted__()
        assert again.get_params().keys() == tree.get_params().keys()
        np.testing.assert_array_equal(again.rotation, tree.rotation)
        again.fit(X[rows], y[rows])
        np.testing.assert_array_equal(again.rotation_, tree.rotation_)
        np.testing.assert_array_equal(again.tree_.value, tree.tree_.value)
        np.testing.assert_array_equal(again.tree_.threshold, tree.tree_.threshold)
        np.testing.assert_array_equal(again.apply(X), tree.apply(X))


@pytest.mark.parametrize("scaling", ["minmax", "rank", None])
def test_a_pickled_rotation_tree_carries_its_tree_rotation_and_scaling(scaling):
    est, X, _ = _fit_per_tree("sparse", n_estimators=60, scaling=scaling)
    tree = est[-1]
    data = pickle.dumps(tree)
    assert len(data) < len(pickle.dumps(est)) / 10
    again = pickle.loads(data)
    np.testing.assert_array_equal(again.predict_proba(X), tree.predict_proba(X))
    np.testing.assert_array_equal(again.apply(X), tree.apply(X))
    np.testing.assert_array_equal(again.rotation_, tree.rotation_)
    np.testing.assert_array_equal(again.feature_importances_, tree.feature_importances_)
    # a refit of the copy makes it a tree of its own
    again.set_params(max_depth=1).fit(X, est.classes_[tree.predict(X).astype(int)])
    assert again.get_depth() == 1


def test_the_rotation_ensemble_estimator_is_the_template_of_its_trees():
    est = RotationEnsembleRegressor(**PER_TREE, max_depth=5, scaling="rank")
    template = est.estimator
    assert type(template) is RotationTreeRegressor
    assert template.max_depth == 5 and template.scaling == "rank"
    assert template.rotation is None and template.random_state is None
    with pytest.raises(NotFittedError):
        est.estimator_  # noqa: B018
    X, y = _per_tree_data("reg")
    est.set_params(random_state=0).fit(X, y)
    assert est.estimator_.get_params() == template.get_params()
    shared = {k for k in template.get_params() if k not in ("rotation", "random_state")}
    assert {k: est[0].get_params()[k] for k in shared} == {
        k: template.get_params()[k] for k in shared
    }
    assert type(RotationEnsembleClassifier().estimator) is RotationTreeClassifier


def test_a_rotation_tree_fitted_alone_reads_x_through_its_rotation():
    X, y = _per_tree_data("clf")
    rotation = haar_rotation(6, np.random.default_rng(0))
    tree = RotationTreeClassifier(rotation=rotation, scaling=None, random_state=0).fit(X, y)
    Z = _rotated(X, rotation, np.zeros(6), np.ones(6))
    np.testing.assert_array_equal(_walk(tree.tree_, Z), tree.apply(X))
    # grown to purity on the rows whose rotated coordinates are all present
    present = ~np.isnan(X).any(axis=1)
    assert tree.score(X[present], y[present]) == 1.0
    # the identity by default, and the rotation checked against X
    plain = RotationTreeClassifier(scaling=None, random_state=0).fit(X, y)
    np.testing.assert_array_equal(plain.rotation_, np.eye(6))
    for bad, match in [
        (rotation[:5, :5], r"shape \(5, 5\); X has 6 features"),
        (rotation * 2.0, "orthogonal"),
        (np.full((6, 6), np.nan), "orthogonal"),
    ]:
        with pytest.raises(ValueError, match=match):
            RotationTreeClassifier(rotation=bad).fit(X, y)


def test_rotation_tree_rules_name_the_rotated_coordinates():
    import pandas as pd
    from obliqueforest.interpret import decision_path_rules, export_text

    X, y = _per_tree_data("reg")
    X = pd.DataFrame(X, columns=[f"f{j}" for j in range(6)])
    est = RotationEnsembleRegressor(**PER_TREE, random_state=2).fit(X, y)
    tree = est[-1]
    assert list(tree.feature_names_in_) == list(X.columns)
    report = export_text(tree, max_depth=2)
    assert "r" in report and not any(f"f{j}" in report for j in range(6))
    path = decision_path_rules(tree, X.iloc[[4]])
    assert path[-1]["node"] == tree.apply(X.iloc[[4]])[0]
    lo, hi = X.min().to_numpy(), X.max().to_numpy()
    z = _rotated(X.to_numpy()[4:5], tree.rotation_, lo, hi - lo)[0]
    for step in path[:-1]:
        (j,) = step["features"]
        assert step["rule"].startswith(f"r{j} ") and step["projection"] == z[j]


def test_rotation_trees_declare_their_surface():
    import inspect

    for cls in (RotationTreeClassifier, RotationTreeRegressor):
        surface = cls._surface
        signature = inspect.signature(cls)
        assert list(signature.parameters) == surface.names()
        assert cls._parameter_constraints.keys() == set(surface.names())
        assert {"rotation", "scaling", "max_features", "random_state"} <= set(surface.names())
        # the ensembles grow unpruned axis-aligned trees with the best splitter
        assert not {"projection", "splitter", "ccp_alpha", "monotonic_cst"} & set(surface.names())
        est = cls()
        assert set(vars(est)) == set(surface.names())
        for p in surface:
            assert getattr(est, p.name) is p.default
            assert f"\n    {p.name} : {p.type}, default=" in cls.__doc__
    with pytest.raises(ValueError, match="max_features"):
        RotationTreeRegressor(max_features=1.5).fit(*_per_tree_data("reg"))


@parametrize_with_checks(
    [RotationTreeClassifier(random_state=0), RotationTreeRegressor(random_state=0)]
)
def test_rotation_trees_pass_sklearn_estimator_checks(estimator, check):
    check(estimator)


def test_rotation_ensemble_surface_keeps_its_own_constraints(iris):
    # declared from the forests' table, with the ensembles' own rules
    X, y = iris
    assert RotationEnsembleClassifier().n_estimators == 500
    assert RotationEnsembleClassifier().max_features == "sqrt"
    assert RotationEnsembleRegressor().max_features == 1.0
    assert "class_weight" not in RotationEnsembleRegressor().get_params()
    for params in (
        {"max_features": 1.5},  # axis-aligned: at most every feature
        {"oob_score": accuracy_score_callable},
        {"class_weight": "balanced_subsample"},
    ):
        with pytest.raises(ValueError, match=next(iter(params))):
            RotationEnsembleClassifier(n_estimators=5, n_rotations=2, **params).fit(X, y)


def accuracy_score_callable(y, pred):
    return float(np.mean(y == pred))


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "params",
    [
        {"weighting": "best"},
        {"n_rotations": 0},
        {"micro_forest_size": 0},
        {"n_estimators": 0},
        {"h": 0.0},
        {"h": -1.0},
        {"scaling": "zscore"},
        {"h_criterion": "aic"},
        {"weighting": "cut", "h": 2.5},
        {"weighting": "cut", "h": 9},
        {"weighting": "oob", "bootstrap": False},
        {"weighting": "exp", "bootstrap": False},
        {"oob_score": True, "bootstrap": False},
        {"weighting": "exp", "h_grid": [1.0, -2.0]},
        {"weighting": "cut", "h_grid": [1.5]},
        {"max_features": 0},
    ],
)
def test_rotation_ensemble_bad_params_raise_value_error(iris, params):
    X, y = iris
    with pytest.raises(ValueError):
        RotationEnsembleClassifier(**{"n_estimators": 10, "n_rotations": 4, **params}).fit(X, y)


def test_rotation_ensemble_without_bootstrap_works_for_complexity_schemes(iris):
    X, y = iris
    clf = RotationEnsembleClassifier(
        n_estimators=20, n_rotations=3, weighting="exp", h=1.0, bootstrap=False, random_state=0
    ).fit(X, y)
    assert np.all(np.isnan(clf.rotation_oob_error_))
    assert clf.n_trees_per_rotation_.sum() == 20


@pytest.mark.parametrize("Estimator", [RotationEnsembleClassifier, RotationEnsembleRegressor])
def test_rotation_ensemble_bad_data_raise_value_error(iris, Estimator):
    X, y = iris
    est = Estimator(n_estimators=10, n_rotations=2, random_state=0)
    X_inf = X.copy()
    X_inf[3, 1] = np.inf  # (NaN is a missing value: tests/test_missing.py)
    with pytest.raises(ValueError):
        est.fit(X_inf, y)
    with pytest.raises(ValueError):
        est.fit(X, y[:-1])
    with pytest.raises(ValueError):
        est.fit(X, y, sample_weight=-np.ones(len(y)))
    with pytest.raises(NotFittedError):
        est.predict(X)
    est.fit(X, y)
    with pytest.raises(ValueError):
        est.predict(X[:, :3])
    with pytest.raises(ValueError):
        est.predict(X_inf)


def test_rotation_ensemble_classifier_rejects_continuous_target(iris):
    X, _ = iris
    with pytest.raises(ValueError):
        RotationEnsembleClassifier(n_estimators=5, n_rotations=2).fit(X, np.linspace(0, 1, 150))


def test_rotation_ensemble_oob_score_with_truncated_rotations_keeps_same_trees(iris):
    # LIN gives 10, 8, 6, 4, 2 trees: four micro-forests lose trees.
    X, y = iris
    params = {"n_estimators": 30, "n_rotations": 5, "weighting": "lin", "random_state": 4}
    plain = RotationEnsembleClassifier(**params).fit(X, y)
    with_oob = RotationEnsembleClassifier(oob_score=True, **params).fit(X, y)
    np.testing.assert_array_equal(np.sort(plain.n_trees_per_rotation_), [2, 4, 6, 8, 10])
    np.testing.assert_array_equal(plain.predict_proba(X), with_oob.predict_proba(X))
    assert 0.8 < with_oob.oob_score_ <= 1.0


# --------------------------------------------------------------------------- pinned models

# Each case: estimator, parameters, data. The data are those of tests/test_model_hashes.py
# (continuous, discrete and binary columns) with NaN or sparse X where named.
ROTATION_PIN_CASES = {
    "clf_exp_weighted": (
        RotationEnsembleClassifier,
        dict(
            n_estimators=30,
            n_rotations=5,
            micro_forest_size=4,
            weighting="exp",
            h_criterion="ensemble_oob",
        ),
        "clf",
    ),
    "clf_lin_oob": (  # 10, 8, 6, 4, 2 trees: grown beyond U, truncated and refitted for OOB
        RotationEnsembleClassifier,
        dict(n_estimators=30, n_rotations=5, micro_forest_size=5, weighting="lin", oob_score=True),
        "clf",
    ),
    "reg_cut_rank_nan": (
        RotationEnsembleRegressor,
        dict(
            n_estimators=20,
            n_rotations=4,
            micro_forest_size=3,
            weighting="cut",
            h=2,
            scaling="rank",
            max_features=0.3,
        ),
        "reg_nan",
    ),  # fmt: skip
    "clf_bst_sparse": (
        RotationEnsembleClassifier,
        dict(n_estimators=16, n_rotations=4, micro_forest_size=4, weighting="bst"),
        "clf_sparse",
    ),
}

# sha256 of (bytes, nodes) over every rotation's core forest in rotation order (and the
# rotations and tree counts): the same seed must keep growing the very same trees, on every
# machine. Re-pinned once (the commit after 92eae5c): the rotations and the rotated data
# used to come from numpy's QR and matrix product, whose BLAS kernels (picked by processor)
# round differently: pins recorded on one machine failed on an AMD EPYC. They come from the
# core now, summed in one fixed order (src/linalg.rs), and these pins hold under every
# kernel (test_rotation_ensemble_does_not_depend_on_the_blas_kernel).
ROTATION_PINS = {
    "clf_bst_sparse": (
        "3b7f36444e7f233dfc44e4b114788b790977b998a3217323c46995801728d465",
        "28f0e55907ba55e1309c324ecdbd0d3894a1df90abdb7e2b5f25f851834dcd19",
    ),
    "clf_exp_weighted": (
        "a133b48be95c8e5be5f73b37f074801dca0b45cafee64c82dd5dc28b951a648c",
        "46ed9ed35aec701678b1b27062238de5aadaca1983181a81e752ec5961511d78",
    ),
    "clf_lin_oob": (
        "1e52a4d59407bdd9d4b67ef4b2f994c6434a691d12595f95ea7a205072a913fd",
        "62e4d12c2a3a2bc7661687a57beefdba2bc33471cb73b7a5dc28db23f6fb1842",
    ),
    "reg_cut_rank_nan": (
        "e23942481ef749caecb7af670b34accaea8ef2be44caf809d702cf1d35572aa8",
        "290eae6a97ac006b45335499725d876e1041104407777be4832cb9d5e6473b68",
    ),
}


def _rotation_pin_fit(name, n_jobs=1):
    from test_model_hashes import _data

    cls, params, kind = ROTATION_PIN_CASES[name]
    X, y = _data("clf" if kind.startswith("clf") else "reg", n=200, p=24)
    if kind == "reg_nan":
        X[np.random.default_rng(1).random(X.shape) < 0.05] = np.nan
    if kind == "clf_sparse":
        X = sparse.csr_matrix(np.where(np.abs(X) < 0.8, 0.0, X))
    weights = np.linspace(0.5, 1.5, len(y))
    return cls(**params, n_jobs=n_jobs, random_state=11).fit(X, y, sample_weight=weights)


def _rotation_digests(est):
    from test_model_hashes import _nodes_digest

    by_bytes, by_nodes = hashlib.sha256(), hashlib.sha256()
    for h in (by_bytes, by_nodes):
        h.update(np.ascontiguousarray(est.rotations_).tobytes())
        h.update(np.asarray(est.n_trees_per_rotation_, dtype=np.int64).tobytes())
    for forest in est._forests:
        by_bytes.update(b"-" if forest is None else forest.to_bytes())
        by_nodes.update(b"-" if forest is None else _nodes_digest(forest).encode())
    return by_bytes.hexdigest(), by_nodes.hexdigest()


def _rotation_attributes_digest(est):
    """The fit's numbers besides the forests: what the ranking and weighting read (OOB
    errors, complexities, the h search) and the OOB estimates."""
    h = hashlib.sha256()
    for name in ROTATION_PINNED_ATTRIBUTES:
        value = getattr(est, name, None)
        if value is not None:
            h.update(name.encode())
            h.update(np.ascontiguousarray(value, dtype=np.float64).tobytes())
    return h.hexdigest()


# sha256 of the fitted numbers of _rotation_attributes_digest, recorded on main (995a736)
ROTATION_ATTRIBUTE_PINS = {
    "clf_bst_sparse": "8a1de70fec6ee8d4e0bdc1d388c0d683c671423c20fba47c2fd668c294c2eeb5",
    "clf_exp_weighted": "b96a785f97ccb6441239c69471c7296f93e1b7bb549f7d2ec6e84f7f019524d6",
    "clf_lin_oob": "a33bd63cffef2078b9d71e161652655c9143b849dd7279710ebfba69129d6e59",
    "reg_cut_rank_nan": "3a3e92ad956397f473d75154ef32e96d3b5e83a8fa81ea93a937074b6ae37bb7",
}
ROTATION_PINNED_ATTRIBUTES = (
    "rotation_complexity_",
    "rotation_oob_error_",
    "rotation_weights_",
    "h_scores_",
    "oob_decision_function_",
    "oob_prediction_",
)


@pytest.mark.parametrize("name", sorted(ROTATION_PIN_CASES))
def test_rotation_ensemble_model_hash_is_pinned(name):
    est = _rotation_pin_fit(name)
    bytes_digest, nodes_digest = _rotation_digests(est)
    want_bytes, want_nodes = ROTATION_PINS[name]
    assert nodes_digest == want_nodes, f"{name}: the trees changed"
    assert bytes_digest == want_bytes, f"{name}: the serialized forests changed"
    assert _rotation_attributes_digest(est) == ROTATION_ATTRIBUTE_PINS[name], name


@pytest.mark.parametrize("kernel", ["Prescott", "Sandybridge"])
def test_rotation_ensemble_does_not_depend_on_the_blas_kernel(kernel):
    """The fits of the pins in a process whose OpenBLAS uses other kernels (numpy's wheels
    pick them by processor; OPENBLAS_CORETYPE forces one): the same rotations, trees and
    fitted numbers. numpy's QR and matrix product gave other rotations under these."""
    script = (
        "import sys; sys.path.insert(0, '.'); import test_rotation as t\n"
        "for name in sorted(t.ROTATION_PINS):\n"
        "    est = t._rotation_pin_fit(name)\n"
        "    print(name, *t._rotation_digests(est), t._rotation_attributes_digest(est))\n"
    )
    env = {**os.environ, "OPENBLAS_CORETYPE": kernel}
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=Path(__file__).parent, env=env,
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    got = {line.split()[0]: line.split()[1:] for line in done.stdout.splitlines()}
    for name, (want_bytes, want_nodes) in ROTATION_PINS.items():
        assert got[name] == [want_bytes, want_nodes, ROTATION_ATTRIBUTE_PINS[name]], name


def test_rotation_ensemble_model_hash_ignores_n_jobs():
    one, two = (_rotation_pin_fit("clf_lin_oob", n_jobs) for n_jobs in (1, 2))
    assert _rotation_digests(one) == _rotation_digests(two)


def test_rotation_oob_errors_are_oob_error_of_each_rotation(iris):
    """The micro-forests' OOB errors of a single-output classifier, counted for several
    rotations at once, equal ``_oob_error`` of each rotation bit for bit: ties between
    classes (the first wins), rows without OOB trees, a rotation without any (NaN)."""
    X, y = iris
    clf = RotationEnsembleClassifier(n_estimators=20, n_rotations=4, random_state=0).fit(X, y)
    rng = np.random.default_rng(5)
    R, n = 6, len(y)
    counts = rng.integers(0, 4, size=(R, n)).astype(np.float64)
    counts[2] = 0.0
    sums = rng.integers(0, 3, size=(R, n, 3)) * counts[:, :, None] / 2
    codes = np.unique(y, return_inverse=True)[1].astype(np.float64)
    got = clf._rotation_oob_errors(list(zip(sums, counts)), codes, None)
    want = np.array([clf._oob_error(s, c, codes, None) for s, c in zip(sums, counts)])
    assert np.isnan(got[2]) and np.isnan(want[2])
    np.testing.assert_array_equal(got, want)
    assert len(set(got[np.isfinite(got)].tolist())) > 1
