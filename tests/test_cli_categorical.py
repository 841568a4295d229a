"""The command line on tables with text columns (issue 46): text and True/False columns are
categorical features of ``fit``, ``evaluate``, ``explain`` and ``embed``, the model file
keeps their levels, and ``predict`` maps another file's text through them (a level never
seen in training is missing); a column of another kind than at fit is an error naming it."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from test_cli import _WITHOUT_PANDAS, assert_clean_error
from test_cli import cli as cli  # (the fixture, shared)

import obliqueforest as of

CITIES = ["Berlin", "Kyiv", "Lima", "Oslo", "Paris", "Rome"]


def _write_csv(path, header, rows):
    path.write_text(",".join(header) + "\n" + "".join(",".join(r) + "\n" for r in rows))
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A training CSV whose label is set by a set of cities no order separates (a
    categorical split's job) and a True/False flag, with missing cells in both, and a
    model fitted on it."""
    d = tmp_path_factory.mktemp("categorical")
    rng = np.random.default_rng(0)
    n = 400
    city = rng.choice(CITIES, n)
    industry = rng.choice([f"i{k}" for k in range(12)], n)
    flag = rng.random(n) < 0.5
    x = rng.normal(size=n)
    y = np.where(np.isin(city, ["Kyiv", "Oslo", "Paris"]) ^ flag, "yes", "no")
    rows = [
        [
            "" if i % 17 == 0 else city[i],
            industry[i],
            f"{x[i]:.3f}",
            "NA" if i % 23 == 0 else str(flag[i]),
            y[i],
        ]
        for i in range(n)
    ]
    train = _write_csv(d / "train.csv", ["city", "industry", "x", "flag", "y"], rows)
    model = d / "m.of"
    from obliqueforest.cli import main

    assert main(["fit", str(train), "--target", "y", "-o", str(model), "--seed", "0",
                 "-p", "n_estimators=40"]) == 0  # fmt: skip
    return {"dir": d, "train": train, "model": model, "rows": rows}


def test_fit_takes_text_and_true_false_columns_as_categorical(cli, files, tmp_path):
    model = tmp_path / "m.of"
    res = cli("fit", files["train"], "--target", "y", "-o", model, "--seed", "0",
              "-p", "n_estimators=40")  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert res.stderr.splitlines() == [
        f"fitted SPORFClassifier (classifier, 2 classes) on 400 rows x 4 features; saved "
        f"to {model}",
        "3 categorical columns: city (6 levels), industry (12 levels), flag (2 levels)",
    ]
    assert model.read_bytes() == files["model"].read_bytes()
    est = of.load(model)
    assert est.categorical_features == "from_dtype"
    assert list(est.feature_names_in_) == ["city", "industry", "x", "flag"]
    assert est.is_categorical_.tolist() == [True, True, False, True]
    assert est.categories_[0].tolist() == CITIES and est.categories_[2] is None
    assert est.categories_[3].tolist() == [False, True]
    assert est.score(_frame(files["rows"]), [r[-1] for r in files["rows"]]) > 0.95


def _frame(rows):
    """The training rows as the DataFrame a Python user would fit on (missing: None)."""
    pd = pytest.importorskip("pandas")
    flag = [None if r[3] == "NA" else r[3] == "True" for r in rows]
    return pd.DataFrame(
        {
            "city": np.array([r[0] or None for r in rows], dtype=object),
            "industry": [r[1] for r in rows],
            "x": [float(r[2]) for r in rows],
            "flag": np.array(flag, dtype=object),
        }
    )


def test_predict_maps_text_through_the_fitted_levels_unseen_ones_as_missing(cli, files, tmp_path):
    new = _write_csv(
        tmp_path / "new.csv",
        ["flag", "x", "note", "industry", "city"],  # another order, a column more
        [
            ["True", "0.1", "a", "i3", "Paris"],
            ["False", "0.1", "b", "i3", "Paris"],
            ["True", "0.1", "c", "i3", "Atlantis"],  # a city never seen: missing
            ["True", "0.1", "d", "i3", ""],
            ["", "0.1", "e", "i99", "Rome"],
        ],
    )
    res = cli("predict", files["model"], new, "--proba")
    assert res.returncode == 0, res.stderr
    assert "ignoring column(s) 'note'" in res.stderr
    lines = res.stdout.splitlines()
    assert lines[0] == "prediction,proba_no,proba_yes"
    assert [line.split(",")[0] for line in lines[1:3]] == ["no", "yes"]
    # what the model predicts in Python for the same rows as a DataFrame (an unseen city
    # and level are what the estimator makes of them there: never an error)
    pd = pytest.importorskip("pandas")
    X = pd.DataFrame(
        {
            "city": ["Paris", "Paris", "Atlantis", None, "Rome"],
            "industry": ["i3", "i3", "i3", "i3", "i99"],
            "x": 0.1,
            "flag": np.array([True, False, True, True, None], dtype=object),
        }
    )
    proba = of.load(files["model"]).predict_proba(X)
    assert [[float(v) for v in line.split(",")[1:]] for line in lines[1:]] == proba.tolist()


