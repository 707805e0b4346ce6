"""Reading logs as they come: plain or gzip files, stdin, whole directories, in big chunks.

Chunks always end on a line boundary so the scanner can number lines; decoding and
clean-up (ANSI colours, CR, per-process prefixes) happen only on the few lines the
anchor search selects.
"""

from __future__ import annotations

import gzip
import io
import mmap
import os
import re
import stat
import zlib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, cast

from hangar.errors import InputError

CHUNK_BYTES = 16 * 2**20
_SNIFF_BYTES = 8192
_LOG_SUFFIXES = (".log", ".out", ".err", ".txt", ".gz", ".jsonl")

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# `(Worker_TP1 pid=7)`, `(RayWorkerWrapper pid=5, ip=10.0.0.2)`, `(APIServer pid=1) (EngineCore_DP0 pid=9)`,
# Ray's other actor forms (`(pid=7)` before Ray 2, `(job-name, pid=7)`, Ray Serve's
# `(ServeReplica:app:Deployment pid=7, ip=…)`, `(raylet)` / `(raylet, ip=…)`), `[rank0]:`,
# `[2026-02-24T20:21:58Z]`, a docker-compose `service  | ` column, a kubelet/CRI container-log
# prefix (`2025-07-29T12:19:19.33+07:00 stdout F `) and a journald/syslog one
# (`Aug 19 18:34:27 host vllm[8727]: `, vLLM run as a systemd unit).
_PREFIX = re.compile(
    r"^(?:\s*(?:\((?:[A-Za-z_][\w.:-]*(?: [\w.=-]+)*?,? )?pid=\d+(?:, ip=[\w.:-]+)?\)"
    r"|\(raylet(?:, ip=[\w.:-]+)?\)"
    r"|\[rank\d+\]:|\[\d{4}-\d\d-\d\dT[\d:.]+Z?\]"
    r"|\d{4}-\d\d-\d\dT[\d:.]+(?:Z|[+-]\d\d:\d\d) (?:stdout|stderr) [FP] "
    r"|[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d [\w.-]+ [\w.-]+\[\d+\]: "
    r"|[\w.-]+ +\|(?= )))+\s*"
)
_QUOTED = re.compile(r"^(?:>[ \t]?)+(?!>)")
# vLLM's logger header, so that the same line from every rank folds into one.
_HEADER = re.compile(
    r"^(?:INFO|WARNING|ERROR|DEBUG|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? "
    r"(?:\[[^\]]+\] |[\w.]+:\d+\] )"
)


class UnreadableLog(InputError):
    """A log that cannot be read as text: missing, binary, truncated gzip, empty (exit 2)."""

    exit_code = 2


@dataclass(frozen=True)
class Source:
    """One input: a file (possibly gzip) or stdin (``path`` None)."""

    name: str
    path: Path | None = None


def expand(paths: list[Path], names: Mapping[Path, str] | None = None) -> list[Source]:
    """Files as given; directories become their non-empty log-like files, sorted.

    ``names`` gives a file the name shown in messages and evidence (``<stdin>`` for the
    private copy of stdin, whose temp path means nothing to the user).
    """
    sources: list[Source] = []
    for path in paths:
        if path.is_dir():
            sources.extend(Source(str(p), p) for p in _dir_logs(path))
        else:
            sources.append(Source((names or {}).get(path, str(path)), path))
    return sources


def _dir_logs(folder: Path) -> list[Path]:
    """A directory's log files; an empty one (a rank that never wrote, an unused .err)
    is skipped, not a reason to reject the directory."""
    found = sorted(p for p in folder.rglob("*") if p.is_file() and _looks_like_log(p))
    written = [p for p in found if _size(p) > 0]
    if not written:
        why = f"holds only empty log files ({len(found)})" if found else "holds no log files"
        raise UnreadableLog(f"directory {why}", source=str(folder), hint="pass the log vLLM wrote")
    return written


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 1  # unreadable: kept, so opening it reports why


def _looks_like_log(path: Path) -> bool:
    return path.suffix in _LOG_SUFFIXES or ".log." in path.name


def open_stream(source: Source, stdin: BinaryIO | None = None) -> BinaryIO:
    """A binary stream of the source's text, gunzipping when the magic bytes say gzip."""
    if source.path is None:
        if stdin is None:
            raise UnreadableLog("no stdin to read", source=source.name)
        buffered: Any = stdin if hasattr(stdin, "peek") else io.BufferedReader(cast(Any, stdin))
        if buffered.peek(2)[:2] == b"\x1f\x8b":
            return cast(BinaryIO, gzip.GzipFile(fileobj=buffered, mode="rb"))
        return cast(BinaryIO, buffered)
    try:
        handle = source.path.open("rb")
    except OSError as exc:
        raise UnreadableLog(exc.strerror or str(exc), source=source.name) from exc
    magic = handle.read(2)
    if magic == b"\x1f\x8b":
        handle.close()
        return gzip.open(source.path, "rb")  # type: ignore[return-value]
    handle.seek(0)
    return handle


