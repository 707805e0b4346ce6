"""Planning: vLLM's startup rules (data) and the memory model -> a frozen Plan."""

from hangar.planning.plan import LayoutPlan, Plan, plan
from hangar.planning.request import PlanRequest
from hangar.planning.rules import Finding

__all__ = ["Finding", "LayoutPlan", "Plan", "PlanRequest", "plan"]
