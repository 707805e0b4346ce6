"""Turn `hangar doctor` arguments into log paths (files, directories, launch run ids), and a
launched run's record into evidence lines.

Run context (issue 11 item 2): when a log lies in a run dir that `hangar launch` wrote, what
the launch recorded joins the scan as one more source, ``hangar-run:<id>``, whose lines take
the forms the signatures already match in logs: bash's ``ulimit -a`` table, Hangar's own
``hangar: ulimit -v N -n M on HOST``, ``NAME=value`` as ``env`` prints it, the command line
as ``set -x`` prints it. What is read (never written here):

- ``runs/<id>/launch.json`` (launch/claim.py ``record_run``): target, argv, the env Hangar
  added (secret values were never written; their names are listed as names only);
- the store row (``store.runs.RunRecord``): engine, vLLM version, the deployment's layout;
- ``runs/<id>/host.json`` when present: the preflight ``HostFacts`` of the launching host
  (ulimits, temp dir, driver, GPUs, nvcc), read for local and container runs only (a Slurm
  run's limits are its nodes', which node.sh prints into their logs); its shape is
  ``HostFacts.model_dump(mode="json", exclude={"env", "engine"})`` plus ``engine_unmet``:
  the requirements of the engine's vLLM that its environment did not meet.
"""

from __future__ import annotations

import json
import shlex
import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hangar.diagnose.reader import UnreadableLog
from hangar.errors import HangarError
from hangar.paths import HOST_FILE, LAUNCH_FILE

if TYPE_CHECKING:  # the store is imported where a run is looked up: a log path needs none
    from hangar.store.runs import RunRecord

SOURCE_PREFIX = "hangar-run"
# bash 5.1 builtins/ulimit.def, limits[]: (description, units) per option, printed by
# printone() as "%-20s %20s" + value; the signatures match these words, not the spacing.
_BASH_ULIMIT = {
    "-c": ("core file size", "blocks"),
    "-d": ("data seg size", "kbytes"),
    "-f": ("file size", "blocks"),
    "-l": ("max locked memory", "kbytes"),
    "-m": ("max memory size", "kbytes"),
    "-n": ("open files", ""),
    "-s": ("stack size", "kbytes"),
    "-t": ("cpu time", "seconds"),
    "-u": ("max user processes", ""),
    "-v": ("virtual memory", "kbytes"),
}


def resolve(arg: str, database: Path | None = None) -> Path:
    """A path as given when it exists; otherwise the logs of the `hangar launch` run ``arg``
    (its run dir: the Slurm job log and every node's log, or the server log)."""
    path = Path(arg)
    if path.exists():
        return path
    run = _find(arg, database)
    if run is None:
        raise UnreadableLog(
            "is neither a file nor a known run id",
            source=arg,
            hint="pass a log file, '-' for stdin, or a run id from `hangar launch`",
        )
    log = Path(run.log_path)
    if run.target != "local" and Path(run.run_dir).is_dir():
        return Path(run.run_dir)  # every node's log, read as a directory
    if not log.exists():
        raise UnreadableLog(f"the log of run '{arg}' is gone", source=str(log))
    return log


def run_log(run_id: str, database: Path) -> Path | None:
    """The log recorded for ``run_id``, or None (no store, no such run)."""
    run = _find(run_id, database)
    return Path(run.log_path) if run and run.log_path else None


def _find(ref: str, database: Path | None) -> RunRecord | None:
    from hangar.store.db import db_path
    from hangar.store.runs import find_run

    return find_run(ref, database or db_path())


def run_dirs(paths: Iterable[Path]) -> list[Path]:
    """The Hangar run dirs the inputs lie in (a run dir itself, or a log file in one), once
    each, in input order."""
    found: dict[Path, None] = {}
    for path in paths:
        for folder in (path, path.parent) if path.is_dir() else (path.parent,):
            if (folder / LAUNCH_FILE).is_file():
                found.setdefault(folder.resolve())
                break
    return list(found)


def context_lines(run_dir: Path, database: Path | None = None) -> list[str]:
    """What the launch recorded in ``run_dir``, as log lines (empty when nothing is readable:
    a run record is evidence, never a reason for the doctor to fail)."""
    launch = _json_file(run_dir / LAUNCH_FILE)
    record = _record_of(run_dir, database)
    host = _json_file(run_dir / HOST_FILE)
    # the engine's requirements hold wherever it runs (one environment on a shared file system)
    unmet = _unmet_lines(_list(host.get("engine_unmet")))
    if launch.get("target", record.target if record else "local") == "slurm":
        host = {}  # the submitting host's facts, not the nodes' (node.sh prints their limits)
    lines = [*_launch_lines(launch), *_record_lines(record), *_host_lines(host, record), *unmet]
    return [line.replace("\n", " ").replace("\r", " ") for line in lines]


def source_name(run_dir: Path) -> str:
    return f"{SOURCE_PREFIX}:{run_dir.name}"


