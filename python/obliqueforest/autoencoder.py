"""Random forest autoencoder (RFAE): diffusion-map encoding and decoding with any forest.

A fitted forest defines the RF kernel ``K = (1/B) Π S Πᵀ`` on its training rows,
where ``Π`` (n × total leaves) is the sparse leaf-membership matrix read from the
Rust core's ``apply_leaves`` and ``S`` holds the inverse leaf sizes. ``K`` is
symmetric, doubly stochastic and positive semidefinite; its leading eigenvectors
give the diffusion map ``Z = √n V Λᵗ`` (the constant eigenvector dropped). New
rows are embedded with the Nyström formula ``Z₀ = K₀ Z Λ⁻¹``, which reduces to
one sparse product with a (total leaves × n_components) matrix precomputed at
fit time. Decoders map latent vectors back to the input space through the
forest's leaf regions (boxes computed in Rust by ``leaf_bounds``).

Exact duplicate rows are collapsed before the kernel is built (and before an
unsupervised forest is grown): copies share every leaf, and a row repeated
several times, as in a bootstrap sample, would otherwise fill leaves on its own
and become a nearly disconnected clique that captures leading eigenvectors.

The n × n kernel is never stored densely: it is applied either as a
``scipy.sparse.linalg.LinearOperator`` (two sparse products with ``Π``) or, when
leaves are small enough that the explicit product has few nonzeros, as a
sparse matrix. Only tiny problems (at most ``_DENSE_EIGEN_MAX_N`` rows) are
solved with a dense eigendecomposition.

References
----------
.. [1] B. D. Vu, J. Kapar, M. N. Wright, D. S. Watson, "Autoencoding random
   forests", 2025. Sect. 3 (encoding), Sect. 4 and Appx. B, C (decoding),
   Sect. 5 (distortion).
.. [2] D. S. Watson, K. Blesch, J. Kapar, M. N. Wright, "Adversarial random
   forests for density estimation and generative modeling", AISTATS 2023.
.. [3] R. R. Coifman, S. Lafon, "Diffusion maps", Applied and Computational
   Harmonic Analysis 21 (2006).
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from scipy.sparse.linalg import LinearOperator, eigsh
from sklearn.base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    TransformerMixin,
    clone,
)
from sklearn.neighbors import NearestNeighbors
from sklearn.utils import check_array, check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import check_is_fitted, validate_data

from . import _core
from ._progress import run_with_progress
from ._forest import resolve_n_jobs

__all__ = ["ForestAutoencoder", "distortion", "plot_embedding"]

# Problems with at most this many rows are eigendecomposed densely: the n × n
# matrix is then smaller than ARPACK's workspace and the solve is exact.
_DENSE_EIGEN_MAX_N = 64
# The explicit sparse kernel is built when its nonzeros (bounded by the sum of
# squared leaf sizes) are at most this multiple of nnz(Π): one product with it
# is then cheaper than the operator's two products with Π and Πᵀ.
_SPARSE_KERNEL_MAX_RATIO = 4.0
# ... and never when that bound exceeds this many nonzeros (memory guard).
_SPARSE_KERNEL_MAX_NNZ = 50_000_000
# Second eigenvalue closer than this to 1 means a disconnected kernel graph.
_EIGENVALUE_ONE_TOL = 1e-9
# Rows decoded per block by the k-NN decoder (bounds the k × p temporaries).
_DECODE_CHUNK = 2048
# Exclusive lasso (Appx. C): penalty, training rows kept per query, iterations.
_LASSO_PENALTY = 1e-4
_LASSO_TOP_ROWS = 100
_LASSO_ITERATIONS = 300


# --------------------------------------------------------------------------- #
# Tabular codec: numeric arrays or mixed DataFrames <-> float code matrices    #
# --------------------------------------------------------------------------- #
def _is_dataframe(X):
    return hasattr(X, "columns") and hasattr(X, "dtypes") and hasattr(X, "iloc")


def _is_categorical_dtype(dtype):
    import pandas as pd

    return (
        isinstance(dtype, pd.CategoricalDtype)
        or pd.api.types.is_bool_dtype(dtype)
        or pd.api.types.is_object_dtype(dtype)
        or pd.api.types.is_string_dtype(dtype)
    )


def _sorted_categories(values):
    uniq = list(dict.fromkeys(values.tolist()))
    try:
        return sorted(uniq)
    except TypeError:
        return sorted(uniq, key=str)


class _TabularCodec:
    """Converts a DataFrame with numeric and categorical columns to float codes.

    Categorical columns (``category``, ``object``, string and ``bool`` dtypes)
    become integer codes ``0..n_categories-1`` (the dtype's category order for
    ``category`` columns, sorted values otherwise), which is how they enter the
    trees; :meth:`decode` maps codes back to the original values and dtypes.
    """

    def fit(self, frame):
        import pandas as pd

        self.columns = list(frame.columns)
        self.dtypes = list(frame.dtypes)
        self.categories = []
        for name, dtype in zip(self.columns, self.dtypes):
            col = frame[name]
            if col.isna().any():
                raise ValueError(f"column {name!r} has missing values; impute them first")
            if isinstance(dtype, pd.CategoricalDtype):
                self.categories.append(list(dtype.categories))
            elif pd.api.types.is_bool_dtype(dtype):
                self.categories.append([False, True])
            elif _is_categorical_dtype(dtype):
                self.categories.append(_sorted_categories(col.to_numpy()))
            elif pd.api.types.is_numeric_dtype(dtype):
                self.categories.append(None)
            else:
                raise TypeError(f"column {name!r} has unsupported dtype {dtype}")
        return self

    @property
    def categorical(self):
        return np.array([c is not None for c in self.categories], dtype=bool)

    @property
    def n_categories(self):
        return np.array([0 if c is None else len(c) for c in self.categories], dtype=np.int64)

    def encode(self, frame):
        import pandas as pd

        out = np.empty((len(frame), len(self.columns)), dtype=np.float64)
        for j, (name, cats) in enumerate(zip(self.columns, self.categories)):
            col = frame[name]
            if col.isna().any():
                raise ValueError(f"column {name!r} has missing values; impute them first")
            if cats is None:
                out[:, j] = col.to_numpy(dtype=np.float64)
                continue
            values = col.astype(object).to_numpy()
            codes = pd.Categorical(values, categories=cats).codes
            if (codes < 0).any():
                unseen = sorted({str(v) for v in values[codes < 0]})[:5]
                raise ValueError(f"column {name!r} has categories unseen in fit: {unseen}")
            out[:, j] = codes
        return out

    def decode(self, codes, index=None):
        import pandas as pd

        data = {}
        for j, (name, dtype, cats) in enumerate(zip(self.columns, self.dtypes, self.categories)):
            col = codes[:, j]
            if cats is None:
                if pd.api.types.is_integer_dtype(dtype):
                    col = np.rint(col)
                data[name] = pd.Series(col, index=index).astype(dtype)
                continue
            idx = np.clip(np.rint(col), 0, len(cats) - 1).astype(np.int64)
            if isinstance(dtype, pd.CategoricalDtype):
                data[name] = pd.Series(pd.Categorical.from_codes(idx, dtype=dtype), index=index)
            else:
                values = np.empty(len(cats), dtype=object)
                values[:] = cats
                data[name] = pd.Series(values[idx], index=index).astype(dtype)
        return pd.DataFrame(data, index=index, columns=self.columns)


# --------------------------------------------------------------------------- #
# RF kernel and diffusion map (Sect. 3)                                        #
# --------------------------------------------------------------------------- #
def _leaf_membership(leaves, n_leaves):
    """Sparse leaf-membership matrix Π.

    Parameters
    ----------
    leaves : ndarray of shape (n_samples, n_trees)
        Global leaf ids from ``Forest.apply_leaves``.
    n_leaves : int
        Total number of leaves in the forest.

    Returns
    -------
    membership : csr_matrix of shape (n_samples, n_leaves)
        ``Π[i, l] = 1`` when row ``i`` falls in leaf ``l``; one entry per tree.
    """
    n, n_trees = leaves.shape
    indptr = np.arange(0, n * n_trees + 1, n_trees, dtype=np.int64)
    data = np.ones(n * n_trees, dtype=np.float64)
    return sp.csr_matrix((data, leaves.ravel(), indptr), shape=(n, n_leaves))


def _distinct_rows(X):
    """Distinct rows of ``X`` in order of first occurrence.

    Returns
    -------
    keep : ndarray of shape (n_distinct,)
        Index of the first occurrence of every distinct row, increasing.
    row_to_distinct : ndarray of shape (n_samples,)
        Position in ``keep`` of the distinct row equal to each row of ``X``.
    """
    _, first, inverse = np.unique(X, axis=0, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return first[order], rank[np.asarray(inverse).ravel()]


def _tree_of_leaf(offsets):
    """Tree index of every global leaf id, shape (total_leaves,)."""
    return np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))


def _leaf_weights(membership, offsets, keep_tree):
    """Inverse leaf sizes ``s`` on the training rows, zero for excluded trees.

    Parameters
    ----------
    membership : csr_matrix of shape (n_samples, n_leaves)
    offsets : ndarray of shape (n_trees + 1,)
        ``Forest.leaf_offsets()``.
    keep_tree : ndarray of bool, shape (n_trees,)
        Trees that enter the kernel.

    Returns
    -------
    weights : ndarray of shape (n_leaves,)
        ``1 / |leaf|`` for leaves of kept trees holding training rows, else 0.
    sizes : ndarray of shape (n_leaves,)
        Number of training rows per leaf.
    """
    sizes = np.asarray(membership.sum(axis=0)).ravel()
    weights = np.zeros_like(sizes)
    keep = (sizes > 0) & keep_tree[_tree_of_leaf(offsets)]
    weights[keep] = 1.0 / sizes[keep]
    return weights, sizes


def _kernel_operator(membership, weights, n_trees):
    """The RF kernel ``(1/B) Π diag(weights) Πᵀ`` as a symmetric LinearOperator.

    One product costs ``2 nnz(Π) = 2 n B`` flops and no n × n storage.
    """
    n = membership.shape[0]
    pi = membership.tocsr()
    pi_t = pi.T.tocsr()
    scale = weights / n_trees

    def matmat(V):
        V = np.asarray(V, dtype=np.float64)
        if V.ndim == 1:
            return pi @ (scale * (pi_t @ V))
        return pi @ (scale[:, None] * (pi_t @ V))

    return LinearOperator(
        (n, n), matvec=matmat, matmat=matmat, rmatvec=matmat, rmatmat=matmat, dtype=np.float64
    )


def _kernel_sparse(membership, weights, n_trees):
    """The RF kernel ``(1/B) Π diag(weights) Πᵀ`` as an explicit sparse matrix."""
    pi = membership.tocsr()
    left = pi @ sp.diags(weights / n_trees)
    return (left @ pi.T.tocsc()).tocsr()


def _kernel_nnz_bound(sizes, weights):
    """Upper bound on the explicit kernel's nonzeros: Σ over kernel leaves of size²."""
    used = weights > 0
    return float(np.sum(sizes[used] ** 2))


