"""The one place where Python builds the core's fit parameters.

Every estimator of the package (the forests, the rotation ensembles, the autoencoder's
forests) turns its own parameters into a :class:`obliqueforest._core.ForestParams` here.
Nothing is defaulted or re-validated: each caller passes every field (its defaults live in
its ``__init__``), scikit-learn's ``_parameter_constraints`` have checked the types and
ranges, and the core's ``ForestParams::check`` has the last word (cross-parameter rules
and bounds against the data), before anything is allocated.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np

from . import _core

__all__ = ["core_params", "monotonic_cst_vector"]


def _plain(value):
    """numpy scalars as Python ints, floats and bools (the core takes Python types)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, Integral):
        return int(value)
    if isinstance(value, Real):
        return float(value)
    return value


def monotonic_cst_vector(monotonic_cst):
    """``monotonic_cst`` as a list of ints for the core (None stays None); the core checks
    its length and that each entry is -1, 0 or 1.

    Raises
    ------
    ValueError
        When it is not a 1-D array of integral numbers.
    """
    if monotonic_cst is None:
        return None
    cst = np.asarray(monotonic_cst)
    integral = cst.dtype.kind in "iub" or (
        cst.dtype.kind == "f" and bool(np.all(np.isfinite(cst) & (cst == np.round(cst))))
    )
    if cst.ndim != 1 or not integral:
        raise ValueError(
            "monotonic_cst must be None or a 1-D array-like of -1, 0 or 1 per feature, "
            f"got {monotonic_cst!r}"
        )
    return [int(np.clip(c, -2, 2)) for c in cst]


def core_params(
    *,
    task,
    n_classes,
    criterion,
    projection,
    splitter,
    max_bins,
    max_features,
    n_estimators,
    max_depth,
    min_samples_split,
    min_samples_leaf,
    min_weight_fraction_leaf,
    min_impurity_decrease,
    max_leaf_nodes,
    bootstrap,
    max_samples,
    class_weight_subsample,
    oob,
    seed,
    ccp_alpha,
    monotonic_cst,
    n_jobs,
):
    """The core's parameters of one fit.

    Parameters
    ----------
    task : {"classification", "regression"}
    n_classes : int or None
        Number of classes (None for regression).
    projection : obliqueforest._core.Projection
        The projection distribution (see :mod:`obliqueforest.projections`).
    n_jobs : int
        Worker threads, already resolved to a positive count.
    others
        As the estimators' parameters of the same names.

    Returns
    -------
    params : obliqueforest._core.ForestParams
    """
    return _core.ForestParams(
        task=task,
        n_classes=None if n_classes is None else _plain(n_classes),
        criterion=criterion,
        projection=projection,
        splitter=splitter,
        max_bins=_plain(max_bins),
        max_features=_plain(max_features),
        n_estimators=_plain(n_estimators),
        max_depth=_plain(max_depth),
        min_samples_split=_plain(min_samples_split),
        min_samples_leaf=_plain(min_samples_leaf),
        min_weight_fraction_leaf=float(min_weight_fraction_leaf),
        min_impurity_decrease=float(min_impurity_decrease),
        max_leaf_nodes=_plain(max_leaf_nodes),
        bootstrap=bool(bootstrap),
        max_samples=_plain(max_samples),
        class_weight_subsample=bool(class_weight_subsample),
        oob=bool(oob),
        seed=int(seed),
        ccp_alpha=float(ccp_alpha),
        monotonic_cst=monotonic_cst_vector(monotonic_cst),
        n_jobs=int(n_jobs),
    )
