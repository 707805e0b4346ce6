"""The commands end to end through hangar.cli.main.main (real processes, fake engine)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hangar.cli.main import main
from hangar.deploy import write_deployment

from .conftest import deployment


def test_preflight_json_and_exit_codes(
    fake_engine: Path,
    model_dir: Path,
    port: int,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    file = tmp_path / "hangar.toml"
    write_deployment(deployment(fake_engine, model_dir, port), file)
    assert main(["preflight", str(file), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {"id", "severity", "message", "fix"} <= set(doc["findings"][0])
    assert (
        main(["preflight", str(file), "--engine", str(tmp_path / "missing" / "python"), "--json"])
        == 1
    )
    ids = {f["id"] for f in json.loads(capsys.readouterr().out)["findings"]}
    assert "host.engine.missing" in ids


def test_launch_status_logs_stop_clean(
    fake_engine: Path,
    model_dir: Path,
    port: int,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    file = tmp_path / "hangar.toml"
    write_deployment(deployment(fake_engine, model_dir, port), file)
    assert main(["launch", str(file)]) == 0
    out = capsys.readouterr().out
    run_id = out.split()[1]
    assert f"http://127.0.0.1:{port}" in out
    assert main(["status", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["id"] == run_id and rows[0]["alive"]
    assert main(["logs", run_id]) == 0
    assert "Application startup complete" in capsys.readouterr().out
    assert main(["stop", run_id[:4]]) == 0
    assert "stopped" in capsys.readouterr().out
    assert main(["stop", run_id]) == 0  # already stopped: idempotent, says so
    assert "already" in capsys.readouterr().out
    assert main(["clean", "--dry-run"]) == 0
    assert run_id in capsys.readouterr().out
    assert main(["clean"]) == 0
    capsys.readouterr()
    assert main(["status", "--all", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["status"] == "stopped"


def test_failed_launch_shows_the_error_block(
    fake_engine: Path,
    model_dir: Path,
    port: int,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    file = tmp_path / "hangar.toml"
    d = deployment(fake_engine, model_dir, port).model_copy(
        update={"env": {"FAKE_VLLM_MODE": "crash"}}
    )
    write_deployment(d, file)
    assert main(["launch", str(file)]) == 1
    err = capsys.readouterr().err
    assert "fake engine refused the model" in err
    assert "hangar logs" in err


def test_workarounds_commands(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["workarounds", "check", "--gpu", "rtx4090", "--gpus", "2", "--json"]) == 0
    applied = json.loads(capsys.readouterr().out)["applied"]
    entry = next(a for a in applied if a["id"] == "consumer-pcie-tp-p2p")
    assert {"id", "env", "args", "reason", "upstream", "added", "remove_when"} <= set(entry)
    assert main(["workarounds", "show", "wsl2-pin-memory"]) == 0
    assert "VLLM_WSL2_ENABLE_PIN_MEMORY=1" in capsys.readouterr().out
    assert main(["workarounds", "show", "nope"]) == 1
    assert main(["workarounds", "review", "--vllm-version", "0.33.0", "--json"]) == 0
    assert main(["workarounds", "list", "--json"]) == 0
