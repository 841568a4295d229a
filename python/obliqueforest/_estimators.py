"""The estimators of the package, listed once.

:data:`ESTIMATORS` names every estimator class a model file may hold and the module that
defines it, in the order of the crate's ``model::Estimator::ALL``
(``_core.estimator_names()``; ``tests/test_estimators.py`` checks that they agree).
``obliqueforest`` exports them (each module imported on first use), :mod:`obliqueforest._io`
rebuilds a model file's estimator by its name, and the command line's short names
(:data:`CLI_NAMES`, and :data:`CLI_WITHOUT_TARGETS` for the forests grown on X alone)
refer to them. This module imports no estimator code.
"""

from __future__ import annotations

import importlib

__all__ = ["CLI_NAMES", "CLI_WITHOUT_TARGETS", "ESTIMATORS", "estimator_class"]

ESTIMATORS = {
    "RandomForestClassifier": "obliqueforest._forest",
    "RandomForestRegressor": "obliqueforest._forest",
    "SPORFClassifier": "obliqueforest._forest",
    "SPORFRegressor": "obliqueforest._forest",
    "MORFClassifier": "obliqueforest.morf",
    "MORFRegressor": "obliqueforest.morf",
    "ObliqueForestClassifier": "obliqueforest._forest",
    "ObliqueForestRegressor": "obliqueforest._forest",
    "RotationEnsembleClassifier": "obliqueforest.rotation",
    "RotationEnsembleRegressor": "obliqueforest.rotation",
    "ForestAutoencoder": "obliqueforest.autoencoder",
    "UnsupervisedRandomForest": "obliqueforest.unsupervised",
    "IsolationForest": "obliqueforest.unsupervised",
}

#: The command line's estimator names: (classifier, regressor) of each forest family and
#: of the rotation ensembles.
CLI_NAMES = {
    "rf": ("RandomForestClassifier", "RandomForestRegressor"),
    "sporf": ("SPORFClassifier", "SPORFRegressor"),
    "morf": ("MORFClassifier", "MORFRegressor"),
    "oblique": ("ObliqueForestClassifier", "ObliqueForestRegressor"),
    "rotation": ("RotationEnsembleClassifier", "RotationEnsembleRegressor"),
}

#: The command line's names of the forests grown without targets (one estimator each).
CLI_WITHOUT_TARGETS = {
    "isolation": "IsolationForest",
    "unsupervised": "UnsupervisedRandomForest",
}


def estimator_class(name: str):
    """The class of estimator ``name`` (one of :data:`ESTIMATORS`), its module imported
    on first use.

    Raises
    ------
    KeyError
        For a name that is not listed.
    """
    return getattr(importlib.import_module(ESTIMATORS[name]), name)
