"""Known vLLM workarounds as cited data: match them to facts, merge them into a launch."""

from hangar.models.features import ModelFeatures
from hangar.workarounds.apply import Applied, Override, apply, flag_name, split_flags
from hangar.workarounds.registry import (
    Facts,
    Workaround,
    applicable,
    get,
    load_registry,
    matches,
    removal_due,
)

__all__ = [
    "Applied",
    "Facts",
    "ModelFeatures",
    "Override",
    "Workaround",
    "applicable",
    "apply",
    "flag_name",
    "get",
    "load_registry",
    "matches",
    "removal_due",
    "split_flags",
]
