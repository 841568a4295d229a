"""Pooled filters (projections.PooledFilter, MORF's ``pooled``): translation-invariant
candidates computed by the same engine: model files, determinism, missing values, sparse
X, monotonic constraints, interpretation, and accuracy on shifted patterns."""

import pickle

import numpy as np
import obliqueforest as of
import pytest
from obliqueforest import interpret, projections
from scipy import sparse


def _shifted(n, seed, length=32):
    """A rise (class 1) or a fall (class 0) of 4 steps at a random position, in noise."""
    rng = np.random.default_rng(seed)
    X = rng.normal(0, 0.3, (n, length)).astype(np.float32)
    y = rng.integers(0, 2, n)
    at = rng.integers(0, length - 4, n)
    ramp = np.arange(4) - 1.5
    for i in range(n):
        X[i, at[i] : at[i] + 4] += ramp if y[i] else -ramp
    return X, y


def _morf(pooled=0.5, **kw):
    return of.MORFClassifier(
        20, data_shape=(32,), pooled=pooled, random_state=0, **{"n_jobs": 1, **kw}
    )


def test_pooled_filters_beat_plain_patches_on_shifted_patterns():
    X, y = _shifted(300, 0)
    Xt, yt = _shifted(2000, 1)
    plain = _morf(0.0).fit(X, y).score(Xt, yt)
    pooled = _morf(0.5).fit(X, y).score(Xt, yt)
    assert pooled >= plain + 0.05 and pooled > 0.95, (plain, pooled)


def test_pooled_morf_saves_loads_and_pickles(tmp_path):
    X, y = _shifted(200, 0)
    morf = _morf(0.6).fit(X, y)
    assert morf._forest.projection_family()[0] == "pooled"
    morf.save(tmp_path / "m.of")
    for again in (of.load(tmp_path / "m.of"), pickle.loads(pickle.dumps(morf))):
        assert again.pooled == 0.6
        np.testing.assert_array_equal(again.predict_proba(X), morf.predict_proba(X))
    family = projections.PooledFilter([32], pooled=1.0, max_filter=2, min_window=8)
    est = of.ObliqueForestClassifier(family, 5, random_state=0).fit(X, y)
    est.save(tmp_path / "p.of")
    assert of.load(tmp_path / "p.of").projection == family


def test_pooled_morf_same_model_whatever_n_jobs():
    X, y = _shifted(200, 0)
    one = _morf(n_jobs=1).fit(X, y)._forest.to_bytes()
    two = _morf(n_jobs=2).fit(X, y)._forest.to_bytes()
    assert one == two


def test_pooled_morf_with_missing_values_and_sparse_x():
    X, y = _shifted(300, 0)
    X[::7, 5] = np.nan
    X[3] = np.nan
    est = _morf().fit(X, y)
    proba = est.predict_proba(X)
    assert np.isfinite(proba).all()
    assert est.score(X, y) > 0.9
    # sparse X: the same forest, the same predictions
    Xs, ys = _shifted(200, 2)
    Xs[np.abs(Xs) < 0.3] = 0.0
    dense = _morf().fit(Xs, ys)
    csr = _morf().fit(sparse.csr_matrix(Xs), ys)
    assert dense._forest.to_bytes() == csr._forest.to_bytes()
    np.testing.assert_array_equal(csr.predict_proba(sparse.csr_matrix(Xs)), dense.predict_proba(Xs))


def test_pooled_morf_keeps_monotonic_constraints():
    # the max (min) of pieces that all grow with x_j grows with x_j: pooled splits whose
    # constrained terms agree keep the constraint
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 32)).astype(np.float32)
    y = (X[:, :16].max(axis=1) + 0.3 * rng.normal(size=400) > 1.5).astype(int)
    cst = np.zeros(32, dtype=int)
    cst[:16] = 1
    est = _morf(1.0, monotonic_cst=cst).fit(X, y)
    n_pooled = sum(
        int((t.tree_.projection_pool[t.tree_.children_left >= 0] > 0).sum())
        for t in est.estimators_
    )
    assert n_pooled > 0
    grid = np.repeat(X[:50], 9, axis=0)
    grid[:, 4] = np.tile(np.linspace(-3, 3, 9), 50)
    p = est.predict_proba(grid)[:, 1].reshape(50, 9)
    assert (np.diff(p, axis=1) >= -1e-12).all()


def test_pooled_splits_leave_leaf_bounds_unconstrained():
    X, y = _shifted(200, 0)
    est = _morf(1.0, differences=0.0).fit(X, y)
    lo, hi = est._forest.leaf_bounds(X, 1)
    assert np.isneginf(lo).all() and np.isposinf(hi).all()


def test_pooled_split_rules_read_as_max_or_min_over_pieces():
    X, y = _shifted(200, 0)
    est = _morf(1.0, n_jobs=1).fit(X, y)
    rules = interpret.split_rules(est)
    root = rules[0]
    assert root["pool"] in ("max", "min")
    assert len(root["features"]) % root["piece_len"] == 0
    assert interpret.export_text(est, max_depth=1).count(f"{root['pool']}(") == 2
    for x in X[:40]:
        path = interpret.decision_path_rules(est, x)
        assert path[-1]["node"] == est.apply(x[None])[0, 0]


@pytest.mark.parametrize(
    "kw, name", [({"pooled": 1.5}, "pooled"), ({"max_filter": 0}, "max_filter")]
)
def test_pooled_filter_settings_out_of_range_are_value_errors(kw, name):
    X, y = _shifted(50, 0)
    family = projections.PooledFilter((32,), **kw)
    with pytest.raises(ValueError, match=name):
        of.ObliqueForestClassifier(family, 2).fit(X, y)
    if name == "pooled":
        with pytest.raises(ValueError, match=name):
            _morf(**kw).fit(X, y)


def test_morf_file_from_before_pooled_filters_loads_without_them(tmp_path):
    from obliqueforest import _io

    X, y = _shifted(100, 0)
    est = _morf(0.0).fit(X, y)
    saved = {k: v for k, v in _io._plain_params(est).items() if k != "pooled"}
    assert _io._params(of.MORFClassifier, saved, est._forest).pooled == 0.0
    # and one from before Haar patches (differences) has neither
    older = {k: v for k, v in saved.items() if k != "differences"}
    loaded = _io._params(of.MORFClassifier, older, est._forest)
    assert (loaded.pooled, loaded.differences) == (0.0, 0.0)
