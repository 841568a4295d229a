"""One list of estimators (issue 27): the package's exports, model files (``_io`` and the
crate's ``model::Estimator``) and the command line name the same estimators."""

from __future__ import annotations

import importlib
import inspect

import obliqueforest
from obliqueforest import _core, _io, cli
from obliqueforest._estimators import CLI_NAMES, CLI_WITHOUT_TARGETS, ESTIMATORS


def test_one_list_of_estimators_everywhere():
    names = list(ESTIMATORS)
    # the crate's model::Estimator, in its declaration order
    assert names == _core.estimator_names()
    # the package exports each (and dir() lists the lazily imported ones too)
    assert set(names) <= set(obliqueforest.__all__) and set(names) <= set(dir(obliqueforest))
    for name, module in ESTIMATORS.items():
        cls = getattr(obliqueforest, name)
        assert inspect.isclass(cls) and cls.__name__ == name
        assert getattr(importlib.import_module(module), name) is cls
        # model files rebuild it by name
        assert _io._estimator_class(name) is cls
    # the command line's names refer to listed estimators
    for table in (CLI_NAMES, cli._ESTIMATORS):
        assert {n for pair in table.values() for n in pair} <= set(names)
    assert set(CLI_WITHOUT_TARGETS.values()) <= set(names)
    assert set(CLI_WITHOUT_TARGETS) <= set(cli._ESTIMATOR_CHOICES)


def _declared():
    from obliqueforest._trees import ObliqueTreeClassifier, ObliqueTreeRegressor

    classes = [getattr(obliqueforest, name) for name in ESTIMATORS]
    return [c for c in classes if "_surface" in vars(c)] + [
        ObliqueTreeClassifier,
        ObliqueTreeRegressor,
    ]


def test_declared_surfaces_give_real_signatures_constraints_and_docs():
    declared = _declared()
    assert len(declared) >= 11  # the forests, MORF, the autoencoder and the two trees
    for cls in declared:
        surface = cls._surface
        signature = inspect.signature(cls)
        kinds = {p.kind for p in signature.parameters.values()}
        assert inspect.Parameter.VAR_KEYWORD not in kinds, cls
        assert list(signature.parameters) == surface.names()
        assert sorted(cls._get_param_names()) == sorted(surface.names())
        assert cls._parameter_constraints.keys() == set(surface.names())
        est = cls()
        for p in surface:
            assert signature.parameters[p.name].default is p.default
            assert getattr(est, p.name) is p.default  # __init__ only stores
            assert f"\n    {p.name} : {p.type}, default=" in cls.__doc__, (cls, p.name)
        assert cls.__doc__.count("    Parameters\n    ----------\n") == 1
        assert set(vars(est)) == set(surface.names())


def test_presets_do_not_carry_the_generic_projection():
    for name in ("RandomForestClassifier", "SPORFRegressor", "MORFClassifier"):
        est = getattr(obliqueforest, name)()
        assert "projection" not in est.get_params() and not hasattr(est, "projection")
    assert "projection" in obliqueforest.ObliqueForestClassifier().get_params()


def test_star_import_gives_every_estimator():
    namespace = {}
    exec("from obliqueforest import *", namespace)
    assert set(ESTIMATORS) <= set(namespace)
