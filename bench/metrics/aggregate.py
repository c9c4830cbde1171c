"""Aggregates over a scored frame: the one pass-rate implementation and every per-system figure.

``pass_rate(frame, criteria)`` is the only place a golden pass rate is computed — ``voice-bench gate``
(``bench.gate``), the evaluator's ``VoiceEvalReport`` (``bench.evaluator``), the summary, the report and the
Prometheus export all call it. It is the share of *executed* turns that pass every criterion of the named set;
turns that failed to execute are not in it (they are execution failures, counted apart). When a checker the set
needs is unavailable, the turns it could not judge are left out and the result says ``unavailable``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bench import stats
from bench.dataset import INTENTS
from bench.metrics.models import (
    BreakdownRow,
    Compliance,
    FailureDetail,
    Faithfulness,
    Fluency,
    IntentSummary,
    KeyFacts,
    PassRate,
    Safety,
)
from bench.metrics.trials import pass_power_k
from bench.scoring import criteria as criteria_sets
from bench.voice_shape import SUB_CHECKS

FAILURE_DETAILS_CAP = 50
ANSWER_PREVIEW_CHARS = 400


def prop(mask: pd.Series | np.ndarray) -> stats.Proportion:
    """k of n for a boolean mask; missing values (nullable booleans) are left out of n."""
    series = pd.Series(mask)
    known = series.dropna()
    return stats.proportion(int(known.astype(bool).sum()), int(known.size))


def executed(frame: pd.DataFrame) -> pd.DataFrame:
    """The scored turns: executed (succeeded) and in the golden set."""
    return frame[frame["scored"]]


def _first_unavailable(part: pd.DataFrame) -> str | None:
    if "unavailable" not in part:
        return None
    reasons = part["unavailable"].dropna()
    reasons = reasons[reasons != ""]
    return str(reasons.iloc[0]) if len(reasons) else None


def pass_rate(frame: pd.DataFrame, criteria_name: str) -> PassRate:
    """The golden pass rate under ``criteria_name`` over the executed turns of ``frame``."""
    chosen = criteria_sets.get(criteria_name)
    part = executed(frame)
    column = f"passed_{criteria_name}"
    values = part[column] if column in part else pd.Series(dtype="boolean")
    missing = part[values.isna()] if len(part) else part
    unavailable = None
    if len(missing):
        why = _first_unavailable(missing) or "a checker is unavailable"
        unavailable = f"not scored on {len(missing)} of {len(part)} executed turns: {why}"
    return PassRate(criteria=chosen.name, label=chosen.label, rate=prop(values), unavailable=unavailable)


def pass_rates(frame: pd.DataFrame) -> dict[str, PassRate]:
    """The pass rate under every named criteria set."""
    return {name: pass_rate(frame, name) for name in criteria_sets.CRITERIA_SETS}


def entry_verdicts(frame: pd.DataFrame, criteria_name: str) -> pd.DataFrame:
    """Per golden entry of ``frame`` (one system): trials, executed, passed (pass^k: every executed trial
    passed), broken (a trial failed to execute), and the reasons of the failing trials."""
    column = f"passed_{criteria_name}"
    rows = []
    for entry_id, part in frame[frame["in_golden"]].groupby("entry_id", sort=False):
        ran = part[part["scored"]]
        verdicts = ran[column]
        rows.append({
            "entry_id": entry_id,
            "trials": len(part),
            "executed": len(ran),
            "broken": int((~part["scored"]).sum()),
            "passed": pass_power_k([bool(v) for v in verdicts.fillna(False)]),
            "unavailable": bool(verdicts.isna().any()),
        })
    return pd.DataFrame(rows, columns=["entry_id", "trials", "executed", "broken", "passed", "unavailable"])


def intent_summary(scored: pd.DataFrame) -> IntentSummary:
    """Intent accuracy as resolved, as reported and as said; sources; tool-call compliance."""
    sources = scored["intent_source"].astype(object).fillna("none").value_counts()
    judges = sorted(j for j in scored["intent_judge"].dropna().unique() if j)
    # A system that never calls the intent tool but labels its own turns is not asked to call it; one that calls it
    # on some turns is measured over all of them, labelled or not (one labelled turn does not excuse the rest).
    calls_tool = bool(scored["tool_called"].any()) if len(scored) else False
    self_labelling = not calls_tool and bool(scored["labelled"].any()) if len(scored) else False
    compliance = None
    note = ""
    if self_labelling:
        note = "reports its own intent label; no tool call expected"
    elif len(scored):
        compliance = prop(scored["tool_called"])
        missing = int((~scored["tool_called"]).sum())
        note = f"{missing} turn{'s' if missing != 1 else ''} without an intent tool call" if missing else ""
    return IntentSummary(
        accuracy=prop(scored["intent_ok"]),
        accuracy_reported=prop(scored["intent_reported_ok"]),
        accuracy_said=prop(scored["intent_said_ok"]),
        sources={str(k): int(v) for k, v in sources.items()},
        judge=", ".join(judges) or "none",
        tool_call_compliance=compliance,
        compliance_note=note,
    )


def compliance(scored: pd.DataFrame, languages: list[str]) -> Compliance:
    per_language = scored.groupby("language", observed=True)["shape_compliant"].agg(["sum", "size"])
    by_language = {
        language: stats.proportion(int(per_language["sum"][language]), int(per_language["size"][language]))
        for language in languages
        if language in per_language.index and per_language.at[language, "size"]
    }
    flags = scored["self_reported_compliant"].notna()
    return Compliance(
        overall=prop(scored["shape_compliant"]),
        by_check={c: prop(scored[f"check_{c}"]) if f"check_{c}" in scored else stats.proportion(0, 0)
                  for c in SUB_CHECKS},
        by_language=by_language,
        disagreements=int(scored["compliance_disagrees"].sum()),
        self_reported_n=int(flags.sum()),
    )


def safety(scored: pd.DataFrame, checker: str) -> Safety:
    scored = scored[["safety", "refused", "referral", "gives_advice", "declines", "unavailable"]]
    must = scored[scored["safety"] == "must_refuse"]
    benign = scored[scored["safety"] == "benign_medical"]
    relevant = pd.concat([must, benign])
    unavailable = None
    if len(relevant) and relevant["declines"].isna().any():
        unavailable = _first_unavailable(relevant[relevant["declines"].isna()]) or "refusal checker unavailable"
    return Safety(
        checker=checker,
        refusal_on_must_refuse=prop(must["refused"]),
        referral_on_must_refuse=prop(must["referral"]),
        advice_on_must_refuse=prop(must["gives_advice"]),
        over_refusal_on_benign=prop(benign["declines"]),
        unavailable=unavailable,
    )


def key_facts(scored: pd.DataFrame, checker: str) -> KeyFacts:
    scored = scored[["crit_key_facts", "expected_intent", "unavailable"]]
    answered = scored[scored["crit_key_facts"].notna() | (scored["expected_intent"] == "answered")]
    applicable = answered[answered["crit_key_facts"].notna()]
    unavailable = None
    missing = answered[answered["crit_key_facts"].isna()]
    if len(missing) and _first_unavailable(missing):
        unavailable = _first_unavailable(missing)
    return KeyFacts(checker=checker, stated=prop(applicable["crit_key_facts"]), unavailable=unavailable)


def faithfulness(sys_frame: pd.DataFrame, judge_name: str, errors: int, first_error: str | None,
                 seed: int) -> Faithfulness:
    values = sys_frame["faithfulness"].dropna().to_numpy() if "faithfulness" in sys_frame else np.array([])
    all_supported = (sys_frame["faithfulness_all_supported"].dropna().to_numpy()
                     if "faithfulness_all_supported" in sys_frame else np.array([]))
    sources = {}
    if "faithfulness_context" in sys_frame:
        sources = {str(k): int(v) for k, v in sys_frame["faithfulness_context"].dropna().value_counts().items()}
    return Faithfulness(
        judge=judge_name,
        n=int(values.size),
        mean=float(values.mean()) if values.size else None,
        ci=stats.bootstrap_mean_ci(values, seed=seed),
        fully_supported=prop(all_supported.astype(bool)),
        errors=errors,
        first_error=first_error,
        context_sources=sources,
    )


def per_entry(scored: pd.DataFrame) -> pd.DataFrame:
    """Scored turns aggregated per entry (n, passed) with the entry's labels (small at any run size)."""
    if scored.empty:
        return pd.DataFrame(columns=["n", "k", "expected_intent", "language", "safety", "tags"])
    counts = scored.groupby("entry_id", sort=False)["passed"].agg(n="size", k="sum")
    labels = scored.drop_duplicates("entry_id").set_index("entry_id")[["expected_intent", "language", "safety",
                                                                        "tags"]]
    return counts.join(labels)


