"""The three commands, driven through click as `hangar` drives them (standalone_mode=False)."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from fake_server import FakeServer, free_port

from hangar.cli.compare import compare
from hangar.cli.eval import eval as eval_cmd
from hangar.cli.report import report
from hangar.errors import UsageError
from hangar.store.evals import list_evals

PERF_ARGS = [
    "--concurrency",
    "1,2",
    "--num-requests",
    "4",
    "--input-len",
    "8",
    "--output-len",
    "4",
    "--warmup",
    "0",
]


def invoke(command: click.Command, args: list[str]) -> int:
    return int(command.main(args=args, prog_name="hangar", standalone_mode=False) or 0)


def test_eval_json_stores_the_result(fake: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    code = invoke(eval_cmd, [fake.url, "--suite", "smoke,perf", "--json", *PERF_ARGS])
    data = json.loads(capsys.readouterr().out)
    assert code == 0
    assert data["suites"]["smoke"]["status"] == "pass"
    assert [p["concurrency"] for p in data["suites"]["perf"]["points"]] == [1, 2]
    assert [row["id"] for row in list_evals()] == [data["id"]]


def test_eval_exit_code_is_1_when_a_suite_fails(capsys: pytest.CaptureFixture[str]) -> None:
    code = invoke(eval_cmd, [f"http://127.0.0.1:{free_port()}", "--json", "--no-store"])
    assert code == 1
    assert json.loads(capsys.readouterr().out)["suites"]["smoke"]["status"] == "fail"
    assert list_evals() == []


def test_eval_compare_and_report(
    fake: FakeServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    invoke(eval_cmd, [fake.url, "--suite", "perf", "--json", *PERF_ARGS])
    first = json.loads(capsys.readouterr().out)["id"]
    invoke(eval_cmd, [fake.url, "--suite", "perf", "--json", "--compare", first, *PERF_ARGS])
    second = json.loads(capsys.readouterr().out)
    assert second["comparison"]["a"] == first and len(second["comparison"]["points"]) == 2
    assert invoke(compare, [first, second["id"]]) == 0
    assert "concurrency 2" in capsys.readouterr().out
    out = tmp_path / "r.html"
    assert invoke(report, [first, second["id"], "-o", str(out)]) == 0
    assert out.read_text().count("<svg") >= 6


def test_compare_refuses_then_forces(fake: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    invoke(eval_cmd, [fake.url, "--suite", "perf", "--json", *PERF_ARGS])
    invoke(
        eval_cmd,
        [
            fake.url,
            "--suite",
            "perf",
            "--json",
            *PERF_ARGS[:-4],
            "--output-len",
            "5",
            "--warmup",
            "0",
        ],
    )
    ids = [row["id"] for row in list_evals()][::-1]
    capsys.readouterr()
    from hangar.evaluation.compare import ConditionsDiffer

    with pytest.raises(ConditionsDiffer):
        invoke(compare, ids)
    assert invoke(compare, [*ids, "--force"]) == 0
    assert "WARNING: conditions differ" in capsys.readouterr().out


def test_api_key_is_sent_but_never_stored(
    fake: FakeServer, capsys: pytest.CaptureFixture[str], hangar_home: Path
) -> None:
    invoke(eval_cmd, [fake.url, "--suite", "smoke", "--json", "--api-key", "sk-very-secret"])
    assert "sk-very-secret" not in capsys.readouterr().out
    assert fake.behaviour.authorization == {"Bearer sk-very-secret"}
    assert all(
        b"sk-very-secret" not in p.read_bytes() for p in hangar_home.rglob("*") if p.is_file()
    )


@pytest.mark.parametrize(
    "args", [["--suite", "smoke,nope"], ["--concurrency", "0"], ["--goodput", "x:1"]]
)
def test_bad_options_are_usage_errors(args: list[str]) -> None:
    with pytest.raises(UsageError):
        invoke(eval_cmd, ["http://127.0.0.1:9", *args])
