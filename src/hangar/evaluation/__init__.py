"""Evaluate a running OpenAI-compatible (vLLM) server: functional suites and performance.

Public API: :func:`evaluate` (run suites), :func:`resolve_target` (TARGET -> Target),
:func:`compare` (deltas between two results), :func:`render_html` (the report).
"""

from hangar.evaluation.compare import Comparison, compare
from hangar.evaluation.perf import PerfOptions
from hangar.evaluation.report import render_html
from hangar.evaluation.results import EvalResult
from hangar.evaluation.runner import EvalOptions, evaluate, parse_suites
from hangar.evaluation.target import Target, resolve_target

__all__ = [
    "Comparison",
    "EvalOptions",
    "EvalResult",
    "PerfOptions",
    "Target",
    "compare",
    "evaluate",
    "parse_suites",
    "render_html",
    "resolve_target",
]
