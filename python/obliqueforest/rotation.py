"""Regularized random-rotation ensembles (Blaser & Fryzlewicz).

A rotation ensemble grows ordinary axis-aligned trees on randomly rotated
copies of the (scaled) data. The regularized variant first grows a small
*micro-forest* of ``micro_forest_size`` trees on each of ``n_rotations``
rotations (the identity always among them), measures how complex the trees
of each rotation are, ranks the rotations from simplest to most complex and
then spreads the ``n_estimators`` trees of the final ensemble over the
rotations with a non-increasing weighting scheme (Blaser & Fryzlewicz 2019,
Algorithm 1). Simple trees on a rotation indicate that the rotation aligns
the decision boundary with the axes.

All trees are grown by the Rust core (``obliqueforest._core.Forest``), one
call per micro-forest and at most one more call per rotation; this module
only orchestrates: it draws the rotations, rotates the data with one matrix
product per rotation, ranks, weights and averages. The public estimators are
here, their parameters declared from the forests' table
(:mod:`obliqueforest._params`, :mod:`obliqueforest._surface`); the rotation and
weighting math is in ``_rotation_math``, the fitting and prediction they share in
``_rotation_base`` and their trees (:class:`RotationTreeClassifier`,
:class:`RotationTreeRegressor`) in ``_rotation_trees``.

References
----------
.. [1] R. Blaser and P. Fryzlewicz, "Regularizing axis-aligned ensembles via
   data rotations that favor simpler learners", Statistics and Computing 31,
   15 (2021).
.. [2] R. Blaser and P. Fryzlewicz, "Random rotation ensembles", Journal of
   Machine Learning Research 17 (2016), 1-26.
.. [3] T. Anderson, I. Olkin and L. Underhill, "Generation of random
   orthogonal matrices", SIAM J. Sci. Stat. Comput. 8 (1987), 625-629.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any

import numpy as np
from sklearn.base import ClassifierMixin, RegressorMixin
from sklearn.utils import compute_sample_weight
from sklearn.utils._param_validation import Interval, StrOptions

from ._outputs import labels_of, output_blocks
from ._params import forest_params
from ._rotation_base import _BaseRotationEnsemble

# obliqueforest.dask installs its runner here and rotates on the workers with ``rotate``
from ._rotation_base import ROTATION_RUNNER  # noqa: F401
from ._rotation_math import (
    WEIGHTINGS,
    allocate_trees,
    cut_weights,
    exp_weights,
    haar_rotation,
    linear_weights,
    tree_complexity,
)
from ._rotation_math import rotate  # noqa: F401
from ._rotation_trees import (
    AXIS_MAX_FEATURES,
    SCALING,
    RotationTreeClassifier,
    RotationTreeRegressor,
)
from ._surface import Param
from ._validation import class_targets, target_columns

__all__ = [
    "WEIGHTINGS",
    "RotationEnsembleClassifier",
    "RotationEnsembleRegressor",
    "RotationTreeClassifier",
    "RotationTreeRegressor",
    "allocate_trees",
    "cut_weights",
    "exp_weights",
    "haar_rotation",
    "linear_weights",
    "tree_complexity",
]

# -- the parameters --------------------------------------------------------------------
# The ensembles' own parameters; the tree parameters come from the forests' table
# (obliqueforest._params), with the ensembles' defaults and words.
ROTATION_PARAMS = [
    Param(
        "n_rotations",
        20,
        [Interval(Integral, 1, None, closed="left")],
        "int",
        """Number R of rotations. Rotation 0 is the identity, the others are drawn from the
        Haar distribution.""",
    ),
    Param(
        "micro_forest_size",
        10,
        [Interval(Integral, 1, None, closed="left")],
        "int",
        """Number U of trees in the micro-forest grown on every rotation to estimate its
        complexity and OOB error. Micro-forest trees are reused in the final ensemble.""",
    ),
    Param(
        "weighting",
        "exp",
        [StrOptions(set(WEIGHTINGS))],
        '{"rre", "cut", "exp", "bst", "new", "lin", "oob", "jnt"}',
        """How trees are spread over the ranked rotations (Sect. 5 of [1]_): ``"rre"`` equal
        numbers of trees on all rotations (plain random rotation ensemble); ``"cut"``
        equal numbers on the top-h rotations (Eq. 6); ``"exp"`` exponential decay with
        half-life h (Eq. 7); ``"bst"`` all trees on the least complex rotation; ``"new"``
        equal numbers on the rotations ranked at or above the identity; ``"lin"`` linearly
        decreasing in complexity rank; ``"oob"`` linearly decreasing in micro-forest
        OOB-error rank; ``"jnt"`` linearly decreasing in
        ``rank(rank(OOB error) + rank(complexity))``.""",
    ),
    Param(
        "h",
        None,
        [Interval(Real, 0, None, closed="neither"), None],
        "float or None",
        """Tuning parameter of ``"cut"`` (integer cut-off in [1, R]) and ``"exp"`` (positive
        half-life). None chooses it by grid search over ``h_grid`` with ``h_criterion``.
        Ignored by the other schemes.""",
    ),
    Param(
        "h_grid",
        None,
        ["array-like", None],
        "array-like of shape (n_grid,) or None",
        """Candidate values of h. None means all integers 1..R for ``"cut"`` and 60
        geometrically spaced values in [0.1, 10 R] for ``"exp"``.""",
    ),
    Param(
        "h_criterion",
        "weighted_oob",
        [StrOptions({"weighted_oob", "ensemble_oob"})],
        '{"weighted_oob", "ensemble_oob"}',
        """Objective minimised by the h grid search. ``"weighted_oob"`` is the paper's
        (Sect. 3.1): the sum over rotations of weight times the rotation's micro-forest OOB
        error. It is linear in the weights, so it favours putting the trees on the few
        rotations with the smallest OOB errors. ``"ensemble_oob"`` instead takes the OOB
        error of the weighted ensemble of all micro-forests (each tree of rotation k
        weighted by w_k / U), which rewards the diversity of several rotations.""",
    ),
    SCALING.replace(
        doc="""Applied to each feature before rotating, fitted on the training data (Sect. 6
        of [1]_; rotations need features of comparable scale). ``"minmax"`` maps the
        training range to [0, 1]; ``"rank"`` maps a value to its rank among the distinct
        training values, divided by their number minus one, interpolating linearly for new
        values (clipped to [0, 1]). None uses the features as given.

        Sparse X (scipy CSR/CSC) is scaled and rotated without densifying it: the scaled
        data are kept as a sparse matrix plus a per-feature offset, and each rotation is a
        sparse-dense product. The rotated data, and the forests grown on them, are those of
        the dense array up to floating-point rounding (the sums are taken in another
        order).""",
    ),
]

_TREE_DOCS = {
    "max_depth": (
        "int or None",
        """Maximum tree depth; None grows trees until the leaves are pure or smaller than
        ``min_samples_split`` (the paper's unconstrained trees).""",
    ),
    "min_samples_split": (
        "int or float",
        "Minimum number (or fraction) of samples needed to split a node.",
    ),
    "min_samples_leaf": ("int or float", "Minimum number (or fraction) of samples in a leaf."),
    "min_weight_fraction_leaf": (
        "float",
        "Minimum weighted fraction of the total sample weight in a leaf.",
    ),
    "max_features": (
        '{"sqrt", "log2"}, int, float or None',
        """Number of candidate features per split, resolved by the core as in scikit-learn
        (a float is a fraction of n_features, at most 1.0). **The paper's Table 3 tree sizes
        are reproduced with** ``max_features=1`` (one random candidate per split);
        ``"sqrt"`` gives smaller trees.""",
    ),
    "max_leaf_nodes": ("int or None", "Grow trees best-first with at most this many leaves."),
    "min_impurity_decrease": (
        "float",
        "A node is split only if the impurity decreases by at least this much.",
    ),
    "bootstrap": (
        "bool",
        """Whether each tree sees a bootstrap sample. Needed for OOB errors, hence for
        ``"oob"``, ``"jnt"``, the h grid search and ``oob_score``.""",
    ),
    "oob_score": ("bool", "Whether to compute the out-of-bag score of the final ensemble."),
    "n_jobs": (
        "int or None",
        """Threads used by the core for growing and predicting (-1: all cores). Results do
        not depend on it.""",
    ),
    "random_state": (
        "int, RandomState instance or None",
        """Seeds the rotations and every core forest; all seeds are drawn before any tree is
        grown.""",
    ),
    "verbose": ("int", "Print the phase timings when positive."),
}


