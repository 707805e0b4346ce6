"""Helpers of the source-form tests (tests/diagnose/test_sources_*.py): a CPython traceback
built from frames, and the one assertion each form test makes."""

from __future__ import annotations

from hangar.diagnose import diagnose_text
from hangar.diagnose.knowledge import load
from hangar.diagnose.model import Cause


def frame(path: str, line: int, func: str) -> str:
    # CPython Lib/traceback.py frame line
    return f'  File "{path}", line {line}, in {func}'


def traceback(frames: list[tuple[str, int, str]], error: str) -> str:
    lines = ["Traceback (most recent call last):"] + [frame(*f) for f in frames]
    return "\n".join(lines + [error]) + "\n"


def assert_names_first(log: str, cause: str) -> None:
    """The doctor's top cause for ``log`` is ``cause`` (the ranking shown when it is not)."""
    causes = diagnose_text(log).causes
    assert causes, log
    ranked = [(c.cause, c.signature, c.confidence) for c in causes]
    assert causes[0].cause == cause, (log, ranked)


def assert_not_known(log: str, cause: str) -> None:
    """No signature that knows a cause names ``cause`` for ``log`` (the last resort may still
    say that a failure happened)."""
    named = [(c.cause, c.signature) for c in known_causes(log)]
    assert all(c != cause for c, _ in named), (log, named)


def names(log: str, cause: str) -> bool:
    """``cause`` is among the causes named for ``log`` (at any rank)."""
    return any(c.cause == cause for c in diagnose_text(log).causes)


def known_causes(log: str) -> tuple[Cause, ...]:
    """The causes named for ``log`` by signatures that know a cause: without the last-resort
    ones (data/failures.yaml), which only say that a failure happened (`other`)."""
    last = {s.id for s in load().signatures if s.last_resort}
    return tuple(c for c in diagnose_text(log).causes if c.signature not in last)
