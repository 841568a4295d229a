"""Compression benchmark of the random forest autoencoder (Vu et al. 2025, Appx. B.1).

Protocol: for each dataset, ``--bootstraps`` bootstrap training sets (rows drawn
with replacement), the out-of-bag rows as test set; latent sizes
``d_Z = round(latent_rate · d_X)`` for latent rates 0.1, 0.2, …, 1.0; the encoder
is trained on the bootstrap rows, the test rows are encoded (Nyström) and
decoded, and the distortion of Sect. 5 is averaged over bootstraps and rates.
PCA (numeric columns standardised, categorical columns one-hot, decoded class =
largest reconstructed indicator) at the same latent sizes is the baseline.

The forest does not depend on d_Z, so it is grown once per bootstrap (with the
autoencoder's defaults) and shared by all latent sizes and decoders.

Run::

    python benches/rfae_compression.py > benches/results/rfae_compression.txt
    python benches/rfae_compression.py --bootstraps 3 --decoders knn   # quick

Bootstrap training sets repeat about a third of their rows; the autoencoder
collapses exact duplicates (``collapse_duplicates=True``), so its kernel, its
unsupervised forest and the k-NN decoder's neighbours are the distinct rows.

Datasets (offline): breast cancer (scikit-learn; 30 numeric + diagnosis as a
categorical column; paper Table 2: RFAE 0.333), wine (scikit-learn; 13 numeric +
class) and palmerpenguins (pip package ``palmerpenguins``; complete cases, 333
rows, 5 numeric + species, island, sex; paper Table 2: RFAE 0.176).
"""

import argparse
import ast
import sys
import time

import numpy as np
import pandas as pd
from obliqueforest.autoencoder import ForestAutoencoder, distortion
from sklearn.datasets import load_breast_cancer, load_wine
from sklearn.decomposition import PCA

LATENT_RATES = np.round(np.arange(1, 11) / 10, 1)
PAPER = {"breast_cancer": 0.333, "penguins": 0.176}


def load_penguins():
    """palmerpenguins, complete cases (333 rows): 5 numeric + 3 categorical columns."""
    from palmerpenguins import load_penguins as _load

    frame = _load().dropna().reset_index(drop=True)
    for col in ("species", "island", "sex"):
        frame[col] = pd.Categorical(frame[col].astype(str))
    return frame


def load(name):
    if name == "penguins":
        return load_penguins()
    loader = {"breast_cancer": load_breast_cancer, "wine": load_wine}[name]
    data = loader(as_frame=True)
    frame = data.data.copy()
    label = "diagnosis" if name == "breast_cancer" else "class"
    names = np.asarray(data.target_names)[data.target.to_numpy()]
    frame[label] = pd.Categorical(names, categories=list(data.target_names))
    return frame


