"""Preflight for ``target.kind = "container"``: the runtime, the image and its vLLM.

``container_preflight(d, env)`` returns the engine facts (read from the image's files by
``engines.image``, never by running it) and ``container.*`` findings: runtime missing or
unusable, image absent (and not pullable by the deployment's pull policy), the image's
vLLM lacking a flag or parser the deployment passes, no shared memory for the workers,
the host port taken, a bind source missing.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from hangar.deploy.schema import ContainerTarget, Deployment, split_bind
from hangar.engines.errors import InspectFailed
from hangar.engines.image import apptainer_image
from hangar.engines.model import Inspection
from hangar.errors import CommandFailed, HangarError
from hangar.planning.serve import options_for, serve_flags
from hangar.preflight.engine import EngineFacts
from hangar.preflight.findings import Finding
from hangar.preflight.probe import port_in_use
from hangar.proc import run

_PROBE_TIMEOUT_S = 20.0
# A command any user may run that fails when the runtime cannot work here.
_USABLE = {
    "podman": ["podman", "info", "--format", "{{.Host.OCIRuntime.Name}}"],
    "docker": ["docker", "info", "--format", "{{.ServerVersion}}"],
    "apptainer": ["apptainer", "--version"],
}


def _finding(id_: str, severity: str, message: str, fix: str, evidence: str = "") -> Finding:
    return Finding(
        id=f"container.{id_}",
        severity=severity,  # type: ignore[arg-type]
        message=message,
        fix=fix,
        evidence=evidence,
    )


def runtime_problem(runtime: str, env: dict[str, str]) -> str | None:
    """Why ``runtime`` cannot run containers here, or None."""
    if shutil.which(runtime, path=env.get("PATH")) is None:
        return f"{runtime} is not installed (not on PATH)"
    try:
        run(_USABLE[runtime], env=env, timeout=_PROBE_TIMEOUT_S)
    except CommandFailed as exc:
        tail = (exc.stderr or exc.stdout).strip().splitlines()[-1:] or [exc.message]
        return f"`{' '.join(_USABLE[runtime])}` failed: {tail[0]}"
    return None


def image_present(c: ContainerTarget, image: str) -> bool:
    if c.runtime == "apptainer":
        # a .sif file or a sandbox directory; a registry reference (docker://...) is pulled
        # into apptainer's cache at exec time
        return "://" not in apptainer_image(image) and Path(image).exists()
    from hangar.engines.image import image_present as oci_present

    return oci_present(image, c.runtime)


def _inspection(image: str, c: ContainerTarget) -> tuple[Inspection | None, list[Finding]]:
    from hangar.engines.image import inspect_image

    try:
        return inspect_image(image, image, c.runtime), []
    except (InspectFailed, CommandFailed) as exc:
        return None, [
            _finding(
                "image.unread",
                "warning",
                f"the image's vLLM was not read, so its flags are not checked ({exc.message})",
                "hangar engines inspect NAME   (after hangar engines add NAME --image REF)",
            )
        ]


def flag_findings(d: Deployment, found: Inspection) -> list[Finding]:
    """Flags and parsers the deployment passes that the image's vLLM does not have."""
    out: list[Finding] = []
    version = found.vllm_version or "?"
    if found.flags:
        for arg in serve_flags(options_for(d)):
            flag = arg.split("=", 1)[0]
            if flag.startswith("--") and flag not in found.flags:
                out.append(
                    _finding(
                        "image.flag",
                        "error",
                        f"the image's vLLM {version} has no flag {flag}",
                        "use an image with a newer vLLM, or drop the flag",
                        evidence=flag,
                    )
                )
    checks = (
        ("tool_call_parser", d.serve.tool_call_parser, found.tool_parsers),
        ("reasoning_parser", d.serve.reasoning_parser, found.reasoning_parsers),
    )
    for key, wanted, known in checks:
        if wanted and known and wanted not in known:
            out.append(
                _finding(
                    "image.parser",
                    "error",
                    f"the image's vLLM {version} has no {key} {wanted!r}",
                    f"hangar support {d.model.id}   (which engine or image has it)",
                    evidence=", ".join(known),
                )
            )
    return out


