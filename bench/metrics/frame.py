"""The scored per-turn frame of a run: raw observations from the store plus every stored score.

``load_run(store, run_id, golden, judge)`` reads the run's turns through the store's bulk field read (no pydantic
object per turn), scores them through ``bench.scoring.batch`` (each distinct content scored once and kept in
the scores table, so later reports only aggregate), adds faithfulness (judged against the context every system
was given: ``shared_context``; runs recorded before context parity fall back to each system's own
``retrieved_context``, labelled as such) and metered cost. ``scored_turns_dataframe`` is the public view.
``frame_from_records`` builds the same frame from in-memory records (the evaluator, no store).

One row per turn: a single-question entry is a conversation of one turn, each turn of a conversation entry is a
row of its own (``conversation_id``, ``turn_index``), so pass rates count turns.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from bench.cost import load_price_tables, resolve_plan, turn_costs
from bench.dataset import GoldenSet
from bench.errors import JudgeUnavailable
from bench.faithfulness import FaithfulnessJudge, OfflineFaithfulnessChecker
from bench.metrics.turntaking import TURN_TAKING_FIELDS
from bench.protocol.redact import redact
from bench.records import TurnRecord
from bench.scoring import criteria as criteria_sets
from bench.scoring.batch import ScoringStats, failed_row, score_observations
from bench.scoring.digest import code_version, entry_fingerprint, faithfulness_digest
from bench.scoring.judges import ScoringJudges
from bench.scoring.turn import SCORE_COLUMNS
from bench.store import RunInfo, Store

USAGE_COLUMNS = (
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
#: raw record fields the metrics read, pulled out of the stored JSON by SQLite (json_extract)
RAW_FIELDS = (
    "run_id",
    "system_id",
    "entry_id",
    "conversation_id",
    "turn_index",
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
    "caller_heard_ms",
    "input_mode",
    *USAGE_COLUMNS,
    *TURN_TAKING_FIELDS,
)
RAW_JSON_FIELDS = ("tool_calls", "vendor_latency_ms", "retrieved_context", "shared_context")

_BOOL_COLUMNS = (
    "scored",
    "tool_called",
    "labelled",
    "intent_ok",
    "intent_reported_ok",
    "target_language_ok",
    "shape_compliant",
    "forbidden_ok",
    "compliance_disagrees",
)
_NULLABLE_BOOL_PREFIXES = ("check_", "crit_", "passed_")
_NULLABLE_BOOL_COLUMNS = (
    "intent_said_ok",
    "declines",
    "refers",
    "gives_advice",
    "medical_refusal",
    "refused",
    "referral",
    "facts_stated",
)
_TEXT_COLUMNS = ("observed_intent", "intent_source", "intent_judge", "reported_intent", "said_intent",
                 "answer_language")
_CATEGORY_COLUMNS = ("system_id", "status", "language", "expected_intent", "safety", "latency_basis", "intent_source")
#: where a turn's faithfulness context came from
CONTEXT_SHARED = "shared_context"
#: a judge that failed to answer this many answers in a row is not asked about the rest (each would wait out the
#: client's retries); they count as not judged, and the next report asks again
JUDGE_GIVE_UP_AFTER = 3
CONTEXT_OWN = "retrieved_context (own; run before context parity)"


@contextmanager
def phase(timings: dict[str, float] | None, name: str) -> Iterator[None]:
    """Add the wall time of the block to ``timings[name]`` (no-op when ``timings`` is None)."""
    start = time.perf_counter()
    try:
        yield
    finally:
        if timings is not None:
            timings[name] = timings.get(name, 0.0) + time.perf_counter() - start


@dataclass
class LoadInfo:
    """What loading a run did besides the frame: judge errors and how the scores were obtained."""

    judge_errors: int = 0
    first_error: str | None = None
    scoring: ScoringStats = field(default_factory=ScoringStats)
    faithfulness_scored: int = 0
    faithfulness_from_store: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {"errors": self.judge_errors, "first_error": self.first_error}


def raw_frame(store: Store, run_id: str) -> pd.DataFrame:
    """A run's raw turn fields as a frame (JSON-valued fields stay JSON text)."""
    columns = [*RAW_FIELDS, *RAW_JSON_FIELDS]
    rows = store.turn_fields(run_id, list(RAW_FIELDS), list(RAW_JSON_FIELDS))
    return pd.DataFrame.from_records([row[1:] for row in rows], columns=columns)


