"""Peak memory and wall time of a fit with out-of-bag estimates, for A/B runs of two builds.

    PYTHONPATH=<build A>/python python benches/oob_memory.py
    PYTHONPATH=<build B>/python python benches/oob_memory.py

A fit with ``oob_score=True`` keeps every tree's out-of-bag rows until its last tree is grown
and then sums their predictions; on many rows and shallow trees those records, not the
trees, are what the fit holds. This fits ``RandomForestClassifier(n_estimators=100,
max_depth=4, oob_score=True, n_jobs=2)`` on 2,000,000 x 16 float32 rows (seeded Gaussian,
Fortran order, y from two features) and prints the growth of the process's peak resident
memory during the fit (``ru_maxrss``; X is allocated before), the fit's wall seconds and its
``oob_score_`` (equal across builds that grow the same forest).
"""

import resource
import time
import warnings
from pathlib import Path

import numpy as np

import obliqueforest
from obliqueforest import RandomForestClassifier


def main():
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(0)
    n, p = 2_000_000, 16
    X = np.asfortranarray(rng.standard_normal((n, p), dtype=np.float32))
    y = (X[:, 0] + X[:, 1] > 0).astype(np.int64)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    est = RandomForestClassifier(
        n_estimators=100, max_depth=4, n_jobs=2, random_state=0, oob_score=True
    ).fit(X, y)
    wall = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        f"{Path(obliqueforest.__file__).parent}: peak RSS growth during the fit "
        f"{(peak - base) / 1024:.0f} MiB, wall {wall:.2f} s, oob_score_ {est.oob_score_:.6f}"
    )


if __name__ == "__main__":
    main()
