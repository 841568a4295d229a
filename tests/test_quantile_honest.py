"""Quantile regression forests (``store_leaf_values``, ``predict_quantiles``) and honest
forests (``honest_fraction``) on every projection family: quality with fixed seeds,
agreement with the quantile-forest package where installed, and the engine's contracts
(threads, files, NaN, sparse X, several outputs, the memory guard)."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
from scipy import sparse
from sklearn.datasets import make_classification

import obliqueforest as of
from obliqueforest import projections

P = 8


def hetero(n, seed):
    """y = sin(4 x0) + x1 + noise whose scale grows with x2 (0.1 to 1.1)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 1, size=(n, P))
    y = np.sin(4 * X[:, 0]) + X[:, 1] + (0.1 + X[:, 2]) * rng.normal(size=n)
    return X, y


REGRESSORS = {
    "rf": lambda **kw: of.RandomForestRegressor(**kw),
    "sporf": lambda **kw: of.SPORFRegressor(**kw),
    "oblique-gaussian": lambda **kw: of.ObliqueForestRegressor(projections.Gaussian(), **kw),
    "morf": lambda **kw: of.MORFRegressor(data_shape=(P,), **kw),
}


@pytest.mark.parametrize("min_samples_leaf", [1, 5])
@pytest.mark.parametrize("name", REGRESSORS)
def test_quantile_intervals_cover_held_out_heteroscedastic_data(name, min_samples_leaf):
    # the README's and docs/quantile_honest.md's claim, at the default leaf size and at 5
    # (coverage 0.88-0.92 at 1, 0.89-0.93 at 5 over the four families)
    X, y = hetero(2000, 0)
    Xt, yt = hetero(2000, 1)
    reg = REGRESSORS[name](
        n_estimators=100,
        min_samples_leaf=min_samples_leaf,
        store_leaf_values=True,
        random_state=0,
        n_jobs=2,
    ).fit(X, y)
    lo, hi = reg.predict_interval(Xt, coverage=0.9).T
    coverage = np.mean((yt >= lo) & (yt <= hi))
    assert 0.85 <= coverage <= 0.95, coverage
    # intervals follow the noise: wider where x2 is large
    width = hi - lo
    assert width[Xt[:, 2] > 0.7].mean() > 1.4 * width[Xt[:, 2] < 0.3].mean()
    q = reg.predict_quantiles(Xt, [0.1, 0.5, 0.9])
    assert q.shape == (2000, 3) and np.all(np.diff(q, axis=1) >= 0)
    assert reg.predict_quantiles(Xt[:5], 0.5).shape == (5,)


def _reference_forest(reg, X, y):
    """quantile-forest's QuantileForest over ``reg``'s own trees: each tree's leaves hold
    the positions (1-based, in ascending y) of the tree's bootstrap draws."""
    qf = pytest.importorskip("quantile_forest._quantile_forest_fast")
    order = np.argsort(y, kind="stable")
    position = np.empty_like(order)
    position[order] = np.arange(len(y))
    leaves = reg.apply(X)
    samples = reg.estimators_samples_
    n_nodes = max(t.tree_.node_count for t in reg.estimators_)
    width = max(np.bincount(leaves[s, t]).max() for t, s in enumerate(samples))
    table = np.zeros((len(samples), n_nodes, 1, width), dtype=np.intp)
    for t, rows in enumerate(samples):
        fill = np.zeros(n_nodes, dtype=np.intp)
        for i in rows:
            leaf = leaves[i, t]
            table[t, leaf, 0, fill[leaf]] = position[i] + 1
            fill[leaf] += 1
    return qf.QuantileForest(y[order][None, :].astype(np.float64), table)


def test_quantiles_agree_with_quantile_forest_on_the_same_forest():
    X, y = hetero(400, 2)
    Xt, _ = hetero(300, 3)
    reg = of.RandomForestRegressor(
        n_estimators=30, min_samples_leaf=3, store_leaf_values=True, random_state=0
    ).fit(X, y)
    reference = _reference_forest(reg, X, y)
    qs = [0.0, 0.05, 0.25, 0.5, 0.75, 0.95, 1.0]
    want = reference.predict(qs, reg.apply(Xt), None, b"linear", True, True, True)[:, 0, :]
    np.testing.assert_allclose(reg.predict_quantiles(Xt, qs), want, rtol=0, atol=1e-9)
    # out of bag: each training row over the trees that did not draw it
    in_bag = np.zeros((len(y), reg.n_estimators), dtype=np.uint8)
    for t, rows in enumerate(reg.estimators_samples_):
        in_bag[rows, t] = 1
    ours = reg.oob_quantiles(X, qs)
    want = reference.predict(qs, reg.apply(X), 1 - in_bag, b"linear", True, True, True)[:, 0, :]
    np.testing.assert_allclose(ours, want, rtol=0, atol=1e-9)


