"""The review workflow's own tables in the run store, written through the store's connection and lock.

The store (schema v2) has ``artifacts`` and ``ratings``. The reviewer workflow adds, in the same SQLite file:

- ``review_clips`` — the clip index of a run: one row per answer with audio (system, conversation, trial, turn,
  entry, language, question, where the audio came from and which engine synthesized it);
- ``review_queue`` — each reviewer's blinded queue per (run, language), fixed when first built so a reviewer can
  stop and resume;
- ``review_rating_context`` — per rating: the queue position it was given at, whether that position was a
  self-consistency repeat, and its source (``web`` or ``import:<file>``);
- ``review_imports`` — the content hash of every imported sheet, so the same file is not imported twice.

Every write here is one transaction under the store's lock: a rating and its context together, a whole imported
sheet together (all rows or none), a run's synthesized artifacts and its clip index together.
"""

from __future__ import annotations

import json
import re
import weakref
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, Field, field_validator

from bench.protocol.redact import redact
from bench.store import Store

#: flag id → label shown to the reviewer
FLAGS = {
    "mispronunciation": "Mispronunciation",
    "unnatural_prosody": "Unnatural prosody",
    "wrong_language": "Wrong language",
    "cut_off": "Cut off",
}
MAX_COMMENT = 2000
_REVIEWER = re.compile(r"^[\w][\w .'@-]{0,63}$")

_TABLES = """
CREATE TABLE IF NOT EXISTS review_clips (
    run_id TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    system_id TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    trial INTEGER NOT NULL,
    turn_index INTEGER NOT NULL,
    entry_id TEXT NOT NULL,
    language TEXT NOT NULL,
    question TEXT NOT NULL,
    kind TEXT NOT NULL,
    media_type TEXT NOT NULL,
    synthesized INTEGER NOT NULL,
    engine TEXT NOT NULL,
    voice TEXT NOT NULL,
    PRIMARY KEY (run_id, system_id, conversation_id, trial, turn_index)
);
CREATE INDEX IF NOT EXISTS review_clips_by_sha ON review_clips(run_id, sha256);
CREATE TABLE IF NOT EXISTS review_queue (
    run_id TEXT NOT NULL,
    reviewer TEXT NOT NULL,
    language TEXT NOT NULL,
    position INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    is_repeat INTEGER NOT NULL,
    seed TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (run_id, reviewer, language, position)
);
CREATE TABLE IF NOT EXISTS review_rating_context (
    rating_id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL,
    language TEXT NOT NULL,
    position INTEGER,
    is_repeat INTEGER NOT NULL,
    source TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS review_imports (
    sha256 TEXT PRIMARY KEY,
    file TEXT NOT NULL,
    rows INTEGER NOT NULL,
    imported_at TEXT NOT NULL
);
"""


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


#: per open store, the review tables known to exist in its file
_ready: weakref.WeakKeyDictionary[Store, set[str]] = weakref.WeakKeyDictionary()


def ensure_review_table(store: Store, ddl: str, table: str) -> None:
    """Run ``ddl`` (``CREATE TABLE IF NOT EXISTS …``) creating ``table`` in the store's file, once per open store."""
    if table in _ready.get(store, ()):
        return
    with store._lock:
        store._conn.executescript(ddl)
        store._conn.commit()
    _ready.setdefault(store, set()).add(table)


def review_table_exists(store: Store, table: str) -> bool:
    """Whether ``table`` exists in the store's file (readers answer "nothing" without creating it)."""
    if table in _ready.get(store, ()):
        return True
    row = store._conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (table,))
    return row.fetchone() is not None


def ensure_tables(store: Store) -> None:
    """Create the review tables in the store's file (once per open store)."""
    ensure_review_table(store, _TABLES, "review_rating_context")


def tables_exist(store: Store) -> bool:
    """Whether the review tables exist."""
    return review_table_exists(store, "review_rating_context")


def normalize_reviewer(name: str) -> str:
    """The reviewer's name with whitespace collapsed; ValueError when empty, too long or with odd characters."""
    cleaned = " ".join(str(name).split())
    if not _REVIEWER.match(cleaned):
        raise ValueError("a name of 1-64 letters, digits, spaces or . ' @ - _ (starting with a letter or digit)")
    return cleaned


class ClipRow(BaseModel):
    """One answer's clip as indexed for review (``system_id`` is never shown to a reviewer)."""

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


