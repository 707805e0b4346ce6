"""The Slurm job as text: ``render_slurm(deployment, context) -> Rendered``, pure.

Three files go into the run dir (which must be on a filesystem the nodes share):

``job.sbatch``     the batch step, on the job's first node: checks the node count, finds the
                   head (first of ``scontrol show hostnames "$SLURM_JOB_NODELIST"``, which
                   is where sbatch runs the script, sbatch.1) and its IP, writes
                   ``endpoint.json``, starts ``node.sh`` on the nodes with ``srun`` and ends
                   every step once the server's step ends (or on SIGTERM from scancel).
``node.sh ROLE``   one copy per node, in its own srun step (``single``, ``mp``, ``ray-head``,
                   ``ray-worker``): a private temp dir, raised limits, this node's IP and env,
                   then vLLM (or Ray, then vLLM); its trap stops its children by PID and
                   removes the temp dir on EXIT and TERM.
``hangar_node.py`` the in-job helper run with the engine's interpreter: the node's IP,
                   the atomic ``endpoint.json`` write, the Ray object-store size, the Ray
                   readiness gate (polls until every node and GPU is registered).

What the job writes into the run dir: ``endpoint.json`` (``{"host", "port", "node",
"job_id"}``, tmp file + rename, before vLLM starts; the launcher polls it for the URL),
``slurm-<jobid>.out`` (the batch step), ``node-<nodename>.log`` (each node's step: Ray and
vLLM of that node, and the line ``hangar: ulimit -v <soft> -n <soft> on <node>``).

Quoting and runtime values: ``slurm_templates`` (every value passes a quoting filter;
values only the job knows are ``runtime("NAME")`` sentinels).

Decisions (and the trap each one avoids, shared/research/multinode.md):
- ``#SBATCH --nodes=N --ntasks-per-node=1`` with ``--gpus-per-node=G`` (or typed
  ``--gres=gpu:TYPE:G``), never ``--gpus-per-task`` (§4.2, §5 #5); values that are not
  shell-safe words (a constraint with ``&``) and every path go on the sbatch argv.
- No ``srun --overlap``: Ray mode runs the readiness gate and ``vllm serve`` inside the
  head node's own step, next to ``ray start --head --block``, so it works on Slurm before
  22.05 where ``--overlap`` does not share GPUs (§4.4), and the workers run in a second
  step on the other nodes. GPUs are checked with ``SLURM_GPUS_ON_NODE`` inside each step,
  never ``SLURM_JOB_GPUS`` (inherited from node 0, §4.1).
- ``VLLM_HOST_IP`` is set inside each node's step, never at the top of the batch script
  (§5 #2); the head uses the IP the batch step found, other nodes the address of the
  interface given, or the source address they use to reach the head (what Ray does, §1.4).
- The node temp dir ``<tmp_root or ${SLURM_TMPDIR:-/tmp}>/hg<jobid>.<restart>`` is
  created with ``mkdir -m 0700`` (fails when it exists: a shared tmp_root or a foreign dir
  is refused, never reused). The path is the same on every node because Ray <= 2.54 gives
  workers the head's temp path (§1.1). In Ray mode it must stay at most
  ``RAY_TMPDIR_MAX`` characters (AF_UNIX 107-byte socket paths, §1.5). TMPDIR,
  RAY_TMPDIR, VLLM_CACHE_ROOT, TORCHINDUCTOR_CACHE_DIR and TRITON_CACHE_DIR all live
  there: ``ctx.engine_cache`` is a path on the submitting host, not known to be shared or
  safe for concurrent writers on a cluster; a user who wants a persistent compile cache
  sets VLLM_CACHE_ROOT (and friends) under ``[env]``, which wins. Ray spills into its
  session dir, i.e. into that node-local dir (Ray's default, ``node.py:2207-2245``).
- Ray: options by role from ``templates/ray_start.yaml`` (user args in the wrong role are
  refused), ``--block`` always, worker-port range moved off every rendered port,
  ``RAY_AUTH_MODE=disabled`` on every node (the 2.59+ token trap, §1.10), ``RAY_ADDRESS``
  as ``ip:port`` for the driver (never ``http://``, §1.11), teardown by PID (never
  ``ray stop``, §1.9).
- Teardown: the batch step stops steps with SIGUSR2, which srun forwards to its tasks (a
  SIGTERM to srun itself becomes SIGKILL of the tasks, "forcing job termination", and their
  traps would not run); a step still there after Slurm's KillWait (read with ``scontrol
  show config`` in the job) then gets SIGTERM. node.sh fits its own SIGTERM-to-SIGKILL
  grace for its children inside KillWait, so its temp dir is removed before Slurm's
  SIGKILL. Every step is given ``--ntasks`` (the job exports SLURM_NTASKS, which a step on
  fewer nodes would inherit).
- mp: one ``srun --kill-on-bad-exit=1 --wait=W`` step over all nodes: any rank failing
  ends all of them, and once rank 0 exits the others are killed after W seconds (headless
  ranks do not exit by themselves, §3.3; feasibility.md §1.7). Rank 0 is the head.
- Containers (``[target.container]``, docs/containers.md): apptainer wraps every command
  node.sh starts in ``apptainer exec --nv --cleanenv`` (the one-host target's builder,
  ``container_argv.apptainer_prefix``) with the job temp dir bound at /tmp, the run dir
  read-only, the hub cache or the model, and what ``--env`` cannot carry (secrets, values
  with ',', the step's CUDA_VISIBLE_DEVICES) in a 0600 file node.sh writes into the job
  temp dir; pyxis puts each srun step in the image (``--container-image`` and friends,
  names from ``templates/pyxis.yaml``) with identity binds, so node.sh is unchanged. The
  helper then runs with ``target.slurm.python`` or ``python3`` on the host (inside
  pyxis's container: the image's).
- Environment precedence, lowest first: the submitting shell (sbatch ``--export=ALL``;
  this is also how secrets reach the job: they are listed in ``Rendered.secret_env`` and
  never written), Hangar's per-node dirs and settings, workarounds, the deployment's
  ``[env]``. ``HF_HUB_OFFLINE=1`` when the model is a local path. ``HF_HOME`` comes from
  ``[env]`` or the submitting shell.
"""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from hangar.deploy.schema import (
    Deployment,
    SlurmContainer,
    SlurmTarget,
    SlurmTargetSection,
    is_secret_name,
)
from hangar.launch.spec import entrypoint
from hangar.launch.targets import container_argv as cargv
from hangar.launch.targets.base import RenderContext, Rendered, RenderedFile
from hangar.launch.targets.container import PASS_THROUGH_SECRETS
from hangar.launch.targets.slurm_templates import (
    ENV_NAME,
    RenderError,
    ray_options,
    runtime,
)
from hangar.launch.targets.slurm_templates import render as _render
from hangar.planning import serve

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


