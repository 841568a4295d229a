"""Per-tree access to a fitted forest, as scikit-learn's forests offer it.

``forest.estimators_``, ``forest[i]``, ``len(forest)`` and iteration give one
:class:`ObliqueTreeClassifier` / :class:`ObliqueTreeRegressor` per tree: an estimator of
its own (``get_params``, ``clone``, ``fit``, ``predict``, ``apply``, ``decision_path``,
``tree_``), which reads the core's tree without copying it until it is asked to predict
on its own. ``forest.estimator`` is the unfitted template of these trees (the forest's
tree parameters and projection), as scikit-learn >= 1.2 exposes it.

A per-tree estimator is a forest of one tree grown on the rows as given (no bootstrap).
Its ``random_state`` names the random streams it grows from: tree t of a forest seeded s
carries ``s * 2**20 + t``, so ``clone(forest[t]).fit(X[rows], y[rows])`` on the tree's
in-bag rows (``forest.estimators_samples_[t]``) regrows that tree. ``forest.decision_path``
and ``forest.estimators_samples_`` come from the core too (the in-bag rows are
recomputed from each tree's seed, never stored).

Per-tree predictions make simple uncertainty estimates possible::

    per_tree = np.stack([t.predict(X) for t in forest])  # (n_trees, n_samples)
    spread = per_tree.std(axis=0)                          # disagreement among the trees
"""

from __future__ import annotations

from numbers import Integral
from typing import Any

import numpy as np
from sklearn.base import ClassifierMixin
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from . import _core
from ._base import _BaseForest, _ClassifierMixin, _RegressorMixin
from ._outputs import labels_of, output_blocks, per_output_table
from ._params import PROJECTION, forest_params
from ._surface import Param
from ._validation import resolve_n_jobs
from .projections import SparseSigned

__all__ = [
    "ObliqueTreeClassifier",
    "ObliqueTreeRegressor",
    "InBagRowsMixin",
    "PerTreeMixin",
    "TreeNodes",
    "labels_of",
    "output_blocks",
    "per_output_table",
]

# scikit-learn's marker for "no feature / no threshold" at leaves (sklearn.tree._tree)
_UNDEFINED = -2
# our marker for an oblique split: more than one feature, or a weight other than 1
_OBLIQUE = -1
# a tree's random_state: seed * _TREES + tree index (a forest has at most 2**20 trees)
_TREES = 2**20


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

    def __init__(self, nodes: dict, n_features: int, class_counts=None, n_outputs=1, tree=None):
        left, right = nodes["left"], nodes["right"]
        leaf = left == -1
        ptr = nodes["proj_ptr"]
        feats, weights = nodes["proj_features"], nodes["proj_weights"]
        single = (np.diff(ptr) == 1) & ~leaf
        first = np.minimum(ptr[:-1], max(len(feats) - 1, 0))
        axis = single & (weights[first] == 1.0) if len(feats) else single
        axis &= nodes["proj_pool"] == 0
        self._tree = tree
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

    def _owner(self):
        if self._tree is None:
            raise AttributeError("these node arrays are not attached to a tree")
        return self._tree

    def apply(self, X):
        """The leaf each row of ``X`` reaches, shape (n_samples,), as scikit-learn's
        ``tree_.apply`` (X is validated as the tree's ``apply`` validates it)."""
        return self._owner().apply(X)

    def decision_path(self, X):
        """The nodes each row passes through: a CSR indicator of shape
        (n_samples, node_count), as scikit-learn's ``tree_.decision_path``."""
        return self._owner().decision_path(X)

    def compute_feature_importances(self, normalize=True):
        """This tree's impurity-based feature importances, shape (n_features,).

        Parameters
        ----------
        normalize : bool, default=True
            True: they sum to 1 (0 everywhere for a tree without splits). False: each is
            the weighted impurity decrease its splits earn, over the root's weight, as
            scikit-learn's ``tree_.compute_feature_importances(normalize=False)``.

        Returns
        -------
        importances : ndarray of shape (n_features,)
        """
        # (the tree's own: a rotation tree maps its feature_importances_ back to the
        # input features, these are of the features this table splits on)
        shares = np.asarray(self._owner()._tree_importances(), dtype=np.float64)
        if normalize:
            return shares
        # the core shares each split's decrease among its projection's features and
        # normalises; the total is the sum of the decreases, read off the node table
        inner = np.flatnonzero(self.children_left != -1)
        w, imp = self.weighted_n_node_samples, self.impurity
        left, right = self.children_left[inner], self.children_right[inner]
        decrease = w[inner] * imp[inner] - w[left] * imp[left] - w[right] * imp[right]
        return shares * (decrease.sum() / w[0])


