"""Entry point and the single error boundary.

Subcommands are registered in one literal dict and imported only when used, so
``hangar --help`` stays fast (no pydantic, rich or huggingface_hub import).
Exit codes (also in `hangar --help`): 0 ok, 1 expected failure (HangarError), 2 usage
error (UsageError, BadValue, click), 3 bug or bad packaged data (a crash log is written
under the state dir, its path in the message), 130 interrupted (Ctrl-C), 143 SIGTERM,
129 SIGHUP. TERM and HUP are turned into ``Interrupted`` as Ctrl-C is, so every command
unwinds and stops what it started.
"""

from __future__ import annotations

import errno
import importlib
import os
import platform
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import click

# name -> (module, attribute, one-line help). The help is here so --help needs no import.
COMMANDS: dict[str, tuple[str, str, str]] = {
    "init": (
        "hangar.cli.init",
        "init",
        "Write a deployment file (hangar.toml), interactively or from flags.",
    ),
    "plan": ("hangar.cli.plan", "plan", "Check every vLLM startup rule and the memory budget."),
    "preflight": (
        "hangar.cli.preflight",
        "preflight",
        "Plan rules plus host checks before a launch.",
    ),
    "launch": (
        "hangar.cli.launch",
        "launch",
        "Start a deployment and wait until it really serves.",
    ),
    "render": (
        "hangar.cli.render",
        "render",
        "Print what a deployment would run (the sbatch script, the argv); runs nothing.",
    ),
    "status": ("hangar.cli.status", "status", "Show launched runs and their state."),
    "logs": ("hangar.cli.logs", "logs", "Show or follow the log of a run."),
    "stop": (
        "hangar.cli.stop",
        "stop",
        "Stop a run Hangar started (its process group or Slurm job only).",
    ),
    "clean": ("hangar.cli.clean", "clean", "Remove run dirs, temp files and locks of dead runs."),
    "doctor": ("hangar.cli.doctor", "doctor", "Name the root cause of a failed launch from logs."),
    "workarounds": (
        "hangar.cli.workarounds",
        "workarounds",
        "List, check and review known workarounds.",
    ),
    "engines": (
        "hangar.cli.engines",
        "engines",
        "Manage side-by-side vLLM engines (venvs, images).",
    ),
    "support": ("hangar.cli.support", "support", "Can each engine run this model, and how?"),
    "eval": ("hangar.cli.eval", "eval", "Smoke, feature and performance checks of a server."),
    "compare": ("hangar.cli.compare", "compare", "Compare two eval runs metric by metric."),
    "report": ("hangar.cli.report", "report", "Write a self-contained HTML report of eval runs."),
    "ui": ("hangar.cli.ui", "ui", "Serve the web dashboard of engines, runs, evals and plans."),
    "models": ("hangar.cli.models", "models", "List and show the embedded model catalog."),
    "gpus": ("hangar.cli.gpus", "gpus", "List the GPU profiles Hangar knows."),
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        module_name, attr, _ = COMMANDS[name]
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                return None
            raise
        command: click.Command = getattr(module, attr)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][2]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


EXIT_CODES = (
    "Exit codes: 0 ok; 1 an expected failure (a check failed, a cause was found, a file "
    "or run Hangar cannot use); 2 a usage error (a bad option or value: an unknown GPU, "
    "a malformed URL, a layout vLLM refuses); 3 an internal error, a bug in Hangar "
    "(rerun with --debug for the traceback and report it; the message names its crash "
    "log); 130 interrupted (Ctrl-C), 143 terminated (SIGTERM), 129 hung up (SIGHUP)."
)


