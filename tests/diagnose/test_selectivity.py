"""The prefilter's selectivity on a healthy multi-rank log, counted rather than timed.

A needle that every worker line carries (``(RayWorkerWrapper pid=...)``, a rank prefix) sends
each such line through the per-line matcher, and a signature whose main pattern never fires
keeps it live for the whole log: one such ``requires_any`` needle once made the doctor 11x
slower on bench/doctor.py's 1 GiB log. The bench measures the speed; this counts the lines
that reach the matcher on the bench's own generated log, which no load on the machine moves.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from hangar.diagnose import scan
from hangar.diagnose.evaluate import diagnose_case
from hangar.diagnose.knowledge import load

BENCH = Path(__file__).resolve().parents[2] / "bench" / "doctor.py"
# After the fix 788 of 800,036 lines (0.1%) reached the matcher; with the needle, 14%.
MOST = 0.01


def _bench() -> object:
    spec = importlib.util.spec_from_file_location("bench_doctor", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_few_lines_of_a_multi_rank_log_reach_the_matcher(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "multi_rank.log"
    _bench().generate(log, 4)  # type: ignore[attr-defined]
    lines = log.read_bytes().count(b"\n")
    seen = 0
    original = scan.Scanner._match_line

    def counted(self: scan.Scanner, *args: object, **kwargs: object) -> None:
        nonlocal seen
        seen += 1
        original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(scan.Scanner, "_match_line", counted)
    diagnose_case([log], load())
    assert seen / lines < MOST, f"{seen} of {lines} lines reached the per-line matcher"
