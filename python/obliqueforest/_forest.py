"""scikit-learn estimators over the Rust projection-forest engine.

One generic estimator per task (:class:`ObliqueForestClassifier`,
:class:`ObliqueForestRegressor`) takes a projection distribution; the named
forests (RandomForest, SPORF, MORF) are thin presets that only choose it.
Python owns validation in scikit-learn's terms, label encoding and the API;
everything numeric happens in ``obliqueforest._core``.
"""

from __future__ import annotations

import contextvars
import warnings
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
from joblib.parallel import get_active_backend
from scipy import sparse
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, _fit_context
from sklearn.exceptions import DataConversionWarning
from sklearn.metrics import accuracy_score, r2_score
from sklearn.utils import check_random_state, compute_sample_weight
from sklearn.utils._param_validation import Interval, RealNotInt, StrOptions
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from . import _core
from ._progress import run_with_progress
from ._params import core_params, monotonic_cst_vector
from ._trees import PerTreeMixin, labels_of, output_blocks
from .projections import AxisAligned, SparseSigned, _Projection


def _validate_data(est, *args, **kwargs):
    """scikit-learn's ``validate_data``, refusing a sparse y with a ValueError as
    scikit-learn's forests do (its own check raises TypeError). Its finiteness check sums
    the data, which overflows on finite values near float32's limits: that says nothing
    about the data (each value is still checked), so numpy's warning is silenced."""
    if len(args) > 1 and sparse.issparse(args[1]):
        raise ValueError(
            "sparse multilabel-indicator for y is not supported: the forests take dense "
            "targets (pass y.toarray())"
        )
    with np.errstate(over="ignore", invalid="ignore"):
        return validate_data(est, *args, **kwargs)


__all__ = [
    "ObliqueForestClassifier",
    "ObliqueForestRegressor",
    "RandomForestClassifier",
    "RandomForestRegressor",
    "SPORFClassifier",
    "SPORFRegressor",
]

_F32_MAX = float(np.finfo(np.float32).max)

# Set (only) by obliqueforest.dask around a fit: ``grower(estimator, X32, y_core,
# sample_weight, params)`` grows the core forest in place of ``_core.Forest.fit``.
FOREST_GROWER: contextvars.ContextVar = contextvars.ContextVar("forest_grower", default=None)


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


TREE_PARAM_CONSTRAINTS: dict = {
    # the tree-growing parameters shared by every forest estimator of the package
    "max_depth": [Interval(Integral, 1, None, closed="left"), None],
    "min_samples_split": [
        Interval(Integral, 2, None, closed="left"),
        Interval(RealNotInt, 0.0, 1.0, closed="right"),
    ],
    "min_samples_leaf": [
        Interval(Integral, 1, None, closed="left"),
        Interval(RealNotInt, 0.0, 1.0, closed="neither"),
    ],
    "min_weight_fraction_leaf": [Interval(Real, 0.0, 0.5, closed="both")],
    "max_leaf_nodes": [Interval(Integral, 2, None, closed="left"), None],
    "min_impurity_decrease": [Interval(Real, 0.0, None, closed="left")],
    "bootstrap": ["boolean"],
    "max_samples": [
        None,
        Interval(RealNotInt, 0.0, None, closed="neither"),
        Interval(Integral, 1, None, closed="left"),
    ],
    "n_jobs": [Integral, None],
    "random_state": ["random_state"],
    "verbose": ["verbose"],
}


