"""Issue 13 review: a vLLM version newer than the rules is said so, an older one refused."""

from __future__ import annotations

import pytest

from hangar.errors import UsageError
from hangar.planning.accounting import (
    NEWER_THAN_KNOWN,
    check_supported_version,
    newer_than_known,
)
from hangar.planning.versions import DEFAULT_VLLM_VERSION, VllmVersion

NEWEST = VllmVersion.parse(DEFAULT_VLLM_VERSION)


@pytest.mark.parametrize("text", ["99.0", "1.0.0", f"0.{NEWEST.minor + 1}.0", "0.99.0rc1.dev3"])
def test_a_version_past_the_rules_gets_a_warning_naming_the_rules_applied(text: str) -> None:
    finding = check_supported_version(text, VllmVersion.parse(text))
    assert finding is not None
    assert finding.id == NEWER_THAN_KNOWN
    assert finding.severity == "warning"
    assert f"newest: {NEWEST.major}.{NEWEST.minor}" in finding.message
    assert DEFAULT_VLLM_VERSION in finding.fix


@pytest.mark.parametrize("text", [DEFAULT_VLLM_VERSION, f"0.{NEWEST.minor}.9", "0.20.0", "0.8.5"])
def test_a_known_version_gets_none(text: str) -> None:
    assert check_supported_version(text, VllmVersion.parse(text)) is None
    assert newer_than_known(VllmVersion.parse(text)) is None


def test_a_version_older_than_the_rules_is_still_refused() -> None:
    with pytest.raises(UsageError, match="unknown version range"):
        check_supported_version("0.5.0", VllmVersion.parse("0.5.0"))


def test_plan_warns_when_the_version_is_newer_than_its_rules(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import json

    from hangar.cli.main import main

    assert main(["plan", "Qwen/Qwen3-8B", "--gpu", "H100", "--gpus", "1",
                 "--vllm-version", "99.0", "--json"]) == 0
    layouts = json.loads(capsys.readouterr().out)["layouts"]
    ids = {f["id"] for f in layouts[0]["findings"]}
    assert "vllm_version_newer_than_rules" in ids
    assert main(["plan", "Qwen/Qwen3-8B", "--gpu", "H100", "--gpus", "1",
                 "--vllm-version", "0.33.1", "--json"]) == 0
    layouts = json.loads(capsys.readouterr().out)["layouts"]
    assert "vllm_version_newer_than_rules" not in {f["id"] for f in layouts[0]["findings"]}
