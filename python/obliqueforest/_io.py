"""Safe model files.

``estimator.save(path)`` writes, and :func:`load` reads, this layout::

    b"OBLQPY01"                      8 bytes, file magic
    header length                   u32 little-endian
    header                          UTF-8 JSON: estimator class, its parameters (plain
                                    JSON values only), fitted attributes (classes_,
                                    n_features_in_, feature_names_in_, seed), and the
                                    byte lengths of the forests that follow
    forests                         each a core model: magic, format version, length,
                                    CRC-32, payload (see the Rust module ``serialize``)
    CRC-32 of everything above      u32 little-endian

Loading checks the magic, both checksums, the JSON schema, that the class is one of
this library's estimators, and hands each forest to the Rust core, which validates
every index and length. Nothing is unpickled and no code from the file runs.
"""

from __future__ import annotations

import json
import struct
import zlib

import numpy as np

from . import _core

MAGIC = b"OBLQPY01"


def _class_registry():
    from . import _forest, morf

    classes = [
        _forest.ObliqueForestClassifier,
        _forest.ObliqueForestRegressor,
        _forest.RandomForestClassifier,
        _forest.RandomForestRegressor,
        _forest.SPORFClassifier,
        _forest.SPORFRegressor,
        morf.MORFClassifier,
        morf.MORFRegressor,
    ]
    return {c.__name__: c for c in classes}


def _jsonable_params(est):
    from .projections import _Projection

    params = {}
    for k, v in est.get_params(deep=False).items():
        if isinstance(v, _Projection):
            v = {"__projection__": type(v).__name__, **v._state()}
        elif isinstance(v, np.integer):
            v = int(v)
        elif isinstance(v, np.floating):
            v = float(v)
        elif isinstance(v, tuple):
            v = list(v)
        elif not isinstance(v, (int, float, str, bool, list, dict, type(None))):
            if k == "random_state":
                v = None  # a RandomState object has no safe plain form; the seed is stored
            else:
                raise TypeError(f"parameter {k}={v!r} cannot be saved in the safe format")
        params[k] = v
    return params


def save(est, path):
    """Writes a fitted obliqueforest estimator to ``path`` (see module docstring)."""
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(est, "_forest")
    forest_bytes = est._forest.to_bytes()
    header = {
        "class": type(est).__name__,
        "params": _jsonable_params(est),
        "n_features_in_": int(est.n_features_in_),
        "seed": int(est._seed),
        "forests": [len(forest_bytes)],
    }
    if hasattr(est, "classes_"):
        classes = est.classes_
        if classes.dtype.kind not in "iubfU":
            raise TypeError("only numeric, bool or string class labels can be saved")
        header["classes_"] = classes.tolist()
        header["classes_dtype"] = classes.dtype.str
    if hasattr(est, "feature_names_in_"):
        header["feature_names_in_"] = [str(n) for n in est.feature_names_in_]
    head = json.dumps(header).encode()
    body = MAGIC + struct.pack("<I", len(head)) + head + forest_bytes
    with open(path, "wb") as f:
        f.write(body + struct.pack("<I", zlib.crc32(body)))


def load(path):
    """Reads an estimator written by ``estimator.save(path)``.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    estimator : fitted obliqueforest estimator

    Raises
    ------
    obliqueforest.ForestError
        (a ValueError) if the file is not a model, is truncated or damaged, or comes from a
        newer format version.
    """
    with open(path, "rb") as f:
        data = f.read()
    err = _core.ForestError
    if len(data) < len(MAGIC) + 8 or data[: len(MAGIC)] != MAGIC:
        raise err("not an obliqueforest model file (bad magic bytes or truncated)")
    body, (crc,) = data[:-4], struct.unpack("<I", data[-4:])
    if zlib.crc32(body) != crc:
        raise err("model file checksum mismatch: the file is truncated or damaged")
    (head_len,) = struct.unpack("<I", body[8:12])
    if 12 + head_len > len(body):
        raise err("model file header length is out of range")
    try:
        header = json.loads(body[12 : 12 + head_len].decode())
        cls = _class_registry()[header["class"]]
        params = header["params"]
        lengths = [int(n) for n in header["forests"]]
        n_features = int(header["n_features_in_"])
        seed = int(header["seed"])
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as e:
        raise err(f"model file header is malformed: {e!r}") from None
    if not isinstance(params, dict) or len(lengths) != 1 or lengths[0] < 0:
        raise err("model file header is malformed")
    offset = 12 + head_len
    if offset + lengths[0] != len(body):
        raise err("model file forest length does not match the file size")
    forest = _core.Forest.from_bytes(body[offset:])
    if forest.n_features != n_features:
        raise err("model file: forest and header disagree on n_features")
    params = dict(params)
    if isinstance(params.get("projection"), dict):
        from . import projections

        spec = dict(params["projection"])
        name = spec.pop("__projection__", None)
        if name not in projections.__all__:
            raise err(f"model file names an unknown projection {name!r}")
        params["projection"] = getattr(projections, name)._from_state(spec, forest)
    try:
        est = cls(**params)
    except TypeError as e:
        raise err(f"model file parameters do not fit {cls.__name__}: {e}") from None
    est._forest = forest
    est._seed = seed
    est.n_features_in_ = n_features
    if "feature_names_in_" in header:
        est.feature_names_in_ = np.asarray(header["feature_names_in_"], dtype=object)
    if "classes_" in header:
        est.classes_ = np.asarray(header["classes_"], dtype=np.dtype(header["classes_dtype"]))
        est.n_classes_ = len(est.classes_)
        if forest.n_outputs != len(est.classes_):
            raise err("model file: forest and header disagree on the number of classes")
    return est
