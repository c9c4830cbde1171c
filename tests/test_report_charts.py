"""The report's charts (matplotlib): inline SVG that names itself, PNG/SVG files, reproducible bytes, notebook
figures, and text from systems shown as written."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from pathlib import Path

import pytest
from matplotlib.figure import Figure

from bench.metrics import scored_turns_dataframe, summarize_run
from bench.perf.synthetic import SyntheticSystem, build_synthetic_run, synthetic_golden
from bench.report import charts as chart_module
from bench.report import write_report
from bench.report.compare import trend
from bench.store import Store

SYSTEMS = (
    SyntheticSystem("inhouse", "inhouse", "local", "reference", 180.0, audio=False, usage="none", variants=1),
    SyntheticSystem("baseline", "baseline", "local", "baseline", 260.0, audio=False, routes=False,
                    reads_passages=True, usage="none", variants=1),
    SyntheticSystem("retell", "retell", ttft_median_ms=700.0, usage="minutes", vendor_cost=True),
)
CHART_NAMES = {"latency-ttft", "latency-ttfa", "compliance", "cost", "intent-heat-map", "trend"}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("charts")
    golden = synthetic_golden(30)
    store = Store(root / "bench.sqlite")
    build_synthetic_run(store, golden, n_turns=180, run_id="run-1", systems=SYSTEMS, seed=1,
                        created_at=datetime(2026, 11, 1, tzinfo=UTC))
    build_synthetic_run(store, golden, n_turns=180, run_id="run-2", systems=SYSTEMS, seed=2,
                        created_at=datetime(2026, 11, 2, tzinfo=UTC))
    first = write_report(store, "run-2", golden, root / "first")
    second = write_report(store, "run-2", golden, root / "second")
    yield store, golden, first, second
    store.close()


def test_every_chart_is_written_as_svg_and_png(run) -> None:
    _, _, paths, _ = run
    assert {p.stem for p in paths.charts.glob("*.svg")} == CHART_NAMES
    assert {p.stem for p in paths.charts.glob("*.png")} == CHART_NAMES
    for name in CHART_NAMES:
        assert (paths.charts / f"{name}.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
        root = ET.fromstring((paths.charts / f"{name}.svg").read_bytes())
        assert root.tag.endswith("svg")
        texts = " ".join(t.text or "" for t in root.iter() if t.tag.endswith("text"))
        if name != "intent-heat-map" or "retell" in texts:
            assert "retell · EMULATED" in texts, name  # text stays text; EMULATED is in the chart's labels
        if name not in ("latency-ttfa", "cost"):  # the baseline returns no audio and meters no cost
            assert "baseline · BASELINE" in texts, name


def test_charts_are_reproducible(run) -> None:
    _, _, first, second = run
    for path in sorted(first.charts.iterdir()):
        assert path.read_bytes() == (second.charts / path.name).read_bytes(), path.name
    assert b"<dc:date>" not in (first.charts / "cost.svg").read_bytes()


def test_inline_charts_are_named_and_described_for_screen_readers(run) -> None:
    _, _, paths, _ = run
    html = paths.html.read_text(encoding="utf-8")
    assert html.count('role="img"') >= 6 and "<?xml" not in html and "<!DOCTYPE svg" not in html
    for title in ("TTFT distribution per system", "Cost per 1,000 turns against golden pass rate",
                  "Voice-shape compliance per sub-check", "Golden pass rate over stored runs"):
        assert f'aria-label="{title}"' in html and f"<title>{title}</title>" in html
    assert "<desc>TTFT distribution per system. inhouse median" in html
    ids = re.findall(r'\sid="([^"]+)"', html)
    assert len(ids) == len(set(ids))  # matplotlib's group, clip-path and marker ids never collide between charts
    for reference in re.findall(r'(?:href="#|url\(#)([^"\)]+)', html):
        assert reference in ids


def test_system_text_is_shown_as_written() -> None:
    hostile = chart_module.Series(id='a$b$ <script>x</script> & "q"', label="x", colour="#0072B2",
                                  values={"cost": 1.5, "pass": 0.5})
    chart = chart_module.cost_scatter([hostile])
    svg = chart.svg().decode("utf-8")
    assert "<script>" not in svg and "a$b$ &lt;script&gt;x&lt;/script&gt; &amp;" in svg
    inline = str(chart.inline_svg())
    assert "<script>" not in inline and "&lt;script&gt;" in inline


def test_notebook_figures_are_the_report_charts(run) -> None:
    from bench.metrics.plots import compliance_figure, cost_figure, intent_figure, latency_figure, trend_figure

    store, golden, _, _ = run
    summary = summarize_run(store, "run-2", golden)
    frame = scored_turns_dataframe(store, "run-2", golden)
    figures = [latency_figure(summary, frame, "ttft"), latency_figure(summary, frame, "ttfa"),
               compliance_figure(summary), cost_figure(summary), intent_figure(summary),
               trend_figure(summary, trend(store, golden))]
    assert all(isinstance(f, Figure) for f in figures)
    assert figures[0].axes[0].get_title(loc="left") == "TTFT distribution per system"
    labels = [t.get_text() for t in figures[0].axes[0].get_yticklabels()]
    assert labels == ["retell · EMULATED", "baseline · BASELINE", "inhouse"]
    with pytest.raises(ValueError, match="ttft"):
        latency_figure(summary, frame, "completion")


def test_empty_inputs_draw_a_message(tmp_path: Path) -> None:
    chart = chart_module.latency_chart([], "ttft", "TTFT distribution per system")
    assert "no turns observed" in chart.svg().decode("utf-8")
    svg_path, png_path, inline = chart.write(tmp_path)
    assert svg_path.exists() and png_path.exists() and 'role="img"' in inline
