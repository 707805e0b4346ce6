"""``hangar launch``: preflight, render, submit, wait for real readiness, record the run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from hangar.cli.options import param_options
from hangar.cli.preflight import deployment_from_cli, render_findings


@click.command()
@click.argument("target", required=False)
@click.option(
    "--target",
    "kind",
    type=click.Choice(["local", "slurm", "container"]),
    help="Override the file's [target] kind (inside a Slurm allocation, `--target local` "
    "runs on the allocation's node).",
)
@click.option("--force", is_flag=True, help="Launch even when preflight finds errors.")
@click.option("--dry-run", is_flag=True, help="Preflight and render only; submit nothing.")
@click.option(
    "--detach",
    is_flag=True,
    help="Hand the server over right after it is started, without waiting for readiness "
    "(hangar status shows it become ready). Without it, Ctrl-C, SIGTERM or SIGHUP during "
    "the wait stop the server.",
)
@param_options("deploy")
def launch(
    target: str | None, kind: str | None, force: bool, dry_run: bool, detach: bool, **flags: Any
) -> int:
    """Launch a deployment FILE (default ./hangar.toml) or a MODEL and wait until it serves.

    Until the server is ready, it belongs to this command: an interrupt stops it. Once ready
    (or at once with --detach) it is handed over to the run record: `hangar stop RUN`."""
    d = deployment_from_cli(target, kind)
    if dry_run:
        return _dry_run(d, force)
    return _launch(d, force, detach)


def _dry_run(d: Any, force: bool) -> int:
    from hangar.cli.render import print_rendered
    from hangar.launch.orchestrator import render
    from hangar.paths import runs_root
    from hangar.preflight.runner import preflight

    report = preflight(d)
    render_findings(report.findings)
    if report.engine is None or not report.engine.exists:
        click.echo("preflight: no engine, nothing rendered", err=True)
        return 1
    print_rendered(render(d, report, runs_root() / "RUN_ID"))
    verdict = "ok" if report.ok else f"{len(report.errors())} error(s)"
    click.echo(f"dry run: preflight {verdict}; nothing was submitted", err=True)
    return 0 if report.ok or force else 1


def _launch(d: Any, force: bool, detach: bool) -> int:
    from rich.console import Console

    from hangar.launch.errors import LaunchFailed, PreflightFailed
    from hangar.launch.orchestrator import launch as run_launch

    console = Console(stderr=True, highlight=False)
    with console.status("preflight") as status:
        try:
            result = run_launch(
                d,
                force=force,
                on_event=_event_printer(console, status),
                diagnose=_diagnose,
                detach=detach,
            )
        except PreflightFailed:
            from hangar.preflight.runner import preflight

            status.stop()
            render_findings([f for f in preflight(d).findings if f.severity == "error"])
            raise
        except LaunchFailed as exc:
            status.stop()
            _show_failure(console, exc)
            raise
    _show_overrides(console, result.rendered)
    run = result.run
    if detach:
        click.echo(
            f"run {run.id} detached while {run.status}; Hangar no longer touches it. "
            f"follow: hangar status / hangar logs {run.id}; stop with: hangar stop {run.id}"
        )
        return 0
    click.echo(
        f"run {run.id} ready at {run.base_url} (model '{result.rendered.served_name}', "
        f"{run.timings.get('submit_to_ready_s', 0):.1f}s); stop with: hangar stop {run.id}"
    )
    return 0


_WAITING = {
    "submit": "waiting for the job to start",
    "queued": "queued",
    "running": "waiting for the server's address",
    "endpoint": "waiting for readiness",
}


def _event_printer(console: Any, status: Any) -> Any:
    from hangar.cli.terminal import escape

    def show(event: Any) -> None:
        console.print(
            f"[dim]{event.elapsed_s:7.1f}s {escape(event.stage)}:[/] {escape(event.detail)}"
        )
        if event.stage in _WAITING:
            status.update(f"{_WAITING[event.stage]} (run {event.run_id})")

    return show


def _diagnose(paths: list[Path]) -> str | None:
    """hangar doctor's one-line verdict over every log of the run."""
    from hangar.diagnose import diagnose_paths

    top = diagnose_paths(paths).top
    if top is None:
        return None
    return f"{top.title or top.cause}: {top.explanation} Fix: {top.fix}"


def _show_overrides(console: Any, rendered: Any) -> None:
    from hangar.cli.terminal import escape

    for o in rendered.applied.overrides:
        console.print(
            "[yellow]override:[/] "
            + escape(
                f"your {o.kind} {o.user_value} replaces workaround {o.workaround}'s "
                f"{o.workaround_value}"
            )
        )


# The server log's error block is printed unwrapped (console.out), so it can be longer
# than what rich wraps in good time (terminal.LIMIT).
_BLOCK_LIMIT = 20_000


def _show_failure(console: Any, exc: Any) -> None:
    from hangar.cli.terminal import clip, escape, printable

    if exc.error_block:
        console.print("[bold red]last error in the server log:[/]")
        # server output: its escape sequences shown, never sent to the terminal
        console.out(printable(clip(exc.error_block, _BLOCK_LIMIT)), highlight=False)
    if exc.diagnosis:
        console.print(f"[bold]diagnosis:[/] {escape(exc.diagnosis)}")
