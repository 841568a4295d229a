"""Fit time of SPORF at its defaults against the random forest at its defaults.

The figure the README's "Which forest should I use?" table quotes: both estimators with
every parameter at its default but the tree count, the threads and the seed, on one
seeded ``make_classification`` data set, alternating in one process (the fastest round of
each kept; wall and process CPU seconds, both threads counted in CPU).

Run::

    python benches/defaults_cost.py                       # 30,000 x 32, 100 trees, n_jobs=2
    python benches/defaults_cost.py --n 100000 --rounds 5
"""

from __future__ import annotations

import argparse
import subprocess
import time

from sklearn.datasets import make_classification

from obliqueforest import RandomForestClassifier, SPORFClassifier


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=30_000, help="rows")
    parser.add_argument("--p", type=int, default=32, help="features")
    parser.add_argument("--trees", type=int, default=100)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    X, y = make_classification(
        args.n, args.p, n_informative=args.p // 2, n_redundant=0, random_state=0
    )
    models = {"RF": RandomForestClassifier, "SPORF": SPORFClassifier}
    best = {name: (float("inf"), float("inf")) for name in models}
    for _ in range(args.rounds):
        for name, cls in models.items():
            est = cls(args.trees, n_jobs=args.n_jobs, random_state=0)
            wall, cpu = time.perf_counter(), time.process_time()
            est.fit(X, y)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            best[name] = (min(best[name][0], wall), min(best[name][1], cpu))
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    print(
        f"at {commit or '?'}: {args.n} x {args.p} make_classification, {args.trees} trees, "
        f"n_jobs={args.n_jobs}, fastest of {args.rounds} alternating rounds"
    )
    for name, (wall, cpu) in best.items():
        print(f"{name:<6} fit {wall:7.2f} s wall, {cpu:7.2f} s CPU")
    (rf_wall, rf_cpu), (sp_wall, sp_cpu) = best["RF"], best["SPORF"]
    print(f"SPORF / RF: {sp_wall / rf_wall:.2f} wall, {sp_cpu / rf_cpu:.2f} CPU")


if __name__ == "__main__":
    main()