def _rotation_surface(task):
    """The declared parameters of the rotation ensemble of ``task``."""
    classification = task == "classification"
    surface = (
        forest_params(task)
        .select(
            "n_estimators",
            "criterion",
            "max_depth",
            "min_samples_split",
            "min_samples_leaf",
            "min_weight_fraction_leaf",
            "max_features",
            "max_leaf_nodes",
            "min_impurity_decrease",
            "bootstrap",
            "max_samples",
            "oob_score",
            *(["class_weight"] if classification else []),
            "n_jobs",
            "random_state",
            "verbose",
        )
        .insert(ROTATION_PARAMS, after="n_estimators")
        .replace("n_estimators", default=500, doc="Total number M of trees in the final ensemble.")
        .replace("max_features", constraints=AXIS_MAX_FEATURES)
        # a bool: the ranking's OOB errors are the ensemble's own
        .replace("oob_score", constraints=["boolean"])
    )
    for name, (kind, doc) in _TREE_DOCS.items():
        surface = surface.replace(name, type=kind, doc=doc)
    if classification:
        return surface.replace(
            "criterion",
            type='{"gini", "entropy", "log_loss"}',
            doc='Split quality measure; "log_loss" is another name for "entropy".',
        ).replace(
            "class_weight",
            constraints=[StrOptions({"balanced"}), dict, None],
            type='"balanced", dict or None',
            doc="Class weights multiplied into ``sample_weight`` (as in scikit-learn).",
        )
    return surface.replace(
        "criterion",
        type='{"squared_error", "absolute_error", "poisson"}',
        doc="""Split quality measure, as the forest regressors take it ("poisson" needs y >= 0
        with a positive sum; "absolute_error" is the slowest).""",
    )


