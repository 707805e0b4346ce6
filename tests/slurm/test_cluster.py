"""The Slurm test cluster itself works (tests/support/slurm_cluster.py), so that a failure in
the Slurm target's tests is about the target, not about the cluster.

Real daemons (Debian's slurm-wlm 22.05, munge, slurmdbd + MariaDB), two slurmd in their own
network namespaces, fake GPUs (GRES symlinks to /dev/null), and a real 2-node Ray cluster
started by a batch script. One cluster for the whole session (the ``slurm_cluster`` fixture).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TypeVar

import pytest
from support import slurm_cluster as slurm_cluster_module
from support.slurm_cluster import SlurmCluster, remove_stale_clusters

T = TypeVar("T")


def wait_for(check: Callable[[], T], timeout: float, what: str) -> T:
    """Poll ``check`` until it returns something true (no fixed sleeps)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.1)


def output_of(cluster: SlurmCluster, job: int) -> str:
    matches = list(cluster.job_dir.glob(f"*-{job}.out"))
    return matches[0].read_text(encoding="utf-8") if matches else ""


def test_two_idle_nodes_with_fake_gpus(slurm_cluster: SlurmCluster) -> None:
    out = slurm_cluster.slurm("sinfo", "-h", "-N", "-p", "debug", "-o", "%N %T %G", check=True)
    rows = sorted(set(out.stdout.split("\n")) - {""})
    assert rows == [f"{node.name} idle gpu:4" for node in slurm_cluster.nodes]
    assert slurm_cluster.gpus_per_node == 4
    assert slurm_cluster.partition == "debug"


def test_two_node_job_sees_its_own_hostname_ip_and_gpus(slurm_cluster: SlurmCluster) -> None:
    script = (
        "#!/bin/bash\nsrun -l bash -c 'echo \"$(hostname) $(hostname -I) $CUDA_VISIBLE_DEVICES\"'\n"
    )
    job = slurm_cluster.submit(script, "-N2", "--gres=gpu:2", name="where")
    assert slurm_cluster.wait_job_gone(job, timeout=60) == "COMPLETED"
    lines = sorted(output_of(slurm_cluster, job).split("\n"))
    expected = [f"{i}: {n.name} {n.ip} 0,1" for i, n in enumerate(slurm_cluster.nodes)]
    assert [" ".join(line.split()) for line in lines if line] == expected


def test_more_gpus_than_a_node_has_is_rejected_with_slurms_message(
    slurm_cluster: SlurmCluster,
) -> None:
    out = slurm_cluster.slurm("sbatch", "--parsable", "--gres=gpu:5", "--wrap=true")
    assert out.returncode == 1
    assert out.stderr.strip() == (
        "sbatch: error: Batch job submission failed: Requested node configuration is not available"
    )


def test_a_job_over_the_partition_limits_stays_pending_with_the_reason(
    slurm_cluster: SlurmCluster,
) -> None:
    short = slurm_cluster.limited_partition
    too_wide = slurm_cluster.submit("#!/bin/bash\ntrue\n", "-p", short, "-N2", name="wide")
    too_long = slurm_cluster.submit("#!/bin/bash\ntrue\n", "-p", short, "-t", "10", name="long")

    def ends_with(probe: Callable[[int], str], job: int, suffix: str) -> str:
        value = probe(job)
        return value if value.endswith(suffix) else ""

    def queued(job: int) -> str:
        return slurm_cluster.slurm("squeue", "-h", "-j", str(job), "-o", "%T %r").stdout.strip()

    try:
        for job, reason in ((too_wide, "PartitionNodeLimit"), (too_long, "PartitionTimeLimit")):
            # The first scheduler pass may say PartitionConfig; the limit's reason follows.
            state = wait_for(partial(ends_with, queued, job, reason), 60, f"{job}: {reason}")
            assert state == f"PENDING {reason}"
    finally:
        slurm_cluster.slurm("scancel", str(too_wide), str(too_long), check=True)
    for job in (too_wide, too_long):
        assert slurm_cluster.wait_job_gone(job, timeout=30).startswith("CANCELLED")


def test_sacct_lists_finished_jobs_with_their_gpus(slurm_cluster: SlurmCluster) -> None:
    job = slurm_cluster.submit("#!/bin/bash\nexit 3\n", "--gres=gpu:1", name="fails")
    assert slurm_cluster.wait_job_gone(job, timeout=60) == "FAILED"
    out = slurm_cluster.slurm(
        "sacct",
        "-n",
        "-X",
        "-P",
        "-j",
        str(job),
        "-o",
        "JobID,State,ExitCode,AllocTRES",
        check=True,
    )
    job_id, state, exit_code, tres = out.stdout.strip().split("|")
    assert (job_id, state, exit_code) == (str(job), "FAILED", "3:0")
    assert "gres/gpu=1" in tres.split(",")


