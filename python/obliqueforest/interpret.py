"""Reading fitted trees: oblique split rules as plain data and as text.

Every inner node of a projection tree splits on ``sum_j w_j * x[f_j] <= threshold`` (rows
that satisfy it go left). These helpers read the node table the Rust core exposes
(``estimator._forest.tree_nodes(t)``) and present it the way scikit-learn's
:func:`sklearn.tree.export_text` presents axis-aligned trees, with the projection written
out, e.g. ``0.5*x3 - 1*x7 <= 0.123``. MORF patches appear as their features with weight 1.
"""

from __future__ import annotations

import numpy as np

from . import _core

__all__ = ["decision_path_rules", "export_text", "split_rules"]


def _core_forest(estimator):
    """The ``_core.Forest`` behind a fitted projection forest of this library (a
    ``_core.Forest`` is returned as it is); the autoencoder reads its forest through it too.
    NotFittedError for an estimator not fitted yet, TypeError for anything else."""
    if isinstance(estimator, _core.Forest):
        return estimator
    forest = getattr(estimator, "_forest", None)
    if isinstance(forest, _core.Forest):
        return forest
    if hasattr(estimator, "get_params") and not hasattr(estimator, "n_features_in_"):
        from sklearn.exceptions import NotFittedError

        raise NotFittedError(
            f"This {type(estimator).__name__} instance is not fitted yet; call fit first"
        )
    raise TypeError(
        f"{type(estimator).__name__} is not a single projection forest of this library "
        "(RandomForest*, SPORF*, MORF*, ObliqueForest*, IsolationForest, "
        "UnsupervisedRandomForest, or one of their trees) nor a _core.Forest"
    )


def _check_tree(forest, tree):
    n_trees = forest.n_trees
    if isinstance(tree, bool) or not isinstance(tree, (int, np.integer)):
        raise TypeError(f"tree must be an int, got {type(tree).__name__}")
    if not 0 <= tree < n_trees:
        raise ValueError(f"tree must be in [0, {n_trees}), got {tree}")
    return int(tree)


def _feature_names(estimator, feature_names, n_features):
    if feature_names is None:
        # a tree that splits on transformed features names them itself (a rotation tree:
        # the coordinates of scale(X) @ rotation_, not the input's features)
        split_names = getattr(estimator, "_split_feature_names", None)
        if split_names is not None:
            return split_names()
        names = getattr(estimator, "feature_names_in_", None)
        if names is None:
            return [f"x{i}" for i in range(n_features)]
        return [str(n) for n in names]
    names = [str(n) for n in feature_names]
    if len(names) != n_features:
        raise ValueError(
            f"feature_names has {len(names)} names, the model has {n_features} features"
        )
    return names


def _number(value, decimals):
    """``1.0`` -> ``"1"``, ``0.12345`` -> ``"0.123"`` (at most ``decimals`` decimals)."""
    text = np.format_float_positional(round(float(value), decimals), trim="-")
    return "0" if text == "-0" else text


def _projection_text(features, weights, names, decimals, pool=None, piece_len=0, categories=None):
    """``"0.5*x3 - 1*x7"``; a lone feature with weight 1 is just its name; a pooled
    projection is ``"max(x1 - x2, x2 - x3)"`` over its pieces; a categorical term is
    ``score(city)``, its level's score at the node (``categories``: per term None or
    the level scores, as :func:`split_rules` gives them)."""
    if categories is not None and any(c is not None for c in categories):
        names = list(names)
        shown = []
        for f, c in zip(features, categories):
            shown.append(f"score({names[f]})" if c is not None else names[f])
        names = shown
        features = list(range(len(features)))
    if pool is not None:
        pieces = [
            _projection_text(
                features[k : k + piece_len], weights[k : k + piece_len], names, decimals
            )
            for k in range(0, len(features), piece_len)
        ]
        return f"{pool}(" + ", ".join(pieces) + ")"
    if len(features) == 1 and weights[0] == 1.0:
        return names[features[0]]
    parts = []
    for k, (f, w) in enumerate(zip(features, weights)):
        coef = _number(abs(w), decimals)
        term = f"{coef}*{names[f]}"
        if k == 0:
            parts.append(f"-{term}" if w < 0 else term)
        else:
            parts.append(f"- {term}" if w < 0 else f"+ {term}")
    return " ".join(parts)