def pca_reconstruct(train, test, n_components):
    """PCA baseline on standardised numeric + one-hot categorical columns."""
    num = [c for c in train.columns if not isinstance(train[c].dtype, pd.CategoricalDtype)]
    cat = [c for c in train.columns if c not in num]
    design_tr = pd.get_dummies(train, columns=cat, dtype=float)
    design_te = pd.get_dummies(test, columns=cat, dtype=float).reindex(
        columns=design_tr.columns, fill_value=0.0
    )
    mean, std = design_tr.mean(), design_tr.std(ddof=0).replace(0.0, 1.0)
    pca = PCA(n_components=min(n_components, design_tr.shape[1])).fit((design_tr - mean) / std)
    rec = pca.inverse_transform(pca.transform((design_te - mean) / std)) * std.to_numpy()
    rec = pd.DataFrame(rec + mean.to_numpy(), columns=design_tr.columns, index=test.index)
    out = rec[num].copy()
    for c in cat:
        block = [f"{c}_{v}" for v in train[c].cat.categories]
        best = rec[block].to_numpy().argmax(axis=1)
        out[c] = pd.Categorical.from_codes(best, dtype=train[c].dtype)
    return out[list(train.columns)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["breast_cancer", "penguins", "wine"])
    parser.add_argument("--bootstraps", type=int, default=10)
    parser.add_argument("--decoders", nargs="+", default=["knn", "relabel", "lasso"])
    parser.add_argument(
        "--slow-bootstraps",
        type=int,
        default=2,
        help="bootstraps for the slow relabel/lasso decoders",
    )
    parser.add_argument(
        "--slow-rates",
        nargs="+",
        type=float,
        default=[0.3, 1.0],
        help="latent rates for the slow relabel/lasso decoders (lasso: ~2 s per query)",
    )
    parser.add_argument("--n-jobs", type=int, default=-1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--ae-param",
        nargs="*",
        default=[],
        metavar="NAME=VALUE",
        help="ForestAutoencoder parameters other than the defaults (e.g. min_samples_leaf=2)",
    )
    parser.add_argument(
        "--integers-as-categories",
        action="store_true",
        help="integer columns with fewer than 5 distinct values become categorical, as the "
        "reference implementation's arf::prep_x does (penguins: year)",
    )
    args = parser.parse_args()
    ae_params = {}
    for item in args.ae_param:
        key, value = item.split("=", 1)
        try:
            ae_params[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            ae_params[key] = value
    defaults = ForestAutoencoder(**ae_params).get_params()
    print(f"# python {' '.join(sys.argv)}")
    print(f"# RFAE compression benchmark (Appx. B.1), seed={args.seed}")
    print(
        f"# autoencoder parameters: n_estimators={defaults['n_estimators']}, "
        f"min_samples_leaf={defaults['min_samples_leaf']}, unsupervised="
        f"{defaults['unsupervised']}, k={defaults['k']}, diffusion_time="
        f"{defaults['diffusion_time']}, collapse_duplicates={defaults['collapse_duplicates']}"
    )
    summary = []
    for name in args.datasets:
        frame = load(name)
        if args.integers_as_categories:
            for col in frame.columns:
                if pd.api.types.is_integer_dtype(frame[col]) and frame[col].nunique() < 5:
                    frame[col] = pd.Categorical(frame[col])
        n, d = frame.shape
        sizes = [max(1, round(d * r)) for r in LATENT_RATES]
        slow_sizes = {max(1, int(round(d * r))) for r in args.slow_rates}
        print(f"\n## {name}: n={n}, d_X={d}, latent sizes {sizes}")
        rng = np.random.default_rng(args.seed)
        # one list of per-bootstrap distortions per latent rate (sizes may repeat)
        scores = {m: [[] for _ in sizes] for m in ["pca", *args.decoders]}
        for b in range(args.bootstraps):
            idx = rng.integers(0, n, size=n)
            oob = np.setdiff1d(np.arange(n), idx)
            train = frame.iloc[idx].reset_index(drop=True)
            test = frame.iloc[oob].reset_index(drop=True)
            t0 = time.perf_counter()
            base = ForestAutoencoder(
                n_components=1, random_state=args.seed + b, n_jobs=args.n_jobs, **ae_params
            ).fit(train)
            t_forest = time.perf_counter() - t0
            done = {}
            for r, dz in enumerate(sizes):
                for method in ["pca", *args.decoders]:
                    slow = method not in ("pca", "knn")
                    if slow and (b >= args.slow_bootstraps or dz not in slow_sizes):
                        continue
                    if (method, dz) not in done:
                        if method == "pca":
                            rec = pca_reconstruct(train, test, dz)
                        else:
                            ae = ForestAutoencoder(
                                n_components=dz,
                                forest=base.forest_,
                                decoder=method,
                                random_state=args.seed + b,
                                n_jobs=args.n_jobs,
                                **ae_params,
                            ).fit(train)
                            rec = ae.inverse_transform(ae.transform(test))
                        done[method, dz] = distortion(test, rec)
                    scores[method][r].append(done[method, dz])
            print(
                f"bootstrap {b}: train {len(train)} rows, test {len(test)} rows, forest "
                f"{t_forest:.1f}s, ARF rounds {len(base.arf_accuracies_)} "
                f"(OOB acc {base.arf_accuracies_[-1]:.3f})",
                flush=True,
            )
        print(f"\n{'method':<10}" + "".join(f"{dz:>7}" for dz in sizes) + f"{'mean':>8}{'sd':>7}")
        for method, per in scores.items():
            means = [np.mean(v) if v else np.nan for v in per]
            runs = np.array([v for v in per if v])  # (rates run, bootstraps)
            sd = np.std(runs.mean(axis=0)) if runs.shape[1] > 1 else float("nan")
            print(
                f"{method:<10}"
                + "".join(f"{m:>7.3f}" for m in means)
                + f"{np.nanmean(means):>8.3f}{sd:>7.3f}  ({runs.shape[1]} bootstraps)"
            )
            summary.append((name, method, float(np.nanmean(means))))
    print("\n## mean distortion per dataset and method")
    for name, method, value in summary:
        ref = f"  (paper Table 2 RFAE: {PAPER[name]})" if method == "knn" and name in PAPER else ""
        print(f"{name:<15}{method:<10}{value:.3f}{ref}")


if __name__ == "__main__":
    main()
