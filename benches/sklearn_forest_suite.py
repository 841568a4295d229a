"""Runs scikit-learn's own forest test suite against this library's RandomForest.

The suite is the installed ``sklearn/ensemble/tests/test_forest.py`` (shipped in
scikit-learn's wheels). This script reads it at run time, rebinds ``RandomForestClassifier``
and ``RandomForestRegressor`` to obliqueforest's right after scikit-learn's imports (the
only change), writes the result to a temporary directory and runs pytest on the tests that
involve the random forests. Nothing of the suite is stored in this repository.

Every failure is listed with its first error line and sorted into

* ``private``: the test's source (or a helper it calls) uses scikit-learn internals
  (private modules and helpers, ``DecisionTree*`` classes, mock patches) that a user does
  not touch;
* ``user``: anything else (what a user swapping the import would notice).

Usage::

    python benches/sklearn_forest_suite.py [--json benches/results/sklearn_forest_suite.json]
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import sklearn

REBIND = "\nfrom obliqueforest import RandomForestClassifier, RandomForestRegressor  # rebound\n"

# names in a test's source that mark it as reaching into scikit-learn internals
PRIVATE = (
    "_forest.",
    "_generate_unsampled_indices",
    "_get_n_samples_bootstrap",
    "DecisionTree",
    "SPARSE_SPLITTERS",
    "_parallel_build_trees",
    "_make_estimator",
    "estimator_.",
    "sklearn.ensemble._",
    "sklearn.tree._",
    "_validate_X_predict",
    "patch(",
    "tree_.apply",  # a method of scikit-learn's Cython tree object
)


def private_tests(source: str) -> set[str]:
    """Test functions whose source (or a helper named check_*/_* it calls) uses a
    private name."""
    tree = ast.parse(source)
    funcs = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
    text = {name: ast.get_source_segment(source, f) or "" for name, f in funcs.items()}

    def uses_private(name, seen):
        if name in seen or name not in text:
            return False
        seen.add(name)
        if any(p in text[name] for p in PRIVATE):
            return True
        # a private attribute or method of an estimator (est._something, not dunders)
        if any(
            isinstance(n, ast.Attribute) and n.attr.startswith("_") and not n.attr.startswith("__")
            for n in ast.walk(funcs[name])
        ):
            return True
        called = {
            n.func.id
            for n in ast.walk(funcs[name])
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
        }
        return any(uses_private(c, seen) for c in called if not c.startswith("test_"))

    return {name for name in funcs if name.startswith("test_") and uses_private(name, set())}


def suite_source() -> str:
    path = Path(sklearn.__file__).parent / "ensemble" / "tests" / "test_forest.py"
    text = path.read_text()
    # the rebinding goes after the block importing from sklearn.ensemble
    m = re.search(r"from sklearn\.ensemble import \([^)]*\)\n", text)
    if m is None:
        raise SystemExit(f"cannot find the sklearn.ensemble imports in {path}")
    return text[: m.end()] + REBIND + text[m.end() :]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("-k", default="RandomForest or (not ExtraTrees and not RandomTrees)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        test = Path(tmp) / "test_forest_obliqueforest.py"
        source = suite_source()
        private = private_tests(source)
        test.write_text(source)
        # the one fixture of scikit-learn's conftest the suite uses, at its default seed
        (Path(tmp) / "conftest.py").write_text(
            "import pytest\n\n\n@pytest.fixture\ndef global_random_seed():\n    return 42\n"
        )
        report = Path(tmp) / "report.xml"
        env = dict(os.environ, PYTHONWARNINGS="ignore")
        cmd = [sys.executable, "-m", "pytest", str(test), "-q", "-p", "no:cacheprovider"]
        cmd += ["-k", args.k, f"--junitxml={report}", "-o", "addopts=", "--rootdir", tmp]
        cmd += ["-W", "ignore"]
        subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True)
        root = ET.parse(report).getroot()
    cases = []
    for case in root.iter("testcase"):
        outcome, message = "passed", ""
        for kind in ("failure", "error", "skipped"):
            node = case.find(kind)
            if node is not None:
                outcome = "skipped" if kind == "skipped" else "failed"
                message = (node.get("message") or node.text or "").strip().splitlines()
                message = message[0][:300] if message else ""
                break
        reason = ""
        if outcome == "failed":
            reason = "private" if case.get("name").split("[")[0] in private else "user"
        cases.append(
            {"test": case.get("name"), "outcome": outcome, "reason": reason, "message": message}
        )
    counts = {}
    for c in cases:
        key = c["outcome"] + (f" ({c['reason']})" if c["reason"] else "")
        counts[key] = counts.get(key, 0) + 1
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        cwd=Path(__file__).parent,
    ).stdout.strip()
    print(f"commit {commit}; python benches/sklearn_forest_suite.py")
    print(f"scikit-learn {sklearn.__version__} test_forest.py, -k {args.k!r}")
    for key in sorted(counts):
        print(f"  {key}: {counts[key]}")
    for c in cases:
        if c["outcome"] == "failed":
            print(f"[{c['reason']}] {c['test']}: {c['message']}")
    if args.json:
        payload = {"commit": commit, "counts": counts, "cases": cases}
        args.json.write_text(json.dumps(payload, indent=1))


if __name__ == "__main__":
    main()
