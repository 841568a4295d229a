"""scikit-learn estimators over the Rust projection-forest engine.

One generic estimator per task (:class:`ObliqueForestClassifier`,
:class:`ObliqueForestRegressor`) takes a projection distribution; the named forests
(RandomForest, SPORF, and MORF in :mod:`obliqueforest.morf`) are presets that only
choose it and their defaults. Each declares its parameters from the shared table
(:mod:`obliqueforest._params`), which gives its constraints and parameter docs and its
``__init__`` (written into the class by :mod:`obliqueforest._signatures`); the fitting
machinery is :mod:`obliqueforest._base`, per-tree access :mod:`obliqueforest._trees`.
Python owns validation in scikit-learn's terms, label encoding and the API; everything
numeric happens in ``obliqueforest._core``.
"""

from __future__ import annotations

from numbers import Real
from typing import Any

from sklearn.utils._param_validation import Interval, StrOptions

from ._base import FOREST_GROWER as FOREST_GROWER  # (re-exported for dask.py)
from ._base import _BaseForest as _BaseForest
from ._base import _ClassifierMixin, _RegressorMixin
from ._params import PROJECTION, forest_params
from ._surface import Param
from ._tables import COLUMNS_DOC
from ._trees import PerTreeMixin

# (re-exported: rotation.py, dask.py and older code import these from here)
from ._validation import _F32_MAX as _F32_MAX
from ._validation import SPARSE_FORMATS as SPARSE_FORMATS
from ._validation import CoreSparse as CoreSparse
from ._validation import _validate_data as _validate_data
from ._validation import core_X as core_X
from ._validation import resolve_n_jobs as resolve_n_jobs
from ._validation import target_columns as target_columns
from .projections import AxisAligned, SparseSigned

__all__ = [
    "ObliqueForestClassifier",
    "ObliqueForestRegressor",
    "RandomForestClassifier",
    "RandomForestRegressor",
    "SPORFClassifier",
    "SPORFRegressor",
]

CLASSIFIER_PARAMS = forest_params("classification")
REGRESSOR_PARAMS = forest_params("regression")

ATTRIBUTES_DOC = (
    """
    Attributes
    ----------
    estimator : ObliqueTreeClassifier or ObliqueTreeRegressor
        The template of the trees (the forest's tree parameters and projection), as in
        scikit-learn >= 1.2; ``estimator_`` once fitted.
    estimators_ : list of ObliqueTreeClassifier or ObliqueTreeRegressor
        The fitted trees (also ``forest[i]``, ``len(forest)``, iteration).
    classes_ : ndarray of shape (n_classes,) or list of n_outputs such arrays
        Class labels (classifiers only); one array per output for a 2-D y.
    n_classes_ : int or list of int
        Number of classes (classifiers only); one count per output for a 2-D y.
    n_outputs_ : int
        Target columns of the fit (1 for a 1-D y).
    n_features_in_ : int
        Number of features seen in fit.
"""
    + COLUMNS_DOC
    + """    feature_importances_ : ndarray of shape (n_features,)
        Impurity-based importances, shared within a projection by |weight|.
    projection_counts_ : ndarray of shape (n_features,)
        Normalised count of split projections using each feature.
    oob_score_ : float
        Out-of-bag score (when ``oob_score`` is set).
    oob_decision_function_ : ndarray of shape (n_samples, n_classes) or (n_samples, n_classes, n_outputs)
        Out-of-bag class probabilities (classifiers, when ``oob_score`` is set); for a 2-D
        y, scikit-learn's layout (outputs with fewer classes zero-padded). As in
        scikit-learn, OOB estimates are refused for multiclass-multioutput targets.
    oob_prediction_ : ndarray of shape (n_samples,) or (n_samples, n_outputs)
        Out-of-bag predictions (regressors, when ``oob_score`` is set).

    References
    ----------
    .. [1] T. M. Tomita, J. Browne, C. Shen, J. Chung, J. L. Patsolic, B. Falk, C. E. Priebe,
       J. Yim, R. Burns, M. Maggioni, J. T. Vogelstein, "Sparse Projection Oblique Randomer
       Forests", JMLR 21(104):1-39, 2020.
    .. [2] L. Breiman, "Random Forests", Machine Learning 45(1):5-32, 2001.
"""
)


class _ForestClassifier(PerTreeMixin, _ClassifierMixin, _BaseForest):
    """A projection forest classifier; subclasses declare a surface and a projection."""


