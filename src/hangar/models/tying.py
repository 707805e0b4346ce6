"""Whether a config that does not say ties lm_head to the input embedding (per model type).

Transformers fills an absent ``tie_word_embeddings`` from the config class's own default, which
differs by model type (Gemma: true; Llama, Qwen: false). Counting an untied lm_head for a tied
model adds vocab x hidden weights (2.8 GB in bf16 for Gemma 3 27B). The list is data, read from
Transformers' config classes (data/tie_word_embeddings.yaml cites the version).
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

import yaml

from hangar.models.fields import Config, model_type_of


@lru_cache(maxsize=1)
def _tied_types() -> frozenset[str]:
    text = (resources.files("hangar.models") / "data" / "tie_word_embeddings.yaml").read_text(
        encoding="utf-8"
    )
    return frozenset(str(t) for t in yaml.safe_load(text)["tied_by_default"])


def tie_word_embeddings(cfg: Config, full: Config) -> bool:
    """The file's value (outer config first, as before), else the default of the text model's
    config class: vLLM builds the language model from the text config (e.g. Mistral 3's text
    config is Mistral's, untied, although Mistral3Config itself defaults to tied)."""
    for config in (full, cfg):
        if "tie_word_embeddings" in config:
            return bool(config["tie_word_embeddings"])
    return (model_type_of(cfg) or model_type_of(full)) in _tied_types()