def test_quantiles_agree_with_quantile_forests_estimator_on_identical_trees():
    # without bootstrap and with every feature a candidate, both libraries grow the same
    # deterministic trees (CART), so their estimators can be compared directly
    qforest = pytest.importorskip("quantile_forest")
    X, y = hetero(500, 4)
    Xt, _ = hetero(200, 5)
    common = dict(n_estimators=3, min_samples_leaf=10, bootstrap=False, max_features=1.0)
    ours = of.RandomForestRegressor(**common, store_leaf_values=True, random_state=0).fit(X, y)
    theirs = qforest.RandomForestQuantileRegressor(
        **common, max_samples_leaf=None, random_state=0
    ).fit(X, y)
    # the same partition of the training rows
    a, b = ours.apply(X)[:, 0], theirs.apply(X)[:, 0]
    assert len(set(zip(a, b))) == len(set(a)) == len(set(b))
    qs = [0.05, 0.5, 0.95]
    want = theirs.predict(Xt, quantiles=qs, weighted_quantile=True, weighted_leaves=True)
    np.testing.assert_allclose(ours.predict_quantiles(Xt, qs), want, rtol=0, atol=1e-9)


def test_integer_sample_weights_give_the_quantiles_of_repeated_rows():
    # sample weights are frequency weights: without bootstrap and with depth-limited axis
    # trees, the weighted fit and the fit on the repeated rows grow the same partition,
    # and their quantiles must agree too (they did not while a leaf's sample size was its
    # count of distinct rows)
    rng = np.random.RandomState(0)
    X = rng.randn(300, 4)
    y = X[:, 0] + rng.randn(300)
    w = rng.randint(1, 4, 300)
    Xt = rng.randn(60, 4)
    common = dict(n_estimators=3, bootstrap=False, max_depth=2, store_leaf_values=True)
    weighted = of.RandomForestRegressor(**common, random_state=0).fit(X, y, sample_weight=w)
    repeated = of.RandomForestRegressor(**common, random_state=0).fit(
        np.repeat(X, w, axis=0), np.repeat(y, w)
    )
    np.testing.assert_allclose(weighted.predict(Xt), repeated.predict(Xt), atol=1e-12)
    qs = [0.0, 0.1, 0.3, 0.5, 0.77, 1.0]
    np.testing.assert_allclose(
        weighted.predict_quantiles(Xt, qs), repeated.predict_quantiles(Xt, qs), atol=1e-12
    )
    # doubling every weight is repeating every row twice: not the same sample
    doubled = of.RandomForestRegressor(**common, random_state=0).fit(X, y, sample_weight=2 * w)
    twice = of.RandomForestRegressor(**common, random_state=0).fit(
        np.repeat(X, 2 * w, axis=0), np.repeat(y, 2 * w)
    )
    np.testing.assert_allclose(
        doubled.predict_quantiles(Xt, qs), twice.predict_quantiles(Xt, qs), atol=1e-12
    )


def test_normalised_sample_weights_warn_that_quantiles_read_frequencies():
    rng = np.random.RandomState(1)
    X = rng.randn(200, 3)
    y = X[:, 0] + rng.randn(200)
    reg = of.RandomForestRegressor(n_estimators=5, store_leaf_values=True, random_state=0)
    with pytest.warns(UserWarning, match="frequencies"):
        reg.fit(X, y, sample_weight=np.full(200, 1 / 200))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        reg.fit(X, y, sample_weight=rng.uniform(0.5, 2, 200))
        # no leaf values kept: nothing reads the weights as frequencies
        of.RandomForestRegressor(n_estimators=5, random_state=0).fit(
            X, y, sample_weight=np.full(200, 1 / 200)
        )


