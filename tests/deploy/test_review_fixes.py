"""Issue 13 review defects in the deployment file: host addresses, field error fixes."""

from __future__ import annotations

import pytest

from hangar.deploy import deployment_from_data
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
