"""obliqueforest.dask on a distributed.LocalCluster (2 worker processes x 1 thread)
against the local fit on 2 threads.

    nice -n 19 python benches/dask_bench.py overhead [--repeats 2]
    nice -n 19 python benches/dask_bench.py scale [--n-samples 1000000]

``overhead``: a random forest of 100 trees on 100,000 x 20 rows of the Trunk simulation
(Tomita et al. 2020, Sect. 4.2), fitted locally with n_jobs=2 and in replicate mode on
the cluster, alternately, ``--repeats`` times; prints each pair's wall times and their
ratio (the target is <= 1.3), the CPU seconds each used (the client's and the workers'
for Dask; a measure of the work done that the machine's load does not change much), and
checks the two models are byte-identical.

``scale``: 1,000,000 x 20 Trunk rows generated on the workers in 4 partitions, 20 trees:
the local 2-thread fit on all rows (in a child process, for its own peak RSS), replicate
mode and partitions mode (each on a fresh cluster, for the workers' own peak RSS); wall
time, peak resident memory per worker, and accuracy on 200,000 held-out rows (the Bayes
error of Trunk at p = 20 is Phi(-sqrt(H_20)) = 2.9%).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

N_FEATURES = 20
N_PARTITIONS = 4


def peak_rss_mib():
    """Peak resident set size of the calling process (Linux: KiB in ru_maxrss)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def trunk_block(n, seed):
    from obliqueforest.datasets import make_trunk

    X, y = make_trunk(n, N_FEATURES, random_state=seed)
    return X.astype(np.float32), y


def cluster():
    from distributed import Client, LocalCluster

    c = LocalCluster(processes=True, n_workers=2, threads_per_worker=1, dashboard_address=None)
    return c, Client(c)


def warm_up(client):
    """A first tiny fit: the workers import obliqueforest and scikit-learn (seconds on
    a loaded machine), which is start-up, not the cost of a fit."""
    import obliqueforest as of
    from obliqueforest import dask as odask

    X, y = trunk_block(500, 1)
    t = time.perf_counter()
    odask.fit(of.RandomForestClassifier(4), X, y, client=client, mode="replicate")
    return time.perf_counter() - t


def overhead(repeats, n_samples, n_trees):
    import obliqueforest as of
    from obliqueforest import dask as odask

    X, y = trunk_block(n_samples, 0)
    c, client = cluster()
    rows = []
    try:
        print(f"warm-up fit (worker imports): {warm_up(client):.2f} s", flush=True)
        for r in range(repeats):
            est = of.RandomForestClassifier(n_trees, random_state=r, n_jobs=2)
            t, cpu = time.perf_counter(), time.process_time()
            local = est.fit(X, y)
            t_local, cpu_local = time.perf_counter() - t, time.process_time() - cpu
            est = of.RandomForestClassifier(n_trees, random_state=r, n_jobs=2)
            workers = _cpu_seconds(client)
            t, cpu = time.perf_counter(), time.process_time()
            dist = odask.fit(est, X, y, client=client, mode="replicate")
            t_dask, cpu_client = time.perf_counter() - t, time.process_time() - cpu
            cpu_workers = _cpu_seconds(client) - workers
            same = dist._forest.to_bytes() == local._forest.to_bytes()
            cpu_dask = cpu_client + cpu_workers
            rows.append((t_local, t_dask, same))
            print(
                f"repeat {r}: local 2 threads {t_local:.2f} s, dask replicate 2x1 "
                f"{t_dask:.2f} s, wall ratio {t_dask / t_local:.2f}; CPU seconds local "
                f"{cpu_local:.1f}, dask {cpu_dask:.1f} (client {cpu_client:.1f}, workers "
                f"{cpu_workers:.1f}), CPU ratio {cpu_dask / cpu_local:.2f}; "
                f"byte-identical {same}",
                flush=True,
            )
    finally:
        client.close()
        c.close()
    return rows


