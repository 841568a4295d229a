"""Hashes of the forest autoencoder's forests and embeddings over 24 cases (supervised,
random and adversarial forests; arrays and a categorical DataFrame with missing levels;
several arf rounds), one line per case: to show that a restructuring grows the same
autoencoders. Run it with each build on ``PYTHONPATH`` and diff the outputs::

    PYTHONPATH=/tmp/base/python python benches/autoencoder_identity.py > before.txt
    python benches/autoencoder_identity.py > after.txt
    diff before.txt after.txt
"""

from __future__ import annotations

import hashlib
import warnings

import numpy as np
import pandas as pd
from sklearn.datasets import load_iris, make_regression

from obliqueforest import ForestAutoencoder


def _cases():
    rng = np.random.default_rng(0)
    X, y = load_iris(return_X_y=True)
    Xr, yr = make_regression(300, 5, random_state=0)
    df = pd.DataFrame(
        {
            "a": rng.normal(size=300),
            "b": pd.Categorical(rng.choice(list("xyz"), 300), categories=list("xyzw")),
            "c": rng.choice(["p", "q"], 300),
            "d": rng.integers(0, 5, 300),
        }
    )
    df.loc[::17, "b"] = np.nan
    for rs in range(3):
        for mode in ("adversarial", "random"):
            kw = dict(unsupervised=mode, random_state=rs, n_estimators=20)
            yield f"iris-{mode}-{rs}", kw, X, None
            yield f"df-{mode}-{rs}", kw, df, None
        yield f"iris-sup-{rs}", dict(random_state=rs, n_estimators=20), X, y
        yield f"reg-sup-{rs}", dict(random_state=rs, n_estimators=20, max_features=0.5), Xr, yr
        yield f"df-sup-{rs}", dict(random_state=rs, n_estimators=20), df, (df.a > 0).astype(int)
        arf = dict(random_state=rs, n_estimators=15, arf_max_iter=3, min_samples_leaf=3)
        yield f"arf-{rs}", arf, Xr, None


def main():
    warnings.simplefilter("ignore")
    for name, kw, X, y in _cases():
        ae = ForestAutoencoder(n_components=3, **kw).fit(X, y)
        forest = hashlib.sha256(ae._core().to_bytes()).hexdigest()[:16]
        embedding = hashlib.sha256(np.round(ae.embedding_, 10).tobytes()).hexdigest()[:12]
        print(name, forest, embedding)


if __name__ == "__main__":
    main()
