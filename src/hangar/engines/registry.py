"""The engine registry: ``<config>/engines.toml`` plus an optional ``./hangar-engines.toml``.

The user file is the single switch point: a managed engine's active venv is
whatever its entry names, and every change is one atomic rewrite of that file
(``hangar.paths.atomic_write_text``), so a kill leaves either the old or the new
entry, never a mix.

The project-local file comes with whatever directory the user stands in (a cloned
repository), so it is not trusted like the user's own file:

- it is read statically (TOML only); loading, listing and ``support`` over every
  engine never run an interpreter it names;
- it may only add names: on a clash the user's registered engine is used and a
  warning names the ignored project entry (a clone cannot redirect ``stable``);
- an interpreter it names runs only when that engine is asked for by name (a
  deployment's ``engine =``, ``engines inspect NAME``, ``support --engine NAME``),
  and then with a warning on stderr naming the file.
"""

from __future__ import annotations

import fcntl
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from hangar import paths
from hangar.engines.errors import EngineNotFound, ProjectEngineReadOnly
from hangar.engines.model import Engine, HistoryEntry
from hangar.engines.tomlio import dumps, read_toml
from hangar.errors import InputError
from hangar.text import clip, printable

SCHEMA_VERSION = 1
PROJECT_FILE = "hangar-engines.toml"


def registry_path() -> Path:
    return paths.config_dir() / "engines.toml"


def project_path(cwd: Path | None = None) -> Path:
    return (cwd or Path.cwd()) / PROJECT_FILE


def utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class Registry:
    """Engines by name plus the evaluation history; a value loaded from disk."""

    def __init__(
        self,
        engines: dict[str, Engine],
        history: list[HistoryEntry],
        project: dict[str, Engine] | None = None,
    ) -> None:
        self.engines = engines
        self.history = history
        self.project = project or {}

    def get(self, name: str) -> Engine:
        """The engine ``name``; the user's entry wins over a project entry of that name."""
        engine = self.engines.get(name)
        if engine is not None:
            return engine
        engine = self.project.get(name)
        if engine is None:
            raise EngineNotFound(name, sorted(self.all()))
        if runs_interpreter(engine):
            _warn(
                f"engine '{name}' is defined by {engine.defined_in or PROJECT_FILE}, not by your "
                f"registry: its interpreter {engine.python} will run"
            )
        return engine

    def all(self) -> dict[str, Engine]:
        """Every engine by name: the project's additions, then the user's (which win)."""
        return {**self.project, **self.engines}

    def is_project(self, name: str) -> bool:
        """True when ``name`` resolves to the project file's entry (not shadowed by the user's)."""
        return name in self.project and name not in self.engines

    def shadowed(self) -> list[str]:
        """Project entries ignored because the user's registry has the same name."""
        return sorted(set(self.project) & set(self.engines))

    def writable(self, name: str) -> Engine:
        """The user-file entry ``name``; refuses entries defined by the project file."""
        if self.is_project(name):
            raise ProjectEngineReadOnly(name, self.project[name].defined_in or PROJECT_FILE)
        if name not in self.engines:
            raise EngineNotFound(name, sorted(self.all()))
        return self.engines[name]

    def history_for(self, name: str) -> list[HistoryEntry]:
        return [h for h in self.history if h.engine == name]

    def to_toml(self, previous: str | None = None) -> str:
        """The user file's text; over ``previous`` the user's comments and key order stay."""
        engines = {
            n: e.model_dump(mode="json", exclude_none=True) for n, e in sorted(self.engines.items())
        }
        history = [h.model_dump(mode="json", exclude_none=True) for h in self.history]
        data = {"schema_version": SCHEMA_VERSION, "engines": engines, "history": history}
        return dumps(data, previous)


def runs_interpreter(engine: Engine) -> bool:
    """Inspecting or preflighting this engine starts its interpreter (images are only read)."""
    return engine.kind != "image" and bool(engine.python)


_warned: set[str] = set()


def _warn(message: str) -> None:
    """One stderr line per message and process: the project file is outside text."""
    if message in _warned:
        return
    _warned.add(message)
    print(f"warning: {printable(clip(message), one_line=True)}", file=sys.stderr)


def _shape_error(source: Path, field: str, expected: str) -> InputError:
    return InputError(
        f"must be {expected}", source=str(source), field=field, hint=f"fix or delete {source}"
    )


