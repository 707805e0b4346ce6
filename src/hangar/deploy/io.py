"""Read and write ``hangar.toml``: version key first, errors name the file and the field."""

from __future__ import annotations

import errno
import re
import sys
from collections.abc import Mapping, MutableMapping
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import tomlkit
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import AoT, InlineTable, Table

from hangar.deploy.schema import SCHEMA_VERSION, TARGET_KINDS, Deployment
from hangar.errors import BadValue, InputError
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
        raise InputError(
            f"cannot read: {exc.strerror}", source=source, hint=_read_fix(path, exc)
        ) from exc
    except UnicodeDecodeError as exc:
        raise InputError(
            f"not a text file (byte {exc.start} is not UTF-8)",
            source=source,
            hint="point at the hangar.toml that hangar init wrote",
        ) from exc
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(
            f"not valid TOML: {exc}",
            source=source,
            hint="fix the line shown: every key needs a value (port = 8000), strings in "
            'quotes (name = "x"), tables as [section]',
        ) from exc
    return deployment_from_data(data, source=source)


def _read_fix(path: Path, exc: OSError) -> str:
    """The fix for why ``path`` could not be read: a missing file is written by init."""
    if exc.errno == errno.ENOENT:
        return "hangar init   (writes ./hangar.toml)"
    from hangar.models.config_file import read_fix

    return read_fix(path, exc)


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
        parts = _field_path(first["loc"])
        # values from the command line are a usage error (exit 2), a file's an input error
        error = BadValue if source.endswith("command-line flags") or source.startswith("--") else InputError
        raise error(
            validation_message(first["msg"]),
            source=source,
            field=".".join(parts) or None,
            hint=field_fix(first["loc"], first["type"]),
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


_DOCS = "see docs/deploy.md"


def field_fix(loc: tuple[Any, ...], error_type: str = "") -> str:
    """The fix for a bad value at pydantic's ``loc``: the field's correct form, read from
    the schema (its default, an example from its description, or its type), as TOML under
    its table, so ``target.local.port`` gives ``in [target.local]: port = 8000``."""
    names = [p for p in _field_path(loc) if not p.isdigit()]  # list indexes: the list's field
    if not names:
        return _DOCS
    table = ".".join(names[:-1])
    if error_type == "extra_forbidden":
        where = f"[{table}]" if table else "the top level"
        return f"remove '{names[-1]}' or fix its spelling: it is not a field of {where} ({_DOCS})"
    found = _field_info(loc)
    if found is None:
        return _DOCS
    if isinstance(found, FieldInfo) and _models_in(found.annotation):
        return _table_form(".".join(names), _models_in(found.annotation))
    form = f"{names[-1]} = {_example(found) if isinstance(found, FieldInfo) else found}"
    return f"in [{table}]: {form}" if table else form


def _table_form(table: str, models: list[type[BaseModel]]) -> str:
    """A table's form: its kind choices for a tagged union ([target]), else its first
    required key ([model] with id = ...)."""
    kinds = [_tag(m) for m in models]
    if len(models) > 1 and all(kinds):
        return f"[{table}] with kind = {' or '.join(_toml(k) for k in kinds)}"
    required = [(n, f) for n, f in models[0].model_fields.items() if f.is_required()]
    if not required:
        return f"a [{table}] table ({_DOCS})"
    name, info = required[0]
    return f"[{table}] with {name} = {_example(info)}"


def _field_info(loc: tuple[Any, ...]) -> FieldInfo | str | None:
    """The schema field at pydantic's ``loc``; for a key of a table of strings ([env]) the
    form of its value. A union tag in ``loc`` (target.slurm.slurm) picks the union member."""
    models: list[type[BaseModel]] = [Deployment]
    info: FieldInfo | None = None
    for part in (str(p) for p in loc):
        tagged = [m for m in models if _tag(m) == part]
        if len(models) > 1 and tagged:
            models = tagged
            continue
        owner = next((m for m in models if part in m.model_fields), None)
        if owner is not None:
            info = owner.model_fields[part]
            models = _models_in(info.annotation)
        elif info is not None and get_origin(_plain(info.annotation)) is dict:
            return '"..."'
        elif not part.isdigit():
            return None
    return info


def _tag(model: type[BaseModel]) -> object:
    kind = model.model_fields.get("kind")
    return None if kind is None else kind.default


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The models an annotation can hold (through Optional, unions and Annotated)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in get_args(annotation) for m in _models_in(arg)]


_EG = re.compile(r"\be\.g\. ([^,;)\s]+)")


def _example(info: FieldInfo) -> str:
    """One valid value as TOML: the default, else an e.g. of the description, else one by
    the type (a Literal lists its choices)."""
    kind = _plain(info.annotation)
    choices = get_args(kind) if get_origin(kind) is Literal else ()
    if choices:
        return " or ".join(_toml(c) for c in choices)
    default = None if info.is_required() else info.get_default(call_default_factory=True)
    if default is not None and not isinstance(default, BaseModel) and default != ():
        return _toml(default)
    found = _EG.search(info.description or "")
    if found:
        text = found.group(1).strip("'\"`")
        return text if kind in (int, float) and _number(text) else _toml(text)
    return _BY_TYPE.get(kind, '"..."') if isinstance(kind, type) else _by_origin(kind)


def _plain(annotation: Any) -> Any:
    """The annotation without Optional / Annotated wrappers."""
    while True:
        if get_origin(annotation) is Annotated:
            annotation = get_args(annotation)[0]
            continue
        args = [a for a in get_args(annotation) if a is not type(None)]
        if get_origin(annotation) in (Union, UnionType) and len(args) == 1:
            annotation = args[0]
            continue
        return annotation


def _by_origin(kind: Any) -> str:
    origin = get_origin(kind)
    if origin in (tuple, list):
        return '["..."]'
    if origin is dict:
        return '{ NAME = "value" }'
    return '"..."'


_BY_TYPE = {int: "1", float: "0.9", bool: "true", str: '"..."'}


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _toml(value: Any) -> str:
    if isinstance(value, tuple):
        value = list(value)
    return str(tomlkit.item(value).as_string())


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