@pytest.mark.parametrize(
    ("header", "row", "fragments"),
    [
        (["city", "industry", "x", "flag"], ["1", "i3", "0.1", "True"],
         ["column 'city' held text in the training data and holds numbers in"]),
        (["city", "industry", "x", "flag"], ["Oslo", "i3", "low", "True"],
         ["column 'x' held numbers", "holds text", "('low' on line 2)"]),
        (["city", "industry", "x", "flag"], ["Oslo", "i3", "0.1", "1"],
         ["column 'flag' held True/False", "holds numbers"]),
    ],
)  # fmt: skip
@pytest.mark.parametrize("command", ["predict", "explain"])
def test_a_column_of_another_kind_than_at_fit_is_an_error_naming_it(
    cli, files, tmp_path, command, header, row, fragments
):
    data = _write_csv(tmp_path / "other.csv", header, [row])
    assert_clean_error(cli(command, files["model"], data), *fragments, "give it as at fit")


def test_a_numeric_model_names_a_column_that_holds_text_now(cli, tmp_path):
    rows = [[f"{i % 7}", f"{i % 3}.5", "yes" if i % 2 else "no"] for i in range(40)]
    train = _write_csv(tmp_path / "num.csv", ["a", "b", "y"], rows)
    model = tmp_path / "m.of"
    res = cli("fit", train, "--target", "y", "-o", model, "-p", "n_estimators=3")
    assert res.returncode == 0, res.stderr
    assert len(res.stderr.splitlines()) == 1  # no categorical columns to report
    assert not hasattr(of.load(model), "_categories")  # a numeric model, as before
    text = _write_csv(tmp_path / "text.csv", ["a", "b"], [["1", "2"], ["red", "3"]])
    assert_clean_error(
        cli("predict", model, text), "column 'a' held numbers", "holds text", "'red' on line 3"
    )


def test_true_false_and_text_are_read_through_each_others_levels(cli, files, tmp_path):
    # 'flag' was True/False at fit: here it also holds text, whose True/False words are
    # read as the bools they name and the rest is a level never seen in training
    mixed = _write_csv(
        tmp_path / "mixed.csv",
        ["city", "industry", "x", "flag"],
        [["Paris", "i3", "0.1", "true"], ["Paris", "i3", "0.1", "FALSE"],
         ["Paris", "i3", "0.1", "maybe"], ["Paris", "i3", "0.1", ""]],
    )  # fmt: skip
    res = cli("predict", files["model"], mixed, "--proba")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()[1:]
    assert lines[0].startswith("no,")  # Paris with the flag: "no"
    pd = pytest.importorskip("pandas")
    X = pd.DataFrame(
        {
            "city": "Paris",
            "industry": "i3",
            "x": [0.1] * 4,
            "flag": np.array([True, False, "maybe", None], dtype=object),
        }
    )
    proba = of.load(files["model"]).predict_proba(X)
    assert [[float(v) for v in line.split(",")[1:]] for line in lines] == proba.tolist()


def test_evaluate_and_explain_take_text_columns(cli, files, tmp_path):
    res = cli("evaluate", files["train"], "--target", "y", "--cv", "3", "-e", "rf",
              "-p", "n_estimators=30")  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "400 rows x 4 features (3 categorical)" in res.stdout
    assert float(res.stdout.split("accuracy:")[1].split("±")[0]) > 0.8
    out = tmp_path / "shap.csv"
    for background in ([], ["--background", files["train"], "--n-background", "30"]):
        res = cli("explain", files["model"], files["train"], "--target", "y", "-o", out,
                  "--n-jobs", "1", *background)  # fmt: skip
        assert res.returncode == 0, res.stderr
        lines = out.read_text().splitlines()
        assert lines[0] == (
            "prediction,class,expected_value,shap_city,shap_industry,shap_x,shap_flag"
        )
        rows = [line.split(",") for line in lines[1:]]
        assert len(rows) == 400
        if not background:  # path-dependent: each row adds up to its class's probability
            proba = of.load(files["model"]).predict_proba(_frame(files["rows"]))
            total = [float(r[2]) + sum(map(float, r[3:])) for r in rows]
            np.testing.assert_allclose(total, proba.max(axis=1), atol=1e-9)


def test_parquet_text_columns_give_the_model_the_csv_gives(cli, files, tmp_path):
    pytest.importorskip("pyarrow")
    data = _frame(files["rows"]).assign(y=[r[-1] for r in files["rows"]])
    data.to_parquet(tmp_path / "train.parquet")
    model = tmp_path / "p.of"
    res = cli("fit", tmp_path / "train.parquet", "--target", "y", "-o", model, "--seed", "0",
              "-p", "n_estimators=40")  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "3 categorical columns: city (6 levels)" in res.stderr
    assert model.read_bytes() == files["model"].read_bytes()
    # a model fitted on the CSV predicts the Parquet file, and the reverse
    a = cli("predict", files["model"], tmp_path / "train.parquet", "--target", "y")
    b = cli("predict", model, files["train"], "--target", "y")
    assert a.returncode == b.returncode == 0, a.stderr + b.stderr
    assert a.stdout == b.stdout
    # dates are neither numbers nor text: an error naming the column
    import pandas as pd

    data.assign(when=pd.Timestamp("2024-01-01")).to_parquet(tmp_path / "dates.parquet")
    res = cli("fit", tmp_path / "dates.parquet", "--target", "y", "-o", tmp_path / "d.of")
    assert_clean_error(res, "'when'", "neither numbers nor text", "Timestamp")


