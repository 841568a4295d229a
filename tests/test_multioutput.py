"""Multi-output y (a 2-D y: one tree per estimator whose splits serve every output), for
every forest family and the rotation ensembles, against scikit-learn's random forest."""

import warnings

import numpy as np
import pytest
from sklearn.ensemble import RandomForestClassifier as SkRFC
from sklearn.ensemble import RandomForestRegressor as SkRFR
from sklearn.exceptions import DataConversionWarning
from sklearn.metrics import r2_score

import obliqueforest as of
from obliqueforest.projections import ForestRC

P = 6
CLASSIFIERS = {
    "rf": lambda **kw: of.RandomForestClassifier(**kw),
    "sporf": lambda **kw: of.SPORFClassifier(**kw),
    "forest_rc": lambda **kw: of.ObliqueForestClassifier(projection=ForestRC(2), **kw),
    "morf": lambda **kw: of.MORFClassifier(
        data_shape=(P,), max_patch_size=2, differences=0.0, max_features=1.0, **kw
    ),
    "rotation": lambda **kw: of.RotationEnsembleClassifier(n_rotations=3, **kw),
}
REGRESSORS = {
    "rf": lambda **kw: of.RandomForestRegressor(**kw),
    "sporf": lambda **kw: of.SPORFRegressor(**kw),
    "forest_rc": lambda **kw: of.ObliqueForestRegressor(projection=ForestRC(2), **kw),
    "morf": lambda **kw: of.MORFRegressor(
        data_shape=(P,), max_patch_size=2, differences=0.0, max_features=1.0, **kw
    ),
    "rotation": lambda **kw: of.RotationEnsembleRegressor(n_rotations=3, **kw),
}
FORESTS = [k for k in CLASSIFIERS if k != "rotation"]


