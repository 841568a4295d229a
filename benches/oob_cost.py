"""CPU cost of out-of-bag estimates: a forest's fit with and without ``oob_score``.

    PYTHONPATH=<build>/python python benches/oob_cost.py --n 200000 --trees 10 --repeat 5

``RandomForestClassifier(n_estimators=trees, min_samples_leaf=5, n_jobs=1)`` on ``n`` rows x
32 float32 of ``benches/scale.py``'s generator, fitted ``repeat`` times each way
(alternating); prints the package's location, the smallest fit CPU seconds each way, their
difference (what the out-of-bag walks and sums cost) and ``oob_score_``. Alternate two
builds and repeat: single runs on a shared machine vary by about 10%.
"""

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale import make_data  # noqa: E402  (benches/scale.py)

import obliqueforest as of  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--trees", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--n-jobs", type=int, default=1)
    args = ap.parse_args()
    X, y = make_data(args.n, seed=1)
    cpu = {False: [], True: []}
    score = None
    for _ in range(args.repeat):
        for oob in (False, True):
            est = of.RandomForestClassifier(
                n_estimators=args.trees,
                min_samples_leaf=5,
                oob_score=oob,
                n_jobs=args.n_jobs,
                random_state=0,
            )
            start = time.process_time()
            est.fit(X, y)
            cpu[oob].append(time.process_time() - start)
            if oob:
                score = est.oob_score_
    without, with_oob = min(cpu[False]), min(cpu[True])
    print(
        f"{Path(of.__file__).parent}: n={args.n} trees={args.trees} fit CPU s without oob "
        f"{without:.3f}, with {with_oob:.3f}, oob costs {with_oob - without:.3f}; "
        f"oob_score_ {score:.6f}"
    )


if __name__ == "__main__":
    main()
