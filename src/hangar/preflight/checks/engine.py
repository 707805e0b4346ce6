"""The engine interpreter (vLLM present, CPU build), its CUDA build vs the driver, and nvcc."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

import yaml

from hangar.preflight.checks.inputs import CheckInput
from hangar.preflight.engine import EngineFacts, UnmetRequirement
from hangar.preflight.findings import Finding
from hangar.preflight.probe import HostFacts


def _unusable(engine: EngineFacts) -> Finding | None:
    if not engine.exists:
        return Finding(
            id="host.engine.missing",
            severity="error",
            evidence=str(engine.python),
            message=f"engine interpreter {engine.python} does not exist",
            fix='hangar engines list   (or set engine = "/path/to/venv/bin/python")',
        )
    if engine.vllm_version is None:
        return Finding(
            id="host.engine.no_vllm",
            severity="error",
            evidence=", ".join(map(str, engine.site_packages)),
            message=f"no vLLM installed for {engine.python}",
            fix="install vLLM into that environment or pick another engine",
        )
    return None


def _cpu_build_for_gpus(engine: EngineFacts, req: CheckInput, torch: str) -> list[Finding]:
    if not engine.cpu_build or req.gpu is None:
        return []
    return [
        Finding(
            id="host.engine.cpu_build",
            severity="warning",
            evidence=torch,
            message=f"the engine is a CPU build of vLLM but the deployment asks for {req.gpu.id} GPUs; it will not use them",
            fix="pick an engine with a CUDA build of vLLM (hangar engines list)",
        )
    ]


# Distributions whose compiled code is built against one torch: vLLM pins them (==), and another
# version installed beside it (an upgrade pulled in by another package) fails at import with
# an undefined symbol or a missing operator, minutes into start-up.
ABI_PINNED = ("torch", "torchvision", "torchaudio", "xformers")
LISTED = 4  # unmet requirements named in the warning; the rest are counted


def _requirement_text(u: UnmetRequirement) -> str:
    return f"{u.requirement} (found {u.found})" if u.found else f"{u.requirement} (not installed)"


def _requirement_findings(engine: EngineFacts) -> list[Finding]:
    """vLLM's own requirements the engine does not meet: a moved torch is an error, the rest
    a warning (a trimmed environment without torchaudio or torchvision still serves text)."""
    vllm = _vllm_text(engine)
    fix_base = f"uv pip install --python {engine.python}"
    abi = [u for u in engine.unmet if u.name in ABI_PINNED and u.found]
    rest = [u for u in engine.unmet if u not in abi]
    findings = [
        Finding(
            id="host.engine.torch_pin",
            severity="error",
            evidence=_requirement_text(u),
            message=(
                f"{vllm} requires {u.requirement}, but the engine has {u.name} {u.found}: "
                "its compiled kernels are built against that version and fail to load "
                "(undefined symbol) at start-up"
            ),
            fix=f"{fix_base} '{u.requirement}'   (or a fresh engine: hangar engines add NAME --vllm V)",
        )
        for u in abi
    ]
    if rest:
        named = ", ".join(_requirement_text(u) for u in rest[:LISTED])
        more = f" and {len(rest) - LISTED} more" if len(rest) > LISTED else ""
        findings.append(
            Finding(
                id="host.engine.requirements",
                severity="warning",
                evidence=named + more,
                message=f"the engine does not meet {len(rest)} of {vllm}'s requirements: {named}{more}",
                fix=f"{fix_base} " + " ".join(f"'{u.requirement}'" for u in rest[:LISTED]),
            )
        )
    return findings


def _torch_text(engine: EngineFacts) -> str:
    """Unknown is not "CPU build": an image not read yet, or a venv without torch, says so."""
    if engine.torch_version is None:
        return "torch not read"
    return f"torch {engine.torch_version} (CUDA {engine.torch_cuda or 'none: CPU build'})"


def _vllm_text(engine: EngineFacts) -> str:
    dist = f" ({engine.vllm_distribution})" if engine.vllm_distribution else ""
    return f"vLLM {engine.vllm_version}{dist}"


def check_engine(facts: HostFacts, req: CheckInput) -> list[Finding]:
    engine = facts.engine
    if engine is None:
        return []
    if not engine.inspected:
        return [
            Finding(
                id="host.engine.version",
                severity="info",
                evidence=str(engine.python),
                message="the image's vLLM was not read on this host, so its version is not checked",
            )
        ]
    if (unusable := _unusable(engine)) is not None:
        return [unusable]
    torch = _torch_text(engine)
    return [
        *_cpu_build_for_gpus(engine, req, torch),
        *_requirement_findings(engine),
        Finding(
            id="host.engine.version",
            severity="info",
            evidence=f"{engine.python}",
            message=f"engine has {_vllm_text(engine)}, {torch}",
        ),
    ]


@lru_cache(maxsize=1)
def _driver_table() -> dict[str, dict[str, str]]:
    text = (
        resources.files("hangar.preflight").joinpath("data", "cuda_drivers.yaml").read_text("utf-8")
    )
    data = yaml.safe_load(text)
    return {"minor_compat": data["minor_compat"], "toolkit": data["toolkit"]}


def _vtuple(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split(".") if p.isdigit())


def _driver_finding(driver: str, cuda: str) -> Finding | None:
    table = _driver_table()
    major = cuda.split(".")[0]
    have = _vtuple(driver)
    evidence = f"driver {driver}; torch built with CUDA {cuda}"
    floor = table["minor_compat"].get(major)
    if floor and have < _vtuple(floor):
        return Finding(
            id="host.driver.too_old",
            severity="error",
            evidence=evidence,
            message=f"NVIDIA driver {driver} is older than CUDA {major}.x needs ({floor}); torch will report the driver as too old",
            fix=f"upgrade the driver to >= {table['toolkit'].get(cuda, floor)} or use an engine built for an older CUDA",
        )
    full = table["toolkit"].get(cuda)
    if full and have < _vtuple(full):
        return Finding(
            id="host.driver.minor_compat",
            severity="warning",
            evidence=evidence,
            message=f"driver {driver} runs CUDA {cuda} only through minor-version compatibility; JIT-compiled kernels (FlashInfer, Triton PTX) may fail",
            fix=f"upgrade the driver to >= {full}",
        )
    return None


def check_driver(facts: HostFacts, req: CheckInput) -> list[Finding]:
    engine, nv = facts.engine, facts.nvidia
    if engine is None or not engine.torch_cuda or not nv.available or not nv.driver_version:
        return []
    found = _driver_finding(nv.driver_version, engine.torch_cuda)
    return [] if found is None else [found]


def check_nvcc(facts: HostFacts, req: CheckInput) -> list[Finding]:
    engine = facts.engine
    if (
        engine is None
        or not engine.torch_cuda
        or facts.nvcc
        or engine.flashinfer_prebuilt
        or not engine.flashinfer_version
    ):
        return []
    return [
        Finding(
            id="host.nvcc.missing",
            severity="warning",
            evidence=f"flashinfer {engine.flashinfer_version}, no nvcc on PATH or CUDA_HOME",
            message="FlashInfer is installed without prebuilt kernels and there is no nvcc to JIT-compile them",
            fix="install flashinfer-cubin and flashinfer-jit-cache matching flashinfer-python, or a CUDA toolkit; Hangar applies the no-nvcc workarounds meanwhile",
        )
    ]
