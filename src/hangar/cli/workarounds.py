"""``hangar workarounds``: the registry of known vLLM workarounds (list, show, check, review)."""

from __future__ import annotations

import json
from typing import Any

import click

from hangar.cli.options import json_option


@click.group()
def workarounds() -> None:
    """Known vLLM workarounds: why each exists, when it applies, when it can go."""


def _entry_json(w: Any) -> dict[str, Any]:
    return {
        "id": w.id,
        "env": dict(w.env),
        "args": list(w.args),
        "reason": w.reason,
        "upstream": w.upstream[0],
        "upstream_all": list(w.upstream),
        "added": w.added.isoformat(),
        "remove_when": w.remove_when.note,
        "vllm_fixed_in": w.remove_when.vllm_fixed_in,
    }


@workarounds.command("list")
@json_option
def list_command(as_json: bool) -> None:
    """Every workaround in the registry."""
    from hangar.workarounds import load_registry

    entries = load_registry()
    if as_json:
        click.echo(json.dumps([_entry_json(w) for w in entries], indent=2))
        return
    for w in entries:
        click.echo(f"{w.id:38} {w.title}")


@workarounds.command("show")
@click.argument("workaround_id")
@json_option
def show_command(workaround_id: str, as_json: bool) -> None:
    """One workaround with its condition, settings, reason and upstream links."""
    from hangar.errors import InputError
    from hangar.workarounds import get, load_registry

    w = get(workaround_id)
    if w is None:
        known = ", ".join(x.id for x in load_registry())
        raise InputError(f"no workaround '{workaround_id}'", hint=f"one of: {known}")
    if as_json:
        click.echo(
            json.dumps({**_entry_json(w), "when": w.when.model_dump(exclude_none=True)}, indent=2)
        )
        return
    settings = " ".join([*(f"{k}={v}" for k, v in w.env.items()), *w.args])
    click.echo(f"{w.id}: {w.title}\n")
    click.echo(f"applies when: {json.dumps(w.when.model_dump(exclude_none=True))}")
    click.echo(f"sets:         {settings}")
    click.echo(f"why:          {w.reason}")
    for url in w.upstream:
        click.echo(f"upstream:     {url}")
    click.echo(f"added:        {w.added.isoformat()}")
    click.echo(f"remove when:  {w.remove_when.note}")


@workarounds.command("check")
@click.argument("target", required=False)
@click.option("--gpu", help="GPU kind from the catalog.")
@click.option("--gpus", type=click.IntRange(min=1), help="GPUs per node (also the TP size here).")
@click.option("--vllm-version", help="Engine vLLM version (default: the engine's, from FILE).")
@click.option("--model", "model", help="Model id or directory (reads its config.json).")
@click.option("--kv-cache-dtype", help="KV-cache dtype the server will use.")
@click.option(
    "--nvcc/--no-nvcc", default=None, help="Whether nvcc exists (default: probe this host)."
)
@click.option("--wsl/--no-wsl", default=None, help="Running under WSL2 (default: probe this host).")
@json_option
def check_command(target: str | None, as_json: bool, **opts: Any) -> None:
    """Which workarounds apply to a deployment FILE or to the given facts."""
    from hangar.preflight.workarounds_check import check

    applied, chosen = check(target, **opts)
    if as_json:
        doc = {
            "applied": [_entry_json(w) for w in chosen],
            "overrides": [o.model_dump() for o in applied.overrides],
        }
        click.echo(json.dumps(doc, indent=2))
        return
    if not chosen:
        click.echo("no workaround applies")
    for w in chosen:
        settings = " ".join([*(f"{k}={v}" for k, v in w.env.items()), *w.args])
        click.echo(f"{w.id}: {settings}\n    {w.upstream[0]}")
    for o in applied.overrides:
        click.echo(
            f"override: your {o.kind} {o.user_value} replaces {o.workaround}'s {o.workaround_value}"
        )


@workarounds.command("review")
@click.option("--vllm-version", help="Compare against this vLLM version (default: every engine's).")
@json_option
def review_command(vllm_version: str | None, as_json: bool) -> None:
    """Entries whose removal condition may now hold (the engine is past the fixing version)."""
    from hangar.preflight.workarounds_check import review

    rows = review(vllm_version)
    if as_json:
        click.echo(
            json.dumps(
                [
                    {"id": w.id, "vllm_version": v, "remove_when": w.remove_when.note}
                    for w, v in rows
                ],
                indent=2,
            )
        )
        return
    if not rows:
        click.echo("every workaround is still needed by the versions checked")
    for w, version in rows:
        click.echo(f"{w.id}: vLLM {version} >= {w.remove_when.vllm_fixed_in}; {w.remove_when.note}")
