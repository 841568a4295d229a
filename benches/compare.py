"""Side-by-side benchmark of obliqueforest against scikit-learn (and treeple / rerf if present).

For every (dataset, n, model) one child process (multiprocessing "spawn") generates the
seeded data, fits the model and measures:

* ``fit_s``: wall time of ``fit``;
* ``predict_s``: ``predict_proba`` on a 10,000-row test set (median of 5 calls);
* ``single_ms``: latency of ``predict_proba`` on one row (median of ``--single-calls`` calls);
* ``peak_rss_mb``: the child's peak resident set during ``fit`` (VmHWM after fit; the mark is
  reset with ``/proc/self/clear_refs`` right before fit, so it still counts the training data
  already in memory but not data generation temporaries), and ``fit RSS growth``: that peak
  minus the resident set just before fit (imports and data excluded);
* ``test_error`` on the test set;
* ``model_bytes`` and ``bytes_per_node``: for obliqueforest ``len(est._forest.to_bytes())`` over
  ``est.tree_stats()[0].sum()``; for scikit-learn and treeple ``len(pickle.dumps(est))`` over
  the sum of ``tree_.node_count``.

All models: 100 trees (``--n-estimators``), fully grown, ``random_state=0``, ``n_jobs=2``
(``--n-jobs``), X given as float32 (what both libraries grow on). Random forests and extra
trees use ``max_features="sqrt"``; ``of_sporf`` is the paper's SPORF (d = p candidates, 3
features per projection on average, +-1 on the raw values: ``scaling=None``), the setting the
other SPORF implementations get; ``of_sporf_defaults`` is ``SPORFClassifier`` as it ships
(d = 2p, 1.5 features per projection, robust scaling; not in the default model list);
``of_rf_dp`` is this library's random forest with d = p (``max_features=None``), the baseline of
the SPORF cost ratio; MORF (hv_bars only) uses its defaults (d = sqrt(p), patches 1x1 to 7x7, a
quarter of the candidates pooled filters and half the others Haar differences). scikit-learn's ExtraTrees keeps its default
``bootstrap=False``. The optional SPORF implementations, when importable, get our SPORF's
settings: treeple's ``ObliqueRandomForestClassifier`` (``treeple_sporf``) with
``max_features=1.0`` (d = p candidate projections) and ``feature_combinations=3.0`` (3 nonzeros
per projection on average), ``bootstrap=True``; rerf's ``rerfClassifier`` (``rerf_sporf``)
with ``max_features=None`` (d = p) and ``feature_combinations=3.0`` (rerf has no bootstrap
switch). treeple needs a scikit-learn it was built against (0.10.3: scikit-learn 1.6.x), so it
is usually measured from its own virtual environment (``benches/setup_treeple_env.sh``).

Derived, each from the same run: ratios ours / scikit-learn RF for fit, predict, single-row
latency, peak RSS and fit RSS growth; SPORF fit / ``of_rf_dp`` fit; our SPORF / each optional
SPORF for fit, predict, single-row latency and peak RSS; the fit-time growth exponent between the
two largest sizes (10,000 -> 100,000) against the exponent of n log^2 n; the n_jobs 1 -> 2
speed-up of our RF fit at the largest size.

Commands::

    python benches/compare.py --issue2      # the issue's benchmark: sparse parity, n=10,000
    python benches/compare.py --morf        # MORF fit on hv_bars, 2,000 images
    python benches/compare.py --quick       # n in {1000, 10000}
    python benches/compare.py               # n in {1000, 10000, 100000} (long)
    python benches/compare.py --sizes 1000 10000 100000 --reuse benches/results/compare.json \
        --json benches/results/compare_full.json
    python benches/compare.py --report benches/results/compare_full.json   # tables of a JSON

``--reuse FILE`` takes already measured records (same dataset, n, model, n_jobs) from an
earlier JSON instead of measuring them again, so a long run can extend a quick one.
"""

from __future__ import annotations

import argparse
import json
import math
import atexit
import multiprocessing as mp
import os
import pickle
import platform
import signal
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from _memory import reset_peak_rss, status_kb  # benches/_memory.py

