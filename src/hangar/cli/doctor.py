"""``hangar doctor``: name the root cause of a failed launch, and its fix, from the logs.

Exit codes: 1 a cause was found, 0 the logs look healthy, 2 bad input (missing,
binary or truncated file, unknown run id).
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Any, BinaryIO

import click

from hangar.cli.options import json_option
from hangar.diagnose.model import Diagnosis


@click.command("doctor")
@click.argument("inputs", nargs=-1, required=True, metavar="LOG... | - | RUN_ID")
@json_option(help="Print the JSON contract instead of text.")
@click.option(
    "--llm",
    "llm_url",
    metavar="URL",
    default=None,
    help="OpenAI-compatible endpoint asked (with a redacted excerpt) when no signature is sure.",
)
@click.option("--model", "llm_model", default=None, help="Model for --llm.  [default: default]")
@click.option(
    "--llm-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=60.0,
    show_default=True,
    help="Seconds to wait for --llm.",
)
def doctor(
    inputs: tuple[str, ...],
    as_json: bool,
    llm_url: str | None,
    llm_model: str | None,
    llm_timeout: float,
) -> int:
    """Read vLLM / Ray / Slurm logs (files, gzip, '-' for stdin, or a run id) and name the root cause."""
    from hangar.diagnose import diagnose_paths
    from hangar.diagnose.runs import resolve

    _check_llm(llm_url, llm_model)

    with ExitStack() as stack:
        stdin = _spool_stdin(stack) if "-" in inputs else None
        paths = [stdin if arg == "-" and stdin else resolve(arg) for arg in dict.fromkeys(inputs)]
        diagnosis = diagnose_paths(paths, names={stdin: "<stdin>"} if stdin else None)
        guess = _ask_llm(paths, diagnosis, llm_url, llm_model, llm_timeout)
    if as_json:
        _print_json(diagnosis, guess)
    else:
        _print_text(diagnosis, guess)
    return 1 if diagnosis.causes else 0


def _check_llm(url: str | None, model: str | None) -> None:
    """Bad --llm options fail before any log is read, not only once a log needs the model."""
    from hangar.errors import UsageError

    if url is None:
        if model is not None:
            raise UsageError(
                "--model needs --llm (it names the model the --llm endpoint is asked)",
                hint="hangar doctor LOG --llm http://127.0.0.1:8000/v1 --model MODEL",
            )
        return
    from hangar.diagnose import llm

    llm.endpoint(url)


def _spool_stdin(stack: ExitStack) -> Path:
    """Copy stdin to a private temp file so it can be scanned (and excerpted) like a file."""
    stream: BinaryIO = sys.stdin.buffer
    tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="hangar-doctor-"))
    target = Path(tmp) / "stdin.log"
    with target.open("wb") as out:
        shutil.copyfileobj(stream, out, length=16 * 2**20)
    return target


def _ask_llm(
    paths: list[Path], diagnosis: Diagnosis, url: str | None, model: str | None, timeout: float
) -> Any:
    if not url or diagnosis.confident():
        return None
    from hangar.diagnose import llm

    return llm.ask(url, model or "default", llm.redact(llm.excerpt(paths)), timeout=timeout)


def _print_json(diagnosis: Diagnosis, guess: Any) -> None:
    payload: dict[str, Any] = {"causes": [f.model_dump(mode="json") for f in diagnosis.causes]}
    if guess is not None:
        payload["llm_guess"] = guess.model_dump(mode="json")
    click.echo(json.dumps(payload, indent=2))


def _print_text(diagnosis: Diagnosis, guess: Any) -> None:
    from rich.console import Console

    from hangar.cli.terminal import escape

    console = Console(highlight=False, soft_wrap=True)
    scanned = f"{diagnosis.lines_scanned:,} lines in {len(diagnosis.files)} file(s)"
    if diagnosis.healthy and diagnosis.unconfirmed:
        best = diagnosis.unconfirmed[0]
        console.print(
            f"[yellow]No cause reaches the confidence floor (unknown)[/yellow] ({scanned}); best "
            f"guess: {best.cause} {best.confidence:.2f} ({best.signature}), not a diagnosis."
        )
    elif diagnosis.healthy:
        console.print(f"[green]No known failure signature[/green] ({scanned}).")
    for rank, finding in enumerate(diagnosis.causes, start=1):
        style = "bold red" if rank == 1 else "yellow"
        title = f" ({escape(finding.cause_title)})" if finding.cause_title else ""
        console.print(
            f"[{style}]{rank}. {finding.cause}[/{style}]{title}  {escape(finding.title)}  "
            f"(confidence {finding.confidence:.2f}, signature {finding.signature})"
        )
        console.print(f"   {escape(finding.explanation)}")
        for step in finding.fix.splitlines():
            console.print(f"   [cyan]fix:[/cyan] {escape(step)}")
        if finding.preflight_rule:
            console.print(
                f"   [dim]preflight rule that catches this: {finding.preflight_rule}[/dim]"
            )
        for ev in finding.evidence:
            console.print(f"   [dim]{escape(ev.file)}:{ev.line}[/dim] {escape(ev.text[:200])}")
        if finding.repeats > 1:
            console.print(f"   [dim](seen {finding.repeats} times, e.g. once per rank)[/dim]")
    if diagnosis.causes:
        console.print(f"[dim]{scanned}[/dim]")
    if guess is not None:
        console.print(f"[magenta]{escape(guess.label)} ({escape(guess.model)}):[/magenta]")
        console.print(escape(guess.text))
