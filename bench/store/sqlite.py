"""The SQLite file of the store: runs (with their kind), conversations, turns, events, artifact references, ratings
and the review workflow's tables (schema v4).

One record shape for every job: a conversation (golden single question, golden conversation entry, simulation
trial, imported call) is keyed (run, system, conversation id, trial), and each of its turns (conversation id, turn
index). A turn's ``entry_id`` names what it is scored against: the golden entry (a conversation entry's turn is
``<conversation id>/<turn number>``); a simulation's turns name their conversation (the matrix cell).

Each finished conversation is committed in one transaction with its turns, events and artifacts (the writer commits
the conversations that finished meanwhile together, one transaction for all of them: a conversation is never
half-recorded), so a killed run keeps everything already recorded and resumes without repeating paid work.
Everything written passes through the redactors first (credentials and personal data: ``bench.privacy``).
Version-1, -2 and -3 stores are migrated in place (every row is kept; v3 adds each run's kind and takes in the
review tables that version 2 left to ``bench.review``, with their rows; v4 keys turns by conversation id and turn
index, instead of by entry id, and gives the simulation turns stored as ``<cell>#<NNN>`` their conversation's id as
entry id); a store written by a newer harness is
refused with a clear message. ``turns_dataframe`` is the public pandas view of a run; ``bench.store.query`` and
``bench.store.review`` hold the other named queries.

Each run has a kind (``golden``, ``audio-loop``, ``simulation``, ``imported``); ``latest`` means the newest run of
one kind, golden unless the caller asks for another (``--kind``).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from bench.errors import ConfigError
from bench.privacy import scrub, scrub_json, scrub_many, scrub_value
from bench.records import TurnRecord

if TYPE_CHECKING:  # pandas is imported by turns_dataframe (the writer process does not need it)
    import pandas as pd

STORE_SCHEMA_VERSION = 4

#: what produced a run: the golden-set benchmark, the audio loop, a simulation, or rows imported from elsewhere
RunKind = Literal["golden", "audio-loop", "simulation", "imported"]
RUN_KINDS: tuple[str, ...] = ("golden", "audio-loop", "simulation", "imported")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    finished_at TEXT,
    status TEXT NOT NULL,
    dataset_path TEXT NOT NULL,
    dataset_sha256 TEXT NOT NULL,
    trials INTEGER NOT NULL,
    systems_json TEXT NOT NULL,
    config_json TEXT NOT NULL,
    harness_version TEXT NOT NULL,
    kind TEXT NOT NULL DEFAULT 'golden'
);
CREATE TABLE IF NOT EXISTS turns (
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    system_id TEXT NOT NULL,
    entry_id TEXT NOT NULL,
    trial INTEGER NOT NULL,
    status TEXT NOT NULL,
    record_json TEXT NOT NULL,
    recorded_at TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    turn_index INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, system_id, conversation_id, trial, turn_index)
);
CREATE INDEX IF NOT EXISTS turns_by_run ON turns(run_id, system_id);
"""

#: schema version 4 keys turns by (conversation, turn index): the turns table is rebuilt with every row kept
_MIGRATE_TURNS_V4 = """
ALTER TABLE turns RENAME TO turns_v3;
DROP INDEX IF EXISTS turns_by_run;
CREATE TABLE turns (
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    system_id TEXT NOT NULL,
    entry_id TEXT NOT NULL,
    trial INTEGER NOT NULL,
    status TEXT NOT NULL,
    record_json TEXT NOT NULL,
    recorded_at TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    turn_index INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, system_id, conversation_id, trial, turn_index)
);
INSERT OR REPLACE INTO turns
    SELECT run_id, system_id,
           CASE WHEN substr(entry_id, 1, length(conversation_id) + 1) = conversation_id || '#' THEN conversation_id
                ELSE entry_id END,
           trial, status, record_json, recorded_at, COALESCE(conversation_id, entry_id), turn_index
    FROM turns_v3 ORDER BY rowid;
UPDATE turns SET record_json = json_set(record_json, '$.entry_id', entry_id, '$.conversation_id', conversation_id)
    WHERE json_valid(record_json) AND (json_extract(record_json, '$.entry_id') IS NOT entry_id
        OR json_extract(record_json, '$.conversation_id') IS NOT conversation_id);
DROP TABLE turns_v3;
CREATE INDEX IF NOT EXISTS turns_by_run ON turns(run_id, system_id);
"""

