"""Field set 2 (issue 11, part 6): both manifests are well formed and the two splits are disjoint.

Cheap on purpose: it reads the manifests and checks files and URLs; it never runs the doctor, so the
held-out split is not measured here (the lead measures it once, see the manifest header).
"""

from __future__ import annotations

import re
from pathlib import Path

from support.field_sets import manifest, thread, threads_quoted_outside

from hangar.diagnose import CAUSES
from hangar.diagnose.evaluate import UNKNOWN

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
FIELD2 = FIXTURES / "logs_field2"
SPLITS = ("dev", "heldout")
HELDOUT_REPOS = {
    "pytorch/pytorch",
    "NVIDIA/nccl",
    "huggingface/transformers",
    "sgl-project/sglang",
    "ray-project/ray",
}
CUTOFF = "2025-08-01"


def test_every_case_is_labelled_from_the_taxonomy_and_has_its_log() -> None:
    for split in SPLITS:
        for case in manifest(FIELD2 / split):
            assert case["cause"] in CAUSES or case["cause"] == UNKNOWN, case["file"]
            assert case["split"] == split, case["file"]
            assert (FIELD2 / split / case["file"]).is_file(), case["file"]
            assert (FIELD2 / split / case["file"]).read_text(encoding="utf-8").strip(), case["file"]
            assert case["source"].startswith("https://"), case["file"]
            assert case["repo"], case["file"]
            assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", str(case["date"])), case["file"]
            assert case["confirmed_by"]["quote"].strip(), case["file"]
            assert isinstance(case["misleading"], bool), case["file"]


def test_split_follows_the_written_rule() -> None:
    for split in SPLITS:
        for case in manifest(FIELD2 / split):
            heldout = case["repo"] in HELDOUT_REPOS or str(case["date"]) >= CUTOFF
            assert split == ("heldout" if heldout else "dev"), case["file"]


def test_no_thread_is_quoted_twice_or_by_another_fixture() -> None:
    threads = [thread(c["source"]) for split in SPLITS for c in manifest(FIELD2 / split)]
    assert len(threads) == len(set(threads))  # dev and heldout disjoint, no duplicates inside
    assert not set(threads) & threads_quoted_outside(FIXTURES, FIELD2)


def test_every_case_file_is_in_its_manifest() -> None:
    for split in SPLITS:
        listed = {c["file"] for c in manifest(FIELD2 / split)}
        on_disk = {p.name for p in (FIELD2 / split).glob("*.log")}
        assert listed == on_disk, split
