"""Hangar's exception tree and its exit codes.

HangarError                 anything Hangar expects and can explain (exit 1)
├── UsageError              options that cannot be combined, a value out of range (exit 2)
├── InputError              a file or value the user gave is wrong (names file, field, fix)
│   ├── ModelNotFound       a model id that no source knows
│   └── BadValue            a malformed or unknown value, such as a URL (exit 2)
│       └── UnknownGpu      a GPU name that is not in the catalog (exit 2)
├── DataError               a packaged data file is invalid (a bug in Hangar's data, exit 3)
├── NoGpuDetected           no --gpu given and NVML finds no GPU
└── CommandFailed           a subprocess exited non-zero (argv, code, stdout, stderr)

Interrupted (a KeyboardInterrupt, not a HangarError) is SIGINT, SIGTERM or SIGHUP.

Each error renders as one line; ``hint`` is the command or flag to try next. The exit
codes (hangar.cli.main, the README's table): 0 ok, 1 expected failure, 2 usage or input
error, 3 internal error (a bug: rerun with --debug for the traceback; a crash log is
written), 130 interrupted by SIGINT, 143 by SIGTERM, 129 by SIGHUP (128 + the signal).
"""

from __future__ import annotations

import signal
from collections.abc import Sequence
from pathlib import Path

# Facts a crash log should carry when they are known (the engine a command drove, ...):
# set by the stage that learns them, read only by the CLI's crash log.
CRASH_CONTEXT: dict[str, str] = {}


def remember_for_crash_log(key: str, value: str) -> None:
    CRASH_CONTEXT[key] = value


def crash_log_dir() -> Path:
    """``state/crash``, private (0700): a crash log holds argv, paths and context that other
    users must not list or read (the files themselves are written 0600)."""
    from hangar.paths import crash_dir

    folder = crash_dir()
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    # mkdir's mode is masked by the umask and ignored for a dir that exists (made 0755 by
    # an older Hangar): set it explicitly
    folder.chmod(0o700)
    return folder


class Interrupted(KeyboardInterrupt):
    """A signal that asks Hangar to stop: raised in the main thread so that what a
    command started is stopped on the way out (exit 128 + the signal, 130 for Ctrl-C)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.exit_code = 128 + signum


class HangarError(Exception):
    """Base class: an expected failure with a one-line explanation and a next step."""

    exit_code = 1

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def one_line(self) -> str:
        text = self.message.replace("\n", " ").strip()
        return f"{text} Fix: {self.hint}" if self.hint else text


class UsageError(HangarError):
    """Options that cannot be combined, or a value out of range (exit 2)."""

    exit_code = 2


class InputError(HangarError):
    """A user-provided file or value is invalid; names the file and field."""

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        field: str | None = None,
        hint: str | None = None,
    ) -> None:
        where = ": ".join(part for part in (source, f"field '{field}'" if field else None) if part)
        super().__init__(f"{where}: {message}" if where else message, hint=hint)
        self.source = source
        self.field = field


class ModelNotFound(InputError):
    """``hub``: why the Hugging Face hub was not asked (unreachable, offline), if it was not."""

    def __init__(self, model: str, *, hint: str | None = None, hub: str | None = None) -> None:
        where = (
            f"and not in the local Hugging Face cache; the hub was not asked ({hub})"
            if hub
            else "and not available from the Hugging Face hub or its local cache"
        )
        super().__init__(
            f"model '{model}' is not a local directory, not in the embedded catalog, {where}",
            hint=hint or "hangar models list   (or pass a local directory holding config.json)",
        )
        self.model = model
        self.hub = hub


class BadValue(InputError):
    """A value that is malformed or names nothing known: a usage error, as click's (exit 2)."""

    exit_code = 2


class UnknownGpu(BadValue):
    def __init__(self, name: str, known: Sequence[str]) -> None:
        super().__init__(
            f"unknown GPU '{name}'",
            field="--gpu",
            hint=f"use one of: {', '.join(known)}   (hangar gpus list)",
        )
        self.gpu = name


class DataError(HangarError):
    """Hangar's own packaged data is invalid: names the data file, entry and key."""

    exit_code = 3


class NoGpuDetected(HangarError):
    def __init__(self, reason: str) -> None:
        super().__init__(
            f"no --gpu given and no local NVIDIA GPU detected ({reason})",
            hint="pass the target hardware, e.g. --gpu H100 --gpus 8",
        )


class CommandFailed(HangarError):
    def __init__(self, argv: Sequence[str], code: int, stdout: str, stderr: str) -> None:
        tail = (stderr or stdout).strip().splitlines()[-1:] or [""]
        super().__init__(f"command {list(argv)!r} exited with {code}: {tail[0]}")
        self.argv = list(argv)
        self.code = code
        self.stdout = stdout
        self.stderr = stderr
