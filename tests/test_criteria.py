"""The regression criteria ("squared_error", "friedman_mse", "absolute_error", "poisson")
and the classification ones ("gini", "entropy", its alias "log_loss"), single- and
multi-output, against scikit-learn's trees: one axis-aligned tree over every feature without
bootstrap is scikit-learn's CART, so on tie-free data both must grow the same tree."""

import numpy as np
import pytest
from sklearn.datasets import make_friedman1
from sklearn.ensemble import RandomForestRegressor as SkRFR
from sklearn.metrics import r2_score
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

import obliqueforest as of
from obliqueforest.projections import (
    Dictionary,
    ForestRC,
    Gaussian,
    GraphNeighbourhood,
    HaarPatch,
    PooledFilter,
)


def _cart(cls, **kw):
    """One axis-aligned tree over every feature, no bootstrap: scikit-learn's CART."""
    return cls(n_estimators=1, bootstrap=False, max_features=None, random_state=0, **kw)


def _data(n=120, p=4, seed=0, poisson=False, k=1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))  # continuous: no ties in X
    cols = []
    for o in range(k):
        signal = X[:, o % p] + 0.5 * X[:, (o + 1) % p] ** 2
        if poisson:
            cols.append(rng.poisson(np.exp(0.5 * signal)).astype(float))
        else:
            cols.append(signal + 0.3 * rng.normal(size=n))
    y = np.stack(cols, axis=1)
    return X, (y[:, 0] if k == 1 else y)


@pytest.mark.parametrize("k", [1, 2])
@pytest.mark.parametrize("criterion", ["squared_error", "absolute_error", "poisson"])
def test_regression_tree_matches_scikit_learn(criterion, k):
    # one feature: equally good splits on two features (frequent for the absolute error
    # and for counts) would be broken by each library's own feature order
    X, y = _data(p=1, poisson=criterion == "poisson", k=k)
    ours = _cart(of.RandomForestRegressor, criterion=criterion, min_samples_leaf=3).fit(X, y)
    ref = DecisionTreeRegressor(criterion=criterion, min_samples_leaf=3, random_state=0).fit(X, y)
    tree = ours.estimators_[0]
    if criterion == "absolute_error":
        # absolute deviations tie exactly at several cuts of a node (piecewise linear), and
        # the two libraries' rounding breaks such ties differently: compare the fit
        def leaf_deviation(t):
            leaf = t.children_left == -1
            return (t.impurity * t.weighted_n_node_samples)[leaf].sum()

        assert leaf_deviation(tree.tree_) == pytest.approx(leaf_deviation(ref.tree_), rel=0.05)
        assert abs(tree.get_n_leaves() - ref.get_n_leaves()) <= 0.1 * ref.get_n_leaves()
        return
    assert tree.get_n_leaves() == ref.get_n_leaves()
    assert tree.get_depth() == ref.get_depth()
    Xt, _ = _data(p=1, seed=1)
    for rows in (X, Xt):
        np.testing.assert_allclose(ours.predict(rows), ref.predict(rows), rtol=1e-9, atol=1e-9)
    # the same impurities (scikit-learn's: the mean over outputs), node for node
    np.testing.assert_allclose(
        np.sort(tree.tree_.impurity), np.sort(ref.tree_.impurity), rtol=1e-6, atol=1e-9
    )
    np.testing.assert_allclose(
        np.sort(tree.tree_.value.ravel()), np.sort(ref.tree_.value.ravel()), atol=1e-9
    )


@pytest.mark.parametrize("criterion", ["squared_error", "absolute_error", "poisson"])
def test_regression_tree_quality_matches_scikit_learn(criterion):
    # several features: the same tree up to the order of equally good splits
    X, y = _data(p=4, n=300, poisson=criterion == "poisson", k=2)
    Xt, yt = _data(p=4, n=300, seed=1, poisson=criterion == "poisson", k=2)
    ours = _cart(of.RandomForestRegressor, criterion=criterion, min_samples_leaf=3).fit(X, y)
    ref = DecisionTreeRegressor(criterion=criterion, min_samples_leaf=3, random_state=0).fit(X, y)
    assert abs(ours.estimators_[0].get_n_leaves() - ref.get_n_leaves()) <= 0.1 * ref.get_n_leaves()
    assert r2_score(yt, ours.predict(Xt)) > r2_score(yt, ref.predict(Xt)) - 0.05


