"""Type stubs for the Rust extension module ``obliqueforest._core``.

The extension is a thin boundary: it converts numpy arrays and errors and
releases the GIL while the Rust engine works. All validation of forest
parameters happens in Rust (``ForestParams::check``); errors arrive as
:class:`ForestError`, a subclass of :class:`ValueError`.
"""

from typing import Any, Optional, Union, final

import numpy as np
import numpy.typing as npt

# X: a 2-D float32 array (C or F order), or sparse X as ``(format, (n_rows, n_cols),
# indptr, indices, data)`` with format "csr" or "csc" and uint64/uint32/float32 arrays in
# canonical form (sorted unique indices), as ``obliqueforest._forest.core_X`` builds it.
CoreX = Union[
    npt.NDArray[np.float32],
    tuple[
        str,
        tuple[int, int],
        npt.NDArray[np.uint64],
        npt.NDArray[np.uint32],
        npt.NDArray[np.float32],
    ],
]

__version__: str
FORMAT_VERSION: int
"""Version of the binary model format written by :meth:`Forest.to_bytes`."""

class ForestError(ValueError):
    """Any error raised by the Rust core (bad parameters, bad input, corrupt model bytes)."""

class ForestInternalError(ForestError):
    """An internal error of the Rust core (a panic or a broken invariant: a bug), never bad
    input; a ForestError, so handlers of ForestError still catch it."""

class ForestFileNotFoundError(FileNotFoundError, ForestError):
    """A model file path that does not exist (reading) or whose folder does not (writing)."""

class ForestPermissionError(PermissionError, ForestError):
    """A model file the system does not let this process read or write."""

class ForestIsADirectoryError(IsADirectoryError, ForestError):
    """A model file path the system found to be a directory."""

class ForestOSError(OSError, ForestError):
    """Any other failure of the system to read or write a model file (a full disk, ...)."""

@final
class Progress:
    """A counter of grown trees and a cancel switch, shared with running fits (read or
    cancel from another thread)."""

    def __new__(cls) -> Progress: ...
    @property
    def trees_done(self) -> int: ...
    def cancel(self) -> None:
        """Stops every fit using this object soon; they raise ForestError("cancelled")."""
    @property
    def cancelled(self) -> bool: ...

def set_memory_limit(limit: Optional[int | str]) -> None:
    """Process-wide limit on a fitted model's memory: None (none), "auto" (the default) or a
    number of bytes. "auto" is 80% of the memory the process can still allocate when a fit
    starts: the smallest of the host's available memory, the room under its cgroup memory
    limits (v2 ``memory.max`` less ``memory.current``, v1 ``memory.limit_in_bytes`` less
    ``memory.usage_in_bytes``) and the room under its ``RLIMIT_AS`` (``ulimit -v``) and
    ``RLIMIT_DATA``. A fit refuses at once when a lower bound of the model's size is over
    it, and stops (ForestError) once the trees grown so far project the forest over it."""

def memory_limit() -> Optional[int | str]:
    """The limit set by :func:`set_memory_limit`."""

def memory_budget() -> Optional[int]:
    """The bytes the memory limit stands for now ("auto" resolved), or None without a
    limit."""

def orthogonal_factor(a: np.ndarray) -> np.ndarray:
    """The orthogonal factor Q of the QR decomposition of the square float64 matrix ``a``,
    R's diagonal positive (Householder reflections in one fixed order: the same bits on
    every machine); Haar-distributed for a standard Gaussian ``a``."""

