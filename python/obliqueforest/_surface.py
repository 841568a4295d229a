"""Declared estimator surfaces: parameters written once, signatures derived from them.

A :class:`Param` holds everything about one constructor parameter (name, default,
scikit-learn constraint, numpydoc type and description, and the core field it feeds); a
:class:`Surface` is an ordered set of them. ``Surface.declare`` gives a class

* a real ``__init__`` that only stores its arguments (generated as :mod:`dataclasses`
  generates one, so :func:`inspect.signature`, scikit-learn's ``get_params``,
  ``set_params`` and ``clone`` see every parameter; no ``**kwargs``),
* ``_parameter_constraints`` (scikit-learn's validation, run by ``fit``), and
* the numpydoc ``Parameters`` section of its docstring,

all from the same entries. An estimator composes its surface from shared tables
(:data:`obliqueforest._params.FOREST_PARAMS`) and its own parameters::

    SURFACE = forest_params("classification").insert(SPORF_PARAMS, after="max_features")

    @SURFACE.declare(doc="...summary...", tail=ATTRIBUTES_DOC)
    class SPORFClassifier(...):
        ...
"""

from __future__ import annotations

import dataclasses
import inspect
import keyword
from typing import Any, Callable, Iterable

__all__ = ["Param", "Surface"]


@dataclasses.dataclass(frozen=True)
class Param:
    """One constructor parameter.

    Attributes
    ----------
    name : str
    default : object
        An immutable value (None, a number, a string, a tuple); the generated
        ``__init__`` shares it between instances.
    constraints : list or "no_validation"
        scikit-learn's ``_parameter_constraints`` entry.
    type : str
        The numpydoc type (``"int or float"``); ``default=...`` is appended to it.
    doc : str
        The numpydoc description (indentation of continuation lines does not matter).
    core : str or None
        The ``_core.ForestParams`` field the parameter feeds, if any.
    to_core : callable or None
        Converts the parameter's value for that field (identity when None).
    """

    name: str
    default: Any
    constraints: Any
    type: str
    doc: str
    core: str | None = None
    to_core: Callable | None = None

    def __post_init__(self):
        if not self.name.isidentifier() or keyword.iskeyword(self.name):
            raise ValueError(f"{self.name!r} is not a parameter name")
        if isinstance(self.default, (list, dict, set, bytearray)):
            raise TypeError(f"the default of {self.name} must be immutable")

    def replace(self, **changes) -> Param:
        """This parameter with some fields changed (another default or doc, say)."""
        return dataclasses.replace(self, **changes)

    def core_value(self, value):
        """``value`` of this parameter as the core field ``core`` takes it."""
        return value if self.to_core is None else self.to_core(value)

    def entry(self) -> str:
        """The numpydoc entry, indented for a class docstring."""
        lines = inspect.cleandoc(self.doc).splitlines()
        head = f"    {self.name} : {self.type}, default={_show(self.default)}"
        return "\n".join([head, *(f"        {line}" if line else "" for line in lines)])


def _show(value) -> str:
    """A default as the docs write it (strings in double quotes)."""
    return f'"{value}"' if isinstance(value, str) else repr(value)