# --- the pieces ------------------------------------------------------------------------


def job_name(d: Deployment) -> str:
    """``hangar-<label>`` with anything outside [A-Za-z0-9._-] replaced (squeue shows it)."""
    label = re.sub(r"[^A-Za-z0-9._-]+", "_", d.label).strip("_.-")[:48]
    return f"hangar-{label or 'run'}"


def mode_of(d: Deployment) -> str:
    """``single`` on one node (whatever multinode says), else ``ray`` or ``mp``."""
    if d.resources.nodes == 1:
        return "single"
    return str(_slurm(d).multinode)


def _slurm(d: Deployment) -> SlurmTarget:
    t = d.target
    if not isinstance(t, SlurmTargetSection):
        raise RenderError(
            f"render_slurm got target.kind = {t.kind!r}", hint='set [target] kind = "slurm"'
        )
    return t.slurm


def sbatch_options(d: Deployment) -> list[str]:
    """Every sbatch option from [resources] and [target.slurm], as ``--name[=value]``."""
    s, r = _slurm(d), d.resources
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


def _filename_pattern_dir(run_dir: Path) -> str:
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
    pattern_dir = _filename_pattern_dir(run_dir)
    return (
        "sbatch",
        "--parsable",
        "--export=ALL",  # the submitting env, secrets included, reaches every step
        f"--output={pattern_dir}/{BATCH_LOG}",
        f"--chdir={run_dir}",
        *on_argv,
        str(run_dir / JOB_FILE),
    )


