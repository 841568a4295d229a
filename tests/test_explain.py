"""obliqueforest.explain.TreeExplainer: exact Shapley values of both games checked against
brute force over all 2^p coalitions for every tree family, local accuracy, shap's layouts
and shap's own TreeExplainer on axis trees, the estimation path, threads, errors and
sparse input.

The brute-force references are built here from the trees' node tables
(``_core.Forest.tree_nodes``) and the rows' sides at each node (``node_decisions``) for
the path-dependent game, and from the core's raw predictions on hybrid rows for the
interventional game; nothing of the code under test is used to build them.
"""

from __future__ import annotations

import functools
import math
import warnings

import numpy as np
import pytest
from scipy import sparse
from sklearn.exceptions import NotFittedError

import obliqueforest as of
from obliqueforest import projections
from obliqueforest.explain import TreeExplainer

# ---------------------------------------------------------------------------------------
# data and models


def _data(task, p, n=160, seed=0, missing=0.0, constant=False):
    """X (n, p) and y for ``task``: "reg", "clf" (3 classes), "multi-reg" (2 targets),
    "multi-clf" (3 and 2 classes) or "none"; NaN at rate ``missing``; the last column
    constant when ``constant``."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    signal = X[:, 0] + X[:, 1] * X[:, 2 % p] - 0.5 * X[:, 3 % p]
    if task == "reg":
        y = signal + 0.1 * rng.normal(size=n)
    elif task == "clf":
        y = np.digitize(signal, [-0.5, 0.5])
    elif task == "multi-reg":
        y = np.stack([signal, X[:, 1] - X[:, 4 % p]], axis=1)
    elif task == "multi-clf":
        y = np.stack([np.digitize(signal, [-0.5, 0.5]), (X[:, 1] > X[:, 4 % p])], axis=1)
        y = y.astype(int)
    else:
        y = None
    if constant:
        X[:, -1] = 1.5
    if missing:
        X[rng.uniform(size=X.shape) < missing] = np.nan
        if constant:
            X[:, -1] = 1.5
    return X, y


def _atoms(p):
    """A dictionary: every feature alone, and a few sums and differences of features."""
    eye = np.eye(p)
    mixed = np.zeros((p, 3))
    mixed[[0, 1], 0] = 1.0
    mixed[[1, 2, 3], 1] = [1.0, -1.0, 0.5]
    mixed[[2, p - 1], 2] = [1.0, 1.0]
    return np.concatenate([eye, mixed], axis=1)


def _chain(p):
    adjacency = np.zeros((p, p))
    idx = np.arange(p - 1)
    adjacency[idx, idx + 1] = 1
    return adjacency


def _image(p):
    return (2, p // 2)


# name -> (task, builder(p, n_estimators, max_depth), missing rate, axis-aligned trees)
FAMILIES = {
    "rf-clf": ("clf", lambda p, n, d: of.RandomForestClassifier(n, max_depth=d), 0.0, True),
    "rf-reg": ("reg", lambda p, n, d: of.RandomForestRegressor(n, max_depth=d), 0.0, True),
    "sporf-clf": ("clf", lambda p, n, d: of.SPORFClassifier(n, max_depth=d), 0.0, False),
    "sporf-reg": ("reg", lambda p, n, d: of.SPORFRegressor(n, max_depth=d), 0.0, False),
    "forest-rc-clf": (
        "clf",
        lambda p, n, d: of.ObliqueForestClassifier(projections.ForestRC(3), n, max_depth=d),
        0.0,
        False,
    ),
    "gaussian-reg": (
        "reg",
        lambda p, n, d: of.ObliqueForestRegressor(projections.Gaussian(), n, max_depth=d),
        0.0,
        False,
    ),
    "sparse-signed-clf": (
        "clf",
        lambda p, n, d: of.ObliqueForestClassifier(
            projections.SparseSigned(feature_combinations=2.5), n, max_depth=d
        ),
        0.0,
        False,
    ),
    # MORF with its defaults: sums, Haar differences and pooled (max / min) filters
    "morf-clf": (
        "clf",
        lambda p, n, d: of.MORFClassifier(
            n, data_shape=_image(p), max_patch_size=2, pooled=0.5, max_depth=d
        ),
        0.0,
        False,
    ),
    # the paper's MORF: patch sums only
    "morf-sums-reg": (
        "reg",
        lambda p, n, d: of.MORFRegressor(
            n, data_shape=_image(p), max_patch_size=2, differences=0, pooled=0, max_depth=d
        ),
        0.0,
        False,
    ),
    "dictionary-reg": (
        "reg",
        lambda p, n, d: of.ObliqueForestRegressor(
            projections.Dictionary(_atoms(p)), n, max_depth=d
        ),
        0.0,
        False,
    ),
    "graph-clf": (
        "clf",
        lambda p, n, d: of.ObliqueForestClassifier(
            projections.GraphNeighbourhood(_chain(p)), n, max_depth=d
        ),
        0.0,
        False,
    ),
    "isolation-axis": ("none", lambda p, n, d: of.IsolationForest(n, max_samples=48), 0.0, True),
    "isolation-sporf": (
        "none",
        lambda p, n, d: of.IsolationForest(
            n, projection=projections.SparseSigned(), max_samples=48
        ),
        0.0,
        False,
    ),
    "quantile-rf-reg": (
        "reg",
        lambda p, n, d: of.RandomForestRegressor(n, max_depth=d, store_leaf_values=True),
        0.0,
        True,
    ),
    "quantile-sporf-reg": (
        "reg",
        lambda p, n, d: of.SPORFRegressor(n, max_depth=d, store_leaf_values=True),
        0.0,
        False,
    ),
    "honest-rf-clf": (
        "clf",
        lambda p, n, d: of.RandomForestClassifier(n, max_depth=d, honest_fraction=0.5),
        0.0,
        True,
    ),
    "honest-sporf-reg": (
        "reg",
        lambda p, n, d: of.SPORFRegressor(n, max_depth=d, honest_fraction=0.5),
        0.0,
        False,
    ),
    "rf-multi-reg": (
        "multi-reg",
        lambda p, n, d: of.RandomForestRegressor(n, max_depth=d),
        0.0,
        True,
    ),
    "sporf-multi-clf": (
        "multi-clf",
        lambda p, n, d: of.SPORFClassifier(n, max_depth=d),
        0.0,
        False,
    ),
    # native missing values: rows, background rows and hybrids hold NaN
    "rf-reg-missing": ("reg", lambda p, n, d: of.RandomForestRegressor(n, max_depth=d), 0.15, True),
    "sporf-clf-missing": ("clf", lambda p, n, d: of.SPORFClassifier(n, max_depth=d), 0.15, False),
}


@functools.lru_cache(maxsize=None)
def _fitted(name, p, n_estimators, max_depth, constant=False):
    """(model, X, y) for family ``name``, fitted with a fixed seed."""
    task, build, missing, _ = FAMILIES[name]
    X, y = _data(task, p, missing=missing, constant=constant)
    model = build(p, n_estimators, max_depth)
    model.set_params(random_state=0, n_jobs=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X) if y is None else model.fit(X, y)
    return model, X, y


def _f32(X):
    return np.ascontiguousarray(X, dtype=np.float32)


def _stack(values):
    """Our values as (n, p, outputs) whatever the layout."""
    if isinstance(values, list):
        return np.concatenate(values, axis=2)
    values = np.asarray(values)
    return values[:, :, None] if values.ndim == 2 else values


def _stack_expected(expected):
    if isinstance(expected, list):
        return np.concatenate(expected)
    return np.atleast_1d(np.asarray(expected, dtype=np.float64))


def _prediction(model, X):
    """The explained output through the model's public API, (n, outputs)."""
    if isinstance(model, of.IsolationForest):
        # score_samples = -2 ** -(mean normalised path length)
        return (-np.log2(-model.score_samples(X)))[:, None]
    if hasattr(model, "predict_proba"):
        proba = model.predict_proba(X)
        return np.concatenate(proba, axis=1) if isinstance(proba, list) else proba
    pred = model.predict(X)
    return pred[:, None] if pred.ndim == 1 else pred


