"""Tables with categorical columns as every forest takes them (issue 46): a pandas
DataFrame (or pyarrow Table) whose columns are numbers, strings (object, pandas' "str" and
"string"), ``category`` or bool; ``categorical_features`` as scikit-learn's
HistGradientBoosting takes it; the levels of the fit (``categories_``), and a level never
seen in training going with the missing values at prediction."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from scipy import sparse
from sklearn.base import clone
from sklearn.utils._param_validation import InvalidParameterError

import obliqueforest as of
from obliqueforest._trees import ObliqueTreeClassifier, ObliqueTreeRegressor
from obliqueforest.projections import Patch

pd = pytest.importorskip("pandas")

CITIES = list("abcdef")
# a set of levels that no threshold on their sorted order separates
SIGNAL = {"b", "e", "f"}


def _table(n=400, seed=0):
    """Columns of every kind; y is whether ``city`` is in SIGNAL (a non-ordinal set of
    levels), the other columns noise."""
    rng = np.random.default_rng(seed)
    city = rng.choice(CITIES, n)
    frame = pd.DataFrame(
        {
            "city": pd.Series(city, dtype=object),
            "town": pd.Series(rng.choice(["u", "v", "w"], n), dtype="str"),
            "shop": pd.Series(rng.choice(["p", "q"], n), dtype="string"),
            "kind": pd.Categorical(rng.choice(["lo", "mid", "hi"], n), ["lo", "mid", "hi"]),
            "flag": rng.random(n) < 0.5,
            "code": rng.integers(0, 4, n),
            "x": rng.normal(size=n),
        }
    )
    y = np.isin(city, sorted(SIGNAL)).astype(int)
    return frame, y


def _numeric(n=200, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    X[rng.random(n) < 0.1, 2] = np.nan
    return X, (X[:, 0] + X[:, 1] > 0).astype(int)


CLASSIFIERS = {
    "rf": lambda **kw: of.RandomForestClassifier(20, random_state=0, **kw),
    "sporf": lambda **kw: of.SPORFClassifier(20, random_state=0, **kw),
    "rf_random": lambda **kw: of.RandomForestClassifier(
        20, splitter="random", random_state=0, **kw
    ),
    "oblique": lambda **kw: of.ObliqueForestClassifier(None, 20, random_state=0, **kw),
}
REGRESSORS = {
    "rf": lambda **kw: of.RandomForestRegressor(20, random_state=0, **kw),
    "sporf": lambda **kw: of.SPORFRegressor(20, random_state=0, **kw),
    "quantile": lambda **kw: of.RandomForestRegressor(
        20, store_leaf_values=True, random_state=0, **kw
    ),
}
WITHOUT_TARGETS = {
    "isolation": lambda **kw: of.IsolationForest(20, random_state=0, **kw),
    "unsupervised": lambda **kw: of.UnsupervisedRandomForest(20, random_state=0, **kw),
}
ALL = {
    **{f"{k}_clf": v for k, v in CLASSIFIERS.items()},
    **{f"{k}_reg": v for k, v in REGRESSORS.items()},
    **WITHOUT_TARGETS,
}


def _fit(name, X, y, **kw):
    est = ALL[name](**kw)
    if name in WITHOUT_TARGETS:
        return est.fit(X)
    return est.fit(X, y.astype(float) if name.endswith("_reg") else y)


def _outputs(est, X):
    """What every kind of estimator predicts on X."""
    if isinstance(est, of.IsolationForest):
        return est.score_samples(X)
    if isinstance(est, of.UnsupervisedRandomForest):
        return est.transform(X)
    if hasattr(est, "predict_proba"):
        return est.predict_proba(X)
    return est.predict(X)


# -- which columns are categorical, and their levels ---------------------------------------
def test_from_dtype_takes_category_string_object_and_bool_columns():
    X, y = _table()
    est = of.RandomForestClassifier(5, random_state=0).fit(X, y)
    np.testing.assert_array_equal(est.is_categorical_, [True, True, True, True, True, False, False])
    levels = [None if c is None else c.tolist() for c in est.categories_]
    assert levels == [
        CITIES,
        ["u", "v", "w"],
        ["p", "q"],
        ["lo", "mid", "hi"],  # a category dtype's categories, in their order
        [False, True],
        None,
        None,
    ]
    assert list(est.feature_names_in_) == list(X.columns)
    assert est.n_features_in_ == 7


def test_category_levels_include_unused_categories_and_bools_both_values():
    X, y = _table()
    X["kind"] = pd.Categorical(["lo"] * len(X), ["lo", "mid", "hi", "never"])
    X["flag"] = True
    est = of.RandomForestClassifier(5, random_state=0).fit(X, y)
    assert est.categories_[3].tolist() == ["lo", "mid", "hi", "never"]
    assert est.categories_[4].tolist() == [False, True]


@pytest.mark.parametrize(
    "value", [["code"], [5], np.arange(7) == 5], ids=["names", "indices", "mask"]
)
def test_integer_coded_columns_marked_categorical(value):
    X, y = _table()
    numeric = X.assign(city=0, town=0, shop=0, kind=0, flag=0)  # (of the same width)
    est = of.RandomForestClassifier(5, random_state=0, categorical_features=value)
    est.fit(numeric, y)
    np.testing.assert_array_equal(est.is_categorical_, np.arange(7) == 5)
    assert est.categories_[5].tolist() == [0, 1, 2, 3]
    X_num = X[["code", "x"]]
    est = of.RandomForestClassifier(5, random_state=0, categorical_features=[0]).fit(X_num, y)
    # at prediction the codes stay numbers: ints and floats map through the levels, a code
    # never seen in training goes with the missing values
    rows = pd.DataFrame({"code": [2.0, 7.0, np.nan], "x": [0.5, 0.5, 0.5]})
    proba = est.predict_proba(rows)
    as_ints = est.predict_proba(rows.iloc[:1].astype({"code": int}))
    np.testing.assert_array_equal(proba[0], as_ints[0])
    np.testing.assert_array_equal(proba[1], proba[2])


def test_numpy_arrays_take_categorical_columns_by_index():
    X, y = _table()
    obj = X[["city", "x"]].to_numpy()  # an object array
    est = of.RandomForestClassifier(10, max_depth=2, random_state=0, categorical_features=[0])
    est.fit(obj, y)
    assert est.categories_[0].tolist() == CITIES
    assert not hasattr(est, "feature_names_in_")
    np.testing.assert_array_equal(est.predict(obj), y)


def test_categorical_features_none_takes_every_column_as_numeric():
    X, y = _table()
    numeric = X[["flag", "code", "x"]]
    est = of.RandomForestClassifier(5, random_state=0, categorical_features=None).fit(numeric, y)
    assert not est.is_categorical_.any() and est.categories_ == [None, None, None]


# -- the signal of a string column ---------------------------------------------------------
@pytest.mark.parametrize("name", ["rf", "sporf"])
def test_a_set_of_string_levels_is_found_by_one_split(name):
    # y depends on whether city is in {b, e, f}: no threshold on the levels' order finds
    # it, one split on a set of levels does (a stump)
    X, y = _table(600, seed=0)
    X_test, y_test = _table(400, seed=1)
    est = CLASSIFIERS[name](max_depth=1).fit(X, y)
    assert est.score(X_test, y_test) == 1.0
    est = CLASSIFIERS[name](max_depth=2).fit(X, y)
    assert est.score(X_test, y_test) == 1.0


@pytest.mark.parametrize("name", ["rf", "sporf", "quantile"])
def test_regressors_find_the_string_signal(name):
    X, y = _table(600, seed=0)
    X_test, y_test = _table(400, seed=1)
    noise = np.random.default_rng(2).normal(scale=0.1, size=len(y))
    est = REGRESSORS[name](max_depth=2).fit(X, 3.0 * y + noise)
    assert est.score(X_test, 3.0 * y_test) > 0.95


def test_random_splitter_learns_the_string_signal():
    X, y = _table(600, seed=0)
    X_test, y_test = _table(400, seed=1)
    est = CLASSIFIERS["rf_random"]().fit(X, y)
    assert est.score(X_test, y_test) > 0.95


# -- every estimator ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(ALL))
def test_every_forest_fits_and_predicts_on_a_table(name):
    X, y = _table(300)
    est = _fit(name, X, y)
    assert est.is_categorical_.sum() == 5
    out = _outputs(est, X)
    assert np.isfinite(out).all()
    # missing values and levels never seen in training: no error; a row reads the same
    # whatever its unseen level, and at splits on a categorical column alone (every split
    # of the axis-aligned forests) an unseen level goes with the missing values (inside an
    # oblique projection with numeric terms it is an average level: docs/categorical.md)
    rows = pd.concat([X.iloc[:1]] * 5, ignore_index=True)
    rows["city"] = pd.Series([None, "zz", np.nan, "a", "yy"], dtype=object)
    rows["kind"] = pd.Categorical([None, "new", None, "lo", "other"])
    got = _outputs(est, rows)
    np.testing.assert_array_equal(got[0], got[2])
    np.testing.assert_array_equal(got[1], got[4])
    if not name.startswith(("sporf", "oblique")):  # (None: SPORF's projections)
        np.testing.assert_array_equal(got[0], got[1])
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(_outputs(again, rows), got)
    assert [None if c is None else c.tolist() for c in again.categories_] == [
        None if c is None else c.tolist() for c in est.categories_
    ]


@pytest.mark.parametrize("name", sorted(ALL))
def test_numeric_data_grows_the_same_forest_as_before(name):
    # a DataFrame of numbers, its array, and categorical_features=None: the same forest
    # bytes (the core is given no categorical columns)
    X, y = _numeric()
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])])
    a = _fit(name, X, y)
    b = _fit(name, frame, y)
    c = _fit(name, X, y, categorical_features=None)
    assert a._forest.to_bytes() == b._forest.to_bytes() == c._forest.to_bytes()
    assert not a.is_categorical_.any() and a.categories_ == [None] * X.shape[1]
    np.testing.assert_array_equal(_outputs(a, X), _outputs(b, frame))


def test_pyarrow_tables_are_taken_as_their_dataframes():
    pa = pytest.importorskip("pyarrow")
    X, y = _table()
    table = pa.Table.from_pandas(X, preserve_index=False)
    a = of.SPORFClassifier(10, random_state=0).fit(table, y)
    b = of.SPORFClassifier(10, random_state=0).fit(X, y)
    assert list(a.feature_names_in_) == list(X.columns)
    np.testing.assert_array_equal(a.is_categorical_, b.is_categorical_)
    np.testing.assert_array_equal(a.predict_proba(table), b.predict_proba(X))
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(table))
    # a column with nulls and a dictionary (category) column
    table = pa.table(
        {
            "city": pa.array(["a", None, "b", "c"] * 25),
            "d": pa.array(["u", "v", "u", "w"] * 25).dictionary_encode(),
            "x": pa.array([1.0, None, 3.0, 4.0] * 25),
        }
    )
    est = of.RandomForestClassifier(5, random_state=0).fit(table, np.arange(100) % 2)
    np.testing.assert_array_equal(est.is_categorical_, [True, True, False])
    assert est.categories_[1].tolist() == ["u", "v", "w"]


# -- prediction -------------------------------------------------------------------------------
def test_predict_maps_columns_through_the_fitted_levels():
    # a category dtype with other categories, or strings as objects, give the same codes
    X, y = _table()
    est = of.RandomForestClassifier(10, random_state=0).fit(X, y)
    other = X.copy()
    other["city"] = pd.Categorical(X["city"], categories=list("fedcbaz"))
    other["kind"] = X["kind"].astype(object)
    other["town"] = X["town"].astype(object)
    other["flag"] = X["flag"].astype(object)
    np.testing.assert_array_equal(est.predict_proba(other), est.predict_proba(X))
    np.testing.assert_array_equal(est.apply(other), est.apply(X))


@pytest.mark.parametrize(
    "column",
    [
        ["b", "a", None, "c", "a", np.nan],
        pd.array(["b", "a", None, "c", "a"], dtype="string"),
        pd.array(["b", "a", None, "c"], dtype="string[python]"),
        np.array(["ü", "a", "", "Z", "z", "a"], dtype=object),
        ["1", "2", "10", None],
        [None, None],
        [1, "1", 1.0, True, None],
    ],
)
def test_the_fit_codes_a_column_as_prediction_looks_its_values_up(column):
    # the fit takes text columns' codes from finding their levels; prediction looks each
    # value up among the levels: the same numbers
    from obliqueforest._tables import _codes, _levels_and_codes

    column = pd.Series(column)
    levels, indices = _levels_and_codes(column)
    if indices is not None:
        np.testing.assert_array_equal(
            _codes(column, levels, indices=indices), _codes(column, levels)
        )
    X = pd.DataFrame({"c": column, "x": np.arange(len(column), dtype=float)})
    est = of.RandomForestRegressor(3, random_state=0).fit(X, np.arange(len(column)))
    np.testing.assert_array_equal(est.apply(X), est.apply(X.astype({"c": object})))


def test_an_unseen_level_goes_with_the_missing_values():
    X, y = _table()
    X.loc[X.index[:40], "city"] = None  # the fit sees missing values
    est = of.RandomForestClassifier(20, random_state=0).fit(X, y)
    rows = pd.concat([X.iloc[:1]] * 3, ignore_index=True)
    rows["city"] = [None, "never seen", "b"]
    proba = est.predict_proba(rows)
    np.testing.assert_array_equal(proba[0], proba[1])
    leaves = est.apply(rows)
    np.testing.assert_array_equal(leaves[0], leaves[1])
    # every row unseen, in every categorical column
    rows = X.iloc[:3].copy()
    for column in ("city", "town", "shop"):
        rows[column] = ["x1", "x2", "x3"]
    rows["kind"] = pd.Categorical(["new"] * 3)
    assert est.predict(rows).shape == (3,)


@pytest.mark.parametrize(
    "column, value, match",
    [
        ("city", 1.0, "column 'city' was categorical at fit"),
        ("flag", 1.5, "column 'flag' was categorical at fit"),
        ("x", "a", "column 'x' was numeric at fit"),
        ("code", "1", "column 'code' was numeric at fit"),
    ],
)
def test_a_column_of_another_kind_at_prediction_is_a_value_error(column, value, match):
    X, y = _table()
    est = of.RandomForestClassifier(5, random_state=0).fit(X, y)
    rows = X.iloc[:3].copy()
    rows[column] = pd.Series([value] * 3, dtype="str" if isinstance(value, str) else float)
    with pytest.raises(ValueError, match=match):
        est.predict(rows)
    rows = X.iloc[:3].copy()
    rows["x"] = pd.Categorical(["a", "b", "a"])
    with pytest.raises(ValueError, match="column 'x' was numeric at fit and holds categories"):
        est.predict(rows)
    rows["x"] = pd.Series(["1.5", "a", None], dtype=object)
    with pytest.raises(ValueError, match="'x' was numeric at fit and holds values that are not"):
        est.predict(rows)


def test_integer_coded_levels_refuse_strings_at_prediction():
    X, y = _table()
    est = of.RandomForestClassifier(5, random_state=0, categorical_features=["city", "code"])
    est.fit(X[["city", "code"]], y)
    rows = X[["city", "code"]].iloc[:3].copy()
    rows["code"] = pd.Series(["1", "2", "3"], dtype="str")
    with pytest.raises(ValueError, match="column 'code' held numbers at fit"):
        est.predict(rows)


def test_a_model_of_numeric_columns_names_string_columns_at_prediction():
    X, y = _numeric()
    frame = pd.DataFrame(X, columns=list("abcd"))
    est = of.RandomForestClassifier(5, random_state=0).fit(frame, y)
    frame["b"] = "text"
    with pytest.raises(ValueError, match=r"not numbers: \['b'\].*fitted with them as numeric"):
        est.predict(frame)


def test_column_names_are_checked_as_scikit_learn_checks_them():
    X, y = _table()
    est = of.RandomForestClassifier(5, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="feature names"):
        est.predict(X[list(reversed(X.columns))])
    with pytest.raises(ValueError, match="features"):
        est.predict(X.iloc[:, :3])


def test_a_tree_of_the_forest_reads_the_table():
    X, y = _table()
    forest = of.RandomForestClassifier(5, max_depth=2, random_state=0).fit(X, y)
    tree = forest.estimators_[0]
    assert tree.categories_[0].tolist() == CITIES
    assert tree.predict(X).shape == (len(X),)
    rows = forest.estimators_samples_[0]
    again = clone(tree).fit(X.iloc[rows], y[rows])
    np.testing.assert_array_equal(again.categories_[0], tree.categories_[0])


def test_oob_score_decision_path_and_quantiles_on_a_table():
    X, y = _table()
    est = of.RandomForestClassifier(30, oob_score=True, random_state=0).fit(X, y)
    assert est.oob_score_ > 0.9
    indicator, ptr = est.decision_path(X.iloc[:5])
    assert indicator.shape == (5, ptr[-1])
    reg = REGRESSORS["quantile"](oob_score=True).fit(X, y.astype(float))
    assert reg.predict_quantiles(X.iloc[:5], 0.5).shape == (5,)
    assert reg.oob_quantiles(X, [0.1, 0.9]).shape == (len(X), 2)


def test_isolation_forest_with_a_contamination_and_unsupervised_proximity():
    X, y = _table()
    iso = of.IsolationForest(30, contamination=0.1, random_state=0).fit(X)
    assert set(np.unique(iso.predict(X))) <= {-1, 1}
    urf = of.UnsupervisedRandomForest(20, random_state=0).fit(X)
    assert urf.proximity(X.iloc[:5]).shape == (5, 5)
    assert urf.fit_predict(X, n_clusters=2).shape == (len(X),)


# -- warm starts ---------------------------------------------------------------------------
def test_warm_start_keeps_the_levels_of_the_first_fit():
    X, y = _table()
    est = of.RandomForestClassifier(5, warm_start=True, random_state=0).fit(X, y)
    levels = [c if c is None else c.copy() for c in est.categories_]
    more = X.copy()
    more.loc[more.index[:10], "city"] = "new"  # unseen: goes with the missing values
    est.set_params(n_estimators=10).fit(more, y)
    assert est.n_estimators_ == 10
    for a, b in zip(levels, est.categories_):
        assert (a is None and b is None) or a.tolist() == b.tolist()
    est.set_params(n_estimators=15, categorical_features=None)
    with pytest.raises(ValueError, match="categorical_features"):
        est.fit(X, y)
    assert est.n_estimators_ == 10
    est.set_params(categorical_features="from_dtype")
    bad = X.copy()
    bad["city"] = 1.0
    with pytest.raises(ValueError, match=r"the categorical columns of X are \['town'"):
        est.fit(bad, y)
    bad["city"] = X["city"].astype("category")  # (the same kind: its levels map)
    est.set_params(n_estimators=12).fit(bad, y)
    assert est.n_estimators_ == 12


# -- categorical_features and its errors ---------------------------------------------------
@pytest.mark.parametrize(
    "value, match",
    [
        (["nowhere"], r"categorical_features names \['nowhere'\]"),
        ([7], "categorical_features holds indices"),
        ([-1], "categorical_features holds indices"),
        ([True, False], "categorical_features is a boolean mask of 2 entries"),
        ([1.5], "categorical_features must be"),
        ([[0, 1]], "categorical_features must be"),
        ("city", "categorical_features"),
    ],
)
def test_invalid_categorical_features_is_a_value_error_naming_it(value, match):
    X, y = _table()
    with pytest.raises(ValueError, match=match):
        of.RandomForestClassifier(2, categorical_features=value).fit(X, y)


def test_column_names_need_a_table_with_names():
    X, y = _numeric()
    with pytest.raises(ValueError, match="categorical_features names columns, but X has no"):
        of.RandomForestClassifier(2, categorical_features=["a"]).fit(X, y)


def test_min_category_samples_is_validated():
    X, y = _table()
    with pytest.raises(InvalidParameterError, match="min_category_samples"):
        of.RandomForestClassifier(2, min_category_samples=0).fit(X, y)
    est = of.SPORFClassifier(5, min_category_samples=1, random_state=0).fit(X, y)
    assert est.score(X, y) > 0.9


def test_strings_without_categorical_columns_say_what_to_do():
    X, y = _table()
    with pytest.raises(ValueError, match=r"not numbers: \['city', 'town', 'shop', 'kind'\]"):
        of.RandomForestClassifier(2, categorical_features=None).fit(X, y)
    with pytest.raises(ValueError, match="categorical_features=None takes every column"):
        of.RandomForestClassifier(2, categorical_features=None).fit(X, y)
    with pytest.raises(ValueError, match="pass X as a pandas DataFrame"):
        of.RandomForestClassifier(2).fit(X.to_numpy(), y)
    with pytest.raises(ValueError, match="'town' is numeric .* add it to categorical_features"):
        of.RandomForestClassifier(2, categorical_features=["city"]).fit(X, y)


def test_sparse_X_takes_no_categorical_columns():
    X, y = _numeric()
    S = sparse.csr_matrix(np.nan_to_num(X))
    with pytest.raises(ValueError, match="sparse"):
        of.RandomForestClassifier(2, categorical_features=[0]).fit(S, y)
    est = of.RandomForestClassifier(2, random_state=0).fit(S, y)  # from_dtype: numeric
    assert not est.is_categorical_.any()
    dense = of.RandomForestClassifier(5, random_state=0, categorical_features=[1])
    dense.fit(np.round(np.nan_to_num(X)), y)
    with pytest.raises(ValueError, match="which a sparse X cannot hold"):
        dense.predict(S)


def test_patch_projections_refuse_categorical_columns():
    X, y = _table()
    with pytest.raises(ValueError, match="MORFClassifier takes numeric columns only"):
        of.MORFClassifier(2, data_shape=(7,)).fit(X, y)
    assert "categorical_features" not in of.MORFClassifier().get_params()
    with pytest.raises(ValueError, match="categorical_features"):
        of.ObliqueForestClassifier(Patch(data_shape=(7,)), 2).fit(X, y)


@pytest.mark.parametrize("cls", [of.RotationEnsembleClassifier, of.RotationEnsembleRegressor])
def test_rotation_ensembles_refuse_categorical_columns(cls):
    X, y = _table()
    with pytest.raises(ValueError, match="a rotation mixes columns"):
        cls(10, random_state=0).fit(X, y)
    # numbers and bools in a DataFrame are taken as before
    cls(10, random_state=0).fit(X[["flag", "code", "x"]], y)


# -- the estimator's life ------------------------------------------------------------------
def test_clone_and_get_params_keep_categorical_features():
    est = of.SPORFClassifier(categorical_features=["city"], min_category_samples=3)
    params = clone(est).get_params()
    assert params["categorical_features"] == ["city"]
    assert params["min_category_samples"] == 3
    assert of.RandomForestRegressor().get_params()["categorical_features"] == "from_dtype"


def test_a_model_file_keeps_the_levels(tmp_path):
    X, y = _table()
    est = of.RandomForestClassifier(10, random_state=0).fit(X, y)
    est.save(tmp_path / "m.of")
    loaded = of.load(tmp_path / "m.of")
    np.testing.assert_array_equal(loaded.is_categorical_, est.is_categorical_)
    for a, b in zip(loaded.categories_, est.categories_):
        assert (a is None and b is None) or a.tolist() == b.tolist()
    rows = X.iloc[:5].copy()
    rows["city"] = ["zz", None, "a", "b", "c"]
    np.testing.assert_array_equal(loaded.predict_proba(rows), est.predict_proba(rows))
    numeric, y2 = _numeric()
    plain = of.RandomForestClassifier(5, random_state=0).fit(numeric, y2)
    plain.save(tmp_path / "n.of")
    assert of.load(tmp_path / "n.of").categories_ == [None] * numeric.shape[1]


def _pairs_table(n_levels=40):
    """One categorical column whose every level has two rows, and y its level's effect:
    a column only a forest that scores levels of two rows can split."""
    levels = [f"l{k}" for k in range(n_levels)]
    X = pd.DataFrame({"level": pd.Categorical(np.repeat(levels, 2), levels)})
    effect = np.random.default_rng(3).normal(size=n_levels)
    return X, np.repeat(effect, 2)


@pytest.mark.parametrize(
    "cls", [of.RandomForestRegressor, of.SPORFRegressor, of.ObliqueForestRegressor]
)
def test_regressors_score_levels_of_two_rows_and_classifiers_pool_them(cls):
    X, y = _pairs_table()
    assert cls().min_category_samples == 2
    # (every row once: bootstrap would leave levels of one row)
    kw = {"n_estimators": 5, "bootstrap": False, "random_state": 0}
    fit = cls(**kw).fit(X, y)
    assert fit.score(X, y) > 0.99
    pooled = cls(**kw, min_category_samples=3).fit(X, y)
    assert np.ptp(pooled.predict(X)) == 0  # every level pooled: no split
    # (each tree of a forest, estimators_)
    assert ObliqueTreeRegressor().min_category_samples == 2
    for classifier in (of.RandomForestClassifier, of.SPORFClassifier, ObliqueTreeClassifier):
        assert classifier().min_category_samples == 3


def test_a_model_file_keeps_min_category_samples_at_either_default(tmp_path):
    from obliqueforest import _io

    X, y = _pairs_table()
    for value in (2, 3):
        est = of.RandomForestRegressor(5, min_category_samples=value, random_state=0).fit(X, y)
        est.save(tmp_path / "m.of")
        assert _io._plain_params(est)["min_category_samples"] == value
        assert of.load(tmp_path / "m.of").min_category_samples == value
    # a model of numeric columns at its default holds no trace of them; at another
    # value it records it
    numeric = pd.DataFrame({"x": np.arange(80.0)})
    plain = of.RandomForestRegressor(5, random_state=0).fit(numeric, y)
    assert not {"min_category_samples", "categorical_features"} & set(_io._plain_params(plain))
    plain.set_params(min_category_samples=3).fit(numeric, y)
    assert _io._plain_params(plain)["min_category_samples"] == 3
    # a file written when every file left the parameters out at 3 (before regressors'
    # default became 2) loads a model with categorical columns as fitted with 3
    saved = {"n_estimators": 5}
    old = _io._params(of.RandomForestRegressor, saved, None, categorical=True)
    assert old.min_category_samples == 3
    assert _io._params(of.RandomForestRegressor, saved, None).min_category_samples == 2