def _nodes(estimator, tree):
    forest = _core_forest(estimator)
    return forest, forest.tree_nodes(_check_tree(forest, tree))


def split_rules(estimator, tree=0):
    """The nodes of one tree as plain Python data.

    Parameters
    ----------
    estimator : fitted forest of this library
        RandomForest*, SPORF*, MORF* or ObliqueForest* classifier or regressor.
    tree : int, default=0
        Tree index, ``0 <= tree < n_estimators``.

    Returns
    -------
    rules : list of dict, length n_nodes
        Indexed by node id (the ids :meth:`apply` returns). Each dict has

        - ``node`` (int), ``depth`` (int), ``is_leaf`` (bool);
        - ``features`` (list of int) and ``weights`` (list of float): the projection
          ``sum_j weights[j] * x[features[j]]``, empty at leaves;
        - ``pool`` (None, ``"max"`` or ``"min"``) and ``piece_len`` (int): for a pooled
          projection (:class:`~obliqueforest.projections.PooledFilter`), the max (min)
          over its pieces, ``piece_len`` consecutive terms each, of their sums; None and
          the number of terms for a linear one (0 at leaves);
        - ``categories`` (None at leaves and for projections of numeric columns): per
          term, None for a numeric column and for a categorical one ``{level: score}``,
          the number the node reads for each level present among its training rows
          (the term's value is ``score`` instead of the column's code; a level not
          listed, never seen in training or absent from the node, reads as missing);
        - ``threshold`` (float, None at leaves): a row goes to ``left`` when the
          projection is ``<= threshold``, else to ``right`` (both -1 at leaves);
        - ``missing_left`` (bool, None at leaves): whether a row whose projection is
          missing goes left;
        - ``n_samples`` (int): training rows (in-bag draws) that reached the node;
        - ``value`` (list of float, length n_outputs): class probabilities for a
          classifier, the mean target for a regressor.
    """
    _, nodes = _nodes(estimator, tree)
    ptr, feats, wts = nodes["proj_ptr"], nodes["proj_features"], nodes["proj_weights"]
    pools, piece_lens = nodes["proj_pool"], nodes["proj_piece_len"]
    levels = _level_scores(estimator, nodes)
    rules = []
    for i in range(len(nodes["left"])):
        leaf = bool(nodes["left"][i] < 0)
        lo, hi = int(ptr[i]), int(ptr[i + 1])
        pool = (None, "max", "min")[int(pools[i])]
        rules.append(
            {
                "node": i,
                "depth": int(nodes["depth"][i]),
                "is_leaf": leaf,
                "features": [] if leaf else [int(f) for f in feats[lo:hi]],
                "weights": [] if leaf else [float(w) for w in wts[lo:hi]],
                "pool": pool,
                "piece_len": int(piece_lens[i]) if pool else hi - lo,
                "categories": None if leaf else levels(i, hi - lo),
                "threshold": None if leaf else float(nodes["threshold"][i]),
                "missing_left": None if leaf else bool(nodes["missing_go_to_left"][i]),
                "left": int(nodes["left"][i]),
                "right": int(nodes["right"][i]),
                "n_samples": int(nodes["n_node_samples"][i]),
                "value": [float(v) for v in nodes["value"][i]],
            }
        )
    return rules


def _level_scores(estimator, nodes):
    """``levels(i, n_terms)``: per term of node i's projection, None for a numeric term
    and for a categorical one ``{level: score}`` (its levels present at the node, with the
    value the node reads for each; a level not listed reads as missing)."""
    categories = getattr(estimator, "categories_", None)
    node_ptr, term = nodes["map_node_ptr"], nodes["map_term"]
    ptr, codes, values = nodes["map_ptr"], nodes["map_levels"], nodes["map_values"]

    def levels(i, n_terms):
        out = [None] * n_terms
        for m in range(int(node_ptr[i]), int(node_ptr[i + 1])):
            k, (a, b) = int(term[m]), (int(ptr[m]), int(ptr[m + 1]))
            f_levels = None
            if categories is not None:
                f = int(nodes["proj_features"][int(nodes["proj_ptr"][i]) + k])
                f_levels = categories[f]
            out[k] = {
                (f_levels[c].item() if hasattr(f_levels[c], "item") else f_levels[c])
                if f_levels is not None
                else c: float(v)
                for c, v in zip(codes[a:b].tolist(), values[a:b].tolist())
            }
        return out if any(c is not None for c in out) else None

    return levels


