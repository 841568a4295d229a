"""Peak memory of saving and loading a large model file, in fresh child processes.

    python benches/model_file_memory.py [--rows 100000] [--trees 50]

A forest is fitted and saved once; then a child process loads it and saves it again while
the kernel's peak-RSS counter (VmHWM, reset through /proc/self/clear_refs) records each
step. Ratios are the step's peak growth over the loaded model's resident size. Linux only.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

CHILD = r"""
import json, os, sys
import obliqueforest as of

def status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
def reset_peak():
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")

path, again = sys.argv[1], sys.argv[2]
reset_peak(); base = status("VmRSS")
est = of.load(path)
loaded = status("VmRSS"); load_peak = status("VmHWM")
reset_peak(); before = status("VmRSS")
est.save(again)
save_peak = status("VmHWM")
print(json.dumps({"model_rss": loaded - base, "load_peak": load_peak - base,
                  "save_peak": save_peak - before}))
"""


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--trees", type=int, default=50)
    args = ap.parse_args(argv)
    import obliqueforest as of
    from obliqueforest.datasets import make_sparse_parity

    X, y = make_sparse_parity(args.rows, n_features=20, n_informative=3, random_state=0)
    with tempfile.TemporaryDirectory() as tmp:
        path, again = os.path.join(tmp, "m.of"), os.path.join(tmp, "again.of")
        of.RandomForestClassifier(args.trees, random_state=0, n_jobs=-1).fit(X, y).save(path)
        out = subprocess.run(
            [sys.executable, "-c", CHILD, path, again], capture_output=True, text=True, check=True
        )
        r = json.loads(out.stdout)
        r["file_bytes"] = os.path.getsize(path)
    mb = 2**20
    print(
        f"model file {r['file_bytes'] / mb:.0f} MiB, loaded model {r['model_rss'] / mb:.0f} MiB "
        f"resident; load peak {r['load_peak'] / mb:.0f} MiB "
        f"({r['load_peak'] / r['model_rss']:.2f}x the model), save peak "
        f"{r['save_peak'] / mb:.0f} MiB ({r['save_peak'] / r['model_rss']:.2f}x)"
    )
    return r


if __name__ == "__main__":
    main()
