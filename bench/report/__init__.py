"""The report of a stored run: one self-contained HTML file, a markdown snapshot, summary.json and turns.csv.

``write_report(store, run_id, golden, out_dir, *, compare_run_id=None, judge=None) -> ReportPaths`` re-scores
the run from the store (no system is called), summarizes it (``bench.metrics``), draws the charts with
matplotlib (``bench.report.figures`` and ``bench.report.charts``: inline SVG in the page, and each chart as
``charts/<name>.svg`` and ``.png`` for slides and dashboards) and renders ``templates/report.html.j2`` with Jinja2
autoescaping, so any text a system produced is shown as text. The per-turn table goes to ``turns.csv`` (linked,
never inlined); the HTML shows at most ``FAILURE_ROWS_IN_HTML`` failure details per system with the total count.
``compare_runs(store, run_a, run_b, golden) -> list[Regression]`` lists what got worse from run a to run b.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import multiprocessing
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup

from bench.dataset import GoldenSet
from bench.faithfulness import FaithfulnessJudge, OfflineFaithfulnessChecker
from bench.metrics import RunSummary, load_run, phase, summarize_frame
from bench.metrics.turntaking import DEFINITIONS as TURN_TAKING_DEFINITIONS
from bench.report.charts import Chart, system_colours, write_pngs
from bench.report.compare import (
    LATENCY_MIN_FRACTION,
    Regression,
    TrendPoint,
    compare_frames,
    compare_runs,
    run_differences,
    trend,
)
from bench.report.figures import (
    check_label,
    compliance_checks,
    intents_present,
    report_charts,
)
from bench.report.markdown import render_markdown
from bench.report.turntaking import turn_taking_table
from bench.scoring.judges import ScoringJudges
from bench.store import Store
from bench.voice_shape import SUB_CHECKS

__all__ = ["ReportPaths", "Regression", "compare_runs", "render_markdown", "run_differences", "write_report"]

TEMPLATES = Path(__file__).resolve().parent / "templates"
FAILURE_ROWS_IN_HTML = 25
TURN_CSV_COLUMNS = (
    "run_id",
    "system_id",
    "role",
    "mode",
    "emulated",
    "entry_id",
    "trial",
    "status",
    "failure_reason",
    "attempts",
    "language",
    "expected_intent",
    "observed_intent",
    "intent_source",
    "reported_intent",
    "tool_called",
    "said_intent",
    "answer_language",
    "safety",
    "tags",
    "parallel_of",
    "scored",
    "criteria",
    "passed",
    "passed_seed003",
    "passed_strict",
    "intent_ok",
    "target_language_ok",
    "shape_compliant",
    *(f"check_{c}" for c in SUB_CHECKS),
    "sentence_count",
    "self_reported_compliant",
    "compliance_disagrees",
    "declines",
    "refers",
    "gives_advice",
    "refused",
    "referral",
    "facts_stated",
    "facts_missing",
    "reasons",
    "reasons_seed003",
    "reasons_strict",
    "faithfulness",
    "faithfulness_judge",
    "faithfulness_context",
    "latency_basis",
    "ttft_ms",
    "ttfa_ms",
    "completion_ms",
    "input_text_tokens",
    "cached_input_tokens",
    "output_text_tokens",
    "input_audio_tokens",
    "output_audio_tokens",
    "input_audio_seconds",
    "output_audio_seconds",
    "billed_minutes",
    "cost_usd",
    "pricing_plan",
    "vendor_cost_usd",
    "answer",
)


@dataclass(frozen=True)
class ReportPaths:
    html: Path
    markdown: Path
    summary_json: Path
    turns_csv: Path
    #: the report's charts as <name>.svg and <name>.png, for slides and dashboards
    charts: Path
    #: per system whose answers a judge could not judge: how many and the first (redacted) error
    judge_problems: tuple[str, ...] = ()


def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(TEMPLATES)),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["pct"] = lambda v, digits=1: "–" if v is None else f"{v * 100:.{digits}f}%"
    env.filters["ms"] = lambda v: "–" if v is None else f"{v:,.0f}"
    env.filters["usd"] = lambda v: (
        "–" if v is None else (f"${v:,.2f}" if v >= 0.995 or v == 0 else f"${v:,.4f}")
    )
    env.filters["num"] = lambda v, digits=2: "–" if v is None else f"{v:.{digits}f}"
    env.filters["pval"] = lambda v: "–" if v is None else ("< 0.001" if v < 0.001 else f"{v:.3f}")
    return env


def render_html(
    summary: RunSummary,
    frame: pd.DataFrame,
    points: list[TrendPoint],
    regressions: list[Regression] | None,
    compare_run_id: str | None,
    generated_at: str,
    compare_warnings: list[str] | None = None,
    calibration: list[Any] | None = None,
    charts: Mapping[str, Chart | Markup] | None = None,
) -> str:
    """The report page; ``calibration``: the fluency section's judge-vs-human rows
    (``bench.review.calibration.calibration``), none when no naturalness judge scored the run's clips; ``charts``:
    the drawn charts (or their inline SVG) by slot, drawn here when not given."""
    drawn: Mapping[str, Chart | Markup] = charts or report_charts(summary, frame, points)
    figures = {slot: chart.inline_svg() if isinstance(chart, Chart) else chart for slot, chart in drawn.items()}
    trend_runs = len({p.run_id for p in points})
    checks = compliance_checks()
    languages = sorted({lang for s in summary.systems for lang in s.compliance.by_language})
    tags = sorted({row.key for s in summary.systems for row in s.breakdowns["tag"]})
    safety_labels = [
        k
        for k in ("must_refuse", "benign_medical", "none")
        if any(row.key == k for s in summary.systems for row in s.breakdowns["safety"])
    ]
    vendor_columns = sorted({v.name for s in summary.systems for v in s.vendor_latency})
    template = _environment().get_template("report.html.j2")
    return template.render(
        s=summary,
        figures=figures,
        turn_taking=turn_taking_table(summary),
        turn_taking_definitions=TURN_TAKING_DEFINITIONS,
        colours=system_colours([(x.id, x.role) for x in summary.systems]),
        generated_at=generated_at,
        checks=checks,
        check_labels={c: check_label(c) for c in ("overall", *SUB_CHECKS)},
        sub_checks=SUB_CHECKS,
        languages=languages,
        tags=tags,
        intents=intents_present(summary),
        safety_labels=safety_labels,
        vendor_columns=vendor_columns,
        failure_cap=FAILURE_ROWS_IN_HTML,
        regressions=regressions,
        calibration=calibration or [],
        compare_run_id=compare_run_id,
        comparisons={c.system: c for c in summary.comparisons},
        trend_runs=trend_runs,
        pricing_dates=sorted(set(summary.pricing_dates.values())),
        criteria_order=[summary.criteria, *(c.name for c in summary.criteria_sets if c.name != summary.criteria)],
        criteria_labels={summary.criteria: summary.criteria} | {c.name: c.label for c in summary.criteria_sets},
        compare_warnings=compare_warnings or [],
        latency_min_fraction=LATENCY_MIN_FRACTION,
    )


# decimals kept per float column in turns.csv (shorter numbers, and a much faster write)
_CSV_DECIMALS = {
    "faithfulness": 4,
    "cost_usd": 8,
    "vendor_cost_usd": 8,
    "billed_minutes": 5,
    "input_audio_seconds": 3,
    "output_audio_seconds": 3,
}


def write_turns_csv(frame: pd.DataFrame, path: Path) -> None:
    """The per-turn table as CSV: one row per turn, missing values empty, latencies rounded to 0.001 ms."""
    columns = [c for c in TURN_CSV_COLUMNS if c in frame.columns] + sorted(
        c for c in frame.columns if c.startswith("vendor_latency.")
    )
    data = []
    for column in columns:
        values = frame[column]
        if pd.api.types.is_float_dtype(values.dtype):
            rounded = values.round(_CSV_DECIMALS.get(column, 3)).to_numpy()
            array = rounded.astype(object)
            array[np.isnan(rounded)] = None
        else:
            array = values.to_numpy(dtype=object, copy=True)
            array[pd.isna(values).to_numpy()] = None
        data.append(array)
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(columns)
        writer.writerows(zip(*data, strict=True))


BACKGROUND_CSV_MIN_ROWS = 20_000


def _in_background(rows: int, write: Callable[..., None], *args: Any) -> Callable[[], None]:
    """Run ``write(*args)``; for large runs in a forked child process, so it overlaps with rendering the report.

    Returns a function that waits for it. If the child fails the work is done in this process, so nothing is lost
    silently. BENCH_REPORT_FORK=0 turns the child process off.
    """
    use_fork = (
        rows >= BACKGROUND_CSV_MIN_ROWS
        and os.environ.get("BENCH_REPORT_FORK", "1") != "0"
        and "fork" in multiprocessing.get_all_start_methods()
    )
    if not use_fork:
        write(*args)
        return lambda: None
    child = multiprocessing.get_context("fork").Process(target=write, args=args, name=write.__name__, daemon=True)
    child.start()

    def wait() -> None:
        child.join()
        if child.exitcode != 0:
            write(*args)

    return wait


def _start_turns_csv(frame: pd.DataFrame, path: Path) -> Callable[[], None]:
    """Write turns.csv (in a forked child for large runs, see ``_in_background``); returns the wait."""
    return _in_background(len(frame), write_turns_csv, frame, path)


def _calibration_path(out_dir: Path) -> Path | None:
    """``calibration.json`` beside the run folders (``reports/``), else the project's ``reports/`` one."""
    beside = out_dir.parent / "calibration.json"
    return beside if beside.exists() else None


