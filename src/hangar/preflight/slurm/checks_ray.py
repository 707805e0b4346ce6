"""Checks: Ray head/worker options, ports, Ray temp dir (socket path length), object store size."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hangar.deploy.schema import SlurmTarget
from hangar.preflight.findings import Finding, Severity
from hangar.preflight.slurm.common import finding, parse_ray_args
from hangar.preflight.slurm.facts import (
    RAY_OPTIONS_FILE,
    SlurmFacts,
    checks_data,
    ray_start_options,
)
from hangar.preflight.slurm.parse import parse_mem_mb

# ---- checks: Ray options, ports, temp dir, object store -----------------------------


def ray_arg_findings(role: str, args: Sequence[str]) -> list[Finding]:
    opts = ray_start_options()
    known = set(opts["head_only"]) | set(opts["worker_only"]) | set(opts["common"])
    wrong = set(opts["worker_only"]) if role == "head" else set(opts["head_only"])
    field = f"target.slurm.ray_{role}_args"
    found = []
    for name, value in parse_ray_args(args):
        shown = name if value is None else f"{name}={value}"
        if name not in known:
            found.append(_ray_unknown(field, shown, name))
        elif name in wrong and name not in opts["set_by_hangar"]:  # those: ray_owned
            found.append(_ray_misplaced(role, field, shown, name, opts))
    return found


def ray_owned(role: str, args: Sequence[str]) -> list[Finding]:
    """User Ray args naming an option the rendered script sets itself on every node."""
    owned: Mapping[str, str] = ray_start_options()["set_by_hangar"]
    field = f"target.slurm.ray_{role}_args"
    return [
        finding(
            "slurm.ray_arg_set_by_hangar",
            "error",
            f"{name} in {field} is set by Hangar on every node ({owned[name]}): the "
            "renderer refuses the job rather than run Ray with two values",
            f"remove {name} from {field}" + (f"; use {owned[name]}" if "." in owned[name] else ""),
            f"{field} = {list(args)}; set_by_hangar in preflight/data/{RAY_OPTIONS_FILE}",
        )
        for name, _ in parse_ray_args(args)
        if name in owned
    ]


def ray_args_unused(s: SlurmTarget) -> list[Finding]:
    if s.multinode == "ray" or not (s.ray_head_args or s.ray_worker_args):
        return []
    return [
        finding(
            "slurm.ray_args_unused",
            "info",
            f"ray_head_args / ray_worker_args are set but multinode = {s.multinode!r} starts no Ray",
            'remove them, or set target.slurm.multinode = "ray"',
            f"ray_head_args = {list(s.ray_head_args)}; ray_worker_args = {list(s.ray_worker_args)}",
        )
    ]


def _ray_unknown(field: str, shown: str, name: str) -> Finding:
    return finding(
        "slurm.ray_arg_unknown",
        "error",
        f'{name} is not a `ray start` option: ray start exits with "No such option: {name}"',
        f"remove {shown!r} from {field} (options: `ray start --help`)",
        f"{field} has {shown!r}; {ray_start_options()['source']}",
    )


def _ray_misplaced(
    role: str, field: str, shown: str, name: str, opts: Mapping[str, Any]
) -> Finding:
    src = opts["source"]
    if role == "head":
        # --head --address=X turns into "external Redis at X" (scripts.py:1005-1040).
        return finding(
            "slurm.ray_head_arg_worker_only",
            "error",
            f"{name} is a worker option: with --head Ray takes it as an external Redis "
            "address and the head never comes up as a normal GCS",
            f"remove {shown!r} from {field}; Hangar gives workers the head's address itself",
            f"{field} has {shown!r}; worker_only in {src}",
        )
    # Ray aborts on some, ignores the rest; Hangar's renderer refuses both, so never silent.
    refuses = name in opts["worker_refuses"]
    fix_to = "target.slurm.ray_port" if name == "--port" else "target.slurm.ray_head_args"
    return finding(
        "slurm.ray_worker_arg_head_only",
        "error",
        f"{name} is a head-only option: "
        + (
            '`ray start` on a worker exits with "' + name + " should only be specified when "
            'starting head node with `--head`."'
            if refuses
            else "a worker ignores it silently, so it has no effect; Hangar's renderer "
            "refuses it rather than let Ray drop it"
        ),
        f"move {shown!r} to {fix_to}",
        f"{field} has {shown!r}; head_only in {src}",
    )


def _ray_arg_value(args: Sequence[str], name: str) -> str | None:
    found = None
    for opt, value in parse_ray_args(args):
        if opt == name:
            found = value
    return found


def _int_or_none(text: str | None) -> int | None:
    return int(text) if text is not None and text.strip().isdigit() else None


def _worker_range(args: Sequence[str]) -> tuple[int, int] | None:
    """Ray's worker port range on a node: --min/--max-worker-port, None with a port list."""
    if _ray_arg_value(args, "--worker-port-list") is not None:
        return None
    ports = ray_start_options()["ports"]
    lo = _int_or_none(_ray_arg_value(args, "--min-worker-port"))
    hi = _int_or_none(_ray_arg_value(args, "--max-worker-port"))
    lo = ports["min_worker_port"] if lo is None else lo
    hi = ports["max_worker_port"] if hi is None else hi
    return None if lo == 0 else (lo, hi)


