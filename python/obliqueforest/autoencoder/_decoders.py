"""Decoders: sampling in leaf regions, split relabeling, exclusive lasso (Vu et al., Sect. 4)."""

from __future__ import annotations

import numpy as np
from scipy import sparse


# Rows decoded per block by the k-NN decoder (bounds the k × p temporaries).
_DECODE_CHUNK = 2048
# Exclusive lasso (Appx. C): penalty, training rows kept per query, iterations.
_LASSO_PENALTY = 1e-4
_LASSO_TOP_ROWS = 100
_LASSO_ITERATIONS = 300


# --------------------------------------------------------------------------- #
# Leaf regions and sampling (Sect. 4)                                          #
# --------------------------------------------------------------------------- #
def _sample_in_boxes(lower, upper, col_min, col_max, rng):
    """Draw one point uniformly from each box ``(lower, upper]``.

    Boxes are clipped to the training range of each column (categorical columns are
    drawn apart, :func:`_draw_levels`: their splits are sets of levels, not boxes).

    Parameters
    ----------
    lower, upper : ndarray of shape (..., n_features)
    col_min, col_max : ndarray of shape (n_features,)
    rng : numpy.random.Generator

    Returns
    -------
    samples : ndarray of shape (..., n_features)
    """
    lo = np.maximum(lower, col_min)
    hi = np.minimum(upper, col_max)
    bad = lo > hi
    if bad.any():
        mid = np.clip(np.where(np.isfinite(lower), lower, upper), col_min, col_max)
        lo = np.where(bad, mid, lo)
        hi = np.where(bad, mid, hi)
    return lo + rng.random(lo.shape) * (hi - lo)


def _leaf_levels(train_leaves, codes, n_categories, n_leaves):
    """Which levels of each categorical column the training rows of each leaf hold: the
    categorical part of a leaf's region, as the box is its numeric part. (A categorical
    split sends a set of levels each way, which no box holds; the levels a leaf's rows
    hold are the ones of its set that the data show.)

    Parameters
    ----------
    train_leaves : ndarray of shape (n_samples, n_trees)
        Forest-wide leaf ids of the training rows (``apply_leaves``).
    codes : ndarray of shape (n_samples, n_features)
        Their codes; NaN is a missing value.
    n_categories : ndarray of shape (n_features,)
        0 for numeric columns.
    n_leaves : int

    Returns
    -------
    levels : dict of int to sparse matrix of shape (n_leaves, n_categories[j] + 1)
        Per categorical column j, 1 where a leaf holds a level (the last column: a
        missing value).
    """
    n, n_trees = train_leaves.shape
    out = {}
    for j in np.flatnonzero(n_categories):
        level = np.where(np.isnan(codes[:, j]), n_categories[j], codes[:, j]).astype(np.int64)
        held = sparse.csr_matrix(
            (np.ones(n * n_trees), (train_leaves.ravel(), np.repeat(level, n_trees))),
            shape=(n_leaves, n_categories[j] + 1),
        )
        held.data[:] = 1.0
        out[j] = held
    return out


def _draw_levels(held, rng):
    """Per row, a level drawn uniformly among those held by the most of its leaves (all of
    them when the leaves agree), as :func:`_max_coverage_boxes` and :func:`_sample_in_boxes`
    do for numeric columns.

    Parameters
    ----------
    held : ndarray of shape (n_rows, n_categories + 1)
        How many of the row's leaves hold each level (the last column: missing).

    Returns
    -------
    codes : ndarray of shape (n_rows,)
        NaN where the level drawn is the missing value.
    """
    best = held == held.max(axis=1, keepdims=True)
    pick = np.argmax(np.where(best, rng.random(held.shape), -1.0), axis=1)
    return np.where(pick == held.shape[1] - 1, np.nan, pick.astype(np.float64))


