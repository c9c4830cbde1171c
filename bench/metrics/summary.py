"""The run summary: per-system figures, paired comparisons and baseline verdicts from a scored frame.

``summarize_frame(run, frame, golden, judge_name, ...)`` aggregates an already scored frame
(``bench.metrics.frame``); ``summarize_run(store, run_id, golden)`` loads and aggregates a stored run;
``summary_dataframe(summary)`` flattens it to one row per system. Deterministic: same store, same summary.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pandas as pd
from pydantic import ValidationError

from bench import stats
from bench.cost import summarize_cost
from bench.dataset import INTENTS, LANGUAGES, SAFETY_LABELS, GoldenSet
from bench.errors import ConfigError
from bench.faithfulness import FaithfulnessJudge, OfflineFaithfulnessChecker
from bench.metrics import aggregate
from bench.metrics.compare import baseline_verdicts, brain_of, comparison, seed, share_brain
from bench.metrics.frame import CONTEXT_OWN, CONTEXT_SHARED, load_run
from bench.metrics.judges import criteria_statements, judged_columns
from bench.metrics.models import (
    ConversationResult,
    ConversationTurnResult,
    CriteriaInfo,
    RunSummary,
    SharedBrain,
    SystemSummary,
    VendorLatency,
)
from bench.metrics.trials import trial_stability
from bench.metrics.turntaking import run_figures
from bench.paths import resolve_output
from bench.scoring import checkers
from bench.scoring import criteria as criteria_sets
from bench.scoring import judges as scoring_judges
from bench.scoring.judges import ScoringJudges
from bench.store import RunInfo, Store, SystemInfo

#: where ``voice-bench calibrate`` writes its table by default (relative to the current directory)
DEFAULT_CALIBRATION = "reports/calibration.json"

_STRATEGIES = {
    "shared_retriever": "one retriever (BM25 over the knowledge base) run once per question; every system got the "
                        "same passages",
    "full_kb": "every knowledge-base document of the entry's language in the system's context (checked against "
               "its context window)",
    "vendor_native": "the knowledge base uploaded to the vendor's own knowledge feature, which retrieves for itself",
}
_SAME_CONTEXT = "every system's faithfulness is judged against the shared retriever's passages, the same for everyone"


def system_strategies(run: RunInfo) -> dict[str, str]:
    """system id → the context strategy it ran with (its own in the stored run settings, else the run's)."""
    config = run.config if isinstance(run.config, dict) else {}
    default = config.get("context_strategy")
    own = {str(s.get("id")): s.get("context_strategy") for s in config.get("systems") or [] if isinstance(s, dict)}
    return {s.id: str(own.get(s.id) or default or "not recorded") for s in run.systems}


def _system_summary(info: SystemInfo, sys_frame: pd.DataFrame, judge_name: str, judge_info: dict[str, Any],
                    fluency_ratings: pd.DataFrame | None, criteria_name: str, refusal_judge: str) -> SystemSummary:
    succeeded = sys_frame[sys_frame["status"] == "succeeded"]
    scored = aggregate.executed(sys_frame)
    failed_exec = sys_frame[sys_frame["status"] != "succeeded"]
    reasons = failed_exec["failure_reason"].fillna("unknown").str.slice(0, 120).value_counts()
    vendor = []
    for column in sorted(c for c in sys_frame.columns if c.startswith("vendor_latency.")):
        values = succeeded[column].dropna().to_numpy()
        if values.size:
            name = column.split(".", 1)[1]
            vendor.append(VendorLatency(name=name, label=f"{name} (vendor-reported, ms)",
                                        stat=stats.quantile_stat(values, seed=seed(info.id, column))))
    languages = [*LANGUAGES, *sorted(set(scored["language"].dropna()) - set(LANGUAGES))]
    cost, _ = summarize_cost(sys_frame, info.adapter, info.mode, info.details)
    by_intent, details, total = aggregate.failures(scored)
    entries = aggregate.per_entry(scored)
    rates = aggregate.pass_rates(sys_frame)
    basis = sys_frame["latency_basis"].iloc[0] if len(sys_frame) else ""
    return SystemSummary(
        id=info.id,
        adapter=info.adapter,
        mode=info.mode,
        emulated=info.emulated,
        role=info.role,
        label=info.label or info.id,
        latency_basis=str(basis),
        n_turns=len(sys_frame),
        executed=len(succeeded),
        execution_failures=len(failed_exec),
        execution_failure_reasons={str(k): int(v) for k, v in reasons.items()},
        pass_rate=rates[criteria_name].rate,
        pass_rates=rates,
        intent_accuracy=aggregate.prop(scored["intent_ok"]),
        intent=aggregate.intent_summary(scored),
        ttft_ms=stats.quantile_stat(succeeded["ttft_ms"].to_numpy(), seed=seed(info.id, "ttft")),
        ttfa_ms=stats.quantile_stat(succeeded["ttfa_ms"].to_numpy(), seed=seed(info.id, "ttfa")),
        completion_ms=stats.quantile_stat(succeeded["completion_ms"].to_numpy(), seed=seed(info.id, "completion")),
        caller_heard_ms=stats.quantile_stat(succeeded["caller_heard_ms"].to_numpy(), seed=seed(info.id, "heard")),
        vendor_latency=vendor,
        compliance=aggregate.compliance(scored, languages),
        faithfulness=aggregate.faithfulness(sys_frame, judge_name, judge_info.get("errors", 0),
                                            judge_info.get("first_error"), seed(info.id, "faithfulness")),
        key_facts=aggregate.key_facts(scored, checkers.name("facts")),
        safety=aggregate.safety(scored, refusal_judge),
        cost=cost,
        fluency=aggregate.fluency(info.id, fluency_ratings, seed(info.id, "fluency")),
        failures_by_intent=by_intent,
        failure_details=details,
        failure_details_total=total,
        breakdowns={
            "intent": aggregate.breakdown(entries, "expected_intent", INTENTS),
            "language": aggregate.breakdown(entries, "language", LANGUAGES),
            "safety": aggregate.breakdown(entries, "safety", SAFETY_LABELS),
            "tag": aggregate.breakdown(entries, "tags"),
        },
    )


#: scored-frame columns no figure of the summary reads
_UNUSED = ("facts_missing", "label_intent", "label_target_language", "reported_intent", "said_intent",
           "answer_language", "sentence_count", "target_language_ok", "forbidden_ok", "medical_refusal", "refers",
           "attempts", "run_id", "role", "mode", "emulated", "parallel_of", "disclaimer_required", "facts_stated")
_UNUSED_PREFIXES = ("reasons_", "crit_intent", "crit_target", "crit_voice", "crit_forbidden", "crit_refusal",
                    "crit_disclaimer", "crit_benign")


def configured_min_effect(run: RunInfo) -> stats.MinimumEffect:
    """The run config's ``min_effect`` (practical significance), else the defaults; exit 2 on a bad value."""
    configured = run.config.get("min_effect") if isinstance(run.config, dict) else None
    if not configured:
        return stats.MinimumEffect()
    try:
        return stats.MinimumEffect.model_validate(configured)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(p) for p in error["loc"])
        raise ConfigError(f"run {run.run_id}: config min_effect.{field}: {error['msg']}") from None


