"""Reading a user's JSON file (config.json, hf_quant_config.json): one clear line when it
cannot be read or parsed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hangar.errors import InputError


def load_config_file(path: Path) -> dict[str, Any]:
    """Read a JSON file; malformed content becomes one InputError line naming the file."""
    import json

    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(
            f"cannot read: {exc.strerror}", source=str(path), hint=read_fix(path, exc)
        ) from exc
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        where = (
            f" (line {exc.lineno}, column {exc.colno})"
            if isinstance(exc, json.JSONDecodeError)
            else ""
        )
        raise InputError(
            f"not valid JSON{where}: {exc.msg if isinstance(exc, json.JSONDecodeError) else 'not UTF-8'}",
            source=str(path),
            hint="re-download the file or fix the JSON syntax",
        ) from exc
    if not isinstance(data, dict):
        raise InputError(
            f"top level must be a JSON object, not a {_json_kind(data)}",
            source=str(path),
            hint="point Hangar at the model's Hugging Face config.json (it starts with {)",
        )
    return data


def _json_kind(value: Any) -> str:
    names = {list: "list", str: "string", bool: "boolean", int: "number", float: "number"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def read_fix(path: Path, exc: OSError) -> str:
    """The fix for why ``path`` could not be read, by errno (shared by every reader of a
    user's file: config.json here, hangar.toml in deploy/io.py)."""
    import errno
    import shlex

    shown = shlex.quote(str(path))
    if exc.errno in (errno.EACCES, errno.EPERM):
        return f"chmod u+r {shown}   (or run as the file's owner)"
    if exc.errno == errno.EISDIR:
        return f"{shown} is a directory: pass the file itself, or the directory that holds it"
    return f"check that {shown} exists"
