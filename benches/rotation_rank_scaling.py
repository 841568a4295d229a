"""A rotation ensemble with ``scaling="rank"`` on 200,000 x 20 ``make_classification``: fit
(50 trees, 10 rotations, micro-forests of 2, ``n_jobs=2``), predicted probabilities and
the scaling alone on 100,000 shifted rows, best of 3, with hashes of the probabilities
and the scaled values (equal across builds that scale the same).

    python benches/rotation_rank_scaling.py --label after
    PYTHONPATH=<other build>/python python benches/rotation_rank_scaling.py --label before
"""

from __future__ import annotations

import argparse
import hashlib
import time

from obliqueforest.rotation import RotationEnsembleClassifier
from sklearn.datasets import make_classification


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="this build")
    parser.add_argument("--scaling", default="rank")
    args = parser.parse_args(argv)
    X, y = make_classification(n_samples=200_000, n_features=20, random_state=0)
    X_new = X[:100_000] + 0.01
    fits, predictions, scalings = [], [], []
    for _ in range(3):
        est = RotationEnsembleClassifier(
            n_estimators=50,
            n_rotations=10,
            micro_forest_size=2,
            n_jobs=2,
            random_state=0,
            scaling=args.scaling,
        )
        t = time.perf_counter()
        est.fit(X, y)
        fits.append(time.perf_counter() - t)
        t = time.perf_counter()
        proba = est.predict_proba(X_new)
        predictions.append(time.perf_counter() - t)
        t = time.perf_counter()
        scaled = est._scale(X_new)
        scalings.append(time.perf_counter() - t)

    def digest(a):
        return hashlib.sha1(a.tobytes()).hexdigest()[:10]

    print(
        f"{args.label}: fit {min(fits):.3f} s, predict_proba {min(predictions):.3f} s, "
        f"scaling {min(scalings):.3f} s; proba {digest(proba)}, scaled {digest(scaled)}"
    )


if __name__ == "__main__":
    main()
