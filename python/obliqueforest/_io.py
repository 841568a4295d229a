"""Safe model files: ``estimator.save(path)`` and :func:`load`.

The file format is implemented once, in the Rust crate (``src/model/``; a Rust program
reads the same files with ``obliqueforest::Model::load``). This module only takes an
estimator apart into plain data (parameters, classes, feature names, fitted attributes, the
projection record) and core forests, and puts it back together; the crate writes, reads and
checks the file: every header field against the forests, the checksum, and that the file is
a regular file of its declared length. Nothing is unpickled and no code from the file runs.

The projection record is the family the estimator's parameters resolve to (its projection
object's registry tag and ``_family_args``), which the crate checks against every forest.
Whether the parameters read back resolve to that record is this module's judgement
(:func:`_check_projection_record`): the rules that resolve them (MORF's choice of family,
defaults left to None) are the estimators', and live only here in Python.

Estimator modules are not imported here (they import this module for ``save``); a loaded
file names its class, which is looked up in the package's one list of estimators
(:data:`obliqueforest._estimators.ESTIMATORS`).
"""

from __future__ import annotations

import importlib
import inspect
import os

import numpy as np

from . import _core
from ._estimators import ESTIMATORS, estimator_class
from ._params import FOREST_PARAMS
from ._transaction import fitted_params

# Python-side fitted attributes each family saves besides its forests (all optional).
_FOREST_ATTRIBUTES = (
    "_seed",
    "_n_samples_fit",
    "oob_score_",
    "oob_decision_function_",
    "oob_prediction_",
)
# ... and what an estimator saves besides those, by name
_OWN_ATTRIBUTES = {"IsolationForest": ("max_samples_", "offset_", "_tree_features")}
# ... and what it saves when its fit made it: the unsupervised forest's embedding (none
# with n_components=None)
_EMBEDDING = ("embedding_", "eigenvalues_", "_leaf_map", "_leaf_mass")
_OPTIONAL_ATTRIBUTES = {"UnsupervisedRandomForest": _EMBEDDING}
_ROTATION_ATTRIBUTES = (
    "_n_samples_fit",
    "rotation_complexity_",
    "rotation_oob_error_",
    "rotation_order_",
    "rotation_weights_",
    "h_",
    "h_grid_",
    "h_scores_",
    "complexity_",
    "oob_score_",
    "oob_decision_function_",
    "oob_prediction_",
)
_AUTOENCODER_ATTRIBUTES = (
    "embedding_",
    "eigenvalues_",
    "kernel_trees_",
    "n_distinct_",
    "arf_accuracies_",
    "kernel_method_",
    "_embedding_fit",
    "_decode_points",
    "_leaf_weights",
    "_train_lower",
    "_train_upper",
    "_X_fit",
    "_col_min",
    "_col_max",
    "_n_categories",
    "_decode_seed",
)
# the table codec of an autoencoder fitted on a DataFrame: column names, dtype names,
# per column its categories (or None) and, for pandas categoricals, whether they are ordered
_CODEC = ("_codec_columns", "_codec_dtypes", "_codec_ordered")
# a forest's categorical columns: ``_categories_{j}``, the levels of column j (categories_),
# for its categorical columns only (a model of numeric columns saves none)
_CATEGORIES = "_categories_"


def saved_attributes(name):
    """The attribute names a model file of estimator ``name`` may hold (``PREFIX*``: any
    name with that prefix), for the file schema (:mod:`obliqueforest._schema`)."""
    if name == "ForestAutoencoder":
        return (*_AUTOENCODER_ATTRIBUTES, *_CODEC, "_codec_categories_*")
    if name.startswith("RotationEnsemble"):
        return _ROTATION_ATTRIBUTES
    return (*_forest_attributes(name), f"{_CATEGORIES}*")


