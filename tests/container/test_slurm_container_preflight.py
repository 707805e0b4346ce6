"""Preflight of ``[target.container]`` inside a Slurm job: the image file (exists, readable,
not node-local), the runtime as this host has it (the apptainer stand-in, the real srun
without pyxis), --nvccli's helper, and the SIF's vLLM against the deployment's flags."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from hangar.deploy.schema import Deployment
from hangar.preflight.slurm.facts import Mount, SlurmFacts
from hangar.preflight.slurm_container import slurm_container_engine, slurm_container_findings

from .test_sif_inspect import _tree, build_sif

STANDINS = Path(__file__).parent / "standins"


def facts(mounts: tuple[Mount, ...] = ()) -> SlurmFacts:
    return SlurmFacts(
        sbatch="/usr/bin/sbatch",
        sinfo=None,
        scontrol=None,
        version=None,
        partition=None,
        partition_requested=None,
        partition_missing=False,
        nodes=(),
        allocation=None,
        enforce_part_limits=None,
        mounts=mounts,
        tmpdir=None,
        errors=(),
    )


def deployment(container: dict[str, Any], **fields: Any) -> Deployment:
    data = {
        "model": {"id": "org/tiny"},
        "target": {"kind": "slurm", "container": container},
        **fields,
    }
    return Deployment.model_validate(data)


def ids(found: list[Any]) -> dict[str, str]:
    return {f.id: f.severity for f in found}


@pytest.fixture(scope="module")
def sif_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("sif")
    return build_sif(_tree(base / "tree"), base / "vllm.sif")


def on_path(*dirs: Path) -> dict[str, str]:
    return {"PATH": os.pathsep.join([*map(str, dirs), "/usr/bin", "/bin"])}


def test_missing_image_is_an_error(tmp_path: Path) -> None:
    d = deployment({"image": str(tmp_path / "absent.sif")})
    found = ids(slurm_container_findings(d, facts(), on_path(STANDINS)))
    assert found == {"slurm.container.image.missing": "error"}


def test_node_local_image_warns_and_its_vllm_is_checked(sif_file: Path) -> None:
    d = deployment({"image": str(sif_file)}, serve={"tool_call_parser": "qwen3_coder"})
    found = ids(slurm_container_findings(d, facts(), on_path(STANDINS)))
    assert found["slurm.container.image.node_local"] == "warning"  # under /tmp
    assert found["container.image.parser"] == "error"  # the SIF's vLLM has no such parser
    ok = deployment({"image": str(sif_file)}, serve={"tool_call_parser": "hermes"})
    assert "container.image.parser" not in ids(
        slurm_container_findings(ok, facts(), on_path(STANDINS))
    )


def test_runtime_missing_and_nvccli_helper(sif_file: Path, tmp_path: Path) -> None:
    d = deployment({"image": str(sif_file), "nvccli": True})
    found = ids(slurm_container_findings(d, facts(), on_path(tmp_path)))
    assert found["slurm.container.apptainer.missing"] == "warning"
    assert found["slurm.container.nvccli"] == "warning"
    plain = deployment({"image": str(sif_file)})
    found = ids(slurm_container_findings(plain, facts(), on_path(STANDINS)))
    assert (
        "slurm.container.apptainer.missing" not in found and "slurm.container.nvccli" not in found
    )


def test_pyxis_missing_from_srun_here_warns() -> None:
    d = deployment({"runtime": "pyxis", "image": "nvcr.io#nvidia/vllm:25.09-py3"})
    found = ids(slurm_container_findings(d, facts(), dict(os.environ)))
    if not any(Path(p, "srun").exists() for p in os.environ["PATH"].split(os.pathsep)):
        pytest.skip("srun is not installed: run scripts/setup-test-host")
    assert found == {"slurm.container.pyxis.missing": "warning"}  # this host's srun has no pyxis


def test_engine_facts_come_from_the_image(sif_file: Path) -> None:
    engine = slurm_container_engine(
        deployment({"image": str(sif_file), "python": "/usr/bin/python3"})
    )
    assert engine is not None and engine.exists
    assert engine.vllm_version == "0.32.0" and str(engine.python) == "/usr/bin/python3"
    assert slurm_container_engine(Deployment.model_validate({"model": {"id": "a/b"}})) is None


def test_missing_bind_source(sif_file: Path, tmp_path: Path) -> None:
    from hangar.deploy.schema import ContainerTarget
    from hangar.preflight.container import bind_findings

    gone = str(tmp_path / "gone")
    d = deployment({"image": str(sif_file), "binds": [f"{gone}:/data:ro", str(tmp_path)]})
    found = [f for f in slurm_container_findings(d, facts(), on_path(STANDINS)) if "bind" in f.id]
    assert [(f.id, f.severity, f.evidence) for f in found] == [
        ("slurm.container.bind.missing", "warning", f"{gone}:/data:ro")
    ]
    one_host = ContainerTarget.model_validate({"binds": [gone]})
    assert [f.id for f in bind_findings(one_host)] == ["container.bind.missing"]