def test_conformalised_intervals_from_out_of_bag_quantiles_cover():
    # the recipe of docs/quantile_honest.md: widen the intervals by the OOB conformity scores
    X, y = hetero(1500, 6)
    Xt, yt = hetero(2000, 7)
    reg = of.SPORFRegressor(
        n_estimators=100, min_samples_leaf=5, store_leaf_values=True, random_state=0, n_jobs=2
    ).fit(X, y)
    lo, hi = reg.oob_quantiles(X, [0.05, 0.95]).T
    scores = np.maximum(lo - y, y - hi)
    level = np.ceil((len(y) + 1) * 0.9) / len(y)
    margin = np.quantile(scores, level, method="higher")
    band = reg.predict_interval(Xt, coverage=0.9) + [-margin, margin]
    coverage = np.mean((yt >= band[:, 0]) & (yt <= band[:, 1]))
    assert 0.87 <= coverage <= 0.95, coverage


def test_quantile_forests_are_deterministic_and_survive_files(tmp_path):
    X, y = hetero(600, 8)
    Xt, _ = hetero(100, 9)
    kw = dict(n_estimators=20, store_leaf_values=True, honest_fraction=0.3, random_state=1)
    a = of.SPORFRegressor(**kw, n_jobs=1).fit(X, y)
    b = of.SPORFRegressor(**kw, n_jobs=2).fit(X, y)
    assert a._forest.to_bytes() == b._forest.to_bytes()
    q = a.predict_quantiles(Xt)
    np.testing.assert_array_equal(q, b.predict_quantiles(Xt))
    a.save(tmp_path / "qrf.of")
    data = (tmp_path / "qrf.of").read_bytes()
    assert int.from_bytes(data[8:12], "little") == 5  # every model: kind sections included
    back = of.load(tmp_path / "qrf.of")
    np.testing.assert_array_equal(back.predict_quantiles(Xt), q)
    np.testing.assert_array_equal(back.predict(Xt), a.predict(Xt))
    again = pickle.loads(pickle.dumps(a))
    np.testing.assert_array_equal(again.predict_quantiles(Xt), q)
    assert back.honest_fraction == 0.3 and back._forest.honest_fraction == 0.3


def test_quantiles_need_stored_leaf_values_and_valid_quantiles():
    X, y = hetero(200, 10)
    plain = of.RandomForestRegressor(5, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="store_leaf_values=True"):
        plain.predict_quantiles(X)
    reg = of.RandomForestRegressor(5, store_leaf_values=True, random_state=0).fit(X, y)
    for bad in [1.5, [-0.1, 0.5], [], "median", [[0.5]], [np.nan]]:
        with pytest.raises(ValueError, match="quantiles"):
            reg.predict_quantiles(X, bad)
    for coverage in [0, 1, 1.2, "0.9"]:
        with pytest.raises(ValueError, match="coverage"):
            reg.predict_interval(X, coverage)
    with pytest.raises(ValueError, match="training rows"):
        reg.oob_quantiles(X[:50])
    with pytest.warns(UserWarning, match="OOB"):
        q = of.RandomForestRegressor(1, store_leaf_values=True).fit(X, y).oob_quantiles(X)
    assert np.isnan(q).any() and not np.isnan(q).all()
    assert "store_leaf_values" not in of.RandomForestClassifier().get_params()
    nob = of.RandomForestRegressor(5, bootstrap=False, store_leaf_values=True).fit(X, y)
    with pytest.raises(ValueError, match="bootstrap"):
        nob.oob_quantiles(X)


def test_quantiles_with_missing_values_sparse_x_and_several_outputs():
    X, y = hetero(500, 11)
    Xt, _ = hetero(100, 12)
    Xm = X.copy()
    Xm[::7, 0] = np.nan
    reg = of.SPORFRegressor(20, store_leaf_values=True, random_state=0).fit(Xm, y)
    q = reg.predict_quantiles(np.where(Xt > 0.9, np.nan, Xt))
    assert np.isfinite(q).all()
    # sparse X grows and predicts what its dense array does
    Xs = X * (X > 0.5)
    dense = of.SPORFRegressor(10, store_leaf_values=True, random_state=0).fit(Xs, y)
    sp = of.SPORFRegressor(10, store_leaf_values=True, random_state=0).fit(sparse.csr_matrix(Xs), y)
    np.testing.assert_array_equal(
        sp.predict_quantiles(sparse.csc_matrix(Xt)), dense.predict_quantiles(Xt)
    )
    with pytest.warns(UserWarning, match="OOB"):  # 10 trees: some rows in every tree
        np.testing.assert_array_equal(
            sp.oob_quantiles(sparse.csr_matrix(Xs)), dense.oob_quantiles(Xs)
        )
    # several outputs: per output, with the same weights as one-output forests of that output
    Y = np.stack([y, -2 * y], axis=1)
    multi = of.RandomForestRegressor(10, store_leaf_values=True, random_state=0).fit(X, Y)
    qm = multi.predict_quantiles(Xt, [0.1, 0.9])
    assert qm.shape == (100, 2, 2)
    np.testing.assert_allclose(qm[:, 1, ::-1], -2 * qm[:, 0, :], rtol=1e-12)
    assert multi.predict_interval(Xt).shape == (100, 2, 2)


