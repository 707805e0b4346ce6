"""``hangar clean``: run dirs, temp files, sockets, records and stopped containers of dead
runs only."""

from __future__ import annotations

import click


@click.command()
@click.option("--dry-run", is_flag=True, help="Only list what would be removed.")
@click.option("--logs", is_flag=True, help="Also remove the logs kept for failed runs.")
def clean(dry_run: bool, logs: bool) -> None:
    """Remove what dead runs left behind; live runs are never touched. A server whose
    launcher died while starting it (orphaned in `hangar status`) is stopped through its
    recorded process group / job / container, its temp dir removed, the run marked."""
    from hangar.launch.runs import clean as clean_runs
    from hangar.launch.runs import open_store

    items = clean_runs(open_store(), dry_run=dry_run, logs=logs)
    for item in items:
        verb = ("would stop" if dry_run else "stopped") if item.orphan else None
        verb = verb or ("would remove" if dry_run else "removed")
        click.echo(f"{verb} {item.what}  ({item.why})")
    if not items:
        click.echo("nothing to clean")
