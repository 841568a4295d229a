"""A fit on 1,000,000 x 20 float32 rows with 20 trees: time and peak RSS.

Runs in this process and reads the peak resident set size (VmHWM) from /proc:

    python benches/scale_1m.py [--model rf|sporf] [--n-jobs 2]
"""

import argparse
import time

import numpy as np

import obliqueforest as of


def peak_rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n-samples", type=int, default=1_000_000)
    ap.add_argument("--n-features", type=int, default=20)
    ap.add_argument("--n-estimators", type=int, default=20)
    ap.add_argument("--model", choices=["rf", "sporf"], default="rf")
    ap.add_argument("--n-jobs", type=int, default=2)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    X = rng.standard_normal((args.n_samples, args.n_features), dtype=np.float32)
    y = ((X[:, 0] + X[:, 1] * X[:, 2]) > 0).astype(np.int64)
    # C-contiguous float32: the core borrows it as it is, no copy
    base = peak_rss_mb()
    cls = of.RandomForestClassifier if args.model == "rf" else of.SPORFClassifier
    est = cls(args.n_estimators, random_state=0, n_jobs=args.n_jobs)
    t = time.perf_counter()
    est.fit(X, y)
    fit_s = time.perf_counter() - t
    after_fit = peak_rss_mb()
    t = time.perf_counter()
    acc = est.score(X[:100_000], y[:100_000])
    pred_s = time.perf_counter() - t
    nodes = int(est.tree_stats()[0].sum())
    size = len(est._forest.to_bytes())
    print(
        f"{args.model}: {args.n_samples} x {args.n_features} float32, {args.n_estimators} trees, "
        f"n_jobs={args.n_jobs}"
    )
    print(
        f"X itself: {X.nbytes / 2**20:.0f} MiB; peak RSS before fit {base:.0f} MiB, "
        f"after fit {after_fit:.0f} MiB (fit added {after_fit - base:.0f} MiB)"
    )
    print(
        f"fit {fit_s:.1f} s; predict 100,000 rows {pred_s:.2f} s; training accuracy on them "
        f"{acc:.3f}; {nodes} nodes, model {size / 2**20:.1f} MiB ({size / nodes:.1f} B/node)"
    )


if __name__ == "__main__":
    main()
