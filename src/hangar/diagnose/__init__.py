"""Diagnosis: name the root cause of a failed vLLM / Ray / Slurm launch from its logs.

Library entry points (no printing, no exiting; the CLI and the launch code render):

- ``diagnose_paths(paths)``: files (plain or gzip) or directories of logs;
- ``diagnose_text(text, name=...)``: a log already in memory (e.g. a launch's captured stderr);
- ``diagnose_stream(stream, name=...)``: a binary stream such as stdin.

Each returns a frozen ``Diagnosis`` whose ``causes`` are ranked best first; the
knowledge base lives in ``hangar/diagnose/data/*.yaml``.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import BinaryIO

from hangar.diagnose import reader, runs
from hangar.diagnose.knowledge import KnowledgeBase, load
from hangar.diagnose.model import CAUSES, Cause, Diagnosis, Evidence
from hangar.diagnose.reader import UnreadableLog
from hangar.diagnose.scan import Scanner

__all__ = [
    "CAUSES",
    "Cause",
    "Diagnosis",
    "Evidence",
    "UnreadableLog",
    "diagnose_paths",
    "diagnose_stream",
    "diagnose_text",
]


def diagnose_paths(
    paths: Sequence[Path | str],
    kb: KnowledgeBase | None = None,
    *,
    names: Mapping[Path, str] | None = None,
    run_context: bool = True,
) -> Diagnosis:
    """Scan every file (directories expand to their log files), in the order given;
    ``names`` replaces a file's path in messages and evidence (stdin's private copy).

    A log inside a run dir of `hangar launch` brings what the launch recorded (ulimits,
    TMPDIR, driver, GPUs, env, target: runs.context_lines) as one more source, scanned
    last, so that a symptom and its context can meet (``run_context=False``: logs only)."""
    scanner = Scanner(kb or load())
    inputs = [Path(p) for p in paths]
    for source in reader.expand(inputs, names):
        scanner.feed_source(source)
    for run_dir in runs.run_dirs(inputs) if run_context else ():
        lines = runs.context_lines(run_dir)
        if lines:
            scanner.feed_lines(runs.source_name(run_dir), lines)
    return scanner.diagnosis()


def diagnose_stream(
    stream: BinaryIO, name: str = "<stdin>", kb: KnowledgeBase | None = None
) -> Diagnosis:
    source = reader.Source(name)
    scanner = Scanner(kb or load())
    scanner.feed(source, reader.chunks(reader.open_stream(source, stdin=stream), source))
    return scanner.diagnosis()


def diagnose_text(text: str, name: str = "<text>", kb: KnowledgeBase | None = None) -> Diagnosis:
    """Diagnose a log held in memory (what launch captured from a failed process)."""
    return diagnose_stream(io.BytesIO(text.encode("utf-8")), name=name, kb=kb)
