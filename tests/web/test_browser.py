"""Every page in headless Chromium (Debian's, driven by Playwright; no browser download):
no console errors, charts drawn with every point inside the plotting area, keyboard
navigation and form labels, and the stop button stopping a real run."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import Seeded, Ui, screenshot_dir

sync_api = pytest.importorskip("playwright.sync_api")

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]

# For each chart: is every data point (marker or bar) inside the plotting area's box?
GEOMETRY_JS = """
() => [...document.querySelectorAll('figure.chart')].map(fig => {
  const area = fig.querySelector('[id$="-plot-area"]').getBoundingClientRect();
  const marks = [...fig.querySelectorAll('[id*="-series-"] use, [id*="-series-"] path')]
    .filter(el => el.closest('[id*="-series-"]') && !el.closest('defs'));
  const inside = marks.every(el => {
    const b = el.getBoundingClientRect();
    return b.left >= area.left - 3 && b.right <= area.right + 3
        && b.top >= area.top - 3 && b.bottom <= area.bottom + 3;
  });
  return {chart: fig.dataset.chart, marks: marks.length, inside};
})
"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.skip("needs Debian's chromium (scripts/setup-test-host installs it)")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return screenshot_dir(tmp_path_factory)


class Page:
    """A page with its console errors collected."""

    def __init__(self, browser: Any, base: str) -> None:
        self.page = browser.new_page(viewport={"width": 1280, "height": 900})
        self.base = base
        self.errors: list[str] = []
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

    def open(self, path: str) -> Any:
        response = self.page.goto(self.base + path, wait_until="load")
        assert response is not None and response.status == 200, path
        return self.page


@pytest.fixture
def tab(browser: Any, ui: Ui) -> Iterator[Page]:
    page = Page(browser, ui.url)
    yield page
    page.page.close()
    assert page.errors == [], page.errors


def charts_inside(page: Any) -> list[dict[str, Any]]:
    charts: list[dict[str, Any]] = page.evaluate(GEOMETRY_JS)
    assert charts, "no chart rendered"
    assert all(c["marks"] > 0 and c["inside"] for c in charts), charts
    return charts


@pytest.mark.parametrize("path", ["/runs", "/engines", "/eval", "/plan", "/workarounds"])
def test_each_page_loads_without_console_errors(tab: Page, shots: Path, path: str) -> None:
    page = tab.open(path)
    assert page.locator("nav a[aria-current=page]").count() == 1
    page.screenshot(path=str(shots / f"{path.strip('/')}.png"), full_page=True)


def test_eval_charts_keep_every_point_inside_the_axes(tab: Page, ui: Ui, shots: Path) -> None:
    page = tab.open(f"/eval/{ui.seeded.evals[0]}")
    charts = charts_inside(page)
    names = {c["chart"] for c in charts}
    assert {"output-throughput", "request-throughput", "ttft", "tpot", "itl"} <= names
    assert any(n.startswith("e2e-latency-cdf") for n in names)
    page.screenshot(path=str(shots / "eval-run.png"), full_page=True)


def test_compare_side_by_side_and_refusal(tab: Page, ui: Ui, shots: Path) -> None:
    a, b, other = ui.seeded.evals
    page = tab.open("/eval")
    page.get_by_label("A (baseline)").select_option(a)
    page.get_by_label("B", exact=True).select_option(b)
    page.get_by_role("button", name="Compare").click()
    page.wait_for_url("**/eval/compare**")
    assert page.locator(".comparison table").count() >= 3  # one per concurrency
    charts_inside(page)
    page.screenshot(path=str(shots / "compare.png"), full_page=True)
    page = tab.open(f"/eval/compare?a={a}&b={other}")
    assert "prompt.output_len" in page.locator(".refused").inner_text()
    assert page.locator(".comparison").count() == 0


def test_plan_form_by_keyboard_and_labels(tab: Page, shots: Path) -> None:
    page = tab.open("/plan")
    page.get_by_label("Model (id, path or catalog name)").fill("Qwen/Qwen3-8B")
    page.get_by_label("GPU", exact=True).fill("H100")
    page.get_by_label("GPUs", exact=True).fill("4")
    page.get_by_label("GPUs", exact=True).press("Enter")
    page.wait_for_url("**/plan?model=**")
    assert page.locator("#serve-command").inner_text().startswith("vllm serve")
    charts_inside(page)
    assert page.locator("tbody tr").count() >= 3  # TP1/TP2/TP4 x DP
    page.screenshot(path=str(shots / "plan-result.png"), full_page=True)


def test_keyboard_reaches_skip_link_then_navigation(tab: Page) -> None:
    page = tab.open("/runs")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Engines"
    page.keyboard.press("Enter")
    page.wait_for_url("**/engines")


