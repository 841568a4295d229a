"""Regularized random-rotation ensembles (Blaser & Fryzlewicz).

A rotation ensemble grows ordinary axis-aligned trees on randomly rotated
copies of the (scaled) data. The regularized variant first grows a small
*micro-forest* of ``micro_forest_size`` trees on each of ``n_rotations``
rotations (the identity always among them), measures how complex the trees
of each rotation are, ranks the rotations from simplest to most complex and
then spreads the ``n_estimators`` trees of the final ensemble over the
rotations with a non-increasing weighting scheme (Blaser & Fryzlewicz 2019,
Algorithm 1). Simple trees on a rotation indicate that the rotation aligns
the decision boundary with the axes.

All trees are grown by the Rust core (``obliqueforest._core.Forest``), one
call per micro-forest and at most one more call per rotation; this module
only orchestrates: it draws the rotations, rotates the data with one matrix
product per rotation, ranks, weights and averages.

References
----------
.. [1] R. Blaser and P. Fryzlewicz, "Regularizing axis-aligned ensembles via
   data rotations that favor simpler learners", Statistics and Computing 31,
   15 (2021).
.. [2] R. Blaser and P. Fryzlewicz, "Random rotation ensembles", Journal of
   Machine Learning Research 17 (2016), 1-26.
.. [3] T. Anderson, I. Olkin and L. Underhill, "Generation of random
   orthogonal matrices", SIAM J. Sci. Stat. Comput. 8 (1987), 625-629.
"""

from __future__ import annotations

import contextvars
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
from scipy import sparse
from scipy.stats import rankdata
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, _fit_context
from sklearn.metrics import accuracy_score, r2_score
from sklearn.preprocessing import LabelEncoder
from sklearn.utils import check_random_state, compute_sample_weight
from sklearn.utils._param_validation import Interval, RealNotInt, StrOptions
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import _check_sample_weight, check_is_fitted
from threadpoolctl import threadpool_limits

from . import _core
from ._forest import (
    _F32_MAX,
    SPARSE_FORMATS,
    TREE_PARAM_CONSTRAINTS,
    _validate_data,
    resolve_n_jobs,
    target_columns,
)
from ._trees import labels_of, output_blocks, per_output_table
from ._params import core_params


__all__ = [
    "WEIGHTINGS",
    "RotationEnsembleClassifier",
    "RotationEnsembleRegressor",
    "allocate_trees",
    "cut_weights",
    "exp_weights",
    "haar_rotation",
    "linear_weights",
    "tree_complexity",
]

WEIGHTINGS = ("rre", "cut", "exp", "bst", "new", "lin", "oob", "jnt")
"""The weighting schemes of Blaser & Fryzlewicz (2021), Sect. 5."""

# Schemes whose rotation ranking is by complexity (all but "oob" and "jnt").
_NEEDS_OOB_RANKING = ("oob", "jnt")
_TUNED_BY_H = ("cut", "exp")
# Above this many bytes the rotated copies are recomputed instead of cached.
_CACHE_BUDGET_BYTES = 256 * 2**20
_MAX_SEED = np.iinfo(np.int32).max

# Set (only) by obliqueforest.dask around a fit: an object that grows each rotation's
# forest on a cluster worker from the scaled data it received once (``share``):
# ``fit(rotation, params)`` returns a new core forest, ``fit_more(forest, rotation,
# params)`` extends one to ``params.n_estimators`` trees, as Forest.fit_more would.
ROTATION_RUNNER: contextvars.ContextVar = contextvars.ContextVar("rotation_runner", default=None)


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


