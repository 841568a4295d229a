"""Wall time of few trees on several threads: parallel subtrees (issue 48 item 1).

    python benches/tree_threads.py --n 1000000 --out benches/results/tree_threads.md
    PYTHONPATH=<other build>/python python benches/tree_threads.py ...   # A/B of two builds

On ``n`` rows x 32 float32 (Fortran order) of ``benches/scale.py``'s generator, seed 0,
``min_samples_leaf=5``, each case is fitted at ``n_jobs`` = 1 and 2 (alternating, ``--repeats``
times each; the table gives the median wall seconds and the ratio 1 thread / 2 threads):

* one tree of ``RandomForestClassifier`` and of ``SPORFClassifier`` (exact; ``--hist`` adds
  ``splitter="hist"``), the cases where only work inside the tree can use a second core;
* a forest of ``--forest-trees`` trees (20) of ``RandomForestClassifier`` at 2 threads,
  where the trees already fill the cores (compare it across builds: no slower).

Every fit at 2 threads is checked to give the model of 1 thread (the same predictions on
10,000 rows). The package's location is printed, so a stale installed copy shows.

``--simulate`` adds a simulated thread-count sweep (this machine has two cores): the fitted
one-thread trees' nodes, each costing ``n log2 n`` for its ``n`` rows (the sorts of its
candidates' values), are scheduled on P = 1..64 threads as the engine does (a node of at
least ``FORK_ROWS`` rows, once searched, lets its two children's subtrees start on any
free thread; a smaller node's subtree is one task), greedily, as work stealing does. The
fit's serial part (the time of a depth-1 fit, less its root search's share) is added, and
the model is checked against the measured 1 / 2 threads ratio. A node of at least
``PAR_ROWS`` (65,536) rows is that many tasks as it scores candidates in full (RF: d = 5;
SPORF: its 4 screened finalists). Forests with fewer trees than threads are simulated from
copies of the same tree. Also for other thresholds,
which is why the engine forks at 8,192 rows.
"""

import heapq

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale import make_data  # noqa: E402  (benches/scale.py)

import obliqueforest as of  # noqa: E402


def cases(args):
    out = [
        ("RF, 1 tree", lambda: of.RandomForestClassifier(n_estimators=1), [1, 2], 5),
        ("SPORF, 1 tree", lambda: of.SPORFClassifier(n_estimators=1), [1, 2], 4),
    ]
    if args.hist:
        out += [
            (
                "RF hist, 1 tree",
                lambda: of.RandomForestClassifier(n_estimators=1, splitter="hist"),
                [1, 2],
                5,
            ),
            (
                "SPORF hist, 1 tree",
                lambda: of.SPORFClassifier(n_estimators=1, splitter="hist"),
                [1, 2],
                4,
            ),
        ]
    if args.forest_trees:
        t = args.forest_trees
        out.append((f"RF, {t} trees", lambda: of.RandomForestClassifier(n_estimators=t), [2], 5))
    return out


def node_work(nodes):
    """Each node's simulated cost: n log2 n for its n rows when it was searched (n >= 2)."""
    n = np.asarray(nodes["n_node_samples"], dtype=np.float64)
    return np.where(n >= 2, n * np.log2(np.maximum(n, 2)), 0.0)


def makespan(nodes, work, threads, fork_rows, trees=1, pieces=1, par_rows=65536):
    """Greedy schedule of `trees` copies of one tree's tasks on `threads`: a node of >=
    fork_rows rows is a task of its own (of `pieces` equal tasks, its candidates, when it
    has >= par_rows rows) whose children become ready when it ends; a smaller node's
    subtree is one task; each tree's root is ready at the start."""
    left = np.asarray(nodes["left"])
    right = np.asarray(nodes["right"])
    n = np.asarray(nodes["n_node_samples"])
    leaf = left < 0
    subtree = work.copy()  # total work under each node, children after parents
    for i in range(len(n) - 1, -1, -1):
        if not leaf[i]:
            subtree[i] += subtree[left[i]] + subtree[right[i]]

    def split_up(i):  # the node's tasks: (cost, count), and whether its children follow
        if not leaf[i] and n[i] >= fork_rows:
            k = pieces if n[i] >= par_rows else 1
            return work[i] / k, k, True
        return subtree[i], 1, False

    free = [0.0] * threads  # when each thread is free
    ready = []  # (time ready, tree, node)
    waiting = {}  # (tree, node) -> pieces not yet done

    def release(t, tree, i):
        cost, k, forks = split_up(i)
        waiting[(tree, i)] = k
        for _ in range(k):
            heapq.heappush(ready, (t, tree, i, cost, forks))

    for tree in range(trees):
        release(0.0, tree, 0)
    end = 0.0
    while ready:
        t_ready, tree, i, cost, forks = heapq.heappop(ready)
        start = max(t_ready, heapq.heappop(free))
        done = start + cost
        heapq.heappush(free, done)
        end = max(end, done)
        waiting[(tree, i)] -= 1
        if forks and waiting[(tree, i)] == 0:
            release(done, tree, left[i])
            release(done, tree, right[i])
    return end


