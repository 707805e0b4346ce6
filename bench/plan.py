"""Benchmark `hangar plan`: time per model, and the memory model's error against real vLLM logs.

    python bench/plan.py [--calibration PATH] [--csv out.csv]

Part 1 times `plan()` for every catalog model on 8x H100 (all layouts), next to a named
baseline measured in the same run: parsing the same config.json with json.loads alone.
Part 2 predicts, for each record of ../shared/calibration (281 real vLLM start-up logs),
the weights per GPU, the available KV cache (GiB) and the KV cache tokens, and prints the
median and p90 absolute relative error next to the logged figures. These figures are
IN-SAMPLE: the memory constants were fitted on them (bench/fit_memory.py).
Part 3 scores bench/heldout_memory.yaml (real logs on other GPUs, vLLM versions and models):
the `dev` split record by record, the `never_seen` split only as aggregates, and the verdicts
(a launch that started must not be predicted as an error).
"""

from __future__ import annotations

import argparse
import json
import math
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
from hangar.planning.accounting import default_accounting

GIB = 2**30
DEFAULT_CALIBRATION = ROOT.parent / "shared" / "calibration" / "vllm-startup-memory-281.json"
# Catalog stand-ins beyond bench/calibration_index.json (same architecture, see notes there).
EXTRA_MAP = {"Qwen/Qwen3-235B-A22B-Instruct-2507": "Qwen__Qwen3-235B-A22B"}


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
    return lookup(name)


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
    first = plan(spec, hw, request).layouts[0]
    lay = first.memory
    return {
        "valid": float(first.valid),
        "weights_gib": lay.weight_bytes_per_gpu / GIB,
        "kv_gib": lay.kv_cache_bytes_per_gpu / GIB,
        "kv_tokens": float(lay.kv_cache_tokens),
        "kv_bytes_per_token": float(lay.kv_bytes_per_token_per_gpu),
    }


def _err(pred: float, real: float) -> float:
    return abs(pred - real) / abs(real) if real else float("nan")


def _pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round(q * (len(values) - 1)))] if values else float("nan")


def calibrate(path: Path, csv_out: Path | None) -> None:
    data = json.loads(path.read_text())
    index = _index()
    errors: dict[str, list[float]] = {"weights": [], "kv_gib": [], "kv_tokens": []}
    nvidia: dict[str, list[float]] = {"weights": [], "kv_gib": [], "kv_tokens": []}
    per_token: list[float] = []
    per_model: dict[str, list[float]] = {}
    lines, skipped, false_errors = [], 0, 0
    for rec in data["records"].values():
        cfg, mem = rec["log_config"], rec["log_memory"]
        spec = _spec_for(cfg["model"], cfg.get("quantization"), index)
        if spec is None or mem.get("model_load_gib") is None:
            skipped += 1
            continue
        p = predict(spec, rec)
        false_errors += p["valid"] == 0.0  # every calibration record is a launch that started
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
    print(f"\n== IN-SAMPLE: memory model vs {n} real vLLM start-up logs of ../shared/calibration "
          f"(the constants of planning/data/memory.yaml were fitted on them; {skipped} skipped: no config)")
    print("   baseline (named): the logged figure itself; error = |predicted - logged| / logged")
    for title, table in ((f"all {n} records", errors), (f"NVIDIA GPUs only ({len(nvidia['weights'])})", nvidia)):
        print(f"   {title}:")
        for key, label in (("weights", "weights per GPU"), ("kv_gib", "available KV cache GiB"),
                           ("kv_tokens", "KV cache tokens")):
            vals = [v for v in table[key] if not math.isnan(v)]
            print(f"     {label:24} median {statistics.median(vals) * 100:5.1f}%   p90 {_pct(vals, 0.9) * 100:5.1f}%")
    print(f"   verdicts: {false_errors} of {n} launches that started predicted as errors")
    print(f"   KV bytes per token (uniform full-attention/MLA models, logged GiB / logged tokens, "
          f"{len(per_token)} records): median {statistics.median(per_token) * 100:.2f}%   "
          f"p90 {_pct(per_token, 0.9) * 100:.2f}%")
    print("   per model (median error on available KV GiB):")
    for model, vals in sorted(per_model.items(), key=lambda kv: -statistics.median(kv[1])):
        print(f"     {model:55} n={len(vals):3}  {statistics.median(vals) * 100:5.1f}%")
    if csv_out:
        csv_out.write_text("model,gpu,tp,max_len,w_real,w_pred,kv_real,kv_pred,tok_real,tok_pred\n" + "\n".join(lines))


HELDOUT = ROOT / "bench" / "heldout_memory.yaml"
HELDOUT_GPUS = {"RTX-4060-8GB": "RTX-4090"}  # only memory differs; the log gives the total


def heldout_split(record_id: str) -> str:
    """Frozen rule (see the file header): sha1(id) first hex digit 0-5 -> never_seen."""
    import hashlib

    return "never_seen" if hashlib.sha1(record_id.encode()).hexdigest()[0] in "012345" else "dev"