def _kernel(membership, weights, n_trees, method="auto"):
    """Choose the kernel representation by its expected number of nonzeros.

    Returns
    -------
    kernel : LinearOperator or csr_matrix of shape (n_samples, n_samples)
    method : {"operator", "sparse"}
    """
    if method == "auto":
        bound = _kernel_nnz_bound(np.asarray(membership.sum(axis=0)).ravel(), weights)
        cheap = bound <= _SPARSE_KERNEL_MAX_RATIO * membership.nnz
        method = "sparse" if cheap and bound <= _SPARSE_KERNEL_MAX_NNZ else "operator"
    if method == "sparse":
        return _kernel_sparse(membership, weights, n_trees), method
    return _kernel_operator(membership, weights, n_trees), method


def _kernel_graph_components(membership, weights):
    """Connected components of the kernel graph (rows linked through shared leaves).

    The kernel's eigenvalue 1 has multiplicity equal to this count; computed
    exactly on the bipartite row-leaf graph, never on the n × n kernel.
    """
    pi = membership.tocsc()[:, weights > 0]
    n, _n_leaves = pi.shape
    graph = sp.bmat([[None, pi], [pi.T, None]], format="csr")
    _n_comp, labels = connected_components(graph, directed=False)
    # Leaves without rows do not exist here, so every component holds a row.
    return len(np.unique(labels[:n]))


