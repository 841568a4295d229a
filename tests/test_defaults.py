"""Accuracy of the estimators at their defaults (benches/results/sporf_defaults.md).

The SPORF defaults (d = 2p, lambda = 1.5/p) keep the paper's simulation results: sparse
parity at most 0.15 at n = 5,000, orthant within 0.01 of RF, trunk no worse than RF.
"""

import numpy as np
import pytest
from obliqueforest import RandomForestClassifier, SPORFClassifier, datasets


def _errors(make, n_train, n_test, seed):
    X, y = make(n_train + n_test, random_state=seed)
    X = X.astype(np.float32)
    tr, te = slice(0, n_train), slice(n_train, None)
    out = {}
    for name, est in (
        ("sporf", SPORFClassifier(random_state=seed, n_jobs=2)),
        ("rf", RandomForestClassifier(random_state=seed, n_jobs=2)),
    ):
        out[name] = float(np.mean(est.fit(X[tr], y[tr]).predict(X[te]) != y[te]))
    return out


def test_sporf_defaults_are_not_the_papers():
    params = SPORFClassifier().get_params()
    assert params["max_features"] == 2.0 and params["feature_combinations"] == 1.5


@pytest.mark.slow
def test_sporf_defaults_sparse_parity_n5000():
    err = _errors(datasets.make_sparse_parity, 5000, 2000, seed=1000)
    assert err["sporf"] <= 0.15 < err["rf"]


def test_sporf_defaults_orthant_close_to_rf():
    err = _errors(datasets.make_orthant, 2000, 2000, seed=1000)
    assert err["sporf"] <= err["rf"] + 0.01


def test_sporf_defaults_trunk_not_worse_than_rf():
    err = _errors(datasets.make_trunk, 1000, 2000, seed=1000)
    assert err["sporf"] <= err["rf"]
