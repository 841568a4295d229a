"""Fit time of a random forest, for A/B runs of a build that hands freed memory back after
each large tree (``release_free_memory``, ``src/forest/fit.rs``'s ``RELEASE_ROWS``) against
one that does not (``RELEASE_ROWS = usize::MAX``).

    PYTHONPATH=<build A>/python python benches/trim_cost.py --n 70000 --trees 40
    PYTHONPATH=<build B>/python python benches/trim_cost.py --n 70000 --trees 40

``RandomForestClassifier(n_estimators=trees, n_jobs=2, random_state=0)`` on ``n`` x 32
standard normal float32 (Fortran order), a noisy two-feature label; prints the best of 3
wall times and the package's location. Alternate the builds and repeat.
"""

import argparse
import time

import numpy as np

import obliqueforest as of


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=70_000)
    ap.add_argument("--trees", type=int, default=40)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    X = np.asfortranarray(rng.standard_normal((args.n, 32)).astype(np.float32))
    y = (X[:, 0] + X[:, 1] + 0.5 * rng.standard_normal(args.n) > 0).astype(int)
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        of.RandomForestClassifier(n_estimators=args.trees, n_jobs=2, random_state=0).fit(X, y)
        best = min(best, time.perf_counter() - start)
    print(f"n={args.n} trees={args.trees} fit wall s {best:.3f} ({of.__file__})")


if __name__ == "__main__":
    main()
