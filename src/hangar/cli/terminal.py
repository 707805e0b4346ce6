"""The one sanitizer for text from outside (config.json, server replies, logs, files)
on its way to the terminal.

A config.json architecture name or a ``/v1/models`` id can hold terminal escape
sequences (``\\x1b]0;...`` retitles the window, ``\\x1b[2J`` clears it, U+202E reverses
what follows); printed raw they act on the user's terminal instead of being read. Every
renderer passes such values through :func:`escape` (JSON output is already escaped by
``json.dumps``).
"""

from __future__ import annotations

from rich.markup import escape as _markup_escape

from hangar.text import LIMIT, clip, printable

__all__ = ["LIMIT", "clip", "escape", "printable"]

def escape(text: object, *, limit: int = LIMIT) -> str:
    """For rich: cut to ``limit`` (:func:`clip`), control characters visible
    (:func:`printable`) and markup escaped."""
    return _markup_escape(printable(clip(text, limit)))