def _tree_random_state(rs):
    """(seed, tree index) of a per-tree ``random_state``: an int names them
    (``seed * 2**20 + index``); None or a RandomState draws a seed, index 0."""
    if isinstance(rs, Integral) and not isinstance(rs, bool):
        return divmod(int(rs), _TREES)
    return int(check_random_state(rs).randint(0, 2**31 - 1)), 0


_TREE_RANDOM_STATE = Param(
    "random_state",
    None,
    [Interval(Integral, 0, 2**31 * _TREES - 1, closed="both"), np.random.RandomState, None],
    "int, RandomState instance or None",
    """The random streams the tree grows from: an int ``s * 2**20 + t`` names those of
    tree t of a forest seeded s (a forest's tree carries its own, so ``clone(tree)``
    regrows it on the same rows); None or a RandomState draws a seed.""",
)


def _tree_surface(task):
    # a tree takes the forest parameters that are not about many trees
    surface = (
        forest_params(task)
        .without("ensemble", positional=0)
        .replace(
            "max_features",
            default=1.0,
            doc="Number d of candidate projections per node (a float is a fraction of "
            "n_features, and may exceed 1.0 for oblique projections).",
        )
        .insert([PROJECTION])
        .insert([_TREE_RANDOM_STATE], after="max_features")
    )
    if task == "classification":
        surface = surface.replace(
            "class_weight",
            constraints=[StrOptions({"balanced"}), dict, list, None],
            type='"balanced", dict or None',
            doc="Class weights as in scikit-learn (the trees of a forest carry None: the "
            "forest weighs the rows).",
        )
    return surface


