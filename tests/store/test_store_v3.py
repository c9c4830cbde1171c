"""Store v3: a version-2 store (written with the v2 DDL, review tables created beside it by the review workflow of
that version) is migrated in place: schema v3, every row kept, each run given its kind; ``latest`` is the latest golden
run unless a kind is asked for."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from bench.errors import ConfigError
from bench.records import TurnRecord
from bench.store import RunInfo, Store, SystemInfo
from bench.store.review import clip_rows, imported_before, judge_scores, queue, ratings_by_position, review_ratings

#: the version-2 DDL exactly as bench/store/sqlite.py and bench/review (ratings.py, judge.py) wrote it
V2_SCHEMA = """
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
    harness_version TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS turns (
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    system_id TEXT NOT NULL,
    entry_id TEXT NOT NULL,
    trial INTEGER NOT NULL,
    status TEXT NOT NULL,
    record_json TEXT NOT NULL,
    recorded_at TEXT NOT NULL,
    conversation_id TEXT,
    turn_index INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, system_id, entry_id, trial)
);
CREATE INDEX IF NOT EXISTS turns_by_run ON turns(run_id, system_id);
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
INSERT INTO meta VALUES ('schema_version', '2');
"""
SHA = "a" * 64


def _v2_store(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.executescript(V2_SCHEMA)
    runs = [("gold-1", "2026-01-01T00:00:00", "d.json", {}),
            ("sim-1", "2026-01-02T00:00:00", "run-hospital.yaml", {"kind": "simulation"}),
            ("loop-clean", "2026-01-03T00:00:00", "reports/audio-loop/golden.clean.json", {}),
            ("loop-heard", "2026-01-03T00:01:00", "reports/audio-loop/golden.heard.json", {})]
    for run_id, created, dataset, config in runs:
        conn.execute("INSERT INTO runs VALUES (?,?,NULL,'completed',?,?,1,'[]',?,'0.1')",
                     (run_id, created, dataset, "0" * 64, json.dumps(config)))
    record = TurnRecord(run_id="gold-1", system_id="s", entry_id="E", status="succeeded", answer="kept")
    conn.execute("INSERT INTO turns VALUES ('gold-1','s','E',0,'succeeded',?,'t','E',0)", (record.model_dump_json(),))
    conn.execute("INSERT INTO review_clips VALUES ('gold-1',?,'s','E',0,0,'E','nl','Wat?','answer_audio',"
                 "'audio/wav',0,'system','')", (SHA,))
    conn.execute("INSERT INTO review_queue VALUES ('gold-1','ann','nl',0,?,0,'seed','t')", (SHA,))
    conn.execute("INSERT INTO ratings (run_id, artifact_sha256, reviewer, score, flags_json, comment, created_at) "
                 "VALUES ('gold-1',?,'ann',4,'[\"cut_off\"]','fine','t')", (SHA,))
    conn.execute("INSERT INTO review_rating_context VALUES (1,'gold-1','nl',0,0,'web')")
    conn.execute("INSERT INTO review_imports VALUES ('b','sheet.csv',1,'2026-01-01')")
    conn.execute("INSERT INTO review_judge_scores VALUES ('gold-1',?,'heuristic-naturalness-v1','heuristic','d',"
                 "'nl',3.5,'Transitional','{\"pacing\": 3}','why','{}','t')", (SHA,))
    conn.commit()
    conn.close()


def test_a_v2_store_with_review_rows_is_migrated_in_place(tmp_path: Path) -> None:
    path = tmp_path / "v2.sqlite"
    _v2_store(path)
    store = Store(path)
    try:
        assert store.turns("gold-1")[0].answer == "kept"
        assert {r.run_id: r.kind for r in store.list_runs()} == {
            "gold-1": "golden", "sim-1": "simulation", "loop-clean": "audio-loop", "loop-heard": "audio-loop"}
        assert [c.sha256 for c in clip_rows(store, "gold-1")] == [SHA]
        assert [i.sha256 for i in queue(store, "gold-1", "ann", "nl")] == [SHA]
        rating = review_ratings(store, "gold-1")[0]
        assert (rating["score"], rating["flags"], rating["position"], rating["source"]) == (4, ["cut_off"], 0, "web")
        assert ratings_by_position(store, "gold-1", "ann", "nl")[0]["score"] == 4
        assert imported_before(store, "b") == "2026-01-01"
        assert [(s.judge, s.score, s.factors) for s in judge_scores(store, "gold-1")] == [
            ("heuristic-naturalness-v1", 3.5, {"pacing": 3})]
        # latest is the latest golden run, although the audio loop ran after it
        assert store.get_run("latest").run_id == "gold-1"
        assert store.get_run("latest", kind="audio-loop").run_id == "loop-heard"
        assert store.get_run("latest", kind=None).run_id == "loop-heard"
        with pytest.raises(ConfigError, match="no imported run in the store"):
            store.get_run("latest", kind="imported")
    finally:
        store.close()
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == "4"
    conn.close()
    Store(path).close()  # opening a migrated store again changes nothing


def test_a_new_store_records_the_run_kind(tmp_path: Path) -> None:
    store = Store(tmp_path / "new.sqlite")
    for run_id, created, kind in (("g", "2026-01-01", "golden"), ("s", "2026-01-02", "simulation")):
        store.create_run(RunInfo(run_id=run_id, created_at=created, finished_at=None, status="running",
                                 dataset_path="d", dataset_sha256="0" * 64, trials=1,
                                 systems=[SystemInfo(id="x", adapter="x", mode="emulated")], config={},
                                 harness_version="t", kind=kind))
    assert store.get_run("latest").run_id == "g"
    assert store.get_run("latest", kind="simulation").kind == "simulation"
    assert [r.run_id for r in store.list_runs(kind="simulation")] == ["s"]
    assert store.get_run("s").kind == "simulation"  # an id names its run whatever the kind
    store.close()
