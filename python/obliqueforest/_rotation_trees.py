"""The trees of the rotation ensembles, as scikit-learn's forests offer theirs.

A rotation ensemble is a forest of axis-aligned trees, each grown on one rotation of the
scaled data. Its trees are :class:`RotationTreeClassifier` / :class:`RotationTreeRegressor`
estimators: the per-tree estimators of the projection forests
(:class:`~obliqueforest._trees.ObliqueTreeClassifier`, with their ``get_params``,
``clone``, ``fit``, ``apply``, ``decision_path`` and ``tree_``) that read X through a
per-feature scaling and a rotation: a tree splits on the columns of ``scale(X) @ Q``, so
its ``predict``, ``predict_proba``, ``apply`` and ``decision_path`` take X as the ensemble
does, and its ``tree_`` is in the rotated coordinates.

``ensemble.estimators_`` lists the trees rotation by rotation (in the order of
``rotations_``; within a rotation, in the order the core grew them), which is the order of
``apply``, ``decision_path`` and ``estimators_samples_``. Each is a view of its rotation's
core forest carrying the ensemble's fitted scaling and its rotation. The ensemble weighs
every tree equally, so the mean of the trees' predictions is the ensemble's::

    per_tree = np.stack([t.predict_proba(X) for t in ensemble])  # (M, n_samples, n_classes)
    per_tree.mean(axis=0)                                         # == ensemble.predict_proba(X)
"""

from __future__ import annotations

from numbers import Integral
from typing import Any

import numpy as np
from scipy import sparse
from sklearn.base import ClassifierMixin
from sklearn.utils._param_validation import Interval, RealNotInt, StrOptions
from sklearn.utils.validation import check_is_fitted

from ._base import path_indicator
from ._rotation_math import ScalingMixin, one_blas_thread, rotate
from ._surface import Param
from ._trees import (
    ObliqueTreeClassifier,
    ObliqueTreeRegressor,
    PerTreeMixin,
    _tree_surface,
    _TreeMixin,
)
from .projections import AxisAligned

__all__ = ["RotationTreeClassifier", "RotationTreeRegressor", "RotationTreesMixin"]

#: ``max_features`` of axis-aligned trees: at most every feature.
AXIS_MAX_FEATURES = [
    Interval(Integral, 1, None, closed="left"),
    Interval(RealNotInt, 0.0, 1.0, closed="right"),
    StrOptions({"sqrt", "log2"}),
    None,
]

#: The scaling before the rotation; the ensembles declare it with their own words.
SCALING = Param(
    "scaling",
    "minmax",
    [StrOptions({"minmax", "rank"}), None],
    '{"minmax", "rank"} or None',
    """Applied to each feature before rotating, fitted on the training data, as the
    rotation ensembles' ``scaling``: ``"minmax"`` maps the training range to [0, 1],
    ``"rank"`` a value to its rank among the distinct training values over their number
    minus one, None leaves the features as given.""",
)

ROTATION = Param(
    "rotation",
    None,
    ["array-like", None],
    "array-like of shape (n_features, n_features) or None",
    """The orthogonal matrix Q the tree sees the data through: it splits on the columns of
    ``scale(X) @ Q``. None is the identity.""",
)

# the rotation ensembles grow axis-aligned trees with the best splitter, unpruned and
# unconstrained, without screening: their trees have none of these parameters
_NOT_ROTATION_TREE_PARAMS = (
    "projection",
    "splitter",
    "max_bins",
    "ccp_alpha",
    "monotonic_cst",
    "candidate_samples",
)


def _rotation_tree_surface(task):
    return (
        _tree_surface(task)
        # a rotation mixes columns: the ensembles and their trees take numeric columns only
        .without("categorical")
        .drop(*_NOT_ROTATION_TREE_PARAMS)
        .replace("max_features", constraints=AXIS_MAX_FEATURES)
        .insert([ROTATION, SCALING])
    )


