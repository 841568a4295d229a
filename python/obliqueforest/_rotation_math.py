"""The rotation and weighting math of the regularized rotation ensembles (Blaser &
Fryzlewicz): Haar rotations, the per-feature scaling fitted before rotating
(:class:`ScalingMixin`, shared by the ensembles and their trees), the rotation of
(scaled, possibly sparse) data, tree complexity (Eq. 5) and the weighting schemes
(Eqs. 6-7, Sect. 5) with their allocation of trees. Plain functions of arrays; the
estimators in :mod:`obliqueforest.rotation` (fitting in ``_rotation_base``, trees in
``_rotation_trees``) call them.

References
----------
.. [1] R. Blaser and P. Fryzlewicz, "Regularizing axis-aligned ensembles via
   data rotations that favor simpler learners", Statistics and Computing 31,
   15 (2021).
.. [3] T. Anderson, I. Olkin and L. Underhill, "Generation of random
   orthogonal matrices", SIAM J. Sci. Stat. Comput. 8 (1987), 625-629.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
from scipy import sparse
from threadpoolctl import ThreadpoolController

from sklearn.utils.validation import check_is_fitted

from . import _core
from ._tables import as_frame, numeric_columns
from ._validation import _F32_MAX, SPARSE_FORMATS, _validate_data, resolve_n_jobs

__all__ = [
    "WEIGHTINGS",
    "ScalingMixin",
    "allocate_trees",
    "cut_weights",
    "exp_weights",
    "haar_rotation",
    "linear_weights",
    "rotate",
    "rotate_columns",
    "tree_complexity",
]

WEIGHTINGS = ("rre", "cut", "exp", "bst", "new", "lin", "oob", "jnt")
"""The weighting schemes of Blaser & Fryzlewicz (2021), Sect. 5."""


def _canonical_csc(X):
    """Sparse X as CSC with duplicate entries summed (scipy's meaning of them)."""
    X = X.tocsc(copy=True)
    X.sum_duplicates()
    return X


def _column_values(X, j):
    """The distinct values of column j of X, dense or canonical CSC (unstored zeros
    included)."""
    if not sparse.issparse(X):
        return np.unique(X[:, j])
    stored = X.data[X.indptr[j] : X.indptr[j + 1]]
    implicit = [0.0] if stored.size < X.shape[0] else []
    return np.unique(np.concatenate([stored, implicit]))


class _ScaledSparse:
    """The scaled copy of sparse X, kept sparse: ``S + offset`` with ``S`` sparse (CSR) and
    ``offset`` a row of shape (n_features,) added to every row. Its rotation
    (:meth:`rotated`) is then a sparse-dense product plus ``offset @ rotation``: the rotated
    data are dense (that is their nature), X never is."""

    def __init__(self, S, offset):
        S = S.tocsr()
        S.sum_duplicates()  # (also sorts each row's entries: the order the products sum in)
        self.S, self.offset = S, np.ascontiguousarray(offset, dtype=np.float64)
        # the core's CSR arrays, converted once for every rotation
        self._csr = (
            np.asarray(S.indptr, dtype=np.int64),
            np.asarray(S.indices, dtype=np.int64),
            np.asarray(S.data, dtype=np.float64),
        )

    @property
    def shape(self):
        return self.S.shape

    def rotated(self, rotation, fortran):
        """``(S + offset) @ rotation`` as float32, the same on every machine."""
        return _core.rotate_csr(
            self.S.shape[0],
            *self._csr,
            self.offset,
            np.ascontiguousarray(rotation, dtype=np.float64),
            fortran,
        )


# how the rotation estimators take X (scaled in float64, then rotated to float32)
_X_CHECKS = dict(dtype=np.float64, accept_sparse=SPARSE_FORMATS, ensure_all_finite="allow-nan")


class ScalingMixin:
    """The per-feature scaling applied before rotating (Sect. 6 of [1]_), fitted on the
    training data and applied to X at predict time: mixed into the rotation ensembles and
    their trees, which read X the same way.

    ``scaling`` (a parameter) chooses it at fit; the fitted state is ``_scale_min`` and
    ``_scale_span`` ("minmax") or ``_rank_values`` ("rank"), and prediction applies the
    scaling that state describes, whatever ``scaling`` says after the fit.
    """

    #: The fitted scaling's attributes (fit state of a transactional fit).
    _SCALING_STATE = frozenset({"_scale_min", "_scale_span", "_rank_values"})

    #: Why the rotation estimators take numeric columns only (their error says it).
    _numeric_only_why = "a rotation mixes columns, which means nothing for categories"

    def _fit_scaling(self, X):
        """Fits the scaling on X (the training range and values of the present, non-NaN
        entries; a column missing everywhere scales as a constant one) and returns X
        scaled."""
        if self.scaling == "minmax":
            if sparse.issparse(X):  # (sparse X holds no NaN)
                lo = X.min(axis=0).toarray().ravel()
                span = X.max(axis=0).toarray().ravel() - lo
            else:  # NaN (missing) left out
                lo = np.fmin.reduce(X, axis=0)
                span = np.fmax.reduce(X, axis=0) - lo
                lo[np.isnan(lo)] = 0.0
            span[(span == 0) | np.isnan(span)] = 1.0
            self._scale_min, self._scale_span = lo, span
        elif self.scaling == "rank":
            if sparse.issparse(X):
                columns = _canonical_csc(X)
                values = [_column_values(columns, j) for j in range(X.shape[1])]
            else:  # NaN (missing) left out

                def present_values(j):
                    c = X[:, j]
                    return np.unique(c[~np.isnan(c)]) if np.isnan(c).any() else np.unique(c)

                values = _each_column(present_values, X.shape[1], X.size, self._scaling_threads())
                values = [v if v.size else np.zeros(1) for v in values]
            self._rank_values = values
        return self._scale(X)

    def _scaling_threads(self) -> int:
        """Threads the rank scaling's columns may use: the estimator's ``n_jobs`` (one for
        an estimator without it)."""
        return resolve_n_jobs(getattr(self, "n_jobs", None))

    def _fitted_scaling(self):
        """The kind of scaling the fit left: "minmax", "rank" or None."""
        if "_scale_min" in self.__dict__:
            return "minmax"
        if "_rank_values" in self.__dict__:
            return "rank"
        return None

    def _scale(self, X):
        """X (validated, float64) scaled as the training data were."""
        if sparse.issparse(X):
            return self._scale_sparse(X)
        kind = self._fitted_scaling()
        if kind == "minmax":
            return (X - self._scale_min) / self._scale_span
        if kind == "rank":
            out = np.empty_like(X, dtype=np.float64)

            def scale_column(j):
                values = self._rank_values[j]
                if values.size == 1:
                    out[:, j] = np.where(np.isnan(X[:, j]), np.nan, 0.0)
                else:
                    # A training value maps to its (dense) rank / (n_unique - 1);
                    # new values interpolate between neighbours and clip to [0, 1].
                    out[:, j] = np.interp(X[:, j], values, np.linspace(0.0, 1.0, values.size))

            _each_column(scale_column, len(self._rank_values), X.size, self._scaling_threads())
            return out
        return np.asarray(X, dtype=np.float64)

    def _scale_sparse(self, X):
        """:meth:`_scale` of sparse X as a :class:`_ScaledSparse` (equal to the dense
        scaling up to floating-point rounding): every unstored zero of column j scales to
        the same value ``offset[j]``, and a stored value v to ``offset[j] + S[i, j]``."""
        X = _canonical_csc(X)
        kind = self._fitted_scaling()
        if kind == "minmax":
            offset = -self._scale_min / self._scale_span
            return _ScaledSparse(X @ sparse.diags(1.0 / self._scale_span), offset)
        if kind == "rank":
            offset = np.empty(X.shape[1])
            S = X.astype(np.float64)
            for j, values in enumerate(self._rank_values):
                a, b = S.indptr[j], S.indptr[j + 1]
                if values.size == 1:
                    offset[j] = 0.0
                    S.data[a:b] = 0.0
                else:
                    grid = np.linspace(0.0, 1.0, values.size)
                    offset[j] = np.interp(0.0, values, grid)
                    S.data[a:b] = np.interp(S.data[a:b], values, grid) - offset[j]
            return _ScaledSparse(S, offset)
        return _ScaledSparse(X, np.zeros(X.shape[1]))

    def _validate_fit_data(self, X, y, **kwargs):
        """scikit-learn's checks of a fit's X and y as the rotation estimators take them
        (X float64, CSR/CSC kept sparse, NaN a missing value, infinity refused; y one or
        several columns). Numeric columns only: a rotation mixes columns, which means
        nothing for categories; a column that is not numbers is an error naming it."""
        X = as_frame(X)
        with numeric_columns(self, X, fitting=True):
            return _validate_data(self, X, y, multi_output=True, **_X_CHECKS, **kwargs)

    def _scaled_input(self, X):
        """X validated against the fit and scaled as the training data were."""
        check_is_fitted(self)
        X = as_frame(X)
        with numeric_columns(self, X, fitting=False):
            X = _validate_data(self, X, reset=False, **_X_CHECKS)
        return self._scale(X)


_BLAS_LIBRARIES = None


# The rank scaling of fewer values than this runs on the calling thread (threads cost more
# than they save on small data).
_PARALLEL_SCALING_VALUES = 1 << 16


def _each_column(function, n_columns, n_values, n_jobs):
    """``[function(j) for j in range(n_columns)]``, on up to ``n_jobs`` threads when the
    data hold at least ``_PARALLEL_SCALING_VALUES`` values: NumPy's sorts, ``interp`` and
    ufuncs release the GIL, and every column is computed alone, so the results are the
    same on any number of threads."""
    n_jobs = n_jobs if n_values >= _PARALLEL_SCALING_VALUES else 1
    return map_in_threads(function, range(n_columns), n_jobs)


def map_in_threads(function, items, n_jobs, on_interrupt=None):
    """``[function(item) for item in items]`` in order, with up to ``n_jobs`` concurrent
    calls when n_jobs > 1.

    An exception while waiting (Ctrl-C: Python handles signals in the main thread only)
    calls ``on_interrupt`` (e.g. a ``Progress``'s ``cancel``, which stops core calls in
    the worker threads), drops the calls not started and waits for the running ones, so
    no thread keeps computing after it.
    """
    items = list(items)
    if n_jobs <= 1 or len(items) <= 1:
        return [function(item) for item in items]
    executor = ThreadPoolExecutor(max_workers=min(n_jobs, len(items)))
    try:
        return list(executor.map(function, items))
    except BaseException:
        if on_interrupt is not None:
            on_interrupt()
        raise
    finally:
        executor.shutdown(wait=True, cancel_futures=True)


def one_blas_thread():
    """A context in which BLAS runs on one thread, as threadpoolctl's
    ``threadpool_limits(limits=1, user_api="blas")``, with the scan of the loaded libraries
    (about 3 ms, far more than a rotation's product on small data) done once per process.
    The thread count changes no product's value, only who computes it."""
    global _BLAS_LIBRARIES
    if _BLAS_LIBRARIES is None:
        _BLAS_LIBRARIES = ThreadpoolController()
    return _BLAS_LIBRARIES.limit(limits=1, user_api="blas")


def rotate(X_scaled, rotation, order="C", n_jobs=None):
    """``X_scaled @ rotation`` as the float32 the core takes: one matrix product, on
    ``n_jobs`` threads for dense X (the same values on any number).

    ``order="F"`` gives the rotated data in the column order the core grows trees on, which
    it borrows at any width (row-major data of more than 16 features it copies in every
    call); the values are the same, only the float64 product's cast is laid out otherwise.

    A rotated coordinate is missing (NaN) when a feature with a nonzero weight in it is
    missing: the projection rule of every oblique split (terms of weight 0, as in the
    identity rotation, are left out, so the identity keeps each feature's own missingness).

    Raises ValueError when the rotated data leave float32's range (X itself has no
    infinity, so only unscaled data near float32's limits can).
    """
    # The core sums every product in one fixed order (numpy's BLAS picks its kernels, and
    # so its rounding, by processor: the same seed grew other trees on other machines).
    # (scaled sparse X holds no NaN; its product with the dense rotation is dense)
    fortran = order == "F"
    rotation = np.ascontiguousarray(rotation, dtype=np.float64)
    if isinstance(X_scaled, _ScaledSparse):
        out = X_scaled.rotated(rotation, fortran)
    else:
        X_rows = np.ascontiguousarray(X_scaled, dtype=np.float64)
        out = _core.rotate(X_rows, rotation, fortran, n_jobs)
    if np.isinf(out).any():
        raise ValueError(
            f"a rotation maps X to values beyond float32's range ({_F32_MAX:.3g}) in which "
            "the engine computes; rescale X (e.g. divide it by a constant) or use "
            "scaling='minmax' or 'rank'"
        )
    return out


def rotate_columns(X_scaled, rotations, n_jobs=None):
    """``[X_scaled @ Q for Q in rotations]``, column-major, from one product of X with the
    rotations side by side (``X @ [Q_1 ... Q_B]``, the core's p x B*p case of ``rotate``):
    each rotated copy is a column-major block of the one result, so the same values as
    ``rotate(X_scaled, Q, "F")`` one by one (every value sums its own column's terms in
    the same order) from one pass over X, a row's sums of all the rotations computed
    while the row is in registers, and one call for the batch instead of one a rotation,
    its rotations' columns shared among ``n_jobs`` threads.
    """
    rotations = np.asarray(rotations, dtype=np.float64)
    n_rotations, p, m = rotations.shape
    if n_rotations == 0:
        return []
    # (p, B*m): rotation b's columns at b*m .. (b+1)*m
    joined = rotations.transpose(1, 0, 2).reshape(p, n_rotations * m)
    out = rotate(X_scaled, joined, "F", n_jobs)
    return [out[:, b * m : (b + 1) * m] for b in range(n_rotations)]


# --------------------------------------------------------------------------- helpers


def haar_rotation(n_features, rng):
    """Draw an orthogonal matrix from the Haar (uniform) distribution on O(p).

    The Q factor of the QR decomposition of a standard Gaussian matrix, with
    each column's sign fixed so that ``R`` has a positive diagonal; without
    that correction the distribution of Q is not uniform [3]_.

    Parameters
    ----------
    n_features : int
        The dimension p.
    rng : numpy.random.Generator
        Source of randomness.

    Returns
    -------
    Q : ndarray of shape (n_features, n_features)
        An orthogonal matrix; the data are rotated as ``X @ Q``.
    """
    gauss = rng.standard_normal((n_features, n_features))
    # (Householder reflections in the core, in one order on every machine, not LAPACK's)
    return _core.orthogonal_factor(gauss)


def tree_complexity(n_nodes, depth, n_samples):
    """Tree complexity ``C = #nodes + depth / N`` (Eq. 5 of [1]_).

    The depth only breaks ties between trees with the same number of nodes,
    since ``depth <= N``.

    Parameters
    ----------
    n_nodes : array-like of shape (n_trees,) (or any shape, elementwise)
        Number of nodes per tree.
    depth : array-like of the same shape
        Depth per tree.
    n_samples : int
        Number N of training samples.

    Returns
    -------
    complexity : ndarray of the inputs' shape
    """
    return np.asarray(n_nodes, dtype=np.float64) + np.asarray(depth, dtype=np.float64) / n_samples


def exp_weights(n_rotations, h):
    """Exponential weights with half-life ``h`` (Eq. 7 of [1]_).

    ``w(r) = 2^(-r/h) (2^(1/h) - 1) / (1 - 2^(-R/h))`` for ranks
    ``r = 1..R``, evaluated in a form that stays finite for tiny and huge h.

    Parameters
    ----------
    n_rotations : int
        Number R of ranked rotations.
    h : float
        Positive half-life: small h puts almost everything on the top rotation,
        large h approaches equal weights.

    Returns
    -------
    weights : ndarray of shape (n_rotations,)
        Non-increasing, summing to 1.
    """
    rate = np.log(2.0) / h
    ranks = np.arange(n_rotations, dtype=np.float64)
    # 2^(-r/h)(2^(1/h)-1) = 2^(-(r-1)/h)(1-2^(-1/h)); both fractions via expm1.
    weights = np.exp(-rate * ranks) * (-np.expm1(-rate)) / (-np.expm1(-rate * n_rotations))
    return weights / weights.sum()


def cut_weights(n_rotations, h):
    """Equal weights on the top ``h`` rotations (Eq. 6 of [1]_).

    Parameters
    ----------
    n_rotations : int
        Number R of ranked rotations.
    h : int
        Cut-off in ``[1, R]``.

    Returns
    -------
    weights : ndarray of shape (n_rotations,)
    """
    h = int(h)
    weights = np.zeros(n_rotations)
    weights[:h] = 1.0 / h
    return weights


def linear_weights(n_rotations):
    """Linearly decreasing weights ``R, R-1, ..., 1`` normalised to sum 1 (LIN/OOB/JNT).

    Parameters
    ----------
    n_rotations : int

    Returns
    -------
    weights : ndarray of shape (n_rotations,)
    """
    weights = np.arange(n_rotations, 0, -1, dtype=np.float64)
    return weights / weights.sum()


def allocate_trees(weights, n_estimators):
    """Turn non-increasing weights into whole numbers of trees summing to ``n_estimators``.

    Each weight times M is rounded half up; missing trees are added to the
    top rotation and surplus trees are removed one at a time from the worst
    rotation that still has trees (Sect. 3.1 of [1]_). Rounding is monotone
    and both corrections keep the counts non-increasing.

    Parameters
    ----------
    weights : array-like of shape (n_rotations,)
        Non-increasing, non-negative weights in rank order, summing to 1.
    n_estimators : int
        Total number M of trees.

    Returns
    -------
    counts : ndarray of int64 of shape (n_rotations,)
        Non-increasing tree counts in rank order, summing to ``n_estimators``.
    """
    weights = np.asarray(weights, dtype=np.float64)
    counts = np.floor(weights * n_estimators + 0.5).astype(np.int64)
    # Guard against tiny float noise breaking monotonicity of equal weights.
    counts = np.minimum.accumulate(counts)
    missing = n_estimators - int(counts.sum())
    if missing > 0:
        counts[0] += missing
    while missing < 0:
        counts[np.flatnonzero(counts)[-1]] -= 1
        missing += 1
    return counts


def _default_h_grid(weighting, n_rotations):
    if weighting == "cut":
        return np.arange(1, n_rotations + 1, dtype=np.float64)
    return np.geomspace(0.1, 10.0 * n_rotations, 60)


def _scheme_weights(weighting, n_rotations, h):
    if weighting == "cut":
        return cut_weights(n_rotations, h)
    return exp_weights(n_rotations, h)
