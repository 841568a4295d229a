"""The machinery every projection forest estimator shares: fitting (transactional),
predicting, and the classification and regression halves.

Subclasses declare their parameters (:mod:`obliqueforest._surface`) and say which
projection they sample (``_projection_object``); everything numeric happens in
``obliqueforest._core``.

**A fit is a transaction** (:mod:`obliqueforest._transaction`): ``fit`` works on a draft
of the estimator's state and publishes it in one step only when it succeeds, so a fit
refused or interrupted anywhere (scikit-learn's checks, the core's parameter check, the
memory guard, Ctrl-C, a bad y) leaves the previous model fully usable. Readers take the
state once (``_fitted()``), so predict, pickle and save running while another thread
refits see the old model or the new one, never parts of both.
"""

from __future__ import annotations

import contextlib
import contextvars
import warnings
from numbers import Real

import numpy as np
from scipy import sparse
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, _fit_context
from sklearn.metrics import accuracy_score, r2_score
from sklearn.utils import check_random_state, compute_sample_weight
from sklearn.utils.validation import _check_sample_weight, check_is_fitted

from . import _core
from ._outputs import labels_of, output_blocks
from ._params import core_fields, core_params
from ._progress import run_with_progress
from ._tables import (
    categorical_of,
    core_categorical,
    fit_columns,
    numeric_columns,
    predict_columns,
)
from ._transaction import TransactionalFit
from ._validation import (
    SPARSE_FORMATS,
    _validate_data,
    class_targets,
    core_X,
    resolve_n_jobs,
    target_columns,
    warn_missing_oob,
)

__all__ = [
    "FOREST_GROWER",
    "_BaseForest",
    "prepared_fit",
    "_ClassifierMixin",
    "_RegressorMixin",
    "path_indicator",
]

# Set (only) by obliqueforest.dask around a fit: ``grower(estimator, X32, y_core,
# sample_weight, params)`` grows the core forest in place of ``_core.Forest.fit``.
FOREST_GROWER: contextvars.ContextVar = contextvars.ContextVar("forest_grower", default=None)

# Set by prepared_fit: (seed, levels) for the fits inside it, None for a plain fit.
_PREPARED_FIT: contextvars.ContextVar = contextvars.ContextVar("prepared_fit", default=None)


@contextlib.contextmanager
def prepared_fit(seed, categories=None):
    """Within it, a forest estimator's ``fit`` grows its core forest from ``seed`` instead
    of a seed drawn from ``random_state``, and takes X's categorical columns as coded
    already: ``categories`` per column its levels (None for a numeric column) as
    :func:`obliqueforest._tables.fit_columns` records them, X holding their codes. The
    rest is ``fit``'s own path (targets, parameters, the grower of a cluster), but for the
    warning about rows no tree left out of its sample: the orchestrator reads the
    out-of-bag sums itself. For orchestrators that code a table and draw their forests'
    seeds themselves: the autoencoder's forests are fitted this way, and only the core
    forest (``_forest``) of such a fit is used (the estimator would code X's levels again
    to predict). The per-tree estimators keep their own seeds (``random_state`` names a
    forest's tree).
    """
    token = _PREPARED_FIT.set((int(seed), None if categories is None else list(categories)))
    try:
        yield
    finally:
        _PREPARED_FIT.reset(token)


def path_indicator(core, X, n_jobs):
    """The nodes each row of ``X`` (as the core takes it) passes through in every tree of
    the core forest ``core``, as scikit-learn's ``decision_path`` gives them: a CSR
    indicator of shape (n_samples, n_nodes) and ``n_nodes_ptr`` of shape (n_trees + 1,)."""
    indptr, indices, n_nodes_ptr = core.decision_path(X, n_jobs)
    data = np.ones(len(indices), dtype=np.int64)
    shape = (X.shape[0], int(n_nodes_ptr[-1]))
    return sparse.csr_matrix((data, indices, indptr), shape=shape), n_nodes_ptr


