"""`hangar logs -n N` keeps the last N lines; -n 0 printed the whole log ([-0:])."""

from __future__ import annotations

import pytest

from hangar.cli.logs import _print_tail


@pytest.mark.parametrize(
    ("n", "expected"), [(0, ""), (2, "b\nc"), (9, "a\nb\nc"), (None, "a\nb\nc")]
)
def test_tail(n: int | None, expected: str, capsys: pytest.CaptureFixture[str]) -> None:
    _print_tail("a\nb\nc\n", n, None)
    assert capsys.readouterr().out == (expected + "\n" if expected else "")