DATASETS = ("sparse_parity", "orthant", "trunk", "hv_bars")
TABULAR_MODELS = ("of_rf", "of_sporf", "of_rf_dp", "sk_rf", "sk_et")
OPTIONAL_MODELS = ("treeple_sporf", "rerf_sporf")
BASELINE = "sk_rf"
OURS = ("of_rf", "of_sporf", "of_sporf_defaults", "of_rf_dp", "of_morf")
# models measured besides the default list (--extra-models)
EXTRA_MODELS = ("of_sporf_defaults",)
_EXTRA: list = []
N_TEST = 10_000
SEED = 0
DEFAULT_JSON = Path(__file__).resolve().parent / "results" / "compare.json"


# -- data -----------------------------------------------------------------------------------
def make_data(name, n, seed):
    """Seeded (X, y) of dataset ``name``; X as C-contiguous float32."""
    from obliqueforest import datasets as ds

    if name == "sparse_parity":
        X, y = ds.make_sparse_parity(n, n_features=20, random_state=seed)
    elif name == "orthant":
        X, y = ds.make_orthant(n, n_features=6, random_state=seed)
    elif name == "trunk":
        X, y = ds.make_trunk(n, n_features=10, random_state=seed)
    elif name == "hv_bars":
        X, y = ds.make_hv_bars(n, image_size=28, random_state=seed)
    else:
        raise ValueError(f"unknown dataset {name!r}")
    return np.ascontiguousarray(X, dtype=np.float32), np.asarray(y)


def n_features_of(name):
    return {"sparse_parity": 20, "orthant": 6, "trunk": 10, "hv_bars": 784}[name]


# -- models ---------------------------------------------------------------------------------
OPTIONAL_MODULES = {"treeple_sporf": "treeple", "rerf_sporf": "rerf"}
_OPTIONAL_SEEN = {}


