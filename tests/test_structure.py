"""The code's structure as the architecture section of the README describes it: no module
cycles in the crate (the graph of `crate::` and `super::` references between its files), no
import cycles among the package's modules, and rooms a reader can hold (at most 900 lines
of code per file; a Rust file's trailing `#[cfg(test)]` module does not count)."""

from __future__ import annotations

import ast
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
MAX_LINES = 900


def _rust_modules():
    """{module path ("tree/builder", "" for lib.rs): code before its test module}."""
    out = {}
    for path in (ROOT / "src").rglob("*.rs"):
        rel = path.relative_to(ROOT / "src").with_suffix("").as_posix()
        name = rel[: -len("/mod")] if rel.endswith("/mod") else rel
        text = path.read_text()
        cut = text.find("#[cfg(test)]\nmod ")
        out["" if name == "lib" else name] = text if cut < 0 else text[:cut]
    return out


def _rust_graph(modules):
    def resolve(segments):
        for k in range(len(segments), 0, -1):
            name = "/".join(segments[:k])
            if name in modules:
                return name
        return None

    graph = {m: set() for m in modules}
    for m, text in modules.items():
        text = re.sub(r"//[^\n]*", "", text)
        parent = m.rsplit("/", 1)[0] if "/" in m else ""
        refs = [g.split("::") for g in re.findall(r"\bcrate::((?:\w+::)*\w+)", text)]
        refs += [
            ([parent] if parent else []) + g.split("::")
            for g in re.findall(r"\bsuper::((?:\w+::)*\w+)", text)
        ]
        for group in re.findall(r"use\s+crate::\{([^}]*)\}", text):
            refs += [item.split("::") for item in re.split(r"[,\s]+", group) if item]
        for segments in refs:
            target = resolve(segments)
            if target not in (None, "", m):
                graph[m].add(target)
    return graph


def _cycles(graph):
    """Strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def test_the_crate_has_no_module_cycles():
    assert _cycles(_rust_graph(_rust_modules())) == []


def test_the_package_has_no_import_cycles():
    package = ROOT / "python" / "obliqueforest"
    graph = {}
    for path in package.rglob("*.py"):
        rel = path.relative_to(package).with_suffix("").as_posix().split("/")
        if rel[-1] == "__init__":
            rel = rel[:-1]
            if not rel:
                continue  # the package itself re-exports; its lazy imports are not cycles
            home = rel  # a subpackage's __init__ imports relative to itself
        else:
            home = rel[:-1]
        deps = set()
        # module-level imports only: an import inside a function runs at call time
        for node in ast.parse(path.read_text()).body:
            if not (isinstance(node, ast.ImportFrom) and node.level):
                continue
            base = home[: len(home) - (node.level - 1)]
            target = [*base, *(node.module.split(".") if node.module else [])]
            for alias in node.names:
                full = [*target, alias.name]
                is_module = (package.joinpath(*full).with_suffix(".py")).exists() or (
                    package.joinpath(*full, "__init__.py").exists()
                )
                deps.add(".".join(full if is_module else target))
        graph[".".join(rel)] = deps
    graph = {m: {d for d in deps if d in graph and d != m} for m, deps in graph.items()}
    assert _cycles(graph) == []


def _code_lines(path):
    text = path.read_text()
    if path.suffix == ".rs":
        cut = text.find("#[cfg(test)]\nmod ")
        text = text if cut < 0 else text[:cut]
    return text.count("\n")


def test_no_room_is_too_large_to_read():
    files = [
        p
        for p in [*(ROOT / "src").rglob("*.rs"), *(ROOT / "python" / "obliqueforest").rglob("*.py")]
        if not p.name.startswith("test") and p.name != "tests.rs"
    ]
    large = {p.relative_to(ROOT).as_posix(): _code_lines(p) for p in files}
    assert {p: n for p, n in large.items() if n > MAX_LINES} == {}
