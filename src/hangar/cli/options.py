"""Options shared by several commands, defined once.

The deployment parameters' flags come from the one table (hangar.deploy.params):
``param_options("plan" | "init" | "deploy")`` adds every flag a command takes, and
``given_values()`` returns the ones the user actually typed (click's ParameterSource), so
a flag not given never overrides a file value.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any, TypeVar, overload

import click
from click.core import ParameterSource

from hangar.deploy.params import PARAMS, Command, Param, params_for

F = TypeVar("F", bound=Callable[..., Any])

_HUMAN_INT = re.compile(r"^(\d+(?:\.\d+)?)([kKmMgG]?)$")
_UNITS = {"": 1, "k": 1000, "K": 1024, "m": 10**6, "M": 2**20, "g": 10**9, "G": 2**30}


class HumanInt(click.ParamType):  # type: ignore[type-arg]
    """vLLM's human_readable_int: 1k = 1000, 1K = 1024, 25.6k; -1 / auto mean auto-fit
    where the command can auto-fit (plan), else they are refused."""

    name = "int"

    def __init__(self, auto: bool = True) -> None:
        self.auto = auto

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> int:
        text = str(value).strip()
        if text in ("-1", "auto"):
            if not self.auto:
                self.fail("auto-fit (-1) is for hangar plan; give a length like 32k", param, ctx)
            return -1
        match = _HUMAN_INT.match(text)
        if not match:
            self.fail(f"{text!r} is not a length like 32768, 32k or 128K", param, ctx)
        number, unit = match.groups()
        result = int(float(number) * _UNITS[unit])
        if result <= 0:
            self.fail("must be a positive integer", param, ctx)
        return result


class FiniteFloat(click.ParamType):  # type: ignore[type-arg]
    """A float that is a number: nan/inf are usage errors. Without ``fraction``, values out
    of range are for the plan's rules to explain (vLLM's CacheConfig message); with it, the
    value must be in (0, 1] as the deployment schema requires."""

    name = "float"

    def __init__(self, fraction: bool = False) -> None:
        self.fraction = fraction

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> float:
        try:
            number = float(str(value))
        except ValueError:
            self.fail(f"{value!r} is not a number", param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        if self.fraction and not 0 < number <= 1:
            self.fail(f"{number} is not a fraction in (0, 1], e.g. 0.9", param, ctx)
        return number


_SIZE = re.compile(r"^(\d+(?:\.\d+)?)\s*(GiB|GB|MiB|MB|G|M)?$", re.IGNORECASE)
_SIZE_UNITS = {"gib": 2**30, "g": 2**30, "gb": 10**9, "mib": 2**20, "m": 2**20, "mb": 10**6}


class MemorySize(click.ParamType):  # type: ignore[type-arg]
    """80GiB, 81559MiB, 80G (GiB), 85.5GB (10^9); a bare number is GiB."""

    name = "size"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> int:
        match = _SIZE.match(str(value).strip())
        if not match:
            self.fail(f"{value!r} is not a size like 80GiB or 81559MiB", param, ctx)
        number, unit = match.groups()
        result = int(float(number) * _SIZE_UNITS[(unit or "gib").lower()])
        if result <= 0:
            self.fail("must be more than 0", param, ctx)
        return result


class Capability(click.ParamType):  # type: ignore[type-arg]
    """A CUDA compute capability such as 9.0 or 12.1."""

    name = "major.minor"

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> tuple[int, int]:
        match = re.match(r"^(\d{1,2})\.(\d)$", str(value).strip())
        if not match:
            self.fail(f"{value!r} is not a capability like 9.0 or 8.6", param, ctx)
        return int(match.group(1)), int(match.group(2))


class JsonObject(click.ParamType):  # type: ignore[type-arg]
    """A JSON object on the command line (vLLM's --hf-overrides / --rope-scaling)."""

    name = "json"

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> dict[str, object]:
        if isinstance(value, dict):
            return value
        try:
            parsed = json.loads(str(value))
        except json.JSONDecodeError as exc:
            self.fail(f"not valid JSON ({exc.msg} at column {exc.colno})", param, ctx)
        if not isinstance(parsed, dict):
            self.fail("must be a JSON object, e.g. '{\"max_position_embeddings\": 131072}'", param, ctx)
        return parsed


def _click_type(p: Param, command: Command) -> click.ParamType | None:  # type: ignore[type-arg]
    """One click type per kind. Plan alone may auto-fit the length (-1) and takes any
    finite memory fraction (its rules explain vLLM's refusal); a deployment's must fit."""
    if p.kind == "choice":
        return click.Choice(p.choices)
    types: dict[str, click.ParamType] = {  # type: ignore[type-arg]
        "count": click.IntRange(min=1),
        "port": click.IntRange(1, 65535),
        "length": HumanInt(auto=command == "plan"),
        "fraction": FiniteFloat(fraction=command != "plan"),
    }
    return types.get(p.kind)


def _decls(p: Param) -> list[str]:
    """Click declarations: each spelling (--ep/--no-ep for a switch), then the dest."""
    if p.kind == "switch":
        return [f"{flag}/--no-{flag[2:]}" for flag in p.flags] + [p.name]
    return [*p.flags, p.name]


def param_option(p: Param, command: Command) -> Callable[[F], F]:
    """The click option of ``p`` on ``command``: no default, so "not given" is None."""
    return click.option(
        *_decls(p), type=_click_type(p, command), default=None, help=p.help_for(command)
    )


def param_options(command: Command, only: tuple[str, ...] | None = None) -> Callable[[F], F]:
    """Every flag ``command`` takes from the table (or the ``only`` ones), in table order."""
    chosen = [p for p in params_for(command) if only is None or p.name in only]

    def apply(func: F) -> F:
        for p in reversed(chosen):
            func = param_option(p, command)(func)
        if only is None:  # the whole table's share: tests/test_params_table.py walks it
            func.__hangar_params__ = command  # type: ignore[attr-defined]
        return func

    return apply


# ParameterSource values that mean the user typed it (or exported it for click).
_GIVEN = (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT, ParameterSource.PROMPT)


def given_values(ctx: click.Context | None = None) -> dict[str, Any]:
    """The table's parameters the user gave on this command line, by name."""
    ctx = ctx or click.get_current_context()
    return {
        p.name: ctx.params[p.name]
        for p in PARAMS
        if ctx.params.get(p.name) is not None and ctx.get_parameter_source(p.name) in _GIVEN
    }


_JSON_HELP = "Machine-readable output."


@overload
def json_option(func: F, /) -> F: ...
@overload
def json_option(*, help: str = _JSON_HELP) -> Callable[[F], F]: ...
def json_option(func: F | None = None, /, *, help: str = _JSON_HELP) -> F | Callable[[F], F]:
    """``--json`` (dest ``as_json``), as ``@json_option`` or ``@json_option(help=...)``."""
    decorator: Callable[[F], F] = click.option("--json", "as_json", is_flag=True, help=help)
    return decorator if func is None else decorator(func)
