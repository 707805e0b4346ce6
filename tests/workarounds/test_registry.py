"""The workaround registry: valid data with citations, matching, user precedence, review."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hangar.hardware import lookup
from hangar.models.config import config_features
from hangar.preflight.workarounds_check import review
from hangar.workarounds import (
    Facts,
    ModelFeatures,
    applicable,
    apply,
    get,
    load_registry,
    removal_due,
)

CATALOG = Path(__file__).resolve().parents[2] / "src" / "hangar" / "models" / "catalog"


def _ids(facts: Facts) -> set[str]:
    return {w.id for w in applicable(facts)}


def test_every_entry_is_cited_dated_and_removable() -> None:
    entries = load_registry()
    assert len(entries) >= 9
    assert len({w.id for w in entries}) == len(entries)
    for w in entries:
        assert all(u.startswith("https://github.com/") for u in w.upstream)
        assert w.remove_when.note and w.reason and (w.env or w.args)


def test_block_fp8_moe_on_sm120_disables_deepgemm_both_ways() -> None:
    config = json.loads((CATALOG / "deepseek-ai__DeepSeek-V3" / "config.json").read_text())
    facts = Facts(gpu=lookup("rtx5090"), model=config_features(config), cuda=True)
    assert {"sm12x-block-fp8-deepgemm", "sm12x-block-fp8-moe-deepgemm"} <= _ids(facts)
    assert _ids(facts.model_copy(update={"gpu": lookup("H100")})) == set()


def test_no_nvcc_disables_flashinfer_sampler_and_uses_triton_for_fp8_kv() -> None:
    facts = Facts(
        gpu=lookup("H100"),
        cuda=True,
        nvcc=False,
        flashinfer_prebuilt=False,
        kv_cache_dtype="fp8",
        vllm_version="0.33.0",
    )
    assert {"no-nvcc-flashinfer-sampler", "no-nvcc-fp8-kv-triton-attention"} <= _ids(facts)
    old = facts.model_copy(update={"vllm_version": "0.11.0"})
    assert "no-nvcc-fp8-kv-triton-attention-env" in _ids(old)
    assert _ids(facts.model_copy(update={"nvcc": True})) == set()
    assert _ids(facts.model_copy(update={"nvcc": None})) == set()  # unknown never matches


def test_consumer_cards_in_tp_over_pcie() -> None:
    facts = Facts(gpu=lookup("rtx4090"), gpus=2, tp=2)
    assert "consumer-pcie-tp-p2p" in _ids(facts)
    assert "consumer-pcie-tp-p2p" not in _ids(facts.model_copy(update={"tp": 1}))
    assert "consumer-pcie-tp-p2p" not in _ids(facts.model_copy(update={"gpu": lookup("H100")}))


def test_wsl2_and_unified_memory() -> None:
    assert "wsl2-pin-memory" in _ids(
        Facts(gpu=lookup("rtx4090"), wsl=True, cuda=True, vllm_version="0.33.0")
    )
    gb10 = [g for g in ("GB10", "dgx-spark") if _known(g)]
    if gb10:
        ids = _ids(Facts(gpu=lookup(gb10[0])))
        assert {"unified-memory-allocator", "gb10-memory-utilization"} <= ids


def _known(name: str) -> bool:
    from hangar.errors import HangarError

    try:
        lookup(name)
    except HangarError:
        return False
    return True


def test_pre_ampere_bf16_serves_half() -> None:
    facts = Facts(gpu=lookup("V100"), model=ModelFeatures(dtype="bfloat16"))
    assert "pre-ampere-bf16" in _ids(facts)


def test_user_env_and_flags_win_and_the_override_is_reported() -> None:
    chosen = [
        w for w in load_registry() if w.id in ("consumer-pcie-tp-p2p", "unified-memory-allocator")
    ]
    applied = apply(chosen, {"NCCL_P2P_DISABLE": "0"}, ["--max_num_seqs=64"])
    assert "NCCL_P2P_DISABLE" not in applied.env
    assert applied.env == {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}
    assert applied.args == ("--disable-custom-all-reduce",)
    assert {(o.name, o.user_value) for o in applied.overrides} == {
        ("NCCL_P2P_DISABLE", "0"),
        ("--max-num-seqs", "--max_num_seqs=64"),
    }


def test_review_lists_entries_fixed_by_the_engine_version() -> None:
    entry = get("no-nvcc-fp8-kv-triton-attention-env")
    assert entry is not None
    assert removal_due(entry, "0.21.0+cu128") and not removal_due(entry, "0.11.0")
    assert [w.id for w, _ in review("0.33.0")] == ["no-nvcc-fp8-kv-triton-attention-env"]


def _catalog_config(name: str) -> dict[str, object]:
    return dict(json.loads((CATALOG / name / "config.json").read_text()))


DENSE = "meta-llama__Llama-3.1-8B-Instruct"  # bfloat16, no quantization, no experts


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (
            _catalog_config("deepseek-ai__DeepSeek-V3"),
            ModelFeatures(quantization="fp8", block_fp8=True, moe=True, dtype="bfloat16"),
        ),
        (
            _catalog_config("mistralai__Mixtral-8x7B-Instruct-v0.1"),
            ModelFeatures(moe=True, dtype="bfloat16"),
        ),
        (
            {
                **_catalog_config(DENSE),
                "quantization_config": {
                    "quant_method": "compressed-tensors",
                    "config_groups": {
                        "g": {"weights": {"type": "float", "num_bits": 8, "strategy": "block",
                                          "block_structure": [128, 128]}}
                    },
                },
            },
            ModelFeatures(quantization="compressed-tensors", block_fp8=True, dtype="bfloat16"),
        ),
        (
            {
                **_catalog_config(DENSE),
                "quantization_config": {
                    "quant_method": "compressed-tensors",
                    "config_groups": {
                        "g": {"weights": {"type": "float", "num_bits": 8, "strategy": "channel"}}
                    },
                },
            },
            ModelFeatures(quantization="compressed-tensors", block_fp8=False, dtype="bfloat16"),
        ),
        (
            {**_catalog_config(DENSE), "quantization_config": {"quant_method": "fp8"}},
            ModelFeatures(quantization="fp8", block_fp8=False, dtype="bfloat16"),
        ),
    ],
)
def test_model_features(config: dict[str, object], expected: ModelFeatures) -> None:
    """Features come from the same parse as the plan's ModelSpec (one reader)."""
    assert config_features(config) == expected


def test_a_config_hangar_cannot_read_has_no_features() -> None:
    assert config_features({"architectures": "LlamaForCausalLM"}) is None
