"""The suite-wide write guard (tests/conftest.py): writes outside tmp dirs fail and do not happen."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]


def _blocked(guard: Any, target: Path, write: Any) -> list[str]:
    with pytest.raises(PermissionError, match="wrote outside its tmp dirs"):
        write()
    assert not target.exists()  # refused before anything was written
    return list(guard.take())  # consumed here, so the guard does not fail this test


def test_writes_to_the_repo_home_and_etc_are_refused(write_guard_state: Any) -> None:
    probe = REPO / "guard-probe.txt"
    assert _blocked(write_guard_state, probe, lambda: probe.write_text("x")) == [f"open {probe}"]
    home = Path(os.path.expanduser("~root")) / ".hangar-guard-probe"
    assert _blocked(write_guard_state, home, home.mkdir) == [f"os.mkdir {home}"]
    db = REPO / "guard-probe.db"
    assert _blocked(write_guard_state, db, lambda: sqlite3.connect(db)) == [f"sqlite3.connect {db}"]


def test_rename_out_of_tmp_is_refused(write_guard_state: Any, tmp_path: Path) -> None:
    src = tmp_path / "a"
    src.write_text("x")
    dst = Path("/etc/hangar-guard-probe")
    assert _blocked(write_guard_state, dst, lambda: os.replace(src, dst)) == [f"os.rename {dst}"]
    assert src.read_text() == "x"


def test_a_swallowed_refusal_still_fails_the_test(write_guard_state: Any) -> None:
    try:
        (REPO / "guard-probe.txt").write_text("x")
    except OSError:
        pass  # code under test that hides the error
    assert write_guard_state.take() == [f"open {REPO / 'guard-probe.txt'}"]


def test_tmp_dirs_and_known_outputs_are_allowed(write_guard_state: Any, tmp_path: Path) -> None:
    tree = tmp_path / "t" / "u"
    tree.mkdir(parents=True)
    (tree / "f").write_text("x")
    os.replace(tree / "f", tree / "g")
    shutil.rmtree(tmp_path / "t")  # unlinks relative to a directory fd
    link = tmp_path / "python"
    link.symlink_to(sys.executable)  # as a venv's bin/python is
    link.unlink()  # removes the link in tmp, not the interpreter it points to
    Path(os.environ["HANGAR_HOME"], "state.json").write_text("{}")
    with open(os.devnull, "w") as null:
        null.write("x")
    (REPO / "README.md").read_text()  # reading is never a violation
    assert write_guard_state.take() == []


def test_subprocesses_get_a_tmp_home(tmp_path_factory: pytest.TempPathFactory) -> None:
    home = subprocess.run(
        [sys.executable, "-c", "import pathlib; print(pathlib.Path.home())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert Path(home).is_relative_to(tmp_path_factory.getbasetemp())
