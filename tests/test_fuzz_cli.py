"""Property-based fuzzing of every command and every parser of outside input (issue 13).

Each example runs the real CLI in process through ``hangar.cli.main.main`` (the one error
boundary) with hostile arguments or hostile files: config.json, hangar.toml,
engines.toml, logs (text, gzip, binary, truncated), the runs store. The property: the
exit code is a documented one (0, 1, 2) and never 3, and stderr holds no internal error.

Fixed budget and derandomized, so CI runs the same examples every time; the
``@example`` rows are the regression file: every crash found (by people or by this test)
stays there.
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from hangar.cli.main import main

# CI's fixed budget and examples; by hand: HANGAR_FUZZ_EXAMPLES=500 HANGAR_FUZZ_RANDOM=1.
BUDGET = settings(
    max_examples=int(os.environ.get("HANGAR_FUZZ_EXAMPLES", "12")),
    deadline=None,
    derandomize=os.environ.get("HANGAR_FUZZ_RANDOM") != "1",
    database=None,  # nothing written outside the test's tmp dirs
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# Values people and scripts really pass by mistake, and ones meant to hurt.
HOSTILE = [
    "",
    " ",
    "-",
    "--",
    "---x",
    "[/]",
    "[red]x[/red]",
    "\x1b[2J\x1b]0;t\x07",
    "\u202eabc",
    "../../../etc/passwd",
    "a" * 4097,
    "0",
    "-1",
    "nan",
    "inf",
    "1e400",
    "%s%n",
    "$(id)",
    "'; rm -rf ~",
    "http://",
    "http://[::1",
    "http://127.0.0.1:1",
    "latest",
    "x.toml",
    "~",
    "Qwen/Qwen3-8B",
    "org/name/extra",
    "H100",
    "H100:8",
    "0.33.0",
    "v0.33",
    "🙂",
]
text = st.one_of(
    st.sampled_from(HOSTILE),
    st.text(st.characters(blacklist_characters="\x00", blacklist_categories=["Cs"]), max_size=24),
)


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> int:
    code = main(argv)
    err = capsys.readouterr().err
    shown = [a if len(a) < 80 else f"{a[:40]}...({len(a)})" for a in argv]
    assert code in (0, 1, 2), (shown, code, err[-2000:])
    assert "internal error" not in err and "Traceback" not in err, (shown, err[-2000:])
    return code


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Relative paths (init -o, report -o) land in the test's tmp dir."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "200")
    yield tmp_path


# ------------------------------------------------------------------ every command, hostile args

COMMANDS = [
    ["plan", "{}", "--gpu", "H100"],
    ["plan", "Qwen/Qwen3-8B", "--gpu", "{}"],
    ["plan", "Qwen/Qwen3-8B", "--gpu", "H100", "--gpus", "{}"],
    ["plan", "Qwen/Qwen3-8B", "--gpu", "H100", "--max-model-len", "{}"],
    ["plan", "Qwen/Qwen3-8B", "--gpu", "H100", "--vllm-version", "{}"],
    ["preflight", "{}"],
    ["launch", "{}", "--dry-run"],
    ["render", "{}"],
    ["logs", "{}"],
    ["stop", "{}"],
    ["status", "--all"],
    ["clean", "--dry-run"],
    ["doctor", "{}"],
    ["workarounds", "show", "{}"],
    ["workarounds", "check", "--gpu", "{}", "--gpus", "1", "--vllm-version", "0.11.0"],
    ["engines", "inspect", "{}"],
    ["engines", "history", "{}"],
    ["engines", "remove", "{}"],
    ["support", "{}"],
    ["eval", "{}", "--timeout", "2"],
    ["compare", "{}", "latest"],
    ["report", "{}", "-o", "out.html"],
    ["models", "show", "{}"],
    ["gpus", "show", "{}"],
    ["init", "--no-input", "--model", "{}", "--gpu", "H100", "-o", "f.toml", "--force"],
    ["init", "--no-input", "--model", "Qwen/Qwen3-8B", "--gpu", "{}", "-o", "g.toml", "--force"],
]


@pytest.mark.parametrize("template", COMMANDS, ids=lambda t: " ".join(t))
@BUDGET
@given(value=text)
@example(value="http://[::1")  # eval: ValueError from urlsplit (internal error)
@example(value="\x1b[2J")
@example(value="a" * 4097)  # OSError ENAMETOOLONG from Path.exists (internal error)
def test_every_command_with_hostile_arguments(
    template: list[str], value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    run_cli([value if part == "{}" else part for part in template], capsys)


@pytest.mark.parametrize(
    "argv",
    [
        ["plan", "~0", "--gpu", "H100"],
        ["models", "show", "~0"],
        ["support", "~0"],
        ["init", "--no-input", "--model", "~0", "--gpu", "H100", "-o", "h.toml"],
    ],
)
def test_unknown_user_home_is_a_literal_path(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Path('~0').expanduser() raises RuntimeError (no user '0'); found by the fuzzer."""
    run_cli(argv, capsys)


