"""Projection distributions for :class:`~obliqueforest.ObliqueForestClassifier` and
:class:`~obliqueforest.ObliqueForestRegressor`.

A projection forest samples, at every split node, ``max_features`` candidate directions
from one of these distributions and splits on the best (Tomita et al. 2020, Sect. 3.1).
Each object only describes the distribution; sampling happens in the Rust core.

References
----------
.. [1] T. M. Tomita et al., "Sparse Projection Oblique Randomer Forests",
   JMLR 21(104), 2020.
.. [2] L. Breiman, "Random Forests", Machine Learning 45, 2001 (Forest-RC).
"""

from __future__ import annotations

from numbers import Integral

import numpy as np

from . import _core

__all__ = [
    "AxisAligned",
    "Dictionary",
    "ForestRC",
    "Gaussian",
    "GraphNeighbourhood",
    "HaarPatch",
    "Patch",
    "PooledFilter",
    "SparseSigned",
]


class _Projection:
    """Base class: a projection distribution, handed to the core by ``_core_projection``.

    Every family lives in its own Rust file (``src/projection/``) under a registry tag; a
    class here only names the tag (``_tag``) and says which arguments it hands over
    (``_family_args``). The objects only store their arguments; the core validates them
    when a forest is fitted (its errors name the parameter).
    """

    #: The registry tag of the family's Rust file.
    _tag: str

    def _core_projection(self, n_features: int):
        """The core's ``_core.Projection`` for data with ``n_features`` columns."""
        return _core.Projection.family(self._tag, **self._family_args(n_features))

    def _family_args(self, n_features: int) -> dict:
        """The arguments of the registered family ``_tag`` (converted generically: None,
        bools, ints, floats, strings and 1-D sequences or arrays of them)."""
        return {}

    def _state(self) -> dict:
        """The arguments as plain JSON values, for model files (see ``_from_state``)."""
        return dict(vars(self))

    @classmethod
    def _from_state(cls, state: dict, forest):
        """Rebuilds the object from ``_state()`` and the loaded core ``forest``."""
        return cls(**state)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({args})"

    def __eq__(self, other) -> bool:
        return (
            type(self) is type(other)
            and vars(self).keys() == vars(other).keys()
            and all(_same(v, vars(other)[k]) for k, v in vars(self).items())
        )

    def __hash__(self) -> int:
        return hash((type(self).__name__, tuple(sorted(map(str, vars(self).items())))))


class AxisAligned(_Projection):
    """Axis-aligned splits (classic random forest): d distinct features, weight 1."""

    _tag = "axis"


class SparseSigned(_Projection):
    """SPORF's sparse random projections.

    ``ceil(lambda * p * d)`` nonzeros are placed uniformly at random in a p x d matrix,
    each +1 or -1 with equal probability; empty columns are dropped. Give the density
    either directly (``density``, lambda in (0, 1]) or as the average number of features
    per projection (``feature_combinations`` = lambda * p, capped at p). With neither,
    ``feature_combinations=3`` (the paper's recommendation lambda = 3/p, Sect. 5.2).

    Parameters
    ----------
    density : float in (0, 1], default=None
        Fraction of nonzero entries lambda.
    feature_combinations : float > 0, default=None
        Average number of features per projection.
    scaling : {"robust"} or None, default=None
        None: the paper's weights, +1 or -1 on the raw values, so that a feature with a
        wide spread dominates the projections it enters. "robust": weight +-1/s_j, where
        s_j is feature j's interquartile range in the training data (its range when that is
        0): each projection adds features in comparable units and the forest no longer
        depends on the features' units. The scales are part of the stored weights.
    """

    def __init__(
        self,
        density: float | None = None,
        feature_combinations: float | None = None,
        scaling: str | None = None,
    ):
        self.density = density
        self.feature_combinations = feature_combinations
        self.scaling = scaling

    _tag = "sparse_signed"

    def _family_args(self, n_features):
        fc = self.feature_combinations
        if self.density is None and fc is None:
            fc = 3.0
        return {"density": self.density, "feature_combinations": fc, "scaling": self.scaling}


