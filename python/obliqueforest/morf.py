"""Manifold Oblique Random Forests (MORF): patch projections for images, time series,
multi-channel and cyclic data.

The estimators are presets of the generic projection forests whose sampler draws
contiguous patches (Perry et al., Sect. 3.1); the tree engine is the same.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any

import numpy as np
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted

from ._forest import (
    ATTRIBUTES_DOC,
    CLASSIFIER_PARAMS,
    REGRESSOR_PARAMS,
    _ForestClassifier,
    _ForestRegressor,
)
from ._surface import Param
from .projections import HaarPatch, Patch, PooledFilter

__all__ = ["MORFClassifier", "MORFRegressor"]

_SIZE = [tuple, list, Interval(Integral, 1, None, closed="left")]

GEOMETRY_PARAMS = [
    Param(
        "data_shape",
        None,
        [tuple, list, Interval(Integral, 1, None, closed="left"), None],
        "tuple of int",
        """Shape of one sample, e.g. ``(28, 28)`` for an image, ``(100,)`` for a series,
        ``(channels, length)`` or ``(channels, height, width)``; its product must equal
        n_features. None means a 1-D series of length n_features.""",
    ),
    Param(
        "channel_axis",
        None,
        [Integral, None],
        "int",
        """Axis of ``data_shape`` holding channels. Patches are contiguous along the other axes
        and span a random non-empty subset of channels.""",
    ),
    Param(
        "min_patch_size",
        1,
        _SIZE,
        "int or tuple of int",
        """Smallest patch size, one entry per non-channel axis (an int applies to every
        axis). A size is drawn uniformly between ``min_patch_size`` and
        ``max_patch_size``.""",
    ),
    Param(
        "max_patch_size",
        None,
        [*_SIZE, None],
        "int or tuple of int",
        """Largest patch size, one entry per non-channel axis (an int applies to every
        axis). ``max_patch_size=None`` means a quarter of each axis, and at most 2 when
        ``differences > 0`` (the default; at least ``min_patch_size``): small windows and
        their differences keep the local structure that wide sums average away
        (benches/results/structured.md).""",
    ),
    Param(
        "periodic",
        False,
        ["boolean", tuple, list],
        "bool or tuple of bool",
        "Whether each non-channel axis wraps around (cyclic data, e.g. angles).",
    ),
    Param(
        "differences",
        0.5,
        [Interval(Real, 0, 1, closed="both")],
        "float in [0, 1]",
        """Probability that a candidate is the difference of two adjacent patches of the same
        shape (a Haar-like edge filter, :class:`~obliqueforest.projections.HaarPatch`)
        rather than a sum over one patch, among the candidates that are not pooled filters
        (below).""",
    ),
    Param(
        "pooled",
        0.25,
        [Interval(Real, 0, 1, closed="both")],
        "float in [0, 1]",
        """Probability that a candidate is a pooled filter instead: a small filter (a sum, a
        first or a second difference, cells of 1-3 positions) slid along one axis of a
        window, keeping its largest or smallest response
        (:class:`~obliqueforest.projections.PooledFilter`), which finds a pattern wherever
        it moved. 0.25 takes mnist1d from 82.7% to 90.7% test accuracy and keeps digits
        ahead of RF and SPORF (benches/results/structured.md). ``differences=0,
        pooled=0`` gives the paper's MORF (sums only).""",
    ),
]

_MAX_FEATURES_DOC = """Number d of candidate patches per node (a float is a fraction of n_features): a
    quarter of n_features by default, which wins on digits and mnist1d
    (benches/results/structured.md; "sqrt" was the default before)."""

_MORF_REF = """
    .. [3] A. Li, R. Perry, C. Huynh, T. M. Tomita, R. Mehta, J. Arroyo, J. Patsolic,
       B. Falk, S. Sarma, J. T. Vogelstein, "Manifold Oblique Random Forests: Towards
       Closing the Gap on Convolutional Deep Networks" (Perry et al., MORF).
"""


def _morf(params):
    # patches sum neighbouring columns, which means nothing for categories: MORF takes
    # numeric columns only (the core refuses categorical columns with patch projections)
    return (
        params.insert(GEOMETRY_PARAMS, after="n_estimators")
        .replace("max_features", default=0.25, doc=_MAX_FEATURES_DOC)
        .without("categorical")
    )