def _used_features(model):
    """Features with a term in some node's projection, over all trees."""
    used = set()
    for t in range(model._forest.n_trees):
        nodes = model._forest.tree_nodes(t)
        used.update(nodes["proj_features"].tolist())
    return used


# ---------------------------------------------------------------------------------------
# brute force


def _coalitions(p):
    """All 2^p coalitions as boolean rows; row ``m`` is the bitmask ``m``."""
    return ((np.arange(2**p)[:, None] >> np.arange(p)) & 1).astype(bool)


def _shapley(v, p):
    """Shapley values (p, k) of the game ``v`` (2^p, k) indexed by bitmask."""
    masks = np.arange(2**p)
    sizes = np.array([bin(m).count("1") for m in masks])
    phi = np.zeros((p, v.shape[1]))
    for j in range(p):
        without = masks[((masks >> j) & 1) == 0]
        weight = np.array(
            [
                math.factorial(s) * math.factorial(p - s - 1) / math.factorial(p)
                for s in sizes[without]
            ]
        )
        phi[j] = (weight[:, None] * (v[without | (1 << j)] - v[without])).sum(axis=0)
    return phi


def _path_game_tree(nodes, goes_left, S):
    """One tree's path-dependent v(S) for every coalition in S (C, p): (C, k)."""
    left, right = nodes["left"], nodes["right"]
    w = nodes["weighted_n_node_samples"]
    value = nodes["value"]
    ptr, feats = nodes["proj_ptr"], nodes["proj_features"]
    C = S.shape[0]
    out = [None] * len(left)
    # children come after their parents in the node table
    for node in range(len(left) - 1, -1, -1):
        if left[node] < 0:
            out[node] = np.broadcast_to(value[node], (C, value.shape[1]))
            continue
        lo, hi = left[node], right[node]
        assert lo > node and hi > node
        node_feats = np.unique(feats[ptr[node] : ptr[node + 1]])
        known = S[:, node_feats].all(axis=1)[:, None]
        total = w[lo] + w[hi]
        f_lo, f_hi = (w[lo] / total, w[hi] / total) if total > 0 else (0.5, 0.5)
        taken = out[lo] if goes_left[node] else out[hi]
        out[node] = np.where(known, taken, f_lo * out[lo] + f_hi * out[hi])
    return out[0]


