"""Reliability: whatever a user passes gives a valid result or a clear ValueError; threads,
repetition and persistence never change or corrupt a model."""

import gc
import subprocess
import sys
import threading
import time
import warnings

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
    # NaN is a missing value (tests/test_missing.py); infinity and float32 overflow are not
    has_bad = np.isinf(X).any() or np.nanmax(np.abs(X), initial=0.0) > np.finfo(np.float32).max
    pred = _fit_predict_or_value_error(make, X, y.astype(float))
    if has_bad:
        assert pred is None, "inf and float32 overflow must be rejected"


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
    # a category column is split natively (tests/test_categorical_input.py), unless every
    # column is to be numeric
    assert of.SPORFClassifier(3).fit(df, y).is_categorical_.tolist() == [True, False]
    with pytest.raises(ValueError, match="categorical_features=None"):
        of.SPORFClassifier(3, categorical_features=None).fit(df, y)


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


# -- magnitudes at float32's and float64's limits ---------------------------------------


def _huge_data(n=400, p=5):
    """Every value between 2e38 and 3.3e38 in magnitude: a sum of two overflows float32."""
    rng = np.random.RandomState(0)
    X = (np.sign(rng.randn(n, p)) * rng.uniform(2e38, 3.3e38, (n, p))).astype(np.float32)
    return X, (X[:, 0] > 0).astype(int)


@pytest.mark.parametrize(
    "make",
    [
        lambda: of.SPORFClassifier(n_estimators=10, random_state=0),
        lambda: of.ObliqueForestClassifier(of.projections.Gaussian(), 10, random_state=0),
        lambda: of.ObliqueForestClassifier(of.projections.ForestRC(3), 10, random_state=0),
    ],
)
def test_oblique_forest_learns_near_float32_max_like_rf(make):
    X, y = _huge_data()
    rf = of.RandomForestClassifier(n_estimators=10, random_state=0).fit(X, y)
    est = make().fit(X, y)
    assert (rf.predict(X) == y).mean() == 1.0
    # projected sums overflowed to infinity before: no split, accuracy at chance
    assert (est.predict(X) == y).mean() >= 0.97
    assert est.feature_importances_[0] == est.feature_importances_.max()
    # and prediction follows the fit's arithmetic: fully grown trees reproduce the labels
    est1 = make().set_params(n_estimators=1, bootstrap=False).fit(X, y)
    assert (est1.predict(X) == y).all()


@pytest.mark.parametrize(
    "make",
    [
        lambda: of.MORFClassifier(n_estimators=3, data_shape=(5,), max_patch_size=3),
        lambda: of.ObliqueForestClassifier(
            of.projections.Dictionary(np.array([[1.0, 0], [1, 1], [0, 1], [0, 0], [0, 0]])), 3
        ),
    ],
    ids=["morf", "dictionary"],
)
def test_stored_descriptor_families_refuse_sums_beyond_float32(make):
    # patch and atom weights are not stored per node, so they cannot be halved like the
    # sparse families' weights: such data are refused by name instead of growing stumps
    X, y = _huge_data()
    with pytest.raises(ValueError, match="float32's range.*rescale X"):
        make().fit(X, y)
    est = make().fit(X / 2.0**10, y)  # rescaled, the same family learns
    assert (est.predict(X / 2.0**10) == y).mean() > 0.9


@pytest.mark.parametrize("w", [2.0**1000, 2.0**-1000, 1e308, 1e-300])
@pytest.mark.parametrize("task", ["classification", "regression"])
def test_huge_and_tiny_equal_weights_give_the_unweighted_model(w, task):
    X, y = make_classification(200, 5, random_state=0)
    make = of.SPORFClassifier if task == "classification" else of.SPORFRegressor
    target = y if task == "classification" else X[:, 0] * 3.0 + y
    plain = make(n_estimators=5, random_state=0).fit(X, target)
    weighted = make(n_estimators=5, random_state=0).fit(X, target, sample_weight=np.full(200, w))
    out = weighted.predict_proba(X) if task == "classification" else weighted.predict(X)
    want = plain.predict_proba(X) if task == "classification" else plain.predict(X)
    assert np.all(np.isfinite(out))
    if np.log2(w).is_integer():
        # rescaled by a power of two relative to 1: every weight sum scales exactly
        np.testing.assert_array_equal(out, want)
    else:
        # other scales round differently, which may flip near-ties between splits: the
        # two models fit the training data equally well
        assert abs(weighted.score(X, target) - plain.score(X, target)) < 0.05


def test_regression_targets_whose_squares_overflow_are_a_value_error():
    X, y = make_classification(300, 4, random_state=0)
    for scale in [1e308, 1e200]:
        with pytest.raises(ValueError, match="y has values up to"):
            of.RandomForestRegressor(n_estimators=3).fit(X, (y - 0.5) * scale)
    # large but safe targets work, and predict on their scale
    reg = of.RandomForestRegressor(n_estimators=3, random_state=0).fit(X, (y - 0.5) * 1e140)
    assert np.all(np.isfinite(reg.predict(X))) and np.abs(reg.predict(X)).max() > 1e139