def test_absolute_error_with_sample_weights_matches_scikit_learn():
    X, y = _data(n=80, p=1, seed=3)
    w = np.random.default_rng(4).integers(1, 4, size=80).astype(float)
    ours = _cart(of.RandomForestRegressor, criterion="absolute_error", max_depth=4)
    ref = DecisionTreeRegressor(criterion="absolute_error", max_depth=4, random_state=0)
    ours.fit(X, y, sample_weight=w)
    ref.fit(X, y, sample_weight=w)
    np.testing.assert_allclose(ours.predict(X), ref.predict(X), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("criterion", ["gini", "entropy", "log_loss"])
def test_multi_output_classification_tree_matches_scikit_learn(criterion):
    X, _ = _data(n=150, p=1)
    y = np.stack([X[:, 0] + 0.5 * np.sin(7 * X[:, 0]) > 0, np.digitize(X[:, 0] ** 2, [0.3, 1.0])])
    y = y.T
    y = y.astype(int)
    ours = _cart(of.RandomForestClassifier, criterion=criterion, min_samples_leaf=2).fit(X, y)
    ref = DecisionTreeClassifier(criterion=criterion, min_samples_leaf=2, random_state=0)
    ref.fit(X, y)
    np.testing.assert_array_equal(ours.predict(X), ref.predict(X))
    for a, b in zip(ours.predict_proba(X), ref.predict_proba(X)):
        np.testing.assert_allclose(a, b, atol=1e-12)
    assert ours.estimators_[0].get_n_leaves() == ref.get_n_leaves()


def test_log_loss_is_an_alias_of_entropy():
    X, _ = _data(n=100)
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0.5)
    a = of.SPORFClassifier(n_estimators=5, criterion="log_loss", random_state=0).fit(X, y)
    b = of.SPORFClassifier(n_estimators=5, criterion="entropy", random_state=0).fit(X, y)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))


def test_poisson_refuses_negative_targets_and_a_zero_sum():
    X, y = _data(n=30, poisson=True)
    reg = of.RandomForestRegressor(n_estimators=2, criterion="poisson")
    with pytest.raises(ValueError, match="negative which is not allowed for Poisson"):
        reg.fit(X, y - 1.0)
    with pytest.raises(ValueError, match="not strictly positive"):
        reg.fit(X, np.zeros(30))
    reg.fit(X, y)  # counts are fine
    assert (reg.predict(X) >= 0).all()


def test_poisson_never_predicts_zero_from_a_split():
    # a child with no counts would predict 0, an infinite deviance: such splits are refused
    X = np.arange(40, dtype=float)[:, None]
    y = np.where(X[:, 0] < 20, 0.0, 3.0)
    reg = _cart(of.RandomForestRegressor, criterion="poisson").fit(X, y)
    ref = DecisionTreeRegressor(criterion="poisson").fit(X, y)
    np.testing.assert_allclose(reg.predict(X), ref.predict(X))


def test_absolute_error_takes_random_thresholds():
    X, y = _data(n=200)
    Xt, yt = _data(n=200, seed=1)
    reg = of.RandomForestRegressor(
        n_estimators=20, criterion="absolute_error", splitter="random", random_state=0
    ).fit(X, y)
    assert r2_score(yt, reg.predict(Xt)) > 0.5


