"""Pooled MORF on long series: fit CPU time and test error of MORF at its defaults (pooled
filters), the paper's MORF (``pooled=0, differences=0``) and treeple's MORF, at equal
trees, on UCR's OSULeaf (200 training / 242 test series of 427 steps, 6 classes).

The data: aeon's bundled OSULeaf (``aeon.datasets.load_osuleaf``) when aeon imports, or
an ``.npz`` file given with ``--npz`` (arrays ``Xtr``, ``ytr``, ``Xte``, ``yte``, e.g.
written from aeon in another environment), or else a seeded OSULeaf-shaped generator
(``--synthetic``: six smooth class templates, each series one shifted by up to a tenth of
its length, scaled by 0.8-1.2, plus noise; the generator of ``benches/core.rs``'s
``fit_pooled_morf`` group, drawn with numpy).

Each model runs in a child process (``--python-treeple`` names the interpreter of an
environment where treeple imports, as ``benches/setup_treeple_env.sh`` makes one), fits
with ``n_jobs=1`` and reports its CPU time (``time.process_time``: the fit's work, which
moves far less than wall time on a shared machine) and test error. ``--runs`` alternating
runs; the table gives medians.

Command::

    nice -n 19 python benches/long_series.py --runs 3 --python-treeple /tmp/tpenv/bin/python
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time

import numpy as np

MODELS = {
    "of_morf": "MORF, defaults (pooled=0.25)",
    "of_morf_paper": "MORF, paper (pooled=0, differences=0)",
    "treeple_morf": "treeple PatchObliqueRandomForestClassifier",
}


def synthetic(n_train=200, n_test=242, length=427, seed=0):
    """OSULeaf-shaped series (see the module doc)."""
    rng = np.random.default_rng(seed)
    t = np.arange(length)
    templates = []
    for _ in range(6):
        at, width = rng.uniform(0, length, 4), length * rng.uniform(0.02, 0.1, 4)
        height = rng.uniform(-1, 1, 4)
        templates.append((2 * height * np.exp(-(((t[:, None] - at) / width) ** 2))).sum(axis=1))
    n = n_train + n_test
    y = np.arange(n) % 6
    shift = rng.integers(-length // 10, length // 10 + 1, n)
    scale = rng.uniform(0.8, 1.2, n)
    idx = np.clip(t[None, :] - shift[:, None], 0, length - 1)
    X = scale[:, None] * np.stack(templates)[y[:, None], idx] + 0.3 * rng.normal(size=(n, length))
    X = X.astype(np.float32)
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


def load(args):
    if args.npz:
        d = np.load(args.npz)
        return d["Xtr"], d["ytr"], d["Xte"], d["yte"], f"OSULeaf ({args.npz})"
    if not args.synthetic:
        try:
            import warnings

            import aeon.datasets as ad

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                Xtr, ytr = ad.load_osuleaf(split="train")
                Xte, yte = ad.load_osuleaf(split="test")
            labels, y = np.unique(np.concatenate([ytr, yte]), return_inverse=True)
            return (
                Xtr[:, 0].astype(np.float32),
                y[: len(ytr)],
                Xte[:, 0].astype(np.float32),
                y[len(ytr) :],
                "OSULeaf (aeon)",
            )
        except ImportError:
            pass
    return (*synthetic(), "OSULeaf-shaped synthetic series")


def child(args):
    d = np.load(args.data)
    Xtr, ytr, Xte, yte = d["Xtr"], d["ytr"], d["Xte"], d["yte"]
    common = {"n_estimators": args.trees, "random_state": args.seed, "n_jobs": 1}
    if args.child == "treeple_morf":
        from treeple import PatchObliqueRandomForestClassifier

        est = PatchObliqueRandomForestClassifier(data_dims=(Xtr.shape[1],), **common)
    else:
        import obliqueforest as of

        extra = {"pooled": 0.0, "differences": 0.0} if args.child == "of_morf_paper" else {}
        est = of.MORFClassifier(data_shape=(Xtr.shape[1],), **extra, **common)
    t0 = time.process_time()
    est.fit(Xtr, ytr)
    cpu = time.process_time() - t0
    error = float((est.predict(Xte) != yte).mean())
    print(json.dumps({"cpu_s": cpu, "error": error}))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--npz")
    ap.add_argument("--synthetic", action="store_true")
    ap.add_argument("--trees", type=int, default=100)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    ap.add_argument("--python-treeple", default=sys.executable)
    ap.add_argument("--out", help="write the markdown table here")
    ap.add_argument("--child", choices=list(MODELS), help=argparse.SUPPRESS)
    ap.add_argument("--data", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args)
    Xtr, ytr, Xte, yte, what = load(args)
    runs = {m: [] for m in args.models}
    with tempfile.TemporaryDirectory() as tmp:
        data = f"{tmp}/data.npz"
        np.savez(data, Xtr=Xtr, ytr=ytr, Xte=Xte, yte=yte)
        for _ in range(args.runs):
            for model in args.models:
                python = args.python_treeple if model.startswith("treeple") else sys.executable
                cmd = [python, __file__, "--child", model, "--data", data]
                cmd += ["--trees", str(args.trees), "--seed", str(args.seed)]
                out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
                runs[model].append(json.loads(out.strip().splitlines()[-1]))
                print(model, runs[model][-1], flush=True)
    lines = [
        f"Long series: {what}, {Xtr.shape[0]} train / {Xte.shape[0]} test series of "
        f"{Xtr.shape[1]} steps; {args.trees} trees, n_jobs=1, seed {args.seed}; fit CPU "
        f"seconds (`time.process_time` in a child process), medians of {args.runs} "
        "alternating runs; `python benches/long_series.py`.",
        "",
        "| model | fit CPU s | test error |",
        "| --- | --- | --- |",
    ]
    for model, rs in runs.items():
        cpu = float(np.median([r["cpu_s"] for r in rs]))
        lines.append(f"| {MODELS[model]} | {cpu:.2f} | {rs[0]['error']:.4f} |")
    table = "\n".join(lines) + "\n"
    print(table)
    if args.out:
        with open(args.out, "w") as f:
            f.write(table)


if __name__ == "__main__":
    main()
