"""Reading the doctor's labelled field sets (tests/fixtures/logs_field*/<split>/manifest.yaml)
and the threads every other fixture quotes: one copy for the field sets' form tests."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from hangar.diagnose import CAUSES
from hangar.diagnose.evaluate import UNKNOWN, load_cases, score
from hangar.diagnose.knowledge import load

URL = re.compile(r"https?://[^\s'\"<>)\]]+")


def manifest(folder: Path) -> list[dict[str, Any]]:
    """The cases of ``folder/manifest.yaml`` (schema_version 1)."""
    raw = yaml.safe_load((folder / "manifest.yaml").read_text(encoding="utf-8"))
    assert raw["schema_version"] == 1
    cases: list[dict[str, Any]] = raw["cases"]
    return cases


def thread(url: str) -> str:
    """One thread = one key, whatever anchor or trailing punctuation a manifest gave it."""
    return url.split("#")[0].rstrip("/.,;:").removeprefix("https://").removeprefix("http://")


def threads_quoted_outside(fixtures: Path, own: Path) -> set[str]:
    """Every thread URL in a fixture file that does not lie under ``own``."""
    found: set[str] = set()
    for path in fixtures.rglob("*"):
        if path.is_file() and own not in path.parents:
            text = path.read_text(encoding="utf-8", errors="replace")
            found |= {thread(u) for u in URL.findall(text)}
    return found


def check_post_hoc_set(fixtures: Path, folder: Path, at_least: int) -> None:
    """A post-hoc set's form: labels from the taxonomy, one log per case (and no stray log),
    https sources, a confirmation, no thread quoted twice or by another fixture."""
    cases = manifest(folder)
    assert len(cases) >= at_least
    for case in cases:
        assert case["cause"] in CAUSES or case["cause"] == UNKNOWN, case["file"]
        assert case["split"] == "heldout", case["file"]
        log = folder / case["file"]
        assert log.is_file() and log.read_text(encoding="utf-8").strip(), case["file"]
        assert case["source"].startswith("https://"), case["file"]
        assert case["confirmed_by"]["kind"] in ("maintainer", "fix", "reporter"), case["file"]
    assert {c["file"] for c in cases} == {p.name for p in folder.glob("*.log")}
    threads = [thread(c["source"]) for c in cases]
    assert len(threads) == len(set(threads))
    assert not set(threads) & threads_quoted_outside(fixtures, folder)


def in_sample_top1(folder: Path, label: str) -> int:
    """The doctor's top-1 count on a set (printed with its summary, for the test log)."""
    result = score(folder, load_cases(folder), load())
    print("\n" + result.summary(label))
    return result.top1