class Surface:
    """An ordered set of :class:`Param`; the first ``positional`` may be given by position,
    the others by keyword only (scikit-learn's convention).

    Surfaces are immutable: :meth:`select`, :meth:`drop`, :meth:`replace` and
    :meth:`insert` return new ones.
    """

    def __init__(self, params: Iterable[Param], positional: int = 1):
        self._params = tuple(params)
        names = [p.name for p in self._params]
        duplicated = sorted({n for n in names if names.count(n) > 1})
        if duplicated:
            raise ValueError(f"parameters declared twice: {duplicated}")
        self.positional = min(positional, len(self._params))

    # -- reading ---------------------------------------------------------------------------
    def __iter__(self):
        return iter(self._params)

    def __len__(self) -> int:
        return len(self._params)

    def __contains__(self, name) -> bool:
        return any(p.name == name for p in self._params)

    def __getitem__(self, name) -> Param:
        for p in self._params:
            if p.name == name:
                return p
        raise KeyError(name)

    def names(self) -> list:
        return [p.name for p in self._params]

    def __repr__(self) -> str:
        return f"Surface({self.names()}, positional={self.positional})"

    # -- composing -------------------------------------------------------------------------
    def select(self, *names, positional: int | None = None) -> Surface:
        """These parameters, in this order."""
        return Surface([self[n] for n in names], self._positional(positional))

    def drop(self, *names) -> Surface:
        missing = [n for n in names if n not in self]
        if missing:
            raise KeyError(f"no parameters {missing}")
        return Surface([p for p in self._params if p.name not in names], self.positional)

    def replace(self, name, **changes) -> Surface:
        """The same surface with fields of parameter ``name`` changed."""
        new = self[name].replace(**changes)
        return Surface([new if p.name == name else p for p in self._params], self.positional)

    def insert(self, params, *, after: str | None = None, positional: int | None = None):
        """``params`` (Params or a Surface) inserted after parameter ``after`` (at the start
        when None)."""
        params = list(params)
        at = 0 if after is None else self.names().index(after) + 1
        merged = [*self._params[:at], *params, *self._params[at:]]
        return Surface(merged, self._positional(positional))

    def _positional(self, positional):
        return self.positional if positional is None else positional

    # -- deriving --------------------------------------------------------------------------
    def constraints(self) -> dict:
        """scikit-learn's ``_parameter_constraints`` of these parameters."""
        return {p.name: p.constraints for p in self._params}

    def doc(self) -> str:
        """The numpydoc ``Parameters`` section (heading included)."""
        entries = "\n".join(p.entry() for p in self._params)
        return f"    Parameters\n    ----------\n{entries}\n"

    def init(self, cls) -> Callable:
        """``cls.__init__``: stores each argument under its name, nothing else."""
        args = [f"{p.name}=__defaults[{i}]" for i, p in enumerate(self._params)]
        if self.positional < len(args):
            args.insert(self.positional, "*")
        body = [f"    self.{p.name} = {p.name}" for p in self._params] or ["    pass"]
        source = f"def __init__(self, {', '.join(args)}):\n" + "\n".join(body)
        namespace = {"__defaults": tuple(p.default for p in self._params)}
        exec(source, namespace)  # noqa: S102 (generated from checked identifiers only)
        init = namespace["__init__"]
        init.__module__ = cls.__module__
        init.__qualname__ = f"{cls.__qualname__}.__init__"
        return init

    def declare(self, doc: str | None = None, tail: str = "") -> Callable:
        """Class decorator: the class gets this surface's ``__init__``,
        ``_parameter_constraints`` and its docstring's ``Parameters`` section;
        ``cls._surface`` is the surface itself.

        With ``doc``, the docstring is ``doc + Parameters + tail``; without, the section
        goes into the class's own docstring (written without one) before its first
        other numpydoc section (Attributes, Notes, ...), or at its end.
        """

        def apply(cls):
            cls.__init__ = self.init(cls)
            cls._parameter_constraints = self.constraints()
            cls._surface = self
            if doc is not None:
                cls.__doc__ = f"{doc.rstrip()}\n\n{self.doc()}{tail}"
            elif cls.__doc__:
                cls.__doc__ = _with_section(cls.__doc__, self.doc())
            return cls

        return apply


def _with_section(docstring: str, section: str) -> str:
    """``section`` inserted into a class docstring before its first numpydoc section."""
    lines = docstring.splitlines(keepends=True)
    for i in range(1, len(lines) - 1):
        underline = lines[i + 1].strip()
        if lines[i].strip() and underline and set(underline) == {"-"}:
            if lines[i].strip() == "Parameters":
                raise ValueError("the docstring has its own Parameters section")
            return "".join(lines[:i]) + section + "\n" + "".join(lines[i:])
    return docstring.rstrip() + "\n\n" + section