def _plain_params(est):
    """The parameters ``est`` was fitted with (``_fit_params``, else ``get_params(deep=
    False)``) as plain data; projections as a dict naming their class. A ``set_params``
    after the fit changes what the next fit does, not what the fitted model is, so it is
    not what the file records.

    ``n_jobs`` is left out: a thread count is never read from a file. A ``RandomState``
    instance has no plain form and is saved as None (the fitted model does not need it).
    The parameters of categorical columns (:data:`_LEFT_OUT_AT_DEFAULT`) are left out of
    a model without categorical columns where they are at the estimator's defaults,
    which a loaded model takes again; a model with categorical columns records them all.
    """
    from .projections import _Projection

    params = {}
    fitted = getattr(est, "_fit_params", None)
    # (an autoencoder's categorical columns are its codec's, not the parameters')
    categorical = getattr(est, "_categories", None) is not None
    defaults = _signature_defaults(type(est))
    for k, v in (fitted if fitted is not None else est.get_params(deep=False)).items():
        if k == "n_jobs" or (
            k in _LEFT_OUT_AT_DEFAULT and not categorical and _is_default(v, defaults.get(k))
        ):
            continue
        if isinstance(v, _Projection):
            v = {"__projection__": type(v).__name__, **_flatten(v._state())}
        elif k == "random_state" and isinstance(v, np.random.RandomState):
            v = None
        params[k] = v
    return params


#: The parameters of categorical columns, each with its first default: a model file
#: leaves them out of a model without categorical columns (kept as ``_categories_*``
#: attributes) where they are at the estimator's defaults, so that model holds no trace of
#: them, and a model saved before they existed reads as one fitted with them. A file of a
#: model with categorical columns that lacks one was written when every file left them
#: out at these values (before regressors' ``min_category_samples`` default became 2): the
#: model was fitted with this value (:func:`_params`).
_LEFT_OUT_AT_DEFAULT = {p.name: p.default for p in FOREST_PARAMS if not p.saved_at_default}


def _signature_defaults(cls) -> dict:
    """The defaults of ``cls``'s constructor, by parameter name (what a loaded model that
    lacks a parameter takes)."""
    return {
        name: p.default
        for name, p in inspect.signature(cls.__init__).parameters.items()
        if p.default is not inspect.Parameter.empty
    }


def _is_default(value, default) -> bool:
    return type(value) is type(default) and value == default


def _flatten(state, prefix=""):
    """A projection's state with nested dicts flattened to ``outer__inner`` keys (a model
    file holds one level of fields)."""
    out = {}
    for k, v in state.items():
        if isinstance(v, dict):
            out.update(_flatten(v, f"{prefix}{k}__"))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _unflatten(fields):
    out = {}
    for k, v in fields.items():
        *outer, last = k.split("__")
        node = out
        for part in outer:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise _core.ForestError(f"model file: projection field {k!r} clashes")
        node[last] = v
    return out


def _projection_record(est):
    """``(tag, arguments)`` of the projection family the fitted model's parameters
    (``_fit_params``) resolve to, as its projection object hands them to
    ``_core.Projection.family``; an autoencoder, which has no projection of its own, records
    its forest's."""
    if not hasattr(est, "_projection_object"):
        return est._core().projection_family()
    fitted = getattr(est, "_fit_params", None)
    projection = (est if fitted is None else type(est)(**fitted))._projection_object()
    return projection._tag, projection._family_args(int(est.n_features_in_))


