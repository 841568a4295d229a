"""One list of estimators (issue 27): the package's exports, model files (``_io`` and the
crate's ``model::Estimator``) and the command line name the same estimators."""

from __future__ import annotations

import importlib
import inspect

import obliqueforest
from obliqueforest import _core, _io, cli
from obliqueforest._estimators import CLI_NAMES, ESTIMATORS


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
