"""The knowledge base's links and citations: preflight rules that exist, sources, fixes, coverage."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import yaml

from hangar.diagnose import CAUSES
from hangar.diagnose.knowledge import load

SRC = Path(__file__).resolve().parents[2] / "src" / "hangar"
RULES = SRC / "planning" / "data" / "rules.yaml"
CHECKS = SRC / "preflight" / "checks"
# A fix must name something to type: a flag, an environment variable or a command.
_ACTIONABLE = re.compile(
    r"--[a-z]|\b[A-Z][A-Z0-9_]{3,}\b|\b(?:ulimit|ray|pip|sbatch|sinfo|srun|df|export|nvidia-smi"
    r"|systemctl|docker|hangar|rm|ip|munge|unmunge|scontrol|python|quota|sysctl|vllm|kubectl)\b"
)


def _rule_ids() -> set[str]:
    """Plan rule ids (rules.yaml) and the finding ids the preflight checks produce."""
    rules = yaml.safe_load(RULES.read_text(encoding="utf-8"))["rules"]
    ids = {str(rule["id"]) for rule in rules}
    for module in CHECKS.glob("*.py"):
        ids.update(re.findall(r'\bid="([a-z0-9_.]+)"', module.read_text(encoding="utf-8")))
    return ids


def test_rule_id_sources_are_readable() -> None:
    ids = _rule_ids()
    assert "host.ulimit.address_space" in ids and "heads_divisible_by_tp" in ids


def test_every_linked_preflight_rule_exists() -> None:
    known = _rule_ids()
    dangling = {
        sig.id: sig.preflight_rule
        for sig in load().signatures
        if sig.preflight_rule is not None and sig.preflight_rule not in known
    }
    assert not dangling, dangling


def test_every_signature_cites_the_emitting_source() -> None:
    # A thread URL says where a message was seen; the citation must say who prints it.
    uncited = [
        sig.id
        for sig in load().signatures
        if not any(not s.startswith("https://") for s in sig.sources)
    ]
    assert not uncited, uncited


def test_every_cause_has_three_surface_forms_and_a_signature() -> None:
    forms = Counter()
    for sig in load().signatures:
        forms[sig.cause] += len(sig.patterns)
    thin = {cause: forms[cause] for cause in CAUSES if forms[cause] < 3}
    assert not thin, thin


def test_every_fix_names_a_flag_env_var_or_command() -> None:
    vague = [sig.id for sig in load().signatures if not _ACTIONABLE.search("\n".join(sig.fix))]
    assert not vague, vague
