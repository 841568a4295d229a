"""Inputs that used to kill the interpreter or be learned from silently (issue 24): huge
column counts, outputs too large for memory, a column missing on every row. Where the
failure mode is an abort, the scenario runs in a child interpreter under an address-space
limit and a timeout, and the test asserts the child exits normally with the error printed."""

from __future__ import annotations

import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from scipy import sparse

import obliqueforest as of
from obliqueforest import ForestError, projections

posix = pytest.mark.skipif(sys.platform == "win32", reason="resource limits")


def run_limited(code: str, address_space_gib: float, timeout: float = 120) -> str:
    """Runs ``code`` in a fresh interpreter whose address space is capped; returns its
    stdout (the test fails when the child dies or exits non-zero)."""
    prelude = textwrap.dedent(
        f"""
        import resource
        limit = int({address_space_gib} * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        import numpy as np
        from scipy import sparse
        import obliqueforest as of
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, f"child died ({proc.returncode}): {proc.stderr[-2000:]}"
    return proc.stdout


@posix
@pytest.mark.parametrize("n_cols", [2**31, 2**32])
def test_sparse_x_with_billions_of_columns_is_refused_clearly(n_cols):
    out = run_limited(
        f"""
        X = sparse.csr_matrix(
            (np.ones(4), (np.arange(4), np.array([0, 5, 7, 9]))), shape=(4, {n_cols})
        )
        try:
            of.RandomForestClassifier(n_estimators=2).fit(X, [0, 1, 0, 1])
        except (ValueError, MemoryError) as e:
            print(type(e).__name__, e)
        """,
        address_space_gib=3,
    )
    assert "2**24" in out and "features" in out, out


@posix
def test_a_prediction_output_too_large_for_memory_is_a_memory_error():
    # 2,000 classes x 300,000 rows of float64 = 4.8 GB of probabilities under a 3 GiB cap
    out = run_limited(
        """
        X = np.arange(2000, dtype=np.float32).reshape(-1, 1)
        est = of.RandomForestClassifier(n_estimators=1, max_leaf_nodes=4, random_state=0)
        est.fit(X, np.arange(2000))
        try:
            est.predict_proba(np.zeros((300_000, 1), dtype=np.float32))
        except MemoryError as e:
            print("MemoryError", e)
        est.predict_proba(X[:10])  # the estimator is still usable
        print("usable")
        """,
        address_space_gib=3,
    )
    assert "MemoryError" in out and "prediction output" in out and "usable" in out, out


def test_out_of_memory_is_not_a_forest_error():
    assert not issubclass(MemoryError, ForestError)


def test_dense_projections_learn_despite_a_column_missing_on_every_row():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(400, 4))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    X[:, 2] = np.nan
    est = of.ObliqueForestClassifier(projections.Gaussian(), n_estimators=10, random_state=0)
    assert est.fit(X, y).score(X, y) > 0.95


def test_sparse_indptr_beyond_the_entries_is_a_value_error():
    from obliqueforest import _core

    X = sparse.random(20, 5, density=0.3, format="csr", random_state=0, dtype=np.float32)
    est = of.RandomForestRegressor(n_estimators=2, random_state=0).fit(X.toarray(), np.arange(20))
    bad = ("csr", (20, 5), X.indptr.astype(np.uint64), X.indices.astype(np.uint32), X.data)
    bad[2][3] = 10**9
    with pytest.raises(ForestError, match="beyond the"):
        est._forest.predict(bad)
    with pytest.raises(ForestError, match="beyond the"):
        _core.Forest.fit(bad, np.arange(20.0), None, _core_params())


def _core_params():
    from obliqueforest import _core
    from obliqueforest._params import core_params

    return core_params(
        task="regression", projection=_core.Projection.family("axis"), seed=0, n_jobs=1,
        n_estimators=2,
    )  # fmt: skip


def _corrupt(kind):
    X = sparse.random(30, 6, density=0.4, format="csr", random_state=1)
    if kind == "beyond":
        X.indptr[3] = 10**9
    elif kind == "decreasing":
        X.indptr[3], X.indptr[4] = X.indptr[4], X.indptr[3] - 1
    elif kind == "negative":
        X.indptr[2] = -5
    elif kind == "index":
        X.indices[0] = 99
    elif kind == "coo":
        X = X.tocoo()
        X.col[0] = 99
    return X


@posix
@pytest.mark.parametrize("kind", ["beyond", "decreasing", "negative", "index", "coo"])
def test_corrupt_sparse_arrays_are_value_errors_before_scipy_reads_them(kind):
    # in a child: the failure mode was a segfault inside scipy's compiled routines
    out = run_limited(
        f"""
        import pickle, sys
        X = pickle.loads({pickle.dumps(_corrupt(kind))!r})
        y = np.arange(30) % 2
        good = of.RandomForestClassifier(n_estimators=2, random_state=0).fit(np.ones((30, 6)), y)
        for call in (
            lambda: of.RandomForestClassifier(n_estimators=2).fit(X, y),
            lambda: good.predict(X),
            lambda: of.RotationEnsembleClassifier(n_estimators=4, n_rotations=2).fit(X, y),
        ):
            try:
                call()
                print("accepted")
            except ValueError as e:
                print("ValueError", e)
        """,
        address_space_gib=4,
    )
    assert out.count("ValueError") == 3 and "accepted" not in out, out
    assert "corrupt" in out, out
