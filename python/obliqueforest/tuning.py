"""OOB tuning of a forest's projection parameters in one call (Tomita et al. 2020, Sect. 3.2).

:func:`tune_projection` grows one small forest per setting of a small grid (by default
SPORF's number of candidate projections ``max_features`` and density
``feature_combinations``), scores each by its out-of-bag error, and fits the final forest
with the best setting. The small forests together hold ``search_budget`` times the final
forest's trees, so the whole call costs about ``1 + search_budget`` (3 by default) fits.

All search forests share one seed: tree ``i`` of every setting sees the same bootstrap
sample, so the settings are compared on paired samples and the OOB differences are less
noisy than independent forests of the same size would give.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field

import numpy as np
from sklearn.base import clone
from sklearn.model_selection import ParameterGrid
from sklearn.utils import check_random_state

__all__ = ["ProjectionTuning", "tune_projection"]

# Fewest trees per search forest: below this most rows have no OOB vote.
_MIN_SEARCH_TREES = 16


@dataclass
class ProjectionTuning:
    """The result of :func:`tune_projection`.

    Attributes
    ----------
    estimator : estimator
        The final forest, fitted on all rows with ``best_params``.
    best_params : dict
        The grid setting with the lowest OOB error (the first one on ties).
    oob_errors : list of tuple of (dict, float)
        Every grid setting with its OOB error (1 - accuracy for classifiers,
        1 - R^2 for regressors), in grid order.
    search_trees : int
        Trees per search forest.
    """

    estimator: object
    best_params: dict
    oob_errors: list = field(default_factory=list)
    search_trees: int = 0


def default_grid(estimator):
    """The grid searched when none is given: the parameters ``estimator`` has of
    ``max_features`` in {"sqrt", 1.0} and ``feature_combinations`` in {1.5, 2, 3}."""
    params = estimator.get_params()
    grid = {}
    if "max_features" in params:
        grid["max_features"] = ["sqrt", 1.0]
    if "feature_combinations" in params:
        grid["feature_combinations"] = [1.5, 2.0, 3.0]
    if not grid:
        raise ValueError(
            f"{type(estimator).__name__} has neither max_features nor feature_combinations; "
            "pass param_grid"
        )
    return grid


def tune_projection(
    estimator, X, y, *, param_grid=None, search_budget=2.0, sample_weight=None, random_state=None
):
    """Choose projection parameters by out-of-bag error, then fit the final forest.

    Parameters
    ----------
    estimator : estimator of this library
        A forest with ``oob_score``, ``n_estimators`` and ``random_state`` parameters
        (e.g. :class:`~obliqueforest.SPORFClassifier`); it is cloned, never modified.
        Its ``bootstrap`` must be True (OOB rows need bootstrap samples).
    X : array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
    param_grid : dict or list of dict, default=None
        As scikit-learn's ``ParameterGrid``; None searches :func:`default_grid`.
    search_budget : float, default=2.0
        Trees of all search forests together, as a multiple of ``estimator.n_estimators``;
        each search forest has ``max(16, round(search_budget * n_estimators / n_settings))``
        trees.
    sample_weight : array-like of shape (n_samples,), default=None
    random_state : int, RandomState instance or None, default=None
        Seeds the search forests when ``estimator.random_state`` is None.

    Returns
    -------
    result : ProjectionTuning
        ``result.estimator`` is the fitted final forest.

    Examples
    --------
    >>> from obliqueforest import SPORFClassifier, datasets
    >>> from obliqueforest.tuning import tune_projection
    >>> X, y = datasets.make_orthant(600, random_state=0)
    >>> result = tune_projection(SPORFClassifier(n_estimators=60, random_state=0), X, y)
    >>> sorted(result.best_params)
    ['feature_combinations', 'max_features']
    >>> result.estimator.n_estimators
    60
    """
    base = clone(estimator)
    params = base.get_params()
    for name in ("oob_score", "n_estimators", "random_state", "bootstrap"):
        if name not in params:
            raise ValueError(f"{type(base).__name__} has no parameter {name!r} to tune with")
    if not params["bootstrap"]:
        raise ValueError("tune_projection needs bootstrap=True: OOB errors need OOB rows")
    if not isinstance(search_budget, numbers.Real) or not search_budget > 0:
        raise ValueError(f"search_budget must be a positive number, got {search_budget!r}")
    grid = list(ParameterGrid(default_grid(base) if param_grid is None else param_grid))
    if not grid:
        raise ValueError("param_grid is empty")
    unknown = sorted({k for g in grid for k in g} - set(params))
    if unknown:
        raise ValueError(f"param_grid names parameters {type(base).__name__} lacks: {unknown}")
    seed = params["random_state"]
    if seed is None or not isinstance(seed, numbers.Integral):
        seed = int(check_random_state(random_state if seed is None else seed).randint(2**31 - 1))
    n_trees = int(params["n_estimators"])
    search_trees = max(_MIN_SEARCH_TREES, int(round(search_budget * n_trees / len(grid))))
    fit_kw = {} if sample_weight is None else {"sample_weight": sample_weight}
    errors = []
    for setting in grid:
        est = clone(base).set_params(
            **setting, n_estimators=search_trees, oob_score=True, random_state=seed
        )
        if "warm_start" in params:
            est.set_params(warm_start=False)
        est.fit(X, y, **fit_kw)
        score = float(est.oob_score_)
        # oob_score_ is accuracy for classifiers and R^2 for regressors
        errors.append((setting, 1.0 - score))
    best = int(np.argmin([e for _, e in errors]))
    final = clone(base).set_params(**grid[best])
    final.fit(X, y, **fit_kw)
    return ProjectionTuning(
        estimator=final,
        best_params=dict(grid[best]),
        oob_errors=errors,
        search_trees=search_trees,
    )
