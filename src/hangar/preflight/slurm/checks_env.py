"""Checks: inside an allocation (salloc/sbatch env) and environment-variable traps (Ray, CUDA, host IP)."""

from __future__ import annotations

from hangar.deploy.schema import Deployment, SlurmTarget, SlurmTargetSection
from hangar.preflight.findings import Finding
from hangar.preflight.slurm.common import at_least, finding
from hangar.preflight.slurm.facts import SlurmAllocation, SlurmFacts, checks_data

# ---- checks: inside an allocation ---------------------------------------------------


def check_allocation(d: Deployment, facts: SlurmFacts) -> list[Finding]:
    a = facts.allocation
    if a is None:
        return []
    if isinstance(d.target, SlurmTargetSection):
        return [_nested_submit(a)]
    return _alloc_nodes(d, a) + _alloc_gpus(d, a)


def _alloc_evidence(a: SlurmAllocation) -> str:
    pairs = {
        "SLURM_JOB_ID": a.job_id,
        "SLURM_JOB_NUM_NODES": a.num_nodes,
        "SLURM_GPUS_ON_NODE": a.gpus_on_node,
        "SLURM_GPUS_PER_NODE": a.gpus_per_node,
        "SLURM_JOB_GPUS": a.job_gpus,
        "SLURM_STEP_ID": a.step_id,
        "CUDA_VISIBLE_DEVICES": a.cuda_visible_devices,
        "SLURM_JOB_PARTITION": a.partition,
    }
    return "env: " + " ".join(f"{k}={v}" for k, v in pairs.items() if v is not None)


def _nested_submit(a: SlurmAllocation) -> Finding:
    return finding(
        "slurm.inside_allocation",
        "info",
        f"running inside job {a.job_id}: sbatch submits a separate job with its own nodes "
        "and GPUs; this allocation is not used",
        'to serve on this allocation instead, set target.kind = "local" (one node)',
        _alloc_evidence(a),
    )


def _alloc_nodes(d: Deployment, a: SlurmAllocation) -> list[Finding]:
    if a.num_nodes is None or a.num_nodes <= 1:
        return []
    return [
        finding(
            "slurm.allocation_nodes",
            "warning",
            f"the allocation has {a.num_nodes} nodes but a local launch runs on this node "
            "only; the other nodes idle",
            'use target.kind = "slurm" with resources.nodes = '
            f"{a.num_nodes} to span them, or salloc -N1",
            _alloc_evidence(a),
        )
    ]


def _alloc_gpus(d: Deployment, a: SlurmAllocation) -> list[Finding]:
    visible, want = a.visible_gpus, d.resources.gpus
    found = []
    if visible is None or visible < want:
        seen = "no GPUs" if not visible else f"{visible} GPU(s)"
        found.append(
            finding(
                "slurm.allocation_gpus",
                "error",
                f"this allocation gives this node {seen} but the deployment needs {want}: "
                "vLLM fails to start its ranks",
                f"salloc again with --gpus-per-node={want} (or --gres=gpu:{want}), or set "
                f"resources.gpus = {visible or 0} and the layout to match",
                _alloc_evidence(a),
            )
        )
    if (
        a.cuda_visible_devices is not None
        and a.gpus_on_node is not None
        and a.visible_gpus != a.gpus_on_node
    ):
        # Slurm sets CVD to the step's GPUs; a different count was changed by hand.
        found.append(
            finding(
                "slurm.allocation_cvd_mismatch",
                "warning",
                f"CUDA_VISIBLE_DEVICES lists {a.visible_gpus} GPU(s) but Slurm gave this node "
                f"{a.gpus_on_node}: it was changed after Slurm set it",
                "unset CUDA_VISIBLE_DEVICES in this shell (Slurm sets it per step), or use "
                "target.local.cuda_visible_devices",
                _alloc_evidence(a),
            )
        )
    return found


# ---- checks: environment traps ------------------------------------------------------


def _all_values(d: Deployment, s: SlurmTarget) -> list[tuple[str, str]]:
    pairs = [(f"env.{k}", v) for k, v in d.env.items()]
    pairs += [("target.slurm.ray_head_args", a) for a in s.ray_head_args]
    pairs += [("target.slurm.ray_worker_args", a) for a in s.ray_worker_args]
    pairs += [("serve.extra_args", a) for a in d.serve.extra_args]
    return pairs


