"""Sparse X (scipy CSR/CSC): every estimator grows, from sparse X, the model it grows from
the dense array of the same data (byte for byte), and predicts sparse rows as it predicts
dense ones; scipy's edge cases (explicit zeros, unsorted or duplicate entries, int64
indices, empty rows and columns) and non-finite values are handled."""

import numpy as np
import pytest
from scipy import sparse

import obliqueforest as of
from obliqueforest import projections
from obliqueforest.autoencoder import ForestAutoencoder
from obliqueforest.rotation import RotationEnsembleClassifier, RotationEnsembleRegressor

KW = {"n_estimators": 6, "random_state": 0}


def _estimators():
    shape = {"data_shape": (4, 5), "max_patch_size": 3}
    return [
        of.RandomForestClassifier(**KW),
        of.RandomForestRegressor(**KW),
        of.SPORFClassifier(**KW),
        of.SPORFRegressor(**KW),
        of.ObliqueForestClassifier(projections.ForestRC(3), **KW),
        of.ObliqueForestClassifier(projections.Gaussian(), **KW),
        of.ObliqueForestRegressor(projections.SparseSigned(density=0.1), **KW),
        of.ObliqueForestClassifier(projections.Dictionary(np.eye(20)[:, ::2]), **KW),
        of.ObliqueForestClassifier(projections.Patch(**shape), **KW),
        of.MORFClassifier(**shape, **KW),
        of.MORFRegressor(**shape, **KW),
    ]


ESTIMATORS = _estimators()
IDS = [f"{type(e).__name__}-{type(getattr(e, 'projection', None)).__name__}" for e in ESTIMATORS]


def _data(n=150, p=20, density=0.15, seed=0):
    """Mostly zeros, an empty column (7) and an empty row (3); y depends on a few columns."""
    rng = np.random.default_rng(seed)
    X = np.where(rng.random((n, p)) < density, rng.normal(size=(n, p)), 0.0)
    X[:, 7] = 0.0
    X[3] = 0.0
    X[rng.random((n, p)) < 0.02] = -0.0
    score = X[:, 0] + X[:, 1] - X[:, 2] + 0.1 * rng.normal(size=n)
    return X, (score > 0).astype(int), score


def _target(est, X):
    _, y_class, y_value = X
    return y_class if hasattr(est, "predict_proba") else y_value


def _model_bytes(est):
    return bytes(est._forest.to_bytes())


def _fit(est, X, y, **kw):
    from sklearn.base import clone

    return clone(est).fit(X, y, **kw)


def _same_predictions(a, b, X_a, X_b):
    np.testing.assert_array_equal(a.predict(X_a), b.predict(X_b))
    np.testing.assert_array_equal(a.apply(X_a), b.apply(X_b))
    if hasattr(a, "predict_proba"):
        np.testing.assert_array_equal(a.predict_proba(X_a), b.predict_proba(X_b))
    pa, pb = a.decision_path(X_a), b.decision_path(X_b)
    assert (pa[0] != pb[0]).nnz == 0
    np.testing.assert_array_equal(pa[1], pb[1])


@pytest.mark.parametrize("est", ESTIMATORS, ids=IDS)
def test_sparse_fit_gives_the_dense_model_and_predictions(est):
    data = _data()
    X = data[0]
    y = _target(est, data)
    dense = _fit(est, X, y)
    for make in (sparse.csr_matrix, sparse.csc_matrix, sparse.csr_array, sparse.csc_array):
        Xs = make(X)
        fitted = _fit(est, Xs, y)
        assert _model_bytes(fitted) == _model_bytes(dense), make.__name__
        _same_predictions(dense, fitted, X, Xs)
    # a tree's own predictions take sparse rows too
    tree = dense.estimators_[0]
    np.testing.assert_array_equal(tree.apply(sparse.csr_matrix(X)), tree.apply(X))
    np.testing.assert_array_equal(tree.predict(sparse.csc_matrix(X)), tree.predict(X))


