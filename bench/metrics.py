"""The seven metric families of a run, computed from the store alone (no system is called).

Public API (documented in the README):

- ``scored_turns_dataframe(store, run_id, golden)`` — one row per stored turn: the raw observations plus the
  harness's scores (pass, intent, per-sub-check voice shape, refusal, faithfulness and its judge, metered
  cost).
- ``summarize_run(store, run_id, golden, *, judge=None, fluency_ratings=None)`` — a ``RunSummary`` (pydantic;
  ``model_dump_json`` is ``summary.json``): per system latency, voice-shape compliance, faithfulness, safety,
  cost per 1,000 turns, fluency, breakdowns, failures; paired comparisons of every system against the
  reference (in-house) system; and a "beats the lowest-effort baseline?" verdict per metric.
- ``summary_dataframe(summary)`` — the summary as one flat row per system.

Definitions: pass rate, intent accuracy, compliance and safety rates are over *executed* (succeeded) turns;
execution failures are counted apart. Latency figures are over succeeded turns that observed the event.
Pairing is by (golden entry, trial). Scoring is memoised on the content that decides a score, so repeated
answers (trials, deterministic systems) are scored once; results are identical to scoring every row.
With ``judge=None`` faithfulness uses the deterministic offline checker (the CLI passes ``judge_from_env()``).
"""

from __future__ import annotations

import hashlib
import json
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pandas as pd
from pydantic import BaseModel, Field

from bench import stats
from bench.cost import CostSummary, load_price_tables, resolve_plan, summarize_cost, turn_costs
from bench.dataset import INTENTS, LANGUAGES, SAFETY_LABELS, GoldenEntry, GoldenSet
from bench.faithfulness import FaithfulnessJudge, OfflineFaithfulnessChecker
from bench.records import TurnRecord
from bench.scoring import score_turn
from bench.store import RunInfo, Store, SystemInfo
from bench.voice_shape import SUB_CHECKS

SUMMARY_SCHEMA_VERSION = "1.0"
FAILURE_DETAILS_CAP = 50
ANSWER_PREVIEW_CHARS = 400

_USAGE_COLUMNS = (
    "input_text_tokens",
    "output_text_tokens",
    "input_audio_tokens",
    "output_audio_tokens",
    "cached_input_tokens",
    "input_audio_seconds",
    "output_audio_seconds",
    "billed_minutes",
    "vendor_cost_usd",
)
_SCORE_FIELDS = (
    "scored",
    "passed",
    "observed_intent",
    "intent_ok",
    "target_language_ok",
    "shape_compliant",
    "forbidden_ok",
    *(f"check_{c}" for c in SUB_CHECKS),
    "sentence_count",
    "compliance_disagrees",
    "refused",
    "referral",
    "reasons",
)


# -- summary models ----------------------------------------------------------------------------------------


class VendorLatency(BaseModel):
    """A latency figure the vendor reports about itself (secondary; the harness's own timing is primary)."""

    name: str
    label: str
    stat: stats.QuantileStat


class Compliance(BaseModel):
    overall: stats.Proportion
    by_check: dict[str, stats.Proportion]
    by_language: dict[str, stats.Proportion]
    disagreements: int = Field(
        description="turns where the system's own compliance flag differs from the harness"
    )
    self_reported_n: int


class Faithfulness(BaseModel):
    judge: str
    n: int
    mean: float | None
    ci: stats.Interval
    fully_supported: stats.Proportion
    errors: int = 0
    first_error: str | None = None


class Safety(BaseModel):
    refusal_on_must_refuse: stats.Proportion
    referral_on_must_refuse: stats.Proportion
    over_refusal_on_benign: stats.Proportion


class Fluency(BaseModel):
    status: str = "not rated"
    n_ratings: int = 0
    n_raters: int = 0
    mean: float | None = None
    ci: stats.Interval = stats.Interval()
    agreement_alpha: float | None = Field(default=None, description="Krippendorff's alpha (interval)")


class BreakdownRow(BaseModel):
    key: str
    n: int
    passed: int
    pass_rate: float | None
    ci: stats.Interval


class FailureDetail(BaseModel):
    entry_id: str
    trial: int
    language: str
    expected_intent: str
    observed_intent: str | None
    reasons: list[str]
    answer: str
    occurrences: int = Field(
        default=1, description="failing turns (trials) with this same entry, answer and reasons"
    )


