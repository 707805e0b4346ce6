"""`hangar gpus list|show|detect` through click and as a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pynvml
import pytest
from click.testing import CliRunner

from hangar.cli.main import cli, main


def _run(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_list_json_has_every_entry_with_nvml_totals() -> None:
    rows = json.loads(_run("gpus", "list", "--json"))
    by_id = {row["id"]: row for row in rows}
    assert by_id["H100-SXM-80GB"]["memory_bytes"] == 85520809984
    assert by_id["H100-SXM-80GB"]["memory_mib"] == 81559
    assert by_id["GB10"]["compute_capability"] == [12, 1]
    assert by_id["RTX-PRO-6000"]["name"] == "NVIDIA RTX PRO 6000 Blackwell Workstation Edition"
    assert all(row["source"] for row in rows)


def test_list_table_names_every_entry() -> None:
    out = _run("gpus", "list")
    for gpu_id in ("H100-SXM-80GB", "A100-SXM-40GB", "RTX-4090", "B300", "GB10"):
        assert gpu_id in out


def test_show_json_accepts_forgiving_names() -> None:
    spec = json.loads(_run("gpus", "show", "h100-80gb", "--json"))
    assert spec["id"] == "H100-SXM-80GB" and spec["interconnect"] == "nvlink"


def test_show_text() -> None:
    out = _run("gpus", "show", "NVIDIA GeForce RTX 4090")
    assert "RTX-4090" in out and "24564 MiB" in out and "source:" in out


def test_show_unknown_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gpus", "show", "rtx40"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert err.startswith("hangar: error:") and "unknown GPU 'rtx40'" in err and "RTX-4090" in err


def _nvml_present() -> bool:
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return False
    pynvml.nvmlShutdown()
    return True


@pytest.mark.skipif(_nvml_present(), reason="this host has an NVIDIA driver")
def test_detect_without_driver(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gpus", "detect"]) == 1
    assert "NVML library not found" in capsys.readouterr().err


def test_list_json_as_a_subprocess(tmp_path: Path) -> None:
    env = {**os.environ, "HANGAR_HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "hangar", "gpus", "list", "--json"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert {"H100-SXM-80GB", "GB10"} <= {row["id"] for row in json.loads(done.stdout)}
