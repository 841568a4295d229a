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


# ---- function sizes (issue 44 items 4 and 5)
#
# A function's length is the physical lines of its whole definition: from the line of its
# `def` (Python, decorators not counted) or `fn` (Rust, attributes and `///` docs above it
# not counted) to the last line of its body, so a Python docstring counts and blank lines
# and comments inside count. A nested function counts on its own and inside its parent.

MAX_FUNCTION_LINES = 150

# The Rust functions over MAX_FUNCTION_LINES, as (file, function): their length when
# recorded. This list may only shrink: a function on it may not grow beyond its length,
# and one that has come down to MAX_FUNCTION_LINES must leave it.
RUST_LONG_FUNCTIONS: dict = {}


def _python_functions():
    """(file, function, first line, length) of every def in the package."""
    out = []
    for path in sorted((ROOT / "python" / "obliqueforest").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out.append((rel, node.name, node.lineno, node.end_lineno - node.lineno + 1))
    return out


def _blank(text):
    """``text`` with every character but newlines as a space (line numbers survive)."""
    return re.sub(r"[^\n]", " ", text)


# A Rust comment, string or char literal, whose braces are not code; anything else
# (a lifetime's quote included) is kept one character at a time.
_RUST_NOT_CODE = re.compile(
    r"""//[^\n]*"""
    r"""|(?<![\w])b?r(?P<hashes>\#*)"(?:.|\n)*?"(?P=hashes)"""
    r"""|(?<![\w])b?"(?:\\.|\\\n|[^"\\])*\""""
    r"""|(?<![\w])b?'(?:\\x[0-9a-fA-F]{2}|\\u\{[0-9a-fA-F]+\}|\\.|[^\\'\n])'"""
)


def _rust_code(text):
    """Rust source with comments (nested block comments too), string and char literals
    blanked, so that the braces left are the code's."""
    out, i = [], 0
    while i < len(text):
        if text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < len(text) and depth:
                step = text[j : j + 2]
                depth += {"/*": 1, "*/": -1}.get(step, 0)
                j += 2 if step in ("/*", "*/") else 1
            out.append(_blank(text[i:j]))
            i = j
            continue
        m = _RUST_NOT_CODE.match(text, i)
        if m:
            out.append(_blank(m.group()))
            i = m.end()
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def _closing_brace(code, start):
    """Index of the brace that closes the one at ``start``."""
    depth = 0
    for j in range(start, len(code)):
        depth += {"{": 1, "}": -1}.get(code[j], 0)
        if depth == 0:
            return j
    raise ValueError("unbalanced braces")


_CFG_TEST_MOD = re.compile(
    r"#\[cfg\(test\)\](?:\s*#\[[^\]]*\])*\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*([{;])"
)


def _rust_test_files():
    """The files of ``#[cfg(test)] mod name;`` declarations (test code in files of their
    own, as ``pins.rs``)."""
    out = set()
    for path in (ROOT / "src").rglob("*.rs"):
        home = path.parent if path.name in ("lib.rs", "mod.rs") else path.with_suffix("")
        for m in _CFG_TEST_MOD.finditer(_rust_code(path.read_text())):
            if m.group(2) == ";":
                out |= {home / f"{m.group(1)}.rs", home / m.group(1) / "mod.rs"}
    return out


def _rust_fn_lengths(text):
    """(function, first line, length) of every ``fn`` with a body in Rust source ``text``,
    outside its ``#[cfg(test)]`` modules."""
    code = _rust_code(text)
    for m in reversed(list(_CFG_TEST_MOD.finditer(code))):
        if m.group(2) == "{":
            end = _closing_brace(code, m.end() - 1)
            code = code[: m.start()] + _blank(code[m.start() : end + 1]) + code[end + 1 :]
    out = []
    for m in re.finditer(r"\bfn\s+(\w+)", code):
        # the body opens at the first `{` outside the signature's brackets; a `;` there
        # ends a declaration without a body (a trait's)
        depth = 0
        for j in range(m.end(), len(code)):
            if code[j] in "([":
                depth += 1
            elif code[j] in ")]":
                depth -= 1
            elif depth == 0 and code[j] in "{;":
                break
        if code[j] == ";":
            continue
        first = code.count("\n", 0, m.start()) + 1
        last = code.count("\n", 0, _closing_brace(code, j)) + 1
        out.append((m.group(1), first, last - first + 1))
    return out


def _rust_functions():
    """(file, function, first line, length) of every fn of the crate's code: not the
    test files (``tests.rs``, ``*_tests.rs``, ``proptests.rs``, the files of
    ``#[cfg(test)] mod name;``) nor ``#[cfg(test)]`` modules."""
    skip = _rust_test_files()
    out = []
    for path in sorted((ROOT / "src").rglob("*.rs")):
        if path.name.endswith("tests.rs") or path in skip:
            continue
        rel = path.relative_to(ROOT).as_posix()
        out += [(rel, *fn) for fn in _rust_fn_lengths(path.read_text())]
    return out


def _long(functions):
    return sorted(
        ((n, f, name, line) for f, name, line, n in functions if n > MAX_FUNCTION_LINES),
        reverse=True,
    )


def test_rust_function_lengths_ignore_braces_in_comments_strings_and_tests():
    text = """
/// `fn doc() {` in a doc comment
fn outer<'a>(x: &'a str, n: [u8; 2]) -> usize {
    let brace = '{';
    let quote = '\\'';
    let s = "}} \\" {";
    let r = r#"fn fake() { "# ;
    /* a { /* nested } */ still comment { */
    fn inner() -> char {
        '}'
    }
    x.len()
}

trait T {
    fn declared(&self) -> u8;
}

#[cfg(test)]
mod tests {
    fn in_a_test() {}
}
"""
    assert _rust_fn_lengths(text) == [("outer", 3, 11), ("inner", 9, 3)]


def test_no_python_function_is_over_150_lines():
    assert _long(_python_functions()) == []


def test_no_rust_function_grows_over_150_lines_beyond_the_allowlist():
    long = _long(_rust_functions())
    over = [
        (n, f, name, line)
        for n, f, name, line in long
        if n > RUST_LONG_FUNCTIONS.get((f, name), MAX_FUNCTION_LINES)
    ]
    assert over == [], "new or longer functions over 150 lines (length, file, fn, line)"
    fixed = set(RUST_LONG_FUNCTIONS) - {(f, name) for _, f, name, _ in long}
    assert fixed == set(), "no longer over 150 lines: remove them from RUST_LONG_FUNCTIONS"


def _module_level_functions(tree):
    """Names of the functions a module defines outside its classes and functions (in its
    ``if`` and ``try`` blocks too)."""
    names, todo = set(), list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif not isinstance(node, ast.ClassDef):
            todo += [c for c in ast.iter_child_nodes(node) if not isinstance(c, ast.expr)]
    return names


def test_no_private_helper_is_defined_in_two_modules():
    """A private module-level function is written once; a module that needs another's
    imports it (interpret.py and autoencoder/_adversarial.py each had a ``_core_forest``,
    with different rules). Two helpers that do different things get names that say so.
    Methods are not module-level functions, and dunders (a package's ``__getattr__``,
    ``__dir__``) are each module's own."""
    package = ROOT / "python" / "obliqueforest"
    homes = {}
    for path in sorted(package.rglob("*.py")):
        for name in _module_level_functions(ast.parse(path.read_text())):
            if name.startswith("_") and not name.endswith("__"):
                homes.setdefault(name, []).append(path.relative_to(package).as_posix())
    assert {name: files for name, files in homes.items() if len(files) > 1} == {}


def test_test_hooks_live_in_the_probe_module_only():
    # what the crate's tests observe or change in the engine goes through src/probe.rs
    # (inert outside `cargo test`): a production file may hold `#[cfg(test)]` only on a
    # test module's declaration (`mod tests` or a `*_tests.rs` file)
    offenders = []
    for path in sorted((ROOT / "src").rglob("*.rs")):
        rel = path.relative_to(ROOT).as_posix()
        if rel == "src/probe.rs" or rel.endswith(("tests.rs", "proptests.rs", "pins.rs")):
            continue
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines):
            if line.strip() != "#[cfg(test)]":
                continue
            nxt = next((ln.strip() for ln in lines[i + 1 :] if ln.strip()), "")
            if not re.match(r"(pub(\([^)]*\))? )?mod \w+", nxt):
                offenders.append(f"{rel}:{i + 1}: {nxt}")
    assert offenders == [], "test hooks outside src/probe.rs:\n" + "\n".join(offenders)


