"""The tree parameters, declared once, and the one place where Python builds the core's
fit parameters.

:data:`FOREST_PARAMS` is the table of the parameters every forest estimator of the
package shares (name, default, constraint, numpydoc type and description, and the
``ForestParams`` field it feeds). The estimators declare their surface from it
(:mod:`obliqueforest._surface`): their ``_parameter_constraints`` and parameter docs are
derived from the same entries, and their ``__init__`` is written from them
(``python -m obliqueforest._signatures``) and checked against them at import, so a
default is decided once.

:func:`core_params` turns parameters into a :class:`obliqueforest._core.ForestParams`
for every estimator of the package (the forests, the rotation ensembles, the
autoencoder's forests). A field a caller does not pass takes the table's default (the
forests' default); scikit-learn's ``_parameter_constraints`` have checked the types and
ranges, and the core's ``ForestParams::check`` has the last word (cross-parameter rules
and bounds against the data), before anything is allocated.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval, RealNotInt, StrOptions

from . import _core
from ._surface import Param, Surface
from .projections import _Projection

__all__ = [
    "FOREST_PARAMS",
    "PROJECTION",
    "REGRESSOR_ONLY",
    "core_fields",
    "core_params",
    "forest_params",
    "monotonic_cst_vector",
]


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


def _n_classes(n_classes):
    if n_classes is None:
        return None
    if isinstance(n_classes, (list, tuple)):
        return [int(c) for c in n_classes]
    return _plain(n_classes)


_CLASSIFICATION_CRITERIA = {"gini", "entropy", "log_loss"}
_REGRESSION_CRITERIA = {"squared_error", "friedman_mse", "absolute_error", "poisson"}

# -- the table ----------------------------------------------------------------------------
# In the order of the forests' signatures. ``core`` names the ForestParams field a
# parameter feeds and ``to_core`` converts the estimator's value for it.
_TABLE = [
    Param(
        "n_estimators",
        100,
        [Interval(Integral, 1, None, closed="left")],
        "int",
        "Number of trees.",
        core="n_estimators",
        needs=("ensemble",),
    ),
    Param(
        "criterion",
        "gini",
        [StrOptions(_CLASSIFICATION_CRITERIA)],
        "str",
        """Impurity criterion: "gini", "entropy" or "log_loss" (the same as "entropy") for
        classification; "squared_error", "friedman_mse", "absolute_error" or "poisson" for
        regression. "friedman_mse" is squared error whose splits are scored by Friedman's
        improvement (scikit-learn's): the same splits as "squared_error" for one output (up
        to rounding), the difference of the outputs' summed means for several.
        "poisson" needs y >= 0 with a positive sum (else ValueError) and never splits a
        child to a zero sum. "absolute_error" predicts each leaf's weighted median and is
        the slowest criterion: its split search keeps running weighted medians (two heaps
        per output, O(n log n) per candidate and node, as scikit-learn's) and is always
        sort-based (no histograms). For a 2-D y the
        impurity is the mean over outputs, as in scikit-learn.""",
        core="criterion",
    ),
    Param(
        "max_depth",
        None,
        [Interval(Integral, 1, None, closed="left"), None],
        "int",
        "Maximum depth; None grows until leaves are pure or another rule stops them.",
        core="max_depth",
    ),
    Param(
        "min_samples_split",
        2,
        [
            Interval(Integral, 2, None, closed="left"),
            Interval(RealNotInt, 0.0, 1.0, closed="right"),
        ],
        "int or float",
        """Minimum samples to split a node (a float f is max(2, ceil(f * n_samples)), as
        scikit-learn's).""",
        core="min_samples_split",
    ),
    Param(
        "min_samples_leaf",
        1,
        [
            Interval(Integral, 1, None, closed="left"),
            Interval(RealNotInt, 0.0, 1.0, closed="neither"),
        ],
        "int or float",
        "Minimum samples in each leaf (a float f is ceil(f * n_samples), as scikit-learn's).",
        core="min_samples_leaf",
    ),
    Param(
        "min_weight_fraction_leaf",
        0.0,
        [Interval(Real, 0.0, 0.5, closed="both")],
        "float",
        "Minimum fraction of the total sample weight in each leaf.",
        core="min_weight_fraction_leaf",
    ),
    Param(
        "max_features",
        "sqrt",
        [
            Interval(Integral, 1, None, closed="left"),
            # a fraction of n_features; oblique samplers may use more than p candidates
            Interval(RealNotInt, 0.0, None, closed="neither"),
            StrOptions({"sqrt", "log2"}),
            None,
        ],
        'int, float, "sqrt", "log2" or None',
        "Candidate features per node (a float f is max(1, int(f * n_features))).",
        core="max_features",
    ),
    Param(
        "max_leaf_nodes",
        None,
        [Interval(Integral, 2, None, closed="left"), None],
        "int",
        "Grow best-first with at most this many leaves.",
        core="max_leaf_nodes",
    ),
    Param(
        "min_impurity_decrease",
        0.0,
        [Interval(Real, 0.0, None, closed="left")],
        "float",
        "Split only if the weighted impurity decrease is at least this.",
        core="min_impurity_decrease",
    ),
    Param(
        "bootstrap",
        True,
        ["boolean"],
        "bool",
        "Draw a bootstrap sample per tree.",
        core="bootstrap",
        needs=("ensemble",),
    ),
    Param(
        "oob_score",
        False,
        ["boolean", callable],
        "bool or callable",
        """Estimate the generalisation score on out-of-bag samples. May be switched on for a
        warm start: the trees already grown find their out-of-bag rows from their seeds,
        giving the same estimate as a forest grown with it from the start.""",
        core="oob",
        needs=("ensemble", "targets"),
    ),
    Param(
        "n_jobs",
        None,
        [Integral, None],
        "int",
        """Threads for fit and predict (-1 = all cores, capped at the cores). None follows an
        enclosing ``joblib.parallel_config(n_jobs=...)`` and is 1 otherwise, as in
        scikit-learn. Never changes the model.""",
        needs=("ensemble",),
    ),
    Param(
        "random_state",
        None,
        ["random_state"],
        "int, RandomState instance or None",
        "Seeds the forest; tree t draws from streams keyed by (seed, t).",
        needs=("ensemble",),
    ),
    Param(
        "verbose", 0, ["verbose"], "int", "Show a progress bar of grown trees.", needs=("ensemble",)
    ),
    Param(
        "warm_start",
        False,
        ["boolean"],
        "bool",
        """Add trees to the fitted forest instead of growing a new one. The trees added
        follow the current parameters, as scikit-learn's do (``set_params(max_depth=3,
        n_estimators=200)`` grows 3-deep trees from tree 100 on); the parameters the
        fitted trees are read with (``projection``, ``random_state``, ``bootstrap``,
        ``max_samples``, ``honest_fraction``, ``store_leaf_values``,
        ``class_weight="balanced_subsample"``) cannot change, and a fit that tries is
        refused with an error naming the parameter, the model left as it was.""",
        needs=("ensemble",),
    ),
    Param(
        "class_weight",
        None,
        [StrOptions({"balanced", "balanced_subsample"}), dict, list, None],
        '"balanced", "balanced_subsample", dict or None',
        "Class weights as in scikit-learn.",
        core="class_weight_subsample",
        to_core=lambda cw: isinstance(cw, str) and cw == "balanced_subsample",
        needs=("targets",),
    ),
    Param(
        "max_samples",
        None,
        [
            None,
            Interval(RealNotInt, 0.0, None, closed="neither"),
            Interval(Integral, 1, None, closed="left"),
        ],
        "int or float",
        """Bootstrap draws per tree (with replacement): an int is a count, a float f
        max(1, round(f * n_samples)) draws, halves rounded up (scikit-learn 1.9 takes
        max(1, int(f * n_samples)), of the weights' sum under ``sample_weight``); either
        may exceed n_samples, as scikit-learn 1.9 allows (at most 2**32 - 1 draws). None
        draws n_samples. Only with ``bootstrap=True``.""",
        core="max_samples",
        needs=("ensemble",),
    ),
    Param(
        "ccp_alpha",
        0.0,
        [Interval(Real, 0.0, None, closed="left")],
        "float",
        """Minimal cost-complexity pruning of each grown tree: the smallest subtree minimising
        ``R(T) + ccp_alpha * n_leaves(T)``, where R sums the leaves' weighted impurities
        (Breiman et al. 1984), as scikit-learn's trees; 0 prunes nothing. OOB estimates,
        importances and per-tree access see the pruned trees.""",
        core="ccp_alpha",
        needs=("targets",),
    ),
    Param(
        "monotonic_cst",
        None,
        ["array-like", None],
        "array-like of int of shape (n_features,)",
        """Monotonic constraint per feature, as in scikit-learn: 1 increasing, -1 decreasing,
        0 none. For regression and binary classification (on the probability of
        ``classes_[1]``); a ValueError for multiclass. Axis-aligned splits follow
        scikit-learn's rule (each split's children ordered, their values bounding their
        subtrees). Oblique projections too: a projection ``sum_j w_j x_j`` grows with
        feature j when ``w_j > 0``, so its split orders its children by the sign of
        ``w_j * monotonic_cst[j]``; a candidate whose constrained terms disagree in sign
        is not used. The forest's prediction is then monotonic in each constrained
        feature for every projection family.""",
        core="monotonic_cst",
        needs=("targets",),
    ),
    Param(
        "splitter",
        "best",
        [StrOptions({"best", "random", "hist"})],
        '{"best", "random", "hist"}',
        """"best" scans every threshold of each candidate projection; "random" draws one
        threshold per candidate (extremely randomized trees); "hist" scans ``max_bins``
        equal-width bins of the node's projected values on nodes of at least
        ``8 * max_bins`` rows (O(n) instead of a sort) and every threshold on smaller
        nodes. Thresholds are always midpoints between observed values. Whatever the
        splitter, candidates whose features take few distinct values (binary, counts,
        codes) are searched exactly through a histogram instead of a sort.""",
        core="splitter",
    ),
    Param(
        "max_bins",
        256,
        [Interval(Integral, 2, 65536, closed="both")],
        "int",
        'Bins per candidate for ``splitter="hist"`` (2 to 65536); unused otherwise.',
        core="max_bins",
    ),
    Param(
        "candidate_samples",
        None,
        [Interval(Integral, 2, None, closed="left"), None],
        "int or None",
        """Candidate screening at large nodes: at a node of n > ``2 * candidate_samples``
        rows, every candidate projection is scored on ``max(candidate_samples, 16 *
        sqrt(n))`` of the node's rows drawn at random, and only the four best are scored
        on all the node's rows; the best of those splits the node, with its exact
        threshold. Smaller nodes, and None, score every candidate on every row. It saves
        the most where many candidates meet many rows (SPORF's d = 2p at 10^5 rows and
        more: benches/results/sporf_screening.md); the screen growing with the node keeps
        it as accurate as no screening at 20,000 rows (benches/results/screening_pays.md);
        for the "best" and "hist" splitters.""",
        core="candidate_samples",
        needs=("targets",),
    ),
    Param(
        "honest_fraction",
        0.0,
        [Interval(Real, 0.0, 1.0, closed="left")],
        "float",
        """Honest trees (Wager & Athey 2018): the fraction of each tree's sample (its
        bootstrap rows, or every row without bootstrap) set aside from the split search
        and used afterwards to fill the leaves: a leaf's value (class distribution, mean,
        median) is recomputed from the honest rows that reach it, or, when none does,
        from those of its nearest ancestor that some reach. Leaf estimates then do not
        depend on the rows that chose the splits, which is what confidence intervals and
        tests built on forests (treeple's honest forests) need; the price is that each
        tree grows on fewer rows. A tree that drew a single distinct row (or whose honest
        rows all weigh 0) has no honest part and keeps the leaves of the rows it grew on.
        0 (the default) grows ordinary trees. ``honest_indices_`` holds each tree's honest
        rows. Not with ``monotonic_cst``.""",
        core="honest_fraction",
        needs=("ensemble", "targets"),
    ),
    Param(
        "categorical_features",
        "from_dtype",
        [StrOptions({"from_dtype"}), "array-like", None],
        '"from_dtype", array-like of str, int or bool, or None',
        """Which columns of X are categorical, as scikit-learn's HistGradientBoosting takes
        it. "from_dtype": a DataFrame's (or pyarrow Table's) columns of dtype category,
        object, string or bool; a numpy array's columns are all numeric. None: every
        column is numeric. Or column names (X must have them), integer column indices, or
        a boolean mask of length n_features; integer-coded columns may be marked so. A
        categorical column's levels (``categories_``) are a category dtype's categories,
        else its sorted distinct values; the trees split it by sets of levels. Missing
        values (None, NaN,
        ``pd.NA``) follow each split's missing-value side, and so does a level never seen
        in training, at prediction (never an error). Columns must come at prediction as at
        fit: a categorical column of strings given as numbers, or a numeric one given as
        strings, is a ValueError naming it. Categorical columns need a dense X and a
        projection family of the columns themselves (not patches, pooled or Haar
        filters, or dictionary atoms, which the core refuses, naming this parameter).""",
        needs=("categorical",),
        saved_at_default=False,
    ),
    Param(
        "min_category_samples",
        3,
        [Interval(Integral, 1, None, closed="left")],
        "int",
        """At a node, the levels of a categorical column with fewer in-bag rows than this
        are taken together as one level when the levels are ordered, so that a column of
        many rare levels cannot split a node by their noise; 1 searches the exact best
        partition of the levels (Fisher 1958). The defaults, 3 for classifiers and 2 for
        regressors, were chosen on benches/categorical_bench.py's tuning tables: 1 lets a
        1,500-level column of noise mislead the forests and 5 and more lose accuracy on
        tables of many levels; 2 is the more accurate on every real regression table, but
        on classes a level of two rows is pure half the time, so a column of noise levels
        misleads classifiers at 2. Unused without categorical columns.""",
        core="min_category_samples",
        needs=("categorical",),
        saved_at_default=False,
    ),
    Param(
        "categorical_in_projections",
        True,
        ["boolean"],
        "bool",
        """Whether an oblique projection (SPORF, Forest-RC, Gaussian, a user family) may
        take categorical columns among its terms, each read through an encoding of its
        levels computed from the node's in-bag rows (the levels' target statistic,
        standardised and scaled to the projection's numeric part). False leaves
        categorical columns to splits of their own: a sampled projection of several
        terms drops its categorical ones. Unused without categorical columns.""",
        core="categorical_in_projections",
        needs=("categorical",),
        saved_at_default=False,
    ),
]

