"""The memory model's per-version terms (planning/accounting.py), its error band and the
version range, on real catalog configs."""

from __future__ import annotations

import pytest

from hangar.errors import DataError, UsageError
from hangar.hardware import lookup
from hangar.hardware.spec import Hardware
from hangar.models import load_model
from hangar.planning import PlanRequest, plan
from hangar.planning.accounting import (
    activation_peak_bytes,
    default_accounting,
    forward_peak_bytes,
    parse_accounting,
    sampler_peak_bytes,
)
from hangar.planning.memory import Layout, mxfp4_expert_padding
from hangar.planning.plan import batch_defaults

GIB = 2**30


def first_layout(model: str, gpu: str = "H100", gpus: int = 1, **req: object):  # type: ignore[no-untyped-def]
    hw = Hardware(gpu=lookup(gpu), gpus_per_node=gpus)
    return plan(load_model(model), hw, PlanRequest(**{"tp": 1, **req})).layouts[0]  # type: ignore[arg-type]


def test_memory_data_loads_with_tiers_newest_first() -> None:
    acc = default_accounting()
    assert acc.tiers[0].since > acc.tiers[-1].since
    assert acc.tier((0, 33, 0)).cudagraphs_subtracted
    assert not acc.tier((0, 11, 0)).cudagraphs_subtracted
    assert acc.tier((0, 7, 3)).engine == "v0"
    assert 0 < acc.band.optimistic < 0.2


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ({"schema_version": 2}, "schema_version"),
        ({"schema_version": 1, "tiers": []}, "non-empty"),
        ({"schema_version": 1, "tiers": [{"since": "0.6", "engine": "v0"}]}, "tiers[0]"),
        (
            {"schema_version": 1, "tiers": [{"since": "0.6", "engine": "v0", "sampler_copies": 0,
              "fixed_gib": 0, "tp_extra_gib": 0, "cudagraphs_subtracted": False, "typo": 1}]},
            "unknown key",
        ),
    ],
)
def test_memory_data_errors_name_the_entry(data: dict[str, object], needle: str) -> None:
    with pytest.raises(DataError, match="memory.yaml") as err:
        parse_accounting(data)
    assert needle in str(err.value)


def test_sampler_peak_dominates_at_1024_sequences_and_forward_at_long_v0_batches() -> None:
    spec = load_model("meta-llama/Llama-3.1-8B-Instruct")
    v1 = default_accounting().tier((0, 11, 0))
    v0 = default_accounting().tier((0, 6, 4))
    assert sampler_peak_bytes(spec, 1024, v1) > forward_peak_bytes(spec, 8192, 1)
    # V0 with chunked prefill off: the token budget is max_model_len; vllm#10517 logs a
    # 2.07 GiB peak at 20,000 tokens on an RTX 3090 (peak_torch_memory 17.06 - 14.99)
    peak = activation_peak_bytes(spec, 20000, 256, 1, v0) / GIB
    assert 1.9 < peak < 2.3


def test_v0_batch_defaults_follow_max_model_len_until_32k() -> None:
    hw = Hardware(gpu=lookup("RTX-3090"), gpus_per_node=1)
    assert batch_defaults(hw, 20000, (0, 6, 4)) == (20000, 256)
    assert batch_defaults(hw, 35000, (0, 6, 4)) == (512, 256)
    assert batch_defaults(hw, 35000, (0, 7, 3)) == (2048, 256)
    assert batch_defaults(hw, 1024, (0, 7, 3)) == (2048, 256)


def test_versions_older_than_the_data_are_refused() -> None:
    with pytest.raises(UsageError, match="unknown version range"):
        first_layout("Qwen/Qwen3-8B", vllm_version="0.1")


def test_v0_kv_message_is_the_v0_text() -> None:
    # vllm#10517: Llama-3.1-8B on a 24 GiB RTX 3090, vLLM 0.6.4, max_model_len 29000 failed
    layout = first_layout("meta-llama/Llama-3.1-8B-Instruct", gpu="RTX-3090",
                          max_model_len=29000, vllm_version="0.6.4")
    finding = next(f for f in layout.findings if f.id in ("kv_cache_too_small", "kv_cache_borderline"))
    if finding.id == "kv_cache_too_small":
        assert finding.message.startswith("The model's max seq len (29000) is larger than")


