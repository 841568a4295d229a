"""Forests on 10^5 to 10^7 rows x 32 features: fit time, held-out accuracy and peak memory,
against scikit-learn, YDF, XGBoost and LightGBM in random-forest mode (issue 28 item 5).

Every (model, n) runs in its own child interpreter (``python benches/scale.py --child``),
which generates the seeded data itself (float32, Fortran order, in blocks of 10^6 rows),
resets the kernel's high-water mark of its resident memory, fits, and reports:

* ``fit_s`` (wall) and ``fit_cpu_s`` (the process's CPU seconds, a measure of the work the
  machine's other load changes less), and ``s_per_tree`` = fit_s / trees;
* ``accuracy`` on 100,000 held-out rows of the same distribution, ``predict_s``;
* ``rss_before_mib`` (X, y and imports, before fit), ``peak_rss_mib`` (VmHWM during fit)
  and ``fit_growth_mib`` = their difference: the fit's own working memory plus the trees;
  ``rss_after_mib`` (VmRSS once fit returned: X, y and the trees) and ``working_mib`` =
  peak - after, the fit's working memory beyond X and the trees (what it frees);
  ``x_mib`` is X's size.

Data: x ~ N(0, 1)^32; y = 1[x0 + x1 x2 + sin(2 x3) + 0.5 x4 - 0.5 x5 x6 + 0.7 e > 0] with
e ~ N(0, 1) label noise, so fully grown trees are deep and the Bayes accuracy is below 1.

Models (``--n-estimators`` trees, 10 by default, ``--n-jobs`` threads, 2; min 5 rows per
leaf, otherwise fully grown, bootstrap sampling):

* ``of_rf``, ``of_rf_hist``: ``RandomForestClassifier`` (d = sqrt(p) = 5), exact and
  ``splitter="hist"``;
* ``of_sporf``, ``of_sporf_hist``: ``SPORFClassifier`` at its defaults (d = 2p = 64
  projections, 1.5 features each on average, robust scaling, candidates compared on 512
  rows at nodes of more than 1,024), exact and hist; ``of_sporf_exact``,
  ``of_sporf_hist_exact``: the same with every candidate scored on every row
  (``candidate_samples=None``, the defaults before screening);
* ``sk_rf``: scikit-learn's ``RandomForestClassifier`` (max_features="sqrt");
* ``ydf_rf``: YDF's ``RandomForestLearner`` (max_depth=-1: unlimited, min_examples=5,
  sqrt(p) attributes per node); ``ydf_sporf``: the same with ``split_axis="SPARSE_OBLIQUE"``
  at a matched number of projections (64 = 32^1.2: ``num_projections_exponent=1.2``,
  ``max_num_projections=64``), density 1.5 / p, +-1 weights, standard-deviation
  normalisation;
* ``xgb_rf``: XGBoost's ``XGBRFClassifier`` (``tree_method="hist"``, 256 bins, depth-wise to
  ``max_depth=20`` (its unlimited, loss-guided growth took 4.7 s per tree on 20,000 rows),
  ``min_child_weight=1`` (about 4 rows: hessians are p(1 - p)), ``subsample=0.632``,
  ``colsample_bynode=sqrt(p)/p``);
* ``lgbm_rf``: LightGBM's ``LGBMClassifier(boosting_type="rf")`` (``num_leaves`` = n / 10
  up to 131,072, ``min_child_samples=5``, bagging 0.632 per tree, ``feature_fraction_bynode``
  sqrt(p)/p, ``histogram_pool_size=2048`` MiB so its histogram cache does not grow with
  the leaves).

The competitors are installed into the benchmark's environment only (``pip install
xgboost lightgbm ydf``); a model whose package does not import is skipped with a note.

Commands::

    python benches/scale.py --sizes 100000 1000000 --json benches/results/scale.json
    python benches/scale.py --sizes 10000000 --models of_rf of_rf_hist \\
        --reuse benches/results/scale.json --json benches/results/scale.json
    python benches/scale.py --report benches/results/scale.json > benches/results/scale.md

``--reuse FILE`` keeps the records of FILE for (model, n, trees, threads) already
measured, so the 10^7 runs (long: one at a time, on a quiet machine) can extend a file.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _memory import reset_peak_rss, status_kb  # noqa: E402  (benches/_memory.py)

N_FEATURES = 32
N_TEST = 100_000
BLOCK = 1_000_000
MODELS = (
    "of_rf",
    "of_rf_hist",
    "of_sporf",
    "of_sporf_hist",
    "of_sporf_exact",
    "of_sporf_hist_exact",
    "sk_rf",
    "ydf_rf",
    "ydf_sporf",
    "xgb_rf",
    "lgbm_rf",
)
PACKAGES = {"sk": "sklearn", "ydf": "ydf", "xgb": "xgboost", "lgbm": "lightgbm"}


# -- data ----------------------------------------------------------------------------------
def make_data(n, seed):
    """(X, y): n x 32 float32 in Fortran order and int64 labels, made block by block (each
    block from its own seeded stream, so any n is a prefix-free, reproducible set)."""
    X = np.empty((n, N_FEATURES), dtype=np.float32, order="F")
    y = np.empty(n, dtype=np.int64)
    for b, start in enumerate(range(0, n, BLOCK)):
        end = min(n, start + BLOCK)
        rng = np.random.default_rng([seed, b])
        block = rng.standard_normal((end - start, N_FEATURES), dtype=np.float32)
        X[start:end] = block
        x = block.astype(np.float64)
        score = (
            x[:, 0]
            + x[:, 1] * x[:, 2]
            + np.sin(2 * x[:, 3])
            + 0.5 * x[:, 4]
            - 0.5 * x[:, 5] * x[:, 6]
            + 0.7 * rng.standard_normal(end - start)
        )
        y[start:end] = score > 0
    return X, y


# -- models --------------------------------------------------------------------------------
def make_model(name, n, trees, n_jobs):
    """An estimator with fit(X, y) and predict(X)."""
    d = max(1, int(math.sqrt(N_FEATURES)))
    if name.startswith("of_"):
        import obliqueforest as of

        cls = of.SPORFClassifier if "sporf" in name else of.RandomForestClassifier
        splitter = "hist" if "_hist" in name else "best"
        # "_exact": every candidate scored on every row (SPORF's candidate_samples=None)
        extra = {"candidate_samples": None} if name.endswith("_exact") else {}
        return cls(
            trees,
            min_samples_leaf=5,
            splitter=splitter,
            n_jobs=n_jobs,
            random_state=0,
            **extra,
        )
    if name == "sk_rf":
        from sklearn.ensemble import RandomForestClassifier

        return RandomForestClassifier(
            trees, min_samples_leaf=5, max_features="sqrt", n_jobs=n_jobs, random_state=0
        )
    if name == "xgb_rf":
        import xgboost

        return xgboost.XGBRFClassifier(
            n_estimators=trees,
            tree_method="hist",
            max_bin=256,
            max_depth=20,
            min_child_weight=1,
            subsample=0.632,
            colsample_bynode=d / N_FEATURES,
            n_jobs=n_jobs,
            random_state=0,
        )
    if name == "lgbm_rf":
        import lightgbm

        return lightgbm.LGBMClassifier(
            boosting_type="rf",
            n_estimators=trees,
            num_leaves=int(min(max(n // 10, 31), 131_072)),
            max_depth=-1,
            min_child_samples=5,
            bagging_freq=1,
            bagging_fraction=0.632,
            feature_fraction_bynode=d / N_FEATURES,
            histogram_pool_size=2048,
            n_jobs=n_jobs,
            random_state=0,
            verbose=-1,
        )
    if name.startswith("ydf_"):
        return _Ydf(name, trees, n_jobs)
    raise ValueError(f"unknown model {name!r}")


class _Ydf:
    """YDF's learner behind fit / predict on numpy arrays."""

    def __init__(self, name, trees, n_jobs):
        self.name, self.trees, self.n_jobs = name, trees, n_jobs

    @staticmethod
    def _frame(X, y=None):
        data = {f"x{j}": X[:, j] for j in range(X.shape[1])}
        if y is not None:
            data["y"] = y
        return data

    def fit(self, X, y):
        import ydf

        kw = dict(
            label="y",
            num_trees=self.trees,
            max_depth=-1,
            min_examples=5,
            num_threads=self.n_jobs,
            random_seed=0,
        )
        if self.name == "ydf_sporf":
            kw.update(
                split_axis="SPARSE_OBLIQUE",
                sparse_oblique_num_projections_exponent=1.2,  # 32^1.2 = 64 = 2p
                sparse_oblique_max_num_projections=2 * N_FEATURES,
                sparse_oblique_projection_density_factor=1.5,
                sparse_oblique_weights="BINARY",
                sparse_oblique_normalization="STANDARD_DEVIATION",
            )
        self.model = ydf.RandomForestLearner(**kw).train(self._frame(X, y), verbose=0)
        return self

    def predict(self, X):
        return (np.asarray(self.model.predict(self._frame(X))) > 0.5).astype(np.int64)


