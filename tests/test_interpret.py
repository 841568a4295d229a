"""Tests of obliqueforest.interpret (rules and text of fitted trees) and obliqueforest.plotting."""

from __future__ import annotations

import numpy as np
import pytest

import obliqueforest as of
from obliqueforest.datasets import make_hv_bars, make_trunk
from obliqueforest.interpret import decision_path_rules, export_text, split_rules


@pytest.fixture(scope="module")
def trunk():
    return make_trunk(200, n_features=6, random_state=0)


@pytest.fixture(scope="module")
def sporf(trunk):
    X, y = trunk
    # the paper's density (3 features per projection): the root split is oblique
    return of.SPORFClassifier(n_estimators=3, feature_combinations=3.0, random_state=0).fit(X, y)


ESTIMATORS = [
    of.RandomForestClassifier(n_estimators=2, random_state=0),
    of.SPORFClassifier(n_estimators=2, random_state=0),
    of.SPORFRegressor(n_estimators=2, random_state=0),
    of.MORFClassifier(n_estimators=2, min_patch_size=2, max_patch_size=3, random_state=0),
    of.ObliqueForestRegressor(n_estimators=2, random_state=0),
]


def _walk(rules, x):
    """Follows split_rules for one row in float64; returns the leaf node id."""
    i = 0
    while not rules[i]["is_leaf"]:
        r = rules[i]
        terms = [w * float(np.float32(x[f])) for f, w in zip(r["features"], r["weights"])]
        # a pooled projection (MORF's pooled filters): the max or min of its pieces' sums
        k = r["piece_len"]
        sums = [sum(terms[a : a + k]) for a in range(0, len(terms), k)]
        proj = {None: sum, "max": max, "min": min}[r["pool"]](sums)
        i = r["left"] if proj <= r["threshold"] else r["right"]
    return i


def test_export_text_shows_oblique_weights_and_thresholds(sporf):
    text = export_text(sporf, tree=0, decimals=3)
    lines = text.splitlines()
    assert lines[0].startswith("|--- ") and " <= " in lines[0]
    root = split_rules(sporf)[0]
    thr = np.format_float_positional(round(root["threshold"], 3), trim="-")
    assert lines[0].endswith(f"<= {thr}")
    # the root's projection is written out term by term with its weights
    for f, w in zip(root["features"], root["weights"]):
        assert f"{np.format_float_positional(round(abs(w), 3), trim='-')}*x{f}" in lines[0]
    assert any("*x" in ln and (" - " in ln or ln.split("|--- ")[1].startswith("-")) for ln in lines)
    assert any("class: " in ln for ln in lines)
    assert any(" >  " in ln for ln in lines)


def test_export_text_feature_names_and_truncation(sporf):
    names = [f"feat_{i}" for i in range(6)]
    text = export_text(sporf, feature_names=names, max_depth=1)
    assert "feat_" in text and "*x" not in text
    assert "truncated branch of depth" in text
    assert max(ln.count("|   ") for ln in text.splitlines()) <= 2
    with pytest.raises(ValueError, match="feature_names"):
        export_text(sporf, feature_names=["a"])


def test_export_text_axis_aligned_regressor_reads_like_sklearn(trunk):
    X, _ = trunk
    est = of.RandomForestRegressor(n_estimators=1, max_depth=1, random_state=0).fit(X, X[:, 0])
    lines = export_text(est).splitlines()
    assert len(lines) == 4
    assert lines[0].startswith("|--- x0 <= ") and lines[2].startswith("|--- x0 >  ")
    assert lines[1].startswith("|   |--- value: [")


