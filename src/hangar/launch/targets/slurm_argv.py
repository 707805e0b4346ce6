"""The argv arrays node.sh runs: ``vllm serve`` (one node, every mp rank, the Ray driver),
``ray start`` by role and the Ray readiness gate (slurm_render.py's docstring has the design).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from hangar.deploy.schema import Deployment
from hangar.launch.spec import entrypoint
from hangar.launch.targets.base import RenderContext
from hangar.launch.targets.slurm_job import (
    HELPER_FILE,
    RAY_GATE_MAX_S,
    container_of,
    python_of,
    slurm_of,
)
from hangar.launch.targets.slurm_templates import RenderError, ray_options, runtime
from hangar.launch.targets.slurm_wrap import model_arg, wrap
from hangar.planning import serve


def serve_argv(
    d: Deployment,
    ctx: RenderContext,
    *,
    backend: serve.Backend | None,
    node: serve.NodeRole | None = None,
) -> list[str]:
    """``python -m <vllm entry> MODEL FLAGS``; the API host/port only where a server runs."""
    s = slurm_of(d)
    placement: dict[str, object] = {"backend": backend, "node": node}
    if node is None or not node.headless:
        placement.update(host=s.host or runtime("VLLM_HOST_IP"), port=s.port)
    flags = serve.serve_flags(serve.options_for(d, **placement))
    argv = [python_of(d, ctx), *entrypoint(ctx.engine), model_arg(d), *flags, *ctx.applied.args]
    # vLLM's Ray executor joins the cluster named by RAY_ADDRESS (node.sh exports it; under
    # --cleanenv it must be on the container's own env)
    ray_env = {"RAY_ADDRESS": f"{runtime('HANGAR_HEAD_IP')}:{s.ray_port}"}
    return wrap(d, ctx, argv, ray_env if backend == "ray" else None)


def mp_rank_argvs(d: Deployment, ctx: RenderContext) -> list[list[str]]:
    """One complete argv per node rank; rank 0 serves the API, the others are headless."""
    if entrypoint(ctx.engine)[1] != "vllm.entrypoints.cli.main":
        raise RenderError(
            'multinode = "mp" needs the `vllm serve` CLI for its --headless ranks, and this '
            f"engine's vLLM ({ctx.engine.vllm_distribution}) has no `vllm` dist-info; "
            "vllm.entrypoints.openai.api_server ignores --headless (vLLM issue #33910)",
            hint='use an engine with the vllm distribution, or set multinode = "ray"',
        )
    s, nodes = slurm_of(d), d.resources.nodes
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


def flag_name(token: str) -> str:
    return token.split("=", 1)[0]


def _check_ray_args(args: Sequence[str], role: str, wrong: Iterable[str]) -> set[str]:
    data = ray_options()
    owned: dict[str, str] = data["owned"]
    wrong_set = set(wrong)
    given = {flag_name(a) for a in args if a.startswith("--")}
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
    s = slurm_of(d)
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
    s = slurm_of(d)
    given = _check_ray_args(s.ray_head_args, "head", ray_options()["worker_only"])
    own = [f"--port={s.ray_port}", *_ray_common(d, given)]
    own += [] if "--include-dashboard" in given else ["--include-dashboard=false"]
    own += [] if "--disable-usage-stats" in given else ["--disable-usage-stats"]
    start = [python_of(d, ctx), "-m", "ray.scripts.scripts", "start", "--head"]
    return wrap(d, ctx, [*start, *own, *s.ray_head_args, "--block"])


def ray_worker_argv(d: Deployment, ctx: RenderContext) -> list[str]:
    s = slurm_of(d)
    given = _check_ray_args(s.ray_worker_args, "worker", ray_options()["head_only"])
    address = f"--address={runtime('HANGAR_HEAD_IP')}:{s.ray_port}"
    start = [python_of(d, ctx), "-m", "ray.scripts.scripts", "start", address]
    return wrap(d, ctx, [*start, *_ray_common(d, given), *s.ray_worker_args, "--block"])


def ray_gate_argv(d: Deployment, ctx: RenderContext) -> list[str]:
    s, r = slurm_of(d), d.resources
    timeout = min(RAY_GATE_MAX_S, s.ready_timeout_s)
    c = container_of(d)
    if c is not None and c.containall:
        raise RenderError(
            "containall gives each apptainer its own PID namespace, so the Ray readiness "
            "gate cannot watch the Ray head it started",
            hint='remove target.container.containall, or set multinode = "mp"',
        )
    return wrap(
        d,
        ctx,
        [
            python_of(d, ctx),
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