def _level_set_text(name, scores, weight, threshold, left, missing_left):
    """``"city in {a, d}"``: the levels of a one-term categorical split on one side
    (``left``: weight * score <= threshold), and ``"or missing"`` on the missing side (a
    level not in the node's map, never seen in training or absent from the node's rows,
    goes there too)."""
    side = [lv for lv, v in scores.items() if (weight * v <= threshold) == left]
    text = f"{name} in {{" + ", ".join(str(lv) for lv in side) + "}"
    return text + (" or missing" if missing_left == left else "")


def _leaf_text(estimator, value, decimals, show_weights):
    classes = getattr(estimator, "classes_", None)
    if isinstance(classes, list):
        # a multi-output classifier: each output's class, from its block of the value
        from ._trees import output_blocks

        blocks = output_blocks(np.asarray(value, dtype=float)[None, :], [len(c) for c in classes])
        labels = ", ".join(str(c[int(np.argmax(b))]) for c, b in zip(classes, blocks))
        text = f"classes: [{labels}]"
        if show_weights:
            text += " (proba: [" + ", ".join(_number(v, decimals) for v in value) + "])"
        return text
    if classes is not None:
        text = f"class: {classes[int(np.argmax(value))]}"
        if show_weights:
            text += " (proba: [" + ", ".join(_number(v, decimals) for v in value) + "])"
        return text
    return "value: [" + ", ".join(_number(v, decimals) for v in value) + "]"


def export_text(
    estimator, tree=0, feature_names=None, max_depth=10, decimals=3, show_weights=False
):
    """A text report of one tree's oblique rules, like scikit-learn's ``export_text``.

    Parameters
    ----------
    estimator : fitted forest of this library
    tree : int, default=0
        Tree index, ``0 <= tree < n_estimators``.
    feature_names : list of str of length n_features_in_ or None, default=None
        Names in the rules; None uses ``feature_names_in_`` when the model was fitted on
        a DataFrame and ``x0, x1, ...`` otherwise.
    max_depth : int, default=10
        Deeper subtrees are shown as ``truncated branch of depth d``.
    decimals : int, default=3
        Decimals of weights, thresholds and leaf values.
    show_weights : bool, default=False
        Also print a classifier leaf's class probabilities.

    Returns
    -------
    report : str
        One line per node, e.g.::

            |--- 0.5*x3 - 1*x7 <= 0.123
            |   |--- class: 1
            |--- 0.5*x3 - 1*x7 >  0.123
            |   |--- class: 0

        A split on one categorical column lists the levels each side takes
        (``city in {a, d} or missing``: missing values and levels the node never saw
        go that way); a categorical term of an oblique projection reads
        ``score(city)``, the node's score of the row's level (:func:`split_rules` gives
        the scores).
    """
    if isinstance(max_depth, bool) or not isinstance(max_depth, (int, np.integer)) or max_depth < 0:
        raise ValueError(f"max_depth must be a non-negative int, got {max_depth!r}")
    if isinstance(decimals, bool) or not isinstance(decimals, (int, np.integer)) or decimals < 0:
        raise ValueError(f"decimals must be a non-negative int, got {decimals!r}")
    forest, nodes = _nodes(estimator, tree)
    names = _feature_names(estimator, feature_names, forest.n_features)
    rules = split_rules(estimator, tree)
    lines = []

    def subtree_depth(i):
        # walked with a stack too (a truncated branch may be thousands of levels deep);
        # the truncated branches are disjoint, so all of them cost one pass over the tree
        deepest, todo = 0, [(i, 0)]
        while todo:
            j, d = todo.pop()
            r = rules[j]
            if r["is_leaf"]:
                deepest = max(deepest, d)
            else:
                todo.extend(((r["left"], d + 1), (r["right"], d + 1)))
        return deepest

    # an explicit stack: trees can be deeper than Python's recursion limit
    stack = [(0, 0)]
    while stack:
        i, level = stack.pop()
        if isinstance(i, str):  # a precomputed line
            lines.append(i)
            continue
        r = rules[i]
        indent = "|   " * level + "|--- "
        if r["is_leaf"]:
            lines.append(indent + _leaf_text(estimator, r["value"], decimals, show_weights))
            continue
        if level >= max_depth:
            lines.append(indent + f"truncated branch of depth {subtree_depth(i)}")
            continue
        cats = r["categories"]
        if cats is not None and len(cats) == 1:
            # a split on one categorical column: the set of levels each side takes
            args = (names[r["features"][0]], cats[0], r["weights"][0], r["threshold"])
            left_text = _level_set_text(*args, True, r["missing_left"])
            right_text = _level_set_text(*args, False, r["missing_left"])
        else:
            rule = _projection_text(
                r["features"], r["weights"], names, decimals, r["pool"], r["piece_len"], cats
            )
            thr = _number(r["threshold"], decimals)
            left_text, right_text = f"{rule} <= {thr}", f"{rule} >  {thr}"
        # pushed in reverse: left line, left subtree, right line, right subtree
        stack.append((r["right"], level + 1))
        stack.append((indent + right_text, None))
        stack.append((r["left"], level + 1))
        stack.append((indent + left_text, None))
    return "\n".join(lines) + "\n"


