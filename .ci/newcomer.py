"""The newcomer test: the README followed as a new user would, in a clean virtual
environment, and what it prints compared with what the README says.

    python3 .ci/newcomer.py

1. the README's wheel install block (``<!-- doc-test: ci -->``), run verbatim from the
   repository in a fresh venv: the wheel is built, chosen by name from ``target/wheels``
   and installed with its extras;
2. every block under "First steps" (the quick demo, the Python quick start, the command
   line and the Rust example serving the model it saved), run with the venv's ``python``
   and ``obliqueforest`` (the installed wheel) away from the source tree, each on its own,
   its printed output compared with the ``text`` block the README quotes under it;
3. the README's source install block, verbatim (the build backend's path, Rust present);
4. the README's ``Cargo.toml`` lines and its first Rust block, as a service of one's own:
   a new cargo project next to a checkout named ``obliqueforest``.

Exits non-zero at the first difference. ``.ci/run`` runs it after building the wheel.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from _docblocks import blocks, compare, mode  # noqa: E402

README = ROOT / "README.md"


def section(text, heading):
    """(first, last) line numbers of the section under ``heading``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == heading) + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines))
    return start + 1, end


def run(argv, cwd, env, what):
    print(f"\n--- {what}", flush=True)
    out = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True)  # fmt: skip
    print(out.stdout, end="", flush=True)
    if out.returncode != 0:
        sys.exit(f"newcomer test: {what} exited with status {out.returncode}")
    return out.stdout


def installed(bin_dir, cwd, env):
    """Checks that the venv imports obliqueforest from its site-packages."""
    code = "import obliqueforest; print(obliqueforest.__file__)"
    where = run([str(bin_dir / "python"), "-c", code], cwd, env, "the installed package")
    assert "site-packages" in where, where


def main():
    tmp = Path(tempfile.mkdtemp(prefix="obliqueforest-newcomer-"))
    venv.create(tmp / "venv", with_pip=True)
    bin_dir = tmp / "venv" / "bin"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(PATH=f"{bin_dir}{os.pathsep}{env['PATH']}", VIRTUAL_ENV=str(tmp / "venv"))
    # the README's Rust step names the checkout it builds from by this variable
    env["OBLIQUEFOREST_SRC"] = str(ROOT)
    all_blocks = blocks(README)

    # 1. installation from the wheel, verbatim
    installs = [b for b in all_blocks if mode(b) == "ci" and b.lang == "bash"]
    installs = [b for b in installs if "pytest" not in b.body]  # .ci/run runs the tests
    from_wheel = [b for b in installs if "--find-links" in b.body]
    from_source = [b for b in installs if b not in from_wheel]
    assert from_wheel and from_source, "no install blocks in the README"
    for block in from_wheel:
        run(["bash", "-e", "-c", block.body], ROOT, env, f"README install block {block.id}")
    installed(bin_dir, tmp, env)

    # 2. first steps, each block on its own, outputs compared
    first, last = section(README.read_text(), "## First steps")
    steps = [b for b in all_blocks if first <= b.line <= last]
    assert len(steps) >= 3 and all(b.output for b in steps), [b.id for b in steps]
    for block in steps:
        work = ROOT / "target" / "newcomer" / block.id.replace(":", "-")
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        if block.lang == "python":
            (work / "block.py").write_text(block.body)
            printed = run([str(bin_dir / "python"), "block.py"], work, env, block.id)
        else:
            printed = run(["bash", "-e", "-c", block.body], work, env, block.id)
        compare(block, printed)
        print(f"{block.id}: prints what the README quotes", flush=True)

    # 3. installation from the source tree (the build backend's path, Rust present)
    for block in from_source:
        run(["bash", "-e", "-c", block.body], ROOT, env, f"README install block {block.id}")
    installed(bin_dir, tmp, env)

    # 4. the crate in a project of one's own, from the README's Cargo.toml lines
    toml = next(b for b in all_blocks if b.lang == "toml")
    rust = next(b for b in all_blocks if b.lang == "rust")
    (tmp / "obliqueforest").symlink_to(ROOT)
    service = tmp / "myservice"
    (service / "src").mkdir(parents=True)
    (service / "Cargo.toml").write_text(
        '[package]\nname = "myservice"\nversion = "0.1.0"\nedition = "2021"\n\n' + toml.body
    )
    (service / "src" / "main.rs").write_text(rust.body)
    cargo_env = {**env, "CARGO_TARGET_DIR": str(ROOT / "target" / "newcomer-service")}
    run(["cargo", "run", "--quiet"], service, cargo_env, "a service depending on the crate")
    shutil.rmtree(tmp, ignore_errors=True)
    print("\nnewcomer test passed", flush=True)


if __name__ == "__main__":
    main()
