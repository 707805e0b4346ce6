"""The scanner: anchors over raw bytes, full regexes on the few selected lines, then ranking.

Ranking rules (why the first cause is usually the root and not the last symptom):
- a signature fires when one of its ``patterns`` matches, all its ``requires`` and at least
  one of its ``requires_any`` matched somewhere (in any input file) and none of its ``absent``
  did; each matched ``context`` adds confidence;
- a fired signature demotes the causes it ``suppresses`` (known downstream symptoms,
  e.g. an address-space limit shows up later as CUDA OOM or a failed import);
- ``fallback`` signatures (bare tracebacks, "Engine core initialization failed") only
  count when nothing specific fired, and ``last_resort`` ones (any failure at all:
  data/failures.yaml) only when nothing else did;
- ``stall`` signatures are stage markers (NCCL channel setup, placement-group waits): they
  name the likely cause of a log that *stops* at that stage, so they fire only when their
  last match lies in the final ``STALL_WINDOW`` lines of its file and no error signature
  (neither fallback nor stall) fired anywhere;
- ties go to the cause seen first in the logs.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache

from hangar.diagnose import buffers, reader
from hangar.diagnose.frames import calling_frame, innermost_frame
from hangar.diagnose.knowledge import KnowledgeBase, Pattern, causes
from hangar.diagnose.model import Cause, Diagnosis, Evidence, Signature
from hangar.diagnose.prefilter import ACRS, LineSelector, line_selector

MAX_EVIDENCE = 4
MAX_TEXT = 400
SUPPRESS_FACTOR = 0.5
MIN_CONFIDENCE = 0.15
# Below this the best cause is a guess, not a diagnosis: the doctor names nothing ("unknown")
# and keeps the guesses apart (Diagnosis.unconfirmed). Measured by bench/doctor.py's
# reliability table (at 9d1e488, fixture corpora): top causes in (0, 0.3] were right 0 of 3
# times (bare tracebacks and "engine core failed" read as `other`), in (0.3, 0.5] 8 of 9,
# above 0.5 257 of 258. A stage marker of a log still being written is exempt: its halved confidence
# carries the "run it again in a few minutes" advice. Any other stage marker meets the floor
# like every cause: a pasted excerpt that ends in NCCL set-up is also how a healthy start
# reads (field set 3's held-out split, measured once: two healthy logs named at 0.25-0.3).
NAME_FLOOR = 0.3
STALL_WINDOW = 25
# A log written to this recently may still be progressing: a stage marker at its end is a
# hang only with less confidence (the `hangar doctor` of a run still starting).
STALL_RECENT_S = 120.0


class _Needles:
    """Which anchors a selected line holds (overlapping search); stdlib fallback."""

    def __init__(self, needles: Sequence[bytes]) -> None:
        self.needles = list(needles)
        self._ac = None
        if ACRS is not None and self.needles:
            dfa = ACRS.Implementation.DFA
            self._ac = ACRS.BytesAhoCorasick(self.needles, implementation=dfa)

    def present(self, line: bytes) -> list[int]:
        """Indexes of every needle contained in ``line``."""
        if self._ac is not None:
            hits = self._ac.find_matches_as_indexes(line, overlapping=True)
            return sorted({idx for idx, _, _ in hits})
        return [i for i, needle in enumerate(self.needles) if needle in line]


@dataclass
class _Hits:
    evidence: list[Evidence] = field(default_factory=list)
    keys: set[str] = field(default_factory=set)
    first: tuple[int, int] = (1 << 30, 1 << 30)
    last: tuple[int, int] = (-1, -1)
    repeats: int = 0


class Scanner:
    """Feed it sources (in order); ask for the diagnosis at the end."""

    def __init__(
        self, kb: KnowledgeBase, now: float | None = None, *, post_mortem: bool = False
    ) -> None:
        self.kb = kb
        self._now = time.time() if now is None else now
        # A saved log (a labelled corpus, a pasted excerpt): when its file was last written says
        # nothing about the process, so a stop is judged by the stage alone, the same at any hour.
        self._post_mortem = post_mortem
        self._written: list[float | None] = []
        self._hits: dict[tuple[str, str, int], _Hits] = {}
        self._dead: set[str] = set()
        self._live = 0
        self._seen = 0
        # Which needles a selected line holds: built once per knowledge base, whatever retires
        # (a retired pattern is skipped when its needle turns up); the selector is rebuilt.
        self._needles, self._by_anchor = _needle_index(kb)
        self._raised_in = {
            sig.id: re.compile(sig.raised_in) for sig in kb.signatures if sig.raised_in
        }
        self._called_from = {
            sig.id: re.compile(sig.called_from) for sig in kb.signatures if sig.called_from
        }
        self._index()
        self._file_lines: list[int] = []
        self.files: list[str] = []
        self.lines = 0
        self.bytes = 0

    def _index(self) -> None:
        """(Re)build the anchor search over the patterns that can still change the outcome."""
        live = [p for p in self.kb.patterns if self._wanted(p)]
        self._selector = _selector(tuple(sorted({n for p in live for n in p.needles})))
        self._live = len(live)

    def _wanted(self, pattern: Pattern) -> bool:
        # `requires`, `context` and `absent` count once, and a signature whose `absent` matched
        # can no longer fire: their anchors leave the search. Stage markers and the absent
        # lines of a serving log ("HTTP/1.1" 200) would otherwise select most of its lines.
        if pattern.signature in self._dead:
            return False
        return pattern.role == "patterns" or self._key(pattern) not in self._hits

    @staticmethod
    def _key(pattern: Pattern) -> tuple[str, str, int]:
        return (pattern.signature, pattern.role, pattern.index)

    def _retire(self) -> None:
        if len(self._hits) == self._seen:
            return  # nothing new matched: the live set cannot have shrunk
        self._seen = len(self._hits)
        self._dead.update(sig for sig, role, _ in self._hits if role == "absent")
        if sum(1 for p in self.kb.patterns if self._wanted(p)) < self._live:
            self._index()

    def feed(self, source: reader.Source, data: Iterable[bytes]) -> None:
        """Scan a source given as line-aligned chunks (gzip, stdin, text in memory)."""
        order = self._open(source)
        line_no = 1
        for chunk in data:
            line_no = self._scan_buffer(source.name, order, chunk, line_no)
        self._close(line_no)

    def feed_lines(self, name: str, lines: list[str]) -> None:
        """Scan lines that are no file (a launch's recorded context, ``hangar-run:<id>``)."""
        text = "".join(f"{line}\n" for line in lines).encode("utf-8")
        self.feed(reader.Source(name), [text])

    def feed_source(self, source: reader.Source) -> None:
        """Scan one input: memory-mapped when it is a plain file, else streamed."""
        with reader.mapped(source) as view:
            if view is not None:
                self.feed_buffer(source, view)
                return
        with reader.open_stream(source) as stream:
            self.feed(source, reader.chunks(stream, source))

    def feed_buffer(self, source: reader.Source, buf: buffers.Buffer) -> None:
        """Scan a source held whole in a buffer (a memory-mapped plain file)."""
        order = self._open(source)
        self._close(self._scan_buffer(source.name, order, buf, 1))

    def _open(self, source: reader.Source) -> int:
        self.files.append(source.name)
        self._written.append(None if self._post_mortem else _mtime(source))
        return len(self.files) - 1

    def _close(self, line_no: int) -> None:
        self.lines += line_no - 1
        self._file_lines.append(line_no - 1)

    def _scan_buffer(self, name: str, order: int, buf: buffers.Buffer, line_no: int) -> int:
        """Match the selected lines of ``buf``; returns the line number after its end."""
        self.bytes += len(buf)
        buf = reader.untypeset(buf) or buf  # a log pasted from a web page: ASCII again
        locator = buffers.Locator(buf)
        view = memoryview(buf)
        try:
            work = self._search_in(view, locator)
            threaded = len(buf) >= buffers.BIG_INPUT
            for (_, end), found in buffers.pipelined(buffers.pieces(buf), work, threaded):
                for start, before in zip(found.starts, found.before):
                    stop = buf.find(b"\n", start, end)
                    raw = buf[start : stop if stop >= 0 else end]
                    # Colour codes are removed per selected line (reader.clean): vLLM colours
                    # the process prefix, never inside the message texts anchors come from.
                    self._match_line(name, order, line_no + before, raw, _above(buf, start))
                line_no += found.newlines
                self._retire()
        finally:
            locator.close()
            view.release()
        return line_no

    def _search_in(
        self, view: memoryview, locator: buffers.Locator
    ) -> Callable[[tuple[int, int]], buffers.Found]:
        def search(piece: tuple[int, int]) -> buffers.Found:
            # Runs in a worker for big inputs: the selector in use when it starts is the
            # current one or an older, larger one, so it never misses a live anchor's line.
            part = view[piece[0] : piece[1]]
            try:
                return locator.locate(piece, self._selector.starts(part))
            finally:
                part.release()

        return search

    def _match_line(
        self, name: str, order: int, line_no: int, raw: bytes, above: Callable[[], bytes]
    ) -> None:
        text: str | None = None
        tried: set[int] = set()  # a pattern with several needles on this line runs once
        for needle in self._needles.present(raw):
            for pattern in self._by_anchor.get(needle, ()):
                if id(pattern) in tried or not self._wanted(pattern):
                    continue
                tried.add(id(pattern))
                text = text if text is not None else reader.clean(raw)
                if pattern.regex.search(text) and self._raised_where(pattern, above):
                    self._record(pattern, name, order, line_no, text)

    def _raised_where(self, pattern: Pattern, above: Callable[[], bytes]) -> bool:
        """A signature with ``raised_in`` (``called_from``): its exception line counts only
        when the innermost (calling) frame above it lies in the named code."""
        if pattern.role != "patterns":
            return True
        where = self._raised_in.get(pattern.signature)
        caller = self._called_from.get(pattern.signature)
        if where is None and caller is None:
            return True
        before = above()
        if where is not None:
            path = innermost_frame(before)
            if path is None or where.search(path) is None:
                return False
        if caller is not None:
            path = calling_frame(before)
            if path is None or caller.search(path) is None:
                return False
        return True

    def _record(self, pattern: Pattern, name: str, order: int, line_no: int, text: str) -> None:
        hits = self._hits.setdefault((pattern.signature, pattern.role, pattern.index), _Hits())
        key = reader.fold_key(text)
        hits.first = min(hits.first, (order, line_no))
        hits.last = max(hits.last, (order, line_no))
        if key in hits.keys:
            hits.repeats += 1
            return
        hits.keys.add(key)
        if len(hits.evidence) < MAX_EVIDENCE:
            hits.evidence.append(Evidence(file=name, line=line_no, text=text.strip()[:MAX_TEXT]))

    def _quiet_for(self) -> tuple[float | None, ...]:
        """Seconds since each file was last written (None for stdin and text)."""
        return tuple(None if w is None else max(0.0, self._now - w) for w in self._written)

    def diagnosis(self) -> Diagnosis:
        ranked = rank(self.kb.signatures, self._hits, tuple(self._file_lines), self._quiet_for())
        named = named_causes(ranked)
        return Diagnosis(
            causes=tuple(named),
            unconfirmed=tuple(ranked) if not named else (),
            files=tuple(self.files),
            lines_scanned=self.lines,
            bytes_scanned=self.bytes,
        )


@dataclass(frozen=True)
class _Fired:
    sig: Signature
    confidence: float
    first: tuple[int, int]
    evidence: tuple[Evidence, ...]
    repeats: int
    last: tuple[int, int] = (-1, -1)
    note: str = ""
    still_written: bool = False  # a stage marker whose log was written moments ago


def _above(buf: buffers.Buffer, start: int) -> Callable[[], bytes]:
    """The bytes of the few lines before ``start``, read only when asked. A streamed input's
    first lines of a chunk see none (chunks are large; a frame split from its exception line
    by a chunk boundary is missed)."""

    def read() -> bytes:
        return bytes(buf[max(0, start - 4096) : start])

    return read


def _at_end(primary: list[_Hits], file_lines: tuple[int, ...]) -> bool:
    """The last match of a stage marker lies in the final lines of its file."""
    order, line = max(h.last for h in primary)
    total = file_lines[order] if 0 <= order < len(file_lines) else line
    return line > total - STALL_WINDOW


def _fire(
    sig: Signature, hits: dict[tuple[str, str, int], _Hits], file_lines: tuple[int, ...] = ()
) -> _Fired | None:
    def seen(role: str, i: int) -> _Hits | None:
        return hits.get((sig.id, role, i))

    primary = [h for i in range(len(sig.patterns)) if (h := seen("patterns", i))]
    if not primary or (sig.stall and not _at_end(primary, file_lines)):
        return None
    if any(seen("requires", i) is None for i in range(len(sig.requires))):
        return None
    if sig.requires_any and all(
        seen("requires_any", i) is None for i in range(len(sig.requires_any))
    ):
        return None
    if any(seen("absent", i) is not None for i in range(len(sig.absent))):
        return None
    support = [
        h
        for role in ("requires", "requires_any", "context")
        for i in range(len(getattr(sig, role)))
        if (h := seen(role, i))
    ]
    boost = sig.context_boost * sum(1 for i in range(len(sig.context)) if seen("context", i))
    first = min(h.first for h in primary)
    evidence = sorted({e for h in primary for e in h.evidence}, key=lambda e: (e.file, e.line))
    extra = sorted({e for h in support for e in h.evidence[:1]}, key=lambda e: (e.file, e.line))
    return _Fired(
        sig=sig,
        confidence=min(0.99, sig.confidence + boost),
        first=first,
        evidence=tuple(evidence[:MAX_EVIDENCE]) + tuple(extra[:2]),
        repeats=1 + sum(h.repeats for h in primary),
        last=max(h.last for h in primary),
    )


def rank(
    signatures: Iterable[Signature],
    hits: dict[tuple[str, str, int], _Hits],
    file_lines: tuple[int, ...] = (),
    quiet_for: tuple[float | None, ...] = (),
) -> list[Cause]:
    """Fired signatures -> one finding per cause, best first."""
    fired = [f for sig in signatures if (f := _fire(sig, hits, file_lines))]
    if any(not (f.sig.fallback or f.sig.stall) for f in fired):
        fired = [f for f in fired if not (f.sig.fallback or f.sig.stall)]
    elif any(f.sig.stall for f in fired):
        fired = [_with_quiet_time(f, quiet_for) for f in _stalls_not_followed_by_errors(fired)]
    if any(not f.sig.last_resort for f in fired):
        fired = [f for f in fired if not f.sig.last_resort]
    demoted = {cause for f in fired for cause in f.sig.suppresses if cause != f.sig.cause}
    best: dict[str, tuple[float, _Fired]] = {}
    for f in fired:
        score = f.confidence * (SUPPRESS_FACTOR if f.sig.cause in demoted else 1.0)
        current = best.get(f.sig.cause)
        if current is None or (score, -f.first[0], -f.first[1]) > (
            current[0],
            -current[1].first[0],
            -current[1].first[1],
        ):
            best[f.sig.cause] = (score, f)
    ordered = sorted(best.values(), key=lambda item: (-item[0], item[1].first))
    return [_finding(score, f) for score, f in ordered if score >= MIN_CONFIDENCE]


def named_causes(ranked: list[Cause]) -> list[Cause]:
    """The ranked causes when the best reaches NAME_FLOOR (or is the stage marker of a log
    still being written), else none."""
    if not ranked or ranked[0].confidence >= NAME_FLOOR or ranked[0].stall:
        return ranked
    return []


def _stalls_not_followed_by_errors(fired: list[_Fired]) -> list[_Fired]:
    """A log that stops at a stage marker is a hang; one that goes on to an error is not."""
    last_error = max((f.last for f in fired if f.sig.fallback), default=(-1, -1))
    stalls = [f for f in fired if f.sig.stall and f.last > last_error]
    return stalls or [f for f in fired if not f.sig.stall]


@lru_cache(maxsize=4)
def _needle_index(kb: KnowledgeBase) -> tuple[_Needles, dict[int, tuple[Pattern, ...]]]:
    """Every needle of the knowledge base, and the patterns each one can select."""
    needles = sorted({n for p in kb.patterns for n in p.needles})
    index = {n: i for i, n in enumerate(needles)}
    by_needle: dict[int, list[Pattern]] = {}
    for pattern in kb.patterns:
        for needle in pattern.needles:
            by_needle.setdefault(index[needle], []).append(pattern)
    return _Needles([n.encode() for n in needles]), {k: tuple(v) for k, v in by_needle.items()}


@lru_cache(maxsize=32)
def _selector(anchors: tuple[str, ...]) -> LineSelector:
    """Built once per live set: every scan of a corpus retires anchors in the same few steps."""
    return line_selector(anchors)


def _with_quiet_time(f: _Fired, quiet_for: tuple[float | None, ...]) -> _Fired:
    """A hang is the last stage reached *and* the time since: say how long the log has been
    silent, and trust a stop less while the log is still fresh."""
    if not f.sig.stall:
        return f
    order = f.last[0]
    quiet = quiet_for[order] if 0 <= order < len(quiet_for) else None
    note = f" The log ends at this stage (line {f.last[1]})."
    if quiet is None:
        return replace(f, note=note)
    note = f"{note[:-1]} and was last written {_duration(quiet)} ago."
    if quiet >= STALL_RECENT_S:
        return replace(f, note=note)
    note += " It may still be progressing: run `hangar doctor` again in a few minutes."
    return replace(f, note=note, confidence=f.confidence * 0.5, still_written=True)


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 172800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.0f} days"


def _mtime(source: reader.Source) -> float | None:
    if source.path is None:
        return None
    try:
        return source.path.stat().st_mtime
    except OSError:
        return None


def _finding(score: float, f: _Fired) -> Cause:
    return Cause(
        cause=f.sig.cause,
        signature=f.sig.id,
        confidence=round(score, 2),
        explanation=f.sig.explanation.strip() + f.note,
        fix="\n".join(f.sig.fix),
        evidence=f.evidence,
        title=f.sig.title,
        cause_title=causes()[f.sig.cause].title,
        preflight_rule=f.sig.preflight_rule,
        repeats=f.repeats,
        stall=f.still_written,
    )
