"""`hangar plan` end to end through the real CLI: JSON contract, exit codes, bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


def run(*args: str, env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    import os

    env = {**os.environ, **(env_extra or {})}
    return subprocess.run([sys.executable, "-m", "hangar", *args], capture_output=True, text=True,
                          env=env, timeout=120, check=False)


def test_readme_main_job_plans_qwen3_235b_on_8_h100() -> None:
    done = run("plan", "Qwen/Qwen3-235B-A22B", "--gpu", "H100", "--gpus", "8", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["model"]["architecture"] == "Qwen3MoeForCausalLM"
    assert data["model"]["max_model_len"] == 40960
    # 94 layers x 2 (K,V) x 4 KV heads x 128 x 2 bytes
    assert data["model"]["kv_bytes_per_token"] == 94 * 2 * 4 * 128 * 2
    assert data["hardware"] == {**data["hardware"], "gpu": "H100-SXM-80GB", "gpus": 8, "nodes": 1}
    rec = data["recommended"]
    assert rec["valid"] and rec["tp"] * rec["pp"] * rec["dp"] == 8
    assert data["layouts"][0]["tp"] == rec["tp"]
    for layout in data["layouts"]:
        assert set(layout) >= {"tp", "pp", "dp", "ep", "valid", "findings", "memory"}
        assert set(layout["memory"]) >= {"weight_bytes_per_gpu", "kv_bytes_per_token_per_gpu",
                                         "kv_cache_bytes_per_gpu", "kv_cache_tokens", "max_concurrency",
                                         "max_model_len_fit"}
        for finding in layout["findings"]:
            assert set(finding) >= {"id", "severity", "message", "fix"}


def test_requested_layout_comes_first_and_sets_exit_code() -> None:
    done = run("plan", "Qwen/Qwen3-8B", "--gpu", "H100", "--gpus", "8", "--tp", "3", "--json")
    assert done.returncode == 1
    data = json.loads(done.stdout)
    first = data["layouts"][0]
    assert (first["tp"], first["valid"]) == (3, False)
    assert "heads_divisible_by_tp" in {f["id"] for f in first["findings"]}
    assert data["recommended"] is not None and data["recommended"]["valid"]


def test_human_output_names_rule_and_fix() -> None:
    done = run("plan", "Qwen/Qwen3-8B", "--gpu", "h100-80gb", "--gpus", "8", "--tp", "3")
    assert done.returncode == 1
    assert "heads_divisible_by_tp" in done.stdout and "--tensor-parallel-size" in done.stdout


def test_human_readable_lengths_like_vllm() -> None:
    data = json.loads(run("plan", "Qwen/Qwen3-8B", "--gpu", "H100", "--max-model-len", "32k", "--json").stdout)
    assert data["settings"]["max_model_len"] == 32000
    data = json.loads(run("plan", "Qwen/Qwen3-8B", "--gpu", "H100", "--max-model-len", "32K", "--json").stdout)
    assert data["settings"]["max_model_len"] == 32768


def test_auto_fit_shrinks_to_what_fits() -> None:
    done = run("plan", "meta-llama/Llama-3.1-70B-Instruct", "--gpu", "H100", "--gpus", "2", "--tp", "2",
               "--max-model-len", "-1", "--json")
    data = json.loads(done.stdout)
    assert done.returncode == 0, data["layouts"][0]["findings"]
    assert 0 < data["settings"]["max_model_len"] < 131072


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("not json at all", "not valid JSON"),
        ('{"architectures": ["LlamaForCausalLM"], "hidden_size": "big", "num_attention_heads": 8}', "hidden_size"),
        ('{"architectures": ["LlamaForCausalLM"], "hidden_size": 64}', "num_attention_heads"),
        ("[1, 2, 3]", "JSON object"),
        ("\x00\x01\x02binary", "config.json"),
    ],
)
def test_malformed_config_gives_one_line(tmp_path: Path, content: str, expected: str) -> None:
    (tmp_path / "config.json").write_text(content)
    done = run("plan", str(tmp_path), "--gpu", "H100")
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr
    assert "config.json" in lines[0] and expected in lines[0]


def test_unknown_gpu_and_model_and_no_gpu() -> None:
    done = run("plan", "Qwen/Qwen3-8B", "--gpu", "H900")
    assert done.returncode == 2 and "unknown GPU 'H900'" in done.stderr and "H100" in done.stderr
    done = run("plan", "nobody/no-such-model-xyz", "--gpu", "H100")
    assert done.returncode == 1 and "hangar models list" in done.stderr
    done = run("plan", "Qwen/Qwen3-8B")  # no --gpu and no NVIDIA driver here
    assert done.returncode == 1 and "--gpu" in done.stderr


def test_usage_errors_exit_2() -> None:
    assert run("plan", "Qwen/Qwen3-8B", "--gpu", "H100", "--tp", "0").returncode == 2
    assert run("plan", "Qwen/Qwen3-8B", "--gpu", "H100", "--vllm-version", "banana").returncode == 2


def test_hostile_directory_name(tmp_path: Path) -> None:
    weird = tmp_path / "my model $(rm -rf x) 'quoted'\nline"
    weird.mkdir()
    src = Path(__file__).resolve().parents[2] / "src/hangar/models/catalog/Qwen__Qwen3-8B/config.json"
    (weird / "config.json").write_text(src.read_text())
    done = run("plan", str(weird), "--gpu", "H100", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["model"]["architecture"] == "Qwen3ForCausalLM"


def test_help_is_fast_and_imports_nothing_heavy() -> None:
    code = ("import sys; from hangar.cli.main import main; "
            "rc = main(['--help']); "
            "print(sorted(m for m in ('torch', 'vllm', 'pydantic', 'huggingface_hub', 'rich') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert done.stdout.strip().endswith("[]")


def test_plan_never_imports_torch_or_vllm() -> None:
    code = ("import sys; from hangar.cli.main import main; "
            "main(['plan', 'Qwen/Qwen3-8B', '--gpu', 'H100', '--json']); "
            "print('HEAVY', [m for m in ('torch', 'vllm') if m in sys.modules])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert "HEAVY []" in done.stdout
