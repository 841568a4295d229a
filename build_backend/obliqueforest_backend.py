"""The PEP 517 build backend of obliqueforest: maturin's, after one check.

Building the package compiles its Rust core, so it needs cargo. Where cargo is missing,
maturin downloads a Rust toolchain (about 850 MB) into a temporary directory before
building, and pip shows none of it unless run with ``-v``. This backend stops first and
says what would happen and how to avoid it (a prebuilt wheel); setting
``OBLIQUEFOREST_DOWNLOAD_RUST=1`` lets maturin download the toolchain as it would.
Every other hook is maturin's own.
"""

from __future__ import annotations

import os
import shutil
import sys

import maturin

MESSAGE = """
obliqueforest: building it from source needs Rust (cargo), which is not on this machine's
PATH. Without it, the build backend (maturin) would now download a Rust toolchain of about
850 MB into a temporary directory, then compile for several minutes. Nothing was
downloaded. Choose one:

  * install a prebuilt wheel instead (no Rust needed): build it once on a machine with
    Rust (maturin build --release), copy target/wheels to this one, then
        pip install --find-links target/wheels obliqueforest
  * install Rust (https://rustup.rs), open a new shell, and run pip install . again
  * let maturin download the toolchain for this build:
        OBLIQUEFOREST_DOWNLOAD_RUST=1 pip install .
"""

# the PEP 517 and PEP 660 hooks maturin provides; each runs the check first
HOOKS = (
    "get_requires_for_build_wheel", "get_requires_for_build_editable",
    "get_requires_for_build_sdist", "prepare_metadata_for_build_wheel",
    "prepare_metadata_for_build_editable", "build_wheel", "build_editable", "build_sdist",
)  # fmt: skip


def check_rust():
    """Stops the build (exit status 1, the message on stderr) when cargo is missing and
    maturin would download a toolchain."""
    if shutil.which("cargo") or os.environ.get("OBLIQUEFOREST_DOWNLOAD_RUST") == "1":
        return
    if os.environ.get("MATURIN_NO_INSTALL_RUST"):
        return  # maturin fails on its own, without downloading
    sys.stderr.write(MESSAGE)
    sys.stderr.flush()
    raise SystemExit(1)


def _checked(hook):
    def run(*args, **kwargs):
        check_rust()
        return hook(*args, **kwargs)

    run.__name__ = run.__qualname__ = hook.__name__
    return run


for _name in HOOKS:
    if hasattr(maturin, _name):
        globals()[_name] = _checked(getattr(maturin, _name))
