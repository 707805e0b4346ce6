"""The recommendation follows an operator's habits: TP inside a node, PP only across nodes,
DP replicas once an engine holds enough max-length requests, DP+EP for MoE."""

from __future__ import annotations

from hangar.hardware import lookup
from hangar.hardware.spec import Hardware
from hangar.models import load_model
from hangar.planning import PlanRequest, plan


def recommend(model: str, gpu: str, gpus: int, nodes: int = 1) -> tuple[int, int, int, bool]:
    result = plan(load_model(model), Hardware(gpu=lookup(gpu), gpus_per_node=gpus, nodes=nodes), PlanRequest())
    rec = result.recommended
    assert rec is not None and rec.valid
    return rec.tp, rec.pp, rec.dp, rec.ep


def test_big_model_takes_the_whole_node() -> None:
    tp, pp, dp, _ = recommend("meta-llama/Llama-3.1-70B-Instruct", "H100", 8)
    assert (tp, pp, dp) == (8, 1, 1)


def test_small_model_gets_replicas() -> None:
    tp, pp, dp, _ = recommend("meta-llama/Llama-3.1-8B-Instruct", "H100", 8)
    assert dp > 1 and pp == 1 and tp * dp == 8


def test_pipeline_only_across_nodes() -> None:
    assert recommend("meta-llama/Llama-3.1-405B", "H100", 8, nodes=2)[:3] == (8, 2, 1)


def test_moe_with_data_parallel_uses_expert_parallel() -> None:
    _, pp, dp, ep = recommend("Qwen/Qwen3-30B-A3B", "H100", 8)
    assert dp > 1 and ep and pp == 1


def test_no_layout_fits_gives_none() -> None:
    result = plan(load_model("Qwen/Qwen3-235B-A22B"), Hardware(gpu=lookup("L4"), gpus_per_node=2), PlanRequest())
    assert result.recommended is None and not result.ok