def raw_frame_from_records(records: list[TurnRecord]) -> pd.DataFrame:
    """The same raw frame from in-memory records."""
    rows = []
    for r in records:
        data = r.model_dump(include=set(RAW_FIELDS))
        row = [data.get(c) for c in RAW_FIELDS]
        row += [json.dumps(getattr(r, c), ensure_ascii=False) for c in RAW_JSON_FIELDS]
        rows.append(row)
    return pd.DataFrame.from_records(rows, columns=[*RAW_FIELDS, *RAW_JSON_FIELDS])


def latency_basis(mode: str, adapter: str = "", details: dict[str, Any] | None = None) -> str:
    """What a system's latency figures measure: ``in-process``, ``network`` or ``emulator profile``.

    A system may declare it (``options.latency_basis``); otherwise emulated systems measure the emulator's
    configured profile, live ones the network, and local ones what their adapter declares
    (``AdapterPlugin.local_latency_basis``: a generic endpoint is a network round trip, other local systems run
    in process).
    """
    options = (details or {}).get("options") or {}
    declared = options.get("latency_basis") if isinstance(options, dict) else None
    if isinstance(declared, str) and declared:
        return declared
    from bench.engine.registry import latency_basis_of  # the adapters' declarations (entry points), read lazily

    return latency_basis_of(adapter, mode)


def _to_nullable_bool(values: pd.Series) -> pd.Series:
    return pd.Series(pd.array(values.to_numpy(dtype=object), dtype="boolean"), index=values.index)


def _score_frame(values: list[tuple | None], golden: GoldenSet) -> pd.DataFrame:
    unscored = failed_row(golden.entries[0], "entry not in the golden set") if golden.entries else None
    # a turn outside the golden set gets the unscored row (there is one whenever the set has an entry)
    rows = [row for row in (v if v is not None else unscored for v in values) if row is not None]
    frame = pd.DataFrame.from_records(rows, columns=list(SCORE_COLUMNS)) if rows else pd.DataFrame(
        columns=list(SCORE_COLUMNS))
    if unscored is not None:
        missing = [i for i, v in enumerate(values) if v is None]
        if missing:
            frame.loc[missing, [f"reasons_{c}" for c in criteria_sets.CRITERIA_SETS]] = "entry not in the golden set"
    for column in _BOOL_COLUMNS:
        frame[column] = frame[column].fillna(False).astype(bool)
    for column in frame.columns:
        if column.startswith(_NULLABLE_BOOL_PREFIXES) or column in _NULLABLE_BOOL_COLUMNS:
            frame[column] = _to_nullable_bool(frame[column])
    frame["sentence_count"] = pd.to_numeric(frame["sentence_count"], errors="coerce").astype("Int64")
    for column in _TEXT_COLUMNS:
        texts = frame[column].astype(object)
        frame[column] = texts.where(texts.notna(), None)
    return frame


