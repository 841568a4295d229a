"""End-to-end tests of the ``obliqueforest`` command line (run as ``python -m obliqueforest``)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def run_cli(*args, cwd=None, timeout=120):
    """Runs the CLI in a subprocess; returns the CompletedProcess (text mode)."""
    return subprocess.run(
        [sys.executable, "-m", "obliqueforest", *map(str, args)],
        check=False,
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout,
    )


def test_demo_tiny_prints_table_and_json(tmp_path):
    out = tmp_path / "demo.json"
    res = run_cli(
        "demo", "--tiny", "--n-jobs", "1", "--json", out, "--datasets", "trunk", "hv_bars"
    )
    assert res.returncode == 0, res.stderr
    assert "| dataset |" in res.stdout
    assert "| hv_bars |" in res.stdout and "MORF" in res.stdout
    records = json.loads(out.read_text())["results"]
    models = {(r["dataset"], r["model"]) for r in records}
    assert ("trunk", "sklearn RF") in models and ("hv_bars", "MORF") in models
    assert ("trunk", "MORF") not in models
    assert all(0.0 <= r["test_error"] <= 1.0 for r in records)


def test_demo_unknown_dataset_is_a_clear_error():
    res = run_cli("demo", "--tiny", "--datasets", "nope")
    assert res.returncode == 2
    assert "unknown demo dataset" in res.stderr and "Traceback" not in res.stderr


@pytest.mark.slow
def test_demo_quick_runs():
    res = run_cli("demo", "--quick", timeout=600)
    assert res.returncode == 0, res.stderr
    assert res.stdout.count("| sparse_parity |") == 3
