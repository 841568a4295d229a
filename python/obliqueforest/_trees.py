"""Per-tree access to a fitted forest, as scikit-learn's forests offer it.

``forest.estimators_``, ``forest[i]``, ``len(forest)`` and iteration give lightweight
:class:`ForestTree` objects over the core's trees: no tree is copied until one is asked to
predict on its own. ``forest.decision_path`` and ``forest.estimators_samples_`` come from the
core too (the in-bag rows are recomputed from each tree's seed, never stored).

Per-tree predictions make simple uncertainty estimates possible::

    per_tree = np.stack([t.predict(X) for t in forest])  # (n_trees, n_samples)
    spread = per_tree.std(axis=0)                          # disagreement among the trees
"""

from __future__ import annotations

import numpy as np
from scipy import sparse
from sklearn.utils.validation import check_is_fitted

__all__ = ["ForestTree", "TreeNodes", "output_blocks", "per_output_table"]


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


# scikit-learn's marker for "no feature / no threshold" at leaves (sklearn.tree._tree)
_UNDEFINED = -2
# our marker for an oblique split: more than one feature, or a weight other than 1
_OBLIQUE = -1


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


class TreeNodes:
    """The node table of one fitted tree, named as scikit-learn's ``tree_`` names it.

    Node ``i`` is a leaf when ``children_left[i] == -1``. Otherwise a row goes left when its
    projection ``sum(projection_weights[k] * x[projection_features[k]])`` over ``k`` in
    ``projection_ptr[i]:projection_ptr[i + 1]`` is ``<= threshold[i]``; a row whose
    projection is missing (a NaN term) goes left when ``missing_go_to_left[i]``.

    Attributes
    ----------
    node_count : int
    max_depth : int
    n_leaves : int
    n_features : int
    n_outputs : int
        Target columns (1 unless the forest was fitted on a 2-D y).
    children_left, children_right : ndarray of shape (node_count,)
        Child node ids, -1 at leaves.
    feature : ndarray of shape (node_count,)
        The split feature of an axis-aligned split (one feature, weight 1), -1 at oblique
        splits (read the projection arrays) and -2 at leaves, as scikit-learn marks them.
    threshold : ndarray of shape (node_count,)
        Split thresholds, -2 at leaves.
    projection_ptr : ndarray of shape (node_count + 1,)
    projection_features, projection_weights : ndarray of shape (projection_ptr[-1],)
        Each inner node's projection in CSR form (MORF patches expanded, weight 1).
    projection_pool : ndarray of shape (node_count,), dtype uint8
        1 (2) where the node's projection is instead the max (min) over its pieces of
        ``projection_piece_len[i]`` consecutive terms each (pooled filters,
        :class:`~obliqueforest.projections.PooledFilter`), else 0.
    projection_piece_len : ndarray of shape (node_count,)
    value : ndarray of shape (node_count, n_outputs, max_n_classes) or (node_count, n_outputs, 1)
        Class fractions of each output (classifiers; outputs with fewer classes than the
        widest are zero-padded) or each output's mean target (regressors), inner nodes
        included, as scikit-learn's ``tree_.value``.
    impurity : ndarray of shape (node_count,)
    n_node_samples : ndarray of shape (node_count,)
        In-bag rows that reached each node.
    weighted_n_node_samples : ndarray of shape (node_count,)
    depth : ndarray of shape (node_count,)
    missing_go_to_left : ndarray of shape (node_count,), dtype uint8
        1 where rows with a missing projection go left: the side the split search chose
        when the node saw missing values in training, else the child with more weighted
        training rows (right on ties); 0 at leaves. As scikit-learn's.
    """

    def __init__(self, nodes: dict, n_features: int, class_counts=None, n_outputs: int = 1):
        left, right = nodes["left"], nodes["right"]
        leaf = left == -1
        ptr = nodes["proj_ptr"]
        feats, weights = nodes["proj_features"], nodes["proj_weights"]
        single = (np.diff(ptr) == 1) & ~leaf
        first = np.minimum(ptr[:-1], max(len(feats) - 1, 0))
        axis = single & (weights[first] == 1.0) if len(feats) else single
        axis &= nodes["proj_pool"] == 0
        self.node_count = len(left)
        self.n_features = n_features
        self.n_outputs = n_outputs
        self.children_left = left
        self.children_right = right
        self.feature = np.where(leaf, _UNDEFINED, _OBLIQUE).astype(np.int64)
        self.feature[axis] = feats[first[axis]]
        self.threshold = np.where(leaf, float(_UNDEFINED), nodes["threshold"])
        self.projection_ptr = ptr
        self.projection_features = feats
        self.projection_weights = weights
        self.projection_pool = nodes["proj_pool"]
        self.projection_piece_len = nodes["proj_piece_len"]
        self.value = per_output_table(nodes["value"], class_counts, n_outputs)
        self.impurity = nodes["impurity"]
        self.n_node_samples = nodes["n_node_samples"]
        self.weighted_n_node_samples = nodes["weighted_n_node_samples"]
        self.depth = nodes["depth"]
        self.missing_go_to_left = nodes["missing_go_to_left"]
        self.max_depth = int(self.depth.max())
        self.n_leaves = int(leaf.sum())