def _check_projection_record(est, record):
    """A loaded estimator's parameters resolve to the family the file records (which the
    crate's loader found every forest to grow), or a ForestError naming what disagrees: the
    family, or each argument with both values (MORF's ``data_shape``, SPORF's ``scaling``,
    an oblique forest's projection's own).

    The autoencoder is not judged: its record is its forest's own. A projection that takes
    arguments from the loaded forest (a :class:`~obliqueforest.projections.Dictionary`'s
    atoms) agrees with the record on those by construction; its other arguments
    (``n_candidates``) are judged."""
    if not hasattr(est, "_projection_object"):
        return
    name = type(est).__name__
    tag, args = record
    recorded = _core.Projection.family(tag, **args)
    try:
        mine = est._projection_object()._core_projection(est.n_features_in_)
    except (TypeError, ValueError) as e:
        raise _core.ForestError(f"model file: the parameters of this {name}: {e}") from None
    if mine.tag != recorded.tag:
        raise _core.ForestError(
            f"model file: the parameters of this {name} give the {mine.tag!r} projection "
            f"family, but the file records the {recorded.tag!r} family"
        )
    differing = mine.differences(recorded)
    if differing:
        said = "; ".join(
            f"{k}={a!r:.80} by the parameters, {b!r:.80} in the file" for k, a, b in differing
        )
        raise _core.ForestError(
            f"model file: the {mine.tag!r} projections of this {name} disagree with the "
            f"file's record: {said}"
        )


def _attributes(est, names):
    return {k: getattr(est, k) for k in names if getattr(est, k, None) is not None}


def _rotation_parts(est):
    if est.scaling == "minmax":
        scaling = ("minmax", est._scale_min, est._scale_span)
    elif est.scaling == "rank":
        scaling = ("rank", list(est._rank_values))
    else:
        scaling = None
    return {
        "scaling": scaling,
        "rotations": np.ascontiguousarray(est.rotations_, dtype=np.float64),
        "n_trees": np.asarray(est.n_trees_per_rotation_, dtype=np.int64),
        "forests": list(est._forests),
    }


def _codec_attributes(codec):
    if codec is None:
        return {}
    import pandas as pd

    out = {
        "_codec_columns": [str(c) for c in codec.columns],
        "_codec_dtypes": [str(d) for d in codec.dtypes],
        "_codec_ordered": [bool(getattr(d, "ordered", False)) for d in codec.dtypes],
    }
    if [str(c) for c in codec.columns] != list(codec.columns):
        raise TypeError("an autoencoder fitted on non-string column names cannot be saved")
    for j, cats in enumerate(codec.categories):
        if cats is not None:
            values = [v.item() if isinstance(v, np.generic) else v for v in cats]
            out[f"_codec_categories_{j}"] = values
    for d in codec.dtypes:
        if not isinstance(d, pd.CategoricalDtype):
            pd.api.types.pandas_dtype(str(d))  # every other dtype must round-trip by name
    return out


def _category_attributes(est):
    """``_categories_{j}``: the levels of each categorical column j, as a list of one type
    (str, bool, int or float).

    Raises
    ------
    TypeError
        For levels of another type, or of mixed types, which the format does not hold.
    """
    out = {}
    for j, levels in enumerate(getattr(est, "_categories", None) or []):
        if levels is None:
            continue
        values = np.asarray(levels).tolist()
        kinds = {type(v) for v in values}
        if len(kinds) > 1 or not kinds <= {str, bool, int, float}:
            raise TypeError(
                f"the levels of categorical column {j} ({sorted(k.__name__ for k in kinds)}) "
                "cannot be saved in the safe format, which holds strings, bools, ints or "
                "floats of one type per column; pickle the model"
            )
        out[f"{_CATEGORIES}{j}"] = values
    return out


def _restore_categories(est, attributes):
    """The levels of a loaded forest's categorical columns (``categories_``) from its
    ``_categories_{j}`` attributes (none: every column numeric)."""
    p = est.n_features_in_
    keys = {k for k in attributes if k.startswith(_CATEGORIES)}
    extra = sorted(keys - {f"{_CATEGORIES}{j}" for j in range(p)})
    if extra:
        raise _core.ForestError(f"model file: no columns for the categories {extra}")
    categories = []
    for j in range(p):
        levels = attributes.get(f"{_CATEGORIES}{j}")
        if levels is None:
            categories.append(None)
            continue
        if not isinstance(levels, list):
            raise _core.ForestError(f"model file: the categories of column {j} are not a list")
        kinds = {type(v) for v in levels}
        if len(kinds) > 1 or not kinds <= {str, bool, int, float}:
            raise _core.ForestError(f"model file: the categories of column {j} mix types")
        strings = kinds == {str}
        categories.append(np.asarray(levels, dtype=object if strings else None))
    counts = getattr(est._forest, "categorical", None)  # (cores that report it)
    if counts is not None:
        expected = [0 if c is None else len(c) for c in categories]
        if (list(counts) or [0] * p) != expected:
            raise _core.ForestError(
                "model file: the categories of the columns disagree with the forest's levels"
            )
    if keys:
        est._categories = categories