def optional_available(model):
    """True if the optional model's package imports; says once on stderr why it does not."""
    if model not in OPTIONAL_MODULES:
        return True
    if model not in _OPTIONAL_SEEN:
        import importlib

        try:
            importlib.import_module(OPTIONAL_MODULES[model])
            _OPTIONAL_SEEN[model] = True
        except ImportError:
            _OPTIONAL_SEEN[model] = False
        except Exception as e:  # treeple re-raises a scikit-learn version mismatch as Exception
            print(f"# {model} skipped: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
            _OPTIONAL_SEEN[model] = False
    return _OPTIONAL_SEEN[model]


def models_for(dataset):
    names = list(TABULAR_MODELS) + list(_EXTRA)
    if dataset == "hv_bars":
        names.insert(3, "of_morf")
    names += [m for m in OPTIONAL_MODELS if optional_available(m)]
    return names


def make_model(model, n_estimators, n_jobs):
    common = {"n_estimators": n_estimators, "n_jobs": n_jobs, "random_state": SEED}
    if model.startswith("of_"):
        import obliqueforest as of

        if model == "of_rf":
            return of.RandomForestClassifier(max_features="sqrt", **common)
        if model == "of_rf_dp":
            return of.RandomForestClassifier(max_features=None, **common)
        if model == "of_sporf":
            # the paper's SPORF (d = p, lambda*p = 3, +-1 on the raw values), pinned: the
            # comparisons with treeple and rerf give them these settings too
            return of.SPORFClassifier(
                max_features=1.0,
                feature_combinations=3.0,
                scaling=None,
                candidate_samples=None,
                **common,
            )
        if model == "of_sporf_defaults":
            # SPORFClassifier as it ships (d = 2p, 1.5 features per projection, robust
            # scaling)
            return of.SPORFClassifier(**common)
        if model == "of_morf":
            return of.MORFClassifier(data_shape=(28, 28), **common)
    if model == "sk_rf":
        from sklearn.ensemble import RandomForestClassifier

        return RandomForestClassifier(max_features="sqrt", **common)
    if model == "sk_et":
        from sklearn.ensemble import ExtraTreesClassifier

        return ExtraTreesClassifier(max_features="sqrt", **common)
    if model == "treeple_sporf":
        from treeple import ObliqueRandomForestClassifier

        # max_features: number of candidate projections d; feature_combinations: mean nonzeros
        # per projection (lambda * p), as in our SPORFClassifier's defaults
        return ObliqueRandomForestClassifier(
            max_features=1.0, feature_combinations=3.0, bootstrap=True, **common
        )
    if model == "rerf_sporf":
        from rerf.rerfClassifier import rerfClassifier

        # rerf's defaults are d = sqrt(p) and 1.5 features per projection
        return rerfClassifier(
            n_estimators=n_estimators,
            projection_matrix="RerF",
            max_features=None,
            feature_combinations=3.0,
            n_jobs=n_jobs,
            random_state=SEED,
        )
    raise ValueError(f"unknown model {model!r}")


def model_size(model, est):
    """(model bytes, total nodes) as defined in the module docstring."""
    if model.startswith("of_"):
        return len(est._forest.to_bytes()), int(np.asarray(est.tree_stats()[0]).sum())
    size = len(pickle.dumps(est))
    try:
        nodes = sum(int(t.tree_.node_count) for t in est.estimators_)
    except AttributeError:
        nodes = 0
    return size, nodes


# -- one measurement, in a fresh process ----------------------------------------------------
def measure(spec):
    """Fits and times one model; runs inside a spawned child. Returns a JSON-able dict."""
    X, y = make_data(spec["dataset"], spec["n"], SEED)
    X_test, y_test = make_data(spec["dataset"], N_TEST, SEED + 1)
    est = make_model(spec["model"], spec["n_estimators"], spec["n_jobs"])
    rss_before = status_kb("VmRSS")
    reset = reset_peak_rss()
    t0 = time.perf_counter()
    est.fit(X, y)
    fit_s = time.perf_counter() - t0
    peak_kb = status_kb("VmHWM")

    est.predict_proba(X_test[:100])  # warm-up
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        proba = est.predict_proba(X_test)
        times.append(time.perf_counter() - t0)
    predict_s = statistics.median(times)
    test_error = float(np.mean(est.classes_.take(proba.argmax(axis=1)) != y_test))

    lat = []
    for i in range(spec["single_calls"] + 10):
        row = X_test[i : i + 1]
        t0 = time.perf_counter()
        est.predict_proba(row)
        lat.append(time.perf_counter() - t0)
    single_ms = 1e3 * statistics.median(lat[10:])

    size, nodes = model_size(spec["model"], est)
    return {
        **spec,
        "p": X.shape[1],
        "fit_s": fit_s,
        "predict_s": predict_s,
        "single_ms": single_ms,
        "peak_rss_mb": peak_kb / 1024,
        "rss_before_fit_mb": rss_before / 1024,
        "peak_reset": reset,
        "test_error": test_error,
        "model_bytes": size,
        "n_nodes": nodes,
        "bytes_per_node": size / nodes if nodes else None,
    }


def _child(spec, conn):
    try:
        conn.send(("ok", measure(spec)))
    except BaseException as e:  # report any failure (incl. MemoryError) to the parent
        conn.send(("error", f"{type(e).__name__}: {e}"))
    finally:
        conn.close()


_LIVE_CHILDREN = set()


@atexit.register
def _stop_children():
    # runs before multiprocessing's own exit handler (atexit is last-in, first-out), so a
    # parent stopped by SIGTERM (see main) does not wait for a running measurement
    for proc in list(_LIVE_CHILDREN):
        if proc.is_alive():
            proc.terminate()


def run_spec(spec, timeout):
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    # not daemonic: joblib (and with it scikit-learn's forests) runs single-threaded inside
    # daemonic multiprocessing workers, which would make the comparison unfair
    proc = ctx.Process(target=_child, args=(spec, child), daemon=False)
    t0 = time.perf_counter()
    proc.start()
    _LIVE_CHILDREN.add(proc)
    child.close()
    status, payload = "timeout", f"no result within {timeout:.0f} s"
    if parent.poll(timeout):
        try:
            status, payload = parent.recv()
        except EOFError:
            status, payload = "error", "child exited without a result"
    proc.join(5)
    if proc.is_alive():
        proc.terminate()
        proc.join()
    _LIVE_CHILDREN.discard(proc)
    if status != "ok" and proc.exitcode not in (0, None):
        payload += f" (exit code {proc.exitcode})"
    wall = time.perf_counter() - t0
    if status == "ok":
        return payload
    return {**spec, "error": f"{status}: {payload}", "wall_s": wall}


def key(r):
    return (r["dataset"], r["n"], r["model"], r["n_jobs"], r["n_estimators"])


# -- summaries ------------------------------------------------------------------------------
def nlog2n_exponent(n0, n1):
    return math.log((n1 * math.log(n1) ** 2) / (n0 * math.log(n0) ** 2)) / math.log(n1 / n0)


def _growth(r):
    return r["peak_rss_mb"] - r["rss_before_fit_mb"]


def _ratios(r, base):
    """Fit, predict, single-row and peak-RSS ratios of record ``r`` to record ``base``."""
    return {
        "fit": r["fit_s"] / base["fit_s"],
        "predict": r["predict_s"] / base["predict_s"],
        "single_row": r["single_ms"] / base["single_ms"],
        "peak_rss": r["peak_rss_mb"] / base["peak_rss_mb"],
    }


def summarize(records, n_jobs):
    ok = [r for r in records if "error" not in r]
    main = {(r["dataset"], r["n"], r["model"]): r for r in ok if r["n_jobs"] == n_jobs}
    ratios, sporf, others, growth, speedup = [], [], [], [], []
    for (ds, n, model), r in sorted(main.items()):
        base = main.get((ds, n, BASELINE))
        if model in OURS and base:
            ratios.append(
                {
                    "dataset": ds,
                    "n": n,
                    "model": model,
                    **_ratios(r, base),
                    "fit_rss_growth": _growth(r) / _growth(base) if _growth(base) > 0 else None,
                }
            )
        dp = main.get((ds, n, "of_rf_dp"))
        if model == "of_sporf" and dp:
            sporf.append(
                {
                    "dataset": ds,
                    "n": n,
                    "sporf_fit_s": r["fit_s"],
                    "rf_dp_fit_s": dp["fit_s"],
                    "ratio": r["fit_s"] / dp["fit_s"],
                }
            )
        ours = main.get((ds, n, "of_sporf"))
        if model in OPTIONAL_MODELS and ours:
            others.append(
                {
                    "dataset": ds,
                    "n": n,
                    "other": model,
                    **_ratios(ours, r),
                    "test_error_ours": ours["test_error"],
                    "test_error_other": r["test_error"],
                }
            )
    sizes = sorted({n for (_, n, _) in main})
    if len(sizes) >= 2:
        n0, n1 = sizes[-2], sizes[-1]
        ref = nlog2n_exponent(n0, n1)
        for ds, _, model in sorted({(d, 0, m) for (d, _, m) in main}):
            a, b = main.get((ds, n0, model)), main.get((ds, n1, model))
            if a and b:
                growth.append(
                    {
                        "dataset": ds,
                        "model": model,
                        "n0": n0,
                        "n1": n1,
                        "fit_s_n0": a["fit_s"],
                        "fit_s_n1": b["fit_s"],
                        "exponent": math.log(b["fit_s"] / a["fit_s"]) / math.log(n1 / n0),
                        "n_log2_n_exponent": ref,
                    }
                )
    for r in ok:
        if r["model"] == "of_rf" and r["n_jobs"] == 1:
            par = main.get((r["dataset"], r["n"], "of_rf"))
            if par:
                speedup.append(
                    {
                        "dataset": r["dataset"],
                        "n": r["n"],
                        "fit_s_n_jobs_1": r["fit_s"],
                        f"fit_s_n_jobs_{n_jobs}": par["fit_s"],
                        "speedup": r["fit_s"] / par["fit_s"],
                    }
                )
    return {
        "ratios_vs_sk_rf": ratios,
        "sporf_vs_rf_dp": sporf,
        "sporf_vs_other_sporf": others,
        "growth": growth,
        "speedup": speedup,
    }


def fmt(v, digits=3):
    if v is None:
        return "-"
    if isinstance(v, float):
        if v != 0 and (abs(v) >= 1000 or abs(v) < 0.001):
            return f"{v:.3g}"
        return f"{v:.{digits}f}"
    return str(v)


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(fmt(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def markdown(records, summary, n_jobs):
    parts = []
    rows = []
    for r in records:
        if "error" in r:
            rows.append([r["dataset"], r["n"], r["model"], r["n_jobs"], r["error"]] + [""] * 8)
            continue
        rows.append(
            [
                r["dataset"],
                r["n"],
                r["model"],
                r["n_jobs"],
                r["fit_s"],
                r["predict_s"],
                r["single_ms"],
                r["peak_rss_mb"],
                r["peak_rss_mb"] - r["rss_before_fit_mb"],
                r["test_error"],
                r["model_bytes"] / 2**20,
                r["n_nodes"],
                r["bytes_per_node"],
            ]
        )
    parts.append(
        table(
            [
                "dataset",
                "n",
                "model",
                "n_jobs",
                "fit s",
                f"predict_proba s ({N_TEST} rows)",
                "1-row ms",
                "peak RSS MB",
                "fit RSS growth MB",
                "test error",
                "model MiB",
                "nodes",
                "B/node",
            ],
            rows,
        )
    )
    if summary["ratios_vs_sk_rf"]:
        parts.append(f"Ratios ours / sk_rf (same run, n_jobs={n_jobs}; < 1 means ours is faster):")
        parts.append(
            table(
                ["dataset", "n", "model", "fit", "predict", "1-row", "peak RSS", "fit RSS growth"],
                [
                    [r["dataset"], r["n"], r["model"], r["fit"], r["predict"], r["single_row"]]
                    + [r["peak_rss"], r["fit_rss_growth"]]
                    for r in summary["ratios_vs_sk_rf"]
                ],
            )
        )
    if summary["sporf_vs_rf_dp"]:
        parts.append("SPORF fit / our RF fit with max_features=p (d = p for both):")
        parts.append(
            table(
                ["dataset", "n", "SPORF fit s", "RF(d=p) fit s", "ratio"],
                [
                    [r["dataset"], r["n"], r["sporf_fit_s"], r["rf_dp_fit_s"], r["ratio"]]
                    for r in summary["sporf_vs_rf_dp"]
                ],
            )
        )
    if summary.get("sporf_vs_other_sporf"):
        parts.append(
            f"Our SPORF / other SPORF implementations (same run, n_jobs={n_jobs}; "
            "< 1 means ours is faster or smaller):"
        )
        parts.append(
            table(
                ["dataset", "n", "other", "fit", "predict", "1-row", "peak RSS"]
                + ["test error ours", "test error other"],
                [
                    [r["dataset"], r["n"], r["other"], r["fit"], r["predict"], r["single_row"]]
                    + [r["peak_rss"], r["test_error_ours"], r["test_error_other"]]
                    for r in summary["sporf_vs_other_sporf"]
                ],
            )
        )
    if summary["growth"]:
        g0 = summary["growth"][0]
        parts.append(
            f"Fit-time growth exponent from n={g0['n0']} to n={g0['n1']} "
            f"(n log^2 n gives {g0['n_log2_n_exponent']:.3f}):"
        )
        parts.append(
            table(
                ["dataset", "model", f"fit s n={g0['n0']}", f"fit s n={g0['n1']}", "exponent"],
                [
                    [r["dataset"], r["model"], r["fit_s_n0"], r["fit_s_n1"], r["exponent"]]
                    for r in summary["growth"]
                ],
            )
        )
    if summary["speedup"]:
        parts.append(f"Our RF fit, n_jobs=1 -> {n_jobs}:")
        parts.append(
            table(
                ["dataset", "n", "fit s n_jobs=1", f"fit s n_jobs={n_jobs}", "speed-up"],
                [
                    [r["dataset"], r["n"], r["fit_s_n_jobs_1"], r[f"fit_s_n_jobs_{n_jobs}"]]
                    + [r["speedup"]]
                    for r in summary["speedup"]
                ],
            )
        )
    return "\n\n".join(parts)


def library_build():
    """The git commit of the checkout and the build time of the loaded extension module."""
    import subprocess

    from obliqueforest import _core

    so = Path(_core.__file__)
    built = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(so.stat().st_mtime))
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    return f"checkout {commit}, extension built {built} UTC"


def environment():
    import importlib

    import sklearn

    import obliqueforest

    optional = {}
    for model, module in OPTIONAL_MODULES.items():
        if optional_available(model):
            optional[module] = getattr(importlib.import_module(module), "__version__", "unknown")
    return {
        "library_build": library_build(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "load_average_1_5_15": os.getloadavg(),
        "numpy": np.__version__,
        "sklearn": sklearn.__version__,
        "obliqueforest": obliqueforest.__version__,
        **optional,
    }


def write_json(path, args, records, summary):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        "command": "python benches/compare.py " + " ".join(sys.argv[1:]),
        "environment": environment(),
        "n_test": N_TEST,
        "records": records,
        "summary": summary,
    }
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=1))
    tmp.replace(path)


