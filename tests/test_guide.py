"""Runs every Python code block of docs/guide.md, in order, in one namespace."""

import pathlib
import re

import pytest

GUIDE = pathlib.Path(__file__).resolve().parent.parent / "docs" / "guide.md"


def test_guide_examples_run():
    pytest.importorskip("pandas")
    text = GUIDE.read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) >= 6
    namespace: dict = {}
    for i, block in enumerate(blocks):
        try:
            exec(compile(block, f"{GUIDE.name}[block {i}]", "exec"), namespace)
        except Exception as e:  # pragma: no cover - the message says which block failed
            raise AssertionError(f"guide block {i} failed: {e!r}\n{block}") from e
