"""Forests grown without targets, on every projection family: unsupervised random forests
(URerF, Madhyastha et al. 2020; treeple's ``UnsupervisedRandomForest`` and
``UnsupervisedObliqueRandomForest``) and isolation forests (Liu et al. 2008; with oblique
projections the extended isolation forest of Hariri et al. 2019).

Both are the one tree engine with a task without targets (the core's
``Task::Unsupervised``): a split rule on the projected values chosen at fit (two-means or
Fast-BIC; one random cut for isolation trees), leaves that keep their rows' normalised
path length, and each tree's rows drawn as the kind wants (a bootstrap sample, or
``max_samples`` rows without replacement). ``projection=`` takes any of
:mod:`obliqueforest.projections`, axis-aligned when omitted.
"""

from __future__ import annotations

import warnings
from numbers import Integral, Real
from typing import Any, NamedTuple

import numpy as np
from scipy import sparse
from scipy.sparse.linalg import LinearOperator
from sklearn.base import (
    ClassNamePrefixFeaturesOutMixin,
    OutlierMixin,
    TransformerMixin,
    _fit_context,
)
from sklearn.exceptions import NotFittedError
from sklearn.utils._param_validation import Interval, RealNotInt, StrOptions
from sklearn.utils.validation import _check_sample_weight, check_is_fitted

from . import _core
from ._base import _BaseForest
from ._params import FOREST_PARAMS, PROJECTION
from ._surface import Param, Surface
from ._tables import COLUMNS_DOC, fit_columns, numeric_columns
from ._trees import InBagRowsMixin
from ._validation import SPARSE_FORMATS, _validate_data
from .projections import AxisAligned

__all__ = ["IsolationForest", "UnsupervisedRandomForest"]

_PROJECTION = PROJECTION.replace(
    doc="""One of :mod:`obliqueforest.projections` (``AxisAligned()``,
    ``SparseSigned(...)``, ``ForestRC(...)``, ``Gaussian()``, ``Patch(...)``, ...);
    None means ``AxisAligned()``."""
)


class _ForestWithoutTargets(InBagRowsMixin, _BaseForest):
    """Fitting without y and what both kinds share (leaves, in-bag rows)."""

    _projection_families = None  # any registered family, as its projection says

    def _projection_object(self):
        return AxisAligned() if self.projection is None else self.projection

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None):
        """Grow the forest on X alone.

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame} of shape (n_samples, n_features)
            Training data; numeric columns converted to float32. NaN marks a missing value
            (a row whose projection is missing goes with the heavier side of a split);
            infinity is rejected. A scipy CSR/CSC matrix is used without densifying it and
            grows the same forest as its dense array. A pandas DataFrame (or pyarrow Table)
            may hold categorical columns (see ``categorical_features``).
        y : None
            Ignored (there for scikit-learn's API).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative row weights; None means equal weights.

        Returns
        -------
        self : object
            Fitted; a fit that raises leaves the estimator as it was.
        """
        return self._transaction(type(self)._fit_draft, X, y, sample_weight)

    def _fit_draft(self, X, y, sample_weight):
        warm = self.warm_start and hasattr(self, "_forest")
        coded = fit_columns(self, X, warm=warm)  # categorical columns as level codes
        with numeric_columns(self, coded, fitting=not warm):
            X = _validate_data(
                self,
                coded,
                dtype=[np.float32, np.float64],
                ensure_all_finite="allow-nan",
                reset=not warm,
                accept_sparse=SPARSE_FORMATS,
            )
        if self._no_new_trees():
            return
        if sample_weight is not None:
            sample_weight = _check_sample_weight(sample_weight, X, dtype=np.float64)
        self._resolve(X)
        self._fit_forest(X, np.empty(0), sample_weight, self._task_params(X))

    def _resolve(self, X):
        """Fitted settings that depend on the data (none by default)."""

    def _task_params(self, X):
        # (no targets: n_outputs_ is 0, as the core's n_targets)
        return {"task": "unsupervised", "n_classes": None, "n_outputs": 0}

    @property
    def feature_importances_(self):
        """Not defined: impurity decreases need targets. ``projection_counts_`` counts how
        often each feature enters a split."""
        raise AttributeError(
            f"{type(self).__name__} has no feature_importances_ (impurity decreases need "
            "targets); projection_counts_ counts the splits each feature enters"
        )

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = False
        tags.target_tags.multi_output = False
        return tags


