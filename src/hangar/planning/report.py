"""The plan as the documented JSON contract (docs/plan-json.md); pure, no I/O."""

from __future__ import annotations

from typing import Any

from hangar.planning.plan import LayoutPlan, Plan, kv_bytes_per_token, recommendation_reason


def layout_json(layout: LayoutPlan) -> dict[str, Any]:
    m = layout.memory
    return {
        "tp": layout.tp, "pp": layout.pp, "dp": layout.dp, "ep": layout.ep, "valid": layout.valid,
        "findings": [
            {"id": f.id, "severity": f.severity, "message": f.message, "fix": f.fix,
             "phase": f.phase, "origin": f.origin}
            for f in layout.findings
        ],
        "memory": {
            "weight_bytes_per_gpu": m.weight_bytes_per_gpu,
            "kv_bytes_per_token_per_gpu": m.kv_bytes_per_token_per_gpu,
            "kv_cache_bytes_per_gpu": m.kv_cache_bytes_per_gpu,
            "kv_cache_tokens": m.kv_cache_tokens,
            "max_concurrency": m.max_concurrency,
            "max_model_len_fit": m.max_model_len_fit,
            # kv_cache_tokens and max_concurrency are per engine (one DP replica)
            "per": "engine",
            "kv_cache_tokens_total": m.kv_cache_tokens * layout.dp,
            "max_concurrency_total": round(m.max_concurrency * layout.dp, 2),
        },
        "serve_command": list(layout.serve_args),
        "multi_node": _multi_node_json(layout),
    }


def _multi_node_json(layout: LayoutPlan) -> dict[str, Any] | None:
    nodes = layout.multi_node
    if nodes is None:
        return None
    def cmds(items: tuple[Any, ...]) -> list[dict[str, Any]]:
        return [{"node_rank": c.node_rank, "role": c.role, "argv": list(c.argv)} for c in items]
    return {"recommended": nodes.recommended, "why": nodes.why,
            "mp": cmds(nodes.mp), "ray": cmds(nodes.ray)}


def plan_json(p: Plan) -> dict[str, Any]:
    model, hw = p.model, p.hardware
    return {
        "model": {
            "id": model.id, "source": model.source, "architecture": model.architecture,
            "model_type": model.model_type, "num_params": model.num_params,
            "weight_bytes": model.weight_bytes,
            "weight_bytes_exact": model.checkpoint_bytes is not None,
            "kv_bytes_per_token": kv_bytes_per_token(model, p.settings.kv_cache_dtype),
            "max_model_len": model.derived_max_len, "features": list(model.features),
        },
        "hardware": {
            "gpu": hw.gpu.id, "gpus": hw.total_gpus, "gpus_per_node": hw.gpus_per_node,
            "nodes": hw.nodes, "memory_bytes": hw.gpu.memory_bytes,
            "compute_capability": f"{hw.gpu.compute_capability[0]}.{hw.gpu.compute_capability[1]}",
        },
        "settings": p.settings.model_dump(),
        "vllm_version": p.request.vllm_version,
        "layouts": [layout_json(lay) for lay in p.layouts],
        "recommended": layout_json(p.recommended) if p.recommended else None,
        "recommended_why": (
            recommendation_reason(p.recommended, hw)
            if p.recommended and p.recommended.valid and not p.request.layout_requested
            else None
        ),
    }