def _json_file(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _record_of(run_dir: Path, database: Path | None) -> RunRecord | None:
    """The store row of the run whose dir this is (the dir is named by the run id)."""
    try:
        run = _find(run_dir.name, database)
    except (HangarError, OSError, sqlite3.Error):  # an unreadable store only loses context
        return None
    if run is None or Path(run.run_dir).resolve() != run_dir.resolve():
        return None
    return run


def _launch_lines(launch: dict[str, Any]) -> Iterator[str]:
    if not launch:
        return
    yield f"hangar: target {launch.get('target', '?')}"
    argv = [str(a) for a in _list(launch.get("argv"))]
    if argv:
        yield "+ " + shlex.join(_without_inline_code(argv))  # as bash's set -x shows it
    env = launch.get("env")
    for name, value in sorted(env.items() if isinstance(env, dict) else ()):
        yield f"{name}={value}"  # as `env` prints it (secret values were never recorded)
    secrets = [str(n) for n in _list(launch.get("secret_env"))]
    if secrets:
        yield f"hangar: secret env passed by name only: {', '.join(sorted(secrets))}"


def _list(value: Any) -> list[Any]:
    """A recorded list, or [] for anything else (the run dir is a file the user can edit)."""
    return value if isinstance(value, list) else []


def _without_inline_code(argv: list[str]) -> list[str]:
    """``python -c CODE``: the bootstrap's code is Hangar's, not the user's command."""
    return ["<code>" if i and argv[i - 1] == "-c" else a for i, a in enumerate(argv)]


def _record_lines(record: RunRecord | None) -> Iterator[str]:
    if record is None:
        return
    yield f"hangar: engine {record.engine}, vLLM {record.vllm_version or 'unknown'}"
    layout = _layout(record.deployment)
    if layout:
        yield layout


def _layout(deployment: dict[str, Any]) -> str:
    parallel = deployment.get("parallel") or {}
    resources = deployment.get("resources") or {}
    if not isinstance(parallel, dict) or not isinstance(resources, dict):
        return ""
    section = deployment.get("model")
    model = section.get("id", "?") if isinstance(section, dict) else "?"
    return (
        f"hangar: deployment {model}: tensor_parallel_size={parallel.get('tensor', 1)} "
        f"pipeline_parallel_size={parallel.get('pipeline', 1)} "
        f"data_parallel_size={parallel.get('data', 1)} "
        f"expert_parallel={bool(parallel.get('expert', False))}; "
        f"{resources.get('gpus', 1)} GPU(s) per node ({resources.get('gpu') or 'any'}) "
        f"x {resources.get('nodes', 1)} node(s)"
    )


def _host_lines(host: dict[str, Any], record: RunRecord | None) -> Iterator[str]:
    if not host:
        return
    name = str((record.launcher.get("host") if record else None) or "the launching host")
    yield from _ulimit_lines(_list(host.get("ulimits")), name)
    yield from _tmp_lines(host.get("tmp"))
    yield from _nvidia_lines(host.get("nvidia"))
    nvcc = host.get("nvcc")
    yield f"hangar: nvcc {nvcc}" if nvcc else "hangar: nvcc not found on PATH"
    interfaces = [str(i) for i in _list(host.get("interfaces"))]
    if interfaces:
        yield f"hangar: network interfaces {', '.join(interfaces)}"


def _unmet_lines(unmet: list[Any]) -> Iterator[str]:
    """vLLM's own requirements the engine did not meet at launch (preflight/engine.py)."""
    for u in (u for u in unmet if isinstance(u, dict) and u.get("requirement")):
        found = f"found {u['found']}" if u.get("found") else "not installed"
        yield f"hangar: engine requirement not met: {u['requirement']}, {found}"


def _ulimit_lines(ulimits: list[Any], host: str) -> Iterator[str]:
    soft: dict[str, str] = {}
    for limit in (u for u in ulimits if isinstance(u, dict)):
        flag = str(limit.get("flag", ""))
        value = _in_ulimit_units(limit.get("soft"), limit.get("unit"))
        soft[flag] = value
        described = _BASH_ULIMIT.get(flag)
        if described:
            what, units = described
            unit = f"({units}, {flag}) " if units else f"({flag}) "
            yield f"{what:<20} {unit:>20}{value}"
    if "-v" in soft and "-n" in soft:  # Hangar's own line (launch/spec.py BOOTSTRAP, node.sh)
        yield f"hangar: ulimit -v {soft['-v']} -n {soft['-n']} on {host}"


def _in_ulimit_units(soft: Any, unit: Any) -> str:
    """HostFacts keep the rlimit (bytes for -v) and the bytes per `ulimit` unit (1024)."""
    if soft is None:
        return "unlimited"
    per = unit if isinstance(unit, int) and unit > 0 else 1
    return str(int(soft) // per) if isinstance(soft, int) else str(soft)


def _tmp_lines(tmp: Any) -> Iterator[str]:
    if not isinstance(tmp, dict) or not tmp.get("path"):
        return
    free = tmp.get("free_bytes")
    room = f", {free / 2**30:.1f} GiB free" if isinstance(free, int) else ""
    shared = ", world-writable (shared with other users)" if tmp.get("world_shared") else ""
    yield f"hangar: temp dir {tmp['path']}{room}{shared}"


def _nvidia_lines(nvidia: Any) -> Iterator[str]:
    if not isinstance(nvidia, dict):
        return
    if not nvidia.get("available"):
        yield f"hangar: no NVIDIA GPU visible ({nvidia.get('reason') or 'NVML unavailable'})"
        return
    gpus = [g for g in _list(nvidia.get("gpus")) if isinstance(g, dict)]
    names = sorted({str(g.get("name", "?")) for g in gpus})
    driver = nvidia.get("driver_version") or "unknown"
    yield f"hangar: NVIDIA driver {driver}, {len(gpus)} GPU(s) visible: {', '.join(names)}"
