"""Projection distributions for :class:`~obliqueforest.ObliqueForestClassifier` and
:class:`~obliqueforest.ObliqueForestRegressor`.

A projection forest samples, at every split node, ``max_features`` candidate directions
from one of these distributions and splits on the best (Tomita et al. 2020, Sect. 3.1).
Each object only describes the distribution; sampling happens in the Rust core.

References
----------
.. [1] T. M. Tomita et al., "Sparse Projection Oblique Randomer Forests",
   JMLR 21(104), 2020.
.. [2] L. Breiman, "Random Forests", Machine Learning 45, 2001 (Forest-RC).
"""

from __future__ import annotations

from numbers import Integral

import numpy as np

from . import _core

__all__ = ["AxisAligned", "ForestRC", "Gaussian", "Patch", "SparseSigned"]


class _Projection:
    """Base class: a projection distribution, handed to the core by ``_core_projection``.

    The objects only store their arguments; the core validates them when a forest is fitted
    (its errors name the parameter).
    """

    def _core_projection(self, n_features: int):
        """The core's ``_core.Projection`` for data with ``n_features`` columns."""
        raise NotImplementedError

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({args})"

    def __eq__(self, other) -> bool:
        return type(self) is type(other) and vars(self) == vars(other)

    def __hash__(self) -> int:
        return hash((type(self).__name__, tuple(sorted(map(str, vars(self).items())))))


class AxisAligned(_Projection):
    """Axis-aligned splits (classic random forest): d distinct features, weight 1."""

    def _core_projection(self, n_features):
        return _core.Projection.axis()


class SparseSigned(_Projection):
    """SPORF's sparse random projections.

    ``ceil(lambda * p * d)`` nonzeros are placed uniformly at random in a p x d matrix,
    each +1 or -1 with equal probability; empty columns are dropped. Give the density
    either directly (``density``, lambda in (0, 1]) or as the average number of features
    per projection (``feature_combinations`` = lambda * p, capped at p). With neither,
    ``feature_combinations=3`` (the paper's recommendation lambda = 3/p, Sect. 5.2).

    Parameters
    ----------
    density : float in (0, 1], default=None
        Fraction of nonzero entries lambda.
    feature_combinations : float > 0, default=None
        Average number of features per projection.
    """

    def __init__(self, density: float | None = None, feature_combinations: float | None = None):
        self.density = density
        self.feature_combinations = feature_combinations

    def _core_projection(self, n_features):
        fc = self.feature_combinations
        if self.density is None and fc is None:
            fc = 3.0
        return _core.Projection.sparse(density=self.density, feature_combinations=fc)


class ForestRC(_Projection):
    """Forest-RC (Breiman 2001): each projection combines ``n_combined`` distinct features
    with weights uniform in [-1, 1].

    Parameters
    ----------
    n_combined : int >= 1, default=2
        Features per projection L (capped at the number of features).
    """

    def __init__(self, n_combined: int = 2):
        self.n_combined = n_combined

    def _core_projection(self, n_features):
        return _core.Projection.forest_rc(n_combined=self.n_combined)


class Gaussian(_Projection):
    """Dense random projections: every feature with an N(0, 1) weight."""

    def _core_projection(self, n_features):
        return _core.Projection.gaussian()


class Patch(_Projection):
    """MORF patches over structured samples (Perry et al., Sect. 3.1).

    See :class:`~obliqueforest.MORFClassifier` for the meaning of the parameters; this
    object is what the MORF estimators hand to the core.
    """

    def __init__(
        self, data_shape, channel_axis=None, min_patch_size=1, max_patch_size=None, periodic=False
    ):
        self.data_shape = data_shape
        self.channel_axis = channel_axis
        self.min_patch_size = min_patch_size
        self.max_patch_size = max_patch_size
        self.periodic = periodic

    def resolve(self, n_features: int) -> dict:
        """The geometry with its defaults filled in for ``n_features`` columns: a plain
        ``data_shape`` (one axis of ``n_features`` by default), a non-negative
        ``channel_axis``, and one patch size and periodicity per non-channel axis
        (``max_patch_size`` defaults to a quarter of each axis). The core checks it."""
        shape = [n_features] if self.data_shape is None else _per_axis(self.data_shape, 1)
        ca = self.channel_axis
        if isinstance(ca, Integral) and ca < 0:
            ca = int(ca) + len(shape)  # still negative when out of range: the core says so
        spatial = [s for a, s in enumerate(shape) if a != ca]
        k = len(spatial)
        lo = _per_axis(self.min_patch_size, k)
        if self.max_patch_size is None:
            hi = [
                max(lo_a, s // 4, 1) if isinstance(lo_a, Integral) else lo_a
                for lo_a, s in zip(lo, spatial)
            ]
        else:
            hi = _per_axis(self.max_patch_size, k)
        periodic = self.periodic
        if isinstance(periodic, (bool, np.bool_, Integral)):
            periodic = [bool(periodic)] * k
        return {
            "data_shape": shape,
            "channel_axis": ca,
            "min_patch_size": lo,
            "max_patch_size": hi,
            "periodic": [bool(p) for p in periodic],
        }

    def _core_projection(self, n_features):
        return _core.Projection.patch(**self.resolve(n_features))


def _per_axis(v, k):
    """An int broadcast to ``k`` axes, or the entries of a sequence (lengths are checked by
    the core)."""
    if isinstance(v, Integral):
        return [int(v)] * k
    try:
        return [int(x) if isinstance(x, Integral) else x for x in v]
    except TypeError:
        return v
