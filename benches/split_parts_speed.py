"""Fit time of every part of the split search (issue 44: the split search as parts must
keep its speed): one forest per path the dispatcher of ``src/tree/parts.rs`` picks, on
one thread, best of ``--repeats`` fits.

Compare two builds side by side by running this script alternately with each on
``PYTHONPATH`` (a build of another commit: ``git worktree add /tmp/base <commit>``, then
``maturin develop`` or ``cargo build --release --features python --lib`` there and copy
the library to ``python/obliqueforest/_core.abi3.so``)::

    PYTHONPATH=/tmp/base/python python benches/split_parts_speed.py --label before
    python benches/split_parts_speed.py --label after

Each run prints one line: ``label case=seconds ...``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from scipy import sparse
from sklearn.datasets import make_classification

import obliqueforest as of


def _cases(n):
    rng = np.random.default_rng(0)
    X, y = make_classification(n, 20, n_informative=8, random_state=0)
    X_nan = X.copy()
    X_nan[rng.random(X.shape) < 0.05] = np.nan
    frame = pd.DataFrame(X[:, :8], columns=[f"x{i}" for i in range(8)])
    frame["c"] = pd.Categorical(rng.integers(0, 30, n).astype(str))
    X_sp = sparse.random(n, 200, density=0.03, format="csc", random_state=0)
    y_sp = (X_sp[:, :3].sum(axis=1).A.ravel() > 0.2).astype(int)
    series = rng.normal(size=(n // 4, 64)).cumsum(axis=1)
    y_series = (series[:, 20:30].mean(axis=1) > series[:, 40:50].mean(axis=1)).astype(int)
    one = dict(n_estimators=10, n_jobs=1, random_state=0)
    return {
        "sorted_rf": lambda: of.RandomForestClassifier(**one).fit(X, y),
        "term_batch_sporf": lambda: of.SPORFClassifier(**one).fit(X, y),
        "histogram": lambda: of.RandomForestClassifier(splitter="hist", **one).fit(X, y),
        "missing": lambda: of.RandomForestClassifier(**one).fit(X_nan, y),
        "random": lambda: of.RandomForestClassifier(splitter="random", **one).fit(X, y),
        "levels": lambda: of.SPORFClassifier(**one).fit(frame, y),
        "sparse": lambda: of.SPORFClassifier(**one).fit(X_sp, y_sp),
        "pooled_morf": lambda: of.MORFClassifier(pooled=0.5, **one).fit(series, y_series),
        "value_rule": lambda: of.UnsupervisedRandomForest(n_components=None, **one).fit(
            X[: n // 4]
        ),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="this build")
    parser.add_argument("--rows", type=int, default=60000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    out = []
    for name, fit in _cases(args.rows).items():
        best = np.inf
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            fit()
            best = min(best, time.perf_counter() - t0)
        out.append(f"{name}={best:.3f}")
    print(args.label, " ".join(out), flush=True)


if __name__ == "__main__":
    main()