class _BaseForest(PerTreeMixin, BaseEstimator):
    """Shared machinery of every projection forest. Subclasses define ``__init__`` (so that
    scikit-learn sees their parameters) and ``_projection``."""

    _parameter_constraints: dict = {
        **TREE_PARAM_CONSTRAINTS,
        "n_estimators": [Interval(Integral, 1, None, closed="left")],
        "splitter": [StrOptions({"best", "random", "hist"})],
        "max_bins": [Interval(Integral, 2, 65536, closed="both")],
        "max_features": [
            Interval(Integral, 1, None, closed="left"),
            # a fraction of n_features; oblique samplers may use more than p candidates
            Interval(RealNotInt, 0.0, None, closed="neither"),
            StrOptions({"sqrt", "log2"}),
            None,
        ],
        "oob_score": ["boolean", callable],
        "ccp_alpha": [Interval(Real, 0.0, None, closed="left")],
        "monotonic_cst": ["array-like", None],
        "warm_start": ["boolean"],
    }

    # -- hooks ---------------------------------------------------------------------------
    def _projection(self, n_features: int):
        """The core's projection distribution (a ``_core.Projection``)."""
        raise NotImplementedError

    def _task_params(self, y) -> dict:
        raise NotImplementedError

    # -- fitting -------------------------------------------------------------------------
    def _core_params(self, n_features: int, task: dict):
        # cross-parameter rules (oob_score and max_samples need bootstrap, ...) and bounds
        # against the data are the core's ForestParams::check
        return core_params(
            **task,
            projection=self._projection(n_features),
            splitter=self.splitter,
            max_bins=self.max_bins,
            max_features=self.max_features,
            n_estimators=self.n_estimators,
            max_depth=self.max_depth,
            min_samples_split=self.min_samples_split,
            min_samples_leaf=self.min_samples_leaf,
            min_weight_fraction_leaf=self.min_weight_fraction_leaf,
            min_impurity_decrease=self.min_impurity_decrease,
            max_leaf_nodes=self.max_leaf_nodes,
            bootstrap=self.bootstrap,
            max_samples=self.max_samples,
            oob=self.oob_score,
            ccp_alpha=self.ccp_alpha,
            monotonic_cst=self.monotonic_cst,
            seed=self._seed,
            n_jobs=self._n_threads(),
        )

    def _n_threads(self) -> int:
        return resolve_n_jobs(self.n_jobs)

    def _fitted_model(self):
        """(core forest, classes_) of one fit, even while another thread refits.

        A fit sets ``classes_`` first, then ``_forest``, then ``_published`` (the pair);
        reading ``_published`` before ``_forest`` therefore gives the old pair, or a new
        forest whose ``classes_`` are already set: never one fit's forest with another's
        classes.
        """
        published = getattr(self, "_published", None)
        forest = self._forest
        if published is not None and published[0] is forest:
            return published
        return forest, getattr(self, "classes_", None)

    def _validate_X_predict(self, X):
        check_is_fitted(self, "_forest")
        # NaN is a missing value; infinity is refused by the core, in the pass that reads X
        X = _validate_data(
            self,
            X,
            dtype=[np.float32, np.float64],
            reset=False,
            ensure_all_finite=False,
            accept_sparse=SPARSE_FORMATS,
        )
        return core_X(X)

    def _fit_forest(self, X, y_core, sample_weight, task):
        """Grows (or, with warm_start, extends) the core forest."""
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
            if n_more == 0:
                warnings.warn(
                    "Warm-start fitting without increasing n_estimators does not fit new trees.",
                    UserWarning,
                    stacklevel=3,
                )
                if not (self.oob_score and not fitted.has_oob):
                    return
            # grown on a copy and swapped in: predictions from other threads meanwhile use
            # the old forest, whole
            grown = fitted.copy()
            if self.oob_score and not grown.has_oob:
                # oob_score switched on for a warm start: the existing trees' out-of-bag
                # rows follow from their seeds; the new trees add to the same sums
                grown.compute_oob(X32, self._n_threads())
            run_with_progress(
                lambda p: grown.fit_more(
                    X32,
                    y_core,
                    sw,
                    n_more,
                    p,
                    self._n_threads(),
                    self.ccp_alpha,
                    monotonic_cst_vector(self.monotonic_cst),
                ),
                n_more,
                self.verbose,
            )
            self._forest = grown
            return
        self._seed = self._draw_seed()
        self._n_samples_fit = X.shape[0]  # estimators_samples_ recomputes in-bag rows from it
        params = self._core_params(X.shape[1], task)
        self._forest = self._grow_core_forest(X32, y_core, sw, params)

    def _draw_seed(self) -> int:
        """The one seed of the core forest, drawn from ``random_state``."""
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
        X = self._validate_X_predict(X)
        return self._forest.apply(X, self._n_threads())

    @property
    def feature_importances_(self):
        """Impurity-based importances, shape (n_features,), summing to 1.

        A split's weighted impurity decrease is shared among the features of its projection
        in proportion to their absolute weights (Tomita et al. 2020).
        """
        check_is_fitted(self, "_forest")
        return self._forest.feature_importances()

    @property
    def projection_counts_(self):
        """How often each feature is part of a split projection, normalised to sum to 1
        (the count-based importance pi_k of Perry et al., Sect. 3.2), shape (n_features,)."""
        check_is_fitted(self, "_forest")
        return self._forest.projection_counts()

    @property
    def n_outputs_(self):
        """Target columns of the fit (1 for a 1-D y or a column vector)."""
        check_is_fitted(self, "_forest")
        return self._forest.n_targets

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

        save(self, path)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # NaN is a missing value (see "Missing values")
        tags.input_tags.sparse = True
        tags.non_deterministic = False
        tags.target_tags.multi_output = True  # a 2-D y grows multi-output trees
        return tags


