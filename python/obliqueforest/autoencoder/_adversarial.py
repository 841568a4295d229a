"""Forests grown by the autoencoder: supervised, completely random, adversarial (Watson et al. 2023)."""

from __future__ import annotations

import numpy as np
from sklearn.base import clone
from sklearn.utils.multiclass import type_of_target

from .. import _core
from .._base import prepared_fit
from .._forest import RandomForestClassifier, RandomForestRegressor
from ..interpret import _core_forest as _core_forest  # (re-exported for _estimator.py)


# --------------------------------------------------------------------------- #
# Forests                                                                       #
# --------------------------------------------------------------------------- #
# min_samples_leaf="auto": leaves of the adversarial forest hold real and synthetic rows
# (as many synthetic as real), so 12 is about 6 real rows; below 72 distinct rows it is
# n/6 (at least 5), so that small data still give trees of several leaves. Other forests
# hold real rows only and keep 5.
_ARF_MIN_SAMPLES_LEAF = 12
_ARF_ROWS_PER_LEAF = 6
_MIN_SAMPLES_LEAF = 5


def _auto_min_samples_leaf(n_rows, adversarial):
    """``min_samples_leaf="auto"`` of a forest grown on ``n_rows`` (distinct) rows."""
    if not adversarial:
        return _MIN_SAMPLES_LEAF
    return min(_ARF_MIN_SAMPLES_LEAF, max(_MIN_SAMPLES_LEAF, n_rows // _ARF_ROWS_PER_LEAF))


def _forest_estimator(classify, **params):
    """The estimator a forest grown here is fitted through: a
    :class:`~obliqueforest.RandomForestClassifier` (``classify``) or
    :class:`~obliqueforest.RandomForestRegressor` with ``params`` (its parameters by name),
    so the projection and the defaults of every other parameter are the estimators'."""
    return (RandomForestClassifier if classify else RandomForestRegressor)(**params)


def _grow(est, X, y, seed, categories):
    """The core forest of estimator ``est`` fitted on the codes ``X`` (per column its
    levels in ``categories``, or None) and ``y``, through the estimators' own ``fit``
    (targets, parameters, the grower of a cluster) with ``seed`` as the forest's seed
    (:func:`obliqueforest._base.prepared_fit`): the estimator's fit would draw it from
    ``random_state``, where the autoencoder draws it from its own generator (the same
    generator then gives the noise, the eigensolver's start and the decoding seed)."""
    with prepared_fit(seed, categories):
        est.fit(X, y)
    return est._forest


def _supervised_task(y, n_samples):
    """``(y, classify)``: the targets of a supervised forest as one column, and whether
    they are class labels (binary or multiclass ``y``: a classifier's, which warns, as
    scikit-learn's classifiers do, when the labels are mostly distinct), else real values
    (a regressor's).

    Raises
    ------
    ValueError
        For a ``y`` of more than one column or not of ``n_samples`` rows.
    """
    y = np.asarray(y)
    if y.ndim != 1 and not (y.ndim == 2 and y.shape[1] == 1):
        raise ValueError("y must be one-dimensional for a supervised forest")
    y = y.ravel()
    if len(y) != n_samples:
        raise ValueError(f"X has {n_samples} rows but y has {len(y)}")
    return y, type_of_target(y) in ("binary", "multiclass")


def _oob_accuracy(forest, y):
    """Out-of-bag accuracy of a fitted classification forest (rows with OOB trees)."""
    sums, counts = forest.oob_prediction()
    seen = counts > 0
    if not seen.any():
        return 1.0
    return float(np.mean(np.argmax(sums[seen], axis=1) == y[seen]))


def _sample_marginals(X, rng):
    """Rows drawn from the product of the columns' marginals, shape of ``X``."""
    n = X.shape[0]
    idx = rng.integers(0, n, size=X.shape)
    return np.take_along_axis(X, idx, axis=0)


def _sample_leaf_marginals(forest, X, rng, n_jobs):
    """ARF synthesis: per synthetic row, a random tree and a leaf drawn in proportion
    to its real rows, then every column drawn independently from the leaf's real rows.

    Parameters
    ----------
    forest : _core.Forest
    X : ndarray of shape (n_samples, n_features), float32
        Real rows.

    Returns
    -------
    X_synth : ndarray of shape (n_samples, n_features)
    """
    n, p = X.shape
    leaves = forest.apply_leaves(X, n_jobs)
    n_trees = leaves.shape[1]
    flat = leaves.ravel()
    order = np.argsort(flat, kind="stable")
    sorted_leaves = flat[order]
    rows_by_leaf = order // n_trees
    tree = rng.integers(0, n_trees, size=n)
    anchor = rng.integers(0, n, size=n)
    leaf = leaves[anchor, tree]
    start = np.searchsorted(sorted_leaves, leaf, side="left")
    count = np.searchsorted(sorted_leaves, leaf, side="right") - start
    pos = start[:, None] + (rng.random((n, p)) * count[:, None]).astype(np.int64)
    return X[rows_by_leaf[pos], np.arange(p)[None, :]]


def _grow_adversarial_forest(X, est, categories, delta, max_iter, rng, n_jobs):
    """Adversarial random forest (Watson et al. 2023).

    A first forest discriminates real rows from rows drawn from the product of
    the columns' marginals; then, for up to ``max_iter`` rounds, synthetic rows
    are redrawn from the product of the current forest's per-leaf marginals and
    a new forest discriminates them. The loop stops when the new forest's OOB
    accuracy is at most ``0.5 + delta``, when it no longer improves on the
    previous round, or after ``max_iter`` rounds.

    As in the reference implementation (R package ``arf``), the forest returned
    is the *generator* of the last round, the one whose leaves produced the
    synthetic rows the last discriminator was tested on, not that discriminator:
    its leaves are the (approximately) fully factorised regions.

    Each round's discriminator is ``clone(est)`` (a classifier with ``oob_score``) fitted
    on the real and synthetic codes (levels ``categories``) with a seed drawn from
    ``rng`` (:func:`_grow`).

    Returns
    -------
    forest : _core.Forest
    accuracies : list of float
        OOB accuracy of every forest trained, the initial one first.
    """
    n = X.shape[0]
    y = np.concatenate([np.ones(n), np.zeros(n)])
    labels = y.astype(np.int64)

    def discriminate(synth):
        seed = int(rng.integers(0, 2**31 - 1))
        forest = _grow(clone(est), np.vstack([X, synth]), y, seed, categories)
        # (over the rows some tree left out of its sample)
        return forest, _oob_accuracy(forest, labels)

    forest, acc = discriminate(_sample_marginals(X, rng))
    accuracies = [acc]
    if acc <= 0.5 + delta:
        return forest, accuracies
    for round_ in range(max_iter):
        synth = _sample_leaf_marginals(forest, X, rng, n_jobs).astype(np.float32)
        candidate, acc = discriminate(synth)
        accuracies.append(acc)
        # indistinguishable, no longer improving (arf's early stop) or out of
        # rounds: keep the generator, as arf does
        if acc <= 0.5 + delta or acc >= accuracies[-2] or round_ == max_iter - 1:
            break
        forest = candidate
    return forest, accuracies


def _is_fitted_forest(forest):
    return isinstance(forest, _core.Forest) or isinstance(
        getattr(forest, "_forest", None), _core.Forest
    )


def _same_levels(a, b):
    if a is None or b is None:
        return a is None and b is None
    a, b = np.asarray(a, dtype=object), np.asarray(b, dtype=object)
    return len(a) == len(b) and bool(np.all(a == b))


def _check_forest_columns(forest, codec, n_features):
    """A forest the autoencoder takes reads its codes: ``n_features`` columns, and its
    categorical columns, if it has any, are the codec's with the same levels (a forest of
    numeric columns only reads the codes as numbers, as forests fitted on the codes did
    before the forests split categorical columns themselves).

    Raises
    ------
    ValueError
        Saying how to fit the forest, when it does not read these columns.
    """
    core = _core_forest(forest)
    if core.n_features != n_features:
        raise ValueError(f"the fitted forest has {core.n_features} features, X has {n_features}")
    counts = [int(c) for c in core.categorical]
    if not any(counts):
        return
    expected = [0] * n_features if codec is None else codec.n_categories.tolist()
    ours = (None if codec is None else codec._categories) or [None] * n_features
    theirs = getattr(forest, "_categories", None)  # an estimator's levels (categories_)
    if counts == expected and (
        theirs is None or all(_same_levels(a, b) for a, b in zip(theirs, ours))
    ):
        return
    raise ValueError(
        "the forest's categorical columns (levels per column: "
        f"{counts}) are not the autoencoder's ({expected}): fit the forest on the same "
        "DataFrame as the autoencoder, with its category, object, string and bool columns "
        "categorical (categorical_features='from_dtype', the default) and the same levels, "
        "or on the autoencoder's integer codes as numbers"
    )
