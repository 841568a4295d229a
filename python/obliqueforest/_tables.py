"""Tables as the forests take them: which columns are categorical, and each categorical
column as its level codes.

The core splits categorical columns itself (``_core.ForestParams(categorical=...)``: per
column its number of levels, 0 for a numeric one) and reads them in the float matrix it
is given as level codes 0..L-1, NaN for a missing value. This module is the one place
that turns a table into that matrix:

* :func:`categorical_mask` resolves ``categorical_features`` against X, with
  scikit-learn HistGradientBoosting's conventions and errors naming the parameter;
* :func:`fit_columns` records each categorical column's levels on the estimator (its
  private ``_categories``, read through ``categories_`` and ``is_categorical_``) and
  returns X with those columns coded;
* :func:`predict_columns` codes X with the fitted levels. A value that is not a level
  (a category never seen in training) is coded one past the column's last level, a code
  no split's level map holds: at a split on the column alone its rows go with the missing
  values, inside an oblique projection it reads as an average level; never an error.

X without categorical columns passes through untouched: its conversion to float stays
scikit-learn's ``validate_data``, and the estimator keeps no ``_categories``, so models of
numeric data (their forests, pickles and files) are what they always were.
A coded DataFrame stays a DataFrame with X's column names (a float block, no copy), so
scikit-learn's checks of feature names and counts see the columns the user passed.
:func:`numeric_columns` turns the conversion error of a column that is not numbers
("could not convert string to float") into one that names the column and says what to do.
"""

from __future__ import annotations

import contextlib
import sys

import numpy as np
from scipy import sparse
from sklearn.utils.validation import _check_feature_names, _check_n_features, _get_feature_names

#: The attributes a fit records of X's columns, as the estimators' docstrings list them
#: (between their ``n_features_in_`` and what follows).
COLUMNS_DOC = """\
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Column names, when X was a DataFrame with string column names.
    is_categorical_ : ndarray of bool of shape (n_features_in_,)
        Which columns were categorical at fit (``categorical_features``).
    categories_ : list of n_features_in_ entries
        Per column, None for a numeric one, else the ndarray of its levels: a category
        dtype's categories, or the sorted distinct values seen at fit. Column j's values
        reach the core as their index in ``categories_[j]``; a value not in it (a
        category never seen in training) is no error: it goes with the missing values at
        a split on its column alone, and reads as an average level in an oblique one.
"""

__all__ = [
    "as_frame",
    "categorical_mask",
    "categorical_of",
    "column_levels",
    "core_categorical",
    "fit_columns",
    "numeric_columns",
    "predict_columns",
]


def _pandas():
    """pandas, which categorical columns need (a DataFrame's user has it)."""
    try:
        import pandas
    except ImportError:  # pragma: no cover - pandas is in the test extra
        raise ValueError(
            "categorical columns need pandas (pip install pandas); encode them as numbers "
            "or install it"
        ) from None
    return pandas


def _is_frame(X) -> bool:
    pd = sys.modules.get("pandas")
    return pd is not None and isinstance(X, pd.DataFrame)


def as_frame(X):
    """A pyarrow Table or RecordBatch as a pandas DataFrame (column names kept, dictionary
    columns as ``category``); any other X as it is."""
    pa = sys.modules.get("pyarrow")
    if pa is not None and isinstance(X, (pa.Table, pa.RecordBatch)):
        return X.to_pandas()
    return X


def _as_2d(X):
    """X (after :func:`as_frame`) as a DataFrame, a 2-D array or sparse matrix, or None when
    it is not one (scikit-learn's checks then say what is wrong). A list of rows that
    mixes strings with numbers becomes an object array, not an array of strings."""
    if _is_frame(X) or sparse.issparse(X):
        return X
    try:
        arr = X if isinstance(X, np.ndarray) else np.asarray(X)
        if arr.dtype.kind in "US" and not isinstance(X, np.ndarray):
            arr = np.asarray(X, dtype=object)
    except (TypeError, ValueError):
        return None
    return arr if arr.ndim == 2 else None