def test_sporf_defaults_screen_large_nodes_of_sparse_x_as_of_its_dense_array():
    # 3,000 rows: nodes of more than 1,024 rows screen their candidates on 512 of them,
    # and columns long enough (~600 entries) that subtrees grow on copies of their rows
    rng = np.random.default_rng(3)
    X = sparse.random(3000, 40, density=0.2, format="csc", random_state=4, dtype=np.float32)
    X.data = np.round(X.data * 8) / 8
    Xd = X.toarray()
    y = (Xd[:, 0] + Xd[:, 1] - Xd[:, 2] + 0.1 * rng.random(3000) > 0.45).astype(int)
    est = of.SPORFClassifier(n_estimators=3, random_state=0)
    dense = _fit(est, Xd, y)
    fitted = _fit(est, X, y)
    assert _model_bytes(fitted) == _model_bytes(dense)
    _same_predictions(dense, fitted, Xd, X)


def _rebuilt(X, order):
    """CSR of dense X with its stored entries permuted within rows, some split into two
    summands (duplicates) and some explicit zeros added; int64 indices."""
    rng = np.random.default_rng(1)
    coo = sparse.coo_matrix(X)
    rows, cols, vals = [coo.row], [coo.col], [coo.data]
    halves = rng.random(coo.nnz) < 0.3
    vals[0] = np.where(halves, coo.data / 2, coo.data)
    rows.append(coo.row[halves])
    cols.append(coo.col[halves])
    vals.append(coo.data[halves] - coo.data[halves] / 2)
    zero_r, zero_c = np.nonzero(X == 0)
    pick = rng.random(len(zero_r)) < 0.05
    rows.append(zero_r[pick])
    cols.append(zero_c[pick])
    vals.append(np.zeros(pick.sum()))
    r, c, v = (np.concatenate(a) for a in (rows, cols, vals))
    perm = rng.permutation(len(r)) if order == "shuffled" else np.argsort(r, kind="stable")
    r, c, v = r[perm], c[perm], v[perm]
    indptr = np.concatenate([[0], np.cumsum(np.bincount(r, minlength=X.shape[0]))])
    ordered = np.argsort(r, kind="stable")
    M = sparse.csr_matrix((v[ordered], c[ordered], indptr), shape=X.shape)
    M.indices, M.indptr = M.indices.astype(np.int64), M.indptr.astype(np.int64)
    return M


@pytest.mark.parametrize("order", ["shuffled", "row-sorted"])
def test_unsorted_duplicate_and_explicit_zero_entries_mean_what_scipy_says(order):
    X, y, _ = _data(seed=2)
    M = _rebuilt(X, order)
    assert not M.has_canonical_format or order == "row-sorted"
    np.testing.assert_allclose(M.toarray(), X, rtol=0, atol=1e-15)
    X_equiv = M.toarray()  # the sums scipy makes of the duplicates
    for est in (of.RandomForestClassifier(**KW), of.SPORFClassifier(**KW)):
        dense = _fit(est, X_equiv, y)
        fitted = _fit(est, M, y)
        assert _model_bytes(fitted) == _model_bytes(dense)
        _same_predictions(dense, fitted, X_equiv, M)
        np.testing.assert_array_equal(fitted.predict(M.tocsc()), dense.predict(X_equiv))
    # the caller's matrix is left as it was
    assert M.nnz == _rebuilt(X, order).nnz