def test_failed_run_page_shows_the_diagnosis(tab: Page, ui: Ui, shots: Path) -> None:
    page = tab.open(f"/runs/{ui.seeded.slurm_run}")
    assert page.locator(".diagnosis").count() == 1
    assert "job 4242 on gpu-a01,gpu-a02" in page.locator("dl.facts").inner_text()
    assert page.locator("#stop").count() == 0  # nothing live to stop
    page.screenshot(path=str(shots / "run-failed.png"), full_page=True)


def test_stop_button_stops_a_real_run(tab: Page, use_seeded_home: Seeded, shots: Path) -> None:
    from tests.launch.conftest import deployment, free_port

    from hangar.launch import process
    from hangar.launch.orchestrator import launch

    s = use_seeded_home
    run = launch(deployment(s.engine, s.model_dir, free_port())).run
    page = tab.open(f"/runs/{run.id}")
    assert page.locator("#run-status").inner_text() == "ready"
    page.screenshot(path=str(shots / "run-ready.png"), full_page=True)
    page.locator("#stop").click()
    page.wait_for_url(f"**/runs/{run.id}")
    assert page.locator("#run-status").inner_text() == "stopped"
    assert process.run_processes(run.id, run.handle.get("pgid")) == []


def _deployment_file(s: Seeded, path: Path, port: int) -> Path:
    path.write_text(
        f'engine = "{s.engine}"\n'
        f'[model]\nid = "{s.model_dir}"\nserved_name = "tiny"\n'
        '[env]\nFAKE_VLLM_MODE = "slow"\nFAKE_VLLM_DELAY = "3"\n'
        f"[target.local]\nport = {port}\nready_timeout_s = 60\nstop_grace_s = 3\n"
    )
    return path


def test_run_page_follows_a_launch_live(
    tab: Page, ui: Ui, use_seeded_home: Seeded, tmp_path: Path
) -> None:
    """Opened while the server is still starting, the page turns 'ready' by itself."""
    import json
    import os
    import subprocess
    import sys
    import time
    import urllib.request

    from tests.launch.conftest import free_port

    from hangar.launch.recorded import stop

    known = {r["id"] for r in json.load(urllib.request.urlopen(ui.url + "/api/runs"))}
    spec = _deployment_file(use_seeded_home, tmp_path / "hangar.toml", free_port())
    env = {**os.environ, "HANGAR_HOME": str(use_seeded_home.home)}
    launcher = subprocess.Popen([sys.executable, "-m", "hangar", "launch", str(spec)], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline, new = time.monotonic() + 30, []
        while not new and time.monotonic() < deadline:
            runs = json.load(urllib.request.urlopen(ui.url + "/api/runs"))
            new = [r for r in runs if r["id"] not in known]
            time.sleep(0.2)
        assert new, "the launch never recorded a run"
        page = tab.open(f"/runs/{new[0]['id']}")
        assert page.locator("#run-status").inner_text() in ("queued", "starting")
        # no reload from here: the page's own polling must bring the change
        sync_api.expect(page.locator("#run-status")).to_have_text("ready", timeout=45_000)
        assert launcher.wait(30) == 0
    finally:
        launcher.kill() if launcher.poll() is None else None
        launcher.wait()
        stop(new[0]["id"]) if new else None


def test_report_charts_keep_every_point_inside_the_axes(
    browser: Any, use_seeded_home: Seeded, tmp_path: Path, shots: Path
) -> None:
    """`hangar report` (one offline HTML file) for the same eval runs, opened from disk."""
    import subprocess
    import sys

    out = tmp_path / "report.html"
    a, b, other = use_seeded_home.evals
    subprocess.run([sys.executable, "-m", "hangar", "report", a, b, other, "-o", str(out)],
                   check=True, capture_output=True)
    page = Page(browser, "")
    try:
        page.page.goto(out.as_uri(), wait_until="load")
        charts = charts_inside(page.page)
        assert len(charts) == 5 + 3  # five vs load, one latency CDF per run
        assert "None" not in page.page.locator("table").first.inner_text()
        page.page.screenshot(path=str(shots / "report.png"), full_page=True)
        assert page.errors == []
    finally:
        page.page.close()


def test_workarounds_check_by_engine_and_gpu(tab: Page) -> None:
    page = tab.open("/workarounds")
    page.get_by_label("Engine").select_option("fake-0.33")
    page.get_by_label("GPU", exact=True).select_option("RTX-4090")
    page.get_by_label("GPUs (TP)").fill("2")
    page.get_by_role("button", name="Check").click()
    page.wait_for_url("**/workarounds?engine=**")
    assert "consumer-pcie-tp-p2p" in page.locator("#applies").inner_text()
