"""Small helpers shared by the check families."""

from __future__ import annotations

from collections.abc import Sequence

from packaging.version import InvalidVersion, Version

from hangar.deploy.schema import SlurmTarget
from hangar.preflight.engine import EngineFacts
from hangar.preflight.findings import Finding, Severity
from hangar.preflight.slurm.facts import Mount, SlurmFacts, checks_data, ray_start_options
from hangar.preflight.slurm.parse import parse_time_s

# ---- helpers for the checks ---------------------------------------------------------


def job_time_s(s: SlurmTarget) -> int | None:
    return parse_time_s(s.time) if s.time else None


def _version(text: str | None) -> Version | None:
    if not text:
        return None
    try:
        return Version(text)
    except InvalidVersion:
        return None


def at_least(found: str | None, since: str) -> bool | None:
    v = _version(found)
    return None if v is None else v.release >= Version(since).release


def finding(fid: str, severity: Severity, message: str, fix: str, evidence: str) -> Finding:
    return Finding(
        id=fid,
        severity=severity,
        message=message,
        fix=fix,
        evidence=evidence,
        source="host",
    )


def parse_ray_args(args: Sequence[str]) -> list[tuple[str, str | None]]:
    """``ray start`` args -> [(option, value)]; ``--a=1``, ``--a 1`` and flags alike."""
    flags = set(ray_start_options()["flags"])
    out: list[tuple[str, str | None]] = []
    i = 0
    while i < len(args):
        arg = args[i]
        name, eq, value = arg.partition("=")
        if eq or not arg.startswith("-"):
            out.append((name, value if eq else None))
        elif name in flags or i + 1 >= len(args) or args[i + 1].startswith("--"):
            out.append((name, None))
        else:
            out.append((name, args[i + 1]))
            i += 1
        i += 1
    return out


def engine_ray_version(engine: EngineFacts | None) -> str | None:
    """Ray's version in the engine's site-packages, from the dist-info directory name."""
    if engine is None:
        return None
    for site in engine.site_packages:
        for info in sorted(site.glob("ray-*.dist-info")):
            return info.name[len("ray-") : -len(".dist-info")]
    return None


def serve_flag(args: Sequence[str], flag: str) -> str | None:
    """The value of ``flag`` in vllm serve extra args (``--f v`` or ``--f=v``); last wins."""
    found = None
    for arg, following in zip(args, [*args[1:], None]):
        if arg == flag:
            found = following or ""
        elif arg.startswith(flag + "="):
            found = arg.split("=", 1)[1]
    return found


def _mount_of(path: str, mounts: Sequence[Mount]) -> Mount | None:
    best = None
    for m in mounts:
        root = m.path.rstrip("/") or "/"
        if (path == root or path.startswith(root.rstrip("/") + "/")) and (
            best is None or len(root) > len(best.path)
        ):
            best = m
    return best


def node_local_reason(path: str, facts: SlurmFacts) -> str | None:
    """Why ``path`` is probably local to one node, or None when it looks shared."""
    checks = checks_data()
    prefixes = list(checks["node_local_prefixes"])
    if facts.tmpdir:
        prefixes.append(facts.tmpdir.rstrip("/"))
    for prefix in sorted(prefixes, key=len, reverse=True):  # $TMPDIR=/tmp/job.1 before /tmp
        if path == prefix or path.startswith(prefix.rstrip("/") + "/"):
            via = " ($TMPDIR)" if prefix == (facts.tmpdir or "").rstrip("/") else ""
            return f"under {prefix}{via}"
    mount = _mount_of(path, facts.mounts)
    if mount is not None and mount.fstype in checks["node_local_fs_types"]:
        return f"on a {mount.fstype} filesystem mounted at {mount.path}"
    return None


def fs_evidence(path: str, facts: SlurmFacts) -> str:
    mount = _mount_of(path, facts.mounts)
    return f"{path} is on {mount.fstype} ({mount.path})" if mount else path


