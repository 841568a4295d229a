"""Smoke test of an installed wheel, run from outside the source tree: fit, predict, save,
load, for a forest and a rotation ensemble, and the command line."""

import pathlib
import subprocess
import sys
import tempfile

import numpy as np

import obliqueforest as of
from obliqueforest.datasets import make_sparse_parity

here = pathlib.Path(of.__file__).resolve()
assert "site-packages" in here.parts, f"imported from {here}, not from the installed wheel"

X, y = make_sparse_parity(600, n_features=10, n_informative=3, random_state=0)
with tempfile.TemporaryDirectory() as tmp:
    for est in [
        of.SPORFClassifier(20, random_state=0),
        of.RotationEnsembleClassifier(20, n_rotations=3, random_state=0),
    ]:
        est.fit(X, y)
        path = pathlib.Path(tmp) / "m.of"
        est.save(path)
        again = of.load(path)
        assert (again.predict_proba(X) == est.predict_proba(X)).all()
        print(type(est).__name__, "train accuracy", est.score(X, y))
out = subprocess.run(
    [sys.executable, "-m", "obliqueforest", "--version"], capture_output=True, text=True
)
assert out.returncode == 0 and of.__version__ in out.stdout, out
print("wheel smoke test passed:", of.__version__, "from", here.parent)
np.testing.assert_equal(of.FORMAT_VERSION > 0, True)