_DOC_ATTRIBUTES = """
    rotations_ : ndarray of shape (n_rotations, n_features_in_, n_features_in_)
        The orthogonal matrices; rotation k sees ``scale(X) @ rotations_[k]``.
        ``rotations_[0]`` is the identity.

    rotation_complexity_ : ndarray of shape (n_rotations,)
        Median tree complexity ``#nodes + depth / N`` (Eq. 5) of each
        rotation's micro-forest.

    rotation_oob_error_ : ndarray of shape (n_rotations,)
        OOB error of each micro-forest (misclassification rate or mean squared
        error); NaN when ``bootstrap=False``.

    rotation_order_ : ndarray of int of shape (n_rotations,)
        Rotation indices from best to worst: by complexity, by OOB error for
        ``"oob"``, by the joint rank for ``"jnt"`` (ties by complexity).

    rotation_weights_ : ndarray of shape (n_rotations,)
        The scheme's weight of each rotation before rounding to trees.

    n_trees_per_rotation_ : ndarray of int of shape (n_rotations,)
        Trees of each rotation in the final ensemble; sums to ``n_estimators``
        and is non-increasing along ``rotation_order_``.

    estimator : {tree}
        The template of the trees: the ensemble's tree parameters and scaling, the
        identity rotation (``estimator_`` once fitted).

    estimators_ : list of {tree}
        The ``n_estimators`` trees, rotation by rotation (also ``est[i]``,
        ``len(est)`` and iteration). Each tree's ``predict``, {proba}``apply``
        and ``decision_path`` take X as the ensemble does (the tree applies the
        scaling and its rotation ``rotation_``); its ``tree_`` is in the rotated
        coordinates. Every tree weighs the same in the ensemble, so the mean of
        the trees' predictions is the ensemble's.

    estimators_samples_ : list of ndarray
        Each tree's in-bag rows (in the order of ``estimators_``), recomputed
        from its seed.

    h_ : float or None
        The h used by ``"cut"`` / ``"exp"`` (given or found by the grid
        search); None for the other schemes.

    h_grid_ : ndarray of shape (n_grid,) or None
        Grid searched for h (None when no search happened).

    h_scores_ : ndarray of shape (n_grid,) or None
        Value of the ``h_criterion`` objective at each grid point; ``h_`` is
        the first grid point with the smallest value.

    complexity_ : float
        Mean tree complexity (Eq. 5) over the final ensemble's trees.

    feature_importances_ : ndarray of shape (n_features_in_,)
        Impurity importances mapped back to the input features.

    n_outputs_ : int
        Target columns of the fit (1 for a 1-D y).

    n_features_in_ : int
        Number of features seen during fit.

    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of features seen during fit, when X has string column names.
"""

