"""The model file (written and checked by the crate's ``model`` module): round trips for
every savable estimator, every header field mutated, hostile paths, byte fuzzing."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import zlib

import numpy as np
import pytest
from sklearn.datasets import load_iris, make_friedman1

import obliqueforest as of
from obliqueforest import _core, _io
from obliqueforest.rotation import RotationEnsembleClassifier, RotationEnsembleRegressor

ForestError = of.ForestError


def _iris():
    return load_iris(return_X_y=True)


def _fitted(kind):
    X, y = _iris()
    if kind == "rf":
        return of.RandomForestClassifier(5, random_state=0).fit(X, y), X
    if kind == "sporf-reg":
        Xr, yr = make_friedman1(150, random_state=0)
        return of.SPORFRegressor(5, random_state=0).fit(Xr, yr), Xr
    if kind == "multi":
        return of.RandomForestClassifier(5, random_state=0).fit(X, np.c_[y, y % 2 == 0]), X
    if kind == "morf":
        return of.MORFClassifier(5, data_shape=(2, 2), random_state=0).fit(X, y), X
    if kind == "oblique":
        return of.ObliqueForestClassifier(of.projections.Gaussian(), 5, random_state=0).fit(X, y), X
    if kind == "rotation":
        return RotationEnsembleClassifier(12, n_rotations=3, random_state=0).fit(X, y), X
    if kind == "ae":
        from obliqueforest.autoencoder import ForestAutoencoder

        return ForestAutoencoder(2, n_estimators=20, random_state=0).fit(X), X
    if kind == "quantile":
        est = of.RandomForestRegressor(5, store_leaf_values=True, honest_fraction=0.3)
        return est.set_params(random_state=0).fit(X, X[:, 0]), X
    if kind == "categorical":
        pd = pytest.importorskip("pandas")
        df = pd.DataFrame({"a": X[:, 0], "c": pd.Categorical(np.array(["x", "y", "z"])[y])})
        return of.RandomForestClassifier(5, random_state=0).fit(df, y), df
    raise AssertionError(kind)


def _parts(est):
    """The parts `_io.save` hands to the crate (for crafting files)."""
    path_parts = {}

    def grab(path, parts):
        path_parts.update(parts)

    real = _core.save_model
    _core.save_model = grab
    try:
        _io.save(est, "unused")
    finally:
        _core.save_model = real
    return path_parts


def _write_crafted(tmp_path, parts):
    path = tmp_path / "crafted.of"
    _core._save_model_unchecked_for_test(str(path), parts)
    return path


# -- round trips ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "labels",
    [
        np.array([3, 7, 9], dtype=np.int8),
        np.array([3, 7, 2**40], dtype=np.int64),
        np.array([1, 2, 2**63 + 5], dtype=np.uint64),
        np.array([1.0, 2.0, 4.0], dtype=np.float32),
        np.array(["a", "bb", "ccc"]),
        np.array(["setosa", "versicolor", "virginica"], dtype=object),
    ],
    ids=lambda a: a.dtype.str,
)
def test_class_labels_round_trip_with_their_dtype(labels, tmp_path):
    X, y = _iris()
    est = of.SPORFClassifier(4, random_state=0).fit(X, labels[y])
    est.save(tmp_path / "m.of")
    again = of.load(tmp_path / "m.of")
    assert again.classes_.dtype == est.classes_.dtype
    np.testing.assert_array_equal(again.classes_, est.classes_)
    np.testing.assert_array_equal(again.predict(X), est.predict(X))


def test_bool_labels_round_trip(tmp_path):
    X, y = _iris()
    est = of.RandomForestClassifier(4, random_state=0).fit(X, y == 1)
    est.save(tmp_path / "m.of")
    assert of.load(tmp_path / "m.of").classes_.dtype == bool


def test_pandas_text_labels_and_feature_names_round_trip(tmp_path):
    pd = pytest.importorskip("pandas")
    X, y = _iris()
    df = pd.DataFrame(X, columns=["sl", "sw", "pl", "pw"])
    labels = pd.Series(np.array(["a", "b", "c"])[y], dtype=object)
    est = of.RandomForestClassifier(4, random_state=0).fit(df, labels)
    est.save(tmp_path / "m.of")
    again = of.load(tmp_path / "m.of")
    assert list(again.feature_names_in_) == ["sl", "sw", "pl", "pw"]
    np.testing.assert_array_equal(again.predict(df), est.predict(df))


def test_object_labels_that_are_not_strings_name_the_fix(tmp_path):
    X, y = _iris()
    est = of.RandomForestClassifier(3, random_state=0).fit(X, y)
    est.classes_ = np.array([1, "a", 2.5], dtype=object)
    with pytest.raises(ForestError, match="astype"):
        est.save(tmp_path / "m.of")


@pytest.mark.parametrize("cls", [RotationEnsembleClassifier, RotationEnsembleRegressor])
@pytest.mark.parametrize("scaling", ["minmax", "rank", None])
def test_rotation_ensemble_round_trip(cls, scaling, tmp_path):
    if cls is RotationEnsembleClassifier:
        X, y = _iris()
    else:
        X, y = make_friedman1(120, random_state=0)
    est = cls(20, n_rotations=4, scaling=scaling, oob_score=True, random_state=0).fit(X, y)
    est.save(tmp_path / "r.of")
    again = of.load(tmp_path / "r.of")
    assert type(again) is cls
    assert again.get_params() == {**est.get_params(), "n_jobs": None}
    np.testing.assert_array_equal(again.predict(X), est.predict(X))
    np.testing.assert_array_equal(again.feature_importances_, est.feature_importances_)
    np.testing.assert_array_equal(again.rotation_order_, est.rotation_order_)
    assert again.oob_score_ == est.oob_score_


def test_autoencoder_round_trip_numeric_and_table(tmp_path):
    pd = pytest.importorskip("pandas")
    from obliqueforest.autoencoder import ForestAutoencoder

    X, y = load_iris(return_X_y=True)
    ae = ForestAutoencoder(n_components=2, n_estimators=30, random_state=0).fit(X)
    ae.save(tmp_path / "a.of")
    again = of.load(tmp_path / "a.of")
    np.testing.assert_array_equal(again.transform(X), ae.transform(X))
    np.testing.assert_array_equal(again.embedding_, ae.embedding_)
    Z = ae.transform(X[:10])
    np.testing.assert_array_equal(again.inverse_transform(Z), ae.inverse_transform(Z))

    df = pd.DataFrame(X, columns=["sl", "sw", "pl", "pw"])
    df["species"] = pd.Categorical(np.array(["a", "b", "c"])[y], ordered=True)
    df["big"] = y > 0
    df["tag"] = np.array(["x", "y", "z"])[y]
    ae = ForestAutoencoder(n_components=2, n_estimators=30, random_state=0).fit(df)
    ae.save(tmp_path / "t.of")
    again = of.load(tmp_path / "t.of")
    np.testing.assert_array_equal(again.transform(df), ae.transform(df))
    back, back_again = (
        ae.inverse_transform(ae.transform(df[:8])),
        again.inverse_transform(again.transform(df[:8])),
    )
    assert back.dtypes.tolist() == back_again.dtypes.tolist() and back.equals(back_again)


def test_autoencoder_with_its_own_forest_says_to_pickle(tmp_path):
    from obliqueforest.autoencoder import ForestAutoencoder

    X, y = load_iris(return_X_y=True)
    forest = of.RandomForestClassifier(20, min_samples_leaf=5, random_state=0).fit(X, y)
    ae = ForestAutoencoder(n_components=2, forest=forest).fit(X)
    with pytest.raises(TypeError, match="pickle"):
        ae.save(tmp_path / "a.of")


def test_a_sporf_file_from_before_its_scaling_loads_unscaled(tmp_path):
    # a file written before SPORF's `scaling` existed holds no such parameter, and unscaled
    # weights: it loads as the model it holds, with scaling=None (not today's default)
    X, y = _iris()
    est = of.SPORFClassifier(5, scaling=None, random_state=0).fit(X, y)
    parts = _parts(est)
    del parts["params"]["scaling"]
    again = of.load(_write_crafted(tmp_path, parts))
    assert again.scaling is None
    np.testing.assert_array_equal(again.predict_proba(X), est.predict_proba(X))


def test_loaded_model_never_takes_its_thread_count_from_the_file(tmp_path):
    X, y = _iris()
    est = of.SPORFClassifier(4, n_jobs=3, random_state=0).fit(X, y)
    est.save(tmp_path / "m.of")
    assert of.load(tmp_path / "m.of").n_jobs is None
    parts = _parts(est)
    parts["params"]["n_jobs"] = 3000
    with pytest.raises(ForestError, match="n_jobs"):
        of.load(_write_crafted(tmp_path, parts))


# -- every header field, mutated --------------------------------------------------------------


def _mutations():
    """(kind, description, mutate(parts), fragment of the error)."""

    def setp(key, value):
        def f(parts):
            parts[key] = value

        return f

    def param(key, value):
        def f(parts):
            parts["params"][key] = value

        return f

    def attr(key, value):
        def f(parts):
            parts["attributes"][key] = value

        return f

    def rot(key, fn):
        def f(parts):
            parts["rotation"][key] = fn(parts["rotation"][key])

        return f

    def enc(key, fn):
        def f(parts):
            parts["encoder"] = {**parts["encoder"], key: fn(parts["encoder"][key])}

        return f

    def record(tag, **args):
        def f(parts):
            parts["projection"] = (tag, args)

        return f

    def record_arg(key, value):
        def f(parts):
            tag, args = parts["projection"]
            parts["projection"] = (tag, {**args, key: value})

        return f

    return [
        ("rf", "classifier relabelled regressor", setp("estimator", "RandomForestRegressor"),
         "task"),
        ("sporf-reg", "regressor relabelled classifier", setp("estimator", "SPORFClassifier"),
         "task"),
        ("rf", "axis forest called SPORF", setp("estimator", "SPORFClassifier"), "estimator"),
        ("rf", "forest called a rotation ensemble",
         setp("estimator", "RotationEnsembleClassifier"), "estimator"),
        ("rf", "unknown estimator", setp("estimator", "EvilForest"), "savable"),
        ("rf", "n_features 2**31", setp("n_features", 2**31), "n_features"),
        ("rf", "n_features 2**40", setp("n_features", 2**40), "n_features"),
        ("rf", "n_features 2**62", setp("n_features", 2**62), "n_features"),
        ("rf", "n_features 0", setp("n_features", 0), "n_features"),
        ("rf", "n_features off by one", setp("n_features", 5), "n_features"),
        ("rf", "feature names too few", setp("feature_names", ["a"]), "feature_names"),
        ("rf", "classes too few", setp("classes", np.array([0, 1])), "classes"),
        ("rf", "classes unsorted", setp("classes", np.array([2, 1, 0])), "classes"),
        ("rf", "classes repeated", setp("classes", np.array(["a", "a", "b"])), "classes"),
        ("rf", "classes int8 overflow", setp("classes", ("i", 1, [0, 1, 300])), "classes"),
        ("rf", "classes dtype width 2e9",
         setp("classes", ("U", 4 * 2_000_000_000, ["a", "b", "c"])), "classes"),
        ("rf", "classes dtype int3", setp("classes", ("i", 3, [0, 1, 2])), "classes"),
        ("rf", "classes bytes dtype", setp("classes", ("S", 2_000_000_000, [b"a", b"b", b"c"])),
         "classes"),
        ("rf", "classes float16 inexact", setp("classes", ("f", 2, [0.1, 1.0, 2.0])),
         "float16"),
        ("rf", "classes float32 overflow", setp("classes", ("f", 4, [0.0, 1.0, 1e39])),
         "float32"),
        ("rf", "classes missing", setp("classes", None), "task"),
        ("sporf-reg", "classes on a regressor", setp("classes", np.array([0.0])), "classes"),
        ("rf", "n_estimators disagrees", param("n_estimators", 1000), "n_estimators"),
        ("rf", "parameter named n_jobs", param("n_jobs", 3000), "n_jobs"),
        ("rf", "parameter name not an identifier", param("max depth", 3), "params"),
        ("rf", "unknown parameter", param("evil", 1), "evil"),
        ("rf", "parameter of the wrong type", param("max_depth", "deep"), "max_depth"),
        ("rf", "parameter out of range", param("min_samples_leaf", -4), "min_samples_leaf"),
        ("rf", "unknown attribute", attr("__class__", 1), "attributes"),
        ("rf", "unexpected attribute", attr("evil_", 1), "evil_"),
        ("morf", "data_shape contradicts the patches", param("data_shape", (4,)), "data_shape"),
        ("morf", "channel_axis contradicts the patches", param("channel_axis", 0),
         "channel_axis"),
        ("morf", "pooled contradicts the family", param("pooled", 0.0), "projection family"),
        ("morf", "differences contradict the filters", param("differences", 0.75),
         "differences"),
        ("oblique", "projection class contradicts the forest",
         param("projection", {"__projection__": "ForestRC", "n_combined": 2}),
         "projection family"),
        ("sporf-reg", "scaling contradicts the weights", param("scaling", None), "scaling"),
        ("sporf-reg", "feature_combinations contradicts the weights",
         param("feature_combinations", 2.0), "feature_combinations"),
        ("oblique", "record's family contradicts the forest",
         record("forest_rc", n_combined=2), "projection"),
        ("sporf-reg", "record's argument contradicts the forest",
         record_arg("feature_combinations", 2.0), "feature_combinations"),
        ("morf", "record's argument contradicts the patches",
         record_arg("data_shape", [4]), "data_shape"),
        ("rf", "record's family the estimator does not grow",
         record("sparse_signed", feature_combinations=1.5), "estimator"),
        ("morf", "record's family MORF does not grow", record("axis"), "estimator"),
        ("oblique", "record's family unknown", record("evil"), "projection"),
        ("oblique", "record's argument unknown", record_arg("evil", 1), "projection"),
        ("ae", "record's family contradicts the autoencoder's forest", record("gaussian"),
         "projection"),
        ("rotation", "record's family contradicts a rotation's forest", record("gaussian"),
         "estimator"),
        ("rf", "record not a pair", setp("projection", "axis"), "projection"),
        ("rotation", "rotation matrices cut", rot("rotations", lambda r: r[:, :2]), "rotations"),
        ("rotation", "rotation not finite", rot("rotations", lambda r: np.full_like(r, np.inf)), "rotations"),
        ("rotation", "rotation scaled", rot("rotations", lambda r: r * 1e30), "rotations"),
        ("rotation", "tree counts disagree", rot("n_trees", lambda n: n + 1), "n_trees"),
        ("rotation", "forest missing", rot("forests", lambda f: f[:-1]), "forests"),
        ("rotation", "scaling of the wrong width",
         rot("scaling", lambda s: (s[0], s[1][:2], s[2][:2])), "scaling"),
        ("rotation", "scaling span zero", rot("scaling", lambda s: (s[0], s[1], s[2] * 0)),
         "scaling"),
        ("rotation", "scaling kind changed", rot("scaling", lambda s: ("rank", [s[1]] * 4)),
         "scaling"),
        ("rotation", "n_rotations disagrees", param("n_rotations", 7), "n_rotations"),
        ("ae", "leaf map cut", enc("leaf_map", lambda m: m[:-1]), "leaf_map"),
        ("ae", "leaf mass not finite", enc("leaf_mass", lambda m: m * np.nan), "leaf_map"),
        ("ae", "training rows cut", attr("_X_fit", np.zeros((3, 4), np.float32)), "_X_fit"),
        ("ae", "bounds of the wrong width", attr("_train_lower", np.zeros((1, 1))),
         "_train_lower"),
        ("ae", "classes on an autoencoder", setp("classes", np.array([0, 1])), "classes"),
        ("ae", "autoencoder called a forest", setp("estimator", "RandomForestClassifier"),
         "RandomForestClassifier needs"),
    ]  # fmt: skip


# fields only the Python estimator can judge (the crate's loader accepts them): attributes
# only Python reads, and whether the parameters resolve to the projection the file records,
# which is the estimator's rule (its `_projection_object`) and is not copied into the crate:
# the crate checks the record against the forests (the mutations of the record above), the
# package the parameters against the record
_PROJECTION_PARAMETERS = {
    "data_shape contradicts the patches",
    "channel_axis contradicts the patches",
    "pooled contradicts the family",
    "differences contradict the filters",
    "projection class contradicts the forest",
    "scaling contradicts the weights",
    "feature_combinations contradicts the weights",
}
_PYTHON_CHECKED = {
    "n_rotations disagrees",
    "training rows cut",
    "bounds of the wrong width",
} | _PROJECTION_PARAMETERS


@pytest.mark.parametrize(
    "kind, what, mutate, fragment", _mutations(), ids=[m[1] for m in _mutations()]
)
def test_every_header_field_mutated_is_a_forest_error_naming_it(
    kind, what, mutate, fragment, tmp_path
):
    est, X = _fitted(kind)
    parts = _parts(est)
    parts["params"] = dict(parts["params"])
    parts["attributes"] = dict(parts["attributes"])
    if "rotation" in parts:
        parts["rotation"] = dict(parts["rotation"])
    mutate(parts)
    try:
        path = _write_crafted(tmp_path, parts)
    except ForestError as e:  # some fields cannot even be expressed in the format
        assert fragment in str(e) or "cannot save" in str(e)
        return
    with pytest.raises(ForestError, match=fragment):
        of.load(path)
    if what in _PYTHON_CHECKED:  # the crate's loader accepts what Python alone judges
        _core.load_model(str(path))
    else:  # the crate's loader and checked writer refuse the same parts
        with pytest.raises(ForestError, match=fragment):
            _core.load_model(str(path))
        with pytest.raises(ForestError, match=fragment):
            _core.save_model(str(tmp_path / "again.of"), parts)


# -- files of versions 1 to 4, whose header has no projection record -------------------------


def _write_legacy(tmp_path, parts):
    """A file written as the writer of versions 1 to 4 wrote ``parts`` (the crate keeps
    that writer beside its reader of those versions, for these tests)."""
    path = tmp_path / "legacy.of"
    _core._save_model_unchecked_for_test(str(path), parts, legacy=True)
    return path


def _outputs(est, X):
    if hasattr(est, "predict_proba"):
        return est.predict_proba(X)
    return est.transform(X) if hasattr(est, "transform") else est.predict(X)


@pytest.mark.parametrize(
    "kind, version",
    [
        ("rf", 1),
        ("multi", 2),
        ("sporf-reg", 2),
        ("morf", 1),
        ("oblique", 1),
        ("rotation", 1),
        ("ae", 1),
        ("quantile", 3),
        ("categorical", 4),
    ],
)
def test_files_of_versions_1_to_4_load_with_their_forests_record(kind, version, tmp_path):
    est, X = _fitted(kind)
    path = _write_legacy(tmp_path, _parts(est))
    assert struct.unpack("<I", path.read_bytes()[8:12])[0] == version
    # the crate's reader records what the forests grow; Python judges the parameters
    # against it as for every file
    tag, _ = _core.load_model(str(path))["projection"]
    assert tag == _parts(est)["projection"][0]
    again = of.load(path)
    outputs, expected = _outputs(again, X), _outputs(est, X)
    for got, want in zip(*(o if isinstance(o, list) else [o] for o in (outputs, expected))):
        np.testing.assert_array_equal(got, want)
    # saved again, it is a file of this version
    again.save(tmp_path / "again.of")
    assert struct.unpack("<I", (tmp_path / "again.of").read_bytes()[8:12])[0] == 5


# what files of versions 1 to 4 were refused for, they are refused for still (the crate
# judged their parameters against the forests; Python now judges them against the record,
# which is the forests')
_LEGACY_VERDICTS = {
    "axis forest called SPORF",
    "n_estimators disagrees",
    "classes unsorted",
} | _PROJECTION_PARAMETERS


@pytest.mark.parametrize(
    "kind, what, mutate, fragment",
    [m for m in _mutations() if m[1] in _LEGACY_VERDICTS],
    ids=[m[1] for m in _mutations() if m[1] in _LEGACY_VERDICTS],
)
def test_files_of_versions_1_to_4_keep_their_verdicts(kind, what, mutate, fragment, tmp_path):
    est, _ = _fitted(kind)
    parts = _parts(est)
    parts["params"] = dict(parts["params"])
    mutate(parts)
    with pytest.raises(ForestError, match=fragment):
        of.load(_write_legacy(tmp_path, parts))


# -- hostile paths and bytes ------------------------------------------------------------------


def test_devices_and_directories_are_refused(tmp_path):
    for path in ["/dev/zero", "/dev/null", str(tmp_path)]:
        if os.path.exists(path):
            with pytest.raises(ForestError, match="not a regular file"):
                of.load(path)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    code = f"import obliqueforest as of\ntry:\n of.load({str(fifo)!r})\nexcept of.ForestError as e:\n print(e)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "not a regular file" in out.stdout, out.stderr


def test_file_of_another_layout_says_what_it_is(tmp_path):
    est, _ = _fitted("rf")
    path = tmp_path / "x.of"
    path.write_bytes(b"OBLQPY01" + bytes(100))
    with pytest.raises(ForestError, match="0.1"):
        of.load(path)
    path.write_bytes(est._forest.to_bytes())
    with pytest.raises(ForestError, match="bare core forest"):
        of.load(path)


def test_a_class_split_reinterpreted_per_output_is_refused(tmp_path):
    # outputs of 2 and 3 classes whose leaf values are read as outputs of 3 and 2
    X, y = _iris()
    est = of.RandomForestClassifier(5, random_state=0).fit(X, np.c_[y % 2, y])
    parts = _parts(est)
    parts["classes"] = [est.classes_[1], est.classes_[0]]
    path = _write_crafted(tmp_path, parts)
    blob = path.read_bytes()
    # postcard: Task::MultiClassification (variant 2), 2 outputs, of 2 and 3 classes
    task, swapped = bytes([2, 2, 2, 3]), bytes([2, 2, 3, 2])
    assert blob.count(task) == 2  # the header's task and the forest's
    path.write_bytes(_refresh_crc(bytearray(blob.replace(task, swapped))))
    with pytest.raises(ForestError, match="not a distribution"):
        of.load(path)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_leaf_values_that_are_not_finite_are_refused(bad, tmp_path):
    X, _ = make_friedman1(60, random_state=0)
    y = np.arange(60.0)
    y[7] = 1234.5678  # a value of its own leaf (one tree, no bootstrap, distinct rows)
    est = of.RandomForestRegressor(1, bootstrap=False, random_state=0).fit(X, y)
    path = tmp_path / "m.of"
    est.save(path)
    blob = path.read_bytes()
    leaf = struct.pack("<d", 1234.5678)
    assert blob.count(leaf) == 1
    path.write_bytes(_refresh_crc(bytearray(blob.replace(leaf, struct.pack("<d", bad)))))
    with pytest.raises(ForestError, match="leaf value not finite"):
        of.load(path)
    # the same bytes pickled: Forest.from_bytes validates them alike
    forest = bytearray(est._forest.to_bytes())
    at = forest.index(leaf)
    forest[at : at + 8] = struct.pack("<d", bad)
    with pytest.raises(ForestError, match="leaf value not finite"):
        type(est._forest).from_bytes(bytes(_refresh_crc(forest)))


def _refresh_crc(blob):
    payload = bytes(blob[24:])
    blob[12:20] = struct.pack("<Q", len(payload))
    blob[20:24] = struct.pack("<I", zlib.crc32(payload))
    return blob


def test_versions_truncation_and_trailing_bytes(tmp_path):
    est, _ = _fitted("rf")
    path = tmp_path / "m.of"
    est.save(path)
    data = bytearray(path.read_bytes())
    newer = bytearray(data)
    # (multi-output models are written as the next version: the newest read is that one)
    newer[8:12] = struct.pack("<I", of._core.MODEL_FORMAT_VERSION + 1)
    path.write_bytes(newer)
    with pytest.raises(ForestError, match="newer"):
        of.load(path)
    for blob, fragment in [
        (data[:-10], "truncated"),
        (data + b"xx", "appended"),
        (data[:10], "too short"),
        (_refresh_crc(bytearray(data) + b"\x00\x00"), "trailing"),
    ]:
        path.write_bytes(blob)
        with pytest.raises(ForestError, match=fragment):
            of.load(path)


def _assert_sane_outputs(est, X, what):
    """A loaded model's outputs for finite rows: finite, class probabilities that sum to 1
    per output, labels among ``classes_``; a rotation ensemble may refuse rows its scaling
    and rotations take beyond float32's range (by name, as a fitted one does)."""
    try:
        with np.errstate(all="raise"):
            if hasattr(est, "transform") and not hasattr(est, "predict"):
                assert np.isfinite(est.transform(X)).all(), what
                return
            pred = est.predict(X)
            if hasattr(est, "predict_proba"):
                probas = est.predict_proba(X)
                probas = probas if isinstance(probas, list) else [probas]
                classes = est.classes_ if isinstance(est.classes_, list) else [est.classes_]
                pred = pred.reshape(len(X), -1)
                for j, (proba, labels) in enumerate(zip(probas, classes)):
                    assert np.isfinite(proba).all() and (proba >= 0).all(), what
                    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-6, err_msg=what)
                    assert np.isin(pred[:, j], labels).all(), what
            else:
                assert np.isfinite(pred).all(), what
    except ValueError as e:
        if isinstance(e, _core.ForestInternalError) or "beyond float32" not in str(e):
            raise


