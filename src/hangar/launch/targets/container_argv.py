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
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict

from hangar.deploy.schema import split_bind
from hangar.engines.image import apptainer_image
from hangar.errors import HangarError, InputError

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
    mount_home: bool = False
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


def checked_mounts(mounts: tuple[Mount, ...]) -> tuple[Mount, ...]:
    """``mounts``, once every source and target is known to fit the bind syntax."""
    for m in mounts:
        _check_mount_path(m.src)
        _check_mount_path(m.dst)
    return mounts


def parse_bind(spec: str) -> Mount:
    """``SRC[:DST][:ro|rw]`` (validated by the schema) as a Mount; DST defaults to SRC."""
    src, dst, ro = split_bind(spec)
    return Mount(src=src, dst=dst, ro=ro)


def mounts_for(
    run_dir: Path,
    engine_cache: Path,
    model_dir: Path | None,
    hf_hub: Path | None,
    binds: tuple[str, ...] = (),
) -> tuple[Mount, ...]:
    """The per-run temp dir, the compile caches, the HF cache, the model (read-only) and
    the deployment's own binds."""
    out = [Mount(src=str(run_dir / "tmp"), dst=IN_TMP)]
    out += [Mount(src=str(engine_cache / s), dst=f"{IN_CACHE}/{s}") for s in CACHE_SUBDIRS]
    out += data_mounts(model_dir, hf_hub, binds)
    for m in out:
        _check_mount_path(m.src)
    return tuple(out)


def data_mounts(model_dir: Path | None, hf_hub: Path | None, binds: tuple[str, ...]) -> list[Mount]:
    """What vLLM reads: the HF hub cache, a local model (read-only), the user's binds."""
    out = [Mount(src=str(hf_hub), dst=IN_HF_HUB)] if hf_hub is not None else []
    if model_dir is not None:
        out.append(Mount(src=str(model_dir), dst=IN_MODEL, ro=True))
    return out + [parse_bind(b) for b in binds]


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
    return (*apptainer_prefix(spec), spec.python, *spec.command)


def apptainer_prefix(spec: ContainerSpec) -> tuple[str, ...]:
    """``apptainer exec [options] IMAGE``: what goes before the command (the Slurm node
    script puts each of its commands after it)."""
    argv = ["apptainer", "exec"]
    if spec.gpus:
        argv += ["--nv", *(["--nvccli"] if spec.nvccli else [])]
    argv += ["--containall" if spec.containall else "--cleanenv"]
    argv += [] if spec.mount_home else ["--no-home"]
    argv += [a for m in spec.mounts for a in ("--bind", _mount_arg(m))]
    # --env is a key=value map split on ',': values with a comma go through the env file.
    argv += _env_args(apptainer_env_args(spec.env), "--env")
    return (*argv, "--env-file", spec.env_file, *spec.extra_args, apptainer_image(spec.image))


def apptainer_env_args(env: Mapping[str, str]) -> dict[str, str]:
    """The values apptainer's ``--env`` can carry (no ','); the rest go to the env file."""
    return {k: v for k, v in env.items() if "," not in v}


@lru_cache(maxsize=1)
def pyxis_flags() -> dict[str, str]:
    """``templates/pyxis.yaml``: pyxis's srun option names, as its args.c registers them."""
    text = resources.files("hangar.launch.targets").joinpath("templates/pyxis.yaml")
    data = yaml.safe_load(text.read_text(encoding="utf-8"))
    flags = data.get("flags") if isinstance(data, dict) and data.get("version") == 1 else None
    if not isinstance(flags, dict) or not set(_PYXIS_KEYS) <= set(flags):
        raise HangarError(f"templates/pyxis.yaml: version 1 with flags {', '.join(_PYXIS_KEYS)}")
    return {k: str(v) for k, v in flags.items()}


_PYXIS_KEYS = ("image", "mounts", "workdir", "mount_home", "no_mount_home", "env")


def pyxis_srun_args(
    image: str,
    mounts: tuple[Mount, ...],
    workdir: str,
    env_names: tuple[str, ...],
    mount_home: bool,
    extra_args: tuple[str, ...] = (),
) -> tuple[str, ...]:
    """The srun options of NVIDIA's Pyxis: the step's command then runs in the image."""
    f = pyxis_flags()
    checked_mounts(mounts)
    argv = [f"{f['image']}={image}"]
    if mounts:
        # one ','-separated list; mount flags after the second ':' ("+"-separated)
        argv.append(f"{f['mounts']}=" + ",".join(_mount_arg(m) for m in mounts))
    argv += [f"{f['workdir']}={workdir}", f["mount_home" if mount_home else "no_mount_home"]]
    argv += [f"{f['env']}={','.join(env_names)}"] if env_names else []
    return (*argv, *extra_args)


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
