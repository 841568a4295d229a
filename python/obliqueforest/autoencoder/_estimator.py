"""The ForestAutoencoder estimator."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from scipy import sparse
from sklearn.base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    TransformerMixin,
    clone,
)
from sklearn.neighbors import NearestNeighbors
from sklearn.utils import check_array, check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from .. import _core
from ..plotting import plot_embedding
from .._tables import as_frame
from .._transaction import TransactionalFit
from .._validation import SPARSE_FORMATS, check_sparse_structure, core_X, resolve_n_jobs
from ._adversarial import (
    _auto_min_samples_leaf,
    _check_forest_columns,
    _core_forest,
    _forest_estimator,
    _grow,
    _grow_adversarial_forest,
    _is_fitted_forest,
    _supervised_task,
)
from ._codec import _is_dataframe, _TabularCodec
from ._decoders import (
    _DECODE_CHUNK,
    _LASSO_PENALTY,
    _LASSO_TOP_ROWS,
    _draw_levels,
    _exclusive_lasso_scores,
    _greedy_leaf_region,
    _leaf_levels,
    _max_coverage_boxes,
    _relabel_forest,
    _sample_in_boxes,
    _weighted_mode,
)
from ._kernel import (
    _DENSE_EIGEN_MAX_N,
    _EIGENVALUE_ONE_TOL,
    _diffusion_map,
    _distinct_rows,
    _fix_signs,
    _kernel,
    _kernel_graph_components,
    _leaf_membership,
    _leaf_weights,
    _nystroem_leaf_map,
    _out_of_sample_embedding,
    _top_eigenpairs,
    _tree_of_leaf,
)
from ._metrics import distortion
from ._params import AUTOENCODER_PARAMS


# --------------------------------------------------------------------------- #
# The estimator                                                                 #
# --------------------------------------------------------------------------- #
@AUTOENCODER_PARAMS.declare()
class ForestAutoencoder(
    TransactionalFit, ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator
):
    """Random forest autoencoder: diffusion-map encoder and forest-based decoders.

    ``fit`` grows (or takes) a forest, builds its RF kernel from the leaf
    memberships of the training rows, and keeps the top ``n_components``
    non-trivial eigenpairs as a diffusion map. ``transform`` embeds any rows
    with the Nyström formula; ``inverse_transform`` decodes latent vectors
    back to rows of the input's kind (array or DataFrame, same columns and
    dtypes). A fit is a transaction: one that raises (a parameter check, the
    memory guard, Ctrl-C, a disconnected kernel) leaves the previous model as
    it was, and readers in other threads see the old model or the new one.

    Attributes
    ----------
    forest_ : estimator or _core.Forest
        The fitted forest.
    embedding_ : ndarray of shape (n_samples, n_components)
        Diffusion map of the training rows (copies of a row share its value).
    eigenvalues_ : ndarray of shape (n_components,)
        Kernel eigenvalues of the kept components (the trivial 1 excluded).
    leaf_map_ : ndarray of shape (n_leaves, n_components)
        Nyström map: the embedding of rows with leaf matrix ``Π₀`` is ``Π₀ W``
        (rows renormalised to total kernel weight 1).
    kernel_method_ : {"operator", "sparse", "dense"}
        Representation used for the eigendecomposition.
    kernel_trees_ : ndarray of bool of shape (n_trees,)
        Trees entering the kernel (single-leaf trees are excluded with a warning).
    arf_accuracies_ : list of float
        OOB accuracy of every discriminator trained by the adversarial loop, the
        first forest first (empty for other forests). As in the R package
        ``arf``, the forest kept is the generator of the last round, i.e. the
        one before the last discriminator.
    n_distinct_ : int
        Number of distinct training rows the kernel is built on (``n_samples``
        when ``collapse_duplicates=False``).
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Only when ``X`` has string column names.

    Notes
    -----
    Defaults against the paper's compression benchmark (Appx. B.1: ARF with
    500 trees and the ``arf`` package's leaf size of 2 real rows, ``k = 20``,
    ``t = 1``): 200 trees here (500 gave the same distortion within noise:
    breast cancer 0.2858 against 0.2857, 10 bootstraps). Leaves of 1-2 rows made
    the kernel nearly block-diagonal (leading eigenvalues above 0.93) and the
    distortion clearly worse.

    Six choices differ from the paper, each measured with
    ``benches/rfae_compression.py --decoders knn`` (10 bootstraps, mean over the
    10 latent rates; before -> after): penguins 0.225 -> 0.163 (paper 0.176),
    breast cancer 0.313 -> 0.286 (paper 0.333), wine 0.418 -> 0.366. The last
    two were also checked on four data sets outside the benchmark
    (``benches/rfae_fidelity_study.py``, ``benches/results/rfae_fidelity.md``).

    - ``max_features="auto"`` grows the adversarial forest with one random
      feature per split. With √p candidates the real-versus-synthetic criterion
      almost never picks a column that is independent of the others (penguins'
      ``year``), so the kernel ignores it and its reconstruction is the column
      mean (distortion 0.99 of a possible 1); one candidate per split makes
      every column split on, with the threshold still chosen adversarially
      (``year`` 0.51, penguins 0.217 -> 0.160 with ``k = 10``).
    - The k-NN decoder searches the training rows' leave-self-out embeddings
      (each row's own kernel weight removed, as for a new row), not their
      diffusion coordinates, which carry a self-similarity ``K_ii`` that new
      rows never have (breast cancer 0.308 -> 0.298 with ``k = 10``).
    - ``k = 10`` rather than 20 (breast cancer 0.319 -> 0.308, penguins
      0.223 -> 0.217, 3 bootstraps).
    - The k-NN decoder averages the neighbours' own rows with weights
      ``1 / distance²``, where the paper averages one point drawn uniformly in
      each neighbour's leaf-intersection region with weights ``1 / distance``.
      The row lies in that region, so the decoded row is still one the forest
      cannot tell from the neighbours, without the draw's noise; the squared
      distance leans on the nearest neighbours. Measured after the forests'
      constant-candidate redraw (which had moved penguins to 0.175): penguins
      0.175 -> 0.169, breast cancer 0.302 -> 0.297 (10 bootstraps).
    - ``min_samples_leaf="auto"`` gives the adversarial forest leaves of at least
      12 rows, real and synthetic (about 6 real rows), rather than 5: a smoother
      kernel whose leading eigenvectors carry more of the data's structure.
      Paired over the same bootstraps: penguins 0.169 -> 0.163, breast cancer
      0.297 -> 0.292, wine 0.373 -> 0.370; outside the benchmark Pima 0.427 ->
      0.414, iris and diabetes 0.002 and 0.001 better, Boston 0.005 worse
      (± 0.003). Below 72 distinct rows the leaves shrink to ``n / 6`` rows
      (at least 5; every benchmark set has more), so that small data still
      grow trees of several leaves. Supervised and completely random forests
      keep 5: their leaves hold real rows only, and larger ones leave trees of
      a few leaves on small data.
    - The k-NN decoder compares latent vectors in kernel-PCA coordinates,
      ``Z Λ^(1/2 − t)``, whatever ``diffusion_time``: there Euclidean distance
      is the best rank-``d_Z`` approximation of the distance between the rows'
      kernel feature maps, ``k(x, x) + k(x', x') − 2 k(x, x')`` (Sect. 4.1), and
      a new row's Nyström embedding is exactly its kernel-PCA projection; the
      diffusion coordinates (``t = 1``) weight component ``j`` by ``λ_j``
      rather than ``√λ_j``, leaning harder on the leading ones. With 12-row leaves:
      breast cancer 0.292 -> 0.286, wine 0.370 -> 0.366, diabetes 0.002 better,
      penguins, iris and Boston unchanged (within 0.0002), Pima 0.0015 worse.

    The reference implementation's 0.170 on penguins also comes from how it
    reads the data: ``arf`` recodes integer columns with fewer than 5 distinct
    values (``year``) as ordered factors, so ``year`` is scored by error rate,
    not ``1 − R²``; scored that way the old defaults gave 0.167 (3 bootstraps;
    ``--integers-as-categories`` in the benchmark scores it so).

    Categorical columns of a DataFrame (category, object, string and bool dtypes)
    are read as the forest estimators read them (``categorical_features="from_dtype"``,
    :mod:`obliqueforest._tables`): levels a category dtype's categories, ``[False,
    True]`` for bools, else the sorted distinct values; the forest splits them by sets
    of levels (native categorical splits), and a forest fitted on the same DataFrame
    has the same levels. A missing value in a categorical column is a value of its
    own: the trees send it to each split's missing side and the decoders return it
    where the neighbours' or the region's rows are missing. A numeric column must be
    complete (the decoders average it). At ``transform`` a level never seen in fit
    is coded as the estimators code it: a split on that column alone sends it with
    the missing values, never an error. The k-NN decoder takes the weighted mode of a
    categorical column; ``"relabel"`` and ``"lasso"`` draw a level among those held
    by the training rows of the most of the region's leaves (a set of levels is not
    a box). On tables whose level order carries information (alphabetical names of
    ordered sizes, say) splits on the codes as numbers can encode a little better:
    penguins, 10 bootstraps, 0.163 with codes as numbers and 0.167 with categorical
    splits (the protocol of ``tests/test_autoencoder.py``, ``_compression_distortion``);
    on nominal columns categorical splits do better (a seeded synthetic table,
    ``tests/test_autoencoder_categorical.py``, 3 random halves: 0.083 -> 0.076).

    References
    ----------
    .. [1] B. D. Vu, J. Kapar, M. N. Wright, D. S. Watson, "Autoencoding random
       forests", 2025.
    .. [2] D. S. Watson et al., "Adversarial random forests for density
       estimation and generative modeling", AISTATS 2023.

    Examples
    --------
    >>> from sklearn.datasets import load_wine
    >>> from obliqueforest.autoencoder import ForestAutoencoder, distortion
    >>> X = load_wine().data
    >>> ae = ForestAutoencoder(n_components=6, random_state=0).fit(X)
    >>> X_hat = ae.inverse_transform(ae.transform(X))
    >>> distortion(X, X_hat) < 0.5
    True
    """

    # generated from the parameter table by `python -m obliqueforest._signatures`: do not edit
    # fmt: off
    def __init__(
        self, n_components: Any = 2, *, diffusion_time: Any = 1.0, decoder: Any = "knn",
        k: Any = 10, forest: Any = None, unsupervised: Any = "adversarial", n_estimators: Any = 200,
        min_samples_leaf: Any = "auto", max_features: Any = "auto", max_depth: Any = None,
        arf_delta: Any = 0.0, arf_max_iter: Any = 10, kernel: Any = "auto",
        collapse_duplicates: Any = True, random_state: Any = None, n_jobs: Any = None,
        verbose: Any = 0,
    ):
        self.n_components = n_components
        self.diffusion_time = diffusion_time
        self.decoder = decoder
        self.k = k
        self.forest = forest
        self.unsupervised = unsupervised
        self.n_estimators = n_estimators
        self.min_samples_leaf = min_samples_leaf
        self.max_features = max_features
        self.max_depth = max_depth
        self.arf_delta = arf_delta
        self.arf_max_iter = arf_max_iter
        self.kernel = kernel
        self.collapse_duplicates = collapse_duplicates
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose
    # fmt: on

    #: Its forest may grow any registered family (a file records its forest's own).
    _projection_families = None

    #: What a fit sets besides its fitted attributes (names ending in "_").
    _private_fit_state = frozenset(
        {
            "_codec",
            "_embedding_fit",
            "_leaf_weights",
            "_leaf_mass",
            "_train_lower",
            "_train_upper",
            "_X_fit",
            "_col_min",
            "_col_max",
            "_n_categories",
            "_decode_points",
            "_nn",
            "_decode_seed",
            "_relabeled",
            "_leaf_levels",
        }
    )

    # ----------------------------------------------------------------- input
    def _encode_input(self, X, reset):
        """Validate ``X`` and return its float64 code matrix, shape (n, n_features): a
        categorical column's missing values are NaN (after fit, values that are not
        levels are coded as the estimators code them), a numeric column's are refused."""
        check_sparse_structure(X)
        X = as_frame(X)
        if _is_dataframe(X):
            validate_data(self, X=X, skip_check_array=True, reset=reset)
            if reset:
                self._codec = _TabularCodec()
                codes = self._codec.fit_encode(X)
            elif self._codec is None:
                X = validate_data(self, X=X, reset=False, dtype=np.float64)
                return np.asarray(X, dtype=np.float64)
            else:
                native = bool(getattr(self._core(), "categorical", None))
                codes = self._codec.encode(X, native=native)
            for j in np.flatnonzero(~self._codec.categorical):
                if not np.all(np.isfinite(codes[:, j])):
                    raise ValueError(
                        f"Input X contains NaN or infinity in numeric column "
                        f"{self._codec.columns[j]!r}; impute it first (missing values are "
                        "taken in categorical columns only)"
                    )
            if reset and codes.shape[0] < 2:
                raise ValueError(f"n_samples={codes.shape[0]} while a minimum of 2 is required.")
            return codes
        X = validate_data(self, X=X, reset=reset, dtype=np.float64, ensure_min_samples=2)
        if reset:
            self._codec = None
        return np.asarray(X, dtype=np.float64)

    def _decode_output(self, codes):
        if self._codec is None:
            return codes
        return self._codec.decode(codes)

    # ----------------------------------------------------------------- forest
    def _grow_forest(self, X32, y, rng, n_jobs, frame):
        """The forest of ``fit`` and the accuracies of its adversarial rounds: ``forest``
        taken (fitted) or cloned and fitted, or a forest grown here on the codes ``X32``, its
        categorical columns (``_codec``) split as sets of levels. ``frame`` holds the same
        rows as the DataFrame given to ``fit`` (None for an array): a clone that splits
        categorical columns fits on it.

        Returns
        -------
        forest : estimator or _core.Forest
        accuracies : list of float
        """
        adversarial = self.forest is None and y is None and self.unsupervised == "adversarial"
        leaf = self.min_samples_leaf
        if leaf == "auto":
            leaf = _auto_min_samples_leaf(len(X32), adversarial)
        base = {
            "n_estimators": self.n_estimators,
            "min_samples_leaf": leaf,
            "max_depth": self.max_depth,
            "n_jobs": n_jobs,
        }
        supervised_mf = "sqrt" if self.max_features == "auto" else self.max_features
        if self.forest is not None:
            if _is_fitted_forest(self.forest):
                _check_forest_columns(self.forest, self._codec, X32.shape[1])
                return self.forest, []
            # a forest grown without targets (UnsupervisedRandomForest) is fitted on X alone
            needs_y = self.forest.__sklearn_tags__().target_tags.required
            if y is None and needs_y:
                raise ValueError(
                    "an unfitted `forest` is fitted on (X, y) and needs y; pass y, a fitted "
                    "forest, a forest grown without targets (UnsupervisedRandomForest), or "
                    "forest=None for an unsupervised forest"
                )
            forest = clone(self.forest)
            if not needs_y and "n_components" in forest.get_params():
                # an UnsupervisedRandomForest: the autoencoder makes its own diffusion map,
                # so the forest skips its spectral embedding (5-30% of its fit)
                forest.set_params(n_components=None)
            if "random_state" in forest.get_params() and forest.random_state is None:
                forest.set_params(random_state=int(rng.integers(0, 2**31 - 1)))
            # a forest that splits categorical columns takes the DataFrame, whose columns it
            # codes as the codec does; one of numeric columns only reads the codes
            categorical = self._codec is not None and self._codec.categorical.any()
            data = frame if categorical and "categorical_features" in forest.get_params() else X32
            forest = forest.fit(data, y) if needs_y else forest.fit(data)
            _check_forest_columns(forest, self._codec, X32.shape[1])
            return forest, []
        # a forest grown here is a random forest, fitted through RandomForestClassifier or
        # RandomForestRegressor with the autoencoder's n_estimators, min_samples_leaf,
        # max_features and max_depth, on the codes (their levels the codec's) and with a
        # seed from the autoencoder's generator
        seed = int(rng.integers(0, 2**31 - 1))
        levels = None if self._codec is None else self._codec._categories
        base["verbose"] = self.verbose
        if y is not None:
            y, classify = _supervised_task(y, len(X32))
            est = _forest_estimator(classify, max_features=supervised_mf, **base)
            return _grow(est, X32, y, seed, levels), []
        if self.unsupervised == "random":
            # a regressor fitted to pure noise: each split on one random feature
            noise = rng.standard_normal(len(X32))
            est = _forest_estimator(False, max_features=1, **base)
            return _grow(est, X32, noise, seed, levels), []
        # real (class 1) against synthetic rows (class 0), scored out of bag; each round
        # draws its discriminator's seed from the generator (the seed above goes unused)
        mf = 1 if self.max_features == "auto" else self.max_features
        est = _forest_estimator(True, max_features=mf, oob_score=True, **base)
        return _grow_adversarial_forest(
            X32, est, levels, self.arf_delta, self.arf_max_iter, rng, n_jobs
        )

    def _core(self):
        return _core_forest(self.forest_)

    # ------------------------------------------------------------------- fit
    def fit(self, X, y=None):
        """Grow or take the forest and compute the diffusion map of ``X``.

        Parameters
        ----------
        X : ndarray, DataFrame or pyarrow Table of shape (n_samples, n_features)
            Numeric array, or a table mixing numeric and categorical columns (see
            Notes); missing values in categorical columns only.
        y : array-like of shape (n_samples,), default=None
            Target for a supervised forest; None for an unsupervised one.

        Returns
        -------
        self : ForestAutoencoder
            Fitted; a fit that raises leaves the estimator as it was.
        """
        self._validate_params()
        return self._transaction(type(self)._fit_draft, X, y)

    def _fit_draft(self, X, y):
        X = as_frame(X)
        codes = self._encode_input(X, reset=True)
        rng = np.random.default_rng(check_random_state(self.random_state).randint(2**31 - 1))
        n_jobs = resolve_n_jobs(self.n_jobs)
        X_all = np.ascontiguousarray(codes, dtype=np.float32)
        if self.collapse_duplicates:
            keep, row_to_fit = _distinct_rows(X_all)
        else:
            keep, row_to_fit = np.arange(len(X_all)), np.arange(len(X_all))
        X32 = X_all[keep] if len(keep) < len(X_all) else X_all
        codes = codes[keep]
        n = X32.shape[0]
        self.n_distinct_ = n
        if n < 2:
            raise ValueError("X needs at least 2 distinct rows")
        if self.n_components >= n:
            what = "distinct rows" if n < len(X_all) else "n_samples"
            raise ValueError(f"n_components={self.n_components} must be smaller than {what}={n}")
        # a supervised forest learns from every row and its label; an unsupervised
        # forest grown here sees each distinct row once (see `collapse_duplicates`)
        forest_X, forest_y, rows = (X_all, y, None) if y is not None else (X32, None, keep)
        frame = None
        if self._codec is not None:
            frame = X if rows is None or len(rows) == len(X) else X.iloc[rows]
        self.forest_, self.arf_accuracies_ = self._grow_forest(
            forest_X, forest_y, rng, n_jobs, frame
        )
        core = self._core()

        leaves = core.apply_leaves(X32, n_jobs)
        offsets = core.leaf_offsets()
        membership = _leaf_membership(leaves, int(offsets[-1]))
        n_leaves_per_tree = np.diff(offsets)
        self.kernel_trees_ = n_leaves_per_tree > 1
        n_single = int((~self.kernel_trees_).sum())
        if n_single == len(self.kernel_trees_):
            raise ValueError(
                "every tree of the forest is a single leaf, so the kernel is constant; "
                "lower min_samples_leaf or use more rows"
            )
        if n_single:
            warnings.warn(
                f"{n_single} of {len(self.kernel_trees_)} trees are a single leaf; they carry "
                "no information (and would make the kernel dense) and are left out of it",
                UserWarning,
                stacklevel=2,
            )
        weights, _sizes = _leaf_weights(membership, offsets, self.kernel_trees_)
        n_trees = int(self.kernel_trees_.sum())
        n_comp_graph = _kernel_graph_components(membership, weights)
        if n_comp_graph > 1:
            raise ValueError(
                f"the forest kernel graph has {n_comp_graph} disconnected components, so its "
                f"eigenvalue 1 is repeated {n_comp_graph} times and the embedding would be "
                "degenerate (typical causes: duplicate rows isolated in tiny leaves, "
                "min_samples_leaf too small, too few trees); grow larger leaves or more trees"
            )
        kernel, method = _kernel(membership, weights, n_trees, self.kernel)
        self.kernel_method_ = "dense" if n <= _DENSE_EIGEN_MAX_N else method
        vals, vecs = _top_eigenpairs(kernel, self.n_components + 1, rng)
        if vals[1] > 1.0 - _EIGENVALUE_ONE_TOL:
            raise ValueError(
                f"the forest kernel has a repeated eigenvalue 1 ({vals[:3]}): its graph is "
                "(numerically) disconnected; grow larger leaves or more trees"
            )
        if vals[-1] <= 1e-12:
            raise ValueError(
                f"n_components={self.n_components} exceeds the numerical rank of the forest "
                f"kernel (eigenvalue {vals[-1]:.2e}); use fewer components"
            )
        vals, vecs = vals[1:], _fix_signs(vecs[:, 1:])
        self.eigenvalues_ = vals
        # diffusion map of the distinct rows; copies share their row's embedding
        self._embedding_fit = _diffusion_map(vals, vecs, self.diffusion_time)
        self.embedding_ = self._embedding_fit[row_to_fit]
        self.leaf_map_ = _nystroem_leaf_map(
            membership, weights, n_trees, self._embedding_fit, self.eigenvalues_
        )
        self._leaf_weights = weights / n_trees
        # a new row's kernel row sums to the share of trees whose leaf holds training rows
        self._leaf_mass = (weights > 0) / n_trees

        lower, upper = core.leaf_bounds(X32, n_jobs)
        self._train_lower = np.asarray(lower, dtype=np.float64)
        self._train_upper = np.asarray(upper, dtype=np.float64)
        self._X_fit = X32
        # (a categorical column's range is unused: it is drawn by level, _draw_levels)
        self._col_min = np.nanmin(codes, axis=0)
        self._col_max = np.nanmax(codes, axis=0)
        self._n_categories = (
            np.zeros(codes.shape[1], dtype=np.int64)
            if self._codec is None
            else self._codec.n_categories
        )
        # the k-NN decoder searches the training rows as if they were new rows (their
        # leave-self-out embeddings, kept so that a loaded model searches the same points)
        self._decode_points = _out_of_sample_embedding(
            membership, weights, n_trees, self._embedding_fit, self.eigenvalues_
        )
        self._nn = self._search_index()
        self._decode_seed = int(rng.integers(0, 2**63 - 1))
        self._relabeled = None
        self._leaf_levels = None
        return self

    def fit_transform(self, X, y=None):
        """Fit and return the diffusion map of ``X``, shape (n_samples, n_components)."""
        return self.fit(X, y).embedding_.copy()

    # -------------------------------------------------------------- encoding
    def transform(self, X):
        """Embed rows with the Nyström formula ``Z₀ = K₀ Z Λ⁻¹``.

        Parameters
        ----------
        X : ndarray, sparse matrix, DataFrame or pyarrow Table of shape (n_samples, n_features)
            A scipy CSR/CSC matrix (of a numeric fit) is read without densifying it. A
            table's categorical columns come as at fit; a level never seen in fit is
            coded as the estimators code it (a split on its column alone sends it, as a
            missing value, to the split's missing side), never an error.

        Returns
        -------
        Z : ndarray of shape (n_samples, n_components)
            For the training rows this reproduces ``embedding_``.
        """
        return self._fitted()._transform(X)

    def _transform(self, X):
        check_is_fitted(self, "embedding_")
        check_sparse_structure(X)
        if sparse.issparse(X) and self._codec is None:
            X = validate_data(
                self, X=X, reset=False, dtype=[np.float32, np.float64], accept_sparse=SPARSE_FORMATS
            )
            X32 = core_X(X)
        else:
            codes = self._encode_input(X, reset=False)
            X32 = np.ascontiguousarray(codes, dtype=np.float32)
        core = self._core()
        leaves = core.apply_leaves(X32, resolve_n_jobs(self.n_jobs))
        membership = _leaf_membership(leaves, self.leaf_map_.shape[0])
        total = membership @ self._leaf_mass
        total[total <= 0] = 1.0
        return (membership @ self.leaf_map_) / total[:, None]

    # -------------------------------------------------------------- decoding
    def inverse_transform(self, X):
        """Decode latent vectors back to rows of the input space.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_components)
            Latent vectors, e.g. from :meth:`transform`.

        Returns
        -------
        X_original : ndarray or DataFrame of shape (n_samples, n_features_in_)
            Same kind, columns and dtypes as the data seen in ``fit``.
        """
        return self._fitted()._inverse_transform(X)

    def _inverse_transform(self, X):
        check_is_fitted(self, "embedding_")
        Z = check_array(X, dtype=np.float64)
        if Z.shape[1] != self.embedding_.shape[1]:
            raise ValueError(
                f"X has {Z.shape[1]} latent dimensions, the embedding has "
                f"{self.embedding_.shape[1]}"
            )
        rng = np.random.default_rng(self._decode_seed)
        if self.decoder == "knn":
            codes = self._decode_knn(Z, rng)
        elif self.decoder == "relabel":
            codes = self._decode_relabel(Z, rng)
        else:
            codes = self._decode_lasso(Z, rng)
        return self._decode_output(codes)

    def _finish_samples(self, samples, weights, rng):
        """Weighted mean (numeric) / weighted mode (categorical) over axis 1."""
        out = np.einsum("mk,mkp->mp", weights, samples)
        for j in np.flatnonzero(self._n_categories):
            out[:, j] = _weighted_mode(samples[:, :, j], weights, self._n_categories[j], rng)
        return out

    def _search_coordinates(self, Z):
        """Latent vectors in the k-NN decoder's metric, shape (n, n_components).

        Each component ``j`` is rescaled from ``λ_jᵗ`` (``diffusion_time``) to ``√λ_j``:
        the kernel-PCA coordinates of the RF kernel, whose Euclidean distances are
        the best rank-``n_components`` approximation of the distances between the
        rows' kernel feature maps, ``‖φ(x) − φ(x')‖² = k(x, x) + k(x', x') − 2 k(x, x')``
        (Sect. 4.1). For a new row the Nyström embedding in these coordinates is
        exactly its kernel-PCA projection.
        """
        return Z * self.eigenvalues_ ** (0.5 - self.diffusion_time)

    def _search_index(self):
        """Nearest-neighbour index of the k-NN decoder over ``_decode_points``."""
        return NearestNeighbors().fit(self._search_coordinates(self._decode_points))

    def _decode_knn(self, Z, rng):
        k = min(self.k, self._embedding_fit.shape[0])
        out = np.empty((Z.shape[0], self._train_lower.shape[1]))
        for start in range(0, Z.shape[0], _DECODE_CHUNK):
            block = self._search_coordinates(Z[start : start + _DECODE_CHUNK])
            dist, idx = self._nn.kneighbors(block, n_neighbors=k)
            exact = dist <= 1e-12 * (1.0 + np.abs(block).max())
            with np.errstate(divide="ignore"):
                w = np.where(exact.any(axis=1, keepdims=True), exact, 1.0 / dist**2)
            w = w / w.sum(axis=1, keepdims=True)
            # each neighbour's own row: a point of its leaf-intersection box, where the
            # paper draws one at random (see Notes)
            rows = self._X_fit[idx].astype(np.float64)
            out[start : start + len(block)] = self._finish_samples(rows, w, rng)
        return out

    def _leaf_box_table(self):
        return self._core().leaf_boxes()

    def _levels_of_leaves(self):
        """:func:`_leaf_levels` of the forest's leaves, computed once (model files do not
        keep it)."""
        if getattr(self, "_leaf_levels", None) is None:
            core = self._core()
            leaves = core.apply_leaves(self._X_fit, resolve_n_jobs(self.n_jobs))
            self._leaf_levels = _leaf_levels(
                leaves, self._X_fit, self._n_categories, int(core.leaf_offsets()[-1])
            )
        return self._leaf_levels

    def _sample_regions(self, lower, upper, held, rng):
        """A point of each region: numeric columns uniform in the box ``(lower, upper]``,
        categorical column j a level drawn among those the most of the region's leaves
        hold (``held[j]``, shape (n_rows, n_categories[j] + 1): leaves holding each)."""
        out = _sample_in_boxes(lower, upper, self._col_min, self._col_max, rng)
        for j, counts in held.items():
            out[..., j] = _draw_levels(counts, rng)
        return out

    def _decode_relabel(self, Z, rng):
        core = self._core()
        if self._relabeled is None:
            self._relabeled = _relabel_forest(core, self._X_fit, self._embedding_fit)
        leaf_lower, leaf_upper = self._leaf_box_table()
        levels = self._levels_of_leaves()
        # finite boxes so that coverage counting works: clip to the training range
        span = np.maximum(self._col_max - self._col_min, 1.0)
        leaf_lower = np.maximum(leaf_lower, self._col_min - span)
        leaf_upper = np.minimum(leaf_upper, self._col_max + span)
        trees = np.flatnonzero(self.kernel_trees_)
        out = np.empty((Z.shape[0], leaf_lower.shape[1]))
        step = max(1, 4_000_000 // max(1, len(trees) * leaf_lower.shape[1]))
        for start in range(0, Z.shape[0], step):
            block = Z[start : start + step]
            leaves = core.apply_leaves_with_rules(block, *self._relabeled)[:, trees]
            lo, hi = _max_coverage_boxes(leaf_lower[leaves], leaf_upper[leaves])
            membership = _leaf_membership(leaves, leaf_lower.shape[0])
            held = {j: (membership @ table).toarray() for j, table in levels.items()}
            out[start : start + len(block)] = self._sample_regions(lo, hi, held, rng)
        return out

    def _decode_lasso(self, Z, rng):
        core = self._core()
        offsets = core.leaf_offsets()
        leaf_lower, leaf_upper = self._leaf_box_table()
        levels = self._levels_of_leaves()
        tree_of_leaf = _tree_of_leaf(offsets)
        n_trees = int(self.kernel_trees_.sum())
        train_leaves = core.apply_leaves(self._X_fit, resolve_n_jobs(self.n_jobs))
        train_leaves = train_leaves[:, self.kernel_trees_]
        s = self._leaf_weights * n_trees  # inverse leaf sizes
        # K̂₀ = Z₀ Λ Z⁺ (Sect. 4.1)
        proj = self.eigenvalues_[:, None] * np.linalg.pinv(self._embedding_fit)
        n_rows = min(_LASSO_TOP_ROWS, self._embedding_fit.shape[0])
        out = np.empty((Z.shape[0], leaf_lower.shape[1]))
        for i, z in enumerate(Z):
            k_hat = z @ proj
            top = np.argpartition(-k_hat, n_rows - 1)[:n_rows]
            rows_leaves = train_leaves[top]
            uniq, inv = np.unique(rows_leaves, return_inverse=True)
            A = np.zeros((n_rows, len(uniq)))
            A[np.repeat(np.arange(n_rows), rows_leaves.shape[1]), inv.ravel()] = s[uniq][
                inv.ravel()
            ]
            _, groups = np.unique(tree_of_leaf[uniq], return_inverse=True)
            psi = _exclusive_lasso_scores(A, n_trees * k_hat[top], groups, _LASSO_PENALTY)
            scores = np.zeros(len(tree_of_leaf))
            scores[uniq] = psi
            lo, hi, chosen = _greedy_leaf_region(scores, leaf_lower, leaf_upper, offsets, rng)
            held = {j: table[chosen].sum(axis=0).A for j, table in levels.items()}
            out[i] = self._sample_regions(lo[None], hi[None], held, rng)[0]
        return out

    # ---------------------------------------------------------------- scores
    def score(self, X, y=None):
        """Reconstruction fidelity ``1 − distortion(X, decode(encode(X)))``.

        Parameters
        ----------
        X : ndarray or DataFrame of shape (n_samples, n_features)
        y : Ignored

        Returns
        -------
        score : float
            In [0, 1], higher is better (scikit-learn's convention).
        """
        return 1.0 - self.reconstruction_distortion(X)

    def reconstruction_distortion(self, X):
        """:func:`distortion` between ``X`` and its encoded-then-decoded version."""
        est = self._fitted()  # one model for both steps, whatever fits run meanwhile
        X_hat = est._inverse_transform(est._transform(X))
        cat = None if est._codec is None else est._codec.categorical
        return distortion(X, X_hat, categorical_features=cat)

    def plot_embedding(self, X=None, labels=None, *, dims=(0, 1), ax=None, **scatter_kws):
        """Plot two dimensions of the embedding coloured by ``labels``.

        Parameters
        ----------
        X : ndarray or DataFrame, default=None
            Rows to embed with :meth:`transform`; None plots ``embedding_``.
        labels : array-like of shape (n_samples,), default=None
        dims, ax, **scatter_kws
            See :func:`plot_embedding`.

        Returns
        -------
        ax : matplotlib Axes
        """
        est = self._fitted()
        check_is_fitted(est, "embedding_")
        Z = est.embedding_ if X is None else est.transform(X)
        return plot_embedding(Z, labels, ax, dims=dims, **scatter_kws)

    @property
    def _n_features_out(self):
        return self.embedding_.shape[1]

    # ---------------------------------------------------------------- files
    def save(self, path):
        """Writes the fitted autoencoder to ``path`` in obliqueforest's safe model format.

        Read it back with :func:`obliqueforest.load`; ``obliqueforest::Model::transform``
        (Rust) computes the same embedding of new rows. An autoencoder given its own
        ``forest`` is not saved this way (pickle it).

        Parameters
        ----------
        path : str or path-like
        """
        from .._io import save

        save(self._fitted(), path)

    # ---------------------------------------------------------------- pickle
    def __getstate__(self):
        state = dict(super().__getstate__())  # a copy: never touch the live __dict__
        if isinstance(state.get("forest_"), _core.Forest):
            state["forest_"] = ("obliqueforest._core.Forest", state["forest_"].to_bytes())
        if isinstance(state.get("forest"), _core.Forest):
            state["forest"] = ("obliqueforest._core.Forest", state["forest"].to_bytes())
        return state

    def __setstate__(self, state):
        for key in ("forest_", "forest"):
            value = state.get(key)
            if isinstance(value, tuple) and value and value[0] == "obliqueforest._core.Forest":
                state[key] = _core.Forest.from_bytes(value[1])
        super().__setstate__(state)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        tags.transformer_tags.preserves_dtype = ["float64"]
        return tags