def _heldout_spec(rec: dict[str, Any]) -> ModelSpec | None:
    folder = catalog_entry(rec["catalog"]) if rec.get("catalog") else None
    if folder is None:
        return None
    spec = from_catalog(folder)
    quant = rec.get("quant")
    if rec.get("config_match") != "exact":
        spec = spec.model_copy(update={"checkpoint_bytes": None})
    if quant == "fp8":
        spec = spec.model_copy(update={"quant": QuantSpec(
            method="compressed-tensors", bits=8, weight_format="float8",
            modules_not_converted=("lm_head", "vision"))})
    elif quant == "awq":
        spec = spec.model_copy(update={"quant": QuantSpec(
            method="awq", bits=4, group_size=128, weight_format="int4",
            modules_not_converted=("lm_head",))})
    return spec.model_copy(update={"weight_bytes": loaded_weight_bytes(spec)})


def heldout_predict(spec: ModelSpec, rec: dict[str, Any]) -> tuple[Any, bool, float]:
    """(layout memory, predicted-valid, requested GiB) for one held-out record."""
    flags = rec["flags"]
    base = lookup(HELDOUT_GPUS.get(rec["gpu"], rec["gpu"]))
    total = rec["gpu_memory_gib"] + default_accounting().cuda_gap_gib  # the log prints the CUDA total
    gpu = base.model_copy(update={"memory_bytes": int(total * GIB)})
    tp = flags.get("tp", 1)
    hw = Hardware(gpu=gpu, gpus_per_node=max(8, tp))
    request = PlanRequest(
        tp=tp, pp=flags.get("pp", 1), dp=1, max_model_len=flags.get("max_model_len"),
        gpu_memory_utilization=flags.get("gpu_memory_utilization"),
        vllm_version=rec["vllm_version"], enable_prefix_caching=flags.get("enable_prefix_caching"),
        allow_long_max_model_len=True,
    )
    result = plan(spec, hw, request)
    lay = result.layouts[0]
    return lay.memory, lay.valid, result.settings.gpu_memory_utilization * rec["gpu_memory_gib"]


def score_heldout(path: Path) -> None:
    import yaml

    records = yaml.safe_load(path.read_text())["records"]
    rows: dict[str, list[dict[str, Any]]] = {"dev": [], "never_seen": [], "late": []}
    skipped: dict[str, int] = {"dev": 0, "never_seen": 0, "late": 0}
    for rec in records:
        split = rec.get("split") or heldout_split(rec["id"])
        spec = _heldout_spec(rec)
        if spec is None:
            skipped[split] += 1
            continue
        mem, valid, budget = heldout_predict(spec, rec)
        logged = rec["logged"]
        rows[split].append({
            "id": rec["id"], "started": rec["started"], "valid": valid, "budget": budget,
            "w": (mem.weight_bytes_per_gpu / GIB, logged.get("weights_gib")),
            "kv": (mem.kv_cache_bytes_per_gpu / GIB if mem.kv_cache_bytes_per_gpu else
                   (mem.requested_bytes - mem.weight_bytes_per_gpu - mem.overhead_bytes) / GIB,
                   logged.get("kv_gib")),
            "tok": (mem.kv_cache_tokens, logged.get("kv_tokens")),
        })
    print(f"\n== held-out: {path.name} (real logs not in the calibration set; never fitted on)")
    for split in ("dev", "never_seen", "late"):
        _print_split(split, rows[split], skipped[split])


def _print_split(split: str, rows: list[dict[str, Any]], skipped: int) -> None:
    w = [_err(r["w"][0], r["w"][1]) for r in rows if r["w"][1]]
    kv_budget = [abs(r["kv"][0] - r["kv"][1]) / r["budget"] for r in rows if r["kv"][1] is not None]
    kv_rel = [_err(r["kv"][0], r["kv"][1]) for r in rows if r["kv"][1] and r["kv"][1] > 0]
    false_errors = [r["id"] for r in rows if r["started"] and not r["valid"]]
    missed = [r["id"] for r in rows if not r["started"] and r["valid"]]
    print(f"   {split}: {len(rows)} records ({skipped} without a config in the catalog)")
    for label, vals in (("weights per GPU", w), ("available KV, share of budget", kv_budget),
                        ("available KV GiB (relative)", kv_rel)):
        if vals:
            print(f"     {label:32} median {statistics.median(vals) * 100:5.1f}%   "
                  f"p90 {_pct(vals, 0.9) * 100:5.1f}%   (n={len(vals)})")
    started = sum(1 for r in rows if r["started"])
    print(f"     verdicts: {len(false_errors)} of {started} launches that started predicted as errors; "
          f"{len(missed)} of {len(rows) - started} failed launches predicted valid")
    if split == "dev":
        for r in rows:
            print(f"       {r['id']:40} w {r['w'][0]:6.2f}/{r['w'][1]}  kv {r['kv'][0]:6.2f}/{r['kv'][1]}  "
                  f"started={r['started']} predicted_valid={r['valid']}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calibration", type=Path, default=DEFAULT_CALIBRATION)
    parser.add_argument("--csv", type=Path)
    parser.add_argument("--skip-timing", action="store_true")
    parser.add_argument("--heldout", type=Path, default=HELDOUT)
    args = parser.parse_args()
    if not args.skip_timing:
        time_plans()
    if args.calibration.is_file():
        calibrate(args.calibration, args.csv)
    else:
        print(f"calibration file not found: {args.calibration}")
    if args.heldout.is_file():
        score_heldout(args.heldout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
