"""Issue 13 review, defects 2 and 3: malformed options are usage errors (exit 2) in one
line naming the option and its form; a --llm URL never shows its credentials."""

from __future__ import annotations

from pathlib import Path

import pytest

from hangar.cli.main import main


@pytest.mark.parametrize("value", ["ttft:abc", "ttft:-5", "ttft:nan", "bogus:5"])
def test_eval_goodput_names_the_option_and_its_form(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["eval", "http://127.0.0.1:1", "--goodput", value]) == 2
    err = capsys.readouterr().err
    assert "--goodput takes KEY:MS" in err and "could not convert" not in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("target", ["ftp://x", "file:///etc/passwd", "gopher://h:70"])
def test_eval_non_http_url_is_a_usage_error(
    target: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["eval", target, "--suite", "smoke"]) == 2
    assert "only http:// and https://" in capsys.readouterr().err


@pytest.fixture
def log(tmp_path: Path) -> Path:
    path = tmp_path / "server.log"
    path.write_text("SomeWeirdError: the frobnicator is unhappy\n")
    return path


@pytest.mark.parametrize("url", ["notaurl", "file:///etc/hostname", "ftp://h/v1", "http://"])
def test_doctor_llm_takes_only_http_urls(
    url: str, log: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["doctor", str(log), "--llm", url, "--model", "x"]) == 2
    assert "--llm takes an http:// or https:// URL" in capsys.readouterr().err


def test_doctor_llm_credentials_never_shown(log: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # port 1: nothing listens, so the request fails and its message names the endpoint
    assert main(["doctor", str(log), "--llm", "http://u:s3cretpw@127.0.0.1:1/v1"]) == 1
    err = capsys.readouterr().err
    assert "127.0.0.1:1" in err and "s3cretpw" not in err and "u:s3" not in err
    assert main(["doctor", str(log), "--llm", "ftp://u:s3cretpw@h/v1"]) == 2
    assert "s3cretpw" not in capsys.readouterr().err


def test_llm_endpoint_sends_credentials_as_basic_auth() -> None:
    from hangar.diagnose.llm import endpoint

    target = endpoint("https://me:p%40ss@example.org/v1/")
    assert target.url == "https://example.org/v1/chat/completions"
    assert target.authorization == "Basic bWU6cEBzcw=="  # base64("me:p@ss")
    assert endpoint("http://h:8000").url == "http://h:8000/v1/chat/completions"


@pytest.mark.parametrize("timeout", ["0", "-1"])
def test_doctor_llm_timeout_must_be_positive(
    timeout: str, log: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["doctor", str(log), "--llm", "http://127.0.0.1:1", "--llm-timeout", timeout]) == 2
    assert "--llm-timeout" in capsys.readouterr().err


def test_doctor_model_needs_llm(log: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", str(log), "--model", "x"]) == 2
    assert "--model needs --llm" in capsys.readouterr().err
