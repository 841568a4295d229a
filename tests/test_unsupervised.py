"""Forests without targets (issue 25 items 3 and 4): unsupervised random forests and
isolation forests on every projection family, with scikit-learn's API and the package's
guarantees (NaN, sparse X, seeds and threads, transactional fits, model files)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import sparse
from sklearn.cluster import KMeans, SpectralClustering
from sklearn.ensemble import IsolationForest as SKIsolationForest
from sklearn.metrics import adjusted_rand_score, roc_auc_score
from sklearn.utils.estimator_checks import parametrize_with_checks

import obliqueforest as of
from obliqueforest import IsolationForest, UnsupervisedRandomForest
from obliqueforest.projections import ForestRC, Gaussian, Patch, SparseSigned

FAMILIES = {
    "axis": None,
    "sporf": SparseSigned(),
    "forest-rc": ForestRC(2),
    "gaussian": Gaussian(),
}

_WEIGHT_REASON = (
    "each tree draws its rows uniformly whatever their weights (as scikit-learn's "
    "IsolationForest, which declares the same), so a weight of 2 is not a repeated row"
)


_URF_WEIGHT_REASON = (
    "bootstrap samples are drawn by row and min_samples_split='sqrt' counts rows, so a "
    "weight of 2 is not a repeated row (as for every forest here); transform, whose "
    "spectral step itself counts a weight of w as w rows "
    "(test_urf_embedding_counts_a_weight_as_repeated_rows), shows it"
)


def _expected_failed_checks(est):
    if isinstance(est, IsolationForest):
        return {
            "check_sample_weight_equivalence_on_dense_data": _WEIGHT_REASON,
            "check_sample_weight_equivalence_on_sparse_data": _WEIGHT_REASON,
        }
    if isinstance(est, UnsupervisedRandomForest):
        return {
            "check_sample_weight_equivalence_on_dense_data": _URF_WEIGHT_REASON,
            "check_sample_weight_equivalence_on_sparse_data": _URF_WEIGHT_REASON,
        }
    return {}


@parametrize_with_checks(
    [
        IsolationForest(n_estimators=10, random_state=0),
        IsolationForest(n_estimators=10, projection=SparseSigned(), random_state=0),
        UnsupervisedRandomForest(n_estimators=10, random_state=0),
        UnsupervisedRandomForest(n_estimators=10, projection=Gaussian(), random_state=0),
    ],
    expected_failed_checks=_expected_failed_checks,
)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


# -- data --------------------------------------------------------------------------------


def blobs_with_noise(n=300, noise=400, radius=2.5, seed=0):
    """Three clusters apart in 2 of 2 + ``noise`` columns, all of unit variance: the noise
    columns swamp the Euclidean distances k-means works with."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 3
    angle = 2 * np.pi * np.arange(3) / 3
    centres = radius * np.c_[np.cos(angle), np.sin(angle)]
    X = np.hstack([centres[y] + rng.normal(size=(n, 2)), rng.normal(size=(n, noise))])
    return X, y