# ------------------------------------------------------------------ config.json

LLAMA = {
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 4096,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 32000,
    "intermediate_size": 11008,
    "max_position_embeddings": 8192,
    "torch_dtype": "bfloat16",
}
KEYS = [
    *LLAMA,
    "rope_scaling",
    "quantization_config",
    "text_config",
    "num_experts",
    "num_local_experts",
    "sliding_window",
    "head_dim",
    "layer_types",
    "model_type",
    "kv_lora_rank",
    "tie_word_embeddings",
]
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True),
    st.sampled_from(["four", "", "\x1b[31m", "bfloat16", "linear", "fp8"]),
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(KEYS + ["factor", "type", "rope_type", "quant_method"]),
            inner,
            max_size=3,
        )
    ),
    max_leaves=6,
)


@BUDGET
@given(changes=st.dictionaries(st.sampled_from(KEYS), values, max_size=4))
@example(changes={"rope_scaling": {"rope_type": "linear", "factor": "four"}})
@example(changes={"architectures": ["Llama\x1b]0;owned\x07ForCausalLM"]})
@example(changes={"quantization_config": "nope"})
@example(changes={"kv_lora_rank": [None]})  # int([None]) in layers.mla_spec
@example(changes={"expert_layer_period": 0})  # i % 0
@example(changes={"interleave_moe_layer_step": "four"})
def test_config_json(
    changes: dict[str, object], in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = in_tmp / "model"
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_text(json.dumps({**LLAMA, **changes}))
    run_cli(["models", "show", str(folder)], capsys)
    run_cli(["plan", str(folder), "--gpu", "H100", "--gpus", "2"], capsys)


@BUDGET
@given(raw=st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
@example(raw=b'{"a": ' + b"[" * 50_000 + b"]" * 50_000 + b"}")
@example(raw=b"\xff\xfe")
def test_config_json_bytes(raw: bytes, in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = in_tmp / "model"
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_bytes(raw)
    run_cli(["plan", str(folder), "--gpu", "H100"], capsys)


# ------------------------------------------------------------------ hangar.toml

SECTIONS = {
    "model": ["id", "served_name", "revision", "trust_remote_code"],
    "resources": ["gpu", "gpus", "nodes"],
    "parallel": ["tensor", "pipeline", "data", "expert"],
    "serve": ["max_model_len", "gpu_memory_utilization", "dtype", "extra_args", "host", "port"],
    "target": ["kind"],
    "target.local": ["host", "port", "ready_timeout_s"],
    "target.slurm": ["partition", "time", "nodes", "port", "sbatch_extra", "multinode"],
    "env": ["HF_TOKEN", "VLLM_X", "=bad"],
}
toml_values = st.one_of(
    st.sampled_from(HOSTILE).map(json.dumps),
    st.integers(-(2**63), 2**63 - 1).map(str),
    st.sampled_from(
        [
            "nan",
            "inf",
            "-0.0",
            "1e308",
            "true",
            "[]",
            '["--tensor-parallel-size", "2"]',
            '["--api-key", "sk-x"]',
            "{}",
            '"local"',
            '"slurm"',
        ]
    ),
)


def toml_text(table: dict[str, dict[str, str]]) -> str:
    lines = ['[model]\nid = "m"'] if "model" not in table else []
    for section, keys in table.items():
        lines.append(f"[{section}]")
        lines += [f'"{key}" = {value}' for key, value in keys.items()]
    return "\n".join(lines) + "\n"


deployments = st.dictionaries(
    st.sampled_from(list(SECTIONS)),
    st.sampled_from(list(SECTIONS)).flatmap(
        lambda s: st.dictionaries(st.sampled_from(SECTIONS[s]), toml_values, max_size=3)
    ),
    max_size=4,
).map(toml_text)


@BUDGET
@given(body=deployments | st.text(max_size=120))
@example(body='[model]\nid = "m"\n[serve]\nextra_args = ["--tensor-parallel-size", "2"]\n')
@example(body='[model]\nid = "m"\n[serve]\nport = 9000\n')
@example(body="version = 2\n")
def test_deployment_file(body: str, in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    file = in_tmp / "hangar.toml"
    file.write_text(body)
    for argv in (
        ["preflight", str(file), "--json"],
        ["render", str(file)],
        ["eval", str(file), "--timeout", "2", "--suite", "smoke", "--no-store"],
    ):
        run_cli(argv, capsys)


# ------------------------------------------------------------------ engines.toml, the runs store


@BUDGET
@given(body=st.text(max_size=120) | deployments)
@example(body='[engines.x]\nkind = "venv"\npython = 5\n')
def test_engines_registry(body: str, hangar_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from hangar.engines.registry import registry_path

    path = registry_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    for argv in (["engines", "list"], ["engines", "inspect", "x"], ["support", "Qwen/Qwen3-8B"]):
        run_cli(argv, capsys)


@BUDGET
@given(cut=st.integers(0, 4096), junk=st.binary(max_size=64))
def test_runs_store_read_back_after_a_crash(
    cut: int, junk: bytes, hangar_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A store truncated or overwritten mid-write (a crash) is one clear line."""
    from hangar.store.db import connect, db_path

    connect().close()
    path = db_path()
    data = path.read_bytes()
    path.write_bytes(data[:cut] + junk)
    for name in ("-wal", "-shm"):
        Path(f"{path}{name}").unlink(missing_ok=True)
    for argv in (
        ["status", "--all"],
        ["logs", "x"],
        ["stop", "x"],
        ["eval", "x"],
        ["compare", "a", "b"],
    ):
        run_cli(argv, capsys)
    path.unlink()


# ------------------------------------------------------------------ logs


def gz(data: bytes) -> bytes:
    return gzip.compress(data)


logs = st.one_of(
    st.text(max_size=300).map(str.encode),
    st.binary(max_size=300),
    st.binary(max_size=300).map(gz),
    st.binary(min_size=10, max_size=300).map(lambda b: gz(b)[: len(gz(b)) // 2]),
)


@BUDGET
@given(data=logs, name=st.sampled_from(["vllm.log", "x.log.gz", "job.out", "noext"]))
@example(data=b"", name="vllm.log")
@example(data=b"\x1f\x8b\x08\x00", name="x.log.gz")
def test_log_files(
    data: bytes, name: str, in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = in_tmp / "logs"
    folder.mkdir(exist_ok=True)
    (folder / name).write_bytes(data)
    run_cli(["doctor", str(folder / name), "--json"], capsys)
    run_cli(["doctor", str(folder)], capsys)
    os.unlink(folder / name)


# ------------------------------------------------------------------ server replies

json_values = st.recursive(
    scalars | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "choices",
                    "usage",
                    "text",
                    "message",
                    "content",
                    "finish_reason",
                    "data",
                    "id",
                    "tokens",
                    "prompt",
                    "prompt_tokens",
                    "delta",
                    "version",
                ]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=8,
)
PATHS = [
    "/v1/models",
    "/v1/completions",
    "/v1/chat/completions",
    "/tokenize",
    "/detokenize",
    "/version",
]


@settings(BUDGET, max_examples=int(os.environ.get("HANGAR_FUZZ_EXAMPLES", "8")))
@given(replies=st.dictionaries(st.sampled_from(PATHS), json_values, min_size=1, max_size=3))
@example(replies={"/v1/chat/completions": {"choices": "nope"}})
@example(replies={"/detokenize": {"text": "hello"}})
@example(replies={"/v1/models": {"data": [{"id": "\x1b]0;owned\x07"}]}})
def test_server_replies(replies: dict[str, object], capsys: pytest.CaptureFixture[str]) -> None:
    """Wrong JSON shapes from an OpenAI-compatible server: failed checks, never exit 3."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent / "evaluation"))
    from fake_server import FakeServer

    server = FakeServer().start()
    try:
        server.behaviour.replies.update(replies)
        run_cli(
            [
                "eval",
                server.url,
                "--suite",
                "smoke,structured,perf",
                "--timeout",
                "5",
                "--num-requests",
                "2",
                "--concurrency",
                "1",
                "--input-len",
                "8",
                "--output-len",
                "4",
                "--warmup",
                "0",
                "--no-store",
            ],
            capsys,
        )
    finally:
        server.stop()
