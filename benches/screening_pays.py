"""Does SPORF's candidate screening pay at 20,000 rows? (issue 48 item 4)

Sparse parity (p=20), orthant (p=6) and trunk (p=10) from ``obliqueforest.datasets``, at
``--n-train`` training rows (20,000) and 5,000 test rows, ``--seeds`` seeds (3; data and
forest), 100 trees, ``n_jobs=--n-jobs``: SPORF at its defaults against the same with
``candidate_samples=None`` (every candidate scored on every row). Per (simulation, model):
the mean test error and the mean fit CPU seconds (``time.process_time``, all threads: the
work, which other load on a shared machine changes less than wall time), the two models
alternating within each seed.

    python benches/screening_pays.py --out benches/results/screening_pays.md
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from obliqueforest import SPORFClassifier, datasets

SIMULATIONS = {
    "sparse_parity": datasets.make_sparse_parity,
    "orthant": datasets.make_orthant,
    "trunk": datasets.make_trunk,
}
MODELS = {
    "SPORF defaults": {},
    "candidate_samples=None": {"candidate_samples": None},
}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-train", type=int, default=20_000)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    import obliqueforest

    lines = [
        f"python benches/screening_pays.py {' '.join(sys.argv[1:])}".rstrip(),
        f"(obliqueforest from {Path(obliqueforest.__file__).parent})",
        "",
        f"n_train={args.n_train:,}, 5,000 test rows, 100 trees, n_jobs={args.n_jobs}, "
        f"mean over {args.seeds} seeds: test error / fit CPU s",
        "",
        "| simulation | " + " | ".join(MODELS) + " |",
        "|---|" + "---|" * len(MODELS),
    ]
    print("\n".join(lines[:2]), flush=True)
    for sim, make in SIMULATIONS.items():
        err = {m: [] for m in MODELS}
        cpu = {m: [] for m in MODELS}
        for seed in range(args.seeds):
            X, y = make(args.n_train + 5000, random_state=1000 + seed)
            X = X.astype(np.float32)
            tr, te = slice(0, args.n_train), slice(args.n_train, None)
            for model, params in MODELS.items():
                est = SPORFClassifier(random_state=seed, n_jobs=args.n_jobs, **params)
                t0 = time.process_time()
                est.fit(X[tr], y[tr])
                cpu[model].append(time.process_time() - t0)
                err[model].append(float(np.mean(est.predict(X[te]) != y[te])))
                print(
                    f"{sim:<14} seed {seed} {model:<24} {err[model][-1]:.4f} "
                    f"{cpu[model][-1]:.2f} s",
                    flush=True,
                )
        cells = [f"{np.mean(err[m]):.4f} / {np.mean(cpu[m]):.2f}" for m in MODELS]
        lines.append(f"| {sim} | " + " | ".join(cells) + " |")
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
