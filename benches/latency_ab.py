"""Fit CPU time, single-row ``predict_proba`` latency and batch predict CPU time of RF and
SPORF, for comparing two builds of the library A/B (issue 27: the restructuring had to keep
them within noise).

One process per call; ``PYTHONPATH`` chooses the build. Alternate the builds a few times::

    for i in 1 2 3; do
        PYTHONPATH=/path/to/build-a/python python benches/latency_ab.py
        PYTHONPATH=/path/to/build-b/python python benches/latency_ab.py
    done
"""

from __future__ import annotations

import time

import numpy as np

import obliqueforest as of
from obliqueforest.datasets import make_sparse_parity


def main():
    X, y = make_sparse_parity(10000, n_features=20, n_informative=3, random_state=1)
    X = X.astype(np.float32)
    models = {
        "rf": of.RandomForestClassifier(n_estimators=100, random_state=0, n_jobs=1),
        "sporf": of.SPORFClassifier(
            n_estimators=100,
            random_state=0,
            n_jobs=1,
            max_features=1.0,
            feature_combinations=3.0,
            scaling=None,
            candidate_samples=None,
        ),
    }
    out = []
    for name, est in models.items():
        t = time.process_time()
        est.fit(X, y)
        fit = time.process_time() - t
        row = X[:1]
        for _ in range(50):  # warm up
            est.predict_proba(row)
        lat = []
        for _ in range(400):
            t = time.perf_counter()
            est.predict_proba(row)
            lat.append(time.perf_counter() - t)
        t = time.process_time()
        est.predict_proba(X)
        batch = time.process_time() - t
        out.append(
            f"{name}: fit_cpu={fit:.3f}s row_ms={np.median(lat) * 1e3:.4f} batch_cpu={batch:.3f}s"
        )
    print(of.__file__, " ".join(out))


if __name__ == "__main__":
    main()
