"""Imports only go down the pipeline: a lower stage never imports a higher one.

models/hardware -> planning -> preflight -> launch -> diagnose/evaluation -> cli. Imports
inside functions count too (a lazy import is still a dependency).
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "hangar"

# Stage of each top-level package/module; equal stages may import each other.
STAGES: dict[str, int] = {
    "__init__": 0,
    "errors": 0,
    "paths": 0,
    "proc": 0,
    "text": 0,
    "models": 1,
    "hardware": 1,
    "deploy": 1,
    "store": 1,
    "planning": 2,
    "engines": 2,
    "workarounds": 3,
    "preflight": 4,
    "launch": 5,
    "diagnose": 6,
    "evaluation": 6,
    "web": 7,
    "cli": 8,
    "__main__": 9,
}


def _imports(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found += [(node.lineno, node.module)]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
    return [(line, name) for line, name in found if name.split(".")[0] == "hangar"]


def _stage(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_every_package_has_a_stage() -> None:
    tops = {
        p.stem if p.is_file() else p.name
        for p in SRC.iterdir()
        if p.suffix == ".py" or (p / "__init__.py").exists()
    }
    assert tops <= set(STAGES), f"give these a stage in STAGES: {sorted(tops - set(STAGES))}"


def test_no_stage_imports_a_higher_one() -> None:
    upward = []
    for path in sorted(SRC.rglob("*.py")):
        own = path.relative_to(SRC).parts[0].removesuffix(".py")
        for line, module in _imports(path):
            target = _stage(module)
            if STAGES[target] > STAGES[own]:
                upward.append(f"{path.relative_to(SRC)}:{line} ({own}) imports {module} ({target})")
    assert not upward, "imports that go up the pipeline:\n" + "\n".join(upward)
