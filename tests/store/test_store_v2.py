"""Store v2: versioned schema (v1 migrated in place, newer refused), conversations with turns/events/artifacts in
one transaction, the writer thread, artifacts by content hash, ratings, and redaction of everything written."""

from __future__ import annotations

import json
import sqlite3

import pytest

from bench.errors import ConfigError
from bench.records import TurnRecord
from bench.store import ArtifactStore, ConversationRecord, RunInfo, Store, StoreWriter, SystemInfo, turns_dataframe
from bench.store.sqlite import StoredEvent
from bench.store.writer import PendingArtifact

V1_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE runs (run_id TEXT PRIMARY KEY, created_at TEXT NOT NULL, finished_at TEXT, status TEXT NOT NULL,
  dataset_path TEXT NOT NULL, dataset_sha256 TEXT NOT NULL, trials INTEGER NOT NULL, systems_json TEXT NOT NULL,
  config_json TEXT NOT NULL, harness_version TEXT NOT NULL);
CREATE TABLE turns (run_id TEXT NOT NULL, system_id TEXT NOT NULL, entry_id TEXT NOT NULL, trial INTEGER NOT NULL,
  status TEXT NOT NULL, record_json TEXT NOT NULL, recorded_at TEXT NOT NULL,
  PRIMARY KEY (run_id, system_id, entry_id, trial));
INSERT INTO meta VALUES ('schema_version', '1');
"""


def _run(run_id: str = "r1", **config) -> RunInfo:
    return RunInfo(run_id=run_id, created_at="2026-01-01T00:00:00", finished_at=None, status="running",
                   dataset_path="d.json", dataset_sha256="0" * 64, trials=1,
                   systems=[SystemInfo(id="s", adapter="x", mode="emulated")], config=config, harness_version="t")


def _conversation(run_id: str = "r1", conversation_id: str = "E-1", answer: str = "ok") -> ConversationRecord:
    turn = TurnRecord(run_id=run_id, system_id="s", entry_id=conversation_id, status="succeeded", answer=answer,
                      conversation_id=conversation_id)
    return ConversationRecord(run_id=run_id, system_id="s", conversation_id=conversation_id, status="succeeded",
                              started_at="a", finished_at="b", turns=[turn],
                              events=[StoredEvent(seq=1, t_ms=0.0, type="session_ready"),
                                      StoredEvent(seq=2, t_ms=5.0, type="text_delta", detail={"text": answer})])


def test_v1_store_is_migrated_keeping_its_rows(tmp_path):
    path = tmp_path / "v1.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript(V1_SCHEMA)
    conn.execute("INSERT INTO runs VALUES ('old','c',NULL,'completed','d','x',1,'[]','{}','0.1')")
    record = TurnRecord(run_id="old", system_id="s", entry_id="E", status="succeeded", answer="kept")
    conn.execute("INSERT INTO turns VALUES ('old','s','E',0,'succeeded',?,'t')", (record.model_dump_json(),))
    conn.commit()
    conn.close()
    store = Store(path)
    assert store.turns("old")[0].answer == "kept"
    store.record_conversation(_conversation("old", "E-2"))
    assert {t.entry_id for t in store.turns("old")} == {"E", "E-2"}
    store.close()
    version = sqlite3.connect(path).execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0]
    assert version == "4"


def test_newer_store_is_refused_with_a_clear_message(tmp_path):
    path = tmp_path / "new.sqlite"
    Store(path).close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    conn.commit()
    conn.close()
    with pytest.raises(ConfigError, match="schema version 99 is not supported"):
        Store(path)


def test_conversation_is_one_transaction_with_events_and_artifacts(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    store.create_run(_run())
    writer = StoreWriter(store, tmp_path / "reports")
    writer.submit(_conversation(), [PendingArtifact("audio", b"RIFF-fake-wav", "audio/wav")])
    writer.close()
    turn = store.turns("r1")[0]
    assert "audio" in turn.artifacts
    [artifact] = store.artifacts("r1")
    assert artifact["sha256"] == turn.artifacts["audio"]
    assert (tmp_path / "reports" / artifact["path"]).read_bytes() == b"RIFF-fake-wav"
    assert [e.type for e in store.events("r1", "s", "E-1")] == ["session_ready", "text_delta"]
    assert store.conversations("r1")[0]["status"] == "succeeded"
    frame = turns_dataframe(store, "r1")
    assert frame.loc[0, "artifacts"] == {"audio": artifact["sha256"]}


def test_artifact_ids_cannot_leave_the_run_folder(tmp_path):
    files = ArtifactStore(tmp_path, "r1")
    with pytest.raises(ValueError):
        files.path_for("../../etc/passwd", "audio/wav")
    sha, path = files.put(b"x", "audio/wav")
    assert files.path_for(sha, "audio/wav") == path and path.is_relative_to(tmp_path / "r1" / "artifacts")


def test_writer_reraises_a_failed_write(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    writer = StoreWriter(store)
    store.close()
    writer.submit(_conversation())
    with pytest.raises(sqlite3.ProgrammingError):
        writer.close()


def test_secrets_are_redacted_before_they_are_written(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-live-canary-0123456789")
    store = Store(tmp_path / "s.sqlite")
    store.create_run(_run(systems=[{"options": {"api_key": "plain-secret-value", "url": "wss://u:pw@host/x?token=abc"}}]))
    store.record_conversation(_conversation(answer="echo sk-live-canary-0123456789"))
    store.add_rating("r1", "0" * 64, "reviewer", 4, comment="key sk-live-canary-0123456789")
    store.close()
    dump = "\n".join(sqlite3.connect(tmp_path / "s.sqlite").iterdump())
    for secret in ("sk-live-canary-0123456789", "plain-secret-value", "u:pw@", "token=abc"):
        assert secret not in dump
    assert json.loads(sqlite3.connect(tmp_path / "s.sqlite").execute("SELECT config_json FROM runs").fetchone()[0])


def test_ratings_round_trip(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    rating_id = store.add_rating("r1", "a" * 64, "ann", 5, ["cut_off"], "fine")
    assert store.ratings("r1") == [{"rating_id": rating_id, "artifact_sha256": "a" * 64, "reviewer": "ann",
                                    "score": 5, "flags": ["cut_off"], "comment": "fine",
                                    "created_at": store.ratings("r1")[0]["created_at"]}]