class SystemSummary(BaseModel):
    id: str
    adapter: str
    mode: str
    emulated: bool
    role: str
    label: str
    n_turns: int
    executed: int
    execution_failures: int
    execution_failure_reasons: dict[str, int]
    pass_rate: stats.Proportion
    intent_accuracy: stats.Proportion
    ttft_ms: stats.QuantileStat
    ttfa_ms: stats.QuantileStat
    completion_ms: stats.QuantileStat
    vendor_latency: list[VendorLatency]
    compliance: Compliance
    faithfulness: Faithfulness
    safety: Safety
    cost: CostSummary
    fluency: Fluency
    failures_by_intent: dict[str, int]
    failure_details: list[FailureDetail]
    failure_details_total: int
    breakdowns: dict[str, list[BreakdownRow]]


class SystemComparison(BaseModel):
    """One system against the reference system, paired by (entry, trial)."""

    system: str
    reference: str
    emulated: bool
    pass_rate: stats.PairedTest
    ttft_ms: stats.PairedTest
    pass_verdict: str = Field(description="is the system better than the reference on pass rate?")
    ttft_verdict: str


class BaselineVerdict(BaseModel):
    """Does the reference (in-house) system beat the lowest-effort baseline on this metric?"""

    metric: str
    label: str
    higher_is_better: bool
    reference_value: float | None
    baseline_value: float | None
    verdict: str = Field(description="yes | no | not significant | n/a")
    test: str
    n_pairs: int
    p_value: float | None


class RunSummary(BaseModel):
    schema_version: str = SUMMARY_SCHEMA_VERSION
    run_id: str
    created_at: str
    finished_at: str | None
    status: str
    dataset_path: str
    dataset_sha256: str
    golden_path: str
    golden_sha256: str
    trials: int
    harness_version: str
    any_emulated: bool
    emulated_systems: list[str]
    reference_system: str | None
    baseline_system: str | None
    judge: str
    pricing_dates: dict[str, str]
    turns_not_in_golden: int
    systems: list[SystemSummary]
    comparisons: list[SystemComparison]
    baseline_verdicts: list[BaselineVerdict]
    notes: list[str] = Field(default_factory=list)

    def system(self, system_id: str) -> SystemSummary:
        for s in self.systems:
            if s.id == system_id:
                return s
        raise KeyError(system_id)


# -- scoring the turns -------------------------------------------------------------------------------------

_SCORE_CACHE: dict[tuple, tuple] = {}
_FAITH_CACHE: dict[tuple, tuple] = {}
_CACHE_LIMIT = 500_000
_UNSCORED = (
    False,
    False,
    None,
    False,
    False,
    False,
    False,
    *([False] * len(SUB_CHECKS)),
    None,
    False,
    False,
    False,
    "entry not in the golden set",
)

# Raw record fields the metrics read, pulled out of the stored JSON by SQLite (json_extract) so that a
# 100,000-turn run does not have to be materialised as pydantic objects; JSON-valued fields stay JSON text.
_RAW_FIELDS = (
    "run_id",
    "system_id",
    "entry_id",
    "trial",
    "status",
    "failure_reason",
    "attempts",
    "answer",
    "conversational_intent",
    "target_language",
    "self_reported_compliant",
    "ttft_ms",
    "ttfa_ms",
    "completion_ms",
    *_USAGE_COLUMNS,
)
_RAW_JSON_FIELDS = ("tool_calls", "vendor_latency_ms", "retrieved_context")


def _fingerprints(golden: GoldenSet) -> dict[str, str]:
    """Entry id -> digest of the whole entry: the memo keys change whenever a label changes."""
    return {e.id: hashlib.sha256(e.model_dump_json().encode()).hexdigest() for e in golden.entries}


def _bounded(cache: dict) -> dict:
    if len(cache) > _CACHE_LIMIT:
        cache.clear()
    return cache


class _RawTurns:
    """The turns of one run: a frame of raw fields plus on-demand full records (for scoring unique turns)."""

    def __init__(self, frame: pd.DataFrame, store: Store, rowids: list[int]):
        self.frame = frame
        self._store = store
        self._rowids = rowids

    def record_json(self, positions: list[int]) -> list[str]:
        """The stored JSON of the turns at ``positions``."""
        wanted = [self._rowids[i] for i in positions]
        found = self._store.turn_json_by_rowid(wanted)
        return [found[r] for r in wanted]


def _raw_turns(store: Store, run_id: str) -> _RawTurns:
    """Read a run's turns through the store's bulk field read (no pydantic object per turn)."""
    columns = [*_RAW_FIELDS, *_RAW_JSON_FIELDS]
    rows = store.turn_fields(run_id, list(_RAW_FIELDS), list(_RAW_JSON_FIELDS))
    frame = pd.DataFrame.from_records([row[1:] for row in rows], columns=columns)
    return _RawTurns(frame, store, [row[0] for row in rows])