def _brute_path_dependent(model, x):
    """(values (n, p, k), v(empty) (k,)) of the path-dependent game, all coalitions."""
    forest = model._forest
    x = _f32(x)
    n, p = x.shape
    S = _coalitions(p)
    n_trees = forest.n_trees
    games = np.zeros((n, 2**p, forest.n_outputs))
    for t in range(n_trees):
        nodes = forest.tree_nodes(t)
        _, goes_left = forest.node_decisions(x, t)
        for i in range(n):
            games[i] += _path_game_tree(nodes, goes_left[i], S) / n_trees
    # the full coalition is the forest's prediction: the node table was read right
    np.testing.assert_allclose(games[:, -1], forest.predict(x, 1), rtol=0, atol=1e-9)
    values = np.stack([_shapley(games[i], p) for i in range(n)])
    return values, games[0, 0]


def _brute_interventional(model, x, background):
    """(values (n, p, k), v(empty) (k,)) of the interventional game, all coalitions."""
    forest = model._forest
    x, background = _f32(x), _f32(background)
    n, p = x.shape
    S = _coalitions(p)
    values, empty = [], None
    for i in range(n):
        hybrid = np.where(S[:, None, :], x[i][None, None, :], background[None, :, :])
        raw = forest.predict(_f32(hybrid.reshape(-1, p)), 1)
        game = raw.reshape(2**p, background.shape[0], -1).mean(axis=1)
        values.append(_shapley(game, p))
        empty = game[0]
    return np.stack(values), empty


BRUTE_P = 6


def _brute_rows(name):
    model, X, _ = _fitted(name, BRUTE_P, 4, 5)
    rng = np.random.default_rng(1)
    x, _ = _data(FAMILIES[name][0], BRUTE_P, n=3, seed=7, missing=FAMILIES[name][2])
    x = np.concatenate([x, X[rng.choice(len(X), 1)]])  # a training row too
    background = X[rng.choice(len(X), 6, replace=False)]
    return model, x, background


@pytest.mark.parametrize("name", FAMILIES)
def test_path_dependent_values_equal_brute_force(name):
    model, x, _ = _brute_rows(name)
    explainer = TreeExplainer(model)
    assert explainer.feature_perturbation == "tree_path_dependent"
    ours = _stack(explainer.shap_values(x))
    assert explainer.n_estimated_ == 0 and explainer.std_err_ is None
    expected, empty = _brute_path_dependent(model, x)
    assert ours.shape == expected.shape
    np.testing.assert_allclose(ours, expected, rtol=0, atol=1e-8)
    np.testing.assert_allclose(_stack_expected(explainer.expected_value), empty, rtol=0, atol=1e-8)


