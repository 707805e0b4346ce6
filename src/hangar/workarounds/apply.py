"""Merge workarounds into a launch: the user's explicit env vars and flags always win."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict

from hangar.workarounds.registry import Workaround


class Override(BaseModel):
    """A workaround setting the user's own value replaced (shown, never silent)."""

    model_config = ConfigDict(frozen=True)

    workaround: str
    kind: str  # env | arg
    name: str
    workaround_value: str
    user_value: str


class Applied(BaseModel):
    model_config = ConfigDict(frozen=True)

    ids: tuple[str, ...] = ()
    env: dict[str, str] = {}
    args: tuple[str, ...] = ()
    overrides: tuple[Override, ...] = ()


def flag_name(token: str) -> str:
    """Canonical flag: '--max_num_seqs=4' -> '--max-num-seqs', '--no-x' -> '--x'."""
    name = token.split("=", 1)[0].replace("_", "-")
    return "--" + name[5:] if name.startswith("--no-") else name


def split_flags(args: Sequence[str]) -> list[tuple[str, list[str]]]:
    """Group argv tokens into (flag, values) pairs; vLLM flags take at most one value here."""
    groups: list[tuple[str, list[str]]] = []
    for token in args:
        if token.startswith("-") and not _is_number(token):
            groups.append((token, []))
        elif groups:
            groups[-1][1].append(token)
        else:
            groups.append((token, []))
    return groups


def _is_number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def apply(
    workarounds: Sequence[Workaround], user_env: Mapping[str, str], user_args: Sequence[str]
) -> Applied:
    """Env and args the workarounds add, minus anything the user set explicitly."""
    user_flags = {flag_name(flag): " ".join([flag, *vals]) for flag, vals in split_flags(user_args)}
    env: dict[str, str] = {}
    args: list[str] = []
    overrides: list[Override] = []
    for w in workarounds:
        for name, value in w.env.items():
            if name in user_env:
                overrides.extend(_overridden(w.id, "env", name, value, user_env[name]))
                continue
            env[name] = value
        for flag, vals in split_flags(w.args):
            key = flag_name(flag)
            text = " ".join([flag, *vals])
            if key in user_flags:
                overrides.extend(_overridden(w.id, "arg", key, text, user_flags[key]))
                continue
            user_flags[key] = text  # two workarounds setting one flag: the first wins
            args.extend([flag, *vals])
    return Applied(
        ids=tuple(w.id for w in workarounds), env=env, args=tuple(args), overrides=tuple(overrides)
    )


def _overridden(
    workaround: str, kind: str, name: str, value: str, user_value: str
) -> list[Override]:
    """The user's own setting wins; record it when it differs from the workaround's."""
    if user_value == value:
        return []
    return [
        Override(
            workaround=workaround,
            kind=kind,
            name=name,
            workaround_value=value,
            user_value=user_value,
        )
    ]
