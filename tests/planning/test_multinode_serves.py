"""A 2-node plan's per-node commands, each run in its own network namespace with the CPU build
of vLLM, serve a completion (issue 14 acceptance). Real vLLM, real netns, a tiny random Llama.

The two "nodes" are network namespaces on one bridge (research/feasibility.md §1.7 and §2.4):
the CPU build needs GLOO_SOCKET_IFNAME=eth0, VLLM_HOST_IP and one OMP core per rank; those are
site environment, not flags, so the test adds them; the argv is the plan's, word for word
(only `vllm` becomes the venv's executable, and node 0 gets --host/--port to be reachable).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.tiny_model import tiny_model_cached
from tests.support.vllm_env import vllm_cpu_python, vllm_runtime_env, vllm_skipped

from hangar.planning.api import make_plan

pytestmark = pytest.mark.slow

PREFIX = f"hp{os.getpid() % 10000}"
SUBNET = "10.214.{}.{}"
PORT = 18731


def _ip(*argv: str) -> None:
    subprocess.run(["ip", *argv], check=True, capture_output=True)


@pytest.fixture()
def netns_pair() -> Iterator[list[str]]:
    if os.geteuid() != 0 or not shutil.which("ip") or not shutil.which("nsenter"):
        pytest.skip("needs root, ip and nsenter for two network namespaces")
    third = os.getpid() % 200 + 20
    bridge, names = f"{PREFIX}br", [f"{PREFIX}n{i}" for i in (1, 2)]
    ips = [SUBNET.format(third, 11 + i) for i in range(2)]
    _ip("link", "add", bridge, "type", "bridge")
    try:
        _ip("addr", "add", f"{SUBNET.format(third, 1)}/24", "dev", bridge)
        _ip("link", "set", bridge, "up")
        for i, name in enumerate(names):
            _ip("netns", "add", name)
            _ip("link", "add", f"{name}v", "type", "veth", "peer", "name", "eth0", "netns", name)
            _ip("link", "set", f"{name}v", "master", bridge)
            _ip("link", "set", f"{name}v", "up")
            _ip("-n", name, "addr", "add", f"{ips[i]}/24", "dev", "eth0")
            _ip("-n", name, "link", "set", "eth0", "up")
            _ip("-n", name, "link", "set", "lo", "up")
        yield ips
    finally:
        for name in names:
            subprocess.run(["ip", "netns", "del", name], capture_output=True, check=False)
        subprocess.run(["ip", "link", "del", bridge], capture_output=True, check=False)


def _start(argv: list[str], netns: str, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            ["nsenter", f"--net=/run/netns/{netns}", "--", *argv],
            env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    """Every rank is ours to stop: a headless rank outlives the head (feasibility §1.7)."""
    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + 20
    for proc in procs:
        try:
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def _completion(url: str) -> dict[str, object]:
    body = json.dumps({"model": "tiny", "prompt": "Hello", "max_tokens": 4}).encode()
    req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        return json.loads(resp.read())  # type: ignore[no-any-return]


def _wait_ready(url: str, procs: list[subprocess.Popen[bytes]], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(p.poll() is not None for p in procs):
            raise AssertionError("a rank exited before the server was ready")
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            time.sleep(2)
    raise AssertionError(f"not ready after {timeout:.0f} s")


def test_two_node_plan_commands_serve(netns_pair: list[str], tmp_path: Path) -> None:
    if vllm_skipped():
        pytest.skip("HANGAR_SKIP_VLLM=1")
    python = vllm_cpu_python()
    model = tiny_model_cached("llama", python=python)
    head = netns_pair[0]
    plan = make_plan(str(model), gpu_memory=8 * 2**30, compute_capability=(8, 0), gpus=1,
                     nodes=2, tp=2, max_model_len=512, enforce_eager=True, head_address=head)
    layout = plan.layouts[0]
    assert layout.valid and layout.multi_node is not None and layout.multi_node.recommended == "mp"
    # zmq IPC paths must stay under 107 characters: a short scratch dir, removed afterwards
    scratch = Path(tempfile.mkdtemp(prefix="hgmn-", dir="/tmp"))
    base = vllm_runtime_env(scratch)
    base.update(GLOO_SOCKET_IFNAME="eth0", VLLM_CPU_NUM_OF_RESERVED_CPU="0")
    procs = []
    try:
        for command, ip in zip(layout.multi_node.mp, netns_pair):
            argv = [str(python.with_name("vllm")), *command.argv[1:]]
            if command.node_rank == 0:
                argv += ["--host", ip, "--port", str(PORT), "--served-model-name", "tiny"]
            env = {**base, "VLLM_HOST_IP": ip, "VLLM_CPU_OMP_THREADS_BIND": str(command.node_rank)}
            netns = f"{PREFIX}n{command.node_rank + 1}"
            procs.append(_start(argv, netns, env, tmp_path / f"node{command.node_rank}.log"))
        _wait_ready(f"http://{head}:{PORT}/health", procs, timeout=400)
        out = _completion(f"http://{head}:{PORT}/v1/completions")
        assert out["choices"], out
    except AssertionError:
        for log in sorted(tmp_path.glob("node*.log")):
            print(log.name, log.read_text(errors="replace")[-3000:])
        raise
    finally:
        _stop(procs)
        shutil.rmtree(scratch, ignore_errors=True)
