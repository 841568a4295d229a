"""Per-tree access to a fitted rotation ensemble, as scikit-learn's forests offer it.

A rotation ensemble is a forest of axis-aligned trees, each grown on one rotation of the
scaled data. ``estimators_`` lists its trees rotation by rotation (in the order of
``rotations_``; within a rotation, in the order the core grew them), which is the order
of ``apply``, ``decision_path`` and ``estimators_samples_``. Each tree is a
:class:`RotationTree`: the plain forests' :class:`~obliqueforest._trees.ForestTree` over
its rotation's core forest, reading X through the ensemble's scaling and rotation, so its
``predict``, ``predict_proba``, ``apply`` and ``decision_path`` take X as the ensemble
does. The ensemble weighs every tree equally, so the mean of the trees' predictions is
the ensemble's::

    per_tree = np.stack([t.predict_proba(X) for t in ensemble])  # (M, n_samples, n_classes)
    per_tree.mean(axis=0)                                         # == ensemble.predict_proba(X)
"""

from __future__ import annotations

import numpy as np
from scipy import sparse
from sklearn.utils.validation import check_is_fitted

from ._trees import ForestTree, PerTreeMixin

__all__ = ["RotationTree"]


class _RotationSource:
    """What a :class:`ForestTree` reads from the forest it came from, for rotation ``k`` of
    a rotation ensemble: that rotation's core forest as ``_forest``, and X validated,
    scaled and rotated as the ensemble's prediction does it."""

    def __init__(self, ensemble, k: int):
        self._ensemble = ensemble
        self._k = k
        self._forests = ensemble._forests
        self._forest = ensemble._forests[k]
        self.n_features_in_ = ensemble.n_features_in_
        if hasattr(ensemble, "classes_"):
            self.classes_ = ensemble.classes_
            self.n_classes_ = ensemble.n_classes_

    def get_params(self, deep=False):
        return self._ensemble.get_params(deep=deep)

    def __getattr__(self, name):
        # the tree parameters a ForestTree reads from its forest are the ensemble's
        if not name.startswith("_") and name in self._ensemble.get_params(deep=False):
            return getattr(self._ensemble, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _n_threads(self) -> int:
        return self._ensemble._n_threads()

    def check_current(self):
        if self._ensemble.__dict__.get("_forests") is not self._forests:
            raise ValueError(
                "the rotation ensemble this tree came from was refitted; take the tree "
                "from it again"
            )

    def _validate_X_predict(self, X):
        self.check_current()
        return self._ensemble._rotate(self._ensemble._scaled_input(X), self._k)


class RotationTree(ForestTree):
    """One tree of a fitted rotation ensemble, with the single-tree API of scikit-learn's
    trees.

    Obtained from ``ensemble.estimators_[i]``, ``ensemble[i]`` or iterating the ensemble.
    ``predict``, ``predict_proba``, ``apply`` and ``decision_path`` take X as the
    ensemble does: the tree reads it through the ensemble's scaling and its rotation.

    Attributes
    ----------
    rotation : int
        Index of this tree's rotation in the ensemble's ``rotations_``.
    rotation_ : ndarray of shape (n_features_in_, n_features_in_)
        That rotation; the tree sees ``scale(X) @ rotation_``.
    tree_ : TreeNodes
        The node arrays, in the rotated coordinates: feature j is column j of
        ``scale(X) @ rotation_``.
    feature_importances_ : ndarray of shape (n_features_in_,)
        This tree's impurity importances mapped back to the input features as the
        ensemble maps its own (squared loadings), summing to 1.
    """

    def __init__(self, source: _RotationSource, index: int):
        super().__init__(source, index)
        self.rotation = source._k

    def __repr__(self) -> str:
        ensemble = type(self._owner._ensemble).__name__
        return f"RotationTree(rotation={self.rotation}, index={self._index}, of={ensemble})"

    @property
    def rotation_(self):
        return self._owner._ensemble.rotations_[self.rotation]

    @property
    def feature_importances_(self):
        self._owner.check_current()
        rotated = np.nan_to_num(ForestTree.feature_importances_.fget(self))
        return self.rotation_**2 @ rotated


class RotationTreesMixin(PerTreeMixin):
    """``estimators_``, indexing, ``apply``, ``decision_path`` and ``estimators_samples_``
    for the rotation ensembles (mixed into ``_BaseRotationEnsemble``); ``len``, indexing
    and iteration are the plain forests' over these ``estimators_``."""

    def _rotation_forests(self):
        """(k, core forest) of every rotation that holds trees, in rotation order."""
        return [(k, f) for k, f in enumerate(self._forests) if f is not None]

    @property
    def estimators_(self):
        """The fitted trees, a list of :class:`RotationTree` of length n_estimators, rotation
        by rotation."""
        check_is_fitted(self)
        trees = []
        for k, forest in self._rotation_forests():
            source = _RotationSource(self, k)
            trees += [RotationTree(source, i) for i in range(forest.n_trees)]
        return trees

    def apply(self, X):
        """Leaf index reached in each tree.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        X_leaves : ndarray of shape (n_samples, n_estimators)
            Node index (within its tree) of the leaf each sample ends in, trees in the
            order of ``estimators_``.
        """
        n_jobs = self._n_threads()
        return np.hstack([f.apply(X_rot, n_jobs) for _, f, X_rot in self._rotated_inputs(X)])

    def decision_path(self, X):
        """Nodes each row passes through in every tree.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        indicator : sparse matrix of shape (n_samples, n_nodes)
            CSR; entry (i, j) is 1 when row i passes through node j, where tree t's nodes
            (trees in the order of ``estimators_``) are the columns
            ``n_nodes_ptr[t]:n_nodes_ptr[t + 1]``.
        n_nodes_ptr : ndarray of shape (n_estimators + 1,)
        """
        n_jobs = self._n_threads()
        blocks, ptrs = [], [np.zeros(1, dtype=np.int64)]
        for _, forest, X_rot in self._rotated_inputs(X):
            indptr, indices, n_nodes_ptr = forest.decision_path(X_rot, n_jobs)
            data = np.ones(len(indices), dtype=np.int64)
            shape = (X_rot.shape[0], int(n_nodes_ptr[-1]))
            blocks.append(sparse.csr_matrix((data, indices, indptr), shape=shape))
            ptrs.append(n_nodes_ptr[1:] + ptrs[-1][-1])
        return sparse.hstack(blocks, format="csr"), np.concatenate(ptrs)

    @property
    def estimators_samples_(self):
        """The in-bag rows of each tree (in the order of ``estimators_``): a list of
        n_estimators index arrays (ascending, a row repeated as often as the bootstrap drew
        it; every row once without bootstrap). Recomputed from the trees' seeds, not
        stored."""
        check_is_fitted(self)
        n = getattr(self, "_n_samples_fit", None)
        if n is None:
            raise AttributeError(
                "estimators_samples_ needs the number of training rows, which this rotation "
                "ensemble does not record (read from a model file, or pickled by an older "
                "version)"
            )
        rows = np.arange(n, dtype=np.int32 if n < 2**31 else np.int64)  # scikit-learn's dtype
        return [
            np.repeat(rows, forest.in_bag_counts(t, n))
            for _, forest in self._rotation_forests()
            for t in range(forest.n_trees)
        ]
