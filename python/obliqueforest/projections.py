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

from numbers import Integral, Real

__all__ = ["AxisAligned", "ForestRC", "Gaussian", "Patch", "SparseSigned"]


class _Projection:
    """Base class: a projection distribution with a ``to_config`` for the core."""

    def to_config(self) -> dict:
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

    def to_config(self) -> dict:
        return {"kind": "axis"}


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

    def to_config(self) -> dict:
        if self.density is not None and self.feature_combinations is not None:
            raise ValueError("SparseSigned: give density or feature_combinations, not both")
        if self.density is not None:
            if not isinstance(self.density, Real) or not 0 < self.density <= 1:
                raise ValueError(f"SparseSigned: density must be in (0, 1], got {self.density!r}")
            return {"kind": "sparse", "density": float(self.density)}
        fc = 3.0 if self.feature_combinations is None else self.feature_combinations
        if not isinstance(fc, Real) or not fc > 0:
            raise ValueError(f"SparseSigned: feature_combinations must be > 0, got {fc!r}")
        return {"kind": "sparse", "feature_combinations": float(fc)}


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

    def to_config(self) -> dict:
        if not isinstance(self.n_combined, Integral) or self.n_combined < 1:
            raise ValueError(f"ForestRC: n_combined must be an int >= 1, got {self.n_combined!r}")
        return {"kind": "forest_rc", "n_combined": int(self.n_combined)}


class Gaussian(_Projection):
    """Dense random projections: every feature with an N(0, 1) weight."""

    def to_config(self) -> dict:
        return {"kind": "gaussian"}


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
        """Checks the geometry against ``n_features`` and returns the core's config."""
        shape = (
            _as_int_tuple(self.data_shape, "data_shape")
            if self.data_shape is not None
            else (n_features,)
        )
        if any(s < 1 for s in shape):
            raise ValueError(f"data_shape must have positive lengths, got {shape}")
        size = 1
        for s in shape:
            size *= s
        if size != n_features:
            raise ValueError(
                f"data_shape {shape} holds {size} values but X has {n_features} features"
            )
        ca = self.channel_axis
        if ca is not None:
            if not isinstance(ca, Integral) or not -len(shape) <= ca < len(shape):
                raise ValueError(f"channel_axis {ca!r} is not an axis of data_shape {shape}")
            ca = int(ca) % len(shape)
            if len(shape) == 1:
                raise ValueError("channel_axis needs data_shape to have another axis")
        spatial = [s for a, s in enumerate(shape) if a != ca]
        k = len(spatial)
        lo = _per_axis(self.min_patch_size, k, "min_patch_size")
        if self.max_patch_size is None:
            hi = tuple(max(lo_a, s // 4, 1) for lo_a, s in zip(lo, spatial))
        else:
            hi = _per_axis(self.max_patch_size, k, "max_patch_size")
        for a, (l_, h_, s) in enumerate(zip(lo, hi, spatial)):
            if l_ < 1:
                raise ValueError(f"min_patch_size must be >= 1, got {l_} on axis {a}")
            if l_ > h_:
                raise ValueError(f"min_patch_size {l_} exceeds max_patch_size {h_} on axis {a}")
            if h_ > s:
                raise ValueError(
                    f"max_patch_size {h_} does not fit spatial axis {a} of length {s} "
                    f"(data_shape {shape})"
                )
        if isinstance(self.periodic, (bool, int)) and not isinstance(self.periodic, (tuple, list)):
            periodic = (bool(self.periodic),) * k
        else:
            periodic = tuple(bool(p) for p in self.periodic)
            if len(periodic) != k:
                raise ValueError(f"periodic needs {k} entries (one per non-channel axis)")
        return {
            "kind": "patch",
            "data_shape": list(shape),
            "channel_axis": ca,
            "min_patch_size": list(lo),
            "max_patch_size": list(hi),
            "periodic": list(periodic),
        }


def _as_int_tuple(v, name):
    if isinstance(v, Integral):
        v = (v,)
    try:
        out = tuple(int(x) for x in v)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an int or a tuple of ints, got {v!r}") from None
    if any(not isinstance(x, Integral) for x in v):
        raise ValueError(f"{name} must contain integers, got {v!r}")
    return out


def _per_axis(v, k, name):
    if isinstance(v, Integral):
        return (int(v),) * k
    out = _as_int_tuple(v, name)
    if len(out) != k:
        raise ValueError(f"{name} needs {k} entries (one per non-channel axis), got {len(out)}")
    return out
