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

``disk``: X on disk, never gathered (issue 28 item 6): ``--n-samples`` (10^7 by default)
x 20 Trunk rows written as 4 ``.npy`` partition files (float32) under ``--dir``, each read
by the workers as a memory map (``da.from_delayed(np.load(path, mmap_mode="r"))``), and
the same rows as one Fortran-order ``.npy`` for the local fit, which trains on the memory
map without a copy. Partitions mode on 2 worker processes x 1 thread against that local
2-thread fit, ``--n-trees`` trees (4 by default): wall time, each process's peak RSS and
peak anonymous memory (``RssAnon``, sampled every 10 ms: what copies and trees take; the
mapped file's pages are page cache the kernel can drop), accuracy on 200,000 held-out
rows.

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

# benches/ holds a sparse.py: off the import path, or dask.array's `import sparse` (the
# pydata package, optional) finds it instead
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(__file__)]

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


class AnonPeak:
    """Samples this process's anonymous resident memory (``RssAnon``, MiB) every 10 ms in
    a thread; ``stop`` returns the value at ``start`` and the largest seen since. The state lives on
    ``sys`` so that functions shipped to a Dask worker by value find it there."""

    @staticmethod
    def rss_anon():
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1]) / 1024
        return float("nan")

    @staticmethod
    def start():
        import threading

        base = AnonPeak.rss_anon()
        state = {"base": base, "peak": base, "stop": threading.Event()}
        sys.obliqueforest_anon_peak = state

        def watch():
            while not state["stop"].wait(0.01):
                state["peak"] = max(state["peak"], AnonPeak.rss_anon())

        threading.Thread(target=watch, daemon=True).start()

    @staticmethod
    def stop():
        state = sys.obliqueforest_anon_peak
        state["stop"].set()
        return state["base"], max(state["peak"], AnonPeak.rss_anon())


def write_disk_data(folder, n_samples):
    """The partition files and the whole-X Fortran-order file (skipped when present)."""
    folder.mkdir(parents=True, exist_ok=True)
    n = n_samples // N_PARTITIONS
    full = folder / f"X_{n_samples}_F.npy"
    paths = [
        (folder / f"X_{n_samples}_{i}.npy", folder / f"y_{n_samples}_{i}.npy")
        for i in range(N_PARTITIONS)
    ]
    if full.exists() and all(x.exists() and y.exists() for x, y in paths):
        return full, paths
    whole = np.lib.format.open_memmap(
        full,
        mode="w+",
        dtype=np.float32,
        shape=(n * N_PARTITIONS, N_FEATURES),
        fortran_order=True,
    )
    for i, (xp, yp) in enumerate(paths):
        X, y = trunk_block(n, 100 + i)
        np.save(xp, X)
        np.save(yp, y)
        whole[i * n : (i + 1) * n] = X
    whole.flush()
    del whole
    return full, paths


def disk_local(full, paths, n_trees):
    """Child process: the local 2-thread fit on the whole-X memory map."""
    import obliqueforest as of

    X = np.load(full, mmap_mode="r")
    y = np.concatenate([np.load(yp) for _, yp in paths])
    X_test, y_test = trunk_block(200_000, 7)
    est = of.RandomForestClassifier(n_trees, random_state=0, n_jobs=2)
    AnonPeak.start()
    t = time.perf_counter()
    est.fit(X, y)
    elapsed = time.perf_counter() - t
    anon = AnonPeak.stop()
    return {
        "mode": "local n_jobs=2 on the memory map",
        "fit_s": elapsed,
        "peak_rss_mib": peak_rss_mib(),
        "anon_before_fit_mib": anon[0],
        "peak_anon_mib": anon[1],
        "x_mib": X.nbytes / 2**20,
        "accuracy": float((est.predict(X_test) == y_test).mean()),
    }


def disk(folder, n_samples, n_trees):
    import dask
    import dask.array as da

    import obliqueforest as of
    from obliqueforest import dask as odask

    full, paths = write_disk_data(folder, n_samples)
    out = subprocess.run(
        [
            sys.executable,
            __file__,
            "_disk_local",
            "--n-samples",
            str(n_samples),
            "--n-trees",
            str(n_trees),
            "--dir",
            str(folder),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    print(out.stdout.strip().splitlines()[-1], flush=True)
    n = n_samples // N_PARTITIONS
    X = da.concatenate(
        [
            da.from_delayed(
                dask.delayed(np.load)(str(xp), mmap_mode="r"), (n, N_FEATURES), np.float32
            )
            for xp, _ in paths
        ]
    )
    y = da.concatenate(
        [
            da.from_delayed(dask.delayed(np.load)(str(yp), mmap_mode="r"), (n,), np.int64)
            for _, yp in paths
        ]
    )
    X_test, y_test = trunk_block(200_000, 7)
    c, client = cluster()
    try:
        warm_up(client)
        client.run(AnonPeak.start)
        est = of.RandomForestClassifier(n_trees, random_state=0)
        t = time.perf_counter()
        odask.fit(est, X, y, client=client, mode="partitions")
        elapsed = time.perf_counter() - t
        anon = sorted(client.run(AnonPeak.stop).values())
        peaks = _worker_peaks(client)
        acc = float((est.predict(X_test) == y_test).mean())
    finally:
        client.close()
        c.close()
    print(
        json.dumps(
            {
                "mode": "partitions, 2 workers x 1 thread, X memory-mapped on disk",
                "fit_s": elapsed,
                "worker_peak_rss_mib": peaks,
                "worker_anon_before_fit_mib": [a[0] for a in anon],
                "worker_peak_anon_mib": [a[1] for a in anon],
                "partition_mib_per_worker": n * 2 * N_FEATURES * 4 / 2**20,
                "model_mib": len(est._forest.to_bytes()) / 2**20,
                "accuracy": acc,
            }
        ),
        flush=True,
    )


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("what", choices=["overhead", "scale", "disk", "_local", "_disk_local"])
    ap.add_argument("--dir", default="/tmp/obliqueforest_dask_disk")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--n-samples", type=int, default=None)
    ap.add_argument("--n-trees", type=int, default=None)
    args = ap.parse_args()
    if args.what == "_local":
        print(json.dumps(local_phase(args.n_samples, args.n_trees)))
        return
    if args.what == "_disk_local":
        from pathlib import Path

        full, paths = write_disk_data(Path(args.dir), args.n_samples)
        print(json.dumps(disk_local(full, paths, args.n_trees)))
        return
    print(f"$ nice -n 19 python benches/dask_bench.py {' '.join(sys.argv[1:])}")
    print(f"load before: {os.getloadavg()}", flush=True)
    if args.what == "overhead":
        rows = overhead(args.repeats, args.n_samples or 100_000, args.n_trees or 100)
        ratios = [d / loc for loc, d, _ in rows]
        print(f"ratios dask/local: {[round(r, 2) for r in ratios]}")
    elif args.what == "disk":
        from pathlib import Path

        disk(Path(args.dir), args.n_samples or 10_000_000, args.n_trees or 4)
    else:
        scale(args.n_samples or 1_000_000, args.n_trees or 20)
    print(f"load after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
