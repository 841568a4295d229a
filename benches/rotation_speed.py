"""Fit-time cost of a regularized rotation ensemble against a plain random forest.

Acceptance target: fitting M=1000 trees over R=50 rotations (U=10) costs at
most 1.3x the fit of this library's random forest with 1000 trees on the same
data. Both use the same tree settings (gini, max_features="sqrt", fully grown,
bootstrap) and the same ``n_jobs``; times are the median of ``--repeat`` fits,
measured in the same run, both as wall-clock time and as process CPU time
(all threads; it counts the work done and is robust to other load on the
machine, which wall-clock time is not). Data come from seeded generators:
Breiman's waveform-21 (5000 rows) and scikit-learn's ``make_classification``
(5000 x 20).

A rotation ensemble grows R*U micro-forest trees plus the trees its favoured
rotations need beyond U, so "trees grown" can exceed M (Sect. 7 of the paper);
the column shows it next to the time ratio.

Run::

    python benches/rotation_speed.py --n-jobs 2 --repeat 2
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np
from obliqueforest import _core
from obliqueforest.rotation import WEIGHTINGS, RotationEnsembleClassifier
from sklearn.datasets import make_classification


def datasets():
    from obliqueforest.datasets import make_waveform

    X_w, y_w = make_waveform(n_samples=5000, random_state=0)
    X_c, y_c = make_classification(
        n_samples=5000, n_features=20, n_informative=10, n_redundant=5, random_state=0
    )
    return {"waveform n=5000,p=21": (X_w, y_w), "make_classification n=5000,p=20": (X_c, y_c)}


def random_forest_fit(n_estimators, n_jobs):
    """The library's RandomForestClassifier, or the core forest it wraps if not importable."""
    try:
        from obliqueforest import RandomForestClassifier

        def fit(X, y):
            RandomForestClassifier(n_estimators=n_estimators, n_jobs=n_jobs, random_state=0).fit(
                X, y
            )

        return "obliqueforest.RandomForestClassifier", fit
    except ImportError:

        def fit(X, y):
            codes = np.unique(y, return_inverse=True)[1]
            # the core's defaults otherwise: gini, axis-aligned, fully grown, bootstrap
            params = {
                "task": "classification",
                "n_classes": int(codes.max()) + 1,
                "max_features": "sqrt",
                "n_estimators": n_estimators,
                "seed": 0,
                "n_jobs": n_jobs,
            }
            _core.Forest.fit(
                np.ascontiguousarray(X, dtype=np.float32), codes.astype(np.float64), None, params
            )

        return "obliqueforest._core.Forest (axis)", fit


def timed(fn, repeat):
    """Median wall-clock and process CPU seconds (all threads) of ``repeat`` calls.

    CPU time measures the work done and is much less sensitive than wall time
    to other processes competing for the cores.
    """
    walls, cpus = [], []
    result = None
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        result = fn()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return (statistics.median(walls), statistics.median(cpus)), result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n-estimators", type=int, default=1000)
    parser.add_argument("--n-rotations", type=int, default=50)
    parser.add_argument("--micro-forest-size", type=int, default=10)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--weightings", default=",".join(WEIGHTINGS))
    args = parser.parse_args(argv)
    M, R, U = args.n_estimators, args.n_rotations, args.micro_forest_size

    baseline_name, rf_fit = random_forest_fit(M, args.n_jobs)
    print(
        f"fit_rotation_ensemble: M={M}, R={R}, U={U}, n_jobs={args.n_jobs}, "
        f"median of {args.repeat}; baseline {baseline_name} with {M} trees"
    )
    print(f"command: python {' '.join(sys.argv)}\n")
    header = (
        f"{'data':<34}{'model':<8}{'wall s':>8}{'ratio':>7}{'cpu s':>8}{'ratio':>7}"
        f"{'grown':>7}{'h':>7}{'#rot':>6}"
    )
    print(header)
    for data_name, (X, y) in datasets().items():
        # The machine may be shared: RF is re-timed between the ensembles and the
        # baseline is the median of all its runs on this data set.
        rf_runs = [timed(lambda X=X, y=y: rf_fit(X, y), args.repeat)[0]]
        rows = []
        for weighting in args.weightings.split(","):

            def fit(weighting=weighting, X=X, y=y):
                return RotationEnsembleClassifier(
                    n_estimators=M,
                    n_rotations=R,
                    micro_forest_size=U,
                    weighting=weighting,
                    n_jobs=args.n_jobs,
                    random_state=0,
                ).fit(X, y)

            (wall, cpu), est = timed(fit, args.repeat)
            rows.append((weighting, wall, cpu, est))
            rf_runs.append(timed(lambda X=X, y=y: rf_fit(X, y), args.repeat)[0])
        base_wall = statistics.median(w for w, _ in rf_runs)
        base_cpu = statistics.median(c for _, c in rf_runs)
        print(
            f"{data_name:<34}{'RF':<8}{base_wall:>8.2f}{1.0:>7.2f}{base_cpu:>8.2f}{1.0:>7.2f}"
            f"{M:>7}{'-':>7}{'-':>6}"
        )
        for weighting, wall, cpu, est in rows:
            counts = est.n_trees_per_rotation_
            grown = R * U + int(np.maximum(counts - U, 0).sum())
            h = "-" if est.h_ is None else f"{est.h_:.2f}"
            print(
                f"{'':<34}{weighting:<8}{wall:>8.2f}{wall / base_wall:>7.2f}{cpu:>8.2f}"
                f"{cpu / base_cpu:>7.2f}{grown:>7}{h:>7}{np.count_nonzero(counts):>6}",
                flush=True,
            )
        print(
            f"{'':<34}RF wall runs: {', '.join(f'{w:.2f}' for w, _ in rf_runs)}; "
            f"cpu runs: {', '.join(f'{c:.2f}' for _, c in rf_runs)}"
        )


if __name__ == "__main__":
    main()
