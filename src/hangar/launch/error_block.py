"""The error block a failed launch shows: the last burst of error lines of its logs."""

from __future__ import annotations

import re
from pathlib import Path

_ERROR_START = re.compile(r"Traceback \(most recent call last\)|\bERROR\b|Error:|error:")


def error_block(log_path: Path, max_lines: int = 40) -> str:
    """The last error block of a log: from the first error line of the final burst to the end."""
    try:
        lines = log_path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    tail = lines[-400:]
    starts = [i for i, line in enumerate(tail) if _ERROR_START.search(line)]
    if not starts:
        return "\n".join(tail[-max_lines:])
    first = starts[0]
    for i in reversed(starts):  # walk back over one contiguous burst of error lines
        if i < starts[-1] - max_lines:
            break
        first = i
    return "\n".join(tail[first : first + max_lines])


def failing_block(logs: list[Path]) -> str:
    """The error block of the first log (node logs before the job log) that has one."""
    ordered = sorted(logs, key=lambda p: not p.name.startswith("node-"))
    blocks = [error_block(p) for p in ordered]
    return next((b for b in blocks if _ERROR_START.search(b)), next((b for b in blocks if b), ""))
