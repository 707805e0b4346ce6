"""Calibrated confidence and the honest unknown (issue 11 item 4): the reliability table the
bench prints, and the naming floor below which the doctor names nothing."""

from __future__ import annotations

from hangar.diagnose import diagnose_text
from hangar.diagnose.evaluate import reliability
from hangar.diagnose.model import Cause
from hangar.diagnose.scan import NAME_FLOOR, named_causes


def _cause(confidence: float, stall: bool = False) -> Cause:
    return Cause(
        cause="other",
        signature="s",
        confidence=confidence,
        explanation="e",
        fix="f",
        evidence=(),
        stall=stall,
    )


def test_reliability_bins_count_right_answers_per_confidence() -> None:
    rows = reliability([(0.0, True), (0.2, False), (0.95, True), (0.92, False), (0.85, True)])
    assert rows[0].split()[:4] == ["named", "nothing", "1/1", "right"]
    assert "0/1" in rows[1] and rows[1].lstrip().startswith("(0.0, 0.3]")
    assert rows[-2].lstrip().startswith("(0.8, 0.9]") and "1/1" in rows[-2]
    assert rows[-1].lstrip().startswith("(0.9, 1.0]") and "1/2" in rows[-1] and "50.0%" in rows[-1]


def test_a_guess_below_the_floor_names_nothing_but_a_stage_marker_does() -> None:
    assert named_causes([_cause(NAME_FLOOR - 0.05), _cause(0.16)]) == []
    low_stall = [_cause(NAME_FLOOR - 0.05, stall=True)]
    assert named_causes(low_stall) == low_stall  # "it may still be progressing" stays visible
    strong = [_cause(0.9), _cause(0.2)]
    assert named_causes(strong) == strong  # alternatives below the floor stay in the top 3


def test_engine_core_failed_alone_is_unknown() -> None:
    log = "RuntimeError: Engine core initialization failed. See root cause above.\n"
    diagnosis = diagnose_text(log)
    assert diagnosis.healthy and diagnosis.unconfirmed
