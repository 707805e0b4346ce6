"""Seeded synthetic prompts with a controlled number of input tokens.

Like vLLM's random dataset, each prompt is different (so prefix caching cannot
shorten the prefill) and is cut to exactly ``input_len`` tokens of the model's
own tokenizer: a local ``tokenizer.json`` (with the optional ``tokenizers``
package), else the server's ``/tokenize`` and ``/detokenize`` (vLLM), else an
approximation of one word per token (recorded as ``approximate`` in the snapshot).
"""

from __future__ import annotations

import importlib
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from hangar.evaluation.client import Server, ServerError

_WORDS = [
    "river",
    "mountain",
    "cloud",
    "signal",
    "garden",
    "engine",
    "market",
    "window",
    "bridge",
    "letter",
    "silver",
    "orange",
    "planet",
    "forest",
    "winter",
    "summer",
    "doctor",
    "teacher",
    "station",
    "harbor",
    "camera",
    "pencil",
    "rocket",
    "violin",
    "island",
    "desert",
    "castle",
    "button",
    "circle",
    "number",
    "shadow",
    "thunder",
    "velvet",
    "marble",
    "copper",
    "falcon",
    "lantern",
    "meadow",
    "needle",
    "object",
    "paper",
    "quartz",
    "ribbon",
    "saddle",
    "ticket",
    "umbrella",
    "valley",
    "wagon",
    "yellow",
    "zebra",
    "anchor",
    "basket",
    "candle",
    "dragon",
    "feather",
    "glacier",
    "hammer",
    "jacket",
    "kettle",
    "ladder",
]
_MAX_ADJUST = 4


class Tokenizer(Protocol):
    kind: str

    async def encode(self, text: str) -> list[int]: ...

    async def decode(self, ids: list[int]) -> str: ...


class LocalTokenizer:
    """A ``tokenizer.json`` read with the ``tokenizers`` package (no torch, no transformers)."""

    kind = "local"

    def __init__(self, path: Path) -> None:
        module = importlib.import_module("tokenizers")  # optional: not a Hangar dependency
        self._tok = module.Tokenizer.from_file(str(path))

    async def encode(self, text: str) -> list[int]:
        return list(self._tok.encode(text, add_special_tokens=False).ids)

    async def decode(self, ids: list[int]) -> str:
        return str(self._tok.decode(ids))


class ServerTokenizer:
    """vLLM's ``/tokenize`` and ``/detokenize`` endpoints."""

    kind = "server"

    def __init__(self, server: Server, model: str) -> None:
        self._server = server
        self._model = model

    async def encode(self, text: str) -> list[int]:
        body = {"model": self._model, "prompt": text, "add_special_tokens": False}
        tokens = _field(await self._server.post_json("/tokenize", body), "/tokenize", "tokens")
        if not isinstance(tokens, list) or not all(_is_token_id(t) for t in tokens):
            raise ServerError("malformed /tokenize reply: 'tokens' is not a list of token ids")
        return list(tokens)

    async def decode(self, ids: list[int]) -> str:
        body = {"model": self._model, "tokens": ids}
        text = _field(await self._server.post_json("/detokenize", body), "/detokenize", "prompt")
        if not isinstance(text, str):
            raise ServerError("malformed /detokenize reply: 'prompt' is not a string")
        return text


def _field(reply: object, endpoint: str, key: str) -> object:
    """``reply[key]`` of vLLM's TokenizeResponse / DetokenizeResponse
    (vllm/entrypoints/openai/protocol.py); another JSON shape is a ServerError."""
    if not isinstance(reply, dict) or key not in reply:
        raise ServerError(f"malformed {endpoint} reply: no '{key}' field (not vLLM's shape)")
    return reply[key]


def _is_token_id(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


class ApproximateTokenizer:
    """One token per word: the last resort when no tokenizer is reachable."""

    kind = "approximate"

    def __init__(self) -> None:
        self._vocab: dict[str, int] = {}
        self._words: list[str] = []

    async def encode(self, text: str) -> list[int]:
        ids = []
        for word in text.split():
            if word not in self._vocab:
                self._vocab[word] = len(self._words)
                self._words.append(word)
            ids.append(self._vocab[word])
        return ids

    async def decode(self, ids: list[int]) -> str:
        return " ".join(self._words[i] for i in ids)


async def pick_tokenizer(server: Server, model: str, model_root: str | None) -> Tokenizer:
    """Local tokenizer.json if the model is a local directory, else /tokenize, else words."""
    local = _local_tokenizer(model_root)
    if local is not None:
        return local
    probe = ServerTokenizer(server, model)
    try:  # both directions: servers and proxies that answer /tokenize may not /detokenize
        await probe.decode(await probe.encode("hello world"))
    except ServerError:
        return ApproximateTokenizer()
    return probe


def _local_tokenizer(model_root: str | None) -> Tokenizer | None:
    if not model_root or not (Path(model_root) / "tokenizer.json").is_file():
        return None
    try:
        return LocalTokenizer(Path(model_root) / "tokenizer.json")
    except ImportError:  # the optional `tokenizers` package is not installed
        return None


@dataclass(frozen=True)
class Prompt:
    text: str
    tokens: int


async def make_prompts(tokenizer: Tokenizer, count: int, input_len: int, seed: int) -> list[Prompt]:
    """``count`` distinct prompts of ``input_len`` tokens, the same for the same seed."""
    rng = random.Random(seed)
    return [await _one_prompt(tokenizer, rng, input_len) for _ in range(count)]


async def _one_prompt(tokenizer: Tokenizer, rng: random.Random, input_len: int) -> Prompt:
    words = " ".join(rng.choice(_WORDS) for _ in range(input_len * 2 + 8))
    ids = await tokenizer.encode(words)
    take = input_len
    text, actual = "", 0
    for _ in range(_MAX_ADJUST):
        # Decoding then re-encoding can merge or split tokens at the cut: adjust and retry.
        text = await tokenizer.decode(ids[:take])
        actual = len(await tokenizer.encode(text))
        if actual == input_len:
            break
        take = max(1, take + (input_len - actual))
    return Prompt(text=text, tokens=actual)