def _score_values(entry: GoldenEntry, record: TurnRecord) -> tuple:
    s = score_turn(entry, record)
    checks = s.shape.checks if s.shape is not None else dict.fromkeys(SUB_CHECKS, False)
    return (
        s.scored,
        s.passed,
        s.observed_intent,
        s.intent_ok,
        s.target_language_ok,
        s.shape_compliant,
        s.forbidden_ok,
        *(checks[c] for c in SUB_CHECKS),
        s.shape.sentence_count if s.shape else None,
        s.compliance_disagrees,
        s.refused,
        s.referral,
        "; ".join(s.reasons),
    )


_WORK: dict[str, Any] = {}


def _score_item(item: tuple[str, str]) -> tuple:
    entry_id, record_json = item
    return _score_values(_WORK["entries"][entry_id], TurnRecord.model_validate_json(record_json))


def _faith_item(item: tuple[str, str, str, str]) -> tuple:
    entry_id, answer, context_json, language = item
    entry = _WORK["entries"][entry_id]
    result = _WORK["judge"].evaluate(
        question=entry.phone_question,
        answer=answer,
        context=json.loads(context_json),
        key_facts=list(entry.reference.key_facts) if entry.reference else [],
        language=language,
    )
    return (result.score, None if result.score is None else float(result.n_supported == result.n_claims))


def _seed(*parts: str) -> int:
    return zlib.crc32("/".join(parts).encode()) & 0x7FFFFFFF


def _base_frame(run: RunInfo, raw: _RawTurns, golden: GoldenSet) -> pd.DataFrame:
    entries = golden.by_id()
    prints = _fingerprints(golden)
    frame = raw.frame
    cache = _bounded(_SCORE_CACHE)
    keys: list[tuple | None] = []
    pending: dict[tuple, int] = {}
    columns = zip(
        *(
            frame[c].to_numpy(dtype=object)
            for c in (
                "entry_id",
                "status",
                "failure_reason",
                "answer",
                "conversational_intent",
                "target_language",
                "tool_calls",
                "self_reported_compliant",
            )
        ),
        strict=True,
    )
    for i, (entry_id, status, reason, answer, intent, target, tools, flag) in enumerate(columns):
        if entry_id not in entries:
            keys.append(None)
            continue
        if status != "succeeded":
            key = (prints[entry_id], "failed", reason, flag)
        else:  # every record field score_turn reads
            key = (prints[entry_id], "ok", answer, intent, target, tools, flag)
        keys.append(key)
        if key not in cache and key not in pending:
            pending[key] = i
    if pending:
        positions = list(pending.values())
        items = list(
            zip(frame["entry_id"].to_numpy(dtype=object)[positions], raw.record_json(positions), strict=True)
        )
        _WORK.update({"entries": entries})
        for key, item in zip(pending, items, strict=True):
            cache[key] = _score_item(item)
    scores = pd.DataFrame.from_records(
        [_UNSCORED if k is None else cache[k] for k in keys], columns=list(_SCORE_FIELDS)
    )
    for column in _SCORE_FIELDS:
        if column not in ("observed_intent", "sentence_count", "reasons"):
            scores[column] = scores[column].astype(bool)
    entry_meta = pd.DataFrame.from_records(
        [
            (e.id, e.language, e.voice_expected.conversational_intent, e.safety, ";".join(e.tags))
            for e in golden.entries
        ],
        columns=["entry_id", "language", "expected_intent", "safety", "tags"],
    ).drop_duplicates("entry_id")
    out = frame[["run_id", "system_id"]].copy()
    out["role"] = frame["system_id"].map({s.id: s.role for s in run.systems}).fillna("candidate")
    out["mode"] = frame["system_id"].map({s.id: s.mode for s in run.systems}).fillna("unknown")
    out["emulated"] = (out["mode"] == "emulated").astype(bool)
    for column in ("entry_id", "trial", "status", "failure_reason", "attempts"):
        out[column] = frame[column]
    meta = frame[["entry_id"]].merge(entry_meta, on="entry_id", how="left")
    for column in ("language", "expected_intent", "safety", "tags"):
        out[column] = meta[column].to_numpy()
    out["tags"] = out["tags"].fillna("")
    out["in_golden"] = frame["entry_id"].isin(list(entries)).astype(bool)
    for column in ("ttft_ms", "ttfa_ms", "completion_ms", *_USAGE_COLUMNS):
        out[column] = pd.to_numeric(frame[column], errors="coerce").astype(
            "Int64" if column.endswith("_tokens") else float
        )
    out["answer"] = frame["answer"].fillna("")
    out["reported_intent"] = frame["conversational_intent"]
    out["reported_target_language"] = frame["target_language"]
    out["self_reported_compliant"] = frame["self_reported_compliant"]
    out = pd.concat([out, scores], axis=1)
    out["sentence_count"] = out["sentence_count"].astype("Int64")
    latency = frame["vendor_latency_ms"]
    has_latency = latency.notna() & (latency != "{}")
    if has_latency.any():
        parsed = pd.DataFrame.from_records(
            [json.loads(v) for v in latency[has_latency]], index=latency.index[has_latency]
        )
        for name in sorted(parsed.columns):
            out[f"vendor_latency.{name}"] = pd.to_numeric(parsed[name], errors="coerce").reindex(out.index)
    return out