class _RotationTreeMixin(ScalingMixin):
    """An axis-aligned tree grown on ``scale(X) @ rotation``; the rest is the per-tree
    estimators' (:class:`~obliqueforest._trees._TreeMixin`)."""

    _private_fit_state = _TreeMixin._private_fit_state | ScalingMixin._SCALING_STATE

    def _projection_object(self):
        return AxisAligned()

    def _rotation_matrix(self, n_features: int):
        """The ``rotation`` parameter checked against X's features (None: the identity)."""
        if self.rotation is None:
            return np.eye(n_features)
        try:
            Q = np.array(self.rotation, dtype=np.float64)
        except (TypeError, ValueError) as e:
            raise ValueError(f"rotation must be a matrix of numbers: {e}") from None
        if Q.shape != (n_features, n_features):
            raise ValueError(
                f"rotation has shape {Q.shape}; X has {n_features} features, so it must be "
                f"({n_features}, {n_features})"
            )
        if not np.all(np.isfinite(Q)) or not np.allclose(
            Q.T @ Q, np.eye(n_features), rtol=0.0, atol=1e-6
        ):
            raise ValueError("rotation must be an orthogonal matrix (rotation.T @ rotation = I)")
        return Q

    def _validate_fit_data(self, X, y, **kwargs):
        """X and y checked as the ensembles check them, the scaling fitted and X rotated
        (float32 in the core's column order, as the ensembles grow their trees on it)."""
        X, y = super()._validate_fit_data(X, y, **kwargs)
        self.rotation_ = self._rotation_matrix(X.shape[1])
        scaled = self._fit_scaling(X)
        with one_blas_thread():
            return rotate(scaled, self.rotation_, "F"), y

    def _validate_X_predict(self, X):
        scaled = self._scaled_input(X)
        with one_blas_thread():
            return rotate(scaled, self.rotation_, "C")

    def _split_feature_names(self):
        """The names :mod:`obliqueforest.interpret` gives the features this tree splits on:
        ``r0, r1, ...``, the columns of ``scale(X) @ rotation_``."""
        check_is_fitted(self)
        return [f"r{j}" for j in range(self.n_features_in_)]

    @property
    def feature_importances_(self):
        """Impurity importances mapped back to the input features as the ensembles map
        theirs: rotated feature j's importance is shared among the inputs by the squared
        loadings ``rotation_[:, j] ** 2`` (which sum to 1), shape (n_features_in_,).
        ``tree_.compute_feature_importances()`` gives those of the rotated features."""
        rotated = np.nan_to_num(self._tree_importances())  # (NotFittedError first)
        return self.rotation_**2 @ rotated


_TREE_DOC = """One axis-aligned tree of a rotation ensemble: grown on ``scale(X) @ rotation``
    (no bootstrap), it reads every X it is given the same way.

    The trees of a fitted :class:`RotationEnsemble{task}` (``ensemble.estimators_``,
    ``ensemble[i]``, iteration) are of this class: each carries the ensemble's fitted
    scaling and its rotation (``rotation_``, also its ``rotation`` parameter), so
    ``predict``{proba}, ``apply`` and ``decision_path`` take X as the ensemble does, and
    the mean of the trees' predictions is the ensemble's. ``ensemble.estimator`` is the
    template (the identity rotation).

    A tree fitted on its own fits the scaling on the rows it is given. With
    ``scaling=None`` (or rows over which the scaling comes out the same),
    ``clone(tree).fit(X[rows], y[rows])`` on tree t's in-bag rows
    (``rows = ensemble.estimators_samples_[t]``) regrows tree t; the ensemble's trees
    were grown on data scaled over all its training rows. Pickled, a tree carries its own
    tree, its rotation and the fitted scaling (the distinct training values of every
    feature for ``scaling="rank"``), not the ensemble.

    :func:`obliqueforest.interpret.export_text` and ``decision_path_rules`` write the
    rules of such a tree on its rotated coordinates, named ``r0, r1, ...`` (column j of
    ``scale(X) @ rotation_``)."""

_TREE_ATTR_DOC = """
    Attributes
    ----------
    rotation_ : ndarray of shape (n_features_in_, n_features_in_)
        The rotation the tree splits on: feature j of ``tree_`` is column j of
        ``scale(X) @ rotation_``.
    tree_ : TreeNodes
        The node arrays, in the rotated coordinates. Its ``apply`` and ``decision_path``
        take X as the tree does (scaling and rotating it); ``compute_feature_importances``
        gives the importances of the rotated features.
    classes_ : ndarray of shape (n_classes,) or list of n_outputs such arrays
        Classifiers only.
    n_classes_ : int or list of int
        Classifiers only.
    n_outputs_ : int
    n_features_in_ : int
    feature_importances_ : ndarray of shape (n_features_in_,)
        This tree's impurity-based importances mapped back to the input features by the
        squared loadings of its rotation, summing to 1 (0 everywhere for a single leaf).
"""


