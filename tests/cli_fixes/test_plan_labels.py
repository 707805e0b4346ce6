"""Issue 13 review, defect 6: after a rejected requested layout, the deployment total and
the launch command are labelled as the recommended layout's, not left to read as the
requested one's."""

from __future__ import annotations

import pytest

from hangar.cli.main import main


def test_recommended_instead_is_labelled(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("COLUMNS", "200")
    main(["plan", "Qwen/Qwen3-8B", "--gpu", "H100", "--gpus", "2", "--tp", "3"])
    out = capsys.readouterr().out
    assert "Deployment total (recommended instead: TP1 PP1 DP2):" in out
    assert "Launch (recommended instead: TP1 PP1 DP2): vllm serve" in out
    assert "\nLaunch:" not in out and "Deployment total:" not in out


def test_valid_requested_layout_is_not_relabelled(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["plan", "Qwen/Qwen3-8B", "--gpu", "H100", "--gpus", "2", "--tp", "2"]) == 0
    out = capsys.readouterr().out
    assert "Launch: vllm serve" in out and "recommended instead" not in out
