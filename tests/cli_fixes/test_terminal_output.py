"""Issue 13 review, defect 1 and 2: server text reaches the terminal through the one
sanitizer (hangar.cli.terminal), cut before rich wraps it."""

from __future__ import annotations

import gzip
import io
from pathlib import Path
from types import SimpleNamespace

import pytest
from rich.console import Console

from hangar.cli import launch, logs
from hangar.cli.terminal import LIMIT, clip, escape

HOSTILE = "ValueError: bad \x1b]0;TITLE-PWNED\x07 \x1b[2J\x1b[31mred"


def _no_controls(text: str) -> None:
    assert "\x1b" not in text and "\x07" not in text
    assert "\\x1b]0;TITLE-PWNED\\x07" in text


def test_launch_failure_block_shows_escape_sequences() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, color_system=None, width=200)
    launch._show_failure(console, SimpleNamespace(error_block=HOSTILE, diagnosis=HOSTILE))
    _no_controls(out.getvalue())


def test_launch_event_lines_show_escape_sequences() -> None:
    out = io.StringIO()
    console = Console(file=out, color_system=None, width=200)
    status = SimpleNamespace(update=lambda text: None)
    show = launch._event_printer(console, status)
    show(SimpleNamespace(elapsed_s=1.0, stage="log", detail=HOSTILE, run_id="r"))
    _no_controls(out.getvalue())


def test_logs_tail_and_whole_file_are_sanitized(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "server.log"
    log.write_text(f"first\n{HOSTILE}\n", encoding="utf-8")
    logs._print_tail(log.read_text(), 1, None)
    _no_controls(capsys.readouterr().out)
    logs._show(log, None, header=True)
    _no_controls(capsys.readouterr().out)
    assert logs._safe("a\r\nb\rc") == "a\nb\\x0dc"  # a lone CR cannot overwrite a line


def test_binary_log_is_named_and_shown_sanitized(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "server.log"
    log.write_bytes(gzip.compress(HOSTILE.encode() * 50))
    logs._show(log, None, header=False)
    captured = capsys.readouterr()
    assert "binary data" in captured.err and str(log) in captured.err
    assert "\x1b" not in captured.out and "\x00" not in captured.out


def test_outside_values_are_cut_with_their_length() -> None:
    assert clip("x" * 10, 4) == "xxxx… (10 chars)"
    assert clip("short") == "short"
    assert len(escape("m" * 5_000_000)) < LIMIT + 40


def test_eval_report_with_a_huge_model_id_renders_quickly() -> None:
    from hangar.cli.eval import render_result

    huge = "m" * 5_000_000
    check = SimpleNamespace(status="pass", name=huge, detail=huge)
    result = SimpleNamespace(
        id="e1",
        target="http://127.0.0.1:1",
        snapshot=SimpleNamespace(model=huge, engine_version="0.0"),
        suites={"smoke": SimpleNamespace(status="pass", checks=[check], points=None)},
    )
    out = io.StringIO()
    render_result(Console(file=out, width=120), result)  # before the fix: minutes of wrapping
    text = out.getvalue()
    assert "(5000000 chars)" in text and len(text) < 20_000
