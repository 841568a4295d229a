"""Native missing values (NaN) against scikit-learn's RandomForestClassifier, which also
splits on NaN natively (scikit-learn >= 1.4): accuracy and fit time, side by side in one run.

(a) a real data set with missing values that ships offline: the Palmer penguins
    (``pip install palmerpenguins``; species from the four measurements, sex, island and
    year; 2 rows miss every measurement and 11 miss sex), 5-fold CV repeated over seeds;
(b) a simulation where missingness is informative (a feature missing on 30% of the rows,
    all of them of class 1) with 5% of every other entry missing completely at random.

Not a test. Run it niced (about two minutes on a quiet 2-core machine):

    nice -n 19 python benches/missing.py [--out benches/results/missing.md]

Times are per fit, n_jobs=1 for every estimator, and ratios are ours / scikit-learn's,
measured in the same run (timings on a shared machine are noisy; the ratios are the result).
"""

import argparse
import time
from pathlib import Path

import numpy as np
from sklearn.ensemble import RandomForestClassifier as SkRF
from sklearn.impute import SimpleImputer
from sklearn.model_selection import StratifiedKFold
from sklearn.pipeline import make_pipeline

import obliqueforest as of

N_TREES = 100


def penguins():
    from palmerpenguins import load_penguins

    d = load_penguins()
    X = np.column_stack(
        [
            d[c].to_numpy(dtype=float)
            for c in ["bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g"]
        ]
        + [
            d["sex"].map({"male": 1.0, "female": 0.0}).to_numpy(dtype=float),
            d["island"].astype("category").cat.codes.to_numpy(dtype=float),
            d["year"].to_numpy(dtype=float),
        ]
    )
    y = d["species"].astype("category").cat.codes.to_numpy()
    return X, y


def informative(n, seed, p=20):
    """As tests/test_missing.py: feature 0 (small integers) is missing on 30% of the rows,
    which are all class 1; plus 5% of every other entry missing at random."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    X[:, 0] = rng.integers(-3, 4, n)
    m = rng.random(n) < 0.3
    y = (m | (X[:, 0] >= 2) | (X[:, 1] + X[:, 2] > 1.5)).astype(int)
    X[m, 0] = np.nan
    other = rng.random((n, p)) < 0.05
    other[:, 0] = False
    X[other] = np.nan
    return X, y


def models(seed):
    return {
        "obliqueforest RF": of.RandomForestClassifier(N_TREES, random_state=seed, n_jobs=1),
        "obliqueforest SPORF": of.SPORFClassifier(N_TREES, random_state=seed, n_jobs=1),
        "scikit-learn RF": SkRF(N_TREES, random_state=seed, n_jobs=1),
        "scikit-learn RF + median imputer": make_pipeline(
            SimpleImputer(strategy="median"), SkRF(N_TREES, random_state=seed, n_jobs=1)
        ),
    }


def evaluate(splits):
    """Mean accuracy and mean fit seconds per model over (train, test) splits."""
    acc, secs = {}, {}
    for seed, (Xtr, ytr, Xte, yte) in enumerate(splits):
        for name, est in models(seed).items():
            t = time.perf_counter()
            est.fit(Xtr, ytr)
            secs.setdefault(name, []).append(time.perf_counter() - t)
            acc.setdefault(name, []).append(est.score(Xte, yte))
    return {k: (np.mean(acc[k]), np.mean(secs[k])) for k in acc}


def table(title, rows):
    base_acc, base_t = rows["scikit-learn RF"]
    out = [
        f"### {title}",
        "",
        "| model | accuracy | fit s | accuracy − sklearn RF | fit time / sklearn RF |",
        "|---|---|---|---|---|",
    ]
    for name, (a, t) in rows.items():
        out.append(f"| {name} | {a:.4f} | {t:.3f} | {a - base_acc:+.4f} | {t / base_t:.2f} |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    X, y = penguins()
    splits = []
    for r in range(args.repeats):
        for tr, te in StratifiedKFold(5, shuffle=True, random_state=r).split(X, y):
            splits.append((X[tr], y[tr], X[te], y[te]))
    real = evaluate(splits)

    sims = []
    for r in range(args.repeats):
        Xtr, ytr = informative(4000, 2 * r)
        Xte, yte = informative(4000, 2 * r + 1)
        sims.append((Xtr, ytr, Xte, yte))
    sim = evaluate(sims)

    text = "\n\n".join(
        [
            "## Missing values (NaN) against scikit-learn's RandomForestClassifier",
            f"`nice -n 19 python benches/missing.py` — {N_TREES} trees, n_jobs=1, "
            f"scikit-learn {__import__('sklearn').__version__}; {args.repeats} repeats.",
            table(
                f"(a) Palmer penguins ({X.shape[0]} rows, {X.shape[1]} features, "
                f"{int(np.isnan(X).any(axis=1).sum())} rows with NaN), 5-fold CV",
                real,
            ),
            table("(b) informative missingness, 4000 train / 4000 test rows, 20 features", sim),
        ]
    )
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
