"""Known vLLM workarounds as cited data: match them to facts, merge them into a launch."""

from hangar.workarounds.apply import Applied, Override, apply, flag_name, split_flags
from hangar.workarounds.features import model_features
from hangar.workarounds.registry import (
    Facts,
    ModelFeatures,
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
    "model_features",
    "removal_due",
    "split_flags",
]
