"""``hangar preflight``: plan rules + host checks + workarounds, before anything starts."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click
from click.core import ParameterSource

from hangar.cli.options import hardware_options, json_option

F = TypeVar("F", bound=Callable[..., Any])


def deployment_options(func: F) -> F:
    """Flags that override (or, with a MODEL, build) the deployment; shared with launch."""
    func = click.option("--port", type=click.IntRange(1, 65535), help="Port to serve on.")(func)
    func = click.option("--host", help="Bind address (default 127.0.0.1).")(func)
    func = click.option("--pp", type=click.IntRange(min=1), help="Pipeline parallel size.")(func)
    func = click.option("--tp", type=click.IntRange(min=1), help="Tensor parallel size.")(func)
    func = click.option("--engine", help="Engine name (hangar engines list) or interpreter path.")(
        func
    )
    return hardware_options(func)


def overrides(**values: Any) -> dict[str, Any]:
    """The flags the user actually gave: a default (--nodes 1) must not override the file."""
    keys = ("gpu", "gpus", "nodes", "engine", "tp", "pp", "host", "port")
    ctx = click.get_current_context(silent=True)
    given = {k: values.get(k) for k in keys}
    if ctx is not None and ctx.get_parameter_source("nodes") is ParameterSource.DEFAULT:
        given["nodes"] = None
    return given


def findings_json(findings: Sequence[Any]) -> list[dict[str, Any]]:
    return [f.model_dump(mode="json") for f in findings]


_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def render_findings(findings: Sequence[Any]) -> None:
    """One block per finding: severity and id, message, then evidence and fix indented."""
    from rich.console import Console

    from hangar.cli.terminal import escape

    console = Console(highlight=False)
    for f in findings:
        console.print(
            f"[{_STYLE[f.severity]}]{f.severity:7}[/] [bold]{escape(f.id)}[/]: {escape(f.message)}"
        )
        if f.evidence:
            console.print(f"        [dim]evidence: {escape(f.evidence)}[/]")
        if f.fix:
            console.print(f"        fix: {escape(f.fix)}")


@click.command()
@click.argument("target", required=False)
@click.option(
    "--target", "kind", type=click.Choice(["local", "slurm", "container"]), help="Override [target] kind."
)
@deployment_options
@json_option
def preflight(target: str | None, kind: str | None, as_json: bool, **flags: Any) -> int:
    """Check a deployment FILE (default ./hangar.toml) or a MODEL before launching it.

    Exit code 1 when any finding is an error.
    """
    from hangar.deploy.init import deployment_for_cli, with_target_kind
    from hangar.preflight.runner import preflight as run_preflight

    d = with_target_kind(deployment_for_cli(target, overrides(**flags)), kind)
    report = run_preflight(d)
    if as_json:
        doc = {
            "findings": findings_json(report.findings),
            "workarounds": [w.id for w in report.workarounds],
            "seconds": report.seconds,
        }
        click.echo(json.dumps(doc, indent=2))
    else:
        render_findings(report.findings)
        verdict = "ok" if report.ok else f"{len(report.errors())} error(s)"
        click.echo(f"preflight: {verdict} ({len(report.findings)} findings, {report.seconds:.2f}s)")
    return 0 if report.ok else 1
