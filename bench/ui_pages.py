"""Benchmark `hangar ui`: each page with 1,000 runs in the store.

    python bench/ui_pages.py [--runs 1000] [--repeat 5]

Seeds a throwaway HANGAR_HOME with RUNS runs (3 launch events each) through the store's own
API, then times the median of REPEAT GETs per page in-process (FastAPI's TestClient, no
network). The baseline, measured in the same run, is `store.list_runs` itself (reading every
run from SQLite): each page is printed with its time and its ratio to that baseline.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def seed(count: int) -> str:
    from hangar.store import runs as store
    from hangar.store.db import connect

    conn = connect()
    start = time.time() - 10**6
    run_id = ""
    for i in range(count):
        run_id = store.new_run_id(conn)
        store.insert_run(
            conn,
            store.RunRecord(
                id=run_id,
                label=f"r{i}",
                target="slurm" if i % 2 else "local",
                log_path="/nonexistent",
                run_dir="/nonexistent",
                deployment_json=json.dumps({"model": {"id": "m"}}),
                engine="e",
                status="stopped",
                handle_json=json.dumps({"job_id": str(i), "nodes": ["n1"]}),
                started_at=start + i,
                ended_at=start + i + 5,
            ),
        )
        for stage in ("render", "submit", "ready"):
            store.add_event(conn, run_id, stage, start + i, "")
    conn.close()
    return run_id


def median_ms(call: Callable[[], object], repeat: int) -> float:
    call()  # warm
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        call()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    os.environ["HANGAR_HOME"] = tempfile.mkdtemp(prefix="hgui")
    last = seed(args.runs)
    from fastapi.testclient import TestClient

    from hangar.store import runs as store
    from hangar.store.db import connect
    from hangar.web import create_app
    from hangar.web.server import warm_up

    warm_up()
    conn = connect()
    base = median_ms(lambda: store.list_runs(conn), args.repeat)
    print(f"baseline store.list_runs ({args.runs} runs): {base:.1f} ms")
    client = TestClient(create_app(), base_url="http://127.0.0.1")
    for path in ("/runs", f"/runs/{last}", "/engines", "/eval", "/plan", "/workarounds", "/api/runs"):
        status = client.get(path).status_code
        ms = median_ms(lambda p=path: client.get(p), args.repeat)  # type: ignore[misc]
        print(f"{path:18} {status}  {ms:7.1f} ms  ({ms / base:5.1f}x baseline)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