# -- kinds of columns --------------------------------------------------------------------
def _categorical_dtype(dtype) -> bool:
    """Whether "from_dtype" takes a column of this dtype as categorical: category, object,
    string (pandas' "str" included) and bool."""
    if isinstance(dtype, np.dtype):
        return dtype.kind in "OUSb"
    pd = _pandas()
    types = pd.api.types
    return (
        isinstance(dtype, pd.CategoricalDtype)
        or types.is_object_dtype(dtype)
        or types.is_string_dtype(dtype)
        or types.is_bool_dtype(dtype)
    )


def _is_strings(dtype) -> bool:
    """A string dtype (numpy's U/S, pandas' "str" and "string"), not object."""
    if isinstance(dtype, np.dtype):
        return dtype.kind in "US"
    types = _pandas().api.types
    return types.is_string_dtype(dtype) and not types.is_object_dtype(dtype)


def _is_numbers(dtype) -> bool:
    """A numeric dtype that is not bool (int, float, their nullable pandas forms)."""
    if isinstance(dtype, np.dtype):
        return dtype.kind in "iufc"
    types = _pandas().api.types
    return types.is_numeric_dtype(dtype) and not types.is_bool_dtype(dtype)


def _numeric_levels(levels) -> bool:
    return levels.dtype.kind in "iuf"


# -- categorical_features ------------------------------------------------------------------
_EXPECTED = (
    "categorical_features must be 'from_dtype', None, or an array-like of column names, "
    "of integer column indices, or a boolean mask of length n_features"
)


def categorical_mask(value, X) -> np.ndarray:
    """The categorical columns of X by ``categorical_features``: a bool array of shape
    (n_features,).

    "from_dtype": a DataFrame's columns of dtype category, object, string or bool (a
    numpy array's columns are all numeric); None: no column; else column names (X must
    have them), integer indices, or a boolean mask of length n_features.

    Raises
    ------
    ValueError
        Naming ``categorical_features``: names X does not have (or X has none), indices
        out of range, a mask of another length, anything else; or categorical columns of
        sparse X.
    """
    n = X.shape[1]
    mask = np.zeros(n, dtype=bool)
    if value is None:
        return mask
    if isinstance(value, str):
        if value != "from_dtype":
            raise ValueError(f"{_EXPECTED}; got {value!r}")
        if _is_frame(X):
            mask[:] = [_categorical_dtype(d) for d in X.dtypes]
        return mask
    try:
        values = np.asarray(value)
    except (TypeError, ValueError):
        raise ValueError(f"{_EXPECTED}; got {value!r}") from None
    if values.ndim != 1:
        raise ValueError(f"{_EXPECTED}; got an array of shape {values.shape}")
    if values.size == 0:
        pass
    elif values.dtype.kind == "b":
        if values.size != n:
            raise ValueError(
                f"categorical_features is a boolean mask of {values.size} entries; X has "
                f"{n} features"
            )
        mask[:] = values
    elif values.dtype.kind in "iu":
        bad = values[(values < 0) | (values >= n)]
        if bad.size:
            raise ValueError(
                f"categorical_features holds indices {bad.tolist()} out of range for X's "
                f"{n} features (0 to {n - 1})"
            )
        mask[values] = True
    elif all(isinstance(v, str) for v in values):
        names = _get_feature_names(X)
        if names is None:
            raise ValueError(
                "categorical_features names columns, but X has no column names (a "
                "DataFrame's string column names): give integer indices or a boolean mask"
            )
        unknown = sorted(set(values.tolist()) - set(names.tolist()))
        if unknown:
            raise ValueError(f"categorical_features names {unknown}, which are not columns of X")
        mask[:] = np.isin(names, values)
    else:
        raise ValueError(f"{_EXPECTED}; got {value!r}")
    if mask.any() and sparse.issparse(X):
        raise ValueError(
            "categorical_features marks columns of a sparse X as categorical; sparse "
            "matrices hold numbers only: pass a dense X (a DataFrame) for categorical "
            "columns, or categorical_features=None"
        )
    return mask


# -- coding --------------------------------------------------------------------------------
def _column(X, j):
    return X.iloc[:, j] if _is_frame(X) else X[:, j]


def _name(est, X, j) -> str:
    names = getattr(est, "feature_names_in_", None)
    if names is None:
        names = _get_feature_names(X)
    return f"column {names[j]!r}" if names is not None else f"column {j}"