def test_absolute_error_is_robust_to_outliers():
    X, y = _data(n=200, seed=5)
    y_bad = y.copy()
    y_bad[::20] += 100.0  # 5% gross outliers
    Xt, yt = _data(n=200, seed=6)
    kw = dict(n_estimators=20, min_samples_leaf=10, random_state=0)  # leaves of several rows
    mae = of.RandomForestRegressor(criterion="absolute_error", **kw)
    mse = of.RandomForestRegressor(criterion="squared_error", **kw)
    err_mae = np.abs(mae.fit(X, y_bad).predict(Xt) - yt).mean()
    err_mse = np.abs(mse.fit(X, y_bad).predict(Xt) - yt).mean()
    assert err_mae < 0.25 * err_mse  # measured: 0.54 against 4.86
    # as good as scikit-learn's
    ref = SkRFR(criterion="absolute_error", **kw).fit(X, y_bad)
    assert err_mae < 1.1 * np.abs(ref.predict(Xt) - yt).mean()


REGRESSORS = {
    "sporf": lambda **kw: of.SPORFRegressor(**kw),
    "forest_rc": lambda **kw: of.ObliqueForestRegressor(projection=ForestRC(2), **kw),
    "morf": lambda **kw: of.MORFRegressor(data_shape=(10,), max_patch_size=2, **kw),
    "rotation": lambda **kw: of.RotationEnsembleRegressor(n_rotations=3, **kw),
}


@pytest.mark.parametrize("criterion", ["absolute_error", "poisson"])
@pytest.mark.parametrize("name", REGRESSORS)
def test_every_regressor_family_takes_the_criteria(name, criterion):
    X, y = make_friedman1(n_samples=300, random_state=0)
    Xt, yt = make_friedman1(n_samples=300, random_state=1)
    reg = REGRESSORS[name](n_estimators=20, criterion=criterion, random_state=0).fit(X, y)
    assert r2_score(yt, reg.predict(Xt)) > 0.5


@pytest.mark.parametrize("criterion", ["squared_error", "poisson"])
def test_histogram_paths_grow_the_sorted_tree(criterion):
    # an integer column is searched through the exact histogram (and splitter="hist" bins
    # large nodes): the tree must still be scikit-learn's
    rng = np.random.default_rng(7)
    X = rng.integers(0, 40, size=(600, 1)).astype(float)
    y = rng.poisson(np.exp(np.sin(X[:, 0] / 6.0))).astype(float)
    ref = DecisionTreeRegressor(criterion=criterion, min_samples_leaf=5).fit(X, y)
    for splitter in ["best", "hist"]:
        ours = _cart(
            of.RandomForestRegressor, criterion=criterion, min_samples_leaf=5, splitter=splitter
        )
        np.testing.assert_allclose(ours.fit(X, y).predict(X), ref.predict(X), atol=1e-9)


# every projection family, as a regressor on Friedman #1's 10 features
FAMILIES = {
    **REGRESSORS,
    "rf": lambda **kw: of.RandomForestRegressor(**kw),
    "gaussian": lambda **kw: of.ObliqueForestRegressor(projection=Gaussian(), **kw),
    "haar": lambda **kw: of.ObliqueForestRegressor(projection=HaarPatch((10,)), **kw),
    "pooled": lambda **kw: of.ObliqueForestRegressor(projection=PooledFilter((10,)), **kw),
    "dictionary": lambda **kw: of.ObliqueForestRegressor(
        projection=Dictionary(np.c_[np.eye(10), np.ones(10) / 10]), **kw
    ),
    "graph": lambda **kw: of.ObliqueForestRegressor(
        projection=GraphNeighbourhood(np.roll(np.eye(10), 1, axis=1)), **kw
    ),
}


@pytest.mark.parametrize("name", FAMILIES)
def test_friedman_mse_fits_and_predicts_for_every_family(name):
    X, y = make_friedman1(n_samples=300, random_state=0)
    Xt, yt = make_friedman1(n_samples=300, random_state=1)
    reg = FAMILIES[name](n_estimators=20, criterion="friedman_mse", random_state=0).fit(X, y)
    assert r2_score(yt, reg.predict(Xt)) > 0.5
    # two outputs too
    Y = np.c_[y, X[:, 0] - X[:, 1]]
    reg = FAMILIES[name](n_estimators=5, criterion="friedman_mse", random_state=0).fit(X, Y)
    assert reg.predict(Xt).shape == (300, 2)


