"""A real Prometheus (Debian package ``prometheus``) scrapes ``voice-bench export prometheus --serve`` on loopback;
figures are read back through its HTTP API, and every query of the Grafana dashboard runs against it — the
harness's panels return data, the service's parse (they have no data here: no service runs)."""

from __future__ import annotations

import json
import queue
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from tests.dashboards.dashboard import HARNESS_PREFIX, load, panels, resolve, selectors

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # the source checkout (tests run from it)

PROMETHEUS = Path("/usr/bin/prometheus")
TIMEOUT_S = 180.0  # generous: a loaded 2-core machine


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()  # by its PID
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)


def _first_line(proc: subprocess.Popen, timeout: float) -> str:
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: lines.put(proc.stdout.readline()), daemon=True).start()
    try:
        return lines.get(timeout=timeout)
    except queue.Empty:
        raise AssertionError("the exporter printed no address") from None


def _api(base: str, path: str, **params: str) -> dict:
    url = f"{base}{path}?{urllib.parse.urlencode(params)}" if params else f"{base}{path}"
    with urllib.request.urlopen(url, timeout=60) as response:
        return json.loads(response.read())


def _wait(what: str, check, proc: subprocess.Popen, log: Path) -> object:
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        try:
            value = check()
            if value:
                return value
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {TIMEOUT_S:.0f} s; prometheus log:\n"
                                 + log.read_text(encoding="utf-8", errors="replace")[-3000:])
        time.sleep(0.5)


@pytest.fixture
def scraped(workspace, tmp_path):
    """(Prometheus API base URL, its process, its log) once it has scraped the exporter at least once."""
    if not PROMETHEUS.exists():
        pytest.skip(f"{PROMETHEUS} is missing: install the Debian package prometheus (apt-get install -y prometheus)")
    exporter = subprocess.Popen(
        [sys.executable, "-m", "bench.cli", *workspace.argv("--serve", "--port", "0", "--cache-seconds", "5")],
        cwd=PROJECT_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    prometheus = None
    try:
        line = _first_line(exporter, TIMEOUT_S)
        address = re.search(r"on (http://\S+/metrics)", line)
        assert address, line + exporter.stderr.read()
        target = urllib.parse.urlparse(address.group(1)).netloc
        port = _free_port()
        config = tmp_path / "prometheus.yml"
        config.write_text(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
            "scrape_configs:\n  - job_name: voice-bench\n    metrics_path: /metrics\n"
            f"    static_configs:\n      - targets: ['{target}']\n", encoding="utf-8")
        log = tmp_path / "prometheus.log"
        with log.open("w") as sink:
            prometheus = subprocess.Popen(
                [str(PROMETHEUS), f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                 f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
                stdout=sink, stderr=subprocess.STDOUT)
        base = f"http://127.0.0.1:{port}"
        _wait("Prometheus ready", lambda: urllib.request.urlopen(f"{base}/-/ready", timeout=10).status == 200,
              prometheus, log)
        _wait("a successful scrape",
              lambda: [r for r in _api(base, "/api/v1/query", query='up{job="voice-bench"} == 1')["data"]["result"]],
              prometheus, log)
        yield base, prometheus, log
    finally:
        if prometheus is not None:
            _stop(prometheus)
        _stop(exporter)
        out, _ = exporter.communicate(timeout=30)
        assert "stopped" in out  # SIGTERM ends the exporter cleanly


def _summary_pass_rate(workspace, system: str) -> float:
    from bench.metrics import summarize_run
    from bench.review.clips import golden_for_run
    from bench.store import Store

    store = Store(workspace.store)
    try:
        run = store.get_run(workspace.run_id)
        return summarize_run(store, run.run_id, golden_for_run(run)).system(system).pass_rate.rate
    finally:
        store.close()


def test_prometheus_scrapes_the_endpoint_and_the_dashboard_queries_run(workspace, scraped) -> None:
    base, prometheus, log = scraped
    query = 'voice_bench_pass_rate{system="inhouse", channel="voice", tenant_id="bench-tenant"}'
    [series] = _wait("the pass rate in Prometheus", lambda: _api(base, "/api/v1/query", query=query)["data"]["result"],
                     prometheus, log)
    assert series["metric"]["job"] == "voice-bench" and series["metric"]["role"] == "reference"
    assert float(series["value"][1]) == pytest.approx(_summary_pass_rate(workspace, "inhouse"))
    loop = json.loads(workspace.audio_loop.read_text(encoding="utf-8"))
    [wer] = _api(base, "/api/v1/query", query='voice_bench_audio_loop_wer{language="en"}')["data"]["result"]
    assert float(wer["value"][1]) == pytest.approx(loop["error_rates"][0]["wer"])

    # the dashboard's tenant variable finds the harness's tenant
    tenants = _api(base, "/api/v1/label/tenant_id/values", **{"match[]": '{channel="voice"}'})["data"]
    assert "bench-tenant" in tenants
    ran = 0
    for panel in panels(load()):
        for target in panel.get("targets", []):
            expr = resolve(target["expr"], "bench-tenant")
            answer = _api(base, "/api/v1/query", query=expr)
            assert answer["status"] == "success", (panel["title"], expr, answer)
            if any(name.startswith(HARNESS_PREFIX) for name, _ in selectors(target["expr"])):
                assert answer["data"]["result"], f"{panel['title']}: {expr} returned no data from the scrape"
            ran += 1
    assert ran >= 20