class ForestRC(_Projection):
    """Forest-RC (Breiman 2001): each projection combines ``n_combined`` distinct features
    with weights uniform in [-1, 1].

    Parameters
    ----------
    n_combined : int >= 1, default=2
        Features per projection L (capped at the number of features).
    """

    def __init__(self, n_combined: int = 2):
        self.n_combined = n_combined

    _tag = "forest_rc"

    def _family_args(self, n_features):
        return {"n_combined": self.n_combined}


class Gaussian(_Projection):
    """Dense random projections: every feature with an N(0, 1) weight."""

    _tag = "gaussian"


class Patch(_Projection):
    """MORF patches over structured samples (Perry et al., Sect. 3.1).

    See :class:`~obliqueforest.MORFClassifier` for the meaning of the parameters; this
    object is what the MORF estimators hand to the core (with ``differences=0, pooled=0``).
    ``max_patch_size=None`` means a quarter of each axis.
    """

    #: The largest default ``max_patch_size`` (None: a quarter of the axis, however long).
    _default_max_patch = float("inf")

    def __init__(
        self, data_shape, channel_axis=None, min_patch_size=1, max_patch_size=None, periodic=False
    ):
        self.data_shape = data_shape
        self.channel_axis = channel_axis
        self.min_patch_size = min_patch_size
        self.max_patch_size = max_patch_size
        self.periodic = periodic

    def resolve(self, n_features: int) -> dict:
        """The geometry with its defaults filled in for ``n_features`` columns: a plain
        ``data_shape`` (one axis of ``n_features`` by default), a non-negative
        ``channel_axis``, and one patch size and periodicity per non-channel axis
        (``max_patch_size`` defaults to a quarter of each axis, at most
        ``_default_max_patch``). The core checks it."""
        shape = [n_features] if self.data_shape is None else _per_axis(self.data_shape, 1)
        ca = self.channel_axis
        if isinstance(ca, Integral) and ca < 0:
            ca = int(ca) + len(shape)  # still negative when out of range: the core says so
        spatial = [s for a, s in enumerate(shape) if a != ca]
        k = len(spatial)
        lo = _per_axis(self.min_patch_size, k)
        if self.max_patch_size is None:
            hi = [
                max(lo_a, min(s // 4, self._default_max_patch), 1)
                if isinstance(lo_a, Integral)
                else lo_a
                for lo_a, s in zip(lo, spatial)
            ]
        else:
            hi = _per_axis(self.max_patch_size, k)
        periodic = self.periodic
        if isinstance(periodic, (bool, np.bool_, Integral)):
            periodic = [bool(periodic)] * k
        return {
            "data_shape": shape,
            "channel_axis": ca,
            "min_patch_size": lo,
            "max_patch_size": hi,
            "periodic": [bool(p) for p in periodic],
        }

    _tag = "patch"

    def _family_args(self, n_features):
        return self.resolve(n_features)


class HaarPatch(Patch):
    """MORF patches that are sums over a patch or differences of two adjacent patches.

    Each candidate is, with probability ``differences``, the sum over one patch minus the
    sum over the patch of the same shape right after it along a random spatial axis (a
    Haar-like edge filter at any scale: "this window is brighter than the next"); else a
    plain MORF patch sum. The geometry parameters are those of :class:`Patch` (see
    :class:`~obliqueforest.MORFClassifier`); the family lives in one Rust file
    (``src/projection/haar.rs``, tag ``"haar"``).

    Parameters
    ----------
    data_shape, channel_axis, min_patch_size, periodic
        As for :class:`Patch`.
    max_patch_size : int or tuple of int, default=None
        As for :class:`Patch`, but None means a quarter of each axis *and at most 2*
        (benches/results/structured.md: wider windows average signals away).
    differences : float in [0, 1], default=0.5
        Probability that a candidate is a difference. A difference needs an axis at least
        twice ``min_patch_size`` long (else the candidate is a sum).
    """

    _tag = "haar"
    _default_max_patch = 2

    def __init__(
        self,
        data_shape,
        channel_axis=None,
        min_patch_size=1,
        max_patch_size=None,
        periodic=False,
        differences=0.5,
    ):
        super().__init__(data_shape, channel_axis, min_patch_size, max_patch_size, periodic)
        self.differences = differences

    def _family_args(self, n_features):
        return {**self.resolve(n_features), "differences": self.differences}


class PooledFilter(HaarPatch):
    """Haar patches plus translation-invariant pooled filters.

    Each candidate is, with probability ``pooled``, a small 1-D filter slid along one
    random spatial axis of a window, keeping its largest or smallest response (max or min
    pooling, equally likely): "somewhere in this window the signal rises over h
    positions", wherever the pattern moved. The filter has cells of ``h`` positions
    (``1 <= h <= max_filter``): a sum (weights 1), a first difference (+1, -1) or a
    second difference (+1, -2, +1); across the other spatial axes and the channels it
    covers a MORF patch. Half the candidates pool over the whole axis, the others over a
    random window of at least ``min_window`` positions. Other candidates are
    :class:`HaarPatch` candidates. The family lives in one Rust file
    (``src/projection/pooled.rs``, tag ``"pooled"``); a row missing a feature of any
    filter position has a missing projection.

    Parameters
    ----------
    data_shape, channel_axis, min_patch_size, max_patch_size, periodic, differences
        As for :class:`HaarPatch`.
    pooled : float in [0, 1], default=0.5
        Probability that a candidate is a pooled filter.
    max_filter : int >= 1, default=3
        Widest filter cell ``h``.
    min_window : int >= 1, default=None
        Shortest pooling window; None means a quarter of the shortest spatial axis (at
        least 1).
    """

    _tag = "pooled"

    def __init__(
        self,
        data_shape,
        channel_axis=None,
        min_patch_size=1,
        max_patch_size=None,
        periodic=False,
        differences=0.5,
        pooled=0.5,
        max_filter=3,
        min_window=None,
    ):
        super().__init__(
            data_shape, channel_axis, min_patch_size, max_patch_size, periodic, differences
        )
        self.pooled = pooled
        self.max_filter = max_filter
        self.min_window = min_window

    def _family_args(self, n_features):
        args = super()._family_args(n_features)
        min_window = self.min_window
        if min_window is None:
            spatial = [s for a, s in enumerate(args["data_shape"]) if a != args["channel_axis"]]
            min_window = max(1, min(spatial, default=4) // 4)
        return {
            **args,
            "pooled": self.pooled,
            "max_filter": self.max_filter,
            "min_window": min_window,
        }


class Dictionary(_Projection):
    """A projection dictionary: each split node samples candidates among fixed atoms.

    The atoms are the columns of a (dense or scipy.sparse) matrix of shape
    ``(n_features, n_atoms)``; a candidate projection is one atom, so a split is
    ``atoms[:, a] @ x <= threshold``. Use it for domain knowledge the random families
    cannot find: wavelet or filter banks, sums over known groups of features, or averages
    over the neighbourhoods of a graph (:class:`GraphNeighbourhood`). Atoms are drawn
    uniformly without replacement and evaluated in the Rust core; the dictionary is stored
    in the fitted model (model files and pickles carry it).

    Parameters
    ----------
    atoms : array-like or scipy.sparse matrix of shape (n_features, n_atoms)
        One atom per column; every atom needs a nonzero, and the weights must be finite
        (float32).
    n_candidates : int >= 1, default=None
        Atoms drawn at each split node (at most ``n_atoms``). None draws ``max_features``
        of the estimator, resolved against n_features as for every family.

    Raises
    ------
    ValueError
        When fitting, if the atoms do not have n_features rows, the dictionary is empty, an
        atom is all zeros or holds a non-finite weight.

    Examples
    --------
    >>> import numpy as np
    >>> from obliqueforest import ObliqueForestClassifier, projections
    >>> X = np.random.default_rng(0).normal(size=(200, 4))
    >>> y = (X[:, 0] + X[:, 1] > X[:, 2] + X[:, 3]).astype(int)
    >>> atoms = np.array([[1, 1, -1, -1], [1, 0, 0, 0], [0, 0, 1, 1]]).T  # shape (4, 3)
    >>> est = ObliqueForestClassifier(projections.Dictionary(atoms), 20, random_state=0)
    >>> est.fit(X, y).score(X, y) > 0.95
    True
    """

    def __init__(self, atoms, n_candidates=None):
        self.atoms = atoms
        self.n_candidates = n_candidates

    def _matrix(self):
        import scipy.sparse as sp

        atoms = self.atoms
        if not sp.issparse(atoms):
            atoms = np.asarray(atoms, dtype=np.float64)
            if atoms.ndim != 2:
                raise ValueError(
                    "Dictionary: atoms must be a 2-D matrix of shape (n_features, n_atoms), "
                    f"got an array of shape {atoms.shape}"
                )
        csc = sp.csc_matrix(atoms, dtype=np.float64)
        with np.errstate(over="ignore", invalid="ignore"):
            # values beyond float32 become infinite: the core names them
            csc = csc.astype(np.float32)
        csc.eliminate_zeros()
        csc.sort_indices()
        return csc

    _tag = "dictionary"

    def _family_args(self, n_features):
        csc = self._matrix()
        return {
            "n_features": int(csc.shape[0]),
            "indptr": csc.indptr,
            "indices": csc.indices,
            "data": csc.data,
            "n_candidates": self.n_candidates,
        }

    def _state(self):
        # the atoms travel in the core model's own parameters (and the file's projection
        # record), not among the header's parameters
        return {"n_candidates": self.n_candidates}

    @classmethod
    def _from_state(cls, state, forest):
        import scipy.sparse as sp

        args = _stored_family_args(forest, "dictionary")
        n = args["n_features"]
        atoms = sp.csc_matrix(
            (args["data"].astype(np.float32), args["indices"], args["indptr"]),
            shape=(n, len(args["indptr"]) - 1),
        )
        return cls(atoms, **state)


class GraphNeighbourhood(Dictionary):
    """Averages over the k-hop neighbourhoods of a graph on the features.

    For data whose features are the nodes of a graph (sensors on a network, regions of a
    map, pixels of an irregular mesh), the atoms are, for every node v and every
    k = 0, ..., ``max_hops``, the mean of the features within k hops of v (k = 0 is the
    feature itself, as in an axis-aligned forest); an atom equal to one already listed
    (a neighbourhood that stopped growing) is left out. It is a :class:`Dictionary`, so
    splits are evaluated in the Rust core and saved with the model.

    Parameters
    ----------
    adjacency : array-like or scipy.sparse matrix of shape (n_features, n_features)
        The graph: nonzero entry (i, j) is an edge between features i and j; the graph is
        taken as undirected (edges in either direction count) and weights are ignored.
        Every node needs at least one edge to another node: an isolated node has no
        neighbourhood to average over and is rejected (a graph with several connected
        components is fine; neighbourhoods stay within a component).
    max_hops : int >= 1, default=2
        Largest neighbourhood radius.
    n_candidates : int >= 1, default=None
        Atoms drawn at each split node; None draws ``max_features``.

    Raises
    ------
    ValueError
        If the adjacency is not square, holds negative or non-finite entries, or has an
        isolated node; or (when fitting) if it does not have n_features nodes.
    """

    def __init__(self, adjacency, max_hops=2, n_candidates=None):
        self.adjacency = adjacency
        self.max_hops = max_hops
        self.n_candidates = n_candidates

    def _graph(self):
        import scipy.sparse as sp

        adj = self.adjacency
        adj = sp.csr_matrix(adj if sp.issparse(adj) else np.asarray(adj, dtype=np.float64))
        if adj.ndim != 2 or adj.shape[0] != adj.shape[1] or adj.shape[0] == 0:
            raise ValueError(
                f"GraphNeighbourhood: adjacency must be a non-empty square matrix, got shape "
                f"{adj.shape}"
            )
        if not np.all(np.isfinite(adj.data)) or np.any(adj.data < 0):
            raise ValueError("GraphNeighbourhood: adjacency entries must be finite and >= 0")
        if not isinstance(self.max_hops, Integral) or self.max_hops < 1:
            raise ValueError(
                f"GraphNeighbourhood: max_hops must be an int >= 1, got {self.max_hops!r}"
            )
        adj = ((adj + adj.T) > 0).astype(np.int8).tolil()
        adj.setdiag(0)
        adj = adj.tocsr()
        adj.eliminate_zeros()
        degree = np.diff(adj.indptr)
        isolated = np.flatnonzero(degree == 0)
        if isolated.size:
            raise ValueError(
                f"GraphNeighbourhood: node {isolated[0]} is isolated (no edge to another "
                f"node; {isolated.size} such node(s)): it has no neighbourhood to average"
            )
        return adj

    def _matrix(self):
        import scipy.sparse as sp

        adj = self._graph()
        n = adj.shape[0]
        step = (adj + sp.identity(n, dtype=np.int8, format="csr")).astype(bool)
        reach = sp.identity(n, dtype=bool, format="csr")
        columns, seen = [], set()
        for _ in range(int(self.max_hops) + 1):
            cols = reach.tocsc()
            cols.sort_indices()
            for v in range(n):
                members = cols.indices[cols.indptr[v] : cols.indptr[v + 1]].astype(np.int64)
                key = members.tobytes()
                if key in seen:
                    continue
                seen.add(key)
                columns.append(members)
            reach = (step @ reach).astype(bool)
        indptr = np.cumsum([0] + [len(c) for c in columns])
        indices = np.concatenate(columns)
        data = np.concatenate([np.full(len(c), 1.0 / len(c)) for c in columns])
        return sp.csc_matrix((data.astype(np.float32), indices, indptr), shape=(n, len(columns)))

    def _state(self):
        import scipy.sparse as sp

        self._graph()  # only a valid graph is saved
        adj = sp.coo_matrix(self.adjacency)
        return {
            "adjacency": {
                "n_nodes": int(adj.shape[0]),
                "rows": adj.row.tolist(),
                "cols": adj.col.tolist(),
                "values": adj.data.astype(float).tolist(),
            },
            "max_hops": self.max_hops,
            "n_candidates": self.n_candidates,
        }

    @classmethod
    def _from_state(cls, state, forest):
        import scipy.sparse as sp

        state = dict(state)
        g = state.pop("adjacency")
        n = int(g["n_nodes"])
        if n != forest.n_features:  # checked before anything of size n is allocated
            raise ValueError(f"the graph has {n} nodes, the forest {forest.n_features} features")
        adj = sp.csr_matrix((g["values"], (g["rows"], g["cols"])), shape=(n, n))
        return cls(adj, **state)


def _stored_family_args(forest, tag) -> dict:
    """The arguments a loaded core ``forest`` of registered family ``tag`` was built with."""
    stored_tag, args = forest.projection_family()
    if stored_tag != tag:
        raise ValueError(f"the model names the {tag!r} family but its forest holds {stored_tag!r}")
    return args


def _same(a, b) -> bool:
    """Equality of projection arguments, arrays and sparse matrices included."""
    import scipy.sparse as sp

    if sp.issparse(a) or sp.issparse(b) or isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (sp.issparse(a) or sp.issparse(b)):
            return np.shape(a) == np.shape(b) and np.array_equal(a, b)
        a, b = sp.csr_matrix(a), sp.csr_matrix(b)
        return a.shape == b.shape and (a != b).nnz == 0
    return a == b


def _per_axis(v, k):
    """An int broadcast to ``k`` axes, or the entries of a sequence (lengths are checked by
    the core)."""
    if isinstance(v, Integral):
        return [int(v)] * k
    try:
        return [int(x) if isinstance(x, Integral) else x for x in v]
    except TypeError:
        return v