def shap_interaction_values_rotated(
    forests: list[Forest],
    rotations: npt.NDArray[np.float64],
    scaled: npt.NDArray[np.float64],
    n_jobs: int = 1,
    max_terms: int | None = None,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Path-dependent Shapley interaction values of a rotation ensemble on its original
    features, (values (n, p, p, outputs), expected value)."""

def shap_values_rotated(
    forests: list[Forest],
    rotations: npt.NDArray[np.float64],
    scaled: npt.NDArray[np.float64],
    background: npt.NDArray[np.float64] | None = None,
    n_jobs: int = 1,
    max_terms: int | None = None,
    n_permutations: int | None = None,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64] | None, int]:
    """Shapley values of a rotation ensemble's mean over all its trees, on the original
    features: ``forests[k]`` reads ``scaled @ rotations[k]`` (see ``Forest.shap_values``)."""

def rotate(x: np.ndarray, q: np.ndarray, fortran: bool, n_jobs: int | None = None) -> np.ndarray:
    """``x @ q`` (float64) as float32, column-major when ``fortran``: sums over ascending
    k; a NaN term is left out and makes the value NaN where its weight is not 0. On
    ``n_jobs`` threads, the same values."""

def rotate_csr(
    n_rows: int,
    indptr: np.ndarray,
    indices: np.ndarray,
    data: np.ndarray,
    offset: np.ndarray,
    q: np.ndarray,
    fortran: bool,
) -> np.ndarray:
    """``(S + offset) @ q`` as float32 for S in CSR (int64 ``indptr`` and ``indices``,
    float64 ``data``) and ``offset`` a row added to every row."""

def n_threads(n_jobs: Optional[int] = None) -> int:
    """Threads ``n_jobs`` stands for: None -> 1, -1 -> all cores, -2 -> all but one, ...;
    counts above the available cores are capped; 0 raises ForestError."""

@final
class Projection:
    """A projection distribution for the core, built by ``family(tag, **args)`` (the
    classes of :mod:`obliqueforest.projections` do). Only converts: the core validates
    the settings when a forest is fitted, naming the parameter."""

    @staticmethod
    def family(tag: str, **args: Any) -> Projection:
        """The family registered as ``tag`` (one Rust file in src/projection/: "axis",
        "sparse_signed", "forest_rc", "gaussian", "patch", "haar", "pooled", "dictionary",
        or one a Rust program registered) built from its arguments: None, bools, ints,
        floats, strings and 1-D sequences or arrays of them."""
    @property
    def tag(self) -> str:
        """The family's registry tag."""
    def differences(self, other: Projection) -> list[tuple[str, Any, Any]]:
        """The arguments on which this projection and ``other``, of the same family,
        differ: ``(name, this one's value, other's value)`` each, as the family gives them
        (empty when they are equal)."""

@final
class ForestParams:
    """The typed parameters of one fit. Every field up to ``growth`` is required (their
    defaults live in the estimators); ``obliqueforest._params.core_params`` builds it.
    ``growth`` holds how the trees are grown beyond what they are, by name (``n_jobs``,
    ``ccp_alpha``, ``monotonic_cst``, ``candidate_samples``, ``min_category_samples``,
    ``categorical_in_projections``: the core's ``Growth``;
    a setting not given takes its default, an unknown one is a ForestError).
    Counts must be non-negative ints that fit the machine's word (else :class:`ForestError`
    naming the parameter); ranges, cross-parameter rules and bounds against the data (e.g.
    ``max_samples <= n_samples``, at most 2**20 trees and 2**20 candidates per node) are
    checked when the forest is fitted, before anything is allocated. ``categorical``
    gives each column's number of levels (0 for a numeric one; X then holds level codes,
    NaN for missing) and ``level_names`` the names of those levels, which model files
    keep."""

    def __new__(
        cls,
        *,
        task: str,
        n_classes: Optional[int | list[int]],
        criterion: str,
        splitter: str,
        max_bins: int,
        projection: Projection,
        max_features: Optional[int | float | str],
        n_estimators: int,
        max_depth: Optional[int],
        min_samples_split: int | float,
        min_samples_leaf: int | float,
        min_weight_fraction_leaf: float,
        min_impurity_decrease: float,
        max_leaf_nodes: Optional[int],
        bootstrap: bool,
        max_samples: Optional[int | float],
        class_weight_subsample: bool,
        oob: bool,
        seed: int,
        growth: dict[str, Any],
        n_outputs: Optional[int] = None,
        honest_fraction: float = 0.0,
        store_leaf_values: bool = False,
        tree_features: Optional[int] = None,
        categorical: Optional[list[int]] = None,
        level_names: Optional[list[list[str]]] = None,
    ) -> ForestParams: ...
    def with_seed(self, seed: int) -> ForestParams:
        """The same parameters with another seed."""
    @property
    def n_estimators(self) -> int: ...
    @property
    def categorical(self) -> list[int]:
        """Levels per column (0 for a numeric one); empty when every column is numeric."""
    @staticmethod
    def _from_bytes(data: bytes) -> ForestParams:
        """The parameters ``__reduce__`` encoded (pickling: obliqueforest.dask sends
        parameters to its workers)."""

@final
class Forest:
    """A fitted projection forest (all trees, their projections and leaf values).

    Construct with :meth:`Forest.fit` or :meth:`Forest.from_bytes`.
    """

    @staticmethod
    def fit(
        x: CoreX,
        y: npt.NDArray[np.float64],
        sample_weight: Optional[npt.NDArray[np.float64]],
        params: ForestParams,
        progress: Optional[Progress] = None,
    ) -> Forest:
        """Grow a forest.

        ``x`` has shape (n_samples, n_features), any memory order. For
        classification ``y`` holds class codes 0..n_classes-1 as floats; for a
        multi-output task (``n_classes`` a list, or ``n_outputs`` > 1) it holds
        n_samples × n_outputs values, row-major (a C-order 2-D y, raveled).
        ``params`` says how (see :class:`ForestParams`).
        """
    @staticmethod
    def fit_many(
        xs: list[CoreX],
        y: npt.NDArray[np.float64],
        sample_weight: Optional[npt.NDArray[np.float64]],
        params: list[ForestParams],
        progress: Optional[Progress] = None,
    ) -> list[Forest]:
        """Grow one forest per ``(xs[i], params[i])`` on the same y and weights, every
        tree of every forest a task of one parallel loop (a pool of the largest
        ``n_jobs``): what ``fit`` grows for each, tree for tree, without one call's fixed
        costs per forest (the rotation ensembles' micro-forests)."""
    @staticmethod
    def fit_more_many(
        forests: list[Forest],
        xs: list[CoreX],
        y: npt.NDArray[np.float64],
        sample_weight: Optional[npt.NDArray[np.float64]],
        n_more: list[int],
        progress: Optional[Progress] = None,
    ) -> None:
        """``forests[i].fit_more(xs[i], y, sample_weight, forests[i]'s own params,
        n_more[i])`` for every i, all the new trees in one parallel loop (a pool of the
        largest ``n_jobs``)."""
    def fit_more(
        self,
        x: CoreX,
        y: npt.NDArray[np.float64],
        sample_weight: Optional[npt.NDArray[np.float64]],
        params: ForestParams,
        n_more: int,
        progress: Optional[Progress] = None,
    ) -> None:
        """Grow ``n_more`` further trees (tree indices continue) as ``params`` says: its
        growth settings (criterion, splitter, max_features, max_depth, min_samples_*,
        max_leaf_nodes, ccp_alpha, monotonic_cst, candidate_samples, n_jobs) become the
        forest's; task, projection, seed, bootstrap, max_samples, honest_fraction,
        store_leaf_values and class_weight must be the forest's own (else a ForestError
        naming the parameter, before anything changes)."""
    def projection_family(self) -> tuple[str, dict[str, Any]]:
        """The forest's family as ``(tag, args)`` (int and float sequences as int64 and
        float64 arrays), what ``Projection.family(tag, **args)`` rebuilds it from."""
    @property
    def n_jobs(self) -> int:
        """The ``n_jobs`` the forest was last grown with (1 after loading from bytes)."""
    def copy(self) -> Forest:
        """An independent copy of this forest (its out-of-bag records included)."""
    def truncate(self, n_trees: int) -> None:
        """Keep only the first ``n_trees`` trees."""
    def select_trees(self, indices: npt.NDArray[np.int64]) -> Forest:
        """A new forest holding the given trees (in the given order)."""
    @property
    def n_bytes(self) -> int:
        """Memory held by the trees, their prediction layout and kept leaf values, in bytes."""
    @property
    def has_leaf_values(self) -> bool:
        """Whether the forest keeps its leaves' training targets (``store_leaf_values``)."""
    @property
    def categorical(self) -> list[int]:
        """Levels per column (0 for a numeric one); empty when every column is numeric."""
    @property
    def honest_fraction(self) -> float:
        """The fraction of each tree's rows that filled its leaves (0: not honest)."""
    @property
    def n_trees(self) -> int: ...
    @property
    def n_features(self) -> int: ...
    @property
    def n_outputs(self) -> int:
        """Values per leaf: n_classes for classification, 1 for regression; for several
        target columns, the columns' blocks side by side (sum of n_classes, or n_targets)."""
    @property
    def n_targets(self) -> int:
        """Target columns (scikit-learn's ``n_outputs_``)."""
    @property
    def class_counts(self) -> Optional[list[int]]:
        """Classes of each target column; None for regression."""
    @property
    def is_classifier(self) -> bool: ...
    @property
    def seed(self) -> int:
        """The forest's seed: tree t draws from the streams keyed by (seed, t)."""
    @property
    def has_oob(self) -> bool:
        """Whether the forest keeps out-of-bag predictions."""
    def predict(self, x: CoreX, n_jobs: int = 1) -> npt.NDArray[np.float64]:
        """Mean over trees of leaf values, shape (n_samples, n_outputs).

        Class probabilities for classification, the prediction for regression.
        """
    def score_samples(self, x: CoreX, n_jobs: int = 1) -> npt.NDArray[np.float64]:
        """scikit-learn's ``IsolationForest.score_samples`` of a forest without targets
        (task "unsupervised"): ``-2 ** -(mean normalised path length)``, shape
        (n_samples,); ForestError for a forest grown on targets."""
    def predict_trees(self, x: CoreX, n_jobs: int = 1) -> npt.NDArray[np.float64]:
        """Per-tree leaf values, shape (n_trees, n_samples, n_outputs)."""
    def shap_values(
        self,
        x: npt.NDArray[np.float32],
        background: npt.NDArray[np.float32] | None = None,
        n_jobs: int = 1,
        max_terms: int | None = None,
        n_permutations: int | None = None,
    ) -> tuple[
        npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64] | None, int
    ]:
        """Shapley values of the trees' mean output: path-dependent without a background,
        interventional with one; (values (n, p, outputs), expected value (outputs,),
        standard errors where some values were estimated or None, estimated count)."""
    def shap_interaction_values(
        self, x: npt.NDArray[np.float32], n_jobs: int = 1, max_terms: int | None = None
    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """Path-dependent Shapley interaction values, (values (n, p, p, outputs), expected
        value); ForestError when a tree needs more than ``max_terms`` terms."""
    def apply(self, x: CoreX, n_jobs: int = 1) -> npt.NDArray[np.int64]:
        """Leaf node index (within its tree) per tree, shape (n_samples, n_trees)."""
    def in_bag_counts(self, tree: int, n_samples: int) -> npt.NDArray[np.uint32]:
        """How often tree ``tree`` drew each of the ``n_samples`` training rows (recomputed
        from its seed; all ones without bootstrap), shape (n_samples,)."""
    def honest_counts(self, tree: int, n_samples: int) -> npt.NDArray[np.uint32]:
        """The part of :meth:`in_bag_counts` in tree ``tree``'s honest part (the rows that
        filled its leaves); zeros for a forest that is not honest."""
    def predict_quantiles(
        self, x: CoreX, quantiles: list[float], n_jobs: int = 1, oob: bool = False
    ) -> npt.NDArray[np.float64]:
        """Conditional quantiles (a forest grown with ``store_leaf_values``), shape
        (n_samples, n_targets, len(quantiles)); with ``oob``, the out-of-bag quantiles of
        the training rows ``x`` (in order), NaN for a row no tree left out."""
    def decision_path(
        self, x: CoreX, n_jobs: int = 1
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """(indptr, indices, n_nodes_ptr): CSR of the forest-wide nodes each row visits."""
    def node_decisions(
        self, x: CoreX, tree: int, n_jobs: int = 1
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.bool_]]:
        """(values, goes_left), each (n_samples, n_nodes) for tree ``tree``: every node's
        projected value as prediction computes it (float32; NaN where a term is missing and
        at leaves) and whether the row goes left there (a missing value follows the node's
        learned side; False at leaves)."""
    def compute_oob(self, x: CoreX, n_jobs: int = 1) -> None:
        """Recompute every tree's out-of-bag predictions on the training rows ``x`` (dense
        or sparse) from the trees' seeds, as a fit with ``oob=True`` would have added them
        (a warm start that switches ``oob_score`` on)."""
    def leaf_offsets(self) -> npt.NDArray[np.int64]:
        """Global leaf numbering: leaf ``l`` of tree ``t`` has global id
        ``leaf_offsets()[t] + leaf_rank[t][l]``; shape (n_trees + 1,)."""
    def apply_leaves(self, x: CoreX, n_jobs: int = 1) -> npt.NDArray[np.int64]:
        """Global leaf id (0..total_leaves) per tree, shape (n_samples, n_trees)."""
    def oob_prediction(self) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]:
        """(sum over OOB trees of leaf values (n_samples, n_outputs), OOB tree count (n_samples,)).

        Only available when fitted with ``oob=True`` and ``bootstrap=True``.
        """
    def feature_importances(self) -> npt.NDArray[np.float64]:
        """Mean decrease in impurity, shared among a projection's features by |weight|; sums to 1."""
    def projection_counts(self) -> npt.NDArray[np.float64]:
        """How often each feature appears in a split projection, normalised to sum to 1 (MORF's pi_k)."""
    def tree_stats(
        self,
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """(n_nodes, max_depth, n_leaves) per tree, each shape (n_trees,)."""
    def tree_nodes(self, tree: int) -> dict[str, npt.NDArray[Any]]:
        """The node table of one tree as numpy arrays: ``left``, ``right`` (-1 at leaves),
        ``threshold``, ``proj_ptr`` (CSR offsets, n_nodes + 1), ``proj_features``,
        ``proj_weights``, ``impurity``, ``n_node_samples``, ``weighted_n_node_samples``,
        ``value`` (n_nodes, n_outputs), ``depth``.

        A row goes left at an inner node when sum(w * x[f]) <= threshold.
        Patch projections are expanded into their features with weight 1. ``proj_pool``
        (uint8) is 1 (2) where the projection is instead the max (min) over its pieces,
        ``proj_piece_len`` consecutive terms each (pooled filters), else 0.
        Categorical terms are read through level maps: node i's maps are
        ``map_node_ptr[i]:map_node_ptr[i + 1]``; map m reads its node's term
        ``map_term[m]`` (its position in the projection) and gives level
        ``map_levels[k]`` the value ``map_values[k]`` for k in
        ``map_ptr[m]:map_ptr[m + 1]``; a level the map lacks reads as missing.
        """
    def leaf_bounds(
        self, x: CoreX, n_jobs: int = 1
    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """Per row, the box (lower, upper), each shape (n_samples, n_features), that is the
        intersection over trees of the row's leaf regions, using the axis-aligned splits on
        the path (single-feature projections); -inf/+inf where unconstrained."""
    def leaf_boxes(self) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """Per leaf (forest-wide ids of :meth:`apply_leaves`), the box (lower, upper), each
        shape (n_leaves, n_features), from the axis-aligned splits on the leaf's path;
        -inf/+inf where unconstrained."""
    def apply_leaves_with_rules(
        self,
        z: npt.NDArray[np.float64],
        dim: npt.NDArray[np.int64],
        threshold: npt.NDArray[np.float64],
        flip: npt.NDArray[np.bool_],
    ) -> npt.NDArray[np.int64]:
        """Leaf ids, shape (n_rows, n_trees), of the rows of ``z`` when node k (nodes of all
        trees concatenated) sends a row left iff ``(z[dim[k]] <= threshold[k]) != flip[k]``."""
    def to_bytes(self) -> bytes:
        """Serialize: header (magic, format version, length, CRC-32) then the forest."""
    @staticmethod
    def from_bytes(data: bytes) -> Forest:
        """Inverse of :meth:`to_bytes`; raises ForestError on any corrupt, truncated or
        newer-version input after validating every index and array length."""
    def params(self) -> dict[str, Any]:
        """The resolved parameters the forest was grown with."""

@final
class ForestPart:
    """Trees ``start..end`` of a forest grown apart from the others (obliqueforest.dask grows
    parts on a cluster's workers), with each tree's out-of-bag rows and leaves. Pickles
    through :meth:`to_bytes`."""

    @staticmethod
    def grow(
        x: CoreX,
        y: npt.NDArray[np.float64],
        sample_weight: Optional[npt.NDArray[np.float64]],
        params: ForestParams,
        start: int,
        end: int,
        n_jobs: Optional[int] = None,
        progress: Optional[Progress] = None,
        n_classes: Optional[int] = None,
    ) -> ForestPart:
        """Grow trees ``start..end`` of the forest ``params`` describes (its
        ``n_estimators`` trees in all), each from its (seed, tree index) streams, on
        ``n_jobs`` threads (the trees do not depend on it), counting finished trees in
        ``progress`` and stopping (ForestError "cancelled") when ``progress.cancel()`` is
        called from another thread. ``n_classes`` replaces the class count of a
        classification task (a worker holding some classes grows trees that know all of
        them)."""
    @property
    def start(self) -> int: ...
    @property
    def n_trees(self) -> int: ...
    @property
    def n_samples(self) -> int:
        """Rows of the data the part was grown on."""
    @staticmethod
    def join(parts: list[ForestPart]) -> Forest:
        """The forest of parts covering trees ``0..n_estimators`` (in any order): equal to
        :meth:`Forest.fit` on the same data, OOB sums included, to the last bit. Raises
        ForestError for gaps, overlaps or parts of different forests."""
    def append_to(self, forest: Forest) -> None:
        """Append this part's trees (which must start at ``forest.n_trees``) to ``forest``
        as ``forest.fit_more`` would grow them, OOB sums included."""
    def to_bytes(self) -> bytes:
        """Serialize: magic ``OBLQPART``, then the OOB records and the trees as a model."""
    @staticmethod
    def from_bytes(data: bytes) -> ForestPart:
        """Inverse of :meth:`to_bytes`, validating the model and every OOB record."""

MODEL_FORMAT_VERSION: int
"""The model file (``.of``) version written, and the newest read (see ``src/model/``)."""

def save_model(path: str, parts: dict[str, Any]) -> None:
    """Writes a model file from its parts (built by ``obliqueforest._io.save``): estimator
    name, n_features, feature_names, classes, params, attributes, the projection record
    ``(tag, arguments)``, and ``forest``, ``rotation`` or ``encoder``; every field is
    checked against the forests first (ForestError naming it)."""

def load_model(path: str) -> dict[str, Any]:
    """Reads and checks a model file (regular files only, at most their declared length);
    returns its parts, the forests as :class:`Forest` objects."""

def _save_model_unchecked_for_test(path: str, parts: dict[str, Any], legacy: bool = False) -> None:
    """:func:`save_model` without the checks: tests craft bad files with it; ``legacy=True``
    writes them as the writer of versions 1 to 4 did (no projection record)."""

def estimator_names() -> list[str]:
    """The class names of the estimators a model file may hold, in the crate's order
    (``model::Estimator::ALL``); ``obliqueforest._estimators`` is checked against them."""

def part_forest(part: ForestPart) -> Forest:
    """The trees of a part as a forest of their own (a per-tree estimator regrows tree
    ``t`` of a forest as the part ``t..t + 1``)."""

def _panic_for_test() -> None:
    """Panics inside the core's panic guard: tests check that a panic reaches Python as
    :class:`ForestInternalError`, not a crash."""