class _ClassifierMixin(ClassifierMixin):
    """Classification half of the forests (label encoding, class weights, OOB)."""

    def _task_params(self, y):
        return {
            "task": "classification",
            # one count, or one per output (the core then grows multi-output trees)
            "n_classes": self.n_classes_,
            "n_outputs": y.shape[1] if y.ndim == 2 else 1,
            "criterion": self.criterion,
            "class_weight_subsample": self.class_weight == "balanced_subsample",
        }

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Grow the forest.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data; converted to float32. NaN marks a missing value (each split
            learns which child such rows go to); infinity is rejected. A scipy CSR/CSC
            matrix or array is used without densifying it, and grows the same forest as
            its dense array (sparse X may not hold NaN).
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Class labels; a 2-D y grows multi-output trees (one tree per estimator whose
            splits serve every output, each output with its own classes).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative sample weights; None means equal weights.

        Returns
        -------
        self : object
        """
        warm = self.warm_start and hasattr(self, "_forest")
        X, y = _validate_data(
            self,
            X,
            y,
            dtype=[np.float32, np.float64],
            ensure_all_finite="allow-nan",
            multi_output=True,
            reset=not warm,
            accept_sparse=SPARSE_FORMATS,
        )
        y = target_columns(y)
        check_classification_targets(y if y.shape[1] > 1 else y[:, 0])
        encoded = [np.unique(y[:, o], return_inverse=True) for o in range(y.shape[1])]
        classes = [c for c, _ in encoded]
        y_enc = np.stack([e for _, e in encoded], axis=1)
        if y.shape[1] == 1:
            classes, y_enc, y = classes[0], y_enc[:, 0], y[:, 0]
        if warm:
            old = self.classes_ if isinstance(self.classes_, list) else [self.classes_]
            new = classes if isinstance(classes, list) else [classes]
            if len(old) != len(new) or not all(map(np.array_equal, old, new)):
                raise ValueError("warm_start needs the same classes as the first fit")
        if self.oob_score and type_of_target(y_enc) == "multiclass-multioutput":
            raise ValueError(
                "The type of target cannot be used to compute OOB estimates. Got "
                "multiclass-multioutput while only the following are supported: continuous, "
                "continuous-multioutput, binary, multiclass, multilabel-indicator."
            )
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
                stacklevel=2,
            )
        if self.class_weight is not None and self.class_weight != "balanced_subsample":
            # scikit-learn's rules: a list of dicts (one per output) or "balanced" for 2-D y
            cw = compute_sample_weight(self.class_weight, y)
            sample_weight = cw if sample_weight is None else sample_weight * cw
        self._fit_forest(X, y_enc, sample_weight, self._task_params(y))
        self._published = (self._forest, self.classes_)
        if self.oob_score:
            self._set_oob(y_enc)
        return self

    def _set_oob(self, y_enc):
        sums, counts = self._forest.oob_prediction()
        warn_missing_oob(counts)
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
        return self._predict_proba_with_classes(X)[0]

    def _predict_proba_with_classes(self, X):
        X = self._validate_X_predict(X)
        forest, classes = self._fitted_model()
        raw = forest.predict(X, self._n_threads())
        if isinstance(classes, list):
            return output_blocks(raw, [len(c) for c in classes]), classes
        return raw, classes

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
        proba, classes = self._predict_proba_with_classes(X)
        return labels_of(proba, classes)


class _RegressorMixin(RegressorMixin):
    """Regression half of the forests."""

    def _task_params(self, y):
        return {
            "task": "regression",
            "n_classes": None,
            "n_outputs": y.shape[1] if y.ndim == 2 else 1,
            "criterion": self.criterion,
            "class_weight_subsample": False,
        }

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Grow the forest.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data; converted to float32. NaN marks a missing value (each split
            learns which child such rows go to); infinity is rejected. A scipy CSR/CSC
            matrix or array is used without densifying it, and grows the same forest as
            its dense array (sparse X may not hold NaN).
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Real targets; a 2-D y grows multi-output trees (one tree per estimator whose
            splits serve every output). ``criterion="poisson"`` needs y >= 0 with a
            positive sum.
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        self : object
        """
        X, y = _validate_data(
            self,
            X,
            y,
            dtype=[np.float32, np.float64],
            ensure_all_finite="allow-nan",
            multi_output=True,
            y_numeric=True,
            reset=not (self.warm_start and hasattr(self, "_forest")),
            accept_sparse=SPARSE_FORMATS,
        )
        y = np.asarray(target_columns(y), dtype=np.float64)
        if y.shape[1] == 1:
            y = y[:, 0]
        if sample_weight is not None:
            sample_weight = _check_sample_weight(sample_weight, X, dtype=np.float64)
        self._fit_forest(X, y, sample_weight, self._task_params(y))
        if self.oob_score:
            sums, counts = self._forest.oob_prediction()
            warn_missing_oob(counts, stacklevel=3)
            pred = sums / np.maximum(counts, 1)[:, None]
            self.oob_prediction_ = pred[:, 0] if y.ndim == 1 else pred
            scorer = self.oob_score if callable(self.oob_score) else r2_score
            self.oob_score_ = scorer(y, self.oob_prediction_)
        return self

    def predict(self, X):
        """Mean over trees of the leaf means, shape (n_samples,), or (n_samples, n_outputs)
        for a forest fitted on a 2-D y."""
        X = self._validate_X_predict(X)
        raw = self._forest.predict(X, self._n_threads())
        return raw[:, 0] if raw.shape[1] == 1 and self._forest.n_targets == 1 else raw