def _classification(n=400, seed=0):
    """Two outputs, each with its own labels: a binary one (-1, 1) and a 3-class one."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, P))
    y0 = np.where(X[:, 0] + X[:, 1] > 0, 1, -1)
    y1 = np.digitize(X[:, 2] - X[:, 3], [-0.7, 0.7]) * 10  # classes 0, 10, 20
    return X, np.stack([y0, y1], axis=1)


def _regression(n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, P))
    y = np.stack([X[:, 0] + 2 * X[:, 1], np.sin(3 * X[:, 2]) + X[:, 3] ** 2], axis=1)
    return X, y + 0.05 * rng.normal(size=y.shape)


@pytest.mark.parametrize("name", CLASSIFIERS)
def test_multi_output_classifier_shapes_and_accuracy_against_scikit_learn(name):
    X, y = _classification()
    Xt, yt = _classification(seed=1)
    clf = CLASSIFIERS[name](n_estimators=40, random_state=0).fit(X, y)
    assert clf.n_outputs_ == 2
    assert clf.n_classes_ == [2, 3]
    np.testing.assert_array_equal(clf.classes_[0], [-1, 1])
    np.testing.assert_array_equal(clf.classes_[1], [0, 10, 20])
    pred = clf.predict(Xt)
    assert pred.shape == (len(Xt), 2)
    proba = clf.predict_proba(Xt)
    assert isinstance(proba, list) and [p.shape for p in proba] == [(400, 2), (400, 3)]
    for p in proba:
        np.testing.assert_allclose(p.sum(axis=1), 1.0)
    log = clf.predict_log_proba(Xt)
    assert isinstance(log, list) and log[1].shape == (400, 3)
    sk = SkRFC(n_estimators=40, random_state=0).fit(X, y)
    sk_pred = sk.predict(Xt)
    for o in range(2):
        ours = np.mean(pred[:, o] == yt[:, o])
        ref = np.mean(sk_pred[:, o] == yt[:, o])
        assert ours > ref - 0.08, f"{name} output {o}: {ours:.3f} vs scikit-learn {ref:.3f}"


@pytest.mark.parametrize("name", REGRESSORS)
def test_multi_output_regressor_shapes_and_r2_against_scikit_learn(name):
    X, y = _regression()
    Xt, yt = _regression(seed=1)
    reg = REGRESSORS[name](n_estimators=40, random_state=0).fit(X, y)
    assert reg.n_outputs_ == 2
    pred = reg.predict(Xt)
    assert pred.shape == (400, 2)
    sk = SkRFR(n_estimators=40, random_state=0).fit(X, y).predict(Xt)
    for o in range(2):
        ours, ref = r2_score(yt[:, o], pred[:, o]), r2_score(yt[:, o], sk[:, o])
        assert ours > ref - 0.1, f"{name} output {o}: {ours:.3f} vs scikit-learn {ref:.3f}"
    assert reg.score(Xt, yt) == pytest.approx(r2_score(yt, pred))


def test_a_repeated_column_grows_the_single_output_forest():
    # both outputs the same: every split is the single-output one, so are the leaves
    X, y = _classification()
    single = of.RandomForestClassifier(n_estimators=10, random_state=3).fit(X, y[:, 1])
    double = of.RandomForestClassifier(n_estimators=10, random_state=3).fit(X, y[:, [1, 1]])
    for p in double.predict_proba(X):
        np.testing.assert_allclose(p, single.predict_proba(X))
    Xr, yr = _regression()
    single = of.SPORFRegressor(n_estimators=5, random_state=3).fit(Xr, yr[:, 0])
    double = of.SPORFRegressor(n_estimators=5, random_state=3).fit(Xr, yr[:, [0, 0]])
    np.testing.assert_allclose(double.predict(Xr)[:, 1], single.predict(Xr))


@pytest.mark.parametrize("name", CLASSIFIERS)
def test_multi_output_oob_as_scikit_learn(name):
    X, y = _classification(n=300)
    multilabel = np.stack([y[:, 0] == 1, y[:, 1] == 20], axis=1).astype(int)
    clf = CLASSIFIERS[name](n_estimators=40, oob_score=True, random_state=0)
    clf.fit(X, multilabel)
    assert clf.oob_decision_function_.shape == (300, 2, 2)
    Xt, yt = _classification(seed=1)
    held_out = np.mean(
        (clf.predict(Xt) == np.stack([yt[:, 0] == 1, yt[:, 1] == 20], axis=1)).all(axis=1)
    )
    assert abs(clf.oob_score_ - held_out) < 0.1
    # multiclass-multioutput: scikit-learn refuses OOB estimates
    with pytest.raises(ValueError, match="multiclass-multioutput"):
        CLASSIFIERS[name](n_estimators=5, oob_score=True).fit(X, y)


@pytest.mark.parametrize("name", REGRESSORS)
def test_multi_output_regressor_oob(name):
    X, y = _regression(n=300)
    reg = REGRESSORS[name](n_estimators=40, oob_score=True, random_state=0).fit(X, y)
    assert reg.oob_prediction_.shape == (300, 2)
    assert 0.5 < reg.oob_score_ <= 1.0


@pytest.mark.parametrize("name", FORESTS)
def test_multi_output_importances_find_the_signal(name):
    X, y = _regression()
    reg = REGRESSORS[name](n_estimators=30, random_state=0).fit(X, y)
    imp = reg.feature_importances_
    assert imp.shape == (P,) and imp.sum() == pytest.approx(1.0)
    # features 4 and 5 carry nothing (feature 3 little: x3**2 on [-1, 1])
    assert imp[4:].max() < imp[:3].min()
    assert imp[4:].sum() < 0.15


@pytest.mark.parametrize("name", ["rf", "sporf", "morf", "rotation"])
def test_multi_output_save_load_round_trips(name, tmp_path):
    X, y = _classification(n=200)
    clf = CLASSIFIERS[name](n_estimators=10, random_state=0).fit(X, y)
    clf.save(tmp_path / "c.of")
    back = of.load(tmp_path / "c.of")
    assert back.n_classes_ == [2, 3] and back.n_outputs_ == 2
    for a, b in zip(back.classes_, clf.classes_):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(back.predict(X), clf.predict(X))
    Xr, yr = _regression(n=200)
    reg = REGRESSORS[name](n_estimators=10, random_state=0).fit(Xr, yr)
    reg.save(tmp_path / "r.of")
    back = of.load(tmp_path / "r.of")
    assert back.n_outputs_ == 2
    np.testing.assert_array_equal(back.predict(Xr), reg.predict(Xr))


@pytest.mark.parametrize("name", ["rf", "sporf", "rotation"])
def test_multi_output_does_not_depend_on_n_jobs(name):
    X, y = _classification(n=200)
    a = CLASSIFIERS[name](n_estimators=8, random_state=2, n_jobs=1).fit(X, y)
    b = CLASSIFIERS[name](n_estimators=8, random_state=2, n_jobs=2).fit(X, y)
    for p, q in zip(a.predict_proba(X), b.predict_proba(X)):
        np.testing.assert_array_equal(p, q)


@pytest.mark.parametrize("name", ["rf", "sporf", "rotation"])
def test_a_column_vector_y_warns_and_fits_one_output(name):
    X, y = _classification(n=150)
    one = CLASSIFIERS[name](n_estimators=5, random_state=0).fit(X, y[:, 1])
    with pytest.warns(DataConversionWarning, match="column-vector y"):
        col = CLASSIFIERS[name](n_estimators=5, random_state=0).fit(X, y[:, 1:])
    assert col.n_outputs_ == 1 and not isinstance(col.classes_, list)
    np.testing.assert_array_equal(col.predict_proba(X), one.predict_proba(X))
    assert col.predict(X).shape == (150,)
    Xr, yr = _regression(n=150)
    with pytest.warns(DataConversionWarning):
        reg = REGRESSORS[name](n_estimators=5, random_state=0).fit(Xr, yr[:, :1])
    assert reg.predict(Xr).shape == (150,)


@pytest.mark.parametrize("name", FORESTS)
def test_per_tree_access_on_multi_output_forests(name):
    X, y = _classification(n=150)
    clf = CLASSIFIERS[name](n_estimators=3, random_state=0).fit(X, y)
    tree = clf.estimators_[0]
    assert tree.n_outputs_ == 2
    assert tree.predict(X).shape == (150, 2)
    assert [p.shape for p in tree.predict_proba(X)] == [(150, 2), (150, 3)]
    value = tree.tree_.value
    assert value.shape == (tree.tree_.node_count, 2, 3)
    np.testing.assert_allclose(value[:, 0, :2].sum(axis=1), 1.0)
    np.testing.assert_array_equal(value[:, 0, 2], 0.0)  # the binary output is zero-padded
    # the forest's probabilities are the mean of its trees'
    mean = np.mean([t.predict_proba(X)[1] for t in clf.estimators_], axis=0)
    np.testing.assert_allclose(mean, clf.predict_proba(X)[1])
    Xr, yr = _regression(n=150)
    reg = REGRESSORS[name](n_estimators=3, random_state=0).fit(Xr, yr)
    assert reg.estimators_[0].tree_.value.shape[1:] == (2, 1)
    assert reg.estimators_[0].predict(Xr).shape == (150, 2)


def test_multi_output_class_weights_as_scikit_learn():
    X, y = _classification(n=200)
    clf = of.RandomForestClassifier(n_estimators=5, random_state=0)
    with pytest.raises(ValueError, match="list of dicts"):
        clf.set_params(class_weight={1: 2.0}).fit(X, y)
    weights = [{-1: 1.0, 1: 3.0}, {0: 1.0, 10: 2.0, 20: 1.0}]
    by_dicts = clf.set_params(class_weight=weights).fit(X, y).predict_proba(X)
    sw = np.array([weights[0][a] * weights[1][b] for a, b in y])
    by_weights = clf.set_params(class_weight=None).fit(X, y, sample_weight=sw).predict_proba(X)
    for a, b in zip(by_dicts, by_weights):
        np.testing.assert_allclose(a, b)
    for cw in ["balanced", "balanced_subsample"]:
        clf.set_params(class_weight=cw).fit(X, y)
        assert clf.predict(X).shape == (200, 2)


def test_balanced_subsample_weighs_each_output_as_scikit_learn():
    from sklearn.utils import compute_sample_weight

    X, y = _classification(n=120)
    y = y[:60]
    X = X[:60]
    clf = of.RandomForestClassifier(
        n_estimators=3, class_weight="balanced_subsample", random_state=0
    ).fit(X, y)
    for tree, rows in zip(clf.estimators_, clf.estimators_samples_):
        counts = np.bincount(rows, minlength=60)
        expected = compute_sample_weight("balanced", y, indices=rows) * counts
        assert tree.tree_.weighted_n_node_samples[0] == pytest.approx(expected.sum())


def test_multi_output_warm_start_keeps_the_classes():
    X, y = _classification(n=150)
    clf = of.SPORFClassifier(n_estimators=4, warm_start=True, random_state=0).fit(X, y)
    clf.set_params(n_estimators=8).fit(X, y)
    assert len(clf) == 8
    with pytest.raises(ValueError, match="same classes"):
        clf.set_params(n_estimators=10).fit(X, y[:, [1, 0]])


def test_poisson_and_absolute_error_take_several_outputs():
    X, y = _regression()
    for criterion, target in [("absolute_error", y), ("poisson", np.abs(y))]:
        reg = of.SPORFRegressor(n_estimators=10, criterion=criterion, random_state=0)
        assert reg.fit(X, target).predict(X).shape == (400, 2)


def test_score_of_a_multiclass_multi_output_classifier_is_refused_as_scikit_learn():
    X, y = _classification(n=100)
    clf = of.RandomForestClassifier(n_estimators=3, random_state=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="multiclass-multioutput is not supported"):
            clf.score(X, y)


def test_multi_output_on_dask_replicate_mode_or_a_clear_refusal():
    pytest.importorskip("distributed")
    da = pytest.importorskip("dask.array")
    from distributed import Client, LocalCluster

    from obliqueforest import dask as odask

    X, y = _classification(n=200)
    local = of.SPORFClassifier(n_estimators=6, random_state=0).fit(X, y)
    with (
        LocalCluster(
            processes=False, n_workers=1, threads_per_worker=2, dashboard_address=":0"
        ) as cluster,
        Client(cluster) as client,
    ):
        est = odask.fit(
            of.SPORFClassifier(n_estimators=6, random_state=0),
            X,
            y,
            client=client,
            mode="replicate",
        )
        for a, b in zip(est.predict_proba(X), local.predict_proba(X)):
            np.testing.assert_array_equal(a, b)
        rot = odask.fit(
            of.RotationEnsembleRegressor(n_estimators=6, n_rotations=2, random_state=0),
            *_regression(n=100),
            client=client,
        )
        assert rot.predict(X[:3]).shape == (3, 2)
        with pytest.raises(ValueError, match="partitions mode"):
            odask.fit(of.SPORFClassifier(n_estimators=4), X, y, client=client, mode="partitions")
        Xd = da.from_array(X, chunks=(100, P))
        yd = da.from_array(y, chunks=(100, 2))
        with pytest.raises(ValueError, match="multi-output"):
            odask.fit(of.SPORFClassifier(n_estimators=4), Xd, yd, client=client)