def _add_faithfulness(
    frame: pd.DataFrame, raw: _RawTurns, golden: GoldenSet, judge: FaithfulnessJudge
) -> dict[str, Any]:
    """Faithfulness per eligible turn: executed, answered entry with a reference, answered by the system."""
    entries = golden.by_id()
    eligible = (
        frame["scored"]
        & (frame["expected_intent"] == "answered")
        & (frame["observed_intent"] == "answered")
        & (frame["answer"].str.strip() != "")
    ).to_numpy()
    scores = np.full(len(frame), np.nan)
    supported_all = np.full(len(frame), np.nan)
    errors = 0
    first_error: str | None = None
    cache = _bounded(_FAITH_CACHE)
    index = np.flatnonzero(eligible)
    contexts = raw.frame["retrieved_context"].to_numpy()
    entry_ids, answers = frame["entry_id"].to_numpy(), frame["answer"].to_numpy()
    prints = _fingerprints(golden)
    keys = [(judge.name, prints[entry_ids[i]], entry_ids[i], answers[i], contexts[i] or "[]") for i in index]
    pending = {k: None for k in keys if k not in cache}
    items = [(k[2], k[3], k[4], entries[k[2]].language) for k in pending]
    _WORK.update({"entries": entries, "judge": judge})
    for key, item in zip(pending, items, strict=True):
        try:
            cache[key] = _faith_item(item)
        except Exception as exc:  # a judge outage must not lose the rest of the report
            errors += 1
            first_error = first_error or f"{type(exc).__name__}: {exc}"[:300]
    for i, key in zip(index, keys, strict=True):
        value = cache.get(key)
        if value is None:
            continue
        scores[i] = np.nan if value[0] is None else value[0]
        supported_all[i] = np.nan if value[1] is None else value[1]
    frame["faithfulness"] = scores
    frame["faithfulness_all_supported"] = supported_all
    frame["faithfulness_judge"] = judge.name
    return {"errors": errors, "first_error": first_error}


def _add_costs(frame: pd.DataFrame, run: RunInfo) -> None:
    tables = load_price_tables()
    frame["cost_usd"] = np.nan
    frame["pricing_plan"] = None
    for info in run.systems:
        mask = frame["system_id"] == info.id
        if not mask.any():
            continue
        resolved = resolve_plan(info.adapter, info.mode, info.details, tables)
        if resolved is None:
            continue
        table, plan, _ = resolved
        meters = [c for c in _USAGE_COLUMNS if c in frame.columns]
        frame.loc[mask, "cost_usd"] = turn_costs(frame.loc[mask, meters], plan)
        frame.loc[mask, "pricing_plan"] = f"{table.vendor}/{plan.id}"


@contextmanager
def phase(timings: dict[str, float] | None, name: str) -> Iterator[None]:
    """Add the wall time of the block to ``timings[name]`` (no-op when ``timings`` is None)."""
    start = time.perf_counter()
    try:
        yield
    finally:
        if timings is not None:
            timings[name] = timings.get(name, 0.0) + time.perf_counter() - start


def _load(
    store: Store,
    run_id: str,
    golden: GoldenSet,
    judge: FaithfulnessJudge | None,
    with_faithfulness: bool = True,
    timings: dict[str, float] | None = None,
) -> tuple[RunInfo, pd.DataFrame, dict[str, Any]]:
    with phase(timings, "read turns"):
        run = store.get_run(run_id)
        raw = _raw_turns(store, run.run_id)
    with phase(timings, "score turns"):
        frame = _base_frame(run, raw, golden)
    judge_info: dict[str, Any] = {"errors": 0, "first_error": None}
    if with_faithfulness:
        with phase(timings, "faithfulness"):
            judge_info = _add_faithfulness(frame, raw, golden, judge or OfflineFaithfulnessChecker())
    with phase(timings, "cost"):
        _add_costs(frame, run)
    return run, frame, judge_info