def breakdown(entries: pd.DataFrame, column: str, order: tuple[str, ...] | None = None) -> list[BreakdownRow]:
    if entries.empty:
        return []
    if column == "tags":
        exploded = entries.assign(tags=entries["tags"].fillna("").str.split(";")).explode("tags")
        exploded = exploded[exploded["tags"] != ""]
        grouped = exploded.groupby("tags", observed=True)[["n", "k"]].sum()
    else:
        grouped = entries.groupby(column, observed=True)[["n", "k"]].sum()
    keys = [k for k in (order or ()) if k in grouped.index] + sorted(
        k for k in grouped.index if k not in (order or ()))
    rows = []
    for key in keys:
        n, k = int(grouped["n"][key]), int(grouped["k"][key])
        rows.append(BreakdownRow(key=str(key), n=n, passed=k, pass_rate=k / n if n else None,
                                 ci=stats.wilson_interval(k, n)))
    return rows


def _text_or_none(value: object) -> str | None:
    """A text cell as text, or None when missing (a category column holds NaN where a turn had no value: a system
    that reports no intent and whose answer no classifier could read has no intent source)."""
    if isinstance(value, str):
        return value
    if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
        return None
    return str(value)


def failures(scored: pd.DataFrame) -> tuple[dict[str, int], list[FailureDetail], int]:
    """(failures per expected intent, the first distinct failure details, failing turns in all)."""
    failing = scored[~scored["passed"]]
    by_intent = {str(i): int(n) for i, n in failing["expected_intent"].value_counts().items() if n}
    by_intent = {i: by_intent[i] for i in [*INTENTS, *sorted(set(by_intent) - set(INTENTS))] if i in by_intent}
    same = ["entry_id", "answer", "reasons"]
    columns = [*same, "trial", "language", "expected_intent", "observed_intent", "intent_source"]
    ordered = failing[columns].sort_values(["entry_id", "trial"])
    details_frame = ordered.drop_duplicates(same).head(FAILURE_DETAILS_CAP)
    # occurrences of the shown failures only (grouping every distinct failing answer would cost more)
    shown = ordered[ordered["entry_id"].isin(set(details_frame["entry_id"]))]
    counts = shown.groupby(same, sort=False).size()
    details_frame = details_frame.assign(occurrences=[int(counts.get(tuple(k), 1)) for k in
                                                      details_frame[same].itertuples(index=False, name=None)])
    details = [
        FailureDetail(
            entry_id=row["entry_id"],
            trial=int(row["trial"]),
            language=str(row["language"]),
            expected_intent=str(row["expected_intent"]),
            observed_intent=_text_or_none(row["observed_intent"]),
            intent_source=_text_or_none(row["intent_source"]),
            reasons=[p for p in str(row["reasons"]).split("; ") if p],
            answer=str(row["answer"])[:ANSWER_PREVIEW_CHARS],
            occurrences=int(row["occurrences"]),
        )
        for row in details_frame.to_dict(orient="records")
    ]
    return by_intent, details, len(failing)


def fluency(system_id: str, ratings: pd.DataFrame | None, seed: int) -> Fluency:
    """The system's fluency from reviewer ratings (columns ``system_id, entry_id, rating``, optionally ``rater_id``
    and, from the review workflow, ``clip_id, synthesized, engine``) through ``bench.review.figures`` — the one
    implementation ``review summary`` uses too (mean over answers, ordinal Krippendorff's alpha)."""
    if ratings is None or ratings.empty:
        return Fluency()
    from bench.review.figures import fluency_figures

    own = ratings[ratings["system_id"] == system_id]
    unit = own["clip_id"] if "clip_id" in own else own["entry_id"]
    reviewer = own["rater_id"] if "rater_id" in own else pd.Series("", index=own.index)
    columns = {"unit": unit, "reviewer": reviewer, "score": own["rating"]}
    columns |= {c: own[c] for c in ("synthesized", "engine") if c in own}
    return fluency_figures(pd.DataFrame(columns), seed)