def build_frame(
    run: RunInfo,
    raw: pd.DataFrame,
    golden: GoldenSet,
    *,
    store: Store | None = None,
    judges: ScoringJudges | None = None,
    criteria: str | None = None,
    info: LoadInfo | None = None,
) -> pd.DataFrame:
    """The scored frame of ``raw`` turns (see the module docstring); ``criteria`` defaults to the run's own."""
    info = info if info is not None else LoadInfo()
    entries = golden.by_id()
    run_criteria = criteria or criteria_sets.of_run(run.config)[0]
    criteria_sets.get(run_criteria)
    columns = ("entry_id", "status", "failure_reason", "answer", "conversational_intent", "target_language",
               "tool_calls", "self_reported_compliant")
    rows = list(zip(*(raw[c].to_numpy(dtype=object) for c in columns), strict=True)) if len(raw) else []
    values = score_observations(rows, golden, store=store, judges=judges, stats=info.scoring)
    scores = _score_frame(values, golden)
    entry_meta = pd.DataFrame.from_records(
        [(e.id, e.language, e.voice_expected.conversational_intent, e.safety, ";".join(e.tags),
          e.voice_expected.disclaimer_required, getattr(e, "parallel_of", None)) for e in golden.entries],
        columns=["entry_id", "language", "expected_intent", "safety", "tags", "disclaimer_required",
                 "parallel_of"],
    ).drop_duplicates("entry_id")
    systems = {s.id: s for s in run.systems}
    out = raw[["run_id", "system_id"]].copy()
    out["role"] = raw["system_id"].map({s.id: s.role for s in run.systems}).fillna("candidate")
    out["mode"] = raw["system_id"].map({s.id: s.mode for s in run.systems}).fillna("unknown")
    out["emulated"] = (out["mode"] == "emulated").astype(bool)
    out["latency_basis"] = raw["system_id"].map(
        {s.id: latency_basis(s.mode, s.adapter, s.details) for s in systems.values()}).fillna("unknown")
    for column in ("entry_id", "trial", "status", "failure_reason", "attempts"):
        out[column] = raw[column]
    # the conversation each turn belongs to (a single question is turn 0 of itself; records written before
    # conversation ids were stored count as such)
    out["conversation_id"] = raw["conversation_id"].where(raw["conversation_id"].notna(), raw["entry_id"])
    out["turn_index"] = pd.to_numeric(raw["turn_index"], errors="coerce").fillna(0).astype(int)
    meta = raw[["entry_id"]].merge(entry_meta, on="entry_id", how="left")
    for column in ("language", "expected_intent", "safety", "tags", "disclaimer_required", "parallel_of"):
        out[column] = meta[column].to_numpy()
    out["tags"] = out["tags"].fillna("")
    out["in_golden"] = raw["entry_id"].isin(list(entries)).astype(bool)
    for column in ("ttft_ms", "ttfa_ms", "completion_ms", "caller_heard_ms", *USAGE_COLUMNS):
        out[column] = pd.to_numeric(raw[column], errors="coerce").astype(
            "Int64" if column.endswith("_tokens") else float)
    out["input_mode"] = raw["input_mode"].fillna("text")
    for column in TURN_TAKING_FIELDS:  # the turn-taking figures' raw fields (bench.metrics.turntaking)
        out[column] = raw[column].astype(object).where(raw[column].notna(), None)
    out["answer"] = raw["answer"].fillna("")
    out["label_intent"] = raw["conversational_intent"]
    out["label_target_language"] = raw["target_language"]
    out["self_reported_compliant"] = raw["self_reported_compliant"]
    out = pd.concat([out.reset_index(drop=True), scores.reset_index(drop=True)], axis=1)
    # low-cardinality labels as categories: the summary selects on them many times
    for column in _CATEGORY_COLUMNS:
        out[column] = out[column].astype("category")
    out["criteria"] = run_criteria
    out["passed"] = out[f"passed_{run_criteria}"].fillna(False).astype(bool)
    out["reasons"] = out[f"reasons_{run_criteria}"]
    latency = raw["vendor_latency_ms"].reset_index(drop=True)
    has_latency = latency.notna() & (latency != "{}")
    if has_latency.any():
        parsed = pd.DataFrame.from_records([json.loads(v) for v in latency[has_latency]],
                                           index=latency.index[has_latency])
        for name in sorted(parsed.columns):
            out[f"vendor_latency.{name}"] = pd.to_numeric(parsed[name], errors="coerce").reindex(out.index)
    return out