def _is_local_model(model_id: str) -> bool:
    # Hub ids are "org/name"; a path is absolute or explicitly relative.
    return model_id.startswith(("/", "./", "../", "~"))


def _check_model_path(model_id: str) -> None:
    """The job runs in the run dir on other hosts: a local model needs an absolute path."""
    if _is_local_model(model_id) and not model_id.startswith("/"):
        raise RenderError(
            f"model.id {model_id!r} is a relative path, but the Slurm job runs in the run dir "
            "on the compute nodes (and vLLM does not expand ~)",
            hint="give model.id as an absolute path on a filesystem every node mounts",
        )


def _world_size(d: Deployment) -> int:
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
    s = _slurm(d)
    return s.network_interface or d.env.get("NCCL_SOCKET_IFNAME") or ""


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
    if _is_local_model(d.model.id):
        env["HF_HUB_OFFLINE"] = "1"
    elif _runtime_is(d, "pyxis"):
        env["HF_HUB_CACHE"] = runtime("HANGAR_HF_HUB")  # the bound dir, whatever the image sets
    if mode == "ray":
        env["RAY_AUTH_MODE"] = "disabled"  # Ray >= 2.59 token trap (multinode.md §1.10)
        # Ray >= 2.57.1 drains a node for up to 30 s on SIGTERM (ray_constants.py:41), as
        # long as Slurm's default KillWait; nothing here needs draining (no Ray Serve).
        env["RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S"] = "0"
    iface = _slurm(d).network_interface
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


def _python(d: Deployment, ctx: RenderContext) -> str:
    """The interpreter that runs vLLM and Ray: the image's, or the engine's on the nodes."""
    c = _container(d)
    if c is not None:
        return c.python
    return _slurm(d).python or str(ctx.engine.python)


def helper_python(d: Deployment, ctx: RenderContext, where: str) -> str:
    """The interpreter of hangar_node.py (standard library only, Python 3.8+): on the
    host beside a container (the batch step; apptainer's node.sh) ``target.slurm.python``
    or ``python3``; inside pyxis's container, the image's."""
    c = _container(d)
    if c is None:
        return _python(d, ctx)
    if where == "node" and c.runtime == "pyxis":
        return c.python
    return _slurm(d).python or "python3"


# --- containers on the nodes -----------------------------------------------------------


def _container(d: Deployment) -> SlurmContainer | None:
    t = d.target
    return t.container if isinstance(t, SlurmTargetSection) else None


def _runtime_is(d: Deployment, name: str) -> bool:
    c = _container(d)
    return c is not None and c.runtime == name


def _hub_bound(d: Deployment) -> bool:
    """A container sees the HF hub cache through a bind unless the model is a local path."""
    return _container(d) is not None and not _is_local_model(d.model.id)


def hub_dir(d: Deployment) -> str:
    """The hub cache the deployment's [env] names ("" = resolved in the job the way
    huggingface_hub does: HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub)."""
    if d.env.get("HF_HUB_CACHE"):
        return d.env["HF_HUB_CACHE"]
    return f"{d.env['HF_HOME']}/hub" if d.env.get("HF_HOME") else ""


def _model_arg(d: Deployment) -> str:
    # apptainer binds a local model at the one-host target's path; pyxis at its own path
    local = _is_local_model(d.model.id) and _runtime_is(d, "apptainer")
    return cargv.IN_MODEL if local else d.model.id


