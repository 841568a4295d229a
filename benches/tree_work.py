"""The work one fully grown tree does, against its fit time, at 10^5 to 10^7 rows: how much
of the growth of time per tenfold rows (issue 28 item 5) is the tree's own growth.

    python benches/tree_work.py --sizes 100000 1000000 10000000

An exact (or histogram) split search visits every in-bag row of a node for each of its
candidates, and a row is in one node per level on its path from the root: a tree's work is
its **row-levels**, the sum of the rows of its internal nodes. ``n log n`` assumes balanced
splits, so that a row's path grows by log2(10) = 3.3 levels per tenfold rows; the trees of
scale.py's data split unevenly and their paths grow by more, so their work grows faster
than n log n whatever the implementation. This script fits one tree (``n_jobs=1``,
``min_samples_leaf=5``, seed 0, bootstrap) of each model on ``benches/scale.py``'s data and
prints, per n: the fit's CPU seconds, the tree's nodes and depth, its row-levels per row of
X, and the CPU nanoseconds per row-level; then, per tenfold rows, the growth of the time,
of the row-levels, and of the cost of a row-level (time growth / row-level growth: 1.0 when
the implementation's cost per unit of work does not grow with n).

``--sklearn`` adds scikit-learn's ``RandomForestClassifier`` with the same settings (one
tree, sqrt(p) features a node) at sizes up to ``--sklearn-max`` rows, to show that its trees
deepen in the same way (its row-levels, from ``tree_.n_node_samples``).
"""

import argparse
import subprocess
import sys
from pathlib import Path

MODELS = ("rf", "rf_hist", "sporf", "sporf_hist", "sklearn")


def child(model, n):
    """Fits one tree and prints one tab-separated record."""
    import time

    import numpy as np

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from scale import make_data  # benches/scale.py

    X, y = make_data(n, seed=1)
    if model == "sklearn":
        from sklearn.ensemble import RandomForestClassifier

        est = RandomForestClassifier(n_estimators=1, n_jobs=1, min_samples_leaf=5, random_state=0)
    else:
        import obliqueforest as of

        cls = of.SPORFClassifier if model.startswith("sporf") else of.RandomForestClassifier
        est = cls(
            n_estimators=1,
            n_jobs=1,
            min_samples_leaf=5,
            random_state=0,
            splitter="hist" if model.endswith("hist") else "best",
        )
    cpu = time.process_time()
    est.fit(X, y)
    cpu = time.process_time() - cpu
    tree = est.estimators_[0].tree_
    internal = np.asarray(tree.children_left) >= 0
    row_levels = float(np.asarray(tree.n_node_samples)[internal].sum()) / n
    print(f"{model}\t{n}\t{cpu:.3f}\t{tree.node_count}\t{tree.max_depth}\t{row_levels:.4f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--models", nargs="+", choices=MODELS, default=["rf", "rf_hist"])
    ap.add_argument("--sklearn", action="store_true", help="add scikit-learn's tree")
    ap.add_argument("--sklearn-max", type=int, default=1_000_000)
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args.child[0], int(args.child[1]))
    models = list(args.models) + (["sklearn"] if args.sklearn else [])
    records = {}
    print("| model | n | fit CPU s | nodes | depth | row-levels / row | ns / row-level |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for model in models:
        for n in args.sizes:
            if model == "sklearn" and n > args.sklearn_max:
                continue
            out = (
                subprocess.run(
                    [sys.executable, __file__, "--child", model, str(n)],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                .stdout.strip()
                .splitlines()[-1]
            )
            _, _, cpu, nodes, depth, rl = out.split("\t")
            cpu, rl = float(cpu), float(rl)
            records[model, n] = (cpu, rl)
            print(
                f"| {model} | {n:,} | {cpu:.2f} | {int(nodes):,} | {depth} | {rl:.2f} "
                f"| {cpu / (rl * n) * 1e9:.1f} |",
                flush=True,
            )
    print()
    print("| model | rows | time growth | row-level growth | cost of a row-level |")
    print("| --- | --- | ---: | ---: | ---: |")
    for model in models:
        sizes = [n for n in args.sizes if (model, n) in records]
        for a, b in zip(sizes, sizes[1:]):
            (ta, ra), (tb, rb) = records[model, a], records[model, b]
            work = (rb * b) / (ra * a)
            print(
                f"| {model} | {a:,} -> {b:,} | {tb / ta:.2f}x | {work:.2f}x "
                f"| {tb / ta / work:.2f}x |"
            )


if __name__ == "__main__":
    main()
