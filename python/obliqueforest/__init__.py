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


def __getattr__(name):
    # the rotation ensembles and the autoencoder load on first use
    if name in ("RotationEnsembleClassifier", "RotationEnsembleRegressor"):
        from . import rotation

        return getattr(rotation, name)
    if name == "ForestAutoencoder":
        from . import autoencoder

        return autoencoder.ForestAutoencoder
    raise AttributeError(f"module 'obliqueforest' has no attribute {name!r}")