@pytest.mark.parametrize("name", FAMILIES)
def test_interventional_values_equal_brute_force(name):
    model, x, background = _brute_rows(name)
    explainer = TreeExplainer(model, data=background)
    assert explainer.feature_perturbation == "interventional"
    ours = _stack(explainer.shap_values(x))
    assert explainer.n_estimated_ == 0 and explainer.std_err_ is None
    expected, empty = _brute_interventional(model, x, background)
    assert ours.shape == expected.shape
    np.testing.assert_allclose(ours, expected, rtol=0, atol=1e-8)
    np.testing.assert_allclose(_stack_expected(explainer.expected_value), empty, rtol=0, atol=1e-8)


def test_brute_force_families_have_the_splits_they_name():
    # the oblique families really split on several features, MORF's default really pools,
    # and the axis families on one feature a node: the brute-force tests cover those cases
    for name, (_, _, _, axis) in FAMILIES.items():
        model = _fitted(name, BRUTE_P, 4, 5)[0]
        widths, pooled = [], 0
        for t in range(model._forest.n_trees):
            nodes = model._forest.tree_nodes(t)
            inner = nodes["left"] >= 0
            ptr, feats = nodes["proj_ptr"], nodes["proj_features"]
            widths += [len(set(feats[ptr[i] : ptr[i + 1]])) for i in np.flatnonzero(inner)]
            pooled += int(np.count_nonzero(nodes["proj_pool"][inner]))
        assert widths, name
        if axis:
            assert max(widths) == 1, name
        else:
            assert max(widths) > 1, name
        if name == "morf-clf":
            assert pooled > 0


# ---------------------------------------------------------------------------------------
# local accuracy and unused features on bigger forests

ACCURACY_P = 8


@pytest.mark.parametrize("game", ["tree_path_dependent", "interventional"])
@pytest.mark.parametrize("name", FAMILIES)
def test_local_accuracy_and_unused_features(name, game):
    model, X, _ = _fitted(name, ACCURACY_P, 12, None, constant=True)
    x = X[:15]
    background = X[-20:] if game == "interventional" else None
    explainer = TreeExplainer(model, background, game)
    values = _stack(explainer.shap_values(x))
    assert values.shape[:2] == (15, ACCURACY_P)
    assert explainer.n_estimated_ == 0
    total = values.sum(axis=1) + _stack_expected(explainer.expected_value)[None, :]
    np.testing.assert_allclose(total, _prediction(model, x), rtol=0, atol=1e-6)
    # a feature no split uses gets exactly 0; the constant column is such a feature in
    # axis-aligned trees (oblique projections may still carry it with a weight)
    unused = sorted(set(range(ACCURACY_P)) - _used_features(model))
    if FAMILIES[name][3]:
        assert ACCURACY_P - 1 in unused
    assert np.all(values[:, unused, :] == 0.0)
    if game == "interventional":
        # x and every background row agree on the constant column: no hybrid changes
        assert np.all(values[:, ACCURACY_P - 1, :] == 0.0)


# ---------------------------------------------------------------------------------------
# layouts


def test_single_output_regressor_layout():
    model, X, _ = _fitted("rf-reg", 5, 8, 6)
    for data in (None, X[:10]):
        explainer = TreeExplainer(model, data)
        values = explainer.shap_values(X[:7])
        assert isinstance(values, np.ndarray) and values.shape == (7, 5)
        assert isinstance(explainer.expected_value, float)
        np.testing.assert_allclose(
            values.sum(axis=1) + explainer.expected_value, model.predict(X[:7]), atol=1e-6
        )


def test_isolation_forest_layout():
    model, X, _ = _fitted("isolation-sporf", 5, 8, None)
    explainer = TreeExplainer(model)
    values = explainer.shap_values(X[:4])
    assert values.shape == (4, 5) and isinstance(explainer.expected_value, float)
    # the explained output is the mean normalised path length behind score_samples
    np.testing.assert_allclose(
        values.sum(axis=1) + explainer.expected_value,
        -np.log2(-model.score_samples(X[:4])),
        atol=1e-6,
    )


def test_classifier_layout():
    model, X, _ = _fitted("sporf-clf", 5, 8, 6)
    for data in (None, X[:10]):
        explainer = TreeExplainer(model, data)
        values = explainer.shap_values(X[:7])
        assert isinstance(values, np.ndarray) and values.shape == (7, 5, 3)
        assert isinstance(explainer.expected_value, np.ndarray)
        assert explainer.expected_value.shape == (3,)
        np.testing.assert_allclose(explainer.expected_value.sum(), 1.0, atol=1e-9)
        np.testing.assert_allclose(
            values.sum(axis=1) + explainer.expected_value, model.predict_proba(X[:7]), atol=1e-6
        )
        # probabilities add up to 1 whatever the coalition: each feature's shares cancel
        np.testing.assert_allclose(values.sum(axis=2), 0.0, atol=1e-9)