def test_leaf_values_count_against_the_memory_guard():
    X, y = hetero(20000, 13)
    kw = dict(n_estimators=100, max_depth=3, random_state=0)
    try:
        of.set_memory_limit(2 * 10**6)
        of.RandomForestRegressor(**kw).fit(X, y)  # a few kB of trees
        with pytest.raises(ValueError, match="memory limit"):
            of.RandomForestRegressor(**kw, store_leaf_values=True).fit(X, y)
    finally:
        of.set_memory_limit("auto")


def test_warm_start_keeps_leaf_values_and_needs_the_same_targets():
    X, y = hetero(300, 14)
    reg = of.RandomForestRegressor(5, store_leaf_values=True, warm_start=True, random_state=0)
    reg.fit(X, y)
    reg.set_params(n_estimators=8).fit(X, y)
    full = of.RandomForestRegressor(8, store_leaf_values=True, random_state=0).fit(X, y)
    np.testing.assert_array_equal(reg.predict_quantiles(X), full.predict_quantiles(X))
    with pytest.raises(ValueError, match="training data of its first fit"):
        reg.set_params(n_estimators=10).fit(X, y + 1)
    np.testing.assert_array_equal(reg.predict_quantiles(X), full.predict_quantiles(X))


# -- honest forests ---------------------------------------------------------------------
CLASSIFIERS = {
    "rf": lambda **kw: of.RandomForestClassifier(**kw),
    "sporf": lambda **kw: of.SPORFClassifier(**kw),
    "oblique-forest-rc": lambda **kw: of.ObliqueForestClassifier(projections.ForestRC(), **kw),
    "morf": lambda **kw: of.MORFClassifier(data_shape=(4,), **kw),
}


def noisy_classes(seed):
    X, y = make_classification(
        3000, 20, n_informative=5, flip_y=0.2, class_sep=0.8, random_state=seed
    )
    return X[:1500], y[:1500], X[1500:], y[1500:]


def noisy_xor(n, seed):
    """Gaussian XOR of the first two of four features, observed through unit noise: labels
    that fully grown trees memorise (the Bayes Brier score is about 0.22)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = ((X[:, 0] > 0) ^ (X[:, 1] > 0)).astype(int)
    X[:, :2] += rng.normal(size=(n, 2))
    return X, y


def calibration_error(y, p, n_bins=10):
    """Expected calibration error: over 10 equal-width bins of the predicted probability,
    the rows' share times |mean prediction - observed frequency|."""
    bins = np.minimum((p * n_bins).astype(int), n_bins - 1)
    return sum(
        np.mean(bins == b) * abs(p[bins == b].mean() - y[bins == b].mean()) for b in np.unique(bins)
    )


@pytest.mark.parametrize("name", CLASSIFIERS)
def test_honest_probabilities_are_no_worse_in_brier_score(name):
    # honest leaves are estimated from rows the splits did not chase; where labels are
    # noisy and trees grow until their leaves are pure, that is a better probability: Brier
    # 0.228-0.231 against 0.239-0.240 here, calibration error 0.026-0.040 against
    # 0.054-0.067 (the README's and docs/quantile_honest.md's figures). It is not free:
    # honest trees grow on half the rows (the next test).
    X, y = noisy_xor(2000, 0)
    Xt, yt = noisy_xor(5000, 1)
    kw = dict(n_estimators=100, random_state=0, n_jobs=2)
    plain = CLASSIFIERS[name](**kw).fit(X, y).predict_proba(Xt)[:, 1]
    honest = CLASSIFIERS[name](**kw, honest_fraction=0.5).fit(X, y).predict_proba(Xt)[:, 1]

    def brier(p):
        return np.mean((p - yt) ** 2)

    assert brier(honest) <= brier(plain), (brier(honest), brier(plain))
    errors = calibration_error(yt, honest), calibration_error(yt, plain)
    assert errors[0] < 0.8 * errors[1], errors