def _voice_shape_name() -> str:
    """The harness voice-shape check's name as the calibration report gives it."""
    try:
        from bench.checks.calibration import VOICE_SHAPE_NAME
    except ImportError:
        return "harness voice-shape"
    return str(VOICE_SHAPE_NAME)


def _role(run: RunInfo, role: str) -> str | None:
    return next((s.id for s in run.systems if s.role == role), None)


def _context(run: RunInfo, frame: pd.DataFrame) -> tuple[str, str]:
    """(the run's context strategy — ``mixed`` when its systems differ —, the note the report prints with it)."""
    strategy = run.config.get("context_strategy") if isinstance(run.config, dict) else None
    sources = frame["faithfulness_context"].dropna().value_counts() if "faithfulness_context" in frame else None
    own = int(sources.get(CONTEXT_OWN, 0)) if sources is not None else 0
    shared = int(sources.get(CONTEXT_SHARED, 0)) if sources is not None else 0
    if not strategy:
        return "not recorded", ("run recorded before context parity: each system's faithfulness is judged against "
                                "its own retrieved context" + (f" ({own} answers)" if own else ""))
    used = sorted({v for v in system_strategies(run).values() if v != "not recorded"}) or [str(strategy)]
    if len(used) > 1:
        strategy = "mixed"
        note = "systems differ — " + "; ".join(f"{name}: {_STRATEGIES.get(name, name)}" for name in used)
    else:
        strategy = used[0]
        note = _STRATEGIES.get(strategy, strategy)
    note += f"; {_SAME_CONTEXT}"
    if own:
        note += f"; {own} answers had no shared context recorded and were judged against their own retrieved context"
    elif shared:
        note += f" ({shared} answers judged)"
    return str(strategy), note


