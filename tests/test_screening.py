"""Candidate screening at large nodes (``candidate_samples``): SPORF's default since issue 28;
the model does not depend on threads, warm starts and reloaded models grow the same trees
as one fit, small data sets are grown exactly as without it, bad values are refused."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone

import obliqueforest as of


def data(n, p=8, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] - X[:, 2] + 0.5 * rng.normal(size=n) > 0).astype(int)
    return X, y


def test_sporf_screens_by_default_and_small_data_is_grown_exactly():
    assert of.SPORFClassifier().candidate_samples == 512
    assert of.RandomForestClassifier().candidate_samples is None
    # 1,500 rows: no bootstrap sample has a node of more than 1,024 distinct rows
    X, y = data(1500)
    screened = of.SPORFClassifier(n_estimators=5, random_state=0).fit(X, y)
    exact = of.SPORFClassifier(n_estimators=5, random_state=0, candidate_samples=None).fit(X, y)
    assert screened._forest.to_bytes() == exact._forest.to_bytes()


def test_screened_model_does_not_depend_on_threads_and_keeps_its_accuracy():
    X, y = data(12000, seed=1)
    Xt, yt = data(5000, seed=2)
    est = of.SPORFClassifier(n_estimators=12, random_state=3, candidate_samples=256)
    one = clone(est).set_params(n_jobs=1).fit(X, y)
    two = clone(est).set_params(n_jobs=2).fit(X, y)
    assert one._forest.to_bytes() == two._forest.to_bytes()
    exact = clone(est).set_params(candidate_samples=None).fit(X, y)
    assert one._forest.to_bytes() != exact._forest.to_bytes()
    assert one.score(Xt, yt) > exact.score(Xt, yt) - 0.02


def test_warm_start_and_reloaded_models_grow_the_screened_trees(tmp_path):
    X, y = data(6000, seed=4)
    whole = of.SPORFRegressor(n_estimators=6, random_state=1).fit(X, y.astype(float))
    part = of.SPORFRegressor(n_estimators=3, random_state=1, warm_start=True)
    part.fit(X, y.astype(float)).set_params(n_estimators=6).fit(X, y.astype(float))
    assert part._forest.to_bytes() == whole._forest.to_bytes()
    # a loaded model does not store candidate_samples in its forest: the estimator's
    # parameter is told to the warm start again
    first = of.SPORFRegressor(n_estimators=3, random_state=1).fit(X, y.astype(float))
    first.save(tmp_path / "m.of")
    again = of.load(tmp_path / "m.of")
    again.set_params(warm_start=True, n_estimators=6).fit(X, y.astype(float))
    assert again._forest.to_bytes() == whole._forest.to_bytes()


@pytest.mark.parametrize("bad", [0, 1, -5, 2.5, "512"])
def test_bad_candidate_samples_are_refused(bad):
    X, y = data(100)
    with pytest.raises((ValueError, TypeError), match="candidate_samples"):
        of.SPORFClassifier(n_estimators=2, candidate_samples=bad).fit(X, y)
