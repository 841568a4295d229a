"""Speed of the forest kinds of issue 25 against the plain forest of the same family.

For each family, on the same data, the fit's CPU time of

* a regressor with ``store_leaf_values=True`` (quantile regression forest) against the same
  regressor without it, and the time of ``predict_quantiles`` (3 quantiles) against
  ``predict`` on held-out rows;
* a classifier with ``honest_fraction=0.5`` against the same classifier without it;

as medians of alternating runs (plain, kind, plain, kind, ...) of CPU seconds
(``time.process_time``, all threads of this process), so that other work on a shared
machine moves both alike. Writes a Markdown table naming the commit and the command.

    python benches/kinds.py --out benches/results/kinds.md
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import obliqueforest as of

FAMILIES = {
    "rf": (of.RandomForestRegressor, of.RandomForestClassifier, {}),
    "sporf": (of.SPORFRegressor, of.SPORFClassifier, {}),
    "morf": (of.MORFRegressor, of.MORFClassifier, {"data_shape": None}),
}


def data(n, p, seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 1, size=(n, p))
    y = np.sin(4 * X[:, 0]) + X[:, 1] + (0.1 + X[:, 2]) * rng.normal(size=n)
    labels = ((X[:, 0] > 0.5) ^ (X[:, 1] + 0.3 * rng.normal(size=n) > 0.5)).astype(int)
    return X.astype(np.float32), y, labels


def cpu(f):
    t = time.process_time()
    out = f()
    return time.process_time() - t, out


def paired(make_plain, make_kind, repeats):
    """Median CPU seconds of the two callables, alternated."""
    a, b = [], []
    for _ in range(repeats):
        a.append(cpu(make_plain)[0])
        b.append(cpu(make_kind)[0])
    return statistics.median(a), statistics.median(b)


def measure(name, reg, clf, kw, X, y, labels, X_test, args):
    """One table row: the family's kinds against its plain forests."""
    fit_plain, fit_qrf = paired(
        lambda: reg(**kw).fit(X, y),
        lambda: reg(**kw, store_leaf_values=True).fit(X, y),
        args.repeats,
    )
    plain = reg(**kw).fit(X, y)
    qrf = reg(**kw, store_leaf_values=True).fit(X, y)
    predict, quantiles = paired(
        lambda: plain.predict(X_test),
        lambda: qrf.predict_quantiles(X_test, [0.05, 0.5, 0.95]),
        args.repeats,
    )
    fit_clf, fit_honest = paired(
        lambda: clf(**kw).fit(X, labels),
        lambda: clf(**kw, honest_fraction=0.5).fit(X, labels),
        args.repeats,
    )
    return (
        f"| {name} | {fit_plain:.2f} | {fit_qrf:.2f} | {fit_qrf / fit_plain:.2f} "
        f"| {predict:.3f} | {quantiles:.3f} | {fit_clf:.2f} | {fit_honest:.2f} "
        f"| {fit_honest / fit_clf:.2f} |"
    )


def commit():
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=5000, help="training rows (default 5000)")
    parser.add_argument("--p", type=int, default=16, help="features (default 16)")
    parser.add_argument("--trees", type=int, default=50, help="trees (default 50)")
    parser.add_argument("--repeats", type=int, default=3, help="alternating pairs (default 3)")
    parser.add_argument("--n-jobs", type=int, default=1, help="threads (default 1)")
    parser.add_argument("--families", nargs="+", default=list(FAMILIES), choices=FAMILIES)
    parser.add_argument("--out", help="write the Markdown table here too")
    args = parser.parse_args(argv)

    X, y, labels = data(args.n, args.p, 0)
    X_test, _, _ = data(args.n, args.p, 1)
    common = dict(n_estimators=args.trees, n_jobs=args.n_jobs, random_state=0)
    rows = []
    for name in args.families:
        reg, clf, extra = FAMILIES[name]
        extra = {k: (args.p,) if v is None else v for k, v in extra.items()}
        rows.append(measure(name, reg, clf, {**common, **extra}, X, y, labels, X_test, args))
        print(rows[-1], flush=True)
    command = "python benches/kinds.py " + " ".join(sys.argv[1:] if argv is None else argv)
    table = "\n".join(
        [
            f"Forest kinds against the plain forest of the same family (commit {commit()}, "
            f"`{command.strip()}`): {args.n} training rows x {args.p} features, "
            f"{args.trees} trees, n_jobs={args.n_jobs}; CPU seconds, medians of "
            f"{args.repeats} alternating pairs; predictions on {args.n} held-out rows.",
            "",
            "| family | fit regressor | fit, store_leaf_values | ratio | predict "
            "| predict_quantiles (3) | fit classifier | fit, honest_fraction=0.5 | ratio |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
            *rows,
        ]
    )
    print(table)
    if args.out:
        Path(args.out).write_text(table + "\n")


if __name__ == "__main__":
    main()