_FUZZ_KINDS = ["rf", "sporf-reg", "multi", "morf", "rotation", "ae"]


def _fuzz(tmp_path, n, seed):
    """``n`` CRC-fixed random mutations (1 to 3 payload bytes) of a saved model of each
    kind: each is refused with a ForestError (never an internal one), or loads as a model
    whose outputs are sane (``_assert_sane_outputs``)."""
    rng = np.random.default_rng(seed)
    outcomes = {"rejected": 0, "loaded": 0}
    for kind in _FUZZ_KINDS:
        est, X = _fitted(kind)
        X = np.vstack([X, X * 1e30, np.full((1, X.shape[1]), -3e38)])
        _assert_sane_outputs(est, X, kind)
        path = tmp_path / f"{kind}.of"
        est.save(path)
        raw = path.read_bytes()
        for case in range(n):
            blob = bytearray(raw)
            for pos in rng.integers(24, len(blob), size=rng.integers(1, 4)):
                blob[pos] = rng.integers(0, 256)
            path.write_bytes(_refresh_crc(blob))  # past the checksum: into the decoder
            try:
                again = of.load(path)
            except ForestError as e:
                assert not isinstance(e, _core.ForestInternalError), f"{kind} {case}: {e}"
                outcomes["rejected"] += 1
                continue
            outcomes["loaded"] += 1
            _assert_sane_outputs(again, X, f"{kind} case {case}")
    return outcomes