class _BaseForest(TransactionalFit, BaseEstimator):
    """Shared machinery of every projection forest (and of the per-tree estimators, which
    are forests of one tree). Subclasses declare a surface (their ``__init__`` is written
    from it) and define ``_projection_object``."""

    # (``_categories``: the levels of the categorical columns, set only when there are some)
    _private_fit_state = frozenset({"_forest", "_seed", "_n_samples_fit", "_categories"})

    def _extends_fit(self) -> bool:
        return bool(getattr(self, "warm_start", False)) and "_forest" in self.__dict__

    # -- hooks ---------------------------------------------------------------------------
    #: The registry tags of the families ``_projection_object`` may give (None: any
    #: registered family), declared by each savable estimator: the model file schema
    #: (:mod:`obliqueforest._schema`) lists them, so that the core's loader refuses a file
    #: whose forests grow another family.
    _projection_families: tuple | None

    def _projection_object(self):
        """The projection distribution, an object of :mod:`obliqueforest.projections`."""
        raise NotImplementedError

    def _projection(self, n_features: int):
        """The core's projection distribution (a ``_core.Projection``)."""
        return self._projection_object()._core_projection(n_features)

    def _task_params(self, y) -> dict:
        raise NotImplementedError

    # -- fitting -------------------------------------------------------------------------
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Grow the forest.

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame} of shape (n_samples, n_features)
            Training data; numeric columns converted to float32. NaN marks a missing value
            (each split learns which child such rows go to); infinity is rejected. A scipy
            CSR/CSC matrix or array is used without densifying it, and grows the same
            forest as its dense array (sparse X may not hold NaN). A pandas DataFrame (or
            pyarrow Table) may hold categorical columns (category, string, object or bool
            dtypes; see ``categorical_features``), which the trees split by sets of levels.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Class labels (classifiers) or real targets (regressors); a 2-D y grows
            multi-output trees (one tree per estimator whose splits serve every output,
            each output of a classifier with its own classes). ``criterion="poisson"``
            needs y >= 0 with a positive sum.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative sample weights; None means equal weights.

        Returns
        -------
        self : object
            Fitted; a fit that raises leaves the estimator as it was.
        """
        return self._transaction(type(self)._fit_draft, X, y, sample_weight)

    def _validate_fit_data(self, X, y, **kwargs):
        """scikit-learn's checks of a fit's X and y (features reset unless warm starting),
        after the categorical columns are coded (:func:`obliqueforest._tables.fit_columns`,
        which records their levels)."""
        warm = self.warm_start and hasattr(self, "_forest")
        prepared = _PREPARED_FIT.get()
        if prepared is not None and prepared[1] is not None:
            self._categories = prepared[1]  # X holds the codes of those levels
            coded = X
        else:
            coded = fit_columns(self, X, warm=warm)
        with numeric_columns(self, coded, fitting=not warm):
            return _validate_data(
                self,
                coded,
                y,
                dtype=[np.float32, np.float64],
                ensure_all_finite="allow-nan",
                multi_output=True,
                reset=not warm,
                accept_sparse=SPARSE_FORMATS,
                **kwargs,
            )

    def _core_fields(self) -> dict:
        """The core fields from this estimator's parameters (see ``core_params``)."""
        return core_fields(self)

    def _core_params(self, n_features: int, task: dict):
        # cross-parameter rules (oob_score and max_samples need bootstrap, ...) and bounds
        # against the data are the core's ForestParams::check
        return core_params(
            **task,
            **self._core_fields(),
            projection=self._projection(n_features),
            seed=self._seed,
            n_jobs=self._n_threads(),
            categorical=core_categorical(self),
        )

    def _n_threads(self) -> int:
        return resolve_n_jobs(self.n_jobs)

    def _validate_X_predict(self, X):
        check_is_fitted(self, "_forest")
        # categorical columns as the levels of the fit code them (a level never seen in
        # training is NaN: it goes with the missing values)
        coded = predict_columns(self, X)
        # NaN is a missing value; infinity is refused by the core, in the pass that reads X
        with numeric_columns(self, coded, fitting=False):
            X = _validate_data(
                self,
                coded,
                dtype=[np.float32, np.float64],
                reset=False,
                ensure_all_finite=False,
                accept_sparse=SPARSE_FORMATS,
            )
        # float32 in any memory order is read where it is (the core copies a block of rows
        # at a time when they are not row-major): predicting on a large Fortran-order or
        # memory-mapped X takes no copy of it
        return core_X(X, order="K")

    def _fit_forest(self, X, y_core, sample_weight, task):
        """Grows (or, with warm_start, extends) the core forest (on the draft of a fit)."""
        # Gathering a column over a node's rows is fastest in Fortran order, so a conversion
        # that copies anyway produces it. Float32 data the caller already has is passed as
        # it is: the core borrows it, or copies wide C-order data once, column by column
        # (two-valued columns as bits). Sparse X goes as its nonzeros (CSC is borrowed, CSR
        # transposed once).
        X32 = core_X(X, order="K" if X.dtype == np.float32 else "F")
        # several outputs: n × k row-major, as the core reads them
        y_core = np.ascontiguousarray(np.ravel(y_core), dtype=np.float64)
        sw = None if sample_weight is None else np.ascontiguousarray(sample_weight, np.float64)
        fitted = getattr(self, "_forest", None)
        if self.warm_start and fitted is not None:
            n_more = self.n_estimators - fitted.n_trees
            if n_more < 0:
                raise ValueError(
                    f"n_estimators={self.n_estimators} must be larger or equal to "
                    f"len(estimators_)={fitted.n_trees} when warm_start==True"
                )
            _check_same_random_state(self)
            # grown on a copy: the published forest is never changed
            grown = fitted.copy()
            # the trees added follow the current parameters, as scikit-learn's forests'
            # do; the core refuses, naming it, a parameter the fitted trees are read with
            params = self._core_params(X.shape[1], task)
            if self._core_fields().get("oob") and not grown.has_oob:
                # oob_score switched on for a warm start: the existing trees' out-of-bag
                # rows follow from their seeds; the new trees add to the same sums
                grown.compute_oob(X32, self._n_threads())
            run_with_progress(
                lambda p: grown.fit_more(X32, y_core, sw, params, n_more, p),
                n_more,
                self.verbose,
            )
            self._forest = grown
            return
        self._seed = self._draw_seed()
        self._n_samples_fit = X.shape[0]  # estimators_samples_ recomputes in-bag rows from it
        params = self._core_params(X.shape[1], task)
        self._forest = self._grow_core_forest(X32, y_core, sw, params)
        self.n_outputs_ = task["n_outputs"]

    def _no_new_trees(self) -> bool:
        """Whether this fit is a warm start that grows nothing: scikit-learn's warning when
        ``n_estimators`` did not grow; True (the fit changes nothing) unless it switches
        the OOB estimate on. Checked before the new targets are looked at, as
        scikit-learn does."""
        fitted = getattr(self, "_forest", None)
        if not (self.warm_start and fitted is not None and self.n_estimators == fitted.n_trees):
            return False
        warnings.warn(
            "Warm-start fitting without increasing n_estimators does not fit new trees.",
            UserWarning,
            stacklevel=6,
        )
        return not (self._core_fields().get("oob") and not fitted.has_oob)

    def _draw_seed(self) -> int:
        """The one seed of the core forest, drawn from ``random_state`` (or the seed of a
        :func:`prepared_fit`)."""
        prepared = _PREPARED_FIT.get()
        if prepared is not None:
            return prepared[0]
        return check_random_state(self.random_state).randint(0, 2**31 - 1)

    def _grow_core_forest(self, X32, y_core, sw, params):
        """Grows a new core forest from the prepared data and core parameters of ``fit``:
        here, or through the grower :mod:`obliqueforest.dask` installs in FOREST_GROWER to
        grow the trees on a cluster from the very same inputs."""
        grower = FOREST_GROWER.get()
        if grower is not None:
            return grower(self, X32, y_core, sw, params)
        return run_with_progress(
            lambda p: _core.Forest.fit(X32, y_core, sw, params, p), self.n_estimators, self.verbose
        )

    # -- shared API ----------------------------------------------------------------------
    def apply(self, X):
        """Leaf index reached in each tree.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        X_leaves : ndarray of shape (n_samples, n_estimators)
            Node index (within its tree) of the leaf each sample ends in.
        """
        est = self._fitted()
        X = est._validate_X_predict(X)
        return est._forest.apply(X, est._n_threads())

    def decision_path(self, X):
        """Nodes each row passes through in every tree.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        indicator : sparse matrix of shape (n_samples, n_nodes)
            CSR; entry (i, j) is 1 when row i passes through node j, where tree t's nodes are
            the columns ``n_nodes_ptr[t]:n_nodes_ptr[t + 1]``.
        n_nodes_ptr : ndarray of shape (n_estimators + 1,)
        """
        est = self._fitted()
        X = est._validate_X_predict(X)
        return path_indicator(est._forest, X, est._n_threads())

    @property
    def feature_importances_(self):
        """Impurity-based importances, shape (n_features,), summing to 1.

        A split's weighted impurity decrease is shared among the features of its projection
        in proportion to their absolute weights (Tomita et al. 2020).
        """
        check_is_fitted(self, "_forest")
        return self._forest.feature_importances()

    @property
    def is_categorical_(self):
        """Which columns were categorical at fit, a bool ndarray of shape (n_features_in_,)."""
        check_is_fitted(self)
        return categorical_of(self)

    @property
    def categories_(self):
        """Per column, None for a numeric one, else the ndarray of its levels (a list of
        n_features_in_ entries)."""
        check_is_fitted(self)
        levels = self.__dict__.get("_categories")
        return [None] * self.n_features_in_ if levels is None else list(levels)

    @property
    def projection_counts_(self):
        """How often each feature is part of a split projection, normalised to sum to 1
        (the count-based importance pi_k of Perry et al., Sect. 3.2), shape (n_features,)."""
        check_is_fitted(self, "_forest")
        return self._forest.projection_counts()

    @property
    def n_estimators_(self):
        """Number of fitted trees."""
        check_is_fitted(self, "_forest")
        return self._forest.n_trees

    def tree_stats(self):
        """Per-tree (n_nodes, max_depth, n_leaves), each an int array of shape (n_trees,)."""
        check_is_fitted(self, "_forest")
        return self._forest.tree_stats()

    def save(self, path):
        """Writes the fitted estimator to ``path`` in obliqueforest's safe model format.

        See :func:`obliqueforest.load`; unlike pickle, loading never executes code.
        """
        from ._io import save

        save(self._fitted(), path)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # NaN is a missing value (see "Missing values")
        tags.input_tags.sparse = True
        tags.non_deterministic = False
        tags.target_tags.multi_output = True  # a 2-D y grows multi-output trees
        # DataFrames with categorical columns (categorical_features)
        tags.input_tags.categorical = "categorical_features" in self.get_params(deep=False)
        return tags


