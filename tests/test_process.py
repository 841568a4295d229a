"""The library inside other people's processes: fork, Ctrl-C, thread counts.

Each test runs its scenario in a child interpreter under a timeout, because the failure
modes are a hang (a forked child waiting on thread-pool threads that were not copied
into it) or work that ignores SIGINT, which would take the test runner down with it.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="fork and POSIX signals")

PRELUDE = textwrap.dedent(
    """
    import os, sys, time
    import numpy as np
    import obliqueforest as of
    rng = np.random.RandomState(0)
    """
)


def run_child(code: str, timeout: float = 120):
    """Runs ``code`` after PRELUDE in a fresh interpreter; returns its stdout."""
    proc = subprocess.run(
        [sys.executable, "-c", PRELUDE + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


FORK_CHILD = """
    import multiprocessing as mp
    X = rng.randn(3000, 12).astype(np.float32)
    y = (X[:, 0] + X[:, 1] * X[:, 2] > 0).astype(int)
    # the parent's pools exist (fit and predict on two threads) before any fork
    parent = of.SPORFClassifier(n_estimators=16, n_jobs=2, random_state=0).fit(X, y)
    expected = parent.predict(X)

    def work(n_jobs):
        clf = of.SPORFClassifier(n_estimators=8, n_jobs=n_jobs, random_state=1).fit(X, y)
        same = bool((parent.set_params(n_jobs=n_jobs).predict(X) == expected).all())
        return n_jobs, same, float((clf.predict(X) == y).mean())

    if __name__ == "__main__":
        ctx = mp.get_context("fork")
        {launch}
"""


@pytest.mark.parametrize(
    "launch",
    [
        # a plain fork child, then a Pool of forked workers
        """p = ctx.Process(target=lambda: sys.exit(0 if work(2)[1] else 3)); p.start(); p.join()
        assert p.exitcode == 0, p.exitcode
        with ctx.Pool(2) as pool:
            for n_jobs, same, acc in pool.map(work, [1, 2, -1, 64]):
                assert same and acc > 0.9, (n_jobs, same, acc)
        print("ok")""",
        # joblib's multiprocessing backend forks its workers
        """import joblib
        out = joblib.Parallel(n_jobs=2, backend="multiprocessing")(
            joblib.delayed(work)(j) for j in [2, -1])
        assert all(same and acc > 0.9 for _, same, acc in out), out
        print("ok")""",
    ],
    ids=["mp-process-and-pool", "joblib-multiprocessing"],
)
def test_fork_children_predict_and_fit_on_many_threads(launch):
    out = run_child(FORK_CHILD.replace("{launch}", launch), timeout=180)
    assert out.strip().endswith("ok")


INTERRUPTED = """
    X = rng.randn({n}, 20).astype(np.float32)
    y = (X[:, 0] + X[:, 1] * X[:, 2] > 0).astype(int)
    {setup}
    {preload}
    print("ready", flush=True)
    t0 = time.time()
    try:
        {work}
        print("finished", time.time() - t0, flush=True)
    except KeyboardInterrupt:
        caught = time.time()
        cpu0 = sum(os.times()[:2])
        time.sleep(1.0)
        cpu = sum(os.times()[:2]) - cpu0
        print(f"interrupted {{caught:.3f}} {{cpu:.3f}}", flush=True)