def test_mutated_payloads_load_only_as_models_with_sane_outputs(tmp_path):
    outcomes = _fuzz(tmp_path, 60, 0)
    assert outcomes["rejected"] > 0 and outcomes["loaded"] > 0, outcomes


@pytest.mark.slow
def test_mutated_payloads_long_fuzz(tmp_path):
    outcomes = _fuzz(tmp_path, 1000, 1)
    assert outcomes["rejected"] > 0 and outcomes["loaded"] > 0, outcomes


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/proc/self/clear_refs"), reason="needs Linux /proc")
def test_save_and_load_peak_memory_stay_near_the_model_size():
    import importlib.util
    from pathlib import Path

    script = Path(__file__).resolve().parent.parent / "benches" / "model_file_memory.py"
    spec = importlib.util.spec_from_file_location("model_file_memory", script)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    r = bench.main(["--rows", "30000", "--trees", "20"])
    assert r["load_peak"] <= 1.5 * r["model_rss"]
    assert r["save_peak"] <= 0.5 * r["model_rss"]


# -- crafted Python-side parts: a ForestError naming the problem, never a KeyError --------


def _table_autoencoder():
    pd = pytest.importorskip("pandas")
    from obliqueforest.autoencoder import ForestAutoencoder

    X, y = load_iris(return_X_y=True)
    df = pd.DataFrame(X, columns=["sl", "sw", "pl", "pw"])
    df["species"] = pd.Categorical(np.array(["a", "b", "c"])[y], ordered=True)
    df["big"] = y > 0
    return ForestAutoencoder(n_components=2, n_estimators=10, random_state=0).fit(df)