class _ClassifierMixin(ClassifierMixin):
    """Classification half of the forests (label encoding, class weights, OOB)."""

    def _task_params(self, y):
        return {
            "task": "classification",
            # one count, or one per output (the core then grows multi-output trees)
            "n_classes": self.n_classes_,
            "n_outputs": y.shape[1] if y.ndim == 2 else 1,
        }

    def _fit_draft(self, X, y, sample_weight):
        warm = self.warm_start and hasattr(self, "_forest")
        X, y = self._validate_fit_data(X, y)
        if self._no_new_trees():
            return
        y = target_columns(y)
        classes, y_enc = class_targets(y, self.oob_score)
        if y.shape[1] == 1:
            y = y[:, 0]
        if warm:
            old = self.classes_ if isinstance(self.classes_, list) else [self.classes_]
            new = classes if isinstance(classes, list) else [classes]
            if len(old) != len(new) or not all(map(np.array_equal, old, new)):
                raise ValueError("warm_start needs the same classes as the first fit")
        self.classes_ = classes
        self.n_classes_ = [len(c) for c in classes] if isinstance(classes, list) else len(classes)
        if sample_weight is not None:
            sample_weight = _check_sample_weight(sample_weight, X, dtype=np.float64)
        if self.warm_start and self.class_weight in ("balanced", "balanced_subsample"):
            warnings.warn(
                f"class_weight={self.class_weight!r} with warm_start=True weighs each fit's "
                "classes by that fit's data: trees added on other data are balanced "
                "differently. For the same weights throughout, pass class_weight as a dict "
                "(e.g. from sklearn.utils.class_weight.compute_class_weight on all the data).",
                UserWarning,
                stacklevel=5,
            )
        if self.class_weight is not None and self.class_weight != "balanced_subsample":
            # scikit-learn's rules: a list of dicts (one per output) or "balanced" for 2-D y
            cw = compute_sample_weight(self.class_weight, y)
            sample_weight = cw if sample_weight is None else sample_weight * cw
        self._fit_forest(X, y_enc, sample_weight, self._task_params(y))
        if self.oob_score:
            self._set_oob(y_enc)

    def _set_oob(self, y_enc):
        sums, counts = self._forest.oob_prediction()
        if _PREPARED_FIT.get() is None:  # (an orchestrator reads the out-of-bag sums itself)
            warn_missing_oob(counts, stacklevel=7)
        mean = sums / np.maximum(counts, 1)[:, None]
        if y_enc.ndim == 1:
            self.oob_decision_function_ = mean
            pred = mean.argmax(axis=1)
        else:
            # scikit-learn's layout: (n_samples, n_classes, n_outputs)
            blocks = output_blocks(mean, self.n_classes_)
            oob = np.zeros((mean.shape[0], max(self.n_classes_), len(blocks)))
            for o, b in enumerate(blocks):
                oob[:, : b.shape[1], o] = b
            self.oob_decision_function_ = oob
            pred = oob.argmax(axis=1)
        scorer = self.oob_score if callable(self.oob_score) else accuracy_score
        self.oob_score_ = scorer(y_enc, pred)

    def predict_proba(self, X):
        """Class probabilities: the mean over trees of the leaves' class distributions.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes), or list of n_outputs such arrays
            One array per output (columns in the order of ``classes_[o]``) for a forest
            fitted on a 2-D y, as in scikit-learn.
        """
        return self._fitted()._proba(X)

    def _proba(self, X):
        X = self._validate_X_predict(X)
        raw = self._forest.predict(X, self._n_threads())
        if isinstance(self.classes_, list):
            return output_blocks(raw, [len(c) for c in self.classes_])
        return raw

    def predict_log_proba(self, X):
        """Log of :meth:`predict_proba` (an array, or a list per output)."""
        proba = self.predict_proba(X)
        with np.errstate(divide="ignore"):
            if isinstance(proba, list):
                return [np.log(p) for p in proba]
            return np.log(proba)

    def predict(self, X):
        """Most probable class, shape (n_samples,), or (n_samples, n_outputs) for a forest
        fitted on a 2-D y."""
        est = self._fitted()
        return labels_of(est._proba(X), est.classes_)