def container_env(d: Deployment, ctx: RenderContext, mode: str) -> dict[str, str]:
    """What vLLM sees under apptainer --cleanenv: node.sh's exports with the job temp dir
    at /tmp (its bind), the run marker, this node's IP and the bound hub cache."""
    tmp = runtime("JOB_TMP")
    env = {k: v.replace(tmp, cargv.IN_TMP) for k, v in node_env(d, ctx, mode)}
    # vLLM's config and usage files default to $XDG_*_HOME under a home not bound (--no-home)
    env = {
        "XDG_CACHE_HOME": f"{cargv.IN_TMP}/.cache",
        "XDG_CONFIG_HOME": f"{cargv.IN_TMP}/.config",
        **env,
    }
    env["HANGAR_RUN_ID"] = ctx.run_id
    env.setdefault("VLLM_HOST_IP", runtime("VLLM_HOST_IP"))
    if _hub_bound(d):
        env["HF_HUB_CACHE"] = cargv.IN_HF_HUB
    return env


def container_pass_env(d: Deployment, ctx: RenderContext) -> tuple[str, ...]:
    """Names whose values node.sh copies from its environment into the container: the
    secrets (from the submitting shell) and the GPUs Slurm gave the step."""
    return (*sorted(set(secret_env(d, ctx)) | set(PASS_THROUGH_SECRETS)), *GPU_VISIBILITY)


def _apptainer_mounts(d: Deployment, ctx: RenderContext) -> tuple[cargv.Mount, ...]:
    c = _container(d)
    assert c is not None
    local = _is_local_model(d.model.id)
    mounts = (
        cargv.Mount(src=runtime("JOB_TMP"), dst=cargv.IN_TMP),
        cargv.Mount(src=str(ctx.run_dir), dst=str(ctx.run_dir), ro=True),  # hangar_node.py
        *cargv.data_mounts(
            Path(d.model.id) if local else None,
            None if local else Path(runtime("HANGAR_HF_HUB")),
            c.binds,
        ),
    )
    return cargv.checked_mounts(mounts)


def apptainer_spec(
    d: Deployment, ctx: RenderContext, mode: str, extra_env: Mapping[str, str]
) -> cargv.ContainerSpec:
    """The one-host target's spec, as one node of the job needs it (argv: one builder)."""
    c, s = _container(d), _slurm(d)
    assert c is not None
    return cargv.ContainerSpec(
        runtime="apptainer",
        image=str(c.image),
        name=f"hangar-{ctx.run_id}",
        labels={},
        mounts=_apptainer_mounts(d, ctx),
        env={**container_env(d, ctx, mode), **extra_env},
        env_file=f"{runtime('JOB_TMP')}/{CONTAINER_ENV_FILE}",
        host=s.host or "",
        port=s.port,
        gpus="all",  # --nv: the step's GPUs, as Slurm gave them (CUDA_VISIBLE_DEVICES)
        ipc_host=False,
        shm_size=None,
        rootless=False,
        user=None,
        nvccli=c.nvccli,
        containall=c.containall,
        mount_home=c.mount_home,
        pull="never",
        extra_args=c.extra_args,
        python=c.python,
        command=(),
    )


def _wrap(
    d: Deployment, ctx: RenderContext, argv: list[str], extra_env: Mapping[str, str] | None = None
) -> list[str]:
    """``argv`` (interpreter first) inside ``apptainer exec`` when the deployment says so;
    pyxis runs the whole node step in the image, so its commands stay as they are."""
    if not _runtime_is(d, "apptainer"):
        return argv
    spec = apptainer_spec(d, ctx, mode_of(d), extra_env or {})
    return [*cargv.apptainer_prefix(spec), *argv]


def _tmp_root(d: Deployment) -> str:
    """target.slurm.tmp_root as written (checked for bind syntax), else the job's own."""
    return _slurm(d).tmp_root or runtime("TMP_ROOT")


