"""The line prefilter: a few SIMD multi-literal searches that select candidate lines.

Why this shape: ahocorasick_rs (the Rust ``aho-corasick`` 1.x crate) searches with its packed
*Teddy* SIMD algorithm only for at most 64 needles (``packed::Config``'s pattern limit);
past that it walks a DFA byte by byte, which with the ~250 anchors of the knowledge base
ran at about half the speed of ``grep -E -f`` here, and Teddy over 64 needles about five
times faster than that DFA. So the anchors are split into groups of 64, each searched with
Teddy. An anchor that contains another live anchor needs no search of its own (the inner
one selects its lines), and anchors that share a run of 20 characters are selected by that
run; when that leaves a last group nearly empty, runs of 18 or 16 characters are shared
too if that saves a whole group (the longest runs that reach the fewest groups win). Shorter
shared runs were measured and rejected: they are the words of healthy log lines
(" not support", "NCCL INFO", " KV cache "), and selecting those costs more than the fewer
groups save.
A selector only *selects* a line: the exact anchors and the full regexes run on it after.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from typing import Any

TEDDY_LIMIT = 64
SHARED_RUNS = (20, 18, 16)


def _aho_corasick() -> Any:
    try:
        return importlib.import_module("ahocorasick_rs")
    except ImportError:  # pragma: no cover - only where the wheel is missing
        return None


ACRS = _aho_corasick()


def selectors(anchors: Iterable[str]) -> list[str]:
    """Strings whose matches select every line that holds one of ``anchors``."""
    ordered = sorted(set(anchors), key=len)
    kept: list[str] = []
    for anchor in ordered:  # an anchor that contains a kept one needs no search of its own
        if not any(inner in anchor for inner in kept):
            kept.append(anchor)
    options = [sorted(_share_runs(kept, run)) for run in SHARED_RUNS]
    return min(options, key=lambda found: -(-len(found) // TEDDY_LIMIT))  # first of the fewest


def _share_runs(anchors: list[str], length: int) -> set[str]:
    """Replace anchors that share a run of ``length`` characters by it (largest groups first)."""
    holders: dict[str, set[str]] = {}
    for anchor in anchors:
        for i in range(len(anchor) - length + 1):
            holders.setdefault(anchor[i : i + length], set()).add(anchor)
    left, chosen = set(anchors), set()
    for run, owners in sorted(holders.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        if len(owners & left) >= 2:
            left -= owners
            chosen.add(run)
    return left | chosen


class LineSelector:
    """Positions of selector matches in a buffer (at least one in every line holding one)."""

    def __init__(self, selectors: Iterable[str]) -> None:
        self.selectors = sorted({s.encode() for s in selectors})
        self._groups: list[Any] = []
        if ACRS is not None:
            kind = (
                ACRS.MatchKind.LeftmostFirst
            )  # one match per occurrence is all we need (and Teddy)
            self._groups = [
                ACRS.BytesAhoCorasick(self.selectors[i : i + TEDDY_LIMIT], matchkind=kind)
                for i in range(0, len(self.selectors), TEDDY_LIMIT)
            ]

    def starts(self, data: Any) -> list[int]:
        """Start offsets of matches in ``data`` (bytes or a memoryview), any order."""
        if ACRS is not None:
            return [s for group in self._groups for _, s, _ in group.find_matches_as_indexes(data)]
        raw = bytes(data)
        found: list[int] = []
        for needle in self.selectors:
            pos = raw.find(needle)
            while pos >= 0:
                found.append(pos)
                pos = raw.find(needle, pos + 1)
        return found
