"""Tests of the random forest autoencoder (obliqueforest.autoencoder)."""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from obliqueforest.autoencoder import ForestAutoencoder, distortion
from obliqueforest.autoencoder._kernel import (
    _kernel_graph_components,
    _kernel_operator,
    _kernel_sparse,
    _leaf_membership,
    _leaf_weights,
    _out_of_sample_embedding,
    _top_eigenpairs,
)
from sklearn.utils.estimator_checks import parametrize_with_checks


def _blobs(n=150, p=5, seed=0):
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=3.0, size=(3, p))
    labels = rng.integers(0, 3, size=n)
    return centers[labels] + rng.normal(size=(n, p)), labels


def _small_ae(**kw):
    params = {"n_components": 3, "n_estimators": 30, "unsupervised": "random", "random_state": 0}
    params.update(kw)
    return ForestAutoencoder(**params)


@pytest.fixture(scope="module")
def fitted():
    X, labels = _blobs()
    return _small_ae().fit(X), X, labels


def _kernel_pieces(ae, X):
    core = ae._core()
    X32 = np.ascontiguousarray(X, dtype=np.float32)
    offsets = core.leaf_offsets()
    membership = _leaf_membership(core.apply_leaves(X32), int(offsets[-1]))
    weights, _ = _leaf_weights(membership, offsets, ae.kernel_trees_)
    return membership, weights, int(ae.kernel_trees_.sum())


def test_kernel_symmetric_stochastic_psd(fitted):
    ae, X, _ = fitted
    membership, weights, n_trees = _kernel_pieces(ae, X)
    K = _kernel_sparse(membership, weights, n_trees).toarray()
    np.testing.assert_allclose(K, K.T, atol=1e-12)
    np.testing.assert_allclose(K.sum(axis=1), 1.0, atol=1e-12)
    assert np.linalg.eigvalsh(K).min() >= -1e-8


def test_kernel_operator_matches_sparse_kernel(fitted):
    ae, X, _ = fitted
    membership, weights, n_trees = _kernel_pieces(ae, X)
    K = _kernel_sparse(membership, weights, n_trees)
    op = _kernel_operator(membership, weights, n_trees)
    V = np.random.default_rng(1).normal(size=(X.shape[0], 4))
    np.testing.assert_allclose(op @ V, K @ V, atol=1e-12)


@pytest.mark.parametrize("n", [40, 150])  # dense and eigsh paths
def test_kernel_first_eigenvector_constant(n):
    X, _ = _blobs(n=n)
    ae = _small_ae().fit(X)
    membership, weights, n_trees = _kernel_pieces(ae, X)
    op = _kernel_operator(membership, weights, n_trees)
    vals, vecs = _top_eigenpairs(op, 4, np.random.default_rng(0))
    assert vals[0] == pytest.approx(1.0, abs=1e-8)
    assert np.all(np.diff(vals) <= 1e-12)
    np.testing.assert_allclose(np.abs(vecs[:, 0]), 1 / np.sqrt(n), atol=1e-7)


def test_kernel_graph_components_detects_disconnected_rows():
    leaves = np.array([[0, 2], [0, 2], [1, 3], [1, 3]])  # rows {0,1} never meet {2,3}
    membership = _leaf_membership(leaves, 4)
    weights, _ = _leaf_weights(membership, np.array([0, 2, 4]), np.array([True, True]))
    assert _kernel_graph_components(membership, weights) == 2
    leaves[2, 1] = 2
    membership = _leaf_membership(leaves, 4)
    assert _kernel_graph_components(membership, weights) == 1


def test_autoencoder_single_leaf_forest_raises():
    X, _ = _blobs(n=20)
    with pytest.raises(ValueError, match="single leaf"):
        _small_ae(n_components=2, min_samples_leaf=15).fit(X)


def test_autoencoder_nystroem_reproduces_training_embedding(fitted):
    ae, X, _ = fitted
    np.testing.assert_allclose(ae.transform(X), ae.embedding_, atol=1e-6)
    assert ae.embedding_.shape == (X.shape[0], 3)
    assert np.all(np.diff(ae.eigenvalues_) <= 0) and ae.eigenvalues_[0] < 1


