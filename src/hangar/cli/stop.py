"""``hangar stop``: SIGTERM a run's process group, SIGKILL after the grace period."""

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
    """Stop RUN (id or prefix; default: the latest run). Only processes Hangar started are signalled."""
    from hangar.launch.local import stop as stop_run

    record, count, killed = stop_run(run, grace_s=grace)
    how = "SIGKILL after the grace period" if killed else "SIGTERM"
    click.echo(f"run {record.id} stopped ({count} processes, {how})")
