"""ulimit checks: one table row per limit that vLLM workers run into, one function per row."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from hangar.preflight.checks.inputs import CheckInput
from hangar.preflight.findings import Finding, Severity
from hangar.preflight.probe import HostFacts, Ulimit

# vLLM raises RLIMIT_NOFILE to 65535 itself when the hard limit allows
# (vllm/utils/system_utils.py set_ulimit); below that it logs "Found ulimit of N and
# failed to automatically increase" and big servers run out of sockets/files.
NOFILE_WANTED = 65535
NPROC_MIN = 4096  # threads count against -u: each worker runs torch/NCCL/OMP pools
NPROC_RAISE_CAP = 65536  # the most a fix suggests raising -u to
STACK_MIN_KIB = 8192
MEMLOCK_MIN_KIB = 64 * 1024  # NCCL/IB register host buffers across nodes


class LimitRule(BaseModel):
    """When one ulimit is too low, and the finding that says so.

    ``evidence``, ``message`` and ``fix`` are ``str.format`` templates over ``soft``,
    ``hard`` and ``below`` (in ``ulimit`` units, "unlimited" for none) and ``raise_to``
    (the hard limit capped at NPROC_RAISE_CAP, or ``below`` when the hard limit is unlimited).
    """

    model_config = ConfigDict(frozen=True)

    id: str
    flag: str  # the `ulimit` option in HostFacts.ulimits (probe.py maps it to its RLIMIT_*)
    side: Literal["soft", "hard"]  # the value compared with `below`
    below: int | None  # too low under this (bytes or count); None: any finite value is too low
    hard: Literal["any", "finite", "unlimited"] = "any"  # what the hard limit must be
    min_nodes: int = 1
    severity: Severity = "warning"
    evidence: str
    message: str
    fix: str


# CUDA reserves virtual address space far beyond physical memory in every worker
# process; a finite -v shows up as mmap/"cannot allocate memory"/import failures.
# The user can lift a soft limit alone (warning); a finite hard one needs the admin (error).
_AS_EVIDENCE = "ulimit -v soft={soft} hard={hard} (KiB)"
LIMIT_RULES: tuple[LimitRule, ...] = (
    LimitRule(
        id="host.ulimit.address_space",
        flag="-v",
        side="soft",
        below=None,
        hard="unlimited",
        evidence=_AS_EVIDENCE,
        message="address-space limit is {soft} KiB; each vLLM worker process maps far more virtual memory than it uses. Hangar raises it for servers it launches.",
        fix="ulimit -v unlimited   (for vllm serve started by hand)",
    ),
    LimitRule(
        id="host.ulimit.address_space",
        flag="-v",
        side="soft",
        below=None,
        hard="finite",
        severity="error",
        evidence=_AS_EVIDENCE,
        message="hard address-space limit is {hard} KiB; vLLM (CUDA) will fail with 'cannot allocate memory' or import errors, worse with each tensor-parallel worker",
        fix="ask the admin to lift it: '* hard as unlimited' in /etc/security/limits.conf (or the scheduler's memory limit instead of -v), then log in again",
    ),
    LimitRule(
        id="host.ulimit.open_files",
        flag="-n",
        side="hard",
        below=NOFILE_WANTED,
        evidence="ulimit -n soft={soft} hard={hard}",
        message="open-files hard limit {hard} is below the {below} vLLM tries to set; many concurrent requests can fail with 'Too many open files'",
        fix="'* hard nofile {below}' in /etc/security/limits.conf, then: ulimit -n {below}",
    ),
    LimitRule(
        id="host.ulimit.processes",
        flag="-u",
        side="soft",
        below=NPROC_MIN,
        evidence="ulimit -u soft={soft} hard={hard}",
        message="process/thread limit {soft} is low: every vLLM worker starts dozens of threads (torch, OpenMP, NCCL) and they all count",
        fix="ulimit -u {raise_to}",
    ),
    LimitRule(
        id="host.ulimit.stack",
        flag="-s",
        side="soft",
        below=STACK_MIN_KIB * 1024,
        evidence="ulimit -s soft={soft} KiB",
        message="stack limit below 8 MiB; torch.compile (dynamo) recursion can overflow it",
        fix="ulimit -s {below}",
    ),
    LimitRule(
        id="host.ulimit.locked_memory",
        flag="-l",
        side="soft",
        below=MEMLOCK_MIN_KIB * 1024,
        min_nodes=2,
        evidence="ulimit -l soft={soft} KiB hard={hard}",
        message="locked-memory limit is small for a multi-node run: NCCL over InfiniBand/RoCE registers (pins) communication buffers",
        fix="ulimit -l unlimited   ('* hard memlock unlimited' in /etc/security/limits.conf)",
    ),
)


def _ulimit_value(limit: Ulimit, value: int | None) -> str:
    return "unlimited" if value is None else str(value // limit.unit if limit.unit > 1 else value)


def _limit(facts: HostFacts, flag: str) -> Ulimit:
    return next(u for u in facts.ulimits if u.flag == flag)


def _too_low(rule: LimitRule, limit: Ulimit, req: CheckInput) -> bool:
    value = limit.soft if rule.side == "soft" else limit.hard
    if value is None or req.nodes < rule.min_nodes:
        return False
    if rule.hard != "any" and (limit.hard is None) != (rule.hard == "unlimited"):
        return False
    return rule.below is None or value < rule.below


def _template_values(rule: LimitRule, limit: Ulimit) -> dict[str, str | int]:
    raise_to = rule.below if limit.hard is None else min(limit.hard, NPROC_RAISE_CAP)
    return {
        "soft": _ulimit_value(limit, limit.soft),
        "hard": _ulimit_value(limit, limit.hard),
        "below": _ulimit_value(limit, rule.below),
        "raise_to": "unlimited" if raise_to is None else raise_to,
    }


def check_limit(rule: LimitRule, facts: HostFacts, req: CheckInput) -> list[Finding]:
    limit = _limit(facts, rule.flag)
    if not _too_low(rule, limit, req):
        return []
    values = _template_values(rule, limit)
    return [
        Finding(
            id=rule.id,
            severity=rule.severity,
            evidence=rule.evidence.format(**values),
            message=rule.message.format(**values),
            fix=rule.fix.format(**values),
        )
    ]


def check_ulimits(facts: HostFacts, req: CheckInput) -> list[Finding]:
    return [f for rule in LIMIT_RULES for f in check_limit(rule, facts, req)]
