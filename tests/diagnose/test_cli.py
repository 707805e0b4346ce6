"""`hangar doctor` end to end: exit codes, the JSON contract, stdin and run ids."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hangar.cli.main import main

from .conftest import CORPUS

HEADS = CORPUS / "tp_heads_divisibility" / "vllm-414-52-heads-tp3.log"


def test_json_contract_and_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", "--json", str(HEADS)]) == 1
    payload = json.loads(capsys.readouterr().out)
    assert list(payload) == ["causes"]
    cause = payload["causes"][0]
    assert list(cause) == ["cause", "signature", "confidence", "explanation", "fix", "evidence"]
    assert cause["cause"] == "tp_heads_divisibility"
    assert list(cause["evidence"][0]) == ["file", "line", "text"]


def test_healthy_and_bad_input_exit_codes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ok = tmp_path / "ok.log"
    ok.write_text("INFO:     Application startup complete.\n")
    assert main(["doctor", "--json", str(ok)]) == 0
    assert json.loads(capsys.readouterr().out) == {"causes": []}
    assert main(["doctor", str(tmp_path / "nope.log")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nope.log" in err[0]


def test_text_output_names_cause_fix_and_evidence(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", str(HEADS)]) == 1
    out = capsys.readouterr().out
    assert "tp_heads_divisibility" in out and "fix:" in out and f"{HEADS}:1" in out


def test_stdin_through_a_real_process(tmp_path: Path) -> None:
    env = {"HANGAR_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-m", "hangar", "doctor", "--json", "-"],
        input=HEADS.read_bytes(),
        capture_output=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert json.loads(done.stdout)["causes"][0]["cause"] == "tp_heads_divisibility"


def test_run_id_from_the_launch_store(
    hangar_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["doctor", "run-42"]) == 2  # no store yet: unknown run id, store not created
    assert "run-42" in capsys.readouterr().err
    assert not (hangar_home / "state").exists()
    from hangar.store import runs as store
    from hangar.store.db import connect

    record = store.RunRecord(
        id="run-42",
        label="m",
        log_path=str(HEADS),
        run_dir=str(hangar_home / "gone"),
        deployment_json="{}",
        engine="default",
        status="failed",
        started_at=1.0,
    )
    store.insert_run(connect(), record)
    assert main(["doctor", "--json", "run-42"]) == 1
    assert json.loads(capsys.readouterr().out)["causes"][0]["cause"] == "tp_heads_divisibility"
