"""A read-only HANGAR_HOME (issue 13, fixB.2): inspecting an engine and `support` still
work (the inspection cache is only a shortcut), and the store says the directory is
read-only and how to point Hangar elsewhere, not "move the file aside".

A real read-only mount: the suite runs as root, for whom chmod 0555 does not stop writes,
so HANGAR_HOME is bind-mounted read-only in a private mount namespace (`unshare -m`)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hangar.cli.main import main
from hangar.store.db import connect


def _unshare_works() -> str:
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return "unshare or mount is not installed"
    probe = subprocess.run(
        ["unshare", "-m", "true"], capture_output=True, text=True, timeout=30, check=False
    )
    return "" if probe.returncode == 0 else f"unshare -m fails here: {probe.stderr.strip()}"


def _venv_with_vllm(root: Path) -> Path:
    """An interpreter whose site-packages holds a vLLM distribution (inspect reads files only)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    site = next((root / "lib").glob("python3*/site-packages"))
    (site / "vllm").mkdir()
    (site / "vllm" / "__init__.py").write_text("")
    dist = site / "vllm-0.33.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: vllm\nVersion: 0.33.0\n")
    return root / "bin" / "python"


def _read_only(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    script = 'mount --bind -o ro "$HANGAR_HOME" "$HANGAR_HOME" && exec "$@"'
    return subprocess.run(
        ["unshare", "-m", "sh", "-c", script, "sh", sys.executable, "-m", "hangar", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "HANGAR_HOME": str(home), "HF_HUB_OFFLINE": "1"},
    )


def test_read_only_home(hangar_home: Path, tmp_path: Path) -> None:
    reason = _unshare_works()
    if reason:
        pytest.skip(reason)
    python = _venv_with_vllm(tmp_path / "venv")
    assert main(["engines", "add", "ro", "--python", str(python)]) == 0
    connect().close()  # the store exists, as after any launch
    shutil.rmtree(hangar_home / "cache", ignore_errors=True)  # nothing cached yet

    inspected = _read_only(hangar_home, "engines", "inspect", "ro")
    assert inspected.returncode == 0, inspected.stderr
    assert "0.33.0" in inspected.stdout and "Read-only" not in inspected.stderr

    supported = _read_only(hangar_home, "support", "Qwen/Qwen3-8B", "--engine", "ro")
    assert supported.returncode in (0, 1), supported.stderr
    assert "Read-only file system" not in supported.stderr and "Traceback" not in supported.stderr

    status = _read_only(hangar_home, "status")
    assert status.returncode == 1 and "Traceback" not in status.stderr
    assert "is read-only" in status.stderr and "set HANGAR_HOME=" in status.stderr
    assert "aside" not in status.stderr


def test_read_only_config_dir_names_the_fix(hangar_home: Path, tmp_path: Path) -> None:
    reason = _unshare_works()
    if reason:
        pytest.skip(reason)
    python = _venv_with_vllm(tmp_path / "venv")
    added = _read_only(hangar_home, "engines", "add", "ro2", "--python", str(python))
    assert added.returncode == 1 and "Traceback" not in added.stderr, added.stderr
    assert "cannot lock the engine registry" in added.stderr
    assert "set HANGAR_HOME=DIR" in added.stderr