def _drop(key):
    return lambda a: a.pop(key)


def _set(key, value):
    return lambda a: a.__setitem__(key, value)


CODEC_MUTATIONS = {
    # issue 24, item 14: one part of the codec without the others
    "columns without dtypes": (_drop("_codec_dtypes"), r"lacks \['_codec_dtypes'\]"),
    "columns without ordered flags": (_drop("_codec_ordered"), "lacks"),
    "dtypes without columns": (_drop("_codec_columns"), "lacks"),
    "dtype names not a list": (_set("_codec_dtypes", 3), "dtype names"),
    "dtype names too few": (_set("_codec_dtypes", ["float64"]), "dtype names"),
    "ordered flags not bools": (_set("_codec_ordered", [1, 0, 0, 0, 1, 0]), "ordered flags"),
    "categories not a list": (_set("_codec_categories_4", 7), "not a list"),
    "categories of a float column": (_set("_codec_categories_0", ["x", "y"]), "column 0"),
    "categories of no column": (_set("_codec_categories_99", ["x"]), "no columns"),
    "categorical column without categories": (_drop("_codec_categories_4"), "no categories"),
    "categories cut": (_set("_codec_categories_4", ["a", "b"]), "_n_categories"),
    "arf accuracies not a list": (_set("arf_accuracies_", 3.0), "arf_accuracies_"),
}


@pytest.mark.parametrize("what", CODEC_MUTATIONS)
def test_crafted_autoencoder_codec_is_a_forest_error_naming_it(what, tmp_path):
    mutate, fragment = CODEC_MUTATIONS[what]
    parts = _parts(_table_autoencoder())
    parts["attributes"] = dict(parts["attributes"])
    mutate(parts["attributes"])
    with pytest.raises(ForestError, match=fragment):
        of.load(_write_crafted(tmp_path, parts))


def test_crafted_graph_projection_is_refused_before_allocating(tmp_path):
    from obliqueforest.projections import GraphNeighbourhood

    X, y = _iris()
    ring = np.roll(np.eye(4), 1, axis=1)
    est = of.ObliqueForestClassifier(GraphNeighbourhood(ring), 3, random_state=0).fit(X, y)
    parts = _parts(est)
    parts["params"] = dict(parts["params"])
    parts["params"]["projection"] = {**parts["params"]["projection"], "adjacency__n_nodes": 2**40}
    with pytest.raises(ForestError, match="nodes"):
        of.load(_write_crafted(tmp_path, parts))
