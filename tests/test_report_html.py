"""The report: files, escaping, regressions and trend; and the HTML opened in headless Chromium."""

from __future__ import annotations

import csv
import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bench.faithfulness import OFFLINE_JUDGE_NAME
from bench.metrics import RunSummary
from bench.perf.synthetic import SyntheticSystem, build_synthetic_run, synthetic_golden
from bench.report import compare_runs, write_report
from bench.store import Store

XSS = "<script>window.__pwned=1</script> De bezoekuren zijn van twee tot acht."
SYSTEMS = (
    SyntheticSystem(
        "inhouse",
        "inhouse",
        "local",
        "reference",
        180.0,
        audio=False,
        p_wrong_intent=0.0,
        p_shape_defect=0.0,
        p_exec_failure=0.0,
        usage="none",
        variants=1,
    ),
    SyntheticSystem(
        "baseline",
        "baseline",
        "local",
        "baseline",
        260.0,
        audio=False,
        p_exec_failure=0.0,
        routes=False,
        reads_passages=True,
        usage="none",
        variants=1,
    ),
    SyntheticSystem(
        "retell",
        "retell",
        ttft_median_ms=700.0,
        p_wrong_intent=0.05,
        p_shape_defect=0.05,
        p_exec_failure=0.02,
        usage="minutes",
        vendor_cost=True,
        vendor_latency=("e2e",),
    ),
)


@pytest.fixture(scope="module")
def golden():
    return synthetic_golden(60)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory, golden):
    root = tmp_path_factory.mktemp("report")
    store = Store(root / "bench.sqlite")
    first = golden.entries[0].id
    build_synthetic_run(
        store,
        golden,
        n_turns=360,
        run_id="run-1",
        systems=SYSTEMS,
        seed=1,
        created_at=datetime(2026, 11, 1, tzinfo=UTC),
    )
    worse = tuple(
        s
        if s.id != "retell"
        else SyntheticSystem(
            "retell",
            "retell",
            ttft_median_ms=1400.0,
            p_wrong_intent=0.45,
            p_shape_defect=0.3,
            usage="minutes",
            vendor_cost=True,
            vendor_latency=("e2e",),
        )
        for s in SYSTEMS
    )
    build_synthetic_run(
        store,
        golden,
        n_turns=360,
        run_id="run-2",
        systems=worse,
        seed=2,
        created_at=datetime(2026, 11, 2, tzinfo=UTC),
        answer_overrides={("retell", first): XSS},
    )
    paths = write_report(store, "run-2", golden, root / "out", compare_run_id="run-1")
    yield store, paths
    store.close()


def test_report_files_are_written(report) -> None:
    _, paths = report
    for path in (paths.html, paths.markdown, paths.summary_json, paths.turns_csv):
        assert path.exists() and path.stat().st_size > 0
    summary = RunSummary.model_validate_json(paths.summary_json.read_text(encoding="utf-8"))
    assert summary.run_id == "run-2" and summary.any_emulated and summary.emulated_systems == ["retell"]
    assert summary.baseline_system == "baseline" and summary.reference_system == "inhouse"
    with paths.turns_csv.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 360
    assert {"system_id", "entry_id", "passed", "ttft_ms", "cost_usd", "answer"} <= set(rows[0])
    assert any(row["answer"] == XSS for row in rows)  # the CSV keeps the raw text, quoted
    markdown = paths.markdown.read_text(encoding="utf-8")
    assert "**EMULATED**" in markdown and "**BASELINE**" in markdown and "<script>" not in markdown


def test_html_is_self_contained_and_escapes_system_text(report) -> None:
    _, paths = report
    html = paths.html.read_text(encoding="utf-8")
    assert "<script" not in html.lower()  # no script of ours, and none injected
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in html
    assert not re.search(r'\s(src|href)="(https?:)?//', html)  # nothing loaded from elsewhere
    assert "default-src 'none'" in html
    assert html.count("<svg") >= 6
    for needle in (
        "EMULATED rows in this report",
        "BASELINE",
        "How to read this",
        OFFLINE_JUDGE_NAME,
        "Pricing date",
        "not rated",
        "Regressions since run-1",
        "turns.csv",
        "Golden criteria",
        "strict v1",
        "seed003 v1",
        "shared_retriever",
        "Intent: where it came from",
        "Tool-call compliance",
        "Judges and their agreement",
        '<span class="pill nc">not comparable</span>',  # retell's (EMULATED) TTFT against the local reference
    ):
        assert needle in html, needle
    # both pass rates per system in the headline; the gate's criteria marked
    assert html.count("Pass strict") == 1 and html.count("Pass seed003") == 1 and "Pass strict ★" in html