def _learn_levels(column) -> np.ndarray:
    """A categorical column's levels: a category dtype's categories (in order), [False,
    True] for bools, else the sorted distinct values present (missing ones left out; in
    order of appearance when they do not compare)."""
    return _levels_and_codes(column)[0]


def _levels_and_codes(column):
    """``(levels, codes)``: the column's levels (:func:`_learn_levels`), and each row's
    index in them (-1 where missing) when finding the levels gave them (text levels: the
    indices a lookup of the values gives), else None."""
    pd = _pandas()
    dtype = column.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        return np.asarray(dtype.categories), None
    if pd.api.types.is_bool_dtype(dtype):
        return np.array([False, True]), None
    try:
        codes, uniques = pd.factorize(column, sort=True)
    except TypeError:
        codes, uniques = pd.factorize(column, sort=False)
    levels = np.asarray(uniques)
    if levels.size and all(isinstance(v, (bool, np.bool_)) for v in levels):
        return np.array([False, True]), None
    if pd.api.types.infer_dtype(levels, skipna=False) != "string":
        return levels, None  # (other values may compare equal across types: look them up)
    return levels, np.asarray(codes)


def column_levels(column) -> np.ndarray:
    """The levels :func:`fit_columns` records for a categorical column (a pandas Series or
    a 1-D array): a category dtype's categories, [False, True] for bools, else the sorted
    distinct values (in order of appearance when they do not compare).

    The distinct values of row blocks concatenated in row order give the levels of the
    whole column: Dask's partitions mode fixes a column's levels this way before its
    workers grow trees (:mod:`obliqueforest.dask`).
    """
    return _learn_levels(column)


def _codes(column, levels, unseen=np.nan, indices=None) -> np.ndarray:
    """Each value's index in ``levels`` as float64: NaN where it is missing, ``unseen``
    where it is not a level. ``indices``: the indices already found (-1 where missing,
    :func:`_levels_and_codes`), not looked up again."""
    pd = _pandas()
    if indices is not None:
        codes = indices
    elif isinstance(column.dtype, pd.CategoricalDtype):
        # the categories mapped once, then each row by its category's code
        of_category = np.append(pd.Index(levels).get_indexer(column.cat.categories), -1)
        codes = of_category[np.asarray(column.cat.codes)]
    else:
        codes = pd.Index(levels).get_indexer(column)
    out = codes.astype(np.float64)
    out[codes < 0] = unseen
    out[np.asarray(pd.isna(column), dtype=bool)] = np.nan
    return out


