"""``hangar support MODEL``: per engine, native / Transformers backend / unsupported, and what to do."""

from __future__ import annotations

import json

import click

from hangar.cli.options import json_option
from hangar.engines.support import PLATFORMS


def _mark(value: bool | None) -> str:
    return "?" if value is None else ("yes" if value else "no")


@click.command("support")
@click.argument("model")
@click.option(
    "--engine",
    "engine_names",
    multiple=True,
    metavar="NAME",
    help="Check only this engine (repeatable; default: every registered engine).",
)
@click.option(
    "--platform",
    type=click.Choice(PLATFORMS),
    default="cuda",
    show_default=True,
    help="Recommend only images built for this platform (vLLM publishes one image per platform).",
)
@json_option(help="Print JSON instead of a table.")
def support(model: str, engine_names: tuple[str, ...], platform: str, as_json: bool) -> None:
    """Can each engine run MODEL (a directory, catalog id or hub id), and if not: a nightly
    or newer venv (A), the image the card names (B) or a source build, with the reasons:
    architectures, and every parser, flag, version and install the card's commands name."""
    from hangar.engines.support import support as check
    from hangar.models.sources import OFFLINE_BY_USER, expand_user, hub_unreachable

    # One short probe before anything asks the hub for the model card: when it fails the
    # process goes offline, instead of huggingface_hub retrying for ~24 s per file.
    unreachable = None if expand_user(model).exists() else hub_unreachable()
    report = check(model, list(engine_names) or None, platform=platform)
    if unreachable and unreachable != OFFLINE_BY_USER:
        click.echo(
            f"note: Hugging Face hub not reachable ({unreachable}); model card not fetched",
            err=True,
        )
    if as_json:
        click.echo(json.dumps(report.model_dump(mode="json"), indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    from hangar.cli.terminal import escape

    con = Console()
    parsers = ", ".join(f"{k}={v}" for k, v in report.recommended_parsers.items()) or "none named"
    # escape: model ids, paths and card text are data, never rich markup ("[/]" crashed it).
    con.print(
        f"[bold]{escape(report.model)}[/]  {escape(', '.join(report.architectures))} "
        f"(model_type {escape(str(report.model_type))})"
    )
    con.print(
        escape(
            f"card: {report.card or 'not found'}; parsers: {parsers}"
            + (f"; images: {', '.join(report.images)}" if report.images else "")
        )
    )
    if not report.engines:
        con.print("no engines registered: hangar engines add stable --vllm VERSION")
        return
    table = Table("engine", "vLLM", "architecture", "model_type known", "parsers", "path")
    for row in report.engines:
        parser_text = ", ".join(f"{p.name}:{_mark(p.present)}" for p in row.parsers.values()) or "-"
        arch = row.architecture_supported or ("no" if row.architecture_supported is False else "?")
        cells = (
            row.engine,
            row.vllm_version or "?",
            str(arch),
            _mark(row.model_type_known),
            parser_text,
            row.recommendation,
        )
        table.add_row(*(escape(cell) for cell in cells))
    con.print(table)
    for row in report.engines:
        con.print(
            f"[bold]{escape(row.engine)}[/]: {escape(row.verdict or row.recommendation)}: "
            f"{escape(row.reason)}",
            soft_wrap=True,
        )
        if row.next_step:
            con.print(f"    next: {escape(row.next_step)}", soft_wrap=True)
