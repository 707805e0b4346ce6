"""Versioned vLLM tables (planning/data/tables.yaml), loaded once and validated."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from typing import Any

import yaml

from hangar.errors import DataError
from hangar.planning.versions import VllmVersion, in_range

NAME = "planning/data/tables.yaml"
REQUIRED = ("fp16_refused", "kv_cache_dtypes", "no_pp_archs")


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise DataError(f"{NAME}: {where}: must be a list of non-empty strings")
    return tuple(value)


def _check_table(name: str, table: Any) -> None:
    if not isinstance(table, dict) or not str(table.get("source", "")).strip():
        raise DataError(f"{NAME}: table '{name}': needs a mapping with a 'source'")
    _strings(table.get("default"), f"table '{name}' key 'default'")
    for i, rng in enumerate(table.get("ranges") or []):
        where = f"table '{name}' ranges[{i}]"
        if not isinstance(rng, dict) or not isinstance(rng.get("versions"), str):
            raise DataError(f"{NAME}: {where}: needs 'versions' and 'values'")
        in_range(VllmVersion(0, 33, 0), rng["versions"])  # a bad range fails here
        _strings(rng.get("values"), f"{where} key 'values'")


def parse_tables(data: Any) -> dict[str, Any]:
    if not isinstance(data, dict) or data.get("schema_version") != 1:
        raise DataError(f"{NAME}: schema_version must be 1")
    tables = data.get("tables")
    if not isinstance(tables, dict):
        raise DataError(f"{NAME}: key 'tables' must be a mapping")
    for name in REQUIRED:
        if name not in tables:
            raise DataError(f"{NAME}: table '{name}' is missing")
    for name, table in tables.items():
        _check_table(name, table)
    return tables


@lru_cache(maxsize=1)
def _tables() -> dict[str, Any]:
    text = resources.files("hangar.planning.data").joinpath("tables.yaml").read_text()
    return parse_tables(yaml.safe_load(text))


@lru_cache(maxsize=256)
def table(name: str, version: tuple[int, int, int]) -> tuple[str, ...]:
    """The values of table ``name`` for this vLLM version."""
    entry = _tables()[name]
    for rng in entry.get("ranges") or []:
        if in_range(version, rng["versions"]):
            return tuple(rng["values"])
    return tuple(entry["default"])
