"""Builds the Python API reference (``docs/api.md``) from the numpydoc docstrings.

    python docs/build_api.py [OUT.md]

Every public estimator, projection, data set generator and function is listed with its
signature, its parameters, fitted attributes and public methods. Needs the ``docs`` extra
(numpydoc). Any warning numpydoc raises while parsing a docstring (an unknown section, a
malformed parameter list) is an error, so the reference cannot silently lose content;
``tests/test_api_docs.py`` builds it.
"""

from __future__ import annotations

import inspect
import sys
import warnings
from pathlib import Path

from numpydoc.docscrape import ClassDoc, FunctionDoc

# (module, title, names); None takes the module's __all__
SECTIONS = [
    ("obliqueforest", "Forests", [
        "RandomForestClassifier", "RandomForestRegressor", "SPORFClassifier", "SPORFRegressor",
        "MORFClassifier", "MORFRegressor", "ObliqueForestClassifier", "ObliqueForestRegressor",
    ]),
    ("obliqueforest.rotation", "Rotation ensembles", [
        "RotationEnsembleClassifier", "RotationEnsembleRegressor",
    ]),
    ("obliqueforest.autoencoder", "Forest autoencoder", ["ForestAutoencoder", "distortion"]),
    ("obliqueforest.unsupervised", "Forests without targets", [
        "UnsupervisedRandomForest", "IsolationForest",
    ]),
    ("obliqueforest.projections", "Projection families", None),
    ("obliqueforest", "Model files", ["load", "ForestError"]),
    ("obliqueforest.datasets", "Data sets (the papers' simulations)", None),
    ("obliqueforest.interpret", "Interpretation", None),
    ("obliqueforest.explain", "Explaining predictions (SHAP)", None),
]  # fmt: skip


def _params_table(items):
    lines = ["| name | type | description |", "| --- | --- | --- |"]
    for p in items:
        desc = " ".join(" ".join(p.desc).split()).replace("|", "\\|")
        kind = p.type.replace("|", "\\|")
        names = ", ".join(f"`{n.strip()}`" for n in p.name.split(","))
        lines.append(f"| {names} | {kind} | {desc} |")
    return "\n".join(lines)


def _sections(doc, heading="####"):
    out = []
    summary = " ".join(doc["Summary"])
    if summary:
        out.append(summary)
    extended = "\n".join(doc["Extended Summary"]).strip()
    if extended:
        out.append(extended)
    for name in ("Parameters", "Attributes", "Returns", "Raises"):
        if doc[name]:
            out.append(f"{heading} {name}\n\n{_params_table(doc[name])}")
    return out


def _signature(obj, name):
    try:
        return f"{name}{inspect.signature(obj)}"
    except (TypeError, ValueError):
        return name


def _document(name, obj):
    out = [f"### `{name}`", "", f"```python\n{_signature(obj, name)}\n```", ""]
    if inspect.isclass(obj):
        doc = ClassDoc(obj)
        out += [s + "\n" for s in _sections(doc)]
        methods = [
            (m, getattr(obj, m))
            for m in sorted({k for b in obj.__mro__ for k in vars(b)})
            if not m.startswith("_") and callable(getattr(obj, m, None))
        ]
        methods = [(m, f) for m, f in methods if inspect.isfunction(f) and f.__doc__]
        if methods and issubclass(obj, Exception) is False:
            out.append("#### Methods\n")
            for m, f in methods:
                first = " ".join(FunctionDoc(f)["Summary"]) or ""
                out.append(f"- `{_signature(f, m)}`: {first}")
            out.append("")
    else:
        out += [s + "\n" for s in _sections(FunctionDoc(obj))]
    return out


def build():
    """The reference as markdown text; raises on any numpydoc warning."""
    import importlib

    lines = [
        "# obliqueforest Python API reference",
        "",
        "Generated from the docstrings by `python docs/build_api.py` (numpydoc); the Rust",
        "crate's reference is its rustdoc (`cargo doc --no-deps --open`).",
        "",
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for module, title, names in SECTIONS:
            mod = importlib.import_module(module)
            names = names if names is not None else sorted(mod.__all__)
            lines += [f"## {title}", ""]
            for name in names:
                lines += _document(name, getattr(mod, name))
    return "\n".join(lines).rstrip() + "\n"


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    out = Path(argv[0]) if argv else Path(__file__).with_name("api.md")
    out.write_text(build())
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