class _TreeMixin:
    """A forest of one tree, grown on the rows as given from the streams its
    ``random_state`` names."""

    # the forest settings a tree does not have: one tree, no bootstrap, no OOB
    warm_start = False
    oob_score = False
    # a view's source tree is fit state too: a refit replaces it
    _private_fit_state = _BaseForest._private_fit_state | {"_source", "_tree_index"}

    @classmethod
    def _view(cls, core, index, params, fitted):
        """Tree ``index`` of the fitted core forest ``core`` as a fitted estimator; its
        core forest is copied out on first use."""
        tree = cls(**params, random_state=int(core.seed) * _TREES + index)
        tree.__dict__.update(fitted, _source=(core, index))
        return tree

    def __getattr__(self, name):
        # the one-tree core forest of a view, selected from its forest on first use
        source = self.__dict__.get("_source") if name == "_forest" else None
        if source is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        one = source[0].select_trees(np.array([source[1]], dtype=np.int64))
        self.__dict__["_forest"] = one
        return one

    def __getstate__(self):
        # a view pickles its own tree, not the whole forest it reads
        state = super().__getstate__()
        if "_source" in state:
            state = {k: v for k, v in state.items() if k != "_source"}
            state["_forest"] = self._forest
        return state

    def __sklearn_is_fitted__(self):
        return "_forest" in self.__dict__ or "_source" in self.__dict__

    def _projection_object(self):
        return SparseSigned() if self.projection is None else self.projection

    def _tree_importances(self):
        """The impurity importances of the features the tree splits on (``tree_.feature``)."""
        check_is_fitted(self)
        return self._forest.feature_importances()

    def _n_threads(self) -> int:
        return resolve_n_jobs(self.__dict__.get("_n_jobs"))

    def _draw_seed(self) -> int:
        seed, self._tree_index = _tree_random_state(self.random_state)
        return seed

    def _core_fields(self) -> dict:
        return {
            **super()._core_fields(),
            "n_estimators": self._tree_index + 1,
            "bootstrap": False,
            "max_samples": None,
            "oob": False,
        }

    def _grow_core_forest(self, X32, y_core, sw, params):
        t = self._tree_index
        part = _core.ForestPart.grow(X32, y_core, sw, params, t, t + 1, self._n_threads())
        return _core.part_forest(part)

    def _nodes(self):
        source = self.__dict__.get("_source")
        core, index = source if source is not None else (self._forest, 0)
        return core, index

    @property
    def tree_(self) -> TreeNodes:
        """The node arrays (:class:`TreeNodes`)."""
        check_is_fitted(self)
        core, index = self._nodes()
        return TreeNodes(
            core.tree_nodes(index), self.n_features_in_, core.class_counts, core.n_targets, self
        )

    def get_depth(self) -> int:
        """Depth of the tree (a single leaf has depth 0)."""
        check_is_fitted(self)
        core, index = self._nodes()
        return int(core.tree_stats()[1][index])

    def get_n_leaves(self) -> int:
        """Number of leaves."""
        check_is_fitted(self)
        core, index = self._nodes()
        return int(core.tree_stats()[2][index])

    def apply(self, X):
        """Leaf node id each row reaches, shape (n_samples,)."""
        return super().apply(X)[:, 0]

    def decision_path(self, X):
        """Nodes each row passes through: a CSR indicator of shape (n_samples, node_count)."""
        return super().decision_path(X)[0]


_TREE_DOC = """One projection tree, grown on the rows as given (no bootstrap): a forest's trees
    (``forest.estimators_``, ``forest[i]``) are of this class, and so is the template
    ``forest.estimator``.

    Every split node samples ``max_features`` candidate projections from ``projection``
    and splits on the best, as a tree of :class:`~obliqueforest.ObliqueForest{task}`.
    ``clone(forest[t]).fit(X[rows], y[rows])`` on the tree's in-bag rows
    (``rows = forest.estimators_samples_[t]``) regrows tree t, its ``random_state`` naming
    the random streams it grew from (a projection family that computes statistics of the
    data, as ``SparseSigned(scaling="robust")`` does, computes them on the rows given)."""

_TREE_ATTR_DOC = """
    Attributes
    ----------
    tree_ : TreeNodes
        The node arrays, with scikit-learn's ``apply``, ``decision_path`` and
        ``compute_feature_importances``.
    classes_ : ndarray of shape (n_classes,) or list of n_outputs such arrays
        Classifiers only.
    n_classes_ : int or list of int
        Classifiers only.
    n_outputs_ : int
    n_features_in_ : int
    is_categorical_ : ndarray of bool of shape (n_features_in_,)
        Which columns were categorical at fit (``categorical_features``).
    categories_ : list of n_features_in_ entries
        Per column, None for a numeric one, else the ndarray of its levels (a forest's
        trees share the forest's).
    feature_importances_ : ndarray of shape (n_features,)
        This tree's impurity-based importances, summing to 1.
"""


