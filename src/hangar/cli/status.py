"""``hangar status``: recorded runs, with live state checked against their processes."""

from __future__ import annotations

import json
import time

import click

from hangar.cli.options import json_option


@click.command()
@click.option("--all", "show_all", is_flag=True, help="Include runs that ended.")
@json_option
def status(show_all: bool, as_json: bool) -> None:
    """Runs Hangar launched on this host (live ones by default), probed: a server's process
    (recorded PID and start time, or its marker) and its endpoint, and whether the launcher
    that owns a starting run is still alive ('orphaned' when it died)."""
    from hangar.launch.runs import open_store, refresh

    states = [s for s in refresh(open_store()) if show_all or s.alive]
    if as_json:
        rows = [
            {
                **s.run.model_dump(exclude={"deployment_json", "argv_json"}),
                "alive": s.alive,
                "state": s.shown,
                "detached": s.run.detached,
                "detail": s.detail,
                "fix": s.fix,
                "pids": list(s.pids),
            }
            for s in states
        ]
        click.echo(json.dumps(rows, indent=2))
        return
    if not states:
        click.echo(
            "no live runs" + ("" if show_all else "   (hangar status --all lists ended ones)")
        )
    from hangar.cli.terminal import printable

    for s in states:
        r = s.run
        age = time.strftime("%Y-%m-%d %H:%M", time.localtime(r.started_at))
        extra = f"  {r.error}" if r.error and not s.alive else ""
        if s.state:  # what the probe found instead of the record's status, and the fix
            extra = f"  {s.detail}. Fix: {s.fix}"
        line = f"{r.id}  {s.shown:8} {r.label:30} {r.base_url:24} {age}  vLLM {r.vllm_version}"
        click.echo(printable(line + extra, one_line=True))  # the label is the model's id
