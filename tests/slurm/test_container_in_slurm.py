"""`hangar launch/stop` of a deployment with ``[target.container] runtime = "apptainer"`` on
the real 2-node Slurm cluster (real slurmctld/slurmd, sbatch, srun steps, scancel).

What is stand-in, for apptainer: ``apptainer`` (it cannot be installed here) is
tests/container/standins/apptainer on PATH, which reaches the job through sbatch
--export=ALL. It checks the argv the way apptainer's CLI does (verbs, --nv, --bind
src:dst[:ro] with existing sources, --env key=value items, --env-file, --cleanenv), runs
the command in a bubblewrap sandbox with those binds and the cleaned environment, and
forwards signals to it like apptainer's starter. The image is a sandbox directory (a
layout apptainer runs as is) holding the fake vLLM (tests/launch/fake_vllm.py), run by the
host's Python through the deployment's own ``--bind /usr:/usr:ro``. Everything else is
real: the rendered job, node.sh, its temp dir and env file, Slurm's signals and cleanup.

For pyxis: the plugin (a SPANK plugin of srun/slurmstepd, with enroot) cannot be loaded
here, so tests/container/standins/srun sits before the real srun on PATH: it takes and
checks pyxis's --container-* options as pyxis's args.c does, then runs the real srun with
each task wrapped in a bubblewrap "container" of the image directory with the mounts, the
workdir and pyxis's environment rules (image ENV wins unless named in --container-env).
"""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

import pytest
from launch.conftest import make_fake_engine
from support.slurm_cluster import NODE_LOCAL_TMP, SlurmCluster

from hangar.deploy.io import deployment_from_data, write_deployment

from .test_hangar_launch import hangar, job_of, run_id_of, run_record, wait_gone

STANDINS = Path(__file__).resolve().parents[1] / "container" / "standins"
SECRET = "hf_container_in_slurm_s3cret"


@pytest.fixture(scope="module")
def fake_engine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_fake_engine(tmp_path_factory.mktemp("fake-engine") / "venv")


def sandbox_image(root: Path, engine: Path) -> Path:
    """An apptainer sandbox: merged-/usr layout and the fake engine's vLLM package."""
    for d in ("usr", "tmp", "proc", "dev", "etc", "hangar"):
        (root / d).mkdir(parents=True)
    for d in ("bin", "lib", "lib64", "sbin"):
        (root / d).symlink_to(f"usr/{d}")
    site = _site(engine)
    env = root / ".singularity.d" / "env"
    env.mkdir(parents=True)
    (env / "90-environment.sh").write_text(f"export PYTHONPATH={site}\n")
    return root


def _deployment(
    path: Path, engine: Path, model: Path, port: int, container: dict[str, object]
) -> Path:
    data = {
        "name": "in-container",
        "model": {"id": str(model), "served_name": "tiny"},
        "engine": str(engine),
        "env": {"FAKE_SERVICE_TOKEN": SECRET, "FAKE_LIST": "a,b"},
        "target": {
            "kind": "slurm",
            "slurm": {
                "port": port,
                "stop_grace_s": 3,
                "ready_timeout_s": 120,
                "tmp_root": NODE_LOCAL_TMP,
            },
            "container": container,
        },
    }
    write_deployment(deployment_from_data(data), path)
    return path


def _model(tmp_path: Path) -> Path:
    model = tmp_path / "tiny model"
    model.mkdir()
    (model / "config.json").write_text('{"architectures": ["LlamaForCausalLM"]}')
    return model


def _site(engine: Path) -> Path:
    return next((engine.parent.parent / "lib").glob("python3*/site-packages"))


