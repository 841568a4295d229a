"""The pages of docs/ that explain one subject (unsupervised forests, explanations,
categorical columns): every code block runs on its own and prints what the text quotes
(tests/_docblocks.py says how each kind of block is checked), or draws one of the page's
figures (into a scratch directory); every bench command names options its script takes."""

from __future__ import annotations

import pytest
from _docblocks import ROOT, blocks, check, mode, params

#: Each page, with the fewest blocks it has (a page that lost its blocks fails).
PAGES = {"unsupervised.md": 6, "explain.md": 6, "categorical.md": 5}
BLOCKS = {page: blocks(ROOT / "docs" / page) for page in PAGES}
ALL = [b for page in PAGES for b in BLOCKS[page]]


@pytest.mark.parametrize("block", params({"run", "slow"}, *ALL))
def test_page_block_runs_alone_and_prints_what_the_text_quotes(block):
    check(block)


@pytest.mark.parametrize("block", params({"bench"}, *ALL))
def test_page_bench_commands_name_options_the_script_takes(block):
    from test_readme import test_readme_bench_commands_name_options_the_scripts_take as check_

    check_(block)


@pytest.mark.parametrize("page", list(PAGES))
def test_every_page_block_is_run_or_a_bench_command(page):
    found = BLOCKS[page]
    assert len(found) >= PAGES[page]
    assert all(mode(b) in ("run", "slow", "bench") for b in found), [b.id for b in found]
    # a block prints what the text quotes, or draws one of the page's figures
    assert all(b.output is not None or "savefig" in b.body for b in found if mode(b) == "run"), [
        b.id for b in found if mode(b) == "run" and b.output is None
    ]