def shared_brains(run: RunInfo) -> list[SharedBrain]:
    """Groups of two or more emulated rows the run recorded with the same brain, labelled brain A, B, … in the
    order the run lists its systems."""
    groups: dict[str, list[str]] = {}
    for info in run.systems:
        brain = brain_of(info)
        if brain is not None:
            groups.setdefault(brain, []).append(info.id)
    shared = [(brain, ids) for brain, ids in groups.items() if len(ids) > 1]
    return [SharedBrain(label=f"brain {chr(ord('A') + i)}" if i < 26 else f"brain {i + 1}", brain=brain,
                        systems=ids) for i, (brain, ids) in enumerate(shared)]


def summarize_frame(
    run: RunInfo,
    frame: pd.DataFrame,
    golden: GoldenSet,
    judge_name: str,
    judge_info: dict[str, Any] | None = None,
    fluency_ratings: pd.DataFrame | None = None,
    *,
    min_effect: stats.MinimumEffect | None = None,
    calibration_path: Path | None = None,
    judges: ScoringJudges | None = None,
) -> RunSummary:
    """A ``RunSummary`` from an already scored frame (``scored_turns_dataframe``); ``judges`` names the intent
    and refusal judges the frame was scored with (default: the offline checkers)."""
    judges = judges or scoring_judges.offline()
    judge_info = judge_info or {}
    if min_effect is None:
        min_effect = configured_min_effect(run)
    criteria_name = str(frame["criteria"].iloc[0]) if len(frame) else criteria_sets.of_run(run.config)[0]
    _, recorded = criteria_sets.of_run(run.config)
    not_in_golden = int((~frame["in_golden"]).sum()) if len(frame) else 0
    turn_taking = run_figures(run, frame[frame["in_golden"]] if not_in_golden else frame)
    # only the columns a summary reads: every per-system selection below copies what it keeps
    frame = frame.drop(columns=[c for c in frame.columns if c.startswith(_UNUSED_PREFIXES) or c in _UNUSED])
    frame = frame[frame["in_golden"]] if not_in_golden else frame  # other datasets' turns are not summarized
    groups = {str(k): g for k, g in frame.groupby("system_id", sort=False)} if len(frame) else {}
    summaries = [_system_summary(s, groups.get(s.id, frame.iloc[0:0]), judge_name, judge_info, fluency_ratings,
                                 criteria_name, judges.refusal_name) for s in run.systems]
    strategies = system_strategies(run)
    for system_summary in summaries:
        system_summary.context_strategy = strategies.get(system_summary.id, "not recorded")
        system_summary.repeat_trials = trial_stability(groups.get(system_summary.id, frame.iloc[0:0]), criteria_name,
                                                       run.trials)
    reference = _role(run, "reference")
    baseline = _role(run, "baseline")
    infos = {s.id: s for s in run.systems}
    shared = shared_brains(run)
    for system_summary in summaries:
        system_summary.brain = brain_of(infos.get(system_summary.id))
        system_summary.shared_brain = next((g.label for g in shared if system_summary.id in g.systems), None)
    comparisons = [comparison(frame, s, reference, criteria_name, min_effect,
                              same_brain=share_brain(s, infos.get(reference)))
                   for s in run.systems if reference and s.id != reference]
    verdicts = baseline_verdicts(frame, reference, baseline, criteria_name, min_effect,
                                 same_brain=share_brain(infos.get(reference), infos.get(baseline))) \
        if reference and baseline else []
    notes = []
    if not reference:
        notes.append("no system has role 'reference': no paired comparisons")
    if not baseline:
        notes.append("no system has role 'baseline': no beats-the-baseline verdicts")
    if not_in_golden:
        notes.append(f"{not_in_golden} stored turns name entries that are not in {golden.path}; they are not scored")
    config = run.config if isinstance(run.config, dict) else {}
    impairment = config.get("impairment")
    if impairment:
        notes.append(f"caller audio through the impairment profile {impairment!r} (bench/audio/impairments.py), "
                     f"seeded by the run's seed {config.get('seed', 0)} and each entry: every system heard the same "
                     "impaired audio")
    if config.get("turn_taking"):
        notes.append(f"turn-taking probes played over the entries in turn: {', '.join(config['turn_taking'])} "
                     "(see the turn-taking section)")
    if not recorded:
        notes.append(f"the run recorded no criteria; it is gated on {criteria_name} (the criteria of every run "
                     "recorded before criteria existed)")
    strategy, context_note = _context(run, frame)
    intent_judges = sorted({j for j in frame.get("intent_judge", pd.Series(dtype=object)).dropna() if j})
    calibration = calibration_path if calibration_path is not None else resolve_output(DEFAULT_CALIBRATION)
    judged = judged_columns({
        "intent": ", ".join(intent_judges) or judges.intent.name,
        "refusal": judges.refusal_name,
        "key_facts": checkers.name("facts"),
        "faithfulness": judge_name,
        "voice_shape": _voice_shape_name(),
    }, calibration)
    emulated = [s.id for s in run.systems if s.emulated]
    statements = criteria_statements(calibration)
    return RunSummary(
        run_id=run.run_id,
        run_kind=run.kind,
        created_at=run.created_at,
        finished_at=run.finished_at,
        status=run.status,
        dataset_path=run.dataset_path,
        dataset_sha256=run.dataset_sha256,
        golden_path=golden.path,
        golden_sha256=golden.sha256,
        trials=run.trials,
        harness_version=run.harness_version,
        any_emulated=bool(emulated),
        emulated_systems=emulated,
        reference_system=reference,
        baseline_system=baseline,
        judge=judge_name,
        criteria=criteria_name,
        criteria_recorded=recorded,
        criteria_sets=[CriteriaInfo(name=c.name, label=c.label, description=c.description, criteria=list(c.criteria),
                                    calibration=statements.get(c.label, ""))
                       for c in criteria_sets.CRITERIA_SETS.values()],
        context_strategy=strategy,
        context_note=context_note,
        judged_columns=judged,
        min_effect=min_effect,
        pricing_dates={s.id: s.cost.plan.pricing_date for s in summaries if s.cost.plan is not None},
        turns_not_in_golden=not_in_golden,
        systems=summaries,
        comparisons=comparisons,
        baseline_verdicts=verdicts,
        shared_brains=shared,
        notes=notes,
        turn_taking=turn_taking,
        impairment=str(impairment) if impairment else None,
        conversations=conversation_results(frame),
    )


