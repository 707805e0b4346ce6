"""Engine errors; all are HangarError subclasses so the CLI boundary renders them."""

from __future__ import annotations

from collections.abc import Sequence

from hangar.errors import HangarError, InputError


class EngineNotFound(InputError):
    def __init__(self, name: str, known: Sequence[str]) -> None:
        listed = ", ".join(known) if known else "none registered"
        super().__init__(
            f"no engine named '{name}' (known: {listed})",
            hint="hangar engines list   (or hangar engines add NAME --vllm VERSION)",
        )
        self.engine = name


class EngineExists(InputError):
    def __init__(self, name: str) -> None:
        super().__init__(
            f"engine '{name}' already exists; add never touches an existing engine",
            hint=f"pick another name, or hangar engines upgrade {name} --to VERSION",
        )
        self.engine = name


class ProjectEngineReadOnly(InputError):
    def __init__(self, name: str, source: str) -> None:
        super().__init__(
            f"engine '{name}' is defined in {source}, which Hangar does not rewrite",
            hint=f"edit {source} by hand",
        )
        self.engine = name


class EngineInUse(HangarError):
    def __init__(self, name: str, users: Sequence[str]) -> None:
        super().__init__(
            f"engine '{name}' is used by {len(users)} deployment(s): {', '.join(users)}",
            hint="point those deployments at another engine first (their `engine =` line)",
        )
        self.engine = name
        self.users = list(users)


class ResolutionFailed(HangarError):
    """uv's dry run found no solution: nothing was created or changed."""

    def __init__(self, spec: str, reason: str) -> None:
        super().__init__(
            f"'{spec}' does not resolve ({reason}); nothing was changed",
            hint="pick another version (hangar engines history NAME lists tried ones)",
        )
        self.spec = spec
        self.reason = reason


class InstallFailed(HangarError):
    def __init__(self, spec: str, step: str, reason: str) -> None:
        super().__init__(
            f"building '{spec}' failed at step '{step}': {reason}; "
            "the engine in use was not changed",
            hint="hangar engines prune   (removes the unused venv)",
        )
        self.spec = spec
        self.step = step
        self.reason = reason


class NothingToRollBack(InputError):
    def __init__(self, name: str) -> None:
        super().__init__(
            f"engine '{name}' has no previous install to roll back to",
            hint=f"hangar engines history {name}",
        )
        self.engine = name


class InspectFailed(HangarError):
    def __init__(self, name: str, reason: str, hint: str | None = None) -> None:
        super().__init__(f"cannot inspect engine '{name}': {reason}", hint=hint)
        self.engine = name