def test_pyxis_in_a_slurm_job_serves_and_stop_leaves_nothing(
    slurm_cluster: SlurmCluster, fake_engine: Path, tmp_path: Path
) -> None:
    model, site = _model(tmp_path), _site(fake_engine)
    image = sandbox_image(tmp_path / "vllm.rootfs", fake_engine)
    # an image ENV that would win over the task's value, were it not in --container-env
    # (the node would then bind vLLM to "image-value" and never become ready)
    (image / "etc" / "environment").write_text(f"PYTHONPATH={site}\nHANGAR_HEAD_IP=image-value\n")
    path = _deployment(
        tmp_path / "hangar.toml",
        fake_engine,
        model,
        31121,
        {"runtime": "pyxis", "image": str(image), "binds": ["/usr:/usr:ro", f"{site}:{site}:ro"]},
    )
    log = tmp_path / "pyxis.jsonl"
    env = {
        "PATH": f"{STANDINS}{os.pathsep}{slurm_cluster.env['PATH']}",
        "PYXIS_STANDIN_LOG": str(log),
    }
    launched = hangar(slurm_cluster, "launch", str(path), env=env, timeout=180)
    assert launched.returncode == 0, launched.stdout + launched.stderr
    run_id = run_id_of(launched.stdout)
    job = job_of(run_id)
    try:
        node = slurm_cluster.nodes[0].name
        job_tmp = slurm_cluster.scratch / "local" / node / f"hg{job}.0"
        seen = json.loads((job_tmp / "fake-env.json").read_text())
        # node.sh itself ran in the image: same paths (identity binds), the model by its path
        assert seen["tmpdir"] == str(Path(NODE_LOCAL_TMP) / job_tmp.name)
        assert seen["argv"][1] == str(model) and seen["marker"] == run_id
        assert seen["env"]["FAKE_SERVICE_TOKEN"] == SECRET  # sbatch --export=ALL, then pyxis
        (logged,) = [json.loads(line) for line in log.read_text().splitlines()]
        assert logged["pyxis"]["image"] == str(image) and logged["pyxis"]["mount_home"] is False
        assert f"{model}:{model}:ro" in logged["pyxis"]["mounts"]
        assert logged["command"][:1] == ["bash"]
        assert SECRET not in log.read_text()
    finally:
        stopped = hangar(slurm_cluster, "stop", run_id)
    assert stopped.returncode == 0, stopped.stderr
    wait_gone(slurm_cluster, job)
    assert run_record(run_id)["status"] == "stopped"


def test_apptainer_in_a_slurm_job_serves_and_stop_leaves_nothing(
    slurm_cluster: SlurmCluster, fake_engine: Path, tmp_path: Path
) -> None:
    model, site = _model(tmp_path), _site(fake_engine)
    image = sandbox_image(tmp_path / "vllm.sandbox", fake_engine)
    path = _deployment(
        tmp_path / "hangar.toml",
        fake_engine,
        model,
        31120,
        {
            "runtime": "apptainer",
            "image": str(image),
            "binds": ["/usr:/usr:ro", f"{site}:{site}:ro"],
        },
    )
    log = tmp_path / "apptainer-argv.jsonl"
    env = {
        "PATH": f"{STANDINS}{os.pathsep}{slurm_cluster.env['PATH']}",
        "APPTAINER_STANDIN_LOG": str(log),
    }
    started = time.monotonic()
    launched = hangar(slurm_cluster, "launch", str(path), env=env, timeout=180)
    assert launched.returncode == 0, launched.stdout + launched.stderr
    run_id = run_id_of(launched.stdout)
    job = job_of(run_id)
    try:
        run_dir = Path(run_record(run_id)["run_dir"])
        node = slurm_cluster.nodes[0].name
        job_tmp = slurm_cluster.scratch / "local" / node / f"hg{job}.0"
        seen = json.loads((job_tmp / "fake-env.json").read_text())
        # vLLM ran inside: /tmp is the job's private dir, the model came through its bind
        assert seen["tmpdir"] == "/tmp" and seen["marker"] == run_id
        assert seen["argv"][1] == "/hangar/model"
        assert seen["env"]["VLLM_CACHE_ROOT"] == "/tmp/vllm"
        # the secret and the ','-value reached it through the 0600 file, never argv
        assert seen["env"]["FAKE_SERVICE_TOKEN"] == SECRET
        assert seen["env"]["FAKE_LIST"] == "a,b"
        env_file = job_tmp / "container.env"
        assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
        (logged,) = [json.loads(line) for line in log.read_text().splitlines()]
        argv = logged["argv"]
        assert argv[:4] == ["exec", "--nv", "--cleanenv", "--no-home"]
        assert f"{model}:/hangar/model:ro" in argv and f"{job_tmp.name}:/tmp" in " ".join(argv)
        for text in [json.dumps(argv), *(p.read_text() for p in run_dir.iterdir() if p.is_file())]:
            assert SECRET not in text
    finally:
        stopped = hangar(slurm_cluster, "stop", run_id)
    assert stopped.returncode == 0, stopped.stderr
    wait_gone(slurm_cluster, job)  # no process of the job, no temp dir on any node
    assert run_record(run_id)["status"] == "stopped"
    assert time.monotonic() - started < 90