def _faith_context(shared: Any, own: Any) -> tuple[str, str]:
    """(context JSON, source) for one turn: the shared context when the run recorded one, else its own."""
    if isinstance(shared, str) and shared not in ("", "[]", "null"):
        return shared, CONTEXT_SHARED
    return (own if isinstance(own, str) and own not in ("", "null") else "[]"), CONTEXT_OWN


def add_faithfulness(frame: pd.DataFrame, raw: pd.DataFrame, golden: GoldenSet, judge: FaithfulnessJudge,
                     *, store: Store | None = None, info: LoadInfo | None = None) -> None:
    """Faithfulness per eligible turn (executed, answered entry, answered by the system, non-empty answer),
    judged against the context every system was given; stored under its digest like the turn scores."""
    from bench.store.scores import ScoreStore

    info = info if info is not None else LoadInfo()
    entries = golden.by_id()
    eligible = (frame["scored"] & (frame["expected_intent"] == "answered") & (frame["observed_intent"] == "answered")
                & (frame["answer"].str.strip() != "")).to_numpy()
    n = len(frame)
    scores = np.full(n, np.nan)
    supported_all = np.full(n, np.nan)
    sources = np.full(n, None, dtype=object)
    index: list[int] = np.flatnonzero(eligible).tolist()
    shared = raw["shared_context"].to_numpy(dtype=object)
    own = raw["retrieved_context"].to_numpy(dtype=object)
    entry_ids, answers = frame["entry_id"].to_numpy(dtype=object), frame["answer"].to_numpy(dtype=object)
    prints = {e.id: entry_fingerprint(e) for e in golden.entries}
    keyed: list[tuple[int, str]] = []
    pending: dict[str, tuple[str, str, str]] = {}
    for i in index:
        context, source = _faith_context(shared[i], own[i])
        sources[i] = source
        digest = faithfulness_digest(prints[entry_ids[i]], judge.name, answers[i], context)
        keyed.append((i, digest))
        pending.setdefault(digest, (entry_ids[i], answers[i], context))
    stored = ScoreStore(store, "faithfulness", f"{code_version()}:{judge.name}") if store is not None else None
    values: dict[str, list] = stored.get_many(list(pending)) if stored is not None and pending else {}
    info.faithfulness_from_store += len(values)
    new: list[tuple[str, list]] = []
    unreachable_in_a_row = 0
    for digest, (entry_id, answer, context) in pending.items():
        if digest in values:
            continue
        if unreachable_in_a_row >= JUDGE_GIVE_UP_AFTER:  # the judge is down: the rest count as not judged
            info.judge_errors += 1
            continue
        entry = entries[entry_id]
        try:
            result = judge.evaluate(question=entry.phone_question, answer=answer, context=json.loads(context),
                                    key_facts=list(entry.reference.key_facts) if entry.reference else [],
                                    language=entry.language)
        except Exception as exc:  # a judge outage must not lose the rest of the report
            info.judge_errors += 1
            unreachable_in_a_row = unreachable_in_a_row + 1 if isinstance(exc, JudgeUnavailable) else 0
            text = str(exc) if isinstance(exc, JudgeUnavailable) else f"{type(exc).__name__}: {exc}"
            # redacted before it is cut (a cut copy of a key is harder to recognize) and before it is stored
            info.first_error = info.first_error or redact(text)[:300]
            continue
        unreachable_in_a_row = 0
        row = [result.score, None if result.score is None else float(result.n_supported == result.n_claims)]
        values[digest] = row
        new.append((digest, row))
    info.faithfulness_scored += len(new)
    if stored is not None and new:
        stored.put_many(new)
    for i, digest in keyed:
        scored = values.get(digest)
        if scored is None:
            continue
        scores[i] = np.nan if scored[0] is None else scored[0]
        supported_all[i] = np.nan if scored[1] is None else scored[1]
    frame["faithfulness"] = scores
    frame["faithfulness_all_supported"] = supported_all
    frame["faithfulness_judge"] = judge.name
    frame["faithfulness_context"] = sources