def test_binary_classifier_layout():
    X, y = _data("clf", 5)
    model = of.RandomForestClassifier(6, max_depth=5, random_state=0).fit(X, y == 2)
    explainer = TreeExplainer(model)
    values = explainer.shap_values(X[:4])
    assert values.shape == (4, 5, 2) and explainer.expected_value.shape == (2,)


def test_multi_output_regressor_layout():
    model, X, _ = _fitted("rf-multi-reg", 5, 8, 6)
    for data in (None, X[:10]):
        explainer = TreeExplainer(model, data)
        values = explainer.shap_values(X[:7])
        assert isinstance(values, np.ndarray) and values.shape == (7, 5, 2)
        assert explainer.expected_value.shape == (2,)
        np.testing.assert_allclose(
            values.sum(axis=1) + explainer.expected_value, model.predict(X[:7]), atol=1e-6
        )


def test_multi_output_classifier_layout():
    model, X, _ = _fitted("sporf-multi-clf", 5, 8, 6)
    for data in (None, X[:10]):
        explainer = TreeExplainer(model, data)
        values = explainer.shap_values(X[:7])
        assert isinstance(values, list) and len(values) == 2
        assert [v.shape for v in values] == [(7, 5, 3), (7, 5, 2)]
        assert isinstance(explainer.expected_value, list)
        assert [e.shape for e in explainer.expected_value] == [(3,), (2,)]
        for v, e, proba in zip(values, explainer.expected_value, model.predict_proba(X[:7])):
            np.testing.assert_allclose(v.sum(axis=1) + e, proba, atol=1e-6)
        # the list splits the core's (n, p, 3 + 2) values at the outputs' classes
        core = model._forest.shap_values(_f32(X[:7]), None if data is None else _f32(data))[0]
        np.testing.assert_array_equal(_stack(values), core)


# ---------------------------------------------------------------------------------------
# shap's TreeExplainer on the same axis trees


def _shap_dict_model(model):
    """An axis-aligned forest in shap's dict model format (leaf values / n_trees, so the
    trees' sum is the forest's mean)."""
    forest = model._forest
    n_trees = forest.n_trees
    trees = []
    for t in range(n_trees):
        nodes = forest.tree_nodes(t)
        leaf = nodes["left"] < 0
        width = np.diff(nodes["proj_ptr"])
        assert np.all(width[~leaf] == 1) and np.all(nodes["proj_weights"] == 1.0)
        features = np.full(len(leaf), -2, dtype=np.int64)
        features[~leaf] = nodes["proj_features"][nodes["proj_ptr"][:-1][~leaf]]
        trees.append(
            {
                "children_left": nodes["left"],
                "children_right": nodes["right"],
                "children_default": np.where(
                    nodes["missing_go_to_left"].astype(bool), nodes["left"], nodes["right"]
                ),
                "features": features,
                "thresholds": nodes["threshold"],
                "values": nodes["value"] / n_trees,
                "node_sample_weight": nodes["weighted_n_node_samples"],
            }
        )
    return {
        "trees": trees,
        "base_offset": 0.0,
        "tree_output": "raw_value",
        "objective": "squared_error",
        "input_dtype": np.float32,
        "internal_dtype": np.float64,
    }


@pytest.mark.parametrize("game", ["tree_path_dependent", "interventional"])
@pytest.mark.parametrize("name", ["rf-reg", "rf-clf"])
def test_values_equal_shap_tree_explainer_on_axis_trees(name, game):
    shap = pytest.importorskip("shap")
    model, X, _ = _fitted(name, 7, 10, 8)
    x = _f32(X[:20])
    if game == "tree_path_dependent":
        reference = shap.TreeExplainer(_shap_dict_model(model))
        ours = TreeExplainer(model)
    else:
        # shap's interventional algorithm takes a dict model with background data
        background = _f32(X[-30:])
        reference = shap.TreeExplainer(
            _shap_dict_model(model), data=background, feature_perturbation="interventional"
        )
        ours = TreeExplainer(model, data=background)
    assert reference.feature_perturbation == game
    expected = np.asarray(reference.shap_values(x, check_additivity=False))
    got = ours.shap_values(x)
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-6)
    np.testing.assert_allclose(
        np.atleast_1d(ours.expected_value), np.atleast_1d(reference.expected_value), atol=1e-6
    )


