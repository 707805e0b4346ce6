"""The logs suite on a real vLLM 0.32.0 CPU log (tiny Llama, hermes + deepseek_v3 parsers).

The log was captured from a real server that then answered the tools suite, so it
also holds runtime errors ("Error in extracting tool call") after start-up.
"""

from __future__ import annotations

from pathlib import Path

from hangar.evaluation.suites.logs import summarize_log, summarize_path

LOG = Path(__file__).parent / "data" / "vllm-0.32.0-cpu-tiny-serve.log"


def test_summary_of_a_real_startup_log() -> None:
    summary = summarize_log(LOG.read_text())
    assert summary["errors"] == 0
    assert summary["runtime_errors"] == 16
    assert summary["kv_cache_tokens"] == "2,097,152"
    assert summary["max_concurrency"] == "2,048 1024.00"
    assert summary["quantization"] == "None"
    assert any(w.startswith("Found ulimit of 20000") for w in summary["warning_samples"])


def test_suite_statuses(tmp_path: Path) -> None:
    suite = summarize_path(LOG)
    assert suite.status == "pass"
    assert {c.name: c.status for c in suite.checks} == {
        "no errors at start-up": "pass",
        "KV cache size reported": "pass",
        "warnings": "pass",
    }
    broken = tmp_path / "broken.log"
    broken.write_text(
        "(APIServer pid=1) ERROR 11-29 16:28:00 [core.py:1] EngineCore failed to start.\n"
    )
    failed = summarize_path(broken)
    assert failed.status == "fail"
    assert failed.checks[0].detail == "1 error line(s): EngineCore failed to start."
    assert (
        summarize_path(tmp_path / "missing.log")
        .checks[0]
        .detail.endswith("No such file or directory")
    )
    assert summarize_path(None).status == "skipped"
