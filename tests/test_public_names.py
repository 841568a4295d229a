"""The package's namespace: every public name is listed by `dir()` (tab completion) and
`__all__`, also those that load on first use."""

import subprocess
import sys


def _fresh(code):
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    return out.stdout.split()


def test_dir_lists_the_lazily_loaded_names_before_they_load():
    names = _fresh(
        "import sys, obliqueforest as of\n"
        "assert 'obliqueforest.rotation' not in sys.modules\n"
        "print(*dir(of))"
    )
    for name in ("RotationEnsembleClassifier", "RotationEnsembleRegressor", "ForestAutoencoder",
                 "SPORFClassifier", "load", "interpret", "tuning", "rotation"):  # fmt: skip
        assert name in names


def test_every_listed_name_resolves():
    import obliqueforest as of

    for name in dir(of):
        getattr(of, name)
    for name in of.__all__:
        assert name in dir(of)
        assert getattr(of, name) is not None
    from obliqueforest.autoencoder import ForestAutoencoder
    from obliqueforest.rotation import RotationEnsembleClassifier

    assert of.ForestAutoencoder is ForestAutoencoder
    assert of.RotationEnsembleClassifier is RotationEnsembleClassifier
    assert {"RotationEnsembleClassifier", "ForestAutoencoder"} <= set(of.__all__)