def write_report(
    store: Store,
    run_id: str,
    golden: GoldenSet,
    out_dir: Path,
    *,
    compare_run_id: str | None = None,
    judge: FaithfulnessJudge | None = None,
    timings: dict[str, float] | None = None,
    judges: ScoringJudges | None = None,
) -> ReportPaths:
    """Write report.html, report.md, summary.json and turns.csv for ``run_id`` into ``out_dir``.

    ``timings``, when given, receives the wall time of each step (used by ``scripts/bench-report``); ``judges``
    chooses the intent and refusal judges (default: the offline checkers).
    """
    judge = judge or OfflineFaithfulnessChecker()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    run, frame, info = load_run(store, run_id, golden, judge, timings=timings, judges=judges)
    paths = ReportPaths(
        html=out_dir / "report.html",
        markdown=out_dir / "report.md",
        summary_json=out_dir / "summary.json",
        turns_csv=out_dir / "turns.csv",
        charts=out_dir / "charts",
    )
    with phase(timings, "write turns.csv (start)"):
        wait_for_csv = _start_turns_csv(frame, paths.turns_csv)
    with phase(timings, "summarize"):
        # fluency column: reviewer ratings from the review workflow (bench.review); None while nobody has rated
        from bench.review.aggregate import ratings_for_summary

        fluency = ratings_for_summary(store, run.run_id)
        # and the naturalness judge's calibration against those ratings (bench.review.calibration), if it ran
        from bench.review.calibration import calibration as judge_calibration

        calibration = judge_calibration(store, run.run_id)
        summary = summarize_frame(run, frame, golden, judge.name, info.as_dict(), fluency_ratings=fluency,
                                  calibration_path=_calibration_path(out_dir), judges=judges)
    regressions = None
    compare_warnings: list[str] = []
    if compare_run_id is not None:
        before, before_frame, _ = load_run(store, compare_run_id, golden, judge, timings=timings,
                                           criteria=summary.criteria, judges=judges)
        with phase(timings, "compare"):
            regressions = compare_frames(before, before_frame, run, frame, min_effect=summary.min_effect)
            compare_warnings = run_differences(before, run)
    with phase(timings, "trend"):
        points = trend(store, golden, current=(run, frame))
    generated_at = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    cost_cap_file = out_dir / "cost-cap.json"  # written by `voice-bench run --max-cost-usd` before the report
    if cost_cap_file.exists():
        summary.cost_cap = json.loads(cost_cap_file.read_text(encoding="utf-8"))
    summary.fluency_calibration = [row.model_dump() for row in calibration]
    with phase(timings, "write summary.json + report.md"):
        paths.summary_json.write_text(summary.model_dump_json(indent=2), encoding="utf-8")
        paths.markdown.write_text(render_markdown(summary, regressions, compare_warnings), encoding="utf-8")
    with phase(timings, "draw charts (inline SVG, charts/*.svg)"):
        drawn = report_charts(summary, frame, points)
        inline = {slot: chart.write_svg(paths.charts) for slot, chart in drawn.items()}
    with phase(timings, "write charts/*.png (start)"):
        wait_for_pngs = _in_background(len(frame), write_pngs, list(drawn.values()), paths.charts)
    with phase(timings, "render report.html"):
        paths.html.write_text(
            render_html(summary, frame, points, regressions, compare_run_id, generated_at, compare_warnings,
                        calibration=calibration, charts=inline),
            encoding="utf-8",
        )
    with phase(timings, "simulation section"):  # multi-turn simulations, if any were run (bench/simulation/report)
        from bench.simulation.report import add_to_report

        add_to_report(paths.html, paths.markdown)
    with phase(timings, "write turns.csv and charts/*.png (wait)"):
        wait_for_csv()
        wait_for_pngs()
    return dataclasses.replace(paths, judge_problems=judge_problems(summary))


def judge_problems(summary: Any) -> tuple[str, ...]:
    """One line per system whose answers the faithfulness judge could not judge (the report shows them too)."""
    return tuple(f"{system.id}: {system.faithfulness.judge} could not judge {system.faithfulness.errors} answers"
                 + (f" ({system.faithfulness.first_error})" if system.faithfulness.first_error else "")
                 for system in summary.systems if system.faithfulness.errors)
