"""Run/cache directories (writable, free space) and stale vLLM/Ray files in the shared temp dir."""

from __future__ import annotations

from hangar.preflight.checks.inputs import CheckInput
from hangar.preflight.findings import Finding, Severity, gib
from hangar.preflight.probe import DirFacts, HostFacts

TMP_FREE_WARN = 10 * 2**30  # torch.compile, Triton and FlashInfer caches, IPC files
TMP_FREE_ERROR = 1 * 2**30
_STALE_SAMPLE = 5  # paths named in the fix


def _dir_finding(label: str, d: DirFacts) -> Finding | None:
    if not d.writable:
        return Finding(
            id="host.dir.not_writable",
            severity="error",
            evidence=str(d.path),
            message=f"{label} {d.path} is not writable",
            fix="set HANGAR_HOME to a writable directory",
        )
    if d.free_bytes is None or d.free_bytes >= TMP_FREE_WARN:
        return None
    severity: Severity = "error" if d.free_bytes < TMP_FREE_ERROR else "warning"
    return Finding(
        id="host.dir.low_space",
        severity=severity,
        evidence=f"{d.path}: {gib(d.free_bytes)} free",
        message=f"{label} has only {gib(d.free_bytes)} free; compile caches and temp files need several GiB",
        fix="free space there or set HANGAR_HOME to a bigger disk",
    )


def check_dirs(facts: HostFacts, req: CheckInput) -> list[Finding]:
    found = (
        _dir_finding("run dir (TMPDIR, logs)", facts.run_root),
        _dir_finding("engine cache dir", facts.cache_root),
    )
    return [f for f in found if f is not None]


def check_stale_files(facts: HostFacts, req: CheckInput) -> list[Finding]:
    stale = facts.stale
    if not stale:
        return []
    total = sum(s.size_bytes for s in stale)
    kinds = sorted({s.kind for s in stale})
    sample = " ".join(str(s.path) for s in stale[:_STALE_SAMPLE])
    more = " ..." if len(stale) > _STALE_SAMPLE else ""
    return [
        Finding(
            id="host.tmp.stale_files",
            severity="warning",
            evidence=f"{len(stale)} in {facts.tmp.path} ({gib(total)}): {', '.join(kinds)}",
            message=f"{len(stale)} leftovers of earlier vLLM/Ray runs in the shared temp dir {facts.tmp.path}; they fill the disk and stale IPC sockets confuse new servers",
            fix=f"check they are yours, then: rm -rf {sample}{more}",
        )
    ]