def rotate(X_scaled, rotation):
    """``X_scaled @ rotation`` as the float32 the core takes: one matrix product.

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
        out = np.ascontiguousarray(rotated, dtype=np.float32)
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


# --------------------------------------------------------------------------- base class


class _BaseRotationEnsemble(BaseEstimator):
    """Shared fitting and prediction logic; see the public estimators."""

    _parameter_constraints: ClassVar[dict] = {
        "n_estimators": [Interval(Integral, 1, None, closed="left")],
        "n_rotations": [Interval(Integral, 1, None, closed="left")],
        "micro_forest_size": [Interval(Integral, 1, None, closed="left")],
        "weighting": [StrOptions(set(WEIGHTINGS))],
        "h": [Interval(Real, 0, None, closed="neither"), None],
        "h_grid": ["array-like", None],
        "h_criterion": [StrOptions({"weighted_oob", "ensemble_oob"})],
        "scaling": [StrOptions({"minmax", "rank"}), None],
        **TREE_PARAM_CONSTRAINTS,
        "max_features": [
            Interval(Integral, 1, None, closed="left"),
            Interval(RealNotInt, 0.0, 1.0, closed="right"),  # axis-aligned: at most p
            StrOptions({"sqrt", "log2"}),
            None,
        ],
        "oob_score": ["boolean"],
    }

    # ---- parameter checks that depend on several parameters

    def _check_combined_params(self):
        if (
            self.weighting == "cut"
            and self.h is not None
            and (float(self.h) != int(self.h) or self.h > self.n_rotations)
        ):
            raise ValueError(
                "For weighting='cut', h must be an integer in [1, n_rotations="
                f"{self.n_rotations}], got h={self.h!r}."
            )
        needs_oob = (
            self.weighting in _NEEDS_OOB_RANKING
            or (self.weighting in _TUNED_BY_H and self.h is None)
            or self.oob_score
        )
        if needs_oob and not self.bootstrap:
            raise ValueError(
                "Out-of-bag estimates need bootstrap=True: weighting="
                f"{self.weighting!r} (h={self.h!r}) and oob_score={self.oob_score} use them."
            )
        if self.h_grid is not None:
            grid = np.asarray(self.h_grid, dtype=np.float64).ravel()
            if grid.size == 0 or not np.all(np.isfinite(grid)) or np.any(grid <= 0):
                raise ValueError("h_grid must be a non-empty list of positive finite numbers.")
            if self.weighting == "cut" and (
                np.any(grid != np.floor(grid)) or np.any(grid > self.n_rotations)
            ):
                raise ValueError(
                    "For weighting='cut', h_grid must hold integers in [1, n_rotations]."
                )

    # ---- scaling (Sect. 6 of [1]_): fitted on the training data, applied at predict time

    def _fit_scaling(self, X):
        # the training range and values of the present (non-NaN) entries; a column missing
        # everywhere scales as a constant one
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
                self._rank_values = [_column_values(columns, j) for j in range(X.shape[1])]
            else:  # NaN (missing) left out
                self._rank_values = [
                    np.unique(c[~np.isnan(c)]) if np.isnan(c).any() else np.unique(c) for c in X.T
                ]
                self._rank_values = [v if v.size else np.zeros(1) for v in self._rank_values]
        return self._scale(X)

    def _scale(self, X):
        if sparse.issparse(X):
            return self._scale_sparse(X)
        if self.scaling == "minmax":
            return (X - self._scale_min) / self._scale_span
        if self.scaling == "rank":
            out = np.empty_like(X, dtype=np.float64)
            for j, values in enumerate(self._rank_values):
                if values.size == 1:
                    out[:, j] = np.where(np.isnan(X[:, j]), np.nan, 0.0)
                else:
                    # A training value maps to its (dense) rank / (n_unique - 1);
                    # new values interpolate between neighbours and clip to [0, 1].
                    out[:, j] = np.interp(X[:, j], values, np.linspace(0.0, 1.0, values.size))
            return out
        return np.asarray(X, dtype=np.float64)

    def _scale_sparse(self, X):
        """:meth:`_scale` of sparse X as a :class:`_ScaledSparse` (equal to the dense
        scaling up to floating-point rounding): every unstored zero of column j scales to
        the same value ``offset[j]``, and a stored value v to ``offset[j] + S[i, j]``."""
        X = _canonical_csc(X)
        if self.scaling == "minmax":
            offset = -self._scale_min / self._scale_span
            return _ScaledSparse(X @ sparse.diags(1.0 / self._scale_span), offset)
        if self.scaling == "rank":
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

    def _rotate(self, X_scaled, k):
        """One matrix product per rotation; the core takes float32."""
        return rotate(X_scaled, self.rotations_[k])

    # ---- core parameters

    def _core_params(self, n_trees, n_jobs, seed):
        classification = self._task == "classification"
        return core_params(
            task=self._task,
            n_classes=self.n_classes_ if classification else None,
            n_outputs=self.n_outputs_,
            criterion=self.criterion,
            projection=_core.Projection.family("axis"),
            splitter="best",
            max_bins=256,
            max_features=self.max_features,
            n_estimators=n_trees,
            max_depth=self.max_depth,
            min_samples_split=self.min_samples_split,
            min_samples_leaf=self.min_samples_leaf,
            min_weight_fraction_leaf=self.min_weight_fraction_leaf,
            min_impurity_decrease=self.min_impurity_decrease,
            max_leaf_nodes=self.max_leaf_nodes,
            bootstrap=self.bootstrap,
            max_samples=self.max_samples,
            class_weight_subsample=False,
            oob=self.bootstrap,
            seed=seed,
            ccp_alpha=0.0,
            monotonic_cst=None,
            n_jobs=n_jobs,
        )

    # ---- OOB errors

    def _oob_error(self, sums, counts, y, sample_weight):
        """Weighted OOB error (misclassification rate or MSE) over rows with OOB trees."""
        mask = counts > 0
        if not mask.any():
            return np.nan
        pred = sums[mask] / counts[mask, None]
        # several outputs: the mean over outputs of each output's loss
        y = y.reshape(y.shape[0], -1)[mask]
        if self._task == "classification":
            counts_ = self.n_classes_ if isinstance(self.n_classes_, list) else [self.n_classes_]
            blocks = output_blocks(pred, counts_)
            loss = np.mean(
                [np.argmax(b, axis=1) != y[:, o] for o, b in enumerate(blocks)], axis=0
            ).astype(np.float64)
        else:
            loss = ((pred - y) ** 2).mean(axis=1)
        weights = None if sample_weight is None else sample_weight[mask]
        if weights is not None and weights.sum() <= 0:
            return np.nan
        return float(np.average(loss, weights=weights))

    # ---- the algorithm

    def _fit_rotations(self, X, y, sample_weight):
        """Algorithm 1 of [1]_ on validated inputs; ``y`` holds float codes/targets."""
        self._check_combined_params()
        # The rotations are small matrix products: threaded BLAS would only
        # spin against the core's own worker threads.
        with threadpool_limits(limits=1, user_api="blas"):
            return self._fit_rotations_unlimited(X, y, sample_weight)

    def _fit_rotations_unlimited(self, X, y, sample_weight):
        t_start = time.perf_counter()
        # the core takes n × k targets row-major; the OOB errors read y as it is
        y_core = np.ascontiguousarray(y.ravel(), dtype=np.float64)
        n_samples, n_features = X.shape
        R, U, M = self.n_rotations, self.micro_forest_size, self.n_estimators
        n_jobs = resolve_n_jobs(self.n_jobs)
        # shared by every core call of this fit: Ctrl-C in the main thread cancels them all
        progress = _core.Progress()

        # Every random number is drawn before any work, so nothing depends on n_jobs.
        random_state = check_random_state(self.random_state)
        rotation_seed = random_state.randint(_MAX_SEED)
        forest_seeds = random_state.randint(_MAX_SEED, size=R)
        rng = np.random.default_rng(rotation_seed)
        rotations = np.empty((R, n_features, n_features))
        rotations[0] = np.eye(n_features)
        for k in range(1, R):
            rotations[k] = haar_rotation(n_features, rng)
        self.rotations_ = rotations

        X_scaled = self._fit_scaling(X)
        cache = R * n_samples * n_features * 4 <= _CACHE_BUDGET_BYTES
        runner = ROTATION_RUNNER.get()
        if runner is not None:
            # the rotations are computed and grown on the workers, all at once
            runner.share(X_scaled, y_core, sample_weight)
            cache, n_calls = False, R
        else:
            n_calls = n_jobs
        rotated = [None] * R

        # Phase 1: a micro-forest of U trees per rotation, one core call each.
        forests = []
        complexity = np.empty(R)
        oob_error = np.full(R, np.nan)
        oob_sums = oob_counts = None
        keep_oob = self.bootstrap
        if keep_oob:
            oob_sums = np.zeros((R, n_samples, self._n_outputs))
            oob_counts = np.zeros((R, n_samples))

        def grow_micro_forest(k):
            params = self._core_params(U, n_jobs, forest_seeds[k])
            if runner is not None:
                return None, runner.fit(self.rotations_[k], params)
            X_rot = self._rotate(X_scaled, k)
            forest = _core.Forest.fit(X_rot, y_core, sample_weight, params, progress)
            return (X_rot if cache else None), forest

        # Several core calls run at once (each releases the GIL) so that the
        # core's worker pool, shared between calls of the same size, never idles
        # at the tail of a small micro-forest. The results do not depend on it.
        for k, (X_rot, forest) in enumerate(
            self._map(grow_micro_forest, range(R), n_calls, progress)
        ):
            n_nodes, depth, _ = forest.tree_stats()
            complexity[k] = np.median(tree_complexity(n_nodes, depth, n_samples))
            if keep_oob:
                sums, counts = forest.oob_prediction()
                oob_sums[k], oob_counts[k] = sums, counts
                oob_error[k] = self._oob_error(sums, counts, y, sample_weight)
            forests.append(forest)
            if cache:
                rotated[k] = X_rot
        if self.verbose:
            print(
                f"[rotation] {R} micro-forests of {U} trees in {time.perf_counter() - t_start:.2f}s"
            )

        # Rotations whose micro-forest had no OOB rows rank last on error.
        if keep_oob and np.isnan(oob_error).any():
            finite = oob_error[np.isfinite(oob_error)]
            oob_error[np.isnan(oob_error)] = finite.max() if finite.size else 0.0
        self.rotation_complexity_ = complexity
        self.rotation_oob_error_ = oob_error

        # Phase 2: rank rotations and weight them.
        order = self._rank(complexity, oob_error)
        self.rotation_order_ = order
        ranked_weights = self._ranked_weights(
            order, oob_error, oob_sums, oob_counts, y, sample_weight
        )
        ranked_counts = allocate_trees(ranked_weights, M)
        weights = np.empty(R)
        weights[order] = ranked_weights
        counts = np.empty(R, dtype=np.int64)
        counts[order] = ranked_counts
        self.rotation_weights_ = weights
        self.n_trees_per_rotation_ = counts

        # Phase 3: reuse the micro-forest trees, grow or drop the difference.
        def complete_forest(k):
            forest = forests[k]
            if counts[k] == 0:
                return None
            if counts[k] < U and self.oob_score:
                # The core drops OOB records on truncate; a forest of the first
                # counts[k] trees (same seed, same trees) records them again.
                params = self._core_params(counts[k], n_jobs, forest_seeds[k])
                if runner is not None:
                    return runner.fit(self.rotations_[k], params)
                X_rot = rotated[k] if cache else self._rotate(X_scaled, k)
                return _core.Forest.fit(X_rot, y_core, sample_weight, params, progress)
            if counts[k] < U:
                forest.truncate(int(counts[k]))
            elif counts[k] > U and runner is not None:
                params = self._core_params(counts[k], n_jobs, forest_seeds[k])
                runner.fit_more(forest, self.rotations_[k], params)
            elif counts[k] > U:
                X_rot = rotated[k] if cache else self._rotate(X_scaled, k)
                forest.fit_more(X_rot, y_core, sample_weight, int(counts[k] - U), progress)
            return forest

        forests = list(self._map(complete_forest, range(R), n_calls, progress))
        self._forests = forests
        rotated.clear()

        n_nodes, depth = [], []
        for forest in forests:
            if forest is not None:
                nodes_k, depth_k, _ = forest.tree_stats()
                n_nodes.append(nodes_k)
                depth.append(depth_k)
        self.complexity_ = float(
            np.mean(tree_complexity(np.concatenate(n_nodes), np.concatenate(depth), n_samples))
        )
        if self.oob_score:
            self._set_oob_score(y, sample_weight)
        if self.verbose:
            print(f"[rotation] fitted {M} trees in {time.perf_counter() - t_start:.2f}s")
        return self

    @staticmethod
    def _map(function, items, n_jobs, progress):
        """``map`` in order, with up to ``n_jobs`` concurrent calls when n_jobs > 1.

        Core calls in worker threads cannot see Ctrl-C (Python handles signals in the main
        thread only): an exception while waiting cancels them through ``progress`` and
        waits for them, so no thread keeps computing after it.
        """
        items = list(items)
        if n_jobs <= 1 or len(items) <= 1:
            return [function(item) for item in items]
        executor = ThreadPoolExecutor(max_workers=min(n_jobs, len(items)))
        try:
            return list(executor.map(function, items))
        except BaseException:
            progress.cancel()
            raise
        finally:
            executor.shutdown(wait=True, cancel_futures=True)

    def _rank(self, complexity, oob_error):
        """Rotation indices from best to worst for the chosen scheme (stable on ties)."""
        if self.weighting == "oob":
            return np.lexsort((complexity, oob_error))
        if self.weighting == "jnt":
            joint = rankdata(rankdata(oob_error) + rankdata(complexity))
            return np.lexsort((complexity, joint))
        return np.argsort(complexity, kind="stable")

    def _ranked_weights(self, order, oob_error, oob_sums, oob_counts, y, sample_weight):
        R = self.n_rotations
        self.h_ = None
        self.h_grid_ = None
        self.h_scores_ = None
        if self.weighting == "rre":
            return np.full(R, 1.0 / R)
        if self.weighting == "bst":
            return cut_weights(R, 1)
        if self.weighting == "new":
            position = int(np.flatnonzero(order == 0)[0])  # rank of the identity
            return cut_weights(R, position + 1)
        if self.weighting in ("lin", "oob", "jnt"):
            return linear_weights(R)
        # "cut" / "exp": given h, or the grid search of Sect. 3.1.
        if self.h is not None:
            self.h_ = float(self.h)
            return _scheme_weights(self.weighting, R, self.h_)
        if self.h_grid is None:
            grid = _default_h_grid(self.weighting, R)
        else:
            grid = np.unique(np.asarray(self.h_grid, dtype=np.float64).ravel())
        scores = np.empty(grid.size)
        for i, h in enumerate(grid):
            ranked = _scheme_weights(self.weighting, R, h)
            if self.h_criterion == "weighted_oob":
                # Eq. in Sect. 3.1: sum over rotations of weight x micro-forest OOB error.
                scores[i] = float(ranked @ oob_error[order])
            else:
                weights = np.empty(R)
                weights[order] = ranked
                scores[i] = self._weighted_micro_oob_error(
                    weights, oob_sums, oob_counts, y, sample_weight
                )
        best = int(np.nanargmin(scores)) if np.isfinite(scores).any() else 0
        self.h_grid_ = grid
        self.h_scores_ = scores
        self.h_ = float(grid[best])
        return _scheme_weights(self.weighting, R, self.h_)

    def _weighted_micro_oob_error(self, weights, oob_sums, oob_counts, y, sample_weight):
        """OOB error of the micro-forests with each tree of rotation k weighted by w_k / U."""
        sums = np.tensordot(weights, oob_sums, axes=1)
        counts = weights @ oob_counts
        counts[counts <= 1e-12] = 0.0
        return self._oob_error(sums, counts, y, sample_weight)

    def _set_oob_score(self, y, sample_weight):
        sums = np.zeros((y.shape[0], self._n_outputs))
        counts = np.zeros(y.shape[0])
        for forest in self._forests:
            if forest is not None:
                s, c = forest.oob_prediction()
                sums += s
                counts += c
        mask = counts > 0
        pred = np.full_like(sums, np.nan)
        pred[mask] = sums[mask] / counts[mask, None]
        weights = None if sample_weight is None else sample_weight[mask]
        n_missing = int((~mask).sum())
        if n_missing:
            warnings.warn(
                f"{n_missing} of {mask.size} training rows were in the bootstrap sample of "
                "every tree and have no out-of-bag prediction; the OOB score is computed "
                "without them (NaN in the OOB predictions). Use more trees for a reliable "
                "estimate.",
                UserWarning,
                stacklevel=4,
            )
        multi = y.ndim == 2
        if self._task == "classification":
            if multi:
                # scikit-learn's layout (n_samples, n_classes, n_outputs)
                pred = per_output_table(pred, self.n_classes_, y.shape[1]).transpose(0, 2, 1)
            self.oob_decision_function_ = pred
            self.oob_score_ = (
                float(accuracy_score(y[mask], np.argmax(pred[mask], axis=1), sample_weight=weights))
                if mask.any()
                else np.nan
            )
        else:
            self.oob_prediction_ = pred if multi else pred[:, 0]
            self.oob_score_ = (
                float(r2_score(y[mask], self.oob_prediction_[mask], sample_weight=weights))
                if mask.sum() >= 2
                else np.nan
            )

    # ---- prediction

    def _mean_prediction(self, X):
        """Mean over all trees of their leaf values on their rotated inputs."""
        check_is_fitted(self)
        X = _validate_data(
            self,
            X,
            reset=False,
            dtype=np.float64,
            accept_sparse=SPARSE_FORMATS,
            ensure_all_finite="allow-nan",
        )
        X_scaled = self._scale(X)
        n_jobs = resolve_n_jobs(self.n_jobs)
        total = np.zeros((X.shape[0], self._n_outputs))
        with threadpool_limits(limits=1, user_api="blas"):
            for k, forest in enumerate(self._forests):
                if forest is not None:
                    mean_k = forest.predict(self._rotate(X_scaled, k), n_jobs)
                    total += self.n_trees_per_rotation_[k] * mean_k
        return total / self.n_trees_per_rotation_.sum()

    @property
    def feature_importances_(self):
        """Impurity importances mapped back to the input features.

        A rotated feature ``j`` is ``sum_i x_i Q[i, j]``; its importance is
        shared among the inputs by the squared loadings ``Q[i, j]**2`` (which
        sum to 1), then rotations are averaged by their number of trees.

        Returns
        -------
        feature_importances_ : ndarray of shape (n_features_in_,)
            Non-negative, summing to 1 (all zero if no tree has a split).
        """
        check_is_fitted(self)
        total = np.zeros(self.n_features_in_)
        for k, forest in enumerate(self._forests):
            if forest is not None:
                rotated = np.nan_to_num(forest.feature_importances())
                total += self.n_trees_per_rotation_[k] * (self.rotations_[k] ** 2 @ rotated)
        s = total.sum()
        return total / s if s > 0 else total

    def __sklearn_is_fitted__(self):
        # Fitted only once the forests exist (a failed fit may leave n_features_in_).
        return hasattr(self, "_forests")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True  # a 2-D y grows multi-output trees
        tags.input_tags.allow_nan = True  # NaN is a missing value (see ``rotate``)
        tags.input_tags.sparse = True  # scaled and rotated without densifying X
        return tags

    def save(self, path):
        """Writes the fitted ensemble to ``path`` in obliqueforest's safe model format.

        Read it back with :func:`obliqueforest.load` (Python) or
        ``obliqueforest::Model::load`` (Rust); loading never executes code.

        Parameters
        ----------
        path : str or path-like
        """
        from ._io import save

        save(self, path)

    # ---- pickling: the core forests travel as their validated byte format

    def __getstate__(self):
        state = dict(super().__getstate__())
        if "_forests" in state:
            state["_forests"] = [None if f is None else f.to_bytes() for f in state["_forests"]]
        return state

    def __setstate__(self, state):
        state = dict(state)
        if "_forests" in state:
            state["_forests"] = [
                None if b is None else _core.Forest.from_bytes(b) for b in state["_forests"]
            ]
        super().__setstate__(state)

    def _check_sample_weight(self, sample_weight, X):
        if sample_weight is None:
            return None
        sample_weight = _check_sample_weight(sample_weight, X, dtype=np.float64)
        if np.any(sample_weight < 0):
            raise ValueError("Negative values in data passed to `sample_weight`.")
        return np.ascontiguousarray(sample_weight, dtype=np.float64)


_DOC_SHARED_PARAMETERS = """
    n_estimators : int, default=500
        Total number M of trees in the final ensemble.

    n_rotations : int, default=20
        Number R of rotations. Rotation 0 is the identity, the others are drawn
        from the Haar distribution.

    micro_forest_size : int, default=10
        Number U of trees in the micro-forest grown on every rotation to
        estimate its complexity and OOB error. Micro-forest trees are reused in
        the final ensemble.

    weighting : {"rre", "cut", "exp", "bst", "new", "lin", "oob", "jnt"}, default="exp"
        How trees are spread over the ranked rotations (Sect. 5 of [1]_):
        ``"rre"`` equal numbers of trees on all rotations (plain random
        rotation ensemble); ``"cut"`` equal numbers on the top-h rotations
        (Eq. 6); ``"exp"`` exponential decay with half-life h (Eq. 7);
        ``"bst"`` all trees on the least complex rotation; ``"new"`` equal
        numbers on the rotations ranked at or above the identity; ``"lin"``
        linearly decreasing in complexity rank; ``"oob"`` linearly decreasing in
        micro-forest OOB-error rank; ``"jnt"`` linearly decreasing in
        ``rank(rank(OOB error) + rank(complexity))``.

    h : float or None, default=None
        Tuning parameter of ``"cut"`` (integer cut-off in [1, R]) and ``"exp"``
        (positive half-life). None chooses it by grid search over ``h_grid``
        with ``h_criterion``. Ignored by the other schemes.

    h_grid : array-like of shape (n_grid,) or None, default=None
        Candidate values of h. None means all integers 1..R for ``"cut"`` and
        60 geometrically spaced values in [0.1, 10 R] for ``"exp"``.

    h_criterion : {"weighted_oob", "ensemble_oob"}, default="weighted_oob"
        Objective minimised by the h grid search. ``"weighted_oob"`` is the
        paper's (Sect. 3.1): the sum over rotations of weight times the
        rotation's micro-forest OOB error. It is linear in the weights, so it
        favours putting the trees on the few rotations with the smallest OOB
        errors. ``"ensemble_oob"`` instead takes the OOB error of the weighted
        ensemble of all micro-forests (each tree of rotation k weighted by
        w_k / U), which rewards the diversity of several rotations.

    scaling : {"minmax", "rank"} or None, default="minmax"
        Applied to each feature before rotating, fitted on the training data
        (Sect. 6 of [1]_; rotations need features of comparable scale).
        ``"minmax"`` maps the training range to [0, 1]; ``"rank"`` maps a value
        to its rank among the distinct training values, divided by their number
        minus one, interpolating linearly for new values (clipped to [0, 1]).
        None uses the features as given.

        Sparse X (scipy CSR/CSC) is scaled and rotated without densifying it: the
        scaled data are kept as a sparse matrix plus a per-feature offset, and each
        rotation is a sparse-dense product. The rotated data, and the forests grown on
        them, are those of the dense array up to floating-point rounding (the sums are
        taken in another order).
