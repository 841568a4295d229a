"""Matplotlib figures for fitted forests (``pip install obliqueforest[plot]``).

matplotlib is imported inside each function, so importing this module never needs it.
Every function draws on ``ax`` (a new figure's axes when None) and returns the Axes.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "plot_embedding",
    "plot_feature_importances",
    "plot_importance_map",
    "plot_rotation_complexity",
]


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("plotting needs matplotlib: pip install obliqueforest[plot]") from None
    return plt


def _axes(ax):
    plt = _pyplot()
    if ax is None:
        _, ax = plt.subplots()
    return plt, ax


def plot_importance_map(map2d, ax=None, **imshow_kwargs):
    """Draws a feature importance map (e.g. MORF's :meth:`feature_importance_map`).

    Parameters
    ----------
    map2d : array-like of shape (height, width) or (n_features,)
        Importances laid out like the input; a 1-d map (signals) is drawn as one row.
        Singleton axes are squeezed away.
    ax : matplotlib Axes or None, default=None
    **imshow_kwargs
        Passed to ``ax.imshow`` (defaults: ``cmap="viridis"``, ``interpolation="nearest"``,
        ``aspect="auto"`` for 1-d maps).

    Returns
    -------
    ax : matplotlib Axes
        With a colorbar attached.
    """
    values = np.asarray(map2d, dtype=float)
    if values.ndim > 2:
        values = values.squeeze()
    if values.ndim == 1:
        values = values.reshape(1, -1)
        imshow_kwargs.setdefault("aspect", "auto")
    if values.ndim != 2:
        raise ValueError(
            f"map2d must be 1- or 2-dimensional after squeezing, got shape {np.shape(map2d)}"
        )
    plt, ax = _axes(ax)
    imshow_kwargs.setdefault("cmap", "viridis")
    imshow_kwargs.setdefault("interpolation", "nearest")
    image = ax.imshow(values, **imshow_kwargs)
    ax.figure.colorbar(image, ax=ax, label="importance")
    if values.shape[0] == 1:
        ax.set_yticks([])
    return ax


def plot_feature_importances(estimator, top=20, ax=None):
    """Horizontal bars of the ``top`` largest :attr:`feature_importances_`.

    Parameters
    ----------
    estimator : fitted estimator with ``feature_importances_`` of shape (n_features,)
        Names come from ``feature_names_in_`` when present, else ``x0, x1, ...``.
    top : int, default=20
        Number of features shown, largest first.
    ax : matplotlib Axes or None, default=None

    Returns
    -------
    ax : matplotlib Axes
    """
    if isinstance(top, bool) or not isinstance(top, (int, np.integer)) or top < 1:
        raise ValueError(f"top must be a positive int, got {top!r}")
    importances = np.asarray(estimator.feature_importances_, dtype=float)
    names = getattr(estimator, "feature_names_in_", None)
    if names is None:
        names = [f"x{i}" for i in range(len(importances))]
    order = np.argsort(-importances, kind="stable")[:top]
    plt, ax = _axes(ax)
    positions = np.arange(len(order))
    ax.barh(positions, importances[order])
    ax.set_yticks(positions)
    ax.set_yticklabels([str(names[i]) for i in order])
    ax.invert_yaxis()  # largest on top
    ax.set_xlabel("importance (mean decrease in impurity)")
    ax.set_title(f"{type(estimator).__name__}: top {len(order)} features")
    return ax


def plot_embedding(Z, labels=None, ax=None, *, dims=(0, 1), **scatter_kwargs):
    """Scatter plot of two embedding coordinates, coloured by a label.

    Parameters
    ----------
    Z : array-like of shape (n_samples, n_components)
        E.g. :meth:`ForestAutoencoder.transform` output; a single component is drawn
        against 0.
    labels : array-like of shape (n_samples,) or None, default=None
        Colours: a legend entry per class for discrete labels (strings, ints, at most 20
        distinct values), a colorbar for continuous ones.
    ax : matplotlib Axes or None, default=None
    dims : tuple of two int, default=(0, 1)
        The two components to plot (ignored when ``Z`` has one component).
    **scatter_kwargs
        Passed to ``ax.scatter`` (default ``s=12``).

    Returns
    -------
    ax : matplotlib Axes
    """
    Z = np.asarray(Z, dtype=float)
    if Z.ndim != 2 or Z.shape[1] < 1:
        raise ValueError(f"Z must have shape (n_samples, n_components), got {Z.shape}")
    i, j = dims
    if Z.shape[1] > 1 and not (0 <= i < Z.shape[1] and 0 <= j < Z.shape[1]):
        raise ValueError(f"dims={dims} must index the {Z.shape[1]} components of Z")
    x = Z[:, i] if Z.shape[1] > 1 else Z[:, 0]
    y = Z[:, j] if Z.shape[1] > 1 else np.zeros(len(Z))
    plt, ax = _axes(ax)
    scatter_kwargs.setdefault("s", 12)
    if labels is None:
        ax.scatter(x, y, **scatter_kwargs)
    else:
        labels = np.asarray(labels)
        if labels.shape != (len(Z),):
            raise ValueError(f"labels must have shape ({len(Z)},), got {labels.shape}")
        classes = np.unique(labels)
        discrete = labels.dtype.kind not in "fc" or (
            len(classes) <= 20 and np.all(classes == np.round(classes))
        )
        if discrete:
            for c in classes:
                mask = labels == c
                ax.scatter(x[mask], y[mask], label=str(c), **scatter_kwargs)
            ax.legend(title="label", fontsize="small")
        else:
            points = ax.scatter(x, y, c=labels, **scatter_kwargs)
            ax.figure.colorbar(points, ax=ax, label="label")
    if Z.shape[1] > 1:
        ax.set_xlabel(f"component {i + 1}")
        ax.set_ylabel(f"component {j + 1}")
    else:
        ax.set_xlabel("component 1")
    return ax


def plot_rotation_complexity(estimator, ax=None):
    """Tree complexity against OOB error of each rotation of a rotation ensemble.

    Parameters
    ----------
    estimator : fitted RotationEnsembleClassifier or RotationEnsembleRegressor
        Uses ``rotation_complexity_`` and ``rotation_oob_error_`` (each of shape
        (n_rotations,)); rotations that receive trees (``n_trees_per_rotation_ > 0``,
        when present) are highlighted and rotation 0, the identity, is marked.
    ax : matplotlib Axes or None, default=None

    Returns
    -------
    ax : matplotlib Axes
    """
    try:
        complexity = np.asarray(estimator.rotation_complexity_, dtype=float)
        oob_error = np.asarray(estimator.rotation_oob_error_, dtype=float)
    except AttributeError:
        raise TypeError(
            f"{type(estimator).__name__} has no rotation_complexity_/rotation_oob_error_; "
            "pass a fitted rotation ensemble"
        ) from None
    plt, ax = _axes(ax)
    used = getattr(estimator, "n_trees_per_rotation_", None)
    if used is not None:
        used = np.asarray(used) > 0
        ax.scatter(complexity[~used], oob_error[~used], s=14, c="0.6", label="unused")
        ax.scatter(complexity[used], oob_error[used], s=22, c="C0", label="used")
    else:
        ax.scatter(complexity, oob_error, s=16, c="C0", label="rotation")
    ax.scatter(
        complexity[:1], oob_error[:1], s=80, facecolors="none", edgecolors="C3", label="identity"
    )
    ax.set_xlabel("median tree complexity (#nodes + depth / N)")
    ax.set_ylabel("OOB error")
    ax.legend(fontsize="small")
    return ax