def test_friedman_mse_of_one_output_is_scikit_learns_squared_error_tree():
    # Friedman's score w_l w_r (mean_l - mean_r)^2 / w is squared error's weighted decrease
    # for one output (scikit-learn 1.9 maps "friedman_mse" to "squared_error" for that
    # reason): on tie-free data the same tree, impurities and values as squared error's
    X, y = _data(p=1)
    ours = _cart(of.RandomForestRegressor, criterion="friedman_mse", min_samples_leaf=3)
    ours.fit(X, y)
    ref = DecisionTreeRegressor(criterion="squared_error", min_samples_leaf=3, random_state=0)
    ref.fit(X, y)
    tree = ours.estimators_[0]
    assert tree.get_n_leaves() == ref.get_n_leaves()
    np.testing.assert_allclose(ours.predict(X), ref.predict(X), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(
        np.sort(tree.tree_.impurity), np.sort(ref.tree_.impurity), rtol=1e-6, atol=1e-9
    )


def _friedman_score(yl, yr, k):
    """Friedman's improvement (scikit-learn's FriedmanMSE.impurity_improvement before 1.9)
    of unit-weight children with targets ``yl``, ``yr`` (n x k), computed directly."""
    wl, wr = len(yl), len(yr)
    diff = (wr * yl.sum() - wl * yr.sum()) / k
    return diff * diff / (wl * wr * (wl + wr))


def test_friedman_mse_root_split_of_two_outputs_maximises_friedmans_score():
    # over several outputs Friedman's score rates the difference of the summed means, not
    # the mean decrease of the outputs' variances: the root split is its argmax, and the
    # squared error's is a different one
    rng = np.random.default_rng(3)
    X = rng.uniform(size=(200, 1))
    # both outputs step at 0.5, one up, one down (their sum does not move there), and
    # output 0 steps a little at 0.2 as well: squared error cuts at 0.5, Friedman at 0.2
    step = X[:, 0] > 0.5
    Y = np.c_[step + 0.3 * (X[:, 0] > 0.2), -1.0 * step] + 0.02 * rng.normal(size=(200, 2))
    fit = {
        c: _cart(of.RandomForestRegressor, criterion=c, max_depth=1).fit(X, Y)
        for c in ("friedman_mse", "squared_error")
    }
    order = np.argsort(X[:, 0])
    xs, Ys = X[order, 0], Y[order]
    scores = [_friedman_score(Ys[: i + 1], Ys[i + 1 :], 2) for i in range(len(xs) - 1)]
    best = int(np.argmax(scores))
    threshold = fit["friedman_mse"].estimators_[0].tree_.threshold[0]
    assert xs[best] <= threshold < xs[best + 1]
    assert abs(threshold - 0.2) < 0.05
    assert abs(fit["squared_error"].estimators_[0].tree_.threshold[0] - 0.5) < 0.05


def test_friedman_mse_with_missing_values_constraints_histograms_and_files(tmp_path):
    X, y = make_friedman1(n_samples=400, random_state=0)
    X[::9, 3] = np.nan
    kw = dict(n_estimators=10, criterion="friedman_mse", random_state=0)
    reg = of.SPORFRegressor(**kw).fit(X, y)
    assert np.isfinite(reg.predict(X)).all()
    hist = of.RandomForestRegressor(splitter="hist", max_bins=16, **kw).fit(X, y)
    assert r2_score(y, hist.predict(X)) > 0.8
    reg.save(tmp_path / "friedman.obf")
    np.testing.assert_array_equal(of.load(tmp_path / "friedman.obf").predict(X), reg.predict(X))
    Xc, yc = make_friedman1(n_samples=400, random_state=1)
    mono = of.SPORFRegressor(monotonic_cst=[1] + [0] * 9, **kw).fit(Xc, yc)
    grid = np.repeat(Xc[:1], 50, axis=0)
    grid[:, 0] = np.linspace(0, 1, 50)
    assert (np.diff(mono.predict(grid)) >= -1e-12).all()