def test_scancel_leaves_no_job_process(slurm_cluster: SlurmCluster) -> None:
    script = "#!/bin/bash\nsrun --overlap sleep 300 &\nsleep 300\n"
    job = slurm_cluster.submit(script, "-N1", name="sleeper")

    def both_sleeps() -> list[str]:
        found = [
            p.cmdline
            for p in slurm_cluster.job_processes(job)
            if p.cmdline.endswith("sleep 300") and "srun" not in p.cmdline
        ]
        return found if len(found) == 2 else []

    # one in the batch step, one in the srun step (slurmstepd runs it by full path)
    both = wait_for(both_sleeps, 30, "both sleeps")
    assert sorted(both) == [
        "/usr/bin/sleep 300",
        "sleep 300",
    ]
    slurm_cluster.slurm("scancel", str(job), check=True)
    assert slurm_cluster.wait_job_gone(job, timeout=30).startswith("CANCELLED")
    assert slurm_cluster.job_processes(job) == []


def test_a_server_in_a_job_is_reached_from_the_root_namespace_and_the_other_node(
    slurm_cluster: SlurmCluster,
) -> None:
    node = slurm_cluster.nodes[0]
    marker = slurm_cluster.job_dir / "marker.txt"
    marker.write_text("hello from the job dir\n", encoding="utf-8")
    url = f"http://{node.ip}:28080/{marker.name}"
    server = f"{sys.executable} -m http.server 28080 --bind {node.ip} -d {slurm_cluster.job_dir}"
    job = slurm_cluster.submit(f"#!/bin/bash\nexec {server}\n", "-w", node.name, name="http")
    try:
        assert wait_for(lambda: http_get(url), 30, "the job's HTTP server") == marker.read_text()
        fetch = f"import urllib.request as u; print(u.urlopen({url!r}).read().decode(), end='')"
        other = slurm_cluster.run_on_node(
            1, [sys.executable, "-c", fetch], capture_output=True, text=True
        )
        assert other.stdout == marker.read_text(), other.stderr
    finally:
        slurm_cluster.slurm("scancel", str(job))
    slurm_cluster.wait_job_gone(job, timeout=30)


def http_get(url: str) -> str:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return str(response.read().decode())
    except OSError:
        return ""


RAY_SCRIPT = r"""#!/bin/bash
# A 2-node Ray cluster the way a site script starts one: head-only options on the first
# node, worker-only options on the second, each `ray start --block` under its own srun
# step, GCS port outside Ray's worker-port range (10002-19999), a short private
# --temp-dir per node, teardown by the PIDs of the two steps (never `ray stop`).
set -euo pipefail
mapfile -t nodes < <(scontrol show hostnames "$SLURM_JOB_NODELIST")
head_ip="$(getent hosts "${nodes[0]}" | awk '{print $1}')"
tmp="$JOB_SCRATCH/r$SLURM_JOB_ID"
mkdir -m 0700 "$tmp"
pids=()
cleanup() {
  if ((${#pids[@]})); then kill "${pids[@]}" 2>/dev/null || true; wait "${pids[@]}" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
srun -N1 -n1 -w "${nodes[0]}" --overlap "$RAY_BIN/ray" start --head --block \
  --node-ip-address="$head_ip" --port=6380 --num-cpus=1 --num-gpus="$GPUS" \
  --temp-dir="$tmp/h" --include-dashboard=false --disable-usage-stats &
pids+=("$!")
# shellcheck disable=SC2016  # expanded by the inner bash, on the worker node
srun -N1 -n1 -w "${nodes[1]}" --overlap bash -c \
  'exec "$1/ray" start --block --address="$2:6380" --node-ip-address="$(hostname -I | cut -d" " -f1)" --num-cpus=1 --num-gpus="$3" --temp-dir="$4/w"' \
  _ "$RAY_BIN" "$head_ip" "$GPUS" "$tmp" &
pids+=("$!")
"$RAY_BIN/python" - "$head_ip:6380" <<'PY'
import sys, time
import ray
deadline = time.monotonic() + 90
while True:
    try:
        ray.init(address=sys.argv[1], logging_level="ERROR", log_to_driver=False)
        break
    except Exception:
        if time.monotonic() > deadline:
            raise
        time.sleep(0.5)
while True:
    nodes = sorted(n["NodeManagerAddress"] for n in ray.nodes() if n["Alive"])
    gpus = int(ray.cluster_resources().get("GPU", 0))
    if len(nodes) == 2 and gpus == 8:
        break
    if time.monotonic() > deadline:
        sys.exit(f"RAY_NOT_READY nodes={nodes} gpus={gpus}")
    time.sleep(0.5)
print("RAY_READY nodes=" + ",".join(nodes) + f" gpus={gpus}", flush=True)
ray.shutdown()
PY
"""