"""

_DOC_TREE_PARAMETERS = """
    max_depth : int or None, default=None
        Maximum tree depth; None grows trees until the leaves are pure or
        smaller than ``min_samples_split`` (the paper's unconstrained trees).

    min_samples_split : int or float, default=2
        Minimum number (or fraction) of samples needed to split a node.

    min_samples_leaf : int or float, default=1
        Minimum number (or fraction) of samples in a leaf.

    min_weight_fraction_leaf : float, default=0.0
        Minimum weighted fraction of the total sample weight in a leaf.

    max_features : {"sqrt", "log2"}, int, float or None
        Number of candidate features per split, resolved by the core as in
        scikit-learn. **The paper's Table 3 tree sizes are reproduced with
        ``max_features=1``** (one random candidate per split); ``"sqrt"`` gives
        smaller trees.

    max_leaf_nodes : int or None, default=None
        Grow trees best-first with at most this many leaves.

    min_impurity_decrease : float, default=0.0
        A node is split only if the impurity decreases by at least this much.

    bootstrap : bool, default=True
        Whether each tree sees a bootstrap sample. Needed for OOB errors, hence
        for ``"oob"``, ``"jnt"``, the h grid search and ``oob_score``.

    max_samples : int, float or None, default=None
        Size of each bootstrap sample (count or fraction of n_samples).

    oob_score : bool, default=False
        Whether to compute the out-of-bag score of the final ensemble.

    n_jobs : int or None, default=None
        Threads used by the core for growing and predicting (-1: all cores).
        Results do not depend on it.

    random_state : int, RandomState instance or None, default=None
        Seeds the rotations and every core forest; all seeds are drawn before
        any tree is grown.

    verbose : int, default=0
        Print the phase timings when positive.
"""

_DOC_ATTRIBUTES = """
    rotations_ : ndarray of shape (n_rotations, n_features_in_, n_features_in_)
        The orthogonal matrices; rotation k sees ``scale(X) @ rotations_[k]``.
        ``rotations_[0]`` is the identity.

    rotation_complexity_ : ndarray of shape (n_rotations,)
        Median tree complexity ``#nodes + depth / N`` (Eq. 5) of each
        rotation's micro-forest.

    rotation_oob_error_ : ndarray of shape (n_rotations,)
        OOB error of each micro-forest (misclassification rate or mean squared
        error); NaN when ``bootstrap=False``.

    rotation_order_ : ndarray of int of shape (n_rotations,)
        Rotation indices from best to worst: by complexity, by OOB error for
        ``"oob"``, by the joint rank for ``"jnt"`` (ties by complexity).

    rotation_weights_ : ndarray of shape (n_rotations,)
        The scheme's weight of each rotation before rounding to trees.

    n_trees_per_rotation_ : ndarray of int of shape (n_rotations,)
        Trees of each rotation in the final ensemble; sums to ``n_estimators``
        and is non-increasing along ``rotation_order_``.

    h_ : float or None
        The h used by ``"cut"`` / ``"exp"`` (given or found by the grid
        search); None for the other schemes.

    h_grid_ : ndarray of shape (n_grid,) or None
        Grid searched for h (None when no search happened).

    h_scores_ : ndarray of shape (n_grid,) or None
        Value of the ``h_criterion`` objective at each grid point; ``h_`` is
        the first grid point with the smallest value.

    complexity_ : float
        Mean tree complexity (Eq. 5) over the final ensemble's trees.

    feature_importances_ : ndarray of shape (n_features_in_,)
        Impurity importances mapped back to the input features.

    n_features_in_ : int
        Number of features seen during fit.

    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of features seen during fit, when X has string column names.
"""


class RotationEnsembleClassifier(ClassifierMixin, _BaseRotationEnsemble):
    __doc__ = (
        """Regularized random-rotation ensemble classifier.

    Grows a micro-forest of axis-aligned trees on each of ``n_rotations``
    rotations of the scaled data, ranks the rotations by the median
    complexity of their trees (Eq. 5 of [1]_) and builds an equal-weighted
    ensemble of ``n_estimators`` trees in which simpler rotations receive
    more trees, following the ``weighting`` scheme. Predictions average the
    class probabilities of all trees, each on its own rotated input.

    Parameters
    ----------"""
        + _DOC_SHARED_PARAMETERS
        + """
    criterion : {"gini", "entropy", "log_loss"}, default="gini"
        Split quality measure; "log_loss" is another name for "entropy".
"""
        + _DOC_TREE_PARAMETERS.replace(
            'max_features : {"sqrt", "log2"}, int, float or None',
            'max_features : {"sqrt", "log2"}, int, float or None, default="sqrt"',
        )
        + """
    class_weight : "balanced", dict or None, default=None
        Class weights multiplied into ``sample_weight`` (as in scikit-learn).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,) or list of n_outputs such arrays
        Class labels.

    n_classes_ : int or list of int
        Number of classes.