def _codec_error(what):
    return _core.ForestError(f"model file: the autoencoder's column codec {what}")


def _list_of(value, kind, n, name):
    """``value`` as a list of ``n`` items of type ``kind``, or a ForestError naming it."""
    if not isinstance(value, list) or len(value) != n:
        raise _codec_error(f"has {name} {value!r:.60}, expected a list of {n}")
    if not all(isinstance(v, kind) for v in value):
        raise _codec_error(f"has {name} of the wrong type")
    return value


def _restore_codec(est, attributes):
    """The table codec of an autoencoder fitted on a DataFrame, from its saved attributes
    (none saved: fitted on an array). Every part is checked before pandas sees it."""
    # looked up by name, like the estimator classes: this module imports no estimator code
    _TabularCodec = importlib.import_module("obliqueforest.autoencoder._codec")._TabularCodec

    category_keys = {k for k in attributes if k.startswith("_codec_categories_")}
    present = [k for k in _CODEC if k in attributes]
    if not present and not category_keys:
        est._codec = None
        return
    missing = [k for k in _CODEC if k not in attributes]
    if missing:
        raise _codec_error(f"lacks {missing}")
    import pandas as pd

    p = est.n_features_in_
    columns = _list_of(attributes["_codec_columns"], str, p, "columns")
    names = _list_of(attributes["_codec_dtypes"], str, p, "dtype names")
    ordered = _list_of(attributes["_codec_ordered"], bool, p, "ordered flags")
    extra = sorted(category_keys - {f"_codec_categories_{j}" for j in range(p)})
    if extra:
        raise _codec_error(f"has no columns for {extra}")
    codec = _TabularCodec()
    codec.columns, codec.categories, codec.dtypes = list(columns), [], []
    for j, (name, is_ordered) in enumerate(zip(names, ordered)):
        cats = attributes.get(f"_codec_categories_{j}")
        if cats is not None and not isinstance(cats, list):
            raise _codec_error(f"has categories {cats!r:.60} for column {j}, not a list")
        if name == "category" and cats is None:
            raise _codec_error(f"has no categories for categorical column {j}")
        try:
            dtype = (
                pd.CategoricalDtype(cats, ordered=is_ordered)
                if name == "category"
                else pd.api.types.pandas_dtype(name)
            )
        except (TypeError, ValueError) as e:
            raise _core.ForestError(f"model file: column dtype {name!r}: {e}") from None
        if cats is not None and dtype.kind in "iufcmM":
            raise _codec_error(f"has categories for column {j} of dtype {name}")
        codec.categories.append(None if cats is None else list(cats))
        codec.dtypes.append(dtype)
    est._codec = codec


