"""The RF kernel and its diffusion map (Vu et al., Sect. 3)."""

from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from scipy.sparse.linalg import LinearOperator, eigsh

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
