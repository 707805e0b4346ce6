"""Benchmark `hangar plan`: time per model, and the memory model's error against real vLLM logs.

    python bench/plan.py [--calibration PATH] [--csv out.csv]

Part 1 times `plan()` for every catalog model on 8x H100 (all layouts), next to a named
baseline measured in the same run: parsing the same config.json with json.loads alone.
Part 2 predicts, for each record of ../shared/calibration (281 real vLLM start-up logs),
the weights per GPU, the available KV cache (GiB) and the KV cache tokens, and prints the
median and p90 absolute relative error next to the logged figures.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from hangar.hardware import lookup
from hangar.hardware.spec import GpuSpec, Hardware
from hangar.models.config import loaded_weight_bytes
from hangar.models.sources import catalog_entry, catalog_folders, from_catalog
from hangar.models.spec import ModelSpec, QuantSpec
from hangar.planning import PlanRequest, plan

GIB = 2**30
DEFAULT_CALIBRATION = ROOT.parent / "shared" / "calibration" / "vllm-startup-memory-281.json"
# Catalog stand-ins beyond bench/calibration_index.json (same architecture, see notes there).
EXTRA_MAP = {"Qwen/Qwen3-235B-A22B-Instruct-2507": "Qwen__Qwen3-235B-A22B"}
# AMD MI300X is outside the NVIDIA catalog; vLLM on ROCm reports 192 GiB (191.98).
MI300X = GpuSpec(id="MI300X", name="AMD Instinct MI300X", memory_bytes=int(191.98 * GIB),
                 compute_capability=(9, 4), generation="cdna3", interconnect="nvlink", fp8=True)


def time_plans() -> None:
    hw = Hardware(gpu=lookup("H100"), gpus_per_node=8)
    rows = []
    for folder in catalog_folders():
        t0 = time.perf_counter()
        json.loads((folder / "config.json").read_text())
        base = time.perf_counter() - t0
        t0 = time.perf_counter()
        spec = from_catalog(folder)
        result = plan(spec, hw, PlanRequest())
        elapsed = time.perf_counter() - t0
        rows.append((folder.name, elapsed, base, len(result.layouts)))
    rows.sort(key=lambda r: -r[1])
    total = sum(r[1] for r in rows)
    print(f"== plan() time per catalog model on 8x H100 (all layouts), {len(rows)} models")
    print(f"   baseline 'json.loads of config.json': median {statistics.median(r[2] for r in rows) * 1e3:.2f} ms")
    print(f"   hangar plan: median {statistics.median(r[1] for r in rows) * 1e3:.1f} ms, "
          f"max {rows[0][1] * 1e3:.1f} ms ({rows[0][0]}), total {total:.2f} s; "
          f"ratio median plan/json.loads = {statistics.median(r[1] / r[2] for r in rows):.0f}x")


def _index() -> dict[str, Any]:
    data = json.loads((ROOT / "bench" / "calibration_index.json").read_text())
    return dict(data["models"])


def _spec_for(model_id: str, record_quant: str | None, index: dict[str, Any]) -> ModelSpec | None:
    entry = index.get(model_id, {})
    folder_name = EXTRA_MAP.get(model_id) or entry.get("catalog")
    if not folder_name:
        return None
    folder = catalog_entry(folder_name)
    if folder is None:
        return None
    spec = from_catalog(folder)
    match = entry.get("config_match")
    if match == "architecture_only":
        spec = spec.model_copy(update={"quant": None, "checkpoint_bytes": None})
    if spec.quant is None and record_quant in ("fp8", "compressed-tensors", "modelopt"):
        # a base config standing in for an FP8 re-quantization (RedHatAI FP8-dynamic, nvidia FP8)
        quant = QuantSpec(method="compressed-tensors", bits=8, weight_format="float8",
                          modules_not_converted=("lm_head", "vision"))
        spec = spec.model_copy(update={"quant": quant})
    return spec.model_copy(update={"weight_bytes": loaded_weight_bytes(spec)})


def _gpu(name: str) -> GpuSpec:
    return MI300X if name.upper() == "MI300X" else lookup(name)


def predict(spec: ModelSpec, rec: dict[str, Any]) -> dict[str, float]:
    cfg, mem = rec["log_config"], rec["log_memory"]
    tp, pp, dp = cfg["tensor_parallel_size"] or 1, cfg["pipeline_parallel_size"] or 1, cfg["data_parallel_size"] or 1
    hw = Hardware(gpu=_gpu(rec["csv_metadata"]["accelerator"]), gpus_per_node=max(8, tp * pp * dp))
    version = str(cfg.get("vllm_version") or "0.11.0").lstrip("v")
    request = PlanRequest(
        tp=tp, pp=pp, dp=dp, ep="enable-expert-parallel" in (rec["csv_metadata"].get("runtime_args") or ""),
        max_model_len=cfg["max_seq_len"], gpu_memory_utilization=mem["gpu_memory_utilization"],
        kv_cache_dtype=cfg.get("kv_cache_dtype") or "auto", vllm_version=version,
        enforce_eager=bool(cfg.get("enforce_eager")), enable_prefix_caching=cfg.get("enable_prefix_caching"),
        allow_long_max_model_len=True,
    )
    lay = plan(spec, hw, request).layouts[0].memory
    return {
        "weights_gib": lay.weight_bytes_per_gpu / GIB,
        "kv_gib": lay.kv_cache_bytes_per_gpu / GIB,
        "kv_tokens": float(lay.kv_cache_tokens),
        "kv_bytes_per_token": float(lay.kv_bytes_per_token_per_gpu),
    }


def _err(pred: float, real: float) -> float:
    return abs(pred - real) / abs(real) if real else float("nan")


def _pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))] if values else float("nan")


def calibrate(path: Path, csv_out: Path | None) -> None:
    data = json.loads(path.read_text())
    index = _index()
    errors: dict[str, list[float]] = {"weights": [], "kv_gib": [], "kv_tokens": []}
    nvidia: dict[str, list[float]] = {"weights": [], "kv_gib": [], "kv_tokens": []}
    per_token: list[float] = []
    per_model: dict[str, list[float]] = {}
    lines, skipped = [], 0
    for rec in data["records"].values():
        cfg, mem = rec["log_config"], rec["log_memory"]
        spec = _spec_for(cfg["model"], cfg.get("quantization"), index)
        if spec is None or mem.get("model_load_gib") is None:
            skipped += 1
            continue
        p = predict(spec, rec)
        e_w = _err(p["weights_gib"], mem["model_load_gib"])
        e_kv = _err(p["kv_gib"], mem["available_kv_cache_gib"])
        e_tok = _err(p["kv_tokens"], mem["kv_cache_tokens"])
        errors["weights"].append(e_w)
        errors["kv_gib"].append(e_kv)
        errors["kv_tokens"].append(e_tok)
        if set(spec.layer_types) <= {"full_attention", "mla"} and mem["kv_cache_tokens"]:
            real_bpt = mem["available_kv_cache_gib"] * GIB / mem["kv_cache_tokens"]
            per_token.append(_err(p["kv_bytes_per_token"], real_bpt))
        if rec["csv_metadata"]["accelerator"] != "MI300X":
            for key, value in (("weights", e_w), ("kv_gib", e_kv), ("kv_tokens", e_tok)):
                nvidia[key].append(value)
        per_model.setdefault(cfg["model"], []).append(e_kv)
        lines.append(f"{cfg['model']},{rec['csv_metadata']['accelerator']},{cfg['tensor_parallel_size']},"
                     f"{cfg['max_seq_len']},{mem['model_load_gib']},{p['weights_gib']:.2f},"
                     f"{mem['available_kv_cache_gib']},{p['kv_gib']:.2f},{mem['kv_cache_tokens']},{int(p['kv_tokens'])}")
    n = len(errors["weights"])
    print(f"\n== memory model vs {n} real vLLM start-up logs ({skipped} skipped: no config for the model)")
    print("   baseline (named): the logged figure itself; error = |predicted - logged| / logged")
    for title, table in ((f"all {n} records", errors), (f"NVIDIA GPUs only ({len(nvidia['weights'])})", nvidia)):
        print(f"   {title}:")
        for key, label in (("weights", "weights per GPU"), ("kv_gib", "available KV cache GiB"),
                           ("kv_tokens", "KV cache tokens")):
            vals = [v for v in table[key] if v == v]
            print(f"     {label:24} median {statistics.median(vals) * 100:5.1f}%   p90 {_pct(vals, 0.9) * 100:5.1f}%")
    print(f"   KV bytes per token (uniform full-attention/MLA models, logged GiB / logged tokens, "
          f"{len(per_token)} records): median {statistics.median(per_token) * 100:.2f}%   "
          f"p90 {_pct(per_token, 0.9) * 100:.2f}%")
    print("   per model (median error on available KV GiB):")
    for model, vals in sorted(per_model.items(), key=lambda kv: -statistics.median(kv[1])):
        print(f"     {model:55} n={len(vals):3}  {statistics.median(vals) * 100:5.1f}%")
    if csv_out:
        csv_out.write_text("model,gpu,tp,max_len,w_real,w_pred,kv_real,kv_pred,tok_real,tok_pred\n" + "\n".join(lines))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calibration", type=Path, default=DEFAULT_CALIBRATION)
    parser.add_argument("--csv", type=Path)
    parser.add_argument("--skip-timing", action="store_true")
    args = parser.parse_args()
    if not args.skip_timing:
        time_plans()
    if args.calibration.is_file():
        calibrate(args.calibration, args.csv)
    else:
        print(f"calibration file not found: {args.calibration}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