def test_two_node_ray_cluster_with_fake_gpus_torn_down_by_pid(
    slurm_cluster: SlurmCluster, ray_python: Path
) -> None:
    script = slurm_cluster.job_dir / "ray.sbatch"
    script.write_text(RAY_SCRIPT, encoding="utf-8")
    lint = subprocess.run(["shellcheck", str(script)], capture_output=True, text=True, check=False)
    assert lint.returncode == 0, lint.stdout
    exports = f"ALL,RAY_BIN={ray_python.parent},JOB_SCRATCH={slurm_cluster.job_dir}"
    out = slurm_cluster.slurm(
        "sbatch",
        "--parsable",
        "-N2",
        f"--gres=gpu:{slurm_cluster.gpus_per_node}",
        f"--export={exports},GPUS={slurm_cluster.gpus_per_node}",
        f"--output={slurm_cluster.job_dir}/ray-%j.out",
        str(script),
        check=True,
    )
    job = int(out.stdout.strip())
    state = slurm_cluster.wait_job_gone(job, timeout=150)
    log = output_of(slurm_cluster, job)
    ips = ",".join(node.ip for node in slurm_cluster.nodes)
    assert f"RAY_READY nodes={ips} gpus=8" in log, log
    assert state == "COMPLETED", log
    assert slurm_cluster.job_processes(job) == []
    assert not (slurm_cluster.job_dir / f"r{job}").exists()


CHILD = """
import sys, time
sys.path.insert(0, sys.argv[1])
from support.slurm_cluster import SlurmCluster
cluster = SlurmCluster.start(gres_type=sys.argv[2] or None, accounting=sys.argv[3] == "1")
print(cluster.prefix, flush=True)
time.sleep(300)
"""


def traces_of(prefix: str) -> list[str]:
    """What a cluster leaves behind: its scratch dir, namespaces, interfaces, daemons."""
    left = [str(p) for p in Path("/tmp").glob(prefix)]
    left += [str(p) for p in Path("/run/netns").glob(f"{prefix}*")]
    left += [str(p) for p in Path("/sys/class/net").glob(f"{prefix}*")]
    return left


def running(pid: int) -> bool:
    """Alive and not a zombie (a zombie's cmdline is empty)."""
    try:
        return bool(Path(f"/proc/{pid}/cmdline").read_bytes())
    except OSError:
        return False


@pytest.mark.parametrize(
    ("signum", "gres_type", "accounting"),
    [(signal.SIGTERM, "h100", False), (signal.SIGKILL, "", True)],
    ids=["sigterm-typed-gres-no-accounting", "sigkill"],
)
def test_an_interrupted_session_leaks_nothing(
    slurm_cluster: SlurmCluster, signum: signal.Signals, gres_type: str, accounting: bool
) -> None:
    """SIGTERM: the session's own handler tears down. SIGKILL: the next start sweeps it.

    The SIGTERM child also shows the constructor options on real daemons: typed GRES
    (``gpu:h100:4``) and no accounting (sacct says so, as on such sites).
    """
    tests_dir = str(Path(__file__).resolve().parents[1])
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, tests_dir, gres_type, "1" if accounting else "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=slurm_cluster.env,
    )
    try:
        prefix = child.stdout.readline().strip() if child.stdout else ""
        assert prefix, child.communicate(timeout=30)[1]
        state = json.loads((Path("/tmp") / prefix / "cluster.json").read_text(encoding="utf-8"))
        daemons = [d["pid"] for d in state["daemons"].values()]
        assert len(daemons) == (6 if accounting else 4) and traces_of(prefix)
        env = dict(slurm_cluster.env, SLURM_CONF=f"/tmp/{prefix}/etc/slurm.conf")
        sinfo = ["sinfo", "-h", "-N", "-p", "debug", "-o", "%G"]
        gres = subprocess.run(sinfo, env=env, capture_output=True, text=True, check=True)
        assert gres.stdout.split() == [f"gpu:{gres_type}:4" if gres_type else "gpu:4"] * 2
        if not accounting:
            sacct = subprocess.run(
                ["sacct", "-n"], env=env, capture_output=True, text=True, check=False
            )
            assert "Slurm accounting storage is disabled" in sacct.stdout + sacct.stderr
        child.send_signal(signum)
        child.communicate(timeout=60)
        if signum == signal.SIGKILL:
            # A SIGKILLed owner cannot clean up: the next start's sweep must. (Another
            # session's start may sweep it first; either way nothing may be left.)
            remove_stale_clusters()
        assert traces_of(prefix) == []
        assert [pid for pid in daemons if running(pid)] == []
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate(timeout=30)
    # the session's own cluster was not touched by the sweep
    assert slurm_cluster.slurm("sinfo", "-h", "-N", "-p", "debug", "-o", "%T").stdout.split() == [
        "idle",
        "idle",
    ]


def test_a_missing_program_is_named_with_the_command_that_installs_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(slurm_cluster_module, "REQUIRED_COMMANDS", ("slurmd", "hangar-no-such-d"))
    with pytest.raises(slurm_cluster_module.SlurmClusterError) as error:
        slurm_cluster_module.check_prerequisites()
    assert str(error.value) == (
        "the Slurm test cluster needs hangar-no-such-d: run scripts/setup-test-host "
        "(or set HANGAR_SKIP_SLURM=1 to skip the Slurm tests)"
    )
