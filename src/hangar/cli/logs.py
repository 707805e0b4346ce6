"""``hangar logs``: a run's server log, whole or followed."""

from __future__ import annotations

import time
from pathlib import Path

import click


@click.command()
@click.argument("run", required=False)
@click.option("-f", "--follow", is_flag=True, help="Keep printing new lines until the run ends.")
@click.option("-n", "--lines", type=click.IntRange(min=0), help="Only the last N lines.")
def logs(run: str | None, follow: bool, lines: int | None) -> None:
    """Print the log of RUN (id or prefix; default: the latest run)."""
    from hangar.launch.orchestrator import observe
    from hangar.launch.runs import open_store
    from hangar.store.runs import get_run

    record = get_run(open_store(), run)
    path = Path(record.log_path)
    if not path.is_file():
        raise click.ClickException(f"log {path} is gone (removed by hangar clean?)")
    with open(path, encoding="utf-8", errors="replace") as fh:
        text = fh.read()
        shown = text.splitlines()[-lines:] if lines is not None else text.splitlines()
        click.echo("\n".join(shown))
        while follow and observe(record).phase in ("queued", "running"):
            chunk = fh.read()
            if chunk:
                click.echo(chunk, nl=False)
            else:
                time.sleep(0.5)
        if follow:
            click.echo(fh.read(), nl=False)