def n_trees_of(model):
    return getattr(model, "n_estimators", None) or getattr(model, "trees", None)


# -- one child -----------------------------------------------------------------------------
def run_child(name, n, trees, n_jobs):
    X, y = make_data(n, seed=1)
    X_test, y_test = make_data(N_TEST, seed=2)
    model = make_model(name, n, trees, n_jobs)
    before = status_kb("VmRSS") / 1024
    reset_peak_rss()
    cpu, t = time.process_time(), time.perf_counter()
    model.fit(X, y)
    fit_s, fit_cpu_s = time.perf_counter() - t, time.process_time() - cpu
    peak = status_kb("VmHWM") / 1024
    after = status_kb("VmRSS") / 1024
    t = time.perf_counter()
    pred = np.asarray(model.predict(X_test)).astype(np.int64).ravel()
    predict_s = time.perf_counter() - t
    return {
        "model": name,
        "n": n,
        "trees": trees,
        "n_jobs": n_jobs,
        "fit_s": round(fit_s, 3),
        "fit_cpu_s": round(fit_cpu_s, 3),
        "s_per_tree": round(fit_s / trees, 4),
        "accuracy": round(float((pred == y_test).mean()), 5),
        "predict_s": round(predict_s, 3),
        "x_mib": round(X.nbytes / 2**20, 1),
        "rss_before_mib": round(before, 1),
        "peak_rss_mib": round(peak, 1),
        "fit_growth_mib": round(peak - before, 1),
        "rss_after_mib": round(after, 1),
        "working_mib": round(peak - after, 1),
    }


