"""Multi-node plans carry a command per node (vLLM's mp mode and Ray); rejected layouts are
listed closest first; the recommendation says why it won; per-engine vs total in JSON."""

from __future__ import annotations

from hangar.planning.api import make_plan
from hangar.planning.report import plan_json


def test_two_node_plan_prints_one_command_per_node_with_ranks() -> None:
    p = make_plan("meta-llama/Llama-3.1-405B", gpu="H100", gpus=8, nodes=2, head_address="10.0.0.1")
    rec = p.recommended
    assert rec is not None and rec.multi_node is not None
    mp = rec.multi_node.mp
    assert [c.node_rank for c in mp] == [0, 1]
    assert "--headless" not in mp[0].argv and "--headless" in mp[1].argv
    for c in mp:
        argv = list(c.argv)
        assert argv[argv.index("--nnodes") + 1] == "2"
        assert argv[argv.index("--node-rank") + 1] == str(c.node_rank)
        assert argv[argv.index("--master-addr") + 1] == "10.0.0.1"
    ray = rec.multi_node.ray
    assert any("--distributed-executor-backend" in c.argv for c in ray)
    assert any(c.argv[:3] == ("ray", "start", "--address=10.0.0.1:6379") for c in ray)
    assert plan_json(p)["recommended"]["multi_node"]["recommended"] == "mp"


def test_old_vllm_without_nnodes_recommends_ray() -> None:
    p = make_plan("meta-llama/Llama-3.1-405B", gpu="H100", gpus=8, nodes=2, tp=8, pp=2,
                  vllm_version="0.10.1")
    nodes = p.layouts[0].multi_node
    assert nodes is not None and nodes.recommended == "ray" and not nodes.mp


def test_data_parallel_across_nodes_uses_dp_flags() -> None:
    p = make_plan("Qwen/Qwen3-8B", gpu="H100", gpus=8, nodes=2, tp=8, dp=2)
    nodes = p.layouts[0].multi_node
    assert nodes is not None
    second = list(nodes.mp[1].argv)
    assert second[second.index("--data-parallel-start-rank") + 1] == "1"
    assert "--headless" in second and "--data-parallel-size-local" in second


def test_single_node_plan_has_no_per_node_commands() -> None:
    assert make_plan("Qwen/Qwen3-8B", gpu="H100", gpus=8).recommended.multi_node is None  # type: ignore[union-attr]


def test_closest_rejected_layout_comes_first() -> None:
    # 405B on 8 H100: nothing fits; the first rejected layout must be the one nearest to working
    p = make_plan("meta-llama/Llama-3.1-405B", gpu="H100", gpus=8)
    assert p.recommended is None
    first = p.layouts[0]
    assert first.tp * first.pp == 8  # all 8 GPUs per engine holds the most weights


def test_recommendation_reason_and_totals_in_json() -> None:
    data = plan_json(make_plan("Qwen/Qwen3-8B", gpu="H100", gpus=8))
    assert "smallest model-parallel group" in data["recommended_why"]
    mem = data["recommended"]["memory"]
    assert mem["per"] == "engine"
    assert mem["kv_cache_tokens_total"] == mem["kv_cache_tokens"] * data["recommended"]["dp"]
