"""``hangar init``: write hangar.toml, asking with arrow-key prompts or taking flags.

Every question has a flag; with all of them given (or --no-input, or no terminal)
nothing is asked. The plan's recommended layout is proposed unless --tp is given.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import click

from hangar.cli.options import param_options
from hangar.cli.terminal import printable
from hangar.errors import BadValue


class InvalidLayout(BadValue):
    """The layout given to init is one vLLM refuses at startup (a usage error, exit 2)."""


def _interactive(no_input: bool) -> bool:
    return not no_input and sys.stdin.isatty() and sys.stdout.isatty()


def _ask_select(message: str, choices: list[str], default: str | None) -> str:
    try:
        import questionary
    except ImportError:  # plain prompt when the arrow-key prompts are not installed
        return str(click.prompt(f"{message} ({', '.join(choices)})", default=default))
    answer = questionary.select(message, choices=choices, default=default).ask()
    if answer is None:
        raise click.Abort()
    return str(answer)


def _ask_text(message: str, default: str | None = None) -> str:
    try:
        import questionary
    except ImportError:
        return str(click.prompt(message, default=default))
    answer = questionary.text(message, default=default or "").ask()
    if answer is None:
        raise click.Abort()
    return str(answer)


def _gpu_choices() -> tuple[list[str], str | None]:
    """Detected GPU kind first (if any), then the catalog; 'none' plans nothing."""
    from hangar.errors import HangarError
    from hangar.hardware import detect_local_gpus, from_nvml_name, list_gpus

    ids = [g.id for g in list_gpus()]
    try:
        first = detect_local_gpus()[0]
        detected = from_nvml_name(first.name, first.memory_total_bytes, first.compute_capability).id
    except HangarError:
        detected = None
    ordered = ([detected] if detected else []) + [i for i in ids if i != detected] + ["none"]
    return ordered, detected


def _engine_choices() -> list[str]:
    try:
        from hangar.engines import registry
    except ImportError:
        return []
    return sorted(registry.load().all())


def _ask_missing(values: dict[str, Any]) -> dict[str, Any]:
    if values["model"] is None:
        values["model"] = _ask_text("Model (Hugging Face id or local directory):")
    if values["gpu"] is None:
        choices, detected = _gpu_choices()
        picked = _ask_select("GPU kind:", choices, detected or "none")
        values["gpu"] = None if picked == "none" else picked
    if values["gpus"] is None and values["gpu"] is not None:
        values["gpus"] = int(_ask_text("GPUs per node:", "1"))
    if values["target"] is None:
        values["target"] = _ask_select("Target:", list(TARGET_CHOICES), "local")
    if values["target"] == "slurm":
        values = _ask_slurm(values)
    values = _ask_container(values)
    if values["engine"] is None:
        engines = _engine_choices()
        if engines:
            values["engine"] = _ask_select("Engine:", engines, engines[0])
        else:
            values["engine"] = _ask_text("Engine (name or /path/to/venv/bin/python):", "default")
    return values


# What `--runtime` may be per target: the container target runs one of three runtimes on
# this host; inside a Slurm job only apptainer and pyxis are implemented ("none": no
# container on the nodes).
TARGET_CHOICES = ("local", "slurm", "container")
RUNTIMES = {"container": ("podman", "docker", "apptainer"), "slurm": ("none", "apptainer", "pyxis")}
_IMAGE_PROMPT = {
    "apptainer": "Image (.sif path every node reads, or docker://REF):",
    "pyxis": "Image (enroot URI like nvcr.io#nvidia/vllm:TAG, or a .sqsh path):",
}


def _ask_container(values: dict[str, Any]) -> dict[str, Any]:
    choices = RUNTIMES.get(values["target"])
    if choices is None:
        return values
    if values["runtime"] is None:
        label = (
            "Container runtime:" if values["target"] == "container" else "Container on the nodes:"
        )
        values["runtime"] = _ask_select(label, list(choices), choices[0])
    if values["image"] is None and values["runtime"] != "none":
        prompt = _IMAGE_PROMPT.get(values["runtime"], "Image (empty: the engine's image):")
        values["image"] = _ask_text(prompt) or None
    return values


def with_container(d: Any, target: str, runtime: str | None, image: str | None) -> Any:
    """The deployment with the container answers in [target.container]; what this Hangar
    does not implement is refused (a usage error naming the flag)."""
    from hangar.deploy.io import deployment_from_data
    from hangar.errors import UsageError

    if runtime is None and image is None:
        return d
    allowed = RUNTIMES.get(target)
    if allowed is None:
        raise UsageError(
            f"--runtime/--image need --target container or slurm (not {target})",
            hint="hangar init --target container --runtime podman --image REF",
        )
    if runtime is not None and runtime not in allowed:
        raise UsageError(
            f"--runtime {runtime} is not implemented with --target {target} (it runs: "
            f"{', '.join(r for r in allowed if r != 'none')})",
            hint=f"hangar init --target {target} --runtime {allowed[-1]}",
        )
    data = d.model_dump(mode="json", exclude_none=True)
    if target == "slurm" and runtime in (None, "none"):
        if image is not None:
            raise UsageError("--image inside Slurm needs --runtime apptainer or pyxis")
        return d
    if target == "slurm" and image is None:
        raise UsageError(
            f"--runtime {runtime} inside Slurm needs --image (the nodes read it)",
            hint=f"hangar init --target slurm --runtime {runtime} --image /shared/images/vllm.sif",
        )
    section = data["target"].setdefault("container", {})
    section.update({k: v for k, v in (("runtime", runtime), ("image", image)) if v is not None})
    return deployment_from_data(data, source="hangar init")


def _partitions() -> tuple[list[str], str | None]:
    """Partitions from sinfo (default one marked '*'), when Slurm is installed here."""
    from hangar.errors import CommandFailed
    from hangar.proc import run

    try:
        out = run(["sinfo", "-h", "-o", "%P"], timeout=10).stdout
    except CommandFailed:
        return [], None
    names = [p.strip() for p in out.split() if p.strip()]
    default = next((p.rstrip("*") for p in names if p.endswith("*")), None)
    return sorted({p.rstrip("*") for p in names}), default


def _ask_slurm(values: dict[str, Any]) -> dict[str, Any]:
    if values["partition"] is None:
        choices, default = _partitions()
        values["partition"] = (
            _ask_select("Partition:", choices, default or choices[0])
            if choices
            else _ask_text("Partition (empty: the cluster's default):") or None
        )
    if values["account"] is None:
        values["account"] = _ask_text("Account (empty: your default):") or None
    if values["time"] is None:
        values["time"] = _ask_text("Time limit (e.g. 02:00:00; empty: the partition's):") or None
    if values["multinode"] is None and (values["nodes"] or 1) > 1:
        values["multinode"] = _ask_select("Multi-node mode:", ["mp", "ray"], "mp")
    return values


@click.command()
@param_options("init")
@click.option("--target", type=click.Choice(TARGET_CHOICES), help="Where it runs.")
@click.option(
    "--runtime",
    type=click.Choice(sorted({r for rs in RUNTIMES.values() for r in rs})),
    help="Container runtime: podman|docker|apptainer (--target container), "
    "apptainer|pyxis|none on the nodes (--target slurm).",
)
@click.option("--image", help="Container image: a reference, or a .sif/.sqsh path.")
@click.option("--partition", help="Slurm partition (default: asked, from sinfo).")
@click.option("--account", help="Slurm account.")
@click.option("--qos", help="Slurm QOS.")
@click.option("--time", "time", help="Slurm time limit, e.g. 02:00:00.")
@click.option("--gres-type", help="Typed GRES gpu:TYPE:N (omitted: --gpus-per-node=N).")
@click.option(
    "--multinode",
    type=click.Choice(["mp", "ray"]),
    help="How nodes form one engine: vLLM's --nnodes (mp) or a Ray cluster; needed with --nodes > 1.",
)
@click.option("--network-interface", help="NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME on the nodes.")
@click.option("--python", "python", help="The engine's interpreter as the compute nodes see it.")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("hangar.toml"),
    show_default=True,
)
@click.option("--force", is_flag=True, help="Overwrite an existing file.")
@click.option("--no-input", is_flag=True, help="Never prompt; missing answers take defaults.")
@click.option(
    "--schema", "schema", is_flag=True, help="Print the deployment file's JSON schema and exit."
)
def init(output: Path, force: bool, no_input: bool, schema: bool, **values: Any) -> int:
    """Write a deployment file that hangar preflight / launch read."""
    from hangar.deploy import json_schema, write_deployment
    from hangar.deploy.init import Answers, build_deployment
    from hangar.errors import UsageError
    from hangar.planning.deployment import propose

    if schema:
        click.echo(json.dumps(json_schema(), indent=2))
        return 0
    if output.exists() and not force:
        raise UsageError(f"{output} exists", hint="pass --force to overwrite, or -o OTHER.toml")
    if _interactive(no_input):
        values = _ask_missing(values)
    if values["model"] is None:
        raise UsageError(
            "no model given", hint="hangar init --model ORG/NAME (or run it in a terminal)"
        )
    runtime, image = values.pop("runtime"), values.pop("image")
    answers = Answers(**{k: v for k, v in values.items() if v is not None})
    deployment = with_container(build_deployment(answers), answers.target, runtime, image)
    keep_layout = values["tp"] is not None or values["pp"] is not None
    warning = _check_with_plan(deployment, keep_layout)
    proposal = propose(deployment, keep_layout=keep_layout)
    write_deployment(proposal.deployment, output)
    if warning:
        click.echo(f"warning: {printable(warning, one_line=True)}", err=True)
    click.echo(
        f"{printable(proposal.note)}\nwrote {output}; next: hangar preflight {shlex.quote(str(output))}"
    )
    return 0


def _check_with_plan(d: Any, keep_layout: bool) -> str | None:
    """What `hangar preflight` would refuse, checked before anything is written.

    An unknown GPU kind (UnknownGpu, exit 2) or a layout vLLM rejects (the rule's own
    message, exit 2) stops init; a model no source knows here only warns, since the
    launch host may reach the hub or hold the model in its cache.
    """
    from hangar.errors import ModelNotFound
    from hangar.hardware.catalog import lookup
    from hangar.planning.deployment import plan_for

    if d.resources.gpu is None:
        return None
    lookup(d.resources.gpu)
    try:
        result = plan_for(d, with_layout=keep_layout)
    except ModelNotFound as exc:
        return f"{exc.message}; the file names it anyway (check the id: hangar models list)"
    layout = result.layouts[0] if keep_layout and result.layouts else None
    if layout is not None and not layout.valid:
        first = next(f for f in layout.findings if f.severity == "error")
        raise InvalidLayout(
            f"tp={layout.tp} pp={layout.pp} is rejected by vLLM: {first.message}",
            field="--tp/--pp",
            hint=first.fix or "drop --tp/--pp to take the plan's recommendation",
        )
    return None
