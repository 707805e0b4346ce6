"""Hangs and silent stops: the last stage a log reached, how long it has been silent, and
no cause at all once the log shows the server got past that stage."""

from __future__ import annotations

import os
import time
from pathlib import Path

from hangar.diagnose import diagnose_paths, diagnose_text

NCCL_SETUP = [
    "INFO 11-01 23:16:20 [parallel_state.py:1] vLLM is using nccl==2.21.5",
    "host:23458:23665 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>",
    "host:23458:23665 [0] NCCL INFO Channel 00/02 : 0[0] -> 1[1] via P2P/CUMEM",
    "host:23458:23665 [0] NCCL INFO Channel 01/02 : 0[0] -> 1[1] via P2P/CUMEM",
]


def _log(tmp_path: Path, lines: list[str], age_s: float) -> Path:
    path = tmp_path / "vllm.log"
    path.write_text("\n".join(lines) + "\n")
    stamp = time.time() - age_s
    os.utime(path, (stamp, stamp))
    return path


def test_log_stopped_in_nccl_setup_names_the_stage_and_the_silence(tmp_path: Path) -> None:
    top = diagnose_paths([_log(tmp_path, NCCL_SETUP, age_s=3 * 3600)]).causes[0]
    assert top.cause == "nccl_p2p"
    assert "ends at this stage (line 4)" in top.explanation
    assert "last written 3.0 h ago" in top.explanation
    assert "NCCL_P2P_DISABLE=1" in top.fix


def test_fresh_log_at_a_stage_marker_is_trusted_less(tmp_path: Path) -> None:
    old = diagnose_paths([_log(tmp_path, NCCL_SETUP, age_s=3600)]).causes[0]
    fresh = diagnose_paths([_log(tmp_path, NCCL_SETUP, age_s=5)]).causes[0]
    assert fresh.cause == old.cause == "nccl_p2p"
    assert fresh.confidence < old.confidence
    assert "may still be progressing" in fresh.explanation


def test_stdin_stall_names_the_stage_without_a_time() -> None:
    top = diagnose_text("\n".join(NCCL_SETUP)).causes[0]
    assert top.cause == "nccl_p2p" and "last written" not in top.explanation


def test_stage_marker_followed_by_engine_ready_is_no_hang(tmp_path: Path) -> None:
    # V0 prints its heartbeat while the engine loads; once `init engine ... took` and the API
    # server's start are logged, the heartbeat lines are no sign of a hang.
    lines = [
        "DEBUG 04-06 00:55:29 [client.py:193] Waiting for output from MQLLMEngine.",
        (
            "INFO 04-06 00:55:21 [llm_engine.py:447] init engine (profile, create kv cache, "
            "warmup model) took 71.33 seconds"
        ),
        "DEBUG 04-06 00:55:39 [client.py:193] Waiting for output from MQLLMEngine.",
    ]
    assert diagnose_paths([_log(tmp_path, lines, age_s=3600)]).causes == ()


def test_heartbeat_at_the_end_of_a_log_is_a_hang(tmp_path: Path) -> None:
    lines = ["DEBUG 04-06 00:55:29 [client.py:193] Waiting for output from MQLLMEngine."] * 3
    top = diagnose_paths([_log(tmp_path, lines, age_s=3600)]).causes[0]
    assert top.cause == "nccl_p2p" and top.confidence < 0.5


def test_first_batch_stuck_at_zero_after_nccl_init(tmp_path: Path) -> None:
    lines = [
        "host:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 47000 - Init COMPLETE",
        "INFO 11-01 23:16:33 distributed_gpu_executor.py:56] # GPU blocks: 185231",
        "Processed prompts:   0%|          | 0/16 [00:00<?, ?it/s]",
    ]
    top = diagnose_paths([_log(tmp_path, lines, age_s=600)]).causes[0]
    assert top.cause == "nccl_p2p"
    done = lines + ["Processed prompts: 100%|##########| 16/16 [00:02<00:00, 7.1it/s]"]
    assert diagnose_paths([_log(tmp_path, done, age_s=600)]).causes == ()
