"""Runs INSIDE the vLLM venv: writes a tiny random model + locally trained tokenizer.

    python tiny_model_worker.py --kind llama --out DIR [--overrides '{"max_position_embeddings": 4096}']

Offline only (no hub): the byte-level BPE tokenizer is trained here on generated
text, with ChatML special tokens and a chat template. Every attention model uses
head_dim 32, because vLLM's CPU attention supports only head sizes
32, 64, 80, ... and a head_dim-16 model starts fine but dies on the first request
(shared/research/feasibility.md §1.3). Recipe: feasibility.md appendix.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from pathlib import Path
from typing import Any

os.environ["HF_HUB_OFFLINE"] = "1"

# content may be null (tool-call turns) or a list (image parts): only strings are rendered
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% endif %}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
# <tool_call> lets the hermes tool parser load, <think> the deepseek_r1 reasoning parser
SPECIAL_TOKENS = [
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>", "<think>", "</think>",
]
WORDS = [
    "the",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "the",
    "lazy",
    "dog",
    "hello",
    "world",
    "vllm",
    "slurm",
    "ray",
    "cluster",
    "node",
    "gpu",
    "cpu",
    "model",
    "serve",
    "request",
    "token",
    "stream",
    "json",
    "tool",
    "call",
    "assistant",
    "user",
    "system",
    "answer",
    "question",
    "paris",
    "tokyo",
    "weather",
    "city",
    "true",
    "false",
    "name",
    "arguments",
]

_ATTENTION = {
    "hidden_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
}
# kind -> (transformers config class, model class, config kwargs)
KINDS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "llama": (
        "LlamaConfig",
        "LlamaForCausalLM",
        dict(_ATTENTION, intermediate_size=256, head_dim=32),
    ),
    "mistral": (
        "MistralConfig",
        "MistralForCausalLM",
        dict(_ATTENTION, intermediate_size=256, head_dim=32),
    ),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", dict(_ATTENTION, intermediate_size=256)),
    "qwen3": (
        "Qwen3Config",
        "Qwen3ForCausalLM",
        dict(_ATTENTION, intermediate_size=256, head_dim=32),
    ),
    "mixtral": (
        "MixtralConfig",
        "MixtralForCausalLM",
        dict(
            _ATTENTION,
            intermediate_size=256,
            head_dim=32,
            num_local_experts=4,
            num_experts_per_tok=2,
        ),
    ),
    "qwen2moe": (
        "Qwen2MoeConfig",
        "Qwen2MoeForCausalLM",
        dict(
            _ATTENTION,
            intermediate_size=256,
            moe_intermediate_size=32,
            shared_expert_intermediate_size=64,
            num_experts=4,
            num_experts_per_tok=2,
        ),
    ),
    "qwen3moe": (
        "Qwen3MoeConfig",
        "Qwen3MoeForCausalLM",
        dict(
            _ATTENTION,
            intermediate_size=256,
            moe_intermediate_size=64,
            head_dim=32,
            num_experts=4,
            num_experts_per_tok=2,
        ),
    ),
    "mamba2": (
        "Mamba2Config",
        "Mamba2ForCausalLM",
        # hidden * expand must equal num_heads * head_dim
        {
            "hidden_size": 128,
            "num_hidden_layers": 2,
            "num_heads": 8,
            "head_dim": 32,
            "state_size": 16,
            "expand": 2,
            "n_groups": 1,
            "conv_kernel": 4,
            "chunk_size": 64,
        },
    ),
    "granitemoehybrid": (
        "GraniteMoeHybridConfig",
        "GraniteMoeHybridForCausalLM",
        dict(
            _ATTENTION,
            intermediate_size=256,
            layer_types=["mamba", "attention"],
            num_local_experts=4,
            num_experts_per_tok=2,
            shared_intermediate_size=128,
            mamba_n_heads=8,
            mamba_d_head=32,
            mamba_d_state=16,
            mamba_n_groups=1,
            mamba_expand=2,
            mamba_chunk_size=64,
        ),
    ),
}


def make_tokenizer(vocab_size: int = 512) -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    rng = random.Random(0)
    text = [" ".join(rng.choice(WORDS) for _ in range(12)) for _ in range(3000)]
    text += ["0123456789 !?.,;:'\"()[]{}<>-_=+*/\\@#$%^&|~`"] * 10
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(text, trainer)
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<|endoftext|>",
        eos_token="<|im_end|>",
        unk_token="<|endoftext|>",
        pad_token="<|endoftext|>",
    )
    fast.chat_template = CHAT_TEMPLATE
    return fast


def build(kind: str, out: Path, overrides: dict[str, Any]) -> None:
    import torch
    import transformers

    torch.manual_seed(0)
    config_name, model_name, kwargs = KINDS[kind]
    tok = make_tokenizer()
    common = {
        "vocab_size": 512,
        "bos_token_id": tok.bos_token_id,
        "eos_token_id": tok.eos_token_id,
        "pad_token_id": tok.pad_token_id,
        "max_position_embeddings": 2048,
        "torch_dtype": "bfloat16",
    }
    config = getattr(transformers, config_name)(**{**common, **kwargs, **overrides})
    model = getattr(transformers, model_name)(config).to(torch.bfloat16)
    model.save_pretrained(out)
    tok.save_pretrained(out)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kind", required=True, choices=sorted(KINDS))
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--overrides", default="{}")
    args = parser.parse_args(argv)
    build(args.kind, args.out, json.loads(args.overrides))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
