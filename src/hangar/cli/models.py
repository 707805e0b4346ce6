"""`hangar models list|show`: the embedded catalog and any model Hangar can resolve."""

from __future__ import annotations

import json
from typing import Any

import click

from hangar.cli.options import json_option


@click.group("models")
def models() -> None:
    """The embedded model catalog (real configs with their sources)."""


@models.command("list")
@json_option
def list_models(as_json: bool) -> int:
    """List the catalog's models."""
    from hangar.models.sources import catalog_folders, from_catalog, read_meta

    rows: list[dict[str, Any]] = []
    for folder in catalog_folders():
        spec = from_catalog(folder)
        rows.append({
            "id": spec.id, "architecture": spec.architecture, "num_params": spec.num_params,
            "weight_bytes": spec.weight_bytes, "max_model_len": spec.derived_max_len,
            "features": list(spec.features), "source": (read_meta(folder).get("source") or {}).get("url"),
        })
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return 0
    from rich.console import Console
    from rich.table import Table

    from hangar.cli.terminal import escape

    table = Table(title=f"{len(rows)} models in the embedded catalog")
    for col in ("model", "params", "max len", "features"):
        table.add_column(col, no_wrap=col != "features")
    for r in rows:
        table.add_row(escape(r["id"]), f"{r['num_params'] / 1e9:.1f}B",
                      f"{r['max_model_len']:,}", escape(", ".join(r["features"])))
    Console().print(table)
    return 0


@models.command("show")
@click.argument("model")
@json_option
def show(model: str, as_json: bool) -> int:
    """Show the facts Hangar reads from MODEL (catalog id, hub id or directory)."""
    from hangar.models import load_model

    spec = load_model(model)
    data = spec.model_dump(mode="json")
    if as_json:
        click.echo(json.dumps(data, indent=2))
        return 0
    from rich.console import Console

    from hangar.cli.terminal import escape

    console = Console()
    # escape: a directory named like rich markup ("[/]") is text (it crashed the render).
    console.print(f"[bold]{escape(spec.id)}[/bold] ({escape(spec.source)})")
    for key, value in data.items():
        if key in ("id", "layer_types", "layer_mlps") or value in (None, (), [], ""):
            continue
        console.print(f"  {key:24} {escape(str(value))}", highlight=False)
    kinds = {k: spec.layer_types.count(k) for k in dict.fromkeys(spec.layer_types)}
    console.print(f"  {'layers by type':24} {escape(str(kinds))}", highlight=False)
    return 0