#: tables added by schema version 2 (also how a version-1 store is migrated)
_SCHEMA_V2 = """
CREATE TABLE IF NOT EXISTS conversations (
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    system_id TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    trial INTEGER NOT NULL,
    status TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    failure_code TEXT,
    failure_reason TEXT,
    started_at TEXT NOT NULL,
    finished_at TEXT NOT NULL,
    record_json TEXT NOT NULL,
    PRIMARY KEY (run_id, system_id, conversation_id, trial)
);
CREATE TABLE IF NOT EXISTS events (
    run_id TEXT NOT NULL,
    system_id TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    trial INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    t_ms REAL NOT NULL,
    type TEXT NOT NULL,
    response_id TEXT,
    detail_json TEXT NOT NULL,
    PRIMARY KEY (run_id, system_id, conversation_id, trial, seq)
);
CREATE TABLE IF NOT EXISTS artifacts (
    run_id TEXT NOT NULL,
    system_id TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    trial INTEGER NOT NULL,
    kind TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    path TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    media_type TEXT NOT NULL,
    PRIMARY KEY (run_id, system_id, conversation_id, trial, kind)
);
CREATE INDEX IF NOT EXISTS artifacts_by_sha ON artifacts(run_id, sha256);
CREATE TABLE IF NOT EXISTS ratings (
    rating_id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL,
    artifact_sha256 TEXT NOT NULL,
    reviewer TEXT NOT NULL,
    score INTEGER NOT NULL,
    flags_json TEXT NOT NULL,
    comment TEXT NOT NULL,
    created_at TEXT NOT NULL
);
"""

#: tables added by schema version 3: the review workflow's (``bench.store.review``). Version 2 stores may hold them
#: already, created by the review workflow with this same DDL; they are kept with their rows.
_SCHEMA_V3 = """
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
CREATE TABLE IF NOT EXISTS review_judge_scores (
    run_id TEXT NOT NULL,
    clip_id TEXT NOT NULL,
    judge TEXT NOT NULL,
    judge_kind TEXT NOT NULL,
    description TEXT NOT NULL,
    language TEXT NOT NULL,
    score REAL NOT NULL,
    label TEXT NOT NULL,
    factors_json TEXT NOT NULL,
    justification TEXT NOT NULL,
    audio_json TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (run_id, clip_id, judge)
);
"""
#: the order turns are read in: by system, conversation (a single question's id is its entry's), turn, trial
_TURN_ORDER = "system_id, conversation_id, turn_index, trial"
#: the runs' columns in the order ``RunInfo`` is read from
_RUN_COLUMNS = ("run_id, created_at, finished_at, status, dataset_path, dataset_sha256, trials, systems_json, "
                "config_json, harness_version, kind")


class StoredEvent(BaseModel):
    """One normalized event of a conversation as stamped by the engine (ms from the conversation's start)."""

    seq: int
    t_ms: float
    type: str
    response_id: str | None = None
    detail: dict[str, Any] = Field(default_factory=dict)


class ArtifactRef(BaseModel):
    kind: str
    sha256: str
    path: str
    bytes: int
    media_type: str


class ConversationRecord(BaseModel):
    """A finished conversation (succeeded or failed) with its turns, events and artifacts, stored at once."""

    run_id: str
    system_id: str
    conversation_id: str
    trial: int = 0
    status: str
    attempts: int = 1
    failure_code: str | None = None
    failure_reason: str | None = None
    started_at: str
    finished_at: str
    turns: list[TurnRecord] = Field(default_factory=list)
    events: list[StoredEvent] = Field(default_factory=list)
    artifacts: list[ArtifactRef] = Field(default_factory=list)


class SystemInfo(BaseModel):
    """How a system took part in a run (recorded so reports can label EMULATED rows and the baseline)."""

    id: str
    adapter: str
    mode: str
    role: str = "candidate"
    label: str = ""
    details: dict[str, Any] = Field(default_factory=dict)

    @property
    def emulated(self) -> bool:
        return self.mode == "emulated"


class RunInfo(BaseModel):
    run_id: str
    created_at: str
    finished_at: str | None
    status: str
    dataset_path: str
    dataset_sha256: str
    trials: int
    systems: list[SystemInfo]
    config: dict[str, Any]
    harness_version: str
    kind: RunKind = "golden"


