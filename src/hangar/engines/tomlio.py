"""Read TOML with tomllib/tomli; write the registry's small schema ourselves.

The writer covers exactly what the engine registry stores (strings, booleans,
integers, lists of strings, nested tables and arrays of tables), so Hangar
needs no TOML-writing dependency.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hangar.errors import InputError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib


def read_toml(path: Path) -> dict[str, Any]:
    """Parse ``path``; a syntax error, a binary file or an unreadable path names the file."""
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(
            f"invalid TOML: {exc}", source=str(path), hint=f"fix or delete {path}"
        ) from exc
    except UnicodeDecodeError as exc:
        raise InputError(
            f"not a text file (byte {exc.start} is not UTF-8)",
            source=str(path),
            hint=f"fix or delete {path}",
        ) from exc
    except OSError as exc:
        raise InputError(
            f"cannot read: {exc.strerror}", source=str(path), hint=f"fix or delete {path}"
        ) from exc


def _key(name: str) -> str:
    bare = name and all(ch.isalnum() or ch in "-_" for ch in name)
    return name if bare else json.dumps(name)


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        # JSON string escapes are a subset of TOML basic-string escapes.
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_scalar(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def _is_table_array(value: Any) -> bool:
    return (
        isinstance(value, (list, tuple))
        and bool(value)
        and all(isinstance(v, Mapping) for v in value)
    )


def _emit(table: Mapping[str, Any], path: Sequence[str], out: list[str]) -> None:
    scalars = [
        (k, v)
        for k, v in table.items()
        if v is not None and not isinstance(v, Mapping) and not _is_table_array(v)
    ]
    for key, value in scalars:
        out.append(f"{_key(key)} = {_scalar(value)}")
    for key, value in table.items():
        if isinstance(value, Mapping):
            sub = [*path, key]
            out.append(f"\n[{'.'.join(_key(p) for p in sub)}]")
            _emit(value, sub, out)
    for key, value in table.items():
        if _is_table_array(value):
            for item in value:
                sub = [*path, key]
                out.append(f"\n[[{'.'.join(_key(p) for p in sub)}]]")
                _emit(item, sub, out)


def dumps(data: Mapping[str, Any]) -> str:
    """Serialize ``data`` (None values are left out) as TOML text."""
    out: list[str] = []
    _emit(data, [], out)
    return "\n".join(out).lstrip("\n") + "\n"
