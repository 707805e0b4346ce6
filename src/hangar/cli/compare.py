"""``hangar compare A B``: deltas per metric between two stored evals."""

from __future__ import annotations

import json
from typing import Any

import click

from hangar.cli.options import json_option


@click.command("compare")
@click.argument("a")
@click.argument("b")
@click.option("--force", is_flag=True, help="Compare even when the measurement conditions differ.")
@json_option(help="Print the comparison as JSON.")
def compare(a: str, b: str, force: bool, as_json: bool) -> int:
    """Compare stored evals A and B (ids, id prefixes, launch run ids, or 'latest')."""
    from hangar.evaluation import compare as compare_results
    from hangar.evaluation.history import load_eval

    comparison = compare_results(load_eval(a), load_eval(b), force=force)
    if as_json:
        click.echo(json.dumps(comparison.model_dump(mode="json"), indent=2))
        return 0
    from rich.console import Console

    render_comparison(Console(), comparison)
    return 0


def render_comparison(console: Any, comparison: Any) -> None:
    from rich.table import Table

    from hangar.cli.terminal import escape

    if comparison.conditions_differ:
        console.print(
            "[bold red]WARNING: conditions differ; these deltas are not like for like:[/]"
        )
        for diff in comparison.conditions_differ:
            console.print(f"  [red]{escape(diff.field)}[/]: {escape(f'{diff.a!r} vs {diff.b!r}')}")
    for change in comparison.suites:
        if change.a != change.b:
            console.print(escape(f"suite {change.suite}: {change.a} -> {change.b}"))
    if not comparison.points:
        console.print("no performance points to compare (run hangar eval --suite perf on both)")
    for point in comparison.points:
        table = Table(
            "metric", escape(comparison.a), escape(comparison.b), "B − A", title=escape(point.label)
        )
        for d in point.deltas:
            color = "" if d.better is None else ("green" if d.better else "red")
            pct = f" ({d.pct:+.1f}%)" if d.pct is not None else ""
            delta = f"{d.delta:+.2f}{pct}"
            table.add_row(
                escape(d.metric),
                f"{d.a:.2f}",
                f"{d.b:.2f}",
                f"[{color}]{delta}[/]" if color else delta,
            )
        console.print(table)
    if comparison.unmatched_points:
        console.print(escape(f"not in both: {', '.join(comparison.unmatched_points)}"))
