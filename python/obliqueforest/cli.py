"""Command line interface: ``obliqueforest {demo,fit,predict,evaluate,embed}``.

``demo`` reruns the SPORF and MORF papers' headline simulations with this library's
forests next to scikit-learn's random forest. The other subcommands train, apply,
cross-validate and embed on CSV or Parquet tables. Expected user errors (missing file,
missing column, non-numeric column, corrupt or newer model file) print one line on stderr
and exit with status 2; nothing else is caught, so real bugs keep their tracebacks.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

__all__ = ["main"]

EXIT_USAGE = 2


class CLIError(Exception):
    """A user error reported as one line on stderr and exit status 2."""


# ---------------------------------------------------------------------------------------
# demo
# ---------------------------------------------------------------------------------------

# (n_train, n_test, n_trees) per size. The full sizes follow the papers: sparse parity
# and orthant with thousands of training rows (Tomita et al. 2020, Sect. 4.2), hv_bars
# with a few hundred images (Perry et al. 2021, Sect. 4).
_DEMO_SIZES = {
    "tiny": {
        "sparse_parity": (200, 200, 10),
        "orthant": (200, 200, 10),
        "trunk": (100, 200, 10),
        "hv_bars": (20, 100, 10),
        "circle_segments": (100, 200, 10),
        "impulse": (100, 200, 10),
    },
    "quick": {
        "sparse_parity": (2000, 5000, 100),
        "orthant": (2000, 5000, 100),
        "trunk": (500, 5000, 100),
        "hv_bars": (50, 2000, 100),
        "circle_segments": (500, 2000, 100),
        "impulse": (500, 2000, 100),
    },
    "full": {
        "sparse_parity": (5000, 10000, 100),
        "orthant": (4000, 10000, 100),
        "trunk": (1000, 10000, 100),
        "hv_bars": (400, 10000, 100),
        "circle_segments": (1000, 10000, 100),
        "impulse": (1000, 10000, 100),
    },
}


def _demo_datasets():
    """name -> (make(n, random_state) -> (X, y), MORF parameters or None)."""
    from . import datasets as ds

    return {
        "sparse_parity": (
            lambda n, rs: ds.make_sparse_parity(n, n_features=20, n_informative=3, random_state=rs),
            None,
        ),
        "orthant": (lambda n, rs: ds.make_orthant(n, n_features=6, random_state=rs), None),
        "trunk": (lambda n, rs: ds.make_trunk(n, n_features=10, random_state=rs), None),
        "hv_bars": (
            lambda n, rs: ds.make_hv_bars(n, image_size=28, random_state=rs),
            {"data_shape": (28, 28), "min_patch_size": (1, 2), "max_patch_size": (2, 9)},
        ),
        "circle_segments": (
            lambda n, rs: ds.make_circle_segments(n, n_features=100, random_state=rs),
            {
                "data_shape": (100,),
                "min_patch_size": 3,
                "max_patch_size": 12,
                "periodic": True,
                "max_features": 0.5,
            },
        ),
        "impulse": (
            lambda n, rs: ds.make_impulse(n, n_features=100, random_state=rs),
            {"data_shape": (100,), "min_patch_size": 2, "max_patch_size": 12, "max_features": 0.3},
        ),
    }


def _demo_models(morf_params, n_trees, n_jobs, seed):
    """(name, unfitted estimator) pairs for one dataset."""
    from sklearn.ensemble import RandomForestClassifier as SkRF

    from . import MORFClassifier, RandomForestClassifier, SPORFClassifier

    common = {"n_estimators": n_trees, "n_jobs": n_jobs, "random_state": seed}
    models = [
        ("sklearn RF", SkRF(**common)),
        ("RF", RandomForestClassifier(**common)),
        ("SPORF", SPORFClassifier(**common)),
    ]
    if morf_params is not None:
        models.append(("MORF", MORFClassifier(**common, **morf_params)))
    return models


def run_demo(size="quick", n_jobs=-1, seed=0, datasets=None, out=sys.stdout):
    """Runs the demo simulations and prints a markdown table as each row finishes.

    Parameters
    ----------
    size : {"tiny", "quick", "full"}, default="quick"
        Sample sizes and numbers of trees (see ``_DEMO_SIZES``).
    n_jobs : int, default=-1
        Threads for every model (scikit-learn's convention).
    seed : int, default=0
        Seed for the data and the models.
    datasets : list of str or None, default=None
        Subset of dataset names; None runs all.
    out : text stream, default=sys.stdout

    Returns
    -------
    records : list of dict
        One per (dataset, model): dataset, model, n_train, n_test, n_trees, test_error,
        fit_time_s.
    """
    from sklearn.base import clone

    sizes = _DEMO_SIZES[size]
    available = _demo_datasets()
    names = list(available) if not datasets else datasets
    unknown = [n for n in names if n not in available]
    if unknown:
        raise CLIError(f"unknown demo dataset(s) {unknown}; choose from {list(available)}")
    print(
        f"obliqueforest demo (size={size}, n_jobs={n_jobs}, seed={seed}); "
        "test error = 1 - accuracy on fresh samples",
        file=out,
    )
    print(file=out)
    print("| dataset | n_train | n_test | trees | model | test error | fit time (s) |", file=out)
    print("|---|---:|---:|---:|---|---:|---:|", file=out)
    out.flush()
    records = []
    for i, name in enumerate(names):
        make, morf_params = available[name]
        n_train, n_test, n_trees = sizes[name]
        X, y = make(n_train + n_test, seed + i)
        X_train, y_train, X_test, y_test = X[:n_train], y[:n_train], X[n_train:], y[n_train:]
        for model_name, model in _demo_models(morf_params, n_trees, n_jobs, seed):
            model = clone(model)
            t0 = time.perf_counter()
            model.fit(X_train, y_train)
            fit_time = time.perf_counter() - t0
            error = float(np.mean(model.predict(X_test) != y_test))
            rec = {
                "dataset": name,
                "model": model_name,
                "n_train": n_train,
                "n_test": n_test,
                "n_trees": n_trees,
                "test_error": error,
                "fit_time_s": fit_time,
            }
            records.append(rec)
            print(
                f"| {name} | {n_train} | {n_test} | {n_trees} | {model_name} "
                f"| {error:.4f} | {fit_time:.2f} |",
                file=out,
            )
            out.flush()
    return records


def _cmd_demo(args):
    size = "tiny" if args.tiny else ("quick" if args.quick else "full")
    t0 = time.perf_counter()
    records = run_demo(size=size, n_jobs=args.n_jobs, seed=args.seed, datasets=args.datasets)
    total = time.perf_counter() - t0
    print(f"\ntotal wall time: {total:.1f} s")
    if args.json:
        payload = {"size": size, "n_jobs": args.n_jobs, "seed": args.seed, "results": records}
        try:
            with open(args.json, "w") as f:
                json.dump(payload, f, indent=2)
        except OSError as e:
            raise CLIError(f"cannot write {args.json}: {e.strerror}") from None
    return 0


# ---------------------------------------------------------------------------------------
# argument parsing and entry point
# ---------------------------------------------------------------------------------------


def _n_jobs(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value == 0:
        raise argparse.ArgumentTypeError("n_jobs must be a positive number or -1, not 0")
    return value


def build_parser():
    """The argparse parser of all subcommands."""
    parser = argparse.ArgumentParser(
        prog="obliqueforest",
        description="Projection decision forests (RF, SPORF, MORF) from the command line.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser(
        "demo",
        help="rerun the SPORF/MORF papers' simulations against scikit-learn",
        description="Sparse parity, orthant, trunk, hv_bars, circle segments and impulse: "
        "test error and fit time of this library's RF, SPORF and MORF next to "
        "scikit-learn's RandomForestClassifier, as a markdown table.",
    )
    p.add_argument("--quick", action="store_true", help="small sizes (well under two minutes)")
    p.add_argument("--tiny", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--n-jobs", type=_n_jobs, default=-1, help="threads per model (default -1)")
    p.add_argument("--seed", type=int, default=0, help="seed for data and models (default 0)")
    p.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    p.add_argument(
        "--datasets", nargs="+", metavar="NAME", help="run only these datasets (default all)"
    )
    p.set_defaults(func=_cmd_demo)
    return parser


def main(argv=None):
    """Entry point of the ``obliqueforest`` command; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except CLIError as e:
        print(f"obliqueforest {args.command}: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