def rotated_clusters(n=300, noise=2, seed=0):
    """Two long clusters side by side along x0 + x1, apart along x0 - x1: no feature alone
    shows them (each marginal is one wide bump), a difference of two features does."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 2
    along = 3.0 * rng.normal(size=n)
    across = 0.4 * rng.normal(size=n) + 2.0 * (y - 0.5)
    X2 = np.c_[along + across, along - across] / np.sqrt(2)
    return np.hstack([X2, rng.normal(size=(n, noise))]), y


def band(n, rng, curved):
    """Normal rows on a thin diagonal band (or a sine-shaped one)."""
    t = rng.uniform(-3, 3, n)
    e = rng.normal(scale=0.15, size=n)
    if curved:
        return np.c_[t, 1.5 * np.sin(1.5 * t) + e]
    return np.c_[t + e / np.sqrt(2), t - e / np.sqrt(2)]


def near_band(n, rng, curved):
    """Anomalies close to the band (0.4 to 1.2 away), inside its bounding box: where
    axis-parallel cuts leave regions of false normality (Hariri et al. 2019)."""
    out = []
    while len(out) < n:
        p = rng.uniform(-3, 3, 2)
        d = abs(p[1] - 1.5 * np.sin(1.5 * p[0])) if curved else abs(p[0] - p[1]) / np.sqrt(2)
        if 0.4 < d < 1.2:
            out.append(p)
    return np.array(out)


def spectral(proximity, k):
    model = SpectralClustering(k, affinity="precomputed", random_state=0)
    return model.fit_predict(proximity.toarray())


# -- unsupervised random forests ---------------------------------------------------------


def test_urf_spectral_clustering_on_proximity_beats_kmeans_with_noise_dimensions():
    X, y = blobs_with_noise()
    kmeans = adjusted_rand_score(y, KMeans(3, n_init=10, random_state=0).fit_predict(X))
    urf = UnsupervisedRandomForest(60, random_state=0, n_jobs=2).fit(X)
    forest = adjusted_rand_score(y, spectral(urf.proximity(X), 3))
    # measured: k-means 0.30, the forest's proximity 0.92
    assert kmeans < 0.5 and forest > 0.8, (kmeans, forest)


@pytest.mark.parametrize("criterion", ["twomeans", "fastbic"])
def test_urf_oblique_beats_axis_on_rotated_clusters(criterion):
    X, y = rotated_clusters()
    scores = {}
    for name, projection in [("axis", None), ("sporf", SparseSigned())]:
        urf = UnsupervisedRandomForest(
            60, projection=projection, criterion=criterion, max_features=2.0, random_state=0
        ).fit(X)
        scores[name] = adjusted_rand_score(y, spectral(urf.proximity(X), 2))
    # measured: axis 0.01 and 0.00, SPORF 0.96 and 0.97 (twomeans, fastbic)
    assert scores["sporf"] > 0.85 and scores["sporf"] - scores["axis"] > 0.5, scores


def test_urf_proximity_is_the_fraction_of_trees_sharing_a_leaf():
    X, _ = rotated_clusters(120)
    urf = UnsupervisedRandomForest(20, projection=SparseSigned(), random_state=1).fit(X)
    leaves = urf.apply(X)
    direct = (leaves[:, None, :] == leaves[None, :, :]).mean(axis=2)
    P = urf.proximity(X)
    assert sparse.issparse(P) and P.shape == (120, 120)
    np.testing.assert_allclose(P.toarray(), direct)
    np.testing.assert_array_equal(P.diagonal(), 1.0)
    # between two sets of rows
    cross = urf.proximity(X[:10], X[50:80]).toarray()
    np.testing.assert_allclose(cross, direct[:10, 50:80])
    # leaves hold several rows: min_samples_split="sqrt" stops at ceil(sqrt(120)) = 11
    assert (P.getnnz(axis=1) > 1).all()


def test_urf_proximity_is_held_to_the_memory_limit():
    X, _ = rotated_clusters(200)
    urf = UnsupervisedRandomForest(10, random_state=0).fit(X)
    before = of.memory_limit()
    try:
        of.set_memory_limit(10_000)
        with pytest.raises(MemoryError, match="proximity.*memory limit"):
            urf.proximity(X)
    finally:
        of.set_memory_limit(before)
    assert urf.proximity(X[:5]).shape == (5, 5)


def test_urf_has_no_impurity_importances_but_counts_projections():
    X, _ = rotated_clusters(100)
    urf = UnsupervisedRandomForest(5, random_state=0).fit(X)
    assert not hasattr(urf, "feature_importances_")
    assert urf.projection_counts_.shape == (4,) and np.isclose(urf.projection_counts_.sum(), 1)
    assert len(urf.estimators_samples_) == 5


def test_urf_is_a_forest_for_the_autoencoder():
    from obliqueforest.autoencoder import ForestAutoencoder

    X, y = rotated_clusters(200)
    urf = UnsupervisedRandomForest(40, projection=SparseSigned(), max_features=2.0)
    # unfitted: the autoencoder fits it on X alone; fitted: used as it is
    ae = ForestAutoencoder(n_components=2, forest=urf, random_state=0).fit(X)
    assert ae.transform(X).shape == (200, 2)
    # ... without the forest's own embedding, which the autoencoder does not use
    assert ae.forest_.n_components is None and not hasattr(ae.forest_, "embedding_")
    assert urf.n_components == 2  # the given forest is left as it was
    fitted = urf.set_params(random_state=0).fit(X)
    Z = ForestAutoencoder(n_components=2, forest=fitted, random_state=0).fit_transform(X)
    # the embedding separates the two rotated clusters
    labels = KMeans(2, n_init=10, random_state=0).fit_predict(Z)
    assert adjusted_rand_score(y, labels) > 0.8


# -- the proximity's spectral embedding: transform, fit_transform, fit_predict ------------


def two_blobs(n=300, seed=0):
    from sklearn.datasets import make_blobs

    return make_blobs(n, n_features=4, centers=2, cluster_std=1.0, random_state=seed)


def test_urf_fit_predict_recovers_well_separated_blobs():
    X, y = two_blobs()
    labels = UnsupervisedRandomForest(50, random_state=0).fit_predict(X)
    assert labels.shape == (300,) and set(labels) == {0, 1}
    assert adjusted_rand_score(y, labels) > 0.9  # measured: 1.0
    # more clusters than the embedding's coordinates: the recipe computes what it needs
    X4, y4 = blobs_with_noise(noise=2, radius=6.0)
    urf = UnsupervisedRandomForest(50, n_components=1, random_state=0)
    assert adjusted_rand_score(y4, urf.fit_predict(X4, n_clusters=3)) > 0.9
    assert urf.embedding_.shape == (300, 1)  # the fitted embedding keeps its size
    none = UnsupervisedRandomForest(50, n_components=None, random_state=0)
    assert adjusted_rand_score(y, none.fit_predict(X)) > 0.9


def test_urf_fit_predict_matches_spectral_clustering_of_the_proximity():
    X, y = blobs_with_noise()
    urf = UnsupervisedRandomForest(60, random_state=0, n_jobs=2)
    labels = urf.fit_predict(X, n_clusters=3)
    # the page's recipe (docs/unsupervised.md), by hand: 0.92
    assert adjusted_rand_score(y, labels) > 0.85
    assert adjusted_rand_score(spectral(urf.proximity(X), 3), labels) > 0.9


def test_urf_transform_shape_and_fit_transform():
    X, _ = two_blobs()
    X_new, _ = two_blobs(40, seed=1)
    urf = UnsupervisedRandomForest(30, n_components=3, random_state=0)
    Z = urf.fit_transform(X)
    assert Z.shape == (300, 3) and Z.dtype == np.float64
    np.testing.assert_array_equal(Z, urf.embedding_)
    np.testing.assert_array_equal(urf.transform(X), Z)  # a training row: its own coordinates
    assert urf.transform(X_new).shape == (40, 3)
    assert urf.transform(sparse.csr_matrix(X_new)).shape == (40, 3)
    ev = urf.eigenvalues_
    assert ev.shape == (3,) and np.all(np.diff(ev) <= 0) and 0 <= ev.min() and ev.max() <= 1
    assert ev[0] > 1 - 1e-9  # two blobs that share no leaf: eigenvalue 1
    # each coordinate's mean square over the training rows, weighted by their degrees, is 1
    degree = urf.proximity(X).sum(axis=1).A.ravel()
    np.testing.assert_allclose((degree[:, None] * Z**2).sum(0) / degree.sum(), 1, rtol=1e-6)


def test_urf_transform_places_new_rows_by_their_proximity():
    X, y = two_blobs(400)
    X_train, y_train, X_new, y_new = X[:300], y[:300], X[300:], y[300:]
    urf = UnsupervisedRandomForest(50, random_state=0).fit(X_train)
    Z, Z_new = urf.embedding_, urf.transform(X_new)
    centres = np.array([Z[y_train == c].mean(axis=0) for c in (0, 1)])
    nearest = np.argmin(((Z_new[:, None, :] - centres) ** 2).sum(axis=2), axis=1)
    assert (nearest == y_new).mean() > 0.95


@pytest.mark.parametrize("family", ["axis", "sporf"])
def test_urf_embedding_is_deterministic_at_any_thread_count(family):
    X, _ = rotated_clusters(400)
    runs = [
        UnsupervisedRandomForest(
            20, projection=FAMILIES[family], random_state=3, n_jobs=n_jobs
        ).fit_transform(X)
        for n_jobs in (1, 2, 4, 1)
    ]
    for Z in runs[1:]:
        np.testing.assert_array_equal(Z, runs[0])
    other = UnsupervisedRandomForest(20, projection=FAMILIES[family], random_state=4)
    assert not np.array_equal(other.fit_transform(X), runs[0])
    labels = [UnsupervisedRandomForest(20, random_state=3).fit_predict(X) for _ in range(2)]
    np.testing.assert_array_equal(*labels)


def test_urf_embedding_counts_a_weight_as_repeated_rows():
    from obliqueforest.unsupervised import _eigenmaps, _nystroem

    # the trees of a weighted fit are not those of repeated rows (bootstrap draws rows),
    # so the spectral step is compared on one forest
    X, _ = rotated_clusters(150)
    weight = np.random.default_rng(0).integers(0, 4, 150)
    urf = UnsupervisedRandomForest(20, n_components=3, random_state=0).fit(X)
    weighted = _eigenmaps(urf, X, weight, 3)
    repeated = _eigenmaps(urf, np.repeat(X, weight, axis=0), None, 3)
    np.testing.assert_allclose(weighted.eigenvalues, repeated.eigenvalues, rtol=1e-8)
    np.testing.assert_allclose(
        _nystroem(urf, X, weighted.leaf_map, weighted.leaf_mass),
        _nystroem(urf, X, repeated.leaf_map, repeated.leaf_mass),
        rtol=1e-6,
        atol=1e-8,
    )
    # a row of weight 0 has coordinates too (the extension's)
    assert np.isfinite(weighted.training[weight == 0]).all()


def test_urf_without_embedding_says_why_transform_cannot(tmp_path):
    from sklearn.exceptions import NotFittedError

    X, y = two_blobs(200)
    with pytest.raises(NotFittedError):
        UnsupervisedRandomForest(5).transform(X)
    urf = UnsupervisedRandomForest(20, n_components=None, random_state=0).fit(X)
    assert not hasattr(urf, "embedding_") and not hasattr(urf, "eigenvalues_")
    with pytest.raises(NotFittedError, match="n_components=None"):
        urf.transform(X)
    with pytest.raises(ValueError, match="n_components"):
        urf.fit_transform(X)
    # a model file keeps the trees and the embedding
    fitted = UnsupervisedRandomForest(20, random_state=0).fit(X)
    fitted.save(tmp_path / "urf.of")
    loaded = of.load(tmp_path / "urf.of")
    np.testing.assert_array_equal(loaded.apply(X), fitted.apply(X))
    np.testing.assert_array_equal(loaded.transform(X[:50]), fitted.transform(X[:50]))
    np.testing.assert_array_equal(loaded.embedding_, fitted.embedding_)
    # ... checked on loading: arrays that disagree with the forest are refused
    fitted._leaf_map = fitted._leaf_map[:-1]
    fitted.save(tmp_path / "bad.of")
    with pytest.raises(of.ForestError, match="_leaf_map has shape"):
        of.load(tmp_path / "bad.of")
    # a refit without an embedding drops the last one (warm start included)
    warm = UnsupervisedRandomForest(5, warm_start=True, random_state=0).fit(X)
    warm.set_params(n_estimators=8, n_components=None).fit(X)
    assert not hasattr(warm, "embedding_")


@pytest.mark.parametrize(
    ("n_clusters", "error"),
    [(0, ValueError), (2.5, TypeError), (True, TypeError), (500, ValueError)],
)
def test_urf_fit_predict_refuses_bad_cluster_counts(n_clusters, error):
    X, _ = two_blobs(100)
    with pytest.raises(error, match="n_clusters"):
        UnsupervisedRandomForest(5, random_state=0).fit_predict(X, n_clusters=n_clusters)


# -- isolation forests -------------------------------------------------------------------


def test_isolation_axis_reproduces_scikit_learn():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(size=(1000, 4)), rng.uniform(-6, 6, size=(50, 4))])
    y_anomaly = np.r_[np.zeros(1000), np.ones(50)]
    ours = IsolationForest(300, random_state=0).fit(X)
    theirs = SKIsolationForest(n_estimators=300, random_state=0).fit(X)
    a, b = ours.score_samples(X), theirs.score_samples(X)
    # the same scores up to the trees' randomness: measured correlation 0.996, mean
    # scores 0.002 apart, AUC 0.9995 both
    assert np.corrcoef(a, b)[0, 1] > 0.97
    assert abs(a.mean() - b.mean()) < 0.01
    auc_ours, auc_theirs = roc_auc_score(y_anomaly, -a), roc_auc_score(y_anomaly, -b)
    assert abs(auc_ours - auc_theirs) < 0.01, (auc_ours, auc_theirs)
    assert ours.max_samples_ == theirs.max_samples_ == 256
    assert ours.offset_ == theirs.offset_ == -0.5
    # features per tree, as scikit-learn draws them
    ours = IsolationForest(300, max_features=0.5, random_state=0).fit(X)
    theirs = SKIsolationForest(n_estimators=300, max_features=0.5, random_state=0).fit(X)
    assert np.corrcoef(ours.score_samples(X), theirs.score_samples(X))[0, 1] > 0.97  # 0.996


@pytest.mark.parametrize("curved", [False, True], ids=["rotated-band", "curved-band"])
def test_isolation_oblique_beats_axis_on_rotated_and_curved_bands(curved):
    rng = np.random.default_rng(0)
    X = band(2000, rng, curved)
    X_test = np.vstack([band(500, rng, curved), near_band(100, rng, curved)])
    y_test = np.r_[np.zeros(500), np.ones(100)]

    def auc(model):
        return roc_auc_score(y_test, -model.fit(X).score_samples(X_test))

    axis = auc(IsolationForest(200, random_state=0))
    sklearn = auc(SKIsolationForest(n_estimators=200, random_state=0))
    oblique = {
        name: auc(IsolationForest(200, projection=p, random_state=0))
        for name, p in [("sporf", SparseSigned()), ("forest-rc", ForestRC(2))]
    }
    # measured: rotated band axis 0.936, scikit-learn 0.930, SPORF 0.997, Forest-RC 0.979;
    # curved band axis 0.836, scikit-learn 0.823, SPORF 0.885, Forest-RC 0.895
    margin = 0.03 if curved else 0.04
    for name, value in oblique.items():
        assert value > max(axis, sklearn) + margin, (name, value, axis, sklearn)


def test_isolation_contamination_sets_the_offset_and_the_outlier_fraction():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(500, 3))
    iso = IsolationForest(100, contamination=0.1, random_state=0).fit(X)
    scores = iso.score_samples(X)
    assert iso.offset_ == pytest.approx(np.percentile(scores, 10))
    np.testing.assert_array_equal(iso.decision_function(X), scores - iso.offset_)
    assert np.mean(iso.predict(X) == -1) == pytest.approx(0.1, abs=0.005)
    np.testing.assert_array_equal(iso.fit_predict(X), iso.predict(X))
    assert set(np.unique(iso.predict(X))) == {-1, 1}


def test_isolation_max_samples_and_depth_follow_scikit_learn():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(100, 3))
    for max_samples, psi in [("auto", 100), (40, 40), (0.5, 50)]:
        iso = IsolationForest(20, max_samples=max_samples, random_state=0).fit(X)
        assert iso.max_samples_ == psi
        _, depth, _ = iso.tree_stats()
        assert depth.max() <= np.ceil(np.log2(psi))
        assert all(len(rows) == psi for rows in iso.estimators_samples_)
        assert all(len(np.unique(rows)) == psi for rows in iso.estimators_samples_)
    with pytest.warns(UserWarning, match="max_samples will be set to n_samples"):
        assert IsolationForest(5, max_samples=500).fit(X).max_samples_ == 100
    # with replacement
    iso = IsolationForest(5, max_samples=60, bootstrap=True, random_state=0).fit(X)
    assert all(len(rows) == 60 for rows in iso.estimators_samples_)


def test_isolation_features_per_tree():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 8))
    iso = IsolationForest(30, max_features=3, projection=SparseSigned(), random_state=0).fit(X)
    for t in range(30):
        nodes = iso._forest.tree_nodes(t)
        assert len(np.unique(nodes["proj_features"])) <= 3
    with pytest.raises(ValueError, match="max_features"):
        IsolationForest(5, max_features=9).fit(X)
    # a family of compact descriptors cannot draw over a subset of features
    patch = Patch(data_shape=(2, 4), max_patch_size=(1, 2))
    with pytest.raises(of.ForestError, match="tree_features.*explicit projections"):
        IsolationForest(5, projection=patch, max_features=0.5).fit(X)
    IsolationForest(5, projection=patch).fit(X)  # all features: fine


# -- both kinds: the package's guarantees ------------------------------------------------


def _every_family(p=8):
    """One object of every class of obliqueforest.projections, for data of ``p`` columns."""
    from obliqueforest import projections

    rng = np.random.default_rng(0)
    atoms = (rng.random((p, 5)) < 0.4).astype(float)
    atoms[0] = 1.0  # every atom has a term
    chain = np.eye(p, k=1) + np.eye(p, k=-1)
    made = {
        "AxisAligned": projections.AxisAligned(),
        "SparseSigned": projections.SparseSigned(),
        "ForestRC": projections.ForestRC(2),
        "Gaussian": projections.Gaussian(),
        "Patch": projections.Patch(data_shape=(2, 4), max_patch_size=(1, 2)),
        "HaarPatch": projections.HaarPatch(data_shape=(p,), max_patch_size=3),
        "PooledFilter": projections.PooledFilter(data_shape=(p,), max_patch_size=3),
        "Dictionary": projections.Dictionary(atoms),
        "GraphNeighbourhood": projections.GraphNeighbourhood(chain),
    }
    assert set(made) == set(projections.__all__), "a family this test does not know"
    return made


@pytest.mark.parametrize("family", list(_every_family()))
def test_every_projection_family_grows_both_kinds_and_saves(family, tmp_path):
    X, _ = rotated_clusters(200, noise=6)
    projection = _every_family()[family]
    iso = IsolationForest(20, projection=projection, random_state=0).fit(X)
    urf = UnsupervisedRandomForest(10, projection=projection, random_state=0).fit(X)
    for est in (iso, urf):
        est.save(tmp_path / "m.of")
        again = of.load(tmp_path / "m.of")
        assert again._forest.to_bytes() == est._forest.to_bytes()
        np.testing.assert_array_equal(_output(again, X), _output(est, X))
    scores = iso.score_samples(X)
    assert np.isfinite(scores).all() and (scores < 0).all()
    assert urf.proximity(X[:5]).shape == (5, 5)


KINDS = {
    "isolation": lambda p, **kw: IsolationForest(20, projection=p, random_state=0, **kw),
    "unsupervised": lambda p, **kw: UnsupervisedRandomForest(
        20, projection=p, random_state=0, **kw
    ),
    "fastbic-random": lambda p, **kw: UnsupervisedRandomForest(
        20, projection=p, criterion="fastbic", splitter="random", random_state=0, **kw
    ),
}


def _output(est, X):
    """What a fitted forest without targets gives for X."""
    if isinstance(est, IsolationForest):
        return est.score_samples(X)
    return est.apply(X)


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("family", list(FAMILIES))
def test_same_seed_same_model_at_any_thread_count_and_through_a_file(kind, family, tmp_path):
    X, _ = rotated_clusters(300, noise=4)
    make = KINDS[kind]
    models = [make(FAMILIES[family], n_jobs=n).fit(X) for n in (1, 2, 4)]
    first = models[0]._forest.to_bytes()
    assert all(m._forest.to_bytes() == first for m in models[1:])
    models[0].save(tmp_path / "m.of")
    loaded = of.load(tmp_path / "m.of")
    assert type(loaded) is type(models[0]) and loaded._forest.to_bytes() == first
    np.testing.assert_array_equal(_output(loaded, X), _output(models[0], X))
    if kind == "isolation":
        assert loaded.offset_ == models[0].offset_
        assert loaded.max_samples_ == models[0].max_samples_
        np.testing.assert_array_equal(loaded.predict(X), models[0].predict(X))
    else:
        assert (loaded.proximity(X[:20]) != models[0].proximity(X[:20])).nnz == 0


@pytest.mark.parametrize("kind", list(KINDS))
def test_missing_values_and_sparse_x(kind):
    X, _ = rotated_clusters(300, noise=4)
    make = KINDS[kind]
    with_nan = X.copy()
    with_nan[::7, 0] = np.nan
    est = make(SparseSigned()).fit(with_nan)
    out = _output(est, with_nan)
    assert np.isfinite(out).all()
    # sparse X grows the forest its dense array grows
    X_sparse = np.where(np.abs(X) < 0.8, 0.0, X)
    for fmt in ("csr", "csc"):
        from_sparse = make(None).fit(sparse.csr_matrix(X_sparse).asformat(fmt))
        assert from_sparse._forest.to_bytes() == make(None).fit(X_sparse)._forest.to_bytes()
        np.testing.assert_array_equal(
            _output(from_sparse, sparse.csr_matrix(X_sparse)), _output(from_sparse, X_sparse)
        )


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_failed_fit_leaves_the_model_as_it_was(kind):
    X, _ = rotated_clusters(100)
    est = KINDS[kind](None).fit(X)
    before = est._forest.to_bytes()
    bad = X.copy()
    bad[0, 0] = np.inf
    with pytest.raises(ValueError):
        est.fit(bad)
    with pytest.raises(ValueError):
        est.set_params(n_estimators=0).fit(X)
    assert est._forest.to_bytes() == before


def test_warm_start_grows_the_same_trees_as_one_fit():
    X, _ = rotated_clusters(300)
    iso = IsolationForest(10, projection=Gaussian(), warm_start=True, random_state=0).fit(X)
    iso.set_params(n_estimators=25).fit(X)
    once = IsolationForest(25, projection=Gaussian(), random_state=0).fit(X)
    assert iso._forest.to_bytes() == once._forest.to_bytes()
    np.testing.assert_array_equal(iso.score_samples(X), once.score_samples(X))


def test_memory_guard_stops_forests_without_targets():
    X, _ = rotated_clusters(2000)
    per_tree = UnsupervisedRandomForest(1, min_samples_split=2, random_state=0).fit(X)
    before = of.memory_limit()
    try:
        of.set_memory_limit(per_tree._forest.n_bytes * 10)
        est = UnsupervisedRandomForest(200, min_samples_split=2, n_jobs=2, random_state=0)
        with pytest.raises(of.ForestError, match="would take about"):
            est.fit(X)
        assert not hasattr(est, "_forest")
    finally:
        of.set_memory_limit(before)


def test_bad_parameters_are_named():
    X, _ = rotated_clusters(50)
    with pytest.raises(ValueError, match="criterion"):
        UnsupervisedRandomForest(criterion="gini").fit(X)
    with pytest.raises(ValueError, match="splitter"):
        UnsupervisedRandomForest(splitter="hist").fit(X)
    with pytest.raises(ValueError, match="contamination"):
        IsolationForest(contamination=0.7).fit(X)
    with pytest.raises(ValueError, match="max_samples"):
        IsolationForest(max_samples=0).fit(X)
    with pytest.raises(ValueError, match="expecting 4 features"):
        IsolationForest(5).fit(X).score_samples(X[:, :3])


_values = st.one_of(
    st.floats(-1e3, 1e3),
    st.sampled_from([0.0, 1.0, -1.0, 1e30, -1e30, 3e38, 1e300, np.nan, np.inf]),
)


@st.composite
def _datasets(draw):
    n = draw(st.integers(1, 30))
    p = draw(st.integers(1, 5))
    return draw(arrays(np.float64, (n, p), elements=_values))


@pytest.mark.filterwarnings("ignore:invalid value encountered in reduce:RuntimeWarning")
@pytest.mark.parametrize("kind", list(KINDS))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(X=_datasets())
def test_any_data_gives_a_result_or_a_value_error(kind, X):
    bad = np.isinf(X).any() or np.nanmax(np.abs(X), initial=0.0) > np.finfo(np.float32).max
    est = KINDS[kind](SparseSigned())
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # max_samples > n_samples
            est.fit(X)
    except ValueError:
        return
    assert not bad, "inf and float32 overflow must be rejected"
    out = _output(est, X)
    assert out.shape[0] == X.shape[0] and np.isfinite(out).all()


# -- the command line --------------------------------------------------------------------


def test_command_line_fits_and_serves_forests_without_targets(tmp_path, capsys):
    from obliqueforest.cli import main

    def run(*args):
        capsys.readouterr()
        code = main([str(a) for a in args])
        out, err = capsys.readouterr()
        return code, out, err

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    X[:3] += 8  # three far rows
    data = tmp_path / "d.csv"
    np.savetxt(data, np.c_[X, np.arange(300) % 2], delimiter=",", header="a,b,c,label",
               comments="", fmt="%.5f")  # fmt: skip
    iso = tmp_path / "iso.of"
    code, _, err = run("fit", data, "-e", "isolation", "--target", "label", "-o", iso,
                       "--seed", "0", "-p", "projection=None")  # fmt: skip
    assert code == 0 and "IsolationForest (grown without targets)" in err, err
    assert "on 300 rows x 3 features" in err  # --target: a column left out
    code, out, _ = run("predict", iso, data)
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "prediction,score" and len(lines) == 301
    table = np.array([line.split(",") for line in lines[1:]], dtype=float)
    model = of.load(iso)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="X does not have valid feature names")
        np.testing.assert_array_equal(table[:, 0], model.predict(X))
        np.testing.assert_allclose(table[:, 1], model.score_samples(X))
    assert (table[:3, 0] == -1).all()
    urf = tmp_path / "urf.of"
    code, _, err = run("fit", data, "-e", "unsupervised", "-o", urf, "-p", "n_estimators=5")
    assert code == 0 and type(of.load(urf)) is UnsupervisedRandomForest
    code, _, err = run("predict", urf, data)
    assert code == 2 and "does not predict" in err
    # what does not apply is named
    code, _, err = run("evaluate", data, "-e", "isolation")
    assert code == 2 and "grown without targets" in err
    code, _, err = run("fit", data, "-e", "isolation", "--task", "regression", "-o", urf)
    assert code == 2 and "--task does not apply" in err
    code, _, err = run("predict", iso, data, "--proba")
    assert code == 2 and "needs a classifier" in err
    code, _, err = run("fit", data, "-e", "sporf", "-o", tmp_path / "s.of")
    assert code == 2 and "--target is required" in err


def test_proximity_in_small_blocks_is_the_same_matrix(monkeypatch):
    # proximity multiplies a block of rows at a time (Ctrl-C is seen between blocks): the
    # blocks' rows stacked are the whole product's
    import obliqueforest.unsupervised as unsupervised

    X, _ = two_blobs(300)
    urf = UnsupervisedRandomForest(15, min_samples_leaf=5, n_components=None, random_state=0)
    urf.fit(X)
    whole, part = urf.proximity(X), urf.proximity(X[:40], X)
    monkeypatch.setattr(unsupervised, "_PROXIMITY_BLOCK", 500)
    assert (urf.proximity(X) != whole).nnz == 0
    assert (urf.proximity(X[:40], X) != part).nnz == 0
    assert urf.proximity(X).shape == (300, 300)


def test_urf_names_its_embedding_columns_and_sets_output():
    pd = pytest.importorskip("pandas")
    X, _ = two_blobs(120)
    df = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])])
    urf = UnsupervisedRandomForest(10, n_components=3, random_state=0).fit(df)
    names = ["unsupervisedrandomforest0", "unsupervisedrandomforest1", "unsupervisedrandomforest2"]
    assert list(urf.get_feature_names_out()) == names
    out = urf.set_output(transform="pandas").transform(df)
    assert list(out.columns) == names and out.shape == (120, 3)
    # without an embedding, the same reason as transform's, from the fitted value
    bare = UnsupervisedRandomForest(10, n_components=None, random_state=0).fit(df)
    bare.set_params(n_components=2)
    from sklearn.exceptions import NotFittedError

    for call in (bare.get_feature_names_out, lambda: bare.transform(df)):
        with pytest.raises(NotFittedError, match="fitted with n_components=None"):
            call()
