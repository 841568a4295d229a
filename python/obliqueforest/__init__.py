"""obliqueforest: projection decision forests with a Rust core.

Axis-aligned random forests, SPORF, Forest-RC, dense random projections and MORF
patches are samplers of one tree engine (Tomita et al. 2020); rotation ensembles
(Blaser & Fryzlewicz 2021) and forest autoencoders (Vu et al.) are built on it.
"""

from . import datasets, projections
from ._core import (
    FORMAT_VERSION,
    MODEL_FORMAT_VERSION,
    ForestError,
    memory_limit,
    set_memory_limit,
)
from ._core import __version__ as __version__
from ._forest import (
    ObliqueForestClassifier,
    ObliqueForestRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
    SPORFClassifier,
    SPORFRegressor,
)
from ._io import load
from .morf import MORFClassifier, MORFRegressor

__all__ = [
    "FORMAT_VERSION",
    "MODEL_FORMAT_VERSION",
    "ForestError",
    "MORFClassifier",
    "MORFRegressor",
    "ObliqueForestClassifier",
    "ObliqueForestRegressor",
    "RandomForestClassifier",
    "RandomForestRegressor",
    "SPORFClassifier",
    "SPORFRegressor",
    "datasets",
    "load",
    "memory_limit",
    "projections",
    "set_memory_limit",
]


# Loaded on first use (they import more of scipy and scikit-learn): name -> (module, attribute
# or None for the module itself). `dir()` and `__all__` list them like the names above.
_LAZY = {
    "RotationEnsembleClassifier": ("rotation", "RotationEnsembleClassifier"),
    "RotationEnsembleRegressor": ("rotation", "RotationEnsembleRegressor"),
    "ForestAutoencoder": ("autoencoder", "ForestAutoencoder"),
    "autoencoder": ("autoencoder", None),
    "interpret": ("interpret", None),
    "plotting": ("plotting", None),
    "rotation": ("rotation", None),
    "tuning": ("tuning", None),
}
__all__ += [name for name, (_, attr) in _LAZY.items() if attr is not None]


def __getattr__(name):
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        loaded = importlib.import_module(f"{__name__}.{module}")
        return loaded if attr is None else getattr(loaded, attr)
    raise AttributeError(f"module 'obliqueforest' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
