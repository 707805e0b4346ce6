"""An internal error (exit 3) writes a crash log, as pre-commit does (issue 13, part 5):
versions, the command with its secrets masked and the traceback, under the state dir, and
the one-line message names it."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from hangar.cli import main as cli_main
from hangar.errors import CRASH_CONTEXT, remember_for_crash_log

SECRET = "sk-abcdefghijklmnopqrstuvwx"
ARGV = ["eval", "http://alice:hunter2pass@127.0.0.1:9/v1", "--api-key", SECRET]


def provoke(home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HANGAR_HOME": str(home), cli_main._TEST_CRASH_VAR: "1"}
    return subprocess.run(
        [sys.executable, "-m", "hangar", *ARGV],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_internal_error_writes_a_crash_log_and_names_it(tmp_path: Path) -> None:
    done = provoke(tmp_path)
    assert done.returncode == 3, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    logs = list((tmp_path / "state" / "crash").iterdir())
    assert len(logs) == 1
    assert f"crash log: {logs[0]}" in lines[0] and "internal error: RuntimeError" in lines[0]
    assert stat.S_IMODE(logs[0].stat().st_mode) == 0o600
    assert stat.S_IMODE(logs[0].parent.stat().st_mode) == 0o700  # others cannot list them
    text = logs[0].read_text()
    for needle in ("hangar: ", "python: ", "os: ", "### command", "Traceback", "RuntimeError"):
        assert needle in text, text
    assert SECRET not in text and "hunter2pass" not in text, text
    assert "--api-key ***" in text, text


def test_crash_log_names_the_engine_when_known() -> None:
    remember_for_crash_log("engine", "stable: vLLM 0.33.0")
    try:
        path = cli_main.write_crash_log(["launch"], ValueError("boom"))
    finally:
        CRASH_CONTEXT.pop("engine", None)
    assert path is not None and "engine: stable: vLLM 0.33.0" in path.read_text()


def test_an_unwritable_crash_dir_still_reports_the_error(tmp_path: Path) -> None:
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "crash").write_text("a file where the directory should be")
    done = provoke(tmp_path)
    assert done.returncode == 3
    line = done.stderr.strip()
    assert "internal error: RuntimeError" in line and "crash log" not in line, line
