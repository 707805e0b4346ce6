"""Typed access to a Hugging Face config dict, as vLLM reads it (the text config of
multimodal models, first-present aliases), with errors that name the file and the field."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hangar.errors import InputError

Config = Mapping[str, Any]


def text_config(cfg: Config) -> Config:
    """The language-model part, as vLLM's get_hf_text_config picks it."""
    for key in ("text_config", "llm_config", "language_config", "thinker_config"):
        sub = cfg.get(key)
        if isinstance(sub, Mapping) and sub:
            if "text_config" in sub:  # e.g. thinker_config.text_config
                return text_config(sub)
            return sub
    return cfg


def first(cfg: Config, *keys: str) -> Any:
    for key in keys:
        value = cfg.get(key)
        if value is not None:
            return value
    return None


class Reader:
    """Typed access to one config dict; errors name the file and the field."""

    def __init__(self, cfg: Config, source: str) -> None:
        self.cfg = cfg
        self.source = source

    def integer(self, *keys: str, default: int | None = None) -> int:
        value = first(self.cfg, *keys)
        if value is None:
            if default is not None:
                return default
            raise InputError(
                "missing required field",
                source=self.source,
                field=keys[0],
                hint=f"add '{keys[0]}' to {self.source} (the model's Hugging Face config)",
            )
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
            raise InputError(
                f"expected an integer, got {value!r}",
                source=self.source,
                field=keys[0],
                hint=f"fix '{keys[0]}' in {self.source}",
            )
        return int(value)

    def opt_int(self, *keys: str) -> int | None:
        value = first(self.cfg, *keys)
        return None if value is None else self.integer(*keys)


def model_type_of(cfg: Config) -> str:
    return str(cfg.get("model_type") or "")
