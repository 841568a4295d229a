"""Reconstruction distortion (Vu et al., Sect. 5)."""

from __future__ import annotations

import sys

import numpy as np

from .._tables import categorical_mask
from ._codec import _is_dataframe


def _missing(values):
    """Which entries of an object array are missing (None, NaN, ``pd.NA``, ``NaT``)."""
    pd = sys.modules.get("pandas")
    if pd is not None:
        return np.asarray(pd.isna(values), dtype=bool)
    return np.array([v is None or v != v for v in values], dtype=bool)


# --------------------------------------------------------------------------- #
# Distortion (Sect. 5)                                                          #
# --------------------------------------------------------------------------- #
def distortion(X_true, X_pred, *, categorical_features=None, per_column=False):
    """Reconstruction distortion of Vu et al. (2025), Sect. 5.

    The mean over columns of ``1 − R²`` for numeric columns (the share of
    variance left unexplained, ``SS_res / SS_tot``, clipped to [0, 1] so that
    a reconstruction worse than the column mean counts as 1) and the error rate
    for categorical columns. The result lies in [0, 1]; 0 is a perfect
    reconstruction.

    Parameters
    ----------
    X_true, X_pred : ndarray or DataFrame of shape (n_samples, n_features)
        Original and reconstructed data, same columns. With DataFrames,
        ``category``, ``object``, string and ``bool`` columns are categorical (the
        forests' ``categorical_features="from_dtype"``). In a categorical column a
        missing value reconstructed as missing is no error.
    categorical_features : array-like of bool or int, default=None
        Mask or indices of categorical columns; overrides the dtypes.
    per_column : bool, default=False
        Return the per-column distortions instead of their mean.

    Returns
    -------
    distortion : float or ndarray of shape (n_features,)

    References
    ----------
    .. [1] Vu et al., "Autoencoding random forests", Sect. 5 and Appx. B.1.
    """
    if _is_dataframe(X_true):
        cols_true = [X_true[c].to_numpy() for c in X_true.columns]
        cat = categorical_mask("from_dtype", X_true)
    else:
        arr = np.asarray(X_true)
        arr = arr.reshape(-1, 1) if arr.ndim == 1 else arr
        cols_true = [arr[:, j] for j in range(arr.shape[1])]
        cat = np.array([arr.dtype.kind in "OUSb"] * arr.shape[1], dtype=bool)
    if _is_dataframe(X_pred):
        cols_pred = [X_pred[c].to_numpy() for c in X_pred.columns]
    else:
        arr = np.asarray(X_pred)
        arr = arr.reshape(-1, 1) if arr.ndim == 1 else arr
        cols_pred = [arr[:, j] for j in range(arr.shape[1])]
    if len(cols_true) != len(cols_pred):
        raise ValueError(f"X_true has {len(cols_true)} columns but X_pred has {len(cols_pred)}")
    if categorical_features is not None:
        mask = np.asarray(categorical_features)
        if mask.dtype != bool:
            idx, mask = mask, np.zeros(len(cols_true), dtype=bool)
            mask[idx] = True
        cat = mask
    scores = np.empty(len(cols_true))
    for j, (t, p) in enumerate(zip(cols_true, cols_pred)):
        if len(t) != len(p):
            raise ValueError("X_true and X_pred must have the same number of rows")
        if cat[j]:
            t, p = np.asarray(t, dtype=object), np.asarray(p, dtype=object)
            t_missing, p_missing = _missing(t), _missing(p)
            wrong = t_missing != p_missing
            present = ~(t_missing | p_missing)
            wrong[present] = t[present] != p[present]
            scores[j] = np.mean(wrong)
            continue
        t = np.asarray(t, dtype=np.float64)
        p = np.asarray(p, dtype=np.float64)
        ss_res = np.sum((t - p) ** 2)
        ss_tot = np.sum((t - t.mean()) ** 2)
        if ss_tot == 0:
            scores[j] = 0.0 if ss_res == 0 else 1.0
        else:
            scores[j] = min(ss_res / ss_tot, 1.0)
    return scores if per_column else float(scores.mean())
