"""Estimator signatures static tools can read (issue 44 item 4): each estimator's
``__init__`` is committed code in its class, written from its parameter table by
``python -m obliqueforest._signatures``; the committed files must be that command's output,
and ``Surface.declare`` refuses at import an ``__init__`` that is not its table's."""

from __future__ import annotations

import ast
import difflib
import importlib
import inspect
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from obliqueforest import _signatures
from obliqueforest._estimators import ESTIMATORS
from obliqueforest._surface import Param, Surface

COMMAND = "python -m obliqueforest._signatures"
ROOT = Path(__file__).resolve().parents[1]


def _estimator_classes():
    from obliqueforest._rotation_trees import RotationTreeClassifier, RotationTreeRegressor
    from obliqueforest._trees import ObliqueTreeClassifier, ObliqueTreeRegressor

    listed = [getattr(importlib.import_module(m), n) for n, m in ESTIMATORS.items()]
    trees = [ObliqueTreeClassifier, ObliqueTreeRegressor]
    return [*listed, *trees, RotationTreeClassifier, RotationTreeRegressor]


def test_committed_inits_are_the_generated_ones():
    stale = {}
    for path, text in _signatures.generated_files().items():
        committed = path.read_text()
        if committed != text:
            diff = difflib.unified_diff(
                committed.splitlines(True), text.splitlines(True), "committed", "generated"
            )
            stale[path.relative_to(ROOT).as_posix()] = "".join(list(diff)[:40])
    assert stale == {}, f"not what the parameter tables give: run `{COMMAND}`"


def test_every_estimator_has_its_generated_init_in_its_class():
    declared = _signatures.declared_classes()
    for cls in _estimator_classes():
        assert cls in declared, cls
        init = vars(cls)["__init__"]
        assert init.__code__.co_filename == inspect.getsourcefile(cls), cls
        source = inspect.getsource(cls).splitlines()
        at = source.index("    def __init__(")
        assert source[at - 2 : at] == [f"    {_signatures.BEGIN}", "    # fmt: off"], cls


def test_generated_init_only_stores_its_arguments():
    for cls in _signatures.declared_classes():
        node = ast.parse(textwrap.dedent(inspect.getsource(vars(cls)["__init__"]))).body[0]
        body = [ast.unparse(statement) for statement in node.body]
        assert body == [f"self.{n} = {n}" for n in cls._surface.names()], cls