def _engine_tables(data: dict[str, Any], source: Path) -> dict[str, dict[str, Any]]:
    """``[engines.NAME]`` tables, checked for shape before pydantic sees them."""
    tables = data.get("engines") or {}
    if not isinstance(tables, dict):
        raise _shape_error(source, "engines", "a table of [engines.NAME] entries")
    for name, raw in tables.items():
        if not isinstance(raw, dict):
            raise _shape_error(source, f"engines.{name}", "a table ([engines.NAME])")
        if raw.get("name", name) != name:
            # The key is what deployments and every command look the engine up by.
            raise InputError(
                f"name {raw['name']!r} differs from the table key {name!r}",
                source=str(source),
                field=f"engines.{name}.name",
                hint=f"make them equal or drop the name line in {source}",
            )
    return tables


def _engines_from(data: dict[str, Any], source: Path) -> dict[str, Engine]:
    out: dict[str, Engine] = {}
    for name, raw in _engine_tables(data, source).items():
        try:
            engine = Engine.model_validate({**raw, "name": name})
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(str(p) for p in (name, *err["loc"]))
            raise InputError(
                err["msg"].removeprefix("Value error, "),
                source=str(source),
                field=f"engines.{field}",
                hint=f"fix the entry in {source}",
            ) from exc
        out[name] = engine.model_copy(update={"defined_in": str(source)})
    return out


def _check_schema(data: dict[str, Any], source: Path) -> None:
    version = data.get("schema_version", SCHEMA_VERSION)
    if version != SCHEMA_VERSION:
        raise InputError(
            f"schema_version {version!r} is not supported (expected {SCHEMA_VERSION})",
            source=str(source),
            field="schema_version",
            hint="upgrade Hangar or restore the file from a backup",
        )


def _history_from(data: dict[str, Any], source: Path) -> list[HistoryEntry]:
    items = data.get("history") or []
    if not isinstance(items, list):
        raise _shape_error(source, "history", "an array of [[history]] tables")
    try:
        return [HistoryEntry.model_validate(item) for item in items]
    except ValidationError as exc:
        raise InputError(
            str(exc.errors()[0]["msg"]),
            source=str(source),
            field="history",
            hint=f"fix or remove the [[history]] entry in {source}",
        ) from exc


def load(cwd: Path | None = None) -> Registry:
    """Read the user registry and the project file (both optional)."""
    user = registry_path()
    data = read_toml(user) if user.exists() else {}
    _check_schema(data, user)
    project_file = project_path(cwd)
    project: dict[str, Engine] = {}
    if project_file.exists():
        pdata = read_toml(project_file)
        _check_schema(pdata, project_file)
        project = _engines_from(pdata, project_file)
    registry = Registry(_engines_from(data, user), _history_from(data, user), project)
    for name in registry.shadowed():
        _warn(
            f"{project_file} defines engine '{name}' too; your registered '{name}' is used "
            "(rename the project's entry to use it)"
        )
    return registry


def save(registry: Registry) -> None:
    """Atomically replace the user registry: this write is the switch point."""
    path = registry_path()
    previous = path.read_text(encoding="utf-8") if path.is_file() else None  # load() read it
    paths.atomic_write_text(path, registry.to_toml(previous))


_held = {"depth": 0}


@contextmanager
def locked() -> Iterator[None]:
    """Serialize registry writers across processes; the kernel drops the lock on a kill.

    Re-entrant within one process (flock on a second descriptor would block on ourselves).
    """
    if _held["depth"]:
        _held["depth"] += 1
        try:
            yield
        finally:
            _held["depth"] -= 1
        return
    lock_file = paths.config_dir() / ".engines.lock"
    try:
        lock_file.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise InputError(
            f"cannot lock the engine registry: {exc.strerror}",
            source=str(lock_file),
            hint="set HANGAR_HOME=DIR to a writable directory (the config dir is read-only)",
        ) from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        _held["depth"] = 1
        yield
    finally:
        _held["depth"] = 0
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def update(mutate: Callable[[Registry], None], cwd: Path | None = None) -> Registry:
    """Load under the lock, apply ``mutate(registry)`` and save; returns the new registry."""
    with locked():
        registry = load(cwd)
        mutate(registry)
        save(registry)
        return registry


def record(entry: HistoryEntry) -> None:
    """Append one history entry (its own atomic write)."""
    update(lambda reg: reg.history.append(entry))
