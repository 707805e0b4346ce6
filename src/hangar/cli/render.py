"""``hangar render``: what a deployment would run, printed or written; nothing is executed."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import click

from hangar.cli.options import param_options
from hangar.cli.preflight import deployment_from_cli


@click.command()
@click.argument("target", required=False)
@click.option(
    "--target", "kind", type=click.Choice(["local", "slurm", "container"]), help="Override [target] kind."
)
@click.option(
    "-o",
    "--output",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write every file it would submit or copy into this directory and list them.",
)
@param_options("deploy")
def render(target: str | None, kind: str | None, output: Path | None, **flags: Any) -> int:
    """Print the sbatch script (Slurm) or the argv (local) for FILE (default ./hangar.toml)."""
    from hangar.errors import HangarError
    from hangar.launch.orchestrator import render as render_target
    from hangar.paths import runs_root
    from hangar.preflight.runner import preflight

    d = deployment_from_cli(target, kind)
    report = _with_container_engine(d, preflight(d, with_plan=False))
    if report.engine is None or not report.engine.exists:
        raise HangarError(
            f"engine {d.engine!r} not found, so there is nothing to render",
            hint='hangar engines list   (or set engine = "/path/to/venv/bin/python")',
        )
    run_dir = output.resolve() if output else runs_root() / "RUN_ID"
    rendered = render_target(d, report, run_dir)
    if output is None:
        print_rendered(rendered, main_only=True)
        return 0
    _write(rendered, output)
    return 0


def _with_container_engine(d: Any, report: Any) -> Any:
    """Render is pure: a container's argv needs no runtime and no local image, so when
    preflight could not read the image (runtime missing, image absent) its tag stands in."""
    if report.engine is not None or d.target.kind != "container":
        return report
    from hangar.preflight.container import unread_facts

    return report.model_copy(update={"engine": unread_facts(d, d.target.container)})


def print_rendered(rendered: Any, main_only: bool = False) -> None:
    main = rendered.main_file()
    if main is None:
        click.echo(shlex.join(rendered.argv))
        return
    files = [main] if main_only else list(rendered.files.items())
    for name, file in files:
        if not main_only:
            click.echo(f"# ---- {name}", err=True)
        click.echo(file.text, nl=False)


def _write(rendered: Any, output: Path) -> None:
    from hangar.paths import atomic_write_text

    output.mkdir(parents=True, exist_ok=True, mode=0o700)
    for name, file in rendered.files.items():
        atomic_write_text(output / name, file.text, mode=file.mode)
        click.echo(str(output / name))
    if not rendered.files:
        atomic_write_text(output / "argv.txt", shlex.join(rendered.argv) + "\n", mode=0o600)
        click.echo(str(output / "argv.txt"))
