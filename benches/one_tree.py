"""CPU seconds of one tree on scale.py's data, for A/B comparisons of two builds.

    PYTHONPATH=<build A>/python python benches/one_tree.py --model sporf --n 1000000
    PYTHONPATH=<build B>/python python benches/one_tree.py --model sporf --n 1000000

One tree, one thread, ``min_samples_leaf=5``, seed 0, on ``n`` rows x 32 float32 (Fortran
order) of ``benches/scale.py``'s generator; prints the package's location (so a stale
installed copy shows) and the fit's CPU seconds. Alternate the builds and repeat: single
runs on a shared machine vary by about 10%.
"""

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale import make_data  # noqa: E402  (benches/scale.py)

import obliqueforest as of  # noqa: E402

MODELS = {
    "rf": lambda: of.RandomForestClassifier(n_estimators=1),
    "rf_hist": lambda: of.RandomForestClassifier(n_estimators=1, splitter="hist"),
    "sporf": lambda: of.SPORFClassifier(n_estimators=1),
    "sporf_hist": lambda: of.SPORFClassifier(n_estimators=1, splitter="hist"),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", choices=sorted(MODELS), default="rf")
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument(
        "--max-depth",
        type=int,
        default=None,
        help="cap the tree (1: little but the fit's fixed costs, e.g. SPORF's robust scales)",
    )
    args = ap.parse_args()
    X, y = make_data(args.n, seed=1)
    est = MODELS[args.model]().set_params(
        n_jobs=1, min_samples_leaf=5, max_depth=args.max_depth, random_state=0
    )
    cpu = time.process_time()
    est.fit(X, y)
    print(
        f"{args.model} n={args.n} max_depth={args.max_depth} fit CPU s {time.process_time() - cpu:.2f} "
        f"({Path(of.__file__).parent})"
    )


if __name__ == "__main__":
    main()
