"""The ``obliqueforest demo`` simulations: the SPORF and MORF papers' headline data sets,
this library's forests next to scikit-learn's random forest, as a markdown table."""

from __future__ import annotations

import sys
import time

import numpy as np

from ._cli_tables import CLIError

__all__ = ["run_demo"]

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


def run_demo(size="quick", n_jobs=-1, seed=0, datasets=None, out=None):
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
    out : text stream or None, default=None
        Where the table goes; None is ``sys.stdout``.

    Returns
    -------
    records : list of dict
        One per (dataset, model): dataset, model, n_train, n_test, n_trees, test_error,
        fit_time_s.
    """
    from sklearn.base import clone

    out = sys.stdout if out is None else out
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
