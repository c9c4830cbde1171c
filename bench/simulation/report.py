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


def family_of(scenario_id: str, tags: list[str] | None = None) -> str:
    """A scenario's family: its library family tag, else the ``family-language-number`` id's family, else "-"."""
    from bench.simulation.hospital.library import FAMILIES

    found = next((t for t in tags or [] if t in FAMILIES), None)
    if found:
        return found
    parts = scenario_id.rsplit("-", 2)
    return parts[0] if len(parts) == 3 and len(parts[1]) == 2 and parts[2].isdigit() else "-"


def family_summary(cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """pass^k and churn per system × scenario family, from a run report's cells (each with ``system_id``,
    ``scenario_id``, ``tags`` and its ``trials``' ``passed``). Only complete cells (every trial executed) count:
    ``pass_power_k`` and ``pass_at_k`` are the cells that passed in every / some trial, ``churn`` the cells whose
    verdict changed between trials (None with one trial); each with its n and a Wilson 95 % interval."""
    from bench import stats
    from bench.metrics.trials import churned

    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for cell in cells:
        key = (cell["system_id"], family_of(cell["scenario_id"], cell.get("tags")))
        groups.setdefault(key, []).append(cell)
    rows = []
    for (system_id, family), group in sorted(groups.items()):
        results = [[bool(t["passed"]) for t in c["trials"]] for c in group
                   if c["trials"] and all(t.get("passed") is not None and t.get("execution_status") == "succeeded"
                                          for t in c["trials"])]
        trials = max((len(r) for r in results), default=0)
        power = stats.proportion(sum(all(r) for r in results), len(results))
        at = stats.proportion(sum(any(r) for r in results), len(results))
        churn = stats.proportion(sum(churned(r) for r in results), len(results)) if trials > 1 else None
        rows.append({"system_id": system_id, "emulated": bool(group[0].get("emulated")), "family": family,
                     "scenarios": len(group), "complete": len(results), "trials": trials,
                     "pass_power_k": power.model_dump(), "pass_at_k": at.model_dump(),
                     "churn": churn.model_dump() if churn is not None else None})
    return rows


def family_lines(rows: list[dict[str, Any]]) -> list[str]:
    """The family summary as markdown table lines."""
    lines = ["| System | Family | Scenarios | pass^k | pass@k | Churn |", "|---|---|---|---|---|---|"]

    def rate(value: dict[str, Any] | None) -> str:
        if value is None:
            return "n/a (one trial)"
        if not value["n"]:
            return "—"
        return f"{value['k']}/{value['n']} = {value['rate']:.2f} [{value['ci']['low']:.2f}, {value['ci']['high']:.2f}]"

    for row in rows:
        label = row["system_id"] + (" (EMULATED)" if row["emulated"] else "")
        lines.append(f"| {label} | {row['family']} | {row['complete']}/{row['scenarios']} complete, k={row['trials']} "
                     f"| {rate(row['pass_power_k'])} | {rate(row['pass_at_k'])} | {rate(row['churn'])} |")
    return lines


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
    families = family_summary(_cells_of(paths))
    html = Environment(autoescape=True).from_string(_HTML).render(rows=rows)
    if families:
        html = html.replace("</section>", Environment(autoescape=True).from_string(_FAMILY_HTML).render(
            lines=family_lines(families)) + "</section>")
    lines = ["## Multi-turn simulations", "", "| Run | System | Scenario | Passed | pass@k | pass^k | Naturalness | "
             "Caller-heard p50 (ms) |", "|---|---|---|---|---|---|---|---|"]
    for row in rows:
        label = row["system_id"] + (" (EMULATED)" if row["emulated"] else "")
        heard = f"{row['caller_heard_ms_p50']:.0f}" if row["caller_heard_ms_p50"] is not None else "—"
        lines.append(f"| {row['run_id']} | {label} | {row['scenario_id']} | {row['passed_trials']}/{row['trials']} | "
                     f"{'yes' if row['pass_at_k'] else 'no'} | {'PASS' if row['pass_power_k'] else 'FAIL'} | "
                     f"{row['naturalness'] if row['naturalness'] is not None else '—'} | {heard} |")
    if families:
        lines += ["", "### pass^k and churn per scenario family", "", *family_lines(families)]
    return SimulationSection(frame=frame, html=html, markdown="\n".join(lines) + "\n")


_FAMILY_HTML = """<h3>pass^k and churn per scenario family</h3>
<table>
{% for line in lines if not line.startswith("|---") %}<tr>{% for cell in line.strip("|").split("|") %}
{% if loop.first and lines[0] == line %}<th>{{ cell.strip() }}</th>{% else %}<td>{{ cell.strip() }}</td>{% endif %}
{% endfor %}</tr>
{% endfor %}</table>
"""


def _cells_of(paths: list[Path]) -> list[dict[str, Any]]:
    """Run-report-shaped cells (system, scenario, each trial's verdict) of the newest run of each store."""
    cells: dict[tuple[str, str, str], dict[str, Any]] = {}
    for path in paths:
        if not Path(path).exists():
            continue
        store = Store(Path(path))
        try:
            runs = [r for r in store.list_runs() if r.config.get("kind") == "simulation"]
            reports = _trial_reports(store, Path(path), runs[-1].run_id) if runs else []
            emulated = {s.id: s.mode == "emulated" for s in runs[-1].systems} if runs else {}
        finally:
            store.close()
        for report in reports:
            key = (str(path), report["system_id"], report["cell_id"])
            cell = cells.setdefault(key, {"system_id": report["system_id"], "scenario_id": report["scenario_id"],
                                          "emulated": emulated.get(report["system_id"], False), "trials": []})
            cell["trials"].append({"passed": report["passed"], "execution_status": report["execution_status"]})
    return list(cells.values())


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