def scored_turns_dataframe(
    store: Store, run_id: str, golden: GoldenSet, *, judge: FaithfulnessJudge | None = None
) -> pd.DataFrame:
    """One row per stored turn of ``run_id``: observations, harness scores, faithfulness and metered cost.

    Columns include ``system_id, role, mode, emulated, entry_id, trial, status, failure_reason, language,
    expected_intent, safety, tags`` (";"-joined), ``scored, passed, observed_intent, intent_ok,
    target_language_ok, shape_compliant, check_<sub-check>, sentence_count, compliance_disagrees, refused,
    referral, reasons, faithfulness, faithfulness_judge, ttft_ms, ttfa_ms, completion_ms``, the usage meters,
    ``vendor_cost_usd, cost_usd, pricing_plan`` and one ``vendor_latency.<name>`` column per vendor figure.
    """
    return _load(store, run_id, golden, judge)[1]


# -- summarizing -------------------------------------------------------------------------------------------


def _prop(mask: pd.Series | np.ndarray) -> stats.Proportion:
    arr = np.asarray(mask, dtype=bool)
    return stats.proportion(int(arr.sum()), int(arr.size))


def _per_entry(scored: pd.DataFrame) -> pd.DataFrame:
    """Scored turns aggregated per entry (n, passed) with the entry's labels (small at any run size)."""
    if scored.empty:
        return pd.DataFrame(columns=["n", "k", "expected_intent", "language", "safety", "tags"])
    counts = scored.groupby("entry_id", sort=False)["passed"].agg(n="size", k="sum")
    labels = scored.drop_duplicates("entry_id").set_index("entry_id")[
        ["expected_intent", "language", "safety", "tags"]
    ]
    return counts.join(labels)


def _breakdown(
    per_entry: pd.DataFrame, column: str, order: tuple[str, ...] | None = None
) -> list[BreakdownRow]:
    if per_entry.empty:
        return []
    if column == "tags":
        exploded = per_entry.assign(tags=per_entry["tags"].fillna("").str.split(";")).explode("tags")
        exploded = exploded[exploded["tags"] != ""]
        grouped = exploded.groupby("tags")[["n", "k"]].sum()
    else:
        grouped = per_entry.groupby(column)[["n", "k"]].sum()
    keys = [k for k in (order or ()) if k in grouped.index] + sorted(
        k for k in grouped.index if k not in (order or ())
    )
    rows = []
    for key in keys:
        n, k = int(grouped.at[key, "n"]), int(grouped.at[key, "k"])
        rows.append(
            BreakdownRow(
                key=str(key), n=n, passed=k, pass_rate=k / n if n else None, ci=stats.wilson_interval(k, n)
            )
        )
    return rows


def _fluency(system_id: str, ratings: pd.DataFrame | None) -> Fluency:
    if ratings is None or ratings.empty:
        return Fluency()
    own = ratings[ratings["system_id"] == system_id]
    values = pd.to_numeric(own["rating"], errors="coerce").dropna()
    if values.empty:
        return Fluency()
    rater_col = "rater_id" if "rater_id" in own.columns else None
    alpha = None
    if rater_col is not None:
        units = [
            g["rating"].astype(float).tolist() for _, g in own.dropna(subset=["rating"]).groupby("entry_id")
        ]
        alpha = stats.krippendorff_alpha_interval(units)
    return Fluency(
        status="rated",
        n_ratings=int(values.size),
        n_raters=int(own[rater_col].nunique()) if rater_col else 0,
        mean=float(values.mean()),
        ci=stats.bootstrap_mean_ci(values.to_numpy(), seed=_seed(system_id, "fluency")),
        agreement_alpha=alpha,
    )


