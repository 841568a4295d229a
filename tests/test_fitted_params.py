"""What a fitted model is, whatever ``set_params`` said since: warm starts grow their new
trees with the current parameters (or refuse, naming the parameter, those the fitted
trees are read with), and a model file records the parameters its model was fitted with.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from sklearn.base import is_regressor
from sklearn.datasets import make_classification, make_regression

import obliqueforest as of
from obliqueforest.projections import ForestRC, SparseSigned


def _classification():
    return make_classification(400, 6, n_informative=4, random_state=0)


def _per_tree(est, X):
    return np.stack([t.predict(X) for t in est.estimators_])


@pytest.mark.parametrize(
    "change",
    [
        dict(max_depth=2),
        dict(min_samples_leaf=20),
        dict(max_features=1.0),
        dict(criterion="entropy"),
        dict(splitter="random"),
        dict(max_leaf_nodes=4),
        dict(candidate_samples=None),
    ],
    ids=lambda c: next(iter(c)),
)
def test_warm_start_grows_new_trees_with_the_current_parameters(change):
    # as scikit-learn's forests: the trees added after set_params are those a forest of
    # the new parameters grows at the same tree indices, the old trees stay as they were
    X, y = _classification()
    est = of.SPORFClassifier(5, warm_start=True, random_state=0).fit(X, y)
    before = _per_tree(est, X)
    est.set_params(n_estimators=9, **change).fit(X, y)
    fresh = of.SPORFClassifier(9, random_state=0, **change).fit(X, y)
    grown = _per_tree(est, X)
    np.testing.assert_array_equal(grown[:5], before)
    np.testing.assert_array_equal(grown[5:], _per_tree(fresh, X)[5:])
    # what the core forest says it is agrees with get_params
    name, value = next(iter(change.items()))
    if name == "max_depth":
        assert max(t.get_depth() for t in est.estimators_[5:]) <= 2
        assert "max_depth: Some(2)" in est._forest.params()["summary"]


@pytest.mark.parametrize(
    "make, change",
    [
        (lambda: of.RandomForestClassifier(4), dict(max_samples=0.5)),
        (lambda: of.RandomForestClassifier(4), dict(bootstrap=False)),
        (lambda: of.RandomForestClassifier(4), dict(random_state=7)),
        (lambda: of.RandomForestClassifier(4), dict(class_weight="balanced_subsample")),
        (lambda: of.ObliqueForestClassifier(SparseSigned(), 4), dict(projection=ForestRC())),
        (
            lambda: of.ObliqueForestClassifier(SparseSigned(), 4),
            dict(projection=SparseSigned(density=0.5)),
        ),
        (lambda: of.RandomForestRegressor(4), dict(honest_fraction=0.5)),
        (lambda: of.RandomForestRegressor(4), dict(store_leaf_values=True)),
        (
            lambda: of.RandomForestRegressor(4, store_leaf_values=True),
            dict(store_leaf_values=False),
        ),
    ],
    ids=lambda c: next(iter(c)) if isinstance(c, dict) else "",
)
def test_warm_start_refuses_parameters_the_fitted_trees_are_read_with(make, change):
    est = make().set_params(warm_start=True, random_state=0)
    X, y = _classification()
    if is_regressor(est):
        X, y = make_regression(300, 6, random_state=0)
    est.fit(X, y)
    before = est.predict(X)
    name = next(iter(change))
    est.set_params(n_estimators=8, **change)
    with pytest.raises(ValueError, match=name):
        est.fit(X, y)
    # refused before anything changed: the fitted model is the first fit's
    assert len(est.estimators_) == 4
    np.testing.assert_array_equal(est.predict(X), before)
    # set back, the warm start grows
    est.set_params(**{name: make().get_params()[name]})
    if name == "random_state":
        est.set_params(random_state=0)
    est.fit(X, y)
    assert len(est.estimators_) == 8


def _data(est):
    """Fit arguments for ``est``: (X,) without targets, (X, y) otherwise."""
    if isinstance(est, (of.IsolationForest, of.UnsupervisedRandomForest, of.ForestAutoencoder)):
        return (_classification()[0],)
    if is_regressor(est):
        return make_regression(300, 6, random_state=0)
    return _classification()


SAVED = {
    "RandomForestClassifier": (
        lambda: of.RandomForestClassifier(5, random_state=0),
        dict(n_estimators=9, max_depth=3, oob_score=True),
    ),
    "SPORFRegressor": (
        lambda: of.SPORFRegressor(5, random_state=0),
        dict(n_estimators=9, store_leaf_values=True, honest_fraction=0.5),
    ),
    "RotationEnsembleClassifier": (
        lambda: of.RotationEnsembleClassifier(
            n_estimators=8, n_rotations=2, micro_forest_size=2, random_state=0
        ),
        dict(n_estimators=12, n_rotations=3),
    ),
    "ForestAutoencoder": (
        lambda: of.ForestAutoencoder(n_estimators=8, n_components=2, random_state=0),
        dict(n_components=3, n_estimators=10),
    ),
    "IsolationForest": (
        lambda: of.IsolationForest(n_estimators=5, random_state=0),
        dict(n_estimators=10, max_samples=20),
    ),
    "UnsupervisedRandomForest": (
        lambda: of.UnsupervisedRandomForest(n_estimators=5, random_state=0),
        dict(n_estimators=10),
    ),
}


@pytest.mark.parametrize("name", list(SAVED))
def test_save_after_set_params_saves_the_fitted_model(name, tmp_path):
    make, change = SAVED[name]
    est = make()
    data = _data(est)
    X = data[0]
    est.fit(*data)
    fitted = {k: v for k, v in est.get_params().items() if k != "n_jobs"}
    est.set_params(**change)
    est.save(tmp_path / "m.of")  # was "corrupt model data" for several of these
    loaded = of.load(tmp_path / "m.of")
    # the file holds the fitted model and the parameters it was fitted with
    assert {k: v for k, v in loaded.get_params().items() if k != "n_jobs"} == fitted
    out = {"ForestAutoencoder": "transform", "IsolationForest": "score_samples"}.get(name, "apply")
    np.testing.assert_array_equal(getattr(loaded, out)(X), getattr(est, out)(X))
    # a refit with the changed parameters saves those
    est.fit(*data)
    est.save(tmp_path / "again.of")
    again = of.load(tmp_path / "again.of")
    for k, v in change.items():
        assert again.get_params()[k] == v, k


def test_save_during_refits_in_another_thread_saves_one_whole_model(tmp_path):
    X, y = _classification()
    est = of.RandomForestClassifier(3, random_state=0).fit(X, y)
    stop = threading.Event()
    errors = []

    def refit():
        n = 3
        while not stop.is_set():
            n = 3 + (n - 2) % 6
            try:
                est.set_params(n_estimators=n, max_depth=n).fit(X, y)
            except Exception as e:  # pragma: no cover - reported below
                errors.append(e)

    worker = threading.Thread(target=refit)
    worker.start()
    try:
        for i in range(40):
            path = tmp_path / f"m{i % 2}.of"
            est.save(path)
            loaded = of.load(path)
            # the parameters and the trees of one fit
            assert len(loaded.estimators_) == loaded.n_estimators
            assert loaded.max_depth in (None, loaded.n_estimators)
    finally:
        stop.set()
        worker.join()
    assert not errors, errors
