"""The markdown snapshot of a run (``report.md``): the headline table, the baseline verdicts and regressions,
small enough for a dashboard text panel. Text from the run is escaped (``|``, ``<``, ``>``, backticks)."""

from __future__ import annotations

from bench.metrics import RunSummary
from bench.report.compare import Regression
from bench.report.turntaking import turn_taking_markdown


def _esc(text: object) -> str:
    return (
        str(text)
        .replace("\\", "\\\\")
        .replace("|", "\\|")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace("`", "\\`")
        .replace("\n", " ")
    )


def _pct(v: float | None) -> str:
    return "–" if v is None else f"{v:.1%}"


def _ms(v: float | None) -> str:
    return "–" if v is None else f"{v:,.0f}"


def _usd(v: float | None) -> str:
    return "–" if v is None else f"${v:,.2f}"


def _ci(low: float | None, high: float | None, fmt=_pct) -> str:
    return "" if low is None or high is None else f" [{fmt(low)}–{fmt(high)}]"


def _latency(v: float | None) -> str:
    return "–" if v is None else f"{v:,.0f} ms"


_VERDICT_FORMATS = {
    "ttft_ms": _latency,
    "ttfa_ms": _latency,
    "completion_ms": _latency,
    "faithfulness": lambda v: "–" if v is None else f"{v:.2f}",
    "cost_usd": lambda v: "–" if v is None else f"${v * 1000:,.2f} / 1k turns",
}


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A GFM table: one delimiter cell per header cell, and every row as wide as the header (a row of another width
    is a bug here, not something to render as raw pipes)."""
    for row in rows:
        if len(row) != len(header):
            raise ValueError(f"markdown table row has {len(row)} cells, the header {len(header)}: {row[:2]}")
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *("| " + " | ".join(row) + " |" for row in rows)]


def _p(value: float) -> str:
    return "< 0.001" if value < 0.001 else f"{value:.3f}"


def _pass(rate) -> str:
    if rate is None:
        return "–"
    if rate.unavailable:
        return "unavailable"
    return f"{_pct(rate.rate.rate)}{_ci(rate.rate.ci.low, rate.rate.ci.high)} (n={rate.rate.n})"


def _repeat_trials(summary: RunSummary) -> list[str]:
    """The repeat-trials table: pass^k, pass@k and churn per system (``bench.metrics.trials``)."""
    rows = [(s, s.repeat_trials) for s in summary.systems if s.repeat_trials is not None]
    if not rows:
        return []
    k = summary.trials
    lines = ["## Repeat trials", "",
             f"Every entry ran {k} time{'s' if k != 1 else ''} under criteria **{_esc(summary.criteria)}**: pass^{k} = "
             f"passed in all {k} trials, pass@{k} = passed at least once, churn = the verdict changed between trials "
             "(entries with every trial executed and judged).", "",
             f"| System | pass^{k} [95% CI] | pass@{k} | Churn | Incomplete entries |", "|---|---|---|---|---|"]
    for system, trials in rows:
        power = trials.pass_power_k
        churn = "n/a (one trial)" if trials.churn is None else f"{_pct(trials.churn.rate)} ({trials.churn.k}/"\
            f"{trials.churn.n})"
        lines.append(f"| {_esc(system.id)} | {_pct(power.rate)}{_ci(power.ci.low, power.ci.high)} (n={power.n}) | "
                     f"{_pct(trials.pass_at_k.rate)} | {churn} | {trials.incomplete_entries} |")
    lines.append("")
    return lines


def _conversations(summary: RunSummary) -> list[str]:
    """Multi-turn golden conversations: each conversation's turns, in order, with their verdicts."""
    if not summary.conversations:
        return []
    rows = []
    for c in summary.conversations:
        marks = " · ".join(f"{t.turn_index + 1}: " + ("pass" if t.passed else "**fail**" if t.status == "succeeded"
                                                     else f"**{_esc(t.status)}**") for t in c.turns)
        rows.append([_esc(c.system_id), _esc(c.conversation_id), str(c.trial + 1),
                     f"{c.turns_passed}/{len(c.turns)}", marks])
    return ["## Conversations", "",
            f"Golden entries with several caller turns, each run as one conversation on one session; every turn is "
            f"scored on its own under criteria **{_esc(summary.criteria)}** and counted in the pass rates above "
            "(they count turns).", "",
            *_table(["System", "Conversation", "Trial", "Turns passed", "Turn results"], rows), ""]


