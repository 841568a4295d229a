"""Prints the accuracy figures the test suite asserts for the core engine (SPORF paper,
Sect. 4) and MORF (Sect. 5.1), with the same data, seeds and settings as the tests:

    python benches/acceptance.py
"""

import numpy as np
from sklearn.datasets import load_digits, make_classification, make_friedman1
from sklearn.ensemble import RandomForestClassifier as SkRFC
from sklearn.ensemble import RandomForestRegressor as SkRFR
from sklearn.model_selection import train_test_split

import obliqueforest as of
from obliqueforest import datasets


def err(est, train, test):
    return 1.0 - est.fit(*train).score(*test)


def main():
    rf = lambda: of.RandomForestClassifier(100, random_state=0, n_jobs=2)  # noqa: E731
    sporf = lambda **kw: of.SPORFClassifier(100, random_state=0, n_jobs=2, **kw)  # noqa: E731
    print("## SPORF paper simulations (100 trees)")
    tr = datasets.make_sparse_parity(5000, n_features=20, n_informative=3, random_state=1)
    te = datasets.make_sparse_parity(10000, n_features=20, n_informative=3, random_state=2)
    print(
        f"sparse parity p=20 p*=3, 5000/10000: SPORF {err(sporf(), tr, te):.4f}  "
        f"RF {err(rf(), tr, te):.4f}"
    )
    tr = datasets.make_orthant(2000, n_features=6, random_state=3)
    te = datasets.make_orthant(10000, n_features=6, random_state=4)
    grid = [dict(feature_combinations=fc, max_features=d) for fc in (3.0, 1.5) for d in (1.0, 2.0)]
    fits = [sporf(oob_score=True, **kw).fit(*tr) for kw in grid]
    best = max(fits, key=lambda e: e.oob_score_)
    print(
        f"orthant p=6, 2000/10000: SPORF (d, lambda by OOB: "
        f"{best.max_features}, {best.feature_combinations}/p) {1 - best.score(*te):.4f}  "
        f"SPORF defaults {1 - fits[0].score(*te):.4f}  RF {err(rf(), tr, te):.4f}"
    )
    tr = datasets.make_trunk(1000, n_features=10, random_state=5)
    te = datasets.make_trunk(10000, n_features=10, random_state=6)
    print(f"trunk p=10, 1000/10000: SPORF {err(sporf(), tr, te):.4f}  RF {err(rf(), tr, te):.4f}")
    X, y = make_classification(3000, 20, n_informative=8, random_state=0)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.5, random_state=0)
    ours = rf().fit(Xtr, ytr).score(Xte, yte)
    sk = SkRFC(100, random_state=0, n_jobs=2).fit(Xtr, ytr).score(Xte, yte)
    print(f"make_classification 3000x20: accuracy ours RF {ours:.4f}  sklearn RF {sk:.4f}")
    X, y = make_friedman1(2000, noise=1.0, random_state=0)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.5, random_state=0)
    ours = of.RandomForestRegressor(100, random_state=0, n_jobs=2).fit(Xtr, ytr).score(Xte, yte)
    sk = SkRFR(100, random_state=0, n_jobs=2).fit(Xtr, ytr).score(Xte, yte)
    print(f"friedman1 2000: R^2 ours RF {ours:.4f}  sklearn RF {sk:.4f}")

    print("\n## MORF simulations (100 trees, defaults except the patch geometry)")
    X, y = datasets.make_hv_bars(20, random_state=0)
    Xt, yt = datasets.make_hv_bars(2000, random_state=1)
    m = of.MORFClassifier(
        100,
        data_shape=(28, 28),
        min_patch_size=(1, 2),
        max_patch_size=(2, 9),
        random_state=0,
        n_jobs=2,
    )
    print(
        f"hv_bars, 20 train: MORF {err(m, (X, y), (Xt, yt)):.4f}  RF {err(rf(), (X, y), (Xt, yt)):.4f}"
    )
    X, y = datasets.make_circle_segments(400, random_state=0)
    Xt, yt = datasets.make_circle_segments(2000, random_state=1)
    m = of.MORFClassifier(
        100,
        data_shape=(100,),
        min_patch_size=3,
        max_patch_size=12,
        periodic=True,
        max_features=0.5,
        random_state=0,
        n_jobs=2,
    )
    print(
        f"circle segments, 400 train: MORF {err(m, (X, y), (Xt, yt)):.4f}  "
        f"RF {err(rf(), (X, y), (Xt, yt)):.4f}"
    )
    for decay, hi in ((1.0, 12), (20.0, 50)):
        X, y = datasets.make_impulse(400, decay_length=decay, random_state=0)
        Xt, yt = datasets.make_impulse(2000, decay_length=decay, random_state=1)
        m = of.MORFClassifier(
            100,
            data_shape=(100,),
            min_patch_size=2,
            max_patch_size=hi,
            max_features=0.3,
            random_state=0,
            n_jobs=2,
        )
        print(
            f"impulse decay_length={decay}, patches 2..{hi}, 400 train: "
            f"MORF {err(m, (X, y), (Xt, yt)):.4f}  RF {err(rf(), (X, y), (Xt, yt)):.4f}"
        )
    X, y = load_digits(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
    m = of.MORFClassifier(
        100, data_shape=(8, 8), min_patch_size=1, max_patch_size=3, random_state=0, n_jobs=2
    )
    print(
        f"digits 8x8, stratified 70/30: MORF {err(m, (Xtr, ytr), (Xte, yte)):.4f}  "
        f"RF {err(rf(), (Xtr, ytr), (Xte, yte)):.4f}"
    )

    X, y = make_classification(300, 16, random_state=0)
    a = of.SPORFClassifier(12, random_state=7, n_jobs=1).fit(X, y)
    b = of.SPORFClassifier(12, random_state=7, n_jobs=2).fit(X, y)
    print(
        f"\nsame random_state, n_jobs 1 vs 2: identical model bytes "
        f"{a._forest.to_bytes() == b._forest.to_bytes()}, identical predict_proba "
        f"{np.array_equal(a.predict_proba(X), b.predict_proba(X))}"
    )


if __name__ == "__main__":
    main()