@contextmanager
def mapped(source: Source) -> Iterator[mmap.mmap | None]:
    """The plain file memory-mapped (read in place, no copies), or None: stdin, gzip, a
    pipe or a file that cannot be mapped go through ``open_stream`` and ``chunks``."""
    if source.path is None:
        yield None
        return
    try:
        handle = source.path.open("rb")
    except OSError as exc:
        raise UnreadableLog(exc.strerror or str(exc), source=source.name) from exc
    with handle:
        head = handle.read(_SNIFF_BYTES)
        if head[:2] == b"\x1f\x8b" or not stat.S_ISREG(_mode(handle)):
            yield None
            return
        _check_text(head, source)
        with _map(handle) as view:
            yield view


def _mode(handle: BinaryIO) -> int:
    return os.fstat(handle.fileno()).st_mode


@contextmanager
def _map(handle: BinaryIO) -> Iterator[mmap.mmap | None]:
    try:
        view = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        yield None  # e.g. a file system without mmap support: read it in chunks instead
        return
    if hasattr(mmap, "MADV_SEQUENTIAL"):
        view.madvise(mmap.MADV_SEQUENTIAL)  # the kernel reads ahead, as for read()
    try:
        yield view
    finally:
        try:
            view.close()
        except BufferError:  # pragma: no cover - a view still exported: closed on collection
            pass


def chunks(stream: BinaryIO, source: Source, size: int = CHUNK_BYTES) -> Iterator[bytes]:
    """Chunks that end on a newline (the last one may not); rejects binary or broken input."""
    carry = b""
    first = True
    while True:
        block = _read(stream, source, size)
        if first:
            _check_text(block, source)
            first = False
        if not block:
            break
        data = carry + block
        cut = data.rfind(b"\n") + 1
        if cut == 0:
            carry = data
            continue
        carry = data[cut:]
        yield data[:cut]
    if carry:
        yield carry


def _read(stream: BinaryIO, source: Source, size: int) -> bytes:
    try:
        return stream.read(size)
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise UnreadableLog(f"corrupt or truncated gzip ({exc})", source=source.name) from exc
    except OSError as exc:
        raise UnreadableLog(exc.strerror or str(exc), source=source.name) from exc


def _check_text(block: bytes, source: Source) -> None:
    if not block:
        raise UnreadableLog("is empty", source=source.name, hint="pass the log vLLM wrote")
    head = block[:_SNIFF_BYTES]
    if b"\x00" in head:
        raise UnreadableLog(
            "looks binary (NUL bytes), not a text log",
            source=source.name,
            hint="pass the .log/.out/.err text file (gzip is fine)",
        )


# A log copied out of a web page or a forum post: its quotes and dashes typeset, its markup
# escaped. Messages (and the patterns read from the sources) use plain ASCII, so a pasted
# ``Can&#39;t`` or ``’`` would hide them. Only small inputs are checked: a log that big was
# written by a program, not copied out of a page, and the check would cost several passes.
_PASTE_MAX_BYTES = 8 * 2**20
_TYPESET = (
    (b"&#39;", b"'"),
    (b"&#x27;", b"'"),
    (b"&apos;", b"'"),
    (b"&quot;", b'"'),
    (b"&#34;", b'"'),
    (b"&lt;", b"<"),
    (b"&gt;", b">"),
    (b"&nbsp;", b" "),
    ("\u2018".encode(), b"'"),
    ("\u2019".encode(), b"'"),
    ("\u2032".encode(), b"'"),
    ("\u201c".encode(), b'"'),
    ("\u201d".encode(), b'"'),
    ("\u00a0".encode(), b" "),
    ("\u200b".encode(), b""),
    ("\ufeff".encode(), b""),
    (b"&amp;", b"&"),  # last: "&amp;lt;" is a literal "&lt;" in the page's text
)
_TYPESET_MARKS = (b"&", "\u2018".encode()[:2], "\u00a0".encode(), "\ufeff".encode()[:2])
# WordPress and forum editors turn a flag's "--" into an en or em dash: "–max-model-len".
_DASHED_FLAG = re.compile("(?<![\\w-])(?:\u2013|\u2014)(?=[a-z])".encode())


def untypeset(buf: bytes | bytearray | memoryview | mmap.mmap) -> bytes | None:
    """A pasted log's text with ASCII quotes, dashes and spaces again (None: nothing to do).

    Replacements never add or remove a newline, so line numbers stay those of the file."""
    if len(buf) > _PASTE_MAX_BYTES:
        return None
    data = bytes(buf)
    if not any(mark in data for mark in _TYPESET_MARKS):
        return None
    out = data
    for typeset, plain in _TYPESET:
        if typeset in out:
            out = out.replace(typeset, plain)
    out = _DASHED_FLAG.sub(b"--", out)
    return out if out != data else None


def clean(raw: bytes) -> str:
    """One line as a person reads it: decoded, no colours, no CR, no process prefixes."""
    text = raw.decode("utf-8", errors="replace")
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    text = text.replace("\r", "").rstrip("\n")
    if text.startswith(">"):  # quoted in a reply (Markdown "> "), once or more
        text = _QUOTED.sub("", text, count=1)
    return _PREFIX.sub("", text, count=1)


def fold_key(text: str) -> str:
    """The part of a cleaned line that is identical across ranks (header dropped)."""
    return _HEADER.sub("", text, count=1).strip()
