"""Fitting and prediction shared by the rotation ensembles: Algorithm 1 of Blaser &
Fryzlewicz (micro-forests per rotation, ranking, weighting, completing the favoured
rotations' forests), OOB errors and pickling. The public estimators (and their declared
parameters) are in :mod:`obliqueforest.rotation`; the math they use, the scaling
included, is in ``_rotation_math``, their trees in ``_rotation_trees``.

**A fit is a transaction** (:mod:`obliqueforest._transaction`), as the forests' fits are:
``fit`` works on a draft and publishes the rotations, the scaling and the forests in one
step when it succeeds, so a refused or interrupted fit leaves the previous model fully
usable, and every reader (predict, the trees, pickle, save) takes the state once
(``_fitted()``) and sees one fit's model whole.

References
----------
.. [1] R. Blaser and P. Fryzlewicz, "Regularizing axis-aligned ensembles via
   data rotations that favor simpler learners", Statistics and Computing 31,
   15 (2021).
"""

from __future__ import annotations

import contextvars
import time
import warnings
from dataclasses import dataclass

import numpy as np
from scipy.stats import rankdata
from sklearn.base import BaseEstimator, _fit_context
from sklearn.metrics import accuracy_score, r2_score
from sklearn.utils import check_random_state
from sklearn.utils.validation import _check_sample_weight, check_is_fitted

from . import _core
from ._outputs import output_blocks, per_output_table
from ._params import core_fields, core_params
from ._rotation_math import (
    ScalingMixin,
    _default_h_grid,
    _scheme_weights,
    allocate_trees,
    cut_weights,
    haar_rotation,
    linear_weights,
    map_in_threads,
    one_blas_thread,
    rotate,
    rotate_columns,
    tree_complexity,
)
from ._rotation_trees import RotationTreesMixin
from ._transaction import TransactionalFit
from ._validation import resolve_n_jobs
from .projections import AxisAligned

# Schemes whose rotation ranking is by complexity (all but "oob" and "jnt").
_NEEDS_OOB_RANKING = ("oob", "jnt")
_TUNED_BY_H = ("cut", "exp")
# Above this many bytes the rotated copies are recomputed instead of cached.
_CACHE_BUDGET_BYTES = 256 * 2**20
_MAX_SEED = np.iinfo(np.int32).max
# Rotations whose micro-forests' OOB errors are counted together: a few numpy calls for
# ten rotations instead of for each, on sums of ten rotations at a time (not all R)
_ERROR_BATCH = 10

# Set (only) by obliqueforest.dask around a fit: an object that grows each rotation's
# forest on a cluster worker from the scaled data it received once (``share``):
# ``fit(rotation, params)`` returns a new core forest, ``fit_more(forest, rotation,
# params)`` extends one to ``params.n_estimators`` trees, as Forest.fit_more would.
ROTATION_RUNNER: contextvars.ContextVar = contextvars.ContextVar("rotation_runner", default=None)


@dataclass
class _FitPlan:
    """What the phases of one fit share: the data as the core takes them, the rotations
    and seeds (all drawn before any work), and where the trees grow: on the workers of
    ``runner`` (set by obliqueforest.dask, ``ROTATION_RUNNER``), or here in core calls of
    ``per_call`` rotations, with the rotated copies kept in ``rotated`` when ``cache``."""

    X_scaled: object
    y_core: np.ndarray
    sample_weight: np.ndarray | None
    n_samples: int
    rotations: np.ndarray
    forest_seeds: np.ndarray
    fields: dict
    n_jobs: int
    progress: object
    runner: object
    cache: bool
    per_call: int
    n_calls: int
    rotated: list

    def batches(self, ks):
        """The rotations ``ks`` in lists of at most ``per_call``, in order."""
        ks = list(ks)
        return [ks[i : i + self.per_call] for i in range(0, len(ks), self.per_call)]


def _mean_complexity(forests, n_samples):
    """The mean tree complexity over the trees of ``forests`` (None: a rotation without
    trees)."""
    n_nodes, depth = [], []
    for forest in forests:
        if forest is not None:
            nodes_k, depth_k, _ = forest.tree_stats()
            n_nodes.append(nodes_k)
            depth.append(depth_k)
    return float(
        np.mean(tree_complexity(np.concatenate(n_nodes), np.concatenate(depth), n_samples))
    )


