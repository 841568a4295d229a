"""MORF: patch projections (MORF paper, Sect. 3 and 5.1) — accuracy against the
axis-aligned forest, geometry validation and importance maps."""

import numpy as np
import obliqueforest as of
import pytest
from obliqueforest import datasets, projections
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split


def _errors(morf, X, y, Xt, yt):
    rf = of.RandomForestClassifier(100, random_state=0, n_jobs=2).fit(X, y)
    morf.fit(X, y)
    return 1 - morf.score(Xt, yt), 1 - rf.score(Xt, yt)


def test_morf_beats_random_forest_on_hv_bars_with_20_images():
    X, y = datasets.make_hv_bars(20, random_state=0)
    Xt, yt = datasets.make_hv_bars(2000, random_state=1)
    morf = of.MORFClassifier(
        100,
        data_shape=(28, 28),
        min_patch_size=(1, 2),
        max_patch_size=(2, 9),
        random_state=0,
        n_jobs=2,
    )
    err_morf, err_rf = _errors(morf, X, y, Xt, yt)
    assert err_morf <= err_rf - 0.10, (err_morf, err_rf)


def test_morf_wraps_around_on_circle_segments():
    X, y = datasets.make_circle_segments(400, random_state=0)
    Xt, yt = datasets.make_circle_segments(2000, random_state=1)
    morf = of.MORFClassifier(
        100,
        data_shape=(100,),
        min_patch_size=3,
        max_patch_size=12,
        periodic=True,
        max_features=0.5,
        random_state=0,
        n_jobs=2,
    )
    err_morf, err_rf = _errors(morf, X, y, Xt, yt)
    assert err_morf <= err_rf - 0.15, (err_morf, err_rf)


@pytest.mark.parametrize("decay_length, max_patch", [(1.0, 12), (20.0, 50)])
def test_morf_no_worse_than_random_forest_on_impulse(decay_length, max_patch):
    # decay as written in the paper (1 step, Bayes error ~0.30) with the paper's patches
    # 2..12, and a wider decay with patches wide enough to sum it
    X, y = datasets.make_impulse(400, decay_length=decay_length, random_state=0)
    Xt, yt = datasets.make_impulse(2000, decay_length=decay_length, random_state=1)
    morf = of.MORFClassifier(
        100,
        data_shape=(100,),
        min_patch_size=2,
        max_patch_size=max_patch,
        max_features=0.3,
        random_state=0,
        n_jobs=2,
    )
    err_morf, err_rf = _errors(morf, X, y, Xt, yt)
    assert err_morf <= err_rf + 0.02, (err_morf, err_rf)
    if decay_length > 1:  # wide patches pay off once the signal is wider than one step
        assert err_morf <= err_rf - 0.025, (err_morf, err_rf)


def test_morf_no_worse_than_random_forest_on_digits():
    X, y = load_digits(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
    morf = of.MORFClassifier(
        100, data_shape=(8, 8), min_patch_size=1, max_patch_size=3, random_state=0, n_jobs=2
    )
    err_morf, err_rf = _errors(morf, Xtr, ytr, Xte, yte)
    assert err_morf <= err_rf, (err_morf, err_rf)


def test_morf_importance_maps_have_the_data_shape():
    X, y = datasets.make_hv_bars(60, random_state=0)
    morf = of.MORFClassifier(20, data_shape=(28, 28), max_patch_size=4, random_state=0)
    morf.fit(X, y)
    imp = morf.feature_importance_map()
    counts = morf.feature_importance_map("count")
    assert imp.shape == counts.shape == (28, 28)
    assert abs(imp.sum() - 1) < 1e-9 and abs(counts.sum() - 1) < 1e-9
    # patches cover contiguous pixels: used pixels come in neighbourhoods
    assert (counts > 0).sum() > 28
    with pytest.raises(ValueError, match="kind"):
        morf.feature_importance_map("nope")


def test_morf_multichannel_patches_span_channel_subsets():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 2 * 30))
    y = (X[:, 30 + 10 : 30 + 15].sum(axis=1) > 0).astype(int)  # channel 1, steps 10..14
    morf = of.MORFClassifier(
        40,
        data_shape=(2, 30),
        channel_axis=0,
        min_patch_size=3,
        max_patch_size=6,
        random_state=0,
    ).fit(X, y)
    imp = morf.feature_importance_map()
    assert imp.shape == (2, 30)
    assert imp[1].sum() > imp[0].sum()
    assert imp[1, 8:17].sum() > 0.3


@pytest.mark.parametrize(
    "params, msg",
    [
        (dict(data_shape=(5, 5)), "data_shape"),
        (dict(data_shape=(4, 4), max_patch_size=5), "max_patch_size"),
        (dict(data_shape=(4, 4), min_patch_size=3, max_patch_size=2), "min_patch_size"),
        (dict(data_shape=(4, 4), min_patch_size=(1, 1, 1)), "min_patch_size"),
        (dict(data_shape=(4, 4), periodic=(True,)), "periodic"),
        (dict(data_shape=(2, 8), channel_axis=2), "channel_axis"),
    ],
)
def test_morf_rejects_geometry_that_does_not_fit(params, msg):
    X = np.random.default_rng(0).normal(size=(20, 16))
    y = np.arange(20) % 2
    with pytest.raises(ValueError, match=msg):
        of.MORFClassifier(3, **params).fit(X, y)


