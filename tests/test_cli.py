"""End-to-end tests of the ``obliqueforest`` command line (run as ``python -m obliqueforest``)."""

from __future__ import annotations

import json
import re
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


def test_fit_text_feature_on_parquet_is_a_categorical_column(cli, tables, tmp_path):
    if "parquet" not in tables:
        pytest.skip("pyarrow not installed")
    model = tmp_path / "r.ofm"
    res = cli(
        "fit", tables["parquet"], "--target", "f0", "-e", "rf", "--task", "regression",
        "--model", model, "-p", "n_estimators=5", "--verbose",
    )  # fmt: skip
    # 'label' is text: a categorical feature, its levels in the model
    assert res.returncode == 0, res.stderr
    assert res.stderr.splitlines()[-1] == "1 categorical column: label (2 levels)"
    res = cli("predict", model, tables["parquet"])
    assert res.returncode == 0, res.stderr
    assert len(res.stdout.splitlines()) == 201


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
        (["fit", "{bad}", "--target", "label", "-e", "morf", "--model", "{model}"],
         ["MORFClassifier takes numeric columns only", "'colour'", "-e sporf"]),
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


def test_numeric_only_forests_refuse_text_columns_with_one_message(cli, tables, tmp_path):
    messages = set()
    for args in (
        ["fit", tables["bad"], "--target", "label", "-e", "morf", "--model", tmp_path / "m.of"],
        ["evaluate", tables["bad"], "--target", "label", "-e", "morf"],
    ):
        res = cli(*args)
        assert_clean_error(res, "'colour'", "numeric columns only", "-e rf or -e sporf")
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


# -- CSV rules: one reader with or without pandas, errors naming the line or column ---------


def _write(path, text):
    path.write_text(text)
    return path


@pytest.mark.parametrize("target_at", [0, 1, 2])
@pytest.mark.parametrize("fields", [2, 4])
def test_ragged_row_is_an_error_naming_its_line(cli, tmp_path, target_at, fields):
    names = ["a", "b"]
    names.insert(target_at, "y")
    rows = [["1", "2"], ["3", "4"], ["5", "6"]]
    for r, label in zip(rows, "xzx"):
        r.insert(target_at, label)
    rows[1] = rows[1][:fields] if fields < 3 else rows[1] + ["7"]
    data = _write(tmp_path / "ragged.csv", "\n".join(",".join(r) for r in [names, *rows]) + "\n")
    res = cli("fit", data, "--target", "y", "--model", tmp_path / "m.of")
    assert_clean_error(res, "line 3", f"{fields} field(s)", "the header has 3")
    assert not (tmp_path / "m.of").exists()


def test_duplicate_column_names_are_an_error_naming_the_column(cli, tmp_path):
    data = _write(tmp_path / "dup.csv", "a,b,a,y\n1,2,3,x\n4,5,6,z\n")
    for args in (
        ["fit", data, "--target", "y", "--model", tmp_path / "m.of"],
        ["evaluate", data, "--target", "y"],
        ["embed", data],
    ):
        assert_clean_error(cli(*args), "duplicate column name 'a'", "columns 1 and 3")
    # pandas would read 'a', 'a.1': a name that really is 'a.1' is a distinct column
    ok = _write(
        tmp_path / "ok.csv", "a,a.1,y\n" + "".join(f"{i},{-i},{i % 2}\n" for i in range(20))
    )
    res = cli("fit", ok, "--target", "y", "--model", tmp_path / "m.of", "-p", "n_estimators=2")
    assert res.returncode == 0, res.stderr
    import obliqueforest as of

    assert list(of.load(tmp_path / "m.of").feature_names_in_) == ["a", "a.1"]


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        ("a,b,y\n", ["has a header but no data rows"]),
        ("", ["is empty", "header row is required"]),
        ("a,,y\n1,2,x\n", ["column 2 of the header has no name"]),
        ("a,b,y\n1,2,x\n3,4,\n5,6,z\n", ["target column 'y'", "missing", "line 3"]),
        ("a,b,y\n1,2,x\n3,4,NA\n", ["target column 'y'", "missing", "line 3"]),
        ("a,b,y\n1,2,x\n3,4,  \n", ["target column 'y'", "missing", "line 3"]),
    ],
)
def test_malformed_tables_get_the_clis_own_one_line_error(cli, tmp_path, text, fragments):
    data = _write(tmp_path / "t.csv", text)
    res = cli("fit", data, "--target", "y", "--model", tmp_path / "m.of")
    assert_clean_error(res, *fragments)
    assert "scikit-learn" not in res.stderr and "sklearn" not in res.stderr