def test_rotation_beyond_float32_range_names_the_reason():
    X, y = _huge_data(200, 4)
    est = of.RotationEnsembleClassifier(
        n_estimators=8, n_rotations=3, micro_forest_size=4, scaling=None, random_state=0
    )
    with pytest.raises(ValueError, match="beyond float32's range") as info:
        est.fit(X.astype(np.float64), y)
    assert "NaN" not in str(info.value)
    # scaled inputs work
    est.set_params(scaling="minmax").fit(X.astype(np.float64), y)
    assert (est.predict(X) == y).mean() > 0.9


# -- one estimator, several threads -------------------------------------------------------


def test_predict_during_refit_and_warm_start_sees_one_whole_model():
    rng = np.random.RandomState(0)
    X = rng.randn(2000, 6).astype(np.float32)
    y_int = (X[:, 0] > 0).astype(int)
    y_str = np.array(["a", "b", "c"])[(X[:, 1] > 0).astype(int) + (X[:, 2] > 1)]
    clf = of.SPORFClassifier(n_estimators=10, random_state=0).fit(X, y_int)
    stop, problems, n_predictions = threading.Event(), [], [0]

    def predictor():
        while not stop.is_set():
            try:
                pred = clf.predict(X)
            except Exception as e:  # noqa: BLE001 - every error is a finding here
                problems.append(f"{type(e).__name__}: {e}")
                continue
            n_predictions[0] += 1
            # fully grown forests fit their training labels: a model's predictions match
            # its own labels almost everywhere, and never mix the two label sets
            if not any((pred == want).mean() > 0.9 for want in (y_int, y_str)):
                problems.append(f"labels of one fit from another fit's forest: {set(pred)}")

    thread = threading.Thread(target=predictor)
    thread.start()
    try:
        for i in range(6):
            clf.fit(X, y_str if i % 2 == 0 else y_int)
        clf.set_params(warm_start=True)
        for n in range(12, 40, 4):
            clf.set_params(n_estimators=n).fit(X, y_int)
    finally:
        stop.set()
        thread.join()
    assert not problems, problems[:5]
    assert n_predictions[0] > 0
    assert clf.n_estimators_ == 36


def test_interpret_walks_trees_of_any_depth():
    from obliqueforest.interpret import decision_path_rules, export_text, split_rules

    # alternating labels along one feature grow a chain: depth n - 1
    n = 4001
    X = np.arange(n, dtype=np.float32)[:, None]
    y = np.arange(n) % 2
    clf = of.RandomForestClassifier(n_estimators=1, bootstrap=False, random_state=0).fit(X, y)
    depth = int(clf.tree_stats()[1][0])
    assert depth >= 3000
    truncated = export_text(clf)  # the default max_depth=10 measures the cut branches
    assert f"truncated branch of depth {depth - 10}" in truncated
    assert (
        len(export_text(clf, max_depth=n).splitlines())
        == len(split_rules(clf)) + (len(split_rules(clf)) - 1) // 2
    )
    deepest_row = X[[int(np.argmax(clf.apply(X)[:, 0]))]]
    assert len(decision_path_rules(clf, deepest_row[0])) >= 1


