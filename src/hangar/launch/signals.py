"""Signals while a launch owns its server: raise, or hold them during cleanup."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Any, Self

from hangar.errors import Interrupted


class StopSignals:
    """SIGINT, SIGTERM and SIGHUP raise Interrupted while a launch owns its server; inside
    ``deferred()`` (submitting, stopping) a signal is held until the block ends, so a second
    Ctrl-C during cleanup never leaves a half-stopped run. Main thread only (elsewhere
    Python delivers no signals): there it is a no-op."""

    WATCHED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def __init__(self) -> None:
        self.previous: dict[int, Any] = {}
        self.depth = 0
        self.pending: int | None = None

    def __enter__(self) -> Self:
        if threading.current_thread() is threading.main_thread():
            self.previous = {sig: signal.signal(sig, self._handle) for sig in self.WATCHED}
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)

    def _handle(self, signum: int, frame: object) -> None:
        if self.depth:
            self.pending = self.pending or signum
            return
        raise Interrupted(signum)

    @contextmanager
    def deferred(self, *, then_raise: bool = True) -> Iterator[None]:
        """Hold signals during the block; then raise the first one held (``then_raise``),
        or drop it when the caller is already on its way out."""
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1
        pending, self.pending = self.pending, None
        if then_raise and pending is not None and self.depth == 0:
            raise Interrupted(pending)