class _ForestRegressor(PerTreeMixin, _RegressorMixin, _BaseForest):
    """A projection forest regressor; subclasses declare a surface and a projection."""


# -- the generic forests -----------------------------------------------------------------
def _oblique(params, max_features_doc):
    return params.insert([PROJECTION], positional=2).replace(
        "max_features", default=1.0, doc=max_features_doc
    )


@_oblique(
    CLASSIFIER_PARAMS,
    """Number d of candidate projections per node: an int, a fraction of n_features
    (may exceed 1.0 for oblique projections), or None for n_features.""",
).declare(
    """A projection forest classifier with a chosen projection distribution.

    Every split node samples ``max_features`` candidate projections from ``projection``
    and splits on the best (Tomita et al. 2020, Algorithm 1).""",
    ATTRIBUTES_DOC,
)
class ObliqueForestClassifier(_ForestClassifier):
    # generated from the parameter table by `python -m obliqueforest._signatures`: do not edit
    # fmt: off
    def __init__(
        self, projection: Any = None, n_estimators: Any = 100, *, criterion: Any = "gini",
        max_depth: Any = None, min_samples_split: Any = 2, min_samples_leaf: Any = 1,
        min_weight_fraction_leaf: Any = 0.0, max_features: Any = 1.0, max_leaf_nodes: Any = None,
        min_impurity_decrease: Any = 0.0, bootstrap: Any = True, oob_score: Any = False,
        n_jobs: Any = None, random_state: Any = None, verbose: Any = 0, warm_start: Any = False,
        class_weight: Any = None, max_samples: Any = None, ccp_alpha: Any = 0.0,
        monotonic_cst: Any = None, splitter: Any = "best", max_bins: Any = 256,
        candidate_samples: Any = None, honest_fraction: Any = 0.0,
        categorical_features: Any = "from_dtype", min_category_samples: Any = 3,
        categorical_in_projections: Any = True,
    ):
        self.projection = projection
        self.n_estimators = n_estimators
        self.criterion = criterion
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_weight_fraction_leaf = min_weight_fraction_leaf
        self.max_features = max_features
        self.max_leaf_nodes = max_leaf_nodes
        self.min_impurity_decrease = min_impurity_decrease
        self.bootstrap = bootstrap
        self.oob_score = oob_score
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start
        self.class_weight = class_weight
        self.max_samples = max_samples
        self.ccp_alpha = ccp_alpha
        self.monotonic_cst = monotonic_cst
        self.splitter = splitter
        self.max_bins = max_bins
        self.candidate_samples = candidate_samples
        self.honest_fraction = honest_fraction
        self.categorical_features = categorical_features
        self.min_category_samples = min_category_samples
        self.categorical_in_projections = categorical_in_projections
    # fmt: on

    _projection_families = None  # any registered family, as its projection says

    def _projection_object(self):
        return SparseSigned() if self.projection is None else self.projection


@_oblique(REGRESSOR_PARAMS, "Number d of candidate projections per node.").declare(
    "A projection forest regressor with a chosen projection distribution.", ATTRIBUTES_DOC
)
class ObliqueForestRegressor(_ForestRegressor):
    # generated from the parameter table by `python -m obliqueforest._signatures`: do not edit
    # fmt: off
    def __init__(
        self, projection: Any = None, n_estimators: Any = 100, *, criterion: Any = "squared_error",
        max_depth: Any = None, min_samples_split: Any = 2, min_samples_leaf: Any = 1,
        min_weight_fraction_leaf: Any = 0.0, max_features: Any = 1.0, max_leaf_nodes: Any = None,
        min_impurity_decrease: Any = 0.0, bootstrap: Any = True, oob_score: Any = False,
        n_jobs: Any = None, random_state: Any = None, verbose: Any = 0, warm_start: Any = False,
        max_samples: Any = None, ccp_alpha: Any = 0.0, monotonic_cst: Any = None,
        splitter: Any = "best", max_bins: Any = 256, candidate_samples: Any = None,
        honest_fraction: Any = 0.0, store_leaf_values: Any = False,
        categorical_features: Any = "from_dtype", min_category_samples: Any = 2,
        categorical_in_projections: Any = True,
    ):
        self.projection = projection
        self.n_estimators = n_estimators
        self.criterion = criterion
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_weight_fraction_leaf = min_weight_fraction_leaf
        self.max_features = max_features
        self.max_leaf_nodes = max_leaf_nodes
        self.min_impurity_decrease = min_impurity_decrease
        self.bootstrap = bootstrap
        self.oob_score = oob_score
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start
        self.max_samples = max_samples
        self.ccp_alpha = ccp_alpha
        self.monotonic_cst = monotonic_cst
        self.splitter = splitter
        self.max_bins = max_bins
        self.candidate_samples = candidate_samples
        self.honest_fraction = honest_fraction
        self.store_leaf_values = store_leaf_values
        self.categorical_features = categorical_features
        self.min_category_samples = min_category_samples
        self.categorical_in_projections = categorical_in_projections
    # fmt: on

    _projection_families = None  # any registered family, as its projection says

    def _projection_object(self):
        return SparseSigned() if self.projection is None else self.projection