#: The parameters of regressors only.
REGRESSOR_ONLY = [
    Param(
        "store_leaf_values",
        False,
        ["boolean"],
        "bool",
        """Keep, per leaf, the training rows that fill it (with their bootstrap counts) and
        the training targets once per forest, so that ``predict_quantiles``,
        ``oob_quantiles`` and ``predict_interval`` can give conditional quantiles
        (quantile regression forests, Meinshausen 2006). Costs 8 bytes per row and tree
        (about 0.63 n rows per tree with bootstrap) and the targets; the trees and every
        other prediction are unchanged.""",
        core="store_leaf_values",
        needs=("ensemble",),
    ),
]

#: Every forest parameter, as a classifier declares it (criterion "gini", max_features
#: "sqrt", scikit-learn's RandomForestClassifier defaults); see :func:`forest_params`.
FOREST_PARAMS = Surface(_TABLE, positional=1)

_REGRESSION = {
    "criterion": {
        "default": "squared_error",
        "constraints": [StrOptions(_REGRESSION_CRITERIA)],
    },
    # scikit-learn's regression default: every feature
    "max_features": {"default": 1.0},
    # (the parameter's doc says why regressors pool fewer rare levels)
    "min_category_samples": {"default": 2},
}


#: The projection distribution of the generic forests and of every per-tree estimator.
PROJECTION = Param(
    "projection",
    None,
    [_Projection, None],
    "projection object",
    """One of :mod:`obliqueforest.projections` (``AxisAligned()``,
    ``SparseSigned(...)``, ``ForestRC(...)``, ``Gaussian()``, ``Patch(...)``);
    None means ``SparseSigned()``.""",
)


