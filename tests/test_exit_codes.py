"""The exit codes the docs promise (issue 13), in process through the one error boundary."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from hangar.cli.main import main
from hangar.store import runs as store
from hangar.store.db import connect


def test_help_documents_every_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    for needle in (
        "0 ok",
        "1 an expected failure",
        "2 a usage error",
        "3 an internal error",
        "130 interrupted",
    ):
        assert needle in text, text


@pytest.mark.parametrize(
    "argv",
    [
        ["plan", "Qwen/Qwen3-8B", "--gpu", "H900"],  # was 1
        ["eval", "http://[::1"],  # was 1
        ["plan", "Qwen/Qwen3-8B", "--gpus", "0"],
    ],
)
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(("hangar: error:", "Error:")) and "internal error" not in err[-1]


def test_help_documents_the_signal_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "143 terminated (SIGTERM)" in text and "129 hung up (SIGHUP)" in text, text


@pytest.mark.parametrize("status", ["stopped", "exited", "failed"])
def test_stop_of_a_run_that_already_ended_exits_0(
    status: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`hangar stop` is idempotent: the run is not running, which is what stop is for."""
    conn = connect()
    store.insert_run(
        conn,
        store.RunRecord(
            id="ended001",
            label="tiny",
            log_path=str(tmp_path / "server.log"),
            run_dir=str(tmp_path),
            deployment_json="{}",
            engine="x",
            status=status,  # type: ignore[arg-type]
            started_at=time.time(),
            ended_at=time.time(),
        ),
    )
    assert main(["stop", "ended001"]) == 0
    assert f"already stopped (status {status})" in capsys.readouterr().out


def test_plan_of_a_deployment_file_names_preflight(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`hangar plan hangar.toml` used to read the TOML as a config.json ("not valid JSON")."""
    (tmp_path / "hangar.toml").write_text('[model]\nid = "Qwen/Qwen3-8B"\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["plan", "hangar.toml"]) == 2
    err = capsys.readouterr().err
    assert "deployment file" in err and "hangar preflight hangar.toml" in err, err
    assert "JSON" not in err, err