_CLF_CONSTRAINTS = {
    **_BaseForest._parameter_constraints,
    "criterion": [StrOptions({"gini", "entropy", "log_loss"})],
    "class_weight": [StrOptions({"balanced", "balanced_subsample"}), dict, list, None],
}
_REG_CONSTRAINTS = {
    **_BaseForest._parameter_constraints,
    "criterion": [StrOptions({"squared_error", "friedman_mse", "absolute_error", "poisson"})],
}
_PROJ_CONSTRAINTS = {"projection": [_Projection, None]}
_SPORF_CONSTRAINTS = {
    "feature_combinations": [Interval(Real, 0.0, None, closed="neither")],
    "scaling": [StrOptions({"robust"}), None],
}

_COMMON_DOC = """
    n_estimators : int, default=100
        Number of trees.
    criterion : str
        Impurity criterion: "gini", "entropy" or "log_loss" (the same as "entropy") for
        classification; "squared_error", "absolute_error" or "poisson" for regression.
        "friedman_mse" is squared error whose splits are scored by Friedman's improvement
        (scikit-learn's): the same splits as "squared_error" for one output (up to rounding),
        the difference of the outputs' summed means for several.
        "poisson" needs y >= 0 with a positive sum (else ValueError) and never splits a
        child to a zero sum. "absolute_error" predicts each leaf's weighted median and is
        the slowest criterion: its split search keeps running weighted medians (two heaps
        per output, O(n log n) per candidate and node, as scikit-learn's) and is always
        sort-based (no histograms). For a 2-D y the
        impurity is the mean over outputs, as in scikit-learn.
    max_depth : int, default=None
        Maximum depth; None grows until leaves are pure or another rule stops them.
    min_samples_split : int or float, default=2
        Minimum samples to split a node (a float is a fraction of n_samples).
    min_samples_leaf : int or float, default=1
        Minimum samples in each leaf (a float is a fraction of n_samples).
    min_weight_fraction_leaf : float, default=0.0
        Minimum fraction of the total sample weight in each leaf.
    max_leaf_nodes : int, default=None
        Grow best-first with at most this many leaves.
    min_impurity_decrease : float, default=0.0
        Split only if the weighted impurity decrease is at least this.
    bootstrap : bool, default=True
        Draw a bootstrap sample per tree.
    oob_score : bool or callable, default=False
        Estimate the generalisation score on out-of-bag samples. May be switched on for a
        warm start: the trees already grown find their out-of-bag rows from their seeds,
        giving the same estimate as a forest grown with it from the start.
    n_jobs : int, default=None
        Threads for fit and predict (-1 = all cores, capped at the cores). None follows an
        enclosing ``joblib.parallel_config(n_jobs=...)`` and is 1 otherwise, as in
        scikit-learn. Never changes the model.
    random_state : int, RandomState instance or None, default=None
        Seeds the forest; tree t draws from streams keyed by (seed, t).
    verbose : int, default=0
        Show a progress bar of grown trees.
    warm_start : bool, default=False
        Add trees to the fitted forest instead of growing a new one.
    max_samples : int or float, default=None
        Bootstrap draws per tree (with replacement): an int is a count, a float a multiple
        of n_samples; either may exceed n_samples, as scikit-learn 1.9 allows (at most
        2**32 - 1 draws). None draws n_samples.
    ccp_alpha : float, default=0.0
        Minimal cost-complexity pruning of each grown tree: the smallest subtree minimising
        ``R(T) + ccp_alpha * n_leaves(T)``, where R sums the leaves' weighted impurities
        (Breiman et al. 1984), as scikit-learn's trees; 0 prunes nothing. OOB estimates,
        importances and per-tree access see the pruned trees.
    monotonic_cst : array-like of int of shape (n_features,), default=None
        Monotonic constraint per feature, as in scikit-learn: 1 increasing, -1 decreasing,
        0 none. For regression and binary classification (on the probability of
        ``classes_[1]``); a ValueError for multiclass. Axis-aligned splits follow
        scikit-learn's rule (each split's children ordered, their values bounding their
        subtrees). Oblique projections too: a projection ``sum_j w_j x_j`` grows with
        feature j when ``w_j > 0``, so its split orders its children by the sign of
        ``w_j * monotonic_cst[j]``; a candidate whose constrained terms disagree in sign
        is not used. The forest's prediction is then monotonic in each constrained
        feature for every projection family.
    splitter : {"best", "random", "hist"}, default="best"
        "best" scans every threshold of each candidate projection; "random" draws one
        threshold per candidate (extremely randomized trees); "hist" scans ``max_bins``
        equal-width bins of the node's projected values on nodes of at least
        ``8 * max_bins`` rows (O(n) instead of a sort) and every threshold on smaller
        nodes. Thresholds are always midpoints between observed values. Whatever the
        splitter, candidates whose features take few distinct values (binary, counts,
        codes) are searched exactly through a histogram instead of a sort.
    max_bins : int, default=256
        Bins per candidate for ``splitter="hist"`` (2 to 65536); unused otherwise."""

