"""Find and signal the processes of one run: by process group and the run's env marker only.

Every server Hangar starts gets ``HANGAR_RUN_ID=<id>`` in its environment and its own
process group. A process is treated as part of a run only if it carries that marker,
so a reused PID or PGID never gets a signal (and nothing is ever matched by name).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

MARKER = "HANGAR_RUN_ID"


def _stat_fields(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # comm (field 2) may contain spaces/parens: split after the last ')'.
    return text[text.rfind(")") + 2 :].split()


def is_running(pid: int) -> bool:
    """Alive and not a zombie."""
    fields = _stat_fields(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def carries_marker(pid: int, run_id: str) -> bool:
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False
    return f"{MARKER}={run_id}".encode() in environ.split(b"\0")


def run_processes(run_id: str, pgid: int | None) -> list[int]:
    """Live PIDs that carry the run's marker (in its group, or escaped from it)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        if pid != os.getpid() and is_running(pid) and carries_marker(pid, run_id):
            found.append(pid)
    return sorted(found)


def _signal_group(pgid: int | None, pids: list[int], sig: signal.Signals) -> None:
    if pgid is not None and pgid in pids:
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            pass
    for pid in pids:  # stragglers that left the group (setsid in a worker)
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def terminate(
    run_id: str, pgid: int | None, grace_s: float, poll_s: float = 0.2
) -> tuple[int, bool]:
    """SIGTERM the run's processes, SIGKILL what is left after ``grace_s``.

    Returns (processes signalled, whether SIGKILL was needed).
    """
    pids = run_processes(run_id, pgid)
    if not pids:
        return 0, False
    _signal_group(pgid, pids, signal.SIGTERM)
    signalled = set(pids)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        _reap_children()
        now = run_processes(run_id, pgid)
        # a worker forked while the signal was on its way carries the marker too: signal it
        late = [pid for pid in now if pid not in signalled]
        if late:
            _signal_group(None, late, signal.SIGTERM)
            signalled.update(late)
        if not now and _settled(run_id, pgid, poll_s):
            return len(signalled), False
        time.sleep(poll_s)
    left = run_processes(run_id, pgid)
    if left:
        _signal_group(pgid, left, signal.SIGKILL)
        _wait_gone(run_id, pgid)
    return len(signalled | set(left)), bool(left)


def _settled(run_id: str, pgid: int | None, poll_s: float) -> bool:
    """Still none after one more poll: a child forked by a dying server can show up in
    /proc a moment after its parent is gone."""
    time.sleep(poll_s)
    _reap_children()
    return not run_processes(run_id, pgid)


def _wait_gone(run_id: str, pgid: int | None, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and run_processes(run_id, pgid):
        _reap_children()
        time.sleep(0.1)


# Servers started by this process (a launch from Python, e.g. tests): polled so an
# exited server is reaped instead of lingering as a zombie that looks alive.
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}


def track(child: subprocess.Popen[bytes]) -> None:
    _CHILDREN[child.pid] = child


def _reap_children() -> None:
    for pid, child in list(_CHILDREN.items()):
        if child.poll() is not None:
            del _CHILDREN[pid]


def own_child_alive(pid: int | None) -> bool:
    """A server this process started and has not exited: its marker may not be visible yet
    (between fork and exec /proc/<pid>/environ is still ours), so ask the Popen."""
    child = _CHILDREN.get(pid) if pid is not None else None
    return child is not None and child.poll() is None
