"""README.md: every code block runs on its own and prints what the text quotes
(tests/_docblocks.py says how each kind of block is checked), and the README's claims
that name tests or results files hold."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest
from _docblocks import ROOT, bench_commands, blocks, check, mode, params

README = ROOT / "README.md"
BLOCKS = blocks(README)


@pytest.mark.parametrize("block", params({"run", "slow"}, *BLOCKS))
def test_readme_block_runs_alone_and_prints_what_the_text_quotes(block):
    check(block)


def test_every_readme_block_has_a_known_way_to_be_checked():
    assert len(BLOCKS) >= 10
    unknown = [b.id for b in BLOCKS if mode(b) not in {"run", "slow", "ci", "bench", "cargo"}]
    assert not unknown, f"blocks without a doc-test mode: {unknown}"
    assert [b for b in BLOCKS if b.lang == "python" and b.output is not None], "no figures?"
    lib = (ROOT / "src" / "lib.rs").read_text()
    assert 'include_str!("../README.md")' in lib  # the rust blocks are cargo doctests


@pytest.mark.parametrize("block", params({"bench"}, *BLOCKS))
def test_readme_bench_commands_name_options_the_scripts_take(block):
    commands = bench_commands(block)
    assert commands, block.body
    for argv in commands:
        script = ROOT / argv[0]
        assert script.is_file(), argv[0]
        helped = subprocess.run(
            [sys.executable, str(script), "--help"], capture_output=True, text=True,
            timeout=120, cwd=ROOT,
        )  # fmt: skip
        assert helped.returncode == 0, helped.stderr
        for word in argv[1:]:
            if word.startswith("--"):
                assert word.split("=")[0] in helped.stdout, (argv[0], word)


def _prose(path):
    """The text of a document outside its code blocks."""
    return re.sub(r"^```.*?^```", "", path.read_text(), flags=re.M | re.S)


def test_results_files_quoted_in_prose_name_the_commit_that_recorded_them():
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs the git history")
    cited = 0
    for doc in (README, ROOT / "docs" / "guide.md", ROOT / "docs" / "unsupervised.md"):
        text = _prose(doc)
        for m in re.finditer(r"benches/results/([A-Za-z0-9_.*]+?)(?=[`)\]\s;,:]|\.\s|\.$)", text):
            if re.search(r"--(out|json) $", text[: m.start()]):
                continue  # a command's output argument, not a quoted figure
            tail = text[m.end() : m.end() + 120]
            commits = re.findall(r"\bat ([0-9a-f]{7,40})\b(?:\s+and\s+([0-9a-f]{7,40}))?", tail)
            assert commits, f"{doc.name}: {m.group(0)} is quoted without the commit it is at"
            pattern = m.group(1)
            for commit in [c for pair in commits[:1] for c in pair if c]:
                listed = subprocess.run(
                    ["git", "ls-tree", "--name-only", commit, "benches/results/"],
                    cwd=ROOT, capture_output=True, text=True,
                )  # fmt: skip
                assert listed.returncode == 0, f"{doc.name}: no commit {commit}"
                names = [n.rsplit("/", 1)[-1] for n in listed.stdout.split()]
                glob = re.compile(re.escape(pattern).replace(r"\*", ".*") + "$")
                assert any(glob.match(n) for n in names), (doc.name, pattern, commit)
            cited += 1
    assert cited >= 15


def _readme_checks(start):
    """The check names of the README bullet beginning with ``start``."""
    text = README.read_text()
    bullet = text[text.index(start) :]
    bullet = bullet[: re.search(r"\n(?:- |\n)", bullet[2:]).start() + 2]
    return set(re.findall(r"`(check_[a-z0-9_]+)`", bullet))


def test_readme_lists_exactly_the_expected_sklearn_check_failures():
    from sklearn.utils import estimator_checks

    import test_autoencoder
    import test_forest
    import test_rotation
    import test_unsupervised

    import obliqueforest as of

    def declared(*dicts):
        names = set().union(*dicts)
        return {n for n in names if hasattr(estimator_checks, n)}  # checks this sklearn runs

    forests = declared(
        *[test_forest._expected_failures(e) for e in test_forest.ALL],
        *[test_rotation._expected_failed_checks(e) for e in test_rotation.ESTIMATORS],
    )
    assert _readme_checks("- every forest (") == forests
    autoencoder = declared(test_autoencoder._expected_failed_checks(None))
    assert _readme_checks("- `ForestAutoencoder`:") == autoencoder
    isolation = declared(test_unsupervised._expected_failed_checks(of.IsolationForest()))
    assert _readme_checks("- `IsolationForest`:") == isolation
    unsupervised = declared(
        test_unsupervised._expected_failed_checks(of.UnsupervisedRandomForest())
    )
    assert _readme_checks("- `UnsupervisedRandomForest`:") == unsupervised
