"""One vLLM version type and one Finding type, as the planner and preflight use them."""

from __future__ import annotations

import pytest

from hangar.hardware import hardware_from_args
from hangar.models import load_model
from hangar.planning import PlanRequest, plan
from hangar.planning.findings import Finding, sort_findings
from hangar.planning.versions import VllmVersion

PREFLIGHT_KEYS = {"id", "severity", "message", "fix", "evidence", "source"}  # docs/launch.md


@pytest.mark.parametrize(
    ("text", "release"),
    [
        ("0.33.0", (0, 33, 0)),
        ("0.33", (0, 33, 0)),
        ("v0.20.1", (0, 20, 1)),
        ("0.33.1rc1.dev42+g1234abc", (0, 33, 1)),  # a nightly carries its release's rules
        ("0.32.0+cpu", (0, 32, 0)),
        ("0.10.1.1", (0, 10, 1)),
    ],
)
def test_release_part_compares_with_tuples(text: str, release: tuple[int, int, int]) -> None:
    version = VllmVersion.parse(text)
    assert version == release and version >= (0, 10, 0) and str(version) == ".".join(map(str, release))


def test_one_version_answers_both_range_syntaxes() -> None:
    version = VllmVersion.parse("0.21.0+cu128")
    assert version.in_range(">=0.20,<0.34") and not version.in_range("<0.21")
    assert version.satisfies(">=0.20,!=0.22.*") and not version.satisfies("~=0.22.0")


def test_bad_version_is_one_clear_error() -> None:
    with pytest.raises(ValueError, match="not a vLLM version: 'latest'"):
        VllmVersion.parse("latest")
    assert VllmVersion.parse_or_none("latest") is None and VllmVersion.parse_or_none(None) is None


def test_a_plan_rule_finding_is_already_a_preflight_finding() -> None:
    """The planner's findings go to preflight unchanged: same JSON keys as a host check,
    phase and origin kept on the value (the plan JSON writes them, preflight's does not)."""
    request = PlanRequest(tp=3)
    result = plan(load_model("Qwen/Qwen3-8B"), hardware_from_args("rtx4090", 4, 1), request)
    found = {f.id: f for f in result.layouts[0].findings}["heads_divisible_by_tp"]
    assert isinstance(found, Finding)
    assert set(found.model_dump(mode="json")) == PREFLIGHT_KEYS
    assert (found.source, found.phase, found.origin) == ("plan", "frontend", "vllm")
    assert ".py" in found.evidence  # the vLLM file the rule was read from
    host = Finding(id="host.x", severity="warning", message="m")
    assert set(host.model_dump(mode="json")) == PREFLIGHT_KEYS and host.origin == "hangar"
    assert [f.id for f in sort_findings([host, found])] == ["heads_divisible_by_tp", "host.x"]