class _BaseRotationEnsemble(RotationTreesMixin, ScalingMixin, TransactionalFit, BaseEstimator):
    """Shared fitting and prediction logic; see the public estimators, which declare their
    parameters (``__init__``, ``_parameter_constraints`` and docs)."""

    #: What a fit sets besides its fitted attributes (names ending in "_").
    _private_fit_state = ScalingMixin._SCALING_STATE | {"_forests", "_n_samples_fit", "_n_outputs"}

    #: The family its forests grow (on the rotated data): axis-aligned.
    _projection_families = (AxisAligned._tag,)

    def _projection_object(self):
        """The projection distribution of every rotation's forest."""
        return AxisAligned()

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the rotation ensemble.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training inputs; NaN marks a missing value (infinity is rejected). A scipy
            CSR/CSC matrix is scaled and rotated without densifying it.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Class labels (classifier) or targets (regressor); a 2-D y grows multi-output
            trees.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative sample weights.

        Returns
        -------
        self : object
            Fitted; a fit that raises leaves the estimator as it was.
        """
        return self._transaction(type(self)._fit_draft, X, y, sample_weight)

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

    # ---- scaling (Sect. 6 of [1]_, ScalingMixin) and rotation

    def _rotate(self, X_scaled, k, order="C"):
        """One matrix product per rotation; the core takes float32 (see ``rotate``)."""
        return rotate(X_scaled, self.rotations_[k], order)

    # ---- core parameters

    def _core_params(self, fields, n_trees, n_jobs, seed, oob=None):
        """One rotation's core parameters from the estimator's ``core_fields`` (read once a
        fit); out-of-bag records whenever there are bootstrap samples (the ranking reads
        them), unless ``oob`` says otherwise (``benches/rotation_speed.py`` grows the same
        trees without them)."""
        # the tree parameters of the table (the rest at the forests' defaults: best
        # splitter, no pruning, no monotonic constraints); class_weight is in the sample
        # weights already
        classification = self._task == "classification"
        fields = {
            **fields,
            "n_estimators": n_trees,
            "oob": self.bootstrap if oob is None else oob,
            "class_weight_subsample": False,
        }
        return core_params(
            **fields,
            task=self._task,
            n_classes=self.n_classes_ if classification else None,
            n_outputs=self.n_outputs_,
            projection=self._projection_object()._core_projection(self.n_features_in_),
            seed=seed,
            n_jobs=n_jobs,
        )

    # ---- OOB errors

    def _oob_error(self, sums, counts, y, sample_weight):
        """Weighted OOB error (misclassification rate or MSE) over rows with OOB trees."""
        mask = counts > 0
        if not mask.any():
            return np.nan
        # (np.compress: the rows of a boolean mask, several times faster than sums[mask])
        pred = np.compress(mask, sums, axis=0) / np.compress(mask, counts)[:, None]
        # several outputs: the mean over outputs of each output's loss
        y = np.compress(mask, y.reshape(y.shape[0], -1), axis=0)
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

    def _rotation_oob_errors(self, records, y, sample_weight):
        """``_oob_error`` of each rotation's (sums, counts) in ``records``. A single-output
        classifier without sample weights counts its misclassified out-of-bag rows and
        those rows, both exact, so the numbers are ``_oob_error``'s, for the rotations of
        ``records`` at once (a fit asks for 50, a batch at a time)."""
        if not (self._task == "classification" and self.n_outputs_ == 1 and sample_weight is None):
            return np.array([self._oob_error(s, c, y, sample_weight) for s, c in records])
        sums = np.stack([s for s, _ in records])
        counts = np.stack([c for _, c in records])
        has_oob = counts > 0
        n_oob = np.count_nonzero(has_oob, axis=1)
        # (rows without OOB trees have sums 0 and are not counted)
        divisor = np.maximum(counts, 1.0)
        # argmax over the classes of sums / divisor, a class at a time (each quotient as
        # _oob_error divides it; a later class wins only when strictly larger, so ties go
        # to the first, as argmax's): one pass over (rotations, rows) a class instead of a
        # division broadcast over the few classes and an argmax along them
        best = sums[:, :, 0] / divisor
        label = np.zeros(counts.shape, dtype=np.intp)
        for c in range(1, sums.shape[2]):
            share = sums[:, :, c] / divisor
            larger = share > best
            label[larger] = c
            np.maximum(best, share, out=best)
        wrong = np.count_nonzero((label != y.ravel()) & has_oob, axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(n_oob > 0, wrong / n_oob, np.nan)

    # ---- the algorithm

    def _fit_rotations(self, X, y, sample_weight):
        """Algorithm 1 of [1]_ on validated inputs; ``y`` holds float codes/targets."""
        self._check_combined_params()
        # The rotations are small matrix products: threaded BLAS would only
        # spin against the core's own worker threads.
        with one_blas_thread():
            return self._fit_rotations_unlimited(X, y, sample_weight)

    def _fit_rotations_unlimited(self, X, y, sample_weight):
        """Algorithm 1 of [1]_ in its three phases: a micro-forest on every rotation, the
        rotations ranked and weighted, the favoured rotations' forests completed."""
        t_start = time.perf_counter()
        plan = self._plan_fit(X, y, sample_weight)
        forests, micro_oob = self._grow_micro_forests(plan, y, sample_weight)
        if self.verbose:
            U = self.micro_forest_size
            elapsed = time.perf_counter() - t_start
            print(f"[rotation] {self.n_rotations} micro-forests of {U} trees in {elapsed:.2f}s")
        counts = self._weight_rotations(*micro_oob, y, sample_weight)
        forests = self._complete_forests(plan, forests, counts)
        self._n_samples_fit = plan.n_samples  # estimators_samples_ recomputes in-bag rows
        self._forests = forests
        plan.rotated.clear()
        self.complexity_ = _mean_complexity(forests, plan.n_samples)
        if self.oob_score:
            # (called from here: its warning's stacklevel counts the frames up to fit's
            # caller)
            self._set_oob_score(y, sample_weight)
        if self.verbose:
            elapsed = time.perf_counter() - t_start
            print(f"[rotation] fitted {self.n_estimators} trees in {elapsed:.2f}s")
        return self

    def _plan_fit(self, X, y, sample_weight):
        """Draws the rotations (``rotations_``) and every forest's seed, fits the scaling,
        and decides where the trees grow: a ``_FitPlan``."""
        # the core takes n × k targets row-major; the OOB errors read y as it is
        y_core = np.ascontiguousarray(y.ravel(), dtype=np.float64)
        n_samples, n_features = X.shape
        R = self.n_rotations
        n_jobs = self._n_threads()
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
            runner.share(X_scaled, y_core, sample_weight)
            cache, n_calls = False, R
        else:
            n_calls = n_jobs
        # One core call grows the trees of as many rotations as the rotated copies' budget
        # holds (all of them when they are cached): every tree of every rotation is a task
        # of the same parallel loop, so the threads stay busy to the end of the batch and
        # the call's fixed costs are paid once.
        per_call = R if cache else max(1, _CACHE_BUDGET_BYTES // (4 * n_samples * n_features))
        return _FitPlan(
            X_scaled=X_scaled,
            y_core=y_core,
            sample_weight=sample_weight,
            n_samples=n_samples,
            rotations=rotations,
            forest_seeds=forest_seeds,
            # (read once: get_params is slow next to a small tree)
            fields=core_fields(self),
            n_jobs=n_jobs,
            progress=progress,
            runner=runner,
            cache=cache,
            per_call=per_call,
            n_calls=n_calls,
            rotated=[None] * R,
        )

    # ---- phase 1: a micro-forest of U trees per rotation

    def _grow_micro_forests(self, plan, y, sample_weight):
        """Every rotation's micro-forest, and ``(complexity, oob_error, oob_sums,
        oob_counts)`` of the rotations (the sums and counts only when the weights need
        them, see ``_needs_micro_oob_sums``); sets ``rotation_complexity_`` and
        ``rotation_oob_error_``, and caches the rotated copies when ``plan.cache``."""
        R, U, n_samples = self.n_rotations, self.micro_forest_size, plan.n_samples
        forests = []
        oob_error = np.full(R, np.nan)
        oob_sums = oob_counts = None
        keep_oob = self.bootstrap
        if keep_oob and self._needs_micro_oob_sums():
            oob_sums = np.empty((R, n_samples, self._n_outputs))
            oob_counts = np.empty((R, n_samples))

        # every rotation's micro-forest has the same parameters but for its seed
        micro_base = self._core_params(plan.fields, U, plan.n_jobs, plan.forest_seeds[0])
        micro_params = [micro_base.with_seed(int(seed)) for seed in plan.forest_seeds]

        micro_nodes = np.empty((R, U))
        micro_depth = np.empty((R, U))
        records = []  # (first rotation, out-of-bag records) whose errors are not counted yet

        def count_errors():
            first = records[0][0]
            errors = self._rotation_oob_errors([r for _, r in records], y, sample_weight)
            oob_error[first : first + len(records)] = errors
            records.clear()

        for k, (X_rot, forest) in enumerate(self._micro_forests(plan, micro_params)):
            micro_nodes[k], micro_depth[k], _ = forest.tree_stats()
            if keep_oob:
                sums, counts = forest.oob_prediction()
                records.append((k, (sums, counts)))
                if len(records) == _ERROR_BATCH:
                    count_errors()
                if oob_sums is not None:
                    oob_sums[k], oob_counts[k] = sums, counts
            forests.append(forest)
            if plan.cache:
                plan.rotated[k] = X_rot
        if records:
            count_errors()
        # each rotation's median tree complexity, the rotations in one call
        complexity = np.median(tree_complexity(micro_nodes, micro_depth, n_samples), axis=1)

        # Rotations whose micro-forest had no OOB rows rank last on error.
        if keep_oob and np.isnan(oob_error).any():
            finite = oob_error[np.isfinite(oob_error)]
            oob_error[np.isnan(oob_error)] = finite.max() if finite.size else 0.0
        self.rotation_complexity_ = complexity
        self.rotation_oob_error_ = oob_error
        return forests, (complexity, oob_error, oob_sums, oob_counts)

    def _micro_forests(self, plan, params):
        """(rotated X or None, micro-forest) of every rotation, in rotation order;
        ``params[k]`` are rotation k's core parameters."""
        if plan.runner is not None:
            # the rotations are computed and grown on the workers, all at once
            def on_worker(k):
                return None, plan.runner.fit(plan.rotations[k], params[k])

            yield from self._map(
                on_worker, range(self.n_rotations), self.n_rotations, plan.progress
            )
            return
        for ks in plan.batches(range(self.n_rotations)):
            X_rots = rotate_columns(plan.X_scaled, plan.rotations[ks], plan.n_jobs)
            forests = _core.Forest.fit_many(
                X_rots, plan.y_core, plan.sample_weight, [params[k] for k in ks], plan.progress
            )
            yield from zip(X_rots, forests)

    # ---- phase 2: rank the rotations and weight them

    def _weight_rotations(self, complexity, oob_error, oob_sums, oob_counts, y, sample_weight):
        """Sets ``rotation_order_``, ``rotation_weights_`` and ``n_trees_per_rotation_``
        (the ``n_estimators`` trees spread over the rotations), and returns the latter."""
        R = self.n_rotations
        order = self._rank(complexity, oob_error)
        self.rotation_order_ = order
        ranked_weights = self._ranked_weights(
            order, oob_error, oob_sums, oob_counts, y, sample_weight
        )
        ranked_counts = allocate_trees(ranked_weights, self.n_estimators)
        weights = np.empty(R)
        weights[order] = ranked_weights
        counts = np.empty(R, dtype=np.int64)
        counts[order] = ranked_counts
        self.rotation_weights_ = weights
        self.n_trees_per_rotation_ = counts
        return counts

    # ---- phase 3: reuse the micro-forest trees, grow or drop the difference

    def _complete_forests(self, plan, forests, counts):
        """Every rotation's forest of ``counts[k]`` trees (None for none) from its
        micro-forest ``forests[k]``."""
        U, runner = self.micro_forest_size, plan.runner

        def complete(k):
            return self._complete_forest(plan, k, forests[k], counts[k])

        # (without a runner, only out-of-bag records of truncated forests are work enough
        # for threads of their own)
        n_calls = plan.n_calls if runner is not None or self.oob_score else 1
        forests = list(self._map(complete, range(self.n_rotations), n_calls, plan.progress))
        if runner is None:
            # the rotations' further trees, grown together as the micro-forests were
            for ks in plan.batches(k for k in range(self.n_rotations) if counts[k] > U):
                X_rots = (
                    [plan.rotated[k] for k in ks]
                    if plan.cache
                    else rotate_columns(plan.X_scaled, plan.rotations[ks], plan.n_jobs)
                )
                more = [int(counts[k] - U) for k in ks]
                completed = [forests[k] for k in ks]
                _core.Forest.fit_more_many(
                    completed, X_rots, plan.y_core, plan.sample_weight, more, plan.progress
                )
        return forests

    def _complete_forest(self, plan, k, forest, count):
        """Rotation k's micro-forest cut to ``count`` trees, or grown to them on the
        runner's workers; without a runner, a forest that needs more trees gets them
        afterwards (``_complete_forests``)."""
        U, runner = self.micro_forest_size, plan.runner
        if count == 0:
            return None
        if count < U and self.oob_score and runner is not None:
            # The core drops OOB records on truncate; a forest of the first
            # count trees (same seed, same trees) records them again.
            return runner.fit(
                plan.rotations[k],
                self._core_params(plan.fields, count, plan.n_jobs, plan.forest_seeds[k]),
            )
        if count < U:
            forest.truncate(int(count))
            if self.oob_score:
                # the record of the kept trees, summed as their fit sums it
                X_rot = plan.rotated[k] if plan.cache else self._rotate(plan.X_scaled, k, "F")
                forest.compute_oob(X_rot, plan.n_jobs)
        elif count > U and runner is not None:
            params = self._core_params(plan.fields, count, plan.n_jobs, plan.forest_seeds[k])
            runner.fit_more(forest, plan.rotations[k], params)
        elif count > U and not self.oob_score:
            # The micro-forest's OOB record has served the ranking; without it
            # (truncate drops it) the final trees walk no out-of-bag rows.
            forest.truncate(U)
        return forest

    @staticmethod
    def _map(function, items, n_jobs, progress):
        """``map`` in order, with up to ``n_jobs`` concurrent calls when n_jobs > 1: core
        calls in worker threads cannot see Ctrl-C, so an exception while waiting cancels
        them through ``progress`` (:func:`map_in_threads`)."""
        return map_in_threads(function, items, n_jobs, progress.cancel)

    def _rank(self, complexity, oob_error):
        """Rotation indices from best to worst for the chosen scheme (stable on ties)."""
        if self.weighting == "oob":
            return np.lexsort((complexity, oob_error))
        if self.weighting == "jnt":
            joint = rankdata(rankdata(oob_error) + rankdata(complexity))
            return np.lexsort((complexity, joint))
        return np.argsort(complexity, kind="stable")

    def _needs_micro_oob_sums(self):
        """Whether the weights need each rotation's out-of-bag sums beyond its error: the
        grid search of h on the weighted ensemble of the micro-forests."""
        return (
            self.weighting in ("cut", "exp")
            and self.h is None
            and self.h_criterion == "ensemble_oob"
        )

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
                stacklevel=8,  # the caller of fit
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

    def _n_threads(self) -> int:
        return resolve_n_jobs(self.n_jobs)

    def _rotated_inputs(self, X):
        """(k, core forest, X rotated by rotation k) of every rotation holding trees, in
        rotation order; X is validated and scaled once."""
        yield from self._rotated_scaled(self._scaled_input(X))

    def _rotated_scaled(self, X_scaled):
        """:meth:`_rotated_inputs` of rows already validated and scaled."""
        with one_blas_thread():
            for k, forest in self._rotation_forests():
                yield k, forest, self._rotate(X_scaled, k)

    def _mean_prediction(self, X):
        """Mean over all trees of their leaf values on their rotated inputs (of the state
        the fit left, read on ``self``: call it on ``_fitted()``)."""
        return self._mean_of_scaled(self._scaled_input(X))

    def _mean_of_scaled(self, X_scaled):
        """:meth:`_mean_prediction` of rows already validated and scaled (the rows
        ``obliqueforest.explain`` explains)."""
        n_jobs = self._n_threads()
        total = None
        for k, forest, X_rot in self._rotated_scaled(X_scaled):
            mean_k = self.n_trees_per_rotation_[k] * forest.predict(X_rot, n_jobs)
            total = mean_k if total is None else total + mean_k
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
        est = self._fitted()
        check_is_fitted(est)
        total = np.zeros(est.n_features_in_)
        for k, forest in est._rotation_forests():
            rotated = np.nan_to_num(forest.feature_importances())
            total += est.n_trees_per_rotation_[k] * (est.rotations_[k] ** 2 @ rotated)
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

        save(self._fitted(), path)

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
