"""Scoring the doctor on a labelled corpus of real logs (tests and bench/doctor.py share it).

A corpus is a directory with a ``manifest.yaml`` (``cases``: file, cause, source, misleading,
optional ``split``). A case labelled ``unknown`` is right when the doctor names no cause: the
honest answer for a log that carries no evidence of a failure. "Unknown" answers are counted
apart, so that the precision of the causes the doctor does name stays visible.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from hangar.diagnose import reader
from hangar.diagnose.knowledge import KnowledgeBase
from hangar.diagnose.model import UNKNOWN
from hangar.diagnose.scan import Scanner

__all__ = ["UNKNOWN", "Case", "Score", "load_cases", "ranked_causes", "score"]


@dataclass(frozen=True)
class Case:
    file: str
    cause: str
    source: str
    misleading: bool
    split: str = ""


@dataclass
class Score:
    """Top-1 / top-3, the misleading subset, unknown answers and a confusion table."""

    total: int = 0
    top1: int = 0
    top3: int = 0
    misleading: int = 0
    misleading_right: int = 0
    named: int = 0
    named_right: int = 0
    said_unknown: int = 0
    confusion: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    misses: list[str] = field(default_factory=list)

    def rate(self, part: int, whole: int | None = None) -> float:
        whole = self.total if whole is None else whole
        return part / whole if whole else 0.0

    def summary(self, label: str) -> str:
        return (
            f"{label}: top-1 {self.top1}/{self.total} = {self.rate(self.top1):.1%}, "
            f"top-3 {self.top3}/{self.total} = {self.rate(self.top3):.1%}, "
            f"misleading {self.misleading_right}/{self.misleading}, "
            f"said unknown {self.said_unknown}, "
            f"precision of named causes {self.named_right}/{self.named} = "
            f"{self.rate(self.named_right, self.named):.1%}"
        )

    def table(self) -> list[str]:
        rows = []
        for cause in sorted(self.confusion):
            row = self.confusion[cause]
            wrong = {k: v for k, v in row.items() if k != cause}
            rows.append(f"  {cause:28s} {row[cause]}/{sum(row.values())}  {wrong or ''}")
        return rows


def load_cases(root: Path, split: str | None = None) -> list[Case]:
    """The manifest's cases, optionally only those of one split (``dev`` / ``heldout``)."""
    raw: dict[str, Any] = yaml.safe_load((root / "manifest.yaml").read_text(encoding="utf-8"))
    cases = [
        Case(
            file=str(c["file"]),
            cause=str(c["cause"]),
            source=str(c["source"]),
            misleading=bool(c.get("misleading", False)),
            split=str(c.get("split", "")),
        )
        for c in raw["cases"]
    ]
    return [c for c in cases if split is None or c.split == split]


def ranked_causes(paths: list[Path], kb: KnowledgeBase) -> list[str]:
    scanner = Scanner(kb)
    for source in reader.expand(paths):
        scanner.feed_source(source)
    return [f.cause for f in scanner.diagnosis().causes]


def score(root: Path, cases: list[Case], kb: KnowledgeBase) -> Score:
    result = Score()
    for case in cases:
        _tally(result, case, ranked_causes([root / case.file], kb))
    return result


def _tally(result: Score, case: Case, causes: list[str]) -> None:
    got = causes[0] if causes else UNKNOWN
    right = got == case.cause
    result.total += 1
    result.top1 += right
    result.top3 += right or (case.cause in causes[:3])
    result.misleading += case.misleading
    result.misleading_right += case.misleading and right
    result.said_unknown += got == UNKNOWN
    if got != UNKNOWN:
        result.named += 1
        result.named_right += right
    result.confusion[case.cause][got] += 1
    if not right:
        result.misses.append(f"{case.file} -> {got}")
