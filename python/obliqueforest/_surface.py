"""Declared estimator surfaces: parameters written once, signatures derived from them.

A :class:`Param` holds everything about one constructor parameter (name, default,
scikit-learn constraint, numpydoc type and description, and the core field it feeds); a
:class:`Surface` is an ordered set of them. ``Surface.declare`` gives a class

* ``_parameter_constraints`` (scikit-learn's validation, run by ``fit``), and
* the numpydoc ``Parameters`` section of its docstring,

from the same entries, and checks its ``__init__``: a plain method in the class's source
that only stores its arguments, written from the surface by
``python -m obliqueforest._signatures`` (:meth:`Surface.init_source`), so that IDEs, mypy
and pyright see every parameter, as :func:`inspect.signature`, scikit-learn's
``get_params``, ``set_params`` and ``clone`` do (no ``**kwargs``). A class whose
``__init__`` does not take the surface's parameters, in its order, keyword-only markers
and defaults, is refused at import with that command. An estimator composes its surface
from shared tables (:data:`obliqueforest._params.FOREST_PARAMS`) and its own parameters::

    SURFACE = forest_params("classification").insert(SPORF_PARAMS, after="max_features")

    @SURFACE.declare(doc="...summary...", tail=ATTRIBUTES_DOC)
    class SPORFClassifier(...):
        # (the generated __init__, between its marker comments)
        ...
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import keyword
from typing import Any, Callable, Iterable, TypeVar

__all__ = ["GENERATOR", "Param", "Surface"]

_C = TypeVar("_C", bound=type)

#: What a parameter may need of an estimator (:attr:`Param.needs`).
NEEDS = frozenset({"ensemble", "targets", "categorical"})

#: The module whose command writes the estimators' ``__init__`` from their surfaces.
GENERATOR = "obliqueforest._signatures"

#: Whether :meth:`Surface.declare` checks each class's ``__init__`` (and refuses a stale
#: one at import). Only the generator turns it off, as it imports the estimators to
#: rewrite their ``__init__``.
CHECK_INITS = True


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
    needs : tuple of str
        What an estimator must be to take the parameter, so that the surfaces that are
        not leave it out by kind (:meth:`Surface.without`) rather than by name:
        ``"ensemble"`` (many trees: the forests, not the single trees), ``"targets"``
        (trees grown from targets, not the forests without) and ``"categorical"``
        (categorical columns, which MORF's patches and the rotations do not take). A
        parameter with no needs joins every surface drawn from its table.
    saved_at_default : bool
        False: a model file leaves the parameter out while it has its default, and a file
        saved before the parameter existed reads as fitted with the default.
    """

    name: str
    default: Any
    constraints: Any
    type: str
    doc: str
    core: str | None = None
    to_core: Callable | None = None
    needs: tuple = ()
    saved_at_default: bool = True

    def __post_init__(self):
        if not self.name.isidentifier() or keyword.iskeyword(self.name):
            raise ValueError(f"{self.name!r} is not a parameter name")
        if not isinstance(self.needs, tuple) or not set(self.needs) <= NEEDS:
            raise ValueError(f"needs of {self.name} must be a tuple of {sorted(NEEDS)}")
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

    def without(self, *needs, positional: int | None = None) -> Surface:
        """The parameters that need none of ``needs`` (see :attr:`Param.needs`)."""
        if not set(needs) <= NEEDS:
            raise ValueError(f"needs must be among {sorted(NEEDS)}, got {needs}")
        kept = [p for p in self._params if not set(p.needs) & set(needs)]
        return Surface(kept, self._positional(positional))

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

    def signature(self) -> inspect.Signature:
        """The signature of the ``__init__`` this surface gives (``self`` first)."""
        P = inspect.Parameter
        params = [P("self", P.POSITIONAL_OR_KEYWORD)]
        for i, p in enumerate(self._params):
            kind = P.POSITIONAL_OR_KEYWORD if i < self.positional else P.KEYWORD_ONLY
            params.append(P(p.name, kind, default=p.default))
        return inspect.Signature(params)

    def init_source(self, indent: str = "    ", width: int = 100) -> str:
        """The source of the class's ``__init__``, as ``python -m obliqueforest._signatures``
        writes it into the class: the signature, its parameters wrapped at ``width``
        columns, and a body that stores each argument under its name, nothing else.

        Each parameter is annotated ``Any`` (the module imports it from :mod:`typing`):
        unannotated, pyright would take a parameter's type from its default and refuse
        ``max_features=0.5`` where the default is ``"sqrt"``. ``declare`` drops the
        annotations at run time, so :func:`inspect.signature` shows none.
        """
        args = ["self", *(f"{p.name}: Any = {_literal(p.default)}" for p in self._params)]
        if self.positional < len(self._params):
            args.insert(1 + self.positional, "*")
        inner = indent * 2
        lines, line = [], ""
        for arg in args:
            if line and len(inner) + len(line) + len(arg) + 2 > width:
                lines.append(line)
                line = ""
            line = f"{line} {arg}," if line else f"{arg},"
        lines.append(line)
        body = [f"{inner}self.{p.name} = {p.name}" for p in self._params] or [f"{inner}pass"]
        head = [f"{indent}def __init__(", *(inner + x for x in lines), f"{indent}):"]
        return "\n".join([*head, *body]) + "\n"

    def init_problems(self, init) -> list:
        """How ``init`` (a class's ``__init__``, None when it has none) differs from
        :meth:`signature`: parameters, their order and kinds, defaults (of the same type
        and repr, so ``1`` is not ``1.0``); ``[]`` when it does not."""
        if init is None:
            return ["the class defines none"]
        want = list(self.signature().parameters.values())
        have = list(inspect.signature(init).parameters.values())
        if [(p.name, p.kind) for p in have] != [(p.name, p.kind) for p in want]:
            return [f"takes {_params_text(have)}, the table {_params_text(want)}"]
        return [
            f"{w.name}: default {h.default!r} in __init__, {w.default!r} in the table"
            for h, w in zip(have, want)
            if not _same_default(h.default, w.default)
        ]

    def declare(self, doc: str | None = None, tail: str = "") -> Callable[[_C], _C]:
        """Class decorator: checks the class's ``__init__`` against this surface and gives
        the class ``_parameter_constraints`` and its docstring's ``Parameters`` section;
        ``cls._surface`` is the surface itself.

        With ``doc``, the docstring is ``doc + Parameters + tail``; without, the section
        goes into the class's own docstring (written without one) before its first
        other numpydoc section (Attributes, Notes, ...), or at its end.

        Raises
        ------
        TypeError
            When the class's own ``__init__`` is missing or is not this surface's (see
            :meth:`init_problems`), naming the command that writes it.
        """

        def apply(cls: _C) -> _C:
            init = vars(cls).get("__init__")
            if CHECK_INITS:
                problems = self.init_problems(init)
                if problems:
                    raise TypeError(
                        f"{cls.__qualname__}.__init__ does not match its parameter table "
                        f"({'; '.join(problems)}): write it with "
                        f"`python -m {GENERATOR}`"
                    )
                # The defaults become the table's own objects (equal to the literals in
                # the source, as just checked), so each default is one object shared by
                # every estimator and instance, as the table declares it; the annotations
                # (Any, for static tools) go, so the signature reads as it always has
                # (docs/api.md, help()).
                init.__annotations__ = {}
                defaults = [p.default for p in self._params]
                init.__defaults__ = tuple(defaults[: self.positional]) or None
                names = self.names()[self.positional :]
                init.__kwdefaults__ = dict(zip(names, defaults[self.positional :])) or None
            cls._parameter_constraints = self.constraints()
            cls._surface = self
            if doc is not None:
                cls.__doc__ = f"{doc.rstrip()}\n\n{self.doc()}{tail}"
            elif cls.__doc__:
                cls.__doc__ = _with_section(cls.__doc__, self.doc())
            return cls

        return apply


def _literal(value) -> str:
    """``value`` as Python source (strings in double quotes, as ruff writes them).

    Raises
    ------
    ValueError
        For a value no literal writes back (a default must be one: None, a bool, number,
        string or a tuple of them).
    """
    if isinstance(value, str) and value.isprintable() and not {'"', "\\"} & set(value):
        text = f'"{value}"'
    else:
        text = repr(value)
    try:
        ok = _same_default(ast.literal_eval(text), value)
    except (ValueError, SyntaxError):
        ok = False
    if not ok:
        raise ValueError(f"the default {value!r} cannot be written as a Python literal")
    return text


def _same_default(a, b) -> bool:
    """Equal defaults: the same type and repr (``1``, ``1.0`` and ``True`` differ)."""
    return type(a) is type(b) and repr(a) == repr(b)


def _params_text(params) -> str:
    return str(inspect.Signature([p.replace(default=inspect.Parameter.empty) for p in params]))


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
