"""Input checks and conversions shared by every estimator of the package.

scikit-learn's ``validate_data`` (refusing sparse y), the target columns of a fit, the one
``n_jobs`` rule, and X as the core takes it (:func:`core_X`: float32, or a sparse matrix's
canonical nonzeros), with the checks the core cannot make on data it is handed.
"""

from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np
from joblib.parallel import get_active_backend
from scipy import sparse
from sklearn.exceptions import DataConversionWarning
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import validate_data

from . import _core

__all__ = [
    "SPARSE_FORMATS",
    "CoreSparse",
    "as_float32",
    "check_sparse_structure",
    "core_X",
    "resolve_n_jobs",
    "target_columns",
    "warn_missing_oob",
]


def check_sparse_structure(X):
    """Checks the arrays of a scipy sparse matrix or array before any scipy routine reads
    them: scipy's compiled routines (``has_canonical_format``, ``sum_duplicates``,
    ``tocsr``) trust them, and read out of bounds (a crash of the interpreter) when they were
    corrupted after construction, e.g. ``X.indptr[3] = 10**9``. CSR, CSC and BSR: ``indptr``
    1-D of length major + 1, from 0, never decreasing, ending at the number of stored
    entries, and every index within the shape; COO: row and column indices within the
    shape. Other formats hold Python objects scipy checks itself. Dense X passes.

    Raises
    ------
    ValueError
        Naming the first broken array.
    """
    if not sparse.issparse(X):
        return
    fmt = X.format
    shape = X.shape
    if len(shape) != 2 or min(shape) < 0:
        raise ValueError(f"sparse X has shape {shape}; a 2-D shape is needed")

    def bad(what):
        raise ValueError(f"sparse X ({fmt}, shape {shape}) is corrupt: {what}")

    def in_range(idx, bound, name):
        idx = np.asarray(idx)
        if idx.ndim != 1 or idx.dtype.kind not in "iu":
            bad(f"{name} must be a 1-D integer array")
        if idx.size and (idx.min() < 0 or idx.max() >= bound):
            bad(f"{name} holds values out of range [0, {bound})")

    if fmt in ("csr", "csc", "bsr"):
        block = X.blocksize if fmt == "bsr" else (1, 1)
        if fmt == "csc":
            n_major, n_minor = shape[1], shape[0]
        else:
            n_major, n_minor = shape[0] // block[0], shape[1] // block[1]
        indptr = np.asarray(X.indptr)
        n_stored = len(X.indices)
        if indptr.ndim != 1 or indptr.dtype.kind not in "iu" or len(indptr) != n_major + 1:
            bad(f"indptr must be a 1-D integer array of {n_major + 1} entries")
        if indptr[0] != 0 or indptr[-1] != n_stored or (np.diff(indptr) < 0).any():
            bad(f"indptr must rise from 0 to the {n_stored} stored entries without decreasing")
        if len(X.data) != n_stored:
            bad(f"{len(X.data)} values for {n_stored} indices")
        in_range(X.indices, n_minor, "indices")
    elif fmt == "coo":
        rows, cols = X.coords if hasattr(X, "coords") else (X.row, X.col)
        if not (len(rows) == len(cols) == len(X.data)):
            bad("row, column and data arrays of different lengths")
        in_range(rows, shape[0], "row indices")
        in_range(cols, shape[1], "column indices")


def _validate_data(est, *args, **kwargs):
    """scikit-learn's ``validate_data``, after the structure of a sparse X is checked
    (:func:`check_sparse_structure`), refusing a sparse y with a ValueError as
    scikit-learn's forests do (its own check raises TypeError). Its finiteness check sums
    the data, which overflows on finite values near float32's limits: that says nothing
    about the data (each value is still checked), so numpy's warning is silenced."""
    X = kwargs.get("X", args[0] if args else None)
    check_sparse_structure(X)
    if len(args) > 1 and sparse.issparse(args[1]):
        raise ValueError(
            "sparse multilabel-indicator for y is not supported: the forests take dense "
            "targets (pass y.toarray())"
        )
    with np.errstate(over="ignore", invalid="ignore"):
        return validate_data(est, *args, **kwargs)


_F32_MAX = float(np.finfo(np.float32).max)


def target_columns(y):
    """``y`` as (n_samples, n_outputs) for a fit: a 1-D y is one column, a column vector
    (n_samples, 1) too but with scikit-learn's DataConversionWarning; the forests then
    behave as single-output ones (1-D predictions)."""
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        warnings.warn(
            "A column-vector y was passed when a 1d array was expected. Please change the "
            "shape of y to (n_samples,), for example using ravel().",
            DataConversionWarning,
            stacklevel=3,
        )
    y = y.reshape(y.shape[0], -1)
    if y.shape[1] == 0:
        raise ValueError("y has no columns (shape (n_samples, 0)); give at least one target")
    return y