def run_all(specs, args, reuse):
    records = []
    for spec in specs:
        if key(spec) in reuse:
            records.append(reuse[key(spec)])
            print(f"# reused {key(spec)}", file=sys.stderr, flush=True)
            continue
        t0 = time.perf_counter()
        r = run_spec(spec, args.timeout)
        records.append(r)
        msg = r.get("error") or f"fit {r['fit_s']:.3f} s, predict {r['predict_s']:.3f} s"
        took = time.perf_counter() - t0
        print(f"# {key(spec)}: {msg} ({took:.0f} s wall)", file=sys.stderr, flush=True)
        if args.json:
            write_json(args.json, args, records, summarize(records, args.n_jobs))
    return records


def spec(dataset, n, model, args, n_jobs=None, n_estimators=None):
    return {
        "dataset": dataset,
        "n": n,
        "model": model,
        "n_jobs": args.n_jobs if n_jobs is None else n_jobs,
        "n_estimators": args.n_estimators if n_estimators is None else n_estimators,
        "single_calls": args.single_calls,
    }


def median_of(args, repeat, make_spec):
    """Runs a spec ``repeat`` times (fresh processes) and keeps the median fit and predict."""
    runs = [run_spec(make_spec(), args.timeout) for _ in range(repeat)]
    good = [r for r in runs if "error" not in r]
    if not good:
        return runs[0]
    out = dict(good[0])
    for k in ("fit_s", "predict_s", "single_ms", "peak_rss_mb"):
        out[k] = statistics.median(r[k] for r in good)
    out["fit_s_runs"] = [r["fit_s"] for r in good]
    return out