_REFERENCES = """
    References
    ----------
    .. [1] R. Blaser and P. Fryzlewicz, "Regularizing axis-aligned ensembles
       via data rotations that favor simpler learners", Statistics and
       Computing 31, 15 (2021).
    .. [2] R. Blaser and P. Fryzlewicz, "Random rotation ensembles", Journal
       of Machine Learning Research 17 (2016), 1-26.
"""


@_rotation_surface("classification").declare(
    """Regularized random-rotation ensemble classifier.

    Grows a micro-forest of axis-aligned trees on each of ``n_rotations``
    rotations of the scaled data, ranks the rotations by the median
    complexity of their trees (Eq. 5 of [1]_) and builds an equal-weighted
    ensemble of ``n_estimators`` trees in which simpler rotations receive
    more trees, following the ``weighting`` scheme. Predictions average the
    class probabilities of all trees, each on its own rotated input.""",
    """
    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,) or list of n_outputs such arrays
        Class labels.

    n_classes_ : int or list of int
        Number of classes.
"""
    + _DOC_ATTRIBUTES.format(tree="RotationTreeClassifier", proba="``predict_proba``, ")
    + """
    oob_score_ : float
        Accuracy of the final ensemble's OOB predictions (when
        ``oob_score=True``).

    oob_decision_function_ : ndarray of shape (n_samples, n_classes) or (n_samples, n_classes, n_outputs)
        OOB class probabilities (NaN for rows never out of bag), when
        ``oob_score=True``.

    See Also
    --------
    RotationEnsembleRegressor

    Notes
    -----
    The fit costs ``R * U`` micro-forest trees plus the trees added to the
    favoured rotations (Sect. 7 of [1]_); with ``weighting="rre"`` and
    ``M >= R * U`` every micro-forest tree is reused and exactly M trees are
    grown, while a scheme that keeps a single rotation grows
    ``R * U + M - U`` trees. With ``n_jobs > 1`` several micro-forests are
    grown at once; the fitted model does not depend on ``n_jobs``. A fit
    that raises leaves the estimator as it was.
"""
    + _REFERENCES
    + """
    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from obliqueforest.rotation import RotationEnsembleClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = RotationEnsembleClassifier(n_estimators=100, n_rotations=5,
    ...                                  random_state=0).fit(X, y)
    >>> int(clf.n_trees_per_rotation_.sum())
    100
    """,
)
class RotationEnsembleClassifier(ClassifierMixin, _BaseRotationEnsemble):
    # generated from the parameter table by `python -m obliqueforest._signatures`: do not edit
    # fmt: off
    def __init__(
        self, n_estimators: Any = 500, *, n_rotations: Any = 20, micro_forest_size: Any = 10,
        weighting: Any = "exp", h: Any = None, h_grid: Any = None,
        h_criterion: Any = "weighted_oob", scaling: Any = "minmax", criterion: Any = "gini",
        max_depth: Any = None, min_samples_split: Any = 2, min_samples_leaf: Any = 1,
        min_weight_fraction_leaf: Any = 0.0, max_features: Any = "sqrt", max_leaf_nodes: Any = None,
        min_impurity_decrease: Any = 0.0, bootstrap: Any = True, max_samples: Any = None,
        oob_score: Any = False, class_weight: Any = None, n_jobs: Any = None,
        random_state: Any = None, verbose: Any = 0,
    ):
        self.n_estimators = n_estimators
        self.n_rotations = n_rotations
        self.micro_forest_size = micro_forest_size
        self.weighting = weighting
        self.h = h
        self.h_grid = h_grid
        self.h_criterion = h_criterion
        self.scaling = scaling
        self.criterion = criterion
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_weight_fraction_leaf = min_weight_fraction_leaf
        self.max_features = max_features
        self.max_leaf_nodes = max_leaf_nodes
        self.min_impurity_decrease = min_impurity_decrease
        self.bootstrap = bootstrap
        self.max_samples = max_samples
        self.oob_score = oob_score
        self.class_weight = class_weight
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose
    # fmt: on

    _task = "classification"

    def _fit_draft(self, X, y, sample_weight):
        X, y = self._validate_fit_data(X, y)
        y = target_columns(y)
        self.classes_, y_codes = class_targets(y, self.oob_score)
        self.n_outputs_ = y.shape[1]
        if self.n_outputs_ == 1:
            y = y[:, 0]
            self.n_classes_ = len(self.classes_)
        else:
            self.n_classes_ = [len(c) for c in self.classes_]
        self._n_outputs = int(np.sum(self.n_classes_))
        sample_weight = self._check_sample_weight(sample_weight, X)
        if self.class_weight is not None:
            expanded = compute_sample_weight(self.class_weight, y)
            sample_weight = expanded if sample_weight is None else sample_weight * expanded
        return self._fit_rotations(X, y_codes, sample_weight)

    def predict_proba(self, X):
        """Class probabilities averaged over all trees.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes), or list of n_outputs such arrays
            Columns in the order of ``classes_`` (one array per output for a 2-D y).
        """
        return self._fitted()._proba(X)

    def _proba(self, X):
        mean = self._mean_prediction(X)
        if isinstance(self.classes_, list):
            return output_blocks(mean, self.n_classes_)
        return mean

    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes), or list of n_outputs such arrays
        """
        proba = self.predict_proba(X)
        with np.errstate(divide="ignore"):
            return [np.log(p) for p in proba] if isinstance(proba, list) else np.log(proba)

    def predict(self, X):
        """Most probable class.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_samples,) or (n_samples, n_outputs)
        """
        est = self._fitted()
        return labels_of(est._proba(X), est.classes_)


@_rotation_surface("regression").declare(
    """Regularized random-rotation ensemble regressor.

    The regression counterpart of :class:`RotationEnsembleClassifier`:
    micro-forests of regression trees rank the rotations by complexity
    (Eq. 5 of [1]_), the OOB errors are mean squared errors, and predictions
    average all trees on their rotated inputs.""",
    """
    Attributes
    ----------"""
    + _DOC_ATTRIBUTES.format(tree="RotationTreeRegressor", proba="")
    + """
    oob_score_ : float
        R^2 of the final ensemble's OOB predictions (when ``oob_score=True``).

    oob_prediction_ : ndarray of shape (n_samples,) or (n_samples, n_outputs)
        OOB predictions (NaN for rows never out of bag), when
        ``oob_score=True``.

    See Also
    --------
    RotationEnsembleClassifier