def _ray_head_ports(s: SlurmTarget) -> dict[str, int]:
    """Ports Ray holds fixed on the head node (0 = random, left out)."""
    ports, args = ray_start_options()["ports"], s.ray_head_args
    found = {"Ray GCS (target.slurm.ray_port)": s.ray_port}
    dash = _int_or_none(_ray_arg_value(args, "--dashboard-port"))
    found["Ray dashboard (--dashboard-port)"] = ports["dashboard"] if dash is None else dash
    agent = _int_or_none(_ray_arg_value(args, "--dashboard-agent-listen-port"))
    found["Ray dashboard agent (--dashboard-agent-listen-port)"] = (
        ports["dashboard_agent_listen"] if agent is None else agent
    )
    client = _int_or_none(_ray_arg_value(args, "--ray-client-server-port"))
    found["Ray client server (--ray-client-server-port, with ray[client])"] = (
        ports["client_server"] if client is None else client
    )
    for opt in (
        "--node-manager-port",
        "--object-manager-port",
        "--metrics-export-port",
        "--dashboard-agent-grpc-port",
        "--runtime-env-agent-port",
    ):
        value = _int_or_none(_ray_arg_value(args, opt))
        if value:
            found[f"Ray {opt}"] = value
    return {k: v for k, v in found.items() if v}


def check_ports(s: SlurmTarget, worker_ports: tuple[int, int] | None) -> list[Finding]:
    used: dict[str, int] = {"vLLM API (target.slurm.port)": s.port}
    if s.multinode == "mp":
        used["vLLM --master-port (target.slurm.master_port)"] = s.master_port
    if s.multinode == "ray":
        used.update(_ray_head_ports(s))
    found = _port_clashes(used)
    if s.multinode == "ray":
        found += _worker_range_clashes(used, worker_ports or _worker_range(s.ray_head_args))
    return found


def _port_clashes(used: Mapping[str, int]) -> list[Finding]:
    by_port: dict[int, list[str]] = {}
    for what, port in used.items():
        by_port.setdefault(port, []).append(what)
    return [
        finding(
            "slurm.port_collision",
            "error",
            f"port {port} is used twice on the head node ({' and '.join(whats)}): the second "
            'to bind fails with "Address already in use"',
            f"give each its own port: change {whats[-1].split('(')[-1].rstrip(')')}",
            "; ".join(f"{w} = {p}" for w, p in used.items()),
        )
        for port, whats in by_port.items()
        if len(whats) > 1
    ]


def _worker_range_clashes(used: Mapping[str, int], rng: tuple[int, int] | None) -> list[Finding]:
    if rng is None:
        return []
    lo, hi = rng
    found = []
    for what, port in used.items():
        if not lo <= port <= hi:
            continue
        ray_own = what.startswith("Ray")
        found.append(
            finding(
                "slurm.port_in_ray_worker_range",
                "error" if ray_own else "warning",
                f"{what} = {port} is inside Ray's worker port range {lo}-{hi}: "
                + (
                    'ray start refuses it ("Ray component worker_ports is trying to use a '
                    f'port number {port} that is used by other components.")'
                    if ray_own
                    else "a Ray worker process may take it first, and vLLM then fails to bind"
                ),
                f"move {what.split('(')[-1].rstrip(')')} outside {lo}-{hi}, or move the range "
                "with --min-worker-port/--max-worker-port in ray_head_args and ray_worker_args",
                f"{what} = {port}; worker ports {lo}-{hi} (ray/_private/parameter.py:300-351)",
            )
        )
    return found


def check_shared_node_ports(s: SlurmTarget) -> list[Finding]:
    if s.multinode != "ray" or s.exclusive:
        return []
    return [
        finding(
            "slurm.ray_shared_node",
            "warning",
            "Ray mode on nodes that other jobs may share: a second Ray on the same node "
            "collides on the fixed ports (dashboard agent 52365, dashboard 8265, GCS, worker "
            'range 10002-19999) and fails with "Address already in use" or "Session name ... '
            'does not match persisted value"',
            "set target.slurm.exclusive = true, or give this job its own ports "
            "(ray_port, --dashboard-agent-listen-port, --min/--max-worker-port)",
            "target.slurm.exclusive = false; multinode.md §1.3, §5 row 8 (ray-project/ray#10154)",
        )
    ]