def _weighted_mode(codes, weights, n_cat, rng):
    """Weighted mode per row, ties broken at random; a missing code (NaN) is an outcome
    of its own, which wins only with more weight than every level.

    Parameters
    ----------
    codes : ndarray of shape (n_rows, n_votes)
    weights : ndarray of shape (n_rows, n_votes)

    Returns
    -------
    mode : ndarray of shape (n_rows,)
        NaN where the missing value won.
    """
    m = codes.shape[0]
    missing = np.isnan(codes)
    votes = np.zeros((m, n_cat))
    rows = np.repeat(np.arange(m), codes.shape[1])
    present = ~missing.ravel()
    np.add.at(
        votes,
        (rows[present], codes.ravel()[present].astype(np.int64)),
        weights.ravel()[present],
    )
    votes += rng.random(votes.shape) * 1e-9 * (votes.max(axis=1, keepdims=True) + 1e-300)
    mode = np.argmax(votes, axis=1).astype(np.float64)
    if missing.any():
        mode[(weights * missing).sum(axis=1) > votes.max(axis=1)] = np.nan
    return mode


def _max_coverage_boxes(lower, upper):
    """Per feature, the sub-interval covered by the most of the given intervals.

    Equals the plain intersection when the intervals overlap; otherwise it is
    the region agreed on by the largest number of trees.

    Parameters
    ----------
    lower, upper : ndarray of shape (n_rows, n_trees, n_features), finite

    Returns
    -------
    lower, upper : ndarray of shape (n_rows, n_features)
    """
    _m, _n_trees, _p = lower.shape
    out_lo = lower.max(axis=1)
    out_hi = upper.min(axis=1)
    bad_r, bad_f = np.nonzero(out_lo > out_hi)
    for start in range(0, len(bad_r), 256):
        r, f = bad_r[start : start + 256], bad_f[start : start + 256]
        lo, hi = lower[r, :, f], upper[r, :, f]  # (q, n_trees)
        cand = hi[:, :, None]  # evaluate coverage at each right end point
        covers = (lo[:, None, :] < cand) & (cand <= hi[:, None, :])
        best = np.argmax(covers.sum(axis=2), axis=1)
        chosen = covers[np.arange(len(r)), best]
        out_lo[r, f] = np.where(chosen, lo, -np.inf).max(axis=1)
        out_hi[r, f] = np.where(chosen, hi, np.inf).min(axis=1)
    return out_lo, out_hi


# --------------------------------------------------------------------------- #
# Split relabeling (Sect. 4.2, Appx. B.2, global variant)                       #
# --------------------------------------------------------------------------- #
def _relabel_forest(forest, X, Z):
    """Replace every split by the axis-aligned split in latent space that best
    matches it (simple matching coefficient) on all training rows.

    Parameters
    ----------
    forest : _core.Forest
    X : ndarray of shape (n_samples, n_features), float32
        Training rows (codes) as the core read them at fit, used to label each split's
        left/right side.
    Z : ndarray of shape (n_samples, n_components)
        Their embedding.

    Returns
    -------
    dim, threshold, flip : ndarray of shape (total_nodes,)
        Per node of all trees in order (the layout ``Forest.apply_leaves_with_rules``
        takes): a latent row goes left at a split node when
        ``(z[dim] <= threshold) != flip``; entries of leaves are unused.
    """
    n, d = Z.shape
    order = np.argsort(Z, axis=0, kind="stable")
    zs = np.take_along_axis(Z, order, axis=0)
    valid = np.zeros((n + 1, d), dtype=bool)
    valid[1:n] = zs[1:] > zs[:-1]
    mids = np.zeros((n + 1, d))
    mids[1:n] = (zs[1:] + zs[:-1]) / 2
    cut = np.arange(n + 1)[:, None]
    cum = np.zeros((n + 1, d))
    rules = []
    for t in range(forest.n_trees):
        # each training row's side at every node, as prediction decides it (the core's)
        _, sides = forest.node_decisions(X, t)
        inner = np.flatnonzero(forest.tree_nodes(t)["left"] >= 0)
        dim = np.zeros(sides.shape[1], dtype=np.int64)
        thr = np.zeros(sides.shape[1])
        flip = np.zeros(sides.shape[1], dtype=bool)
        for node in inner:
            goes_left = sides[:, node]
            n_left = int(goes_left.sum())
            if n_left in (0, n):
                thr[node] = np.inf if n_left == n else -np.inf
                continue
            np.cumsum(goes_left[order], axis=0, out=cum[1:])
            # rows below the cut predicted "left": matches = 2·cum − cut + n − n_left
            match = 2 * cum - cut + (n - n_left)
            score = np.where(valid, np.maximum(match, n - match), -1)
            best = np.unravel_index(np.argmax(score), score.shape)
            dim[node] = best[1]
            thr[node] = mids[best]
            flip[node] = match[best] < n - match[best]
        rules.append((dim, thr, flip))
    dim, thr, flip = (np.concatenate(parts) for parts in zip(*rules))
    return dim, thr, flip