def test_honest_trees_cost_where_the_structure_is_hard_to_find():
    # docs/quantile_honest.md's figures: RF's Brier score, plain against honest
    from obliqueforest.datasets import make_trunk

    X, y, Xt, yt = noisy_classes(0)  # 1,500 rows, 5 of 20 features, 20% labels flipped
    cases = [
        (X, y, Xt, yt),
        (*make_trunk(200, n_features=100, random_state=0),
         *make_trunk(5000, n_features=100, random_state=1)),
    ]  # fmt: skip
    for X, y, Xt, yt in cases:
        brier = []
        for honest_fraction in [0.0, 0.5]:
            clf = of.RandomForestClassifier(
                100, honest_fraction=honest_fraction, random_state=0, n_jobs=2
            ).fit(X, y)
            brier.append(np.mean((clf.predict_proba(Xt)[:, 1] - yt) ** 2))
        assert brier[1] > brier[0] + 0.01, brier  # 0.156 / 0.169 and 0.094 / 0.151


@pytest.mark.parametrize("n, max_samples", [(50, 1), (2, None), (2, 1), (3, 2)])
def test_honest_trees_with_an_empty_honest_part_fall_back_to_their_own_rows(n, max_samples):
    # one distinct row drawn leaves no honest row: such a tree is filled from the rows it
    # grew on (as an ordinary tree), never left with empty leaves and NaN quantiles
    rng = np.random.RandomState(0)
    X = rng.randn(50, 3)
    y = X[:, 0] + rng.randn(50)
    reg = of.RandomForestRegressor(
        n_estimators=10,
        honest_fraction=0.5,
        store_leaf_values=True,
        max_samples=max_samples,
        random_state=0,
    ).fit(X[:n], y[:n])
    q = reg.predict_quantiles(X, [0.0, 0.5, 1.0])
    assert not np.isnan(q).any()
    assert not np.isnan(reg.predict(X)).any()
    # every quantile is one of the training targets' range
    assert q.min() >= y[:n].min() and q.max() <= y[:n].max()
    # honest rows of weight 0 are no rows either
    w = np.r_[np.ones(25), np.zeros(25)]
    reg.set_params(max_samples=None, bootstrap=False).fit(X, y, sample_weight=w)
    assert not np.isnan(reg.predict_quantiles(X)).any()


def test_honest_indices_are_the_rows_that_filled_the_leaves():
    X, y = hetero(400, 15)
    reg = of.SPORFRegressor(5, honest_fraction=0.5, random_state=2).fit(X, y)
    leaves = reg.apply(X)
    for t, (honest, structure, both) in enumerate(
        zip(reg.honest_indices_, reg.structure_indices_, reg.estimators_samples_)
    ):
        np.testing.assert_array_equal(np.sort(np.concatenate([honest, structure])), both)
        assert not set(honest) & set(structure)
        assert abs(len(set(honest)) - len(set(both)) / 2) <= 0.5
        tree = reg.estimators_[t].tree_
        # each leaf reached by honest rows holds their mean; the split search saw the others
        assert tree.weighted_n_node_samples[0] == len(structure)
        for leaf in np.unique(leaves[honest, t]):
            rows = honest[leaves[honest, t] == leaf]
            assert np.isclose(tree.value[leaf, 0, 0], y[rows].mean())
    plain = of.SPORFRegressor(5, random_state=2).fit(X, y)
    assert all(len(h) == 0 for h in plain.honest_indices_)
    # honest_fraction=0 grows today's forest, byte for byte
    zero = of.SPORFRegressor(5, honest_fraction=0.0, random_state=2).fit(X, y)
    assert zero._forest.to_bytes() == plain._forest.to_bytes()