# -- random forests ------------------------------------------------------------------------
@CLASSIFIER_PARAMS.declare(
    """Axis-aligned random forest classifier (Breiman 2001) on the obliqueforest engine.

    A preset of :class:`ObliqueForestClassifier` with ``AxisAligned()`` projections and
    scikit-learn's defaults.""",
    ATTRIBUTES_DOC,
)
class RandomForestClassifier(_ForestClassifier):
    # generated from the parameter table by `python -m obliqueforest._signatures`: do not edit
    # fmt: off
    def __init__(
        self, n_estimators: Any = 100, *, criterion: Any = "gini", max_depth: Any = None,
        min_samples_split: Any = 2, min_samples_leaf: Any = 1, min_weight_fraction_leaf: Any = 0.0,
        max_features: Any = "sqrt", max_leaf_nodes: Any = None, min_impurity_decrease: Any = 0.0,
        bootstrap: Any = True, oob_score: Any = False, n_jobs: Any = None, random_state: Any = None,
        verbose: Any = 0, warm_start: Any = False, class_weight: Any = None,
        max_samples: Any = None, ccp_alpha: Any = 0.0, monotonic_cst: Any = None,
        splitter: Any = "best", max_bins: Any = 256, candidate_samples: Any = None,
        honest_fraction: Any = 0.0, categorical_features: Any = "from_dtype",
        min_category_samples: Any = 3, categorical_in_projections: Any = True,
    ):
        self.n_estimators = n_estimators
        self.criterion = criterion
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_weight_fraction_leaf = min_weight_fraction_leaf
        self.max_features = max_features
        self.max_leaf_nodes = max_leaf_nodes
        self.min_impurity_decrease = min_impurity_decrease
        self.bootstrap = bootstrap
        self.oob_score = oob_score
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start
        self.class_weight = class_weight
        self.max_samples = max_samples
        self.ccp_alpha = ccp_alpha
        self.monotonic_cst = monotonic_cst
        self.splitter = splitter
        self.max_bins = max_bins
        self.candidate_samples = candidate_samples
        self.honest_fraction = honest_fraction
        self.categorical_features = categorical_features
        self.min_category_samples = min_category_samples
        self.categorical_in_projections = categorical_in_projections
    # fmt: on

    _projection_families = (AxisAligned._tag,)

    def _projection_object(self):
        return AxisAligned()


@REGRESSOR_PARAMS.replace(
    "max_features", doc="Candidate features per node (scikit-learn's regression default: all)."
).declare(
    "Axis-aligned random forest regressor (Breiman 2001) on the obliqueforest engine.",
    ATTRIBUTES_DOC,
)
class RandomForestRegressor(_ForestRegressor):
    # generated from the parameter table by `python -m obliqueforest._signatures`: do not edit
    # fmt: off
    def __init__(
        self, n_estimators: Any = 100, *, criterion: Any = "squared_error", max_depth: Any = None,
        min_samples_split: Any = 2, min_samples_leaf: Any = 1, min_weight_fraction_leaf: Any = 0.0,
        max_features: Any = 1.0, max_leaf_nodes: Any = None, min_impurity_decrease: Any = 0.0,
        bootstrap: Any = True, oob_score: Any = False, n_jobs: Any = None, random_state: Any = None,
        verbose: Any = 0, warm_start: Any = False, max_samples: Any = None, ccp_alpha: Any = 0.0,
        monotonic_cst: Any = None, splitter: Any = "best", max_bins: Any = 256,
        candidate_samples: Any = None, honest_fraction: Any = 0.0, store_leaf_values: Any = False,
        categorical_features: Any = "from_dtype", min_category_samples: Any = 2,
        categorical_in_projections: Any = True,
    ):
        self.n_estimators = n_estimators
        self.criterion = criterion
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_weight_fraction_leaf = min_weight_fraction_leaf
        self.max_features = max_features
        self.max_leaf_nodes = max_leaf_nodes
        self.min_impurity_decrease = min_impurity_decrease
        self.bootstrap = bootstrap
        self.oob_score = oob_score
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start
        self.max_samples = max_samples
        self.ccp_alpha = ccp_alpha
        self.monotonic_cst = monotonic_cst
        self.splitter = splitter
        self.max_bins = max_bins
        self.candidate_samples = candidate_samples
        self.honest_fraction = honest_fraction
        self.store_leaf_values = store_leaf_values
        self.categorical_features = categorical_features
        self.min_category_samples = min_category_samples
        self.categorical_in_projections = categorical_in_projections
    # fmt: on

    _projection_families = (AxisAligned._tag,)

    def _projection_object(self):
        return AxisAligned()