def _check_same_random_state(est):
    """A warm start continues the forest's own seed, drawn from the ``random_state`` of
    its first fit: refuses another one, which the new trees would not follow."""
    fitted = getattr(est, "_fit_params", {}).get("random_state", est.random_state)
    now = est.random_state
    same = now is fitted if isinstance(now, np.random.RandomState) else now == fitted
    if not same:
        raise ValueError(
            f"random_state={now!r} differs from the fitted forest's ({fitted!r}): a warm "
            "start grows its new trees from the forest's own seed, drawn at its first fit; "
            "set it back, or refit with warm_start=False"
        )


def _warn_fractional_frequencies(sample_weight):
    """Quantiles read sample weights as frequencies (a weight of 2: the row twice), so
    weights that are mostly well below 1 leave each leaf a fraction of an observation, and
    the interpolation degenerates to the leaves' smallest targets: say so at fit."""
    positive = sample_weight[sample_weight > 0]
    mean = float(positive.mean()) if positive.size else 0.0
    if mean < 0.5:
        warnings.warn(
            f"sample_weight has a mean of {mean:.3g} over its positive entries; quantiles "
            "treat sample weights as frequencies (a weight of 2 counts a row twice), so "
            "weights mostly below 1 shrink each leaf's sample below its rows: multiply "
            "them by a constant so that a typical row weighs 1 (e.g. by n_samples for "
            "weights normalised to sum to 1)",
            UserWarning,
            stacklevel=6,
        )


