"""Prototype: translation-invariant pooled features on mnist1d (evidence for a pooled
projection family; not in the engine yet).

For 60 random small filters (a sum over 1-3 positions, a difference of two adjacent
windows, or a second difference), each signal's filter response is max- and min-pooled over
all positions (``--window 40``) or over windows of 10; our RandomForestClassifier (100
trees, defaults) is fit on the pooled features (and on [x, pooled]). Standard 4,000 / 1,000
split of the ``mnist1d`` package's ``make_dataset`` (offline). Results:
``benches/results/structured.md``.

Run::

    nice -n 19 python benches/pooled_prototype.py
"""

from __future__ import annotations

import numpy as np


def _filters(rng, k):
    out = []
    for _ in range(k):
        h, kind = rng.integers(1, 4), rng.integers(0, 3)
        if kind == 0:
            out.append(np.ones(h))
        elif kind == 1:
            out.append(np.r_[np.ones(h), -np.ones(h)])
        else:
            out.append(np.r_[np.ones(h), -2 * np.ones(h), np.ones(h)])
    return out


def _pooled(X, filters, window):
    cols = []
    for f in filters:
        r = np.stack([np.convolve(x, f[::-1], mode="valid") for x in X])
        for s in range(0, r.shape[1], window):
            cols += [r[:, s : s + window].max(1), r[:, s : s + window].min(1)]
    return np.stack(cols, 1).astype(np.float32)


def main():
    import obliqueforest as of
    from mnist1d.data import get_dataset_args, make_dataset

    d = make_dataset(get_dataset_args())  # built from templates, no download
    X, y = d["x"].astype(np.float32), d["y"]
    Xt, yt = d["x_test"].astype(np.float32), d["y_test"]
    filters = _filters(np.random.default_rng(0), 60)
    for window in (40, 10):
        P, Pt = _pooled(X, filters, window), _pooled(Xt, filters, window)
        for name, A, At in [("pooled", P, Pt), ("x+pooled", np.c_[X, P], np.c_[Xt, Pt])]:
            rf = of.RandomForestClassifier(random_state=0, n_jobs=1).fit(A, y)
            acc = np.mean(rf.predict(At) == yt)
            print(f"window={window} {name} p={A.shape[1]} accuracy={acc:.3f}", flush=True)


if __name__ == "__main__":
    main()
