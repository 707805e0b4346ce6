"""`hangar init` asks the container questions, each also a flag: --runtime and --image for
the container target and for containers on the nodes of a Slurm job; what this Hangar does
not implement is refused as a usage error (exit 2) naming the flag."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hangar.deploy.io import load_deployment
from hangar.deploy.schema import ContainerTargetSection, SlurmTargetSection


def init(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hangar", "init", "--no-input", "--model", "org/tiny", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_container_target_runtime_and_image(tmp_path: Path) -> None:
    done = init(tmp_path, "--target", "container", "--runtime", "apptainer", "--image", "/i/v.sif")
    assert done.returncode == 0, done.stderr
    d = load_deployment(tmp_path / "hangar.toml")
    assert isinstance(d.target, ContainerTargetSection)
    assert (d.target.container.runtime, d.target.container.image) == ("apptainer", "/i/v.sif")


@pytest.mark.parametrize("runtime", ["apptainer", "pyxis"])
def test_slurm_container_on_the_nodes(tmp_path: Path, runtime: str) -> None:
    done = init(tmp_path, "--target", "slurm", "--runtime", runtime, "--image", "/shared/v.img")
    assert done.returncode == 0, done.stderr
    d = load_deployment(tmp_path / "hangar.toml")
    assert isinstance(d.target, SlurmTargetSection) and d.target.container is not None
    assert (d.target.container.runtime, d.target.container.image) == (runtime, "/shared/v.img")
    plain = init(tmp_path, "--target", "slurm", "--runtime", "none", "-o", "plain.toml")
    assert plain.returncode == 0, plain.stderr
    assert load_deployment(tmp_path / "plain.toml").target.container is None  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--target", "slurm", "--runtime", "docker"), "not implemented with --target slurm"),
        (
            ("--target", "container", "--runtime", "pyxis"),
            "not implemented with --target container",
        ),
        (("--target", "slurm", "--runtime", "apptainer"), "needs --image"),
        (("--image", "x"), "need --target container or slurm"),
    ],
)
def test_what_is_not_implemented_is_refused(
    tmp_path: Path, args: tuple[str, ...], needle: str
) -> None:
    done = init(tmp_path, *args)
    assert done.returncode == 2 and needle in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "hangar.toml").exists()


def test_the_wizard_asks_runtime_then_image(monkeypatch: pytest.MonkeyPatch) -> None:
    from hangar.cli import init as cli_init

    asked: list[tuple[str, list[str] | None]] = []

    def select(message: str, choices: list[str], default: str | None) -> str:
        asked.append((message, choices))
        return "pyxis"

    def text(message: str, default: str | None = None) -> str:
        asked.append((message, None))
        return "nvcr.io#nvidia/vllm:25.09-py3"

    monkeypatch.setattr(cli_init, "_ask_select", select)
    monkeypatch.setattr(cli_init, "_ask_text", text)
    got = cli_init._ask_container({"target": "slurm", "runtime": None, "image": None})
    assert asked[0] == ("Container on the nodes:", ["none", "apptainer", "pyxis"])
    assert asked[1][0].startswith("Image (enroot URI")
    assert (got["runtime"], got["image"]) == ("pyxis", "nvcr.io#nvidia/vllm:25.09-py3")
    asked.clear()
    given = cli_init._ask_container({"target": "container", "runtime": "docker", "image": "x"})
    assert asked == [] and given["runtime"] == "docker"  # a flag given is never asked
