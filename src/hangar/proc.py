"""The one subprocess helper: argv lists only, explicit env, failure by exit code."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from hangar.errors import CommandFailed


@dataclass(frozen=True)
class Completed:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str


def run(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float | None = None,
    check: bool = True,
    input_text: str | None = None,
) -> Completed:
    """Run ``argv`` (never through a shell); raise CommandFailed on a non-zero exit."""
    try:
        proc = subprocess.run(
            list(argv),
            env=dict(env) if env is not None else None,
            cwd=cwd,
            timeout=timeout,
            input=input_text,
            capture_output=True,
            text=True,
            check=False,  # failure is judged below, so the error carries stdout and stderr
        )
    except FileNotFoundError as exc:
        raise CommandFailed(argv, 127, "", str(exc)) from exc
    except OSError as exc:  # not executable, bad interpreter line (ENOEXEC), ...
        raise CommandFailed(argv, 126, "", str(exc)) from exc
    except subprocess.TimeoutExpired as exc:
        raise CommandFailed(argv, 124, "", f"timed out after {timeout}s") from exc
    done = Completed(list(argv), proc.returncode, proc.stdout, proc.stderr)
    if check and proc.returncode != 0:
        raise CommandFailed(argv, proc.returncode, proc.stdout, proc.stderr)
    return done