def _top_eigenpairs(kernel, n_eig, rng):
    """Largest ``n_eig`` eigenpairs of the symmetric PSD kernel, descending.

    Returns
    -------
    eigenvalues : ndarray of shape (n_eig,)
    eigenvectors : ndarray of shape (n_samples, n_eig)
        Orthonormal columns.
    """
    n = kernel.shape[0]
    if n <= _DENSE_EIGEN_MAX_N or n_eig >= n - 1:
        if sp.issparse(kernel):
            dense = kernel.toarray()
        else:
            dense = kernel @ np.eye(n)
        dense = (dense + dense.T) / 2
        vals, vecs = scipy.linalg.eigh(dense, subset_by_index=[n - n_eig, n - 1])
    else:
        v0 = rng.uniform(-1.0, 1.0, size=n)
        ncv = min(n, max(2 * n_eig + 1, 32))
        vals, vecs = eigsh(kernel, k=n_eig, which="LA", v0=v0, ncv=ncv, tol=1e-10)
    order = np.argsort(vals)[::-1]
    return vals[order], vecs[:, order]


def _fix_signs(vectors):
    """Flip each column so that its entry of largest magnitude is positive."""
    idx = np.argmax(np.abs(vectors), axis=0)
    signs = np.sign(vectors[idx, np.arange(vectors.shape[1])])
    signs[signs == 0] = 1.0
    return vectors * signs


def _diffusion_map(eigenvalues, eigenvectors, diffusion_time):
    """``Z = √n V Λᵗ`` for the non-trivial eigenpairs, shape (n_samples, n_components)."""
    n = eigenvectors.shape[0]
    return np.sqrt(n) * eigenvectors * eigenvalues**diffusion_time


def _nystroem_leaf_map(membership, weights, n_trees, embedding, eigenvalues):
    """``W = (1/B) S Πᵀ Z Λ⁻¹``, so that the Nyström embedding is ``Π₀ W``.

    Returns
    -------
    leaf_map : ndarray of shape (n_leaves, n_components)
    """
    return (weights / n_trees)[:, None] * (membership.T @ embedding) / eigenvalues


# --------------------------------------------------------------------------- #
# Forests                                                                       #
# --------------------------------------------------------------------------- #
def _forest_params(
    *, task, n_classes, n_estimators, max_features, min_samples_leaf, max_depth, seed, n_jobs, oob
):
    return {
        "task": task,
        "n_classes": n_classes,
        "criterion": "gini" if task == "classification" else "squared_error",
        "projection": {"kind": "axis"},
        "max_features": max_features,
        "n_estimators": n_estimators,
        "max_depth": max_depth,
        "min_samples_split": 2,
        "min_samples_leaf": min_samples_leaf,
        "min_weight_fraction_leaf": 0.0,
        "min_impurity_decrease": 0.0,
        "max_leaf_nodes": None,
        "bootstrap": True,
        "max_samples": None,
        "class_weight_subsample": False,
        "oob": oob,
        "seed": int(seed),
        "n_jobs": int(n_jobs),
    }


def _oob_accuracy(forest, y):
    """Out-of-bag accuracy of a fitted classification forest (rows with OOB trees)."""
    sums, counts = forest.oob_prediction()
    seen = counts > 0
    if not seen.any():
        return 1.0
    return float(np.mean(np.argmax(sums[seen], axis=1) == y[seen]))


def _sample_marginals(X, rng):
    """Rows drawn from the product of the columns' marginals, shape of ``X``."""
    n = X.shape[0]
    idx = rng.integers(0, n, size=X.shape)
    return np.take_along_axis(X, idx, axis=0)


def _sample_leaf_marginals(forest, X, rng, n_jobs):
    """ARF synthesis: per synthetic row, a random tree and a leaf drawn in proportion
    to its real rows, then every column drawn independently from the leaf's real rows.

    Parameters
    ----------
    forest : _core.Forest
    X : ndarray of shape (n_samples, n_features), float32
        Real rows.

    Returns
    -------
    X_synth : ndarray of shape (n_samples, n_features)
    """
    n, p = X.shape
    leaves = forest.apply_leaves(X, n_jobs)
    n_trees = leaves.shape[1]
    flat = leaves.ravel()
    order = np.argsort(flat, kind="stable")
    sorted_leaves = flat[order]
    rows_by_leaf = order // n_trees
    tree = rng.integers(0, n_trees, size=n)
    anchor = rng.integers(0, n, size=n)
    leaf = leaves[anchor, tree]
    start = np.searchsorted(sorted_leaves, leaf, side="left")
    count = np.searchsorted(sorted_leaves, leaf, side="right") - start
    pos = start[:, None] + (rng.random((n, p)) * count[:, None]).astype(np.int64)
    return X[rows_by_leaf[pos], np.arange(p)[None, :]]


