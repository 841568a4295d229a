"""Grow and apply obliqueforest estimators on a Dask cluster.

Needs the optional ``dask`` extra: ``pip install "obliqueforest[dask]"`` (dask with its
array and dataframe parts, and ``distributed``).

:func:`fit` grows any estimator of the package on the workers of a ``distributed``
client and returns it fitted: an ordinary estimator that predicts, saves and pickles
like one fitted locally. Two modes:

``"replicate"``
    The training set (validated and prepared on the client by the estimator's own
    ``fit``) is scattered once to every worker, and the trees are split among the
    workers by index ranges. Tree *t* draws from the (seed, *t*) streams wherever it
    grows, and the parts are joined in the core with the out-of-bag sums added in
    tree order, so the forest is **byte-identical** to ``estimator.fit(X, y)`` with the
    same ``random_state`` (trees, out-of-bag predictions and feature importances).
    Needs the data to fit in the client's and in every worker's memory.
``"partitions"``
    For data larger than one machine: the partitions are split into as many groups of
    consecutive partitions as there are workers (at most one per partition and per tree),
    with about equal numbers of rows; each group's share of the trees (proportional to its
    rows) grows on one worker from the group's rows only, bootstrapping within them. The
    data move at most once: a group runs on the worker that holds most of its rows, and
    the partitions it lacks are sent there. This is *sub-bagging*: each tree sees the rows
    of one group rather than a bootstrap of all rows, so the forest differs from a full
    fit. The forest depends on ``random_state``, the partitioning and the number of
    workers, not on where Dask placed the partitions: the same seed on the same
    partitioning gives the same model. Every tree draws from its (seed, *t*) streams,
    class labels are gathered first so every tree knows every class, and features are
    checked to be identical across partitions. Categorical columns (the estimator's
    ``categorical_features``, e.g. a DataFrame's text, category and bool columns) have
    their levels fixed from all the data before any tree grows: one pass over the
    partitions gathers each categorical column's distinct values, merged in partition
    order and ordered as a local fit orders them (a category dtype's categories, the
    same in every partition; else the sorted distinct values), and every group codes its
    rows through those levels, so every tree knows every level, and ``categories_`` is
    a local fit's. With a few workers holding large random
    partitions its accuracy is close to a full fit's (``benches/dask_bench.py``
    measures it). ``class_weight="balanced"`` balances each group's rows; ``oob_score``
    and ``estimators_samples_`` are not available (a tree's rows are its group's).
``"auto"``
    ``"replicate"`` when three float32 copies of X fit in the smallest worker's memory
    limit, else ``"partitions"``; the choice is logged (logger ``obliqueforest.dask``)
    and stored in the fitted attribute ``dask_mode_``.

:func:`predict`, :func:`predict_proba`, :func:`apply`, :func:`transform`,
:func:`score_samples` and :func:`decision_function` run the estimator's own methods over the blocks of a dask array (``map_blocks``) or the
partitions of a dask dataframe (``map_partitions``) and return dask collections (a
multi-output classifier's ``predict_proba``: a list of them, one per output). The fitted
model is scattered to the cluster once, not embedded in the graph, and so are numpy or
pandas inputs: nothing this module sends makes Dask warn of a large graph (a collection
made with ``da.from_array(X)`` carries ``X`` in its own graph: load large data with Dask
directly, or scatter it).

Interrupting a fit (Ctrl-C, KeyboardInterrupt) or an error in one of its tasks cancels
its tasks: a watcher on each worker stops the trees still growing within about a second,
so the workers are free for the next job.

A worker lost during a fit has its tasks rerun elsewhere by Dask; in replicate mode the
result is still identical, since every tree depends on its index only.
"""

from __future__ import annotations

import logging
import threading
import uuid

# first: it raises the ImportError that names the extra when dask or distributed is missing
from ._dask_predict import (  # isort: skip
    _is_dask,
    apply,
    decision_function,
    predict,
    predict_proba,
    score_samples,
    transform,
)

import dask
import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
from distributed import default_client, get_worker, wait
from scipy import sparse
from sklearn.base import clone, is_classifier

from . import _core
from ._forest import FOREST_GROWER, CoreSparse, _BaseForest
from ._progress import _make_bar
from ._tables import categorical_mask, column_levels