def test_morf_regressor_learns_a_local_signal():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(500, 50))
    y = X[:, 20:26].sum(axis=1)
    Xt = rng.normal(size=(500, 50))
    yt = Xt[:, 20:26].sum(axis=1)
    morf = of.MORFRegressor(
        50, min_patch_size=4, max_patch_size=8, max_features=1.0, random_state=0, n_jobs=2
    ).fit(X, y)
    rf = of.RandomForestRegressor(50, random_state=0, n_jobs=2).fit(X, y)
    assert morf.score(Xt, yt) > rf.score(Xt, yt)


def _mean_errors(estimators, X, y, splits):
    """Mean test error of each named estimator factory over ``splits``."""
    errors = {name: [] for name in estimators}
    for seed, (train, test) in enumerate(splits):
        for name, make in estimators.items():
            est = make(seed).fit(X[train], y[train])
            errors[name].append(np.mean(est.predict(X[test]) != y[test]))
    return {name: float(np.mean(e)) for name, e in errors.items()}


def test_morf_at_defaults_beats_random_forest_and_sporf_on_digits_over_splits():
    from sklearn.model_selection import StratifiedKFold

    X, y = load_digits(return_X_y=True)
    splits = list(StratifiedKFold(3, shuffle=True, random_state=0).split(X, y))
    err = _mean_errors(
        {
            "morf": lambda s: of.MORFClassifier(data_shape=(8, 8), random_state=s, n_jobs=2),
            "rf": lambda s: of.RandomForestClassifier(random_state=s, n_jobs=2),
            "sporf": lambda s: of.SPORFClassifier(random_state=s, n_jobs=2),
        },
        X,
        y,
        splits,
    )
    assert err["morf"] < min(err["rf"], err["sporf"]), err


def test_morf_at_defaults_beats_random_forest_and_sporf_on_mnist1d_subset():
    data = pytest.importorskip("mnist1d.data")
    d = data.make_dataset(data.get_dataset_args())  # built from templates, offline
    X = np.vstack([d["x"][:2000], d["x_test"]]).astype(np.float32)
    y = np.concatenate([d["y"][:2000], d["y_test"]])
    splits = [(np.arange(2000), np.arange(2000, len(y)))]
    err = _mean_errors(
        {
            "morf": lambda s: of.MORFClassifier(data_shape=(40,), random_state=s, n_jobs=2),
            "unpooled": lambda s: of.MORFClassifier(
                data_shape=(40,), pooled=0.0, random_state=s, n_jobs=2
            ),
            "rf": lambda s: of.RandomForestClassifier(random_state=s, n_jobs=2),
            "sporf": lambda s: of.SPORFClassifier(random_state=s, n_jobs=2),
        },
        X,
        y,
        splits,
    )
    assert err["morf"] < min(err["rf"], err["sporf"]) - 0.02, err
    # pooled filters (the default) find the shifted templates that fixed patches miss
    assert err["morf"] < err["unpooled"] - 0.04, err


def test_morf_without_differences_is_the_papers_patch_forest():
    X, y = load_digits(return_X_y=True)
    kw = dict(data_shape=(8, 8), max_patch_size=3, max_features=8, random_state=0)
    paper = of.MORFClassifier(10, differences=0.0, pooled=0.0, **kw).fit(X, y)
    plain = of.ObliqueForestClassifier(
        projections.Patch((8, 8), max_patch_size=3), 10, max_features=8, random_state=0
    ).fit(X, y)
    assert paper._forest.to_bytes() == plain._forest.to_bytes()
    haar = of.MORFClassifier(10, differences=0.5, pooled=0.0, **kw).fit(X, y)
    assert haar._forest.projection_family()[0] == "haar"
    assert of.MORFClassifier(10, **kw).fit(X, y)._forest.projection_family()[0] == "pooled"
    assert paper._forest.projection_family()[0] == "patch"


def test_morf_haar_patches_save_load_and_pickle(tmp_path):
    import pickle

    X, y = load_digits(return_X_y=True)
    morf = of.MORFClassifier(10, data_shape=(8, 8), differences=0.7, random_state=0).fit(X, y)
    morf.save(tmp_path / "m.of")
    for again in (of.load(tmp_path / "m.of"), pickle.loads(pickle.dumps(morf))):
        assert again.differences == 0.7
        np.testing.assert_array_equal(again.predict_proba(X), morf.predict_proba(X))
    family = projections.HaarPatch([8, 8], max_patch_size=2, differences=1.0)
    est = of.ObliqueForestClassifier(family, 10, random_state=0).fit(X, y)
    est.save(tmp_path / "h.of")
    assert of.load(tmp_path / "h.of").projection == family


@pytest.mark.parametrize("differences", [-0.1, 1.5])
def test_morf_differences_out_of_range_is_a_value_error(differences):
    X, y = load_digits(return_X_y=True)
    with pytest.raises(ValueError, match="differences"):
        of.MORFClassifier(2, data_shape=(8, 8), differences=differences).fit(X, y)
    with pytest.raises(ValueError, match="differences"):
        of.ObliqueForestClassifier(projections.HaarPatch((8, 8), differences=differences), 2).fit(
            X, y
        )
