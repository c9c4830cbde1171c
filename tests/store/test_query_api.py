"""The store is reached through its query API only: no module outside ``bench/store`` touches its connection."""

from __future__ import annotations

import re
from pathlib import Path

from bench.store import ConversationRecord, RunInfo, Store, SystemInfo
from bench.store.query import conversation_spans, conversation_spans_frame, run_phase

ROOT = Path(__file__).resolve().parents[2]
#: the store's private SQLite connection, as another module would reach it
PRIVATE_CONNECTION = re.compile(r"\._conn\b")


def test_no_module_outside_bench_store_touches_the_connection() -> None:
    offenders = []
    for folder in ("bench", "adapters", "scripts", "tests"):
        for path in sorted((ROOT / folder).rglob("*")):
            relative = path.relative_to(ROOT).as_posix()
            if relative.startswith("bench/store/") or not path.is_file() or path.suffix not in (".py", ""):
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            offenders += [f"{relative}:{number}" for number, line in enumerate(text.splitlines(), 1)
                          if PRIVATE_CONNECTION.search(line) and path != Path(__file__)]
    assert offenders == [], f"use bench.store.query / bench.store.review instead of Store._conn: {offenders}"


def test_the_pattern_sees_a_private_connection_use() -> None:
    assert PRIVATE_CONNECTION.search("rows = store._conn.execute('SELECT 1')")
    assert not PRIVATE_CONNECTION.search("await session.close_connection()")


def _conversation(run_id: str, system_id: str, conversation_id: str, started: str, finished: str,
                  status: str = "succeeded") -> ConversationRecord:
    return ConversationRecord(run_id=run_id, system_id=system_id, conversation_id=conversation_id, status=status,
                              started_at=started, finished_at=finished)


def test_conversation_spans_and_the_run_phase(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.sqlite")
    store.create_run(RunInfo(run_id="r", created_at="2026-01-01T00:00:00+00:00", finished_at=None, status="running",
                             dataset_path="d.json", dataset_sha256="0" * 64, trials=1,
                             systems=[SystemInfo(id="a", adapter="x", mode="emulated")], config={},
                             harness_version="t"))
    assert run_phase(store, "r") is None and conversation_spans_frame(store, "r").empty
    store.record_conversations([
        _conversation("r", "a", "E-2", "2026-01-01T00:00:02.000+00:00", "2026-01-01T00:00:05.500+00:00", "failed"),
        _conversation("r", "b", "E-1", "2026-01-01T00:00:01.000+00:00", "2026-01-01T00:00:03.000+00:00"),
    ])
    spans = conversation_spans(store, "r")
    assert [(s.system_id, s.conversation_id, s.seconds) for s in spans] == [("b", "E-1", 2.0), ("a", "E-2", 3.5)]
    assert [s.conversation_id for s in conversation_spans(store, "r", "a")] == ["E-2"]
    phase = run_phase(store, "r")
    assert phase is not None and (phase.conversations, phase.succeeded, phase.seconds) == (2, 1, 4.5)
    frame = conversation_spans_frame(store, "r")
    assert list(frame["seconds"]) == [2.0, 3.5]
    store.close()
