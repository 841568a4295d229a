"""The layout of a forest's outputs: per-output blocks of a multi-output classifier's
values, labels from probabilities, and scikit-learn's ``tree_.value`` table."""

from __future__ import annotations

import numpy as np

__all__ = ["labels_of", "output_blocks", "per_output_table"]


def output_blocks(values, class_counts):
    """The per-output blocks of core values: the columns of ``values`` (n, sum(class_counts))
    cut into a list of (n, class_counts[o]) views, in output order (a multi-output
    classifier's leaves hold each output's class fractions side by side)."""
    bounds = np.cumsum([0, *class_counts])
    return [values[:, a:b] for a, b in zip(bounds[:-1], bounds[1:])]


def per_output_table(values, class_counts, n_outputs):
    """Core values (n, width) as scikit-learn's ``tree_.value`` table (n, n_outputs,
    max_n_classes): each output's classes (zero-padded to the widest output), or one
    value per output for regression (``class_counts`` None)."""
    if class_counts is None:
        return values.reshape(values.shape[0], n_outputs, -1)
    blocks = output_blocks(values, class_counts)
    out = np.zeros((values.shape[0], len(blocks), max(class_counts)))
    for o, b in enumerate(blocks):
        out[:, o, : b.shape[1]] = b
    return out


def labels_of(proba, classes):
    """The most probable label of each row: ``proba`` (n, n_classes) with ``classes``, or
    lists of one such array per output, giving (n, n_outputs) labels of the first
    output's dtype as scikit-learn's forests do."""
    if not isinstance(classes, list):
        return classes.take(proba.argmax(axis=1))
    out = np.empty((proba[0].shape[0], len(classes)), dtype=classes[0].dtype)
    for o, (p, c) in enumerate(zip(proba, classes)):
        out[:, o] = c.take(p.argmax(axis=1))
    return out
