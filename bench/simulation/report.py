"""The report's simulation section: pass^k per scenario × system, naturalness, latency per turn, links to bundles.

``simulation_section(stores=None)`` reads simulation stores (default: every ``simulation.sqlite`` under
``reports/simulations/``; the newest run of each) — the conversations and the trial reports stored with them, so a
killed run shows what it finished — and returns a ``SimulationSection`` with a DataFrame (one row per run ×
system × scenario), an autoescaped HTML fragment and a markdown snapshot; ``None`` when there is no simulation run.
``add_to_report(html_path, markdown_path)`` puts the section into a written golden report (before ``</body>``, and
at the end of the markdown) and writes ``simulation.csv`` beside it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from jinja2 import Environment

from bench.metrics.trials import pass_at_k, pass_power_k
from bench.paths import DEFAULT_REPORTS_DIR, resolve_output
from bench.store import Store

#: where simulation stores are looked for (relative to the current directory)
DEFAULT_ROOT = f"{DEFAULT_REPORTS_DIR}/simulations"
COLUMNS = ["run_id", "system_id", "emulated", "scenario_id", "cells", "trials", "executed", "passed_trials",
           "pass_at_k", "pass_power_k", "naturalness", "caller_heard_ms_p50", "latency_ms_by_turn", "bundles"]

_HTML = """<section id="simulation">
<h2 id="simulations">Multi-turn simulations</h2>
<p>pass^k is the gate: a scenario passes only when every trial passed. Latency per turn is the caller-heard latency
(VAD on the recorded audio), else the first-audio or first-token latency; EMULATED rows describe the emulator's
configured profile.</p>
<table>
<thead><tr><th>Run</th><th>System</th><th>Scenario</th><th>Trials</th><th>pass@k</th><th>pass^k</th>
<th>Naturalness</th><th>Caller-heard p50 (ms)</th><th>Latency per turn (ms)</th><th>Bundles</th></tr></thead>
<tbody>
{% for r in rows %}<tr>
<td>{{ r.run_id }}</td><td>{{ r.system_id }}{% if r.emulated %} (EMULATED){% endif %}</td><td>{{ r.scenario_id }}</td>
<td>{{ r.passed_trials }}/{{ r.trials }}{% if r.executed < r.trials %} ({{ r.trials - r.executed }} not executed)
{% endif %}</td>
<td>{{ "yes" if r.pass_at_k else "no" }}</td><td><strong>{{ "PASS" if r.pass_power_k else "FAIL" }}</strong></td>
<td>{{ r.naturalness if r.naturalness is not none else "—" }}</td>
<td>{{ "%.0f"|format(r.caller_heard_ms_p50) if r.caller_heard_ms_p50 is not none else "—" }}</td>
<td>{% for turn, ms in r.latency_ms_by_turn.items() %}{{ turn }}: {{ "%.0f"|format(ms) }}
{%- if not loop.last %}, {% endif %}{% endfor %}</td>
<td>{% for b in r.bundles %}<a href="{{ b.href }}">trial {{ b.trial }}</a>{% if not loop.last %} · {% endif %}
{% endfor %}</td>
</tr>
{% endfor %}</tbody>
</table>
</section>
"""


@dataclass
class SimulationSection:
    frame: pd.DataFrame
    html: str
    markdown: str


def _stores(root: Path) -> list[Path]:
    return sorted(root.glob("*/simulation.sqlite")) + sorted(root.glob("*/*/simulation.sqlite"))


def _trial_reports(store: Store, path: Path, run_id: str) -> list[dict[str, Any]]:
    finished = {(c["system_id"], c["conversation_id"], c["trial"]) for c in store.conversations(run_id)}
    reports = []
    base = path.parent / "store-artifacts"
    for artifact in store.artifacts(run_id):
        key = (artifact["system_id"], artifact["conversation_id"], artifact["trial"])
        if artifact["kind"] != "trial_report" or key not in finished:
            continue
        try:
            reports.append(json.loads((base / artifact["path"]).read_text(encoding="utf-8")))
        except (OSError, ValueError):
            continue
    return reports


def _rows(path: Path) -> list[dict[str, Any]]:
    store = Store(path)
    try:
        runs = [r for r in store.list_runs() if r.config.get("kind") == "simulation"]
        if not runs:
            return []
        run = runs[-1]
        reports = _trial_reports(store, path, run.run_id)
    finally:
        store.close()
    emulated = {s.id: s.mode == "emulated" for s in run.systems}
    rows = []
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for report in reports:
        groups.setdefault((report["system_id"], report["scenario_id"]), []).append(report)
    for (system_id, scenario_id), group in sorted(groups.items()):
        cells = sorted({r["cell_id"] for r in group})
        per_cell = {c: [r for r in group if r["cell_id"] == c] for c in cells}
        expected = run.trials * len(cells)
        passed = [bool(r["passed"]) for r in group]
        executed = sum(1 for r in group if r["execution_status"] == "succeeded")
        by_turn: dict[str, list[float]] = {}
        heard: list[float] = []
        for report in group:
            for turn, ms in (report.get("latency_ms_by_turn") or {}).items():
                if ms is not None:
                    by_turn.setdefault(turn, []).append(float(ms))
        for report in group:
            heard += [ms for ms in (report.get("latency_ms_by_turn") or {}).values() if ms is not None]
        scores = [r["naturalness"]["overall_score"] for r in group if r.get("naturalness")]
        rows.append({
            "run_id": run.run_id, "system_id": system_id, "emulated": emulated.get(system_id, False),
            "scenario_id": scenario_id, "cells": len(cells), "trials": expected, "executed": executed,
            "passed_trials": sum(passed), "pass_at_k": pass_at_k(passed),
            "pass_power_k": all(len(v) == run.trials and pass_power_k([bool(r["passed"]) for r in v])
                                for v in per_cell.values()),
            "naturalness": round(float(np.mean(scores)), 2) if scores else None,
            "caller_heard_ms_p50": float(np.median(heard)) if heard else None,
            "latency_ms_by_turn": {t: round(float(np.mean(v)), 1) for t, v in sorted(by_turn.items())},
            "bundles": [{"trial": r["trial"], "cell": r["cell_id"], "path": r["bundle_path"]}
                        for r in sorted(group, key=lambda r: (r["cell_id"], r["trial"]))],
        })
    return rows


def simulation_section(stores: list[Path] | None = None, *, link_from: Path | None = None) -> SimulationSection | None:
    """The section over ``stores`` (default: every simulation store under ``reports/simulations``); bundle links
    are relative to ``link_from`` (the report's folder) when given."""
    paths = stores if stores is not None else _stores(resolve_output(DEFAULT_ROOT))
    rows = [row for path in paths if Path(path).exists() for row in _rows(Path(path))]
    if not rows:
        return None
    for row in rows:
        for bundle in row["bundles"]:
            target = (Path(bundle["path"]) / "trial-report.json").resolve()
            bundle["href"] = os.path.relpath(target, link_from.resolve()) if link_from else target.as_uri()
    frame = pd.DataFrame(rows, columns=COLUMNS)
    html = Environment(autoescape=True).from_string(_HTML).render(rows=rows)
    lines = ["## Multi-turn simulations", "", "| Run | System | Scenario | Passed | pass@k | pass^k | Naturalness | "
             "Caller-heard p50 (ms) |", "|---|---|---|---|---|---|---|---|"]
    for row in rows:
        label = row["system_id"] + (" (EMULATED)" if row["emulated"] else "")
        heard = f"{row['caller_heard_ms_p50']:.0f}" if row["caller_heard_ms_p50"] is not None else "—"
        lines.append(f"| {row['run_id']} | {label} | {row['scenario_id']} | {row['passed_trials']}/{row['trials']} | "
                     f"{'yes' if row['pass_at_k'] else 'no'} | {'PASS' if row['pass_power_k'] else 'FAIL'} | "
                     f"{row['naturalness'] if row['naturalness'] is not None else '—'} | {heard} |")
    return SimulationSection(frame=frame, html=html, markdown="\n".join(lines) + "\n")


def add_to_report(html_path: Path, markdown_path: Path | None = None, *,
                  stores: list[Path] | None = None) -> SimulationSection | None:
    """Insert the section into a written report (nothing changes when there is no simulation run)."""
    section = simulation_section(stores, link_from=html_path.parent)
    if section is None:
        return None
    html = html_path.read_text(encoding="utf-8")
    marker = html.rfind("</body>")
    html = html[:marker] + section.html + html[marker:] if marker >= 0 else html + section.html
    html_path.write_text(html, encoding="utf-8")
    if markdown_path is not None and markdown_path.exists():
        markdown_path.write_text(markdown_path.read_text(encoding="utf-8").rstrip() + "\n\n" + section.markdown,
                                 encoding="utf-8")
    section.frame.drop(columns=["bundles"]).to_csv(html_path.parent / "simulation.csv", index=False)
    return section
