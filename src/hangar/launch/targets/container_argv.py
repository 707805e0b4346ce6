"""The container runtimes' command lines, built by pure functions from one ``ContainerSpec``.

``container_spec(...)`` decides what goes into the container (mounts, env, GPUs, IPC,
port); ``podman_argv`` / ``docker_argv`` / ``apptainer_argv`` spell it the way each CLI
wants. Nothing here runs a command or reads a file, so the argv is golden-tested
(tests/container/golden) and ``hangar render`` prints exactly what ``launch`` runs.

Why each piece is there (sources in docs/containers.md):
- ``--ipc=host`` (or ``--shm-size``): vLLM's workers exchange tensors and its shared-memory
  broadcast queue (vllm/distributed/device_communicators/shm_broadcast.py) through
  /dev/shm; Docker's and Podman's default /dev/shm is 64 MB.
- every path vLLM writes is mounted from the run (temp dir, where its IPC sockets go) or
  the engine's compile caches, so nothing is written into the image's layer or $HOME;
- secrets never appear here: only the path of the env file written 0600 at submit.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from hangar.errors import InputError

Runtime = Literal["podman", "docker", "apptainer"]

LABEL_RUN = "io.hangar.run"
LABEL_STATE = "io.hangar.state"  # which Hangar state dir (user/home) started the container
LABEL_IMAGE = "io.hangar.image"  # what `hangar stop --purge` removes
IN_TMP = "/tmp"
IN_CACHE = "/hangar/cache"
IN_HF_HUB = "/hangar/hf-hub"
IN_MODEL = "/hangar/model"
CACHE_SUBDIRS = ("vllm", "torchinductor", "triton")


class Mount(BaseModel):
    model_config = ConfigDict(frozen=True)

    src: str
    dst: str
    ro: bool = False


class ContainerSpec(BaseModel):
    """Everything one container run needs, runtime-neutral."""

    model_config = ConfigDict(frozen=True)

    runtime: Runtime
    image: str
    name: str
    labels: dict[str, str]
    mounts: tuple[Mount, ...]
    env: dict[str, str]  # non-secret values, visible on the command line
    env_file: str  # secrets (and apptainer's comma values), written 0600 at submit
    host: str
    port: int
    gpus: str | None  # "all", "0,1" or None (no GPU)
    ipc_host: bool
    shm_size: str | None
    rootless: bool
    user: str | None  # docker: uid:gid so files in mounts keep the caller's owner
    nvccli: bool
    containall: bool
    pull: Literal["missing", "never"]
    extra_args: tuple[str, ...]
    python: str
    command: tuple[str, ...]  # after the interpreter: -c BOOTSTRAP -m vllm... serve MODEL ...


def _check_mount_path(path: str) -> str:
    # -v/--bind split on ':' (and apptainer on ','): such a path would mount something else.
    if ":" in path or "," in path:
        raise InputError(
            f"the path {path!r} contains ':' or ',', which container bind syntax cannot carry",
            field="model.id / HF cache",
            hint="move or symlink it to a path without ':' and ','",
        )
    return path


def mounts_for(
    run_dir: Path, engine_cache: Path, model_dir: Path | None, hf_hub: Path | None
) -> tuple[Mount, ...]:
    """The per-run temp dir, the compile caches, the HF cache and the model (read-only)."""
    out = [Mount(src=str(run_dir / "tmp"), dst=IN_TMP)]
    out += [Mount(src=str(engine_cache / s), dst=f"{IN_CACHE}/{s}") for s in CACHE_SUBDIRS]
    if hf_hub is not None:
        out.append(Mount(src=str(hf_hub), dst=IN_HF_HUB))
    if model_dir is not None:
        out.append(Mount(src=str(model_dir), dst=IN_MODEL, ro=True))
    for m in out:
        _check_mount_path(m.src)
    return tuple(out)


def container_env(local_model: bool, hub: bool) -> dict[str, str]:
    """Where vLLM, torch and triton write inside the container (all under the mounts)."""
    env = {
        "TMPDIR": IN_TMP,
        "VLLM_CACHE_ROOT": f"{IN_CACHE}/vllm",
        "TORCHINDUCTOR_CACHE_DIR": f"{IN_CACHE}/torchinductor",
        "TRITON_CACHE_DIR": f"{IN_CACHE}/triton",
        # VLLM_CONFIG_ROOT and the rest default to $XDG_*_HOME (vllm/envs.py)
        "XDG_CACHE_HOME": f"{IN_TMP}/.cache",
        "XDG_CONFIG_HOME": f"{IN_TMP}/.config",
        "PYTHONUNBUFFERED": "1",
    }
    if hub:
        env["HF_HUB_CACHE"] = IN_HF_HUB
    if local_model:
        env["HF_HUB_OFFLINE"] = "1"  # the weights are mounted; never ask the hub
    return env


def _mount_arg(m: Mount) -> str:
    return f"{m.src}:{m.dst}" + (":ro" if m.ro else "")


def _env_args(env: Mapping[str, str], flag: str) -> list[str]:
    return [a for k in sorted(env) for a in (flag, f"{k}={env[k]}")]


def _oci_common(spec: ContainerSpec) -> list[str]:
    """What podman and docker spell alike (docker's CLI is podman's reference)."""
    argv = [
        "run",
        "--name",
        spec.name,
        *[a for k in sorted(spec.labels) for a in ("--label", f"{k}={spec.labels[k]}")],
        f"--pull={spec.pull}",
        "--entrypoint",
        spec.python,
        "-p",
        f"{_publish_host(spec.host)}:{spec.port}:{spec.port}",
    ]
    argv += ["--ipc=host"] if spec.ipc_host else []
    argv += [f"--shm-size={spec.shm_size}"] if spec.shm_size and not spec.ipc_host else []
    return argv


def _publish_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _oci_tail(spec: ContainerSpec) -> list[str]:
    argv = [a for m in spec.mounts for a in ("-v", _mount_arg(m))]
    argv += _env_args(spec.env, "--env")
    argv += ["--env-file", spec.env_file, *spec.extra_args, spec.image, *spec.command]
    return argv


def podman_argv(spec: ContainerSpec) -> tuple[str, ...]:
    argv = ["podman", *_oci_common(spec)]
    if spec.gpus == "all":
        argv += ["--device", "nvidia.com/gpu=all"]  # CDI (nvidia-ctk cdi generate)
    elif spec.gpus:
        argv += [a for i in spec.gpus.split(",") for a in ("--device", f"nvidia.com/gpu={i}")]
    if spec.rootless:
        argv.append("--userns=keep-id")  # files in the mounts keep the caller's uid
    return (*argv, *_oci_tail(spec))


def docker_argv(spec: ContainerSpec) -> tuple[str, ...]:
    argv = ["docker", *_oci_common(spec)]
    if spec.gpus == "all":
        argv += ["--gpus", "all"]
    elif spec.gpus:
        # --gpus is parsed as CSV: a device list needs its own quotes (docker run --help)
        argv += ["--gpus", f'"device={spec.gpus}"']
    if spec.user:
        argv += ["--user", spec.user]
    return (*argv, *_oci_tail(spec))


def apptainer_argv(spec: ContainerSpec) -> tuple[str, ...]:
    """``apptainer exec``: no network namespace, so vLLM binds the host address itself.

    ``--cleanenv`` keeps the caller's environment out (a host PYTHONPATH or CUDA_HOME would
    reach vLLM); ``--containall`` also gives a private /tmp, /dev/shm, PID and IPC
    namespace. Either way every path vLLM writes is bound from the run.
    """
    argv = ["apptainer", "exec"]
    if spec.gpus:
        argv += ["--nv", *(["--nvccli"] if spec.nvccli else [])]
    argv += ["--containall" if spec.containall else "--cleanenv", "--no-home"]
    argv += [a for m in spec.mounts for a in ("--bind", _mount_arg(m))]
    # --env is a key=value map split on ',': values with a comma go through the env file.
    argv += _env_args({k: v for k, v in spec.env.items() if "," not in v}, "--env")
    argv += ["--env-file", spec.env_file, *spec.extra_args, spec.image, spec.python]
    return (*argv, *spec.command)


ARGV_BUILDERS: dict[str, Callable[[ContainerSpec], tuple[str, ...]]] = {
    "podman": podman_argv,
    "docker": docker_argv,
    "apptainer": apptainer_argv,
}


def runtime_argv(spec: ContainerSpec) -> tuple[str, ...]:
    return ARGV_BUILDERS[spec.runtime](spec)


def env_file_text(runtime: str, values: Mapping[str, str]) -> str:
    """The env file: ``NAME=value`` lines (podman/docker read them verbatim); apptainer
    sources its env file as shell, so its values are quoted."""
    lines = []
    for name in sorted(values):
        value = values[name]
        if "\n" in value or "\x00" in value:
            raise InputError(
                f"the value of {name} has a newline, which an env file cannot carry",
                field=f"env.{name}",
                hint="remove the newline from the value",
            )
        lines.append(f"{name}={shlex.quote(value) if runtime == 'apptainer' else value}")
    return "".join(f"{line}\n" for line in lines)
