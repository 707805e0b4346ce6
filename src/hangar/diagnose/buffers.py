"""Walking a large buffer fast: line-aligned pieces, newline counts, a two-stage pipeline.

A plain log file is memory-mapped and scanned in place (no read copies, no carried
tails); gzip and stdin arrive as line-aligned chunks (reader.chunks) and go through the same
code. For a big input the selector's search of the next piece runs in a worker thread while
this thread handles the current one: ahocorasick_rs releases the GIL while it searches
bytes, and NumPy's comparison releases it while it counts newlines, so on two cores the two
overlap. Pieces start small and grow, so that the anchors a log retires early (a serving
log's request lines) stop costing before the pieces get large.
"""

from __future__ import annotations

import importlib
import mmap
import os
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

FIRST_PIECE = 2**14
LAST_PIECE = 2**22
# Below this, threads and NumPy cost more (start-up, import) than they save.
BIG_INPUT = 2**25
# Searches running ahead of this thread: one per core, at most 4 (pieces are 4 MiB).
WORKERS = max(1, min(4, os.cpu_count() or 1))

Buffer = bytes | mmap.mmap
T = TypeVar("T")


def _numpy() -> Any:
    """NumPy (a dependency of matplotlib, hence always installed with Hangar), or None."""
    try:
        return importlib.import_module("numpy")
    except ImportError:  # pragma: no cover - only in a stripped environment
        return None


@dataclass(frozen=True)
class Found:
    """The selected lines of one piece."""

    starts: list[int]  # offsets of the selected lines' first bytes, ascending
    before: list[int]  # newlines between the piece's start and each of those lines
    newlines: int  # newlines in the whole piece


class Locator:
    """Turns match positions of a piece into its selected lines and their line numbers."""

    def __init__(self, buf: Buffer) -> None:
        self.buf = buf
        self._np = _numpy() if len(buf) >= BIG_INPUT else None
        self._array = self._np.frombuffer(buf, dtype=self._np.uint8) if self._np else None

    def locate(self, piece: tuple[int, int], positions: list[int]) -> Found:
        """``positions`` are relative to the piece; the result's offsets are absolute."""
        if self._array is not None:
            return self._vectorised(piece, positions)
        first, last = piece
        starts = sorted({self.buf.rfind(b"\n", first, first + p) + 1 or first for p in positions})
        before, seen, cursor = [], 0, first
        for start in starts:
            seen += self._count(cursor, start)
            before.append(seen)
            cursor = start
        return Found(starts, before, seen + self._count(cursor, last))

    def _vectorised(self, piece: tuple[int, int], positions: list[int]) -> Found:
        # Every newline of the piece at once (NumPy releases the GIL while it compares),
        # then each match's line by binary search: no per-line Python work.
        np: Any = self._np
        first, last = piece
        assert self._array is not None
        if not positions:  # most pieces: a count is 2.5x cheaper than the positions
            return Found([], [], int(np.count_nonzero(self._array[first:last] == 10)))
        newlines = np.flatnonzero(self._array[first:last] == 10)
        at = np.unique(np.asarray(positions, dtype=np.int64))
        index = np.searchsorted(newlines, at)
        previous = newlines[np.maximum(index - 1, 0)] + 1 if newlines.size else 0
        starts = np.where(index > 0, previous, 0)
        lines, where = np.unique(starts, return_index=True)
        return Found((lines + first).tolist(), index[where].tolist(), int(newlines.size))

    def _count(self, start: int, end: int) -> int:
        if isinstance(self.buf, bytes):
            return self.buf.count(b"\n", start, end)
        return self.buf[start:end].count(b"\n")

    def close(self) -> None:
        self._array = None  # drop the export, so that the mmap can be closed


def pieces(buf: Buffer, start: int = 0, end: int | None = None) -> Iterator[tuple[int, int]]:
    """Line-aligned (start, end) ranges, growing from FIRST_PIECE to LAST_PIECE bytes."""
    end = len(buf) if end is None else end
    size = FIRST_PIECE
    while start < end:
        cut = buf.find(b"\n", min(start + size, end) - 1, end)
        stop = end if cut < 0 else cut + 1
        yield start, stop
        start, size = stop, min(size * 2, LAST_PIECE)


def pipelined(
    items: Iterator[T], work: Callable[[T], Any], threaded: bool
) -> Iterator[tuple[T, Any]]:
    """(item, work(item)) in order; with ``threaded``, the next item's work runs ahead."""
    if not threaded:
        for item in items:
            yield item, work(item)
        return
    with ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="hangar-scan") as pool:
        ahead: deque[tuple[T, Future[Any]]] = deque()
        for item in items:
            ahead.append((item, pool.submit(work, item)))
            if len(ahead) > WORKERS:
                done, future = ahead.popleft()
                yield done, future.result()
        while ahead:
            done, future = ahead.popleft()
            yield done, future.result()