"""
    + _REFERENCES
    + """
    Examples
    --------
    >>> from sklearn.datasets import make_friedman1
    >>> from obliqueforest.rotation import RotationEnsembleRegressor
    >>> X, y = make_friedman1(n_samples=200, random_state=0)
    >>> reg = RotationEnsembleRegressor(n_estimators=50, n_rotations=5,
    ...                                 random_state=0).fit(X, y)
    >>> reg.predict(X[:2]).shape
    (2,)
    """,
)
class RotationEnsembleRegressor(RegressorMixin, _BaseRotationEnsemble):
    # generated from the parameter table by `python -m obliqueforest._signatures`: do not edit
    # fmt: off
    def __init__(
        self, n_estimators: Any = 500, *, n_rotations: Any = 20, micro_forest_size: Any = 10,
        weighting: Any = "exp", h: Any = None, h_grid: Any = None,
        h_criterion: Any = "weighted_oob", scaling: Any = "minmax",
        criterion: Any = "squared_error", max_depth: Any = None, min_samples_split: Any = 2,
        min_samples_leaf: Any = 1, min_weight_fraction_leaf: Any = 0.0, max_features: Any = 1.0,
        max_leaf_nodes: Any = None, min_impurity_decrease: Any = 0.0, bootstrap: Any = True,
        max_samples: Any = None, oob_score: Any = False, n_jobs: Any = None,
        random_state: Any = None, verbose: Any = 0,
    ):
        self.n_estimators = n_estimators
        self.n_rotations = n_rotations
        self.micro_forest_size = micro_forest_size
        self.weighting = weighting
        self.h = h
        self.h_grid = h_grid
        self.h_criterion = h_criterion
        self.scaling = scaling
        self.criterion = criterion
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_weight_fraction_leaf = min_weight_fraction_leaf
        self.max_features = max_features
        self.max_leaf_nodes = max_leaf_nodes
        self.min_impurity_decrease = min_impurity_decrease
        self.bootstrap = bootstrap
        self.max_samples = max_samples
        self.oob_score = oob_score
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose
    # fmt: on

    _task = "regression"
    _n_outputs = 1

    def _fit_draft(self, X, y, sample_weight):
        X, y = self._validate_fit_data(X, y, y_numeric=True)
        y = np.asarray(target_columns(y), dtype=np.float64)
        self.n_outputs_ = self._n_outputs = y.shape[1]
        if self.n_outputs_ == 1:
            y = y[:, 0]
        sample_weight = self._check_sample_weight(sample_weight, X)
        return self._fit_rotations(X, np.ascontiguousarray(y), sample_weight)

    def predict(self, X):
        """Mean prediction over all trees.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_samples,) or (n_samples, n_outputs)
        """
        est = self._fitted()
        mean = est._mean_prediction(X)
        return mean[:, 0] if est.n_outputs_ == 1 else mean

    def predict_quantiles(self, X, quantiles=(0.05, 0.5, 0.95)):
        """Not available for rotation ensembles.

        A quantile regression forest weighs training rows by the leaves a row reaches in
        every tree; a rotation ensemble's trees grow on differently rotated copies of the
        data, in micro-forests and their completions, which would need the leaf values of
        every rotation's forests gathered across rotations. Use a forest regressor with
        ``store_leaf_values=True`` (``RandomForestRegressor``, ``SPORFRegressor``, ...).

        Raises
        ------
        NotImplementedError
            Always.
        """
        raise NotImplementedError(
            "RotationEnsembleRegressor does not predict quantiles; use RandomForestRegressor, "
            "SPORFRegressor, ObliqueForestRegressor or MORFRegressor with "
            "store_leaf_values=True"
        )
