"""Runs every Python code block of README.md, in order, in one namespace (as test_guide.py
does for docs/guide.md), in a scratch directory (the quick start writes a model file)."""

import pathlib
import re

import pytest

README = pathlib.Path(__file__).resolve().parent.parent / "README.md"


def test_readme_python_blocks_run(tmp_path, monkeypatch):
    pytest.importorskip("pandas")
    monkeypatch.chdir(tmp_path)
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert len(blocks) >= 3
    namespace: dict = {}
    for i, block in enumerate(blocks):
        try:
            exec(compile(block, f"{README.name}[block {i}]", "exec"), namespace)
        except Exception as e:  # pragma: no cover - the message says which block failed
            raise AssertionError(f"README block {i} failed: {e!r}\n{block}") from e
    # the autoencoder block decodes to the columns and dtypes it was given
    assert list(namespace["df_back"].columns) == list(namespace["df"].columns)
    assert namespace["Z"].shape == (178, 3)
