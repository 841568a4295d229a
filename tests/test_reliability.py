"""Reliability: whatever a user passes gives a valid result or a clear ValueError; threads,
repetition and persistence never change or corrupt a model."""

import gc
import threading
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.datasets import make_classification

import obliqueforest as of

CLASSIFIERS = [
    lambda: of.RandomForestClassifier(n_estimators=4, random_state=0),
    lambda: of.SPORFClassifier(n_estimators=4, random_state=0),
    lambda: of.MORFClassifier(n_estimators=4, random_state=0),
    lambda: of.ObliqueForestClassifier(of.projections.Gaussian(), 4, random_state=0),
]
REGRESSORS = [
    lambda: of.RandomForestRegressor(n_estimators=4, random_state=0),
    lambda: of.SPORFRegressor(n_estimators=4, random_state=0),
    lambda: of.MORFRegressor(n_estimators=4, random_state=0),
    lambda: of.ObliqueForestRegressor(of.projections.ForestRC(2), 4, random_state=0),
]
ALL = CLASSIFIERS + REGRESSORS

# values a user's data may hold: ordinary numbers, extremes, exact duplicates, NaN and inf
_values = st.one_of(
    st.floats(-1e3, 1e3),
    st.sampled_from([0.0, 1.0, -1.0, 1e30, -1e30, 1e-30, 3e38, 1e300, np.nan, np.inf, -np.inf]),
)

_settings = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _fit_predict_or_value_error(make, X, y, **fit_kw):
    """Fits and predicts; returns the predictions, or None if a ValueError was raised."""
    est = make()
    try:
        est.fit(X, y, **fit_kw)
    except ValueError:
        return None
    pred = est.predict(X)
    assert pred.shape == (X.shape[0],)
    if hasattr(est, "predict_proba"):
        proba = est.predict_proba(X)
        assert proba.shape == (X.shape[0], len(est.classes_))
        assert np.all(np.isfinite(proba)) and np.allclose(proba.sum(axis=1), 1.0)
        assert set(np.unique(pred)) <= set(est.classes_)
    else:
        assert np.all(np.isfinite(pred))
    return pred


@st.composite
def _datasets(draw):
    n = draw(st.integers(1, 40))
    p = draw(st.integers(1, 6))
    X = draw(arrays(np.float64, (n, p), elements=_values))
    n_classes = draw(st.integers(1, 4))
    y = draw(arrays(np.int64, (n,), elements=st.integers(0, n_classes - 1)))
    return X, y


# scikit-learn's finiteness check sums X first (``np.isfinite(np.sum(X))``, silencing only
# overflow), so data holding both +inf and -inf warns "invalid value encountered in reduce"
# before the ValueError; scikit-learn's own forests do the same on such data.
@pytest.mark.filterwarnings("ignore:invalid value encountered in reduce:RuntimeWarning")
@pytest.mark.parametrize("make", ALL)
@_settings
@given(data=_datasets())
def test_estimator_any_data_gives_result_or_value_error(make, data):
    X, y = data
    has_bad = not np.all(np.isfinite(X)) or np.abs(X).max() > np.finfo(np.float32).max
    pred = _fit_predict_or_value_error(make, X, y.astype(float))
    if has_bad:
        assert pred is None, "NaN, inf and float32 overflow must be rejected"


@pytest.mark.parametrize("make", ALL)
@_settings
@given(
    w=arrays(
        np.float64,
        (20,),
        elements=st.one_of(st.floats(0, 10), st.sampled_from([0.0, -1.0, np.nan, 1e300])),
    )
)
def test_estimator_any_sample_weight_gives_result_or_value_error(make, w):
    X, y = make_classification(20, 4, n_informative=2, n_redundant=0, random_state=0)
    bad = not np.all(np.isfinite(w)) or (w < 0).any() or (w == 0).all()
    pred = _fit_predict_or_value_error(make, X, y.astype(float), sample_weight=w)
    if bad:
        assert pred is None


@pytest.mark.parametrize("make", ALL)
def test_estimator_layouts_and_dtypes_give_identical_models(make):
    X, y = make_classification(60, 5, random_state=0)
    ref = make().fit(X, y).predict(X)
    variants = {
        "fortran": np.asfortranarray(X),
        "float32": X.astype(np.float32),
        "non-contiguous": np.repeat(X, 2, axis=1)[:, ::2],
        "list": X.tolist(),
    }
    ro = X.copy()
    ro.flags.writeable = False
    variants["read-only"] = ro
    for name, Xv in variants.items():
        np.testing.assert_array_equal(make().fit(Xv, y).predict(Xv), ref, err_msg=name)
    Xi = (X * 10).astype(np.int64)
    assert make().fit(Xi, y).predict(Xi).shape == (60,)
    Xb = X > 0
    assert make().fit(Xb, y).predict(Xb).shape == (60,)


