"""Preflight for ``[target.container]`` inside a Slurm job (apptainer or pyxis on the nodes).

``slurm_container_findings(d, facts, env)`` returns ``slurm.container.*`` findings:
- the image (a .sif for apptainer; a .sqsh path for pyxis) exists and is readable here,
  and is not on node-local storage (the job reads it on every node; same rule as the run
  dir's: ``node_local_reason``);
- the runtime on this host as the nodes will run it: ``apptainer`` on PATH, pyxis's
  options in ``srun --help`` (pyxis registers them in srun, README "Usage"); only a
  warning, since the compute nodes may differ from the submit host;
- ``--nvccli`` needs ``nvidia-container-cli`` (plain ``--nv`` does not);
- every ``binds`` source exists here (apptainer and enroot refuse a missing one);
- the image's vLLM (read from its files, never run: ``engines.image``) has the flags and
  parsers the deployment passes (the container target's own check).

``slurm_container_engine(d)`` gives the engine facts from the image, for the runner to use
in place of the ``engine`` interpreter's (vLLM runs in the image).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from hangar.deploy.schema import Deployment, SlurmContainer, SlurmTargetSection, split_bind
from hangar.engines.errors import InspectFailed
from hangar.engines.model import Inspection
from hangar.errors import CommandFailed
from hangar.preflight.container import flag_findings
from hangar.preflight.engine import EngineFacts
from hangar.preflight.findings import Finding, Severity
from hangar.preflight.slurm.common import finding, fs_evidence, node_local_reason
from hangar.preflight.slurm.facts import SlurmFacts
from hangar.proc import run

_HELP_TIMEOUT_S = 20.0


def _container(d: Deployment) -> SlurmContainer | None:
    t = d.target
    return t.container if isinstance(t, SlurmTargetSection) else None


def _finding(id_: str, severity: Severity, message: str, fix: str, evidence: str = "") -> Finding:
    return finding(f"slurm.container.{id_}", severity, message, fix, evidence)


def _is_path(image: str) -> bool:
    # pyxis also takes enroot URIs ([USER@][REGISTRY#]IMAGE[:TAG]), which are pulled
    return image.startswith(("/", "./", "../", "~"))


def image_findings(c: SlurmContainer, facts: SlurmFacts) -> list[Finding]:
    image = str(c.image)
    if not _is_path(image):
        if c.runtime == "apptainer" and "://" not in image:
            return [
                _finding(
                    "image.missing",
                    "error",
                    f"image {image!r} is not a path",
                    'set image = "/shared/path/vllm.sif"',
                )
            ]
        return []
    path = Path(os.path.expanduser(image))
    if not path.exists():
        return [
            _finding(
                "image.missing",
                "error",
                f"image {path} does not exist here",
                f"apptainer build {path} docker://IMAGE   (on a path every node mounts)",
            )
        ]
    if not os.access(path, os.R_OK):
        return [
            _finding(
                "image.unreadable",
                "error",
                f"image {path} is not readable by this user",
                f"chmod a+r {path}",
            )
        ]
    local = node_local_reason(str(path.resolve()), facts)
    if local is None:
        return []
    return [
        _finding(
            "image.node_local",
            "warning",
            f"image {path} is {local}: the job reads it on every node, where it may not exist",
            "move the image to a shared filesystem (the run dir's, or a site image store)",
            evidence=fs_evidence(str(path.resolve()), facts),
        )
    ]


def bind_findings(c: SlurmContainer) -> list[Finding]:
    """A bind source missing here is likely missing on the nodes (a failed container start)."""
    missing = [b for b in c.binds if not Path(split_bind(b)[0]).exists()]
    return [
        _finding(
            "bind.missing",
            "warning",
            f"bind source {split_bind(b)[0]} does not exist here; the container fails to start "
            "on a node that lacks it",
            "create it on the shared filesystem, or remove it from target.container.binds",
            evidence=b,
        )
        for b in missing
    ]


def _pyxis_in_srun(env: Mapping[str, str]) -> bool | None:
    srun = shutil.which("srun", path=env.get("PATH"))
    if srun is None:
        return None
    try:
        out = run([srun, "--help"], env=dict(env), timeout=_HELP_TIMEOUT_S, check=False)
    except CommandFailed:
        return None
    return "--container-image" in out.stdout + out.stderr


def runtime_findings(c: SlurmContainer, env: Mapping[str, str]) -> list[Finding]:
    path = env.get("PATH")
    if c.runtime == "pyxis":
        if _pyxis_in_srun(env) is False:
            return [
                _finding(
                    "pyxis.missing",
                    "warning",
                    "srun here has no --container-image: the pyxis plugin is not loaded on this host (the compute nodes need it)",
                    'ask the site for pyxis (plugstack.conf), or set runtime = "apptainer"',
                )
            ]
        return []
    out = []
    if shutil.which("apptainer", path=path) is None:
        out.append(
            _finding(
                "apptainer.missing",
                "warning",
                "apptainer is not on PATH here; every node of the job runs `apptainer exec`",
                "module load apptainer   (add it to target.slurm.modules), or install apptainer",
            )
        )
    if c.nvccli and shutil.which("nvidia-container-cli", path=path) is None:
        out.append(
            _finding(
                "nvccli",
                "warning",
                "nvccli = true makes apptainer set up the GPUs with nvidia-container-cli, which is not on PATH here",
                "install libnvidia-container-tools on the nodes, or set nvccli = false (plain --nv needs no helper)",
            )
        )
    return out


def _inspection(image: str) -> Inspection | None:
    from hangar.engines.image import inspect_image

    if not _is_path(image) or not Path(image).is_file():
        return None
    try:
        return inspect_image(image, image, "apptainer")  # a .sif, or pyxis's bare .sqsh
    except (InspectFailed, CommandFailed):
        return None


def slurm_container_findings(
    d: Deployment, facts: SlurmFacts, env: Mapping[str, str]
) -> list[Finding]:
    """Every ``slurm.container.*`` finding of ``d`` (none without a container)."""
    c = _container(d)
    if c is None:
        return []
    found = image_findings(c, facts) + runtime_findings(c, env) + bind_findings(c)
    inspected = _inspection(str(c.image))
    if inspected is None and _is_path(str(c.image)) and Path(str(c.image)).is_file():
        found.append(
            _finding(
                "image.unread",
                "warning",
                "the image's vLLM was not read (squashfs-tools missing or not a SIF/squashfs file), so its flags are not checked",
                "apt-get install squashfs-tools   (then: hangar engines add NAME --image PATH --runtime apptainer)",
            )
        )
    return found + (flag_findings(d, inspected) if inspected else [])


def slurm_container_engine(d: Deployment) -> EngineFacts | None:
    """The engine as the image has it (None without a container): its interpreter inside,
    and the vLLM/torch read from its files when it is a file here."""
    c = _container(d)
    if c is None:
        return None
    image = str(c.image)
    found = _inspection(image)
    return EngineFacts(
        python=Path(c.python),
        exists=found is not None or not _is_path(image) or Path(image).exists(),
        vllm_version=found.vllm_version if found else None,
        # an image not read here (an enroot URI) is taken to hold the `vllm` wheel, as vLLM's
        # and NVIDIA's images do: its CLI serves (the dist-less CPU build is a venv case)
        vllm_distribution=found.vllm_distribution if found else "vllm",
        torch_version=found.torch_version if found else None,
        torch_cuda=found.torch_cuda if found else None,
        inspected=found is not None,
    )