class _MORFMixin:
    #: Values of parameters a model file written before they existed lacks: such a forest
    #: has no pooled filters, and one from before Haar patches none of those either (model
    #: files; see ``_io._params``).
    _added_param_values = {"pooled": 0.0, "differences": 0.0}

    #: Why MORF takes numeric columns only (its error says it).
    _numeric_only_why = "a patch sums neighbouring columns, which means nothing for categories"

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

    _projection_families = tuple(c._tag for c in (Patch, HaarPatch, PooledFilter))

    def _projection_object(self):
        return self._patch()

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


@_morf(CLASSIFIER_PARAMS).declare(
    "Manifold Oblique Random Forest classifier: splits on sums over contiguous patches.",
    ATTRIBUTES_DOC + _MORF_REF,
)
class MORFClassifier(_MORFMixin, _ForestClassifier):
    # generated from the parameter table by `python -m obliqueforest._signatures`: do not edit
    # fmt: off
    def __init__(
        self, n_estimators: Any = 100, *, data_shape: Any = None, channel_axis: Any = None,
        min_patch_size: Any = 1, max_patch_size: Any = None, periodic: Any = False,
        differences: Any = 0.5, pooled: Any = 0.25, criterion: Any = "gini", max_depth: Any = None,
        min_samples_split: Any = 2, min_samples_leaf: Any = 1, min_weight_fraction_leaf: Any = 0.0,
        max_features: Any = 0.25, max_leaf_nodes: Any = None, min_impurity_decrease: Any = 0.0,
        bootstrap: Any = True, oob_score: Any = False, n_jobs: Any = None, random_state: Any = None,
        verbose: Any = 0, warm_start: Any = False, class_weight: Any = None,
        max_samples: Any = None, ccp_alpha: Any = 0.0, monotonic_cst: Any = None,
        splitter: Any = "best", max_bins: Any = 256, candidate_samples: Any = None,
        honest_fraction: Any = 0.0,
    ):
        self.n_estimators = n_estimators
        self.data_shape = data_shape
        self.channel_axis = channel_axis
        self.min_patch_size = min_patch_size
        self.max_patch_size = max_patch_size
        self.periodic = periodic
        self.differences = differences
        self.pooled = pooled
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
        self.candidate_samples = candidate_samples
        self.honest_fraction = honest_fraction
    # fmt: on


@_morf(REGRESSOR_PARAMS).declare(
    "Manifold Oblique Random Forest regressor: splits on sums over contiguous patches.",
    ATTRIBUTES_DOC + _MORF_REF,
)
class MORFRegressor(_MORFMixin, _ForestRegressor):
    # generated from the parameter table by `python -m obliqueforest._signatures`: do not edit
    # fmt: off
    def __init__(
        self, n_estimators: Any = 100, *, data_shape: Any = None, channel_axis: Any = None,
        min_patch_size: Any = 1, max_patch_size: Any = None, periodic: Any = False,
        differences: Any = 0.5, pooled: Any = 0.25, criterion: Any = "squared_error",
        max_depth: Any = None, min_samples_split: Any = 2, min_samples_leaf: Any = 1,
        min_weight_fraction_leaf: Any = 0.0, max_features: Any = 0.25, max_leaf_nodes: Any = None,
        min_impurity_decrease: Any = 0.0, bootstrap: Any = True, oob_score: Any = False,
        n_jobs: Any = None, random_state: Any = None, verbose: Any = 0, warm_start: Any = False,
        max_samples: Any = None, ccp_alpha: Any = 0.0, monotonic_cst: Any = None,
        splitter: Any = "best", max_bins: Any = 256, candidate_samples: Any = None,
        honest_fraction: Any = 0.0, store_leaf_values: Any = False,
    ):
        self.n_estimators = n_estimators
        self.data_shape = data_shape
        self.channel_axis = channel_axis
        self.min_patch_size = min_patch_size
        self.max_patch_size = max_patch_size
        self.periodic = periodic
        self.differences = differences
        self.pooled = pooled
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
        self.candidate_samples = candidate_samples
        self.honest_fraction = honest_fraction
        self.store_leaf_values = store_leaf_values
    # fmt: on
