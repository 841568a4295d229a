"""Manifold Oblique Random Forests (MORF): patch projections for images, time series,
multi-channel and cyclic data.

The estimators are presets of the generic projection forests whose sampler draws
contiguous patches (Perry et al., Sect. 3.1); the tree engine is the same.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted

from ._forest import (
    _ATTR_DOC,
    _CLF_CONSTRAINTS,
    _COMMON_DOC,
    _REG_CONSTRAINTS,
    ObliqueForestClassifier,
    ObliqueForestRegressor,
)
from .projections import HaarPatch, Patch, PooledFilter

__all__ = ["MORFClassifier", "MORFRegressor"]

_GEOMETRY_CONSTRAINTS = {
    "data_shape": [tuple, list, Interval(Integral, 1, None, closed="left"), None],
    "channel_axis": [Integral, None],
    "min_patch_size": [tuple, list, Interval(Integral, 1, None, closed="left")],
    "max_patch_size": [tuple, list, Interval(Integral, 1, None, closed="left"), None],
    "periodic": ["boolean", tuple, list],
    "differences": [Interval(Real, 0, 1, closed="both")],
    "pooled": [Interval(Real, 0, 1, closed="both")],
}

_GEOMETRY_DOC = """
    data_shape : tuple of int, default=None
        Shape of one sample, e.g. ``(28, 28)`` for an image, ``(100,)`` for a series,
        ``(channels, length)`` or ``(channels, height, width)``; its product must equal
        n_features. None means a 1-D series of length n_features.
    channel_axis : int, default=None
        Axis of ``data_shape`` holding channels. Patches are contiguous along the other axes
        and span a random non-empty subset of channels.
    min_patch_size, max_patch_size : int or tuple of int, default=1 and None
        Patch size bounds, one entry per non-channel axis (an int applies to every axis).
        A size is drawn uniformly between them. ``max_patch_size=None`` means a quarter of
        each axis, and at most 2 when ``differences > 0`` (the default; at least
        ``min_patch_size``): small windows and their differences keep the local structure
        that wide sums average away (benches/results/structured.md).
    periodic : bool or tuple of bool, default=False
        Whether each non-channel axis wraps around (cyclic data, e.g. angles).
    differences : float in [0, 1], default=0.5
        Probability that a candidate is the difference of two adjacent patches of the same
        shape (a Haar-like edge filter, :class:`~obliqueforest.projections.HaarPatch`)
        rather than a sum over one patch, among the candidates that are not pooled filters
        (below).
    pooled : float in [0, 1], default=0.25
        Probability that a candidate is a pooled filter instead: a small filter (a sum, a
        first or a second difference, cells of 1-3 positions) slid along one axis of a
        window, keeping its largest or smallest response
        (:class:`~obliqueforest.projections.PooledFilter`), which finds a pattern wherever
        it moved. 0.25 takes mnist1d from 82.7% to 90.7% test accuracy and keeps digits
        ahead of RF and SPORF (benches/results/structured.md). ``differences=0,
        pooled=0`` gives the paper's MORF (sums only).
    max_features : int, float, "sqrt", "log2" or None, default=0.25
        Number d of candidate patches per node (a float is a fraction of n_features): a
        quarter of n_features by default, which wins on digits and mnist1d
        (benches/results/structured.md; "sqrt" was the default before)."""

_MORF_REF = """
    .. [3] A. Li, R. Perry, C. Huynh, T. M. Tomita, R. Mehta, J. Arroyo, J. Patsolic,
       B. Falk, S. Sarma, J. T. Vogelstein, "Manifold Oblique Random Forests: Towards
       Closing the Gap on Convolutional Deep Networks" (Perry et al., MORF).
