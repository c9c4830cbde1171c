"""The report's charts from a run's summary and scored frame: the one place that turns figures into ``charts``.

``report_charts(summary, frame, points)`` gives every chart of the HTML report, in page order, as
``bench.report.charts.Chart`` objects; the report embeds them as inline SVG and writes them as PNG/SVG files under
``<report folder>/charts/``. For notebooks the same plots come one per function, each returning a matplotlib
``Figure`` (re-exported by ``bench.metrics.plots`` beside the pandas API):

- ``latency_figure(summary, frame, event="ttft")`` — TTFT or TTFA distribution per system;
- ``compliance_figure(summary)`` — voice-shape compliance per sub-check;
- ``cost_figure(summary)`` — cost per 1,000 turns against golden pass rate;
- ``intent_figure(summary)`` — pass rate per expected intent;
- ``trend_figure(summary, points)`` — pass rate over stored runs (``points``: ``bench.report.compare.trend``).

``summary`` is a ``RunSummary`` (``bench.metrics.summarize_run``) and ``frame`` the scored per-turn frame
(``bench.metrics.scored_turns_dataframe``) of the same run.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from bench.dataset import INTENTS
from bench.metrics.models import RunSummary
from bench.report import charts
from bench.report.compare import TrendPoint
from bench.voice_shape import SUB_CHECKS

LATENCY_EVENTS = {"ttft": "TTFT distribution per system", "ttfa": "TTFA distribution per system"}
CHECK_LABELS = {
    "overall": "All checks",
    "sentences": "Sentences ≤ max",
    "forbidden_tokens": "No forbidden token",
    "url": "No URL",
    "markdown": "No markdown",
    "numbers_as_words": "Numbers as words",
    "emoji": "No emoji",
    "roman_numerals": "No roman numerals",
}


def check_label(check: str) -> str:
    """The report label of a voice-shape sub-check (sub-checks added later get a readable default)."""
    return CHECK_LABELS.get(check, check.replace("_", " ").capitalize())


def compliance_checks() -> list[tuple[str, str]]:
    return [("overall", CHECK_LABELS["overall"]), *((c, check_label(c)) for c in SUB_CHECKS)]


def system_series(summary: RunSummary, frame: pd.DataFrame | None = None) -> list[charts.Series]:
    """One ``charts.Series`` per system of the run, in the summary's order, with stable colours."""
    colours = charts.system_colours([(s.id, s.role) for s in summary.systems])
    groups: dict[Any, pd.DataFrame] = {}
    if frame is not None and len(frame):
        ok = frame[frame["status"] == "succeeded"]
        groups = dict(tuple(ok.groupby("system_id", sort=False)))
    out = []
    for s in summary.systems:
        part = groups.get(s.id)
        values: dict[str, Any] = {
            event: part[f"{event}_ms"].to_numpy(float) if part is not None else np.array([])
            for event in LATENCY_EVENTS
        }
        values |= {"cost": s.cost.per_1000_turns_usd, "pass": s.pass_rate.rate, "pass_low": s.pass_rate.ci.low,
                   "pass_high": s.pass_rate.ci.high, "compliance.overall": s.compliance.overall.rate}
        for check, prop in s.compliance.by_check.items():
            values[f"compliance.{check}"] = prop.rate
        out.append(charts.Series(id=s.id, label=s.label, colour=colours[s.id], emulated=s.emulated, role=s.role,
                                 values=values))
    return out


def trend_series(points: list[TrendPoint], base: list[charts.Series]
                 ) -> tuple[list[tuple[str, str]], list[charts.Series]]:
    """Runs (oldest first) and one series per system; colours match the rest of the report."""
    runs: list[tuple[str, str]] = []
    for p in points:
        if p.run_id not in [r for r, _ in runs]:
            runs.append((p.run_id, p.created_at[5:16].replace("T", " ")))
    colour = {s.id: s.colour for s in base}
    role = {s.id: s.role for s in base}
    spare = [c for c in charts.PALETTE if c not in colour.values()] or list(charts.PALETTE)
    by_system: dict[str, charts.Series] = {
        s.id: charts.Series(id=s.id, label=s.label, colour=s.colour, emulated=s.emulated, role=s.role) for s in base
    }
    for p in points:
        if p.system not in by_system:
            by_system[p.system] = charts.Series(id=p.system, label=p.system, colour=spare[len(by_system) % len(spare)],
                                                emulated=p.emulated, role=role.get(p.system, "candidate"))
        by_system[p.system].values[p.run_id] = p.pass_rate
    return runs, [s for s in by_system.values() if any(r in s.values for r, _ in runs)]


def intents_present(summary: RunSummary) -> list[str]:
    return [i for i in INTENTS if any(row.key == i for s in summary.systems for row in s.breakdowns["intent"])]


def _intent_chart(summary: RunSummary, series: list[charts.Series]) -> charts.Chart:
    cells = {(row.key, s.id): (row.pass_rate, row.n) for s in summary.systems for row in s.breakdowns["intent"]}
    return charts.heat_map(intents_present(summary), series, cells)


def report_charts(summary: RunSummary, frame: pd.DataFrame, points: list[TrendPoint]) -> dict[str, charts.Chart]:
    """Every chart of the report by its slot in the page: ttft, ttfa, compliance, cost, heat, trend."""
    series = system_series(summary, frame)
    return {
        **{event: charts.latency_chart(series, event, title) for event, title in LATENCY_EVENTS.items()},
        "compliance": charts.compliance_chart(series, compliance_checks()),
        "cost": charts.cost_scatter(series),
        "heat": _intent_chart(summary, series),
        "trend": charts.trend_chart(*trend_series(points, series)),
    }


def latency_figure(summary: RunSummary, frame: pd.DataFrame, event: str = "ttft") -> Figure:
    """The TTFT (``event="ttft"``) or TTFA (``"ttfa"``) distribution per system, as in the report."""
    if event not in LATENCY_EVENTS:
        raise ValueError(f"event: choose one of {', '.join(LATENCY_EVENTS)}, not {event!r}")
    return charts.latency_chart(system_series(summary, frame), event, LATENCY_EVENTS[event]).figure


def compliance_figure(summary: RunSummary) -> Figure:
    """Voice-shape compliance per sub-check and system, as in the report."""
    return charts.compliance_chart(system_series(summary), compliance_checks()).figure


def cost_figure(summary: RunSummary) -> Figure:
    """Cost per 1,000 turns against golden pass rate (with its 95 % interval), as in the report."""
    return charts.cost_scatter(system_series(summary)).figure


def intent_figure(summary: RunSummary) -> Figure:
    """Golden pass rate per expected intent and system (viridis heat map), as in the report."""
    return _intent_chart(summary, system_series(summary)).figure


def trend_figure(summary: RunSummary, points: list[TrendPoint]) -> Figure:
    """Golden pass rate per system over stored runs; ``points`` from ``bench.report.compare.trend``."""
    return charts.trend_chart(*trend_series(points, system_series(summary))).figure
