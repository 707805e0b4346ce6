"""Field set 4 (issue 11, part 6): a post-hoc held-out set collected after every signature of
stop 17. Its form is checked (labels from the taxonomy, a log per case, https sources, no thread
quoted twice or by another fixture). Its accuracy was measured once by the lead (14/26 on
b33c837, README and docs/doctor.md); two misses were fixed afterwards, so it is in-sample and
guarded here against regression (16/26 now, floor 13/26)."""

from __future__ import annotations

from pathlib import Path

from support.field_sets import manifest, thread, threads_quoted_outside

from hangar.diagnose import CAUSES
from hangar.diagnose.evaluate import UNKNOWN, load_cases, score
from hangar.diagnose.knowledge import load

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
FIELD4 = FIXTURES / "logs_field4" / "heldout"


def test_every_case_is_labelled_and_has_its_log() -> None:
    cases = manifest(FIELD4)
    assert len(cases) >= 25
    for case in cases:
        assert case["cause"] in CAUSES or case["cause"] == UNKNOWN, case["file"]
        assert case["split"] == "heldout", case["file"]
        log = FIELD4 / case["file"]
        assert log.is_file() and log.read_text(encoding="utf-8").strip(), case["file"]
        assert case["source"].startswith("https://"), case["file"]
        assert case["confirmed_by"]["kind"] in ("maintainer", "fix", "reporter"), case["file"]
    assert {c["file"] for c in cases} == {p.name for p in FIELD4.glob("*.log")}


def test_no_thread_is_quoted_twice_or_by_another_fixture() -> None:
    threads = [thread(c["source"]) for c in manifest(FIELD4)]
    assert len(threads) == len(set(threads))
    assert not set(threads) & threads_quoted_outside(FIXTURES, FIELD4)


def test_in_sample_floor() -> None:
    result = score(FIELD4, load_cases(FIELD4), load())
    print("\n" + result.summary("field set 4 (in-sample since its one measurement)"))
    assert result.top1 >= 13