@pytest.mark.parametrize("name", ["rf-reg", "rf-clf"])
def test_interaction_values_equal_shap_on_axis_trees(name):
    shap = pytest.importorskip("shap")
    model, X, _ = _fitted(name, 6, 8, 7)
    x = _f32(X[:15])
    expected = np.asarray(shap.TreeExplainer(_shap_dict_model(model)).shap_interaction_values(x))
    got = TreeExplainer(model).shap_interaction_values(x)
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-6)


@pytest.mark.parametrize(
    "name",
    [
        "rf-clf",
        "sporf-reg",
        "sporf-clf",
        "gaussian-reg",
        "morf-clf",
        "isolation-sporf",
        "sporf-multi-clf",
    ],
)
def test_interaction_values_add_up_to_the_values_and_are_symmetric(name):
    model, X, _ = _fitted(name, BRUTE_P, 6, None)
    explainer = TreeExplainer(model)
    rows = X[:12]
    inter = _stack_interactions(explainer.shap_interaction_values(rows))
    values = _stack(explainer.shap_values(rows))
    np.testing.assert_allclose(inter.sum(axis=2), values, rtol=0, atol=1e-9)
    np.testing.assert_allclose(inter, inter.transpose(0, 2, 1, 3), rtol=0, atol=1e-12)


def _stack_interactions(values):
    if isinstance(values, list):
        return np.concatenate(values, axis=3)
    values = np.asarray(values)
    return values[..., None] if values.ndim == 3 else values


def test_interaction_values_need_the_path_dependent_game_and_the_bound():
    model, X, _ = _fitted("sporf-clf", BRUTE_P, 6, None)
    with pytest.raises(ValueError, match="path-dependent"):
        TreeExplainer(model, X[:5]).shap_interaction_values(X[:2])
    with pytest.raises(of.ForestError, match="max_terms"):
        TreeExplainer(model, max_terms=1).shap_interaction_values(X[:2])


def test_rotation_ensemble_interaction_values_add_up():
    X, y = _data("clf", 5, n=150)
    model = of.RotationEnsembleClassifier(
        8, n_rotations=2, micro_forest_size=4, random_state=0
    ).fit(X, y)
    explainer = TreeExplainer(model)
    inter = explainer.shap_interaction_values(X[:6])
    np.testing.assert_allclose(inter.sum(axis=2), explainer.shap_values(X[:6]), rtol=0, atol=1e-9)


# ---------------------------------------------------------------------------------------
# shap.Explanation


def test_call_returns_a_shap_explanation_with_the_frame_names():
    shap = pytest.importorskip("shap")
    pd = pytest.importorskip("pandas")
    X, y = _data("reg", 4)
    frame = pd.DataFrame(X, columns=["age", "dose", "weight", "height"])
    model = of.RandomForestRegressor(6, max_depth=5, random_state=0).fit(frame, y)
    explainer = TreeExplainer(model)
    assert explainer.feature_names == ["age", "dose", "weight", "height"]
    explanation = explainer(frame.iloc[:5])
    assert isinstance(explanation, shap.Explanation)
    assert list(explanation.feature_names) == ["age", "dose", "weight", "height"]
    assert explanation.values.shape == (5, 4)
    np.testing.assert_array_equal(explanation.values, explainer.shap_values(frame.iloc[:5]))
    np.testing.assert_allclose(explanation.base_values, np.full(5, explainer.expected_value))
    np.testing.assert_allclose(explanation.data, X[:5].astype(np.float32))
    # a DataFrame background and the interventional game
    background = frame.iloc[-10:]
    explanation = TreeExplainer(model, background)(frame.iloc[:5])
    np.testing.assert_allclose(
        explanation.values.sum(axis=1) + explanation.base_values,
        model.predict(frame.iloc[:5]),
        atol=1e-6,
    )


def test_call_on_a_classifier_and_refusal_for_multi_output_classifiers():
    shap = pytest.importorskip("shap")
    model, X, _ = _fitted("rf-clf", 5, 6, 5)
    explanation = TreeExplainer(model)(X[:3])
    assert isinstance(explanation, shap.Explanation)
    assert explanation.values.shape == (3, 5, 3) and explanation.base_values.shape == (3, 3)
    multi, X, _ = _fitted("sporf-multi-clf", 5, 8, 6)
    with pytest.raises(ValueError, match="multi-output classifier"):
        TreeExplainer(multi)(X[:3])