_ATTR_DOC = """
    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,) or list of n_outputs such arrays
        Class labels (classifiers only); one array per output for a 2-D y.
    n_classes_ : int or list of int
        Number of classes (classifiers only); one count per output for a 2-D y.
    n_outputs_ : int
        Target columns of the fit (1 for a 1-D y).
    n_features_in_ : int
        Number of features seen in fit.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Column names, when X was a DataFrame with string column names.
    feature_importances_ : ndarray of shape (n_features,)
        Impurity-based importances, shared within a projection by |weight|.
    projection_counts_ : ndarray of shape (n_features,)
        Normalised count of split projections using each feature.
    oob_score_ : float
        Out-of-bag score (when ``oob_score`` is set).
    oob_decision_function_ : ndarray of shape (n_samples, n_classes) or (n_samples, n_classes, n_outputs)
        Out-of-bag class probabilities (classifiers, when ``oob_score`` is set); for a 2-D
        y, scikit-learn's layout (outputs with fewer classes zero-padded). As in
        scikit-learn, OOB estimates are refused for multiclass-multioutput targets.
    oob_prediction_ : ndarray of shape (n_samples,) or (n_samples, n_outputs)
        Out-of-bag predictions (regressors, when ``oob_score`` is set).

    References
    ----------
    .. [1] T. M. Tomita, J. Browne, C. Shen, J. Chung, J. L. Patsolic, B. Falk, C. E. Priebe,
       J. Yim, R. Burns, M. Maggioni, J. T. Vogelstein, "Sparse Projection Oblique Randomer
       Forests", JMLR 21(104):1-39, 2020.
    .. [2] L. Breiman, "Random Forests", Machine Learning 45(1):5-32, 2001.
"""


