"""Monotonic constraints (``monotonic_cst``) on every projection family.

The property: with the other features fixed, the prediction (the mean, or the probability
of ``classes_[1]``) never moves against a feature's constraint. Checked on grid lines
through random points, for axis-aligned and oblique forests, and against scikit-learn's
constrained forest on a monotone problem.
"""

import numpy as np
import pytest
from sklearn.ensemble import RandomForestRegressor as SkRandomForestRegressor

import obliqueforest as of
from obliqueforest.projections import ForestRC, Gaussian

CST = [1, -1, 0, 0]

REGRESSORS = {
    "rf": lambda **kw: of.RandomForestRegressor(**kw),
    "sporf": lambda **kw: of.SPORFRegressor(**kw),
    "forest_rc": lambda **kw: of.ObliqueForestRegressor(projection=ForestRC(2), **kw),
    "gaussian": lambda **kw: of.ObliqueForestRegressor(projection=Gaussian(), **kw),
    "morf": lambda **kw: of.MORFRegressor(data_shape=(4,), max_patch_size=2, **kw),
}
CLASSIFIERS = {
    "rf": lambda **kw: of.RandomForestClassifier(**kw),
    "sporf": lambda **kw: of.SPORFClassifier(**kw),
    "forest_rc": lambda **kw: of.ObliqueForestClassifier(projection=ForestRC(2), **kw),
    "morf": lambda **kw: of.MORFClassifier(data_shape=(4,), max_patch_size=2, **kw),
}


def _data(n=600, seed=0):
    """Not monotone in x0 (a wiggle), so an unconstrained forest does break the rule."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, 4))
    y = 3 * X[:, 0] + np.sin(12 * X[:, 0]) - 2 * X[:, 1] + X[:, 2] * X[:, 3]
    return X, y + rng.normal(scale=0.3, size=n)


def _violations(predict, constraint=CST, seed=1):
    """Steps along grid lines of each constrained feature that move against it."""
    rng = np.random.default_rng(seed)
    grid = np.linspace(-0.1, 1.1, 40)
    bad = 0
    for j, c in enumerate(constraint):
        if c == 0:
            continue
        for point in rng.uniform(size=(25, 4)):
            Z = np.repeat(point[None], len(grid), axis=0)
            Z[:, j] = grid
            bad += int((c * np.diff(predict(Z)) < -1e-12).sum())
    return bad


@pytest.mark.parametrize("name", REGRESSORS)
def test_regressor_predictions_follow_the_constraints(name):
    X, y = _data()
    free = REGRESSORS[name](n_estimators=10, random_state=0).fit(X, y)
    assert _violations(free.predict) > 0, "the problem must tempt an unconstrained forest"
    reg = REGRESSORS[name](n_estimators=10, random_state=0, monotonic_cst=CST).fit(X, y)
    assert _violations(reg.predict) == 0
    assert reg.score(X, y) > 0.6


@pytest.mark.parametrize("splitter", ["random", "hist"])
def test_other_splitters_follow_the_constraints(splitter):
    X, y = _data(n=3000)
    reg = of.SPORFRegressor(
        n_estimators=8, random_state=0, splitter=splitter, max_bins=16, monotonic_cst=CST
    ).fit(X, y)
    assert _violations(reg.predict) == 0


@pytest.mark.parametrize("name", CLASSIFIERS)
def test_binary_classifier_probabilities_follow_the_constraints(name):
    X, y = _data()
    labels = np.where(y > np.median(y), "high", "low")  # classes_[1] is "low"
    cst = [-1, 1, 0, 0]  # so P("low") falls with x0 and grows with x1
    clf = CLASSIFIERS[name](n_estimators=10, random_state=0, monotonic_cst=cst).fit(X, labels)
    assert list(clf.classes_) == ["high", "low"]
    assert _violations(lambda Z: clf.predict_proba(Z)[:, 1], constraint=cst) == 0
    assert clf.score(X, labels) > 0.8


def test_constrained_forest_is_as_accurate_as_scikit_learns_on_a_monotone_problem():
    rng = np.random.default_rng(3)
    X = rng.uniform(size=(3000, 5))
    y = np.log1p(5 * X[:, 0]) - X[:, 1] ** 2 + 0.5 * X[:, 2] + rng.normal(scale=0.2, size=3000)
    Xtr, Xte, ytr, yte = X[:2000], X[2000:], y[:2000], y[2000:]
    cst = [1, -1, 1, 0, 0]
    ours = of.RandomForestRegressor(
        n_estimators=50, max_features=1.0, random_state=0, monotonic_cst=cst
    ).fit(Xtr, ytr)
    theirs = SkRandomForestRegressor(n_estimators=50, random_state=0, monotonic_cst=cst)
    theirs.fit(Xtr, ytr)
    assert ours.score(Xte, yte) > theirs.score(Xte, yte) - 0.02
    sporf = of.SPORFRegressor(n_estimators=50, random_state=0, monotonic_cst=cst).fit(Xtr, ytr)
    assert sporf.score(Xte, yte) > theirs.score(Xte, yte) - 0.03


def test_same_model_whatever_n_jobs_and_after_a_warm_start():
    X, y = _data()
    one = of.SPORFRegressor(n_estimators=6, random_state=2, monotonic_cst=CST, n_jobs=1)
    two = of.SPORFRegressor(n_estimators=6, random_state=2, monotonic_cst=CST, n_jobs=2)
    assert one.fit(X, y)._forest.to_bytes() == two.fit(X, y)._forest.to_bytes()
    grown = of.SPORFRegressor(n_estimators=3, random_state=2, monotonic_cst=CST, warm_start=True)
    grown.fit(X, y).set_params(n_estimators=6).fit(X, y)
    assert grown._forest.to_bytes() == one._forest.to_bytes()
    assert _violations(grown.predict) == 0


def test_a_loaded_model_grows_more_trees_under_its_constraints(tmp_path):
    X, y = _data()
    reg = of.RandomForestRegressor(
        n_estimators=3, random_state=2, monotonic_cst=CST, warm_start=True
    ).fit(X, y)
    reg.save(tmp_path / "m.of")
    loaded = of.load(tmp_path / "m.of")
    np.testing.assert_array_equal(loaded.predict(X), reg.predict(X))
    loaded.set_params(n_estimators=8).fit(X, y)
    assert _violations(loaded.predict) == 0


def test_unconstrained_features_only_is_the_unconstrained_model():
    X, y = _data()
    a = of.SPORFRegressor(n_estimators=4, random_state=0).fit(X, y)
    b = of.SPORFRegressor(n_estimators=4, random_state=0, monotonic_cst=[0, 0, 0, 0]).fit(X, y)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))


@pytest.mark.parametrize(
    "cst, match",
    [
        ([1, 0, 0], "3 entries for 4 features"),
        ([2, 0, 0, 0], "-1, 0 or 1"),
        ([0.5, 0, 0, 0], "-1, 0 or 1"),
        ([[1, 0, 0, 0]], "1-D"),
    ],
)
def test_bad_constraints_are_value_errors(cst, match):
    X, y = _data(n=50)
    with pytest.raises(ValueError, match=match):
        of.RandomForestRegressor(n_estimators=2, monotonic_cst=cst).fit(X, y)


def test_multiclass_constraints_are_a_value_error():
    X, y = _data(n=90)
    with pytest.raises(ValueError, match="multiclass"):
        of.RandomForestClassifier(n_estimators=2, monotonic_cst=CST).fit(X, np.arange(90) % 3)
