"""Issue 13 review defects in the deployment file: host addresses, field error fixes."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from hangar.cli.main import main
from hangar.deploy import deployment_from_data, load_deployment
from hangar.deploy.io import _read_fix
from hangar.errors import InputError

_TARGETS = {
    "local": {"local": {}},
    "slurm": {"slurm": {"partition": "gpu"}},
    "container": {"container": {"image": "vllm/vllm-openai:v0.11.0"}},
}


def _with_host(kind: str, host: str) -> dict[str, object]:
    target: dict[str, object] = {"kind": kind, kind: {**_TARGETS[kind][kind], "host": host}}
    return {"model": {"id": "Qwen/Qwen3-8B"}, "target": target}


@pytest.mark.parametrize("kind", sorted(_TARGETS))
@pytest.mark.parametrize(
    "host", ["0.0.0.0 -v /:/x", "0.0.0.0 x", "a;b", "$(id)", "-p", "", "a..b", "x" * 64]
)
def test_a_host_that_is_no_address_is_refused_naming_the_field(kind: str, host: str) -> None:
    with pytest.raises(InputError) as err:
        deployment_from_data(_with_host(kind, host), source="t.toml")
    text = str(err.value)
    assert f"target.{kind}.host" in text
    assert "IP address or hostname" in text


@pytest.mark.parametrize("kind", sorted(_TARGETS))
@pytest.mark.parametrize(
    "host", ["127.0.0.1", "0.0.0.0", "::", "::1", "fe80::1", "node01", "gpu-7.cluster.example."]
)
def test_addresses_and_hostnames_are_accepted(kind: str, host: str) -> None:
    deployment = deployment_from_data(_with_host(kind, host))
    section = getattr(deployment.target, kind)
    assert section.host == host


@pytest.mark.parametrize(
    ("data", "fix"),
    [
        ({"target": {"local": {"port": "x"}}}, "in [target.local]: port = 8000"),
        ({"target": {"kind": "slurm", "slurm": {"time": "x"}}}, 'time = "02:00:00"'),
        (
            {"target": {"kind": "container", "container": {"runtime": "lxc"}}},
            'runtime = "podman" or "docker" or "apptainer"',
        ),
        (
            {"target": {"kind": "container", "container": {"shm_size": "x y"}}},
            'in [target.container]: shm_size = "16g"',
        ),
        ({"serve": {"gpu_memory_utilization": "x"}}, "gpu_memory_utilization = 0.9"),
        ({"serve": {"extra_args": [1]}}, 'in [serve]: extra_args = ["..."]'),
        ({"env": {"A": 1}}, 'in [env]: A = "..."'),
        ({"serve": {"bogus": 1}}, "remove 'bogus' or fix its spelling"),
        ({"target": {"kind": "k8s"}}, '[target] with kind = "local" or "slurm" or "container"'),
    ],
)
def test_a_field_error_shows_the_fields_correct_form(data: dict[str, object], fix: str) -> None:
    with pytest.raises(InputError) as err:
        deployment_from_data({"model": {"id": "Qwen/Qwen3-8B"}, **data}, source="t.toml")
    assert err.value.hint is not None and fix in err.value.hint
    assert "see docs/deploy.md" not in err.value.hint.split("(")[0]


def test_a_missing_table_shows_its_required_key() -> None:
    with pytest.raises(InputError) as err:
        deployment_from_data({}, source="t.toml")
    assert err.value.hint == '[model] with id = "Qwen/Qwen3-8B"'


def test_invalid_toml_has_a_fix(tmp_path: Path) -> None:
    path = tmp_path / "t.toml"
    path.write_text("version = 1\nengine = \n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_deployment(path)
    assert "not valid TOML" in str(err.value) and "line 2" in str(err.value)
    assert err.value.hint and "every key needs a value" in err.value.hint


def test_an_unreadable_file_gets_a_permissions_fix(tmp_path: Path) -> None:
    path = tmp_path / "hangar.toml"
    denied = OSError(errno.EACCES, "Permission denied")
    assert _read_fix(path, denied).startswith(f"chmod u+r {path}")
    assert _read_fix(path, OSError(errno.ENOENT, "No such file")).startswith("hangar init")
    path.mkdir()
    with pytest.raises(InputError) as err:
        load_deployment(path)
    assert (
        err.value.hint
        and "is a directory" in err.value.hint
        and "hangar init" not in (err.value.hint)
    )


def test_preflight_of_an_unknown_gpu_exits_2_as_plan_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "d.toml"
    path.write_text('version = 1\n[model]\nid = "Qwen/Qwen3-8B"\n', encoding="utf-8")
    assert main(["preflight", str(path), "--gpu", "BOGUS"]) == 2
    err = capsys.readouterr().err
    assert "unknown GPU 'BOGUS'" in err and "hangar gpus list" in err and "--gpu" in err