def _record_json(record: BaseModel, exclude: set[str] | None = None) -> str:
    """JSON of ``record``; a lone surrogate (which UTF-8 cannot hold, but a vendor's JSON can) becomes U+FFFD."""
    try:
        return record.model_dump_json(exclude=exclude)
    except ValueError:  # pydantic's serialization error on unencodable text
        return json.dumps(_without_surrogates(record.model_dump(mode="python", exclude=exclude)), default=str)


def _without_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in value)
    if isinstance(value, dict):
        return {k: _without_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_surrogates(v) for v in value]
    return value


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class _Rows:
    """The table rows of a batch of conversations, every text already redacted."""

    def __init__(self) -> None:
        self.conversations: list[tuple] = []
        self.turns: list[tuple] = []
        self.keys: list[tuple] = []
        self.events: list[tuple] = []
        self.artifacts: list[tuple] = []


def _conversation_rows(records: list[ConversationRecord]) -> _Rows:
    """Rows of ``records``: the JSON texts and failure reasons of a whole batch go through the redactor in one
    call (``redact_many``: the known credentials are looked up once), built before the store's lock is taken."""
    # a conversation given twice is recorded as its last version (what writing them one by one would leave)
    records = list({(r.run_id, r.system_id, r.conversation_id, r.trial): r for r in records}.values())
    texts: list[str] = []
    for record in records:
        for turn in record.turns:  # a conversation's turns are keyed by it (one record shape for every job)
            if turn.conversation_id != record.conversation_id:
                turn.conversation_id = record.conversation_id
        texts.append(_record_json(record, exclude={"turns", "events"}))
        texts.append(record.failure_reason or "")
        texts.extend(_record_json(turn) for turn in record.turns)
        texts.extend(json.dumps(event.detail) for event in record.events)
    clean = iter(scrub_many(texts))
    rows = _Rows()
    recorded_at = _now()
    for record in records:
        key = (record.run_id, record.system_id, record.conversation_id, record.trial)
        summary, reason = next(clean), next(clean)
        rows.keys.append(key)
        rows.conversations.append((*key, record.status, record.attempts, record.failure_code,
                                   reason if record.failure_reason else None, record.started_at,
                                   record.finished_at, summary))
        rows.turns.extend((turn.run_id, turn.system_id, turn.entry_id, turn.trial, turn.status, next(clean),
                           recorded_at, turn.conversation_id, turn.turn_index) for turn in record.turns)
        rows.events.extend((*key, e.seq, e.t_ms, e.type, e.response_id, next(clean)) for e in record.events)
        rows.artifacts.extend((*key, a.kind, a.sha256, a.path, a.bytes, a.media_type) for a in record.artifacts)
    return rows