def test_rotation_oob_score_warns_when_rows_have_no_oob_prediction():
    X, y = make_classification(200, 4, random_state=0)
    few = of.RotationEnsembleClassifier(
        n_estimators=2, n_rotations=2, micro_forest_size=1, oob_score=True, random_state=0
    )
    with pytest.warns(UserWarning, match="no out-of-bag prediction"):
        few.fit(X, y)
    assert np.isnan(few.oob_decision_function_).any() and 0 <= few.oob_score_ <= 1
    many = of.RotationEnsembleClassifier(
        n_estimators=60, n_rotations=3, micro_forest_size=20, oob_score=True, random_state=0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        many.fit(X, y)


# -- the memory guard -------------------------------------------------------------------


@pytest.fixture
def memory_limit():
    before = of.memory_limit()
    yield of.set_memory_limit
    of.set_memory_limit(before)


def test_absurd_requests_are_refused_before_growing(memory_limit):
    memory_limit(8 * 10**9)
    rng = np.random.RandomState(0)
    X = rng.randn(20000, 4)
    many_classes = rng.randint(0, 10_000, 20000)
    with pytest.raises(ValueError, match="memory limit.*need at least"):
        of.RandomForestClassifier(n_estimators=100).fit(X, many_classes)
    # the same with shallow trees is small, and fits
    shallow = of.RandomForestClassifier(n_estimators=2, max_depth=2).fit(X, many_classes)
    assert shallow._forest.n_bytes < 10**8
    X, y = make_classification(500, 4, random_state=0)
    memory_limit(50 * 10**6)  # a million small trees take gigabytes: refused up front
    with pytest.raises(ValueError, match="memory limit.*need at least"):
        of.RandomForestClassifier(n_estimators=10**6, n_jobs=2).fit(X, y)
    # beyond the bound on n_estimators the request is refused by name before any estimate
    with pytest.raises(ValueError, match="n_estimators"):
        of.RandomForestClassifier(n_estimators=10**7).fit(X, y)


def test_requests_count_the_buffers_of_the_trees_growing_at_once(memory_limit):
    # 100,000 rows: 1.2 MB of buffers a growing tree (12 bytes a row), a tiny model
    X, y = make_classification(100_000, 4, random_state=0)
    memory_limit(2 * 10**6)
    shallow = dict(n_estimators=2, max_depth=2, random_state=0)
    of.RandomForestClassifier(n_jobs=1, **shallow).fit(X, y)
    with pytest.raises(ValueError, match="2400 kB while 2 trees grow at once.*n_jobs"):
        of.RandomForestClassifier(n_jobs=2, **shallow).fit(X, y)


def test_memory_limit_stops_a_fit_whose_trees_outgrow_it(memory_limit):
    X, y = make_classification(2000, 6, flip_y=0.3, random_state=0)
    one = of.SPORFClassifier(n_estimators=1, random_state=0).fit(X, y)
    per_tree = one._forest.n_bytes
    memory_limit(per_tree * 20)
    est = of.SPORFClassifier(n_estimators=200, n_jobs=2, random_state=0)
    with pytest.raises(of.ForestError, match="would take about"):
        est.fit(X, y)
    assert not hasattr(est, "_forest")
    # within the limit, and unlimited
    assert of.SPORFClassifier(n_estimators=10, random_state=0).fit(X, y)._forest.n_trees == 10
    memory_limit(None)
    assert of.memory_limit() is None
    assert of.SPORFClassifier(n_estimators=40, random_state=0).fit(X, y)._forest.n_trees == 40


UNDER_ADDRESS_SPACE_LIMIT = """
import resource, numpy as np, obliqueforest as of
def status(key):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith(key))
rng = np.random.default_rng(0)
X = rng.normal(size=(200_000, 10)).astype(np.float32)
y = rng.integers(0, 64, 200_000)
# `ulimit -v`: 2 GiB more address space than in use, far less than 100 such trees take
resource.setrlimit(resource.RLIMIT_AS, (status("VmSize:") + 2**31, resource.RLIM_INFINITY))
try:
    of.RandomForestClassifier(100, n_jobs=2, random_state=0).fit(X, y)
    print("fitted")
except of.ForestError as e:
    print(type(e).__name__, e)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc: Linux")
def test_auto_memory_limit_respects_an_address_space_limit():
    # the 'auto' budget once read only the host's memory: under `ulimit -v` this fit aborted
    # the interpreter ("memory allocation of 67108864 bytes failed")
    out = subprocess.run(
        [sys.executable, "-c", UNDER_ADDRESS_SPACE_LIMIT],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.startswith("ForestError memory limit:"), out.stdout


@pytest.mark.parametrize("bad", [0, -5, "lots", 1.5, True, 2**64])
def test_memory_limit_rejects_bad_values(bad, memory_limit):
    with pytest.raises(ValueError):
        memory_limit(bad)


# -- parameters of the process model at their type limits ---------------------------------

_N_JOBS = st.one_of(
    st.none(),
    st.integers(-(2**70), 2**70),
    st.sampled_from([0, -1, 1, 2**31, 2**63 - 1, -(2**63), 2**64, True, 1.0, "2", np.int64(3)]),
)


@settings(max_examples=30, deadline=None)
@given(n_jobs=_N_JOBS)
def test_n_jobs_at_type_limits_works_or_is_a_value_error(n_jobs):
    X, y = make_classification(80, 4, random_state=0)
    valid = n_jobs is None or (
        isinstance(n_jobs, (int, np.integer)) and not isinstance(n_jobs, bool) and n_jobs != 0
    )
    est = of.SPORFClassifier(n_estimators=3, random_state=0, n_jobs=n_jobs)
    if not valid:
        with pytest.raises(ValueError):
            est.fit(X, y)
        return
    ref = of.SPORFClassifier(n_estimators=3, random_state=0).fit(X, y)
    # capped at the cores, and the model does not depend on it
    assert 1 <= of._core.n_threads(n_jobs) <= max(1, of._core.n_threads(-1))
    np.testing.assert_array_equal(est.fit(X, y).predict_proba(X), ref.predict_proba(X))
    with pytest.raises(ValueError):
        ref._forest.predict(X.astype(np.float32), 0)