# -- SPORF ---------------------------------------------------------------------------------
SPORF_PARAMS = [
    Param(
        "feature_combinations",
        1.5,
        [Interval(Real, 0.0, None, closed="neither")],
        "float",
        "Average number of features per projection (lambda * p), capped at n_features.",
    ),
    Param(
        "scaling",
        "robust",
        [StrOptions({"robust"}), None],
        '{"robust"} or None',
        """"robust": a projection's weight on feature j is +-1/s_j, s_j the feature's
        interquartile range in the training data (its range when that is 0), so that
        projections add features in comparable units and the forest does not depend on
        the features' units (as an axis-aligned forest does not). None: +-1 on the raw
        values, as in the paper, which suits features that share one unit (pixels, the
        samples of a signal), where the scaling reweights features already comparable and
        can cost accuracy (benches/results/structured.md).""",
    ),
]


#: SPORF's default candidate screening (``candidate_samples``): at SPORF's d = 2p
#: candidates, comparing them on max(512, 16 sqrt(n)) rows of a node of n > 1,024 rows
#: cuts the fit time at 10^6 rows to about 0.4x at the same accuracy, and keeps the
#: accuracy on the papers' simulations and the real data sets
#: (benches/results/sporf_screening.md, screening_pays.md); data sets of fewer than about
#: 2,000 rows are grown exactly as without it.
SPORF_CANDIDATE_SAMPLES = 512


def _sporf(params, max_features_doc):
    return (
        params.insert(SPORF_PARAMS, after="max_features")
        .replace("max_features", default=2.0, doc=max_features_doc)
        .replace("candidate_samples", default=SPORF_CANDIDATE_SAMPLES)
    )


class _SPORFMixin:
    #: The value of a parameter a model file written before it existed lacks: such a
    #: forest's weights are unscaled (model files; see ``_io._params``).
    _added_param_values = {"scaling": None}

    _projection_families = (SparseSigned._tag,)

    def _projection_object(self):
        return SparseSigned(feature_combinations=self.feature_combinations, scaling=self.scaling)