def _fit_core(X, y, params, verbose, desc="trees"):
    """Grows a core forest, with a progress bar of trees when ``verbose``."""
    return run_with_progress(
        lambda progress: _core.Forest.fit(X, y, None, params, progress),
        params["n_estimators"],
        verbose,
        desc,
    )


def _grow_adversarial_forest(X, base_params, delta, max_iter, rng, n_jobs, verbose=0):
    """Adversarial random forest (Watson et al. 2023).

    A first forest discriminates real rows from rows drawn from the product of
    the columns' marginals; then, for up to ``max_iter`` rounds, synthetic rows
    are redrawn from the product of the current forest's per-leaf marginals and
    a new forest discriminates them. The loop stops when the new forest's OOB
    accuracy is at most ``0.5 + delta``, when it no longer improves on the
    previous round, or after ``max_iter`` rounds.

    As in the reference implementation (R package ``arf``), the forest returned
    is the *generator* of the last round, the one whose leaves produced the
    synthetic rows the last discriminator was tested on, not that discriminator:
    its leaves are the (approximately) fully factorised regions.

    Returns
    -------
    forest : _core.Forest
    accuracies : list of float
        OOB accuracy of every forest trained, the initial one first.
    """
    n = X.shape[0]
    y = np.concatenate([np.ones(n), np.zeros(n)])
    labels = y.astype(np.int64)

    def discriminate(synth):
        params = dict(base_params, seed=int(rng.integers(0, 2**31 - 1)))
        forest = _fit_core(np.vstack([X, synth]), y, params, verbose, "ARF round")
        return forest, _oob_accuracy(forest, labels)

    forest, acc = discriminate(_sample_marginals(X, rng))
    accuracies = [acc]
    if acc <= 0.5 + delta:
        return forest, accuracies
    for round_ in range(max_iter):
        synth = _sample_leaf_marginals(forest, X, rng, n_jobs).astype(np.float32)
        candidate, acc = discriminate(synth)
        accuracies.append(acc)
        # indistinguishable, no longer improving (arf's early stop) or out of
        # rounds: keep the generator, as arf does
        if acc <= 0.5 + delta or acc >= accuracies[-2] or round_ == max_iter - 1:
            break
        forest = candidate
    return forest, accuracies


def _core_forest(forest):
    """The ``_core.Forest`` behind a fitted estimator of this library (or itself)."""
    if isinstance(forest, _core.Forest):
        return forest
    inner = getattr(forest, "_forest", None)
    if isinstance(inner, _core.Forest):
        return inner
    raise TypeError(
        f"forest must be an estimator of obliqueforest (with a `_forest` core forest) "
        f"or a `_core.Forest`, got {type(forest).__name__}"
    )


def _is_fitted_forest(forest):
    return isinstance(forest, _core.Forest) or isinstance(
        getattr(forest, "_forest", None), _core.Forest
    )