def test_autoencoder_fit_transform_equals_embedding():
    X, _ = _blobs()
    ae = _small_ae()
    np.testing.assert_allclose(ae.fit_transform(X), ae.embedding_)


def test_autoencoder_knn_k1_decodes_inside_neighbour_region(fitted):
    # with k = 1 a latent vector decodes to a point of its nearest training row's region
    ae, X, _ = fitted
    ae1 = pickle.loads(pickle.dumps(ae)).set_params(k=1)
    X_hat = ae1.inverse_transform(ae.embedding_)
    _, nearest = ae._nn.kneighbors(ae._search_coordinates(ae.embedding_), n_neighbors=1)
    lower, upper = ae._core().leaf_bounds(np.ascontiguousarray(X, dtype=np.float32))
    lower = np.maximum(lower, X.min(axis=0))[nearest[:, 0]]
    upper = np.minimum(upper, X.max(axis=0))[nearest[:, 0]]
    tol = 1e-5 * (1 + np.abs(X).max())
    assert np.all(X_hat >= lower - tol) and np.all(X_hat <= upper + tol)


def test_autoencoder_knn_decodes_inverse_square_distance_mean_of_neighbour_rows(fitted):
    # numeric columns: the mean of the k nearest training rows (searched among their
    # leave-self-out embeddings, in kernel-PCA coordinates Z λ^(1/2 - t)) weighted by
    # 1 / distance**2
    ae, X, _ = fitted
    Z = ae.transform(X[:7]) + 0.01  # off the training points: no exact match
    scale = np.sqrt(ae.eigenvalues_) / ae.eigenvalues_**ae.diffusion_time
    d2 = (((Z * scale)[:, None, :] - (ae._decode_points * scale)[None, :, :]) ** 2).sum(axis=2)
    idx = np.argsort(d2, axis=1)[:, : ae.k]
    w = 1.0 / np.take_along_axis(d2, idx, axis=1)
    expected = np.einsum("mk,mkp->mp", w / w.sum(axis=1, keepdims=True), X[idx])
    np.testing.assert_allclose(ae.inverse_transform(Z), expected, rtol=1e-5, atol=1e-5)


def test_auto_min_samples_leaf_scales_down_on_small_data():
    from obliqueforest.autoencoder._adversarial import _auto_min_samples_leaf

    assert _auto_min_samples_leaf(360, adversarial=True) == 12
    assert _auto_min_samples_leaf(50, adversarial=True) == 8
    assert _auto_min_samples_leaf(15, adversarial=True) == 5
    assert _auto_min_samples_leaf(360, adversarial=False) == 5
    # 15 rows with leaves of 12 (real + synthetic) would leave every tree a single leaf
    X, _ = _blobs(n=15, p=4)
    ae = ForestAutoencoder(n_components=2, n_estimators=20, random_state=0).fit(X)
    assert ae.kernel_trees_.any()