class Store:
    """A SQLite-backed store. Safe to share between asyncio tasks of one process (a lock guards writes)."""

    def __init__(self, path: Path | str):
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(self.path, check_same_thread=False)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.executescript(_SCHEMA)
        row = self._conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        version = int(row[0]) if row is not None else None
        if version is not None and version not in (1, 2, 3, STORE_SCHEMA_VERSION):
            self._conn.close()
            raise ConfigError(f"{self.path}: store schema version {version} is not supported "
                              f"(this harness reads versions 1 to {STORE_SCHEMA_VERSION}); use the harness that "
                              "wrote it or a new --store")
        if version == 1:
            self._migrate_v1()
        self._conn.executescript(_SCHEMA_V2 + _SCHEMA_V3)
        if version in (1, 2):
            self._migrate_v2()
        if version in (1, 2, 3):
            self._migrate_v3()
        if version is None:
            self._conn.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(STORE_SCHEMA_VERSION),))
        self._conn.commit()

    def _migrate_v1(self) -> None:
        """Version 1 had runs and turns only: add the turn columns and the new tables; keep every row."""
        columns = {r[1] for r in self._conn.execute("PRAGMA table_info(turns)")}
        if "conversation_id" not in columns:
            self._conn.execute("ALTER TABLE turns ADD COLUMN conversation_id TEXT")
        if "turn_index" not in columns:
            self._conn.execute("ALTER TABLE turns ADD COLUMN turn_index INTEGER NOT NULL DEFAULT 0")
        self._conn.executescript(_SCHEMA_V2)
        self._conn.execute("UPDATE meta SET value='2' WHERE key='schema_version'")
        self._conn.commit()

    def _migrate_v2(self) -> None:
        """Version 2 had no run kinds and left the review tables (created alongside by ``bench.review`` with the
        DDL now in ``_SCHEMA_V3``, so existing ones keep their rows) outside the schema: add each run's kind,
        inferred from what produced it (a simulation records ``kind: simulation`` in its config; the audio loop
        runs the golden files it writes, ``golden.clean.json`` and ``golden.heard.json``), every other run golden."""
        columns = {r[1] for r in self._conn.execute("PRAGMA table_info(runs)")}
        if "kind" not in columns:
            self._conn.execute("ALTER TABLE runs ADD COLUMN kind TEXT NOT NULL DEFAULT 'golden'")
            self._conn.execute("UPDATE runs SET kind='simulation' WHERE json_extract(config_json, '$.kind') = "
                               "'simulation'")
            self._conn.execute("UPDATE runs SET kind='audio-loop' WHERE dataset_path LIKE '%golden.clean.json' "
                               "OR dataset_path LIKE '%golden.heard.json'")
        self._conn.execute("UPDATE meta SET value='3' WHERE key='schema_version'")

    def _migrate_v3(self) -> None:
        """Version 3 keyed turns by (run, system, entry, trial), so a simulation stored its turns as entries
        ``<cell>#<NNN>``: rebuild the turns table keyed by (run, system, conversation, trial, turn index), every row
        kept (a turn without a conversation id is the conversation of its entry), the simulation's turns named by
        their conversation."""
        self._conn.commit()
        self._conn.executescript("BEGIN;" + _MIGRATE_TURNS_V4 + "COMMIT;")
        self._conn.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(STORE_SCHEMA_VERSION),))

    def close(self) -> None:
        self._conn.close()

    # runs -------------------------------------------------------------------------------------------
    def create_run(self, info: RunInfo) -> None:
        with self._lock:
            self._conn.execute(
                f"INSERT INTO runs ({_RUN_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (info.run_id, info.created_at, info.finished_at, info.status, info.dataset_path,
                 info.dataset_sha256, info.trials, json.dumps(scrub_value([s.model_dump() for s in info.systems])),
                 json.dumps(scrub_value(info.config)), info.harness_version, info.kind),
            )
            self._conn.commit()

    def finish_run(self, run_id: str, status: str) -> None:
        with self._lock:
            self._conn.execute("UPDATE runs SET status=?, finished_at=? WHERE run_id=?", (status, _now(), run_id))
            self._conn.commit()

    def _run_from_row(self, row: tuple) -> RunInfo:
        return RunInfo(
            run_id=row[0], created_at=row[1], finished_at=row[2], status=row[3], dataset_path=row[4],
            dataset_sha256=row[5], trials=row[6], systems=[SystemInfo(**s) for s in json.loads(row[7])],
            config=json.loads(row[8]), harness_version=row[9], kind=row[10],
        )

    def get_run(self, run_id: str, kind: str | None = "golden") -> RunInfo:
        """A run by id, or for ``latest`` the newest run of ``kind`` (golden by default; None = of any kind).
        Exit 2 naming the store when absent. ``kind`` only chooses what ``latest`` means: an id names one run."""
        if run_id == "latest":
            where, params = ("WHERE kind=?", (kind,)) if kind is not None else ("", ())
            row = self._conn.execute(f"SELECT {_RUN_COLUMNS} FROM runs {where} ORDER BY created_at DESC, rowid DESC "
                                     "LIMIT 1", params).fetchone()
            if row is None:
                what = f"{kind} run" if kind is not None else "run"
                others = "" if kind is None else " (latest means the latest golden run; --kind chooses another kind)"
                raise ConfigError(f"{self.path}: no {what} in the store{others}")
        else:
            row = self._conn.execute(f"SELECT {_RUN_COLUMNS} FROM runs WHERE run_id=?", (run_id,)).fetchone()
        if row is None:
            raise ConfigError(f"{self.path}: no run {run_id!r} in the store")
        return self._run_from_row(row)

    def list_runs(self, kind: str | None = None) -> list[RunInfo]:
        """Every run (of ``kind`` when given), oldest first."""
        where, params = ("WHERE kind=?", (kind,)) if kind is not None else ("", ())
        rows = self._conn.execute(f"SELECT {_RUN_COLUMNS} FROM runs {where} ORDER BY created_at, rowid",
                                  params).fetchall()
        return [self._run_from_row(r) for r in rows]

    # turns ------------------------------------------------------------------------------------------
    def record_turn(self, record: TurnRecord) -> None:
        """Commit one finished turn (replaces an earlier failed attempt of the same key on resume)."""
        with self._lock:
            self._insert_turn(record)
            self._conn.commit()

    def _insert_turn(self, record: TurnRecord) -> None:
        if record.conversation_id is None:  # a turn on its own is the conversation of its entry
            record = record.model_copy(update={"conversation_id": record.entry_id})
        self._conn.execute(
            "INSERT OR REPLACE INTO turns VALUES (?,?,?,?,?,?,?,?,?)",
            (record.run_id, record.system_id, record.entry_id, record.trial, record.status,
             scrub_json(_record_json(record)), _now(), record.conversation_id, record.turn_index),
        )

    def record_conversation(self, record: ConversationRecord) -> None:
        """Commit a finished conversation with its turns, events and artifact references in one transaction."""
        self.record_conversations([record])

    def record_conversations(self, records: list[ConversationRecord]) -> None:
        """Commit finished conversations (each with its turns, events and artifact references) in one transaction:
        all of them are recorded or, when any write fails, none (the transaction is rolled back)."""
        if not records:
            return
        rows = _conversation_rows(records)
        with self._lock:
            try:
                self._conn.executemany("INSERT OR REPLACE INTO conversations VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                                       rows.conversations)
                self._conn.executemany("INSERT OR REPLACE INTO turns VALUES (?,?,?,?,?,?,?,?,?)", rows.turns)
                self._conn.executemany("DELETE FROM events WHERE run_id=? AND system_id=? AND conversation_id=? "
                                       "AND trial=?", rows.keys)
                self._conn.executemany("INSERT INTO events VALUES (?,?,?,?,?,?,?,?,?)", rows.events)
                if rows.artifacts:
                    self._conn.executemany("INSERT OR REPLACE INTO artifacts VALUES (?,?,?,?,?,?,?,?,?)",
                                           rows.artifacts)
                self._conn.commit()
            except BaseException:
                self._conn.rollback()
                raise

    def conversations(self, run_id: str) -> list[dict[str, Any]]:
        rows = self._conn.execute(
            "SELECT system_id, conversation_id, trial, status, attempts, failure_code, failure_reason "
            "FROM conversations WHERE run_id=? ORDER BY system_id, conversation_id, trial", (run_id,)).fetchall()
        names = ("system_id", "conversation_id", "trial", "status", "attempts", "failure_code", "failure_reason")
        return [dict(zip(names, row, strict=True)) for row in rows]

    def events(self, run_id: str, system_id: str, conversation_id: str, trial: int = 0) -> list[StoredEvent]:
        rows = self._conn.execute(
            "SELECT seq, t_ms, type, response_id, detail_json FROM events WHERE run_id=? AND system_id=? AND "
            "conversation_id=? AND trial=? ORDER BY seq", (run_id, system_id, conversation_id, trial)).fetchall()
        return [StoredEvent(seq=r[0], t_ms=r[1], type=r[2], response_id=r[3], detail=json.loads(r[4])) for r in rows]

    def artifacts(self, run_id: str) -> list[dict[str, Any]]:
        rows = self._conn.execute(
            "SELECT system_id, conversation_id, trial, kind, sha256, path, bytes, media_type FROM artifacts "
            "WHERE run_id=? ORDER BY system_id, conversation_id, trial, kind", (run_id,)).fetchall()
        names = ("system_id", "conversation_id", "trial", "kind", "sha256", "path", "bytes", "media_type")
        return [dict(zip(names, row, strict=True)) for row in rows]

    def add_rating(self, run_id: str, artifact_sha256: str, reviewer: str, score: int,
                   flags: list[str] | None = None, comment: str = "") -> int:
        with self._lock:
            cursor = self._conn.execute(
                "INSERT INTO ratings (run_id, artifact_sha256, reviewer, score, flags_json, comment, created_at) "
                "VALUES (?,?,?,?,?,?,?)",
                (run_id, artifact_sha256, reviewer, score, json.dumps(flags or []), scrub(comment), _now()))
            self._conn.commit()
            return int(cursor.lastrowid or 0)

    def ratings(self, run_id: str) -> list[dict[str, Any]]:
        rows = self._conn.execute(
            "SELECT rating_id, artifact_sha256, reviewer, score, flags_json, comment, created_at FROM ratings "
            "WHERE run_id=? ORDER BY rating_id", (run_id,)).fetchall()
        return [{"rating_id": r[0], "artifact_sha256": r[1], "reviewer": r[2], "score": r[3],
                 "flags": json.loads(r[4]), "comment": r[5], "created_at": r[6]} for r in rows]

    def turns(self, run_id: str, system_id: str | None = None) -> list[TurnRecord]:
        query = "SELECT record_json FROM turns WHERE run_id=?"
        args: tuple = (run_id,)
        if system_id is not None:
            query += " AND system_id=?"
            args = (run_id, system_id)
        rows = self._conn.execute(query + f" ORDER BY {_TURN_ORDER}", args).fetchall()
        return [TurnRecord.model_validate_json(r[0]) for r in rows]

    def conversation_turns(self, run_id: str, system_id: str, conversation_id: str,
                           trial: int = 0) -> list[TurnRecord]:
        """The turns of one stored conversation, in turn order."""
        rows = self._conn.execute(
            "SELECT record_json FROM turns WHERE run_id=? AND system_id=? AND conversation_id=? AND trial=? "
            "ORDER BY turn_index", (run_id, system_id, conversation_id, trial)).fetchall()
        return [TurnRecord.model_validate_json(r[0]) for r in rows]

    def turn_fields(self, run_id: str, scalars: list[str], json_fields: list[str]) -> list[tuple]:
        """Bulk read for large runs: per turn ``(rowid, scalars..., json_fields-as-JSON-text...)``.

        SQLite extracts the fields from each stored record, so no pydantic object is built per turn and the
        event timeline is never parsed. Rows are ordered like :meth:`turns`.
        """
        paths = ", ".join(f"'$.{name}'" for name in scalars)
        nested = "".join(f", json_extract(record_json, '$.{name}')" for name in json_fields)
        rows = self._conn.execute(
            f"SELECT rowid, json_extract(record_json, {paths}){nested} FROM turns "
            f"WHERE run_id=? ORDER BY {_TURN_ORDER}",
            (run_id,),
        ).fetchall()
        return [(row[0], *json.loads(row[1]), *row[2:]) for row in rows]

    def turn_json_by_rowid(self, rowids: list[int]) -> dict[int, str]:
        """The stored JSON records for ``rowids`` (as returned by :meth:`turn_fields`), fetched in batches."""
        found: dict[int, str] = {}
        for start in range(0, len(rowids), 500):
            batch = rowids[start : start + 500]
            marks = ",".join("?" * len(batch))
            found.update(self._conn.execute(
                f"SELECT rowid, record_json FROM turns WHERE rowid IN ({marks})", batch).fetchall())
        return found

    def completed_keys(self, run_id: str) -> set[tuple[str, str, int]]:
        """(system, conversation, trial) keys of the conversations every turn of which succeeded — skipped when a
        run is resumed (a single-question conversation's id is its entry's)."""
        rows = self._conn.execute(
            "SELECT system_id, conversation_id, trial FROM turns WHERE run_id=? GROUP BY system_id, conversation_id, "
            "trial HAVING MIN(status = 'succeeded') = 1", (run_id,)
        ).fetchall()
        return {(r[0], r[1], int(r[2])) for r in rows}

    def count_turns(self, run_id: str) -> int:
        return int(self._conn.execute("SELECT COUNT(*) FROM turns WHERE run_id=?", (run_id,)).fetchone()[0])


def turns_dataframe(store: Store | Path | str, run_id: str = "latest") -> pd.DataFrame:
    """The turns of a run as a DataFrame: one row per (system, conversation, turn, trial), raw observations only.

    Vendor-reported latencies are expanded into ``vendor_latency.<name>`` columns; the event timeline,
    retrieved context and tool calls are kept as Python objects in their own columns.
    """
    import pandas as pd

    own = not isinstance(store, Store)
    db = store if isinstance(store, Store) else Store(store)
    try:
        run = db.get_run(run_id)
        records = db.turns(run.run_id)
    finally:
        if own:
            db.close()
    modes = {s.id: s.mode for s in run.systems}
    rows = []
    for record in records:
        row = record.model_dump()
        row["mode"] = modes.get(record.system_id, "unknown")
        row["emulated"] = row["mode"] == "emulated"
        for name, value in record.vendor_latency_ms.items():
            row[f"vendor_latency.{name}"] = value
        rows.append(row)
    frame = pd.DataFrame(rows)
    if frame.empty:
        frame = pd.DataFrame(columns=[*TurnRecord.model_fields, "mode", "emulated"])
    return frame

