"""Fit time with and without the progress bar (issue: verbose must not slow fits).

Each setting runs in alternation, several repeats, and the median is reported:

    python benches/progress_overhead.py [--repeats 5]
"""

import argparse
import contextlib
import io
import statistics
import time

import obliqueforest as of
from obliqueforest.datasets import make_sparse_parity


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--n-samples", type=int, default=10000)
    ap.add_argument("--n-estimators", type=int, default=100)
    args = ap.parse_args()
    X, y = make_sparse_parity(args.n_samples, random_state=0)
    times = {0: [], 1: []}
    for _ in range(args.repeats):
        for verbose in (0, 1):
            est = of.SPORFClassifier(args.n_estimators, random_state=0, n_jobs=2, verbose=verbose)
            sink = io.StringIO()
            with contextlib.redirect_stderr(sink):
                t = time.perf_counter()
                est.fit(X, y)
                times[verbose].append(time.perf_counter() - t)
    quiet, bar = statistics.median(times[0]), statistics.median(times[1])
    print(
        f"SPORF, sparse parity n={args.n_samples}, {args.n_estimators} trees, n_jobs=2, "
        f"median of {args.repeats}"
    )
    print("| verbose | fit s (median) | all runs |")
    print("|---|---|---|")
    print(f"| 0 | {quiet:.3f} | {', '.join(f'{t:.3f}' for t in times[0])} |")
    print(f"| 1 | {bar:.3f} | {', '.join(f'{t:.3f}' for t in times[1])} |")
    print(f"overhead of the progress bar: {100 * (bar / quiet - 1):+.1f}%")


if __name__ == "__main__":
    main()
