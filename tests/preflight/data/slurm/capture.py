"""Re-capture the Slurm outputs in this folder from a real cluster (run as root, by hand).

    cd /work/main && .venv/bin/python tests/preflight/data/slurm/capture.py

Starts the test cluster of tests/support/slurm_cluster.py (Debian's slurm-wlm 22.05,
two slurmd in network namespaces, fake GPUs) three times -- untyped GRES ``gpu:4``,
typed ``gpu:h100:4``, and typed with ``Cores=0-1`` in gres.conf so Slurm prints the
socket suffix ``(S:0)`` -- and saves what ``probe_slurm`` runs, byte for byte, plus
the environment of a batch step and of an srun step (SLURM_* and CUDA_VISIBLE_DEVICES).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))  # tests/, for support.slurm_cluster

from support.slurm_cluster import SlurmCluster

SINFO_FORMAT = "%N|%c|%m|%G|%T"
ENV_SCRIPT = """#!/bin/bash
env | grep -E '^(SLURM_|CUDA_VISIBLE_DEVICES)' | sort > {out}/batch.env
srun -N1 -n1 -w "$(scontrol show hostnames "$SLURM_JOB_NODELIST" | tail -n1)" \\
  bash -c "env | grep -E '^(SLURM_|CUDA_VISIBLE_DEVICES)' | sort" > {out}/step.env
"""


class SocketBoundCluster(SlurmCluster):
    def _gres_conf(self) -> str:  # Cores= binds the GPUs to socket 0: sinfo shows (S:0)
        return super()._gres_conf().rstrip("\n") + " Cores=0-1\n"


def capture(cluster: SlurmCluster, name: str, sbatch_args: list[str]) -> None:
    out = HERE / name
    out.mkdir(exist_ok=True)
    commands = {
        "version.txt": ["scontrol", "--version"],
        "partitions.txt": ["scontrol", "show", "partition", "--oneliner"],
        "partition_short.txt": ["scontrol", "show", "partition", "short", "--oneliner"],
        "sinfo_debug.txt": ["sinfo", "-h", "-N", "-p", "debug", "-o", SINFO_FORMAT],
        "nodes.txt": ["scontrol", "show", "node", "--oneliner"],
        "config.txt": ["scontrol", "show", "config"],
        "partition_missing.txt": ["scontrol", "show", "partition", "nosuch", "--oneliner"],
    }
    for file, argv in commands.items():
        done = cluster.slurm(*argv)
        (out / file).write_text(done.stdout + done.stderr, encoding="utf-8")
    job_dir = cluster.job_dir / name
    job_dir.mkdir(mode=0o777, exist_ok=True)
    job = cluster.submit(ENV_SCRIPT.format(out=job_dir), *sbatch_args, name="env")
    cluster.wait_job_gone(job, timeout=60)
    for file in ("batch.env", "step.env"):
        (out / file).write_text((job_dir / file).read_text(encoding="utf-8"), encoding="utf-8")
    rejected = cluster.slurm("sbatch", "--parsable", "-N1", "--gpus-per-node=9", "--wrap=true")
    (out / "sbatch_too_many_gpus.txt").write_text(
        rejected.stdout + rejected.stderr, encoding="utf-8"
    )


def main() -> None:
    runs = [
        (SlurmCluster, None, "untyped", ["-N2", "--ntasks-per-node=1", "--gpus-per-node=2"]),
        (SlurmCluster, "h100", "typed", ["-N2", "--ntasks-per-node=1", "--gres=gpu:h100:2"]),
        (
            SocketBoundCluster,
            "h100",
            "typed_sockets",
            ["-N2", "--ntasks-per-node=1", "--gpus-per-node=h100:4"],
        ),
    ]
    for cls, gres_type, name, args in runs:
        with cls.start(gres_type=gres_type) as cluster:
            time.sleep(0)  # the cluster waits for idle nodes and sacct itself
            capture(cluster, name, args)
            print(f"{name}: captured from {cluster.prefix}")


if __name__ == "__main__":
    main()
