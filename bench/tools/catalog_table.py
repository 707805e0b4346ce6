"""Regenerate src/hangar/models/catalog/README.md from the catalog folders.

Usage: python bench/tools/catalog_table.py [--check]

Every folder under the catalog is listed (whoever added it). The features column
is derived mechanically from config.json and the quantization side files, so it
is a hint for readers, not data the planner relies on. --check exits 1 when the
README on disk differs from what would be written (for CI).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import yaml

CATALOG = Path(__file__).resolve().parents[2] / "src" / "hangar" / "models" / "catalog"
README = CATALOG / "README.md"
Config = dict[str, Any]

HEADER = """# Embedded model catalog

Real Hugging Face `config.json` files (content as found in the cited public source, never edited) so that
`hangar plan <hf_id>` works offline. One folder per model, named after the hf_id with `/` replaced by `__`:
`config.json`, `meta.yaml` (hf_id, source repo/path/commit/url and caveat, `total_size_bytes` when a
safetensors index total was found, parameters, serve hints, notes) and, where the source had them,
`generation_config.json`, `hf_quant_config.json`, `quantize_config.json`, `tokenizer_config.json`,
processor configs or Mistral `params.json` (all verbatim).

Most configs are copies vendored in public GitHub repositories or GitHub re-publications of the Hugging Face
repository; each meta.yaml `source.caveat` says how far the copy can be trusted. The features column below is
derived mechanically from config fields (GQA/MHA/MQA from kv vs q heads; MLA from kv_lora_rank; sliding window
from sliding_window/layer_types; quant from quantization_config or side files) and is only a hint.

Regenerate this file with `python bench/tools/catalog_table.py` after adding a folder.
"""


def load_json(path: Path) -> Config:
    data = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict), path
    return data


def text_config(cfg: Config) -> Config:
    """The language-model part of a config (nested for multimodal / custom-code models)."""
    for key in ("text_config", "llm_config", "language_config"):
        sub = cfg.get(key)
        if isinstance(sub, dict):
            return sub
    return cfg


def first(cfg: Config, *keys: str) -> Any:
    for key in keys:
        if cfg.get(key) is not None:
            return cfg[key]
    return None


def attention_feature(tc: Config) -> str | None:
    if tc.get("kv_lora_rank"):
        return "MLA"
    heads = first(tc, "num_attention_heads", "n_head", "n_heads")
    kv = first(tc, "num_key_value_heads", "num_kv_heads", "n_head_kv")
    if kv is None and tc.get("multi_query"):
        kv = 1
    if not isinstance(heads, int):
        return None
    if kv is None or kv == heads:
        return "MHA"
    return "MQA" if kv == 1 else "GQA"


def moe_feature(tc: Config) -> str | None:
    experts = first(tc, "num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts")
    if not isinstance(experts, int) or experts <= 1:
        return None
    shared = tc.get("n_shared_experts") or tc.get("shared_expert_intermediate_size")
    return f"MoE({experts}{'+shared' if shared else ''})"


def layer_features(tc: Config) -> list[str]:
    types = tc.get("layer_types") or []
    out = []
    # Qwen2-style configs carry sliding_window but switch it off with use_sliding_window.
    windowed = bool(tc.get("sliding_window")) and tc.get("use_sliding_window") is not False
    if windowed or "sliding_attention" in types:
        out.append("sliding-window")
    if "linear_attention" in types:
        out.append("linear-attn hybrid")
    if tc.get("hybrid_override_pattern") or tc.get("mamba_d_state") or tc.get("attn_layer_period"):
        out.append("hybrid-Mamba")
    return out


def rope_feature(tc: Config) -> str | None:
    scaling = tc.get("rope_scaling")
    if not isinstance(scaling, dict):
        return None
    kind = scaling.get("rope_type") or scaling.get("type")
    factor = scaling.get("factor")
    return f"rope:{kind}" + (f"x{factor:g}" if isinstance(factor, (int, float)) else "")


def quant_feature(folder: Path, cfg: Config) -> str | None:
    qc = cfg.get("quantization_config") or text_config(cfg).get("quantization_config")
    if isinstance(qc, dict):
        method = qc.get("quant_method", "?")
        bits = qc.get("bits") or qc.get("w_bit")
        return f"quant:{method}" + (f" {bits}-bit" if bits else "")
    side = folder / "hf_quant_config.json"
    if side.exists():
        algo = load_json(side).get("quantization", {}).get("quant_algo")
        return f"quant:modelopt {algo}"
    return None


def features(folder: Path, cfg: Config) -> str:
    tc = text_config(cfg)
    found: list[str | None] = [attention_feature(tc), moe_feature(tc), *layer_features(tc)]
    found += [rope_feature(tc), quant_feature(folder, cfg)]
    if isinstance(cfg.get("vision_config"), dict):
        found.append("multimodal")
    if tc.get("num_nextn_predict_layers"):
        found.append("MTP")
    if isinstance(tc.get("block_configs"), list):
        found.append("per-layer NAS blocks")
    if cfg.get("auto_map"):
        found.append("custom code")
    return ", ".join(f for f in found if f)


def source_link(meta: Config) -> str:
    url = str(meta.get("source", {}).get("url", ""))
    repo = meta.get("source", {}).get("repo")
    label = repo or urlparse(url).netloc or "?"
    return f"[{label}]({url})"


def row(folder: Path) -> str:
    cfg = load_json(folder / "config.json")
    meta = yaml.safe_load((folder / "meta.yaml").read_text(encoding="utf-8"))
    arch = ", ".join(cfg.get("architectures") or []) or "?"
    size = meta.get("total_size_bytes")
    size_txt = f"{size / 1e9:.1f} GB" if isinstance(size, int) else "-"
    cells = [
        f"`{folder.name}`",
        str(meta["hf_id"]),
        arch,
        features(folder, cfg),
        size_txt,
        source_link(meta),
    ]
    return "| " + " | ".join(cells) + " |"


def render() -> str:
    folders = sorted(p for p in CATALOG.iterdir() if (p / "config.json").exists())
    lines = [HEADER, f"{len(folders)} model folders.", ""]
    lines.append(
        "| folder | hf_id | architectures | features (derived) | safetensors total | config source |"
    )
    lines.append("|---|---|---|---|---|---|")
    lines += [row(folder) for folder in folders]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if README.md is out of date")
    args = parser.parse_args()
    text = render()
    if args.check:
        current = README.read_text(encoding="utf-8") if README.exists() else ""
        return 0 if current == text else 1
    README.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
