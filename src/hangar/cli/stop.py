"""``hangar stop``: stop exactly what a run's target started (process group, Slurm job)."""

from __future__ import annotations

import click


@click.command()
@click.argument("run", required=False)
@click.option(
    "--grace",
    type=click.FloatRange(min=0),
    help="Seconds between SIGTERM and SIGKILL (default: the deployment's stop_grace_s).",
)
def stop(run: str | None, grace: float | None) -> None:
    """Stop RUN (id or prefix; default: the latest run). Only what Hangar started is signalled."""
    from hangar.launch.orchestrator import stop as stop_run

    record, stopped = stop_run(run, grace_s=grace)
    click.echo(f"run {record.id} stopped ({stopped.detail})")
