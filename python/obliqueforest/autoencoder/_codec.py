"""Tabular codec: numeric arrays or mixed DataFrames <-> float code matrices.

Which columns are categorical, their levels and their codes are the forest estimators'
(:mod:`obliqueforest._tables`, ``categorical_features="from_dtype"``), so the autoencoder's
forest splits them as a forest fitted on the same DataFrame does, and a forest fitted on
it reads the autoencoder's codes.
"""

from __future__ import annotations

import numpy as np

from .._tables import categorical_mask, fit_columns, predict_columns


def _is_dataframe(X):
    return hasattr(X, "columns") and hasattr(X, "dtypes") and hasattr(X, "iloc")


def _as_levels(levels):
    """A column's levels as the array ``_tables`` codes through: arrays as they are, a list
    (from a model file or an earlier pickle) of strings as an object array, of bools, ints
    or floats as an array of that type."""
    if isinstance(levels, np.ndarray):
        return levels
    if any(isinstance(v, str) for v in levels):
        return np.asarray(levels, dtype=object)
    return np.asarray(levels)


class _TabularCodec:
    """Converts a DataFrame with numeric and categorical columns to float codes.

    Categorical columns are those the forests take from a DataFrame's dtypes (category,
    object, string and bool); a column's levels are a category dtype's categories,
    ``[False, True]`` for bools, else its sorted distinct values; it becomes the level
    codes ``0..n_categories-1``, NaN for a missing value and, at :meth:`encode`, for a
    value that is not a level (a category never seen in fit), which the forest sends with
    the missing values. :meth:`decode` maps codes back to the original values and dtypes
    (NaN to a missing value).

    The codec is the "estimator" :func:`obliqueforest._tables.fit_columns` and
    :func:`~obliqueforest._tables.predict_columns` record and read the levels on
    (``categorical_features``, ``_categories``, ``n_features_in_``), so there is one
    implementation of the dtype rules, the levels' order and the coding.

    Attributes
    ----------
    columns : list
        The column names, in order.
    dtypes : list
        Each column's dtype at fit (what :meth:`decode` returns).
    categories : list
        Per column its levels (an array, or a list once read from a model file), None for
        a numeric column; model files save them.
    """

    categorical_features = "from_dtype"

    def fit_encode(self, frame):
        """Learns the columns' kinds and levels from ``frame``; returns its codes, float64
        of shape (n_samples, n_features).

        Raises
        ------
        TypeError
            For a numeric-looking column of a dtype that is not numbers (dates, say).
        ValueError
            For a categorical column without a value.
        """
        import pandas as pd

        self.columns = list(frame.columns)
        self.dtypes = list(frame.dtypes)
        self.categories = [None] * len(self.columns)
        mask = categorical_mask(self.categorical_features, frame)
        for name, dtype, categorical in zip(self.columns, self.dtypes, mask):
            if not categorical and not pd.api.types.is_numeric_dtype(dtype):
                raise TypeError(f"column {name!r} has unsupported dtype {dtype}")
        codes = self._floats(fit_columns(self, frame))
        for name, levels in zip(self.columns, self.categories):
            if levels is not None and len(levels) == 0:
                raise ValueError(f"column {name!r} has no values (every entry is missing)")
        return codes

    @property
    def _categories(self):
        if all(c is None for c in self.categories):
            return None
        return [None if c is None else _as_levels(c) for c in self.categories]

    @_categories.setter
    def _categories(self, levels):
        self.categories = list(levels)

    @property
    def n_features_in_(self):
        return len(self.columns)

    @property
    def categorical(self):
        return np.array([c is not None for c in self.categories], dtype=bool)

    @property
    def n_categories(self):
        return np.array([0 if c is None else len(c) for c in self.categories], dtype=np.int64)

    def encode(self, frame, native=True):
        """The codes of ``frame`` through the fitted levels, float64 of shape (n_samples,
        n_features). A level never seen in training is coded as the estimators code it
        when the forest splits the categorical columns itself (``native``), else (a forest
        grown on the codes as numbers: a model file from before native splits, or a forest
        without categorical columns) as missing, never as a number past the last code.

        Raises
        ------
        ValueError
            Naming the column: a categorical column given as numbers or a numeric one as
            strings (the estimators' errors).
        """
        return self._floats(predict_columns(self, frame, unseen=None if native else np.nan))

    @staticmethod
    def _floats(coded):
        if _is_dataframe(coded):
            return coded.to_numpy(dtype=np.float64, na_value=np.nan)
        return np.asarray(coded, dtype=np.float64)

    def decode(self, codes, index=None):
        import pandas as pd

        data = {}
        for j, (name, dtype, cats) in enumerate(zip(self.columns, self.dtypes, self.categories)):
            col = codes[:, j]
            if cats is None:
                if pd.api.types.is_integer_dtype(dtype):
                    col = np.rint(col)
                data[name] = pd.Series(col, index=index).astype(dtype)
                continue
            missing = np.isnan(col)
            idx = np.clip(np.rint(np.where(missing, 0, col)), 0, len(cats) - 1).astype(np.int64)
            if isinstance(dtype, pd.CategoricalDtype):
                idx[missing] = -1
                data[name] = pd.Series(pd.Categorical.from_codes(idx, dtype=dtype), index=index)
            else:
                values = np.empty(len(cats) + 1, dtype=object)
                values[:-1] = list(cats)
                values[-1] = None
                idx[missing] = len(cats)
                data[name] = pd.Series(values[idx], index=index).astype(dtype)
        return pd.DataFrame(data, index=index, columns=self.columns)