class ObliqueForestClassifier(_ClassifierMixin, _BaseForest):
    __doc__ = (
        """A projection forest classifier with a chosen projection distribution.

    Every split node samples ``max_features`` candidate projections from ``projection``
    and splits on the best (Tomita et al. 2020, Algorithm 1).

    Parameters
    ----------
    projection : projection object, default=None
        One of :mod:`obliqueforest.projections` (``AxisAligned()``,
        ``SparseSigned(...)``, ``ForestRC(...)``, ``Gaussian()``, ``Patch(...)``);
        None means ``SparseSigned()``.
    max_features : int, float, "sqrt", "log2" or None, default=1.0
        Number d of candidate projections per node: an int, a fraction of n_features
        (may exceed 1.0 for oblique projections), or None for n_features.
    class_weight : "balanced", "balanced_subsample", dict or None, default=None
        Class weights as in scikit-learn."""
        + _COMMON_DOC
        + _ATTR_DOC
    )
    _parameter_constraints = {**_CLF_CONSTRAINTS, **_PROJ_CONSTRAINTS}

    def __init__(
        self,
        projection=None,
        n_estimators=100,
        *,
        criterion="gini",
        max_depth=None,
        min_samples_split=2,
        min_samples_leaf=1,
        min_weight_fraction_leaf=0.0,
        max_features=1.0,
        max_leaf_nodes=None,
        min_impurity_decrease=0.0,
        bootstrap=True,
        oob_score=False,
        n_jobs=None,
        random_state=None,
        verbose=0,
        warm_start=False,
        class_weight=None,
        max_samples=None,
        ccp_alpha=0.0,
        monotonic_cst=None,
        splitter="best",
        max_bins=256,
    ):
        self.projection = projection
        self.n_estimators = n_estimators
        self.criterion = criterion
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_weight_fraction_leaf = min_weight_fraction_leaf
        self.max_features = max_features
        self.max_leaf_nodes = max_leaf_nodes
        self.min_impurity_decrease = min_impurity_decrease
        self.bootstrap = bootstrap
        self.oob_score = oob_score
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start
        self.class_weight = class_weight
        self.max_samples = max_samples
        self.ccp_alpha = ccp_alpha
        self.monotonic_cst = monotonic_cst
        self.splitter = splitter
        self.max_bins = max_bins

    def _projection(self, n_features):
        projection = SparseSigned() if self.projection is None else self.projection
        return projection._core_projection(n_features)


class ObliqueForestRegressor(_RegressorMixin, _BaseForest):
    __doc__ = (
        """A projection forest regressor with a chosen projection distribution.

    Parameters
    ----------
    projection : projection object, default=None
        One of :mod:`obliqueforest.projections`; None means ``SparseSigned()``.
    max_features : int, float, "sqrt", "log2" or None, default=1.0
        Number d of candidate projections per node."""
        + _COMMON_DOC
        + _ATTR_DOC
    )
    _parameter_constraints = {**_REG_CONSTRAINTS, **_PROJ_CONSTRAINTS}

    def __init__(
        self,
        projection=None,
        n_estimators=100,
        *,
        criterion="squared_error",
        max_depth=None,
        min_samples_split=2,
        min_samples_leaf=1,
        min_weight_fraction_leaf=0.0,
        max_features=1.0,
        max_leaf_nodes=None,
        min_impurity_decrease=0.0,
        bootstrap=True,
        oob_score=False,
        n_jobs=None,
        random_state=None,
        verbose=0,
        warm_start=False,
        max_samples=None,
        ccp_alpha=0.0,
        monotonic_cst=None,
        splitter="best",
        max_bins=256,
    ):
        self.projection = projection
        self.n_estimators = n_estimators
        self.criterion = criterion
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_weight_fraction_leaf = min_weight_fraction_leaf
        self.max_features = max_features
        self.max_leaf_nodes = max_leaf_nodes
        self.min_impurity_decrease = min_impurity_decrease
        self.bootstrap = bootstrap
        self.oob_score = oob_score
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start
        self.max_samples = max_samples
        self.ccp_alpha = ccp_alpha
        self.monotonic_cst = monotonic_cst
        self.splitter = splitter
        self.max_bins = max_bins

    def _projection(self, n_features):
        projection = SparseSigned() if self.projection is None else self.projection
        return projection._core_projection(n_features)


class RandomForestClassifier(ObliqueForestClassifier):
    __doc__ = (
        """Axis-aligned random forest classifier (Breiman 2001) on the obliqueforest engine.

    A preset of :class:`ObliqueForestClassifier` with ``AxisAligned()`` projections and
    scikit-learn's defaults.

    Parameters
    ----------
    max_features : int, float, "sqrt", "log2" or None, default="sqrt"
        Candidate features per node.
    class_weight : "balanced", "balanced_subsample", dict or None, default=None"""
        + _COMMON_DOC
        + _ATTR_DOC
    )
    _parameter_constraints = dict(_CLF_CONSTRAINTS)

    def __init__(
        self,
        n_estimators=100,
        *,
        criterion="gini",
        max_depth=None,
        min_samples_split=2,
        min_samples_leaf=1,
        min_weight_fraction_leaf=0.0,
        max_features="sqrt",
        max_leaf_nodes=None,
        min_impurity_decrease=0.0,
        bootstrap=True,
        oob_score=False,
        n_jobs=None,
        random_state=None,
        verbose=0,
        warm_start=False,
        class_weight=None,
        max_samples=None,
        ccp_alpha=0.0,
        monotonic_cst=None,
        splitter="best",
        max_bins=256,
    ):
        super().__init__(
            projection=None,
            n_estimators=n_estimators,
            criterion=criterion,
            max_depth=max_depth,
            min_samples_split=min_samples_split,
            min_samples_leaf=min_samples_leaf,
            min_weight_fraction_leaf=min_weight_fraction_leaf,
            max_features=max_features,
            max_leaf_nodes=max_leaf_nodes,
            min_impurity_decrease=min_impurity_decrease,
            bootstrap=bootstrap,
            oob_score=oob_score,
            n_jobs=n_jobs,
            random_state=random_state,
            verbose=verbose,
            warm_start=warm_start,
            class_weight=class_weight,
            max_samples=max_samples,
            ccp_alpha=ccp_alpha,
            monotonic_cst=monotonic_cst,
            splitter=splitter,
            max_bins=max_bins,
        )
        del self.projection

    def _projection(self, n_features):
        return AxisAligned()._core_projection(n_features)


