"""``obliqueforest explain``: Shapley values of a saved model's predictions as a CSV."""

from __future__ import annotations

import csv

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_diabetes, load_iris

from obliqueforest import load
from obliqueforest.cli import main
from obliqueforest.explain import TreeExplainer


@pytest.fixture
def run(capsys):
    def call(*args):
        capsys.readouterr()
        try:
            code = main([str(a) for a in args])
        except SystemExit as e:
            code = e.code
        out, err = capsys.readouterr()
        return code, out, err

    return call


def _read(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], np.array(rows[1:], dtype=object)


@pytest.fixture
def iris_files(tmp_path, run):
    data = tmp_path / "iris.csv"
    load_iris(as_frame=True).frame.to_csv(data, index=False)
    model = tmp_path / "iris.of"
    code, _, err = run(
        "fit", data, "--target", "target", "-o", model, "--seed", "0", "-p", "n_estimators=10"
    )
    assert code == 0, err
    return data, model


def test_explain_writes_values_that_add_up_to_the_predicted_class_probability(
    run, iris_files, tmp_path
):
    data, model = iris_files
    out = tmp_path / "shap.csv"
    code, _, err = run("explain", model, data, "--target", "target", "-o", out, "--n-jobs", "1")
    assert code == 0, err
    assert "path-dependent" in err
    head, rows = _read(out)
    names = list(load_iris().feature_names)
    assert head == ["prediction", "class", "expected_value"] + [f"shap_{n}" for n in names]
    est = load(model)
    X = pd.read_csv(data).drop(columns="target")
    proba = est.predict_proba(X)
    cls = rows[:, 1].astype(int)
    values = rows[:, 3:].astype(float)
    total = values.sum(axis=1) + rows[:, 2].astype(float)
    assert np.allclose(total, proba[np.arange(len(X)), cls], atol=1e-9)
    assert (rows[:, 0].astype(int) == est.predict(X)).all()
    # the same values as the Python explainer's
    want = TreeExplainer(est).shap_values(X)
    assert np.allclose(values, want[np.arange(len(X)), :, cls], atol=1e-12)


def test_explain_with_a_background_and_a_class(run, iris_files, tmp_path):
    data, model = iris_files
    out = tmp_path / "shap.csv"
    code, _, err = run(
        "explain",
        model,
        data,
        "--target",
        "target",
        "--background",
        data,
        "--n-background",
        "30",
        "--class",
        "2",
        "-o",
        out,
    )
    assert code == 0, err
    assert "interventional" in err
    head, rows = _read(out)
    assert (rows[:, 1] == "2").all()
    est = load(model)
    X = pd.read_csv(data).drop(columns="target")
    total = rows[:, 3:].astype(float).sum(axis=1) + rows[:, 2].astype(float)
    assert np.allclose(total, est.predict_proba(X)[:, 2], atol=1e-9)
    code, _, err = run("explain", model, data, "--target", "target", "--class", "7")
    assert code == 2 and "--class '7' is not a class" in err


def test_explain_a_regressor_and_an_isolation_forest(run, tmp_path):
    data = tmp_path / "diabetes.csv"
    load_diabetes(as_frame=True).frame.to_csv(data, index=False)
    X = pd.read_csv(data).drop(columns="target")
    for estimator, first in (("rf-reg", "prediction"), ("isolation", "normalised_path_length")):
        model, out = tmp_path / f"{estimator}.of", tmp_path / f"{estimator}.csv"
        code, _, err = run(
            "fit",
            data,
            "--target",
            "target",
            "-e",
            estimator,
            "-o",
            model,
            "--seed",
            "1",
            "-p",
            "n_estimators=8",
        )
        assert code == 0, err
        code, _, err = run("explain", model, data, "--target", "target", "-o", out)
        assert code == 0, err
        head, rows = _read(out)
        assert head[:2] == [first, "expected_value"]
        assert head[2:] == [f"shap_{c}" for c in X.columns]
        values = rows.astype(float)
        est = load(model)
        if estimator == "rf-reg":
            assert np.allclose(values[:, 2:].sum(axis=1) + values[:, 1], est.predict(X))
        else:
            # the explained output is the mean normalised path length behind score_samples
            assert np.allclose(-(2.0 ** -values[:, 0]), est.score_samples(X))


def test_explain_a_rotation_ensemble_and_refuse_what_predicts_nothing(run, tmp_path):
    data = tmp_path / "iris.csv"
    load_iris(as_frame=True).frame.to_csv(data, index=False)
    X = pd.read_csv(data).drop(columns="target")
    model, out = tmp_path / "rot.of", tmp_path / "rot.csv"
    fit = ("fit", data, "--target", "target", "--seed", "0", "-p", "n_estimators=10")
    code, _, err = run(
        *fit, "-e", "rotation", "-o", model, "-p", "n_rotations=2", "-p", "micro_forest_size=5"
    )
    assert code == 0, err
    code, _, err = run("explain", model, data, "--target", "target", "-o", out)
    assert code == 0, err
    _, rows = _read(out)
    cls = rows[:, 1].astype(int)
    total = rows[:, 3:].astype(float).sum(axis=1) + rows[:, 2].astype(float)
    proba = load(model).predict_proba(X)
    assert np.allclose(total, proba[np.arange(len(X)), cls], atol=1e-9)
    model = tmp_path / "urf.of"
    code, _, err = run(*fit, "-e", "unsupervised", "-o", model)
    assert code == 0, err
    code, _, err = run("explain", model, data, "--target", "target")
    assert code == 2 and "predict nothing" in err
    code, _, err = run("explain", tmp_path / "missing.of", data)
    assert code == 2 and "no such model file" in err
