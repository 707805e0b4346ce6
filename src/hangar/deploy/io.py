"""Read and write ``hangar.toml``: version key first, errors name the file and the field."""

from __future__ import annotations

import sys
from collections.abc import Mapping, MutableMapping
from pathlib import Path
from typing import Any

import tomlkit
from pydantic import ValidationError
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import AoT, InlineTable, Table

from hangar.deploy.schema import SCHEMA_VERSION, TARGET_KINDS, Deployment
from hangar.errors import InputError
from hangar.paths import atomic_write_text

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

DEFAULT_FILE = "hangar.toml"


def load_deployment(path: Path) -> Deployment:
    """Parse and validate a deployment file."""
    source = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", source=source, hint="hangar init") from exc
    except UnicodeDecodeError as exc:
        raise InputError(
            f"not a text file (byte {exc.start} is not UTF-8)",
            source=source,
            hint="point at the hangar.toml that hangar init wrote",
        ) from exc
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML: {exc}", source=source) from exc
    return deployment_from_data(data, source=source)


def deployment_from_data(data: Mapping[str, Any], *, source: str = "deployment") -> Deployment:
    version = data.get("version", SCHEMA_VERSION)
    if version != SCHEMA_VERSION:
        raise InputError(
            f"unsupported version {version!r} (this Hangar reads version {SCHEMA_VERSION})",
            source=source,
            field="version",
            hint="upgrade Hangar or rewrite the file with hangar init",
        )
    try:
        return Deployment.model_validate(dict(data))
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(_field_path(first["loc"])) or None
        raise InputError(
            validation_message(first["msg"]), source=source, field=field, hint="see docs/deploy.md"
        ) from exc


def _field_path(loc: tuple[Any, ...]) -> list[str]:
    """pydantic's location minus the union tag it inserts: target.slurm.slurm.x -> target.slurm.x."""
    parts = [str(p) for p in loc]
    if len(parts) > 2 and parts[0] == "target" and parts[1] in TARGET_KINDS:
        del parts[1]
    return parts


def validation_message(msg: str) -> str:
    """pydantic's text without its 'Value error, ' prefix (our validators word it fully)."""
    return msg.removeprefix("Value error, ")


def json_schema() -> dict[str, Any]:
    return Deployment.model_json_schema()


def write_deployment(deployment: Deployment, path: Path) -> None:
    """Write ``deployment`` to ``path`` atomically; over an existing file, its comments and
    key order are kept (``hangar init --force`` on a file the user edited)."""
    try:
        atomic_write_text(path, render_toml(deployment, _current_text(path)), mode=0o600)
    except OSError as exc:  # a read-only place, a directory in the way: nothing was written
        raise InputError(
            f"cannot write: {exc.strerror}", source=str(path), hint="choose another -o path"
        ) from exc


def _current_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None  # absent or unreadable: written as a new file


def render_toml(deployment: Deployment, previous: str | None = None) -> str:
    """TOML text for ``deployment``; over ``previous`` (the file it replaces) the user's
    comments, key order and formatting survive (``toml_text``)."""
    return toml_text(deployment.model_dump(mode="json", exclude_none=True), previous)


def toml_text(data: Mapping[str, Any], previous: str | None = None) -> str:
    """``data`` (None values left out) as TOML, written by tomlkit.

    With ``previous`` (the current text of the file being replaced) the document is edited
    in place: keys no longer in ``data`` go, changed values are rewritten where they stand,
    new keys go at the end of their table, and everything else (comments, blank lines, key
    order, quoting) stays as the user wrote it. Unparsable ``previous`` text is replaced.
    """
    doc = _document(previous)
    _sync(doc, data)
    return tomlkit.dumps(doc).rstrip("\n") + "\n"


def _document(previous: str | None) -> tomlkit.TOMLDocument:
    if previous:
        try:
            return tomlkit.parse(previous)
        except TOMLKitError:
            pass  # the file was broken: it is rewritten whole, as a new one
    return tomlkit.document()


def _sync(container: MutableMapping[str, Any], data: Mapping[str, Any]) -> None:
    wanted = {k: v for k, v in data.items() if v is not None}
    for key in [k for k in container if k not in wanted]:
        del container[key]
    for key, value in wanted.items():
        current = container.get(key)
        if isinstance(value, Mapping) and isinstance(current, (Table, InlineTable)):
            _sync(current, value)
        elif _is_table_list(value) and isinstance(current, AoT):
            _sync_tables(current, value)
        elif current is None or not _same(current, value):
            _put(container, key, _item(value))


def _put(container: MutableMapping[str, Any], key: str, item: Any) -> None:
    """A value changed in place; a table that replaces a plain value goes to the end (where
    a new table is written), not between the plain keys."""
    if key in container and isinstance(item, (Table, AoT)):
        del container[key]
    container[key] = item


def _sync_tables(tables: AoT, items: list[Mapping[str, Any]]) -> None:
    """An array of tables, entry by entry (an appended entry leaves the others untouched)."""
    while len(tables) > len(items):
        del tables[len(tables) - 1]
    for i, item in enumerate(items):
        if i < len(tables):
            _sync(tables[i], item)
        else:
            tables.append(_item(item, spaced=False))  # tomlkit spaces array entries


def _item(value: Any, *, spaced: bool = True) -> Any:
    if isinstance(value, Mapping):
        table = tomlkit.table()
        _sync(table, value)
        if spaced and not any(isinstance(v, Mapping) for v in value.values()):
            table.add(tomlkit.nl())  # a blank line before whatever follows the new table
        return table
    if _is_table_list(value):
        return _aot(value)
    return tomlkit.item(value)


def _aot(items: list[Mapping[str, Any]]) -> AoT:
    tables = tomlkit.aot()
    for item in items:
        tables.append(_item(item, spaced=False))
    return tables


def _is_table_list(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, Mapping) for v in value)


def _same(current: Any, value: Any) -> bool:
    """Unchanged, type included (a file's ``1`` is not the boolean ``true``)."""
    plain = current.unwrap() if hasattr(current, "unwrap") else current
    return type(plain) is type(value) and bool(plain == value)
