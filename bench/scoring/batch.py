"""Scoring many turns at once: each distinct (entry, observation) scored once, stored, reused.

``score_observations(rows, golden, store=...)`` takes the raw fields of many turns and returns one tuple of
``SCORE_COLUMNS`` values per turn. Turns are keyed by ``bench.scoring.digest.turn_digest``; keys already in the
scores table (``bench.store.scores``) are read back, the rest are scored — in a small pool of forked worker
processes when there are many and no other thread is alive — and written to the table, so the next report, gate
or score of any run with the same content only aggregates. ``BENCH_SCORE_WORKERS`` sets the pool size (default:
the CPU count, at most 4; 1 scores in this process).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.dataset import GoldenEntry, GoldenSet
from bench.records import TurnRecord
from bench.scoring import judges as scoring_judges
from bench.scoring.digest import code_version, entry_fingerprint, turn_digest, turn_prefix
from bench.scoring.intent import intent_tool_calls
from bench.scoring.judges import ScoringJudges
from bench.scoring.turn import SCORE_COLUMNS, score_row, score_turn

#: fewer pending turns than this are scored in this process (a pool costs more than it saves)
POOL_MIN_PENDING = 400
_MEMO_LIMIT = 200_000


@dataclass
class ScoringStats:
    """What a batch did: turns seen, distinct keys, read from the store, newly scored, seconds spent scoring."""

    turns: int = 0
    distinct: int = 0
    from_store: int = 0
    from_memo: int = 0
    scored: int = 0
    workers: int = 1
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)


#: digest -> values, for repeated reports in one process (bounded; the store is the source of truth)
_MEMO: dict[str, tuple] = {}
_WORK: dict[str, Any] = {}


def columns_version() -> str:
    """The version the scores table files turn scores under: the code version plus the column layout."""
    return f"{code_version()}:{len(SCORE_COLUMNS)}"


def _parse_tools(value: Any) -> list[dict[str, Any]]:
    if value is None:
        return []
    if isinstance(value, str):
        if value in ("[]", ""):
            return []
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return []
    return intent_tool_calls(value if isinstance(value, list) else [])


def _value(value: Any) -> Any:
    """None for a missing value (pandas gives NaN for a missing string)."""
    return None if value is None or (isinstance(value, float) and value != value) else value


def _score_one(item: tuple[str, tuple]) -> tuple:
    entry_id, observed = item
    answer, label, target, tools, flag = observed
    entry: GoldenEntry = _WORK["entries"][entry_id]
    record = TurnRecord(run_id="", system_id="", entry_id=entry_id, status="succeeded", answer=answer or "",
                        conversational_intent=label, target_language=target, tool_calls=_parse_tools(tools),
                        self_reported_compliant=flag)
    return score_row(score_turn(entry, record, judges=_WORK["judges"]))


def _workers(pending: int) -> int:
    configured = os.environ.get("BENCH_SCORE_WORKERS")
    if configured:
        try:
            return max(1, int(configured))
        except ValueError:
            return 1
    if pending < POOL_MIN_PENDING or "fork" not in multiprocessing.get_all_start_methods():
        return 1
    if threading.active_count() > 1:  # forking a process with other threads alive risks a child on a held lock
        return 1
    return max(1, min(os.cpu_count() or 1, 4))


def _score_pending(items: list[tuple[str, tuple]], workers: int) -> list[tuple]:
    if workers <= 1 or len(items) < 2:
        return [_score_one(item) for item in items]
    chunk = max(16, min(512, len(items) // (workers * 8) or 1))
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        return pool.map(_score_one, items, chunksize=chunk)


def failed_row(entry: GoldenEntry, reason: str | None) -> tuple:
    record = TurnRecord(run_id="", system_id="", entry_id=entry.id, status="failed", failure_reason=reason)
    return score_row(score_turn(entry, record))


def score_observations(
    rows: Sequence[tuple[str, str, str | None, str | None, str | None, str | None, Any, bool | None]],
    golden: GoldenSet,
    *,
    store: Any = None,
    judges: ScoringJudges | None = None,
    stats: ScoringStats | None = None,
) -> list[tuple | None]:
    """Score ``rows`` of (entry_id, status, failure_reason, answer, label, target_language, tool_calls,
    self_reported_compliant); None for turns whose entry is not in ``golden``."""
    import time

    from bench.store.scores import ScoreStore

    stats = stats if stats is not None else ScoringStats()
    judges = judges or scoring_judges.offline()
    entries = golden.by_id()
    prefixes = {e.id: turn_prefix(entry_fingerprint(e), judges.name) for e in golden.entries}
    out: list[tuple | None] = [None] * len(rows)
    digests: list[str | None] = [None] * len(rows)
    failed_cache: dict[tuple[str, str | None], tuple] = {}
    first_item: dict[str, tuple[str, tuple]] = {}
    for i, (entry_id, status, reason, answer, label, target, tools, flag) in enumerate(rows):
        reason, answer, label, target, flag = map(_value, (reason, answer, label, target, flag))
        entry = entries.get(entry_id)
        if entry is None:
            continue
        if status != "succeeded":
            key = (entry_id, reason)
            if key not in failed_cache:
                failed_cache[key] = failed_row(entry, reason)
            out[i] = failed_cache[key]
            continue
        if not isinstance(tools, str):  # records in memory; the store gives the JSON text
            tools = json.dumps(tools or [], ensure_ascii=False)
        observed = (answer or "", label, target, tools, None if flag is None else bool(flag))
        digest = turn_digest(prefixes[entry_id], judges.name, observed)
        digests[i] = digest
        if digest not in first_item:
            first_item[digest] = (entry_id, observed)
    stats.turns += len(rows)
    stats.distinct += len(first_item)
    values: dict[str, tuple] = {}
    for digest in first_item:
        memo = _MEMO.get(digest)
        if memo is not None:
            values[digest] = memo
    stats.from_memo += len(values)
    scores = ScoreStore(store, "turn", columns_version()) if store is not None else None
    missing = [d for d in first_item if d not in values]
    if scores is not None and missing:
        stored = scores.get_many(missing)
        for digest, row in stored.items():
            values[digest] = tuple(row)
        stats.from_store += len(stored)
    pending = [d for d in first_item if d not in values]
    if pending:
        started = time.perf_counter()
        workers = _workers(len(pending))
        _WORK.update({"entries": entries, "judges": judges})
        computed = _score_pending([first_item[d] for d in pending], workers)
        stats.seconds += time.perf_counter() - started
        stats.scored += len(pending)
        stats.workers = max(stats.workers, workers)
        for digest, scored in zip(pending, computed, strict=True):
            values[digest] = tuple(scored)
        if scores is not None:
            scores.put_many((d, values[d]) for d in pending)
    if len(_MEMO) > _MEMO_LIMIT:
        _MEMO.clear()
    for digest in first_item:
        _MEMO[digest] = values[digest]
    for i, turn_digest_or_none in enumerate(digests):
        if turn_digest_or_none is not None:
            out[i] = values[turn_digest_or_none]
    return out
