"""Benchmark `hangar launch` on Slurm: 2 nodes, vLLM's mp mode, TP=2 across the nodes.

    python bench/slurm_launch.py [--rounds 1]

Needs root and scripts/setup-test-host (it starts the tests' 2-node Slurm cluster,
tests/support/slurm_cluster.py, and the cached vLLM CPU venv). For each round it measures

* Hangar: `hangar launch FILE` from submit to ready (a one-token completion), split by the
  launch's own events and the head node's log: Slurm (submit -> the job runs), rank start
  (the job runs -> vLLM's first log line on the head node: node scripts, temp dirs, limits),
  vLLM (-> ready);
* the baseline, in the same run on the same cluster: a hand-written sbatch script for the
  same deployment (two `srun` steps of `vllm serve ... --nnodes 2`, the environment a user
  writes by hand), from sbatch to the first completion answered.

Prints one line per round and the ratio Hangar / hand-written (medians).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))

from support.slurm_cluster import NODE_LOCAL_TMP, SlurmCluster
from support.tiny_model import build_tiny_model
from support.vllm_env import vllm_cpu_python

PORT, MASTER = 31201, 31202
_VLLM_TIME = re.compile(r"INFO (\d\d-\d\d \d\d:\d\d:\d\d)")


def deployment(model: Path, python: Path) -> str:
    return f"""
name = "bench-mp"
engine = "{python}"
[model]
id = "{model}"
served_name = "tiny"
[resources]
gpus = 1
nodes = 2
[parallel]
tensor = 2
[serve]
enforce_eager = true
[env]
VLLM_CPU_KVCACHE_SPACE = "1"
[target]
kind = "slurm"
[target.slurm]
multinode = "mp"
network_interface = "eth0"
port = {PORT}
master_port = {MASTER}
tmp_root = "{NODE_LOCAL_TMP}"
cpus_per_task = 2
mem = "4G"
ready_timeout_s = 900
stop_grace_s = 5
"""


def hand_written(model: Path, python: Path, head_ip: str) -> str:
    """What a user writes without Hangar for the same deployment (no checks, no cleanup)."""
    common = (
        f"{python} -m vllm.entrypoints.cli.main serve {model} --served-model-name tiny "
        f"--enforce-eager --tensor-parallel-size 2 --nnodes 2 --master-addr {head_ip} "
        f"--master-port {MASTER}"
    )
    return f"""#!/bin/bash
#SBATCH --nodes=2 --ntasks-per-node=1 --gpus-per-node=1 --cpus-per-task=2 --mem=4G
export VLLM_CPU_KVCACHE_SPACE=1 GLOO_SOCKET_IFNAME=eth0 HF_HUB_OFFLINE=1
nodes=($(scontrol show hostnames "$SLURM_JOB_NODELIST"))
srun -N1 -w "${{nodes[0]}}" bash -c 'export VLLM_HOST_IP=$(hostname -I | cut -d" " -f1); \
  exec {common} --node-rank 0 --host 0.0.0.0 --port {PORT}' &
srun -N1 -w "${{nodes[1]}}" bash -c 'export VLLM_HOST_IP=$(hostname -I | cut -d" " -f1); \
  exec {common} --node-rank 1 --headless' &
wait
"""


def completion_ok(url: str) -> bool:
    body = json.dumps({"model": "tiny", "prompt": "Hi", "max_tokens": 1}).encode()
    req = urllib.request.Request(
        f"{url}/v1/completions", body, {"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status == 200
    except OSError:
        return False


def run_baseline(cluster: SlurmCluster, model: Path, python: Path) -> float:
    head_ip = cluster.nodes[0].ip
    start = time.monotonic()
    job = cluster.submit(hand_written(model, python, head_ip), name="handwritten")
    try:
        while not completion_ok(f"http://{head_ip}:{PORT}"):
            if time.monotonic() - start > 900:
                raise RuntimeError("the hand-written job never answered")
            time.sleep(0.5)
        return time.monotonic() - start
    finally:
        cluster.slurm("scancel", str(job))
        cluster.wait_job_gone(job, timeout=60)


def run_hangar(cluster: SlurmCluster, path: Path, home: Path) -> dict[str, float]:
    env = {**os.environ, **cluster.env, "HANGAR_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    hangar = [sys.executable, "-m", "hangar"]
    launched = subprocess.run(
        [*hangar, "launch", str(path)], env=env, capture_output=True, text=True, check=False
    )
    if launched.returncode != 0:
        raise RuntimeError(launched.stderr)
    run_id = launched.stdout.split("run ", 1)[1].split()[0]
    try:
        return phases(home, run_id)
    finally:
        subprocess.run([*hangar, "stop", run_id], env=env, capture_output=True, check=False)


def phases(home: Path, run_id: str) -> dict[str, float]:
    from hangar.store.db import connect
    from hangar.store.runs import get_run, list_events

    conn = connect(home / "state" / "hangar.sqlite3")
    events = {e.stage: e.at for e in list_events(conn, run_id)}
    run_dir = Path(get_run(conn, run_id).run_dir)
    head_log = min(run_dir.glob("node-*.log")).read_text(errors="replace")
    first = _VLLM_TIME.search(head_log)
    year = datetime.fromtimestamp(events["running"]).year
    vllm_start = (
        datetime.strptime(f"{year}-{first.group(1)}", "%Y-%m-%d %H:%M:%S").timestamp()
        if first
        else events["running"]
    )
    submit, running, ready = events["submit"], events["running"], events["ready"]
    vllm_start = min(max(vllm_start, running), ready)
    return {
        "total": ready - submit,
        "slurm": running - submit,
        "rank_start": vllm_start - running,
        "vllm": ready - vllm_start,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    python = vllm_cpu_python()
    with tempfile.TemporaryDirectory(prefix="hgbench") as scratch, SlurmCluster.start() as cluster:
        model = build_tiny_model(Path(scratch) / "tiny")
        path = Path(scratch) / "hangar.toml"
        path.write_text(deployment(model, python))
        ours, theirs = [], []
        for i in range(args.rounds):
            home = Path(scratch) / f"home{i}"
            p = run_hangar(cluster, path, home)
            base = run_baseline(cluster, model, python)
            ours.append(p["total"])
            theirs.append(base)
            shares = ", ".join(
                f"{k} {v:.1f}s ({100 * v / p['total']:.0f}%)" for k, v in p.items() if k != "total"
            )
            print(f"round {i + 1}: hangar {p['total']:.1f}s [{shares}]; hand-written {base:.1f}s")
        ratio = statistics.median(ours) / statistics.median(theirs)
        print(
            f"median: hangar {statistics.median(ours):.1f}s, hand-written "
            f"{statistics.median(theirs):.1f}s, ratio {ratio:.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
