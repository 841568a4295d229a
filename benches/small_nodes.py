"""Where a random forest's fit time goes on small tables grown to purity (issue 46's fit
time against scikit-learn's one-hot pipeline): the share of the nodes of few rows, what
the categorical columns cost against the same columns as numbers, and the numeric
columns alone against scikit-learn's forest.

For each table of ``benches/categorical_bench.py`` named (default: males and diamonds,
the two above half of scikit-learn's one-hot fit time), the bench's split for seed 0, one
thread, 100 trees, the fastest of ``--repeats`` fits of:

* ``raw``: our forest on the raw DataFrame, at ``min_samples_split`` 2 (the default), 8,
  32 and 128 (``--splits``): the time the nodes of fewer rows take is the difference;
* ``codes``: the categorical columns as numeric codes (NaN for missing), no categorical
  split;
* ``numeric``: the numeric columns alone, ours and scikit-learn's forest (its defaults, as
  ours: ``max_features`` 1.0 for regression, ``"sqrt"`` for classification).

Run::

    python benches/small_nodes.py
    python benches/small_nodes.py --only hi sumhes --repeats 5
    python benches/small_nodes.py --splits 2 3 4     # the nodes of two and three rows
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import categorical_bench as cb  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

import obliqueforest as of  # noqa: E402


def best_fit(make, X, y, repeats):
    """The fastest of ``repeats`` fits of ``make()`` on (X, y), in seconds."""
    times = []
    for _ in range(repeats):
        model = make()
        started = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(X, y)
        times.append(time.perf_counter() - started)
    return min(times)


def as_codes(X):
    """X with its categorical columns as float codes (NaN where missing)."""
    out = X.copy()
    for c in out.columns:
        if cb.is_categorical(out[c]):
            codes = pd.factorize(out[c])[0].astype(np.float64)
            codes[codes < 0] = np.nan
            out[c] = codes
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", default=["males", "diamonds"], choices=list(cb.TABLES))
    parser.add_argument("--repeats", type=int, default=3, help="fits per cell, fastest kept")
    parser.add_argument("--trees", type=int, default=100)
    parser.add_argument(
        "--splits",
        nargs="+",
        type=int,
        default=[2, 8, 32, 128],
        help="min_samples_split of the raw columns (2 8 32 128)",
    )
    args = parser.parse_args(argv)
    from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor

    loader = argparse.Namespace(max_rows=10000, synthetic_rows=6000, levels=1500, quick=False)
    splits = args.splits
    print(
        f"one thread, {args.trees} trees, fastest of {args.repeats} fits, seconds; "
        "the bench's split for seed 0\n"
    )
    print(
        "| table | rows | "
        + " | ".join(f"raw, min_samples_split={s}" for s in splits)
        + " | codes | numeric only, ours | numeric only, scikit-learn |"
    )
    print("|---|---:|" + "---:|" * (len(splits) + 3))
    for name in args.only:
        X, y, task = cb.load(name, loader)
        train, _ = train_test_split(
            np.arange(len(y)),
            test_size=0.25,
            random_state=0,
            stratify=y if task == "classification" else None,
        )
        X_train, y_train = X.iloc[train].reset_index(drop=True), y[train]
        ours = of.RandomForestClassifier if task == "classification" else of.RandomForestRegressor
        theirs = RandomForestClassifier if task == "classification" else RandomForestRegressor

        def our(cls=ours, **params):
            return lambda: cls(args.trees, n_jobs=1, random_state=0, **params)

        cells = [best_fit(our(min_samples_split=s), X_train, y_train, args.repeats) for s in splits]
        cells.append(best_fit(our(), as_codes(X_train), y_train, args.repeats))
        numeric = [c for c in X_train.columns if not cb.is_categorical(X_train[c])]
        if numeric:
            X_num = np.asfortranarray(X_train[numeric].to_numpy(np.float32))
            cells.append(best_fit(our(), X_num, y_train, args.repeats))
            cells.append(best_fit(our(theirs), X_num, y_train, args.repeats))
        else:  # (a table of categorical columns only)
            cells += [float("nan")] * 2
        print(f"| {name} | {len(y_train):,} | " + " | ".join(f"{c:.3f}" for c in cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