def conversation_results(frame: pd.DataFrame) -> list[ConversationResult]:
    """The multi-turn conversations of a scored frame (more than one turn), each turn's verdict in order."""
    if not len(frame) or "conversation_id" not in frame.columns:
        return []
    multi = frame[frame.groupby(["system_id", "conversation_id", "trial"], observed=True)["turn_index"]
                  .transform("max") > 0]
    results = []
    for key, turns in multi.groupby(["system_id", "conversation_id", "trial"], observed=True, sort=True):
        system_id, conversation_id, trial = cast(tuple[str, str, int], key)
        rows = turns.sort_values("turn_index").to_dict("records")
        results.append(ConversationResult(
            system_id=str(system_id), conversation_id=str(conversation_id), trial=int(trial),
            turns=[ConversationTurnResult(turn_index=int(r["turn_index"]), entry_id=str(r["entry_id"]),
                                          status=str(r["status"]), passed=bool(r["passed"]),
                                          reasons=r["reasons"] if isinstance(r["reasons"], str) else "")
                   for r in rows]))
    return results


def summarize_run(
    store: Store,
    run_id: str,
    golden: GoldenSet,
    *,
    judge: FaithfulnessJudge | None = None,
    fluency_ratings: pd.DataFrame | None = None,
    criteria: str | None = None,
    min_effect: stats.MinimumEffect | None = None,
    calibration_path: Path | None = None,
    judges: ScoringJudges | None = None,
) -> RunSummary:
    """Summarize a stored run; ``criteria`` overrides the run's recorded criteria set, ``judges`` the intent and
    refusal judges (default: the offline checkers; ``bench.scoring.judges.from_env()`` for the CLI's choice).

    ``fluency_ratings``: reviewer ratings with columns ``system_id, entry_id, rating`` (1-5) and optionally
    ``rater_id``; without them every system's fluency is "not rated".
    """
    judge = judge or OfflineFaithfulnessChecker()
    run, frame, info = load_run(store, run_id, golden, judge, criteria=criteria, judges=judges)
    return summarize_frame(run, frame, golden, judge.name, info.as_dict(), fluency_ratings, min_effect=min_effect,
                           calibration_path=calibration_path, judges=judges)


