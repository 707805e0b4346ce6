"""A PNG made in memory (no downloads, no Pillow): coloured quadrants, as a data URL."""

from __future__ import annotations

import base64
import struct
import zlib

_COLORS = ((220, 40, 40), (40, 160, 60), (40, 80, 220), (240, 200, 40))


def _chunk(kind: bytes, data: bytes) -> bytes:
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)


def quadrant_png(size: int = 64) -> bytes:
    """An RGB image split into four coloured squares."""
    half = size // 2
    rows = []
    for y in range(size):
        row = bytearray([0])  # filter type 0 for each scanline
        for x in range(size):
            row += bytes(_COLORS[(y >= half) * 2 + (x >= half)])
        rows.append(bytes(row))
    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(b"".join(rows)))
        + _chunk(b"IEND", b"")
    )


def png_data_url(size: int = 64) -> str:
    return "data:image/png;base64," + base64.b64encode(quadrant_png(size)).decode("ascii")