def check_env_vars_used(d: Deployment, s: SlurmTarget, facts: SlurmFacts) -> list[Finding]:
    found = []
    for where, value in _all_values(d, s):
        if "SLURM_GPUS_PER_TASK" in value:
            found.append(_gpus_per_task(where, value, facts))
        elif "SLURM_JOB_GPUS" in value:
            found.append(
                finding(
                    "slurm.job_gpus_var",
                    "warning",
                    "SLURM_JOB_GPUS describes the batch node only: srun steps on other nodes "
                    "inherit node 0's GPU ids unchanged",
                    f"remove it from {where}; Hangar passes each node's own count "
                    "(SLURM_GPUS_ON_NODE / CUDA_VISIBLE_DEVICES inside the step)",
                    f"{where} = {value!r}; multinode.md §4.1 (Slurm gres_common.c:255-320)",
                )
            )
    return found


def _gpus_per_task(where: str, value: str, facts: SlurmFacts) -> Finding:
    gone = checks_data()["slurm"]["gpus_per_task_env_removed_in"]
    removed = at_least(facts.version, gone)
    return finding(
        "slurm.gpus_per_task_var",
        "error" if removed else "warning",
        f"SLURM_GPUS_PER_TASK is not exported since Slurm {gone}"
        + (f" (this cluster runs {facts.version})" if facts.version else "")
        + ", and Hangar passes values literally: Ray or vLLM gets a wrong GPU count",
        f"remove it from {where}; Hangar renders --num-gpus from the node's own GPU count",
        f"{where} = {value!r}; Slurm commit 475e4a611b (23.11.0rc1)",
    )


def check_ray_env(d: Deployment, s: SlurmTarget, ray_version: str | None) -> list[Finding]:
    if s.multinode != "ray":
        return []
    found = []
    address = d.env.get("RAY_ADDRESS")
    if address is not None and ("://" in address or not address.strip()):
        found.append(
            finding(
                "slurm.ray_address_bad",
                "error",
                "RAY_ADDRESS "
                + (
                    "is empty: vLLM's ray.init(address=None) then starts a private local Ray and "
                    "waits ~42 min for a placement group that cannot fit"
                    if not address.strip()
                    else "is a URL: ray.init switches to Ray Client instead of joining the job's "
                    "cluster"
                ),
                "remove RAY_ADDRESS from [env]; Hangar exports head-ip:ray_port to vLLM",
                f"env.RAY_ADDRESS = {address!r}; vLLM v1/executor/ray_utils.py:321, Ray worker.py:1515-1531",
            )
        )
    elif address is not None:
        found.append(
            finding(
                "slurm.ray_address_override",
                "warning",
                "RAY_ADDRESS in [env] overrides the address of the job's own Ray head: vLLM joins "
                "whatever cluster it names",
                "remove RAY_ADDRESS from [env]; Hangar exports head-ip:ray_port itself",
                f"env.RAY_ADDRESS = {address!r}",
            )
        )
    found += _check_auth_mode(d, ray_version)
    return found


def _check_auth_mode(d: Deployment, ray_version: str | None) -> list[Finding]:
    mode = d.env.get("RAY_AUTH_MODE")
    if mode is None or mode.lower() != "token":
        return []  # unset: Hangar exports RAY_AUTH_MODE=disabled on every node
    if "RAY_AUTH_TOKEN" in d.env or "RAY_AUTH_TOKEN_PATH" in d.env:
        return []
    return [
        finding(
            "slurm.ray_auth_token_missing",
            "warning",
            "RAY_AUTH_MODE=token without RAY_AUTH_TOKEN or RAY_AUTH_TOKEN_PATH: every node then "
            "reads ~/.ray/auth_token, and a worker without the same token fails with "
            '"InvalidAuthToken"',
            "set RAY_AUTH_TOKEN_PATH in [env] to a 0600 file on the shared filesystem, or drop "
            "RAY_AUTH_MODE (Hangar then runs Ray with RAY_AUTH_MODE=disabled)",
            f"env.RAY_AUTH_MODE = {mode}; engine's Ray {ray_version}; Ray 2.59+ "
            "_private/authentication/authentication_token_setup.py",
        )
    ]


def check_host_ip(d: Deployment) -> list[Finding]:
    if d.resources.nodes == 1 or "VLLM_HOST_IP" not in d.env:
        return []
    return [
        finding(
            "slurm.vllm_host_ip_global",
            "error",
            'VLLM_HOST_IP in [env] gives every node the same IP: Ray mode fails with "Every node '
            'should have a unique IP address", mp mode cannot bind its queues on the other nodes',
            "remove VLLM_HOST_IP from [env]; Hangar sets it per node from the node's own address "
            "(target.slurm.network_interface picks the NIC)",
            f"env.VLLM_HOST_IP = {d.env['VLLM_HOST_IP']!r}; resources.nodes = {d.resources.nodes}; "
            "vLLM ray_executor.py:296-306 (0.20)",
        )
    ]


