"""Preflight: the plan's rule findings + host checks + the workarounds that will apply.

``preflight(deployment)`` probes this host once (no GPU needed, well under a second
without one) and returns a frozen report. Launch refuses when it holds an error.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from hangar.deploy.schema import (
    ContainerTargetSection,
    Deployment,
    LocalTargetSection,
    SlurmTargetSection,
)
from hangar.errors import HangarError
from hangar.hardware.spec import GpuSpec
from hangar.models.config import config_features
from hangar.paths import engine_cache_dir, runs_root
from hangar.planning.plan import default_utilization
from hangar.planning.serve import options_for, serve_flags
from hangar.planning.versions import DEFAULT_VLLM_VERSION, VllmVersion
from hangar.preflight import plan_bridge
from hangar.preflight.checks import (
    CHECKS,
    SUBMIT_HOST_CHECKS,
    CheckInput,
    host_findings,
    relevant_env,
)
from hangar.preflight.engine import EngineFacts, probe_engine
from hangar.preflight.findings import Finding, has_errors, sort_findings
from hangar.preflight.probe import (
    RELEVANT_ENV,
    HostFacts,
    find_nvcc,
    in_wsl,
    interfaces,
    port_in_use,
    probe_dir,
    probe_nvidia,
    probe_ulimits,
    stale_temp_files,
)
from hangar.preflight.weights import WeightsFacts, probe_weights, read_config
from hangar.workarounds import Applied, Facts, Workaround, applicable, apply


class PreflightReport(BaseModel):
    model_config = ConfigDict(frozen=True)

    findings: tuple[Finding, ...]
    workarounds: tuple[Workaround, ...]
    applied: Applied
    engine: EngineFacts | None
    host: HostFacts
    seconds: float

    @property
    def ok(self) -> bool:
        return not has_errors(list(self.findings))

    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]


def lookup_gpu(name: str | None) -> GpuSpec | None:
    if name is None:
        return None
    from hangar.errors import InputError, UnknownGpu
    from hangar.hardware import lookup

    try:
        return lookup(name)
    except UnknownGpu as exc:
        # The name comes from the deployment (resources.gpu) or its --gpu override.
        raise InputError(
            f"unknown GPU '{name}'", field="resources.gpu (or --gpu)", hint=exc.hint
        ) from exc


def _default_util(engine: EngineFacts | None) -> float:
    """vLLM's own default for the engine's version (the newest known when unknown)."""
    version = VllmVersion.parse_or_none(engine.vllm_version) if engine else None
    return default_utilization(version or VllmVersion.parse(DEFAULT_VLLM_VERSION))


def bind_address(d: Deployment) -> tuple[str, int]:
    """Where the server will listen, as far as this host can tell."""
    if isinstance(d.target, LocalTargetSection):
        return d.target.local.host, d.target.local.port
    if isinstance(d.target, ContainerTargetSection):
        return d.target.container.host, d.target.container.port
    return d.target.slurm.host or "0.0.0.0", d.target.slurm.port


def _slurm_findings(
    d: Deployment, engine: EngineFacts | None, env: dict[str, str]
) -> list[Finding]:
    from hangar.preflight.slurm import probe_slurm, slurm_findings
    from hangar.preflight.slurm_container import slurm_container_findings

    # Inside an allocation (SLURM_JOB_ID) a local launch is checked against it too.
    facts = probe_slurm(d, env)
    found: list[Finding] = slurm_findings(d, facts, engine, run_dir=runs_root())
    return found + slurm_container_findings(d, facts, env)


def _engine_for(d: Deployment, env: dict[str, str]) -> tuple[EngineFacts | None, list[Finding]]:
    """The engine as the server will have it: the image's for containers (on one host or on
    the Slurm nodes), the engine's interpreter here otherwise."""
    if isinstance(d.target, ContainerTargetSection):
        return _container_findings(d, env)
    if isinstance(d.target, SlurmTargetSection) and d.target.container is not None:
        from hangar.preflight.slurm_container import slurm_container_engine

        return slurm_container_engine(d), []
    return _engine_facts(d)


def _container_findings(
    d: Deployment, env: dict[str, str]
) -> tuple[EngineFacts | None, list[Finding]]:
    from hangar.preflight.container import container_preflight

    # The engine is the image: its facts come from its files, not an interpreter here.
    assert isinstance(d.target, ContainerTargetSection)
    return container_preflight(d, d.target.container, env)


