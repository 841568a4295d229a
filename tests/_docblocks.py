"""The code blocks of the documentation (README.md, docs/guide.md), each run on its own.

A fenced block's kind comes from its info string and, optionally, an HTML comment on the
line above the fence, ``<!-- doc-test: MODE -->``:

- ``run`` (the default for python and bash): run by the default test suite, alone: a python
  block in a fresh namespace, a bash block in a fresh directory outside the checkout
  (``obliqueforest`` and ``python`` are this interpreter's; ``$OBLIQUEFOREST_SRC`` is this
  checkout, as a reader's own would be);
- ``slow``: the same, under ``pytest -m slow``;
- ``ci``: commands that install or build (pip, maturin, cargo test): run by the newcomer
  test of ``.ci/run`` in a clean virtual environment (``.ci/newcomer.py``);
- ``bench``: a benchmark command (minutes to hours, writes ``benches/results``): the
  default suite checks that the script takes every option given;
- rust blocks are compiled (and run unless ``no_run``) by ``cargo test`` (``src/lib.rs``
  includes the README), toml blocks are Cargo.toml excerpts used by the ci blocks.

A ``text`` block right after a code block is its output: the default suite compares what
the block prints (stdout; for bash, stdout and stderr together) with it, line by line, so
a printed figure cannot go stale; ``...`` in a quoted line stands for text that changes
from run to run (a time).
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", ROOT / "docs" / "guide.md"]
MODES = {"run", "slow", "ci", "bench"}

_FENCE = re.compile(
    r"(?:^<!-- doc-test: (?P<mode>[a-z-]+) -->\n)?^```(?P<info>[^\n`]*)\n(?P<body>.*?)^```[ \t]*\n",
    re.M | re.S,
)


@dataclasses.dataclass
class Block:
    path: Path
    line: int
    lang: str
    mode: str | None
    body: str
    output: str | None = None

    @property
    def id(self):
        return f"{self.path.name}:{self.line}"


def blocks(path):
    """The code blocks of ``path`` in order, each with the output block that follows it."""
    text = path.read_text()
    out = []
    end_of_last = None
    for m in _FENCE.finditer(text):
        lang = m.group("info").strip().split(",")[0].split(" ")[0]
        line = text.count("\n", 0, m.start("info")) + 1
        adjacent = end_of_last is not None and not text[end_of_last : m.start()].strip()
        if lang == "text" and adjacent and out and out[-1].output is None:
            out[-1].output = m.group("body")
        else:
            out.append(Block(path, line, lang, m.group("mode"), m.group("body")))
        end_of_last = m.end()
    return out


def mode(block):
    """The block's mode, with the defaults of its language."""
    if block.mode is not None:
        return block.mode
    return {"python": "run", "bash": "run", "rust": "cargo", "toml": "ci"}.get(block.lang)


def _matches(got, want):
    """A quoted line matches a printed one exactly, or where it says ``...`` (a figure
    that changes from run to run, such as a time) anything."""
    pattern = ".*".join(re.escape(part) for part in want.split("..."))
    return re.fullmatch(pattern, got) is not None


def compare(block, printed):
    """Raises AssertionError unless ``printed`` is the block's quoted output."""
    if block.output is None:
        return
    got = [line.rstrip() for line in printed.strip("\n").splitlines()]
    want = [line.rstrip() for line in block.output.strip("\n").splitlines()]
    same = len(got) == len(want) and all(_matches(g, w) for g, w in zip(got, want))
    assert same, (
        f"{block.id}: the block prints\n" + "\n".join(got) + "\nbut the text quotes\n"
        + "\n".join(want)
    )  # fmt: skip


def run_python(block, workdir):
    """Runs a python block in a fresh namespace with ``workdir`` as the current directory;
    returns what it printed."""
    import contextlib
    import io
    import os

    printed = io.StringIO()
    here = os.getcwd()
    os.chdir(workdir)
    try:
        with contextlib.redirect_stdout(printed):
            exec(compile(block.body, block.id, "exec"), {"__name__": "__main__"})
    finally:
        os.chdir(here)
    return printed.getvalue()


def run_bash(block, workdir, timeout=900):
    """Runs a bash block (``bash -e``) in ``workdir``, with ``obliqueforest`` and ``python``
    running this interpreter on this package and ``$OBLIQUEFOREST_SRC`` naming this
    checkout (the README's path to a checkout, for ``cargo --manifest-path``); returns
    stdout and stderr as one text."""
    import os
    import subprocess
    import sys

    import obliqueforest

    shims = workdir / ".bin"
    shims.mkdir(parents=True, exist_ok=True)
    for name, command in (("python", ""), ("obliqueforest", " -m obliqueforest")):
        shim = shims / name
        shim.write_text(f'#!/bin/sh\nexec "{sys.executable}"{command} "$@"\n')
        shim.chmod(0o755)
    package_parent = str(Path(obliqueforest.__file__).resolve().parent.parent)
    env = {
        **os.environ,
        "PATH": f"{shims}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": os.pathsep.join([package_parent, os.environ.get("PYTHONPATH", "")]),
        "OBLIQUEFOREST_SRC": str(ROOT),
    }
    out = subprocess.run(
        ["bash", "-e", "-c", block.body], cwd=workdir, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, timeout=timeout,
    )  # fmt: skip
    assert out.returncode == 0, f"{block.id} exited with {out.returncode}:\n{out.stdout}"
    return out.stdout


def bench_commands(block):
    """The ``python benches/<script>.py ...`` command lines of a bench block, as argv."""
    import shlex

    commands = []
    for line in block.body.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        while words and words[0] in ("nice", "-n", "19", "time"):
            words = words[1:]
        if words and words[0] == "python":
            commands.append(words[1:])
    return commands


def workdir(block):
    """A fresh directory for a block, outside the checkout (under the system's temporary
    directory), so that a block runs from any directory, as a reader's would: ``cargo``
    finds the crate only through ``$OBLIQUEFOREST_SRC``."""
    import shutil
    import tempfile

    path = Path(tempfile.gettempdir()) / "obliqueforest-doc-tests" / block.id.replace(":", "-")
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def needs(block):
    """Skips the calling test when the block needs what is not installed here."""
    import shutil

    import pytest

    if "distributed" in block.body:
        pytest.importorskip("distributed")
    if "pandas" in block.body:
        pytest.importorskip("pandas")
    if re.search(r"^\s*cargo ", block.body, re.M) and shutil.which("cargo") is None:
        pytest.skip("needs cargo")


def params(selected, *docs):
    """pytest parameters: the blocks of ``docs`` whose mode is in ``selected`` (slow ones
    marked slow)."""
    import pytest

    return [
        pytest.param(b, id=b.id, marks=[pytest.mark.slow] if mode(b) == "slow" else [])
        for b in docs
        if mode(b) in selected
    ]


def check(block):
    """Runs a block on its own, as the default suite does, and compares what it prints
    with the output the text quotes."""
    needs(block)
    where = workdir(block)
    printed = run_python(block, where) if block.lang == "python" else run_bash(block, where)
    compare(block, printed)