@pytest.mark.parametrize("make", [sparse.coo_matrix, sparse.lil_matrix, sparse.dok_array])
def test_other_sparse_formats_are_converted(make):
    X, y, _ = _data()
    dense = _fit(of.SPORFClassifier(**KW), X, y)
    fitted = _fit(of.SPORFClassifier(**KW), make(X), y)
    assert _model_bytes(fitted) == _model_bytes(dense)
    np.testing.assert_array_equal(fitted.predict(make(X)), dense.predict(X))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_sparse_values_are_refused(bad):
    X, y, _ = _data()
    est = _fit(of.RandomForestClassifier(**KW), X, y)
    Xs = sparse.csr_matrix(X)
    Xs.data[5] = bad
    with pytest.raises(ValueError, match="NaN|infinity"):
        _fit(of.RandomForestClassifier(**KW), Xs, y)
    for method in (est.predict, est.apply, est.decision_path):
        with pytest.raises(ValueError, match="NaN or infinity"):
            method(Xs)


def test_sparse_shape_and_index_errors_are_clear():
    X, y, _ = _data()
    est = _fit(of.SPORFClassifier(**KW), sparse.csr_matrix(X), y)
    with pytest.raises(ValueError, match="features"):
        est.predict(sparse.csr_matrix(X[:, :5]))
    broken = sparse.csr_matrix(X)
    broken.indices[0] = 10_000  # beyond the columns: scipy would not check it here
    with pytest.raises(ValueError, match="out of range"):
        est.predict(broken)
    wide = sparse.csr_matrix(X)
    wide.indices = wide.indices.astype(np.int64)
    wide.indices[0] = 2**32 + 1  # would wrap to column 1 as uint32
    with pytest.raises(ValueError, match="out of range"):
        est.predict(wide)
    with pytest.raises(ValueError, match="sparse"):
        _fit(of.SPORFClassifier(**KW), X, sparse.csr_matrix(y.reshape(-1, 1)))


@pytest.mark.filterwarnings("ignore:Some inputs do not have OOB scores")
def test_sample_weight_oob_max_samples_and_warm_start_match_dense():
    X, y, _ = _data(n=200, seed=3)
    Xs = sparse.csc_matrix(X)
    w = np.random.default_rng(0).random(len(y))
    kw = {**KW, "oob_score": True, "max_samples": 0.7}
    for cls in (of.RandomForestClassifier, of.SPORFClassifier):
        dense = cls(**kw).fit(X, y, sample_weight=w)
        fitted = cls(**kw).fit(Xs, y, sample_weight=w)
        assert _model_bytes(fitted) == _model_bytes(dense)
        np.testing.assert_array_equal(fitted.oob_decision_function_, dense.oob_decision_function_)
        assert fitted.oob_score_ == dense.oob_score_
        for est, data in ((dense, X), (fitted, sparse.csr_matrix(X))):
            est.set_params(warm_start=True, n_estimators=10).fit(data, y, sample_weight=w)
        assert _model_bytes(fitted) == _model_bytes(dense)
        np.testing.assert_array_equal(fitted.oob_decision_function_, dense.oob_decision_function_)
    reg = of.RandomForestRegressor(**KW, oob_score=True)
    _, _, target = _data(n=200, seed=3)
    a, b = reg.fit(X, target).oob_prediction_, reg.fit(Xs, target).oob_prediction_
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("cls", [RotationEnsembleClassifier, RotationEnsembleRegressor])
@pytest.mark.parametrize("scaling", ["minmax", "rank", None])
def test_rotation_ensembles_take_sparse_x_without_densifying_it(cls, scaling):
    X, y, score = _data(n=160, p=12, density=0.3, seed=4)
    target = y if cls is RotationEnsembleClassifier else score
    kw = {"n_estimators": 12, "n_rotations": 3, "micro_forest_size": 4, "random_state": 0}
    dense = cls(scaling=scaling, **kw).fit(X, target)
    fitted = cls(scaling=scaling, **kw).fit(sparse.csr_matrix(X), target)
    # the rotated data equal the dense ones up to rounding (sums in another order): the
    # forests then agree but for ties broken by a last bit
    for k in range(3):
        np.testing.assert_allclose(
            fitted._rotate(fitted._scale(sparse.csr_matrix(X)), k),
            dense._rotate(dense._scale(X), k),
            rtol=1e-5,
            atol=1e-6,
        )
    np.testing.assert_array_equal(fitted.rotations_, dense.rotations_)
    pred_sparse = fitted.predict(sparse.csc_matrix(X))
    pred_dense = dense.predict(X)
    if cls is RotationEnsembleClassifier:
        assert (pred_sparse == pred_dense).mean() >= 0.95
    else:
        assert np.corrcoef(pred_sparse, pred_dense)[0, 1] > 0.98
    np.testing.assert_array_equal(fitted.predict(sparse.csr_matrix(X)), fitted.predict(X))