def probe_host(d: Deployment, engine: EngineFacts | None, env: Mapping[str, str]) -> HostFacts:
    from hangar.engines.resolve import engine_key

    host, port = bind_address(d)
    tmp = Path(env.get("TMPDIR") or "/tmp")
    return HostFacts(
        ulimits=probe_ulimits(),
        tmp=probe_dir(tmp),
        run_root=probe_dir(runs_root()),
        cache_root=probe_dir(engine_cache_dir(engine_key(d.engine))),
        stale=stale_temp_files(tmp),
        port_in_use=port_in_use(host, port) if d.target.kind == "local" else False,
        wsl=in_wsl(),
        nvcc=find_nvcc(env),
        interfaces=interfaces(),
        nvidia=probe_nvidia(env),
        engine=engine,
        env=relevant_env(env, d.env, RELEVANT_ENV),
    )


def _engine_facts(d: Deployment) -> tuple[EngineFacts | None, list[Finding]]:
    from hangar.engines.resolve import resolve_engine

    try:
        return probe_engine(resolve_engine(d.engine)), []
    except HangarError as exc:
        return None, [
            Finding(
                id="host.engine.unknown",
                severity="error",
                message=exc.message,
                fix=exc.hint or "",
                evidence=f"engine = {d.engine!r}",
            )
        ]


def workaround_facts(
    d: Deployment,
    gpu: GpuSpec | None,
    engine: EngineFacts | None,
    host: HostFacts,
    weights: WeightsFacts,
) -> Facts:
    config = read_config(weights)
    return Facts(
        gpu=gpu,
        gpus=d.resources.gpus,
        tp=d.parallel.tensor,
        cuda=None if engine is None or engine.torch_version is None else not engine.cpu_build,
        nvcc=host.nvcc is not None,
        flashinfer_prebuilt=None if engine is None else engine.flashinfer_prebuilt,
        wsl=host.wsl,
        vllm_version=engine.vllm_version if engine else None,
        model=config_features(config, str(weights.config_path or 'config.json'))
        if config is not None
        else None,
        kv_cache_dtype=d.serve.kv_cache_dtype,
    )


def workaround_findings(workarounds: list[Workaround], applied: Applied) -> list[Finding]:
    out = [
        Finding(
            id=f"workaround.{w.id}",
            severity="info",
            source="workaround",
            message=f"applies workaround {w.id}: {w.title}",
            evidence=" ".join([*(f"{k}={v}" for k, v in w.env.items()), *w.args]),
            fix=w.upstream[0],
        )
        for w in workarounds
    ]
    out += [
        Finding(
            id=f"workaround.{o.workaround}.overridden",
            severity="warning",
            source="workaround",
            message=f"your {o.kind} {o.name} ({o.user_value}) replaces workaround {o.workaround}'s {o.workaround_value}",
            evidence=o.workaround_value,
            fix=f"hangar workarounds show {o.workaround}   (why it exists)",
        )
        for o in applied.overrides
    ]
    return out


def preflight(
    d: Deployment,
    *,
    env: Mapping[str, str] | None = None,
    other_runs_util: Mapping[str, float] | None = None,
    with_plan: bool = True,
) -> PreflightReport:
    """All checks for deploying ``d`` on this host; never raises for a finding."""
    started = time.perf_counter()
    environ = dict(os.environ if env is None else env)
    gpu = lookup_gpu(d.resources.gpu)
    engine, findings = _engine_for(d, environ)
    host = probe_host(d, engine, environ)
    weights = probe_weights(d.model.id, {**environ, **d.env}, d.model.revision)
    bind_host, bind_port = bind_address(d)
    request = CheckInput(
        host=bind_host,
        port=bind_port,
        gpus=d.resources.gpus,
        nodes=d.resources.nodes,
        tp=d.parallel.tensor,
        gpu=gpu,
        gpu_memory_utilization=d.serve.gpu_memory_utilization or _default_util(engine),
        env=host.env,
        other_runs_util=dict(other_runs_util or {}),
        weights=weights,
    )
    local = d.target.kind == "local"
    findings += host_findings(host, request, CHECKS if local else SUBMIT_HOST_CHECKS)
    if isinstance(d.target, SlurmTargetSection) or environ.get("SLURM_JOB_ID"):
        findings += _slurm_findings(d, engine, environ)
    chosen = applicable(workaround_facts(d, gpu, engine, host, weights))
    applied = apply(chosen, d.env, list(serve_flags(options_for(d))))
    findings += workaround_findings(chosen, applied)
    if with_plan:
        findings += plan_bridge.plan_findings(d, engine.vllm_version if engine else None)
    return PreflightReport(
        findings=tuple(sort_findings(findings)),
        workarounds=tuple(chosen),
        applied=applied,
        engine=engine,
        host=host,
        seconds=round(time.perf_counter() - started, 3),
    )
