"""`hangar preflight` must not say "ok" when the launch cannot work (issue 13)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.launch.conftest import make_fake_engine

from hangar.deploy import Deployment
from hangar.hardware import lookup
from hangar.preflight.checks.gpu import check_gpu_driver
from hangar.preflight.checks.inputs import CheckInput
from hangar.preflight.plan_bridge import extra_request_fields, plan_findings, vllm_flag
from hangar.preflight.probe import NvidiaFacts
from hangar.preflight.runner import probe_host

LLAMA = {
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 4096,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 32000,
    "intermediate_size": 11008,
    "torch_dtype": "bfloat16",
}


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_fake_engine(tmp_path_factory.mktemp("engine") / "venv")


def deployment_file(tmp_path: Path, engine: Path, extra: str = "") -> Path:
    model = tmp_path / "llama"
    model.mkdir(exist_ok=True)
    (model / "config.json").write_text(json.dumps(LLAMA))
    file = tmp_path / "hangar.toml"
    file.write_text(
        f"engine = {json.dumps(str(engine))}\n[model]\nid = {json.dumps(str(model))}\n"
        f'[resources]\ngpu = "H100"\ngpus = 1\n{extra}'
    )
    return file


def preflight_ids(file: Path, **env: str) -> tuple[int, dict[str, str]]:
    proc = subprocess.run(
        [sys.executable, "-m", "hangar", "preflight", str(file), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, **env},
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    findings = json.loads(proc.stdout)["findings"]
    return proc.returncode, {f["id"]: f["severity"] for f in findings}


def test_gpu_deployment_on_a_host_without_nvidia_driver_is_an_error(
    tmp_path: Path, engine: Path
) -> None:
    """CUDA_VISIBLE_DEVICES="" hides every GPU from NVML's view, as on a host with no driver."""
    code, ids = preflight_ids(deployment_file(tmp_path, engine), CUDA_VISIBLE_DEVICES="")
    assert code == 1 and ids["host.gpu.no_driver"] == "error", ids


def test_the_driver_check_is_quiet_for_cpu_amd_and_visible_gpus() -> None:
    facts = probe_host(Deployment.model_validate({"model": {"id": "m"}}), None, {})
    none = facts.model_copy(update={"nvidia": NvidiaFacts(available=False, reason="no driver")})
    assert check_gpu_driver(none, CheckInput(gpu=lookup("H100")))[0].evidence == "no driver"
    assert check_gpu_driver(none, CheckInput()) == []  # no GPU asked for
    assert check_gpu_driver(none, CheckInput(gpu=lookup("MI300X"))) == []  # ROCm, not NVML
    seen = facts.model_copy(update={"nvidia": NvidiaFacts(available=True, driver_version="570")})
    assert check_gpu_driver(seen, CheckInput(gpu=lookup("H100"))) == []


def test_extra_args_that_structured_fields_own_are_refused(tmp_path: Path, engine: Path) -> None:
    """extra_args = ["--tensor-parallel-size", "2", "--max-model-len", "999999"] on one GPU
    passed preflight: vLLM would take them over [parallel] and [serve]."""
    extra = '[serve]\nextra_args = ["--tensor-parallel-size", "2", "--max_model_len=999999"]\n'
    file = deployment_file(tmp_path, engine, extra)
    d = Deployment.model_validate(
        {
            "model": {"id": str(tmp_path / "llama")},
            "resources": {"gpu": "H100"},
            "serve": {"extra_args": ["-tp", "2", "--max_model_len=999999"]},
        }
    )
    owned = [f for f in plan_findings(d) if f.id == "serve.extra_args.owned_flag"]
    assert [f.fix for f in owned] == [
        "remove -tp from serve.extra_args and set parallel.tensor = 2",
        "remove --max_model_len=999999 from serve.extra_args and set serve.max_model_len = 999999",
    ]
    proc = subprocess.run(
        [sys.executable, "-m", "hangar", "preflight", str(file)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 1 and "parallel.tensor" in proc.stdout, proc.stdout


def test_flags_are_read_with_vllms_names() -> None:
    assert vllm_flag("--tensor_parallel_size=2") == "--tensor-parallel-size"
    assert vllm_flag("--tensor-parallel") == "--tensor-parallel-size"  # argparse abbreviation
    assert vllm_flag("-pp") == "--pipeline-parallel-size"
    assert vllm_flag("--compilation-config.level") == "--compilation-config"
    assert vllm_flag("2") is None and vllm_flag("-1") is None
    fields = extra_request_fields(
        ["--max-num-batched-tokens", "4096", "--no-enable-prefix-caching"]
    )
    assert fields == {"max_num_batched_tokens": 4096, "enable_prefix_caching": False}
