"""Model files are checked the same in Python and Rust: the core's loader (``Model::load``
in a Rust service, ``_core.load_model`` here) refuses the parameters and attributes the
Python package refuses, with the same message, from one schema generated from the
estimators' parameter constraints (``src/model/schema.txt``); and the projection family a
file records, from the families each estimator declares (``_projection_families``).

One judgement is Python's alone: whether an estimator's parameters resolve to the
projection its file records (see ``test_whether_the_parameters_give_the_recorded_projection_is_python_s``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_iris

import obliqueforest as of
from obliqueforest import _core, _io
from obliqueforest._schema import schema_text

ROOT = Path(__file__).resolve().parents[1]


def test_committed_schema_is_the_generated_one():
    committed = (ROOT / "src" / "model" / "schema.txt").read_text()
    assert committed == schema_text(), (
        "src/model/schema.txt is stale: run `python -m obliqueforest._schema > "
        "src/model/schema.txt`"
    )


def _parts(est):
    """The parts ``_io.save`` hands to the core, to craft files from."""
    grabbed = {}
    real = _core.save_model
    _core.save_model = lambda path, parts: grabbed.update(parts)
    try:
        _io.save(est, "unused")
    finally:
        _core.save_model = real
    return grabbed


def _models():
    X, y = load_iris(return_X_y=True)
    yield of.RandomForestClassifier(3, random_state=0).fit(X, y)
    yield of.SPORFRegressor(3, random_state=0).fit(X, X[:, 0])
    yield of.MORFClassifier(3, data_shape=(2, 2), random_state=0).fit(X, y)
    yield of.IsolationForest(n_estimators=3, random_state=0).fit(X)
    yield of.RotationEnsembleClassifier(6, n_rotations=2, micro_forest_size=2).fit(X, y)


# (parameter, stored value): names the estimators do not have, values their constraints
# refuse, and values they accept
MUTATIONS = [
    ("bogus", 1),
    ("n_estimators", 0),
    ("n_estimators", 2.5),
    ("n_estimators", True),
    ("max_depth", -1),
    ("max_depth", "deep"),
    ("max_features", 0.0),
    ("max_features", "cube"),
    ("min_samples_leaf", 1.5),
    ("min_samples_split", 1),
    ("criterion", "mse"),
    ("random_state", -3),
    ("random_state", 2**40),
    ("verbose", -1),
    ("bootstrap", 1),
    ("honest_fraction", 1.0),
    ("ccp_alpha", float("nan")),
    ("oob_score", "yes"),
    ("class_weight", "equal"),
    ("scaling", "log"),
    ("n_rotations", 0),
    ("max_samples", "all"),
    # accepted by both
    ("max_depth", 3),
    ("random_state", 7),
    ("verbose", True),
    ("criterion", "entropy"),
    ("max_features", 0.5),
]


def _load_both(path):
    """What the core's loader and the package's load say of a file: each ``None`` (it
    loads) or the error message."""
    said = []
    for load in (_core.load_model, of.load):
        try:
            load(path)
            said.append(None)
        except (of.ForestError, ValueError) as e:
            said.append(str(e))
    return said


@pytest.mark.parametrize("param, value", MUTATIONS, ids=lambda v: repr(v)[:20])
def test_python_and_the_rust_loader_refuse_the_same_parameters(param, value, tmp_path):
    for est in _models():
        parts = _parts(est)
        if param not in parts["params"] and param != "bogus":
            continue
        parts["params"] = {**parts["params"], param: value}
        path = tmp_path / "m.of"
        _core._save_model_unchecked_for_test(str(path), parts)
        rust, python = _load_both(path)
        # the same verdict and the same words; a refusal names the parameter
        assert rust == python, (type(est).__name__, param, value)
        if rust is not None:
            assert param in rust, rust


def test_python_and_the_rust_loader_refuse_the_same_attributes(tmp_path):
    for est in _models():
        parts = _parts(est)
        parts["attributes"] = {**parts["attributes"], "sneaky_": np.arange(3.0)}
        path = tmp_path / "m.of"
        _core._save_model_unchecked_for_test(str(path), parts)
        rust, python = _load_both(path)
        assert rust == python and "has no attributes ['sneaky_']" in rust, rust


def test_every_value_the_schema_accepts_python_accepts(tmp_path):
    # the package's scikit-learn validation stays under the schema as a net: no stored
    # value gets past the core's check and is then refused by Python
    X, y = load_iris(return_X_y=True)
    est = of.RandomForestClassifier(3, random_state=0).fit(X, y)
    probes = [
        None,
        True,
        False,
        -1,
        0,
        1,
        2,
        3,
        2**33,
        -0.5,
        0.0,
        0.5,
        1.0,
        1.5,
        "sqrt",
        "gini",
        "x",
    ]
    accepted = 0
    for param in est.get_params():
        if param == "n_jobs":
            continue
        for value in probes:
            parts = _parts(est)
            parts["params"] = {**parts["params"], param: value}
            path = tmp_path / "m.of"
            _core._save_model_unchecked_for_test(str(path), parts)
            rust, python = _load_both(path)
            assert rust == python, (param, value, rust, python)
            accepted += rust is None
    assert accepted > 20


def test_the_schema_lists_the_families_each_estimator_grows():
    text = schema_text()
    for name, families in [
        ("RandomForestClassifier", "axis"),
        ("SPORFRegressor", "sparse_signed"),
        ("MORFClassifier", "patch,haar,pooled"),
        ("RotationEnsembleRegressor", "axis"),
        ("ObliqueForestClassifier", "*"),
        ("IsolationForest", "*"),
        ("ForestAutoencoder", "*"),
    ]:
        block = text.split(f"estimator {name}\n")[1].split("estimator ")[0]
        assert f"\nfamilies {families}\n" in "\n" + block, name


# Probes of the parameters a projection is resolved from: the core's loader accepts them all
# (it checks the file's projection record against the forests, and knows no estimator's
# rule), the package refuses them, naming the parameter (or, when the family itself
# differs, the families). The rule that resolves them (MORF's choice among patches, Haar
# patches and pooled filters, defaults left to None, an int for every axis, a negative
# channel_axis) is each estimator's ``_projection_object``, written once, in Python; a copy
# in the crate is what the record replaced.
PYTHON_JUDGES = [
    (2, "data_shape", (4,), "data_shape"),
    (2, "channel_axis", 0, "channel_axis"),
    (2, "min_patch_size", 2, "min_patch_size"),
    (2, "differences", 0.75, "differences"),
    (2, "pooled", 0.0, "projection family"),
    (1, "scaling", None, "scaling"),
    (1, "feature_combinations", 2.5, "feature_combinations"),
]


@pytest.mark.parametrize("model, param, value, fragment", PYTHON_JUDGES, ids=lambda v: str(v))
def test_whether_the_parameters_give_the_recorded_projection_is_python_s(
    model, param, value, fragment, tmp_path
):
    est = list(_models())[model]
    parts = _parts(est)
    parts["params"] = {**parts["params"], param: value}
    path = tmp_path / "m.of"
    _core._save_model_unchecked_for_test(str(path), parts)
    rust, python = _load_both(path)
    assert rust is None, rust
    assert python is not None and fragment in python, python
