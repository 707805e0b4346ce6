"""The one sanitizer for text from outside (config.json, server replies, logs, files)
on its way to the terminal.

A config.json architecture name or a ``/v1/models`` id can hold terminal escape
sequences (``\\x1b]0;...`` retitles the window, ``\\x1b[2J`` clears it, U+202E reverses
what follows); printed raw they act on the user's terminal instead of being read. Every
renderer passes such values through :func:`escape` (JSON output is already escaped by
``json.dumps``).
"""

from __future__ import annotations

import unicodedata

from rich.markup import escape as _markup_escape

# Unicode categories that draw nothing and can steer a terminal or reorder text:
# Cc controls (C0, DEL, C1), Cf format characters (bidi overrides, zero-width).
_INVISIBLE = frozenset({"Cc", "Cf"})
_KEEP = frozenset("\n\t")
# Outside text longer than this is cut before rich renders it: rich wraps text in time
# that grows with the square of its length (measured: 2,000 chars 0.2 s, 20,000 chars 7 s;
# a 5 MB /v1/models id hung `hangar eval` for minutes).
LIMIT = 2_000


def _visible(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: object, *, one_line: bool = False) -> str:
    """``text`` with every control or format character shown as ``\\xNN`` / ``\\uNNNN``;
    ``one_line`` also shows newlines and tabs that way."""
    keep = frozenset() if one_line else _KEEP
    return "".join(
        _visible(c) if c not in keep and unicodedata.category(c) in _INVISIBLE else c
        for c in str(text)
    )


def clip(text: object, limit: int = LIMIT) -> str:
    """``text`` cut to ``limit`` characters, the cut marked with an ellipsis and the
    full length, so a reader sees that something was left out and how much."""
    value = str(text)
    if len(value) <= limit:
        return value
    return f"{value[:limit]}… ({len(value)} chars)"


def escape(text: object, *, limit: int = LIMIT) -> str:
    """For rich: cut to ``limit`` (:func:`clip`), control characters visible
    (:func:`printable`) and markup escaped."""
    return _markup_escape(printable(clip(text, limit)))
