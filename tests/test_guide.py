"""Runs every Python code block of docs/guide.md, in order, in one namespace."""

import importlib.util
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
    # the Dask example needs the optional extra (pip install "obliqueforest[dask]")
    has_dask = importlib.util.find_spec("distributed") is not None
    for i, block in enumerate(blocks):
        if "from obliqueforest import dask" in block and not has_dask:
            continue
        try:
            exec(compile(block, f"{GUIDE.name}[block {i}]", "exec"), namespace)
        except Exception as e:  # pragma: no cover - the message says which block failed
            raise AssertionError(f"guide block {i} failed: {e!r}\n{block}") from e
