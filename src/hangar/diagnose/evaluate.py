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
from hangar.diagnose.model import UNKNOWN, Diagnosis
from hangar.diagnose.scan import Scanner

__all__ = [
    "UNKNOWN",
    "Case",
    "Score",
    "diagnose_case",
    "load_cases",
    "ranked_causes",
    "reliability",
    "score",
]


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
    # (confidence of the top cause, 0.0 when none was named; whether the answer was right)
    answers: list[tuple[float, bool]] = field(default_factory=list)

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


# Upper bounds of the reliability bins: 0 is "named nothing"; 0.5 is where --llm is skipped.
BINS = (0.0, 0.3, 0.5, 0.7, 0.8, 0.9, 1.0)


def reliability(answers: list[tuple[float, bool]]) -> list[str]:
    """Per confidence bin: how many top causes, how many right, mean confidence (does the
    confidence of the top cause predict being right?)."""
    rows, low = [], -1.0
    for high in BINS:
        part = [(c, ok) for c, ok in answers if low < c <= high]
        low = high
        if not part:
            continue
        right = sum(ok for _, ok in part)
        mean = sum(c for c, _ in part) / len(part)
        label = (
            "named nothing" if high == 0.0 else f"({BINS[BINS.index(high) - 1]:.1f}, {high:.1f}]"
        )
        rows.append(
            f"  {label:14s} {right:3d}/{len(part):<3d} right = {right / len(part):6.1%}, "
            f"mean confidence {mean:.2f}"
        )
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


def diagnose_case(paths: list[Path], kb: KnowledgeBase) -> Diagnosis:
    """A labelled case as a saved log: its checkout time is not the process's last word."""
    scanner = Scanner(kb, post_mortem=True)
    for source in reader.expand(paths):
        scanner.feed_source(source)
    return scanner.diagnosis()


def ranked_causes(paths: list[Path], kb: KnowledgeBase) -> list[str]:
    return [f.cause for f in diagnose_case(paths, kb).causes]


def score(root: Path, cases: list[Case], kb: KnowledgeBase) -> Score:
    result = Score()
    for case in cases:
        _tally(result, case, diagnose_case([root / case.file], kb))
    return result


def _tally(result: Score, case: Case, diagnosis: Diagnosis) -> None:
    causes = [f.cause for f in diagnosis.causes]
    got = causes[0] if causes else UNKNOWN
    right = got == case.cause
    result.answers.append((diagnosis.top.confidence if diagnosis.top else 0.0, right))
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
