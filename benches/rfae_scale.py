"""Scale benchmark of the random forest autoencoder (not a test).

Fit on ``--n`` rows × 20 columns (a seeded synthetic mixture) with 200 trees,
then encode and decode ``--n-decode`` held-out rows of the same mixture,
reporting wall time per stage of ``fit`` and peak RSS, set against the 8·n²
bytes a dense n × n kernel would need. At ``--n-dense`` rows it also times the
kernel eigendecomposition path used here against merely building the dense
kernel matrix.

Run::

    python benches/rfae_scale.py > benches/results/rfae_scale.txt
    python benches/rfae_scale.py --unsupervised random   # one forest, no ARF rounds
"""

import argparse
import sys
import resource
import time

import numpy as np
import obliqueforest.autoencoder._estimator as rfae
from obliqueforest.autoencoder import ForestAutoencoder
from obliqueforest.autoencoder._kernel import (
    _kernel,
    _kernel_nnz_bound,
    _leaf_membership,
    _leaf_weights,
    _top_eigenpairs,
)


def make_data(n, p=20, seed=0):
    """A 6-component Gaussian mixture pushed through mild nonlinearities."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=2.0, size=(6, p))
    labels = rng.integers(0, 6, size=n)
    X = centers[labels] + rng.normal(size=(n, p))
    X[:, p // 2 :] = np.tanh(X[:, p // 2 :]) + 0.1 * X[:, : p - p // 2] ** 2
    return X


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


_STAGES = {}


def _timed(name, fn):
    """Wrap ``fn`` so that its wall time accumulates in ``_STAGES[name]``."""

    def wrapper(*a, **kw):
        t0 = time.perf_counter()
        try:
            return fn(*a, **kw)
        finally:
            _STAGES[name] = _STAGES.get(name, 0.0) + time.perf_counter() - t0

    return wrapper


def _instrument():
    """Time the stages of ``fit`` (forest, kernel graph check, eigensolver, ...)."""
    ForestAutoencoder._grow_forest = _timed("grow forest", ForestAutoencoder._grow_forest)
    for name, label in [
        ("_distinct_rows", "duplicate check"),
        ("_leaf_membership", "leaf matrix"),
        ("_kernel_graph_components", "connectivity check"),
        ("_kernel", "kernel operator"),
        ("_top_eigenpairs", "eigensolver"),
        ("_nystroem_leaf_map", "Nystroem map"),
    ]:
        setattr(rfae, name, _timed(label, getattr(rfae, name)))


def run_scale(n, args):
    # held-out rows of the same mixture are encoded and decoded (the training
    # rows would be their own nearest neighbours and decode almost exactly)
    n_new = args.n_decode
    data = make_data(n + n_new, seed=args.seed)
    X, X_new = data[:n], data[n:]
    ae = ForestAutoencoder(
        n_components=args.n_components,
        n_estimators=args.trees,
        unsupervised=args.unsupervised,
        random_state=args.seed,
        n_jobs=args.n_jobs,
    )
    _instrument()
    t0 = time.perf_counter()
    ae.fit(X)
    t_fit = time.perf_counter() - t0
    stages = dict(_STAGES)
    t0 = time.perf_counter()
    Z = ae.transform(X_new)
    t_enc = time.perf_counter() - t0
    t0 = time.perf_counter()
    X_hat = ae.inverse_transform(Z)
    t_dec = time.perf_counter() - t0
    err = float(np.mean(np.mean((X_new - X_hat) ** 2, axis=0) / X_new.var(axis=0)))
    leaves = int(ae._core().leaf_offsets()[-1])
    print(
        f"n={n} p=20 trees={args.trees} forest={args.unsupervised} "
        f"n_components={args.n_components} kernel={ae.kernel_method_} leaves={leaves} "
        f"ARF forests trained={len(ae.arf_accuracies_)}"
    )
    rest = t_fit - sum(stages.values())
    print(
        "  fit stages: "
        + ", ".join(f"{k} {v:.1f}s" for k, v in stages.items())
        + f", rest (apply_leaves, leaf_bounds, kNN index) {rest:.1f}s"
    )
    print(
        f"  fit {t_fit:.1f}s | encode {n_new} new rows {t_enc:.2f}s | decode {n_new} rows "
        f"{t_dec:.2f}s | distortion (mean 1-R^2) {err:.3f}"
    )
    print(
        f"  peak RSS {peak_rss_mb():.0f} MB vs dense n×n float64 kernel {8 * n * n / 2**20:.0f} MB"
    )


def run_dense_comparison(n, args):
    X = make_data(n, seed=args.seed + 1)
    ae = ForestAutoencoder(
        n_components=args.n_components,
        n_estimators=args.trees,
        unsupervised=args.unsupervised,
        random_state=args.seed,
        n_jobs=args.n_jobs,
    ).fit(X)
    core = ae._core()
    X32 = np.ascontiguousarray(X, dtype=np.float32)
    offsets = core.leaf_offsets()
    membership = _leaf_membership(core.apply_leaves(X32, 1), int(offsets[-1]))
    weights, sizes = _leaf_weights(membership, offsets, ae.kernel_trees_)
    n_trees = int(ae.kernel_trees_.sum())
    rng = np.random.default_rng(0)
    print(
        f"\nn={n}: nnz(Π)={membership.nnz}, Σ size² bound={_kernel_nnz_bound(sizes, weights):.3g}"
    )
    for method in ("operator", "sparse"):
        t0 = time.perf_counter()
        kernel, _ = _kernel(membership, weights, n_trees, method)
        t_build = time.perf_counter() - t0
        t0 = time.perf_counter()
        _top_eigenpairs(kernel, args.n_components + 1, rng)
        t_eig = time.perf_counter() - t0
        nnz = kernel.nnz if hasattr(kernel, "nnz") else 0
        print(
            f"  {method:<8} build {t_build:6.2f}s  eigsh {t_eig:6.2f}s  total "
            f"{t_build + t_eig:6.2f}s" + (f"  nnz(K)={nnz:.3g}" if nnz else "")
        )
    t0 = time.perf_counter()
    pis = membership.multiply(np.sqrt(weights / n_trees)[None, :]).tocsr()
    dense = (pis @ pis.T).toarray()
    t_dense = time.perf_counter() - t0
    print(
        f"  dense    build {t_dense:6.2f}s (just materialising K, {dense.nbytes / 2**20:.0f} MB;"
        " a dense eigendecomposition would come on top)"
    )
    print(f"  peak RSS so far {peak_rss_mb():.0f} MB")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--n-dense", type=int, default=20_000)
    parser.add_argument("--n-decode", type=int, default=100_000)
    parser.add_argument("--trees", type=int, default=200)
    parser.add_argument("--n-components", type=int, default=8)
    parser.add_argument("--unsupervised", default="adversarial")
    parser.add_argument("--n-jobs", type=int, default=-1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-dense", action="store_true")
    args = parser.parse_args()
    print(f"# python {' '.join(sys.argv)}")
    print("# RFAE scale benchmark", vars(args))
    run_scale(args.n, args)
    if not args.skip_dense:
        run_dense_comparison(args.n_dense, args)


if __name__ == "__main__":
    main()
