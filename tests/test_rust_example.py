"""Python → Rust: models saved by the Python estimators, served by the crate's example
program (`examples/predict.rs`), predict the same labels and the same probability bits."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_digits, make_friedman1

import obliqueforest as of
from obliqueforest.rotation import RotationEnsembleClassifier, RotationEnsembleRegressor

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.skipif(
    shutil.which("cargo") is None or not (ROOT / "Cargo.toml").exists(),
    reason="needs cargo and the crate's sources",
)


def _run_example(model, rows, tmp_path):
    csv = tmp_path / "rows.csv"
    csv.write_text("\n".join(",".join(repr(float(v)) for v in row) for row in rows) + "\n")
    out = subprocess.run(
        ["cargo", "run", "--quiet", "--release", "--example", "predict", "--", str(model),
         str(csv)],
        cwd=ROOT, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    return [line.split(",") for line in out.stdout.splitlines()]


def _digits():
    X, y = load_digits(return_X_y=True)
    return X[:600], y[:600], X[600:700]


CLASSIFIERS = {
    "rf": lambda: of.RandomForestClassifier(30, random_state=0),
    "sporf": lambda: of.SPORFClassifier(30, random_state=0),
    "morf": lambda: of.MORFClassifier(30, data_shape=(8, 8), max_patch_size=3, random_state=0),
    "rotation": lambda: RotationEnsembleClassifier(30, n_rotations=4, random_state=0),
    "rotation-rank": lambda: RotationEnsembleClassifier(
        30, n_rotations=4, scaling="rank", random_state=0
    ),
}


@pytest.mark.parametrize("name", list(CLASSIFIERS))
def test_rust_example_predicts_python_classifiers_bit_for_bit(name, tmp_path):
    X, y, X_new = _digits()
    labels = np.array([f"digit{d}" for d in range(10)])[y]
    est = CLASSIFIERS[name]().fit(X, labels)
    est.save(tmp_path / "m.of")
    lines = _run_example(tmp_path / "m.of", X_new, tmp_path)
    assert len(lines) == len(X_new)
    np.testing.assert_array_equal([line[0] for line in lines], est.predict(X_new))
    rust = np.array([[float(v) for v in line[1:]] for line in lines])
    python = est.predict_proba(X_new)
    assert rust.shape == python.shape
    assert (rust.view(np.uint64) == python.view(np.uint64)).all()  # the same bits


@pytest.mark.parametrize(
    "make",
    [
        lambda: of.SPORFRegressor(20, random_state=0),
        lambda: RotationEnsembleRegressor(20, n_rotations=3, random_state=0),
    ],
    ids=["sporf", "rotation"],
)
def test_rust_example_predicts_python_regressors_bit_for_bit(make, tmp_path):
    X, y = make_friedman1(300, random_state=0)
    est = make().fit(X[:250], y[:250])
    est.save(tmp_path / "m.of")
    lines = _run_example(tmp_path / "m.of", X[250:], tmp_path)
    rust = np.array([float(line[0]) for line in lines])
    assert (rust.view(np.uint64) == est.predict(X[250:]).view(np.uint64)).all()


def test_rust_example_embeds_like_the_python_autoencoder(tmp_path):
    from sklearn.datasets import load_wine

    from obliqueforest.autoencoder import ForestAutoencoder

    X, _ = load_wine(return_X_y=True)
    ae = ForestAutoencoder(n_components=3, n_estimators=50, random_state=0).fit(X[:150])
    ae.save(tmp_path / "ae.of")
    lines = _run_example(tmp_path / "ae.of", X[150:], tmp_path)
    rust = np.array([[float(v) for v in line] for line in lines])
    python = ae.transform(X[150:])
    assert rust.shape == python.shape
    assert (rust.view(np.uint64) == python.view(np.uint64)).all()  # the same bits


@pytest.mark.parametrize("projection", [None, of.projections.SparseSigned()], ids=["axis", "sporf"])
def test_rust_example_scores_like_the_python_isolation_forest(projection, tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 5))
    est = of.IsolationForest(50, projection=projection, contamination=0.05, random_state=0)
    est.fit(X)
    est.save(tmp_path / "iso.of")
    X_new = np.vstack([rng.normal(size=(30, 5)), np.full((3, 5), 6.0)])
    lines = _run_example(tmp_path / "iso.of", X_new, tmp_path)
    np.testing.assert_array_equal([int(line[0]) for line in lines], est.predict(X_new))
    rust = np.array([float(line[1]) for line in lines])
    assert (rust.view(np.uint64) == est.score_samples(X_new).view(np.uint64)).all()


def test_rust_example_gives_an_unsupervised_forests_leaves(tmp_path):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 4))
    est = of.UnsupervisedRandomForest(10, projection=of.projections.Gaussian(), random_state=0)
    est.fit(X)
    est.save(tmp_path / "urf.of")
    lines = _run_example(tmp_path / "urf.of", X[:20], tmp_path)
    np.testing.assert_array_equal(np.array(lines, dtype=np.int64), est.apply(X[:20]))


def _run_raw(model, text, tmp_path):
    csv = tmp_path / "rows.csv"
    csv.write_text(text)
    return subprocess.run(
        ["cargo", "run", "--quiet", "--release", "--example", "predict", "--", str(model),
         str(csv)],
        cwd=ROOT, capture_output=True, text=True, timeout=900,
    )  # fmt: skip


@pytest.fixture(scope="module")
def named_model(tmp_path_factory):
    pd = pytest.importorskip("pandas")
    X, y, X_new = _digits()
    frame = pd.DataFrame(X[:, :10], columns=[f"px{j}" for j in range(10)])
    est = of.SPORFClassifier(20, random_state=0).fit(frame, y)
    path = tmp_path_factory.mktemp("named") / "m.of"
    est.save(path)
    return path, est, pd.DataFrame(X_new[:, :10], columns=frame.columns)


def test_rust_example_finds_columns_by_name_and_ignores_the_others(named_model, tmp_path):
    path, est, new = named_model
    shuffled = new[list(reversed(new.columns))].assign(id=[f"row{i}" for i in range(len(new))])
    text = shuffled.to_csv(index=False)
    out = _run_raw(path, text, tmp_path)
    assert out.returncode == 0, out.stderr
    labels = [line.split(",")[0] for line in out.stdout.splitlines()]
    assert labels == [str(v) for v in est.predict(new)]


def _edit_line(text, n, edit):
    lines = text.split("\n")
    lines[n - 1] = edit(lines[n - 1])
    return "\n".join(lines)


@pytest.mark.parametrize(
    ("edit", "fragment"),
    [
        (lambda t: _edit_line(t, 3, lambda s: s + ",1"), "line 3: 12 fields, expected 11"),
        (lambda t: _edit_line(t, 3, lambda s: s.rsplit(",", 1)[0]), "line 3: 10 fields"),
        (lambda t: _edit_line(t, 1, lambda s: s.replace("px3", "px9")), 'names column "px9" twice'),
        (lambda t: _edit_line(t, 1, lambda s: s.replace("px3", "other")), 'no column "px3"'),
        (lambda t: t.split("\n", 1)[1], "line 1: 11 values, the model has 10 features"),
        (lambda t: _edit_line(t, 2, lambda s: "red," + s.split(",", 1)[1]), 'line 2: "red"'),
    ],
    ids=["long-line", "short-line", "duplicate-name", "missing-name", "no-header", "text"],
)
def test_rust_example_refuses_what_it_cannot_read_naming_the_line(
    named_model, tmp_path, edit, fragment
):
    path, _, new = named_model
    text = edit(new.assign(id=range(len(new))).to_csv(index=False))
    out = _run_raw(path, text, tmp_path)
    assert out.returncode != 0
    assert fragment in out.stderr, out.stderr


@pytest.mark.parametrize(
    "cls", [of.RandomForestClassifier, of.SPORFClassifier], ids=["rf", "sporf"]
)
def test_rust_example_reads_the_levels_of_text_columns(cls, tmp_path):
    import pandas as pd

    rng = np.random.default_rng(2)
    n = 400
    city = rng.choice(["Lyon", "Oslo", "Porto", "Quito"], n)
    X = pd.DataFrame({"x": rng.normal(size=n), "city": city, "flag": rng.random(n) < 0.5})
    y = np.where(np.isin(city, ["Oslo", "Quito"]) ^ (X["x"] > 0.5), "yes", "no")
    est = cls(20, random_state=0).fit(X, y)
    est.save(tmp_path / "m.of")
    new = X.iloc[:40].copy()
    new.loc[new.index[:3], "city"] = ["Lima", None, "Oslo"]  # unseen, missing, known
    # the header names the columns in another order, beside one the model does not read
    csv = tmp_path / "rows.csv"
    lines = ["id,city,flag,x"] + [
        f"{i},{'' if pd.isna(c) else c},{f},{x!r}"
        for i, (c, f, x) in enumerate(zip(new["city"], new["flag"], new["x"]))
    ]
    csv.write_text("\n".join(lines) + "\n")
    out = subprocess.run(
        ["cargo", "run", "--quiet", "--release", "--example", "predict", "--",
         str(tmp_path / "m.of"), str(csv)],
        cwd=ROOT, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    rows = [line.split(",") for line in out.stdout.splitlines()]
    np.testing.assert_array_equal([r[0] for r in rows], est.predict(new))
    rust = np.array([[float(v) for v in r[1:]] for r in rows])
    assert (rust.view(np.uint64) == est.predict_proba(new).view(np.uint64)).all()
