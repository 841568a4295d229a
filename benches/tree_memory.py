"""Bytes per row and concurrent tree that a fit holds beyond X (issue 48 item 2).

    python benches/tree_memory.py --n 2000000 --out benches/results/tree_memory.md
    python benches/tree_memory.py --n 2000000 --trees 8 --threads 2   # more trees than threads
    PYTHONPATH=<other build>/python python benches/tree_memory.py ...   # before / after

Each case runs in a child interpreter (``--child``), which makes ``n`` rows x 32 float32
(``benches/scale.py``'s generator; Fortran order, or C order with ``c``), reads its resident
memory (``VmRSS``), resets the kernel's high-water mark (``/proc/self/clear_refs``), fits
``--trees`` trees on as many threads, or on ``--threads`` (so that many trees grow at once,
at most the cores the process may use, as the library caps ``n_jobs``;
``min_samples_leaf=5``, bootstrap, seed 0), and reports the peak (``VmHWM``) less the memory before the fit and
less the fitted trees (``n_bytes``, which the peak holds at most): the fit's working
memory, divided by rows x concurrent trees. A C-order X is copied once into the layout the
trees read (X's size again): its bytes per row and tree are given beyond that copy too.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

CASES = [
    ("RF exact", "rf", "f"),
    ("RF hist", "rf_hist", "f"),
    ("SPORF exact", "sporf", "f"),
    ("RF exact, C-order X", "rf", "c"),
    ("RF hist, C-order X", "rf_hist", "c"),
]


def child(model, order, n, trees, threads):
    import numpy as np
    from _memory import reset_peak_rss, status_kb
    from scale import make_data

    import obliqueforest as of

    X, y = make_data(n, seed=1)
    if order == "c":
        X = np.ascontiguousarray(X)
    make = {
        "rf": lambda: of.RandomForestClassifier(),
        "rf_hist": lambda: of.RandomForestClassifier(splitter="hist"),
        "sporf": lambda: of.SPORFClassifier(),
    }[model]
    est = make().set_params(n_estimators=trees, n_jobs=threads, min_samples_leaf=5, random_state=0)
    before = status_kb("VmRSS") * 1024
    if not reset_peak_rss():
        raise SystemExit("cannot reset the peak resident memory here")
    start = time.perf_counter()
    est.fit(X, y)
    seconds = time.perf_counter() - start
    peak = status_kb("VmHWM") * 1024
    out = {
        "before": before,
        "peak": peak,
        "trees_bytes": int(est._forest.n_bytes),
        "x_bytes": int(X.nbytes),
        "seconds": seconds,
        "package": str(Path(of.__file__).parent),
    }
    print(json.dumps(out))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=2_000_000)
    ap.add_argument("--trees", type=int, default=2)
    ap.add_argument(
        "--threads", type=int, help="threads (n_jobs), the trees growing at once (default: --trees)"
    )
    ap.add_argument("--out", type=Path)
    ap.add_argument("--child", nargs=5, metavar=("MODEL", "ORDER", "N", "TREES", "THREADS"))
    args = ap.parse_args()
    if args.child:
        model, order, n, trees, threads = args.child
        child(model, order, int(n), int(trees), int(threads))
        return
    n, trees = args.n, args.trees
    # the trees growing at once (n_jobs above the cores this process may use is capped at
    # them, as the library caps it)
    t = min(args.threads or trees, trees, len(os.sched_getaffinity(0)))
    lines = [
        f"n = {n:,} x 32 float32, {trees} trees on {t} threads, min_samples_leaf=5: the fit's "
        "peak resident memory beyond X and the fitted trees, per row and concurrent tree",
        "",
        "| case | peak beyond X, MiB | trees, MiB | bytes / row / tree | beyond X's copy | fit, s |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    package = None
    for name, model, order in CASES:
        cmd = [sys.executable, __file__, "--child", model, order, str(n), str(trees), str(t)]
        r = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
        package = r["package"]
        working = r["peak"] - r["before"] - r["trees_bytes"]
        per = working / (n * t)
        beyond_copy = (working - r["x_bytes"]) / (n * t) if order == "c" else None
        copy_s = "" if beyond_copy is None else f"{beyond_copy:.1f}"
        lines.append(
            f"| {name} | {(r['peak'] - r['before']) / 2**20:.0f} | {r['trees_bytes'] / 2**20:.0f} "
            f"| {per:.1f} | {copy_s} | {r['seconds']:.2f} |"
        )
        print(lines[-1], flush=True)
    text = "\n".join(lines) + f"\n\n(obliqueforest from {package})\n"
    print(text)
    if args.out:
        args.out.write_text(
            "Written by `python benches/tree_memory.py " + " ".join(sys.argv[1:]) + "`\n\n" + text
        )


if __name__ == "__main__":
    main()