def test_honest_forests_are_checked_reproducible_and_take_missing_values():
    X, y, Xt, _ = noisy_classes(1)
    with pytest.raises(ValueError, match="honest_fraction"):
        of.RandomForestClassifier(honest_fraction=1.0).fit(X, y)
    with pytest.raises(ValueError, match="monotonic_cst"):
        of.RandomForestClassifier(honest_fraction=0.5, monotonic_cst=[1] + [0] * 19).fit(X, y)
    kw = dict(n_estimators=30, honest_fraction=0.4, random_state=3, oob_score=True)
    a = of.SPORFClassifier(**kw, n_jobs=1).fit(X, y)
    b = of.SPORFClassifier(**kw, n_jobs=2).fit(X, y)
    assert a._forest.to_bytes() == b._forest.to_bytes()
    assert a.oob_score_ == b.oob_score_ and 0.5 < a.oob_score_ < 1
    p = a.predict_proba(Xt)
    assert np.allclose(p.sum(axis=1), 1)
    Xm = X.copy()
    Xm[::5, 3] = np.nan
    clf = of.SPORFClassifier(**kw).fit(Xm, y)
    assert np.isfinite(clf.predict_proba(np.where(Xt > 2, np.nan, Xt))).all()
    sp = of.RandomForestClassifier(10, honest_fraction=0.5, random_state=0)
    Xs = X * (X > 0)
    np.testing.assert_array_equal(
        sp.fit(sparse.csr_matrix(Xs), y).predict_proba(Xt),
        of.RandomForestClassifier(10, honest_fraction=0.5, random_state=0)
        .fit(Xs, y)
        .predict_proba(Xt),
    )
    Y = np.stack([y, 1 - y], axis=1)
    multi = of.RandomForestClassifier(10, honest_fraction=0.5, random_state=0).fit(X, Y)
    assert [q.shape for q in multi.predict_proba(Xt)] == [(1500, 2), (1500, 2)]


def test_command_line_fits_kinds_and_writes_quantiles(tmp_path):
    from obliqueforest.cli import main

    X, y = hetero(300, 16)
    names = [f"x{j}" for j in range(P)]
    header = ",".join(names + ["y"])
    np.savetxt(
        tmp_path / "t.csv", np.column_stack([X, y]), delimiter=",", header=header, comments=""
    )
    model = tmp_path / "q.of"
    args = ["fit", tmp_path / "t.csv", "--target", "y", "-e", "rf-reg", "--seed", "0", "-o", model]
    args += ["-p", "store_leaf_values=True", "-p", "honest_fraction=0.3", "-p", "n_estimators=20"]
    assert main([str(a) for a in args]) == 0
    out = tmp_path / "p.csv"
    args = ["predict", model, tmp_path / "t.csv", "--target", "y", "--quantiles", "0.1,0.9"]
    assert main([str(a) for a in [*args, "-o", out]]) == 0
    table = np.genfromtxt(out, delimiter=",", names=True)
    assert table.dtype.names == ("prediction", "q01", "q09")
    est = of.load(model)
    frame = pytest.importorskip("pandas").DataFrame(X, columns=names)
    np.testing.assert_allclose(
        np.column_stack([table["q01"], table["q09"]]),
        est.predict_quantiles(frame, [0.1, 0.9]),
        rtol=1e-6,
    )
    plain = tmp_path / "plain.of"
    main(
        [str(a) for a in ["fit", tmp_path / "t.csv", "--target", "y", "-e", "rf-reg", "-o", plain]]
    )
    assert main([str(a) for a in ["predict", plain, tmp_path / "t.csv", "--quantiles", "0.5"]]) == 2


def test_rotation_ensembles_say_they_do_not_predict_quantiles():
    X, y = hetero(200, 17)
    rot = of.RotationEnsembleRegressor(10, n_rotations=2, random_state=0).fit(X, y)
    with pytest.raises(NotImplementedError, match="RandomForestRegressor"):
        rot.predict_quantiles(X)


# -- docs/quantile_honest.md ------------------------------------------------------------
from _docblocks import ROOT, blocks, check, params  # noqa: E402

PAGE = blocks(ROOT / "docs" / "quantile_honest.md")


@pytest.mark.parametrize("block", params({"run", "slow"}, *PAGE))
def test_docs_page_block_runs_alone_and_prints_what_the_page_quotes(block):
    check(block)


def test_docs_page_blocks_are_all_run():
    assert len(PAGE) >= 3 and all(b.lang == "python" for b in PAGE if b.output is not None)