def _shm_finding(c: ContainerTarget, d: Deployment) -> list[Finding]:
    if c.runtime == "apptainer" or c.ipc_host or c.shm_size:
        return []
    workers = d.parallel.tensor * d.parallel.pipeline
    return [
        _finding(
            "shm",
            "warning",
            "neither ipc_host nor shm_size is set: the container gets the runtime's 64 MB "
            "/dev/shm, too small for vLLM's worker processes and shared-memory broadcast",
            f'set [target.container] ipc_host = true, or shm_size = "{max(8, 4 * workers)}g"',
        )
    ]


def bind_findings(c: ContainerTarget) -> list[Finding]:
    """A bind whose source is missing: podman/docker would create it as root, apptainer
    refuses to start."""
    return [
        _finding(
            "bind.missing",
            "error",
            f"bind source {split_bind(b)[0]} does not exist",
            "create it, or remove it from target.container.binds",
            evidence=b,
        )
        for b in c.binds
        if not Path(split_bind(b)[0]).exists()
    ]


def _image_findings(c: ContainerTarget, image: str, present: bool) -> list[Finding]:
    if present:
        return []
    if c.pull == "never":
        return [
            _finding(
                "image.missing",
                "error",
                f'image {image} is not present and pull = "never"',
                _pull_command(c, image),
            )
        ]
    return [
        _finding(
            "image.pull",
            "warning",
            f"image {image} is not present locally: it is pulled at launch (model images "
            "are often ~10 GB)",
            f"{_pull_command(c, image)}   (ahead of time)",
        )
    ]


def _pull_command(c: ContainerTarget, image: str) -> str:
    if c.runtime != "apptainer":
        return f"{c.runtime} pull {image}"
    uri = apptainer_image(image)
    if "://" not in uri:
        return f"build {image} (apptainer build {image} docker://REF)"
    # `apptainer pull <URI>` also fills apptainer's cache, which `exec <URI>` then uses.
    return f"apptainer pull {uri}"


def container_preflight(
    d: Deployment, c: ContainerTarget, env: dict[str, str]
) -> tuple[EngineFacts | None, list[Finding]]:
    """Engine facts from the image and the ``container.*`` findings."""
    from hangar.engines.resolve import image_of

    try:
        image = image_of(d)
    except HangarError as exc:
        return None, [_finding("image.unset", "error", exc.message, exc.hint or "")]
    findings = _shm_finding(c, d) + bind_findings(c)
    if port_in_use(c.host, c.port):
        findings.append(
            _finding(
                "port.in_use",
                "error",
                f"{c.host}:{c.port} is taken on this host",
                "stop what listens there or set [target.container] port",
            )
        )
    problem = runtime_problem(c.runtime, env)
    if problem is not None:
        findings.append(
            _finding("runtime", "error", problem, f"install {c.runtime}, or set runtime")
        )
        # The image was not looked at: its engine is unknown, not missing (the one finding
        # is container.runtime; host.engine.* would blame an interpreter that is not used).
        return None, findings
    present = image_present(c, image)
    findings += _image_findings(c, image, present)
    found, more = _inspection(image, c) if present else (None, [])
    findings += more + (flag_findings(d, found) if found else [])
    if not present and c.pull == "never":
        return None, findings  # container.image.missing says it; there is no engine to probe
    return _facts(c, present, found, image), findings


def unread_facts(d: Deployment, c: ContainerTarget) -> EngineFacts:
    """What ``render`` (pure) needs when preflight could not look at the image: the
    image's tag version, nothing read from it."""
    from hangar.engines.resolve import image_of

    return EngineFacts(python=Path(c.python), exists=True, vllm_version=tag_version(image_of(d)))


def tag_version(image: str) -> str | None:
    """``vllm/vllm-openai:v0.33.0`` -> ``0.33.0``: the version of an image not read yet."""
    tag = image.rsplit(":", 1)[1] if ":" in image.rsplit("/", 1)[-1] else ""
    match = re.fullmatch(r"v?(\d+\.\d+(?:\.\d+)?)", tag)
    return match.group(1) if match else None


def _facts(c: ContainerTarget, present: bool, found: Inspection | None, image: str) -> EngineFacts:
    # An image still to be pulled is judged by its tag; a read image by its files.
    version = found.vllm_version if found else (None if present else tag_version(image))
    return EngineFacts(
        python=Path(c.python),
        exists=True,  # present, or pulled at launch (pull = "never" returned no facts)
        vllm_version=version,
        vllm_distribution=found.vllm_distribution if found else None,
        torch_version=found.torch_version if found else None,
        torch_cuda=found.torch_cuda if found else None,
    )