# ---------------------------------------------------------------------------------------
# estimation beyond max_terms


@pytest.mark.parametrize("game", ["tree_path_dependent", "interventional"])
def test_estimates_beyond_max_terms(game):
    model, X, _ = _fitted("sporf-reg", BRUTE_P, 4, 5)
    x = X[:6]
    background = X[-6:] if game == "interventional" else None
    explainer = TreeExplainer(model, background, game, max_terms=1)
    with pytest.warns(UserWarning, match="estimated"):
        values = explainer.shap_values(x)
    assert explainer.n_estimated_ > 0
    assert explainer.std_err_ is not None and explainer.std_err_.shape == values.shape
    assert np.all(explainer.std_err_ >= 0) and np.any(explainer.std_err_ > 0)
    # local accuracy holds for estimates too
    np.testing.assert_allclose(
        values.sum(axis=1) + explainer.expected_value, model.predict(x), rtol=0, atol=1e-6
    )
    # unbiased estimates near the exact values
    if game == "tree_path_dependent":
        exact = _brute_path_dependent(model, x)[0][:, :, 0]
    else:
        exact = _brute_interventional(model, x, background)[0][:, :, 0]
    assert np.all(np.abs(values - exact) <= 5 * explainer.std_err_ + 1e-9)
    # more permutations, smaller errors
    finer = TreeExplainer(model, background, game, max_terms=1, n_permutations=512)
    with pytest.warns(UserWarning):
        finer_values = finer.shap_values(x)
    assert finer.std_err_.mean() < explainer.std_err_.mean()
    assert np.all(np.abs(finer_values - exact) <= 5 * finer.std_err_ + 1e-9)
    # exact again with the default bound
    default = TreeExplainer(model, background, game)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_allclose(default.shap_values(x), exact, rtol=0, atol=1e-8)
    assert default.n_estimated_ == 0 and default.std_err_ is None


# ---------------------------------------------------------------------------------------
# threads


@pytest.mark.parametrize("max_terms", [None, 1])
@pytest.mark.parametrize("game", ["tree_path_dependent", "interventional"])
@pytest.mark.parametrize("name", ["sporf-clf", "morf-clf", "rf-reg"])
def test_values_do_not_depend_on_n_jobs(name, game, max_terms):
    model, X, _ = _fitted(name, ACCURACY_P, 12, None, constant=True)
    background = X[-15:] if game == "interventional" else None
    results = []
    for n_jobs in (1, 2):
        explainer = TreeExplainer(model, background, game, n_jobs=n_jobs, max_terms=max_terms)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            values = explainer.shap_values(X[:12])
        results.append((values, explainer.std_err_, explainer.n_estimated_))
    (v1, s1, n1), (v2, s2, n2) = results
    np.testing.assert_array_equal(v1, v2)
    assert n1 == n2
    if s1 is None:
        assert s2 is None
    else:
        np.testing.assert_array_equal(s1, s2)


# ---------------------------------------------------------------------------------------
# errors


def test_game_and_data_must_agree():
    model, X, _ = _fitted("rf-reg", 5, 4, 4)
    with pytest.raises(ValueError, match="background"):
        TreeExplainer(model, feature_perturbation="interventional")
    with pytest.raises(ValueError, match="no background"):
        TreeExplainer(model, X[:5], feature_perturbation="tree_path_dependent")
    with pytest.raises(ValueError, match="feature_perturbation"):
        TreeExplainer(model, feature_perturbation="observational")
    with pytest.raises(ValueError, match="feature_perturbation"):
        TreeExplainer(model, X[:5], feature_perturbation="causal")


def test_wrong_columns_empty_background_and_infinity_are_refused():
    model, X, _ = _fitted("rf-reg", 5, 4, 4)
    with pytest.raises(ValueError, match="features"):
        TreeExplainer(model).shap_values(X[:3, :4])
    with pytest.raises(ValueError, match="features"):
        TreeExplainer(model, X[:5]).shap_values(np.zeros((2, 6)))
    with pytest.raises(ValueError, match="features"):
        TreeExplainer(model, X[:5, :3])
    with pytest.raises(ValueError):
        TreeExplainer(model, np.empty((0, 5)))
    with pytest.raises(ValueError, match="infinity"):
        TreeExplainer(model).shap_values(np.full((2, 5), np.inf))


