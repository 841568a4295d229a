"""Large X used where it lies (issue 28 item 4): a float32 Fortran-order array, memory-mapped
from disk, is fitted and predicted without a copy of it, and predictions on it equal those
on a row-major copy. Each scenario runs in a fresh interpreter whose anonymous resident
memory (``RssAnon``: what copies take, not the mapped file's pages) is sampled while the
fit or predict runs; a copy of X would hold X's size for the whole call."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/status")

# 64 MiB of float32, wide enough that the per-row buffers of a fit (rows, projected values,
# sorted pairs, labels) stay well under half of it
N_ROWS, N_FEATURES = 250_000, 64


def run_child(code: str, tmp_path) -> dict:
    """Runs ``code`` in a fresh interpreter with a memory-mapped Fortran-order X at ``X``
    (and its labels ``y``) and the helper ``peak_anon(f)`` (f's result and the largest
    RssAnon growth seen while it ran, in MiB); returns what the child printed as JSON."""
    prelude = textwrap.dedent(
        f"""
        import json, threading, time
        import numpy as np
        import obliqueforest as of

        def rss_anon():
            with open("/proc/self/status") as f:
                for line in f:
                    if line.startswith("RssAnon:"):
                        return int(line.split()[1]) / 1024

        def peak_anon(f):
            base, peak, done, out = rss_anon(), [0.0], threading.Event(), []
            def watch():
                while not done.wait(0.005):
                    peak[0] = max(peak[0], rss_anon() - base)
            t = threading.Thread(target=watch)
            t.start()
            try:
                out.append(f())
            finally:
                done.set()
                t.join()
            return out[0], max(peak[0], rss_anon() - base)

        n, p = {N_ROWS}, {N_FEATURES}
        path = {str(tmp_path / "X.f32")!r}
        X = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(n, p),
                                      fortran_order=True)
        rng = np.random.default_rng(0)
        for j in range(p):
            X[:, j] = rng.standard_normal(n, dtype=np.float32)
        y = (X[:, 0] + X[:, 1] * X[:, 2] > 0).astype(np.int64)
        X.flush()
        del X
        X = np.load(path, mmap_mode="r")
        assert X.flags.f_contiguous and isinstance(X, np.memmap)
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@linux
@pytest.mark.parametrize("splitter", ["best", "hist"])
def test_fortran_memmap_is_fitted_without_a_copy(tmp_path, splitter):
    out = run_child(
        f"""
        est = of.RandomForestClassifier(2, max_depth=3, splitter={splitter!r}, n_jobs=2,
                                        random_state=0)
        _, grew = peak_anon(lambda: est.fit(X, y))
        ref = of.RandomForestClassifier(2, max_depth=3, splitter={splitter!r},
                                        random_state=0).fit(np.ascontiguousarray(X), y)
        same = ref._forest.to_bytes() == est._forest.to_bytes()
        print(json.dumps({{"grew": grew, "x_mib": X.nbytes / 2**20, "same": same}}))
        """,
        tmp_path,
    )
    # a copy of X would add x_mib (64 MiB) for the whole fit; the trees' own buffers at
    # this depth are a few MiB per thread
    assert out["grew"] < out["x_mib"] / 2, out
    assert out["same"]


@linux
def test_fortran_memmap_is_predicted_in_blocks_without_a_copy(tmp_path):
    out = run_child(
        """
        est = of.RandomForestClassifier(3, max_depth=6, random_state=0).fit(X[:20000], y[:20000])
        proba, grew = peak_anon(lambda: est.predict_proba(X))
        ref = est.predict_proba(np.ascontiguousarray(X[:: 997]))
        same = bool(np.array_equal(proba[:: 997], ref))
        # the output itself: n rows x 2 classes of float64
        print(json.dumps({"grew": grew, "x_mib": X.nbytes / 2**20, "out_mib": proba.nbytes / 2**20,
                          "same": same}))
        """,
        tmp_path,
    )
    assert out["grew"] < out["out_mib"] + out["x_mib"] / 4, out
    assert out["same"]