@_tree_surface("classification").declare(_TREE_DOC.format(task="Classifier"), _TREE_ATTR_DOC)
class ObliqueTreeClassifier(_TreeMixin, _ClassifierMixin, _BaseForest):
    # generated from the parameter table by `python -m obliqueforest._signatures`: do not edit
    # fmt: off
    def __init__(
        self, *, projection: Any = None, criterion: Any = "gini", max_depth: Any = None,
        min_samples_split: Any = 2, min_samples_leaf: Any = 1, min_weight_fraction_leaf: Any = 0.0,
        max_features: Any = 1.0, random_state: Any = None, max_leaf_nodes: Any = None,
        min_impurity_decrease: Any = 0.0, class_weight: Any = None, ccp_alpha: Any = 0.0,
        monotonic_cst: Any = None, splitter: Any = "best", max_bins: Any = 256,
        candidate_samples: Any = None, categorical_features: Any = "from_dtype",
        min_category_samples: Any = 3, categorical_in_projections: Any = True,
    ):
        self.projection = projection
        self.criterion = criterion
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_weight_fraction_leaf = min_weight_fraction_leaf
        self.max_features = max_features
        self.random_state = random_state
        self.max_leaf_nodes = max_leaf_nodes
        self.min_impurity_decrease = min_impurity_decrease
        self.class_weight = class_weight
        self.ccp_alpha = ccp_alpha
        self.monotonic_cst = monotonic_cst
        self.splitter = splitter
        self.max_bins = max_bins
        self.candidate_samples = candidate_samples
        self.categorical_features = categorical_features
        self.min_category_samples = min_category_samples
        self.categorical_in_projections = categorical_in_projections
    # fmt: on


@_tree_surface("regression").declare(_TREE_DOC.format(task="Regressor"), _TREE_ATTR_DOC)
class ObliqueTreeRegressor(_TreeMixin, _RegressorMixin, _BaseForest):
    # generated from the parameter table by `python -m obliqueforest._signatures`: do not edit
    # fmt: off
    def __init__(
        self, *, projection: Any = None, criterion: Any = "squared_error", max_depth: Any = None,
        min_samples_split: Any = 2, min_samples_leaf: Any = 1, min_weight_fraction_leaf: Any = 0.0,
        max_features: Any = 1.0, random_state: Any = None, max_leaf_nodes: Any = None,
        min_impurity_decrease: Any = 0.0, ccp_alpha: Any = 0.0, monotonic_cst: Any = None,
        splitter: Any = "best", max_bins: Any = 256, candidate_samples: Any = None,
        categorical_features: Any = "from_dtype", min_category_samples: Any = 2,
        categorical_in_projections: Any = True,
    ):
        self.projection = projection
        self.criterion = criterion
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_weight_fraction_leaf = min_weight_fraction_leaf
        self.max_features = max_features
        self.random_state = random_state
        self.max_leaf_nodes = max_leaf_nodes
        self.min_impurity_decrease = min_impurity_decrease
        self.ccp_alpha = ccp_alpha
        self.monotonic_cst = monotonic_cst
        self.splitter = splitter
        self.max_bins = max_bins
        self.candidate_samples = candidate_samples
        self.categorical_features = categorical_features
        self.min_category_samples = min_category_samples
        self.categorical_in_projections = categorical_in_projections
    # fmt: on


class InBagRowsMixin:
    """``estimators_samples_``: each tree's rows, recomputed from the core."""

    # -- hooks of the rotation ensembles, whose trees come from one core forest per
    # rotation (obliqueforest._rotation_trees)
    def _check_trees(self):
        """NotFittedError unless this (fitted state) holds trees."""
        check_is_fitted(self, "_forest")

    def _tree_sources(self) -> list:
        """(core forest, tree index) of every tree, in the order of ``estimators_`` (of a
        fitted state: call it on ``_fitted()``)."""
        core = self._forest
        return [(core, t) for t in range(core.n_trees)]

    @property
    def estimators_samples_(self):
        """The in-bag rows of each tree: a list of n_estimators index arrays (ascending, a row
        repeated as often as the bootstrap drew it; every row once without bootstrap).
        Recomputed from the trees' seeds, not stored. For an honest forest these are both
        parts, :attr:`structure_indices_` and :attr:`honest_indices_`."""
        return self._rows_of_trees(
            "estimators_samples_", lambda core, t, n: core.in_bag_counts(t, n)
        )

    def _rows_of_trees(self, name, counts_of):
        """Per tree, the training rows repeated ``counts_of(core, tree, n_samples)`` times."""
        est = self._fitted()
        est._check_trees()
        n = getattr(est, "_n_samples_fit", None)
        if n is None:
            raise AttributeError(
                f"{name} needs the number of training rows, which this model "
                "does not record (fitted on a cluster in partitions mode, or saved by an "
                "older version)"
            )
        rows = np.arange(n, dtype=np.int32 if n < 2**31 else np.int64)  # scikit-learn's dtype
        return [np.repeat(rows, counts_of(core, t, n)) for core, t in est._tree_sources()]