def ray_temp_dir(s: SlurmTarget) -> str:
    """Ray's temp dir on a node, as long as it can get: --temp-dir, else the job dir + /ray."""
    given = _ray_arg_value(s.ray_head_args, "--temp-dir")
    if given:
        return given
    checks = checks_data()
    root = (s.tmp_root or "/tmp").rstrip("/")
    return f"{root}{'x' * int(checks['job_temp_suffix_bytes'])}{checks['ray']['tmpdir_suffix']}"


def check_ray_temp(s: SlurmTarget) -> list[Finding]:
    if s.multinode != "ray":
        return []
    ray = checks_data()["ray"]
    temp = ray_temp_dir(s)
    n = len(temp.encode("utf-8"))
    best = n + 1 + ray["session_name_min_bytes"] + ray["socket_tail_min_bytes"]
    worst = n + 1 + ray["session_name_max_bytes"] + ray["socket_tail_max_bytes"]
    limit = ray["socket_path_max_bytes"]
    if worst <= limit:
        return []
    shape = "/session_<date>_<pid>/sockets/plasma_store[.N]"
    return [
        finding(
            "slurm.ray_socket_path_too_long",
            "error" if best > limit else "warning",
            f"Ray's socket path would be {best}-{worst} bytes, over the {limit}-byte AF_UNIX "
            'limit: ray start fails with "validate_socket_filename failed: AF_UNIX path '
            f'length cannot exceed {limit} bytes"',
            "set target.slurm.tmp_root to a short node-local path (e.g. /tmp) or a shorter "
            "--temp-dir; the Ray temp dir must stay under "
            f"{limit - 1 - ray['session_name_max_bytes'] - ray['socket_tail_max_bytes']} bytes",
            f"Ray temp dir (worst case) {temp!r} = {n} bytes + {shape}; "
            "ray/_private/utils.py validate_socket_filepath (Ray 2.60)",
        )
    ]


def _node_memory_mb(s: SlurmTarget, facts: SlurmFacts) -> tuple[int | None, str]:
    mems = [n.memory_mb for n in facts.nodes if n.memory_mb]
    if s.mem:
        return parse_mem_mb(s.mem), f"target.slurm.mem = {s.mem}"
    if mems:
        return min(mems), f"smallest RealMemory in partition: {min(mems)} MB"
    return None, "node memory unknown"


def check_object_store(s: SlurmTarget, facts: SlurmFacts) -> list[Finding]:
    if s.multinode != "ray":
        return []
    found = []
    for role, args in (("head", s.ray_head_args), ("worker", s.ray_worker_args)):
        value = _int_or_none(_ray_arg_value(args, "--object-store-memory"))
        if value is not None:
            found += _object_store(role, value, s, facts)
    return found


def _object_store(role: str, size: int, s: SlurmTarget, facts: SlurmFacts) -> list[Finding]:
    ray = checks_data()["ray"]
    mem_mb, where = _node_memory_mb(s, facts)
    field = f"target.slurm.ray_{role}_args"
    ev = f"{field}: --object-store-memory={size} ({size / 2**30:.1f} GiB); {where}"
    if size < ray["object_store_min_bytes"]:
        return [
            finding(
                "slurm.ray_object_store_too_small",
                "error",
                f"--object-store-memory {size} is below Ray's minimum {ray['object_store_min_bytes']}"
                ' bytes: ray start fails ("Attempting to cap object store memory usage...")',
                f"raise --object-store-memory in {field} (2-8 GiB is plenty for vLLM)",
                ev,
            )
        ]
    if mem_mb is None:
        return []
    mem = mem_mb * 2**20
    if size > mem:
        # The job's cgroup (--mem) or the node's RAM: Ray checks the node's total memory.
        sev: Severity = "warning" if s.mem else "error"
        return [
            finding(
                "slurm.ray_object_store_over_memory",
                sev,
                f"--object-store-memory ({size / 2**30:.1f} GiB) is more than the node memory "
                f'({mem_mb} MB): Ray refuses it ("The requested object store memory size is greater'
                ' than the total available memory.") or the job is killed for memory',
                f"lower --object-store-memory in {field} (vLLM moves tensors outside the object "
                "store; 2-8 GiB is plenty)",
                ev,
            )
        ]
    if size > ray["require_shm_bytes"] and size > mem // 2:
        return [
            finding(
                "slurm.ray_object_store_over_shm",
                "warning",
                f"--object-store-memory ({size / 2**30:.1f} GiB) is over 10 GB and over half the "
                'node memory, the usual /dev/shm size: Ray then fails ("exceeds /dev/shm size") '
                "unless /dev/shm on the nodes is larger",
                f"lower --object-store-memory in {field}, or check `df -h /dev/shm` on a node",
                ev + "; ray/_private/services.py:2231-2245",
            )
        ]
    return []