"""

QUANTILE_FOREST = (
    "reg = of.RandomForestRegressor(n_estimators=100, min_samples_leaf=2000, "
    "store_leaf_values=True, random_state=0).fit(X, y)"
)

CASES = {
    "fit": (20000, "", "of.SPORFClassifier(n_estimators=400, n_jobs=2, random_state=0).fit(X, y)"),
    "fit-verbose": (
        20000,
        "",
        "of.SPORFClassifier(n_estimators=400, n_jobs=2, verbose=1, random_state=0).fit(X, y)",
    ),
    "predict-1-thread": (
        2000,
        "clf = of.SPORFClassifier(n_estimators=50, random_state=0).fit(X, y); "
        "X = np.tile(X, (400, 1))",
        "clf.predict(X)",
    ),
    "apply-2-threads": (
        2000,
        "clf = of.SPORFClassifier(n_estimators=50, n_jobs=2, random_state=0).fit(X, y); "
        "X = np.tile(X, (400, 1))",
        "clf.apply(X)",
    ),
    "quantile-honest-fit": (
        20000,
        "",
        "of.SPORFRegressor(n_estimators=400, n_jobs=2, honest_fraction=0.5, "
        "store_leaf_values=True, random_state=0).fit(X, y)",
    ),
    "predict-quantiles-2-threads": (
        2000,
        "reg = of.RandomForestRegressor(n_estimators=50, n_jobs=2, store_leaf_values=True, "
        "random_state=0).fit(X, y); X = np.tile(X, (400, 1))",
        "reg.predict_quantiles(X)",
    ),
    # large leaves: each row's quantiles sort ~10^5 weighted targets, a block of rows
    # takes tens of seconds, so the work must stop within a block
    "predict-quantiles-large-leaves": (
        20000,
        QUANTILE_FOREST,
        "reg.predict_quantiles(X)",
    ),
    "oob-quantiles-large-leaves": (20000, QUANTILE_FOREST, "reg.oob_quantiles(X)"),
    "predict-interval-large-leaves-2-threads": (
        20000,
        QUANTILE_FOREST + "; reg.set_params(n_jobs=2)",
        "reg.predict_interval(X)",
    ),
    "decision-path": (
        2000,
        "clf = of.RandomForestClassifier(n_estimators=100, random_state=0).fit(X, y); "
        "X = np.tile(X, (200, 1))",
        "clf.decision_path(X)",
    ),
    # large leaves: ~6x10^8 leaf pairs, ~10 s of sparse products (signalled once they run)
    "proximity-large-leaves": (
        8000,
        "urf = of.UnsupervisedRandomForest(n_estimators=400, min_samples_leaf=300, "
        "n_components=None, random_state=0).fit(X)",
        "urf.proximity(X)",
        3.5,
    ),
    "shap-values-sporf": (
        2000,
        "clf = of.SPORFClassifier(n_estimators=100, random_state=0).fit(X, y); "
        "ex = of.TreeExplainer(clf); X = np.tile(X, (10, 1))",
        "ex.shap_values(X)",
    ),
    # one row against 1,000 background rows: the work is inside a single row
    "shap-values-one-row-large-background": (
        2000,
        "clf = of.RandomForestClassifier(n_estimators=1000, max_depth=12, n_jobs=2, "
        "random_state=0).fit(X, y); ex = of.TreeExplainer(clf, X[:1000], n_jobs=1)",
        "ex.shap_values(X[:2])",
    ),
    "shap-interaction-values": (
        2000,
        "clf = of.SPORFClassifier(n_estimators=100, random_state=0).fit(X, y); "
        "ex = of.TreeExplainer(clf)",
        "ex.shap_interaction_values(np.tile(X, (5, 1)))",
    ),
    "rotation-fit-threads": (
        20000,
        "",
        "of.RotationEnsembleClassifier(n_estimators=400, n_rotations=8, micro_forest_size=50,"
        " n_jobs=2, random_state=0).fit(X, y)",
    ),
    "autoencoder-fit": (
        20000,
        "",
        "of.ForestAutoencoder(n_estimators=300, n_jobs=2, random_state=0).fit(X)",
    ),
    "unsupervised-fit": (
        20000,
        "",
        "of.UnsupervisedRandomForest(n_estimators=400, n_jobs=2, random_state=0).fit(X)",
    ),
    "isolation-score": (
        2000,
        "iso = of.IsolationForest(n_estimators=200, n_jobs=2, random_state=0).fit(X); "
        "X = np.tile(X, (400, 1))",
        "iso.score_samples(X)",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_sigint_interrupts_long_work_and_stops_it(case):
    n, setup, work, *delay = CASES[case]
    # The package imports an estimator's module (and much of scikit-learn and scipy) on
    # its first use: that happens before "ready", so that the signal meets the work, not
    # an import, where importlib's lock callbacks can swallow a KeyboardInterrupt.
    preload = "; ".join(f"of.{name}" for name in sorted(set(re.findall(r"of\.(\w+)", work))))
    code = INTERRUPTED.format(n=n, setup=setup, preload=preload or "pass", work=work)
    proc = subprocess.Popen(
        [sys.executable, "-c", PRELUDE + textwrap.dedent(code)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read()[-3000:]
        time.sleep(delay[0] if delay else 0.5)
        sent = time.time()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert out.startswith("interrupted"), (out, err[-3000:])
    caught, cpu = map(float, out.split()[1:3])
    # about a second is the promise; the margin is for this shared, loaded machine
    assert caught - sent < 3.0, f"KeyboardInterrupt {caught - sent:.2f}s after SIGINT"
    assert cpu < 0.3, f"{cpu:.2f}s of CPU used in the second after the interrupt"


def test_thread_count_stays_bounded_over_many_n_jobs():
    out = run_child(
        """
        X = rng.randn(4000, 8).astype(np.float32)
        y = (X[:, 0] > 0).astype(int)
        clf = of.RandomForestClassifier(n_estimators=4, random_state=0).fit(X, y)
        tasks = lambda: len(os.listdir("/proc/self/task"))
        base = tasks()
        for n_jobs in list(range(1, 61)) + [10**4, 2**62, -1, -2]:
            clf.set_params(n_jobs=n_jobs).predict(X)
        print(base, tasks(), of._core.n_threads(-1))
        """
    )
    base, after, cores = map(int, out.split())
    from obliqueforest._core import n_threads

    # pools of at most `cores` threads each, at most four of them kept
    assert after - base <= 4 * cores, (base, after, cores)
    assert n_threads(10**4) == n_threads(-1) == cores
    assert n_threads(None) == 1


@pytest.mark.parametrize("n_jobs", [0, 1.5, "2", True])
def test_bad_n_jobs_is_a_value_error_everywhere(n_jobs):
    import numpy as np

    import obliqueforest as of

    X = np.random.RandomState(0).randn(60, 3)
    y = (X[:, 0] > 0).astype(int)
    estimators = [
        of.SPORFClassifier(n_estimators=2, n_jobs=n_jobs),
        of.RotationEnsembleClassifier(n_estimators=4, n_rotations=2, micro_forest_size=2),
        of.ForestAutoencoder(n_estimators=4, n_components=2),
    ]
    for est in estimators:
        est.set_params(n_jobs=n_jobs)
        with pytest.raises(ValueError):
            est.fit(X, y)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_fork_child_under_pytest_does_not_hang():
    """The same in-process: fork after a multi-threaded predict, predict in the child."""
    import numpy as np

    import obliqueforest as of

    X = np.random.RandomState(0).randn(3000, 6).astype(np.float32)
    y = (X[:, 0] > 0).astype(int)
    clf = of.RandomForestClassifier(n_estimators=6, n_jobs=2, random_state=0).fit(X, y)
    expected = clf.predict(X)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        ok = False
        try:
            ok = bool((clf.predict(X) == expected).all())
        finally:
            os._exit(0 if ok else 1)
    deadline = time.time() + 60
    while time.time() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.waitstatus_to_exitcode(status) == 0
            return
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    pytest.fail("the forked child hung")