def save(est, path):
    """Writes a fitted estimator to ``path`` (called by ``estimator.save``).

    The file is replaced whole or not at all (a temporary file of its own, synced, then
    renamed over ``path``); only a regular file or a new path is written, never a
    directory, device, FIFO or socket (a symbolic link is followed).

    Raises
    ------
    obliqueforest.ForestError
        If a parameter or class label has no plain form, or the path is not a regular file
        or cannot be written.
    FileNotFoundError, PermissionError, OSError
        When the system cannot write the path (its folder is missing, say): the OSError
        of that kind, also a ForestError.
    """
    from sklearn.utils.validation import check_is_fitted

    name = type(est).__name__
    if name not in ESTIMATORS:
        raise TypeError(f"{name} cannot be saved in the safe format")
    rotation = name.startswith("RotationEnsemble")
    autoencoder = name == "ForestAutoencoder"
    check_is_fitted(est, "embedding_" if autoencoder else "_forests" if rotation else "_forest")
    parts = {
        "estimator": name,
        "n_features": int(est.n_features_in_),
        "feature_names": (
            [str(n) for n in est.feature_names_in_] if hasattr(est, "feature_names_in_") else None
        ),
        "classes": getattr(est, "classes_", None),
        "params": _plain_params(est),
        "projection": _projection_record(est),
    }
    if autoencoder:
        if est.forest is not None:
            raise TypeError(
                "a ForestAutoencoder given its own forest (forest=...) cannot be saved in the "
                "safe format; pickle it, or save the forest and the autoencoder separately"
            )
        parts["params"].pop("forest", None)
        parts["encoder"] = {
            "forest": est._core(),
            "n_components": int(est.leaf_map_.shape[1]),
            "leaf_map": np.ascontiguousarray(est.leaf_map_, dtype=np.float64),
            "leaf_mass": np.ascontiguousarray(est._leaf_mass, dtype=np.float64),
        }
        parts["attributes"] = {
            **_attributes(est, _AUTOENCODER_ATTRIBUTES),
            **_codec_attributes(est._codec),
        }
    elif rotation:
        parts["rotation"] = _rotation_parts(est)
        parts["attributes"] = _attributes(est, _ROTATION_ATTRIBUTES)
    else:
        parts["forest"] = est._forest
        parts["attributes"] = {
            **_attributes(est, _forest_attributes(name)),
            **_category_attributes(est),
        }
    _core.save_model(os.fspath(path), parts)


def _forest_attributes(name):
    """The Python-side fitted attributes estimator ``name`` (a forest) saves."""
    return _FOREST_ATTRIBUTES + _OWN_ATTRIBUTES.get(name, ()) + _OPTIONAL_ATTRIBUTES.get(name, ())


def _check_embedding(est):
    """A loaded unsupervised forest's embedding: all of it when ``n_components`` asks for
    one, none otherwise, its arrays' shapes agreeing with each other and the forest."""
    present = [k for k in _EMBEDDING if hasattr(est, k)]
    if est.n_components is None:
        if present:
            raise _core.ForestError(f"model file: n_components=None but {present} are stored")
        return
    if len(present) < len(_EMBEDDING):
        missing = [k for k in _EMBEDDING if k not in present]
        raise _core.ForestError(f"model file: the UnsupervisedRandomForest lacks {missing}")
    k, n_leaves = est.n_components, int(est._forest.leaf_offsets()[-1])
    expected = {
        "embedding_": (getattr(est, "_n_samples_fit", None), k),
        "eigenvalues_": (k,),
        "_leaf_map": (n_leaves, k),
        "_leaf_mass": (n_leaves,),
    }
    for name, shape in expected.items():
        value = getattr(est, name)
        if not isinstance(value, np.ndarray) or value.dtype != np.float64:
            raise _core.ForestError(f"model file: {name} is not a float64 array")
        if value.shape != shape and not (name == "embedding_" and shape[0] is None):
            raise _core.ForestError(f"model file: {name} has shape {value.shape}, expected {shape}")
        if not np.isfinite(value).all():
            raise _core.ForestError(f"model file: {name} holds values that are not finite")


def _estimator_class(name):
    if name not in ESTIMATORS:
        raise _core.ForestError(f"model file holds a {name}, which this package cannot rebuild")
    return estimator_class(name)


