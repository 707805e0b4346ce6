"""The serving port (taken, exposed) and NCCL/GLOO socket interface names."""

from __future__ import annotations

from hangar.preflight.checks.inputs import CheckInput
from hangar.preflight.findings import Finding
from hangar.preflight.probe import HostFacts

_LOOPBACK = ("127.0.0.1", "localhost", "::1")
_IFNAME_VARS = ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME")


def _port_taken(facts: HostFacts, req: CheckInput) -> Finding | None:
    if not facts.port_in_use:
        return None
    return Finding(
        id="host.port.in_use",
        severity="error",
        evidence=f"bind {req.host}:{req.port} failed: address in use",
        message=f"port {req.port} on {req.host} is already taken; vLLM binds it before loading the model and exits",
        fix=f"stop what listens there (ss -ltnp 'sport = :{req.port}') or set target.local.port",
    )


def _port_exposed(req: CheckInput) -> Finding | None:
    if req.host in _LOOPBACK:
        return None
    return Finding(
        id="host.port.exposed",
        severity="info",
        evidence=f"host = {req.host}",
        message=f"the server will listen on {req.host}, reachable from other machines",
        fix="bind 127.0.0.1 unless clients on other hosts need it; set VLLM_API_KEY in env to require a key",
    )


def check_port(facts: HostFacts, req: CheckInput) -> list[Finding]:
    found = (_port_taken(facts, req), _port_exposed(req))
    return [f for f in found if f is not None]


def _ifname_matches(spec: str, names: tuple[str, ...]) -> bool:
    # NCCL syntax: comma list of prefixes; '^' excludes, '=' asks for exact names.
    exclude = spec.startswith("^")
    body = spec.lstrip("^")
    exact = body.startswith("=")
    wanted = [p for p in body.lstrip("=").split(",") if p]
    hit = [n for n in names if any((n == p) if exact else n.startswith(p) for p in wanted)]
    return bool(set(names) - set(hit)) if exclude else bool(hit)


def _ifname_finding(var: str, spec: str, names: tuple[str, ...]) -> Finding:
    return Finding(
        id="host.net.ifname",
        severity="error",
        evidence=f"{var}={spec}; interfaces: {', '.join(names)}",
        message=f"{var}={spec} names no network interface on this host; distributed init will time out",
        fix=f"set {var} to one of: {', '.join(n for n in names if n != 'lo')}",
    )


def check_socket_ifnames(facts: HostFacts, req: CheckInput) -> list[Finding]:
    names = facts.interfaces
    return [
        _ifname_finding(var, spec, names)
        for var in _IFNAME_VARS
        if (spec := req.env.get(var)) and not _ifname_matches(spec, names)
    ]
