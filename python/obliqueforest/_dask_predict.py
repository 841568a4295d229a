"""Prediction over dask collections for :mod:`obliqueforest.dask` (its ``predict``,
``predict_proba``, ``apply``, ``score_samples``, ``decision_function`` and ``transform``,
re-exported there): a fitted estimator mapped over the blocks of a dask array or the
partitions of a dask dataframe."""

from __future__ import annotations

import numpy as np

try:
    import dask
    import dask.array as da
    import dask.dataframe as dd
    from distributed import default_client
except ImportError as e:  # pragma: no cover - exercised without the extra
    raise ImportError(
        'obliqueforest.dask needs dask and distributed: pip install "obliqueforest[dask]"'
    ) from e

import pandas as pd
from sklearn.utils.validation import check_is_fitted


def _is_dask(obj):
    return isinstance(obj, (da.Array, dd.DataFrame, dd.Series))


def _local(a):
    a = np.asarray(a)
    return da.from_array(a, chunks=(a.shape[0],) + a.shape[1:])


def predict(estimator, X):
    """``estimator.predict`` over a dask array or dataframe.

    Returns
    -------
    y : dask array of shape (n_samples,), or a dask Series for a dask DataFrame
    """
    return _map(estimator, X, "predict")


def predict_proba(estimator, X):
    """``estimator.predict_proba`` over a dask array or dataframe.

    Returns
    -------
    proba : dask array of shape (n_samples, n_classes), or a dask DataFrame whose columns
        are the classes; for a multi-output classifier, a list with one of these per
        output (``n_classes_[o]`` columns each), as ``estimator.predict_proba`` returns
    """
    return _map(estimator, X, "predict_proba")


def apply(estimator, X):
    """``estimator.apply`` (leaf index per tree) over a dask array or dataframe.

    Returns
    -------
    leaves : dask array of shape (n_samples, n_estimators), or a dask DataFrame
    """
    return _map(estimator, X, "apply")


def score_samples(estimator, X):
    """``estimator.score_samples`` (an isolation forest's scores) over a dask array or
    dataframe.

    Returns
    -------
    scores : dask array of shape (n_samples,), or a dask Series for a dask DataFrame
    """
    return _map(estimator, X, "score_samples")


def decision_function(estimator, X):
    """``estimator.decision_function`` over a dask array or dataframe.

    Returns
    -------
    scores : dask array of shape (n_samples,), or a dask Series for a dask DataFrame
    """
    return _map(estimator, X, "decision_function")


def transform(estimator, X):
    """``estimator.transform`` (e.g. the :class:`~obliqueforest.autoencoder.ForestAutoencoder`
    encoding) over a dask array or dataframe.

    Returns
    -------
    Z : dask array of shape (n_samples, n_components), or a dask DataFrame
    """
    return _map(estimator, X, "transform")


def _call(block, model, method, output, width, dtype):
    """Worker side: the estimator's own method on one block (``output``: which array of a
    multi-output classifier's list of probabilities)."""
    if block.shape[0] == 0:
        return np.empty((0,) if width is None else (0, width), dtype=dtype)
    out = getattr(model, method)(block)
    return np.asarray(out if output is None else out[output])


def _call_frame(frame, model, method, output, meta):
    if meta.ndim == 1:
        out = _call(frame, model, method, output, None, meta.dtype)
        return pd.Series(out, index=frame.index, name=meta.name, dtype=meta.dtype)
    out = _call(frame, model, method, output, meta.shape[1], meta.dtypes.iloc[0])
    return pd.DataFrame(out, index=frame.index, columns=meta.columns).astype(meta.dtypes)


def _shared(obj):
    """``obj`` (the fitted model) as one node the graph's tasks share: scattered to the
    cluster when there is a client (embedded in the graph, a model of many megabytes would
    travel with it: "Sending large graph"), else a delayed object. The collections built
    on it hold the future, which keeps it on the cluster as long as they live."""
    try:
        client = default_client()
    except ValueError:
        return dask.delayed(obj, pure=True)
    return client.scatter(obj, hash=False)  # a key of its own: another call may release one


def _collection(X):
    """``X`` as a dask collection; a local array or frame becomes one partition, scattered
    to the cluster when there is a client rather than embedded in the graph."""
    if _is_dask(X):
        return X
    frame = isinstance(X, pd.DataFrame)
    X = X if frame else np.asarray(X)
    try:
        data = default_client().scatter(X, hash=False)
    except ValueError:
        return dd.from_pandas(X, npartitions=1) if frame else _local(X)
    if frame:
        return dd.from_delayed([data], meta=X.iloc[:0], verify_meta=False)
    return da.from_delayed(data, shape=X.shape, dtype=X.dtype)


def _probe_frame(meta):
    """Two rows of ``meta``'s columns and dtypes: 0 in numeric columns (an autoencoder
    refuses their missing values), missing values in the others (a category column
    holds no 0, and a missing value is what every categorical column takes)."""
    probe = meta.reindex(range(2))
    for j, dtype in enumerate(meta.dtypes):
        if pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype):
            probe.isetitem(j, probe.iloc[:, j].fillna(0))
    return probe.astype(meta.dtypes.to_dict())


def _map(estimator, X, method):
    check_is_fitted(estimator)
    if not hasattr(estimator, method):
        raise AttributeError(f"{type(estimator).__name__} has no method {method!r}")
    X = _collection(X)
    if isinstance(X, dd.Series) or (isinstance(X, da.Array) and X.ndim != 2):
        raise ValueError("X must be 2-dimensional (n_samples, n_features)")
    if isinstance(X, da.Array) and X.numblocks[1] > 1:
        X = X.rechunk({1: -1})
    # the output's width and type, from the method itself on two rows (the autoencoder
    # wants two); a multi-output classifier's predict_proba is a list, one array per output
    if isinstance(X, dd.DataFrame):
        probe = _probe_frame(X._meta)
    else:
        probe = np.zeros((2, X.shape[1]), dtype=X.dtype)
    sample = getattr(estimator, method)(probe)
    several = isinstance(sample, list)
    model = _shared(estimator)
    mapped = [
        _map_output(X, model, method, o if several else None, np.asarray(s), estimator)
        for o, s in enumerate(sample if several else [sample])
    ]
    return mapped if several else mapped[0]


def _map_output(X, model, method, output, sample, estimator):
    width = None if sample.ndim == 1 else sample.shape[1]
    if isinstance(X, da.Array):
        args = (_call, model, method, output, width, sample.dtype)
        if width is None:
            return X.map_blocks(*args, drop_axis=1, dtype=sample.dtype)
        return X.map_blocks(*args, chunks=(X.chunks[0], (width,)), dtype=sample.dtype)
    if width is None:
        meta = pd.Series(np.empty(0, dtype=sample.dtype), name=method)
    else:
        names = range(width)
        if method == "predict_proba":
            names = estimator.classes_ if output is None else estimator.classes_[output]
        meta = pd.DataFrame(np.empty((0, width), dtype=sample.dtype), columns=list(names))
    return X.map_partitions(_call_frame, model, method, output, meta, meta=meta)