@click.group(
    cls=LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog=EXIT_CODES,
)
@click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
@click.version_option(package_name="hangar", prog_name="hangar")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Hangar: plan, check, launch, diagnose and evaluate vLLM deployments."""
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug


def _debug_requested(argv: list[str]) -> bool:
    return "--debug" in argv or os.environ.get("HANGAR_DEBUG") == "1"


def _report(message: str) -> None:
    from hangar.cli.terminal import printable

    # Messages quote values from files and servers: shown, never interpreted, by the terminal.
    click.echo(f"hangar: error: {printable(message, one_line=True)}", err=True)


# A path the user typed that the OS refuses to even look up: a usage error.
_BAD_NAME_ERRNOS = frozenset({errno.ENAMETOOLONG})
_SHOWN_PATH = 120


def _os_error_line(exc: OSError) -> str:
    """The file system refused a named path (too long, no permission, a directory where a
    file was expected): one line naming it, as for any other unusable input."""
    name = str(exc.filename)
    shown = (
        name if len(name) <= _SHOWN_PATH else f"{name[:_SHOWN_PATH]}... ({len(name)} characters)"
    )
    return f"{shown}: {exc.strerror or type(exc).__name__}"


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; map every expected failure to one line and an exit code."""
    from hangar.errors import HangarError

    args = list(sys.argv[1:] if argv is None else argv)
    debug = _debug_requested(args)
    previous = _stop_signals_interrupt()
    try:
        _test_only_internal_error()
        result: Any = cli.main(args=args, prog_name="hangar", standalone_mode=False)
    except HangarError as exc:
        if debug:
            raise
        if exc.exit_code == 3:  # bad packaged data is a bug too: it gets a crash log
            log = write_crash_log(args, exc)
            _report(exc.one_line() + (f" (crash log: {log})" if log else ""))
            return 3
        _report(exc.one_line())
        return exc.exit_code
    except click.exceptions.Abort as exc:  # click wraps KeyboardInterrupt (and Interrupted)
        return int(getattr(exc.__cause__, "exit_code", 130))
    except KeyboardInterrupt as exc:
        return int(getattr(exc, "exit_code", 130))
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except OSError as exc:
        if debug or exc.filename is None:
            raise
        _report(_os_error_line(exc))
        return 2 if exc.errno in _BAD_NAME_ERRNOS else 1
    except Exception as exc:  # the boundary: a bug, reported in one line unless --debug
        if debug:
            raise
        log = write_crash_log(args, exc)
        where = f"crash log: {log}; " if log else ""
        _report(
            f"internal error: {type(exc).__name__}: {exc} ({where}rerun with --debug and "
            "report it)"
        )
        return 3
    finally:
        _restore_signals(previous)
    return int(result or 0)


_STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


def _raise_interrupted(signum: int, frame: object) -> None:
    from hangar.errors import Interrupted

    raise Interrupted(signum)


def _stop_signals_interrupt() -> dict[int, Any]:
    """SIGTERM and SIGHUP unwind like Ctrl-C (finally blocks run, what was started is
    stopped) instead of killing Hangar where it stands."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        return {}
    return {sig: signal.signal(sig, _raise_interrupted) for sig in _STOP_SIGNALS}


def _restore_signals(previous: dict[int, Any]) -> None:
    for sig, handler in previous.items():
        signal.signal(sig, handler)


# Read only by the test suite (tests/test_crash_log.py): the one way to provoke an internal
# error on purpose, so the crash log is tested without depending on a bug that gets fixed.
_TEST_CRASH_VAR = "HANGAR_TEST_ONLY_INTERNAL_ERROR"


def _test_only_internal_error() -> None:
    if os.environ.get(_TEST_CRASH_VAR) == "1":
        raise RuntimeError(f"internal error provoked by {_TEST_CRASH_VAR}")


def write_crash_log(args: list[str], exc: BaseException) -> Path | None:
    """Versions, the masked argv and the traceback of an internal error, written atomically
    under the state dir (as pre-commit writes pre-commit.log); None if it cannot be written."""
    from hangar.errors import crash_log_dir
    from hangar.paths import atomic_write_text

    try:
        path = crash_log_dir() / f"crash-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"
        atomic_write_text(path, _crash_text(args, exc), mode=0o600)
    except Exception:  # noqa: BLE001  the crash log must never hide the error itself
        return None
    return path


def _crash_text(args: list[str], exc: BaseException) -> str:
    from hangar.errors import CRASH_CONTEXT
    from hangar.web import redact

    lines = [
        "### version information",
        f"hangar: {_hangar_version()}",
        f"python: {sys.version.split()[0]} ({sys.executable})",
        f"os: {platform.platform()}",
        *(f"{k}: {redact.text(v)}" for k, v in sorted(CRASH_CONTEXT.items())),
        "",
        "### command",
        "hangar " + " ".join(redact.argv(args)),
        "",
        "### error",
        redact.text(f"{type(exc).__name__}: {exc}"),
        "",
        "### traceback",
        redact.text("".join(traceback.format_exception(exc))),
    ]
    return "\n".join(lines) + "\n"


def _hangar_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("hangar")
    except PackageNotFoundError:
        return "unknown"
