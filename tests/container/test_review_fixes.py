"""Issue 13 review, defects 2 and 3: a missing runtime is one container.runtime finding
(render, which is pure, still prints the argv), and apptainer gets docker://REF for a
registry reference (a bare argument is a local path to apptainer)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from hangar.cli.main import main
from hangar.deploy.schema import ContainerTarget
from hangar.launch.targets.container_argv import apptainer_image
from hangar.preflight.container import _image_findings

IMAGE = "vllm/vllm-openai:v0.33.0"


def _deployment(tmp_path: Path, runtime: str) -> Path:
    model = tmp_path / "tiny"
    model.mkdir(exist_ok=True)
    (model / "config.json").write_text(
        '{"architectures": ["LlamaForCausalLM"], "torch_dtype": "bfloat16"}'
    )
    file = tmp_path / f"{runtime}.toml"
    file.write_text(
        f'version = 1\nengine = "img"\n[model]\nid = "{model}"\n'
        f'[target]\nkind = "container"\n[target.container]\nruntime = "{runtime}"\nport = 18779\n'
    )
    return file


@pytest.fixture
def no_runtimes(monkeypatch: pytest.MonkeyPatch) -> None:
    """PATH holds only this interpreter's directory: no podman, docker or apptainer."""
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent))


@pytest.mark.parametrize("runtime", ["docker", "apptainer"])
def test_missing_runtime_renders_and_is_one_finding(
    runtime: str, tmp_path: Path, no_runtimes: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["engines", "add", "img", "--image", IMAGE, "--runtime", runtime]) == 0
    file = _deployment(tmp_path, runtime)
    capsys.readouterr()
    assert main(["render", str(file)]) == 0
    argv = capsys.readouterr().out
    wanted = f"docker://{IMAGE} python3" if runtime == "apptainer" else f"{IMAGE} -c"
    assert argv.startswith(f"{runtime} ") and wanted in argv
    assert main(["preflight", str(file), "--json"]) == 1
    out = capsys.readouterr().out
    assert '"container.runtime"' in out and "host.engine." not in out


def test_apptainer_image_argument() -> None:
    assert apptainer_image(IMAGE) == f"docker://{IMAGE}"
    assert apptainer_image("nvcr.io/nvidia/vllm@sha256:" + "a" * 64).startswith("docker://nvcr")
    for kept in (
        "/shared/vllm.sif",
        "./vllm.sif",
        "vllm-0.33.sif",
        "oras://ghcr.io/acme/vllm:1",
        "library://acme/vllm:1",
        "shub://acme/vllm",
        f"docker://{IMAGE}",
    ):
        assert apptainer_image(kept) == kept


def test_apptainer_pull_fix_names_the_uri() -> None:
    c = ContainerTarget.model_validate({"runtime": "apptainer"})
    (finding,) = _image_findings(c, IMAGE, present=False)
    assert finding.fix.startswith(f"apptainer pull docker://{IMAGE}")
    never = ContainerTarget.model_validate({"runtime": "apptainer", "pull": "never"})
    assert _image_findings(never, IMAGE, present=False)[0].fix == f"apptainer pull docker://{IMAGE}"