@pytest.mark.parametrize("est", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_split_rules_lead_rows_to_the_leaves_apply_returns(est, trunk):
    from sklearn.base import clone

    X, y = trunk
    est = clone(est).fit(X, X[:, 1] if "Regressor" in type(est).__name__ else y)
    leaves = est.apply(X[:50])
    for t in range(est.n_estimators):
        rules = split_rules(est, tree=t)
        assert [r["node"] for r in rules] == list(range(len(rules)))
        assert all(
            isinstance(r["threshold"], float) and r["features"] for r in rules if not r["is_leaf"]
        )
        assert all(r["left"] == r["right"] == -1 for r in rules if r["is_leaf"])
        walked = [_walk(rules, x) for x in X[:50]]
        assert walked == leaves[:, t].tolist()
        assert [decision_path_rules(est, x, tree=t)[-1]["node"] for x in X[:50]] == walked


def test_split_rules_are_plain_python_data(sporf):
    import json

    rules = split_rules(sporf, tree=1)
    json.dumps(rules)  # ints, floats, bools, lists, None only
    assert rules[0]["depth"] == 0 and rules[0]["n_samples"] > 0
    assert abs(sum(rules[0]["value"]) - 1) < 1e-9


def test_decision_path_rules_describe_each_step(sporf, trunk):
    X, _ = trunk
    path = decision_path_rules(sporf, X[3], tree=2)
    assert path[0]["node"] == 0 and path[-1]["is_leaf"]
    assert [p["depth"] for p in path] == list(range(len(path)))
    for step in path[:-1]:
        op = "<=" if step["goes"] == "left" else ">"
        assert f" {op} " in step["rule"]
        assert (step["projection"] <= step["threshold"]) == (step["goes"] == "left")
    assert path[-1]["node"] == sporf.apply(X[3:4])[0, 2]


def test_interpret_rejects_bad_tree_and_unfitted(sporf, trunk):
    from sklearn.exceptions import NotFittedError

    with pytest.raises(ValueError, match="tree must be in"):
        split_rules(sporf, tree=3)
    with pytest.raises(NotFittedError):
        export_text(of.SPORFClassifier())
    with pytest.raises(ValueError, match="one sample"):
        decision_path_rules(sporf, trunk[0][:2])


# -- plotting ---------------------------------------------------------------------------


@pytest.fixture
def plt():
    mpl = pytest.importorskip("matplotlib")
    mpl.use("Agg")
    import matplotlib.pyplot as plt

    yield plt
    plt.close("all")


def test_plot_importance_map_from_morf(plt):
    X, y = make_hv_bars(40, image_size=12, random_state=0)
    est = of.MORFClassifier(
        n_estimators=5, data_shape=(12, 12), min_patch_size=(1, 2), max_patch_size=(2, 6),
        random_state=0,
    ).fit(X, y)  # fmt: skip
    ax = est.plot_importance_map()
    assert isinstance(ax, plt.Axes)
    assert ax.images[0].get_array().shape == (12, 12)
    from obliqueforest.plotting import plot_importance_map

    _, ax2 = plt.subplots()
    assert plot_importance_map(np.arange(10.0), ax=ax2, cmap="magma") is ax2
    assert ax2.images[0].get_array().shape == (1, 10)


def test_plot_feature_importances_and_embedding(plt, sporf, trunk):
    from obliqueforest.plotting import plot_embedding, plot_feature_importances

    ax = plot_feature_importances(sporf, top=4)
    assert isinstance(ax, plt.Axes) and len(ax.patches) == 4
    Z = np.random.default_rng(0).normal(size=(50, 3))
    ax = plot_embedding(Z, labels=trunk[1][:50])
    assert isinstance(ax, plt.Axes) and ax.get_legend() is not None
    ax = plot_embedding(Z, labels=Z[:, 2])
    assert isinstance(ax, plt.Axes)
    assert isinstance(plot_embedding(Z), plt.Axes)


def test_plot_rotation_complexity(plt, trunk):
    try:
        from obliqueforest import RotationEnsembleClassifier
    except (ImportError, AttributeError):
        pytest.skip("rotation ensembles not available")
    X, y = trunk
    est = RotationEnsembleClassifier(n_estimators=8, n_rotations=4, random_state=0).fit(X, y)
    from obliqueforest.plotting import plot_rotation_complexity

    ax = plot_rotation_complexity(est)
    assert isinstance(ax, plt.Axes) and ax.get_xlabel().startswith("median tree complexity")
    with pytest.raises(TypeError, match="rotation ensemble"):
        plot_rotation_complexity(object())


def test_plotting_without_matplotlib_says_how_to_install(monkeypatch):
    import sys

    from obliqueforest.plotting import plot_importance_map

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=r"pip install obliqueforest\[plot\]"):
        plot_importance_map(np.zeros((3, 3)))


def test_decision_path_rules_follow_the_missing_value_side_apply_takes():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 5))
    y = (X[:, 0] + (rng.random(400) < 0.1) > 0).astype(int)
    X[rng.random(X.shape) < 0.2] = np.nan
    X[np.isnan(X[:, 0]) & (y == 1), 1] = 5.0  # missing x0 among class 1 rows: x1 says so
    for est in (
        of.RandomForestClassifier(n_estimators=3, random_state=0).fit(X, y),
        of.SPORFClassifier(n_estimators=3, random_state=0).fit(X, y),
    ):
        rows = np.flatnonzero(np.isnan(X).any(axis=1))[:40]
        seen_missing = 0
        for r in rows:
            for t in range(3):
                path = decision_path_rules(est, X[r], tree=t)
                assert path[-1]["node"] == est.apply(X[r : r + 1])[0, t]
                for step in path[:-1]:
                    if np.isnan(step["projection"]):
                        seen_missing += 1
                        assert "is missing" in step["rule"]
        assert seen_missing > 0