def measure(name, n, trees, n_jobs, timeout):
    """Runs one model in a child interpreter; its record, or one with ``error``."""
    pkg = PACKAGES.get(name.split("_")[0])
    if pkg is not None:
        probe = subprocess.run(
            [sys.executable, "-c", f"import {pkg}"], capture_output=True, text=True
        )
        if probe.returncode != 0:
            return {
                "model": name,
                "n": n,
                "trees": trees,
                "n_jobs": n_jobs,
                "error": f"{pkg} does not import (pip install it to measure)",
            }
    cmd = [sys.executable, __file__, "--child", name, str(n), str(trees), str(n_jobs)]
    load = os.getloadavg()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {
            "model": name,
            "n": n,
            "trees": trees,
            "n_jobs": n_jobs,
            "error": f"over {timeout} s",
        }
    if proc.returncode != 0:
        return {
            "model": name,
            "n": n,
            "trees": trees,
            "n_jobs": n_jobs,
            "error": proc.stderr.strip().splitlines()[-1] if proc.stderr else "died",
        }
    rec = json.loads(proc.stdout.strip().splitlines()[-1])
    rec["load_before"] = [round(v, 2) for v in load]
    return rec


# -- tables --------------------------------------------------------------------------------
def report(records, meta):
    """Markdown tables of the records: one per size, and the growth per tenfold rows."""
    lines = [
        f"Measured at commit {meta.get('commit', '?')} on {meta.get('machine', '?')}; "
        f"command: `{meta.get('command', '?')}`",
        "",
    ]
    sizes = sorted({r["n"] for r in records})
    by = {(r["model"], r["n"]): r for r in records}
    names = [m for m in MODELS if any((m, n) in by for n in sizes)]
    for n in sizes:
        lines += [
            f"### n = {n:,} (x 32 float32, {N_FEATURES * 4 * n / 2**20:,.0f} MiB)",
            "",
            "| model | trees | fit s | s / tree | vs of_rf | accuracy | peak RSS MiB | "
            "fit growth MiB | growth / X | working MiB | working / X |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        base = by.get(("of_rf", n))
        for m in names:
            r = by.get((m, n))
            if r is None:
                continue
            if "error" in r:
                lines.append(f"| {m} | {r['trees']} | {r['error']} | | | | | | | | |")
                continue
            rel = (
                f"{r['s_per_tree'] / base['s_per_tree']:.2f}"
                if base and "error" not in base
                else ""
            )
            working = (
                f"{r['working_mib']:,.0f} | {r['working_mib'] / r['x_mib']:.2f}"
                if "working_mib" in r
                else " | "
            )
            lines.append(
                f"| {m} | {r['trees']} | {r['fit_s']:.1f} | {r['s_per_tree']:.2f} | {rel} | "
                f"{r['accuracy']:.4f} | {r['peak_rss_mib']:,.0f} | {r['fit_growth_mib']:,.0f} | "
                f"{r['fit_growth_mib'] / r['x_mib']:.2f} | {working} |"
            )
        lines.append("")
    lines += [
        "### time per tree, growth per tenfold rows (n log n: ~11x)",
        "",
        "| model | " + " | ".join(f"{a:,} -> {b:,}" for a, b in zip(sizes, sizes[1:])) + " |",
        "| --- |" + " ---: |" * max(1, len(sizes) - 1),
    ]
    for m in names:
        cells = []
        for a, b in zip(sizes, sizes[1:]):
            ra, rb = by.get((m, a)), by.get((m, b))
            ok = ra and rb and "error" not in ra and "error" not in rb
            cells.append(f"{rb['s_per_tree'] / ra['s_per_tree'] / (b / a) * 10:.1f}x" if ok else "")
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    ap.add_argument("--n-estimators", type=int, default=10)
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=4 * 3600)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--reuse", type=Path, default=None)
    ap.add_argument("--report", type=Path, default=None)
    ap.add_argument("--child", nargs=4, default=None, metavar=("MODEL", "N", "TREES", "JOBS"))
    args = ap.parse_args()
    if args.child:
        name, n, trees, jobs = args.child
        print(json.dumps(run_child(name, int(n), int(trees), int(jobs))))
        return
    if args.report:
        data = json.loads(args.report.read_text())
        print(report(data["records"], data["meta"]))
        return
    kept = []
    if args.reuse and args.reuse.exists():
        kept = json.loads(args.reuse.read_text())["records"]
    done = {(r["model"], r["n"], r["trees"], r["n_jobs"]) for r in kept if "error" not in r}
    records = list(kept)
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=HERE
    ).stdout.strip()
    meta = {
        "commit": commit,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "command": "python benches/scale.py " + " ".join(sys.argv[1:]),
    }
    for n in args.sizes:
        for m in args.models:
            if (m, n, args.n_estimators, args.n_jobs) in done:
                continue
            rec = measure(m, n, args.n_estimators, args.n_jobs, args.timeout)
            rec["commit"] = commit
            records = [
                r
                for r in records
                if (r["model"], r["n"], r["trees"], r["n_jobs"])
                != (m, n, args.n_estimators, args.n_jobs)
            ] + [rec]
            print(json.dumps(rec), flush=True)
            if args.json:
                args.json.write_text(json.dumps({"meta": meta, "records": records}, indent=1))
    print(report(records, meta))


if __name__ == "__main__":
    main()
