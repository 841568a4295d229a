"""Draws the two figures of docs/quantile_honest.md (needs matplotlib):

* ``docs/img/quantile_band.png``: a quantile regression forest's 90% prediction band on
  one-dimensional heteroscedastic data, with held-out points;
* ``docs/img/honest_calibration.png``: reliability curves of a forest and of the same
  forest with ``honest_fraction=0.5`` on noisy XOR (the example of the page).

Run ``python docs/plot_quantile_honest.py`` from the repository root (a few seconds).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.calibration import calibration_curve  # noqa: E402

import obliqueforest as of  # noqa: E402

OUT = Path(__file__).resolve().parent / "img"


def band():
    rng = np.random.default_rng(0)

    def sample(n):
        x = rng.uniform(0, 10, n)
        return x, x * np.sin(x) + (0.2 + 0.3 * x) * rng.normal(size=n)

    x, y = sample(1000)
    x_test, y_test = sample(300)
    qrf = of.RandomForestRegressor(
        n_estimators=200, min_samples_leaf=10, store_leaf_values=True, random_state=0
    ).fit(x[:, None], y)
    grid = np.linspace(0, 10, 400)
    lo, median, hi = qrf.predict_quantiles(grid[:, None], [0.05, 0.5, 0.95]).T
    lo_t, hi_t = qrf.predict_interval(x_test[:, None], coverage=0.9).T
    inside = (y_test >= lo_t) & (y_test <= hi_t)
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.fill_between(grid, lo, hi, color="tab:blue", alpha=0.25, label="5%-95% quantiles")
    ax.plot(grid, median, color="tab:blue", label="median")
    ax.scatter(x_test[inside], y_test[inside], s=6, color="k", label="held-out, inside")
    ax.scatter(x_test[~inside], y_test[~inside], s=10, color="tab:red", label="outside")
    ax.set(
        xlabel="x",
        ylabel="y",
        title=f"RandomForestRegressor(store_leaf_values=True): coverage {inside.mean():.2f}",
    )
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(OUT / "quantile_band.png", dpi=90)


def calibration():
    def noisy_xor(n, seed):
        rng = np.random.default_rng(seed)
        X = rng.normal(size=(n, 4))
        y = ((X[:, 0] > 0) ^ (X[:, 1] > 0)).astype(int)
        X[:, :2] += rng.normal(size=(n, 2))
        return X, y

    X, y = noisy_xor(2000, 0)
    X_test, y_test = noisy_xor(5000, 1)
    fig, ax = plt.subplots(figsize=(4.5, 4.5))
    ax.plot([0, 1], [0, 1], color="grey", lw=1, ls="--")
    for fraction, label in [(0.0, "SPORF"), (0.5, "SPORF, honest_fraction=0.5")]:
        clf = of.SPORFClassifier(n_estimators=100, honest_fraction=fraction, random_state=0).fit(
            X, y
        )
        p = clf.predict_proba(X_test)[:, 1]
        frac, mean = calibration_curve(y_test, p, n_bins=10)
        brier = np.mean((p - y_test) ** 2)
        ax.plot(mean, frac, marker="o", label=f"{label} (Brier {brier:.3f})")
    ax.set(xlabel="predicted probability", ylabel="observed frequency", title="noisy XOR")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(OUT / "honest_calibration.png", dpi=90)


if __name__ == "__main__":
    OUT.mkdir(exist_ok=True)
    band()
    calibration()
    print(f"wrote {OUT / 'quantile_band.png'} and {OUT / 'honest_calibration.png'}")