def test_generator_command_checks_the_committed_files():
    out = subprocess.run(
        [sys.executable, "-m", "obliqueforest._signatures", "--check"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (out.returncode, out.stdout, out.stderr) == (0, "", "")


# -- a drift is refused at import, naming the command ---------------------------------------
SURFACE = Surface(
    [
        Param("alpha", 1.0, "no_validation", "float", "A."),
        Param("beta", "x", "no_validation", "str", "B."),
        Param("gamma", None, "no_validation", "None", "C."),
    ],
    positional=1,
)


def _declared(init_source):
    namespace = {"Any": Any}
    exec(f"class Estimator:\n{textwrap.indent(init_source, '    ')}", namespace)
    return _declared_class(namespace["Estimator"])


def _declared_class(cls):
    return SURFACE.declare(doc="An estimator.")(cls)


@pytest.mark.parametrize(
    ("init", "problem"),
    [
        ("def __init__(self, alpha=2.0, *, beta='x', gamma=None): pass", "alpha: default 2.0"),
        ("def __init__(self, alpha=1, *, beta='x', gamma=None): pass", "alpha: default 1 in"),
        ("def __init__(self, alpha=1.0, *, beta='y', gamma=None): pass", "beta: default 'y'"),
        ("def __init__(self, alpha=1.0, *, gamma=None, beta='x'): pass", "takes (self, alpha"),
        ("def __init__(self, alpha=1.0, beta='x', *, gamma=None): pass", "takes (self, alpha"),
        ("def __init__(self, alpha=1.0, *, beta='x'): pass", "takes (self, alpha, *, beta)"),
        ("def __init__(self, alpha=1.0, *, betta='x', gamma=None): pass", "betta"),
        ("def __init__(self, alpha=1.0, *, beta='x', gamma=None, **kw): pass", "**kw"),
        ("x = 1", "the class defines none"),
    ],
)
def test_declare_refuses_an_init_that_is_not_its_tables(init, problem):
    with pytest.raises(TypeError, match="Estimator.__init__ does not match") as error:
        _declared(init)
    assert problem in str(error.value) and f"`{COMMAND}`" in str(error.value)


def test_declare_accepts_the_generated_init_with_the_tables_defaults():
    cls = _declared(textwrap.dedent(SURFACE.init_source()))
    signature = inspect.signature(cls)
    assert str(signature) == "(alpha=1.0, *, beta='x', gamma=None)"
    assert signature.parameters["alpha"].default is SURFACE["alpha"].default
    assert vars(cls(2.0, gamma=3)) == {"alpha": 2.0, "beta": "x", "gamma": 3}


def test_a_hand_edited_estimator_default_is_refused():
    from obliqueforest import RandomForestClassifier

    surface = RandomForestClassifier._surface
    default = surface["n_estimators"].default
    edited = surface.init_source().replace(f"n_estimators: Any = {default},", "n_estimators=7,")
    namespace = {"Any": Any}
    exec(f"class RandomForestClassifier:\n{edited}", namespace)
    message = f"n_estimators: default 7 in __init__, {default} in the table"
    with pytest.raises(TypeError, match=message):
        surface.declare()(namespace["RandomForestClassifier"])


# -- the generator writes a class's missing __init__ -----------------------------------------
class Estimator:
    _surface = SURFACE


_GENERATED = f"    {_signatures.BEGIN}\n    # fmt: off\n{SURFACE.init_source()}    # fmt: on\n"


IMPORT = "from typing import Any\n\n\n"


@pytest.mark.parametrize(
    ("module", "expected"),
    [
        (  # a lone pass
            "class Estimator(Base):\n    pass\n\n\nx = 1\n",
            f"class Estimator(Base):\n{_GENERATED}\n\nx = 1\n",
        ),
        (  # after the docstring, before the methods
            'class Estimator:\n    """Doc."""\n\n    def fit(self):\n        pass\n',
            f'class Estimator:\n    """Doc."""\n\n{_GENERATED}\n    def fit(self):\n        pass\n',
        ),
        (  # before a decorated method
            "class Estimator:\n    @property\n    def p(self):\n        pass\n",
            f"class Estimator:\n{_GENERATED}\n    @property\n    def p(self):\n        pass\n",
        ),
    ],
)
def test_generator_writes_a_missing_init(module, expected):
    written = _signatures.with_init(IMPORT + module, Estimator)
    assert written == IMPORT + expected
    assert _signatures.with_init(written, Estimator) == written
    namespace = {}
    exec(written.replace("class Estimator(Base)", "class Estimator"), namespace)
    assert str(inspect.signature(_declared_class(namespace["Estimator"]))) == (
        "(alpha=1.0, *, beta='x', gamma=None)"
    )


def test_generator_rewrites_a_stale_init():
    current = _signatures.with_init(IMPORT + "class Estimator:\n    pass\n", Estimator)
    stale = current.replace("alpha: Any = 1.0", "alpha: Any = 2.0")
    stale = stale.replace("        self.gamma = gamma\n", "")
    assert stale != current and _signatures.with_init(stale, Estimator) == current
    own = IMPORT + "class Estimator:\n    def __init__(self):\n        pass\n"
    with pytest.raises(ValueError, match="has its own __init__"):
        _signatures.with_init(own, Estimator)
    with pytest.raises(ValueError, match="must import Any from typing"):
        _signatures.with_init("class Estimator:\n    pass\n", Estimator)
