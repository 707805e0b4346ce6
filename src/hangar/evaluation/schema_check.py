"""A small JSON-schema validator for the schemas Hangar itself sends.

Covers ``type``, ``properties``, ``required``, ``additionalProperties: false``,
``enum``, ``items``, ``minimum``/``maximum``: enough for the tool and
structured-output schemas in this package, without a jsonschema dependency.
"""

from __future__ import annotations

from typing import Any

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}


def schema_errors(value: Any, schema: dict[str, Any], path: str = "$") -> list[str]:
    """Every way ``value`` breaks ``schema``, as ``path: reason`` strings."""
    expected = schema.get("type")
    if expected and not _is_type(value, expected):
        return [f"{path}: expected {expected}, got {type(value).__name__}"]
    errors = _enum_errors(value, schema, path) + _range_errors(value, schema, path)
    if isinstance(value, dict):
        errors += _object_errors(value, schema, path)
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            errors += schema_errors(item, schema["items"], f"{path}[{i}]")
    return errors


def _is_type(value: Any, expected: str) -> bool:
    if isinstance(value, bool) and expected in ("integer", "number"):
        return False  # JSON booleans are not numbers
    return isinstance(value, _TYPES.get(expected, (object,)))


def _enum_errors(value: Any, schema: dict[str, Any], path: str) -> list[str]:
    if "enum" in schema and value not in schema["enum"]:
        return [f"{path}: {value!r} not in {schema['enum']}"]
    return []


def _range_errors(value: Any, schema: dict[str, Any], path: str) -> list[str]:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return []
    if "minimum" in schema and value < schema["minimum"]:
        return [f"{path}: {value} < minimum {schema['minimum']}"]
    if "maximum" in schema and value > schema["maximum"]:
        return [f"{path}: {value} > maximum {schema['maximum']}"]
    return []


def _object_errors(value: dict[str, Any], schema: dict[str, Any], path: str) -> list[str]:
    properties: dict[str, Any] = schema.get("properties", {})
    errors = [f"{path}: missing '{key}'" for key in schema.get("required", []) if key not in value]
    if schema.get("additionalProperties") is False:
        errors += [f"{path}: unexpected '{key}'" for key in value if key not in properties]
    for key, sub in properties.items():
        if key in value:
            errors += schema_errors(value[key], sub, f"{path}.{key}")
    return errors