"""
        + _DOC_ATTRIBUTES
        + """
    oob_score_ : float
        Accuracy of the final ensemble's OOB predictions (when
        ``oob_score=True``).

    oob_decision_function_ : ndarray of shape (n_samples, n_classes) or (n_samples, n_classes, n_outputs)
        OOB class probabilities (NaN for rows never out of bag), when
        ``oob_score=True``.

    See Also
    --------
    RotationEnsembleRegressor

    Notes
    -----
    The fit costs ``R * U`` micro-forest trees plus the trees added to the
    favoured rotations (Sect. 7 of [1]_); with ``weighting="rre"`` and
    ``M >= R * U`` every micro-forest tree is reused and exactly M trees are
    grown, while a scheme that keeps a single rotation grows
    ``R * U + M - U`` trees. With ``n_jobs > 1`` several micro-forests are
    grown at once; the fitted model does not depend on ``n_jobs``.

    References
    ----------
    .. [1] R. Blaser and P. Fryzlewicz, "Regularizing axis-aligned ensembles
       via data rotations that favor simpler learners", Statistics and
       Computing 31, 15 (2021).
    .. [2] R. Blaser and P. Fryzlewicz, "Random rotation ensembles", Journal
       of Machine Learning Research 17 (2016), 1-26.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from obliqueforest.rotation import RotationEnsembleClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = RotationEnsembleClassifier(n_estimators=100, n_rotations=5,
    ...                                  random_state=0).fit(X, y)
    >>> int(clf.n_trees_per_rotation_.sum())
    100
    """
    )

    _task = "classification"

    _parameter_constraints: ClassVar[dict] = {
        **_BaseRotationEnsemble._parameter_constraints,
        "criterion": [StrOptions({"gini", "entropy", "log_loss"})],
        "class_weight": [StrOptions({"balanced"}), dict, None],
    }

    def __init__(
        self,
        n_estimators=500,
        *,
        n_rotations=20,
        micro_forest_size=10,
        weighting="exp",
        h=None,
        h_grid=None,
        h_criterion="weighted_oob",
        scaling="minmax",
        criterion="gini",
        max_depth=None,
        min_samples_split=2,
        min_samples_leaf=1,
        min_weight_fraction_leaf=0.0,
        max_features="sqrt",
        max_leaf_nodes=None,
        min_impurity_decrease=0.0,
        bootstrap=True,
        max_samples=None,
        oob_score=False,
        class_weight=None,
        n_jobs=None,
        random_state=None,
        verbose=0,
    ):
        self.n_estimators = n_estimators
        self.n_rotations = n_rotations
        self.micro_forest_size = micro_forest_size
        self.weighting = weighting
        self.h = h
        self.h_grid = h_grid
        self.h_criterion = h_criterion
        self.scaling = scaling
        self.criterion = criterion
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_weight_fraction_leaf = min_weight_fraction_leaf
        self.max_features = max_features
        self.max_leaf_nodes = max_leaf_nodes
        self.min_impurity_decrease = min_impurity_decrease
        self.bootstrap = bootstrap
        self.max_samples = max_samples
        self.oob_score = oob_score
        self.class_weight = class_weight
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the rotation ensemble.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs; NaN marks a missing value (infinity is rejected).
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Class labels.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative sample weights.

        Returns
        -------
        self : RotationEnsembleClassifier
            The fitted estimator.
        """
        X, y = _validate_data(
            self,
            X,
            y,
            dtype=np.float64,
            multi_output=True,
            accept_sparse=SPARSE_FORMATS,
            ensure_all_finite="allow-nan",
        )
        y = target_columns(y)
        check_classification_targets(y if y.shape[1] > 1 else y[:, 0])
        encoders = [LabelEncoder().fit(y[:, o]) for o in range(y.shape[1])]
        y_codes = np.stack([e.transform(y[:, o]) for o, e in enumerate(encoders)], axis=1)
        self.n_outputs_ = y.shape[1]
        if self.n_outputs_ == 1:
            y, y_codes = y[:, 0], y_codes[:, 0]
            self.classes_ = encoders[0].classes_
            self.n_classes_ = len(self.classes_)
        else:
            self.classes_ = [e.classes_ for e in encoders]
            self.n_classes_ = [len(c) for c in self.classes_]
            if self.oob_score and type_of_target(y_codes) == "multiclass-multioutput":
                raise ValueError(
                    "The type of target cannot be used to compute OOB estimates. Got "
                    "multiclass-multioutput while only the following are supported: "
                    "continuous, continuous-multioutput, binary, multiclass, "
                    "multilabel-indicator."
                )
        self._n_outputs = int(np.sum(self.n_classes_))
        sample_weight = self._check_sample_weight(sample_weight, X)
        if self.class_weight is not None:
            expanded = compute_sample_weight(self.class_weight, y)
            sample_weight = expanded if sample_weight is None else sample_weight * expanded
        return self._fit_rotations(X, y_codes.astype(np.float64), sample_weight)

    def predict_proba(self, X):
        """Class probabilities averaged over all trees.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes), or list of n_outputs such arrays
            Columns in the order of ``classes_`` (one array per output for a 2-D y).
        """
        mean = self._mean_prediction(X)
        if isinstance(self.classes_, list):
            return output_blocks(mean, self.n_classes_)
        return mean

    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes)
        """
        proba = self.predict_proba(X)
        with np.errstate(divide="ignore"):
            return [np.log(p) for p in proba] if isinstance(proba, list) else np.log(proba)

    def predict(self, X):
        """Most probable class.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_samples,) or (n_samples, n_outputs)
        """
        return labels_of(self.predict_proba(X), self.classes_)


class RotationEnsembleRegressor(RegressorMixin, _BaseRotationEnsemble):
    __doc__ = (
        """Regularized random-rotation ensemble regressor.

    The regression counterpart of :class:`RotationEnsembleClassifier`:
    micro-forests of regression trees rank the rotations by complexity
    (Eq. 5 of [1]_), the OOB errors are mean squared errors, and predictions
    average all trees on their rotated inputs.

    Parameters
    ----------"""
        + _DOC_SHARED_PARAMETERS
        + """
    criterion : {"squared_error", "friedman_mse", "absolute_error", "poisson"}, default="squared_error"
        Split quality measure, as the forest regressors take it ("friedman_mse" scores
        squared-error splits by Friedman's improvement; "poisson" needs y >= 0 with a
        positive sum; "absolute_error" is the slowest).
