"""Accuracy of the estimators at their defaults (benches/results/sporf_defaults.md).

The SPORF defaults (d = 2p, lambda = 1.5/p, each feature's +-1 over its interquartile
range) keep the paper's simulation results: sparse parity at most 0.15 at n = 5,000,
orthant within 0.01 of RF, trunk no worse than RF; and unlike the paper's unscaled weights
they do not depend on the features' units.
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
    assert params["scaling"] == "robust"


def test_sporf_at_its_defaults_does_not_depend_on_the_features_units():
    from sklearn.datasets import load_wine

    X, y = load_wine(return_X_y=True)
    units = np.ones(X.shape[1])
    units[[0, 4, 12]] = [1000.0, 0.001, 1 / 7]  # e.g. grams for kilograms
    tr, te = slice(0, None, 2), slice(1, None, 2)
    a, b = (SPORFClassifier(random_state=0).fit(X[tr] * u, y[tr]) for u in (1.0, units))
    # the same trees up to rounding: the same predictions and importances
    assert np.abs(a.predict_proba(X[te]) - b.predict_proba(X[te] * units)).max() <= 0.05
    assert (a.predict(X[te]) == b.predict(X[te] * units)).mean() >= 0.98
    assert np.allclose(a.feature_importances_, b.feature_importances_, atol=0.02)
    # the paper's weights are not: the wide columns take over
    c, d = (
        SPORFClassifier(random_state=0, scaling=None).fit(X[tr] * u, y[tr]) for u in (1.0, units)
    )
    assert not np.allclose(c.feature_importances_, d.feature_importances_, atol=0.02)


def test_sporf_scaling_is_validated():
    with pytest.raises(ValueError, match="scaling"):
        SPORFClassifier(scaling="standard").fit(np.eye(4), [0, 1, 0, 1])


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


def test_sparse_signed_projection_takes_the_scaling_too():
    from obliqueforest import ObliqueForestClassifier, projections

    X, y = datasets.make_orthant(300, random_state=0)
    X[:, 0] *= 1000.0
    proj = projections.SparseSigned(feature_combinations=1.5, scaling="robust")
    est = ObliqueForestClassifier(proj, n_estimators=5, random_state=0).fit(X, y)
    sporf = SPORFClassifier(n_estimators=5, max_features="sqrt", random_state=0).fit(X, y)
    same = ObliqueForestClassifier(proj, n_estimators=5, max_features="sqrt", random_state=0)
    assert same.fit(X, y)._forest.to_bytes() == sporf._forest.to_bytes()
    assert est.predict(X).shape == (300,)
    with pytest.raises(ValueError, match="scaling"):
        ObliqueForestClassifier(projections.SparseSigned(scaling="minmax")).fit(X, y)