@pytest.mark.parametrize(
    ("estimator", "fragments"),
    [
        ("morf", ["MORFClassifier takes numeric columns only", "-e rf or -e sporf"]),
        ("rotation", ["RotationEnsembleClassifier takes numeric columns only", "rotation"]),
        ("morf-reg", ["MORFRegressor", "-e rf-reg or -e sporf-reg"]),
    ],
)
def test_numeric_only_forests_name_the_text_columns_and_the_alternative(
    cli, files, tmp_path, estimator, fragments
):
    target = "x" if estimator.endswith("-reg") else "y"
    res = cli("fit", files["train"], "--target", target, "-e", estimator, "-o", tmp_path / "m.of")
    assert_clean_error(res, *fragments, "'city', 'industry', 'flag'", "--drop")
    assert not (tmp_path / "m.of").exists()
    if target == "y":  # the numeric column alone fits
        res = cli("fit", files["train"], "--target", "y", "-e", estimator, "-o", tmp_path / "m.of",
                  "--drop", "city,industry,flag", "-p", "n_estimators=3")  # fmt: skip
        assert res.returncode == 0, res.stderr


def test_categorical_features_parameter_marks_or_unmarks_columns(cli, files, tmp_path):
    res = cli("fit", files["train"], "--target", "y", "-o", tmp_path / "m.of",
              "-p", "categorical_features=None")  # fmt: skip
    assert_clean_error(res, "'city', 'industry'", "categorical_features=None")
    # an integer-coded column marked categorical by name
    rows = [[str(i % 5), f"{i * 0.1:.1f}", "yes" if i % 5 in (1, 3) else "no"] for i in range(60)]
    data = _write_csv(tmp_path / "codes.csv", ["zone", "x", "y"], rows)
    model = tmp_path / "z.of"
    res = cli("fit", data, "--target", "y", "-o", model, "-p", "n_estimators=5",
              "-p", "categorical_features=['zone']")  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert res.stderr.splitlines()[-1] == "1 categorical column: zone (5 levels)"
    res = cli("predict", model, data, "--target", "y")
    assert res.returncode == 0, res.stderr
    assert res.stdout.split()[1:] == [r[2] for r in rows]


def test_embed_takes_text_columns_with_gaps_and_numeric_ones_complete(cli, files, tmp_path):
    res = cli("embed", files["train"], "--target", "y", "-p", "n_estimators=20",
              "-p", "random_state=0")  # fmt: skip
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0] == "component_1,component_2,y" and len(lines) == 401
    rows = [r[:2] + ([""] if i == 3 else r[2:3]) + r[3:] for i, r in enumerate(files["rows"])]
    gap = _write_csv(tmp_path / "gap.csv", ["city", "industry", "x", "flag", "y"], rows)
    assert_clean_error(cli("embed", gap, "--target", "y"), "column(s) 'x'", "missing values")


def test_true_false_column_with_gaps_reads_as_bools_and_none(tmp_path):
    from obliqueforest.cli import read_table

    t = read_table(_write_csv(tmp_path / "t.csv", ["f", "g"], [["True", "1"], ["", "2"],
                                                               ["false", "3"]]))  # fmt: skip
    assert t.column("f").tolist() == [True, None, False]
    assert t.kind("f") == "bool" and t.kind("g") == "number"
    assert t.categorical_names() == ["f"]


def _without_pandas(*args):
    return subprocess.run(
        [sys.executable, "-c", _WITHOUT_PANDAS, *map(str, args)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_without_pandas_text_columns_are_an_error_naming_pandas(files, tmp_path):
    res = _without_pandas("fit", files["train"], "--target", "y", "-o", tmp_path / "m.of")
    assert_clean_error(res, "'city', 'industry', 'flag'", "need pandas (pip install pandas)")
    res = _without_pandas("predict", files["model"], files["train"], "--target", "y")
    assert_clean_error(res, "categorical column(s) 'city', 'industry', 'flag'", "pandas")
    # the numeric columns alone still fit and predict, as they always did without pandas
    res = _without_pandas("fit", files["train"], "--target", "y", "--features", "x",
                          "-o", tmp_path / "x.of", "-p", "n_estimators=3")  # fmt: skip
    assert res.returncode == 0, res.stderr
    res = _without_pandas("predict", tmp_path / "x.of", files["train"])
    assert res.returncode == 0, res.stderr