class RandomForestRegressor(ObliqueForestRegressor):
    __doc__ = (
        """Axis-aligned random forest regressor (Breiman 2001) on the obliqueforest engine.

    Parameters
    ----------
    max_features : int, float, "sqrt", "log2" or None, default=1.0
        Candidate features per node (scikit-learn's regression default: all)."""
        + _COMMON_DOC
        + _ATTR_DOC
    )
    _parameter_constraints = dict(_REG_CONSTRAINTS)

    def __init__(
        self,
        n_estimators=100,
        *,
        criterion="squared_error",
        max_depth=None,
        min_samples_split=2,
        min_samples_leaf=1,
        min_weight_fraction_leaf=0.0,
        max_features=1.0,
        max_leaf_nodes=None,
        min_impurity_decrease=0.0,
        bootstrap=True,
        oob_score=False,
        n_jobs=None,
        random_state=None,
        verbose=0,
        warm_start=False,
        max_samples=None,
        ccp_alpha=0.0,
        monotonic_cst=None,
        splitter="best",
        max_bins=256,
    ):
        super().__init__(
            projection=None,
            n_estimators=n_estimators,
            criterion=criterion,
            max_depth=max_depth,
            min_samples_split=min_samples_split,
            min_samples_leaf=min_samples_leaf,
            min_weight_fraction_leaf=min_weight_fraction_leaf,
            max_features=max_features,
            max_leaf_nodes=max_leaf_nodes,
            min_impurity_decrease=min_impurity_decrease,
            bootstrap=bootstrap,
            oob_score=oob_score,
            n_jobs=n_jobs,
            random_state=random_state,
            verbose=verbose,
            warm_start=warm_start,
            max_samples=max_samples,
            ccp_alpha=ccp_alpha,
            monotonic_cst=monotonic_cst,
            splitter=splitter,
            max_bins=max_bins,
        )
        del self.projection

    def _projection(self, n_features):
        return AxisAligned()._core_projection(n_features)


