"""Container argv from the pure builders: golden files per runtime, hostile values inert.

Golden files: tests/container/golden/<case>.json; regenerate with
``HANGAR_UPDATE_GOLDEN=1 pytest tests/container/test_argv.py`` and review the diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from hangar.deploy.io import deployment_from_data
from hangar.errors import InputError
from hangar.launch.spec import BOOTSTRAP
from hangar.launch.targets.base import RenderContext
from hangar.launch.targets.container import build_spec, state_label
from hangar.launch.targets.container_argv import env_file_text, runtime_argv
from hangar.preflight.engine import EngineFacts
from hangar.workarounds import Applied

GOLDEN = Path(__file__).parent / "golden"
RUN_DIR = Path("/hangar-golden/runs/RUN_ID")
CACHE = Path("/hangar-golden/cache/engines/img")


def _ctx(secrets: tuple[str, ...] = ()) -> RenderContext:
    return RenderContext(
        run_id="RUN_ID",
        run_dir=RUN_DIR,
        engine=EngineFacts(python=Path("python3"), exists=True, vllm_distribution="vllm"),
        engine_cache=CACHE,
        applied=Applied(),
        secret_names=secrets,
    )


def _deployment(container: dict[str, Any], **top: Any) -> Any:
    data: dict[str, Any] = {
        "model": {"id": "/models/tiny", "served_name": "tiny"},
        "engine": "img",
        "target": {
            "kind": "container",
            "container": {"image": "localhost/vllm:0.33.0", **container},
        },
        **top,
    }
    return deployment_from_data(data, source="test")


CASES: dict[str, tuple[dict[str, Any], dict[str, Any], dict[str, str], int]] = {
    # name: (container section, other deployment sections, caller env, uid)
    "podman_local_model": ({}, {}, {}, 0),
    "podman_rootless_hub_gpus": (
        {"gpus": "0,1", "port": 8100},
        {
            "model": {"id": "Qwen/Qwen3-0.6B"},
            "parallel": {"tensor": 2},
            "resources": {"gpu": "H100", "gpus": 2},
            "serve": {"tool_call_parser": "hermes"},
        },
        {"HF_HOME": "/data/hf"},
        1000,
    ),
    "docker_gpus_shm": (
        {
            "runtime": "docker",
            "gpus": "0,1",
            "ipc_host": False,
            "shm_size": "16g",
            "host": "0.0.0.0",
            "extra_args": ["--network", "bridge"],
        },
        {
            "resources": {"gpu": "H100", "gpus": 2},
            "env": {"HF_TOKEN": "s3cret", "NCCL_DEBUG": "INFO"},
        },
        {},
        1000,
    ),
    "apptainer_nv_containall": (
        {
            "runtime": "apptainer",
            "image": "/shared/sif/vllm-0.33.0.sif",
            "nvccli": True,
            "containall": True,
        },
        {"resources": {"gpu": "H100"}},
        {"HF_HUB_CACHE": "/scratch/hub"},
        1000,
    ),
    "apptainer_cleanenv_devices": (
        {"runtime": "apptainer", "image": "/shared/sif/vllm.sif", "gpus": "2,3"},
        {"model": {"id": "org/model"}},
        {},
        1000,
    ),
}


def _render(case: str) -> tuple[str, ...]:
    container, top, env, uid = CASES[case]
    d = _deployment(container, **top)
    secrets = tuple(k for k in d.env if "TOKEN" in k)
    # the hub cache is read from the caller's env; pinned so the per-test $HOME is not in it
    env = {"XDG_CACHE_HOME": "/root/.cache", **env}
    spec = build_spec(d, _ctx(secrets), env=env, uid=uid, gid=uid)
    label = state_label()
    # BOOTSTRAP belongs to launch/spec.py: the golden files pin where it goes, not its text
    argv = ("<BOOTSTRAP>" if a == BOOTSTRAP else a for a in runtime_argv(spec))
    return tuple(a.replace(label, "STATE") for a in argv)


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden(case: str) -> None:
    argv = list(_render(case))
    path = GOLDEN / f"{case}.json"
    if os.environ.get("HANGAR_UPDATE_GOLDEN") == "1":
        path.write_text(json.dumps(argv, indent=1) + "\n")
    assert argv == json.loads(path.read_text()), f"regenerate: HANGAR_UPDATE_GOLDEN=1 ({path})"


def test_no_secret_value_in_any_argv() -> None:
    for case in CASES:
        assert not any("s3cret" in a for a in _render(case)), case


@pytest.mark.parametrize(
    ("case", "wanted", "unwanted"),
    [
        (
            "podman_local_model",
            ["--ipc=host", "/models/tiny:/hangar/model:ro", "HF_HUB_OFFLINE=1"],
            ["--userns=keep-id"],
        ),
        (
            "podman_rootless_hub_gpus",
            [
                "--userns=keep-id",
                "nvidia.com/gpu=0",
                "nvidia.com/gpu=1",
                "/data/hf/hub:/hangar/hf-hub",
                "127.0.0.1:8100:8100",
            ],
            ["HF_HUB_OFFLINE=1"],
        ),
        (
            "docker_gpus_shm",
            [
                "--gpus",
                '"device=0,1"',
                "--shm-size=16g",
                "--user",
                "1000:1000",
                "0.0.0.0:8000:8000",
            ],
            ["--ipc=host"],
        ),
        (
            "apptainer_nv_containall",
            ["exec", "--nv", "--nvccli", "--containall", "--no-home"],
            ["--cleanenv", "-p"],
        ),
        (
            "apptainer_cleanenv_devices",
            ["--nv", "--cleanenv", "--bind"],
            ["--nvccli", "--containall"],
        ),
    ],
)
def test_runtime_specific_flags(case: str, wanted: list[str], unwanted: list[str]) -> None:
    argv = _render(case)
    for flag in wanted:
        assert flag in argv, flag
    for flag in unwanted:
        assert flag not in argv, flag


def test_apptainer_keeps_comma_values_out_of_its_env_map() -> None:
    argv = _render("apptainer_cleanenv_devices")
    assert "CUDA_VISIBLE_DEVICES=2,3" not in argv  # --env is split on ',': via the env file


def test_hostile_values_stay_single_arguments() -> None:
    hostile = "x; rm -rf ~ $(id) `id` 'q' \"d\""
    d = _deployment(
        {"extra_args": [hostile]}, env={"NOTE": hostile}, serve={"extra_args": [hostile]}
    )
    argv = runtime_argv(build_spec(d, _ctx(), env={}, uid=0, gid=0))
    assert argv.count(hostile) == 2 and f"NOTE={hostile}" in argv


def test_mount_path_with_colon_is_refused() -> None:
    d = _deployment({}, model={"id": "/models/a:b"})
    with pytest.raises(InputError, match="':' or ','"):
        build_spec(d, _ctx(), env={}, uid=0, gid=0)


def test_env_file_refuses_newlines_and_quotes_for_apptainer() -> None:
    assert env_file_text("podman", {"HF_TOKEN": "a b'c"}) == "HF_TOKEN=a b'c\n"
    assert env_file_text("apptainer", {"HF_TOKEN": "a b'c"}) == "HF_TOKEN='a b'\"'\"'c'\n"
    with pytest.raises(InputError, match="newline"):
        env_file_text("docker", {"HF_TOKEN": "a\nb"})


def test_schema_refuses_multi_node_and_bad_gpus() -> None:
    with pytest.raises(InputError, match="one container runs on this host"):
        _deployment({}, resources={"nodes": 2})
    with pytest.raises(InputError, match="device list"):
        _deployment({"gpus": "first"})


@pytest.mark.parametrize(
    ("runtime", "flag"), [("podman", "-v"), ("docker", "-v"), ("apptainer", "--bind")]
)
def test_user_binds_follow_the_data_mounts(runtime: str, flag: str) -> None:
    d = _deployment({"runtime": runtime, "binds": ["/shared/data:/data:ro", "/scratch"]})
    argv = list(runtime_argv(build_spec(d, _ctx(), env={}, uid=0, gid=0)))
    mounts = [argv[i + 1] for i, a in enumerate(argv) if a == flag]
    assert mounts[-3:] == [
        "/models/tiny:/hangar/model:ro",
        "/shared/data:/data:ro",
        "/scratch:/scratch",
    ]
