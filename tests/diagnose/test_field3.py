"""Field set 3 (issue 11, part 6): manifests well formed, the split follows its written rule, no
thread quoted twice or by another fixture; the dev split's in-sample accuracy has a floor.

The held-out split is only checked for form here (files, labels, URLs, the split rule); its
accuracy was measured once by the lead (see README) and is guarded below only against regression,
with the margin stated beside the floor.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support.field_sets import manifest, thread, threads_quoted_outside

from hangar.diagnose import CAUSES
from hangar.diagnose.evaluate import UNKNOWN, load_cases, score
from hangar.diagnose.knowledge import load

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
FIELD3 = FIXTURES / "logs_field3"
SPLITS = ("dev", "heldout")
WHOLE_REPOS_HELDOUT = {  # the rule's list, with the two repositories' new names
    "volcengine/verl",
    "verl-project/verl",
    "hiyouga/LLaMA-Factory",
    "hiyouga/LlamaFactory",
    "OpenRLHF/OpenRLHF",
    "NVIDIA/TensorRT-LLM",
    "flashinfer-ai/flashinfer",
    "deepspeedai/DeepSpeed",
    "microsoft/DeepSpeed",
}
CUTOFF = "2025-10-01"

pytestmark = pytest.mark.skipif(
    not (FIELD3 / "dev" / "manifest.yaml").is_file(), reason="field set 3 not merged yet"
)


def test_every_case_is_labelled_from_the_taxonomy_and_has_its_log() -> None:
    for split in SPLITS:
        for case in manifest(FIELD3 / split):
            assert case["cause"] in CAUSES or case["cause"] == UNKNOWN, case["file"]
            assert case["split"] == split, case["file"]
            log = FIELD3 / split / case["file"]
            assert log.is_file() and log.read_text(encoding="utf-8").strip(), case["file"]
            assert case["source"].startswith("https://"), case["file"]
            assert case["repo"], case["file"]
            assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", str(case["date"])), case["file"]
            assert case["confirmed_by"]["kind"] in ("maintainer", "fix", "reporter"), case["file"]
            assert isinstance(case["misleading"], bool), case["file"]


def test_split_follows_the_written_rule() -> None:
    for split in SPLITS:
        for case in manifest(FIELD3 / split):
            heldout = (
                str(case["date"]) >= CUTOFF
                or case["repo"] in WHOLE_REPOS_HELDOUT
                or not case["source"].startswith("https://github.com/")
            )
            assert split == ("heldout" if heldout else "dev"), case["file"]


def test_no_thread_is_quoted_twice_or_by_another_fixture() -> None:
    threads = [thread(c["source"]) for split in SPLITS for c in manifest(FIELD3 / split)]
    assert len(threads) == len(set(threads))
    assert not set(threads) & threads_quoted_outside(FIXTURES, FIELD3)


def test_every_case_file_is_in_its_manifest() -> None:
    for split in SPLITS:
        listed = {c["file"] for c in manifest(FIELD3 / split)}
        assert listed == {p.name for p in (FIELD3 / split).glob("*.log")}, split


def test_dev_split_in_sample_floor() -> None:
    """In-sample (signatures were written while reading it): measured 37/40 = 92.5%, precision
    34/34; the floor leaves 12 points for later changes elsewhere in the knowledge base."""
    result = score(FIELD3 / "dev", load_cases(FIELD3 / "dev"), load())
    print("\n" + result.summary("field set 3 dev (in-sample)"))
    assert result.rate(result.top1) >= 0.80
    assert result.rate(result.named_right, result.named) >= 0.90


def test_heldout_split_since_its_one_measurement_does_not_regress() -> None:
    """Measured once at 19/44 (6a094f3), then read and fixed on: 23/44 in-sample now; the floor
    is the measured figure."""
    result = score(FIELD3 / "heldout", load_cases(FIELD3 / "heldout"), load())
    assert result.top1 >= 19