def _numbers(column, where) -> np.ndarray:
    """A numeric column as float64 (NaN for missing values).

    Raises
    ------
    ValueError
        Naming the column when its values are not numbers.
    """
    try:
        if hasattr(column, "to_numpy"):
            return column.to_numpy(dtype=np.float64, na_value=np.nan)
        return np.asarray(column, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise ValueError(
            f"X {where} is numeric (not in categorical_features) but holds values that "
            f"are not numbers ({e}): add it to categorical_features, or encode it as "
            "numbers"
        ) from e


def _coded(X, mask, levels_of, numeric):
    """X with column j coded through ``levels_of(j, column)`` where ``mask[j]``, and the
    others converted by ``numeric(j, column)``: float32 when every numeric column is
    float32, else float64; a DataFrame with X's columns when X is one."""
    n, p = X.shape
    dtypes = list(X.dtypes) if _is_frame(X) else [X.dtype] * p
    wide = any(not m and d != np.float32 for m, d in zip(mask, dtypes))
    out = np.empty((n, p), dtype=np.float64 if wide else np.float32, order="F")
    for j in range(p):
        column = _column(X, j)
        out[:, j] = levels_of(j, column) if mask[j] else numeric(j, column)
    if _is_frame(X):
        return _pandas().DataFrame(out, columns=X.columns, copy=False)
    return out


def fit_columns(est, X, warm=False):
    """X for a fit: sets ``est._categories`` (per column None or its levels, from
    ``est.categorical_features``; None for an estimator without it) when some column is
    categorical and returns X with those columns coded; returns X as given (a pyarrow
    Table as a DataFrame) when none is. A warm start (``warm``) keeps the fitted levels
    and codes X through them, and refuses data whose categorical columns are others.
    """
    X = as_frame(X)
    value = getattr(est, "categorical_features", None)
    if not warm and (value is None or (isinstance(value, str) and not _is_frame(X))):
        return X  # every column numeric, as scikit-learn converts them
    X2 = _as_2d(X)
    if X2 is None:
        return X  # not a table: scikit-learn's checks say why
    if warm:
        return _warm_columns(est, X, X2, value)
    mask = categorical_mask(value, X2)
    if not mask.any():
        return X
    # each categorical column's levels found as it is coded (its codes come with them),
    # one column's codes alive at a time
    levels = [None] * len(mask)

    def codes(j, column):
        levels[j], indices = _levels_and_codes(column)
        return _codes(column, levels[j], indices=indices)

    out = _coded(X2, mask, codes, lambda j, column: _numbers(column, _name(est, X2, j)))
    est._categories = levels
    return out


def _warm_columns(est, X, X2, value):
    _check_columns(est, X2)
    fitted = categorical_of(est)
    mask = categorical_mask(value, X2)
    if not np.array_equal(mask, fitted):
        names = _get_feature_names(X2)
        names = names if names is not None else np.arange(len(mask))
        raise ValueError(
            f"warm_start: with categorical_features={value!r} the categorical columns of X "
            f"are {names[mask].tolist()}, those of the fitted forest "
            f"{names[np.asarray(fitted)].tolist()}; a warm start takes the columns of the "
            "first fit, of the same kinds (or refit with warm_start=False)"
        )
    # a level the first fit did not see is missing in the trees grown now (the core takes
    # no code past a column's levels at fit)
    return predict_columns(est, X, unseen=np.nan)


def _check_columns(est, X2):
    """scikit-learn's errors for X of another width or other column names than the fit's,
    raised before the columns are read (its warnings are left to ``validate_data``)."""
    _check_n_features(est, X2, reset=False)
    fitted_names = getattr(est, "feature_names_in_", None)
    names = _get_feature_names(X2)
    if fitted_names is not None and names is not None and not np.array_equal(names, fitted_names):
        _check_feature_names(est, X2, reset=False)


def predict_columns(est, X, unseen=None):
    """X for a prediction of ``est``: its categorical columns coded through the levels of
    the fit (a value that is not a level is coded ``unseen``, by default one past the
    column's last level, which no split's level map holds), the others as numbers; X as
    given (a pyarrow Table as a DataFrame) when the model has no categorical column.

    Raises
    ------
    ValueError
        Naming the column: a categorical column of strings, categories or bools at fit
        that comes as numbers, or a numeric one that comes as strings; sparse X for a model
        with categorical columns.
    """
    X = as_frame(X)
    levels = getattr(est, "_categories", None)
    if levels is None:
        return X
    mask = categorical_of(est)
    if sparse.issparse(X):
        raise ValueError(
            f"{type(est).__name__} was fitted with categorical columns "
            f"{np.flatnonzero(mask).tolist()}, which a sparse X cannot hold: pass a dense "
            "X (a DataFrame)"
        )
    X2 = _as_2d(X)
    if X2 is None:
        return X  # scikit-learn's checks name the problem
    _check_columns(est, X2)

    def categorical(j, column):
        if _numeric_levels(levels[j]) and _is_strings(column.dtype):
            raise ValueError(
                f"X {_name(est, X2, j)} held numbers at fit (categorical, levels "
                f"{_some(levels[j])}) and holds strings (dtype {column.dtype}) now: pass "
                "it as at fit"
            )
        if not _numeric_levels(levels[j]) and _is_numbers(column.dtype):
            raise ValueError(
                f"X {_name(est, X2, j)} was categorical at fit (levels {_some(levels[j])}) "
                f"and is numeric (dtype {column.dtype}) now: pass it as at fit (strings, "
                "category or bool)"
            )
        # a level never seen in training: the code past the last level, which no node's map
        # holds (at a split on the column alone it goes with the missing values; inside an
        # oblique projection it is an average level)
        return _codes(column, levels[j], len(levels[j]) if unseen is None else unseen)

    def numeric(j, column):
        if _is_strings(column.dtype) or (
            isinstance(column.dtype, _pandas().CategoricalDtype)
            and not _is_numbers(column.dtype.categories.dtype)
        ):
            raise ValueError(
                f"X {_name(est, X2, j)} was numeric at fit and holds categories (dtype "
                f"{column.dtype}) now: pass it as numbers, as at fit"
            )
        try:
            return _numbers(column, _name(est, X2, j))
        except ValueError as e:
            raise ValueError(
                f"X {_name(est, X2, j)} was numeric at fit and holds values that are not "
                f"numbers now ({e.__cause__ or e}): pass it as numbers, as at fit"
            ) from None

    return _coded(X2, mask, categorical, numeric)


def _some(levels) -> str:
    shown = ", ".join(repr(v.item() if isinstance(v, np.generic) else v) for v in levels[:5])
    return f"[{shown}{', ...' if len(levels) > 5 else ''}]"


def core_categorical(est):
    """The ``categorical`` of :func:`obliqueforest._params.core_params` for a fit: per
    column its levels (None for a numeric one), or None when every column is numeric."""
    return getattr(est, "_categories", None)


def categorical_of(est) -> np.ndarray:
    """``is_categorical_`` of a fitted estimator: which columns have levels."""
    categories = getattr(est, "_categories", None)
    if categories is None:
        return np.zeros(est.n_features_in_, dtype=bool)
    return np.array([c is not None for c in categories], dtype=bool)


# -- errors of columns that are not numbers ------------------------------------------------
def _non_numeric(X) -> list:
    """The names (or indices) of X's columns that do not convert to numbers."""
    X2 = _as_2d(as_frame(X))
    if X2 is None or sparse.issparse(X2):
        return []
    names = _get_feature_names(X2)
    out = []
    for j in range(X2.shape[1]):
        column = _column(X2, j)
        if getattr(column, "dtype", None) is not None and column.dtype.kind == "c":
            continue  # complex: scikit-learn's own error names it
        try:
            _numbers(column, "")
        except ValueError:
            out.append(names[j] if names is not None else j)
    return out


@contextlib.contextmanager
def numeric_columns(est, X, fitting):
    """Around scikit-learn's conversion of X to float: a conversion that fails on columns
    that are not numbers (strings, say) raises a ValueError naming them and saying how
    ``est`` takes them instead."""
    try:
        yield
    except ValueError as e:  # (a TypeError, e.g. a dict in X, stays scikit-learn's)
        columns = _non_numeric(X)
        if not columns:
            raise
        X2 = _as_2d(as_frame(X))
        if not fitting and hasattr(est, "n_features_in_"):
            _check_columns(est, X2)  # other columns than the fit's: say that first
        raise ValueError(
            f"X has columns that are not numbers: {columns} ({e}). {_hint(est, X, fitting)}"
        ) from e


def _hint(est, X, fitting) -> str:
    name = type(est).__name__
    if not fitting:
        return f"{name} was fitted with them as numeric columns: pass them as numbers, as at fit"
    if "categorical_features" not in est.get_params(deep=False):
        why = getattr(est, "_numeric_only_why", "")
        return (
            f"{name} takes numeric columns only{f' ({why})' if why else ''}: encode them as "
            "numbers (e.g. scikit-learn's OrdinalEncoder or OneHotEncoder), or use a forest "
            "that splits on categories (RandomForest*, SPORF*, ObliqueForest*)"
        )
    value = est.categorical_features
    if value is None:
        return (
            "categorical_features=None takes every column as numeric: leave it at "
            "'from_dtype' to split on these columns' categories, or encode them as numbers"
        )
    if isinstance(value, str) and not _is_frame(as_frame(X)):
        return (
            "categorical_features='from_dtype' reads the categorical columns from a "
            "DataFrame's dtypes, and takes a numpy array's columns as numeric: pass X as a "
            "pandas DataFrame (or pyarrow Table), or give the categorical columns in "
            "categorical_features (integer indices or a boolean mask)"
        )
    return "add them to categorical_features, or encode them as numbers"
