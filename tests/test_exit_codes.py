"""The exit codes the docs promise (issue 13), in process through the one error boundary."""

from __future__ import annotations

import pytest

from hangar.cli.main import main


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