class ForestTree:
    """One tree of a fitted forest, with the single-tree API of scikit-learn's trees.

    Obtained from ``forest.estimators_[i]`` or ``forest[i]``; it reads the forest it came
    from, so it stays valid until that forest is refitted (then it raises).

    Attributes
    ----------
    tree_ : TreeNodes
        The node arrays.
    classes_ : ndarray of shape (n_classes,) or list of n_outputs such arrays
        Classifiers only.
    n_outputs_ : int
    n_features_in_ : int
    feature_importances_ : ndarray of shape (n_features,)
        This tree's impurity-based importances, summing to 1.
    """

    def __init__(self, forest, index: int):
        self._owner = forest
        self._core = forest._forest
        self._index = index
        self._single = None
        self.n_features_in_ = forest.n_features_in_
        if hasattr(forest, "classes_"):
            self.classes_ = forest.classes_
            self.n_classes_ = forest.n_classes_
        self.n_outputs_ = self._core.n_targets

    def __repr__(self) -> str:
        return f"ForestTree(index={self._index}, of={type(self._owner).__name__})"

    def _one(self):
        """The core forest of this tree alone (one tree copied, on first use)."""
        if self._owner.__dict__.get("_forest") is not self._core:
            raise ValueError(
                "the forest this tree came from was refitted; take the tree from it again"
            )
        if self._single is None:
            self._single = self._core.select_trees(np.array([self._index], dtype=np.int64))
        return self._single

    def _validate(self, X):
        one = self._one()
        return one, self._owner._validate_X_predict(X)

    # the tree parameters scikit-learn's trees carry, read from the forest
    _TREE_PARAMS = (
        "criterion",
        "splitter",
        "max_depth",
        "min_samples_split",
        "min_samples_leaf",
        "min_weight_fraction_leaf",
        "max_features",
        "max_leaf_nodes",
        "min_impurity_decrease",
        "ccp_alpha",
        "monotonic_cst",
    )

    def __getattr__(self, name):
        if name in ForestTree._TREE_PARAMS and name in self._owner.get_params(deep=False):
            return getattr(self._owner, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @property
    def random_state(self) -> int:
        """Identifies this tree's random streams: tree t of a forest seeded s draws from
        the streams keyed by (s, t), given here as ``s * 2**20 + t`` (so a warm-started
        forest's trees carry the same values as a forest grown in one go)."""
        return int(self._core.seed) * 2**20 + self._index

    @property
    def tree_(self) -> TreeNodes:
        return TreeNodes(
            self._core.tree_nodes(self._index),
            self.n_features_in_,
            self._core.class_counts,
            self.n_outputs_,
        )

    def get_depth(self) -> int:
        """Depth of the tree (a single leaf has depth 0)."""
        return int(self._core.tree_stats()[1][self._index])

    def get_n_leaves(self) -> int:
        """Number of leaves."""
        return int(self._core.tree_stats()[2][self._index])

    @property
    def feature_importances_(self):
        return self._one().feature_importances()

    def apply(self, X):
        """Leaf node id each row reaches, shape (n_samples,)."""
        one, X = self._validate(X)
        return one.apply(X, self._owner._n_threads())[:, 0]

    def decision_path(self, X):
        """Nodes each row passes through: a CSR indicator of shape (n_samples, node_count)."""
        one, X = self._validate(X)
        indptr, indices, ptr = one.decision_path(X, self._owner._n_threads())
        data = np.ones(len(indices), dtype=np.int64)
        return sparse.csr_matrix((data, indices, indptr), shape=(X.shape[0], int(ptr[-1])))

    def _leaf_values(self, X):
        one, X = self._validate(X)
        return one.predict(X, self._owner._n_threads())

    def predict_proba(self, X):
        """The leaf's class fractions, shape (n_samples, n_classes), or a list of one such
        array per output for a multi-output forest (classifiers only)."""
        if not hasattr(self, "classes_"):
            raise AttributeError("a regression tree has no predict_proba")
        values = self._leaf_values(X)
        if self.n_outputs_ == 1:
            return values
        return output_blocks(values, self._core.class_counts)

    def predict(self, X):
        """The leaf's majority class (classifiers) or mean target (regressors), shape
        (n_samples,), or (n_samples, n_outputs) for a multi-output forest."""
        if hasattr(self, "classes_"):
            return labels_of(self.predict_proba(X), self.classes_)
        values = self._leaf_values(X)
        return values[:, 0] if self.n_outputs_ == 1 else values


class PerTreeMixin:
    """``estimators_``, indexing, ``decision_path`` and ``estimators_samples_`` for the
    projection forests (mixed into ``_BaseForest``)."""

    @property
    def estimators_(self):
        """The fitted trees, a list of :class:`ForestTree` of length n_estimators."""
        check_is_fitted(self, "_forest")
        return [ForestTree(self, i) for i in range(self._forest.n_trees)]

    def __len__(self) -> int:
        return len(self.estimators_)

    def __bool__(self) -> bool:
        # an estimator is always truthy, fitted or not (len() of an unfitted one raises)
        return True

    def __getitem__(self, index):
        return self.estimators_[index]

    def __iter__(self):
        return iter(self.estimators_)

    def decision_path(self, X):
        """Nodes each row passes through in every tree.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        indicator : sparse matrix of shape (n_samples, n_nodes)
            CSR; entry (i, j) is 1 when row i passes through node j, where tree t's nodes are
            the columns ``n_nodes_ptr[t]:n_nodes_ptr[t + 1]``.
        n_nodes_ptr : ndarray of shape (n_estimators + 1,)
        """
        X = self._validate_X_predict(X)
        indptr, indices, n_nodes_ptr = self._forest.decision_path(X, self._n_threads())
        data = np.ones(len(indices), dtype=np.int64)
        shape = (X.shape[0], int(n_nodes_ptr[-1]))
        return sparse.csr_matrix((data, indices, indptr), shape=shape), n_nodes_ptr

    @property
    def estimators_samples_(self):
        """The in-bag rows of each tree: a list of n_estimators index arrays (ascending, a row
        repeated as often as the bootstrap drew it; every row once without bootstrap).
        Recomputed from the trees' seeds, not stored."""
        check_is_fitted(self, "_forest")
        n = getattr(self, "_n_samples_fit", None)
        if n is None:
            raise AttributeError(
                "estimators_samples_ needs the number of training rows, which this model "
                "does not record (fitted on a cluster in partitions mode, or saved by an "
                "older version)"
            )
        rows = np.arange(n, dtype=np.int32 if n < 2**31 else np.int64)  # scikit-learn's dtype
        return [
            np.repeat(rows, self._forest.in_bag_counts(t, n)) for t in range(self._forest.n_trees)
        ]