@pytest.mark.parametrize("bad", [0, -1, 1.5, "10"])
def test_bounds_must_be_positive_integers(bad):
    model, _, _ = _fitted("rf-reg", 5, 4, 4)
    with pytest.raises(ValueError, match="max_terms"):
        TreeExplainer(model, max_terms=bad)
    with pytest.raises(ValueError, match="n_permutations"):
        TreeExplainer(model, n_permutations=bad)


def test_models_without_an_explainable_forest_are_refused():
    X, y = _data("clf", 5, n=80)
    with pytest.raises(TypeError, match="predicts nothing"):
        TreeExplainer(of.UnsupervisedRandomForest(3, random_state=0).fit(X))
    with pytest.raises((TypeError, NotFittedError)):
        TreeExplainer(of.RotationEnsembleClassifier(4))
    with pytest.raises((TypeError, NotFittedError)):
        TreeExplainer(of.SPORFClassifier(3))
    with pytest.raises((TypeError, NotFittedError)):
        TreeExplainer(of.IsolationForest(3))
    from sklearn.ensemble import RandomForestRegressor

    with pytest.raises(TypeError):
        TreeExplainer(RandomForestRegressor(3).fit(X, y))


# ---------------------------------------------------------------------------------------
# rotation ensembles: the values of the original features


@pytest.mark.parametrize("task", ["clf", "reg"])
@pytest.mark.parametrize("scaling", ["minmax", "rank"])
def test_rotation_ensembles_are_explained_on_the_original_features(task, scaling):
    X, y = _data(task, 5, n=200, missing=0.1)
    cls = of.RotationEnsembleClassifier if task == "clf" else of.RotationEnsembleRegressor
    model = cls(12, n_rotations=3, micro_forest_size=4, scaling=scaling, random_state=0)
    model.fit(X, y)
    predict = model.predict_proba if task == "clf" else model.predict
    rows, background = X[:4], X[100:106]
    # interventional: all coalitions of hybrid rows, predicted by the ensemble itself
    explainer = TreeExplainer(model, background)
    got = _stack(explainer.shap_values(rows))
    p = X.shape[1]
    S = _coalitions(p)
    for i in range(len(rows)):
        hybrid = np.where(S[:, None, :], rows[i][None, None, :], background[None, :, :])
        raw = predict(hybrid.reshape(-1, p)).reshape(2**p, len(background), -1).mean(axis=1)
        np.testing.assert_allclose(got[i], _shapley(raw, p), rtol=0, atol=1e-9)
    assert explainer.n_estimated_ == 0
    # path-dependent: local accuracy on the ensemble's own predictions
    explainer = TreeExplainer(model)
    values = _stack(explainer.shap_values(X[:40]))
    expected = np.atleast_1d(_stack_expected(explainer.expected_value))
    total = values.sum(axis=1) + expected
    np.testing.assert_allclose(total, predict(X[:40]).reshape(40, -1), rtol=0, atol=1e-9)


# ---------------------------------------------------------------------------------------
# sparse input


@pytest.mark.parametrize("fmt", ["csr", "csc"])
@pytest.mark.parametrize("game", ["tree_path_dependent", "interventional"])
def test_sparse_rows_give_the_dense_values(game, fmt):
    model, X, _ = _fitted("sporf-clf", ACCURACY_P, 12, None, constant=True)
    x = X[:10].copy()
    x[np.abs(x) < 0.7] = 0.0  # real zeros, left implicit by the sparse formats
    background = X[-10:] if game == "interventional" else None
    dense = TreeExplainer(model, background, game).shap_values(x)
    as_sparse = sparse.csr_matrix if fmt == "csr" else sparse.csc_matrix
    sparse_background = None if background is None else as_sparse(background)
    got = TreeExplainer(model, sparse_background, game).shap_values(as_sparse(x))
    np.testing.assert_array_equal(got, dense)
    assert sparse.csr_matrix(x).nnz < x.size


def test_outputs_over_the_memory_limit_are_refused_by_size():
    model, X, _ = _fitted("rf-clf", BRUTE_P, 4, 4)
    before = of.memory_limit()
    of.set_memory_limit(1000)
    try:
        for call in (
            lambda: TreeExplainer(model).shap_values(X),
            lambda: TreeExplainer(model).shap_interaction_values(X),
        ):
            with pytest.raises(of.ForestError, match="in batches"):
                call()
    finally:
        of.set_memory_limit(before)