def pyxis_args(d: Deployment, ctx: RenderContext) -> list[str]:
    """The srun options that put each node step in the image (identity binds: node.sh,
    the job temp root, the model, the hub cache and the user's binds keep their paths)."""
    c = _container(d)
    if c is None or c.runtime != "pyxis":
        return []
    local = _is_local_model(d.model.id)
    mounts = (
        cargv.Mount(src=str(ctx.run_dir), dst=str(ctx.run_dir), ro=True),
        cargv.Mount(src=_tmp_root(d), dst=_tmp_root(d)),
        *([cargv.Mount(src=d.model.id, dst=d.model.id, ro=True)] if local else []),
        *(
            []
            if local
            else [cargv.Mount(src=runtime("HANGAR_HF_HUB"), dst=runtime("HANGAR_HF_HUB"))]
        ),
        *(cargv.parse_bind(b) for b in c.binds),
    )
    names = (*BATCH_EXPORTS, *(() if local else ("HANGAR_HF_HUB",)), *container_pass_env(d, ctx))
    return list(
        cargv.pyxis_srun_args(
            str(c.image),
            cargv.checked_mounts(mounts),
            str(ctx.run_dir),
            names,
            c.mount_home,
            c.extra_args,
        )
    )


def serve_argv(
    d: Deployment,
    ctx: RenderContext,
    *,
    backend: serve.Backend | None,
    node: serve.NodeRole | None = None,
) -> list[str]:
    """``python -m <vllm entry> MODEL FLAGS``; the API host/port only where a server runs."""
    s = _slurm(d)
    placement: dict[str, object] = {"backend": backend, "node": node}
    if node is None or not node.headless:
        placement.update(host=s.host or runtime("VLLM_HOST_IP"), port=s.port)
    flags = serve.serve_flags(serve.options_for(d, **placement))
    argv = [_python(d, ctx), *entrypoint(ctx.engine), _model_arg(d), *flags, *ctx.applied.args]
    # vLLM's Ray executor joins the cluster named by RAY_ADDRESS (node.sh exports it; under
    # --cleanenv it must be on the container's own env)
    ray_env = {"RAY_ADDRESS": f"{runtime('HANGAR_HEAD_IP')}:{s.ray_port}"}
    return _wrap(d, ctx, argv, ray_env if backend == "ray" else None)


def mp_rank_argvs(d: Deployment, ctx: RenderContext) -> list[list[str]]:
    """One complete argv per node rank; rank 0 serves the API, the others are headless."""
    if entrypoint(ctx.engine)[1] != "vllm.entrypoints.cli.main":
        raise RenderError(
            'multinode = "mp" needs the `vllm serve` CLI for its --headless ranks, and this '
            f"engine's vLLM ({ctx.engine.vllm_distribution}) has no `vllm` dist-info; "
            "vllm.entrypoints.openai.api_server ignores --headless (vLLM issue #33910)",
            hint='use an engine with the vllm distribution, or set multinode = "ray"',
        )
    s, nodes = _slurm(d), d.resources.nodes
    return [
        serve_argv(
            d,
            ctx,
            backend="mp",
            node=serve.NodeRole(
                nnodes=nodes,
                node_rank=rank,
                master_addr=runtime("HANGAR_HEAD_IP"),
                master_port=s.master_port,
            ),
        )
        for rank in range(nodes)
    ]


def _flag(token: str) -> str:
    return token.split("=", 1)[0]


def _check_ray_args(args: Sequence[str], role: str, wrong: Iterable[str]) -> set[str]:
    data = ray_options()
    owned: dict[str, str] = data["owned"]
    wrong_set = set(wrong)
    given = {_flag(a) for a in args if a.startswith("--")}
    field = f"target.slurm.ray_{role}_args"
    for flag in sorted(given):
        if flag in wrong_set:
            other = "worker" if role == "head" else "head"
            raise RenderError(
                f"{field}: {flag} is a {other}-only `ray start` option (Ray ignores or "
                f"rejects it on the {role}, templates/ray_start.yaml)",
                hint=f"move {flag} to target.slurm.ray_{other}_args or remove it",
            )
        if flag in owned:
            raise RenderError(
                f"{field}: {flag} is set by Hangar ({owned[flag]})", hint=f"remove {flag}"
            )
    return given


