"""The build backend (pyproject.toml -> build_backend/obliqueforest_backend.py): without
Rust, `pip install .` stops before maturin downloads a toolchain, and says how to go on."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _requires(path_dir, **env):
    pytest.importorskip("maturin")
    environ = {
        k: v for k, v in os.environ.items() if not k.startswith(("OBLIQUEFOREST_", "MATURIN_"))
    }
    environ.update(PATH=str(path_dir), PYTHONPATH=str(ROOT / "build_backend"), **env)
    code = "import obliqueforest_backend as b; print(b.get_requires_for_build_wheel())"
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=environ, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip


def test_pyproject_builds_through_the_checking_backend():
    try:
        import tomllib
    except ModuleNotFoundError:  # Python < 3.11
        tomllib = pytest.importorskip("tomli")
    system = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]
    assert system["build-backend"] == "obliqueforest_backend"
    (folder,) = system["backend-path"]
    assert (ROOT / folder / "obliqueforest_backend.py").is_file()


def test_without_cargo_the_build_stops_before_any_download(tmp_path):
    out = _requires(tmp_path)
    assert out.returncode == 1, out
    for fragment in ("needs Rust (cargo)", "850 MB", "Nothing was", "--find-links target/wheels",
                     "https://rustup.rs", "OBLIQUEFOREST_DOWNLOAD_RUST=1 pip install ."):  # fmt: skip
        assert fragment in out.stderr, out.stderr
    assert "puccinialin" not in out.stdout  # maturin's toolchain downloader is not asked for


def test_the_download_is_opt_in_and_cargo_needs_no_check(tmp_path):
    out = _requires(tmp_path, OBLIQUEFOREST_DOWNLOAD_RUST="1")
    assert out.returncode == 0, out.stderr
    assert "puccinialin" in out.stdout  # maturin's own answer: it will download Rust
    cargo = tmp_path / "cargo"
    cargo.write_text("#!/bin/sh\nexit 0\n")
    cargo.chmod(0o755)
    out = _requires(tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stderr == "" and "puccinialin" not in out.stdout
