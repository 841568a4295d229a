"""The hand-kept stub ``_core.pyi`` against the compiled extension ``obliqueforest._core``
(the extension is the truth): the same names, each the same kind of object (class,
function, constant of the stub's type; property, method, static method), the same
parameters (names, order, kinds, defaults) for every function, method and constructor,
and for every class the same bases and whether it can be subclassed.

The stub is read with :mod:`ast`, the extension with :mod:`inspect` (pyo3 gives each
function and each ``#[new]`` a ``__text_signature__``), so no type checker is needed.
The mutation test proves that the comparison sees each kind of drift."""

from __future__ import annotations

import ast
import builtins
import inspect
import pathlib
import types

import pytest

from obliqueforest import _core

STUB = pathlib.Path(_core.__file__).with_name("_core.pyi")

# what every module has, not the extension's own names
MODULE_ATTRIBUTES = set("__name__ __doc__ __package__ __loader__ __spec__ __file__ __all__".split())

# names only the stub has
STUB_ONLY = {"CoreX": "a type alias for the stub's annotations; no object at runtime"}

# extension objects without a signature (inspect.signature fails on them), and why
NO_SIGNATURE = {
    "Forest": "no constructor (no #[new]): made by fit, fit_many, from_bytes, ForestPart.join",
    "ForestPart": "no constructor (no #[new]): made by ForestPart.grow and from_bytes",
    "Projection": "no constructor (no #[new]): made by Projection.family",
}

P = inspect.Parameter


def _is_dunder(name):
    return name.startswith("__") and name.endswith("__")


def _stub_names(body):
    """{name: node} of the classes, functions and annotated or assigned names in ``body``."""
    out = {}
    for node in body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            out[node.name] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out[node.target.id] = node
        elif isinstance(node, ast.Assign):
            out.update({t.id: node for t in node.targets if isinstance(t, ast.Name)})
    return out


def _stub_signature(fn, bound):
    """The signature a stub ``def`` declares (annotations left out; defaults are written
    out in the stub, so they are compared as values)."""
    a = fn.args
    positional = [(arg, P.POSITIONAL_ONLY) for arg in a.posonlyargs]
    positional += [(arg, P.POSITIONAL_OR_KEYWORD) for arg in a.args]
    defaults = [P.empty] * (len(positional) - len(a.defaults))
    defaults += [ast.literal_eval(d) for d in a.defaults]
    params = [P(arg.arg, kind, default=d) for (arg, kind), d in zip(positional, defaults)]
    if a.vararg:
        params.append(P(a.vararg.arg, P.VAR_POSITIONAL))
    for arg, d in zip(a.kwonlyargs, a.kw_defaults):
        params.append(
            P(arg.arg, P.KEYWORD_ONLY, default=P.empty if d is None else ast.literal_eval(d))
        )
    if a.kwarg:
        params.append(P(a.kwarg.arg, P.VAR_KEYWORD))
    return inspect.Signature(params[1:] if bound else params)


def _compare_signatures(where, stub_fn, runtime_obj, bound):
    """``bound``: the stub's first parameter is self (or cls), which the extension's
    signature of a method spells positional-only and its signature of a class leaves out."""
    try:
        runtime = inspect.signature(runtime_obj)
    except ValueError:
        return [f"{where}: no signature in the extension (give it one or list it in NO_SIGNATURE)"]
    if bound and not isinstance(runtime_obj, type):
        runtime = runtime.replace(parameters=list(runtime.parameters.values())[1:])
    stub = _stub_signature(stub_fn, bound)
    return [] if stub == runtime else [f"{where}: stub {stub} != extension {runtime}"]


def _stub_kind(node):
    if not isinstance(node, ast.FunctionDef):
        return "attribute"
    decorators = {ast.unparse(d) for d in node.decorator_list}
    return next(
        (k for k in ("property", "staticmethod", "classmethod") if k in decorators), "method"
    )


def _runtime_kind(attr):
    if isinstance(attr, staticmethod):
        return "staticmethod"
    if isinstance(attr, (classmethod, types.ClassMethodDescriptorType)):
        return "classmethod"
    if isinstance(attr, (property, types.GetSetDescriptorType, types.MemberDescriptorType)):
        return "property"
    return "method" if callable(attr) else "attribute"


def _subclassable(cls):
    try:
        type("Sub", (cls,), {})
    except TypeError:
        return False
    return True