def _system_summary(
    info: SystemInfo,
    sys_frame: pd.DataFrame,
    judge_name: str,
    judge_info: dict[str, Any],
    fluency_ratings: pd.DataFrame | None,
) -> SystemSummary:
    succeeded = sys_frame[sys_frame["status"] == "succeeded"]
    scored = sys_frame[sys_frame["scored"]]
    failed_exec = sys_frame[sys_frame["status"] != "succeeded"]
    reasons = failed_exec["failure_reason"].fillna("unknown").str.slice(0, 120).value_counts()
    quality_failures = scored[~scored["passed"]]
    per_entry = _per_entry(scored)

    vendor = []
    for column in sorted(c for c in sys_frame.columns if c.startswith("vendor_latency.")):
        values = succeeded[column].dropna().to_numpy()
        if values.size:
            name = column.split(".", 1)[1]
            vendor.append(
                VendorLatency(
                    name=name,
                    label=f"{name} (vendor-reported, ms)",
                    stat=stats.quantile_stat(values, seed=_seed(info.id, column)),
                )
            )

    by_language = {}
    for language in [*LANGUAGES, *sorted(set(scored["language"].dropna()) - set(LANGUAGES))]:
        part = scored[scored["language"] == language]
        if len(part):
            by_language[language] = _prop(part["shape_compliant"])
    self_flag = scored["self_reported_compliant"].notna()
    compliance = Compliance(
        overall=_prop(scored["shape_compliant"]),
        by_check={c: _prop(scored[f"check_{c}"]) for c in SUB_CHECKS},
        by_language=by_language,
        disagreements=int(scored["compliance_disagrees"].sum()),
        self_reported_n=int(self_flag.sum()),
    )

    faith_values = (
        sys_frame["faithfulness"].dropna().to_numpy() if "faithfulness" in sys_frame else np.array([])
    )
    all_supported = (
        sys_frame["faithfulness_all_supported"].dropna().to_numpy()
        if "faithfulness_all_supported" in sys_frame
        else np.array([])
    )
    faithfulness = Faithfulness(
        judge=judge_name,
        n=int(faith_values.size),
        mean=float(faith_values.mean()) if faith_values.size else None,
        ci=stats.bootstrap_mean_ci(faith_values, seed=_seed(info.id, "faithfulness")),
        fully_supported=_prop(all_supported.astype(bool)),
        errors=judge_info.get("errors", 0),
        first_error=judge_info.get("first_error"),
    )

    must = scored[scored["safety"] == "must_refuse"]
    benign = scored[scored["safety"] == "benign_medical"]
    safety = Safety(
        refusal_on_must_refuse=_prop(must["refused"]),
        referral_on_must_refuse=_prop(must["refused"] & must["referral"]),
        over_refusal_on_benign=_prop(benign["refused"]),
    )

    cost, _ = summarize_cost(sys_frame, info.adapter, info.mode, info.details)

    failures_by_intent = {
        intent: int(n)
        for intent, n in quality_failures["expected_intent"].value_counts().sort_index().items()
    }
    same = ["entry_id", "answer", "reasons"]
    ordered = quality_failures.sort_values(["entry_id", "trial"])
    occurrences = ordered.groupby(same, sort=False)["trial"].transform("size")
    details_frame = ordered.assign(occurrences=occurrences).drop_duplicates(same).head(FAILURE_DETAILS_CAP)
    details = [
        FailureDetail(
            entry_id=row.entry_id,
            trial=int(row.trial),
            language=str(row.language),
            expected_intent=str(row.expected_intent),
            observed_intent=row.observed_intent,
            reasons=[p for p in str(row.reasons).split("; ") if p],
            answer=str(row.answer)[:ANSWER_PREVIEW_CHARS],
            occurrences=int(row.occurrences),
        )
        for row in details_frame.itertuples(index=False)
    ]

    return SystemSummary(
        id=info.id,
        adapter=info.adapter,
        mode=info.mode,
        emulated=info.emulated,
        role=info.role,
        label=info.label or info.id,
        n_turns=len(sys_frame),
        executed=len(succeeded),
        execution_failures=len(failed_exec),
        execution_failure_reasons={str(k): int(v) for k, v in reasons.items()},
        pass_rate=_prop(scored["passed"]),
        intent_accuracy=_prop(scored["intent_ok"]),
        ttft_ms=stats.quantile_stat(succeeded["ttft_ms"].to_numpy(), seed=_seed(info.id, "ttft")),
        ttfa_ms=stats.quantile_stat(succeeded["ttfa_ms"].to_numpy(), seed=_seed(info.id, "ttfa")),
        completion_ms=stats.quantile_stat(
            succeeded["completion_ms"].to_numpy(), seed=_seed(info.id, "completion")
        ),
        vendor_latency=vendor,
        compliance=compliance,
        faithfulness=faithfulness,
        safety=safety,
        cost=cost,
        fluency=_fluency(info.id, fluency_ratings),
        failures_by_intent=failures_by_intent,
        failure_details=details,
        failure_details_total=len(quality_failures),
        breakdowns={
            "intent": _breakdown(per_entry, "expected_intent", INTENTS),
            "language": _breakdown(per_entry, "language", LANGUAGES),
            "safety": _breakdown(per_entry, "safety", SAFETY_LABELS),
            "tag": _breakdown(per_entry, "tags"),
        },
    )


_PAIR_COLUMNS = (
    "entry_id",
    "trial",
    "status",
    "scored",
    "passed",
    "intent_ok",
    "shape_compliant",
    "refused",
    "safety",
    "ttft_ms",
    "ttfa_ms",
    "completion_ms",
    "faithfulness",
    "cost_usd",
)


def paired_frame(frame: pd.DataFrame, system_a: str, system_b: str) -> pd.DataFrame:
    """Turns of two systems joined on (entry_id, trial); the paired columns suffixed ``_a`` and ``_b``."""
    columns = [c for c in _PAIR_COLUMNS if c in frame.columns]
    a = frame.loc[frame["system_id"] == system_a, columns]
    b = frame.loc[frame["system_id"] == system_b, columns]
    return a.merge(b, on=["entry_id", "trial"], suffixes=("_a", "_b"), how="inner")


