"""Where a traceback's exception came from: the frame that raised it (``raised_in``) and the
frame that made the failing lookup or call (``called_from``), read from the few lines above the
exception line only, so that the scanner pays for it on a matched line and nowhere else."""

from __future__ import annotations

import re

from hangar.diagnose import reader

# Where an exception was raised: the innermost `File "...", line N, in f` of its traceback is
# within this many lines above the exception line (the frame, its source line, and from
# Python 3.11 a line of carets).
RAISED_WINDOW = 4
_FRAME = re.compile(r'File "([^"]+)", line \d+, in ')
# The calling frame (``called_from``): frames that only pass a lookup or a call on are skipped,
# at most CALLER_DEPTH of them, each within RAISED_WINDOW lines of the next: an attribute hook
# (CPython calls a class's or a module's `__getattr__` when the normal lookup fails, so the
# AttributeError is raised in the owner's hook, one frame inside the caller) and the call
# wrappers of torch's nn.Module and of decorators, in which a TypeError of the wrapped call's
# arguments is raised.
_CALL_FRAME = re.compile(r'File "([^"]+)", line \d+, in ([\w<>.]+)')
PASS_THROUGH = frozenset(
    {
        "__getattr__",
        "__getattribute__",
        "_call_impl",
        "_wrapped_call_impl",
        "decorate_context",
        "wrapper",
        "inner",
        "wrapped",
    }
)
CALLER_DEPTH = 3


def innermost_frame(before: bytes) -> str | None:
    """The file of the nearest traceback frame in the last RAISED_WINDOW lines of ``before``."""
    for raw in reversed(before.splitlines()[-RAISED_WINDOW:]):
        found = _FRAME.search(reader.clean(raw))
        if found:
            return found.group(1)
    return None


def calling_frame(before: bytes) -> str | None:
    """The file of the frame that made the failing lookup or call: the nearest traceback frame
    in the last lines of ``before``, passing over up to CALLER_DEPTH pass-through frames
    (PASS_THROUGH) that lie directly above one another (each within RAISED_WINDOW lines)."""
    lines = before.splitlines()[-RAISED_WINDOW * (CALLER_DEPTH + 1) :]
    gap = 0
    skipped = 0
    for raw in reversed(lines):
        gap += 1
        if gap > RAISED_WINDOW:
            return None
        found = _CALL_FRAME.search(reader.clean(raw))
        if not found:
            continue
        if found.group(2) not in PASS_THROUGH or skipped == CALLER_DEPTH:
            return found.group(1)
        skipped += 1
        gap = 0
    return None
