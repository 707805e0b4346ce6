"""The Slurm renderer with ``[target.container]``: apptainer around each node command, pyxis
on the srun steps. Golden files in ``tests/launch/golden/slurm/<case>/`` (regenerate with
``HANGAR_REGEN_GOLDEN=1``), shellcheck-clean, no secret anywhere, and the argv the one-host
apptainer target's builder makes (one builder).

The execution test runs the rendered node.sh with real bash and the apptainer stand-in of
tests/container/standins (argv checked as apptainer's CLI does, then the command runs in a
bubblewrap sandbox with the binds); the runs on the real Slurm cluster are in
tests/slurm/test_container_in_slurm.py.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from hangar.deploy.schema import Deployment
from hangar.errors import HangarError
from hangar.launch.targets import container_argv as cargv
from hangar.launch.targets import slurm_job as sj
from hangar.launch.targets import slurm_render as sr
from hangar.launch.targets import slurm_wrap as sw
from hangar.launch.targets.base import Rendered

from .test_slurm_render import GOLDEN, REGEN, RUN_DIR, SECRET, context

SIF = "/shared/images/vllm-0.32.sif"


def deployment(
    container: dict[str, Any], slurm: dict[str, Any] | None = None, **fields: Any
) -> Deployment:
    data: dict[str, Any] = {
        "name": "tiny",
        "model": {"id": "org/tiny-llama"},
        "target": {"kind": "slurm", "slurm": slurm or {}, "container": container},
    }
    data.update(fields)
    return Deployment.model_validate(data)


CASES: dict[str, Deployment] = {
    "apptainer_one_node": deployment(
        {"image": SIF}, {"tmp_root": "/local"}, env={"HF_TOKEN": SECRET, "HF_HOME": "/shared/hf"}
    ),
    "apptainer_two_nodes_ray": deployment(
        {"image": SIF, "binds": ["/shared/data:/data:ro"], "nvccli": True},
        {"multinode": "ray", "network_interface": "^lo,docker0"},
        model={"id": "/shared/models/tiny"},
        resources={"gpus": 4, "nodes": 2},
        parallel={"tensor": 4, "pipeline": 2},
    ),
    "apptainer_two_nodes_mp": deployment(
        {"image": SIF, "extra_args": ["--writable-tmpfs"]},
        {"multinode": "mp", "network_interface": "eth0"},
        resources={"gpus": 2, "nodes": 2},
        parallel={"tensor": 4},
        env={"MY_API_KEY": SECRET, "NCCL_DEBUG": "INFO"},
    ),
    "pyxis_one_node": deployment(
        {"runtime": "pyxis", "image": "nvcr.io#nvidia/vllm:25.09-py3"},
        env={"HF_TOKEN": SECRET},
    ),
    "pyxis_two_nodes_mp": deployment(
        {
            "runtime": "pyxis",
            "image": "/shared/images/vllm.sqsh",
            "binds": ["/scratch"],
            "mount_home": True,
        },
        {"multinode": "mp", "tmp_root": "/local"},
        model={"id": "/shared/models/tiny"},
        resources={"gpus": 2, "nodes": 2},
        parallel={"tensor": 4},
    ),
}


@pytest.fixture(scope="module")
def rendered() -> dict[str, Rendered]:
    return {name: sr.render_slurm(d, context()) for name, d in CASES.items()}


def _dump(r: Rendered) -> dict[str, str]:
    out = {name: f.text for name, f in r.files.items() if name != sj.HELPER_FILE}
    meta = {"argv": list(r.argv), "secret_env": list(r.secret_env)}
    out["argv.json"] = json.dumps(meta, indent=2, ensure_ascii=False) + "\n"
    return out


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden(case: str, rendered: dict[str, Rendered]) -> None:
    for name, text in _dump(rendered[case]).items():
        path = GOLDEN / case / name
        if REGEN:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        assert path.read_text(encoding="utf-8") == text, f"{path} differs (HANGAR_REGEN_GOLDEN=1)"


def test_shellcheck_clean(rendered: dict[str, Rendered], tmp_path: Path) -> None:
    shellcheck = shutil.which("shellcheck")
    if not shellcheck:
        pytest.fail("shellcheck is not installed: apt-get install -y shellcheck")
    paths = []
    for case, r in rendered.items():
        for name in (sj.JOB_FILE, sj.NODE_FILE):
            path = tmp_path / f"{case}-{name}"
            path.write_text(r.files[name].text, encoding="utf-8")
            subprocess.run(["bash", "-n", str(path)], check=True)
            paths.append(str(path))
    done = subprocess.run(
        [shellcheck, "-S", "style", "-s", "bash", *paths],
        check=False,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout


def test_no_secret_anywhere(rendered: dict[str, Rendered]) -> None:
    for r in rendered.values():
        assert SECRET not in " ".join(r.argv)
        assert all(SECRET not in f.text for f in r.files.values())
    assert rendered["apptainer_one_node"].secret_env == ("HF_TOKEN",)


def _serve_line(r: Rendered) -> list[str]:
    line = next(ln for ln in r.files[sj.NODE_FILE].text.splitlines() if "SERVE=(" in ln)
    return shlex.split(line.split("SERVE=(", 1)[1].rsplit(")", 1)[0])


def test_apptainer_argv_is_the_one_host_builders(rendered: dict[str, Rendered]) -> None:
    d = CASES["apptainer_one_node"]
    spec = sw.apptainer_spec(d, context(), "single", {})
    words = _serve_line(rendered["apptainer_one_node"])
    # the sentinels are what the job expands: "${NAME}" in the rendered words
    prefix = [re.sub("\x00([A-Z_]+)\x00", r"${\1}", w) for w in cargv.apptainer_prefix(spec)]
    assert words[: len(prefix)] == prefix
    assert words[:4] == ["apptainer", "exec", "--nv", "--cleanenv"]
    binds = [words[i + 1] for i, w in enumerate(words) if w == "--bind"]
    assert binds == [
        "${JOB_TMP}:/tmp",
        f"{RUN_DIR}:{RUN_DIR}:ro",
        "${HANGAR_HF_HUB}:/hangar/hf-hub",
    ]
    env = dict(words[i + 1].split("=", 1) for i, w in enumerate(words) if w == "--env")
    assert env["TMPDIR"] == "/tmp" and env["VLLM_CACHE_ROOT"] == "/tmp/vllm"
    assert env["HF_HUB_CACHE"] == "/hangar/hf-hub" and env["VLLM_HOST_IP"] == "${VLLM_HOST_IP}"
    assert "HF_TOKEN" not in env
    image = words.index(SIF)
    assert words[image + 1 : image + 3] == ["python3", "-m"]


def test_local_model_bound_read_only_and_served_from_the_bind(
    rendered: dict[str, Rendered],
) -> None:
    text = rendered["apptainer_two_nodes_ray"].files[sj.NODE_FILE].text
    assert "--bind /shared/models/tiny:/hangar/model:ro --bind /shared/data:/data:ro" in text
    assert "--nv --nvccli" in text and "HF_HUB_OFFLINE=1" in text
    serve = _serve_line(rendered["apptainer_two_nodes_ray"])
    assert "/hangar/model" in serve and "--served-model-name" in serve
    assert serve[serve.index("--served-model-name") + 1] == "/shared/models/tiny"
    # the comma-valued interface list goes through the env file, RAY_ADDRESS to serve only
    assert "printf '%s=%q\\n' NCCL_SOCKET_IFNAME '^lo,docker0'" in text
    assert "RAY_ADDRESS=${HANGAR_HEAD_IP}:6379" in " ".join(serve)


def test_pyxis_srun_flags(rendered: dict[str, Rendered]) -> None:
    job = rendered["pyxis_two_nodes_mp"].files[sj.JOB_FILE].text
    line = next(ln for ln in job.splitlines() if ln.startswith("SRUN+=("))
    words = shlex.split(line[len("SRUN+=(") : -1])
    assert words[0] == "--container-image=/shared/images/vllm.sqsh"
    assert words[1] == (
        f"--container-mounts={RUN_DIR}:{RUN_DIR}:ro,/local:/local,"
        "/shared/models/tiny:/shared/models/tiny:ro,/scratch:/scratch"
    )
    assert words[2:4] == [f"--container-workdir={RUN_DIR}", "--container-mount-home"]
    assert words[4].startswith("--container-env=HANGAR_HEAD_NODE,") and "HF_TOKEN" in words[4]
    node = rendered["pyxis_two_nodes_mp"].files[sj.NODE_FILE].text
    assert "apptainer" not in node and "CONTAINER_ENV" not in node
    one = rendered["pyxis_one_node"].files[sj.JOB_FILE].text
    assert "--no-container-mount-home" in one and "export HANGAR_HF_HUB=" in one


def test_pyxis_flag_names_come_from_the_data_file() -> None:
    flags = cargv.pyxis_flags()
    assert flags["mounts"] == "--container-mounts" and flags["env"] == "--container-env"


@pytest.mark.parametrize(
    ("container", "needle"),
    [
        ({"runtime": "pyxis", "image": "x", "containall": True}, "apptainer option"),
        ({"runtime": "apptainer"}, "image is required"),
        ({"image": SIF, "binds": ["/a,b:/c"]}, "no ','"),
        ({"image": SIF, "binds": ["relative:/c"]}, "absolute"),
    ],
)
def test_bad_container_settings_refused(container: dict[str, Any], needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        deployment(container)


def test_containall_refused_in_ray_mode() -> None:
    d = deployment({"image": SIF, "containall": True}, {"multinode": "ray"}, resources={"nodes": 2})
    with pytest.raises(HangarError, match="PID namespace"):
        sr.render_slurm(d, context())


def test_hostile_image_and_binds_stay_one_word(tmp_path: Path) -> None:
    hostile = f'/imgs/it\'s $(touch {tmp_path}/m) `id` "q".sif'
    bind = f"/data/$(touch {tmp_path}/m) 'x'"
    for runtime in ("apptainer", "pyxis"):
        d = deployment({"runtime": runtime, "image": hostile, "binds": [bind]})
        r = sr.render_slurm(d, context())
        text = r.files[sj.JOB_FILE].text + r.files[sj.NODE_FILE].text
        if runtime == "apptainer":
            words = _serve_line(r)
            assert hostile in words and f"{bind}:{bind}" in words
        else:
            line = next(ln for ln in text.splitlines() if ln.startswith("SRUN+=("))
            words = shlex.split(line[len("SRUN+=(") : -1])
            assert f"--container-image={hostile}" in words and f",{bind}:{bind}" in words[1]
        for name in (sj.JOB_FILE, sj.NODE_FILE):
            (tmp_path / name).write_text(r.files[name].text)
            subprocess.run(["bash", "-n", str(tmp_path / name)], check=True)
    assert not (tmp_path / "m").exists()


def test_pyxis_tmp_root_must_fit_the_mount_syntax() -> None:
    d = deployment({"runtime": "pyxis", "image": "x"}, {"tmp_root": "/local,odd"})
    with pytest.raises(HangarError, match="':' or ','"):
        sr.render_slurm(d, context())