def test_inside_the_band_is_a_warning_not_an_error() -> None:
    # Qwen3-32B on one H100 at 16,000 tokens really started on vLLM 0.11 (4.45 GiB of KV for a
    # 3.9 GiB request; llm-d-benchmark config_explorer/empirical-vllm-memory-results.md)
    layout = first_layout("Qwen/Qwen3-32B", max_model_len=16000, vllm_version="0.11.0",
                          gpu_memory_utilization=0.9)
    assert layout.valid
    ids = {f.id for f in layout.findings}
    assert "kv_cache_too_small" not in ids
    # ... and twice the length is outside the band: vLLM refused it (same file)
    longer = first_layout("Qwen/Qwen3-32B", max_model_len=32000, vllm_version="0.11.0",
                          gpu_memory_utilization=0.9)
    assert "kv_cache_too_small" in {f.id for f in longer.findings}


def test_borderline_warning_states_the_band() -> None:
    spec = load_model("Qwen/Qwen3-32B")
    hw = Hardware(gpu=lookup("H100"), gpus_per_node=1)
    for length in range(14000, 19000, 250):
        layout = plan(spec, hw, PlanRequest(tp=1, max_model_len=length, vllm_version="0.11.0")).layouts[0]
        found = [f for f in layout.findings if f.id == "kv_cache_borderline"]
        if found:
            assert "error band" in found[0].message and found[0].severity == "warning"
            assert layout.valid
            return
    pytest.fail("no length of 14,000-19,000 tokens is borderline")


def test_mxfp4_is_known_in_0_10_1_and_pads_experts_per_backend() -> None:
    layout = first_layout("openai/gpt-oss-120b", tp=2, gpus=2, vllm_version="0.10.1")
    assert "quant_unknown_method" not in {f.id for f in layout.findings}
    assert "architecture_not_registered" not in {f.id for f in layout.findings}
    spec = load_model("openai/gpt-oss-120b")
    one = Layout(1, 1, 1, False)
    from hangar.planning.memory import MemoryInputs

    def inputs(cap: tuple[int, int], version: tuple[int, int, int]) -> MemoryInputs:
        return MemoryInputs(memory_bytes=80 * GIB, gpu_memory_utilization=0.9, max_model_len=4096,
                            max_num_batched_tokens=8192, max_num_seqs=256, kv_cache_dtype="auto",
                            cuda_graphs=True, prefix_caching=True, vllm_version=version,
                            compute_capability=cap)

    # Marlin: hidden 2880 -> 3072, intermediate 2880 -> 2944 (mxfp4.py:844)
    assert mxfp4_expert_padding(spec, one, inputs((8, 0), (0, 11, 0))) == pytest.approx(
        3072 / 2880 * 2944 / 2880)
    # Triton matmul_ogs on SM 9.0 from 0.10.2: intermediate to 64 only (2880 is aligned)
    assert mxfp4_expert_padding(spec, one, inputs((9, 0), (0, 11, 0))) == 1.0


YARN = {"rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}}


def test_yarn_length_is_derived_per_version_and_overrides_pass_through() -> None:
    from hangar.planning.api import make_plan

    old = make_plan("Qwen/Qwen3-8B", gpu="H100", gpus=1, tp=1, max_model_len=131072,
                    vllm_version="0.20.0", hf_overrides=YARN)
    assert old.ok  # 0.8.5-0.20: original_max_position_embeddings x factor = 131072
    assert "--hf-overrides" in old.layouts[0].serve_args
    new = make_plan("Qwen/Qwen3-8B", gpu="H100", gpus=1, tp=1, max_model_len=131072,
                    vllm_version="0.33.0", hf_overrides=YARN)
    # 0.32+ keep max_position_embeddings (40960), as vLLM 0.32's create_model_config does
    assert "max_model_len_exceeds_derived" in {f.id for f in new.layouts[0].findings}