def encode_classes(column):
    """The sorted classes of one target column and each row's class code as float64, as
    ``np.unique(column, return_inverse=True)`` gives them; integer labels spanning a range
    not much wider than the rows are counted in O(n) instead of sorted (a second at 10^7
    rows)."""
    column = np.asarray(column)
    if column.dtype.kind in "iu" and column.size:
        low, high = column.min(), column.max()
        span = int(high) - int(low) + 1
        if span <= max(2 * column.size, 1024):
            # (small integer types may not hold the span: subtract in 64 bits then)
            wide = np.iinfo(column.dtype).max >= span - 1
            shifted = ((column if wide else column.astype(np.int64)) - low).astype(
                np.intp, copy=False
            )
            present = np.flatnonzero(np.bincount(shifted, minlength=span))
            code_of = np.zeros(span, dtype=np.float64)
            code_of[present] = np.arange(present.size, dtype=np.float64)
            big = np.uint64 if column.dtype.kind == "u" else np.int64
            classes = (present.astype(big) + big(low)).astype(column.dtype)
            return classes, code_of[shifted]
    classes, inverse = np.unique(column, return_inverse=True)
    return classes, inverse.astype(np.float64)


def class_targets(y, oob_score):
    """A classifier's targets ``y`` (n_samples x n_outputs, as :func:`target_columns` gives
    them) checked to be classes and encoded: ``(classes, codes)``, the sorted classes (one
    array, or a list of one per output) and each row's class codes as the core reads them
    (float64; n_samples, or n_samples x n_outputs), one array kept through the fit rather
    than also the integer codes and their stacked copy. Raises scikit-learn's ValueError
    for targets that are not classes, and for multiclass-multioutput targets when
    ``oob_score``."""
    check_classification_targets(y if y.shape[1] > 1 else y[:, 0])
    classes, codes = [], []
    for o in range(y.shape[1]):
        c, code = encode_classes(y[:, o])
        classes.append(c)
        codes.append(code)
        del code
    y_enc = codes[0] if len(codes) == 1 else np.stack(codes, axis=1)
    del codes
    if oob_score and type_of_target(y_enc) == "multiclass-multioutput":
        raise ValueError(
            "The type of target cannot be used to compute OOB estimates. Got "
            "multiclass-multioutput while only the following are supported: continuous, "
            "continuous-multioutput, binary, multiclass, multilabel-indicator."
        )
    return (classes[0] if y.shape[1] == 1 else classes), y_enc


def warn_missing_oob(counts, stacklevel=4):
    """scikit-learn's warning when some rows were in every tree's bootstrap sample."""
    if (counts == 0).any():
        warnings.warn(
            "Some inputs do not have OOB scores. This probably means too few trees were "
            "used to compute any reliable OOB estimates.",
            UserWarning,
            stacklevel=stacklevel,
        )


def resolve_n_jobs(n_jobs) -> int:
    """Threads for ``n_jobs``, the package's one rule (``_core.n_threads``): None -> the
    ``n_jobs`` of an enclosing ``joblib.parallel_config(n_jobs=...)``, else 1 (as in
    scikit-learn), -1 -> all cores, -2 -> all but one, ...; counts above the cores are
    capped at the cores, as joblib does; 0 is a ValueError.

    (joblib's ``effective_n_jobs`` is not used: inside multiprocessing workers it forces 1,
    which is about joblib's process pools, not the core's threads.)
    """
    if n_jobs is None:
        n_jobs = get_active_backend()[1]
    return _core.n_threads(n_jobs)


def as_float32(X, order="C"):
    """Casts validated float data to float32 in the given memory order (one copy at most),
    refusing values float32 cannot hold."""
    # fmin and fmax need no temporary and skip NaN (a missing value); infinity passes on
    # to the core, which names it
    big = (
        max(abs(np.fmin.reduce(X, axis=None)), abs(np.fmax.reduce(X, axis=None)))
        if X.dtype != np.float32 and X.size
        else 0.0
    )
    if np.isfinite(big) and big > _F32_MAX:
        raise ValueError(
            "X has values too large for float32 (|x| > 3.4e38); the forests compute in float32"
        )
    return np.asarray(X, dtype=np.float32, order=order)


# The sparse formats the forests take without densifying X (validate_data converts others).
SPARSE_FORMATS = ["csr", "csc"]


class CoreSparse(NamedTuple):
    """Sparse X as the core reads it: scipy's CSR or CSC arrays in canonical form (sorted,
    unique indices) with uint64 indptr, uint32 indices and float32 data."""

    format: str
    shape: tuple
    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray


def core_X(X, order="C"):
    """X as the core takes it: dense X through :func:`as_float32`; a scipy CSR/CSC matrix or
    array as a :class:`CoreSparse` (nonzeros only, never densified), duplicate entries
    summed first as scipy sums them (in X's dtype, before the cast to float32)."""
    if not sparse.issparse(X):
        return as_float32(X, order)
    check_sparse_structure(X)
    if X.format not in SPARSE_FORMATS:
        X = X.tocsr()
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()  # also sorts each row's (column's) indices
    n_minor = X.shape[1] if X.format == "csr" else X.shape[0]
    if n_minor > 2**32:
        raise ValueError(f"sparse X has shape {X.shape}; at most 2**32 rows and columns")
    indices = X.indices
    if indices.dtype == np.int32:
        # non-negative in a valid matrix: reinterpreted, not copied (a negative one becomes
        # an index out of range, which the core rejects)
        indices = indices.view(np.uint32)
    else:
        # checked before the cast, which would wrap an index out of range into range
        if indices.size and (indices.min() < 0 or indices.max() >= n_minor):
            raise ValueError(f"sparse X has an index out of range for its shape {X.shape}")
        indices = indices.astype(np.uint32)
    return CoreSparse(
        X.format,
        X.shape,
        np.ascontiguousarray(X.indptr, dtype=np.uint64),
        np.ascontiguousarray(indices),
        np.ascontiguousarray(as_float32(X.data)),
    )