def _cost_basis(summary: RunSummary) -> list[str]:
    """What each cost figure was computed from: the price plan and date, and the billing basis of both columns."""
    rows = []
    for s in summary.systems:
        cost, plan = s.cost, s.cost.plan
        plan_text = "no price table" if plan is None else (
            f"{_esc(plan.vendor)}/{_esc(plan.plan_id)}" + (" **UNVERIFIED**" if plan.unverified else ""))
        rows.append([
            _esc(s.id) + (" **EMULATED**" if s.emulated else ""), plan_text, plan.pricing_date if plan else "–",
            _usd(cost.per_1000_turns_usd), f"{cost.n_metered} of {cost.n_turns}", _esc(cost.basis),
            _usd(cost.vendor_reported_per_1000_turns_usd), _esc(cost.vendor_reported_basis),
        ])
    return ["## Cost basis", "",
            "Metered cost is the usage each turn recorded times the dated price table, scaled to 1,000 turns; the "
            "vendor-reported column is the vendor's own bill where its API returns one.", "",
            *_table(["System", "Price plan", "Pricing date", "Metered $ / 1k", "Turns metered", "Billing basis",
                     "Vendor $ / 1k", "Vendor figure basis"], rows), ""]


def render_markdown(summary: RunSummary, regressions: list[Regression] | None = None,
                    compare_warnings: list[str] | None = None) -> str:
    kind = "" if summary.run_kind == "golden" else f" ({_esc(summary.run_kind)} run)"
    lines = [f"# voice-agent-bench · run `{_esc(summary.run_id)}`{kind}", ""]
    if summary.run_kind != "golden":
        lines += [f"> **{_esc(summary.run_kind).upper()} run**: not a golden run; its figures are not the golden pass "
                  "rates that `latest`, the gate and the dashboards report.", ""]
    criteria = summary.criteria + ("" if summary.criteria_recorded else " (not recorded; assumed)")
    lines.append(
        f"Dataset `{_esc(summary.golden_path)}` (sha256 {summary.golden_sha256[:12]}) · trials "
        f"{summary.trials} · gated on criteria **{_esc(criteria)}** · context strategy "
        f"`{_esc(summary.context_strategy)}` · faithfulness judge: **{_esc(summary.judge)}** · pricing dates: "
        f"{', '.join(sorted(set(summary.pricing_dates.values()))) or 'n/a'}"
        + (f" · caller audio: impairment profile **{_esc(summary.impairment)}**" if summary.impairment else "")
    )
    lines.append("")
    lines.append("Context strategy per system: " + " · ".join(
        f"{_esc(s.id)} `{_esc(s.context_strategy)}`" for s in summary.systems)
        + (f" — {_esc(summary.context_note)}" if summary.context_note else ""))
    lines.append("")
    if summary.any_emulated:
        lines.append(
            f"> **EMULATED rows**: {', '.join(_esc(s) for s in summary.emulated_systems)} ran against "
            "loopback emulators; their numbers describe the emulator's configured profile, not the vendor."
        )
        lines.append("")
    for group in summary.shared_brains:
        lines.append(
            f"> **Shared emulator brain ({_esc(group.label)})**: {', '.join(_esc(s) for s in group.systems)} are "
            f"driven by the same emulator brain (`{_esc(group.brain)}`): they answer alike whatever vendor protocol "
            "their emulators speak, so they are not ranked against each other and get no verdict against each other."
        )
        lines.append("")
    order = [summary.criteria, *(c.name for c in summary.criteria_sets if c.name != summary.criteria)]
    header = ["System", "Role", "Mode", *(f"Pass {name} [95% CI]" for name in order), "Intent", "Tool calls",
              "TTFT p50 ms", "TTFT p95 ms", "Compliance", "Faithfulness", "Refusal", "Over-refusal", "$ / 1k turns",
              "Vendor $ / 1k", "Fluency"]
    rows = []
    for s in summary.systems:
        role = {"reference": "reference", "baseline": "**BASELINE**"}.get(s.role, "candidate")
        mode = "**EMULATED**" if s.emulated else s.mode
        if s.shared_brain:
            mode += f" · {_esc(s.shared_brain)}"
        fluency = "not rated" if s.fluency.status != "rated" else (
            f"{s.fluency.mean:.2f}" + (" (**SYNTHESIZED** speech)" if s.fluency.synthesized else ""))
        tools = "n/a"
        if s.intent is not None and s.intent.tool_call_compliance is not None:
            tools = _pct(s.intent.tool_call_compliance.rate)
        rows.append([
            _esc(s.id), role, mode, *(_pass(s.pass_rates.get(name)) for name in order),
            _pct(s.intent_accuracy.rate), tools, _ms(s.ttft_ms.p50), _ms(s.ttft_ms.p95),
            _pct(s.compliance.overall.rate),
            "–" if s.faithfulness.mean is None else f"{s.faithfulness.mean:.2f}",
            _pct(s.safety.refusal_on_must_refuse.rate), _pct(s.safety.over_refusal_on_benign.rate),
            _usd(s.cost.per_1000_turns_usd), _usd(s.cost.vendor_reported_per_1000_turns_usd), fluency,
        ])
    lines.extend(_table(header, rows))
    lines.append("")
    lines.append(f"Pass rates count {_esc(summary.pass_rate_counts)}: a single question is one turn, a conversation "
                 "entry one per caller turn.")
    lines.append("")
    lines.extend(_repeat_trials(summary))
    lines.extend(turn_taking_markdown(summary, _esc))
    lines.extend(_conversations(summary))
    lines.extend(_cost_basis(summary))
    if summary.baseline_verdicts:
        lines.append(
            f"## Does `{_esc(summary.reference_system)}` beat the lowest-effort baseline "
            f"`{_esc(summary.baseline_system)}`?"
        )
        lines.append("")
        verdict_rows = []
        for v in summary.baseline_verdicts:
            fmt = _VERDICT_FORMATS.get(v.metric, _pct)
            p = "–" if v.p_value is None else _p(v.p_value)
            verdict_rows.append([_esc(v.label), fmt(v.reference_value), fmt(v.baseline_value), f"**{v.verdict}**",
                                 f"{_esc(v.test)} (n={v.n_pairs})", p])
        lines.extend(_table(["Metric", "Reference", "Baseline", "Verdict", "Test", "p"], verdict_rows))
        lines.append("")
    if regressions is not None:
        lines.append("## Regressions")
        lines.append("")
        for warning in compare_warnings or []:
            lines.append(f"> **Warning**: {_esc(warning)}")
            lines.append("")
        if not regressions:
            lines.append("No metric got worse.")
        for r in regressions:
            # no test: say why (not comparable across input modes or latency bases, or price arithmetic)
            mark = {True: "significant", False: "not significant"}.get(r.significant, _esc(r.test))  # type: ignore[arg-type]
            tag = " (EMULATED)" if r.emulated else ""
            p = "" if r.p_adjusted is None else f" (Holm-adjusted p {_p(r.p_adjusted)}; {_esc(r.test)})"
            lines.append(f"- **{_esc(r.system)}**{tag} {_esc(r.describe())} — {mark}{p}")
        lines.append("")
    for row in summary.fluency_calibration:  # the naturalness judge against the human fluency ratings
        figure = (f"Spearman ρ {row['rho']:.2f} (n={row['n']}" + (f", p={row['p_value']:.3f}" if row["p_value"]
                  is not None else "") + ")") if row["rho"] is not None else row["note"] or f"no figure (n={row['n']})"
        kind = " — heuristic, not an LLM" if row["judge_kind"] == "heuristic" else ""
        lines.append(f"- Fluency calibration, judge {_esc(row['judge'])}{kind}, {_esc(row['language'])}: "
                     f"{_esc(figure)}")
    if summary.cost_cap:
        cap = summary.cost_cap
        skipped = ", ".join(f"{k}: {v}" for k, v in cap.get("not_started_by_system", {}).items())
        lines.append(f"- Cost cap ${cap['cap_usd']:.2f}: estimate ${cap['estimate_usd']:.4f}, metered actual "
                     f"${cap['actual_usd']:.4f}, {cap['started']} paid conversations started"
                     + (f", {len(cap['not_started'])} not started ({_esc(skipped)}; continue with `voice-bench run "
                        f"--resume {summary.run_id}`)" if cap.get("not_started") else ""))
    for note in summary.notes:
        lines.append(f"- {_esc(note)}")
    return "\n".join(lines).rstrip() + "\n"
