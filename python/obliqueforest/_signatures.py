"""Each estimator's ``__init__``, written into its class from its parameter table.

An estimator's parameters are declared once (:mod:`obliqueforest._surface`), and its
``__init__`` is plain code in its class, between two marker comments::

    # generated from the parameter table by `python -m obliqueforest._signatures`: do not edit
    # fmt: off
    def __init__(
        self, n_estimators: Any = 100, *, criterion: Any = "gini", ...,
    ):
        self.n_estimators = n_estimators
        ...
    # fmt: on

so that IDEs, mypy and pyright see the parameters that :func:`inspect.signature` and
scikit-learn see (annotated ``Any``, which the module imports from :mod:`typing`;
:meth:`~obliqueforest._surface.Surface.init_source` says why). The package's
``__init__.py`` likewise imports the estimators of
:data:`obliqueforest._estimators.ESTIMATORS` under ``TYPE_CHECKING`` (for static tools
only: at run time they still load on first use). After changing a parameter or an
estimator, write them again::

    python -m obliqueforest._signatures          # rewrite the files that differ
    python -m obliqueforest._signatures --check  # name them and exit 1; write nothing

``Surface.declare`` refuses at import an ``__init__`` whose parameters, order, keyword-only
marker or defaults are not its table's, and ``tests/test_signatures.py`` checks that the
committed files are this module's output, text for text.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import sys
from pathlib import Path

from . import _surface
from ._estimators import ESTIMATORS

__all__ = ["declared_classes", "generated_files", "main"]

PACKAGE = Path(__file__).resolve().parent
BEGIN = f"# generated from the parameter table by `python -m {_surface.GENERATOR}`: do not edit"
EXPORTS = f"# generated from the estimator table by `python -m {_surface.GENERATOR}`: do not edit"
# ruff leaves the block as written (parameters packed on lines, not one a line, which would
# take rooms such as autoencoder/_estimator.py over test_structure's size)
OFF, ON = "# fmt: off", "# fmt: on"


def declaring_modules() -> list:
    """The package's modules that declare estimators (their source calls ``.declare(``)."""
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name in ("_surface.py", "_signatures.py") or ".declare(" not in path.read_text():
            continue
        names.append(".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts))
    return names


def declared_classes() -> list:
    """Every class of the package declared from a surface, by module and name."""
    out = []
    for name in declaring_modules():
        module = importlib.import_module(name)
        out += sorted(
            (
                c
                for c in vars(module).values()
                if isinstance(c, type) and c.__module__ == name and "_surface" in vars(c)
            ),
            key=lambda c: c.__name__,
        )
    return out


def generated_files() -> dict:
    """Each file the generator writes (a :class:`~pathlib.Path`) and the text it should
    have: every declared class's module with its generated ``__init__``, and the package's
    ``__init__.py`` with its ``TYPE_CHECKING`` imports."""
    texts = {}
    for cls in declared_classes():
        path = Path(inspect.getsourcefile(cls)).resolve()
        texts[path] = with_init(texts.get(path) or path.read_text(), cls)
    path = PACKAGE / "__init__.py"
    texts[path] = with_exports(path.read_text())
    return texts


def with_init(text: str, cls) -> str:
    """``text``, the source of ``cls``'s module, with ``cls``'s generated ``__init__``:
    its block replaced, or inserted after the class's docstring (in place of a lone
    ``pass``) when it has none yet."""
    module = ast.parse(text).body
    node = next((n for n in module if isinstance(n, ast.ClassDef) and n.name == cls.__name__), None)
    if node is None:
        raise ValueError(f"{cls.__qualname__} is not a class at the top of its module")
    if not any(_imports_any(n) for n in module):
        raise ValueError(
            f"the module of {cls.__qualname__} must import Any from typing (the generated "
            "__init__ annotates its parameters with it)"
        )
    lines = text.splitlines(keepends=True)
    indent = " " * node.body[0].col_offset
    source = cls._surface.init_source(indent).splitlines(keepends=True)
    block = [f"{indent}{BEGIN}\n", f"{indent}{OFF}\n", *source, f"{indent}{ON}\n"]
    starts = [i for i in range(node.lineno, node.end_lineno) if lines[i] == block[0]]
    if starts:
        end = lines.index(block[-1], starts[0])
        return "".join([*lines[: starts[0]], *block, *lines[end + 1 :]])
    if any(isinstance(n, ast.FunctionDef) and n.name == "__init__" for n in node.body):
        raise ValueError(f"{cls.__qualname__} has its own __init__: its surface writes it")
    body = node.body
    if isinstance(body[0], ast.Pass) and len(body) == 1:
        return "".join([*lines[: body[0].lineno - 1], *block, *lines[body[0].end_lineno :]])
    if ast.get_docstring(node, clean=False) is not None:
        at, block = body[0].end_lineno, ["\n", *block]
    else:
        at = _first_line(body[0]) - 1
    # one blank line between the block and what follows it in the class
    gap = ["\n"] if at < node.end_lineno and lines[at].strip() else []
    return "".join([*lines[:at], *block, *gap, *lines[at:]])


def _imports_any(node) -> bool:
    return (
        isinstance(node, ast.ImportFrom)
        and node.module == "typing"
        and any(a.name == "Any" and a.asname is None for a in node.names)
    )


def _first_line(node) -> int:
    return min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])


def with_exports(text: str) -> str:
    """``text``, the package's ``__init__.py``, with its block of ``TYPE_CHECKING``
    imports of :data:`~obliqueforest._estimators.ESTIMATORS` (after its marker line)."""
    lines = text.splitlines(keepends=True)
    if f"{EXPORTS}\n" not in lines:
        raise ValueError(f"the package's __init__.py has lost the line {EXPORTS!r}")
    start = lines.index(f"{EXPORTS}\n")
    end = start + 1
    while end < len(lines) and (end == start + 1 or lines[end].startswith("    ")):
        end += 1
    block = [
        f"{EXPORTS}\n",
        "if _typing.TYPE_CHECKING:  # for static tools; at run time they load on first use\n",
        *(
            f"    from {module[len('obliqueforest') :]} import {name} as {name}\n"
            for name, module in ESTIMATORS.items()
        ),
    ]
    return "".join([*lines[:start], *block, *lines[end:]])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog=f"python -m {_surface.GENERATOR}",
        description="Write each estimator's __init__ from its parameter table.",
    )
    parser.add_argument(
        "--check", action="store_true", help="name the files that differ, exit 1; write none"
    )
    args = parser.parse_args(argv)
    # the estimators must import with their stale __init__, to be rewritten
    _surface.CHECK_INITS = False
    try:
        files = generated_files()
    finally:
        _surface.CHECK_INITS = True
    stale = {path: text for path, text in files.items() if path.read_text() != text}
    for path, text in stale.items():
        if not args.check:
            path.write_text(text)
        print(f"{'differs' if args.check else 'wrote'}: {path.relative_to(PACKAGE.parent.parent)}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