# --------------------------------------------------------------------------- #
# Leaf regions and sampling (Sect. 4)                                          #
# --------------------------------------------------------------------------- #
def _sample_in_boxes(lower, upper, col_min, col_max, n_categories, rng):
    """Draw one point uniformly from each box ``(lower, upper]``.

    Boxes are clipped to the training range of each column. Categorical columns
    (``n_categories > 0``) draw an integer code uniformly among those inside
    the box; a box holding no valid code falls back to the nearest code.

    Parameters
    ----------
    lower, upper : ndarray of shape (..., n_features)
    col_min, col_max : ndarray of shape (n_features,)
    n_categories : ndarray of shape (n_features,)
        0 for numeric columns.
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
    u = rng.random(lo.shape)
    out = lo + u * (hi - lo)
    cat = n_categories > 0
    if cat.any():
        kmax = (n_categories[cat] - 1).astype(np.float64)
        c_lo = np.clip(np.floor(lower[..., cat]) + 1.0, 0.0, kmax)
        c_hi = np.clip(np.floor(upper[..., cat]), 0.0, kmax)
        c_hi = np.maximum(c_hi, c_lo)
        out[..., cat] = c_lo + np.floor(u[..., cat] * (c_hi - c_lo + 1.0))
        out[..., cat] = np.minimum(out[..., cat], c_hi)
    return out


def _weighted_mode(codes, weights, n_cat, rng):
    """Weighted mode per row, ties broken at random.

    Parameters
    ----------
    codes : ndarray of shape (n_rows, n_votes)
    weights : ndarray of shape (n_rows, n_votes)

    Returns
    -------
    mode : ndarray of shape (n_rows,)
    """
    m = codes.shape[0]
    votes = np.zeros((m, n_cat))
    rows = np.repeat(np.arange(m), codes.shape[1])
    np.add.at(votes, (rows, codes.astype(np.int64).ravel()), weights.ravel())
    votes += rng.random(votes.shape) * 1e-9 * (votes.max(axis=1, keepdims=True) + 1e-300)
    return np.argmax(votes, axis=1).astype(np.float64)


def _leaf_boxes(forest, n_features):
    """Per-leaf boxes ``(lower, upper]`` from the axis-aligned splits on each path.

    Oblique (multi-feature) splits leave the box unconstrained, as in
    ``Forest.leaf_bounds``.

    Returns
    -------
    lower, upper : ndarray of shape (total_leaves, n_features)
    """
    offsets = forest.leaf_offsets()
    lower = np.full((offsets[-1], n_features), -np.inf)
    upper = np.full((offsets[-1], n_features), np.inf)
    for t in range(forest.n_trees):
        nodes = forest.tree_nodes(t)
        left, right = nodes["left"], nodes["right"]
        ptr, feats, wts = nodes["proj_ptr"], nodes["proj_features"], nodes["proj_weights"]
        thr = nodes["threshold"]
        rank = np.cumsum(left < 0) - 1
        stack = [(0, np.full(n_features, -np.inf), np.full(n_features, np.inf))]
        while stack:
            node, lo, hi = stack.pop()
            if left[node] < 0:
                gid = offsets[t] + rank[node]
                lower[gid], upper[gid] = lo, hi
                continue
            llo, lhi, rlo, rhi = lo, hi.copy(), lo.copy(), hi
            a, b = ptr[node], ptr[node + 1]
            if b - a == 1 and wts[a] != 0:
                f, cut = feats[a], thr[node] / wts[a]
                if wts[a] > 0:
                    lhi[f] = min(lhi[f], cut)
                    rlo[f] = max(rlo[f], cut)
                else:
                    llo = lo.copy()
                    llo[f] = max(llo[f], cut)
                    rhi = hi.copy()
                    rhi[f] = min(rhi[f], cut)
            stack.append((left[node], llo, lhi))
            stack.append((right[node], rlo, rhi))
    return lower, upper


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
    X : ndarray of shape (n_samples, n_features)
        Training rows (codes), used to label each split's left/right side.
    Z : ndarray of shape (n_samples, n_components)
        Their embedding.

    Returns
    -------
    trees : list of tuple
        Per tree ``(left, right, dim, threshold, flip)``; a latent row goes left
        at a node when ``(z[dim] <= threshold) != flip``.
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
    trees = []
    for t in range(forest.n_trees):
        nodes = forest.tree_nodes(t)
        left, right = nodes["left"], nodes["right"]
        ptr, feats, wts = nodes["proj_ptr"], nodes["proj_features"], nodes["proj_weights"]
        dim = np.zeros(len(left), dtype=np.int64)
        thr = np.zeros(len(left))
        flip = np.zeros(len(left), dtype=bool)
        for node in np.flatnonzero(left >= 0):
            a, b = ptr[node], ptr[node + 1]
            goes_left = X[:, feats[a:b]] @ wts[a:b] <= nodes["threshold"][node]
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
        trees.append((left, right, dim, thr, flip))
    return trees


def _relabeled_leaves(trees, offsets, Z):
    """Global leaf ids reached by latent rows in the relabeled trees, shape (m, n_trees)."""
    m = Z.shape[0]
    out = np.empty((m, len(trees)), dtype=np.int64)
    rows = np.arange(m)
    for t, (left, right, dim, thr, flip) in enumerate(trees):
        node = np.zeros(m, dtype=np.int64)
        active = rows[left[node] >= 0]
        while len(active):
            nd = node[active]
            go_left = (Z[active, dim[nd]] <= thr[nd]) != flip[nd]
            node[active] = np.where(go_left, left[nd], right[nd])
            active = active[left[node[active]] >= 0]
        rank = np.cumsum(left < 0) - 1
        out[:, t] = offsets[t] + rank[node]
    return out


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
    """
    n_trees = len(offsets) - 1
    best = np.maximum.reduceat(scores, offsets[:-1]) if len(scores) else np.zeros(n_trees)
    order = np.lexsort((rng.random(n_trees), -best))
    lo = np.full(leaf_lower.shape[1], -np.inf)
    hi = np.full(leaf_lower.shape[1], np.inf)
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
    return lo, hi


# --------------------------------------------------------------------------- #
# Distortion (Sect. 5)                                                          #
# --------------------------------------------------------------------------- #
def distortion(X_true, X_pred, *, categorical_features=None, per_column=False):
    """Reconstruction distortion of Vu et al. (2025), Sect. 5.

    The mean over columns of ``1 − R²`` for numeric columns (the share of
    variance left unexplained, ``SS_res / SS_tot``, clipped to [0, 1] so that
    a reconstruction worse than the column mean counts as 1) and the error rate
    for categorical columns. The result lies in [0, 1]; 0 is a perfect
    reconstruction.

    Parameters
    ----------
    X_true, X_pred : ndarray or DataFrame of shape (n_samples, n_features)
        Original and reconstructed data, same columns. With DataFrames,
        ``category``, ``object``, string and ``bool`` columns are categorical.
    categorical_features : array-like of bool or int, default=None
        Mask or indices of categorical columns; overrides the dtypes.
    per_column : bool, default=False
        Return the per-column distortions instead of their mean.

    Returns
    -------
    distortion : float or ndarray of shape (n_features,)

    References
    ----------
    .. [1] Vu et al., "Autoencoding random forests", Sect. 5 and Appx. B.1.
    """
    if _is_dataframe(X_true):
        cols_true = [X_true[c].to_numpy() for c in X_true.columns]
        cat = np.array([_is_categorical_dtype(X_true[c].dtype) for c in X_true.columns])
    else:
        arr = np.asarray(X_true)
        arr = arr.reshape(-1, 1) if arr.ndim == 1 else arr
        cols_true = [arr[:, j] for j in range(arr.shape[1])]
        cat = np.array([arr.dtype.kind in "OUSb"] * arr.shape[1], dtype=bool)
    if _is_dataframe(X_pred):
        cols_pred = [X_pred[c].to_numpy() for c in X_pred.columns]
    else:
        arr = np.asarray(X_pred)
        arr = arr.reshape(-1, 1) if arr.ndim == 1 else arr
        cols_pred = [arr[:, j] for j in range(arr.shape[1])]
    if len(cols_true) != len(cols_pred):
        raise ValueError(f"X_true has {len(cols_true)} columns but X_pred has {len(cols_pred)}")
    if categorical_features is not None:
        mask = np.asarray(categorical_features)
        if mask.dtype != bool:
            idx, mask = mask, np.zeros(len(cols_true), dtype=bool)
            mask[idx] = True
        cat = mask
    scores = np.empty(len(cols_true))
    for j, (t, p) in enumerate(zip(cols_true, cols_pred)):
        if len(t) != len(p):
            raise ValueError("X_true and X_pred must have the same number of rows")
        if cat[j]:
            scores[j] = np.mean(np.asarray(t, dtype=object) != np.asarray(p, dtype=object))
            continue
        t = np.asarray(t, dtype=np.float64)
        p = np.asarray(p, dtype=np.float64)
        ss_res = np.sum((t - p) ** 2)
        ss_tot = np.sum((t - t.mean()) ** 2)
        if ss_tot == 0:
            scores[j] = 0.0 if ss_res == 0 else 1.0
        else:
            scores[j] = min(ss_res / ss_tot, 1.0)
    return scores if per_column else float(scores.mean())