"""


class _MORFMixin:
    #: Values of parameters a model file written before they existed lacks: such a forest
    #: has no pooled filters, and one from before Haar patches none of those either (model
    #: files; see ``_io._params``).
    _added_param_values = {"pooled": 0.0, "differences": 0.0}

    def _patch(self):
        geometry = (
            self.data_shape,
            self.channel_axis,
            self.min_patch_size,
            self.max_patch_size,
            self.periodic,
        )
        if self.pooled > 0:
            return PooledFilter(*geometry, differences=self.differences, pooled=self.pooled)
        if self.differences == 0:
            return Patch(*geometry)
        return HaarPatch(*geometry, differences=self.differences)

    def _projection(self, n_features):
        return self._patch()._core_projection(n_features)

    def _shape(self):
        check_is_fitted(self, "_forest")
        return tuple(self._patch().resolve(self.n_features_in_)["data_shape"])

    def feature_importance_map(self, kind="impurity"):
        """Importances reshaped to ``data_shape``.

        Parameters
        ----------
        kind : {"impurity", "count"}, default="impurity"
            "impurity": :attr:`feature_importances_`; "count": the normalised number of split
            projections using each feature, pi_k of Perry et al. (Sect. 3.2).

        Returns
        -------
        importance : ndarray of shape ``data_shape``
        """
        if kind == "impurity":
            values = self.feature_importances_
        elif kind == "count":
            values = self.projection_counts_
        else:
            raise ValueError(f"kind must be 'impurity' or 'count', got {kind!r}")
        return np.asarray(values).reshape(self._shape())

    def plot_importance_map(self, kind="impurity", ax=None, **imshow_kwargs):
        """Draws :meth:`feature_importance_map` (needs matplotlib: ``pip install
        obliqueforest[plot]``). Returns the matplotlib Axes."""
        from .plotting import plot_importance_map

        return plot_importance_map(self.feature_importance_map(kind), ax=ax, **imshow_kwargs)


class MORFClassifier(_MORFMixin, ObliqueForestClassifier):
    __doc__ = (
        """Manifold Oblique Random Forest classifier: splits on sums over contiguous patches.

    Parameters
    ----------"""
        + _GEOMETRY_DOC
        + """
    class_weight : "balanced", "balanced_subsample", dict or None, default=None"""
        + _COMMON_DOC
        + _ATTR_DOC
        + _MORF_REF
    )
    _parameter_constraints = {**_CLF_CONSTRAINTS, **_GEOMETRY_CONSTRAINTS}

    def __init__(
        self,
        n_estimators=100,
        *,
        data_shape=None,
        channel_axis=None,
        min_patch_size=1,
        max_patch_size=None,
        periodic=False,
        differences=0.5,
        pooled=0.25,
        criterion="gini",
        max_depth=None,
        min_samples_split=2,
        min_samples_leaf=1,
        min_weight_fraction_leaf=0.0,
        max_features=0.25,
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
        self.data_shape = data_shape
        self.channel_axis = channel_axis
        self.min_patch_size = min_patch_size
        self.max_patch_size = max_patch_size
        self.periodic = periodic
        self.differences = differences
        self.pooled = pooled


class MORFRegressor(_MORFMixin, ObliqueForestRegressor):
    __doc__ = (
        """Manifold Oblique Random Forest regressor: splits on sums over contiguous patches.

    Parameters
    ----------"""
        + _GEOMETRY_DOC
        + _COMMON_DOC
        + _ATTR_DOC
        + _MORF_REF
    )
    _parameter_constraints = {**_REG_CONSTRAINTS, **_GEOMETRY_CONSTRAINTS}

    def __init__(
        self,
        n_estimators=100,
        *,
        data_shape=None,
        channel_axis=None,
        min_patch_size=1,
        max_patch_size=None,
        periodic=False,
        differences=0.5,
        pooled=0.25,
        criterion="squared_error",
        max_depth=None,
        min_samples_split=2,
        min_samples_leaf=1,
        min_weight_fraction_leaf=0.0,
        max_features=0.25,
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
        self.data_shape = data_shape
        self.channel_axis = channel_axis
        self.min_patch_size = min_patch_size
        self.max_patch_size = max_patch_size
        self.periodic = periodic
        self.differences = differences
        self.pooled = pooled
