"""The Slurm job's pieces that every part of its rendering reads: file names and limits,
the sbatch options and argv, the per-node environment, the interpreters (slurm_render.py's
docstring has the design).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from hangar.deploy.schema import (
    Deployment,
    SlurmContainer,
    SlurmTarget,
    SlurmTargetSection,
    is_secret_name,
)
from hangar.launch.targets.base import RenderContext
from hangar.launch.targets.slurm_templates import ENV_NAME, RenderError, runtime

JOB_FILE = "job.sbatch"
NODE_FILE = "node.sh"
HELPER_FILE = "hangar_node.py"
ENDPOINT_FILE = "endpoint.json"
BATCH_LOG = "slurm-%j.out"  # sbatch filename pattern: %j = job id
NODE_LOG = "node-%N.log"  # srun filename pattern: %N = node name, one file per node
# RAY_TMPDIR/ray/session_<date>_<time>_<usec>_<pid>/sockets/plasma_store.N is ~70 bytes
# after RAY_TMPDIR; AF_UNIX paths end at 107 (multinode.md §1.5).
RAY_TMPDIR_MAX = 36
# A small explicit object store: vLLM's Ray executor moves only control traffic through it
# (multinode.md §1.5); the job lowers it to 30% of memory and 95% of free /dev/shm.
OBJECT_STORE_CAP = 4 * 1024**3
# The readiness gate's deadline (multinode.md §1.12 suggests 300-600 s); the launcher's own
# ready_timeout_s bounds it further.
RAY_GATE_MAX_S = 600.0
# A node's trap must finish inside Slurm's KillWait (30 s default, slurm.conf.5) so the
# temp dir is still removed; children get this long between SIGTERM and SIGKILL (node.sh
# shortens it further to KillWait - 2 s, read from `scontrol show config` in the job).
NODE_STOP_MAX_S = 20.0
# apptainer --cleanenv: what `--env` cannot carry goes into this file in the job's private
# temp dir, written 0600 by node.sh on each node (secrets never leave the job's memory
# for the shared run dir).
CONTAINER_ENV_FILE = "container.env"
# Set by Slurm in each step for the GPUs it gave (gres.conf); --cleanenv would drop them.
GPU_VISIBILITY = ("CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")
# What node.sh reads from the batch step's environment: pyxis keeps them over an image's ENV.
BATCH_EXPORTS = (
    "HANGAR_HEAD_NODE",
    "HANGAR_HEAD_IP",
    "HANGAR_NODES",
    "HANGAR_KILL_WAIT",
    "HANGAR_RUN_ID",
    "HANGAR_RUN_DIR",
)


def job_name(d: Deployment) -> str:
    """``hangar-<label>`` with anything outside [A-Za-z0-9._-] replaced (squeue shows it)."""
    label = re.sub(r"[^A-Za-z0-9._-]+", "_", d.label).strip("_.-")[:48]
    return f"hangar-{label or 'run'}"


def mode_of(d: Deployment) -> str:
    """``single`` on one node (whatever multinode says), else ``ray`` or ``mp``."""
    if d.resources.nodes == 1:
        return "single"
    return str(slurm_of(d).multinode)


def slurm_of(d: Deployment) -> SlurmTarget:
    t = d.target
    if not isinstance(t, SlurmTargetSection):
        raise RenderError(
            f"render_slurm got target.kind = {t.kind!r}", hint='set [target] kind = "slurm"'
        )
    return t.slurm


def sbatch_options(d: Deployment) -> list[str]:
    """Every sbatch option from [resources] and [target.slurm], as ``--name[=value]``."""
    s, r = slurm_of(d), d.resources
    gpus = f"--gres=gpu:{s.gres_type}:{r.gpus}" if s.gres_type else f"--gpus-per-node={r.gpus}"
    opts = [f"--job-name={job_name(d)}", f"--nodes={r.nodes}", "--ntasks-per-node=1", gpus]
    named: list[tuple[str, object]] = [
        ("partition", s.partition), ("account", s.account), ("qos", s.qos), ("time", s.time),
        ("cpus-per-task", s.cpus_per_task), ("mem", s.mem), ("constraint", s.constraint),
        ("reservation", s.reservation),
    ]  # fmt: skip
    opts += [f"--{name}={value}" for name, value in named if value is not None]
    opts += ["--exclusive"] if s.exclusive else []
    return opts + list(s.sbatch_extra)


def filename_pattern_dir(run_dir: Path) -> str:
    r"""The run dir inside an sbatch/srun filename pattern: ``%`` doubled; a backslash
    would switch every pattern off (sbatch.1, filename pattern), so it is refused."""
    text = str(run_dir)
    if "\\" in text:
        raise RenderError(
            f"run dir {text!r} contains a backslash, which disables Slurm's %j/%N patterns",
            hint="use a Hangar state dir without backslashes (HANGAR_STATE_DIR)",
        )
    return text.replace("%", "%%")


def sbatch_argv(d: Deployment, run_dir: Path, on_argv: Sequence[str]) -> tuple[str, ...]:
    pattern_dir = filename_pattern_dir(run_dir)
    return (
        "sbatch",
        "--parsable",
        "--export=ALL",  # the submitting env, secrets included, reaches every step
        f"--output={pattern_dir}/{BATCH_LOG}",
        f"--chdir={run_dir}",
        *on_argv,
        str(run_dir / JOB_FILE),
    )


def is_local_model(model_id: str) -> bool:
    # Hub ids are "org/name"; a path is absolute or explicitly relative.
    return model_id.startswith(("/", "./", "../", "~"))


def check_model_path(model_id: str) -> None:
    """The job runs in the run dir on other hosts: a local model needs an absolute path."""
    if is_local_model(model_id) and not model_id.startswith("/"):
        raise RenderError(
            f"model.id {model_id!r} is a relative path, but the Slurm job runs in the run dir "
            "on the compute nodes (and vLLM does not expand ~)",
            hint="give model.id as an absolute path on a filesystem every node mounts",
        )


def world_size(d: Deployment) -> int:
    p = d.parallel
    return p.tensor * p.pipeline * p.data


def _secret(name: str, ctx: RenderContext) -> bool:
    return is_secret_name(name) or name in ctx.secret_names


def secret_env(d: Deployment, ctx: RenderContext) -> tuple[str, ...]:
    """Names the job gets from the submitting environment and never from a file."""
    return tuple(sorted({n for n in d.env if _secret(n, ctx)} | set(ctx.secret_names)))


def _gloo_ifname(spec: str) -> str | None:
    """Gloo takes an interface name, not NCCL's ``^exclude``/prefix list: the first name."""
    names = [e.lstrip("=") for e in spec.split(",") if e and not e.startswith("^")]
    return names[0] if names else None


