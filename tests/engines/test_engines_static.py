"""Static readers on unpacked trees (no uv, no interpreter): both parser layouts, registry spreads."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pynvml  # type: ignore[import-untyped]
import pytest
from hardware.nvml_fake import FakeDevice, FakeNvml, h100

from hangar.engines import driver, staticread, tomlio
from hangar.engines.model import DriverInfo

from . import fakewheels


def _site(tmp_path: Path, *packages: fakewheels.FakePackage) -> Path:
    site = tmp_path / "site"
    for pkg in packages:
        fakewheels.write_tree(pkg, site)
    return site


def test_lazy_layout_reads_parsers_archs_flags_envs(tmp_path: Path) -> None:
    pkg = next(
        p for p in fakewheels.stable_packages() if p.name == "vllm" and p.version == "0.20.0"
    )
    root = _site(tmp_path, pkg) / "vllm"
    archs = staticread.architectures(root)
    assert archs.supported == (
        "BertModel",
        "LlamaForCausalLM",
        "OlmoForCausalLM",
        "Qwen2ForCausalLM",
        "Qwen3ForCausalLM",
    )
    assert archs.transformers_backend == ("OlmoForCausalLM",)
    assert staticread.tool_parsers(root) == ("hermes", "qwen3_coder")
    assert staticread.reasoning_parsers(root) == ("deepseek_r1", "qwen3")
    assert staticread.env_vars(root) == ("VLLM_HOST_IP", "VLLM_PORT")
    flags = staticread.serve_flags(root)
    assert {
        "--model",
        "--tensor-parallel-size",
        "--kv-cache-dtype",
        "--enforce-eager",
        "--no-enforce-eager",
        "--max-model-len",
        "--port",
        "--tool-call-parser",
        "--enable-auto-tool-choice",
    } <= set(flags)
    assert "--disable-auto-tool-choice" not in flags  # no EnableDisableAction in this tree
    assert staticread.version_module(root / "_version.py").version == "0.20.0"


def test_decorator_layout_of_old_versions(tmp_path: Path) -> None:
    pkg = next(
        p for p in fakewheels.stable_packages() if p.name == "vllm" and p.version == "0.10.0"
    )
    root = _site(tmp_path, pkg) / "vllm"
    assert staticread.tool_parsers(root) == ("hermes", "llama3_json")
    assert staticread.reasoning_parsers(root) == ("deepseek_r1",)
    assert "VLLM_USE_V1" in staticread.env_vars(root)


def test_transformers_model_types_and_torch_cuda(tmp_path: Path) -> None:
    site = _site(
        tmp_path,
        fakewheels.transformers("4.57.0", ["llama", "qwen3_5_moe"]),
        fakewheels.torch("2.9.0+cu128", "12.8"),
    )
    assert staticread.transformers_model_types(site / "transformers") == (
        "EvollaModel",
        "llama",
        "qwen3_5_moe",
    )
    consts = staticread.version_module(site / "torch" / "version.py")
    assert (consts.version, consts.extra["cuda"]) == ("2.9.0+cu128", "12.8")


def test_nightly_version_is_kept_verbatim(tmp_path: Path) -> None:
    root = _site(tmp_path, *fakewheels.nightly_packages()) / "vllm"
    module = staticread.version_module(root / "_version.py")
    assert module.version == fakewheels.NIGHTLY_VERSION
    assert module.commit and module.commit.startswith("g")


def test_toml_writer_round_trips(tmp_path: Path) -> None:
    data = {
        "schema_version": 1,
        "engines": {
            "a b": {
                "kind": "venv",
                "flag": True,
                "urls": ["x", 'q"uote'],
                "previous": {"python": "/p\\q"},
            }
        },
        "history": [{"engine": "a", "detail": "line1\nline2"}, {"engine": "b"}],
    }
    path = tmp_path / "t.toml"
    path.write_text(tomlio.dumps(data))
    assert tomlio.read_toml(path) == data


def _host(cuda: str | None, caps: tuple[str, ...] = ("9.0",)) -> DriverInfo:
    if cuda is None:
        return DriverInfo(found=False, reason="no NVIDIA driver found")
    return DriverInfo(
        found=True, driver_version="570.1", cuda_version=cuda, compute_capabilities=caps
    )


def test_driver_compatibility_rules() -> None:
    assert driver.check("12.4", _host("12.8"), "2.5.0").status == "ok"
    assert driver.check("12.8", _host("12.4"), "2.9.0").status == "minor-version"
    assert driver.check("13.0", _host("12.8"), "2.10.0").status == "incompatible"
    assert driver.check("12.4", _host("12.8", ("10.0",)), "2.5.0").status == "incompatible"
    assert driver.check("12.8", _host("12.8", ("10.0",)), "2.9.0").status == "ok"
    assert driver.check(None, _host("12.8"), "2.9.0+cpu").status == "cpu-build"
    no_driver = driver.check("12.8", _host(None), "2.9.0")
    assert no_driver.status == "no-driver" and "no NVIDIA driver found" in no_driver.message
    assert driver.check(None, _host(None), None).status == "unknown"


class _Nvml(FakeNvml):
    """tests/hardware's behavioural NVML plus the CUDA-version call driver.py makes."""

    def __init__(self, devices: list[FakeDevice], *, cuda: int = 12080, **kw: Any) -> None:
        super().__init__(devices, **kw)
        self.cuda, self.lost = cuda, False

    def nvmlSystemGetCudaDriverVersion_v2(self) -> int:
        self._require_init()
        return self.cuda

    def nvmlDeviceGetName(self, handle: FakeDevice) -> str:  # type: ignore[override]
        if self.lost:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_GPU_IS_LOST)
        return handle.name  # nvidia-ml-py >= 11.5 returns str


def test_host_driver_as_nvml_reports_it(monkeypatch: pytest.MonkeyPatch) -> None:
    nvml = _Nvml([h100(0), h100(1)], cuda=12080)
    monkeypatch.setitem(sys.modules, "pynvml", nvml)  # driver.py imports pynvml lazily
    assert driver._probe_nvml() == DriverInfo(
        found=True,
        driver_version="580.95.05",
        cuda_version="12.8",
        gpus=("NVIDIA H100 80GB HBM3",) * 2,
        compute_capabilities=("9.0", "9.0"),
    )
    assert not nvml.initialized  # shut down again after the probe
    nvml.lost = True
    assert driver._probe_nvml() == DriverInfo(found=False, reason="NVML query failed (GPU is lost)")
    assert not nvml.initialized


def test_host_without_a_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    unloaded = _Nvml([], init_error=pynvml.NVML_ERROR_DRIVER_NOT_LOADED)
    monkeypatch.setitem(sys.modules, "pynvml", unloaded)
    info = driver._probe_nvml()
    assert info == DriverInfo(found=False, reason="no NVIDIA driver found (Driver Not Loaded)")
    assert driver.check("12.8", info, "2.9.0").status == "no-driver"