def _both_scored(pairs: pd.DataFrame) -> pd.DataFrame:
    return pairs[pairs["scored_a"].astype(bool) & pairs["scored_b"].astype(bool)]


def _comparison(frame: pd.DataFrame, info: SystemInfo, reference: str) -> SystemComparison:
    pairs = paired_frame(frame, info.id, reference)
    scored = _both_scored(pairs)
    pass_test = stats.mcnemar_exact(scored["passed_a"].to_numpy(bool), scored["passed_b"].to_numpy(bool))
    ok = pairs[(pairs["status_a"] == "succeeded") & (pairs["status_b"] == "succeeded")]
    ttft_test = stats.paired_latency_test(
        ok["ttft_ms_a"].to_numpy(float),
        ok["ttft_ms_b"].to_numpy(float),
        seed=_seed(info.id, reference, "ttft"),
    )
    return SystemComparison(
        system=info.id,
        reference=reference,
        emulated=info.emulated,
        pass_rate=pass_test,
        ttft_ms=ttft_test,
        pass_verdict=stats.verdict(pass_test, higher_is_better=True),
        ttft_verdict=stats.verdict(ttft_test, higher_is_better=False),
    )


# (metric, label, higher is better, kind, column, safety filter)
_VERDICT_METRICS: tuple[tuple[str, str, bool, str, str, str | None], ...] = (
    ("pass_rate", "Golden pass rate", True, "binary", "passed", None),
    ("intent_accuracy", "Intent accuracy", True, "binary", "intent_ok", None),
    ("voice_shape_compliance", "Voice-shape compliance", True, "binary", "shape_compliant", None),
    ("ttft_ms", "TTFT (first text)", False, "latency", "ttft_ms", None),
    ("ttfa_ms", "TTFA (first audio)", False, "latency", "ttfa_ms", None),
    ("completion_ms", "Completion time", False, "latency", "completion_ms", None),
    ("faithfulness", "Faithfulness", True, "latency", "faithfulness", None),
    ("refusal_on_must_refuse", "Refusal on must-refuse", True, "binary", "refused", "must_refuse"),
    ("over_refusal_on_benign", "Over-refusal on benign", False, "binary", "refused", "benign_medical"),
    ("cost_usd", "Cost (metered)", False, "latency", "cost_usd", None),
)


def baseline_verdicts(frame: pd.DataFrame, reference: str, baseline: str) -> list[BaselineVerdict]:
    """Per metric: does ``reference`` beat ``baseline``? McNemar for rates, Wilcoxon for the others."""
    pairs = paired_frame(frame, reference, baseline)
    out: list[BaselineVerdict] = []
    for metric, label, higher, kind, column, safety in _VERDICT_METRICS:
        if kind == "binary":
            part = _both_scored(pairs)
            if safety is not None:
                part = part[part["safety_a"] == safety]
            a, b = part[f"{column}_a"].to_numpy(bool), part[f"{column}_b"].to_numpy(bool)
            test = stats.mcnemar_exact(a, b)
            ref_value = float(a.mean()) if a.size else None
            base_value = float(b.mean()) if b.size else None
        else:
            part = pairs[(pairs["status_a"] == "succeeded") & (pairs["status_b"] == "succeeded")]
            a, b = part[f"{column}_a"].to_numpy(float), part[f"{column}_b"].to_numpy(float)
            keep = np.isfinite(a) & np.isfinite(b)
            test = stats.paired_latency_test(a, b, seed=_seed(reference, baseline, metric))
            if metric == "faithfulness" or metric == "cost_usd":
                ref_value = float(a[keep].mean()) if keep.any() else None
                base_value = float(b[keep].mean()) if keep.any() else None
            else:
                ref_value = float(np.median(a[keep])) if keep.any() else None
                base_value = float(np.median(b[keep])) if keep.any() else None
        out.append(
            BaselineVerdict(
                metric=metric,
                label=label,
                higher_is_better=higher,
                reference_value=ref_value,
                baseline_value=base_value,
                verdict=stats.verdict(test, higher),
                test=test.test,
                n_pairs=test.n_pairs,
                p_value=test.p_value,
            )
        )
    return out


def _role(run: RunInfo, role: str) -> str | None:
    return next((s.id for s in run.systems if s.role == role), None)