def test_object_and_categorical_input():
    pd = pytest.importorskip("pandas")
    X = np.array([["a", 1.0], ["b", 2.0]] * 10, dtype=object)
    y = np.arange(20) % 2
    with pytest.raises(ValueError):
        of.SPORFClassifier(3).fit(X, y)
    numeric_objects = np.array([[1, 2.0], [3, 4.0]] * 10, dtype=object)
    of.SPORFClassifier(3).fit(numeric_objects, y)
    df = pd.DataFrame({"c": pd.Categorical(["x", "y"] * 10), "v": np.arange(20.0)})
    with pytest.raises(ValueError):
        of.SPORFClassifier(3).fit(df, y)


def test_many_classes_and_constant_and_duplicated_columns():
    rng = np.random.default_rng(0)
    X = np.repeat(rng.normal(size=(150, 3)), 2, axis=0)  # duplicated rows
    X = np.hstack([X, np.ones((300, 2))])  # constant columns
    y = np.arange(300) % 120  # 120 classes
    est = of.SPORFClassifier(5, random_state=0).fit(X, y)
    proba = est.predict_proba(X)
    assert proba.shape == (300, 120) and np.allclose(proba.sum(axis=1), 1.0)
    # an axis-aligned forest never splits on a constant column; SPORF shares each split's
    # decrease by |weight|, so constant columns inside a projection get a share (by design)
    rf = of.RandomForestClassifier(5, random_state=0).fit(X, y)
    assert rf.feature_importances_[3:].sum() == 0.0


def test_single_row_and_all_constant_data():
    for make in ALL:
        est = make().fit(np.ones((1, 3)), [1.0])
        assert est.predict(np.ones((2, 3))).shape == (2,)
        est = make().fit(np.zeros((10, 3)), np.arange(10) % 2)
        assert est.predict(np.zeros((2, 3))).shape == (2,)


# -- threads -------------------------------------------------------------------------------


def test_predict_from_eight_threads_matches_sequential():
    X, y = make_classification(3000, 20, random_state=0)
    est = of.SPORFClassifier(40, random_state=0, n_jobs=2).fit(X, y)
    chunks = np.array_split(X, 8)
    expected = [est.predict_proba(c) for c in chunks]
    results = [None] * 8
    barrier = threading.Barrier(8)

    def work(i):
        barrier.wait()
        for _ in range(5):
            results[i] = est.predict_proba(chunks[i])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for got, want in zip(results, expected):
        np.testing.assert_array_equal(got, want)


def test_fit_releases_the_gil():
    X, y = make_classification(20000, 40, random_state=0)
    ticks = []
    done = threading.Event()

    def ticker():
        while not done.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.005)

    t = threading.Thread(target=ticker)
    t.start()
    start = time.perf_counter()
    of.SPORFClassifier(30, random_state=0, n_jobs=1).fit(X, y)
    elapsed = time.perf_counter() - start
    done.set()
    t.join()
    during = [s for s in ticks if start <= s <= start + elapsed]
    # with the GIL held for the whole fit the ticker could not run at all
    assert elapsed > 0.2, elapsed
    assert len(during) >= 0.3 * elapsed / 0.005, (len(during), elapsed)


# -- repetition and persistence ---------------------------------------------------------------


def _rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


@pytest.mark.skipif(not __import__("os").path.exists("/proc/self/status"), reason="Linux only")
def test_repeated_fit_predict_does_not_leak():
    X, y = make_classification(500, 20, random_state=0)
    for _ in range(20):  # warm up allocator and caches
        of.SPORFClassifier(10, random_state=0).fit(X, y).predict_proba(X)
    gc.collect()
    before = _rss_mb()
    for i in range(200):
        est = of.SPORFClassifier(10, random_state=i).fit(X, y)
        est.predict_proba(X)
        est._forest.to_bytes()
    gc.collect()
    grown = _rss_mb() - before
    # one model is ~0.2 MB; leaking every model (or its inputs) would add > 40 MB
    assert grown < 15, f"RSS grew by {grown:.1f} MB over 200 fit/predict cycles"


@pytest.mark.parametrize("make", ALL)
def test_same_seed_bit_identical_across_n_jobs_and_save_load(make, tmp_path):
    X, y = make_classification(200, 8, random_state=1)
    a = make().set_params(n_jobs=1).fit(X, y)
    b = make().set_params(n_jobs=2).fit(X, y)
    assert a._forest.to_bytes() == b._forest.to_bytes()
    a.save(tmp_path / "a.of")
    c = of.load(tmp_path / "a.of")
    assert c._forest.to_bytes() == a._forest.to_bytes()
    np.testing.assert_array_equal(a.predict(X), c.predict(X))
