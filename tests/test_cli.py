"""End-to-end tests of the ``obliqueforest`` command line (run as ``python -m obliqueforest``)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest


def run_cli(*args, cwd=None, timeout=120):
    """Runs the CLI in a subprocess; returns the CompletedProcess (text mode)."""
    return subprocess.run(
        [sys.executable, "-m", "obliqueforest", *map(str, args)],
        check=False,
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout,
    )


class Result:
    def __init__(self, returncode, stdout, stderr):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


@pytest.fixture
def cli(capsys):
    """Runs ``obliqueforest.cli.main`` in this process (a subprocess costs seconds of imports);
    returns exit status and captured output like :func:`run_cli`."""
    from obliqueforest.cli import main

    def run(*args):
        capsys.readouterr()
        try:
            code = main([str(a) for a in args])
        except SystemExit as e:  # argparse usage errors
            code = e.code
        out, err = capsys.readouterr()
        return Result(code, out, err)

    return run


def test_demo_tiny_prints_table_and_json(cli, tmp_path):
    out = tmp_path / "demo.json"
    res = cli("demo", "--tiny", "--n-jobs", "1", "--json", out, "--datasets", "trunk", "hv_bars")
    assert res.returncode == 0, res.stderr
    assert "| dataset |" in res.stdout
    assert "| hv_bars |" in res.stdout and "MORF" in res.stdout
    records = json.loads(out.read_text())["results"]
    models = {(r["dataset"], r["model"]) for r in records}
    assert ("trunk", "sklearn RF") in models and ("hv_bars", "MORF") in models
    assert ("trunk", "MORF") not in models
    assert all(0.0 <= r["test_error"] <= 1.0 for r in records)


def test_demo_unknown_dataset_is_a_clear_error(cli):
    res = cli("demo", "--tiny", "--datasets", "nope")
    assert res.returncode == 2
    assert "unknown demo dataset" in res.stderr and "Traceback" not in res.stderr


@pytest.mark.slow
def test_demo_quick_runs():
    res = run_cli("demo", "--quick", timeout=600)
    assert res.returncode == 0, res.stderr
    assert res.stdout.count("| sparse_parity |") == 3


# -- fit / predict / evaluate / embed ---------------------------------------------------


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    """A small classification table as CSV and Parquet, plus one with a text column."""
    np = pytest.importorskip("numpy")
    pd = pytest.importorskip("pandas")
    from obliqueforest.datasets import make_trunk

    d = tmp_path_factory.mktemp("cli")
    X, y = make_trunk(200, n_features=4, random_state=0)
    df = pd.DataFrame(X, columns=[f"f{i}" for i in range(4)])
    df["label"] = np.where(y == 1, "yes", "no")
    paths = {"csv": d / "data.csv", "bad": d / "bad.csv", "dir": d}
    df.to_csv(paths["csv"], index=False)
    try:
        import pyarrow  # noqa: F401

        paths["parquet"] = d / "data.parquet"
        df.to_parquet(paths["parquet"])
    except ImportError:
        pass
    df.assign(colour="red").to_csv(paths["bad"], index=False)
    return paths


def assert_clean_error(res, *fragments):
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr)
    assert "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    for fragment in fragments:
        assert fragment in res.stderr, res.stderr


def test_fit_predict_round_trip_csv(cli, tables, tmp_path):
    pd = pytest.importorskip("pandas")
    model, pred = tmp_path / "m.ofm", tmp_path / "pred.csv"
    res = cli(
        "fit", tables["csv"], "--target", "label", "--estimator", "sporf", "--model", model,
        "--param", "n_estimators=15", "--param", "random_state=0", "--param", "max_features=sqrt",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert model.exists() and "SPORFClassifier" in res.stderr
    # the real command, in a fresh interpreter
    res = run_cli("predict", model, tables["csv"], "--target", "label", "--proba", "--out", pred)
    assert res.returncode == 0, res.stderr
    out = pd.read_csv(pred)
    assert list(out.columns) == ["prediction", "proba_no", "proba_yes"]
    truth = pd.read_csv(tables["csv"])["label"]
    assert len(out) == len(truth)
    assert (out["prediction"] == truth).mean() > 0.9  # training rows
    assert abs(out[["proba_no", "proba_yes"]].sum(axis=1) - 1).max() < 1e-9

    import obliqueforest as of

    est = of.load(model)
    assert est.n_estimators == 15 and est.max_features == "sqrt"
    assert list(est.feature_names_in_) == ["f0", "f1", "f2", "f3"]


def test_fit_text_feature_on_parquet_is_a_clear_error(cli, tables, tmp_path):
    if "parquet" not in tables:
        pytest.skip("pyarrow not installed")
    model = tmp_path / "r.ofm"
    res = cli(
        "fit", tables["parquet"], "--target", "f0", "-e", "rf", "--task", "regression",
        "--model", model, "-p", "n_estimators=5", "--verbose",
    )  # fmt: skip
    # 'label' is text, so it cannot be a feature: a clean error, not a traceback
    assert_clean_error(res, "'label'", "not numeric")
    res = cli("predict", model, tables["parquet"])
    assert_clean_error(res, "no such model file")


def test_fit_regressor_with_verbose_shows_progress(cli, tables, tmp_path):
    pd = pytest.importorskip("pandas")
    data = tmp_path / "num.csv"
    pd.read_csv(tables["csv"]).drop(columns="label").to_csv(data, index=False)
    model = tmp_path / "r.ofm"
    res = cli(
        "fit", data, "--target", "f0", "-e", "sporf-reg", "--model", model,
        "-p", "n_estimators=7", "--verbose",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "7/7" in res.stderr  # the tree progress bar
    res = cli("predict", model, data, "--target", "f0")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.strip().splitlines()
    assert lines[0] == "prediction" and len(lines) == 201
    float(lines[1])


def test_evaluate_reports_mean_and_sd(cli, tables):
    res = cli(
        "evaluate", tables["csv"], "--target", "label", "-e", "rf", "--cv", "3",
        "-p", "n_estimators=10",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "3-fold CV" in res.stdout and "accuracy:" in res.stdout and "±" in res.stdout
    mean = float(res.stdout.split("accuracy:")[1].split("±")[0])
    assert 0.7 < mean <= 1.0


def test_embed_writes_components_and_target(cli, tables, tmp_path):
    pd = pytest.importorskip("pandas")
    out = tmp_path / "emb.csv"
    res = cli(
        "embed", tables["csv"], "--target", "label", "--out", out, "--n-components", "3",
        "-p", "n_estimators=20", "-p", "random_state=0",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    emb = pd.read_csv(out)
    assert list(emb.columns) == ["component_1", "component_2", "component_3", "label"]
    assert len(emb) == 200 and emb.iloc[:, :3].notna().all().all()


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["fit", "{missing}", "--target", "label", "--model", "{model}"], ["no such file"]),
        (["fit", "{csv}", "--target", "nope", "--model", "{model}"], ["'nope'", "not found"]),
        (["fit", "{bad}", "--target", "label", "--model", "{model}"], ["'colour'", "not numeric"]),
        (["fit", "{csv}", "--target", "label", "--model", "{model}", "-p", "foo=1"], ["'foo'"]),
        (["fit", "{csv}", "--target", "label", "--model", "{model}", "-p", "max_depth=-1"],
         ["max_depth"]),
        (["fit", "{csv}", "--target", "label", "-e", "rf-reg", "--model", "{model}"],
         ["not numeric"]),
        (["evaluate", "{csv}", "--target", "label", "--cv", "1000"], ["--cv"]),
        (["predict", "{missing}", "{csv}"], ["no such model file"]),
        (["predict", "{csv}", "{csv}"], ["cannot load model", "not an obliqueforest model"]),
        (["embed", "{missing}", "--out", "{model}"], ["no such file"]),
    ],
)  # fmt: skip
def test_user_errors_are_one_line_with_exit_code_2(cli, tables, tmp_path, args, fragments):
    fill = {
        "missing": tmp_path / "missing.csv",
        "model": tmp_path / "m.ofm",
        "csv": tables["csv"],
        "bad": tables["bad"],
    }
    res = cli(*[a.format(**fill) for a in args])
    assert_clean_error(res, *fragments)


@pytest.fixture(scope="module")
def saved_model(tables, tmp_path_factory):
    import obliqueforest as of
    import pandas as pd

    model = tmp_path_factory.mktemp("model") / "m.ofm"
    df = pd.read_csv(tables["csv"])
    est = of.RandomForestClassifier(n_estimators=3, random_state=0)
    est.fit(df.drop(columns="label"), df["label"].to_numpy(dtype=str)).save(model)
    return model


def test_predict_corrupt_model_is_a_clear_error(cli, saved_model, tables, tmp_path):
    data = bytearray(saved_model.read_bytes())
    data[len(data) // 2] ^= 0xFF
    bad = tmp_path / "corrupt.ofm"
    bad.write_bytes(bytes(data))
    assert_clean_error(run_cli("predict", bad, tables["csv"]), "cannot load model", "damaged")
    truncated = tmp_path / "truncated.ofm"
    truncated.write_bytes(bytes(data[:50]))
    assert_clean_error(cli("predict", truncated, tables["csv"]), "cannot load model")


def test_predict_model_from_newer_format_says_newer(cli, saved_model, tables, tmp_path):
    import struct

    import obliqueforest as of

    data = bytearray(saved_model.read_bytes())
    data[8:12] = struct.pack("<I", of.MODEL_FORMAT_VERSION + 1)  # the file's format version
    newer = tmp_path / "newer.ofm"
    newer.write_bytes(bytes(data))
    assert_clean_error(cli("predict", newer, tables["csv"]), "newer")


def test_predict_with_missing_feature_column_is_a_clear_error(cli, saved_model, tables, tmp_path):
    pd = pytest.importorskip("pandas")
    data = tmp_path / "fewer.csv"
    pd.read_csv(tables["csv"]).drop(columns="f2").to_csv(data, index=False)
    assert_clean_error(cli("predict", saved_model, data), "'f2'")


def test_predict_proba_on_regressor_is_a_clear_error(cli, tables, tmp_path):
    pd = pytest.importorskip("pandas")
    data = tmp_path / "num.csv"
    pd.read_csv(tables["csv"]).drop(columns="label").to_csv(data, index=False)
    model = tmp_path / "r.ofm"
    res = cli(
        "fit", data, "--target", "f0", "-e", "rf-reg", "--model", model, "-p", "n_estimators=2"
    )
    assert res.returncode == 0, res.stderr
    assert_clean_error(cli("predict", model, data, "--proba"), "regressor")


def test_param_values_are_python_literals_or_strings():
    from obliqueforest.cli import parse_param

    assert parse_param("n_estimators=50") == ("n_estimators", 50)
    assert parse_param("max_features=0.5") == ("max_features", 0.5)
    assert parse_param("max_features=sqrt") == ("max_features", "sqrt")
    assert parse_param("max_depth=None") == ("max_depth", None)
    assert parse_param("data_shape=(28, 28)") == ("data_shape", (28, 28))


# -- rough edges: version, pipes, one rule for columns, clean errors ---------------------------


def test_version_prints_the_package_version(cli):
    import obliqueforest as of

    res = run_cli("--version")
    assert res.returncode == 0 and res.stdout.strip() == f"obliqueforest {of.__version__}"


def test_output_piped_into_a_reader_that_stops_exits_quietly_141(tables, tmp_path):
    import os
    import subprocess
    import sys

    model = tmp_path / "m.of"
    assert run_cli("fit", tables["csv"], "--target", "label", "--model", model,
                   "-p", "n_estimators=3").returncode == 0  # fmt: skip
    big = tmp_path / "big.csv"
    lines = tables["csv"].read_text().splitlines()
    big.write_text("\n".join([lines[0]] + lines[1:] * 300) + "\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "obliqueforest", "predict", str(model), str(big),
         "--target", "label"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    )  # fmt: skip
    proc.stdout.readline()
    proc.stdout.close()  # what `| head -1` does
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141
    assert "Broken pipe" not in err and "Traceback" not in err, err


@pytest.mark.parametrize("command", ["fit", "evaluate"])
def test_bad_parameter_value_names_the_estimator_not_a_sklearn_function(
    cli, tables, tmp_path, command
):
    args = [command, tables["csv"], "--target", "label", "-e", "morf", "-p", "data_shape=28x28"]
    if command == "fit":
        args += ["--model", tmp_path / "m.of"]
    res = cli(*args)
    assert_clean_error(res, "MORFClassifier", "data_shape")
    assert "cross_val_score" not in res.stderr


def test_text_columns_get_one_message_in_every_command(cli, tables, tmp_path):
    messages = set()
    for args in (
        ["fit", tables["bad"], "--target", "label", "--model", tmp_path / "m.of"],
        ["evaluate", tables["bad"], "--target", "label"],
        ["embed", tables["bad"], "--target", "label"],
    ):
        res = cli(*args)
        assert_clean_error(res, "'colour'", "not numeric")
        messages.add(res.stderr.split("error: ", 1)[1])
    assert len(messages) == 1


def test_values_beyond_float32_and_continuous_targets_are_clean_errors(cli, tmp_path):
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    df = pd.DataFrame(rng.normal(size=(60, 3)), columns=["a", "b", "c"])
    df["y"] = rng.normal(size=60)
    cont = tmp_path / "cont.csv"
    df.to_csv(cont, index=False)
    res = cli("fit", cont, "--target", "y", "--model", tmp_path / "m.of")
    assert_clean_error(res, "continuous", "-reg", "--task regression")
    df.loc[5, "b"] = 1e39
    df["y"] = df["y"] > 0
    huge = tmp_path / "huge.csv"
    df.to_csv(huge, index=False)
    for command in ("fit", "evaluate"):
        args = [command, huge, "--target", "y"]
        if command == "fit":
            args += ["--model", tmp_path / "m.of"]
        assert_clean_error(cli(*args), "'b'", "float32")


def test_missing_feature_values_are_native_except_for_embed(cli, tmp_path):
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 3))
    y = np.where(X[:, 0] > 0, "up", "down")
    X[rng.random(300) < 0.3, 0] = np.nan
    # a missing value carries the label: only a native treatment of NaN can use it
    y[np.isnan(X[:, 0])] = "gone"
    df = pd.DataFrame(X, columns=["a", "b", "c"]).assign(y=y)
    data, model, pred = tmp_path / "nan.csv", tmp_path / "m.of", tmp_path / "p.csv"
    df.to_csv(data, index=False)  # NaN as empty cells
    assert "\n," in data.read_text()  # rows whose first cell is empty
    res = cli("fit", data, "--target", "y", "--model", model, "--param", "random_state=0")
    assert res.returncode == 0, res.stderr
    res = cli("predict", model, data, "--target", "y", "--out", pred)
    assert res.returncode == 0, res.stderr
    assert (pd.read_csv(pred)["prediction"] == df["y"]).mean() > 0.95
    res = cli("evaluate", data, "--target", "y", "--param", "n_estimators=20")
    assert res.returncode == 0, res.stderr
    assert_clean_error(cli("embed", data, "--target", "y"), "'a'", "missing values")
    df.loc[3, "b"] = np.inf
    df.to_csv(data, index=False)
    assert_clean_error(
        cli("fit", data, "--target", "y", "--model", model), "'b'", "infinite values"
    )
