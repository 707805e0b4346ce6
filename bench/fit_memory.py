"""Fit the few constants of planning/data/memory.yaml; print them and the error band.

    python bench/fit_memory.py            # constants per version tier, from ../shared/calibration
    python bench/fit_memory.py --band     # the error band, from the DEV split of the held-out set

Everything else in the memory model comes from vLLM's accounting (planning/accounting.py).
What is fitted, per tier (0.11-0.17, 0.18-0.19, 0.20+), on NVIDIA calibration records without
a vision tower:

    residual = requested - logged weights - logged available KV      (GiB, what vLLM kept)
             = fixed_gib + tp_extra_gib * [TP > 1] + max(forward peak, sampler_copies * logits)

sampler_copies by a grid (least absolute deviation); for each candidate, fixed_gib is the median
residual of the TP = 1 records and tp_extra_gib the median of the TP > 1 ones minus fixed_gib,
both kept non-negative (fixed_gib >= 0.05: CUDA context and cuBLAS workspaces are never free).
The band is never taken from never_seen records: it is the larger of the largest optimistic /
pessimistic miss on the dev split and the p90 in-sample miss, as a share of the budget, rounded
up to 0.5%.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from plan import (
    DEFAULT_CALIBRATION,
    HELDOUT,
    _gpu,
    _heldout_spec,
    _index,
    _spec_for,
    heldout_predict,
    heldout_split,
)

from hangar.hardware.spec import Hardware
from hangar.planning import PlanRequest
from hangar.planning.accounting import GIB, forward_peak_bytes, padded_vocab
from hangar.planning.memory import device_total_bytes
from hangar.planning.plan import effective_settings
from hangar.planning.versions import VllmVersion

MIN_FIXED_GIB = 0.05
TIERS = (((0, 20, 0), (9, 0, 0)), ((0, 18, 0), (0, 20, 0)), ((0, 8, 0), (0, 18, 0)))


def _row(rec: dict[str, Any], index: dict[str, Any]) -> dict[str, float] | None:
    cfg, mem, meta = rec["log_config"], rec["log_memory"], rec["csv_metadata"]
    if meta["accelerator"] == "MI300X" or mem.get("model_load_gib") is None:
        return None
    spec = _spec_for(cfg["model"], cfg.get("quantization"), index)
    if spec is None or spec.vision:
        return None
    tp = cfg["tensor_parallel_size"] or 1
    gpu = _gpu(meta["accelerator"])
    hw = Hardware(gpu=gpu, gpus_per_node=8)
    version = str(cfg.get("vllm_version") or "0.11.0").lstrip("v")
    request = PlanRequest(max_model_len=cfg["max_seq_len"], vllm_version=version)
    s = effective_settings(spec, hw, request)
    requested = device_total_bytes(gpu.memory_bytes, gpu.rocm) * mem["gpu_memory_utilization"] / GIB
    return {
        "version": VllmVersion.parse(version),
        "tp": tp,
        "residual": requested - mem["model_load_gib"] - mem["available_kv_cache_gib"],
        "forward": forward_peak_bytes(spec, s.max_num_batched_tokens, tp) / GIB,
        "logits": s.max_num_seqs * padded_vocab(spec) * 4 / GIB,
    }


def _fit(rows: list[dict[str, float]]) -> tuple[float, float, float, float]:
    best = (math.inf, 0.0, 0.0, 0.0)
    for step in range(241):
        k = step * 0.05
        res = [r["residual"] - max(r["forward"], k * r["logits"]) for r in rows]
        one = [v for v, r in zip(res, rows) if r["tp"] == 1] or res
        # physical terms are not negative: CUDA context and cuBLAS workspaces are > 0
        fixed = max(MIN_FIXED_GIB, statistics.median(one))
        multi = [v for v, r in zip(res, rows) if r["tp"] > 1]
        extra = max(0.0, statistics.median(multi) - fixed) if multi else 0.0
        loss = sum(abs(v - fixed - (extra if r["tp"] > 1 else 0)) for v, r in zip(res, rows))
        best = min(best, (loss, k, fixed, extra))
    return best


def fit_constants(path: Path) -> None:
    index = _index()
    rows = [r for rec in json.loads(path.read_text())["records"].values()
            if (r := _row(rec, index)) is not None]
    for low, high in TIERS:
        tier = [r for r in rows if low <= r["version"] < high]
        if not tier:
            print(f"since {low}: no records")
            continue
        loss, k, fixed, extra = _fit(tier)
        print(f"since {'.'.join(map(str, low[:2]))}: n={len(tier)} sampler_copies={k:.2f} "
              f"fixed_gib={fixed:.2f} tp_extra_gib={extra:.2f} mean |miss|={loss / len(tier):.2f} GiB")


SMALL_BUDGET_GIB = 40.0  # below this the band is an absolute floor, above it a share


def fit_band(path: Path) -> None:
    """The band per side: a share of the budget (from records with budgets >= 40 GiB: the
    larger of the dev maximum and the in-sample p90) and a floor in GiB (the largest dev
    miss on smaller budgets, where a share would be too thin)."""
    import yaml

    dev: list[tuple[float, float]] = []  # (miss GiB, budget GiB); miss > 0: vLLM found more
    for rec in yaml.safe_load(path.read_text())["records"]:
        if (rec.get("split") or heldout_split(rec["id"])) != "dev" or rec["logged"].get("kv_gib") is None:
            continue
        spec = _heldout_spec(rec)
        if spec is None:
            continue
        mem, _, budget = heldout_predict(spec, rec)
        predicted = (mem.requested_bytes - mem.weight_bytes_per_gpu - mem.overhead_bytes) / GIB
        dev.append((rec["logged"]["kv_gib"] - predicted, budget))
    ins = _in_sample_misses()

    def up(v: float, step: float) -> float:
        return math.ceil(v / step) * step

    def p90(v: list[float]) -> float:
        return sorted(v)[int(0.9 * (len(v) - 1))] if v else 0.0

    for side, sign in (("optimistic", 1), ("pessimistic", -1)):
        big = [sign * m / b for m, b in dev if b >= SMALL_BUDGET_GIB and sign * m > 0]
        small = [sign * m for m, b in dev if b < SMALL_BUDGET_GIB and sign * m > 0]
        share = max(max(big, default=0.0), p90([sign * m / b for m, b in ins if sign * m > 0]))
        print(f"{side}: share {up(share, 0.005):.3f} of the budget, floor "
              f"{up(max(small, default=0.0), 0.05):.2f} GiB (dev n={len(dev)}, in-sample n={len(ins)})")


def _in_sample_misses() -> list[tuple[float, float]]:
    """Calibration misses (logged - predicted available KV, GiB) with their budgets."""
    from plan import predict

    out = []
    index = _index()
    for rec in json.loads(DEFAULT_CALIBRATION.read_text())["records"].values():
        spec = _spec_for(rec["log_config"]["model"], rec["log_config"].get("quantization"), index)
        if spec is None or rec["log_memory"].get("model_load_gib") is None:
            continue
        gpu = _gpu(rec["csv_metadata"]["accelerator"])
        budget = device_total_bytes(gpu.memory_bytes, gpu.rocm) * rec["log_memory"]["gpu_memory_utilization"] / GIB
        out.append((rec["log_memory"]["available_kv_cache_gib"] - predict(spec, rec)["kv_gib"], budget))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calibration", type=Path, default=DEFAULT_CALIBRATION)
    parser.add_argument("--band", action="store_true")
    args = parser.parse_args()
    if args.band:
        fit_band(HELDOUT)
    else:
        fit_constants(args.calibration)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