def _params(cls, saved, forest, categorical=False):
    from sklearn.utils._param_validation import InvalidParameterError

    from . import projections

    # the core's loader checked the parameters' names and values against the estimator's
    # schema (src/model/schema.txt, generated from the constraints _validate_params reads
    # below), so a Rust service refuses the same files with the same messages; parameters
    # added since a file was written take the value that reproduces its model
    params = {**getattr(cls, "_added_param_values", {}), **saved}
    if categorical:
        # a model with categorical columns whose file lacks their parameters was fitted
        # with their first defaults (_LEFT_OUT_AT_DEFAULT)
        own = _signature_defaults(cls)
        for k, v in _LEFT_OUT_AT_DEFAULT.items():
            if k in own:
                params.setdefault(k, v)
    spec = params.get("projection")
    if isinstance(spec, dict):
        spec = dict(spec)
        kind = spec.pop("__projection__", None)
        if kind not in projections.__all__:
            raise _core.ForestError(f"model file names an unknown projection {kind!r}")
        try:
            params["projection"] = getattr(projections, kind)._from_state(_unflatten(spec), forest)
        except (TypeError, ValueError, KeyError, IndexError, AttributeError) as e:
            raise _core.ForestError(f"model file: projection {kind}: {e!r}") from None
    est = cls(**params)
    try:
        est._validate_params()  # a net under the schema (tests/test_model_schema.py)
    except InvalidParameterError as e:
        raise _core.ForestError(f"model file: {e}") from None
    est._fit_params = fitted_params(est)
    return est


def _set_attributes(est, saved):
    # (the core's loader refused attribute names the schema does not list)
    for k, v in saved.items():
        setattr(est, k, v)


def _check_row_count(est):
    """A loaded ``_n_samples_fit`` (files of older versions have none) is a row count:
    ``estimators_samples_`` allocates per row from it, so it is bounded like the core's
    row indices."""
    n = getattr(est, "_n_samples_fit", None)
    if n is not None and not (isinstance(n, int) and not isinstance(n, bool) and 1 <= n < 2**32):
        raise _core.ForestError(f"model file: _n_samples_fit {n!r} is not a row count")


def _check_autoencoder_shapes(est):
    """The Python-side arrays of a loaded autoencoder agree with each other and the forest."""
    missing = [k for k in _AUTOENCODER_ATTRIBUTES if not hasattr(est, k) and k != "arf_accuracies_"]
    if missing:
        raise _core.ForestError(f"model file: the autoencoder lacks {missing}")
    p, n = est.n_features_in_, np.shape(est._embedding_fit)[0]
    d = est.leaf_map_.shape[1]
    expected = {
        "_embedding_fit": (n, d),
        "_decode_points": (n, d),
        "eigenvalues_": (d,),
        "_X_fit": (n, p),
        "_train_lower": (n, p),
        "_train_upper": (n, p),
        "_col_min": (p,),
        "_col_max": (p,),
        "_n_categories": (p,),
        "_leaf_weights": est._leaf_mass.shape,
        "kernel_trees_": (est.forest_.n_trees,),
    }
    for name, shape in expected.items():
        if np.shape(getattr(est, name)) != shape:
            raise _core.ForestError(
                f"model file: autoencoder attribute {name} has shape "
                f"{np.shape(getattr(est, name))}, expected {shape}"
            )
    if np.ndim(est.embedding_) != 2 or np.shape(est.embedding_)[1] != d:
        raise _core.ForestError("model file: autoencoder attribute embedding_ has a wrong shape")
    if est._codec is not None:
        counts = [0 if c is None else len(c) for c in est._codec.categories]
        if not np.array_equal(counts, est._n_categories):
            raise _core.ForestError(
                "model file: the autoencoder's column codec disagrees with _n_categories"
            )