def _compare_class(name, cls, node):
    out = []
    bases = [ast.unparse(b) for b in node.bases]
    runtime_bases = [b.__name__ for b in cls.__bases__ if b is not object]
    if bases != runtime_bases:
        out.append(f"{name}: stub bases {bases} != extension bases {runtime_bases}")
    final = any(ast.unparse(d) in ("final", "typing.final") for d in node.decorator_list)
    subclassable = _subclassable(cls)
    if final == subclassable:
        out.append(f"{name}: @final in the stub: {final}; subclassable at runtime: {subclassable}")

    # dunders but the constructor are not compared: the extension's are pickling
    # (__reduce__, __getstate__) and __repr__, which the stub inherits from object
    members = _stub_names(node.body)
    stub = {n: _stub_kind(m) for n, m in members.items() if not _is_dunder(n)}
    runtime = {n: _runtime_kind(a) for n, a in vars(cls).items() if not _is_dunder(n)}
    for member in sorted(stub.keys() | runtime.keys()):
        where = f"{name}.{member}"
        if stub.get(member) != runtime.get(member):
            kinds = stub.get(member, "absent"), runtime.get(member, "absent")
            out.append(f"{where}: {kinds[0]} in the stub, {kinds[1]} at runtime")
        elif stub[member] in ("method", "staticmethod", "classmethod"):
            bound = stub[member] != "staticmethod"
            out += _compare_signatures(where, members[member], getattr(cls, member), bound)

    constructors = [n for n in ("__new__", "__init__") if n in members]
    if issubclass(cls, BaseException):
        pass  # an exception takes its builtin base's arguments; the stub inherits them
    elif name in NO_SIGNATURE:
        if cls.__text_signature__ is not None:
            out.append(f"{name}: has a constructor now; take it off NO_SIGNATURE")
        if constructors:
            out.append(f"{name}: the stub declares {constructors}, the extension none")
    else:
        if constructors != ["__new__"]:
            # a pyo3 #[new] is the type's __new__; its __init__ is object's
            out.append(f"{name}: the stub's constructor should be __new__, got {constructors}")
        if constructors:
            where, fn = f"{name}.{constructors[0]}", members[constructors[0]]
            out += _compare_signatures(where, fn, cls, bound=True)
    return out


def _discrepancies(stub_text):
    """Every way the stub's text disagrees with the extension, one line each."""
    stub = _stub_names(ast.parse(stub_text).body)
    runtime = {n for n in vars(_core) if n not in MODULE_ATTRIBUTES}
    out = [f"{n}: in the extension, not in the stub" for n in sorted(runtime - stub.keys())]
    out += [
        f"{n}: in the stub, not in the extension"
        for n in sorted(stub.keys() - runtime - STUB_ONLY.keys())
    ]
    for name in sorted(runtime & stub.keys()):
        obj, node = getattr(_core, name), stub[name]
        if isinstance(obj, type) and isinstance(node, ast.ClassDef):
            out += _compare_class(name, obj, node)
        elif callable(obj) and not isinstance(obj, type) and isinstance(node, ast.FunctionDef):
            out += _compare_signatures(name, node, obj, bound=False)
        elif not callable(obj) and isinstance(node, ast.AnnAssign):
            annotation = ast.unparse(node.annotation)
            expected = getattr(builtins, annotation, None)
            if isinstance(expected, type) and not isinstance(obj, expected):
                out.append(f"{name}: {annotation} in the stub, {type(obj).__name__} at runtime")
        else:
            out.append(
                f"{name}: a {type(node).__name__} in the stub, a {type(obj).__name__} at runtime"
            )
    return out


def test_the_stub_matches_the_extension():
    assert _discrepancies(STUB.read_text()) == []


def test_classes_without_a_signature_cannot_be_constructed():
    for name in NO_SIGNATURE:
        with pytest.raises(TypeError, match="cannot create"):
            getattr(_core, name)()


# (text of the stub, its drifted version, the name the discrepancy must mention)
DRIFTS = [
    ("def truncate(self, n_trees: int) -> None:", "def truncate(self) -> None:", "Forest.truncate"),
    (
        "def rotate(x: np.ndarray, q: np.ndarray,",
        "def rotate(q: np.ndarray, x: np.ndarray,",
        "rotate",
    ),
    ("def rotate(x: np.ndarray,", "def rotate(X: np.ndarray,", "rotate"),
    (
        "def n_threads(n_jobs: Optional[int] = None)",
        "def n_threads(n_jobs: Optional[int])",
        "n_threads",
    ),
    (
        "n_jobs: int = 1, oob: bool = False",
        "n_jobs: int = 1, oob: bool = True",
        "Forest.predict_quantiles",
    ),
    (
        "        cls,\n        *,\n        task: str,",
        "        cls,\n        task: str,",
        "ForestParams.__new__",
    ),
    ("    @property\n    def n_samples(self)", "    def n_samples(self)", "ForestPart.n_samples"),
    ("    @staticmethod\n    def join(", "    def join(", "ForestPart.join"),
    ("def memory_budget()", "def memory_budget_()", "memory_budget"),
    (
        "class ForestFileNotFoundError(FileNotFoundError, ForestError):",
        "class ForestFileNotFoundError(ForestError):",
        "ForestFileNotFoundError",
    ),
    ("@final\nclass Forest:", "class Forest:", "Forest"),
    ("    def __new__(cls) -> Progress: ...", "    def __init__(self) -> None: ...", "Progress"),
    ("\nFORMAT_VERSION: int", "\nFORMAT_VERSION: str", "FORMAT_VERSION"),
]


@pytest.mark.parametrize("old, new, name", DRIFTS)
def test_a_drifted_stub_is_caught(old, new, name):
    text = STUB.read_text()
    assert text.count(old) == 1, f"the stub no longer reads {old!r}; update DRIFTS"
    found = _discrepancies(text.replace(old, new))
    assert any(line.startswith(f"{name}:") for line in found), found
