"""The Grafana dashboard: seed 003's four rows; every panel on the harness's series queries a series the exporter
exports; the service's series are the four the seed names and are documented as the service's; layout is sound."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from bench.cli import main
from tests.dashboards.conftest import families
from tests.dashboards.dashboard import HARNESS_PREFIX, SERVICE_SERIES, base_name, load, panels, selectors

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # the source checkout (tests run from it)

ROWS = ("Traffic", "Latency", "Safety", "Quality")


@pytest.fixture(scope="module")
def exported(workspace) -> set[str]:
    """Every metric name a full export of the workspace carries (run, report snapshot, audio loop, up)."""
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert main(workspace.argv()) == 0
    return set(families(buffer.getvalue()))


def _queries(panel: dict) -> list[str]:
    return [t["expr"] for t in panel.get("targets", []) if t.get("expr")]


def test_selector_extraction() -> None:
    assert selectors('sum by (le) (rate(a_bucket{x="1"}[5m])) / on(x) b{y=~"$t"} * 60') == [
        ("a_bucket", 'x="1"'), ("b", 'y=~"$t"')]
    assert selectors('histogram_quantile(0.5, sum by (le) (rate(a_bucket{x="1"}[1m])))') == [("a_bucket", 'x="1"')]
    with pytest.raises(ValueError, match="without label matchers"):
        selectors("time() - voice_bench_pass_rate")


def test_the_four_rows_of_seed_003_in_order() -> None:
    dashboard = load()
    top = dashboard["panels"]
    rows = [p for p in top if p["type"] == "row"]
    assert tuple(r["title"] for r in rows) == ROWS
    for row, following in zip(rows, rows[1:] + [None], strict=True):
        start = row["gridPos"]["y"]
        end = following["gridPos"]["y"] if following else float("inf")
        inside = [p for p in top if p["type"] != "row" and start < p["gridPos"]["y"] < end]
        assert inside, f"row {row['title']} has no panels"


def test_every_harness_panel_queries_an_exported_series(exported: set[str]) -> None:
    assert not [n for n in exported if n.startswith("rag_")]  # the harness never emits the service's series
    used_service: set[str] = set()
    harness_panels = 0
    for panel in panels(load()):
        names = {name for expr in _queries(panel) for name, _ in selectors(expr)}
        harness = {n for n in names if n.startswith(HARNESS_PREFIX)}
        service = {base_name(n) for n in names if not n.startswith(HARNESS_PREFIX)}
        assert not (harness and service), f"{panel['title']}: mixes the harness's and the service's series"
        assert service <= set(SERVICE_SERIES), f"{panel['title']}: unknown series {service - set(SERVICE_SERIES)}"
        missing = harness - exported
        assert not missing, f"panel {panel['title']!r} queries {sorted(missing)}, which the exporter does not export"
        used_service |= service
        description = panel.get("description", "")
        if harness:
            harness_panels += 1
            assert description.startswith("Series of the harness"), panel["title"]
        if service:
            assert "not emitted by the harness" in description, panel["title"]
    assert used_service == set(SERVICE_SERIES)
    assert harness_panels >= 8
    # the panels the issue asks for on the harness's series
    titles = " | ".join(p["title"] for p in panels(load()))
    for wanted in ("False-positive escalation rate", "golden pass rate", "SOTA comparison snapshot"):
        assert wanted.lower() in titles.lower(), wanted


def test_every_query_filters_on_channel_and_tenant() -> None:
    for panel in panels(load()):
        for expr in _queries(panel):
            for name, matchers in selectors(expr):
                assert 'channel="voice"' in matchers and 'tenant_id=~"$tenant"' in matchers, (panel["title"], name)
    variables = {v["name"]: v for v in load()["templating"]["list"]}
    assert variables["datasource"]["query"] == "prometheus"
    assert "tenant_id" in variables["tenant"]["definition"]


def test_layout_ids_and_datasources() -> None:
    dashboard = load()
    ids = [p["id"] for p in panels(dashboard)]
    assert len(ids) == len(set(ids))
    cells: set[tuple[int, int]] = set()
    for panel in panels(dashboard):
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
        columns, lines = range(grid["x"], grid["x"] + grid["w"]), range(grid["y"], grid["y"] + grid["h"])
        mine = {(x, y) for x in columns for y in lines}
        assert not cells & mine, f"{panel['title']} overlaps another panel"
        cells |= mine
        if panel.get("targets"):
            assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
    snapshot = next(p for p in panels(dashboard) if p["type"] == "text")
    assert snapshot["options"]["mode"] == "markdown" and "report.md" in snapshot["options"]["content"]


def test_the_readme_documents_the_service_series_as_the_services() -> None:
    readme = (PROJECT_ROOT / "dashboards" / "README.md").read_text(encoding="utf-8")
    assert "not by this harness" in " ".join(readme.replace("*", "").split())
    for name in SERVICE_SERIES:
        assert f"`{name}`" in readme