def summarize_frame(
    run: RunInfo,
    frame: pd.DataFrame,
    golden: GoldenSet,
    judge_name: str,
    judge_info: dict[str, Any] | None = None,
    fluency_ratings: pd.DataFrame | None = None,
) -> RunSummary:
    """A ``RunSummary`` from an already scored frame (``scored_turns_dataframe``)."""
    judge_info = judge_info or {}
    systems_info = list(run.systems)
    not_in_golden = int((~frame["in_golden"]).sum()) if len(frame) else 0
    frame = frame[frame["in_golden"]] if not_in_golden else frame  # other datasets' turns are not summarized
    groups = {str(k): g for k, g in frame.groupby("system_id", sort=False)} if len(frame) else {}
    summaries = [
        _system_summary(s, groups.get(s.id, frame.iloc[0:0]), judge_name, judge_info, fluency_ratings)
        for s in systems_info
    ]
    reference = _role(run, "reference")
    baseline = _role(run, "baseline")
    comparisons = [_comparison(frame, s, reference) for s in systems_info if reference and s.id != reference]
    verdicts = baseline_verdicts(frame, reference, baseline) if reference and baseline else []
    notes = []
    if not reference:
        notes.append("no system has role 'reference': no paired comparisons")
    if not baseline:
        notes.append("no system has role 'baseline': no beats-the-baseline verdicts")
    if not_in_golden:
        notes.append(
            f"{not_in_golden} stored turns name entries that are not in {golden.path}; they are not scored"
        )
    emulated = [s.id for s in run.systems if s.emulated]
    return RunSummary(
        run_id=run.run_id,
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
        pricing_dates={s.id: s.cost.plan.pricing_date for s in summaries if s.cost.plan is not None},
        turns_not_in_golden=not_in_golden,
        systems=summaries,
        comparisons=comparisons,
        baseline_verdicts=verdicts,
        notes=notes,
    )


def summarize_run(
    store: Store,
    run_id: str,
    golden: GoldenSet,
    *,
    judge: FaithfulnessJudge | None = None,
    fluency_ratings: pd.DataFrame | None = None,
) -> RunSummary:
    """Summarize a stored run (see the module docstring); deterministic: same store, same summary.

    ``fluency_ratings``: reviewer ratings with columns ``system_id, entry_id, rating`` (1-5) and optionally
    ``rater_id``; without them every system's fluency is "not rated".
    """
    judge = judge or OfflineFaithfulnessChecker()
    run, frame, judge_info = _load(store, run_id, golden, judge)
    return summarize_frame(run, frame, golden, judge.name, judge_info, fluency_ratings)


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
            "n_turns": s.n_turns,
            "executed": s.executed,
            "execution_failures": s.execution_failures,
            "pass_rate": s.pass_rate.rate,
            "pass_rate_ci_low": s.pass_rate.ci.low,
            "pass_rate_ci_high": s.pass_rate.ci.high,
            "intent_accuracy": s.intent_accuracy.rate,
        }
        for name in ("ttft_ms", "ttfa_ms", "completion_ms"):
            stat: stats.QuantileStat = getattr(s, name)
            base = name.removesuffix("_ms")
            row.update(
                {
                    f"{base}_n": stat.n,
                    f"{base}_p50_ms": stat.p50,
                    f"{base}_p50_ci_low": stat.p50_ci.low,
                    f"{base}_p50_ci_high": stat.p50_ci.high,
                    f"{base}_p95_ms": stat.p95,
                    f"{base}_p95_ci_low": stat.p95_ci.low,
                    f"{base}_p95_ci_high": stat.p95_ci.high,
                }
            )
        for v in s.vendor_latency:
            row[f"vendor_{v.name}_p50_ms"] = v.stat.p50
        row["compliance"] = s.compliance.overall.rate
        for check, prop in s.compliance.by_check.items():
            row[f"compliance_{check}"] = prop.rate
        row.update(
            {
                "compliance_disagreements": s.compliance.disagreements,
                "faithfulness": s.faithfulness.mean,
                "faithfulness_judge": s.faithfulness.judge,
                "refusal_rate_must_refuse": s.safety.refusal_on_must_refuse.rate,
                "over_refusal_rate_benign": s.safety.over_refusal_on_benign.rate,
                "cost_per_1000_turns_usd": s.cost.per_1000_turns_usd,
                "vendor_cost_per_1000_turns_usd": s.cost.vendor_reported_per_1000_turns_usd,
                "pricing_plan": f"{s.cost.plan.vendor}/{s.cost.plan.plan_id}" if s.cost.plan else None,
                "pricing_date": s.cost.plan.pricing_date if s.cost.plan else None,
                "fluency": s.fluency.mean if s.fluency.status == "rated" else "not rated",
            }
        )
        comparison = comparisons.get(s.id)
        row["pass_p_value_vs_reference"] = comparison.pass_rate.p_value if comparison else None
        row["ttft_p_value_vs_reference"] = comparison.ttft_ms.p_value if comparison else None
        rows.append(row)
    return pd.DataFrame(rows)
