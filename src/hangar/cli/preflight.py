"""``hangar preflight``: plan rules + host checks + workarounds, before anything starts."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import click

from hangar.cli.options import given_values, json_option, param_options


def deployment_from_cli(target: str | None, kind: str | None) -> Any:
    """The deployment FILE or MODEL with the flags given on this command line over it,
    then ``--target KIND``."""
    from hangar.deploy.init import with_target_kind
    from hangar.deploy.params import deployment_for

    return with_target_kind(deployment_for(target, given_values()), kind)


def _known_gpu(name: object) -> None:
    """``--gpu NAME`` that names no GPU is a usage error (exit 2), as in ``hangar plan``;
    refused before any check runs. (A file's unknown resources.gpu stays the file's
    input error, exit 1, named by the preflight runner.)"""
    from hangar.hardware import lookup

    if isinstance(name, str):
        lookup(name)  # UnknownGpu: field --gpu, the known names as the fix


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
    "--target",
    "kind",
    type=click.Choice(["local", "slurm", "container"]),
    help="Override [target] kind.",
)
@param_options("deploy")
@json_option
def preflight(target: str | None, kind: str | None, as_json: bool, **flags: Any) -> int:
    """Check a deployment FILE (default ./hangar.toml) or a MODEL before launching it.

    Exit code 1 when any finding is an error.
    """
    from hangar.preflight.runner import preflight as run_preflight

    d = deployment_from_cli(target, kind)
    _known_gpu(given_values().get("gpu"))
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
