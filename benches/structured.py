"""Images and signals: MORF against RF and SPORF at their defaults.

Data sets (all offline):

- ``digits``: scikit-learn's 8x8 digit images, stratified 5-fold CV (MORF: ``data_shape=(8, 8)``).
- ``mnist1d``: the MNIST-1D signals (length 40) built by the ``mnist1d`` package's
  ``make_dataset`` from its templates with the package's default arguments (seed 42,
  5,000 signals, the package's 4,000 / 1,000 train / test split). ``make_dataset`` never
  downloads; only ``get_dataset`` would. Reference test accuracies (Greydanus 2020):
  logistic regression ~32%, MLP ~68%, CNN ~94%.
- UCR/UEA series bundled in ``aeon`` with their standard train / test splits:
  GunPoint, ItalyPowerDemand, ArrowHead (univariate) and BasicMotions (6 channels,
  ``data_shape=(6, 100), channel_axis=0``).

Models: this library's RF, SPORF and MORF at their defaults (MORF given only the data
shape), scikit-learn's RF, and treeple's MORF when importable. Every finished
(data set, model, split) cell is cached (``--cache``), so runs resume.

Run::

    nice -n 19 python benches/structured.py --n-jobs 2
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from sklearn.model_selection import StratifiedKFold

from _cells import load_cells, save_cells  # benches/_cells.py

RESULTS = Path(__file__).resolve().parent / "results"


def _digits():
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    splits = list(StratifiedKFold(5, shuffle=True, random_state=0).split(X, y))
    return X, y, splits, {"data_shape": (8, 8)}


def _mnist1d():
    from mnist1d.data import get_dataset_args, make_dataset

    data = make_dataset(get_dataset_args())  # built from templates, no download
    X = np.vstack([data["x"], data["x_test"]])
    y = np.concatenate([data["y"], data["y_test"]])
    n = len(data["y"])
    return X, y, [(np.arange(n), np.arange(n, len(y)))], {"data_shape": (X.shape[1],)}


def _aeon(loader):
    def load():
        import aeon.datasets as ad

        Xtr, ytr = getattr(ad, loader)(split="train")
        Xte, yte = getattr(ad, loader)(split="test")
        shape = Xtr.shape[1:]
        X = np.vstack([Xtr.reshape(len(Xtr), -1), Xte.reshape(len(Xte), -1)])
        _, y = np.unique(np.concatenate([ytr, yte]), return_inverse=True)
        geometry = (
            {"data_shape": (shape[1],)}
            if shape[0] == 1
            else {"data_shape": tuple(shape), "channel_axis": 0}
        )
        return X, y, [(np.arange(len(Xtr)), np.arange(len(Xtr), len(X)))], geometry

    return load


DATASETS = {
    "digits": _digits,
    "mnist1d": _mnist1d,
    "GunPoint": _aeon("load_gunpoint"),
    "ItalyPowerDemand": _aeon("load_italy_power_demand"),
    "ArrowHead": _aeon("load_arrow_head"),
    "BasicMotions": _aeon("load_basic_motions"),
}


def make_model(name, geometry, seed, n_jobs):
    import obliqueforest as of

    common = {"random_state": seed, "n_jobs": n_jobs}
    if name == "of_rf":
        return of.RandomForestClassifier(**common)
    if name == "of_sporf":
        return of.SPORFClassifier(**common)
    if name == "of_morf":
        return of.MORFClassifier(**geometry, **common)
    # variants: of_morf_<param>=<json value>,..., of_sporf_<param>=<json value>,...
    for prefix, make, kw in (
        ("of_morf_", of.MORFClassifier, geometry),
        ("of_sporf_", of.SPORFClassifier, {}),
    ):
        if name.startswith(prefix):
            params = dict(kv.split("=") for kv in name[len(prefix) :].split(","))
            parsed = {k: json.loads(v) for k, v in params.items()}
            return make(**kw, **parsed, **common)
    if name == "sk_rf":
        from sklearn.ensemble import RandomForestClassifier

        return RandomForestClassifier(**common)
    if name == "treeple_morf":
        from treeple import PatchObliqueRandomForestClassifier

        shape = geometry["data_shape"]
        return PatchObliqueRandomForestClassifier(data_dims=shape, **common)
    raise ValueError(f"unknown model {name!r}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument(
        "--models", nargs="+", default=["of_rf", "of_sporf", "of_morf", "sk_rf", "treeple_morf"]
    )
    parser.add_argument("--n-jobs", type=int, default=1)
    parser.add_argument("--cache", type=Path, default=RESULTS / "structured_cells.json")
    args = parser.parse_args(argv)
    cache = load_cells(args.cache)
    models = list(args.models)
    try:
        import treeple  # noqa: F401
    except ImportError:
        models = [m for m in models if not m.startswith("treeple")]
    print(f"# python {' '.join(sys.argv)}")
    for name in args.datasets:
        try:
            X, y, splits, geometry = DATASETS[name]()
        except ImportError as exc:
            print(f"# {name}: skipped ({exc})")
            continue
        X = np.ascontiguousarray(X, dtype=np.float32)
        for model in models:
            for i, (train, test) in enumerate(splits):
                key = f"{name}|{model}|{i}"
                if key in cache:
                    continue
                est = make_model(model, geometry, i, args.n_jobs)
                err = float(np.mean(est.fit(X[train], y[train]).predict(X[test]) != y[test]))
                cache[key] = err
                save_cells(cache, args.cache)
            print(f"  {name:<18} {model:<28} done", flush=True)
    print("\n## test error (digits: mean of 5 folds; others: standard train/test split)\n")
    print(f"| data set | {' | '.join(models)} |")
    print("|---|" + "---|" * len(models))
    for name in args.datasets:
        row = []
        for model in models:
            v = [e for k, e in cache.items() if k.startswith(f"{name}|{model}|")]
            row.append(f"{np.mean(v):.4f}" if v else "-")
        print(f"| {name} | {' | '.join(row)} |")


if __name__ == "__main__":
    main()
