"""The rotation and weighting math of the regularized rotation ensembles (Blaser &
Fryzlewicz): Haar rotations, the rotation of (scaled, possibly sparse) data, tree
complexity (Eq. 5) and the weighting schemes (Eqs. 6-7, Sect. 5) with their allocation of
trees. Plain functions of arrays; the estimators in :mod:`obliqueforest.rotation` (fitting
in ``_rotation_base``) call them.

References
----------
.. [1] R. Blaser and P. Fryzlewicz, "Regularizing axis-aligned ensembles via
   data rotations that favor simpler learners", Statistics and Computing 31,
   15 (2021).
.. [3] T. Anderson, I. Olkin and L. Underhill, "Generation of random
   orthogonal matrices", SIAM J. Sci. Stat. Comput. 8 (1987), 625-629.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse
from threadpoolctl import ThreadpoolController

from ._forest import _F32_MAX

__all__ = [
    "WEIGHTINGS",
    "allocate_trees",
    "cut_weights",
    "exp_weights",
    "haar_rotation",
    "linear_weights",
    "rotate",
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
    ``offset`` a row of shape (n_features,) added to every row. ``@ rotation`` is then a
    sparse-dense product plus ``offset @ rotation``: the rotated data are dense (that is
    their nature), X never is."""

    def __init__(self, S, offset):
        self.S, self.offset = S.tocsr(), offset

    @property
    def shape(self):
        return self.S.shape

    def __matmul__(self, rotation):
        return np.asarray(self.S @ rotation) + self.offset @ rotation


_BLAS_LIBRARIES = None


def one_blas_thread():
    """A context in which BLAS runs on one thread, as threadpoolctl's
    ``threadpool_limits(limits=1, user_api="blas")``, with the scan of the loaded libraries
    (about 3 ms, far more than a rotation's product on small data) done once per process.
    The thread count changes no product's value, only who computes it."""
    global _BLAS_LIBRARIES
    if _BLAS_LIBRARIES is None:
        _BLAS_LIBRARIES = ThreadpoolController()
    return _BLAS_LIBRARIES.limit(limits=1, user_api="blas")


def rotate(X_scaled, rotation, order="C"):
    """``X_scaled @ rotation`` as the float32 the core takes: one matrix product.

    ``order="F"`` gives the rotated data in the column order the core grows trees on, which
    it borrows at any width (row-major data of more than 16 features it copies in every
    call); the values are the same, only the float64 product's cast is laid out otherwise.

    A rotated coordinate is missing (NaN) when a feature with a nonzero weight in it is
    missing: the projection rule of every oblique split (terms of weight 0, as in the
    identity rotation, are left out, so the identity keeps each feature's own missingness).

    Raises ValueError when the rotated data leave float32's range (X itself has no
    infinity, so only unscaled data near float32's limits can).
    """
    # (scaled sparse X holds no NaN; its product with the dense rotation is dense)
    missing = None if isinstance(X_scaled, _ScaledSparse) else np.isnan(X_scaled)
    if missing is not None and missing.any():
        rotated = np.where(missing, 0.0, X_scaled) @ rotation
        rotated[(missing.astype(np.float64) @ (rotation != 0)) > 0] = np.nan
    else:
        rotated = X_scaled @ rotation
    with np.errstate(over="ignore"):
        out = np.asarray(rotated, dtype=np.float32, order=order)
    if np.isinf(out).any():
        raise ValueError(
            f"a rotation maps X to values up to {np.nanmax(np.abs(rotated)):.3g} in magnitude, "
            f"beyond float32's range ({_F32_MAX:.3g}) in which the engine computes; rescale "
            "X (e.g. divide it by a constant) or use scaling='minmax' or 'rank'"
        )
    return out


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
    q, r = np.linalg.qr(gauss)
    signs = np.sign(np.diag(r))
    signs[signs == 0] = 1.0
    return q * signs


def tree_complexity(n_nodes, depth, n_samples):
    """Tree complexity ``C = #nodes + depth / N`` (Eq. 5 of [1]_).

    The depth only breaks ties between trees with the same number of nodes,
    since ``depth <= N``.

    Parameters
    ----------
    n_nodes : array-like of shape (n_trees,)
        Number of nodes per tree.
    depth : array-like of shape (n_trees,)
        Depth per tree.
    n_samples : int
        Number N of training samples.

    Returns
    -------
    complexity : ndarray of shape (n_trees,)
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