class SPORFClassifier(ObliqueForestClassifier):
    __doc__ = (
        """Sparse Projection Oblique Randomer Forest classifier (Tomita et al. 2020).

    A preset of :class:`ObliqueForestClassifier` with ``SparseSigned`` projections:
    d = 2p candidate projections and lambda = 1.5/p (on average 1.5 features per
    projection), each feature's +-1 over its interquartile range (``scaling="robust"``),
    chosen on the paper's simulations and 20 real data sets
    (benches/results/sporf_defaults.md). The paper's SPORF (Sect. 5.2: d = p,
    lambda = 3/p, weights +-1 on the raw values) is
    ``max_features=1.0, feature_combinations=3.0, scaling=None``.

    Parameters
    ----------
    max_features : int, float, "sqrt", "log2" or None, default=2.0
        Number d of candidate projections per node; a float is a fraction of n_features and
        may exceed 1.0.
    feature_combinations : float, default=1.5
        Average number of features per projection (lambda * p), capped at n_features.
    scaling : {"robust"} or None, default="robust"
        "robust": a projection's weight on feature j is +-1/s_j, s_j the feature's
        interquartile range in the training data (its range when that is 0), so that
        projections add features in comparable units and the forest does not depend on
        the features' units (as an axis-aligned forest does not). None: +-1 on the raw
        values, as in the paper, which suits features that share one unit (pixels, the
        samples of a signal), where the scaling reweights features already comparable and
        can cost accuracy (benches/results/structured.md).
    class_weight : "balanced", "balanced_subsample", dict or None, default=None"""
        + _COMMON_DOC
        + _ATTR_DOC
    )
    _parameter_constraints = {**_CLF_CONSTRAINTS, **_SPORF_CONSTRAINTS}

    def __init__(
        self,
        n_estimators=100,
        *,
        criterion="gini",
        max_depth=None,
        min_samples_split=2,
        min_samples_leaf=1,
        min_weight_fraction_leaf=0.0,
        max_features=2.0,
        feature_combinations=1.5,
        scaling="robust",
        max_leaf_nodes=None,
        min_impurity_decrease=0.0,
        bootstrap=True,
        oob_score=False,
        n_jobs=None,
        random_state=None,
        verbose=0,
        warm_start=False,
        class_weight=None,
        max_samples=None,
        ccp_alpha=0.0,
        monotonic_cst=None,
        splitter="best",
        max_bins=256,
    ):
        super().__init__(
            projection=None,
            n_estimators=n_estimators,
            criterion=criterion,
            max_depth=max_depth,
            min_samples_split=min_samples_split,
            min_samples_leaf=min_samples_leaf,
            min_weight_fraction_leaf=min_weight_fraction_leaf,
            max_features=max_features,
            max_leaf_nodes=max_leaf_nodes,
            min_impurity_decrease=min_impurity_decrease,
            bootstrap=bootstrap,
            oob_score=oob_score,
            n_jobs=n_jobs,
            random_state=random_state,
            verbose=verbose,
            warm_start=warm_start,
            class_weight=class_weight,
            max_samples=max_samples,
            ccp_alpha=ccp_alpha,
            monotonic_cst=monotonic_cst,
            splitter=splitter,
            max_bins=max_bins,
        )
        del self.projection
        self.feature_combinations = feature_combinations
        self.scaling = scaling

    def _projection(self, n_features):
        return SparseSigned(
            feature_combinations=self.feature_combinations, scaling=self.scaling
        )._core_projection(n_features)


class SPORFRegressor(ObliqueForestRegressor):
    __doc__ = (
        """Sparse Projection Oblique Randomer Forest regressor (Tomita et al. 2020).

    Defaults d = 2p, lambda = 1.5/p and robust scaling as :class:`SPORFClassifier` (the
    paper's: ``max_features=1.0, feature_combinations=3.0, scaling=None``).

    Parameters
    ----------
    max_features : int, float, "sqrt", "log2" or None, default=2.0
        Number d of candidate projections per node.
    feature_combinations : float, default=1.5
        Average number of features per projection (lambda * p), capped at n_features.
    scaling : {"robust"} or None, default="robust"
        Each feature's +-1 over its interquartile range, or (None) on the raw values, as
        :class:`SPORFClassifier`."""
        + _COMMON_DOC
        + _ATTR_DOC
    )
    _parameter_constraints = {**_REG_CONSTRAINTS, **_SPORF_CONSTRAINTS}

    def __init__(
        self,
        n_estimators=100,
        *,
        criterion="squared_error",
        max_depth=None,
        min_samples_split=2,
        min_samples_leaf=1,
        min_weight_fraction_leaf=0.0,
        max_features=2.0,
        feature_combinations=1.5,
        scaling="robust",
        max_leaf_nodes=None,
        min_impurity_decrease=0.0,
        bootstrap=True,
        oob_score=False,
        n_jobs=None,
        random_state=None,
        verbose=0,
        warm_start=False,
        max_samples=None,
        ccp_alpha=0.0,
        monotonic_cst=None,
        splitter="best",
        max_bins=256,
    ):
        super().__init__(
            projection=None,
            n_estimators=n_estimators,
            criterion=criterion,
            max_depth=max_depth,
            min_samples_split=min_samples_split,
            min_samples_leaf=min_samples_leaf,
            min_weight_fraction_leaf=min_weight_fraction_leaf,
            max_features=max_features,
            max_leaf_nodes=max_leaf_nodes,
            min_impurity_decrease=min_impurity_decrease,
            bootstrap=bootstrap,
            oob_score=oob_score,
            n_jobs=n_jobs,
            random_state=random_state,
            verbose=verbose,
            warm_start=warm_start,
            max_samples=max_samples,
            ccp_alpha=ccp_alpha,
            monotonic_cst=monotonic_cst,
            splitter=splitter,
            max_bins=max_bins,
        )
        del self.projection
        self.feature_combinations = feature_combinations
        self.scaling = scaling

    def _projection(self, n_features):
        return SparseSigned(
            feature_combinations=self.feature_combinations, scaling=self.scaling
        )._core_projection(n_features)
