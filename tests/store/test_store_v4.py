"""Store v4: one record shape — turns keyed by (run, system, conversation, trial, turn index) for golden runs and
simulations alike; a v3 store (turns keyed by entry, simulation turns stored as ``<cell>#<NNN>``) is migrated in
place with every row kept."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from bench.records import TurnRecord
from bench.store import ConversationRecord, RunInfo, Store, SystemInfo
from bench.store.sqlite import _SCHEMA_V2, _SCHEMA_V3

V3_TURNS = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE runs (run_id TEXT PRIMARY KEY, created_at TEXT NOT NULL, finished_at TEXT, status TEXT NOT NULL,
  dataset_path TEXT NOT NULL, dataset_sha256 TEXT NOT NULL, trials INTEGER NOT NULL, systems_json TEXT NOT NULL,
  config_json TEXT NOT NULL, harness_version TEXT NOT NULL, kind TEXT NOT NULL DEFAULT 'golden');
CREATE TABLE turns (run_id TEXT NOT NULL REFERENCES runs(run_id), system_id TEXT NOT NULL, entry_id TEXT NOT NULL,
  trial INTEGER NOT NULL, status TEXT NOT NULL, record_json TEXT NOT NULL, recorded_at TEXT NOT NULL,
  conversation_id TEXT, turn_index INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (run_id, system_id, entry_id, trial));
CREATE INDEX turns_by_run ON turns(run_id, system_id);
INSERT INTO meta VALUES ('schema_version', '3');
"""


def _turn(run_id: str, entry_id: str, conversation_id: str | None, index: int = 0, answer: str = "ok",
          status: str = "succeeded") -> TurnRecord:
    return TurnRecord(run_id=run_id, system_id="s", entry_id=entry_id, conversation_id=conversation_id,
                      turn_index=index, status=status, answer=answer)


def _v3_store(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.executescript(V3_TURNS + _SCHEMA_V2 + _SCHEMA_V3)
    conn.execute("INSERT INTO runs VALUES ('gold','a',NULL,'completed','d','0',1,'[]','{}','t','golden')")
    conn.execute("INSERT INTO runs VALUES ('sim','b',NULL,'completed','r','0',1,'[]','{}','t','simulation')")
    rows = [_turn("gold", "E-1", "E-1"), _turn("gold", "E-2", None),  # a v1-era turn: no conversation id
            _turn("sim", "cell-a#000", "cell-a", 0, "hello"), _turn("sim", "cell-a#001", "cell-a", 1, "bye")]
    for turn in rows:
        conn.execute("INSERT INTO turns VALUES (?,?,?,?,?,?,?,?,?)",
                     (turn.run_id, turn.system_id, turn.entry_id, turn.trial, turn.status, turn.model_dump_json(),
                      "t", turn.conversation_id, turn.turn_index))
    conn.commit()
    conn.close()


def test_a_v3_store_is_migrated_to_conversation_and_turn_keys(tmp_path: Path) -> None:
    path = tmp_path / "v3.sqlite"
    _v3_store(path)
    store = Store(path)
    try:
        assert [(t.entry_id, t.conversation_id) for t in store.turns("gold")] == [("E-1", "E-1"), ("E-2", "E-2")]
        sim = store.conversation_turns("sim", "s", "cell-a")
        assert [(t.entry_id, t.turn_index, t.answer) for t in sim] == [("cell-a", 0, "hello"), ("cell-a", 1, "bye")]
        assert store.completed_keys("sim") == {("s", "cell-a", 0)}
        assert [row[1:4] for row in store.turn_fields("sim", ["entry_id", "conversation_id", "turn_index"], [])] \
            == [("cell-a", "cell-a", 0), ("cell-a", "cell-a", 1)]
    finally:
        store.close()
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == "4"
    assert conn.execute("SELECT COUNT(*) FROM turns WHERE entry_id LIKE '%#%'").fetchone()[0] == 0
    conn.close()
    Store(path).close()  # opening a v4 store again changes nothing


def test_turns_of_one_conversation_are_kept_apart_by_turn_index(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.sqlite")
    store.create_run(RunInfo(run_id="r", created_at="a", finished_at=None, status="running", dataset_path="d",
                             dataset_sha256="0" * 64, trials=1, systems=[SystemInfo(id="s", adapter="x", mode="local")],
                             config={}, harness_version="t", kind="simulation"))
    turns = [_turn("r", "cell", "stale-id", index, f"answer {index}") for index in range(3)]
    turns[2].status = "failed"
    store.record_conversation(ConversationRecord(run_id="r", system_id="s", conversation_id="cell", status="failed",
                                                 started_at="a", finished_at="b", turns=turns))
    stored = store.conversation_turns("r", "s", "cell")
    # every turn is kept (the same entry id three times) and keyed by its conversation
    assert [(t.turn_index, t.answer, t.conversation_id) for t in stored] == [
        (0, "answer 0", "cell"), (1, "answer 1", "cell"), (2, "answer 2", "cell")]
    assert store.completed_keys("r") == set()  # a conversation with a failed turn runs again on resume
    store.close()