def simulate(X, y, make, root_fit_s, one_s, two_s, name, pieces):
    est = make().set_params(n_jobs=1, min_samples_leaf=5, random_state=0).fit(X, y)
    nodes = est._forest.tree_nodes(0)
    work = node_work(nodes)
    total = work.sum()
    # the depth-1 fit is the serial part plus the root's search; the one-thread fit is the
    # serial part plus every node's: seconds per unit of work, and the serial part
    unit = (one_s - root_fit_s) / (total - work[0])
    serial_s = max(root_fit_s - unit * work[0], 0.0)
    lines = [f"{name}: {len(work):,} nodes; serial part {serial_s:.3f} s of {one_s:.2f} s"]
    threads = [1, 2, 4, 8, 16, 32, 64]
    header = "| fork at | " + " | ".join(f"P={p}" for p in threads) + " |"
    lines += ["", header, "|---" * (len(threads) + 1) + "|"]
    for fork_rows, par in [
        (2048, True),
        (8192, True),
        (32768, True),
        (8192, False),
        (10**12, False),
    ]:
        speed = []
        for p in threads:
            k = pieces if par else 1
            t = serial_s + unit * makespan(nodes, work, p, fork_rows, pieces=k)
            speed.append(one_s / t)
        label = "never" if fork_rows == 10**12 else f"{fork_rows:,}"
        label += f", {pieces} candidate tasks from 65,536" if par else ", no candidate tasks"
        lines.append(f"| {label} | " + " | ".join(f"{v:.2f}x" for v in speed) + " |")
    lines.append("")
    lines.append(f"(measured at 2 threads: {one_s / two_s:.2f}x)")
    lines.append("")
    lines.append("Forests of this tree's shape, fewer trees than threads (speedup over 1 thread):")
    lines.append("")
    lines.append("| trees, threads | trees only | forks at 8,192, candidate tasks |")
    lines.append("|---|---|---|")
    for trees, p in [(10, 16), (20, 16), (16, 64), (50, 64)]:
        serial_one = serial_s * trees  # each tree's serial part (bootstrap, root), in parallel
        one = serial_one + unit * total * trees
        # each tree's serial part runs on its own thread before its tasks
        only = serial_s * -(-trees // p) + unit * makespan(nodes, work, p, 10**12, trees)
        fork = serial_s * -(-trees // p) + unit * makespan(nodes, work, p, 8192, trees, pieces)
        lines.append(f"| {trees}, {p} | {one / only:.2f}x | {one / fork:.2f}x |")
    return "\n".join(lines)


def root_fit(X, y, make):
    """Seconds of a fit that stops at its root's split: the fit's serial part (data
    checks, the bootstrap, the workspace) and the root's search."""
    est = make().set_params(n_jobs=1, min_samples_leaf=5, random_state=0, max_depth=1)
    est.fit(X, y)
    t0 = time.perf_counter()
    est.fit(X, y)
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--hist", action="store_true")
    ap.add_argument("--forest-trees", type=int, default=20, help="0: no forest case")
    ap.add_argument("--simulate", action="store_true")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    X, y = make_data(args.n, seed=1)
    X_check = X[:10_000]
    rows, sims = [], []
    print(f"obliqueforest from {Path(of.__file__).parent}; n={args.n}", flush=True)
    for name, make, jobs, pieces in cases(args):
        times = {j: [] for j in jobs}
        ref = None
        for _ in range(args.repeats):
            for j in jobs:
                est = make().set_params(n_jobs=j, min_samples_leaf=5, random_state=0)
                t0 = time.perf_counter()
                est.fit(X, y)
                times[j].append(time.perf_counter() - t0)
                proba = est.predict_proba(X_check)
                if ref is None:
                    ref = proba
                elif not np.array_equal(ref, proba):
                    raise SystemExit(f"{name}: n_jobs={j} gave another model")
                print(f"  {name} n_jobs={j}: {times[j][-1]:.2f} s", flush=True)
        med = {j: statistics.median(v) for j, v in times.items()}
        ratio = med[1] / med[2] if 1 in med else float("nan")
        rows.append((name, med.get(1), med[2], ratio))
        if args.simulate and 1 in med and "1 tree" in name:
            serial = root_fit(X, y, make)
            sims.append(simulate(X, y, make, serial, med[1], med[2], name, pieces))
    lines = [
        f"n = {args.n:,} x 32, min_samples_leaf=5, median of {args.repeats} fits (wall s)",
        "",
        "| case | 1 thread | 2 threads | 1 / 2 |",
        "|---|---|---|---|",
    ]
    for name, one, two, ratio in rows:
        one_s = "" if one is None else f"{one:.2f}"
        ratio_s = "" if one is None else f"{ratio:.2f}x"
        lines.append(f"| {name} | {one_s} | {two:.2f} | {ratio_s} |")
    if sims:
        lines += ["", "Simulated sweep (see the module doc):", ""] + ["\n\n".join(sims)]
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(
            "Written by `python benches/tree_threads.py "
            + " ".join(sys.argv[1:])
            + "`\n\n"
            + text
            + "\n"
        )


if __name__ == "__main__":
    main()