def test_missing_markers_whitespace_and_booleans_read_like_pandas(tmp_path):
    from obliqueforest.cli import read_table

    data = _write(
        tmp_path / "t.csv",
        " a , b ,flag,label\n1, 2.5,True, yes\nNA,,false,no \n3,nan,TRUE,yes\n",
    )
    t = read_table(data)
    assert t.names == ["a", "b", "flag", "label"]
    np.testing.assert_array_equal(t.column("a"), [1.0, np.nan, 3.0])
    np.testing.assert_array_equal(t.column("b"), [2.5, np.nan, np.nan])
    assert t.column("flag").dtype == bool and list(t.column("flag")) == [True, False, True]
    assert list(t.column("label")) == ["yes", "no", "yes"]
    assert t.where(1) == "line 3"


def test_a_column_that_turns_to_text_late_keeps_its_text(tmp_path, monkeypatch):
    import obliqueforest._cli_tables as tables

    monkeypatch.setattr(tables, "_BLOCK_ROWS", 4)  # several blocks, numbers first
    labels = ["1", "2", "01", "2", "1", "x", "2", "1", "True", "2"]
    body = "".join(f"{i},{lab}\n" for i, lab in enumerate(labels))
    t = tables.read_csv(_write(tmp_path / "t.csv", "f,y\n" + body))
    assert list(t.column("y")) == labels
    assert t.column("f").dtype == np.int64


@pytest.mark.parametrize("out", ["{dir}", "{dir}/missing/m.of", "/dev/null"])
def test_fit_output_that_cannot_be_written_is_refused_before_fitting(cli, tables, tmp_path, out):
    import time

    t0 = time.perf_counter()
    res = cli(
        "fit", tables["csv"], "--target", "label", "--model", out.format(dir=tmp_path),
        "-p", "n_estimators=400",
    )  # fmt: skip
    assert_clean_error(res, "cannot write model")
    assert time.perf_counter() - t0 < 5  # refused before 400 trees were grown


def test_fit_seed_gives_the_same_model_and_once_only(cli, tables, tmp_path):
    a, b, c = tmp_path / "a.of", tmp_path / "b.of", tmp_path / "c.of"
    for path, seed in ((a, "7"), (b, "7"), (c, "8")):
        res = cli("fit", tables["csv"], "--target", "label", "--model", path, "--seed", seed,
                  "-p", "n_estimators=5")  # fmt: skip
        assert res.returncode == 0, res.stderr
    assert a.read_bytes() == b.read_bytes() != c.read_bytes()
    import obliqueforest as of

    assert of.load(a).random_state == 7
    res = cli("fit", tables["csv"], "--target", "label", "--model", a, "--seed", "1",
              "-p", "random_state=2")  # fmt: skip
    assert_clean_error(res, "--seed or -p random_state")


def test_evaluate_is_reproducible_by_default(cli, tables):
    args = ("evaluate", tables["csv"], "--target", "label", "--cv", "3", "-p", "n_estimators=5")
    first, second = cli(*args), cli(*args)
    assert first.returncode == 0, first.stderr
    assert first.stdout == second.stdout


def test_predict_finds_columns_by_name_and_ignores_others(cli, tables, tmp_path):
    pd = pytest.importorskip("pandas")
    model = tmp_path / "m.of"
    res = cli("fit", tables["csv"], "--target", "label", "--model", model, "--seed", "0",
              "-p", "n_estimators=10")  # fmt: skip
    assert res.returncode == 0, res.stderr
    df = pd.read_csv(tables["csv"])
    shuffled = tmp_path / "shuffled.csv"
    df[["label", "f3", "f1", "f0", "f2"]].assign(note="text").to_csv(shuffled, index=False)
    base, moved = cli("predict", model, tables["csv"]), cli("predict", model, shuffled)
    assert base.returncode == moved.returncode == 0, moved.stderr
    assert moved.stdout == base.stdout
    assert "ignoring column(s) 'label', 'note'" in moved.stderr
    fewer = tmp_path / "fewer.csv"
    df.drop(columns=["f1", "f3"]).to_csv(fewer, index=False)
    assert_clean_error(cli("predict", model, fewer), "lacks column(s) 'f1', 'f3'")


