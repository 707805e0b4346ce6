"""Text from outside (config.json, server replies, logs, files) made safe to show: control
and format characters made visible, long values clipped. Pure and dependency-free, so every
stage can use it (``cli/terminal.py`` adds rich's markup escaping on top).
"""

from __future__ import annotations

import unicodedata

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