def _ports_in(args: Sequence[str]) -> set[int]:
    """Numbers given to ``--*-port=N`` options (the user's dashboard or agent ports)."""
    found = re.findall(r"--[a-z-]*port=(\d+)$", "\n".join(args), re.MULTILINE)
    return {int(n) for n in found}


def worker_port_range(d: Deployment) -> tuple[int, int]:
    """The first block of ``ray_start.yaml`` holding no port the job renders or is given."""
    s = _slurm(d)
    taken = {s.port, s.ray_port, *_ports_in((*s.ray_head_args, *s.ray_worker_args))}
    for lo, hi in ray_options()["worker_port_blocks"]:
        if not any(lo <= p <= hi for p in taken):
            return int(lo), int(hi)
    raise RenderError(  # pragma: no cover - four disjoint blocks, two ports
        "no free Ray worker-port block", hint="change target.slurm.port or ray_port"
    )


def _ray_common(d: Deployment, given: set[str]) -> list[str]:
    lo, hi = worker_port_range(d)
    common = [
        f"--node-ip-address={runtime('VLLM_HOST_IP')}",
        f"--num-gpus={d.resources.gpus}",
        f"--min-worker-port={lo}",
        f"--max-worker-port={hi}",
    ]
    if "--object-store-memory" not in given:
        common.append(f"--object-store-memory={runtime('OBJECT_STORE_BYTES')}")
    return common


def ray_head_argv(d: Deployment, ctx: RenderContext) -> list[str]:
    s = _slurm(d)
    given = _check_ray_args(s.ray_head_args, "head", ray_options()["worker_only"])
    own = [f"--port={s.ray_port}", *_ray_common(d, given)]
    own += [] if "--include-dashboard" in given else ["--include-dashboard=false"]
    own += [] if "--disable-usage-stats" in given else ["--disable-usage-stats"]
    start = [_python(d, ctx), "-m", "ray.scripts.scripts", "start", "--head"]
    return _wrap(d, ctx, [*start, *own, *s.ray_head_args, "--block"])


def ray_worker_argv(d: Deployment, ctx: RenderContext) -> list[str]:
    s = _slurm(d)
    given = _check_ray_args(s.ray_worker_args, "worker", ray_options()["head_only"])
    address = f"--address={runtime('HANGAR_HEAD_IP')}:{s.ray_port}"
    start = [_python(d, ctx), "-m", "ray.scripts.scripts", "start", address]
    return _wrap(d, ctx, [*start, *_ray_common(d, given), *s.ray_worker_args, "--block"])


def ray_gate_argv(d: Deployment, ctx: RenderContext) -> list[str]:
    s, r = _slurm(d), d.resources
    timeout = min(RAY_GATE_MAX_S, s.ready_timeout_s)
    c = _container(d)
    if c is not None and c.containall:
        raise RenderError(
            "containall gives each apptainer its own PID namespace, so the Ray readiness "
            "gate cannot watch the Ray head it started",
            hint='remove target.container.containall, or set multinode = "mp"',
        )
    return _wrap(
        d,
        ctx,
        [
            _python(d, ctx),
            str(ctx.run_dir / HELPER_FILE),
            "ray-wait",
            f"--address={runtime('HANGAR_HEAD_IP')}:{s.ray_port}",
            f"--nodes={r.nodes}",
            f"--gpus={r.nodes * r.gpus}",
            f"--timeout={timeout:g}",
            f"--expect-ip={runtime('VLLM_HOST_IP')}",
            f"--watch-pid={runtime('RAY_PID')}",
        ],
    )


def _mode_values(d: Deployment, ctx: RenderContext, mode: str) -> dict[str, object]:
    """The argv arrays node.sh runs in this mode."""
    if mode == "mp":
        return {"rank_serve": mp_rank_argvs(d, ctx)}
    if mode == "ray":
        return {
            "ray_head": ray_head_argv(d, ctx),
            "ray_worker": ray_worker_argv(d, ctx),
            "gate": ray_gate_argv(d, ctx),
            "serve": serve_argv(d, ctx, backend="ray"),
            # sized in the job unless both roles were given their own size
            "size_object_store": not all(
                "--object-store-memory" in {_flag(a) for a in args}
                for args in (_slurm(d).ray_head_args, _slurm(d).ray_worker_args)
            ),
        }
    backend: serve.Backend | None = "mp" if _world_size(d) > 1 else None
    return {"serve": serve_argv(d, ctx, backend=backend)}


