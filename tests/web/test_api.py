"""The JSON API and the OpenAPI document over real HTTP from a real `hangar ui` process."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from typing import Any

import pytest

from .conftest import SECRET, Ui, start_ui, stop_ui, wait_up


def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def post(url: str, body: bytes = b"", headers: dict[str, str] | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url, data=body, method="POST", headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def get_json(url: str) -> Any:
    status, body = get(url)
    assert status == 200, body
    return json.loads(body)


def test_openapi_lists_every_api_route(ui: Ui) -> None:
    doc = get_json(ui.url + "/openapi.json")
    assert doc["openapi"].startswith("3.")
    assert {"/api/engines", "/api/runs", "/api/runs/{run_id}", "/api/runs/{run_id}/stop",
            "/api/evals", "/api/evals/{eval_id}", "/api/compare", "/api/plan",
            "/api/workarounds"} <= set(doc["paths"])
    assert "post" in doc["paths"]["/api/runs/{run_id}/stop"]
    assert not any(p.startswith("/runs") for p in doc["paths"])  # pages stay out of it


def test_runs_api_shows_targets_stages_logs_and_diagnosis(ui: Ui) -> None:
    s = ui.seeded
    runs = {r["id"]: r for r in get_json(ui.url + "/api/runs")}
    assert {s.ready_run, s.failed_run, s.slurm_run} <= set(runs)
    assert runs[s.ready_run]["status"] == "ready" and runs[s.ready_run]["target"] == "local"
    assert runs[s.ready_run]["where"].startswith("pid ")
    assert runs[s.slurm_run]["where"] == "job 4242 on gpu-a01,gpu-a02"
    ready = get_json(f"{ui.url}/api/runs/{s.ready_run}")
    stages = [row["stage"] for row in ready["stages"]]
    assert stages[:3] == ["render", "record", "submit"] and stages[-1] == "ready"
    assert all(row["took_s"] >= 0 for row in ready["stages"])
    slurm = get_json(f"{ui.url}/api/runs/{s.slurm_run}")
    assert slurm["diagnosis"] is not None and slurm["diagnosis"]["cause"]
    assert slurm["logs"][0]["lines"]
    assert get(f"{ui.url}/api/runs/nosuchrun")[0] == 404


def test_eval_api_and_compare_refusal(ui: Ui) -> None:
    a, b, other = ui.seeded.evals
    assert [e["id"] for e in get_json(ui.url + "/api/evals")][:3] == [other, b, a]
    result = get_json(f"{ui.url}/api/evals/{a}")
    assert [p["concurrency"] for p in result["suites"]["perf"]["points"]] == [1, 2, 4]
    same = get_json(f"{ui.url}/api/compare?a={a}&b={b}")
    assert same["refused"] is None and len(same["points"]) == 3
    refused = get_json(f"{ui.url}/api/compare?a={a}&b={other}")
    assert "prompt.output_len: 4 vs 6" in refused["refused"]
    forced = get_json(f"{ui.url}/api/compare?a={a}&b={other}&force=true")
    assert forced["refused"] is None
    assert [d["field"] for d in forced["conditions_differ"]] == ["prompt.output_len"]


def test_plan_api_is_the_plan_json_of_the_cli(ui: Ui) -> None:
    args = ["Qwen/Qwen3-8B", "--gpu", "H100", "--gpus", "2"]
    cli = subprocess.run([sys.executable, "-m", "hangar", "plan", *args, "--json"],
                         capture_output=True, text=True, check=True)
    api = get_json(ui.url + "/api/plan?model=Qwen/Qwen3-8B&gpu=H100&gpus=2")
    assert api == json.loads(cli.stdout)
    status, body = get(ui.url + "/api/plan?model=Qwen/Qwen3-8B&gpus=two")
    assert status == 400 and "gpus" in json.loads(body)["error"]


def test_engines_and_workarounds_api(ui: Ui) -> None:
    engines = get_json(ui.url + "/api/engines")
    fake = next(e for e in engines if e["name"] == "fake-0.33")
    assert fake["kind"] == "external" and fake["inspection"]["vllm_version"] == "0.33.0"
    registry = get_json(ui.url + "/api/workarounds")
    assert registry["workarounds"] and all(w["upstream"] for w in registry["workarounds"])
    in_range = {w["id"] for w in fake["workarounds"]}
    assert set(registry["engines"]["fake-0.33"]) == in_range
    consumer = get_json(ui.url + "/api/workarounds/applies?engine=fake-0.33&gpu=rtx4090&gpus=2")
    assert consumer["gpu"] == "RTX-4090" and "consumer-pcie-tp-p2p" in consumer["applies"]
    single = get_json(ui.url + "/api/workarounds/applies?engine=fake-0.33&gpu=rtx4090&gpus=1")
    assert "consumer-pcie-tp-p2p" not in single["applies"]  # TP 1: no P2P between GPUs


def test_secrets_are_never_served(ui: Ui) -> None:
    s = ui.seeded
    pages = ["/runs", f"/runs/{s.ready_run}", f"/runs/{s.slurm_run}", "/engines", "/eval",
             f"/api/runs/{s.ready_run}", f"/api/runs/{s.slurm_run}", "/api/runs", "/api/engines"]
    for path in pages:
        status, body = get(ui.url + path)
        assert status == 200, path
        assert SECRET not in body, path
    slurm = get_json(f"{ui.url}/api/runs/{s.slurm_run}")
    assert slurm["argv"][-2:] == ["--api-key", "***"]
    assert any("HF_TOKEN=***" in line for line in slurm["logs"][0]["lines"])


def test_state_changes_need_a_post_with_the_csrf_token(ui: Ui) -> None:
    run = ui.seeded.slurm_run
    assert get(f"{ui.url}/api/runs/{run}/stop")[0] == 405  # never a GET
    status, body = post(f"{ui.url}/api/runs/{run}/stop")
    assert status == 403 and "CSRF" in body
    status, _ = post(f"{ui.url}/api/runs/{run}/stop", headers={"X-CSRF-Token": "guess"})
    assert status == 403
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    status, _ = post(f"{ui.url}/runs/{run}/stop", b"csrf_token=guess", form)
    assert status == 403
    _, page = get(f"{ui.url}/runs/{run}")
    token = page.split('name="csrf-token" content="')[1].split('"')[0]
    cross = {"X-CSRF-Token": token, "Origin": "http://evil.example"}
    assert post(f"{ui.url}/api/runs/{run}/stop", headers=cross)[0] == 403
    status, body = post(f"{ui.url}/api/runs/{run}/stop", headers={"X-CSRF-Token": token})
    assert status == 409, body  # the token passes; the run has ended, so nothing to stop


def test_a_foreign_host_header_is_refused_on_loopback(ui: Ui) -> None:
    assert get(ui.url + "/api/runs", {"Host": "attacker.example"})[0] == 421


def test_non_loopback_bind_without_token_is_refused(ui: Ui) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "hangar", "ui", "--host", "0.0.0.0", "--port", "1"],
        check=False, capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 2
    assert "--host 0.0.0.0" in done.stderr and "--token" in done.stderr
    assert "Traceback" not in done.stderr


def test_token_is_required_on_every_request(ui: Ui) -> None:
    token = "t0ken-for-the-test-1234"
    proc, port = start_ui(ui.seeded.home, "--token", token)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_up(proc, url + "/api/runs")
        assert get(url + "/api/runs")[0] == 401
        assert get(url + "/static/app.css")[0] == 401
        assert get(url + "/api/runs", {"Authorization": "Bearer wrong-token"})[0] == 401
        assert get(url + "/api/runs", {"Authorization": f"Bearer {token}"})[0] == 200
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
        with opener.open(f"{url}/runs?token={token}", timeout=30) as response:
            assert response.status == 200 and response.url == url + "/runs"
            assert token not in response.read().decode()
        with opener.open(url + "/api/runs", timeout=30) as response:  # the cookie carries it
            assert response.status == 200
    finally:
        stop_ui(proc)


@pytest.mark.parametrize("path", ["/runs", "/engines", "/eval", "/plan", "/workarounds"])
def test_pages_answer(ui: Ui, path: str) -> None:
    status, body = get(ui.url + path)
    assert status == 200 and "<nav" in body


def test_a_taken_port_is_one_clear_line(ui: Ui) -> None:
    port = ui.url.rsplit(":", 1)[1]
    done = subprocess.run(
        [sys.executable, "-m", "hangar", "ui", "--port", port],
        check=False, capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr and "Traceback" not in done.stderr
