"""Progress reporting from the library: a callback, never printing."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class ProgressEvent:
    """``task`` advanced to ``completed`` of ``total`` (total 0: indeterminate)."""

    task: str
    completed: int
    total: int


ProgressFn = Callable[[ProgressEvent], None]


def no_progress(event: ProgressEvent) -> None:
    """The default callback: ignore progress."""