def _cpu_seconds(client):
    """CPU time (user + system, all threads) the worker processes have used so far."""
    return sum(client.run(time.process_time).values())


def _generate(client, n_samples):
    """Trunk rows generated on the workers: (X, y) dask arrays of N_PARTITIONS blocks."""
    import dask
    import dask.array as da

    n = n_samples // N_PARTITIONS
    blocks = [dask.delayed(trunk_block, nout=2)(n, 100 + i) for i in range(N_PARTITIONS)]
    X = da.concatenate([da.from_delayed(b[0], (n, N_FEATURES), np.float32) for b in blocks])
    y = da.concatenate([da.from_delayed(b[1], (n,), np.int64) for b in blocks])
    return X, y


def _worker_peaks(client):
    return sorted(client.run(peak_rss_mib).values())


def dask_phase(mode, n_samples, n_trees, X_test, y_test):
    import obliqueforest as of
    from obliqueforest import dask as odask

    c, client = cluster()
    try:
        X, y = _generate(client, n_samples)
        X, y = client.persist([X, y])
        warm_up(client)
        base = _worker_peaks(client)
        est = of.RandomForestClassifier(n_trees, random_state=0)
        t = time.perf_counter()
        odask.fit(est, X, y, client=client, mode=mode)
        elapsed = time.perf_counter() - t
        peaks = _worker_peaks(client)
        acc = float((est.predict(X_test) == y_test).mean())
    finally:
        client.close()
        c.close()
    return {
        "mode": mode,
        "fit_s": elapsed,
        "worker_peak_rss_mib": peaks,
        "worker_rss_after_data_mib": base,
        "accuracy": acc,
    }


def local_phase(n_samples, n_trees):
    """Child process: the same rows (generated the same way), one 2-thread fit."""
    import obliqueforest as of

    n = n_samples // N_PARTITIONS
    parts = [trunk_block(n, 100 + i) for i in range(N_PARTITIONS)]
    X = np.concatenate([p[0] for p in parts])
    y = np.concatenate([p[1] for p in parts])
    del parts
    X_test, y_test = trunk_block(200_000, 7)
    base = peak_rss_mib()
    est = of.RandomForestClassifier(n_trees, random_state=0, n_jobs=2)
    t = time.perf_counter()
    est.fit(X, y)
    elapsed = time.perf_counter() - t
    return {
        "mode": "local n_jobs=2",
        "fit_s": elapsed,
        "peak_rss_mib": peak_rss_mib(),
        "rss_before_fit_mib": base,
        "accuracy": float((est.predict(X_test) == y_test).mean()),
    }


def scale(n_samples, n_trees):
    X_test, y_test = trunk_block(200_000, 7)
    out = subprocess.run(
        [
            sys.executable,
            __file__,
            "_local",
            "--n-samples",
            str(n_samples),
            "--n-trees",
            str(n_trees),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    results = [json.loads(out.stdout.strip().splitlines()[-1])]
    print(results[-1], flush=True)
    for mode in ("replicate", "partitions"):
        results.append(dask_phase(mode, n_samples, n_trees, X_test, y_test))
        print(results[-1], flush=True)
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("what", choices=["overhead", "scale", "_local"])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--n-samples", type=int, default=None)
    ap.add_argument("--n-trees", type=int, default=None)
    args = ap.parse_args()
    if args.what == "_local":
        print(json.dumps(local_phase(args.n_samples, args.n_trees)))
        return
    print(f"$ nice -n 19 python benches/dask_bench.py {' '.join(sys.argv[1:])}")
    print(f"load before: {os.getloadavg()}", flush=True)
    if args.what == "overhead":
        rows = overhead(args.repeats, args.n_samples or 100_000, args.n_trees or 100)
        ratios = [d / loc for loc, d, _ in rows]
        print(f"ratios dask/local: {[round(r, 2) for r in ratios]}")
    else:
        scale(args.n_samples or 1_000_000, args.n_trees or 20)
    print(f"load after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