def record_clips(store: Store, run_id: str, artifacts: Iterable[ArtifactRow], clips: Iterable[ClipRow]) -> None:
    """Add synthesized artifacts and replace the run's clip index, in one transaction."""
    ensure_tables(store)
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
    if not tables_exist(store):
        return []
    rows = store._conn.execute(
        "SELECT run_id, sha256, system_id, conversation_id, trial, turn_index, entry_id, language, question, kind, "
        "media_type, synthesized, engine, voice FROM review_clips WHERE run_id=? "
        "ORDER BY system_id, conversation_id, trial, turn_index", (run_id,)).fetchall()
    names = list(ClipRow.model_fields)
    return [ClipRow(**dict(zip(names, row, strict=True))) for row in rows]


# queues -----------------------------------------------------------------------------------------------
class QueueItem(BaseModel):
    position: int
    sha256: str
    is_repeat: bool


def queue(store: Store, run_id: str, reviewer: str, language: str) -> list[QueueItem]:
    if not tables_exist(store):
        return []
    rows = store._conn.execute(
        "SELECT position, sha256, is_repeat FROM review_queue WHERE run_id=? AND reviewer=? AND language=? "
        "ORDER BY position", (run_id, reviewer, language)).fetchall()
    return [QueueItem(position=r[0], sha256=r[1], is_repeat=bool(r[2])) for r in rows]


def append_queue(store: Store, run_id: str, reviewer: str, language: str, items: list[QueueItem],
                 seed: str) -> None:
    """Add ``items`` to the reviewer's queue (positions must continue the stored ones)."""
    ensure_tables(store)
    with store._lock:
        try:
            store._conn.executemany(
                "INSERT INTO review_queue VALUES (?,?,?,?,?,?,?,?)",
                [(run_id, reviewer, language, i.position, i.sha256, int(i.is_repeat), seed, _now()) for i in items])
            store._conn.commit()
        except BaseException:
            store._conn.rollback()
            raise


# ratings ----------------------------------------------------------------------------------------------
class NewRating(BaseModel):
    """A rating as given (web form or sheet row), validated before anything is written."""

    run_id: str
    clip_id: str = Field(pattern=r"^[0-9a-f]{64}$")
    reviewer: str
    score: int = Field(ge=1, le=5)
    flags: list[str] = Field(default_factory=list)
    comment: str = Field(default="", max_length=MAX_COMMENT)
    language: str
    position: int | None = None
    is_repeat: bool = False
    source: str = "web"

    @field_validator("reviewer")
    @classmethod
    def _reviewer(cls, value: str) -> str:
        return normalize_reviewer(value)

    @field_validator("flags")
    @classmethod
    def _flags(cls, value: list[str]) -> list[str]:
        unknown = [f for f in value if f not in FLAGS]
        if unknown:
            raise ValueError(f"unknown flag {unknown[0]!r}; known: {', '.join(FLAGS)}")
        return [f for f in FLAGS if f in value]  # canonical order, no duplicates


def add_ratings(store: Store, ratings: list[NewRating], *, imported: tuple[str, str] | None = None) -> list[int]:
    """Commit ``ratings`` (and, for an import, the file's ``(sha256, name)``) in one transaction; their ids."""
    ensure_tables(store)
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
    if not tables_exist(store):
        return None
    row = store._conn.execute("SELECT imported_at FROM review_imports WHERE sha256=?", (sha256,)).fetchone()
    return row[0] if row else None


def review_ratings(store: Store, run_id: str) -> list[dict[str, Any]]:
    """Every rating of a run with its review context (ratings added without context count as first ratings)."""
    if not tables_exist(store):
        rows = store._conn.execute(
            "SELECT rating_id, artifact_sha256, reviewer, score, flags_json, comment, created_at, NULL, NULL, 0, "
            "'store' FROM ratings WHERE run_id=? ORDER BY rating_id", (run_id,)).fetchall()
    else:
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
    if not tables_exist(store):
        return {}
    rows = store._conn.execute(
        "SELECT c.position, r.artifact_sha256, r.score, r.flags_json, r.comment FROM ratings r "
        "JOIN review_rating_context c ON c.rating_id = r.rating_id WHERE r.run_id=? AND r.reviewer=? "
        "AND c.language=? AND c.position IS NOT NULL ORDER BY r.rating_id", (run_id, reviewer, language)).fetchall()
    latest: dict[int, dict[str, Any]] = {}
    for position, sha, score, flags, comment in rows:
        latest[int(position)] = {"clip_id": sha, "score": score, "flags": json.loads(flags), "comment": comment}
    return latest