"""
        + _DOC_TREE_PARAMETERS.replace(
            'max_features : {"sqrt", "log2"}, int, float or None',
            'max_features : {"sqrt", "log2"}, int, float or None, default=1.0',
        )
        + """
    Attributes
    ----------"""
        + _DOC_ATTRIBUTES
        + """
    oob_score_ : float
        R^2 of the final ensemble's OOB predictions (when ``oob_score=True``).

    oob_prediction_ : ndarray of shape (n_samples,) or (n_samples, n_outputs)
        OOB predictions (NaN for rows never out of bag), when
        ``oob_score=True``.

    See Also
    --------
    RotationEnsembleClassifier

    References
    ----------
    .. [1] R. Blaser and P. Fryzlewicz, "Regularizing axis-aligned ensembles
       via data rotations that favor simpler learners", Statistics and
       Computing 31, 15 (2021).
    .. [2] R. Blaser and P. Fryzlewicz, "Random rotation ensembles", Journal
       of Machine Learning Research 17 (2016), 1-26.

    Examples
    --------
    >>> from sklearn.datasets import make_friedman1
    >>> from obliqueforest.rotation import RotationEnsembleRegressor
    >>> X, y = make_friedman1(n_samples=200, random_state=0)
    >>> reg = RotationEnsembleRegressor(n_estimators=50, n_rotations=5,
    ...                                 random_state=0).fit(X, y)
    >>> reg.predict(X[:2]).shape
    (2,)
    """
    )

    _task = "regression"
    _n_outputs = 1

    _parameter_constraints: ClassVar[dict] = {
        **_BaseRotationEnsemble._parameter_constraints,
        "criterion": [StrOptions({"squared_error", "friedman_mse", "absolute_error", "poisson"})],
    }

    def __init__(
        self,
        n_estimators=500,
        *,
        n_rotations=20,
        micro_forest_size=10,
        weighting="exp",
        h=None,
        h_grid=None,
        h_criterion="weighted_oob",
        scaling="minmax",
        criterion="squared_error",
        max_depth=None,
        min_samples_split=2,
        min_samples_leaf=1,
        min_weight_fraction_leaf=0.0,
        max_features=1.0,
        max_leaf_nodes=None,
        min_impurity_decrease=0.0,
        bootstrap=True,
        max_samples=None,
        oob_score=False,
        n_jobs=None,
        random_state=None,
        verbose=0,
    ):
        self.n_estimators = n_estimators
        self.n_rotations = n_rotations
        self.micro_forest_size = micro_forest_size
        self.weighting = weighting
        self.h = h
        self.h_grid = h_grid
        self.h_criterion = h_criterion
        self.scaling = scaling
        self.criterion = criterion
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_weight_fraction_leaf = min_weight_fraction_leaf
        self.max_features = max_features
        self.max_leaf_nodes = max_leaf_nodes
        self.min_impurity_decrease = min_impurity_decrease
        self.bootstrap = bootstrap
        self.max_samples = max_samples
        self.oob_score = oob_score
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the rotation ensemble.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs; NaN marks a missing value (infinity is rejected).
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative sample weights.

        Returns
        -------
        self : RotationEnsembleRegressor
            The fitted estimator.
        """
        X, y = _validate_data(
            self,
            X,
            y,
            dtype=np.float64,
            multi_output=True,
            y_numeric=True,
            accept_sparse=SPARSE_FORMATS,
            ensure_all_finite="allow-nan",
        )
        y = np.asarray(target_columns(y), dtype=np.float64)
        self.n_outputs_ = self._n_outputs = y.shape[1]
        if self.n_outputs_ == 1:
            y = y[:, 0]
        sample_weight = self._check_sample_weight(sample_weight, X)
        return self._fit_rotations(X, np.ascontiguousarray(y), sample_weight)

    def predict(self, X):
        """Mean prediction over all trees.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_samples,) or (n_samples, n_outputs)
        """
        mean = self._mean_prediction(X)
        return mean[:, 0] if self.n_outputs_ == 1 else mean

    def predict_quantiles(self, X, quantiles=(0.05, 0.5, 0.95)):
        """Not available for rotation ensembles.

        A quantile regression forest weighs training rows by the leaves a row reaches in
        every tree; a rotation ensemble's trees grow on differently rotated copies of the
        data, in micro-forests and their completions, which would need the leaf values of
        every rotation's forests gathered across rotations. Use a forest regressor with
        ``store_leaf_values=True`` (``RandomForestRegressor``, ``SPORFRegressor``, ...).

        Raises
        ------
        NotImplementedError
            Always.
        """
        raise NotImplementedError(
            "RotationEnsembleRegressor does not predict quantiles; use RandomForestRegressor, "
            "SPORFRegressor, ObliqueForestRegressor or MORFRegressor with "
            "store_leaf_values=True"
        )
