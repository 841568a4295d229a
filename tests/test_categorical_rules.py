"""Categorical columns in what explains a model: Shapley values (TreeExplainer) on the
raw DataFrame, and the rules of export_text, split_rules and decision_path_rules (sets of
levels for a split on one categorical column, ``score(column)`` in an oblique one)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import obliqueforest as of
from obliqueforest.interpret import decision_path_rules, export_text, split_rules

EFFECT = dict(zip("abcdef", [1.5, -1.0, 0.3, 2.0, -2.0, 0.0]))


def table(n=1200, seed=0):
    rng = np.random.default_rng(seed)
    city = rng.choice(list("abcdef"), n)
    x = rng.normal(size=n)
    y = (x + np.array([EFFECT[c] for c in city]) > 0).astype(int)
    return pd.DataFrame({"city": city, "x": x, "noise": rng.normal(size=n)}), y


@pytest.mark.parametrize("cls", [of.RandomForestClassifier, of.SPORFClassifier])
def test_shapley_values_of_a_table_add_up_and_credit_its_columns(cls):
    df, y = table()
    model = cls(n_estimators=15, random_state=0).fit(df, y)
    rows = df.iloc[:40].copy()
    rows.loc[rows.index[0], "city"] = "never seen"  # goes with the missing values
    for explainer in (of.TreeExplainer(model), of.TreeExplainer(model, df.iloc[:30])):
        values = explainer.shap_values(rows)
        total = values[..., 1].sum(axis=1) + np.asarray(explainer.expected_value)[1]
        np.testing.assert_allclose(total, model.predict_proba(rows)[:, 1], atol=1e-6)
        mean = np.abs(values[..., 1]).mean(axis=0)
        assert mean[0] > mean[2] and mean[1] > mean[2], mean  # city and x over the noise


def test_a_split_on_a_categorical_column_prints_its_sets_of_levels():
    df, y = table()
    model = of.RandomForestClassifier(
        n_estimators=1, max_depth=1, max_features=None, bootstrap=False, random_state=0
    ).fit(df[["city"]], df["city"].isin(["a", "d"]))
    text = export_text(model)
    assert text.splitlines()[0] in (
        "|--- city in {b, c, e, f} or missing",
        "|--- city in {b, c, e, f}",
    )
    assert "city in {a, d}" in text
    root = split_rules(model)[0]
    assert set(root["categories"][0]) == set("abcdef")
    # a level never seen goes where the node sends missing values
    unseen = pd.DataFrame({"city": ["zz"]})
    missing = pd.DataFrame({"city": [None]})
    assert (model.apply(unseen) == model.apply(missing)).all()
    path = decision_path_rules(model, unseen)
    assert "is missing" in path[0]["rule"]
    assert path[0]["goes"] == ("left" if root["missing_left"] else "right")


def test_an_oblique_split_reads_the_levels_score():
    df, y = table()
    model = of.SPORFClassifier(n_estimators=3, max_depth=3, random_state=1).fit(df, y)
    texts = "".join(export_text(model, tree=t) for t in range(3))
    assert "score(city)" in texts
    rules = [r for t in range(3) for r in split_rules(model, t) if r["categories"]]
    assert rules
    for r in rules:
        for f, c in zip(r["features"], r["categories"]):
            assert (c is None) == (f != 0)
    # the path's projection is the core's value for the row's level
    path = decision_path_rules(model, df.iloc[[3]])
    assert path[-1]["node"] == model.apply(df.iloc[[3]])[0, 0]


@pytest.mark.parametrize(
    "params",
    [
        {"splitter": "hist"},
        {"splitter": "random"},
        {"honest_fraction": 0.5},
        {"store_leaf_values": True},
    ],
    ids=["hist", "random", "honest", "quantile"],
)
def test_every_splitter_and_kind_splits_the_levels(params):
    df, y = table(1500)
    target = df["x"] + df["city"].map(EFFECT)
    model = of.RandomForestRegressor(20, random_state=0, **params).fit(df, target)
    assert model.score(df, target) > 0.8
    maps = [len(model._forest.tree_nodes(t)["map_term"]) for t in range(20)]
    assert sum(maps) > 0
    if params.get("store_leaf_values"):
        q = model.predict_quantiles(df.iloc[:5], quantiles=[0.1, 0.9])
        assert (q[:, 0] <= q[:, 1]).all()


def test_importances_are_per_column_and_credit_the_signal():
    from sklearn.inspection import permutation_importance

    df, y = table(1500)
    model = of.SPORFClassifier(30, random_state=0).fit(df, y)
    assert model.feature_importances_.shape == (3,)
    assert model.feature_importances_[2] < min(model.feature_importances_[:2])
    perm = permutation_importance(model, df, y, n_repeats=3, random_state=0)
    assert perm.importances_mean[2] < min(perm.importances_mean[:2])