def load(path):
    """Reads an estimator written by ``estimator.save(path)``.

    Parameters
    ----------
    path : str or path-like
        A regular file; devices and FIFOs are refused.

    Returns
    -------
    estimator : fitted obliqueforest estimator
        Predicts on one thread (``n_jobs=None``) whatever it was saved with.

    Raises
    ------
    obliqueforest.ForestError
        (a ValueError) if the file is not a model, is truncated or damaged, disagrees with
        itself (each header field is checked against the forests), holds values no fitted
        model has (numbers that are not finite, class probabilities that are not
        distributions, labels outside their dtype), or comes from another format version.
    FileNotFoundError, PermissionError, OSError
        When the system cannot read the path (it does not exist, say): the OSError of
        that kind, also a ForestError.
    KeyboardInterrupt
        On Ctrl-C: a long load stops within about a second.
    """
    parts = _core.load_model(os.fspath(path))
    cls = _estimator_class(parts["estimator"])
    categorical = any(k.startswith(_CATEGORIES) for k in parts["attributes"])
    est = _params(cls, parts["params"], parts.get("forest"), categorical)
    est.n_features_in_ = int(parts["n_features"])
    _check_projection_record(est, parts["projection"])
    if parts["feature_names"] is not None:
        est.feature_names_in_ = np.asarray(parts["feature_names"], dtype=object)
    if parts["classes"] is not None:
        est.classes_ = parts["classes"]  # a list of arrays for a multi-output classifier
        est.n_classes_ = (
            [len(c) for c in est.classes_] if isinstance(est.classes_, list) else len(est.classes_)
        )
    if "encoder" in parts:
        codec_keys = {k for k in parts["attributes"] if k.startswith("_codec_categories_")}
        _set_attributes(
            est,
            {k: v for k, v in parts["attributes"].items() if k not in _CODEC + tuple(codec_keys)},
        )
        _restore_codec(est, parts["attributes"])
        enc = parts["encoder"]
        est.forest_ = enc["forest"]
        est.leaf_map_ = enc["leaf_map"]
        est._leaf_mass = enc["leaf_mass"]
        accuracies = getattr(est, "arf_accuracies_", [])
        if not (isinstance(accuracies, list) and all(isinstance(a, float) for a in accuracies)):
            raise _core.ForestError("model file: arf_accuracies_ is not a list of floats")
        est.arf_accuracies_ = accuracies
        _check_autoencoder_shapes(est)
        est._nn = est._search_index()
        est._relabeled = None
    elif "rotation" in parts:
        r = parts["rotation"]
        _set_attributes(est, parts["attributes"])
        scaling = r["scaling"]
        if scaling is not None and scaling[0] != est.scaling:
            raise _core.ForestError(
                f"model file: scaling={est.scaling!r} but the file holds {scaling[0]} scaling"
            )
        if scaling is None and est.scaling is not None:
            raise _core.ForestError(f"model file: scaling={est.scaling!r} but none is stored")
        if est.scaling == "minmax":
            est._scale_min, est._scale_span = scaling[1], scaling[2]
        elif est.scaling == "rank":
            est._rank_values = list(scaling[1])
        est.rotations_ = r["rotations"]
        est.n_trees_per_rotation_ = r["n_trees"]
        if len(est.rotations_) != est.n_rotations:
            raise _core.ForestError("model file: n_rotations disagrees with the rotations")
        est._forests = list(r["forests"])
        est.n_outputs_ = next(f for f in est._forests if f is not None).n_targets
        est._n_outputs = int(np.sum(est.n_classes_)) if hasattr(est, "classes_") else est.n_outputs_
        _check_row_count(est)
    else:
        own = _OWN_ATTRIBUTES.get(parts["estimator"], ())
        saved = parts["attributes"]
        _set_attributes(est, {k: v for k, v in saved.items() if not k.startswith(_CATEGORIES)})
        missing = [k for k in own if not hasattr(est, k)]
        if missing:
            raise _core.ForestError(f"model file: the {parts['estimator']} lacks {missing}")
        _check_row_count(est)
        est._forest = parts["forest"]
        _restore_categories(est, saved)
        est.n_outputs_ = est._forest.n_targets
        if parts["estimator"] in _OPTIONAL_ATTRIBUTES:
            _check_embedding(est)
        if not hasattr(est, "_seed"):
            est._seed = 0
    return est
