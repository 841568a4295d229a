"""obliqueforest: projection decision forests with a Rust core.

Axis-aligned random forests, SPORF, Forest-RC, dense random projections and MORF
patches are samplers of one tree engine (Tomita et al. 2020); rotation ensembles
(Blaser & Fryzlewicz 2021) and forest autoencoders (Vu et al.) are built on it.
"""

import typing as _typing

from . import datasets, projections
from ._core import (
    FORMAT_VERSION,
    MODEL_FORMAT_VERSION,
    ForestError,
    ForestInternalError,
    memory_limit,
    set_memory_limit,
)
from ._core import __version__ as __version__
from ._estimators import ESTIMATORS as _ESTIMATORS
from ._estimators import estimator_class as _estimator_class
from ._io import load

# generated from the estimator table by `python -m obliqueforest._signatures`: do not edit
if _typing.TYPE_CHECKING:  # for static tools; at run time they load on first use
    from ._forest import RandomForestClassifier as RandomForestClassifier
    from ._forest import RandomForestRegressor as RandomForestRegressor
    from ._forest import SPORFClassifier as SPORFClassifier
    from ._forest import SPORFRegressor as SPORFRegressor
    from .morf import MORFClassifier as MORFClassifier
    from .morf import MORFRegressor as MORFRegressor
    from ._forest import ObliqueForestClassifier as ObliqueForestClassifier
    from ._forest import ObliqueForestRegressor as ObliqueForestRegressor
    from .rotation import RotationEnsembleClassifier as RotationEnsembleClassifier
    from .rotation import RotationEnsembleRegressor as RotationEnsembleRegressor
    from .autoencoder import ForestAutoencoder as ForestAutoencoder
    from .unsupervised import UnsupervisedRandomForest as UnsupervisedRandomForest
    from .unsupervised import IsolationForest as IsolationForest

if _typing.TYPE_CHECKING:
    from .explain import TreeExplainer as TreeExplainer

# the estimators (obliqueforest._estimators.ESTIMATORS) load on first use
__all__ = [
    "FORMAT_VERSION",
    "MODEL_FORMAT_VERSION",
    "ForestError",
    "ForestInternalError",
    *_ESTIMATORS,
    "TreeExplainer",
    "datasets",
    "load",
    "memory_limit",
    "projections",
    "set_memory_limit",
]


# Modules loaded on first use (they import more of scipy and scikit-learn); `dir()` lists
# them with the names above.
_LAZY_MODULES = ("autoencoder", "explain", "interpret", "plotting", "rotation", "tuning")


def __getattr__(name):
    if name in _ESTIMATORS:
        cls = _estimator_class(name)
        globals()[name] = cls
        return cls
    if name == "TreeExplainer":
        from .explain import TreeExplainer

        return TreeExplainer
    if name in _LAZY_MODULES:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'obliqueforest' has no attribute {name!r}")


def __dir__():
    return sorted({*globals(), *__all__, *_LAZY_MODULES})