def plot_embedding(embedding, labels=None, *, dims=(0, 1), ax=None, **scatter_kws):
    """Scatter plot of two embedding dimensions, coloured by a label.

    Parameters
    ----------
    embedding : ndarray of shape (n_samples, n_components)
    labels : array-like of shape (n_samples,), default=None
        Categorical labels get one colour each with a legend; numeric labels a
        colour bar.
    dims : tuple of int, default=(0, 1)
        The two embedding dimensions to plot.
    ax : matplotlib Axes, default=None
    **scatter_kws
        Passed to ``Axes.scatter``.

    Returns
    -------
    ax : matplotlib Axes
    """
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "plot_embedding needs matplotlib; install it with `pip install matplotlib`"
        ) from exc
    Z = np.asarray(embedding)
    if ax is None:
        _, ax = plt.subplots()
    i, j = dims
    scatter_kws.setdefault("s", 10)
    if labels is None:
        ax.scatter(Z[:, i], Z[:, j], **scatter_kws)
    else:
        labels = np.asarray(labels)
        if labels.dtype.kind in "fiu" and len(np.unique(labels)) > 10:
            points = ax.scatter(Z[:, i], Z[:, j], c=labels, **scatter_kws)
            ax.figure.colorbar(points, ax=ax)
        else:
            for value in np.unique(labels):
                sel = labels == value
                ax.scatter(Z[sel, i], Z[sel, j], label=str(value), **scatter_kws)
            ax.legend(title="label", fontsize="small")
    ax.set_xlabel(f"KPC{i + 1}")
    ax.set_ylabel(f"KPC{j + 1}")
    return ax


