"""Tabular codec: numeric arrays or mixed DataFrames <-> float code matrices."""

from __future__ import annotations

import numpy as np


# --------------------------------------------------------------------------- #
# Tabular codec: numeric arrays or mixed DataFrames <-> float code matrices    #
# --------------------------------------------------------------------------- #
def _is_dataframe(X):
    return hasattr(X, "columns") and hasattr(X, "dtypes") and hasattr(X, "iloc")


def _is_categorical_dtype(dtype):
    import pandas as pd

    return (
        isinstance(dtype, pd.CategoricalDtype)
        or pd.api.types.is_bool_dtype(dtype)
        or pd.api.types.is_object_dtype(dtype)
        or pd.api.types.is_string_dtype(dtype)
    )


def _sorted_categories(values):
    uniq = list(dict.fromkeys(values.tolist()))
    try:
        return sorted(uniq)
    except TypeError:
        return sorted(uniq, key=str)


class _TabularCodec:
    """Converts a DataFrame with numeric and categorical columns to float codes.

    Categorical columns (``category``, ``object``, string and ``bool`` dtypes)
    become integer codes ``0..n_categories-1`` (the dtype's category order for
    ``category`` columns, sorted values otherwise), which is how they enter the
    trees; :meth:`decode` maps codes back to the original values and dtypes.
    """

    def fit(self, frame):
        import pandas as pd

        self.columns = list(frame.columns)
        self.dtypes = list(frame.dtypes)
        self.categories = []
        for name, dtype in zip(self.columns, self.dtypes):
            col = frame[name]
            if col.isna().any():
                raise ValueError(f"column {name!r} has missing values; impute them first")
            if isinstance(dtype, pd.CategoricalDtype):
                self.categories.append(list(dtype.categories))
            elif pd.api.types.is_bool_dtype(dtype):
                self.categories.append([False, True])
            elif _is_categorical_dtype(dtype):
                self.categories.append(_sorted_categories(col.to_numpy()))
            elif pd.api.types.is_numeric_dtype(dtype):
                self.categories.append(None)
            else:
                raise TypeError(f"column {name!r} has unsupported dtype {dtype}")
        return self

    @property
    def categorical(self):
        return np.array([c is not None for c in self.categories], dtype=bool)

    @property
    def n_categories(self):
        return np.array([0 if c is None else len(c) for c in self.categories], dtype=np.int64)

    def encode(self, frame):
        import pandas as pd

        out = np.empty((len(frame), len(self.columns)), dtype=np.float64)
        for j, (name, cats) in enumerate(zip(self.columns, self.categories)):
            col = frame[name]
            if col.isna().any():
                raise ValueError(f"column {name!r} has missing values; impute them first")
            if cats is None:
                out[:, j] = col.to_numpy(dtype=np.float64)
                continue
            values = col.astype(object).to_numpy()
            codes = pd.Categorical(values, categories=cats).codes
            if (codes < 0).any():
                unseen = sorted({str(v) for v in values[codes < 0]})[:5]
                raise ValueError(f"column {name!r} has categories unseen in fit: {unseen}")
            out[:, j] = codes
        return out

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
            idx = np.clip(np.rint(col), 0, len(cats) - 1).astype(np.int64)
            if isinstance(dtype, pd.CategoricalDtype):
                data[name] = pd.Series(pd.Categorical.from_codes(idx, dtype=dtype), index=index)
            else:
                values = np.empty(len(cats), dtype=object)
                values[:] = cats
                data[name] = pd.Series(values[idx], index=index).astype(dtype)
        return pd.DataFrame(data, index=index, columns=self.columns)