# --------------------------------------------------------------------------- #
# Exclusive lasso and greedy leaf assignment (Sect. 4.1, Appx. C)               #
# --------------------------------------------------------------------------- #
def _exclusive_lasso_scores(A, target, groups, penalty, n_iter=_LASSO_ITERATIONS):
    """Solve ``min_{ψ ∈ [0,1]^L} ||target − A ψ||² + penalty · Σ_b (Σ_{l ∈ b} ψ_l)²``.

    On the box ``ψ ≥ 0`` the exclusive-lasso penalty is smooth, so accelerated
    projected gradient (FISTA) solves it exactly.

    Parameters
    ----------
    A : ndarray of shape (n_rows, n_leaves)
        ``Π S`` restricted to the query's neighbouring rows and their leaves.
    target : ndarray of shape (n_rows,)
        ``B k̂₀`` on those rows.
    groups : ndarray of shape (n_leaves,)
        Tree index (0..n_groups-1) of every leaf.

    Returns
    -------
    psi : ndarray of shape (n_leaves,)
        Fuzzy leaf memberships.
    """
    n_groups = int(groups.max()) + 1 if len(groups) else 0
    group_size = np.bincount(groups, minlength=n_groups)
    lipschitz = 2.0 * (np.linalg.norm(A, 2) ** 2 + penalty * max(group_size.max(), 1))
    psi = np.zeros(A.shape[1])
    y = psi.copy()
    step = 1.0
    for _ in range(n_iter):
        grad = 2.0 * (A.T @ (A @ y - target))
        grad += 2.0 * penalty * np.bincount(groups, weights=y, minlength=n_groups)[groups]
        new = np.clip(y - grad / lipschitz, 0.0, 1.0)
        next_step = (1.0 + np.sqrt(1.0 + 4.0 * step * step)) / 2.0
        y = new + ((step - 1.0) / next_step) * (new - psi)
        psi, step = new, next_step
    return psi


def _greedy_leaf_region(scores, leaf_lower, leaf_upper, offsets, rng):
    """Consistent leaf assignment from fuzzy scores (simplified Algorithm 1).

    Trees are visited in decreasing order of their best score; each takes its
    highest-scoring leaf whose box meets the current feasible region, which
    then shrinks to that intersection. The result is consistent by
    construction. (Algorithm 1 of the paper reaches consistency through
    rounds of maximal cliques; this sequential variant is the same greedy idea
    without the exponential clique step.)

    Parameters
    ----------
    scores : ndarray of shape (total_leaves,)
    leaf_lower, leaf_upper : ndarray of shape (total_leaves, n_features)

    Returns
    -------
    lower, upper : ndarray of shape (n_features,)
        The feasible region.
    leaves : list of int
        The leaf taken in each tree that took one.
    """
    n_trees = len(offsets) - 1
    best = np.maximum.reduceat(scores, offsets[:-1]) if len(scores) else np.zeros(n_trees)
    order = np.lexsort((rng.random(n_trees), -best))
    lo = np.full(leaf_lower.shape[1], -np.inf)
    hi = np.full(leaf_lower.shape[1], np.inf)
    leaves = []
    for t in order:
        a, b = offsets[t], offsets[t + 1]
        cand_lo = np.maximum(leaf_lower[a:b], lo)
        cand_hi = np.minimum(leaf_upper[a:b], hi)
        ok = np.all(cand_lo < cand_hi, axis=1)
        if not ok.any():
            continue
        sc = np.where(ok, scores[a:b] + rng.random(b - a) * 1e-12, -np.inf)
        j = int(np.argmax(sc))
        lo, hi = cand_lo[j], cand_hi[j]
        leaves.append(a + j)
    return lo, hi, leaves