# --------------------------------------------------------------------------- #
# The estimator                                                                 #
# --------------------------------------------------------------------------- #
class ForestAutoencoder(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Random forest autoencoder: diffusion-map encoder and forest-based decoders.

    ``fit`` grows (or takes) a forest, builds its RF kernel from the leaf
    memberships of the training rows, and keeps the top ``n_components``
    non-trivial eigenpairs as a diffusion map. ``transform`` embeds any rows
    with the Nyström formula; ``inverse_transform`` decodes latent vectors
    back to rows of the input's kind (array or DataFrame, same columns and
    dtypes).

    Parameters
    ----------
    n_components : int, default=2
        Latent dimension ``d_Z``.
    diffusion_time : float, default=1.0
        Diffusion time ``t`` in ``Z = √n V Λᵗ``.
    decoder : {"knn", "relabel", "lasso"}, default="knn"
        ``"knn"``: weighted mean (mode for categorical columns) of points drawn
        uniformly in the leaf-intersection regions of the ``k`` nearest training
        embeddings, weights inversely proportional to distance. ``"relabel"``:
        every split relabeled as the best-matching axis split in latent space
        (global variant, Appx. B.2), latent rows routed through the relabeled
        trees, the agreed region sampled. ``"lasso"``: exclusive-lasso leaf scores
        and greedy consistent leaf assignment (Appx. C). ``"relabel"`` and
        ``"lasso"`` are much slower than ``"knn"`` and meant for small data.
    k : int, default=20
        Number of neighbours of the k-NN decoder.
    forest : estimator or None, default=None
        A forest estimator of this library, fitted or not. An unfitted one is
        cloned and fitted on ``(X, y)`` (``y`` required); a fitted one is used
        as is and must have been fitted on the columns of ``X`` in order, with
        categorical columns as the integer codes this class uses. ``None``
        grows the forest here: supervised on ``y`` when ``y`` is given
        (classification for class labels, regression otherwise), else as
        chosen by ``unsupervised``.
    unsupervised : {"adversarial", "random"}, default="adversarial"
        The forest grown when ``forest`` is None and ``y`` is None.
        ``"adversarial"``: an adversarial random forest (Watson et al. 2023),
        rounds of real-versus-synthetic classification with synthetic rows drawn
        from the product of per-leaf marginals, until the OOB accuracy is at
        most ``0.5 + arf_delta`` or stops improving; the last round's generator
        is kept. ``"random"``: a completely random forest (each split on one
        random feature fitted to pure noise), one fit only.
    n_estimators : int, default=200
        Trees of a forest grown here.
    min_samples_leaf : int, default=5
        Minimum leaf size of a forest grown here. Small leaves make the kernel
        close to the identity and the embedding uninformative; keep several
        rows per leaf.
    max_features : {"sqrt", "log2"}, int, float or None, default="sqrt"
        Candidate features per split of an adversarial or supervised forest.
    max_depth : int or None, default=None
        Maximum depth of a forest grown here.
    arf_delta : float, default=0.0
        Tolerance of the adversarial stopping rule.
    arf_max_iter : int, default=10
        Maximum number of adversarial rounds after the first forest (each
        resynthesises the data from the current forest's leaves and trains a
        new discriminator), as ``max_iters`` of the R package ``arf``.
    kernel : {"auto", "operator", "sparse"}, default="auto"
        How the n × n kernel is applied: as a LinearOperator (two products with
        the sparse leaf matrix), as an explicit sparse matrix, or chosen by the
        expected number of nonzeros. It is never stored densely.
    collapse_duplicates : bool, default=True
        Build the kernel and diffusion map on the distinct rows of ``X`` (copies
        get their row's embedding, and the k-NN decoder searches distinct rows),
        and grow an unsupervised forest on the distinct rows. Copies of a row
        share every leaf of every forest, so they add no geometric information;
        kept, a row repeated m times (as in a bootstrap sample, where a third
        of the rows are repeats) can fill whole leaves by itself, which makes it
        an almost disconnected clique of the kernel graph: its leading
        eigenvectors then localise on a handful of such cliques and the latent
        dimensions are wasted on them. A supervised forest is still grown on
        every row and its label. ``False`` uses every row as given.
    random_state : int, RandomState instance or None, default=None
        Seeds the forest, the eigensolver's start vector and decoding draws.
    n_jobs : int or None, default=None
        Threads for growing and applying the forest (None means 1, -1 all).
    verbose : int, default=0
        Show a progress bar of the trees grown (every adversarial round has its own).

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
    ``t = 1``): 200 trees and ``min_samples_leaf=5`` (counted over real and
    synthetic rows) here. 500 trees gave the same distortion within noise;
    leaves of 1-2 rows made the kernel nearly block-diagonal (leading
    eigenvalues above 0.93) and the distortion clearly worse. With duplicate
    rows collapsed and the ``arf`` generator kept, ``benches/rfae_compression.py``
    (10 bootstraps) measures the mean distortion recorded in
    ``benches/results/rfae_compression.txt`` (breast cancer: paper 0.333).

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

    _parameter_constraints = {  # noqa: RUF012 (scikit-learn convention)
        "n_components": [Interval(numbers.Integral, 1, None, closed="left")],
        "diffusion_time": [Interval(numbers.Real, 0, None, closed="left")],
        "decoder": [StrOptions({"knn", "relabel", "lasso"})],
        "k": [Interval(numbers.Integral, 1, None, closed="left")],
        "forest": "no_validation",
        "unsupervised": [StrOptions({"adversarial", "random"})],
        "n_estimators": [Interval(numbers.Integral, 1, None, closed="left")],
        "min_samples_leaf": [Interval(numbers.Integral, 1, None, closed="left")],
        "max_features": [
            None,
            StrOptions({"sqrt", "log2"}),
            Interval(numbers.Integral, 1, None, closed="left"),
            Interval(numbers.Real, 0, 1, closed="right"),
        ],
        "max_depth": [None, Interval(numbers.Integral, 1, None, closed="left")],
        "arf_delta": [Interval(numbers.Real, 0, 0.5, closed="both")],
        "arf_max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "kernel": [StrOptions({"auto", "operator", "sparse"})],
        "collapse_duplicates": ["boolean"],
        "random_state": ["random_state"],
        "n_jobs": [None, numbers.Integral],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        n_components=2,
        *,
        diffusion_time=1.0,
        decoder="knn",
        k=20,
        forest=None,
        unsupervised="adversarial",
        n_estimators=200,
        min_samples_leaf=5,
        max_features="sqrt",
        max_depth=None,
        arf_delta=0.0,
        arf_max_iter=10,
        kernel="auto",
        collapse_duplicates=True,
        random_state=None,
        n_jobs=None,
        verbose=0,
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

    # ----------------------------------------------------------------- input
    def _encode_input(self, X, reset):
        """Validate ``X`` and return its float64 code matrix, shape (n, n_features)."""
        if _is_dataframe(X):
            validate_data(self, X=X, skip_check_array=True, reset=reset)
            if reset:
                self._codec = _TabularCodec().fit(X)
            elif self._codec is None:
                X = validate_data(self, X=X, reset=False, dtype=np.float64)
                return np.asarray(X, dtype=np.float64)
            codes = self._codec.encode(X)
            if not np.all(np.isfinite(codes)):
                raise ValueError("Input X contains NaN or infinity.")
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
    def _grow_forest(self, X32, y, rng, n_jobs):
        base = {
            "n_estimators": self.n_estimators,
            "min_samples_leaf": self.min_samples_leaf,
            "max_depth": self.max_depth,
            "n_jobs": n_jobs,
        }
        self.arf_accuracies_ = []
        if self.forest is not None:
            if _is_fitted_forest(self.forest):
                forest = self.forest
                if _core_forest(forest).n_features != X32.shape[1]:
                    raise ValueError(
                        f"the fitted forest has {_core_forest(forest).n_features} features, "
                        f"X has {X32.shape[1]}"
                    )
                return forest
            if y is None:
                raise ValueError(
                    "an unfitted `forest` is fitted on (X, y) and needs y; pass y, a fitted "
                    "forest, or forest=None for an unsupervised forest"
                )
            forest = clone(self.forest)
            if "random_state" in forest.get_params() and forest.random_state is None:
                forest.set_params(random_state=int(rng.integers(0, 2**31 - 1)))
            return forest.fit(X32, y)
        seed = int(rng.integers(0, 2**31 - 1))
        if y is not None:
            y = np.asarray(y)
            if y.ndim != 1 and not (y.ndim == 2 and y.shape[1] == 1):
                raise ValueError("y must be one-dimensional for a supervised forest")
            y = y.ravel()
            if len(y) != len(X32):
                raise ValueError(f"X has {len(X32)} rows but y has {len(y)}")
            if type_of_target(y) in ("binary", "multiclass"):
                classes, codes = np.unique(y, return_inverse=True)
                params = _forest_params(
                    task="classification",
                    n_classes=len(classes),
                    max_features=self.max_features,
                    seed=seed,
                    oob=False,
                    **base,
                )
                return _fit_core(X32, codes.astype(np.float64), params, self.verbose)
            params = _forest_params(
                task="regression",
                n_classes=0,
                max_features=self.max_features,
                seed=seed,
                oob=False,
                **base,
            )
            return _fit_core(X32, y.astype(np.float64), params, self.verbose)
        if self.unsupervised == "random":
            noise = rng.standard_normal(len(X32))
            params = _forest_params(
                task="regression", n_classes=0, max_features=1, seed=seed, oob=False, **base
            )
            return _fit_core(X32, noise, params, self.verbose)
        params = _forest_params(
            task="classification",
            n_classes=2,
            max_features=self.max_features,
            seed=seed,
            oob=True,
            **base,
        )
        forest, self.arf_accuracies_ = _grow_adversarial_forest(
            X32, params, self.arf_delta, self.arf_max_iter, rng, n_jobs, self.verbose
        )
        return forest

    def _core(self):
        return _core_forest(self.forest_)

    # ------------------------------------------------------------------- fit
    def fit(self, X, y=None):
        """Grow or take the forest and compute the diffusion map of ``X``.

        Parameters
        ----------
        X : ndarray or DataFrame of shape (n_samples, n_features)
            Numeric array, or DataFrame mixing numeric and categorical columns.
        y : array-like of shape (n_samples,), default=None
            Target for a supervised forest; None for an unsupervised one.

        Returns
        -------
        self : ForestAutoencoder
        """
        self._validate_params()
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
        forest_X, forest_y = (X_all, y) if y is not None else (X32, None)
        self.forest_ = self._grow_forest(forest_X, forest_y, rng, n_jobs)
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
        self._col_min = codes.min(axis=0)
        self._col_max = codes.max(axis=0)
        self._n_categories = (
            np.zeros(codes.shape[1], dtype=np.int64)
            if self._codec is None
            else self._codec.n_categories
        )
        self._nn = NearestNeighbors().fit(self._embedding_fit)
        self._decode_seed = int(rng.integers(0, 2**63 - 1))
        self._relabeled = None
        return self

    def fit_transform(self, X, y=None):
        """Fit and return the diffusion map of ``X``, shape (n_samples, n_components)."""
        return self.fit(X, y).embedding_.copy()

    # -------------------------------------------------------------- encoding
    def transform(self, X):
        """Embed rows with the Nyström formula ``Z₀ = K₀ Z Λ⁻¹``.

        Parameters
        ----------
        X : ndarray or DataFrame of shape (n_samples, n_features)

        Returns
        -------
        Z : ndarray of shape (n_samples, n_components)
            For the training rows this reproduces ``embedding_``.
        """
        check_is_fitted(self, "embedding_")
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

    def _decode_knn(self, Z, rng):
        k = min(self.k, self._embedding_fit.shape[0])
        out = np.empty((Z.shape[0], self._train_lower.shape[1]))
        for start in range(0, Z.shape[0], _DECODE_CHUNK):
            block = Z[start : start + _DECODE_CHUNK]
            dist, idx = self._nn.kneighbors(block, n_neighbors=k)
            exact = dist <= 1e-12 * (1.0 + np.abs(block).max())
            with np.errstate(divide="ignore"):
                w = np.where(exact.any(axis=1, keepdims=True), exact, 1.0 / dist)
            w = w / w.sum(axis=1, keepdims=True)
            samples = _sample_in_boxes(
                self._train_lower[idx],
                self._train_upper[idx],
                self._col_min,
                self._col_max,
                self._n_categories,
                rng,
            )
            out[start : start + len(block)] = self._finish_samples(samples, w, rng)
        return out

    def _leaf_box_table(self):
        core = self._core()
        lower, upper = _leaf_boxes(core, self._X_fit.shape[1])
        return lower, upper

    def _sample_regions(self, lower, upper, rng):
        return _sample_in_boxes(lower, upper, self._col_min, self._col_max, self._n_categories, rng)

    def _decode_relabel(self, Z, rng):
        core = self._core()
        if self._relabeled is None:
            self._relabeled = _relabel_forest(
                core, self._X_fit.astype(np.float64), self._embedding_fit
            )
        leaf_lower, leaf_upper = self._leaf_box_table()
        # finite boxes so that coverage counting works: clip to the training range
        span = np.maximum(self._col_max - self._col_min, 1.0)
        leaf_lower = np.maximum(leaf_lower, self._col_min - span)
        leaf_upper = np.minimum(leaf_upper, self._col_max + span)
        offsets = core.leaf_offsets()
        trees = np.flatnonzero(self.kernel_trees_)
        out = np.empty((Z.shape[0], leaf_lower.shape[1]))
        step = max(1, 4_000_000 // max(1, len(trees) * leaf_lower.shape[1]))
        for start in range(0, Z.shape[0], step):
            block = Z[start : start + step]
            leaves = _relabeled_leaves([self._relabeled[t] for t in trees], offsets[trees], block)
            lo, hi = _max_coverage_boxes(leaf_lower[leaves], leaf_upper[leaves])
            out[start : start + len(block)] = self._sample_regions(lo, hi, rng)
        return out

    def _decode_lasso(self, Z, rng):
        core = self._core()
        offsets = core.leaf_offsets()
        leaf_lower, leaf_upper = self._leaf_box_table()
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
            lo, hi = _greedy_leaf_region(scores, leaf_lower, leaf_upper, offsets, rng)
            out[i] = self._sample_regions(lo, hi, rng)
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
        X_hat = self.inverse_transform(self.transform(X))
        cat = None if self._codec is None else self._codec.categorical
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
        check_is_fitted(self, "embedding_")
        Z = self.embedding_ if X is None else self.transform(X)
        return plot_embedding(Z, labels, dims=dims, ax=ax, **scatter_kws)

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
        from ._io import save

        save(self, path)

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
