"""Load data/rules.yaml (validated once) and evaluate it against plan facts."""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from hangar.errors import DataError
from hangar.planning.expr import Expression
from hangar.planning.findings import Finding, Origin, Phase, Severity
from hangar.planning.versions import VllmVersion, in_range

HANGAR_PREFIX = "[Hangar] "

class VersionedText(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    versions: str
    text: str


class Rule(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    id: str
    severity: Severity
    phase: Phase
    when: str
    messages: tuple[VersionedText, ...]
    fix: str
    source: str

    def message_for(self, version: tuple[int, int, int]) -> str | None:
        for entry in self.messages:
            if in_range(version, entry.versions):
                return entry.text
        return None


class _Facts(dict[str, Any]):
    """format_map that leaves unknown placeholders visible instead of raising."""

    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


class RuleSet:
    def __init__(self, rules: list[Rule], source: str) -> None:
        self.rules = rules
        self.source = source
        self._conditions = {
            r.id: Expression(r.when, f"{source}: rule '{r.id}' key 'when'") for r in rules
        }

    def evaluate(
        self, facts: Mapping[str, Any], version: VllmVersion | None = None
    ) -> list[Finding]:
        """The findings of every rule whose condition holds; ``version`` is the facts'
        ``vllm_version`` already parsed (the planner passes it; parsed here otherwise)."""
        version = version or VllmVersion.parse(str(facts["vllm_version"]))
        findings = []
        for rule in self.rules:
            text = rule.message_for(version)
            if text is None or not self._conditions[rule.id].evaluate(facts):
                continue
            values = _Facts(facts)
            origin: Origin = "vllm"
            if text.startswith(HANGAR_PREFIX):  # Hangar's own wording, marked in the data
                origin, text = "hangar", text[len(HANGAR_PREFIX):]
            findings.append(
                Finding(
                    id=rule.id,
                    severity=rule.severity,
                    phase=rule.phase,
                    source="plan",
                    evidence=rule.source,  # the vLLM file the rule and its text come from
                    message=text.format_map(values),
                    fix=rule.fix.format_map(values),
                    origin=origin,
                )
            )
        return findings


def load_rules(path: Path | None = None) -> RuleSet:
    """Parse and validate a rules file; errors name the file, the rule and the key."""
    if path is None:
        return default_rules()
    return _parse(path.read_text(encoding="utf-8"), str(path))


@lru_cache(maxsize=1)
def default_rules() -> RuleSet:
    ref = resources.files("hangar.planning") / "data" / "rules.yaml"
    return _parse(ref.read_text(encoding="utf-8"), "hangar/planning/data/rules.yaml")


def _parse(text: str, source: str) -> RuleSet:
    try:
        raw = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        raise DataError(f"{source}: invalid YAML: {exc}") from exc
    if not isinstance(raw, dict) or raw.get("schema_version") != 1:
        raise DataError(f"{source}: schema_version must be 1")
    rules, seen = [], set()
    for index, entry in enumerate(raw.get("rules") or []):
        label = entry.get("id", f"#{index}") if isinstance(entry, dict) else f"#{index}"
        try:
            rule = Rule.model_validate(entry)
        except ValidationError as exc:
            err = exc.errors()[0]
            key = ".".join(str(p) for p in err["loc"])
            raise DataError(f"{source}: rule '{label}' key '{key}': {err['msg']}") from exc
        if rule.id in seen:
            raise DataError(f"{source}: rule '{rule.id}' is defined twice")
        seen.add(rule.id)
        rules.append(rule)
    return RuleSet(rules, source)
