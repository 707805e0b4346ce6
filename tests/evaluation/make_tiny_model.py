"""Build a tiny random Llama with a ChatML tokenizer that knows think and tool tags.

Run with the vLLM venv's interpreter (it needs torch, transformers, tokenizers):
``python make_tiny_model.py DEST``. Offline, about 10 s. head_dim is 32 because
vLLM's CPU attention rejects 16 (feasibility.md §1.3). ``<think>``/``</think>``
let the deepseek_r1 reasoning parser load, ``<tool_call>`` the hermes tool parser.
"""

import os
import random
import sys

os.environ["HF_HUB_OFFLINE"] = "1"

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% endif %}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SPECIAL = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<tool_call>",
    "</tool_call>",
    "<think>",
    "</think>",
]


def make_tokenizer() -> PreTrainedTokenizerFast:
    words = [
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
        "paris",
        "tokyo",
        "weather",
        "city",
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
        "json",
        "tool",
        "call",
        "assistant",
        "user",
        "system",
        "answer",
        "question",
        "true",
        "false",
        "name",
        "arguments",
    ]
    random.seed(0)
    text = [" ".join(random.choice(words) for _ in range(12)) for _ in range(3000)]
    text += ["0123456789 !?.,;:'\"()[]{}<>-_=+*/\\@#$%^&|~`"] * 10
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(
        text,
        trainers.BpeTrainer(
            vocab_size=512,
            special_tokens=SPECIAL,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        ),
    )
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


def main(dest: str) -> None:
    torch.manual_seed(0)
    tok = make_tokenizer()
    cfg = LlamaConfig(
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=32,
        vocab_size=512,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        max_position_embeddings=2048,
        torch_dtype="bfloat16",
    )
    LlamaForCausalLM(cfg).to(torch.bfloat16).save_pretrained(dest)
    tok.save_pretrained(dest)


if __name__ == "__main__":
    main(sys.argv[1])
