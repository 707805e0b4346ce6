"""Checks: vLLM version and arguments vs the multi-node mode; node-local vs shared paths."""

from __future__ import annotations

from pathlib import Path

from hangar.deploy.schema import Deployment, SlurmTarget
from hangar.planning.versions import VllmVersion
from hangar.preflight.engine import EngineFacts
from hangar.preflight.findings import Finding
from hangar.preflight.slurm.checks_ray import ray_arg_findings, ray_args_unused, ray_owned
from hangar.preflight.slurm.common import (
    finding,
    fs_evidence,
    node_local_reason,
    serve_flag,
)
from hangar.preflight.slurm.facts import SlurmFacts, checks_data

# ---- checks: vLLM version and arguments vs the multi-node mode ----------------------


def check_vllm_mode(d: Deployment, s: SlurmTarget, engine: EngineFacts | None) -> list[Finding]:
    if d.resources.nodes == 1 and s.multinode is None:
        return []
    version = engine.vllm_version if engine else None
    found = _contradicting_args(d, s)
    if s.multinode == "mp":
        found += _mp_version(version)
    if s.multinode == "ray" and engine is not None and engine.cpu_build:
        found.append(
            finding(
                "slurm.ray_cpu_build",
                "error",
                "the engine is vLLM's CPU build, which cannot run on Ray: vllm serve stops with "
                '"current platform cpu does not support ray"',
                'use a CUDA build of vLLM for Ray mode, or set target.slurm.multinode = "mp"',
                f"engine {engine.python}: {engine.vllm_distribution} {version}, torch "
                f"{engine.torch_version} (cuda {engine.torch_cuda})",
            )
        )
    return found


def _mp_version(version: str | None) -> list[Finding]:
    since = checks_data()["vllm"]["nnodes_since"]
    found = VllmVersion.parse_or_none(version)
    if found is None or found >= VllmVersion.parse(since):
        return []
    return [
        finding(
            "slurm.mp_needs_nnodes",
            "error",
            f"vLLM {version} has no --nnodes/--node-rank/--master-addr (first in {since}): "
            'vllm serve exits with "unrecognized arguments"',
            f'use an engine with vLLM >= {since}, or set target.slurm.multinode = "ray"',
            f"engine vLLM {version}; vLLM {since} engine/arg_utils.py, cli/serve.py",
        )
    ]


def _contradicting_args(d: Deployment, s: SlurmTarget) -> list[Finding]:
    args = d.serve.extra_args
    backend = serve_flag(args, "--distributed-executor-backend")
    nnodes = serve_flag(args, "--nnodes")
    found = []
    expected = s.multinode if s.multinode == "ray" else "mp"
    if backend is not None and backend != expected:
        found.append(
            finding(
                "slurm.executor_backend_contradicts",
                "error",
                f"serve.extra_args sets --distributed-executor-backend {backend} but "
                f"target.slurm.multinode = {s.multinode!r} needs {expected}: "
                + (
                    '"nnodes > 1 can only be set when distributed executor backend is mp"'
                    if expected == "mp"
                    else "vLLM will not use the Ray cluster the job starts"
                ),
                "remove --distributed-executor-backend from serve.extra_args (Hangar passes it)",
                f"serve.extra_args = {list(args)}; vLLM config/parallel.py",
            )
        )
    for flag in ("--nnodes", "--node-rank", "--master-addr", "--master-port", "--headless"):
        if any(a == flag or a.startswith(flag + "=") for a in args):
            found.append(
                finding(
                    "slurm.multinode_flag_in_extra_args",
                    "error"
                    if s.multinode == "ray" and flag == "--nnodes" and nnodes not in (None, "1")
                    else "warning",
                    f"serve.extra_args sets {flag}, which Hangar renders per node for "
                    f"multinode = {s.multinode!r}"
                    + (
                        ": with Ray, vLLM refuses nnodes > 1"
                        if s.multinode == "ray" and flag == "--nnodes"
                        else ""
                    ),
                    f"remove {flag} from serve.extra_args (for the port use target.slurm.master_port)",
                    f"serve.extra_args = {list(args)}",
                )
            )
    return found


# ---- checks: shared filesystem ------------------------------------------------------


def check_python(s: SlurmTarget, engine: EngineFacts | None, facts: SlurmFacts) -> list[Finding]:
    given = s.python
    path = given or (str(engine.python) if engine else None)
    if path is None:
        return []
    where = "target.slurm.python" if given else "the engine's interpreter"
    found = []
    if not Path(path).exists():
        found.append(
            finding(
                "slurm.python_missing",
                "warning" if given else "error",
                f"{where} {path} does not exist on this machine"
                + (
                    ": it cannot be checked; it must exist on every compute node"
                    if given
                    else ", so it cannot exist at the same path on the compute nodes"
                ),
                "set target.slurm.python to the engine's interpreter as the nodes see it "
                "(`hangar engines list`)",
                f"{where} = {path}: not found here",
            )
        )
    reason = node_local_reason(path, facts)
    if reason:
        found.append(_node_local("slurm.python_node_local", where, path, reason, facts))
    return found


def _node_local(fid: str, where: str, path: str, reason: str, facts: SlurmFacts) -> Finding:
    return finding(
        fid,
        "warning",
        f"{where} {path} is {reason}, which is local to each node: the compute nodes "
        "do not see this copy",
        f"move it to a shared filesystem (home, project or scratch space) and update {where}",
        fs_evidence(path, facts),
    )


def check_shared_paths(d: Deployment, facts: SlurmFacts, run_dir: Path | None) -> list[Finding]:
    found = []
    if run_dir is not None:
        reason = node_local_reason(str(run_dir), facts)
        if reason:
            found.append(
                _node_local("slurm.run_dir_node_local", "the run dir", str(run_dir), reason, facts)
            )
    model = d.model.id
    if model.startswith(("/", ".")):
        path = str(Path(model).resolve())
        reason = node_local_reason(path, facts)
        if reason:
            found.append(_node_local("slurm.model_node_local", "model.id", path, reason, facts))
    return found


def check_ray_args(d: Deployment, s: SlurmTarget) -> list[Finding]:
    if s.multinode != "ray":
        return ray_args_unused(s)
    found = ray_arg_findings("head", s.ray_head_args) + ray_owned("head", s.ray_head_args)
    found += ray_arg_findings("worker", s.ray_worker_args)
    return found + ray_owned("worker", s.ray_worker_args)


