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
values only the job knows are ``runtime("NAME")`` sentinels). The pieces: ``slurm_job``
(file names, sbatch options and argv, node environment, interpreters), ``slurm_wrap``
(containers on the nodes), ``slurm_argv`` (the vLLM, Ray and gate argv arrays); this module
puts them into the three files.

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
import shlex

from hangar.deploy.schema import Deployment, SlurmTarget
from hangar.launch.targets import container_argv as cargv
from hangar.launch.targets.base import RenderContext, Rendered, RenderedFile
from hangar.launch.targets.slurm_argv import (
    flag_name,
    mp_rank_argvs,
    ray_gate_argv,
    ray_head_argv,
    ray_worker_argv,
    serve_argv,
)
from hangar.launch.targets.slurm_job import (
    CONTAINER_ENV_FILE,
    HELPER_FILE,
    JOB_FILE,
    NODE_FILE,
    NODE_LOG,
    NODE_STOP_MAX_S,
    OBJECT_STORE_CAP,
    RAY_TMPDIR_MAX,
    check_model_path,
    filename_pattern_dir,
    helper_python,
    mode_of,
    node_env,
    node_iface,
    runtime_is,
    sbatch_argv,
    sbatch_options,
    secret_env,
    slurm_of,
    world_size,
)
from hangar.launch.targets.slurm_templates import render as _render
from hangar.launch.targets.slurm_templates import runtime
from hangar.launch.targets.slurm_wrap import (
    container_env,
    container_pass_env,
    hub_bound,
    hub_dir,
    pyxis_args,
)
from hangar.planning import serve


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
                "--object-store-memory" in {flag_name(a) for a in args}
                for args in (slurm_of(d).ray_head_args, slurm_of(d).ray_worker_args)
            ),
        }
    backend: serve.Backend | None = "mp" if world_size(d) > 1 else None
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
    s = slurm_of(d)
    return {
        **_common_values(d, ctx, mode),
        "python": helper_python(d, ctx, "batch"),
        "hub": hub_bound(d),
        "hub_dir": hub_dir(d),
        "pyxis": pyxis_args(d, ctx),
        "tmp_root": s.tmp_root or "",
        "sbatch_options": on_sbatch_lines,
        "modules": list(s.modules),
        "port": s.port,
        "url_host": _url_host(s),
        "node_log": f"--output={filename_pattern_dir(ctx.run_dir)}/{NODE_LOG}",
        "cpus": s.cpus_per_task,
        "wait_s": max(1, math.ceil(s.stop_grace_s)),
    }


def node_values(d: Deployment, ctx: RenderContext, mode: str) -> dict[str, object]:
    s = slurm_of(d)
    apptainer = runtime_is(d, "apptainer")
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
    check_model_path(d.model.id)
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