class PerTreeMixin(InBagRowsMixin):
    """``estimators_``, ``estimator``, indexing, ``decision_path`` and
    ``estimators_samples_`` for the projection forests."""

    def _tree_class(self):
        return ObliqueTreeClassifier if isinstance(self, ClassifierMixin) else ObliqueTreeRegressor

    def _tree_params(self) -> dict:
        """The parameters of this forest's trees: the tree parameters it shares with them
        and its projection if they take one (the forest weighs classes itself, so its
        trees carry no class_weight; each tree has its own random_state)."""
        params = self.get_params(deep=False)
        surface = self._tree_class()._surface.names()
        names = set(surface) - {"projection", "class_weight", "random_state"}
        tree = {name: value for name, value in params.items() if name in names}
        if "projection" in surface:
            tree["projection"] = self._projection_object()
        return tree

    @property
    def estimator(self):
        """The template of this forest's trees: an unfitted :class:`ObliqueTreeClassifier`
        or :class:`ObliqueTreeRegressor` with the forest's tree parameters and
        projection."""
        return self._tree_class()(**self._tree_params())

    @property
    def estimator_(self):
        """The template of the fitted trees (as :attr:`estimator`; fitted forests only)."""
        est = self._fitted()
        est._check_trees()
        return est.estimator

    @property
    def estimators_(self):
        """The fitted trees, a list of :class:`ObliqueTreeClassifier` or
        :class:`ObliqueTreeRegressor` of length n_estimators."""
        est = self._fitted()
        est._check_trees()
        core = est._forest
        params, fitted, cls = est._tree_params(), est._tree_fitted(core), est._tree_class()
        return [cls._view(core, t, params, fitted) for t in range(core.n_trees)]

    def _tree_fitted(self, core) -> dict:
        """The fitted attributes the views of the trees of ``core`` share with this forest
        (of a fitted state)."""
        fitted = {"n_features_in_": self.n_features_in_, "n_outputs_": core.n_targets}
        for name in ("feature_names_in_", "classes_", "n_classes_", "_categories"):
            if name in self.__dict__:
                fitted[name] = self.__dict__[name]
        fitted["_n_jobs"] = self.n_jobs
        return fitted

    def __len__(self) -> int:
        est = self._fitted()
        est._check_trees()
        return len(est._tree_sources())

    def __bool__(self) -> bool:
        # an estimator is always truthy, fitted or not (len() of an unfitted one raises)
        return True

    def __getitem__(self, index):
        return self.estimators_[index]

    def __iter__(self):
        return iter(self.estimators_)

    @property
    def honest_indices_(self):
        """The honest rows of each tree (``honest_fraction > 0``): the rows that filled its
        leaves and that its split search never saw, as :attr:`estimators_samples_` lists
        rows (a list of index arrays, ascending, a row repeated as often as the bootstrap
        drew it); empty arrays for a forest that is not honest. Recomputed from the trees'
        seeds, not stored."""
        return self._rows_of_trees("honest_indices_", lambda core, t, n: core.honest_counts(t, n))

    @property
    def structure_indices_(self):
        """The rows each tree's split search saw: :attr:`estimators_samples_` less
        :attr:`honest_indices_`."""

        def structure(core, t, n):
            return core.in_bag_counts(t, n) - core.honest_counts(t, n)

        return self._rows_of_trees("structure_indices_", structure)