__all__ = [
    "MODES",
    "apply",
    "decision_function",
    "fit",
    "predict",
    "predict_proba",
    "score_samples",
    "transform",
]

MODES = ("auto", "replicate", "partitions")
"""The fit modes of :func:`fit`."""

logger = logging.getLogger(__name__)

# "auto" replicates while this many float32 copies of X fit in a worker's memory limit:
# the scattered copy, the core's column-major copy, and room for the trees and y.
_REPLICATE_COPIES = 3
# replicate mode: tasks of trees per worker thread
_TASKS_PER_THREAD = 4
# how often a worker checks that its trees are still wanted, and reports those finished
# for the progress bar
_WATCH_SECONDS = 0.25


# ----------------------------------------------------------------------------- fit


def fit(estimator, X, y=None, sample_weight=None, client=None, mode="auto"):
    """Fit ``estimator`` on a Dask cluster.

    Parameters
    ----------
    estimator : obliqueforest estimator
        Any forest of the package (RandomForest*, SPORF*, MORF*, ObliqueForest*, the forests
        grown without targets: IsolationForest, UnsupervisedRandomForest), or a rotation
        ensemble (replicate mode: each rotation's micro-forest grows on a worker). Fitted
        in place.
    X : dask array or dask DataFrame of shape (n_samples, n_features)
        Training data, partitioned by rows (numpy arrays and pandas frames are accepted:
        one partition, scattered to the workers). Categorical columns (the estimator's
        ``categorical_features``) are taken in both modes, with the levels a local fit
        finds (see the module documentation).
    y : dask array or dask Series of shape (n_samples,), default=None
        Targets, partitioned like X (the same number of partitions with the same rows);
        None for a forest grown without targets. In partitions mode an isolation forest
        draws ``max_samples`` rows per tree from its group's rows (``max_samples_`` is the
        first group's), and needs ``contamination="auto"``: a quantile of every row's score
        is not known to any one worker.
    sample_weight : dask array or dask Series of shape (n_samples,), default=None
        Partitioned like X.
    client : distributed.Client, default=None
        None uses the default client.
    mode : {"auto", "replicate", "partitions"}, default="auto"
        See the module documentation.

    Returns
    -------
    estimator : the fitted estimator, with ``dask_mode_`` set to the mode used; in
        partitions mode also ``dask_tree_rows_`` (ndarray of shape (n_estimators,)):
        the number of rows of the group of partitions each tree grew on.

    Raises
    ------
    ValueError
        X, y and sample_weight partitioned differently, partitions with different
        features, infinity in a partition (NaN is a missing value), or any error of the
        estimator's fit.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if sparse.issparse(X):
        raise ValueError(
            "obliqueforest.dask.fit takes dense X (a dask array or DataFrame); fit scipy "
            "sparse X with estimator.fit(X, y), which does not densify it"
        )
    client = client or default_client()
    if getattr(estimator, "warm_start", False) and hasattr(estimator, "_forest"):
        raise ValueError(
            "obliqueforest.dask grows whole forests; warm_start on a fitted estimator is "
            "not supported (refit, or grow the extra trees with estimator.fit locally)"
        )
    local = not _is_dask(X)
    if local and (_is_dask(y) or _is_dask(sample_weight)):
        raise ValueError("give X as a dask collection when y or sample_weight is one")
    if not local:
        X, y, sample_weight = _check_partitioned(X, y, sample_weight)
    rotation = _is_rotation_ensemble(estimator)
    estimator.__dict__.pop("dask_tree_rows_", None)  # from an earlier partitions fit
    if mode == "auto" and rotation:
        mode = "replicate"
        logger.info("obliqueforest.dask: mode='replicate' (rotation ensembles rank on all rows)")
    elif mode == "auto":
        mode = _choose_mode(client, X)
    if mode == "partitions" and rotation:
        raise ValueError(
            "rotation ensembles rank rotations on all rows; fit them with mode='replicate'"
        )
    if mode == "partitions" and getattr(estimator, "store_leaf_values", False):
        raise ValueError(
            "store_leaf_values keeps the training rows of each leaf by their index in the "
            "whole training set, which sub-bagging on partitions does not see; fit with "
            "mode='replicate'"
        )
    if mode == "replicate":
        if not local:
            X, y, sample_weight = dask.compute(X, y, sample_weight)
        if rotation:
            from .rotation import ROTATION_RUNNER

            with _installed(ROTATION_RUNNER, _RotationRunner(client)):
                estimator.fit(X, y, sample_weight=sample_weight)
        else:
            with _installed(FOREST_GROWER, _ReplicateGrower(client)):
                estimator.fit(X, y, sample_weight=sample_weight)
    elif local:  # one partition, scattered to a worker rather than embedded in the graph
        X, y, sample_weight = (
            v if v is None or isinstance(v, (pd.DataFrame, pd.Series)) else np.asarray(v)
            for v in (X, y, sample_weight)
        )
        columns = list(X.columns) if isinstance(X, pd.DataFrame) else list(range(X.shape[1]))
        meta = X.iloc[:0] if isinstance(X, pd.DataFrame) else X[:0]
        blocks = [
            None if v is None else [client.scatter(v, hash=False)] for v in (X, y, sample_weight)
        ]
        _fit_partitions(client, estimator, *blocks, columns, getattr(y, "ndim", 1), meta)
    else:
        columns = list(X.columns) if isinstance(X, dd.DataFrame) else list(range(X.shape[1]))
        meta = X._meta if isinstance(X, dd.DataFrame) else np.empty((0, X.shape[1]), X.dtype)
        blocks = [_blocks(v) for v in (X, y, sample_weight)]
        _fit_partitions(client, estimator, *blocks, columns, 1, meta)
    estimator.dask_mode_ = mode
    return estimator


class _installed:
    """Sets a context variable for the duration of a ``with`` block."""

    def __init__(self, var, value):
        self.var, self.value = var, value

    def __enter__(self):
        self.token = self.var.set(self.value)

    def __exit__(self, *exc):
        self.var.reset(self.token)


def _is_rotation_ensemble(estimator):
    from .rotation import _BaseRotationEnsemble

    if isinstance(estimator, _BaseRotationEnsemble):
        return True
    if not isinstance(estimator, _BaseForest):
        raise TypeError(
            "obliqueforest.dask.fit takes an obliqueforest forest or rotation ensemble, "
            f"got {type(estimator).__name__}"
        )
    return False


# ------------------------------------------------------------------ input checks


def _check_partitioned(X, y, sample_weight):
    """Returns X, y, sample_weight as dask collections partitioned alike by rows.

    A dask array's columns are gathered into one chunk per row block. Raises ValueError
    when y or the weights are partitioned differently from X.
    """
    if isinstance(X, dd.Series) or (isinstance(X, da.Array) and X.ndim != 2):
        raise ValueError("X must be 2-dimensional (n_samples, n_features)")
    if isinstance(X, da.Array):
        if any(np.isnan(c) for c in X.chunks[0]):
            X = X.compute_chunk_sizes()
        if X.numblocks[1] > 1:
            X = X.rechunk({1: -1})
    out = [X]
    for name, v in (("y", y), ("sample_weight", sample_weight)):
        if v is None:
            out.append(None)
            continue
        if not _is_dask(v):
            raise ValueError(f"{name} must be a dask collection partitioned like X")
        if isinstance(v, dd.DataFrame):
            if len(v.columns) != 1:
                raise ValueError(
                    f"{name} must be 1-dimensional, got {len(v.columns)} columns (a multi-output "
                    "y is fitted from local arrays, in mode='replicate')"
                )
            v = v[v.columns[0]]
        if isinstance(v, da.Array):
            if v.ndim == 2 and v.shape[1] == 1:
                v = v[:, 0]
            if v.ndim != 1:
                raise ValueError(
                    f"{name} must be 1-dimensional, got shape {v.shape} (a multi-output y is "
                    "fitted from local arrays, in mode='replicate')"
                )
            if any(np.isnan(c) for c in v.chunks[0]):
                v = v.compute_chunk_sizes()
        n_x, n_v = _n_partitions(X), _n_partitions(v)
        if n_x != n_v:
            raise ValueError(
                f"X has {n_x} partitions and {name} has {n_v}: partition them alike "
                "(the same number of partitions with the same rows)"
            )
        if isinstance(X, da.Array) and isinstance(v, da.Array) and X.chunks[0] != v.chunks[0]:
            raise ValueError(
                f"{name}'s chunks {v.chunks[0]} are not aligned with X's row chunks "
                f"{X.chunks[0]}; rechunk it, e.g. {name}.rechunk({{0: X.chunks[0]}})"
            )
        out.append(v)
    return tuple(out)


def _n_partitions(c):
    return c.npartitions if isinstance(c, (dd.DataFrame, dd.Series)) else c.numblocks[0]


def _blocks(c):
    """The row partitions of a collection as a list of delayed objects, in order."""
    if c is None:
        return None
    if isinstance(c, da.Array):
        return list(c.to_delayed().ravel())
    return list(c.to_delayed())


def _n_rows_and_features(X):
    if not _is_dask(X) or isinstance(X, da.Array):
        return int(X.shape[0]), int(X.shape[1])
    return int(X.map_partitions(len).sum().compute()), len(X.columns)


def _choose_mode(client, X):
    n, p = _n_rows_and_features(X)
    limits = [w.get("memory_limit") or 0 for w in _workers(client).values()]
    limit = min((m for m in limits if m), default=0)
    need = _REPLICATE_COPIES * 4 * n * p
    mode = "replicate" if limit == 0 or need <= limit else "partitions"
    logger.info(
        "obliqueforest.dask: mode=%r (X is %d x %d; %d float32 copies need %.1f MiB, the "
        "smallest worker memory limit is %.1f MiB)",
        mode,
        n,
        p,
        _REPLICATE_COPIES,
        need / 2**20,
        limit / 2**20,
    )
    return mode


# ------------------------------------------------------------- growing on workers


def _worker_threads():
    worker = get_worker()
    return int(getattr(worker, "nthreads", None) or worker.state.nthreads)


def _aligned(a):
    """``a`` itself, or an aligned copy: arrays Dask deserialises may sit at any byte
    offset, and the core borrows only aligned memory (sparse X: each of its arrays)."""
    if isinstance(a, CoreSparse):
        return a._replace(
            indptr=_aligned(a.indptr), indices=_aligned(a.indices), data=_aligned(a.data)
        )
    if a is None or not isinstance(a, np.ndarray):
        return a
    return np.require(a, requirements="A")


def _grow_part(X32, y_core, sw, params, start, end, topic, n_jobs=None, n_classes=None):
    """Worker side: trees ``start..end`` on ``n_jobs`` threads (None: the worker's),
    reporting progress; ``n_classes`` replaces the class count of ``params``.

    A watcher thread stops the trees once the task is no longer wanted (the client was
    interrupted, cancelled the fit or went away): the worker's state marks the running
    task cancelled, and the watcher trips the core's cancel switch. Dask itself cannot
    stop a task that runs, so without this the abandoned trees would grow to the end.
    """
    n_jobs = n_jobs or _worker_threads()
    X32, y_core, sw = _aligned(X32), _aligned(y_core), _aligned(sw)
    worker = get_worker()
    key = worker.get_current_task()
    progress = _core.Progress()
    finished = threading.Event()

    def watch():
        sent = 0
        while not finished.wait(_WATCH_SECONDS):
            if _abandoned(worker, key):
                progress.cancel()
                return
            done = progress.trees_done
            if topic is not None and done > sent:
                worker.log_event(topic, {"start": start, "done": done})
                sent = done

    watcher = threading.Thread(target=watch, daemon=True, name="obliqueforest-dask-watch")
    watcher.start()
    try:
        part = _core.ForestPart.grow(
            X32, y_core, sw, params, start, end, n_jobs, progress, n_classes=n_classes
        )
    finally:
        finished.set()
        watcher.join()
    if topic is not None:
        worker.log_event(topic, {"start": start, "done": part.n_trees})
    return part


def _abandoned(worker, key):
    """Whether the worker no longer wants the result of task ``key``."""
    task = worker.state.tasks.get(key)
    return task is None or task.state in ("cancelled", "released", "forgotten")


def _gather(client, futures):
    """``client.gather(futures)``; when it is interrupted (Ctrl-C) or fails, the futures
    are cancelled first, so that the workers stop growing trees nobody will read."""
    try:
        return client.gather(futures)
    except BaseException:
        client.cancel(futures)
        raise


def _split(n_items, shares):
    """Contiguous ranges of ``range(n_items)`` proportional to ``shares`` (largest
    remainders; empty ranges dropped), as (share index, start, end)."""
    shares = np.asarray(shares, dtype=np.float64)
    exact = n_items * shares / shares.sum()
    counts = np.floor(exact).astype(np.int64)
    for i in np.argsort(-(exact - counts), kind="stable")[: n_items - int(counts.sum())]:
        counts[i] += 1
    ranges, start = [], 0
    for i, c in enumerate(counts):
        if c:
            ranges.append((i, start, start + int(c)))
            start += int(c)
    return ranges


class _Progress:
    """Client side of the progress bar: sums the trees finished on every worker."""

    def __init__(self, client, total, verbose):
        self.client, self.total = client, total
        self.topic = f"obliqueforest-progress-{uuid.uuid4().hex}" if verbose else None

    def __enter__(self):
        if self.topic is not None:
            self.bar = _make_bar(self.total, "trees (cluster)")
            self.done = {}
            self.lock = threading.Lock()
            self.client.subscribe_topic(self.topic, self._event)
        return self

    def _event(self, event):
        _, msg = event
        with self.lock:
            before = sum(self.done.values())
            self.done[msg["start"]] = max(self.done.get(msg["start"], 0), msg["done"])
            step = sum(self.done.values()) - before
            if step > 0:
                self.bar.update(step)

    def __exit__(self, *exc):
        if self.topic is not None:
            self.client.unsubscribe_topic(self.topic)
            self.bar.close()


def _workers(client):
    """The cluster's workers as the scheduler lists them now (address -> its description),
    asked of the scheduler itself: ``client.scheduler_info()`` returns the client's cached
    copy, which the client's periodic refresh (recent versions fetch no workers in it) can
    replace between the fetch and the read, so it may list no workers at all. A cluster
    without workers is a clear error."""
    workers = client.sync(client.scheduler.identity)["workers"]
    if not workers:
        raise ValueError("the Dask cluster has no workers")
    return workers


def _total_threads(client):
    return sum(w.get("nthreads", 1) for w in _workers(client).values())


class _ReplicateGrower:
    """Grows a core forest's trees on the workers from one broadcast copy of the data
    (installed as the estimator's FOREST_GROWER).

    The trees go out in _TASKS_PER_THREAD one-thread tasks per worker thread rather than
    one task per worker, so that Dask balances them (work stealing, reruns after a lost
    worker) the way the core's thread pool balances trees on one machine; each task
    copies the data into the core's layout once, a small cost next to its trees.
    """

    def __init__(self, client):
        self.client = client

    def __call__(self, estimator, X32, y_core, sw, params):
        client = self.client
        n_trees = int(params.n_estimators)
        n_tasks = min(n_trees, _TASKS_PER_THREAD * _total_threads(client))
        data = client.scatter(
            [X32, y_core] + ([] if sw is None else [sw]), broadcast=True, hash=False
        )
        xf, yf = data[0], data[1]
        wf = data[2] if sw is not None else None
        with _Progress(client, n_trees, estimator.verbose) as progress:
            futures = [
                client.submit(
                    _grow_part, xf, yf, wf, params, start, end, progress.topic, 1, pure=False
                )
                for _, start, end in _split(n_trees, np.ones(n_tasks))
            ]
            parts = _gather(client, futures)
        del futures, data
        return _core.ForestPart.join(parts)


# ----------------------------------------------------------------- partitions mode


def _partition(X, y, sw, index, columns):
    """Worker side: one row partition, checked (row counts, features) and kept."""
    n = X.shape[0]
    if isinstance(X, pd.DataFrame):
        if list(X.columns) != columns:
            raise ValueError(
                f"partition {index} has columns {list(X.columns)}, the others "
                f"{columns}: features must be identical across partitions"
            )
    elif X.ndim != 2 or X.shape[1] != len(columns):
        raise ValueError(
            f"partition {index} has shape {X.shape}, expected {len(columns)} features: "
            "features must be identical across partitions"
        )
    for name, v in (("y", y), ("sample_weight", sw)):
        if v is not None and len(v) != n:
            raise ValueError(
                f"partition {index}: X has {n} rows, {name} has {len(v)}; the chunks of "
                f"{name} are not aligned with X's"
            )
    return X, y, sw


def _summary(part, classify, categorical):
    """Worker side: a partition's rows, classes (when ``classify``) and the distinct
    values of its columns ``categorical`` (Series in order of appearance, each of its
    column's dtype)."""
    X, y, _ = part
    classes = np.unique(np.asarray(y)) if classify else None
    distinct = [_series(X, j).drop_duplicates() for j in categorical]
    return X.shape[0], classes, distinct


def _series(X, j):
    """Column j of a partition as a pandas Series."""
    return X.iloc[:, j] if isinstance(X, pd.DataFrame) else pd.Series(X[:, j])


def _categorical_columns(estimator, meta):
    """The columns ``estimator`` fits as categorical, from ``categorical_features`` and
    X's dtypes (``meta``, X without rows), as its own fit resolves them."""
    if getattr(estimator, "categorical_features", None) is None:
        return np.zeros(meta.shape[1], dtype=bool)
    return categorical_mask(estimator.categorical_features, meta)


def _levels(mask, summaries):
    """Per column its levels (None for a numeric one) from every partition's distinct
    values: merged in partition order, they are the values of the whole column in order
    of first appearance, which :func:`~obliqueforest._tables.column_levels` orders as a
    local fit does."""
    levels = [None] * len(mask)
    for k, j in enumerate(np.flatnonzero(mask)):
        levels[j] = column_levels(pd.concat([s[2][k] for s in summaries], ignore_index=True))
    return levels


def _with_levels(X, levels):
    """A worker's rows with every categorical column ``j`` as a pandas Categorical of
    ``levels[j]``: the estimator's fit then takes each column's levels from its dtype,
    the same on every worker, rather than from the worker's rows (an array becomes a
    DataFrame of integer column names, which scikit-learn does not take as names)."""
    frame = (X if isinstance(X, pd.DataFrame) else pd.DataFrame(X)).copy(deep=False)
    for j, these in enumerate(levels):
        if these is not None:
            frame.isetitem(j, pd.Categorical(frame.iloc[:, j], categories=these))
    return frame


def _concat(blocks):
    if isinstance(blocks[0], (pd.DataFrame, pd.Series)):
        return pd.concat(blocks) if len(blocks) > 1 else blocks[0]
    return np.concatenate(blocks) if len(blocks) > 1 else _aligned(blocks[0])


def _concat_features(blocks):
    """A worker's row partitions of X as one array the core fits without another copy:
    numeric numpy blocks go straight into one float32 array in Fortran order (the
    layout the core borrows; row-major X of more than 16 features it would copy once
    more, column by column); other blocks (frames, other dtypes) as :func:`_concat`."""
    first = blocks[0]
    if not (
        isinstance(first, np.ndarray)
        and first.ndim == 2
        and all(isinstance(b, np.ndarray) and b.dtype.kind in "fiub" for b in blocks)
        and {b.dtype for b in blocks} <= {np.dtype(np.float32), np.dtype(np.float64)}
    ):
        return _concat(blocks)
    narrow = first.flags.c_contiguous and first.shape[1] <= 16  # the core borrows it
    if len(blocks) == 1 and (first.dtype != np.float32 or first.flags.f_contiguous or narrow):
        # one block: the estimator's own conversion makes the one copy (float64 -> float32
        # in Fortran order) or none
        return _aligned(first)
    out = np.empty((sum(b.shape[0] for b in blocks), first.shape[1]), np.float32, order="F")
    start = 0
    for b in blocks:
        out[start : start + b.shape[0]] = b
        start += b.shape[0]
    return out


class _PartitionGrower:
    """Worker side of partitions mode, installed as FOREST_GROWER around the estimator's
    own fit on the worker's rows: grows trees start..end with the client's seed and with
    the labels coded against every class of the data."""

    def __init__(self, classes, seed, start, end, topic):
        self.classes, self.seed = classes, seed
        self.start, self.end, self.topic = start, end, topic

    def __call__(self, estimator, X32, y_core, sw, params):
        params = params.with_seed(int(self.seed))
        n_classes = None
        if self.classes is not None:
            codes = np.searchsorted(self.classes, estimator.classes_)
            y_core = codes[y_core.astype(np.int64)].astype(np.float64)
            n_classes = len(self.classes)
        return _grow_part(
            X32, y_core, sw, params, self.start, self.end, self.topic, n_classes=n_classes
        )


def _fit_worker_rows(estimator, parts, classes, seed, start, end, topic, levels):
    """Worker side: the estimator's own fit on the worker's partitions, growing trees
    start..end, categorical columns coded through ``levels`` (None: every column
    numeric). Returns the fitted estimator (without its forest) and the part."""
    if levels is None:
        X = _concat_features([p[0] for p in parts])
    else:  # (the blocks as they are: float levels read in another precision would not match)
        X = _with_levels(_concat([p[0] for p in parts]), levels)
    y = None if parts[0][1] is None else _concat([p[1] for p in parts])
    sw = None if parts[0][2] is None else _concat([np.asarray(p[2]) for p in parts])
    est = clone(estimator)
    with _installed(FOREST_GROWER, _PartitionGrower(classes, seed, start, end, topic)):
        est.fit(X, y, sample_weight=sw)
    part = est.__dict__.pop("_forest")
    return est, part


def _fit_partitions(client, estimator, xs, ys, ws, columns, y_ndim, meta):
    """Partitions mode on the row blocks ``xs``, ``ys``, ``ws`` (delayed objects or
    futures; ``ws`` may be None); ``meta`` is X without rows (its columns' dtypes)."""
    if getattr(estimator, "oob_score", False):
        raise ValueError(
            "oob_score is not available in partitions mode (a row is out of bag only for "
            "its own worker's trees); use mode='replicate' or score held-out data"
        )
    if y_ndim == 2:
        raise ValueError(
            "a 2-D y (multi-output) is not available in partitions mode (each worker would "
            "code its own classes per output); use mode='replicate'"
        )
    if getattr(estimator, "contamination", "auto") != "auto":
        raise ValueError(
            "contamination as a fraction sets offset_ from the scores of every row, which "
            "no worker holds in partitions mode; use contamination='auto' or "
            "mode='replicate'"
        )
    classify = is_classifier(estimator)
    mask = _categorical_columns(estimator, meta)
    ys = ys or [None] * len(xs)
    ws = ws or [None] * len(xs)
    checked = [
        dask.delayed(_partition, pure=True)(x, yb, wb, i, columns)
        for i, (x, yb, wb) in enumerate(zip(xs, ys, ws))
    ]
    parts = client.compute(checked)
    try:
        wait(parts)
        summaries = client.gather(
            client.map(
                _summary, parts, classify=classify, categorical=np.flatnonzero(mask), pure=False
            )
        )
        rows = np.array([s[0] for s in summaries], dtype=np.int64)
        classes = np.unique(np.concatenate([s[1] for s in summaries])) if classify else None
        levels = _levels(mask, summaries) if mask.any() else None
        workers = sorted(_workers(client))
        n_trees = int(estimator.n_estimators)
        # the model depends on the partitioning and the number of workers only: the
        # groups are runs of consecutive partitions, whichever worker holds them
        groups = _groups(rows, min(len(workers), len(parts), n_trees))
        group_rows = [int(rows[g].sum()) for g in groups]
        ranges = _split(n_trees, group_rows)
        placed = _place(groups, rows, client.who_has(parts), parts, workers)
        seed = estimator._draw_seed()
        with _Progress(client, n_trees, estimator.verbose) as progress:
            futures = [
                client.submit(
                    _fit_worker_rows,
                    clone(estimator),
                    [parts[i] for i in groups[k]],
                    classes,
                    seed,
                    start,
                    end,
                    progress.topic,
                    levels,
                    workers=[placed[k]],
                    allow_other_workers=True,
                    pure=False,
                )
                for k, start, end in ranges
            ]
            results = _gather(client, futures)
    except BaseException:
        client.cancel(parts)
        raise
    fitted = [r[0] for r in results]
    first = fitted[0]
    for other in fitted[1:]:
        if other.n_features_in_ != first.n_features_in_ or not np.array_equal(
            getattr(other, "feature_names_in_", None), getattr(first, "feature_names_in_", None)
        ):
            raise ValueError("partitions on different workers have different features")
    # the estimator takes the attributes its own fit set on a worker, with every class,
    # in one step (as a local fit publishes its state): a reader or a failed fit sees the
    # previous model whole, never a mixture
    params = estimator.get_params(deep=False)
    is_fit_state = getattr(estimator, "_fit_state", lambda name: name.endswith("_"))
    state = {k: v for k, v in vars(estimator).items() if k in params or not is_fit_state(k)}
    state.update((k, v) for k, v in vars(first).items() if k not in params)
    # a tree's in-bag rows are rows of its group, not of X: no estimators_samples_
    state.pop("_n_samples_fit", None)
    if classify:
        state["classes_"] = classes
        state["n_classes_"] = len(classes)
    state["_seed"] = seed
    if levels is not None:
        state["_categories"] = levels  # (a worker's are its dtype's categories: the same)
    state["_forest"] = _core.ForestPart.join([r[1] for r in results])
    tree_rows = np.empty(n_trees, dtype=np.int64)
    for k, start, end in ranges:
        tree_rows[start:end] = group_rows[k]
    state["dask_tree_rows_"] = tree_rows
    estimator.__dict__ = state
    del parts


def _groups(rows, n_groups):
    """Partitions ``0..len(rows)-1`` in ``n_groups`` runs of consecutive partitions with
    about equal numbers of rows (each run at least one partition), as lists of indices."""
    n = len(rows)
    ends = np.concatenate([[0], np.cumsum(rows)])  # rows before partition i
    starts = [0]
    for j in range(1, n_groups):
        target = j * ends[-1] / n_groups
        start = int(np.argmin(np.abs(ends - target)))
        starts.append(min(max(start, starts[-1] + 1), n - (n_groups - j)))
    bounds = starts + [n]
    return [list(range(bounds[j], bounds[j + 1])) for j in range(n_groups)]


def _place(groups, rows, who_has, parts, workers):
    """A worker per group, each a different one: the worker holding most of the group's
    rows where possible, so that few partitions move. Placement changes no tree."""
    local = {}
    for k, group in enumerate(groups):
        for i in group:
            for w in who_has.get(parts[i].key, ()):
                local[k, w] = local.get((k, w), 0) + int(rows[i])
    placed, taken = {}, set()
    for (k, w), _ in sorted(local.items(), key=lambda kv: (-kv[1], kv[0])):
        if k not in placed and w not in taken:
            placed[k], taken = w, taken | {w}
    free = [w for w in workers if w not in taken]
    for k in range(len(groups)):
        if k not in placed:
            placed[k] = free.pop(0) if free else workers[k % len(workers)]
    return placed


# ------------------------------------------------------------------ rotation ensembles


class _RotationRunner:
    """Grows a rotation ensemble's per-rotation forests on the workers (installed as
    obliqueforest.rotation.ROTATION_RUNNER): the scaled data go to every worker once,
    and each task rotates them and grows one rotation's trees."""

    def __init__(self, client):
        self.client = client
        self.data = None

    def share(self, X_scaled, y, sample_weight):
        self.data = self.client.scatter([X_scaled, y, sample_weight], broadcast=True, hash=False)

    def _part(self, rotation, params, start):
        future = self.client.submit(
            _grow_rotation, *self.data, rotation, params, start, params.n_estimators, pure=False
        )
        return _gather(self.client, [future])[0]

    def fit(self, rotation, params):
        return _core.ForestPart.join([self._part(rotation, params, 0)])

    def fit_more(self, forest, rotation, params):
        self._part(rotation, params, forest.n_trees).append_to(forest)


def _grow_rotation(X_scaled, y, sw, rotation, params, start, end):
    """Worker side: one rotation's trees start..end, on the data rotated here."""
    from threadpoolctl import threadpool_limits

    from .rotation import rotate

    with threadpool_limits(limits=1, user_api="blas"):
        X_rot = rotate(_aligned(X_scaled), rotation)
    return _grow_part(X_rot, y, sw, params, start, end, None)
