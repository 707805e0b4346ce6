"""`hangar engines ...` end to end through the CLI entry point (real uv, local index)."""

from __future__ import annotations

import json
import sys

import pytest

from hangar.cli.main import main

from .conftest import Indexes


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_engines_cli_lifecycle(indexes: Indexes, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["--base-python", sys.executable]
    code, out, err = _run(
        capsys, "engines", "add", "prod", "--vllm", "0.10.0", "--index-url", indexes.stable, *base
    )
    assert code == 0 and "added engine prod (venv, vLLM 0.10.0)" in out
    assert "resolve" in err and "verify" in err  # progress goes to stderr

    code, out, _ = _run(capsys, "engines", "inspect", "prod", "--json")
    data = json.loads(out)
    for key in (
        "vllm_version",
        "torch_version",
        "torch_cuda",
        "transformers_version",
        "architectures",
        "tool_parsers",
        "reasoning_parsers",
        "flags",
    ):
        assert key in data
    assert (data["vllm_version"], data["torch_cuda"]) == ("0.10.0", "12.4")

    code, out, _ = _run(capsys, "engines", "upgrade", "prod", "--to", "0.20.0", "--dry-run", *base)
    assert code == 0 and "0.10.0 -> 0.20.0" in out and "nothing changed" in out

    (_, listing, _) = _run(capsys, "engines", "list", "--json")
    assert json.loads(listing)[0]["vllm_version"] == "0.10.0"

    code, out, _ = _run(capsys, "engines", "upgrade", "prod", "--to", "0.20.0", *base)
    assert code == 0 and "switched 0.10.0 -> 0.20.0" in out

    code, out, _ = _run(capsys, "engines", "rollback", "prod")
    assert code == 0 and "now vLLM 0.10.0" in out

    code, _, err = _run(capsys, "engines", "upgrade", "prod", "--to", "0.22.0", *base)
    assert code == 1 and "does not resolve" in err and "nothing was changed" in err

    code, out, _ = _run(capsys, "engines", "history", "prod", "--json")
    outcomes = [h["outcome"] for h in json.loads(out)]
    assert outcomes.count("resolved") == 3 and outcomes[-1] == "unresolvable"

    code, out, _ = _run(capsys, "engines", "list")
    assert code == 0 and "prod" in out

    code, out, _ = _run(capsys, "engines", "prune")
    assert code == 0 and "removed 1 directory" in out

    code, out, _ = _run(capsys, "engines", "remove", "prod")
    assert code == 0
    code, _, err = _run(capsys, "engines", "inspect", "prod")
    assert code == 1 and "no engine named 'prod'" in err


def test_add_needs_exactly_one_source(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "engines", "add", "x")
    assert code == 2 and "exactly one of" in err
    code, _, err = _run(capsys, "engines", "add", "x", "--vllm", "1", "--nightly")
    assert code == 2


def test_inspect_image_engine_explains(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(capsys, "engines", "add", "img", "--image", "vllm/vllm-openai:v0.20.0")[0] == 0
    code, _, err = _run(capsys, "engines", "inspect", "img")
    assert code == 1 and "container image" in err


def test_bad_engine_name_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "engines", "add", "no/slash", "--image", "vllm/vllm-openai:v1")
    assert code == 2 and "not a valid engine name" in err


def test_hand_edits_survive_engines_add_and_remove(capsys: pytest.CaptureFixture[str]) -> None:
    """engines.toml is the user's file too: a comment and a reordered key stay through
    `engines add` and `engines remove` (tomlkit edits the document in place)."""
    from hangar.engines.registry import registry_path

    assert _run(capsys, "engines", "add", "site", "--python", sys.executable)[0] == 0
    path = registry_path()
    lines = path.read_text().splitlines()
    python_line = next(line for line in lines if line.startswith("python = "))
    lines.remove(python_line)
    header = lines.index("[engines.site]")
    lines[header + 1 : header + 1] = [f"{python_line}  # the cluster's shared venv", "# mine"]
    path.write_text("# engines of the lab, see the wiki\n" + "\n".join(lines) + "\n")

    assert _run(capsys, "engines", "add", "other", "--python", sys.executable)[0] == 0
    assert _run(capsys, "engines", "remove", "other")[0] == 0

    text = path.read_text()
    assert text.startswith("# engines of the lab, see the wiki\n")
    site = text.split("[engines.site]\n", 1)[1]
    assert site.startswith(f"{python_line}  # the cluster's shared venv\n# mine\nname = ")
    assert "[engines.other]" not in text and text.count("[[history]]") == 3
    code, out, _ = _run(capsys, "engines", "list", "--json")
    assert code == 0 and [e["name"] for e in json.loads(out)] == ["site"]
