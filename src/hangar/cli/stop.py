"""``hangar stop``: stop exactly what a run's target started (process group, Slurm job,
container); ``--purge`` also removes a container run's image."""

from __future__ import annotations

import click


@click.command()
@click.argument("run", required=False)
@click.option(
    "--grace",
    type=click.FloatRange(min=0),
    help="Seconds between SIGTERM and SIGKILL (default: the deployment's stop_grace_s).",
)
@click.option(
    "--purge",
    is_flag=True,
    help="Container runs: also remove the image (model images are ~10 GB; the runtime "
    "keeps it while another container uses it).",
)
def stop(run: str | None, grace: float | None, purge: bool) -> None:
    """Stop RUN (id or prefix; default: the latest run). Only what Hangar started is signalled.
    A run that already ended is left as it is (exit 0: stop is idempotent)."""
    from hangar.launch.errors import RunNotLive
    from hangar.launch.recorded import stop as stop_run
    from hangar.store.db import connect
    from hangar.store.runs import get_run

    try:
        record, stopped = stop_run(run, grace_s=grace)
        click.echo(f"run {record.id} stopped ({stopped.detail})")
    except RunNotLive as exc:
        record = get_run(connect(), exc.run_id)
        click.echo(f"run {record.id} is already stopped (status {exc.status}); nothing to do")
    if purge and record.target == "container" and record.handle:
        from hangar.launch.targets.container import remove_image

        click.echo(remove_image(record.handle))
    elif purge:
        click.echo(f"--purge: run {record.id} is a {record.target} run, it has no image")
