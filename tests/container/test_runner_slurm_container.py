"""preflight() on a Slurm deployment with a container: the engine is the image's, not the
interpreter of the `engine` here, and the slurm.container.* checks run."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from hangar.deploy.schema import Deployment
from hangar.preflight.runner import preflight

from .test_sif_inspect import _tree, build_sif

pytestmark = pytest.mark.skipif(shutil.which("mksquashfs") is None, reason="squashfs-tools")


def test_the_image_is_the_engine_and_its_checks_run(tmp_path: Path) -> None:
    sif = build_sif(_tree(tmp_path / "tree"), tmp_path / "vllm.sif")
    d = Deployment.model_validate(
        {
            "model": {"id": "org/tiny"},
            "engine": str(tmp_path / "no-such-venv" / "bin" / "python"),
            "target": {"kind": "slurm", "container": {"image": str(sif)}},
            "serve": {"tool_call_parser": "qwen3_coder"},
        }
    )
    env = {**os.environ, "PATH": "/usr/bin:/bin"}
    report = preflight(d, env=env, with_plan=False)
    ids = {f.id: f.severity for f in report.findings}
    assert report.engine is not None and report.engine.vllm_version  # read from the SIF
    # the venv here is not asked: the image's vLLM is the engine the findings describe
    assert {i: s for i, s in ids.items() if i.startswith("host.engine.")} == {
        "host.engine.version": "info"
    }
    assert "slurm.python_missing" not in ids  # the interpreter lives in the image
    assert ids["slurm.container.image.node_local"] == "warning"  # under the test's /tmp
    assert ids["container.image.parser"] == "error"  # that vLLM has no qwen3_coder parser