@_sporf(
    CLASSIFIER_PARAMS,
    """Number d of candidate projections per node; a float is a fraction of n_features and
    may exceed 1.0.""",
).declare(
    """Sparse Projection Oblique Randomer Forest classifier (Tomita et al. 2020).

    A preset of :class:`ObliqueForestClassifier` with ``SparseSigned`` projections:
    d = 2p candidate projections and lambda = 1.5/p (on average 1.5 features per
    projection), each feature's +-1 over its interquartile range (``scaling="robust"``),
    chosen on the paper's simulations and 20 real data sets
    (benches/results/sporf_defaults.md); at a node of n > 1,024 rows the candidates
    are compared on max(512, 16 sqrt(n)) of them and only the four best on all
    (``candidate_samples=512``), which keeps SPORF's cost near RF's at scale. The paper's SPORF (Sect. 5.2: d = p, lambda = 3/p, weights +-1
    on the raw values, every candidate scored on every row) is
    ``max_features=1.0, feature_combinations=3.0, scaling=None, candidate_samples=None``.""",
    ATTRIBUTES_DOC,
)
class SPORFClassifier(_SPORFMixin, _ForestClassifier):
    # generated from the parameter table by `python -m obliqueforest._signatures`: do not edit
    # fmt: off
    def __init__(
        self, n_estimators: Any = 100, *, criterion: Any = "gini", max_depth: Any = None,
        min_samples_split: Any = 2, min_samples_leaf: Any = 1, min_weight_fraction_leaf: Any = 0.0,
        max_features: Any = 2.0, feature_combinations: Any = 1.5, scaling: Any = "robust",
        max_leaf_nodes: Any = None, min_impurity_decrease: Any = 0.0, bootstrap: Any = True,
        oob_score: Any = False, n_jobs: Any = None, random_state: Any = None, verbose: Any = 0,
        warm_start: Any = False, class_weight: Any = None, max_samples: Any = None,
        ccp_alpha: Any = 0.0, monotonic_cst: Any = None, splitter: Any = "best",
        max_bins: Any = 256, candidate_samples: Any = 512, honest_fraction: Any = 0.0,
        categorical_features: Any = "from_dtype", min_category_samples: Any = 3,
        categorical_in_projections: Any = True,
    ):
        self.n_estimators = n_estimators
        self.criterion = criterion
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_weight_fraction_leaf = min_weight_fraction_leaf
        self.max_features = max_features
        self.feature_combinations = feature_combinations
        self.scaling = scaling
        self.max_leaf_nodes = max_leaf_nodes
        self.min_impurity_decrease = min_impurity_decrease
        self.bootstrap = bootstrap
        self.oob_score = oob_score
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start
        self.class_weight = class_weight
        self.max_samples = max_samples
        self.ccp_alpha = ccp_alpha
        self.monotonic_cst = monotonic_cst
        self.splitter = splitter
        self.max_bins = max_bins
        self.candidate_samples = candidate_samples
        self.honest_fraction = honest_fraction
        self.categorical_features = categorical_features
        self.min_category_samples = min_category_samples
        self.categorical_in_projections = categorical_in_projections
    # fmt: on


@_sporf(REGRESSOR_PARAMS, "Number d of candidate projections per node.").declare(
    """Sparse Projection Oblique Randomer Forest regressor (Tomita et al. 2020).

    Defaults d = 2p, lambda = 1.5/p, robust scaling and candidate screening (at least 512
    rows) as :class:`SPORFClassifier` (the paper's: ``max_features=1.0,
    feature_combinations=3.0, scaling=None, candidate_samples=None``).""",
    ATTRIBUTES_DOC,
)
class SPORFRegressor(_SPORFMixin, _ForestRegressor):
    # generated from the parameter table by `python -m obliqueforest._signatures`: do not edit
    # fmt: off
    def __init__(
        self, n_estimators: Any = 100, *, criterion: Any = "squared_error", max_depth: Any = None,
        min_samples_split: Any = 2, min_samples_leaf: Any = 1, min_weight_fraction_leaf: Any = 0.0,
        max_features: Any = 2.0, feature_combinations: Any = 1.5, scaling: Any = "robust",
        max_leaf_nodes: Any = None, min_impurity_decrease: Any = 0.0, bootstrap: Any = True,
        oob_score: Any = False, n_jobs: Any = None, random_state: Any = None, verbose: Any = 0,
        warm_start: Any = False, max_samples: Any = None, ccp_alpha: Any = 0.0,
        monotonic_cst: Any = None, splitter: Any = "best", max_bins: Any = 256,
        candidate_samples: Any = 512, honest_fraction: Any = 0.0, store_leaf_values: Any = False,
        categorical_features: Any = "from_dtype", min_category_samples: Any = 2,
        categorical_in_projections: Any = True,
    ):
        self.n_estimators = n_estimators
        self.criterion = criterion
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_weight_fraction_leaf = min_weight_fraction_leaf
        self.max_features = max_features
        self.feature_combinations = feature_combinations
        self.scaling = scaling
        self.max_leaf_nodes = max_leaf_nodes
        self.min_impurity_decrease = min_impurity_decrease
        self.bootstrap = bootstrap
        self.oob_score = oob_score
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start
        self.max_samples = max_samples
        self.ccp_alpha = ccp_alpha
        self.monotonic_cst = monotonic_cst
        self.splitter = splitter
        self.max_bins = max_bins
        self.candidate_samples = candidate_samples
        self.honest_fraction = honest_fraction
        self.store_leaf_values = store_leaf_values
        self.categorical_features = categorical_features
        self.min_category_samples = min_category_samples
        self.categorical_in_projections = categorical_in_projections
    # fmt: on
