"""The figures of docs/unsupervised.md, from the page's own data and seeds.

    python docs/figures/unsupervised.py      # writes docs/figures/*.png (needs matplotlib)

- ``isolation_score_map.png``: the anomaly score over the plane of isolation forests
  trained on a thin diagonal band: scikit-learn's, this library's axis-aligned one, and the
  extended (SPORF) one. Axis-parallel cuts leave a checkerboard of false normality around a
  rotated band; oblique cuts follow it.
- ``unsupervised_clusters.png``: two long clusters side by side along a diagonal, coloured
  by spectral clustering of the proximity of an axis-aligned and of a SPORF unsupervised
  forest, and the two proximity matrices (rows ordered by true cluster).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.cluster import SpectralClustering  # noqa: E402
from sklearn.ensemble import IsolationForest as SkIsolationForest  # noqa: E402
from sklearn.metrics import adjusted_rand_score  # noqa: E402

from obliqueforest import IsolationForest, UnsupervisedRandomForest  # noqa: E402
from obliqueforest.projections import SparseSigned  # noqa: E402

HERE = Path(__file__).resolve().parent


def band(n, rng):
    """The page's normal rows: a thin band along the diagonal."""
    t = rng.uniform(-3, 3, n)
    e = rng.normal(scale=0.15, size=n)
    return np.c_[t + e / np.sqrt(2), t - e / np.sqrt(2)]


def rotated_clusters(n, rng):
    """The page's clusters: two long ones side by side along x0 + x1, and two noise columns."""
    y = np.arange(n) % 2
    along = 3.0 * rng.normal(size=n)
    across = 0.4 * rng.normal(size=n) + 2.0 * (y - 0.5)
    X2 = np.c_[along + across, along - across] / np.sqrt(2)
    return np.hstack([X2, rng.normal(size=(n, 2))]), y


def score_map():
    X = band(2000, np.random.default_rng(0))
    grid = np.linspace(-4, 4, 161)
    gx, gy = np.meshgrid(grid, grid)
    cells = np.c_[gx.ravel(), gy.ravel()]
    models = {
        "scikit-learn IsolationForest": SkIsolationForest(n_estimators=200, random_state=0),
        "IsolationForest (axis-aligned)": IsolationForest(200, random_state=0),
        "IsolationForest (SPORF: extended)": IsolationForest(
            200, projection=SparseSigned(), random_state=0
        ),
    }
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.3), constrained_layout=True)
    for ax, (name, model) in zip(axes, models.items()):
        score = -model.fit(X).score_samples(cells).reshape(gx.shape)  # the anomaly score
        image = ax.contourf(gx, gy, score, levels=np.linspace(0.3, 0.8, 21), cmap="magma_r",
                            extend="both")  # fmt: skip
        ax.scatter(X[::8, 0], X[::8, 1], s=2, c="tab:cyan")
        ax.set_title(name, fontsize=10)
        ax.set_aspect("equal")
    fig.colorbar(image, ax=axes, shrink=0.8, label="anomaly score 2^(-E[h]/c(256))")
    fig.savefig(HERE / "isolation_score_map.png", dpi=70)


def clusters():
    X, y = rotated_clusters(300, np.random.default_rng(0))
    order = np.argsort(y, kind="stable")
    fig, axes = plt.subplots(2, 2, figsize=(9, 8.4), constrained_layout=True)
    for col, (name, projection) in enumerate([("axis-aligned", None), ("SPORF", SparseSigned())]):
        urf = UnsupervisedRandomForest(60, projection=projection, max_features=2.0,
                                       random_state=0).fit(X)  # fmt: skip
        P = urf.proximity(X)
        labels = SpectralClustering(2, affinity="precomputed", random_state=0).fit_predict(
            P.toarray()
        )
        ari = adjusted_rand_score(y, labels)
        axes[0, col].scatter(X[:, 0], X[:, 1], c=labels, s=8, cmap="coolwarm")
        axes[0, col].set_title(f"{name}: spectral clustering, ARI {ari:.2f}", fontsize=10)
        axes[0, col].set_aspect("equal")
        # averaged over blocks of 4 x 4 rows: the structure, not 90,000 pixels of noise
        blocks = P.toarray()[np.ix_(order, order)].reshape(75, 4, 75, 4).mean(axis=(1, 3))
        axes[1, col].imshow(blocks, cmap="Greys", vmin=0, vmax=0.3, extent=(0, 300, 300, 0))
        axes[1, col].set_title(f"{name}: proximity (rows by true cluster)", fontsize=10)
    fig.savefig(HERE / "unsupervised_clusters.png", dpi=70)


if __name__ == "__main__":
    score_map()
    clusters()
    print(f"wrote {HERE / 'isolation_score_map.png'} and {HERE / 'unsupervised_clusters.png'}")