class _RegressorMixin(RegressorMixin):
    """Regression half of the forests."""

    def _task_params(self, y):
        return {
            "task": "regression",
            "n_classes": None,
            "n_outputs": y.shape[1] if y.ndim == 2 else 1,
        }

    def _fit_draft(self, X, y, sample_weight):
        X, y = self._validate_fit_data(X, y, y_numeric=True)
        if self._no_new_trees():
            return
        y = np.asarray(target_columns(y), dtype=np.float64)
        if y.shape[1] == 1:
            y = y[:, 0]
        if sample_weight is not None:
            sample_weight = _check_sample_weight(sample_weight, X, dtype=np.float64)
            if getattr(self, "store_leaf_values", False):
                _warn_fractional_frequencies(sample_weight)
        self._fit_forest(X, y, sample_weight, self._task_params(y))
        if self.oob_score:
            sums, counts = self._forest.oob_prediction()
            if _PREPARED_FIT.get() is None:
                warn_missing_oob(counts, stacklevel=6)
            pred = sums / np.maximum(counts, 1)[:, None]
            self.oob_prediction_ = pred[:, 0] if y.ndim == 1 else pred
            scorer = self.oob_score if callable(self.oob_score) else r2_score
            self.oob_score_ = scorer(y, self.oob_prediction_)

    def predict(self, X):
        """Mean over trees of the leaf means, shape (n_samples,), or (n_samples, n_outputs)
        for a forest fitted on a 2-D y."""
        est = self._fitted()
        X = est._validate_X_predict(X)
        raw = est._forest.predict(X, est._n_threads())
        return raw[:, 0] if raw.shape[1] == 1 and est._forest.n_targets == 1 else raw

    # -- quantile regression forests ------------------------------------------------------
    def predict_quantiles(self, X, quantiles=(0.05, 0.5, 0.95)):
        """Conditional quantiles of the target (quantile regression forests, Meinshausen
        2006), from the training targets in the leaves each row reaches.

        Needs a forest fitted with ``store_leaf_values=True``. Each tree gives the training
        rows of the row's leaf their share of the leaf (bootstrap count x sample weight
        over the leaf's total); the forest's weights are the mean over trees, and a
        quantile is numpy's default ("linear") quantile of the targets repeated as often
        as their weights say (extended to real weights): the definitions of the
        quantile-forest package's ``predict(weighted_quantile=True,
        weighted_leaves=True)``. Sample weights are frequency weights: a fit with whole
        number weights gives the quantiles of the same fit on the rows repeated that many
        times (weights that are mostly far below 1, e.g. normalised to sum to 1, leave a
        leaf less than one observation: fit warns about them). The loops
        run in the core.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        quantiles : float or array-like of float, default=(0.05, 0.5, 0.95)
            Quantiles in [0, 1].

        Returns
        -------
        y_quantiles : ndarray of shape (n_samples, n_quantiles)
            For a forest fitted on a 2-D y, shape (n_samples, n_outputs, n_quantiles); a
            float ``quantiles`` drops the last axis.
        """
        est = self._fitted()
        qs, scalar = _check_quantiles(quantiles)
        X = est._validate_X_predict(X)
        return est._quantile_layout(est._forest.predict_quantiles(X, qs, est._n_threads()), scalar)

    def oob_quantiles(self, X, quantiles=(0.05, 0.5, 0.95)):
        """Out-of-bag quantiles of the training rows: each row's quantiles from the trees
        whose bootstrap sample left it out (as :meth:`predict_quantiles` otherwise), for
        calibrating intervals (conformalised quantile regression, see docs/quantile_honest.md).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The training rows of the fit, in their order.
        quantiles : float or array-like of float, default=(0.05, 0.5, 0.95)

        Returns
        -------
        y_quantiles : ndarray of shape (n_samples, n_quantiles)
            As :meth:`predict_quantiles`; NaN for a row that every tree drew (with a
            warning, as scikit-learn's OOB estimates).
        """
        est = self._fitted()
        qs, scalar = _check_quantiles(quantiles)
        X = est._validate_X_predict(X)
        out = est._forest.predict_quantiles(X, qs, est._n_threads(), oob=True)
        if np.isnan(out).any():
            warn_missing_oob(np.zeros(1), stacklevel=3)
        return est._quantile_layout(out, scalar)

    def predict_interval(self, X, coverage=0.9):
        """Prediction intervals from :meth:`predict_quantiles`: the ``(1 - coverage) / 2``
        and ``(1 + coverage) / 2`` conditional quantiles.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        coverage : float in (0, 1), default=0.9
            The nominal probability that the target lies in its interval.

        Returns
        -------
        interval : ndarray of shape (n_samples, 2)
            Lower and upper bounds; (n_samples, n_outputs, 2) for a 2-D y.
        """
        if not (isinstance(coverage, Real) and 0.0 < coverage < 1.0):
            raise ValueError(f"coverage must be a float in (0, 1), got {coverage!r}")
        half = (1.0 - float(coverage)) / 2.0
        return self.predict_quantiles(X, (half, 1.0 - half))

    def _quantile_layout(self, out, scalar):
        """The core's (n_samples, n_outputs, n_quantiles) in the estimator's layout."""
        if self._forest.n_targets == 1:
            out = out[:, 0, :]
        return out[..., 0] if scalar else out


def _check_quantiles(quantiles):
    """``quantiles`` as a list of floats in [0, 1], and whether it was one float.

    Raises
    ------
    ValueError
        For no quantiles, a quantile outside [0, 1] or NaN, or values that are not numbers.
    """
    scalar = isinstance(quantiles, Real)
    try:
        qs = np.asarray([quantiles] if scalar else quantiles, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"quantiles must be floats in [0, 1], got {quantiles!r}") from None
    if qs.ndim != 1 or qs.size == 0 or not np.all((qs >= 0.0) & (qs <= 1.0)):
        raise ValueError(f"quantiles must be floats in [0, 1], got {quantiles!r}")
    return qs.tolist(), scalar
