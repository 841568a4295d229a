"""Sparse X: fit time, peak memory and accuracy of our RF and SPORF on a wide scipy CSC
matrix against scikit-learn's RandomForestClassifier (its sparse splitter on CSC input).

The data (seeded, built here, nothing downloaded), by ``--data``:

- ``uniform`` (default 20,000 x 10,000): float32 at ``--density`` (uniform values in
  [0, 1)), plus ``--informative`` columns at 30% density; the class is whether a fixed
  weighted sum of the informative columns exceeds its median.
- ``text`` (default 16,000 x 60,000, density about 0.0013): hashed bag-of-words documents
  with TF-IDF weights, as scikit-learn's ``HashingVectorizer`` + ``TfidfTransformer``
  (sublinear tf, smooth idf, rows of unit L2 norm) give them: each document draws
  ~Poisson(80) + 10 tokens from a Zipf(1.1) vocabulary hashed to ``--cols`` columns, 12%
  of them from 400 topic words of its class (two classes); 5% of the labels are flipped.

75% of the rows train, 25% test.

Each model runs in a fresh child process that builds the data, fits and scores: its
``peak RSS`` is the child's high-water resident set during ``fit`` (``VmHWM``, reset through
``/proc/self/clear_refs`` just before ``fit``, so data generation temporaries do not count
but the training data do; Rust allocations included, which tracemalloc misses; falls back
to ``ru_maxrss`` where the reset is unavailable) and ``fit RSS growth`` that peak minus the
resident set just before ``fit`` (imports and data excluded). Models run one after the other
(never two at a time), all with ``n_jobs=--n-jobs``, ``--trees`` trees, ``random_state=0``.
Fit time is reported as wall time and as the child's CPU time (user + system); the ratios
use CPU time, which with ``n_jobs=1`` is the fit's work and moves far less than wall time
when other processes share the machine. SPORF draws ``--sporf-max-features`` candidate
projections per node (default "sqrt", the random forests' count: its own default, p
candidates, costs p projections of every node's rows). Ratios are ours over
scikit-learn's, from the same run.

Command (a few minutes; run it niced on a shared machine)::

    nice -n 19 python benches/sparse.py --out benches/results/sparse.md
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import numpy as np
from scipy import sparse

from _memory import reset_peak_rss, status_kb  # benches/_memory.py

MODELS = ("sklearn_rf", "of_rf", "of_sporf")


def make_text(rows, cols, seed=0):
    """Hashed TF-IDF documents (see the module doc): (X_train, y_train, X_test, y_test)."""
    rng = np.random.default_rng(seed)
    vocab = 200_000  # words before hashing
    zipf = 1.0 / (np.arange(vocab) + 2.7) ** 1.1
    zipf /= zipf.sum()
    topics = rng.choice(np.arange(2_000, vocab), size=(2, 400), replace=False)
    y = rng.integers(0, 2, rows)
    lengths = rng.poisson(80, rows) + 10
    doc = np.repeat(np.arange(rows), lengths)
    words = rng.choice(vocab, size=len(doc), p=zipf)
    topical = rng.random(len(doc)) < 0.12
    words[topical] = topics[y[doc[topical]], rng.integers(0, 400, topical.sum())]
    column = (words.astype(np.uint64) * np.uint64(2654435761) % np.uint64(cols)).astype(np.int64)
    counts = sparse.csr_matrix(
        (np.ones(len(doc), dtype=np.float32), (doc, column)), shape=(rows, cols)
    )
    counts.sum_duplicates()
    df = np.bincount(counts.indices, minlength=cols)
    idf = np.log((1 + rows) / (1 + df)) + 1
    counts.data = (1 + np.log(counts.data)) * idf[counts.indices]
    norms = np.sqrt(np.asarray(counts.multiply(counts).sum(axis=1)).ravel())
    X = sparse.diags(1 / np.maximum(norms, 1e-12)) @ counts
    X = X.astype(np.float32).tocsc()
    flip = rng.random(rows) < 0.05
    y = np.where(flip, 1 - y, y)
    n_train = rows * 3 // 4
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


def make_data(rows, cols, density, informative, seed=0, data="uniform"):
    if data == "text":
        return make_text(rows, cols, seed)
    rng = np.random.default_rng(seed)
    X = sparse.random(rows, cols, density=density, format="csc", dtype=np.float32, random_state=rng)
    signal = sparse.random(
        rows, informative, density=0.3, format="csc", dtype=np.float32, random_state=rng
    )
    X = sparse.hstack([signal, X[:, informative:]], format="csc")
    weights = rng.choice([-1.0, 1.0], informative) * rng.uniform(0.5, 1.5, informative)
    score = signal @ weights
    y = (score > np.median(score)).astype(np.int64)
    n_train = rows * 3 // 4
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


def peak_mb(reset):
    """The peak resident set since ``reset_peak_rss`` (MB), or the process's peak where the
    mark could not be reset."""
    if reset:
        return status_kb("VmHWM") / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(args):
    Xtr, ytr, Xte, yte = make_data(
        args.rows, args.cols, args.density, args.informative, data=args.data
    )
    kw = {"n_estimators": args.trees, "random_state": 0, "n_jobs": args.n_jobs}
    if args.child == "sklearn_rf":
        from sklearn.ensemble import RandomForestClassifier

        est = RandomForestClassifier(**kw)
    else:
        import obliqueforest as of

        if args.child == "of_rf":
            est = of.RandomForestClassifier(**kw)
        else:
            mf = args.sporf_max_features
            mf = None if mf == "None" else mf if mf in ("sqrt", "log2") else float(mf)
            est = of.SPORFClassifier(max_features=mf, **kw)
    reset = reset_peak_rss()
    before = status_kb("VmRSS") / 1024
    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    est.fit(Xtr, ytr)
    fit_s = time.perf_counter() - t0
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu_s = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    peak = peak_mb(reset)
    accuracy = float((est.predict(Xte.tocsr()) == yte).mean())
    print(
        json.dumps(
            {
                "fit_s": fit_s,
                "cpu_s": cpu_s,
                "peak_mb": peak,
                "growth_mb": peak - before,
                "accuracy": accuracy,
            }
        )
    )


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", choices=("uniform", "text"), default="uniform")
    ap.add_argument("--rows", type=int, help="default 20,000 (uniform) or 16,000 (text)")
    ap.add_argument("--cols", type=int, help="default 10,000 (uniform) or 60,000 (text)")
    ap.add_argument("--density", type=float, default=0.005)
    ap.add_argument("--informative", type=int, default=10)
    ap.add_argument("--trees", type=int, default=20)
    ap.add_argument("--n-jobs", type=int, default=1)
    ap.add_argument("--sporf-max-features", default="sqrt")
    ap.add_argument("--out", help="write the markdown table here")
    ap.add_argument("--child", choices=MODELS, help=argparse.SUPPRESS)
    ap.add_argument("--runs", type=int, default=1, help="alternating runs; medians reported")
    args = ap.parse_args()
    text = args.data == "text"
    args.rows = args.rows or (16_000 if text else 20_000)
    args.cols = args.cols or (60_000 if text else 10_000)
    if args.child:
        return child(args)
    passed = [
        f"--{name.replace('_', '-')}={getattr(args, name)}"
        for name in ("data", "rows", "cols", "density", "informative", "trees", "n_jobs")
    ] + [f"--sporf-max-features={args.sporf_max_features}"]
    runs = {model: [] for model in MODELS}
    for _ in range(args.runs):  # alternating: each run times every model once
        for model in MODELS:
            out = subprocess.run(
                [sys.executable, __file__, *passed, "--child", model],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            runs[model].append(json.loads(out.strip().splitlines()[-1]))
            print(model, runs[model][-1], flush=True)
    results = {
        model: {key: float(np.median([r[key] for r in rs])) for key in rs[0]}
        for model, rs in runs.items()
    }
    base = results["sklearn_rf"]
    if text:
        Xtr = make_text(args.rows, args.cols)[0]
        what = (
            f"hashed TF-IDF documents (`--data text`), {args.rows} x {args.cols} CSC at "
            f"density {Xtr.nnz / (Xtr.shape[0] * Xtr.shape[1]):.5f}"
        )
    else:
        what = (
            f"{args.rows} x {args.cols} CSC at density {args.density} "
            f"(+{args.informative} informative columns at 0.3)"
        )
    lines = [
        f"Sparse X: {what}, {args.trees} trees, n_jobs={args.n_jobs}, SPORF "
        f"max_features={args.sporf_max_features}; `python benches/sparse.py` (one child "
        f"process per model and run; medians of {args.runs} alternating runs).",
        "",
        "| model | fit s (wall) | fit CPU s | peak RSS MB | fit RSS growth MB | accuracy | "
        "fit CPU / sklearn | peak RSS / sklearn | growth / sklearn |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for model, r in results.items():
        lines.append(
            f"| {model} | {r['fit_s']:.2f} | {r['cpu_s']:.2f} | {r['peak_mb']:.0f} | "
            f"{r['growth_mb']:.0f} | {r['accuracy']:.3f} | {r['cpu_s'] / base['cpu_s']:.2f} | "
            f"{r['peak_mb'] / base['peak_mb']:.2f} | "
            f"{r['growth_mb'] / max(base['growth_mb'], 1e-9):.2f} |"
        )
    table = "\n".join(lines) + "\n"
    print(table)
    if args.out:
        with open(args.out, "w") as f:
            f.write(table)


if __name__ == "__main__":
    main()
