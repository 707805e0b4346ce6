"""Read TOML with tomllib/tomli; write it with tomlkit, keeping what the user wrote.

Reading stays on the standard library's parser (the errors name the file and line);
writing goes through the one TOML writer, ``hangar.deploy.io.toml_text``.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hangar.deploy.io import toml_text
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


def dumps(data: Mapping[str, Any], previous: str | None = None) -> str:
    """``data`` as TOML (None values left out), written by tomlkit; over ``previous`` (the
    file's current text) the user's comments and key order are kept (deploy/io.py toml_text,
    the one TOML writer)."""
    return toml_text(data, previous)