# -- unsupervised random forests ---------------------------------------------------------
_URF_SURFACE = (
    # the forest parameters that need no targets; the histogram splitter's bins aside
    FOREST_PARAMS.without("targets")
    .drop("max_bins")
    .insert([_PROJECTION], after="n_estimators")
    .replace(
        "criterion",
        default="twomeans",
        constraints=[StrOptions({"twomeans", "fastbic"})],
        type='{"twomeans", "fastbic"}',
        doc="""The split rule on a candidate's projected values. "twomeans": the threshold
        that minimises the within-side sum of squares (one-dimensional 2-means);
        "fastbic": the hard two-Gaussian mixture (one variance or two) with the best BIC
        gain over one Gaussian (Madhyastha et al. 2020); a node where one Gaussian fits
        better along every candidate (a negative gain) is a leaf, so Fast-BIC trees stop
        where they find no more clusters (smaller, faster trees), where two-means trees
        split down to ``min_samples_split``. Either way candidates compare by a
        scale-free score (two-means: the fraction of the node's sum of squares along the
        candidate that its split removes; Fast-BIC: the BIC gain), so a projection's units
        do not decide.""",
    )
    .replace(
        "min_samples_split",
        default="sqrt",
        constraints=[
            Interval(Integral, 2, None, closed="left"),
            Interval(RealNotInt, 0.0, 1.0, closed="right"),
            StrOptions({"sqrt"}),
        ],
        type='int, float or "sqrt"',
        doc="""Minimum samples to split a node (a float is a fraction of n_samples;
        "sqrt" is ceil(sqrt(n_samples)), treeple's default, so that leaves hold several
        rows and rows can share them: fully grown trees would give every row a leaf of its
        own and an empty proximity).""",
    )
    .replace(
        "max_features",
        default=1.0,
        doc="""Number d of candidate projections per node: an int, a fraction of
        n_features (may exceed 1.0 for oblique projections), "sqrt", "log2", or None for
        n_features. The default, p candidates, finds clusters that few features show
        among many that show none (three clusters in 2 of 402 columns, the data of
        docs/unsupervised.md: adjusted Rand index 0.92 with p candidates, 0.81 with
        "sqrt", 60 trees), at about twice the fit time of "sqrt".""",
    )
    .replace(
        "min_impurity_decrease",
        doc="""Split only if the split's improvement over the root's weight is at least
        this: two-means' weighted fraction of the node's sum of squares removed, or
        Fast-BIC's gain (negative when one Gaussian fits the node better than two).""",
    )
    .replace(
        "max_samples",
        doc="""Rows each tree draws: with ``bootstrap=True`` with replacement (an int is a
        count, a float a multiple of n_samples); with ``bootstrap=False`` without
        replacement (at most n_samples). None: n_samples draws with bootstrap, every row
        once without.""",
    )
    .replace(
        "splitter",
        default="best",
        constraints=[StrOptions({"best", "random"})],
        type='{"best", "random"}',
        doc=""""best" scores every threshold of each candidate; "random" one threshold
        drawn uniformly between the node's smallest and largest projected value
        (extremely randomized unsupervised trees).""",
    )
    .insert(
        [
            Param(
                "n_components",
                2,
                [Interval(Integral, 1, None, closed="left"), None],
                "int or None",
                """Coordinates of the spectral embedding of the proximity that ``fit``
                computes for :meth:`transform` (``embedding_``); None computes none (a fit
                for :meth:`proximity` or an autoencoder alone, without its cost: an
                eigendecomposition by products with the n_samples x n_leaves leaf
                membership, 5% of a fit of 100 trees on 10,000 x 20 rows, 29% on 2,000 x
                10).""",
            )
        ],
        after="splitter",
    )
)


