"""docs/categorical.md: every code block runs on its own and prints what the text quotes
(tests/_docblocks.py says how each kind of block is checked); its bench command names
options the script takes."""

from __future__ import annotations

import pytest
from _docblocks import ROOT, blocks, check, mode, params

BLOCKS = blocks(ROOT / "docs" / "categorical.md")


@pytest.mark.parametrize("block", params({"run", "slow"}, *BLOCKS))
def test_page_block_runs_alone_and_prints_what_the_text_quotes(block):
    check(block)


@pytest.mark.parametrize("block", params({"bench"}, *BLOCKS))
def test_page_bench_commands_name_options_the_script_takes(block):
    from test_readme import test_readme_bench_commands_name_options_the_scripts_take as check_

    check_(block)


def test_every_page_block_is_run_or_a_bench_command():
    assert len(BLOCKS) >= 5
    assert all(mode(b) in ("run", "slow", "bench") for b in BLOCKS), [b.id for b in BLOCKS]
    # a block prints what the text quotes, or draws one of the page's figures
    assert all(b.output is not None or "savefig" in b.body for b in BLOCKS if mode(b) == "run"), [
        b.id for b in BLOCKS if mode(b) == "run" and b.output is None
    ]