def test_autoencoder_encodes_sparse_rows_as_dense_ones():
    X, _, _ = _data(n=80, p=10, density=0.4, seed=5)
    ae = ForestAutoencoder(n_components=2, n_estimators=10, random_state=0).fit(X)
    np.testing.assert_array_equal(ae.transform(sparse.csr_matrix(X)), ae.transform(X))
    np.testing.assert_array_equal(ae.transform(sparse.csc_array(X)), ae.transform(X))


def test_dask_fit_refuses_sparse_x_but_its_part_grower_takes_it():
    pytest.importorskip("distributed")
    from obliqueforest import _core
    from obliqueforest import dask as odask
    from obliqueforest._forest import core_X

    X, y, _ = _data(n=300, seed=6)
    with pytest.raises(ValueError, match="sparse"):
        odask.fit(of.SPORFClassifier(**KW), sparse.csr_matrix(X), y, client=object())
    # the growers of the parts (what workers run) read sparse X as the local fit does
    local = of.SPORFClassifier(**KW).fit(X, y)
    params = local._core_params(X.shape[1], local._task_params(y))
    y_core = y.astype(np.float64)
    for data in (X.astype(np.float32), core_X(sparse.csc_matrix(X))):
        part = _core.ForestPart.grow(data, y_core, None, params, 0, KW["n_estimators"])
        assert _model_bytes_of(_core.ForestPart.join([part])) == _model_bytes(local)


def _model_bytes_of(core_forest):
    return bytes(core_forest.to_bytes())


def test_forests_grown_together_take_sparse_x_as_dense():
    from obliqueforest import _core
    from obliqueforest._forest import core_X

    X, y, _ = _data(n=300, seed=8)
    local = of.SPORFClassifier(**KW, oob_score=True).fit(X, y)
    params = local._core_params(X.shape[1], local._task_params(y))
    y_core = y.astype(np.float64)
    dense, csc, csr = (core_X(X), core_X(sparse.csc_matrix(X)), core_X(sparse.csr_matrix(X)))
    forests = _core.Forest.fit_many([dense, csc, csr], y_core, None, [params] * 3)
    _core.Forest.fit_more_many(forests, [csr, dense, csc], y_core, None, [2, 2, 2])
    alone = _core.Forest.fit(dense, y_core, None, params)
    alone.fit_more(dense, y_core, None, params, 2)
    for forest in forests:
        assert _model_bytes_of(forest) == _model_bytes_of(alone)
        assert _same(forest.oob_prediction(), alone.oob_prediction())


def test_sparse_fit_does_not_depend_on_n_jobs_and_autoencoder_fit_needs_dense_x():
    X, y, _ = _data(n=200, seed=7)
    one = of.SPORFClassifier(**KW, n_jobs=1).fit(X, y)
    two = of.SPORFClassifier(**KW, n_jobs=2).fit(sparse.csc_matrix(X), y)
    assert _model_bytes(two) == _model_bytes(one)
    np.testing.assert_array_equal(two.predict_proba(sparse.csr_matrix(X)), one.predict_proba(X))
    with pytest.raises(TypeError, match="dense data is required"):
        ForestAutoencoder(n_estimators=5, random_state=0).fit(sparse.csr_matrix(X))