@_URF_SURFACE.declare(
    """Unsupervised random forest on any projection family (URerF).

    Trees are grown on X alone: every split node samples ``max_features`` candidate
    projections from ``projection`` and splits on the one whose projected values cluster
    best (two-means or Fast-BIC). Rows that share leaves are similar: :meth:`proximity`
    gives the fraction of trees in which two rows share a leaf, a sparse similarity matrix
    for spectral clustering, and the fitted forest is a forest for
    :class:`~obliqueforest.autoencoder.ForestAutoencoder`. With oblique projections
    (``SparseSigned``, ``Gaussian``, ...) the trees find clusters that no single feature
    separates (Madhyastha et al. 2020's URerF).

    :meth:`transform` is the spectral embedding of the proximity (Laplacian eigenmaps:
    the leading non-trivial eigenvectors of the random walk on it), computed at ``fit`` on
    the training rows and extended to new rows by their proximity to the training rows
    (Nyström); :meth:`fit_predict` clusters the training rows by k-means on it, as
    spectral clustering of the proximity does.""",
    """
    Attributes
    ----------
    embedding_ : ndarray of shape (n_samples, n_components)
        The training rows' spectral embedding (what :meth:`fit_transform` returns). Not
        set with ``n_components=None``.
    eigenvalues_ : ndarray of shape (n_components,)
        The eigenvalue of each coordinate, in [0, 1] and decreasing: that of the
        normalised proximity ``D^-1/2 P D^-1/2`` (D the rows' summed proximities). 1
        where the rows split into groups that share no leaf; a coordinate whose
        eigenvalue is 0 (too few distinct training rows for n_components) is 0.
    n_features_in_ : int
"""
    + COLUMNS_DOC
    + """    projection_counts_ : ndarray of shape (n_features,)
        Normalised count of split projections using each feature.
    estimators_samples_ : list of ndarray
        Each tree's rows (a row repeated as often as its bootstrap drew it).

    References
    ----------
    .. [1] M. Madhyastha, G. Li, V. Strnadová-Neeley, J. Browne, J. T. Vogelstein,
       R. Burns, C. E. Priebe, "Geodesic Forests", KDD 2020 (URerF, Fast-BIC).
    .. [2] T. M. Tomita et al., "Sparse Projection Oblique Randomer Forests", JMLR 2020.

    Examples
    --------
    >>> import numpy as np
    >>> from obliqueforest import UnsupervisedRandomForest
    >>> from obliqueforest.projections import SparseSigned
    >>> X = np.random.default_rng(0).normal(size=(200, 5))
    >>> urf = UnsupervisedRandomForest(50, projection=SparseSigned(), random_state=0).fit(X)
    >>> urf.proximity(X[:3]).toarray().round(2).shape
    (3, 3)
    >>> urf.transform(X[:3]).shape
    (3, 2)
""",
)
class UnsupervisedRandomForest(
    ClassNamePrefixFeaturesOutMixin, TransformerMixin, _ForestWithoutTargets
):
    # generated from the parameter table by `python -m obliqueforest._signatures`: do not edit
    # fmt: off
    def __init__(
        self, n_estimators: Any = 100, *, projection: Any = None, criterion: Any = "twomeans",
        max_depth: Any = None, min_samples_split: Any = "sqrt", min_samples_leaf: Any = 1,
        min_weight_fraction_leaf: Any = 0.0, max_features: Any = 1.0, max_leaf_nodes: Any = None,
        min_impurity_decrease: Any = 0.0, bootstrap: Any = True, n_jobs: Any = None,
        random_state: Any = None, verbose: Any = 0, warm_start: Any = False,
        max_samples: Any = None, splitter: Any = "best", n_components: Any = 2,
        categorical_features: Any = "from_dtype", min_category_samples: Any = 3,
        categorical_in_projections: Any = True,
    ):
        self.n_estimators = n_estimators
        self.projection = projection
        self.criterion = criterion
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_weight_fraction_leaf = min_weight_fraction_leaf
        self.max_features = max_features
        self.max_leaf_nodes = max_leaf_nodes
        self.min_impurity_decrease = min_impurity_decrease
        self.bootstrap = bootstrap
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start
        self.max_samples = max_samples
        self.splitter = splitter
        self.n_components = n_components
        self.categorical_features = categorical_features
        self.min_category_samples = min_category_samples
        self.categorical_in_projections = categorical_in_projections
    # fmt: on

    _private_fit_state = _ForestWithoutTargets._private_fit_state | {"_leaf_map", "_leaf_mass"}

    def _fit_draft(self, X, y, sample_weight):
        super()._fit_draft(X, y, sample_weight)
        for name in ("embedding_", "eigenvalues_", "_leaf_map", "_leaf_mass"):
            self.__dict__.pop(name, None)  # (a warm start's draft holds the last ones)
        if self.n_components is not None:
            embedding = _eigenmaps(self, X, sample_weight, self.n_components)
            self.eigenvalues_ = embedding.eigenvalues
            self._leaf_map, self._leaf_mass = embedding.leaf_map, embedding.leaf_mass
            self.embedding_ = embedding.training

    @property
    def _n_features_out(self):
        """The embedding's width (``get_feature_names_out`` names its columns
        ``unsupervisedrandomforest0``, ...)."""
        return self._embedded().embedding_.shape[1]

    def get_feature_names_out(self, input_features=None):
        """Names of the embedding's columns: ``unsupervisedrandomforest0``, ... (so that
        ``set_output(transform="pandas")`` labels them).

        Raises
        ------
        sklearn.exceptions.NotFittedError
            As :meth:`transform`, when there is no embedding.
        """
        self._embedded()
        return super().get_feature_names_out(input_features)

    def _embedded(self):
        """This forest as its last fit left it, which must have computed an embedding:
        else a NotFittedError that says why."""
        est = self._fitted()
        check_is_fitted(est, "_forest")
        if not hasattr(est, "_leaf_map"):
            fitted = getattr(est, "_fit_params", {}).get("n_components", est.n_components)
            why = (
                "it was fitted with n_components=None"
                if fitted is None
                else "a Dask fit keeps the trees but not the embedding"
            )
            raise NotFittedError(
                f"this {type(est).__name__} has no spectral embedding ({why}); fit it on X "
                "with n_components set to compute one"
            )
        return est

    def transform(self, X):
        """The spectral embedding of the proximity at rows ``X``.

        A row's coordinates are the proximity-weighted mean of the training rows'
        coordinates, divided by each coordinate's eigenvalue: the Nyström extension
        ``psi(x) = sum_i P(x, x_i) w_i psi_i / (lambda sum_i P(x, x_i) w_i)`` of the
        eigenvectors psi of the random walk ``D^-1 P W`` on the training rows (``w`` their
        sample weights), which gives a training row its own coordinates. It is computed
        from per-leaf sums kept at fit, so the training rows are not kept.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_components)
            Float64 coordinates, each scaled so that its mean square over the training
            rows, weighted by their sample weights and summed proximities, is 1 (0 for a
            coordinate of eigenvalue 0).

        Raises
        ------
        sklearn.exceptions.NotFittedError
            Before a fit, and when the fit computed no embedding: ``n_components=None``,
            or a model fitted by :mod:`obliqueforest.dask`, which keeps the trees but not
            the embedding (fit on X to compute it). A model file keeps the embedding.
        """
        est = self._embedded()
        return _nystroem(est, X, est._leaf_map, est._leaf_mass)

    def fit_transform(self, X, y=None, sample_weight=None):
        """Fits the forest on X and returns the training rows' spectral embedding.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : None
            Ignored.
        sample_weight : array-like of shape (n_samples,), default=None
            Row weights of the trees and of the embedding (a row of weight 2 counts as
            two rows in the proximity's random walk; a row of weight 0 only gets
            coordinates, by :meth:`transform`'s extension).

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_components)
            ``embedding_``, the same as ``fit(X).transform(X)``.
        """
        if self.n_components is None:
            raise ValueError("fit_transform needs n_components (an int), not None")
        return self.fit(X, sample_weight=sample_weight)._fitted().embedding_.copy()

    def fit_predict(self, X, y=None, sample_weight=None, *, n_clusters=2):
        """Fits the forest on X and clusters its rows: spectral clustering of the
        proximity.

        The recipe: the first ``n_clusters - 1`` coordinates of the spectral embedding
        (those ``embedding_`` holds, or as many computed for this call when
        ``n_components`` is smaller or None), then k-means with ``n_clusters`` centres
        (scikit-learn's ``KMeans``, ten initialisations seeded by the forest's seed,
        rows weighted by ``sample_weight``, on ``n_jobs`` threads), as scikit-learn's
        ``SpectralClustering`` does on a precomputed affinity. Rows in groups that share no leaf get
        eigenvalue-1 coordinates that set the groups apart.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : None
            Ignored.
        sample_weight : array-like of shape (n_samples,), default=None
        n_clusters : int, default=2
            Number of clusters (a keyword of this method, not a parameter of the
            estimator: the clusters are not kept).

        Returns
        -------
        labels : ndarray of shape (n_samples,)
            Cluster index of each row, in [0, n_clusters).
        """
        from sklearn.cluster import KMeans
        from threadpoolctl import threadpool_limits

        if not isinstance(n_clusters, Integral) or isinstance(n_clusters, bool):
            raise TypeError(f"n_clusters must be an int, got {n_clusters!r}")
        if n_clusters < 1:
            raise ValueError(f"n_clusters must be at least 1, got {n_clusters}")
        est = self.fit(X, sample_weight=sample_weight)._fitted()
        k = max(int(n_clusters) - 1, 1)
        if est.n_components is not None and est.n_components >= k:
            Z = est.embedding_[:, :k]
        else:
            Z = _eigenmaps(est, X, sample_weight, k).training
        if len(Z) < n_clusters:
            raise ValueError(f"n_clusters={n_clusters} exceeds the {len(Z)} rows of X")
        if sample_weight is not None:
            sample_weight = _check_sample_weight(sample_weight, Z, dtype=np.float64)
        seed = int(est._seed) % 2**32
        kmeans = KMeans(int(n_clusters), n_init=10, random_state=seed)
        # k-means on n_jobs threads, as the forest: its OpenMP threads spin while they wait,
        # and on a busy machine two of them took 2-3 s for 400 rows that one does in 20 ms
        with threadpool_limits(limits=est._n_threads(), user_api="openmp"):
            return kmeans.fit_predict(Z, sample_weight=sample_weight)

    def proximity(self, X, Y=None):
        """Forest proximity: the fraction of trees in which two rows share a leaf.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples_X, n_features)
        Y : {array-like, sparse matrix} of shape (n_samples_Y, n_features), default=None
            None: the proximity among the rows of X.

        Returns
        -------
        proximity : scipy.sparse.csr_matrix of shape (n_samples_X, n_samples_Y)
            Entry (i, j) in [0, 1]; 1 on the diagonal when Y is None. Pairs that share no
            leaf are not stored.

        Raises
        ------
        MemoryError
            When the matrix could hold more nonzeros than the memory limit allows
            (:func:`obliqueforest.set_memory_limit`): each pair sharing a leaf in some tree
            is stored, up to n_samples_X * n_samples_Y.
        """
        from .autoencoder._kernel import _leaf_membership

        est = self._fitted()
        check_is_fitted(est, "_forest")
        leaves_x, n_leaves = _leaves(est, X)
        leaves_y = leaves_x if Y is None else _leaves(est, Y)[0]
        # every pair in a common leaf is a stored entry: bound them before the product
        per_leaf = np.bincount(leaves_x.ravel(), minlength=n_leaves).astype(np.float64)
        other = per_leaf if Y is None else np.bincount(leaves_y.ravel(), minlength=n_leaves)
        bound = min(float(per_leaf @ other), float(len(leaves_x)) * float(len(leaves_y)))
        # float64 values and int32 indices, once in the product and once in its sum
        need, budget = 24 * bound, _core.memory_budget()
        if budget is not None and need > budget:
            raise MemoryError(
                f"the proximity of {len(leaves_x)} x {len(leaves_y)} rows may hold up to "
                f"{bound:.3g} nonzeros ({need / 1e9:.3g} GB), over the memory limit of "
                f"{budget / 1e9:.3g} GB; ask for fewer rows at a time (proximity(X[a:b], "
                "Y)), grow trees with larger leaves (min_samples_split, min_samples_leaf), "
                "or raise the limit (obliqueforest.set_memory_limit)"
            )
        mx = _leaf_membership(leaves_x, n_leaves)
        my = (mx if Y is None else _leaf_membership(leaves_y, n_leaves)).T.tocsr()
        # the product a block of rows at a time, each of about _PROXIMITY_BLOCK pairs: a
        # single product of large leaves runs for seconds in scipy, deaf to Ctrl-C
        pairs = np.cumsum(other[leaves_x].sum(axis=1, dtype=np.float64))
        ends = np.searchsorted(
            pairs, np.arange(1, pairs[-1] // _PROXIMITY_BLOCK + 1) * _PROXIMITY_BLOCK
        )
        edges = np.unique(np.r_[0, ends + 1, len(leaves_x)].clip(0, len(leaves_x)))
        blocks = [(mx[a:b] @ my).tocsr() for a, b in zip(edges[:-1], edges[1:])]
        shared = blocks[0] if len(blocks) == 1 else sparse.vstack(blocks, format="csr")
        shared.data /= leaves_x.shape[1]
        return sparse.csr_matrix(shared)


# -- the proximity's spectral embedding ---------------------------------------------------
# Eigenvalues at or below this are 0: their coordinates are 0 rather than noise divided by
# a vanishing eigenvalue.
_EIGENVALUE_ZERO = 1e-10


class _Embedding(NamedTuple):
    eigenvalues: np.ndarray  # (k,)
    leaf_map: np.ndarray  # (n_leaves, k): sum over a leaf's rows of w * psi / eigenvalue
    leaf_mass: np.ndarray  # (n_leaves,): sum over a leaf's rows of w
    training: np.ndarray  # (n_samples, k): the training rows' coordinates


#: Leaf pairs (rows x rows sharing a leaf, summed over trees) a block of ``proximity``
#: multiplies at once: ~0.1 s on one core, so Ctrl-C is seen between blocks.
_PROXIMITY_BLOCK = 1 << 23


def _leaves(est, X):
    """Global leaf ids of X's rows, shape (n_samples, n_trees), and the number of leaves."""
    core = est._forest
    leaves = core.apply_leaves(est._validate_X_predict(X), est._n_threads())
    return leaves, int(core.leaf_offsets()[-1])


def _eigenmaps(est, X, sample_weight, n_components):
    """The spectral embedding of the proximity P on the training rows X (Laplacian
    eigenmaps), computed from the leaf membership M (n x L, one entry per row and tree)
    without forming P = M M^T / T.

    With row weights w and summed proximities d = P w, the random walk D^-1 P W has the
    eigenvectors psi = (W D)^-1/2 u of the symmetric S = A A^T, A = (W/D)^1/2 M / T^1/2, on
    the rows of positive weight. Its top eigenvector, u0 ~ (w d)^1/2 (psi constant,
    eigenvalue 1), is deflated exactly (S - u0 u0^T), so the leading eigenpairs found are
    the non-trivial ones, including the eigenvalue-1 directions of groups of rows that
    share no leaf. A row of weight w counts as w rows: the same coordinates as its copies.
    """
    from .autoencoder._kernel import _fix_signs, _leaf_membership, _top_eigenpairs

    leaves, n_leaves = _leaves(est, X)
    n, n_trees = leaves.shape
    weight = (
        np.ones(n)
        if sample_weight is None
        else _check_sample_weight(sample_weight, leaves, dtype=np.float64)
    )
    membership = _leaf_membership(leaves, n_leaves)
    mass = membership.T @ weight
    rows = np.flatnonzero(weight > 0)
    member, w = membership[rows], weight[rows]
    degree = (member @ mass) / n_trees  # d = P w, at least w (P's diagonal is 1)
    wd = w * degree
    a = (sparse.diags(np.sqrt(w / degree / n_trees)) @ member).tocsr()
    a_t = a.T.tocsr()
    u0 = np.sqrt(wd) / np.linalg.norm(np.sqrt(wd))

    def deflated(v):
        v = np.asarray(v, dtype=np.float64)
        return a @ (a_t @ v) - np.multiply.outer(u0, u0 @ v)

    m = len(rows)
    op = LinearOperator(
        (m, m), matvec=deflated, matmat=deflated, rmatvec=deflated, rmatmat=deflated,
        dtype=np.float64,
    )  # fmt: skip
    k = min(n_components, m)
    values, vectors = _top_eigenpairs(op, k, np.random.default_rng(est._seed))
    psi = _fix_signs(vectors * np.sqrt(wd.sum() / wd)[:, None])
    eigenvalues = np.zeros(n_components)
    eigenvalues[:k] = np.clip(values, 0.0, 1.0)
    leaf_map = np.zeros((n_leaves, n_components))
    live = np.flatnonzero(values > _EIGENVALUE_ZERO)
    leaf_map[:, live] = (member.T @ (w[:, None] * psi[:, live])) / values[live]
    return _Embedding(eigenvalues, leaf_map, mass, _extend(membership, leaf_map, mass))


def _extend(membership, leaf_map, leaf_mass):
    """Nyström: each row's proximity-weighted mean of the leaf sums (a row whose leaves
    hold no weight gets 0)."""
    total = membership @ leaf_mass
    out = np.zeros((membership.shape[0], leaf_map.shape[1]))
    some = total > 0
    out[some] = (membership @ leaf_map)[some] / total[some, None]
    return out


def _nystroem(est, X, leaf_map, leaf_mass):
    """The spectral embedding at rows X, from the leaf sums kept at fit."""
    from .autoencoder._kernel import _leaf_membership

    leaves, n_leaves = _leaves(est, X)
    return _extend(_leaf_membership(leaves, n_leaves), leaf_map, leaf_mass)


# -- isolation forests -------------------------------------------------------------------
_IF_SURFACE = Surface(
    [
        FOREST_PARAMS["n_estimators"].replace(doc="Number of isolation trees."),
        _PROJECTION,
        Param(
            "max_samples",
            "auto",
            [
                StrOptions({"auto"}),
                Interval(Integral, 1, None, closed="left"),
                Interval(RealNotInt, 0.0, 1.0, closed="right"),
            ],
            '"auto", int or float',
            """Rows each tree draws (ψ): "auto" is min(256, n_samples), an int a count
            (at most n_samples, else n_samples with a warning), a float f
            int(f * n_samples) rows, at least 1 (scikit-learn's rule, which fails where
            that is 0). Trees stop at depth ceil(log2(ψ)), as scikit-learn's.""",
        ),
        Param(
            "contamination",
            "auto",
            [StrOptions({"auto"}), Interval(Real, 0.0, 0.5, closed="right")],
            '"auto" or float',
            """The expected fraction of outliers, which sets ``offset_``: "auto" the
            original paper's -0.5 (a row is an outlier when its anomaly score exceeds 0.5),
            a float in (0, 0.5] the training scores' ``contamination`` quantile.""",
        ),
        Param(
            "max_features",
            1.0,
            [
                Interval(Integral, 1, None, closed="left"),
                Interval(Real, 0.0, 1.0, closed="right"),
            ],
            "int or float",
            """Features each tree may use, drawn without replacement per tree (an int, or
            a float f for max(1, int(f * n_features))), as scikit-learn's; the
            projections of a tree are drawn over its features only (a family with
            explicit projections is needed for fewer than all: not Patch, HaarPatch,
            PooledFilter or Dictionary). Each node cuts one candidate projection.""",
        ),
        FOREST_PARAMS["bootstrap"].replace(
            default=False,
            doc="""Draw each tree's ψ rows with replacement; False (scikit-learn's
            default): without.""",
        ),
        FOREST_PARAMS["n_jobs"],
        FOREST_PARAMS["random_state"],
        FOREST_PARAMS["verbose"],
        FOREST_PARAMS["warm_start"].replace(
            doc="""Add trees to the fitted forest instead of growing a new one (on the
            same data: its ψ and depth limit are the first fit's); ``offset_`` is
            recomputed."""
        ),
        FOREST_PARAMS["categorical_features"],
    ],
    positional=1,
)


@_IF_SURFACE.declare(
    """Isolation forest on any projection family (scikit-learn's API).

    Each tree draws ``max_samples`` rows and cuts each node once, uniformly between the
    smallest and largest value of one projection drawn from ``projection``, down to depth
    ceil(log2(ψ)). A row that is isolated in few cuts is anomalous: its score is
    ``2 ** -(E[h(x)] / c(ψ))`` with h the path length (the leaf's depth plus the average
    path length c(n) of the n training rows left in it) and c(ψ) the average path length of
    ψ rows (Liu et al. 2008). ``AxisAligned()`` (the default) is scikit-learn's
    IsolationForest; ``SparseSigned``, ``Gaussian`` or ``ForestRC`` cut along random
    oblique hyperplanes, the extended isolation forest (Hariri et al. 2019), which does not
    give axis-parallel bands of false normality around rotated or curved data.""",
    """
    Attributes
    ----------
    max_samples_ : int
        The rows each tree drew (ψ).
    offset_ : float
        ``decision_function = score_samples - offset_``: -0.5 for ``contamination="auto"``.
    n_features_in_ : int
"""
    + COLUMNS_DOC
    + """    projection_counts_ : ndarray of shape (n_features,)
        Normalised count of split projections using each feature.
    estimators_samples_ : list of ndarray
        Each tree's rows.

    References
    ----------
    .. [1] F. T. Liu, K. M. Ting, Z.-H. Zhou, "Isolation Forest", ICDM 2008.
    .. [2] S. Hariri, M. Carrasco Kind, R. J. Brunner, "Extended Isolation Forest", IEEE
       TKDE 33(4), 2021 (arXiv 2019).

    Examples
    --------
    >>> import numpy as np
    >>> from obliqueforest import IsolationForest
    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.normal(size=(300, 2)), [[6.0, 6.0]]])
    >>> iso = IsolationForest(random_state=0).fit(X)
    >>> iso.predict([[0.0, 0.0], [6.0, 6.0]])
    array([ 1, -1])
""",
)
class IsolationForest(OutlierMixin, _ForestWithoutTargets):
    # generated from the parameter table by `python -m obliqueforest._signatures`: do not edit
    # fmt: off
    def __init__(
        self, n_estimators: Any = 100, *, projection: Any = None, max_samples: Any = "auto",
        contamination: Any = "auto", max_features: Any = 1.0, bootstrap: Any = False,
        n_jobs: Any = None, random_state: Any = None, verbose: Any = 0, warm_start: Any = False,
        categorical_features: Any = "from_dtype",
    ):
        self.n_estimators = n_estimators
        self.projection = projection
        self.max_samples = max_samples
        self.contamination = contamination
        self.max_features = max_features
        self.bootstrap = bootstrap
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start
        self.categorical_features = categorical_features
    # fmt: on

    def _resolve(self, X):
        if self.warm_start and hasattr(self, "_forest"):
            return  # more trees of the same forest: its ψ and features per tree stay
        n, p = X.shape
        if self.max_samples == "auto":
            psi = min(256, n)
        elif isinstance(self.max_samples, Integral):
            psi = int(self.max_samples)
            if psi > n:
                # scikit-learn's words
                warnings.warn(
                    f"max_samples ({self.max_samples}) is greater than the total number of "
                    f"samples ({n}). max_samples will be set to n_samples for estimation.",
                    UserWarning,
                    stacklevel=5,
                )
                psi = n
        else:
            psi = int(self.max_samples * n)
        self.max_samples_ = max(psi, 1)
        # scikit-learn's rule for features per tree (BaseBagging): a float f is
        # max(1, int(f * p)), so a small fraction of few features is one feature
        if isinstance(self.max_features, Integral):
            k = int(self.max_features)
        else:
            k = int(self.max_features * p)
        if k > p:
            raise ValueError("max_features must be <= n_features")  # scikit-learn's words
        self._tree_features = max(1, k)

    _private_fit_state = _BaseForest._private_fit_state | {"_tree_features"}

    def _task_params(self, X):
        k = self._tree_features
        return {**super()._task_params(X), "tree_features": None if k == X.shape[1] else k}

    def _core_fields(self) -> dict:
        psi = self.max_samples_
        return {
            "n_estimators": self.n_estimators,
            "criterion": "twomeans",  # (one candidate per node: nothing to compare)
            "splitter": "random",
            "max_features": 1,
            "max_depth": max(int(np.ceil(np.log2(max(psi, 2)))), 1),
            "bootstrap": self.bootstrap,
            "max_samples": psi,
        }

    def _fit_draft(self, X, y, sample_weight):
        super()._fit_draft(X, y, sample_weight)
        if self.contamination == "auto":
            self.offset_ = -0.5  # the paper's threshold on the anomaly score
        else:
            scores = self._forest.score_samples(self._validate_X_predict(X), self._n_threads())
            self.offset_ = float(np.percentile(scores, 100.0 * self.contamination))

    def score_samples(self, X):
        """The opposite of the anomaly score of each row, as scikit-learn's.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        scores : ndarray of shape (n_samples,)
            ``-2 ** -(E[h(x)] / c(ψ))`` in [-1, 0): the lower, the more abnormal.
        """
        est = self._fitted()
        check_is_fitted(est, "_forest")
        return est._forest.score_samples(est._validate_X_predict(X), est._n_threads())

    def decision_function(self, X):
        """``score_samples(X) - offset_``: negative for outliers, positive for inliers.

        Returns
        -------
        scores : ndarray of shape (n_samples,)
        """
        est = self._fitted()
        return est.score_samples(X) - est.offset_

    def predict(self, X):
        """Whether each row is an inlier (1) or an outlier (-1).

        Returns
        -------
        is_inlier : ndarray of shape (n_samples,)
            -1 where ``decision_function(X) < 0``, else 1.
        """
        decision = self.decision_function(X)
        is_inlier = np.ones(decision.shape[0], dtype=int)
        is_inlier[decision < 0] = -1
        return is_inlier
