"""How much split-search work SPORF and the random forest with d = p do on one data set.

For each forest, the rows every split search scans (the sum of ``n_node_samples`` over the
inner nodes of all trees, each scanned once per candidate projection) against the fit time.
The work ratio bounds what ``SPORF fit / RF fit`` can be: SPORF would take that ratio of
RF's time even if a row cost it exactly what it costs RF.

    python benches/split_work.py [--dataset orthant] [--sizes 10000 100000]
"""

import argparse
import time

import numpy as np

import obliqueforest as of
from obliqueforest import datasets

DATASETS = {
    "orthant": lambda n: datasets.make_orthant(n, n_features=6, random_state=0),
    "sparse_parity": lambda n: datasets.make_sparse_parity(n, n_features=20, random_state=0),
    "trunk": lambda n: datasets.make_trunk(n, n_features=10, random_state=0),
    "hv_bars": lambda n: datasets.make_hv_bars(n, random_state=0),
}


def rows_scanned(model):
    """Sum of n_node_samples over the inner nodes of every tree of a fitted forest."""
    total = 0
    for i in range(model.n_estimators):
        nodes = model._forest.tree_nodes(i)
        total += int(nodes["n_node_samples"][nodes["left"] >= 0].sum())
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dataset", choices=sorted(DATASETS), default="orthant")
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--n-estimators", type=int, default=100)
    ap.add_argument("--n-jobs", type=int, default=2)
    args = ap.parse_args()
    print("| n | forest | fit s | nodes | rows scanned (M) | M rows / s |")
    print("|---|---|---|---|---|---|")
    for n in args.sizes:
        X, y = DATASETS[args.dataset](n)
        X = np.ascontiguousarray(X, dtype=np.float32)
        common = dict(n_estimators=args.n_estimators, n_jobs=args.n_jobs, random_state=0)
        work = {}
        for name, model in (
            ("RF (d = p)", of.RandomForestClassifier(max_features=None, **common)),
            ("SPORF (d = p)", of.SPORFClassifier(**common)),
        ):
            t = time.perf_counter()
            model.fit(X, y)
            t = time.perf_counter() - t
            rows = rows_scanned(model)
            nodes = sum(model._forest.tree_nodes(i)["left"].size for i in range(model.n_estimators))
            work[name] = (rows, t)
            print(f"| {n} | {name} | {t:.2f} | {nodes} | {rows / 1e6:.1f} | {rows / t / 1e6:.1f} |")
        (w_rf, t_rf), (w_sp, t_sp) = work["RF (d = p)"], work["SPORF (d = p)"]
        print(f"| {n} | SPORF / RF | {t_sp / t_rf:.2f} | | {w_sp / w_rf:.2f} | |")


if __name__ == "__main__":
    main()
