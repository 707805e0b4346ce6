"""Planning: vLLM's startup rules (data) and the memory model -> a frozen Plan."""

from hangar.planning.findings import Finding
from hangar.planning.plan import LayoutPlan, Plan, plan
from hangar.planning.request import PlanRequest

__all__ = ["Finding", "LayoutPlan", "Plan", "PlanRequest", "plan"]
