"""docs/guide.md: every code block runs on its own and prints what the text quotes
(tests/_docblocks.py says how each kind of block is checked)."""

from __future__ import annotations

import pytest
from _docblocks import ROOT, blocks, check, mode, params

BLOCKS = blocks(ROOT / "docs" / "guide.md")


@pytest.mark.parametrize("block", params({"run", "slow"}, *BLOCKS))
def test_guide_block_runs_alone_and_prints_what_the_text_quotes(block):
    check(block)


def test_every_guide_block_is_run():
    assert len(BLOCKS) >= 10
    assert all(mode(b) in ("run", "slow") for b in BLOCKS), [b.id for b in BLOCKS]