def forest_params(task: str) -> Surface:
    """The forest parameters of a classifier (``task="classification"``) or a regressor
    (``"regression"``: no ``class_weight``, regression criteria, ``max_features=1.0``,
    ``min_category_samples=2`` and ``store_leaf_values``)."""
    if task == "classification":
        return FOREST_PARAMS
    if task != "regression":
        raise ValueError(f"task must be 'classification' or 'regression', got {task!r}")
    surface = FOREST_PARAMS.drop("class_weight")
    for name, changes in _REGRESSION.items():
        surface = surface.replace(name, **changes)
    return surface.insert(REGRESSOR_ONLY, after="honest_fraction")


def core_fields(est) -> dict:
    """The core fields an estimator's parameters give: for each table parameter the
    estimator has (``get_params``), its value converted for the core, under the core's
    name (``oob_score`` gives ``oob``, ``class_weight`` ``class_weight_subsample``)."""
    params = est.get_params(deep=False)
    return {
        p.core: p.core_value(params[p.name])
        for p in [*FOREST_PARAMS, *REGRESSOR_ONLY]
        if p.core is not None and p.name in params
    }


def _defaults(task) -> dict:
    surface = forest_params("classification" if task == "classification" else "regression")
    fields = {p.core: p.core_value(p.default) for p in surface if p.core is not None}
    fields.setdefault("class_weight_subsample", False)
    fields.setdefault("store_leaf_values", False)
    if task == "unsupervised":
        fields["criterion"] = "twomeans"
    return fields