def run_issue2(args):
    """Fit and predict of our RF and SPORF against scikit-learn's RF, sparse parity n=10,000."""
    n = 10_000
    res = {
        m: median_of(
            args, args.repeat, lambda m=m: spec("sparse_parity", n, m, args, n_estimators=100)
        )
        for m in ("sk_rf", "of_rf", "of_sporf")
    }
    for r in res.values():
        if "error" in r:
            sys.exit(f"failed: {r}")
    base = res["sk_rf"]
    print(
        f"Issue benchmark: sparse parity (p=20), n={n} train / {N_TEST} test rows, 100 trees, "
        f"n_jobs={args.n_jobs}, median of {args.repeat} fresh-process runs; "
        f"load average at the end {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; "
        f"{library_build()}.\n"
    )
    print(
        table(
            ["model", "fit s", "predict_proba s", "fit / sk_rf", "predict / sk_rf", "test error"],
            [
                [m, r["fit_s"], r["predict_s"], r["fit_s"] / base["fit_s"]]
                + [r["predict_s"] / base["predict_s"], r["test_error"]]
                for m, r in res.items()
            ],
        )
    )
    if args.json_given:
        write_json(args.json, args, list(res.values()), {})


def run_morf(args):
    """MORF fit time on hv_bars (2,000 images, 100 trees) against our RF and sklearn's RF."""
    n = 2000
    res = {
        m: median_of(args, args.repeat, lambda m=m: spec("hv_bars", n, m, args, n_estimators=100))
        for m in ("sk_rf", "of_rf", "of_morf")
    }
    for r in res.values():
        if "error" in r:
            sys.exit(f"failed: {r}")
    print(
        f"MORF benchmark: hv_bars 28x28, n={n} train / {N_TEST} test images, 100 trees, "
        f"n_jobs={args.n_jobs}, median of {args.repeat} fresh-process runs; "
        f"load average at the end {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; "
        f"{library_build()}.\n"
    )
    print(
        table(
            ["model", "fit s", "predict_proba s", "test error"],
            [[m, r["fit_s"], r["predict_s"], r["test_error"]] for m, r in res.items()],
        )
    )
    morf = res["of_morf"]["fit_s"]
    print(
        f"\nMORF fit / our RF fit = {morf / res['of_rf']['fit_s']:.3f}; "
        f"MORF fit / sklearn RF fit = {morf / res['sk_rf']['fit_s']:.3f}"
    )
    if args.json_given:
        write_json(args.json, args, list(res.values()), {})


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    ap.add_argument("--quick", action="store_true", help="sizes 1000 and 10000 only")
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=DATASETS)
    ap.add_argument(
        "--extra-models", nargs="*", default=[], choices=EXTRA_MODELS, help="measure these too"
    )
    ap.add_argument("--n-estimators", type=int, default=100)
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--single-calls", type=int, default=200)
    ap.add_argument("--timeout", type=float, default=3600, help="seconds per measurement")
    ap.add_argument("--repeat", type=int, default=3, help="runs per model for --issue2/--morf")
    ap.add_argument("--json", default=None, help=f"output JSON (default {DEFAULT_JSON})")
    ap.add_argument("--reuse", default=None, help="JSON of an earlier run to take records from")
    ap.add_argument("--issue2", action="store_true", help="the issue's sparse-parity benchmark")
    ap.add_argument("--morf", action="store_true", help="MORF fit time on hv_bars")
    ap.add_argument("--report", default=None, help="print the tables of a JSON, measure nothing")
    args = ap.parse_args(argv)
    _EXTRA[:] = args.extra_models
    if args.report:
        doc = json.loads(Path(args.report).read_text())
        summary = summarize(doc["records"], args.n_jobs)
        print(f"Command: {doc['command']} (report of {args.report})\n")
        print(markdown(doc["records"], summary, args.n_jobs))
        return None
    # exit through SystemExit on SIGTERM (e.g. `timeout`) so atexit stops the running child
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    args.json_given = args.json is not None
    if args.json is None:
        args.json = str(DEFAULT_JSON)
    if args.issue2:
        return run_issue2(args)
    if args.morf:
        return run_morf(args)
    sizes = [1000, 10_000] if args.quick else sorted(args.sizes)
    reuse = {}
    if args.reuse:
        reuse = {key(r): r for r in json.loads(Path(args.reuse).read_text())["records"]}
        reuse = {k: r for k, r in reuse.items() if "error" not in r}
    specs = []
    for ds in args.datasets:
        specs += [spec(ds, n, m, args) for n in sizes for m in models_for(ds)]
        # the n_jobs=1 fit of our RF at the largest size, for the parallel speed-up
        if args.n_jobs != 1:
            specs.append(spec(ds, sizes[-1], "of_rf", args, n_jobs=1))
    records = run_all(specs, args, reuse)
    summary = summarize(records, args.n_jobs)
    write_json(args.json, args, records, summary)
    print(
        f"Command: python benches/compare.py {' '.join(sys.argv[1:] if argv is None else argv)}\n"
        f"Test set {N_TEST} rows; {args.n_estimators} trees; n_jobs={args.n_jobs}; "
        f"machine: {os.cpu_count()} CPUs, load average at the end {os.getloadavg()[0]:.1f}; "
        f"{library_build()}; JSON: {args.json}\n"
    )
    print(markdown(records, summary, args.n_jobs))


if __name__ == "__main__":
    main()
