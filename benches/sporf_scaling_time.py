"""Fit time of SPORF with and without its robust weight scaling, side by side.

The two settings alternate in one process (3 rounds, the fastest of each kept); 50 trees,
one thread, on 10,000 rows of the SPORF paper's sparse parity (p = 20) and trunk (p = 10).

Run::

    python benches/sporf_scaling_time.py
"""

from __future__ import annotations

import time

from obliqueforest import SPORFClassifier, datasets


def main():
    for make in (datasets.make_sparse_parity, datasets.make_trunk):
        X, y = make(10_000, random_state=0)
        best = {None: float("inf"), "robust": float("inf")}
        for _ in range(3):
            for scaling in best:
                est = SPORFClassifier(50, scaling=scaling, random_state=0, n_jobs=1)
                t0 = time.perf_counter()
                est.fit(X, y)
                best[scaling] = min(best[scaling], time.perf_counter() - t0)
        print(
            f"{make.__name__:<20} {X.shape}: unscaled {best[None]:.3f} s, robust "
            f"{best['robust']:.3f} s, ratio {best['robust'] / best[None]:.3f}"
        )


if __name__ == "__main__":
    main()
