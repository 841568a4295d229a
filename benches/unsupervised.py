"""Speed of the forests grown without targets (issue 25 item 6), each against its baseline
in the same run:

(a) ``IsolationForest`` (axis-aligned, and the extended variants on SPORF and Gaussian
    projections) against scikit-learn's ``IsolationForest`` at equal trees: fit, then
    ``score_samples`` of the training rows;
(b) ``UnsupervisedRandomForest`` against the plain forest of the same projection family
    with the same tree parameters (``ObliqueForestRegressor``: d = p candidates, the same
    ``min_samples_split`` and bootstrap), fitted on a real target: the comparable case is
    two-means, whose trees split down to ``min_samples_split`` as the regressor's do
    (Fast-BIC trees stop where one Gaussian fits, so they are smaller: listed too).

Every timing is the CPU time of the process (``time.process_time``, all threads;
``n_jobs=1`` everywhere) and the table gives the median over ``--repeats`` rounds in which
the models run one after the other (alternating, so a busy spell of the shared machine
touches every model alike). Not a test. Run it niced:

    nice -n 19 python benches/unsupervised.py --out benches/results/unsupervised.md
"""

from __future__ import annotations

import argparse
import subprocess
import time
from pathlib import Path

import numpy as np
from sklearn.ensemble import IsolationForest as SkIsolationForest

import obliqueforest as of
from obliqueforest.projections import Gaussian, SparseSigned

FAMILIES = {"axis": None, "sporf": SparseSigned(), "gaussian": Gaussian()}


def cpu_seconds(work):
    start = time.process_time()
    work()
    return time.process_time() - start


def medians(models, repeats):
    """Median CPU seconds of each ``models[name]()`` over alternating rounds."""
    times = {name: [] for name in models}
    for _ in range(repeats):
        for name, work in models.items():
            times[name].append(cpu_seconds(work))
    return {name: float(np.median(t)) for name, t in times.items()}


def isolation_table(n, p, trees, repeats):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, p)).astype(np.float32)

    def ours(projection):
        return lambda: (
            of.IsolationForest(trees, projection=projection, random_state=0, n_jobs=1)
            .fit(X)
            .score_samples(X)
        )

    models = {"scikit-learn IsolationForest": lambda: (
        SkIsolationForest(n_estimators=trees, random_state=0, n_jobs=1).fit(X).score_samples(X)
    )}  # fmt: skip
    models.update({f"IsolationForest ({name})": ours(p) for name, p in FAMILIES.items()})
    t = medians(models, repeats)
    base = t["scikit-learn IsolationForest"]
    rows = [f"| {name} | {n} x {p} | {secs:.3f} | {secs / base:.2f} |" for name, secs in t.items()]
    return rows


def unsupervised_table(n, p, trees, repeats):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(n, p)).astype(np.float32)
    y = X[:, 0] + X[:, 1] * X[:, 2] + rng.normal(size=n)
    split = int(np.ceil(np.sqrt(n)))  # the forests without targets' "sqrt", as a count
    common = {"n_estimators": trees, "max_features": 1.0, "min_samples_split": split,
              "random_state": 0, "n_jobs": 1}  # fmt: skip
    rows = []

    def forests(projection):
        return {
            "regressor": lambda: of.ObliqueForestRegressor(
                projection=projection or of.projections.AxisAligned(), **common
            ).fit(X, y),
            "twomeans": lambda: of.UnsupervisedRandomForest(
                projection=projection, criterion="twomeans", **common
            ).fit(X),
            "fastbic": lambda: of.UnsupervisedRandomForest(
                projection=projection, criterion="fastbic", **common
            ).fit(X),
        }

    for name, projection in FAMILIES.items():
        models = forests(projection)
        t = medians(models, repeats)
        nodes = {kind: int(np.mean(work().tree_stats()[0])) for kind, work in models.items()}
        base = t["regressor"]
        for kind in ("regressor", "twomeans", "fastbic"):
            rows.append(
                f"| {name} | {kind} | {n} x {p} | {t[kind]:.3f} | {t[kind] / base:.2f} | "
                f"{nodes[kind]} |"
            )
    return rows


def commit():
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return out.stdout.strip() or "unknown"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=None, help="also write the tables here")
    ap.add_argument("--repeats", type=int, default=5, help="alternating rounds (default 5)")
    ap.add_argument("--trees", type=int, default=100, help="trees per forest (default 100)")
    ap.add_argument(
        "--tables", default="ab", help="the tables to run: a (isolation), b, or ab (default)"
    )
    args = ap.parse_args()

    iso = [
        "| model | X | fit + score CPU s (median) | / scikit-learn |",
        "|---|---|---:|---:|",
    ]
    for n, p in [(10_000, 10), (100_000, 20)] if "a" in args.tables else []:
        iso += isolation_table(n, p, args.trees, args.repeats)
    urf = [
        "| family | forest | X | fit CPU s (median) | / regressor | nodes per tree |",
        "|---|---|---|---:|---:|---:|",
    ]
    for n, p in [(5_000, 20)] if "b" in args.tables else []:
        urf += unsupervised_table(n, p, args.trees, args.repeats)
    import sklearn

    text = "\n".join(
        [
            "## Forests without targets: speed",
            "",
            f"`nice -n 19 python benches/unsupervised.py --repeats {args.repeats} --trees "
            f"{args.trees} --tables {args.tables}` at {commit()}; "
            f"scikit-learn {sklearn.__version__}; "
            f"{args.trees} trees, n_jobs=1, CPU seconds of the process, medians of "
            f"{args.repeats} alternating rounds.",
            "",
            *(
                [
                    "### (a) IsolationForest against scikit-learn's (fit, then score the "
                    "training rows)",
                    "",
                    *iso,
                    "",
                ]
                if "a" in args.tables
                else []
            ),
            *(
                [
                    "### (b) UnsupervisedRandomForest against the regressor of the same family",
                    "",
                    "Same tree parameters (d = p candidates, min_samples_split = ceil(sqrt(n)), "
                    "bootstrap); the regressor learns y = x0 + x1 x2 + noise. Two-means trees "
                    "split down to min_samples_split as the regressor's do (the comparable "
                    "case); Fast-BIC trees stop where one Gaussian fits a node, here at once "
                    "(Gaussian X).",
                    "",
                    *urf,
                ]
                if "b" in args.tables
                else []
            ),
        ]
    ).rstrip()
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
