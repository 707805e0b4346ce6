"""``hangar launch``: preflight, start vLLM, wait for real readiness, record the run."""

from __future__ import annotations

from typing import Any

import click

from hangar.cli.preflight import deployment_options, overrides, render_findings


@click.command()
@click.argument("target", required=False)
@click.option(
    "--target",
    "kind",
    type=click.Choice(["local"]),
    default="local",
    show_default=True,
    help="Where to run it (slurm and container come with their own issues).",
)
@click.option("--force", is_flag=True, help="Launch even when preflight finds errors.")
@deployment_options
def launch(target: str | None, kind: str, force: bool, **flags: Any) -> int:
    """Launch a deployment FILE (default ./hangar.toml) or a MODEL and wait until it serves."""
    from rich.console import Console
    from rich.markup import escape

    from hangar.deploy.init import deployment_for_cli
    from hangar.launch.errors import LaunchFailed, PreflightFailed
    from hangar.launch.local import launch as launch_local

    console = Console(stderr=True, highlight=False)
    d = deployment_for_cli(target, overrides(**flags))
    with console.status("preflight") as status:

        def progress(event: str, detail: str) -> None:
            console.print(f"[dim]{escape(event)}:[/] {escape(detail)}")
            status.update(
                f"waiting for readiness (run {escape(detail.split(',')[0])})"
                if event == "started"
                else "waiting"
            )

        try:
            result = launch_local(d, force=force, progress=progress)
        except PreflightFailed:
            from hangar.preflight.runner import preflight

            status.stop()
            render_findings([f for f in preflight(d).findings if f.severity == "error"])
            raise
        except LaunchFailed as exc:
            status.stop()
            _show_failure(console, exc)
            raise
    run = result.run
    for o in result.spec.applied.overrides:
        console.print(
            "[yellow]override:[/] "
            + escape(
                f"your {o.kind} {o.user_value} replaces workaround {o.workaround}'s "
                f"{o.workaround_value}"
            )
        )
    click.echo(
        f"run {run.id} ready at {run.base_url} (model '{result.spec.served_name}', "
        f"{run.timings.get('completion', 0):.1f}s); stop with: hangar stop {run.id}"
    )
    return 0


def _show_failure(console: Any, exc: Any) -> None:
    from rich.markup import escape

    if exc.error_block:
        console.print("[bold red]last error in the server log:[/]")
        console.print(escape(exc.error_block))
    if exc.diagnosis:
        console.print(f"[bold]diagnosis:[/] {escape(exc.diagnosis)}")