def test_autoencoder_knn_decoding_does_not_depend_on_diffusion_time():
    # the decoder undoes λ^t: the same forest decodes its own encodings identically
    X, _ = _blobs(n=120)
    base = _small_ae().fit(X)
    decoded = []
    for t in (0.0, 1.0, 2.5):
        ae = _small_ae(forest=base.forest_, diffusion_time=t).fit(X)
        decoded.append(ae.inverse_transform(ae.transform(X[:30])))
    np.testing.assert_allclose(decoded[1], decoded[0], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(decoded[2], decoded[0], rtol=1e-6, atol=1e-6)


def test_out_of_sample_embedding_drops_self_similarity(fitted):
    # (Z_i - K_ii Z_i / lambda) / (1 - K_ii) is the Nystroem embedding of row i with its
    # own kernel entry removed and the kernel row renormalised
    ae, X, _ = fitted
    membership, weights, n_trees = _kernel_pieces(ae, X)
    K = _kernel_sparse(membership, weights, n_trees).toarray()
    Z, lam = ae._embedding_fit, ae.eigenvalues_
    K_loo = K - np.diag(np.diag(K))
    K_loo /= K_loo.sum(axis=1, keepdims=True)
    expected = K_loo @ Z / lam
    got = _out_of_sample_embedding(membership, weights, n_trees, Z, lam)
    np.testing.assert_allclose(got, expected, atol=1e-8)


def test_autoencoder_reproducible_from_random_state():
    X, _ = _blobs()
    a = _small_ae(random_state=3).fit(X)
    b = _small_ae(random_state=3).fit(X)
    np.testing.assert_array_equal(a.embedding_, b.embedding_)
    Z = a.transform(X[:20])
    np.testing.assert_array_equal(a.inverse_transform(Z), b.inverse_transform(Z))


def test_autoencoder_pickle_round_trip(fitted):
    ae, X, _ = fitted
    clone = pickle.loads(pickle.dumps(ae))
    np.testing.assert_allclose(clone.transform(X[:10]), ae.transform(X[:10]))
    np.testing.assert_array_equal(
        clone.inverse_transform(ae.embedding_[:10]), ae.inverse_transform(ae.embedding_[:10])
    )


def test_autoencoder_categorical_round_trip():
    pd = pytest.importorskip("pandas")
    X, labels = _blobs(n=160, p=3)
    rng = np.random.default_rng(0)
    df = pd.DataFrame(
        {
            "a": X[:, 0],
            "b": X[:, 1].astype(np.float32),
            "count": rng.integers(0, 50, size=160),
            "kind": pd.Categorical(np.array(["x", "y", "z"])[labels], categories=["z", "y", "x"]),
            "name": np.array(["alpha", "beta", "gamma"])[labels].astype(object),
            "flag": labels == 1,
        }
    )
    ae = _small_ae(n_components=4, k=5).fit(df)
    out = ae.inverse_transform(ae.transform(df))
    assert list(out.columns) == list(df.columns)
    assert list(out.dtypes) == list(df.dtypes)
    assert set(out["name"]) <= {"alpha", "beta", "gamma"}
    assert list(out["kind"].cat.categories) == ["z", "y", "x"]
    # the categorical columns follow the clusters, so they are reconstructed well
    per_col = distortion(df, out, per_column=True)
    assert per_col[3:].max() < 0.2
    # k = 1 on the training embedding keeps each row's codes inside its region
    exact = ae.set_params(k=1).inverse_transform(ae.embedding_)
    assert (exact["kind"] == df["kind"]).mean() > 0.9


def test_autoencoder_adversarial_forest_converges():
    X, _ = _blobs(n=120)
    ae = ForestAutoencoder(n_components=2, n_estimators=30, random_state=0).fit(X)
    assert 1 <= len(ae.arf_accuracies_) <= ae.arf_max_iter + 1
    assert ae.arf_accuracies_[-1] < ae.arf_accuracies_[0]


def test_autoencoder_collapses_duplicate_rows():
    X, _ = _blobs(n=120)
    rng = np.random.default_rng(1)
    rows = np.concatenate([np.arange(120), rng.integers(0, 120, size=80)])
    X_dup = X[rows]
    distinct = _small_ae().fit(X)
    dup = _small_ae().fit(X_dup)
    assert dup.n_distinct_ == 120 and dup.embedding_.shape == (200, 3)
    # the unsupervised forest and the kernel only see the distinct rows, so the
    # embedding equals the one fitted on them, copies sharing their row's value
    np.testing.assert_allclose(dup.embedding_, distinct.embedding_[rows], atol=1e-8)
    np.testing.assert_allclose(dup.transform(X_dup), dup.embedding_, atol=1e-6)
    # the k-NN decoder's neighbours are distinct rows: k = 1 returns the row's region
    decoded = dup.set_params(k=1).inverse_transform(dup.embedding_)
    assert np.mean(np.abs(decoded - X_dup) < 0.5 * X.std(axis=0)) > 0.9

    kept = _small_ae(collapse_duplicates=False).fit(X_dup)
    assert kept.n_distinct_ == 200 and kept.embedding_.shape == (200, 3)


def test_autoencoder_all_rows_identical_raises():
    with pytest.raises(ValueError, match="distinct rows"):
        _small_ae().fit(np.ones((30, 3)))


def test_autoencoder_n_components_bounded_by_distinct_rows():
    X, _ = _blobs(n=10)
    with pytest.raises(ValueError, match="distinct rows=10"):
        _small_ae(n_components=10, min_samples_leaf=1).fit(np.vstack([X, X]))


def test_autoencoder_supervised_forest_separates_classes():
    X, labels = _blobs(n=150)
    ae = _small_ae(n_components=2).fit(X, labels)
    Z = ae.embedding_
    centroid = np.array([Z[labels == c].mean(axis=0) for c in range(3)])
    within = np.mean(
        [np.linalg.norm(Z[labels == c] - centroid[c], axis=1).mean() for c in range(3)]
    )
    between = np.min(
        [np.linalg.norm(centroid[i] - centroid[j]) for i, j in [(0, 1), (0, 2), (1, 2)]]
    )
    assert between > within


def test_autoencoder_takes_fitted_forest(fitted):
    ae, X, _ = fitted
    other = ForestAutoencoder(n_components=3, forest=ae.forest_, random_state=0).fit(X)
    np.testing.assert_allclose(other.embedding_, ae.embedding_, atol=1e-8)


def test_autoencoder_takes_library_estimator():
    forests = pytest.importorskip("obliqueforest._forest")
    X, labels = _blobs(n=120)
    est = forests.RandomForestClassifier(n_estimators=20, min_samples_leaf=5, random_state=0)
    ae = ForestAutoencoder(n_components=2, forest=est, random_state=0).fit(X, labels)
    assert ae.embedding_.shape == (120, 2)
    fitted_est = forests.RandomForestClassifier(
        n_estimators=20, min_samples_leaf=5, random_state=0
    ).fit(X, labels)
    ae2 = ForestAutoencoder(n_components=2, forest=fitted_est).fit(X)
    assert ae2.forest_ is fitted_est


@pytest.mark.parametrize("decoder", ["relabel", "lasso"])
def test_autoencoder_other_decoders_reconstruct(decoder):
    X, _ = _blobs(n=100, p=3)
    ae = _small_ae(n_components=3, n_estimators=15, decoder=decoder).fit(X)
    X_hat = ae.inverse_transform(ae.embedding_[:25])
    assert X_hat.shape == (25, 3) and np.all(np.isfinite(X_hat))
    assert distortion(X[:25], X_hat) < 0.8


def test_distortion_numeric_and_categorical():
    pd = pytest.importorskip("pandas")
    t = np.array([1.0, 2.0, 3.0, 4.0])
    assert distortion(t[:, None], t[:, None]) == 0.0
    assert distortion(t[:, None], np.full((4, 1), t.mean())) == pytest.approx(1.0)
    assert distortion(t[:, None], -10 * t[:, None]) == 1.0  # clipped
    df = pd.DataFrame({"x": t, "c": pd.Categorical(list("aabb"))})
    hat = pd.DataFrame({"x": t, "c": pd.Categorical(list("abbb"))})
    np.testing.assert_allclose(distortion(df, hat, per_column=True), [0.0, 0.25])
    assert distortion(df, hat) == pytest.approx(0.125)


def test_autoencoder_score_is_one_minus_distortion(fitted):
    ae, X, _ = fitted
    X_hat = ae.inverse_transform(ae.transform(X))
    assert ae.score(X) == pytest.approx(1 - distortion(X, X_hat))


def test_autoencoder_plot_embedding(fitted):
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    ae, _, labels = fitted
    ax = ae.plot_embedding(labels=labels)
    assert len(ax.collections) == 3


def test_autoencoder_kernel_representations_agree():
    X, _ = _blobs(n=120)
    a = _small_ae(kernel="operator").fit(X)
    b = _small_ae(kernel="sparse").fit(X)
    np.testing.assert_allclose(a.embedding_, b.embedding_, atol=1e-6)
    assert sp.issparse(_kernel_sparse(*_kernel_pieces(b, X)))


_DISCONNECTED = (
    "the check's data are two far-apart tight blobs: every tree separates them, the "
    "kernel graph is disconnected and fit raises by design"
)
_TOO_SMALL = "10 rows with min_samples_leaf=5: every tree is a single leaf and fit raises"


def _expected_failed_checks(estimator):
    return {
        "check_pipeline_consistency": _DISCONNECTED,
        "check_estimators_pickle": _DISCONNECTED,
        "check_transformer_data_not_an_array": _DISCONNECTED,
        "check_transformer_general": _DISCONNECTED,
        "check_transformer_preserve_dtypes": _DISCONNECTED,
        "check_methods_subset_invariance": _DISCONNECTED,
        "check_estimators_nan_inf": _TOO_SMALL,
        "check_fit2d_1feature": _TOO_SMALL,
    }


# scikit-learn's checks fit tiny data sets, where most trees are single leaves: the
# estimator says so (a warning a user should see), which these checks do not test
@pytest.mark.filterwarnings("ignore:.*trees are a single leaf:UserWarning")
@parametrize_with_checks(
    [ForestAutoencoder(n_estimators=10, unsupervised="random", random_state=0)],
    expected_failed_checks=_expected_failed_checks,
)
def test_autoencoder_sklearn_compatible(estimator, check):
    check(estimator)


def test_autoencoder_verbose_shows_progress(capsys):
    X = np.random.default_rng(0).normal(size=(120, 4))
    ForestAutoencoder(
        n_components=2, n_estimators=12, unsupervised="random", verbose=1, random_state=0
    ).fit(X)
    assert "12/12" in capsys.readouterr().err


def test_leaf_boxes_intersect_to_leaf_bounds(fitted):
    # a row's box (Forest.leaf_bounds) is the intersection of the boxes of its leaves
    ae, X, _ = fitted
    core = ae._core()
    X32 = np.ascontiguousarray(X, dtype=np.float32)
    lower, upper = core.leaf_boxes()
    assert lower.shape == upper.shape == (core.leaf_offsets()[-1], X.shape[1])
    leaves = core.apply_leaves(X32)
    row_lo, row_hi = core.leaf_bounds(X32)
    np.testing.assert_array_equal(lower[leaves].max(axis=1), row_lo)
    np.testing.assert_array_equal(upper[leaves].min(axis=1), row_hi)
    # and every row lies in each of its leaves' boxes
    x = X32.astype(np.float64)[:, None, :]
    assert np.all((lower[leaves] < x + 1e-6) & (x <= upper[leaves] + 1e-6))


def test_apply_leaves_with_rules_reproduces_axis_splits(fitted):
    # rules equal to the forest's own axis splits route rows to the leaves apply_leaves gives
    ae, X, _ = fitted
    core = ae._core()
    dims, thresholds, flips = [], [], []
    for t in range(core.n_trees):
        nodes = core.tree_nodes(t)
        n = len(nodes["left"])
        split = np.flatnonzero(nodes["left"] >= 0)
        first = nodes["proj_ptr"][split]
        w = nodes["proj_weights"][first].astype(np.float64)
        dim, thr, flip = np.zeros(n, np.int64), np.zeros(n), np.zeros(n, bool)
        dim[split] = nodes["proj_features"][first]
        thr[split] = nodes["threshold"][split] / w
        flip[split] = w < 0
        dims.append(dim)
        thresholds.append(thr)
        flips.append(flip)
    X32 = np.ascontiguousarray(X, dtype=np.float32)
    got = core.apply_leaves_with_rules(
        X32.astype(np.float64),
        np.concatenate(dims),
        np.concatenate(thresholds),
        np.concatenate(flips),
    )
    agree = np.mean(got == core.apply_leaves(X32))
    assert agree > 0.999  # float32 threshold / weight division may move a boundary row


def test_apply_leaves_with_rules_rejects_bad_rules(fitted):
    from obliqueforest import ForestError

    ae, _, _ = fitted
    core = ae._core()
    n_nodes = sum(len(core.tree_nodes(t)["left"]) for t in range(core.n_trees))
    Z = np.zeros((3, 2))
    ok = (np.zeros(n_nodes, np.int64), np.zeros(n_nodes), np.zeros(n_nodes, bool))
    with pytest.raises(ForestError, match="nodes"):
        core.apply_leaves_with_rules(Z, ok[0][:-1], ok[1][:-1], ok[2][:-1])
    with pytest.raises(ForestError, match="not a column"):
        core.apply_leaves_with_rules(Z, ok[0] + 5, ok[1], ok[2])


def _compression_distortion(frame, n_bootstraps, seed=0):
    """Mean distortion of the paper's App. B.1 protocol (bootstrap train, OOB test, the
    10 latent rates) with the default autoencoder, sharing one forest per bootstrap."""
    n, d = frame.shape
    rng = np.random.default_rng(seed)
    sizes = [max(1, round(d * r)) for r in np.arange(1, 11) / 10]
    per_rate = []
    for b in range(n_bootstraps):
        idx = rng.integers(0, n, size=n)
        train = frame.iloc[idx].reset_index(drop=True)
        test = frame.iloc[np.setdiff1d(np.arange(n), idx)].reset_index(drop=True)
        base = ForestAutoencoder(n_components=1, random_state=b, n_jobs=2).fit(train)
        cache = {}
        for dz in sizes:
            if dz not in cache:
                ae = ForestAutoencoder(
                    n_components=dz, forest=base.forest_, random_state=b, n_jobs=2
                ).fit(train)
                cache[dz] = distortion(test, ae.inverse_transform(ae.transform(test)))
            per_rate.append(cache[dz])
    return float(np.mean(per_rate))


def test_autoencoder_penguins_distortion_below_reference():
    # reference implementation 0.170, paper Table 2 0.176; year scored as numeric (1 - R^2)
    pd = pytest.importorskip("pandas")
    penguins = pytest.importorskip("palmerpenguins")
    frame = penguins.load_penguins().dropna().reset_index(drop=True)
    for col in ("species", "island", "sex"):
        frame[col] = pd.Categorical(frame[col].astype(str))
    assert _compression_distortion(frame, n_bootstraps=3) <= 0.170


@pytest.mark.slow
def test_autoencoder_breast_cancer_distortion_beats_paper():
    # paper Table 2: 0.333; benches/rfae_compression.py (10 bootstraps) measures 0.297
    pd = pytest.importorskip("pandas")
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer(as_frame=True)
    frame = data.data.copy()
    names = np.asarray(data.target_names)[data.target.to_numpy()]
    frame["diagnosis"] = pd.Categorical(names, categories=list(data.target_names))
    assert _compression_distortion(frame, n_bootstraps=2) <= 0.31


@pytest.mark.parametrize("mode", ["supervised", "random", "adversarial"])
def test_the_autoencoders_forests_are_fitted_through_the_estimators(mode):
    # issue 44: a forest the autoencoder grows goes through a random forest estimator's
    # fit (so a cluster's grower grows it too), with the autoencoder's own seed
    import obliqueforest._base as base
    from obliqueforest import RandomForestClassifier, RandomForestRegressor
    from obliqueforest import _core
    from sklearn.datasets import make_blobs

    X, y = make_blobs(300, n_features=4, centers=3, random_state=0)
    grown = []

    def grower(est, X32, y_core, sw, params):
        grown.append((type(est), est._seed))
        return _core.Forest.fit(X32, y_core, sw, params, None)

    token = base.FOREST_GROWER.set(grower)
    try:
        kw = {} if mode == "supervised" else {"unsupervised": mode}
        ae = ForestAutoencoder(n_components=2, n_estimators=10, random_state=1, **kw)
        ae.fit(X, y if mode == "supervised" else None)
    finally:
        base.FOREST_GROWER.reset(token)
    kind = RandomForestRegressor if mode == "random" else RandomForestClassifier
    assert grown and {t for t, _ in grown} == {kind}
    if mode == "supervised":
        # the classifier fitted with that seed is the autoencoder's forest, byte for byte
        est = RandomForestClassifier(n_estimators=10, min_samples_leaf=5)
        with base.prepared_fit(grown[0][1]):
            est.fit(X.astype(np.float32), y)
        assert est._forest.to_bytes() == ae._core().to_bytes()


def test_a_supervised_forest_on_mostly_distinct_labels_warns_as_the_classifiers_do():
    # the autoencoder's supervised forest is a RandomForestClassifier's fit: integer labels
    # that are mostly distinct get scikit-learn's warning that y may be a regression target
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = np.arange(60) % 40
    with pytest.warns(UserWarning, match="could represent a regression problem"):
        ForestAutoencoder(n_components=2, n_estimators=5, random_state=0).fit(X, y)