# the entry of each part of the split search (tree/parts.rs): only its dispatcher calls them
_SPLIT_PARTS = {
    "sparse_split": "sparse_split",
    "project_categorical": "categorical",
    "level_split": "categorical",
    "value_split": "value_split",
    "random_split": "random_split",
    "random_split_missing": "random_split",
    "split_missing": "missing_split",
    "hist_split": "hist_split",
    "sorted_split": "sorted_split",
}


def test_the_split_search_parts_are_picked_in_one_place():
    # a fast path of the split search is a part: a room of its own whose module doc
    # states its invariant, entered only from tree/parts.rs's one dispatcher, and named
    # in that dispatcher's documented order
    tree = ROOT / "src" / "tree"
    dispatcher = (tree / "parts.rs").read_text()
    order = _rust_doc(dispatcher)
    called_elsewhere = []
    for entry, room in _SPLIT_PARTS.items():
        text = (tree / f"{room}.rs").read_text()
        assert re.search(rf"\bfn {entry}\(", text), f"{entry} is not in tree/{room}.rs"
        assert "Invariant" in _rust_doc(text), f"tree/{room}.rs does not state its invariant"
        assert f"`{room}`" in order, f"tree/parts.rs's order does not name `{room}`"
        assert re.search(rf"self\.{entry}\(", dispatcher), f"tree/parts.rs never calls {entry}"
        for path in sorted(tree.rglob("*.rs")):
            if path.name != "parts.rs" and re.search(rf"\.{entry}\(", _rust_code(path.read_text())):
                called_elsewhere.append(f"{path.relative_to(ROOT)} calls {entry}")
    assert called_elsewhere == []


def _rust_doc(text):
    """A Rust file's module doc (its leading `//!` lines)."""
    return "\n".join(ln[3:] for ln in text.splitlines() if ln.startswith("//!"))