def test_predict_with_a_model_without_names_takes_file_order(cli, tables, tmp_path):
    pd = pytest.importorskip("pandas")
    import obliqueforest as of

    df = pd.read_csv(tables["csv"])
    X = df.drop(columns="label").to_numpy()
    est = of.RandomForestClassifier(5, random_state=0).fit(X, df["label"].to_numpy(dtype=str))
    est.save(tmp_path / "m.of")
    res = cli("predict", tmp_path / "m.of", tables["csv"], "--target", "label")
    assert res.returncode == 0, res.stderr
    assert "no column names" in res.stderr and "file order" in res.stderr
    assert res.stdout.split()[1:] == list(est.predict(X))
    assert_clean_error(cli("predict", tmp_path / "m.of", tables["csv"]), "5 feature columns")


def test_usage_errors_are_one_line_with_exit_code_2(cli, tables):
    for args in (["fit", tables["csv"]], ["fit", "--bogus"], ["frobnicate"],
                 ["evaluate", tables["csv"], "--target", "label", "--cv", "two"]):  # fmt: skip
        res = cli(*args)
        assert_clean_error(res, "error:", "--help")


_WITHOUT_PANDAS = """
import sys
sys.modules["pandas"] = None  # `import pandas` now raises ImportError
from obliqueforest.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_cli_is_the_same_without_pandas(tables, tmp_path):
    pd = pytest.importorskip("pandas")

    def run(*args):
        return subprocess.run(
            [sys.executable, "-c", _WITHOUT_PANDAS, *map(str, args)],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip

    df = pd.read_csv(tables["csv"])
    shuffled = tmp_path / "shuffled.csv"
    df[["f2", "label", "f0", "f3", "f1"]].to_csv(shuffled, index=False)
    fit = ["--target", "label", "--seed", "3", "-p", "n_estimators=8"]
    res = run("fit", tables["csv"], "--model", tmp_path / "bare.of", *fit)
    assert res.returncode == 0, res.stderr
    res = run_cli("fit", tables["csv"], "--model", tmp_path / "pd.of", *fit)
    assert res.returncode == 0, res.stderr
    # the same model, column names included, whether pandas is there or not
    assert (tmp_path / "bare.of").read_bytes() == (tmp_path / "pd.of").read_bytes()
    bare = run("predict", tmp_path / "bare.of", shuffled, "--proba")
    with_pd = run_cli("predict", tmp_path / "pd.of", tables["csv"], "--proba")
    assert bare.returncode == with_pd.returncode == 0, bare.stderr
    assert bare.stdout == with_pd.stdout
    if "parquet" in tables:  # Parquet is what needs pandas (and pyarrow)
        res = run("fit", tables["parquet"], "--target", "label", "--model", tmp_path / "x.of")
        assert_clean_error(res, "Parquet needs pandas and pyarrow")


# -- everyday tables: chosen columns, regression-like targets, names (issue 45 item 8) ------


@pytest.fixture(scope="module")
def with_id(tables, tmp_path_factory):
    """The classification table with an id column first, as exported tables often have."""
    pd = pytest.importorskip("pandas")
    path = tmp_path_factory.mktemp("with_id") / "ids.csv"
    df = pd.read_csv(tables["csv"])
    df.insert(0, "id", np.arange(100_000, 100_000 + len(df)))
    df.to_csv(path, index=False)
    return path


def test_drop_and_features_choose_the_feature_columns_in_every_command(cli, with_id, tmp_path):
    import obliqueforest as of

    fit = ["--target", "label", "--seed", "0", "-p", "n_estimators=5"]
    dropped, kept = tmp_path / "dropped.of", tmp_path / "kept.of"
    res = cli("fit", with_id, "--drop", "id", "-o", dropped, *fit)
    assert res.returncode == 0, res.stderr
    assert "200 rows x 4 features" in res.stderr
    assert list(of.load(dropped).feature_names_in_) == ["f0", "f1", "f2", "f3"]
    res = cli("fit", with_id, "--features", "f3, f1", "--features", "f0,f2", "-o", kept, *fit)
    assert res.returncode == 0, res.stderr
    assert kept.read_bytes() == dropped.read_bytes()  # file order, whatever the list's order
    # the same file with the same --drop, and the model's columns found by name without it
    same = cli("predict", dropped, with_id, "--drop", "id", "--target", "label")
    assert same.returncode == 0, same.stderr
    assert same.stderr == ""
    plain = cli("predict", dropped, with_id, "--target", "label")
    assert plain.stdout == same.stdout and "ignoring column(s) 'id'" in plain.stderr
    res = cli("evaluate", with_id, "--target", "label", "--drop", "id,f3", "--cv", "3",
              "-p", "n_estimators=5")  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "200 rows x 3 features" in res.stdout
    res = cli("embed", with_id, "--target", "label", "--drop", "id", "-p", "n_estimators=10",
              "-p", "random_state=0")  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines()[0] == "component_1,component_2,label"


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["fit", "--drop", "idd"], ["--drop", "'idd'", "not in the data", "did you mean 'id'"]),
        (["fit", "--features", "f0,nope,f9"], ["--features", "'nope', 'f9'", "not in the data"]),
        (["fit", "--drop", "label"], ["--drop", "target column 'label'"]),
        (["fit", "--features", "f0,label"], ["--features", "target column 'label'"]),
        (["fit", "--drop", "id", "--features", "f0"], ["not allowed with"]),
        (["fit", "--drop", "id,"], ["column names separated by commas"]),
        (["evaluate", "--drop", "nope"], ["--drop", "'nope'", "not in the data"]),
        (["embed", "--features", "nope"], ["--features", "'nope'", "not in the data"]),
    ],
)  # fmt: skip
def test_drop_or_features_naming_no_column_is_a_clear_error(
    cli, with_id, tmp_path, args, fragments
):
    command, *rest = args
    extra = ["-o", tmp_path / "m.of"] if command == "fit" else []
    res = cli(command, with_id, "--target", "label", *rest, *extra)
    assert_clean_error(res, *fragments)
    assert not (tmp_path / "m.of").exists()


def test_predict_names_the_columns_drop_takes_from_the_model(cli, with_id, tmp_path):
    model = tmp_path / "m.of"
    res = cli("fit", with_id, "--target", "label", "-o", model, "-p", "n_estimators=3")
    assert res.returncode == 0, res.stderr  # fitted with the id among its features
    assert_clean_error(
        cli("predict", model, with_id, "--drop", "id"),
        "--drop removes column(s) 'id', which the model was fitted on",
    )
    assert_clean_error(
        cli("predict", model, with_id, "--features", "f0,f1,f2,f3"),
        "--features leaves out column(s) 'id'",
    )
    assert_clean_error(cli("predict", model, with_id, "--drop", "nope"), "'nope'", "not in")


def _regression_like(tmp_path, whole):
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    df = pd.DataFrame(rng.normal(size=(60, 3)), columns=["a", "b", "c"])
    y = 1000 * rng.normal(size=60)
    df["price"] = np.round(y) if whole else y
    path = tmp_path / ("whole.csv" if whole else "continuous.csv")
    df.to_csv(path, index=False)
    return path


@pytest.mark.parametrize("whole", [False, True], ids=["continuous", "whole-numbers"])
@pytest.mark.parametrize("command", ["fit", "evaluate"])
def test_default_classifier_refuses_a_regression_target_with_a_hint(cli, tmp_path, command, whole):
    data = _regression_like(tmp_path, whole)
    args = [command, data, "--target", "price", "-p", "n_estimators=5"]
    if command == "fit":
        args += ["-o", tmp_path / "m.of"]
    res = cli(*args)
    assert_clean_error(res, "'price'", "-e sporf-reg", "--task regression")
    assert "warn" not in res.stderr.lower()
    assert cli(*args, "--task", "regression").returncode == 0
    assert cli(*args, "-e", "rf-reg").returncode == 0


def test_task_classification_fits_whole_number_labels_however_many(cli, tmp_path):
    data = _regression_like(tmp_path, whole=True)
    args = ["fit", data, "--target", "price", "-o", tmp_path / "m.of", "-p", "n_estimators=3"]
    with pytest.warns(UserWarning, match="unique classes"):  # scikit-learn's own warning
        res = cli(*args, "--task", "classification")
    assert res.returncode == 0, res.stderr
    assert re.search(r"classifier, (59|60) classes", res.stderr), res.stderr
    continuous = _regression_like(tmp_path, whole=False)
    res = cli("fit", continuous, "--target", "price", "--task", "classification",
              "-o", tmp_path / "m.of")  # fmt: skip
    assert_clean_error(res, "continuous values")


@pytest.fixture(scope="module")
def quantile_model(tables, tmp_path_factory):
    pd = pytest.importorskip("pandas")
    d = tmp_path_factory.mktemp("quantiles")
    data, model = d / "num.csv", d / "q.of"
    pd.read_csv(tables["csv"]).drop(columns="label").to_csv(data, index=False)
    from obliqueforest.cli import main

    assert main(["fit", str(data), "--target", "f0", "-e", "rf-reg", "-o", str(model),
                 "-p", "n_estimators=5", "-p", "store_leaf_values=True"]) == 0  # fmt: skip
    return model, data


@pytest.mark.parametrize("quantiles", ["0.5,0.5", "0.1,0.9,0.10", "0.25,.25"])
def test_predict_refuses_a_quantile_given_twice(cli, quantile_model, quantiles):
    model, data = quantile_model
    res = cli("predict", model, data, "--quantiles", quantiles)
    assert_clean_error(res, "given twice")


def test_predict_quantile_columns_have_distinct_names(cli, quantile_model):
    model, data = quantile_model
    res = cli("predict", model, data, "--quantiles", "0.1234567,0.1234568,0.5,1")
    assert res.returncode == 0, res.stderr
    header = res.stdout.splitlines()[0].split(",")
    assert header == ["prediction", "q0.1234567", "q0.1234568", "q0.5", "q1"]


@pytest.mark.parametrize(("name", "cls"), [("rotation", "RotationEnsembleClassifier"),
                                           ("rotation-reg", "RotationEnsembleRegressor")])  # fmt: skip
def test_rotation_names_fit_and_serve_a_rotation_ensemble(cli, tables, tmp_path, name, cls):
    pd = pytest.importorskip("pandas")
    model, data = tmp_path / "rot.of", tables["csv"]
    target = "label"
    if name.endswith("-reg"):
        data, target = tmp_path / "num.csv", "f0"
        pd.read_csv(tables["csv"]).drop(columns="label").to_csv(data, index=False)
    res = cli("fit", data, "--target", target, "-e", name, "-o", model, "--seed", "0",
              "-p", "n_estimators=20", "-p", "n_rotations=2")  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert f"fitted {cls}" in res.stderr
    import obliqueforest as of

    assert type(of.load(model)).__name__ == cls
    res = cli("predict", model, data, "--target", target)
    assert res.returncode == 0, res.stderr
    assert len(res.stdout.splitlines()) == 201
    res = cli("evaluate", data, "--target", target, "-e", name, "--cv", "2",
              "-p", "n_estimators=10", "-p", "n_rotations=2")  # fmt: skip
    assert res.returncode == 0 and cls in res.stdout, res.stderr


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["fit", "-p", "n_estimator=5"], ["'n_estimator'", "did you mean 'n_estimators'"]),
        (["fit", "-p", "max_featurs=sqrt"], ["did you mean 'max_features'"]),
        (["fit", "-e", "rotation", "-p", "n_rotation=3"], ["did you mean 'n_rotations'"]),
        (["evaluate", "-p", "min_sample_leaf=3"], ["did you mean 'min_samples_leaf'"]),
        (["embed", "-p", "n_estimator=5"], ["ForestAutoencoder", "did you mean 'n_estimators'"]),
        (["fit", "-e", "sporff"], ["unknown estimator 'sporff'", "did you mean 'sporf'"]),
        (["evaluate", "-e", "rotaton-reg"], ["did you mean 'rotation-reg'"]),
        (["fit", "-p", "zzz=1"], ["unknown parameter 'zzz'", "valid: "]),
    ],
)  # fmt: skip
def test_misspelt_names_get_a_did_you_mean(cli, tables, tmp_path, args, fragments):
    command, *rest = args
    extra = ["-o", tmp_path / "m.of"] if command == "fit" else []
    res = cli(command, tables["csv"], "--target", "label", *rest, *extra)
    assert_clean_error(res, *fragments)
    if "zzz" in args[-1]:
        assert "did you mean" not in res.stderr
