"""Read and write ``hangar.toml``: version key first, errors name the file and the field."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

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
    try:
        atomic_write_text(path, render_toml(deployment), mode=0o600)
    except OSError as exc:  # a read-only place, a directory in the way: nothing was written
        raise InputError(
            f"cannot write: {exc.strerror}", source=str(path), hint="choose another -o path"
        ) from exc


def render_toml(deployment: Deployment) -> str:
    """TOML text for ``deployment``: top-level scalars first, then one table per section."""
    data = deployment.model_dump(mode="json", exclude_none=True)
    lines: list[str] = []
    scalars = {k: v for k, v in data.items() if not isinstance(v, dict)}
    lines.extend(f"{k} = {_value(v)}" for k, v in scalars.items())
    for key, value in data.items():
        if isinstance(value, dict):
            _table(lines, key, value)
    return "\n".join(lines).strip() + "\n"


def _table(lines: list[str], name: str, table: dict[str, Any]) -> None:
    plain = {k: v for k, v in table.items() if not isinstance(v, dict)}
    nested = {k: v for k, v in table.items() if isinstance(v, dict)}
    if plain or not nested:
        lines.append("")
        lines.append(f"[{name}]")
        lines.extend(f"{_key(k)} = {_value(v)}" for k, v in plain.items())
    for key, value in nested.items():
        _table(lines, f"{name}.{key}", value)


def _key(key: str) -> str:
    return key if key.replace("_", "").replace("-", "").isalnum() else json.dumps(key)


def _value(value: Any) -> str:
    # JSON string escapes are valid TOML basic-string escapes.
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    raise TypeError(f"cannot render {type(value).__name__} as TOML")