def node_iface(d: Deployment) -> str:
    """The interface the node IP is read from: network_interface, else the user's own
    NCCL/Gloo interface setting, else none (route to the head)."""
    s = slurm_of(d)
    return s.network_interface or d.env.get("NCCL_SOCKET_IFNAME") or ""


def container_of(d: Deployment) -> SlurmContainer | None:
    t = d.target
    return t.container if isinstance(t, SlurmTargetSection) else None


def runtime_is(d: Deployment, name: str) -> bool:
    c = container_of(d)
    return c is not None and c.runtime == name


def node_env(d: Deployment, ctx: RenderContext, mode: str) -> list[tuple[str, str]]:
    """What node.sh exports, in precedence order (later wins), secrets left out."""
    tmp = runtime("JOB_TMP")
    env: dict[str, str] = {
        "TMPDIR": tmp,  # vLLM's IPC sockets and vllm_dist_* dirs (VLLM_RPC_BASE_PATH)
        "RAY_TMPDIR": tmp,
        "VLLM_CACHE_ROOT": f"{tmp}/vllm",
        "TORCHINDUCTOR_CACHE_DIR": f"{tmp}/torchinductor",
        "TRITON_CACHE_DIR": f"{tmp}/triton",
        "PYTHONUNBUFFERED": "1",
    }
    if is_local_model(d.model.id):
        env["HF_HUB_OFFLINE"] = "1"
    elif runtime_is(d, "pyxis"):
        env["HF_HUB_CACHE"] = runtime("HANGAR_HF_HUB")  # the bound dir, whatever the image sets
    if mode == "ray":
        env["RAY_AUTH_MODE"] = "disabled"  # Ray >= 2.59 token trap (multinode.md §1.10)
        # Ray >= 2.57.1 drains a node for up to 30 s on SIGTERM (ray_constants.py:41), as
        # long as Slurm's default KillWait; nothing here needs draining (no Ray Serve).
        env["RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S"] = "0"
    iface = slurm_of(d).network_interface
    if iface:
        env["NCCL_SOCKET_IFNAME"] = iface
        gloo = _gloo_ifname(iface)
        if gloo:
            env["GLOO_SOCKET_IFNAME"] = gloo
    env.update(ctx.applied.env)
    env.update(d.env)
    for name in env:
        if not ENV_NAME.fullmatch(name):
            raise RenderError(f"environment name {name!r} is not a valid shell name")
    return [(k, v) for k, v in env.items() if not _secret(k, ctx)]


def python_of(d: Deployment, ctx: RenderContext) -> str:
    """The interpreter that runs vLLM and Ray: the image's, or the engine's on the nodes."""
    c = container_of(d)
    if c is not None:
        return c.python
    return slurm_of(d).python or str(ctx.engine.python)


def helper_python(d: Deployment, ctx: RenderContext, where: str) -> str:
    """The interpreter of hangar_node.py (standard library only, Python 3.8+): on the
    host beside a container (the batch step; apptainer's node.sh) ``target.slurm.python``
    or ``python3``; inside pyxis's container, the image's."""
    c = container_of(d)
    if c is None:
        return python_of(d, ctx)
    if where == "node" and c.runtime == "pyxis":
        return c.python
    return slurm_of(d).python or "python3"