#: The growth settings (the core's ``Growth``: how the trees are grown, never part of a
#: model's bytes) by core name, each with its conversion for the core; ``n_jobs`` comes
#: resolved. A new growth parameter is its row above, its entry here, its field in
#: ``Growth`` and the code that applies it.
GROWTH = {
    "ccp_alpha": float,
    "monotonic_cst": monotonic_cst_vector,
    "candidate_samples": _plain,
    "min_category_samples": _plain,
    "categorical_in_projections": _plain,
}


def _level_name(value) -> str:
    """A level's name in the core (numpy scalars as their Python values)."""
    return str(value.item() if isinstance(value, np.generic) else value)


def core_params(
    *,
    task,
    projection,
    seed,
    n_jobs,
    n_classes=None,
    n_outputs=1,
    tree_features=None,
    categorical=None,
    **fields,
):
    """The core's parameters of one fit.

    Parameters
    ----------
    task : {"classification", "regression", "unsupervised"}
        "unsupervised": a forest without targets (unsupervised and isolation forests),
        split by "twomeans" or "fastbic" on the projected values.
    projection : obliqueforest._core.Projection
        The projection distribution (see :mod:`obliqueforest.projections`).
    seed : int
        The forest's seed (tree t draws from the streams keyed by (seed, t)).
    n_jobs : int
        Worker threads, already resolved to a positive count.
    n_classes : int, list of int or None, default=None
        Number of classes (None for regression); a list, one count per target column,
        for multi-output classification.
    n_outputs : int, default=1
        Target columns (more than 1 grows multi-output trees); for classification it
        must be the length of ``n_classes`` when that is a list, else 1.
    tree_features : int or None, default=None
        Features each tree may use (random subspaces; ``task="unsupervised"`` only);
        None for all.
    categorical : list or None, default=None
        Per column its levels (an array; the columns of X then hold their codes,
        :mod:`obliqueforest._tables`), None for a numeric column; None when every column
        is numeric. The core gets each column's number of levels and their names (the
        strings a model file reads rows by: ``str`` of each level).
    **fields
        Any other field of ``ForestParams`` by its core name (``criterion``,
        ``max_features``, ``n_estimators``, ``max_depth``, ..., ``oob``,
        ``class_weight_subsample``): values as the estimators' parameters of the same
        names take them (:func:`core_fields` gives them from an estimator). A field not
        given takes the forests' default (:data:`FOREST_PARAMS`; the regression
        criterion and ``max_features=1.0`` for ``task="regression"``).

    Returns
    -------
    params : obliqueforest._core.ForestParams

    Raises
    ------
    TypeError
        For a field the core does not have.
    """
    defaults = _defaults(task)
    unknown = sorted(set(fields) - set(defaults))
    if unknown:
        raise TypeError(f"core_params() got unknown fields {unknown}")
    values = {**defaults, **fields}
    # (a fit of numeric columns passes no ``categorical`` field: the core's default, none;
    # the levels' names travel with the model, so that a model file reads rows of strings)
    kinds = {}
    if categorical:
        kinds = {
            "categorical": [0 if c is None else len(c) for c in categorical],
            "level_names": [[] if c is None else [_level_name(v) for v in c] for c in categorical],
        }
    return _core.ForestParams(
        task=task,
        n_classes=_n_classes(n_classes),
        n_outputs=int(n_outputs),
        tree_features=None if tree_features is None else int(tree_features),
        projection=projection,
        seed=int(seed),
        criterion=values["criterion"],
        splitter=values["splitter"],
        max_bins=_plain(values["max_bins"]),
        max_features=_plain(values["max_features"]),
        n_estimators=_plain(values["n_estimators"]),
        max_depth=_plain(values["max_depth"]),
        min_samples_split=_plain(values["min_samples_split"]),
        min_samples_leaf=_plain(values["min_samples_leaf"]),
        min_weight_fraction_leaf=float(values["min_weight_fraction_leaf"]),
        min_impurity_decrease=float(values["min_impurity_decrease"]),
        max_leaf_nodes=_plain(values["max_leaf_nodes"]),
        bootstrap=bool(values["bootstrap"]),
        max_samples=_plain(values["max_samples"]),
        class_weight_subsample=bool(values["class_weight_subsample"]),
        oob=bool(values["oob"]),
        honest_fraction=float(values["honest_fraction"]),
        store_leaf_values=bool(values["store_leaf_values"]),
        growth={
            "n_jobs": int(n_jobs),
            **{name: GROWTH[name](values[name]) for name in GROWTH},
        },
        **kinds,
    )