@_rotation_tree_surface("classification").declare(
    _TREE_DOC.format(task="Classifier", proba=", ``predict_proba``"), _TREE_ATTR_DOC
)
class RotationTreeClassifier(_RotationTreeMixin, ObliqueTreeClassifier):
    # generated from the parameter table by `python -m obliqueforest._signatures`: do not edit
    # fmt: off
    def __init__(
        self, *, rotation: Any = None, scaling: Any = "minmax", criterion: Any = "gini",
        max_depth: Any = None, min_samples_split: Any = 2, min_samples_leaf: Any = 1,
        min_weight_fraction_leaf: Any = 0.0, max_features: Any = 1.0, random_state: Any = None,
        max_leaf_nodes: Any = None, min_impurity_decrease: Any = 0.0, class_weight: Any = None,
    ):
        self.rotation = rotation
        self.scaling = scaling
        self.criterion = criterion
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_weight_fraction_leaf = min_weight_fraction_leaf
        self.max_features = max_features
        self.random_state = random_state
        self.max_leaf_nodes = max_leaf_nodes
        self.min_impurity_decrease = min_impurity_decrease
        self.class_weight = class_weight
    # fmt: on


@_rotation_tree_surface("regression").declare(
    _TREE_DOC.format(task="Regressor", proba=""), _TREE_ATTR_DOC
)
class RotationTreeRegressor(_RotationTreeMixin, ObliqueTreeRegressor):
    # generated from the parameter table by `python -m obliqueforest._signatures`: do not edit
    # fmt: off
    def __init__(
        self, *, rotation: Any = None, scaling: Any = "minmax", criterion: Any = "squared_error",
        max_depth: Any = None, min_samples_split: Any = 2, min_samples_leaf: Any = 1,
        min_weight_fraction_leaf: Any = 0.0, max_features: Any = 1.0, random_state: Any = None,
        max_leaf_nodes: Any = None, min_impurity_decrease: Any = 0.0,
    ):
        self.rotation = rotation
        self.scaling = scaling
        self.criterion = criterion
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_weight_fraction_leaf = min_weight_fraction_leaf
        self.max_features = max_features
        self.random_state = random_state
        self.max_leaf_nodes = max_leaf_nodes
        self.min_impurity_decrease = min_impurity_decrease
    # fmt: on


class RotationTreesMixin(PerTreeMixin):
    """``estimators_``, ``estimator``, indexing, ``apply``, ``decision_path`` and
    ``estimators_samples_`` for the rotation ensembles (mixed into
    ``_BaseRotationEnsemble``)."""

    def _tree_class(self):
        return (
            RotationTreeClassifier if isinstance(self, ClassifierMixin) else RotationTreeRegressor
        )

    def _check_trees(self):
        check_is_fitted(self)

    def _rotation_forests(self):
        """(k, core forest) of every rotation that holds trees, in rotation order."""
        return [(k, f) for k, f in enumerate(self._forests) if f is not None]

    def _tree_sources(self):
        return [(f, t) for _, f in self._rotation_forests() for t in range(f.n_trees)]

    def _tree_fitted(self, core) -> dict:
        fitted = super()._tree_fitted(core)
        fitted.update({k: v for k, v in self.__dict__.items() if k in self._SCALING_STATE})
        return fitted

    @property
    def estimators_(self):
        """The fitted trees, a list of :class:`RotationTreeClassifier` or
        :class:`RotationTreeRegressor` of length n_estimators, rotation by rotation."""
        est = self._fitted()
        est._check_trees()
        params, cls = est._tree_params(), est._tree_class()
        trees = []
        for k, core in est._rotation_forests():
            rotation = est.rotations_[k]
            fitted = {**est._tree_fitted(core), "rotation_": rotation}
            rotated = {**params, "rotation": rotation}
            trees += [cls._view(core, t, rotated, fitted) for t in range(core.n_trees)]
        return trees

    def apply(self, X):
        """Leaf index reached in each tree.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        X_leaves : ndarray of shape (n_samples, n_estimators)
            Node index (within its tree) of the leaf each sample ends in, trees in the
            order of ``estimators_``.
        """
        est = self._fitted()
        n_jobs = est._n_threads()
        return np.hstack([f.apply(X_rot, n_jobs) for _, f, X_rot in est._rotated_inputs(X)])

    def decision_path(self, X):
        """Nodes each row passes through in every tree.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        indicator : sparse matrix of shape (n_samples, n_nodes)
            CSR; entry (i, j) is 1 when row i passes through node j, where tree t's nodes
            (trees in the order of ``estimators_``) are the columns
            ``n_nodes_ptr[t]:n_nodes_ptr[t + 1]``.
        n_nodes_ptr : ndarray of shape (n_estimators + 1,)
        """
        est = self._fitted()
        n_jobs = est._n_threads()
        blocks, ptrs = [], [np.zeros(1, dtype=np.int64)]
        for _, forest, X_rot in est._rotated_inputs(X):
            indicator, n_nodes_ptr = path_indicator(forest, X_rot, n_jobs)
            blocks.append(indicator)
            ptrs.append(n_nodes_ptr[1:] + ptrs[-1][-1])
        return sparse.hstack(blocks, format="csr"), np.concatenate(ptrs)