def _common_values(d: Deployment, ctx: RenderContext, mode: str) -> dict[str, object]:
    return {
        "mode": mode,
        "run_dir": str(ctx.run_dir),
        "run_id": ctx.run_id,
        "iface": node_iface(d),
        "nodes": d.resources.nodes,
        "gpus": d.resources.gpus,
    }


def _url_host(s: SlurmTarget) -> str:
    if s.host and s.host not in ("0.0.0.0", "::"):
        return s.host
    return runtime("HEAD_IP")


def job_values(
    d: Deployment, ctx: RenderContext, mode: str, on_sbatch_lines: list[str]
) -> dict[str, object]:
    s = _slurm(d)
    return {
        **_common_values(d, ctx, mode),
        "python": helper_python(d, ctx, "batch"),
        "hub": _hub_bound(d),
        "hub_dir": hub_dir(d),
        "pyxis": pyxis_args(d, ctx),
        "tmp_root": s.tmp_root or "",
        "sbatch_options": on_sbatch_lines,
        "modules": list(s.modules),
        "port": s.port,
        "url_host": _url_host(s),
        "node_log": f"--output={_filename_pattern_dir(ctx.run_dir)}/{NODE_LOG}",
        "cpus": s.cpus_per_task,
        "wait_s": max(1, math.ceil(s.stop_grace_s)),
    }


def node_values(d: Deployment, ctx: RenderContext, mode: str) -> dict[str, object]:
    s = _slurm(d)
    apptainer = _runtime_is(d, "apptainer")
    env = container_env(d, ctx, mode) if apptainer else {}
    return {
        **_common_values(d, ctx, mode),
        **_mode_values(d, ctx, mode),
        "python": helper_python(d, ctx, "node"),
        "apptainer": apptainer,
        "container_env": f"{runtime('JOB_TMP')}/{CONTAINER_ENV_FILE}",
        "file_env": sorted(
            (k, v) for k, v in env.items() if k not in cargv.apptainer_env_args(env)
        ),
        "pass_env": container_pass_env(d, ctx) if apptainer else (),
        "tmp_root": s.tmp_root or "",
        "exports": node_env(d, ctx, mode),
        "set_host_ip": "VLLM_HOST_IP" not in d.env,
        "ray_port": s.ray_port,
        "ray_tmpdir_max": RAY_TMPDIR_MAX,
        "object_store_cap": OBJECT_STORE_CAP,
        "stop_grace_s": math.ceil(min(s.stop_grace_s, NODE_STOP_MAX_S)),
    }


def render_slurm(d: Deployment, ctx: RenderContext) -> Rendered:
    """The sbatch job for ``d``: its files (``job.sbatch`` first) and the sbatch argv."""
    mode = mode_of(d)
    _check_model_path(d.model.id)
    options = sbatch_options(d)
    on_lines = [o for o in options if shlex.quote(o) == o]
    on_argv = [o for o in options if shlex.quote(o) != o]
    files = {
        JOB_FILE: RenderedFile(
            text=_render("job.sbatch.j2", job_values(d, ctx, mode, on_lines)), mode=0o700
        ),
        NODE_FILE: RenderedFile(text=_render("node.sh.j2", node_values(d, ctx, mode)), mode=0o700),
        HELPER_FILE: RenderedFile(text=_render("hangar_node.py.j2", {}), mode=0o600),
    }
    return Rendered(
        kind="slurm",
        files=files,
        argv=sbatch_argv(d, ctx.run_dir, on_argv),
        env={},
        secret_env=secret_env(d, ctx),
        base_url=None,
        served_name=d.model.name_for_clients,
        applied=ctx.applied,
    )