def summary_dataframe(summary: RunSummary) -> pd.DataFrame:
    """One flat row per system: the headline figures with their intervals (for notebooks and dashboards)."""
    comparisons = {c.system: c for c in summary.comparisons}
    rows = []
    for s in summary.systems:
        row: dict[str, Any] = {
            "system": s.id,
            "role": s.role,
            "mode": s.mode,
            "emulated": s.emulated,
            "shared_brain": s.shared_brain,
            "latency_basis": s.latency_basis,
            "n_turns": s.n_turns,
            "executed": s.executed,
            "execution_failures": s.execution_failures,
            "criteria": summary.criteria,
            "pass_rate": s.pass_rate.rate,
            "pass_rate_ci_low": s.pass_rate.ci.low,
            "pass_rate_ci_high": s.pass_rate.ci.high,
        }
        for name, rate in s.pass_rates.items():
            row[f"pass_rate_{name}"] = None if rate.unavailable else rate.rate.rate
        row["intent_accuracy"] = s.intent_accuracy.rate
        if s.intent is not None:
            row["intent_accuracy_reported"] = s.intent.accuracy_reported.rate
            row["intent_accuracy_said"] = s.intent.accuracy_said.rate
            row["tool_call_compliance"] = (s.intent.tool_call_compliance.rate
                                           if s.intent.tool_call_compliance is not None else None)
        for name in ("ttft_ms", "ttfa_ms", "completion_ms", "caller_heard_ms"):
            stat: stats.QuantileStat | None = getattr(s, name)
            if stat is None:
                continue
            base = name.removesuffix("_ms")
            row.update({
                f"{base}_n": stat.n,
                f"{base}_p50_ms": stat.p50,
                f"{base}_p50_ci_low": stat.p50_ci.low,
                f"{base}_p50_ci_high": stat.p50_ci.high,
                f"{base}_p95_ms": stat.p95,
                f"{base}_p95_ci_low": stat.p95_ci.low,
                f"{base}_p95_ci_high": stat.p95_ci.high,
            })
        for v in s.vendor_latency:
            row[f"vendor_{v.name}_p50_ms"] = v.stat.p50
        row["compliance"] = s.compliance.overall.rate
        for check, p in s.compliance.by_check.items():
            row[f"compliance_{check}"] = p.rate
        row.update({
            "compliance_disagreements": s.compliance.disagreements,
            "faithfulness": s.faithfulness.mean,
            "faithfulness_judge": s.faithfulness.judge,
            "key_facts_stated": s.key_facts.stated.rate if s.key_facts else None,
            "refusal_rate_must_refuse": s.safety.refusal_on_must_refuse.rate,
            "advice_rate_must_refuse": s.safety.advice_on_must_refuse.rate,
            "over_refusal_rate_benign": s.safety.over_refusal_on_benign.rate,
            "cost_per_1000_turns_usd": s.cost.per_1000_turns_usd,
            "vendor_cost_per_1000_turns_usd": s.cost.vendor_reported_per_1000_turns_usd,
            "cost_basis": s.cost.basis,
            "pricing_plan": f"{s.cost.plan.vendor}/{s.cost.plan.plan_id}" if s.cost.plan else None,
            "pricing_date": s.cost.plan.pricing_date if s.cost.plan else None,
            "fluency": s.fluency.mean if s.fluency.status == "rated" else "not rated",
        })
        c = comparisons.get(s.id)
        row["pass_p_value_vs_reference"] = c.pass_rate.p_value if c else None
        row["ttft_p_value_vs_reference"] = c.ttft_ms.p_value if c else None
        row["ttft_verdict_vs_reference"] = c.ttft_verdict if c else None
        rows.append(row)
    return pd.DataFrame(rows)