def decision_path_rules(estimator, x, tree=0, feature_names=None, decimals=3):
    """The rules one sample follows from the root to its leaf in one tree.

    Parameters
    ----------
    estimator : fitted forest of this library
    x : array-like of shape (n_features,) or (1, n_features)
        The sample (cast to float32 as for prediction).
    tree : int, default=0
    feature_names : list of str or None, default=None
        As in :func:`export_text`.
    decimals : int, default=3
        Decimals in the ``rule`` strings.

    Returns
    -------
    path : list of dict
        One dict per node visited, root first. Inner nodes: ``node``, ``depth``,
        ``is_leaf=False``, ``features``, ``weights``, ``threshold``, ``projection``
        (the sample's value ``sum_j w_j x[f_j]``, or its max or min over the pieces of a
        pooled projection, as the core computes it in float32; NaN when a term is
        missing), ``pool``, ``piece_len``, ``goes`` (``"left"`` or ``"right"``: the side
        prediction takes, a missing value's side included) and ``rule`` (e.g.
        ``"0.5*x3 - 1*x7 <= 0.123"``, the side taken, or ``"x3 is missing (left for
        missing values)"``). The last dict
        is the leaf: ``node``, ``depth``, ``is_leaf=True``, ``n_samples``, ``value``.
        Its ``node`` equals ``estimator.apply(x)[0, tree]``.
    """
    forest = _core_forest(estimator)
    if hasattr(x, "columns") and len(x) == 1:
        row = x  # a one-row DataFrame: its names and column kinds are checked
    else:
        x = np.asarray(x)
        if x.ndim == 2 and x.shape[0] == 1:
            x = x[0]
        if x.ndim != 1:
            raise ValueError(f"x must be one sample of shape (n_features,), got shape {x.shape}")
        row = x.reshape(1, -1)
    # the core's own decisions: its float32 sums and each node's missing-value side
    values, goes_left = forest.node_decisions(estimator._validate_X_predict(row), tree)
    names = _feature_names(estimator, feature_names, forest.n_features)
    rules = split_rules(estimator, tree)
    path, i = [], 0
    while True:
        r = rules[i]
        if r["is_leaf"]:
            path.append(
                {
                    "node": i,
                    "depth": r["depth"],
                    "is_leaf": True,
                    "n_samples": r["n_samples"],
                    "value": r["value"],
                }
            )
            return path
        proj, left = float(values[0, i]), bool(goes_left[0, i])
        rule = _projection_text(
            r["features"],
            r["weights"],
            names,
            decimals,
            r["pool"],
            r["piece_len"],
            r["categories"],
        )
        if np.isnan(proj):
            # a missing term: the row follows the side the node learned for missing values
            rule = f"{rule} is missing ({'left' if left else 'right'} for missing values)"
        else:
            rule = f"{rule} {'<=' if left else '>'} {_number(r['threshold'], decimals)}"
        path.append(
            {
                "node": i,
                "depth": r["depth"],
                "is_leaf": False,
                "features": r["features"],
                "weights": r["weights"],
                "pool": r["pool"],
                "piece_len": r["piece_len"],
                "threshold": r["threshold"],
                "projection": proj,
                "goes": "left" if left else "right",
                "rule": rule,
            }
        )
        i = r["left"] if left else r["right"]
