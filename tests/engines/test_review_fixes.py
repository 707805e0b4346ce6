"""Issue 13 review, defects 4 and 5: `support` offers only images for the deployment's
platform (no -cpu image for a GPU model), and an engine whose torch was not read is not
called a CPU build."""

from __future__ import annotations

from pathlib import Path

import pytest

from hangar.engines import support
from hangar.preflight.checks import CheckInput
from hangar.preflight.checks.engine import check_engine
from hangar.preflight.engine import EngineFacts
from hangar.preflight.probe import HostFacts


def test_a_gpu_model_is_not_offered_the_cpu_image() -> None:
    # The catalog recipe of Qwen3-8B names only vllm/vllm-openai-cpu (its "Intel Xeon 6" part).
    assert support.model_facts("Qwen/Qwen3-8B").images == ()
    assert support.model_facts("Qwen/Qwen3-8B", "cpu").images == (
        "vllm/vllm-openai-cpu:latest-x86_64",
    )
    assert support.model_facts("openai/gpt-oss-20b", "xpu").images == ("vllm/vllm-openai-xpu:latest",)


def test_image_platform_reads_the_name() -> None:
    cases = {
        "vllm/vllm-openai:v0.33.0": "cuda",
        "vllm/vllm-openai-cpu:latest-x86_64": "cpu",
        "rocm/vllm:latest": "rocm",
        "vllm/vllm-openai:v0.9.0-cpu": "cpu",
        "ghcr.io/acme/vllm-tpu:nightly": "tpu",
        "nvcr.io/nvidia/vllm:25.09-py3": "cuda",
    }
    assert {image: support.image_platform(image) for image in cases} == cases


def _version_message(engine: EngineFacts) -> tuple[set[str], str]:
    found = check_engine(HostFacts.model_construct(engine=engine), CheckInput())
    version = next(f for f in found if f.id == "host.engine.version")
    return {f.id for f in found}, version.message


def test_torch_not_read_is_not_a_cpu_build() -> None:
    image = EngineFacts(python=Path("python3"), exists=True, vllm_version="0.33.0")
    ids, message = _version_message(image)
    assert message == "engine has vLLM 0.33.0, torch not read"
    assert "host.engine.cpu_build" not in ids and not image.cpu_build
    cpu = EngineFacts(
        python=Path("python3"), exists=True, vllm_version="0.33.0", torch_version="2.9.0+cpu"
    )
    assert _version_message(cpu)[1].endswith("torch 2.9.0+cpu (CUDA none: CPU build)")


def test_support_platform_flag_reaches_the_image_choice(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from hangar.cli.main import main
    from hangar.engines import manage

    manage.add_image("old", "vllm/vllm-openai:v0.8.5")
    capsys.readouterr()
    assert main(["support", "Qwen/Qwen3-8B", "--platform", "cpu", "--json"]) in (0, 1)
    assert "vllm/vllm-openai-cpu:latest-x86_64" in json.dumps(json.loads(capsys.readouterr().out))
    assert main(["support", "Qwen/Qwen3-8B", "--json"]) in (0, 1)
    assert "openai-cpu" not in capsys.readouterr().out
    assert main(["support", "Qwen/Qwen3-8B", "--platform", "gpu"]) == 2  # not a platform
