"""The review workflow's rows in the run store (schema v3) and the queries that read and write them.

The tables (created with the store, ``bench.store.sqlite._SCHEMA_V3``):

- ``review_clips`` — the clip index of a run: one row per answer with audio (system, conversation, trial, turn,
  entry, language, question, where the audio came from and which engine synthesized it);
- ``review_queue`` — each reviewer's blinded queue per (run, language), fixed when first built so a reviewer can
  stop and resume;
- ``review_rating_context`` — per rating (``ratings``): the queue position it was given at, whether that position
  was a self-consistency repeat, and its source (``web`` or ``import:<file>``);
- ``review_imports`` — the content hash of every imported sheet, so the same file is not imported twice;
- ``review_judge_scores`` — one naturalness score per (run, clip, judge).

Every write is one transaction under the store's lock: a rating and its context together, a whole imported sheet
together (all rows or none), a run's synthesized artifacts and its clip index together. The review workflow
(``bench.review``) validates what reviewers give before it reaches these functions.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from bench.protocol.redact import redact
from bench.store.sqlite import Store

#: how a naturalness judge works: a deterministic rule set or a language model
JudgeKind = Literal["heuristic", "llm"]


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class ClipRow(BaseModel):
    """One answer's clip as indexed for review (``system_id`` is never shown to a reviewer); ``sha256`` addresses
    its audio file, ``clip_id`` the clip (ratings and queues)."""

    run_id: str
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    system_id: str
    conversation_id: str
    trial: int
    turn_index: int = 0
    entry_id: str
    language: str
    question: str
    kind: str
    media_type: str = "audio/wav"
    synthesized: bool
    engine: str
    voice: str = ""

    @property
    def clip_id(self) -> str:
        """One clip per answer: two answers with identical audio are two clips, so they never share a rating."""
        key = f"{self.run_id}|{self.system_id}|{self.conversation_id}|{self.trial}|{self.turn_index}|{self.sha256}"
        return hashlib.sha256(key.encode()).hexdigest()


class ArtifactRow(BaseModel):
    run_id: str
    system_id: str
    conversation_id: str
    trial: int
    kind: str
    sha256: str
    path: str
    bytes: int
    media_type: str


class QueueItem(BaseModel):
    position: int
    sha256: str
    is_repeat: bool


class RatingRow(BaseModel):
    """A rating with its review context, as stored (``bench.review.ratings.NewRating`` validates what is given)."""

    run_id: str
    clip_id: str = Field(pattern=r"^[0-9a-f]{64}$")
    reviewer: str
    score: int = Field(ge=1, le=5)
    flags: list[str] = Field(default_factory=list)
    comment: str = ""
    language: str
    position: int | None = None
    is_repeat: bool = False
    source: str = "web"


class JudgeScore(BaseModel):
    """One clip's naturalness score by one judge."""

    run_id: str
    clip_id: str = Field(pattern=r"^[0-9a-f]{64}$")
    judge: str
    judge_kind: JudgeKind
    description: str
    language: str
    score: float = Field(ge=1, le=5)
    label: str
    factors: dict[str, int]
    justification: str = ""
    audio: dict[str, Any] = Field(default_factory=dict)
    created_at: str = ""


# clips --------------------------------------------------------------------------------------------------------
def record_clips(store: Store, run_id: str, artifacts: Iterable[ArtifactRow], clips: Iterable[ClipRow]) -> None:
    """Add synthesized artifacts and replace the run's clip index, in one transaction."""
    with store._lock:
        conn = store._conn
        try:
            conn.executemany(
                "INSERT OR REPLACE INTO artifacts VALUES (?,?,?,?,?,?,?,?,?)",
                [(a.run_id, a.system_id, a.conversation_id, a.trial, a.kind, a.sha256, a.path, a.bytes,
                  a.media_type) for a in artifacts])
            conn.execute("DELETE FROM review_clips WHERE run_id=?", (run_id,))
            conn.executemany(
                "INSERT INTO review_clips VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                [(c.run_id, c.sha256, c.system_id, c.conversation_id, c.trial, c.turn_index, c.entry_id,
                  c.language, c.question, c.kind, c.media_type, int(c.synthesized), c.engine, c.voice)
                 for c in clips])
            conn.commit()
        except BaseException:
            conn.rollback()
            raise


def clip_rows(store: Store, run_id: str) -> list[ClipRow]:
    """The run's clip index, by system, conversation, trial and turn."""
    rows = store._conn.execute(
        "SELECT run_id, sha256, system_id, conversation_id, trial, turn_index, entry_id, language, question, kind, "
        "media_type, synthesized, engine, voice FROM review_clips WHERE run_id=? "
        "ORDER BY system_id, conversation_id, trial, turn_index", (run_id,)).fetchall()
    names = list(ClipRow.model_fields)
    return [ClipRow(**dict(zip(names, row, strict=True))) for row in rows]


def forget_clips(store: Store, run_id: str) -> int:
    """Drop the run's clip index (the next ``voice-bench review clips`` rebuilds it); how many rows went."""
    with store._lock:
        cursor = store._conn.execute("DELETE FROM review_clips WHERE run_id=?", (run_id,))
        store._conn.commit()
        return cursor.rowcount


# queues -------------------------------------------------------------------------------------------------------
def queue(store: Store, run_id: str, reviewer: str, language: str) -> list[QueueItem]:
    rows = store._conn.execute(
        "SELECT position, sha256, is_repeat FROM review_queue WHERE run_id=? AND reviewer=? AND language=? "
        "ORDER BY position", (run_id, reviewer, language)).fetchall()
    return [QueueItem(position=r[0], sha256=r[1], is_repeat=bool(r[2])) for r in rows]