def test_compare_runs_lists_the_regressions(report, golden) -> None:
    store, _ = report
    regressions = compare_runs(store, "run-1", "run-2", golden)
    by_metric = {(r.system, r.metric): r for r in regressions}
    pass_rate = by_metric[("retell", "pass_rate")]
    assert pass_rate.before > pass_rate.after and pass_rate.significant
    assert pass_rate.emulated and pass_rate.test.startswith("McNemar")
    assert by_metric[("retell", "ttft_p50_ms")].significant
    assert ("inhouse", "pass_rate") not in by_metric  # unchanged: nothing to report
    assert all(r.unit != "ms" or r.after - r.before >= 5.0 for r in regressions)  # practical significance
    reverse = {(r.system, r.metric) for r in compare_runs(store, "run-2", "run-1", golden)}
    assert ("retell", "pass_rate") not in reverse and ("retell", "ttft_p50_ms") not in reverse


def test_summary_json_matches_a_rescore(report, golden) -> None:
    from bench.metrics import summarize_run

    store, paths = report
    stored = json.loads(paths.summary_json.read_text(encoding="utf-8"))
    again = json.loads(summarize_run(store, "run-2", golden).model_dump_json())
    assert stored == again


@pytest.mark.browser
def test_report_in_headless_chromium(report, tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    chromium = Path("/usr/bin/chromium")
    if not chromium.exists():
        pytest.skip("Debian chromium is not installed (scripts/test installs it)")
    _, paths = report
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=str(chromium),
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--no-first-run",
                "--disable-sync",
            ],
        )
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(paths.html.as_uri(), timeout=60_000)
            headline = page.locator("#headline-table")
            assert headline.is_visible()
            assert headline.locator("tbody tr").count() == 3
            baseline_row = headline.locator('tr[data-system="baseline"]')
            assert "BASELINE" in baseline_row.inner_text()
            assert "EMULATED" in headline.locator('tr[data-system="retell"]').inner_text()
            banner = page.locator("#emulated-banner")
            assert banner.is_visible() and "EMULATED" in banner.inner_text()
            assert page.locator("svg").count() >= 6
            assert page.locator("figure svg").first.is_visible()
            assert page.evaluate("typeof window.__pwned") == "undefined"
            details = page.locator("details", has=page.locator("summary", has_text="retell"))
            details.locator("summary").click()
            assert "<script>window.__pwned=1</script>" in details.inner_text()  # shown as text
            assert page.evaluate("typeof window.__pwned") == "undefined"
            assert page.locator("script").count() == 0
            assert errors == []
            page.screenshot(path=str(tmp_path / "report.png"), full_page=False)
            assert (tmp_path / "report.png").stat().st_size > 10_000
        finally:
            browser.close()


def test_compare_warns_when_the_runs_differ(tmp_path: Path, golden) -> None:
    from bench.report import run_differences

    store = Store(tmp_path / "w.sqlite")
    a = build_synthetic_run(store, golden, n_turns=40, run_id="a", systems=SYSTEMS[:2], criteria=None)
    b = build_synthetic_run(store, golden, n_turns=40, run_id="b", systems=SYSTEMS, seed=3)
    warnings = run_differences(a, b)
    assert any(w.startswith("different criteria") and "seed003 (not recorded)" in w for w in warnings)
    assert any(w.startswith("different systems") and "retell" in w for w in warnings)
    assert any(w.startswith("different context strategies") for w in warnings)
    other = synthetic_golden(12, seed=99)
    c = build_synthetic_run(store, other, n_turns=24, run_id="c", systems=SYSTEMS, seed=4)
    assert any(w.startswith("different datasets") for w in run_differences(b, c))
    assert run_differences(b, b) == []
    paths = write_report(store, "b", golden, tmp_path / "out", compare_run_id="a")
    html = paths.html.read_text(encoding="utf-8")
    assert 'id="compare-warnings"' in html and "different criteria" in html
    assert "Warning" in paths.markdown.read_text(encoding="utf-8")
    store.close()
