"""``hangar clean``: run dirs, temp files, sockets, records and stopped containers of dead
runs only."""

from __future__ import annotations

import click


@click.command()
@click.option("--dry-run", is_flag=True, help="Only list what would be removed.")
@click.option("--logs", is_flag=True, help="Also remove the logs kept for failed runs.")
def clean(dry_run: bool, logs: bool) -> None:
    """Remove what dead runs left behind; live runs are never touched."""
    from hangar.launch.runs import clean as clean_runs
    from hangar.launch.runs import open_store

    items = clean_runs(open_store(), dry_run=dry_run, logs=logs)
    verb = "would remove" if dry_run else "removed"
    for item in items:
        click.echo(f"{verb} {item.what}  ({item.why})")
    if not items:
        click.echo("nothing to clean")