def append_queue(store: Store, run_id: str, reviewer: str, language: str, items: list[QueueItem],
                 seed: str) -> None:
    """Add ``items`` to the reviewer's queue (positions must continue the stored ones)."""
    with store._lock:
        try:
            store._conn.executemany(
                "INSERT INTO review_queue VALUES (?,?,?,?,?,?,?,?)",
                [(run_id, reviewer, language, i.position, i.sha256, int(i.is_repeat), seed, _now()) for i in items])
            store._conn.commit()
        except BaseException:
            store._conn.rollback()
            raise


# ratings ------------------------------------------------------------------------------------------------------
def add_ratings(store: Store, ratings: Sequence[RatingRow], *, imported: tuple[str, str] | None = None) -> list[int]:
    """Commit ``ratings`` (and, for an import, the file's ``(sha256, name)``) in one transaction; their ids."""
    ids: list[int] = []
    with store._lock:
        conn = store._conn
        try:
            if not conn.in_transaction:
                conn.execute("BEGIN IMMEDIATE")
            if imported is not None:
                conn.execute("INSERT INTO review_imports VALUES (?,?,?,?)",
                             (imported[0], imported[1], len(ratings), _now()))
            for r in ratings:
                cursor = conn.execute(
                    "INSERT INTO ratings (run_id, artifact_sha256, reviewer, score, flags_json, comment, created_at) "
                    "VALUES (?,?,?,?,?,?,?)",
                    (r.run_id, r.clip_id, r.reviewer, r.score, json.dumps(r.flags), redact(r.comment), _now()))
                rating_id = int(cursor.lastrowid or 0)
                conn.execute("INSERT INTO review_rating_context VALUES (?,?,?,?,?,?)",
                             (rating_id, r.run_id, r.language, r.position, int(r.is_repeat), r.source))
                ids.append(rating_id)
            conn.commit()
        except BaseException:
            conn.rollback()
            raise
    return ids


def imported_before(store: Store, sha256: str) -> str | None:
    """When the sheet with this content hash was imported, or None."""
    row = store._conn.execute("SELECT imported_at FROM review_imports WHERE sha256=?", (sha256,)).fetchone()
    return row[0] if row else None


def review_ratings(store: Store, run_id: str) -> list[dict[str, Any]]:
    """Every rating of a run with its review context (ratings added without context count as first ratings)."""
    rows = store._conn.execute(
        "SELECT r.rating_id, r.artifact_sha256, r.reviewer, r.score, r.flags_json, r.comment, r.created_at, "
        "c.language, c.position, COALESCE(c.is_repeat, 0), COALESCE(c.source, 'store') FROM ratings r "
        "LEFT JOIN review_rating_context c ON c.rating_id = r.rating_id WHERE r.run_id=? ORDER BY r.rating_id",
        (run_id,)).fetchall()
    return [{"rating_id": r[0], "clip_id": r[1], "reviewer": r[2], "score": r[3], "flags": json.loads(r[4]),
             "comment": r[5], "created_at": r[6], "language": r[7], "position": r[8], "is_repeat": bool(r[9]),
             "source": r[10]} for r in rows]


def ratings_by_position(store: Store, run_id: str, reviewer: str, language: str) -> dict[int, dict[str, Any]]:
    """The reviewer's latest rating at each queue position of (run, language)."""
    rows = store._conn.execute(
        "SELECT c.position, r.artifact_sha256, r.score, r.flags_json, r.comment FROM ratings r "
        "JOIN review_rating_context c ON c.rating_id = r.rating_id WHERE r.run_id=? AND r.reviewer=? "
        "AND c.language=? AND c.position IS NOT NULL ORDER BY r.rating_id", (run_id, reviewer, language)).fetchall()
    latest: dict[int, dict[str, Any]] = {}
    for position, sha, score, flags, comment in rows:
        latest[int(position)] = {"clip_id": sha, "score": score, "flags": json.loads(flags), "comment": comment}
    return latest


# judge scores -------------------------------------------------------------------------------------------------
def save_judge_score(store: Store, score: JudgeScore) -> None:
    """Store (or replace) one clip's score by one judge, in its own transaction."""
    with store._lock:
        try:
            store._conn.execute(
                "INSERT OR REPLACE INTO review_judge_scores VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                (score.run_id, score.clip_id, score.judge, score.judge_kind, score.description, score.language,
                 score.score, score.label, json.dumps(score.factors, sort_keys=True), redact(score.justification),
                 json.dumps(score.audio, sort_keys=True), score.created_at or _now()))
            store._conn.commit()
        except BaseException:
            store._conn.rollback()
            raise


def judge_scores(store: Store, run_id: str, judge: str | None = None) -> list[JudgeScore]:
    """The run's stored judge scores (of one judge when ``judge`` is given), by judge then clip."""
    query = ("SELECT run_id, clip_id, judge, judge_kind, description, language, score, label, factors_json, "
             "justification, audio_json, created_at FROM review_judge_scores WHERE run_id=?")
    params: tuple[str, ...] = (run_id,)
    if judge is not None:
        query += " AND judge=?"
        params += (judge,)
    rows = store._conn.execute(query + " ORDER BY judge, clip_id", params).fetchall()
    return [JudgeScore(run_id=r[0], clip_id=r[1], judge=r[2], judge_kind=r[3], description=r[4], language=r[5],
                       score=r[6], label=r[7], factors=json.loads(r[8]), justification=r[9], audio=json.loads(r[10]),
                       created_at=r[11]) for r in rows]
