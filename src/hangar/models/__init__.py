"""Model facts: ``load_model(ref) -> ModelSpec`` from a path, the HF cache, the catalog or the hub."""

from hangar.models.sources import load_model
from hangar.models.spec import ModelSpec

__all__ = ["ModelSpec", "load_model"]
