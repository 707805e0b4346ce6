"""The README flow on real podman, through the CLI: engines add --image -> engines inspect ->
render -> launch -> stop --purge -> clean."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from hangar.cli.main import main

from .conftest import podman
from .test_podman import free_port


@pytest.fixture
def image(fake_image: str) -> Iterator[str]:
    """A tag of the fake image that `stop --purge` may remove (removed here if it did not)."""
    ref = f"{fake_image}-cli"
    podman("tag", fake_image, ref)
    yield ref
    podman("rmi", "-f", ref, check=False)


def test_readme_flow(image: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = tmp_path / "tiny"
    model.mkdir()
    (model / "config.json").write_text('{"architectures": ["LlamaForCausalLM"]}')
    assert main(["engines", "add", "fake", "--image", image]) == 0
    assert "added engine fake (image, vLLM" in capsys.readouterr().out
    assert main(["engines", "inspect", "fake", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert found["vllm_version"] == "0.33.0" and found["site_packages"] == [
        "/opt/engine/site-packages"
    ]
    file = tmp_path / "hangar.toml"
    file.write_text(
        f'engine = "fake"\n[model]\nid = "{model}"\nserved_name = "tiny"\n'
        '[env]\nHF_TOKEN = "hf_cli_secret_99"\n'
        '[target]\nkind = "container"\n[target.container]\n'
        f'port = {free_port()}\nextra_args = ["-v", "/usr:/usr:ro"]\nstop_grace_s = 3\n'
    )
    assert main(["render", str(file)]) == 0
    rendered = capsys.readouterr().out
    assert (
        rendered.startswith("podman run --name hangar-RUN_ID") and "hf_cli_secret" not in rendered
    )
    assert main(["launch", str(file)]) == 0
    out = capsys.readouterr()
    assert "ready at http://127.0.0.1:" in out.out and "hf_cli_secret" not in out.out + out.err
    assert main(["stop", "--purge"]) == 0
    stopped = capsys.readouterr().out
    assert "removed" in stopped and f"image {image} removed" in stopped
    assert podman("image", "exists", image, check=False).returncode == 1
    assert main(["clean"]) == 0
    assert "run dir" in capsys.readouterr().out
