"""Our random forest's fit time on the tables of ``benches/categorical_bench.py``, and the
hashes of RF and SPORF forests grown on them: to compare two builds of the categorical
split search (the same forests, and how much faster). One thread, 100 trees, best of 3
fits; the hashed forests have 20 trees.

    PYTHONPATH=/tmp/base/python python benches/categorical_speed.py --label before
    python benches/categorical_speed.py --label after
    python benches/categorical_speed.py --label three --min-category-samples 3

Each run prints two lines, ``label HASH table/Estimator:hash ...`` and ``label TIME
table=seconds ...``; the HASH lines of two builds that grow the same forests are equal
after the label.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import categorical_bench as cb  # noqa: E402

import obliqueforest as of  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="this build")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--min-category-samples",
        type=int,
        help="every forest's min_category_samples (default: the estimators'), to time one "
        "value against another on one build",
    )
    args = parser.parse_args(argv)
    extra = {}
    if args.min_category_samples is not None:
        extra["min_category_samples"] = args.min_category_samples
    warnings.simplefilter("ignore")
    tables = argparse.Namespace(max_rows=10000, synthetic_rows=6000, levels=1500, quick=False)
    hashes, times = [], []
    for name in cb.TABLES:
        X, y, task = cb.load(name, tables)
        reg = task == "regression"
        rf = of.RandomForestRegressor if reg else of.RandomForestClassifier
        sporf = of.SPORFRegressor if reg else of.SPORFClassifier
        for est in (rf, sporf):
            forest = est(20, n_jobs=1, random_state=0, **extra).fit(X, y)._forest
            digest = hashlib.sha256(forest.to_bytes()).hexdigest()[:10]
            hashes.append(f"{name}/{est.__name__}:{digest}")
        best = float("inf")
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            rf(100, n_jobs=1, random_state=0, **extra).fit(X, y)
            best = min(best, time.perf_counter() - t0)
        times.append(f"{name}={best:.3f}")
    print(args.label, "HASH", " ".join(hashes), flush=True)
    print(args.label, "TIME", " ".join(times), flush=True)


if __name__ == "__main__":
    main()