def add_costs(frame: pd.DataFrame, run: RunInfo) -> None:
    tables = load_price_tables()
    frame["cost_usd"] = np.nan
    frame["pricing_plan"] = None
    for system in run.systems:
        mask = frame["system_id"] == system.id
        if not mask.any():
            continue
        resolved = resolve_plan(system.adapter, system.mode, system.details, tables)
        if resolved is None:
            continue
        table, plan, _ = resolved
        meters = [c for c in USAGE_COLUMNS if c in frame.columns]
        frame.loc[mask, "cost_usd"] = turn_costs(frame.loc[mask, meters], plan)
        frame.loc[mask, "pricing_plan"] = f"{table.vendor}/{plan.id}"


def load_run(
    store: Store,
    run_id: str,
    golden: GoldenSet,
    judge: FaithfulnessJudge | None = None,
    *,
    with_faithfulness: bool = True,
    timings: dict[str, float] | None = None,
    criteria: str | None = None,
    judges: ScoringJudges | None = None,
    info: LoadInfo | None = None,
) -> tuple[RunInfo, pd.DataFrame, LoadInfo]:
    """(run, scored frame, load info) for a stored run; scores are read from / written to the scores table."""
    info = info if info is not None else LoadInfo()
    with phase(timings, "read turns"):
        run = store.get_run(run_id)
        raw = raw_frame(store, run.run_id)
    with phase(timings, "score turns"):
        frame = build_frame(run, raw, golden, store=store, judges=judges, criteria=criteria, info=info)
    if with_faithfulness:
        with phase(timings, "faithfulness"):
            add_faithfulness(frame, raw, golden, judge or OfflineFaithfulnessChecker(), store=store, info=info)
    with phase(timings, "cost"):
        add_costs(frame, run)
    return run, frame, info


def frame_from_records(
    run: RunInfo, records: list[TurnRecord], golden: GoldenSet, *, criteria: str | None = None,
    judges: ScoringJudges | None = None,
) -> pd.DataFrame:
    """The scored frame of in-memory ``records`` (no store, no faithfulness, no cost)."""
    return build_frame(run, raw_frame_from_records(records), golden, judges=judges, criteria=criteria)


def scored_turns_dataframe(
    store: Store, run_id: str, golden: GoldenSet, *, judge: FaithfulnessJudge | None = None,
    criteria: str | None = None,
) -> pd.DataFrame:
    """One row per stored turn of ``run_id``: observations, harness scores, faithfulness and metered cost.

    Columns include ``system_id, role, mode, emulated, latency_basis, entry_id, trial, status, failure_reason,
    language, expected_intent, safety, tags`` (";"-joined), ``parallel_of, scored, criteria, passed`` (under
    the run's criteria), ``passed_seed003, passed_strict`` (nullable: None when a checker was unavailable),
    ``reasons, reasons_seed003, reasons_strict, observed_intent, intent_source`` (tool_call / system_label /
    inferred), ``intent_judge, reported_intent, tool_called, said_intent, answer_language, intent_ok,
    intent_reported_ok, intent_said_ok, target_language_ok, shape_compliant, check_<sub-check>,
    sentence_count, compliance_disagrees, declines, refers, gives_advice, medical_refusal, refused, referral,
    facts_stated, facts_missing, crit_<criterion>, faithfulness, faithfulness_judge, faithfulness_context,
    ttft_ms, ttfa_ms, completion_ms``, the usage meters, ``vendor_cost_usd, cost_usd, pricing_plan`` and one
    ``vendor_latency.<name>`` column per vendor figure.
    """
    return load_run(store, run_id, golden, judge, criteria=criteria)[1]