# Every X-taking method of the core forest, with the arguments besides X it needs; a new
# method of `_core.Forest` must be listed here or in NOT_X (the test checks both lists cover
# every public method), so that no method takes a narrower input type than its siblings.
X_METHODS = {
    "predict": {},
    "predict_trees": {},
    "apply": {},
    "apply_leaves": {},
    "decision_path": {},
    "leaf_bounds": {},
    "node_decisions": {"tree": 1},
    "compute_oob": {},
}
NOT_X = {
    "fit",  # a static constructor: covered by test_sparse_fit_gives_the_dense_model_...
    "fit_more",  # covered by test_sample_weight_oob_max_samples_and_warm_start_match_dense
    # several forests at once: test_forests_grown_together_take_sparse_x_as_dense
    "fit_many",
    "fit_more_many",
    "apply_leaves_with_rules",  # takes latent rows z (float64), not X
    # dense float32 rows: TreeExplainer densifies sparse X first
    # (test_explain.py::test_sparse_rows_give_the_dense_values)
    "shap_values",
    "shap_interaction_values",
    # a forest without targets' method: test_unsupervised.py::test_missing_values_and_sparse_x
    "score_samples",
    "copy",
    "truncate",
    "select_trees",
    "projection_family",
    "n_jobs",
    "n_bytes",
    "n_trees",
    "n_features",
    "n_outputs",
    "n_targets",
    "class_counts",
    "is_classifier",
    "in_bag_counts",
    "honest_counts",
    "honest_fraction",
    # categorical columns need dense X (tests/test_categorical_input.py)
    "categorical",
    "has_leaf_values",
    # a regressor's with leaf values: tests/test_quantile_honest.py compares sparse and
    # dense X, out of bag too
    "predict_quantiles",
    "leaf_offsets",
    "leaf_boxes",
    "seed",
    "has_oob",
    "oob_prediction",
    "feature_importances",
    "projection_counts",
    "tree_stats",
    "tree_nodes",
    "to_bytes",
    "from_bytes",
    "params",
}


def _same(a, b):
    if isinstance(a, tuple):
        return len(a) == len(b) and all(_same(u, v) for u, v in zip(a, b))
    if a is None:
        return b is None
    return np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True)


def test_every_core_method_that_takes_x_takes_sparse_x_as_dense():
    from obliqueforest import _core
    from obliqueforest._forest import core_X

    public = {n for n in dir(_core.Forest) if not n.startswith("_")}
    assert public == set(X_METHODS) | NOT_X, (
        f"classify the new _core.Forest methods: {sorted(public ^ (set(X_METHODS) | NOT_X))}"
    )
    data = _data()
    X, y = data[0], data[1]
    est = of.SPORFClassifier(n_estimators=12, random_state=0, oob_score=True).fit(X, y)
    for layout in ("csr", "csc"):
        Xs = core_X(sparse.csr_matrix(X).asformat(layout))
        Xd = core_X(X)
        for name, kw in X_METHODS.items():
            dense_forest, sparse_forest = est._forest.copy(), est._forest.copy()
            got_dense = getattr(dense_forest, name)(Xd, **kw)
            got_sparse = getattr(sparse_forest, name)(Xs, **kw)
            assert _same(got_dense, got_sparse), (name, layout)
            if name == "compute_oob":
                assert _same(dense_forest.oob_prediction(), sparse_forest.oob_prediction())
                assert _same(dense_forest.oob_prediction(), est._forest.oob_prediction())


def test_warm_start_switching_oob_on_takes_sparse_x():
    X, y, _ = _data()
    Xs = sparse.csr_matrix(X)
    est = of.RandomForestClassifier(n_estimators=10, random_state=0, warm_start=True).fit(Xs, y)
    est.set_params(n_estimators=30, oob_score=True).fit(Xs, y)
    once = of.RandomForestClassifier(n_estimators=30, random_state=0, oob_score=True).fit(X, y)
    assert est.oob_score_ == once.oob_score_
    np.testing.assert_array_equal(est.oob_decision_function_, once.oob_decision_function_)
