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
import itertools
import os
import threading
from collections.abc import Iterable
from typing import Any

TEDDY_LIMIT = 64
BACKEND_ENV = "HANGAR_DOCTOR_PREFILTER"
SHARED_RUNS = (20, 18, 16)


def _optional(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError:  # pragma: no cover - only where the wheel is missing
        return None


ACRS = _optional("ahocorasick_rs")
# Hyperscan (optional: `pip install hyperscan`, a manylinux wheel that bundles the library)
# searches every needle in one pass whatever their number (its FDR literal matcher), where
# Teddy groups cost one pass per 64 needles: used when importable, unless
# HANGAR_DOCTOR_PREFILTER=teddy (the bench compares both).
HYPERSCAN = None if os.environ.get(BACKEND_ENV) == "teddy" else _optional("hyperscan")


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
    shared = [(run, owners) for run, owners in holders.items() if len(owners) >= 2]
    for run, owners in sorted(shared, key=lambda kv: (-len(kv[1]), kv[0])):
        if len(owners & left) >= 2:
            left -= owners
            chosen.add(run)
    return left | chosen


def backend() -> str:
    """The multi-literal search in use: hyperscan, teddy (ahocorasick_rs) or python."""
    return "hyperscan" if HYPERSCAN is not None else "teddy" if ACRS is not None else "python"


def line_selector(anchors: Iterable[str]) -> LineSelector:
    """The selector for a live set of needles: Hyperscan takes them as they are (one pass);
    Teddy groups take the fewer, shared selectors (one pass per group of 64)."""
    if HYPERSCAN is not None:
        return LineSelector(anchors)
    return LineSelector(selectors(anchors))


class LineSelector:
    """Positions of selector matches in a buffer (at least one in every line holding one)."""

    def __init__(self, selectors: Iterable[str]) -> None:
        self.selectors = sorted({s.encode() for s in selectors})
        self._groups: list[Any] = []
        self._hyperscan = _hyperscan_or_none(self.selectors)
        if ACRS is not None and self._hyperscan is None:
            kind = ACRS.MatchKind.LeftmostFirst  # one match per occurrence is all we need
            self._groups = [
                ACRS.BytesAhoCorasick(self.selectors[i : i + TEDDY_LIMIT], matchkind=kind)
                for i in range(0, len(self.selectors), TEDDY_LIMIT)
            ]

    def starts(self, data: Any) -> list[int]:
        """Offsets inside matches in ``data`` (bytes or a memoryview), any order: each one
        lies in the line that holds the match, which is all the locator needs."""
        if self._hyperscan is not None:
            return self._hyperscan.last_bytes(data)
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


def _hyperscan_or_none(literals: list[bytes]) -> _Hyperscan | None:
    """A Hyperscan database of ``literals``, or None (not installed, or a version whose
    compile refuses them: the optional accelerator never stops the doctor, Teddy takes over)."""
    if HYPERSCAN is None:
        return None
    try:
        return _Hyperscan(literals)
    except Exception:  # noqa: BLE001 - any failure of an optional accelerator: fall back
        return None


class _Hyperscan:
    """One Hyperscan block-mode database of literals; a scratch space per thread (a scratch
    may serve one scan at a time, and the pipeline scans in worker threads)."""

    def __init__(self, literals: list[bytes]) -> None:
        hs: Any = HYPERSCAN
        self._db: Any = None
        self._local = threading.local()
        if literals:
            self._db = hs.Database(mode=hs.HS_MODE_BLOCK)
            count = len(literals)
            self._db.compile(
                expressions=literals,
                ids=list(range(count)),
                elements=count,
                flags=[0] * count,
                literal=True,
            )

    def last_bytes(self, data: Any) -> list[int]:
        """The offset of each match's last byte (literal mode reports where matches end)."""
        if self._db is None or not len(data):
            return []
        scratch = getattr(self._local, "scratch", None)
        if scratch is None:
            scratch = self._local.scratch = HYPERSCAN.Scratch(self._db)  # type: ignore[union-attr]
        found: list[int] = []

        def on_match(_id: int, _start: int, end: int, _flags: int, _ctx: object) -> None:
            found.append(end - 1)

        self._db.scan(data, match_event_handler=on_match, scratch=scratch)
        return found


# --- Literal sets: what every match of a regex must contain -------------------------------
# A regex's single longest literal run can be a word of healthy lines: 'NCCL INFO
# (?:Bootstrap|NET/Socket) : Using' gave 'NCCL INFO ', which selected every NCCL INFO line of
# an NCCL_DEBUG=INFO log (a third of a multi-rank log) for the full regex. Expanding small
# alternations, optional parts and classes gives a *set* of longer literals instead
# ('NCCL INFO Bootstrap : Using ', 'NCCL INFO NET/Socket : Using '): any match contains one.
# Read from the regex's own parse tree (Python's re parser), so nothing is guessed.
MAX_VARIANTS = 8  # strings per set: each is a needle of the prefilter
MAX_CLASS = 4  # a character class expands to its members only when this small
_Set = frozenset[str]


def _parse(regex: str) -> Any:
    parser = importlib.import_module("re._parser")
    return parser.parse(regex)


def literal_set(regex: str) -> tuple[str, ...]:
    """Strings of which every match of ``regex`` contains at least one (the most selective
    such set found: longest shortest member, then fewest members); () when none, or when the
    regex ignores case (its needles would have to as well)."""
    constants = importlib.import_module("re._constants")
    tree = _parse(regex)
    if tree.state.flags & constants.SRE_FLAG_IGNORECASE:
        return ()
    best = _best(_candidates(list(tree), constants))
    return tuple(sorted(best)) if best else ()


SELECTIVE = 16  # past this many characters a literal rarely selects healthy lines: fewer wins


def _score(found: _Set) -> tuple[int, int, int]:
    shortest = min(len(s.strip()) for s in found)
    return (min(shortest, SELECTIVE), -len(found), shortest)


def needles_for(regex: str, anchor: str) -> tuple[str, ...]:
    """The prefilter's needles for one regex: its literal set when that is more selective
    than its single longest literal run ``anchor``, else ``(anchor,)``."""
    found = frozenset(literal_set(regex))
    if found and _score(found) > _score(frozenset({anchor})):
        return tuple(sorted(found))
    return (anchor,)


def _best(candidates: list[_Set]) -> _Set | None:
    usable = [c for c in candidates if c and all(c)]
    return max(usable, key=_score) if usable else None


def _candidates(items: list[Any], k: Any) -> list[_Set]:
    """Literal sets that every match of the sequence ``items`` contains one member of."""
    found: list[_Set] = []
    run: _Set | None = frozenset({""})
    for op, av in items:
        exact = _exact(op, av, k)
        if exact is not None and run is not None and len(run) * len(exact) <= MAX_VARIANTS:
            run = frozenset(a + b for a in run for b in exact)
            continue
        found.append(run or frozenset())
        run = exact if exact is not None else frozenset({""})
        found.extend(_inner(op, av, k))
    found.append(run or frozenset())
    return found


def _exact(op: Any, av: Any, k: Any) -> _Set | None:
    """The finite set of strings the item matches, or None (unbounded or too many)."""
    if op is k.LITERAL:
        return frozenset({chr(av)})
    if op in (k.AT, k.ASSERT, k.ASSERT_NOT):
        return frozenset({""})  # zero-width: adds nothing, breaks nothing
    if op is k.IN:
        return _class(av, k)
    if op is k.SUBPATTERN:
        add_flags, del_flags, body = av[1], av[2], av[3]
        if (add_flags | del_flags) & k.SRE_FLAG_IGNORECASE:
            return None
        return _sequence(list(body), k)
    if op is k.BRANCH:
        return _union(_sequence(list(alt), k) for alt in av[1])
    if op in (k.MAX_REPEAT, k.MIN_REPEAT):
        low, high, body = av
        inner = _sequence(list(body), k)
        if inner is None or high > 2 or high > low + 1:
            return None
        options = {"".join(p) for n in range(low, high + 1) for p in _power(inner, n)}
        return frozenset(options) if len(options) <= MAX_VARIANTS else None
    return None


def _inner(op: Any, av: Any, k: Any) -> list[_Set]:
    """Sets inside an item that is not finite but that every match passes through."""
    if op is k.SUBPATTERN and not ((av[1] | av[2]) & k.SRE_FLAG_IGNORECASE):
        return _candidates(list(av[3]), k)
    if op in (k.MAX_REPEAT, k.MIN_REPEAT) and av[0] >= 1:
        return _candidates(list(av[2]), k)
    if op is k.BRANCH:  # every match takes one branch: the union of each branch's best set
        bests = [_best(_candidates(list(alt), k)) for alt in av[1]]
        if all(bests):
            union = frozenset().union(*(b for b in bests if b))
            return [union] if len(union) <= MAX_VARIANTS else []
    return []


def _sequence(items: list[Any], k: Any) -> _Set | None:
    run: _Set = frozenset({""})
    for op, av in items:
        exact = _exact(op, av, k)
        if exact is None or len(run) * len(exact) > MAX_VARIANTS:
            return None
        run = frozenset(a + b for a in run for b in exact)
    return run


def _union(parts: Iterable[_Set | None]) -> _Set | None:
    union: set[str] = set()
    for part in parts:
        if part is None:
            return None
        union |= part
    return frozenset(union) if len(union) <= MAX_VARIANTS else None


def _class(av: Any, k: Any) -> _Set | None:
    chars: set[str] = set()
    for op, value in av:
        if op is k.LITERAL:
            chars.add(chr(value))
        elif op is k.RANGE and value[1] - value[0] < MAX_CLASS:
            chars.update(chr(c) for c in range(value[0], value[1] + 1))
        else:
            return None  # negated, a category (\d, \s), a wide range
    return frozenset(chars) if len(chars) <= MAX_CLASS else None


def _power(options: _Set, n: int) -> Iterable[tuple[str, ...]]:
    return itertools.product(sorted(options), repeat=n)
