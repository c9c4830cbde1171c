"""The event tap: every event stamped once as it arrives; ``next()`` and ``watch`` hand each event out once, in
order; a watcher's error or the end of the stream reaches its future; the store writer's batches."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest

from bench.engine.clock import EventTap


async def _stream(queue: asyncio.Queue):
    while (item := await queue.get()) is not None:
        yield item


async def test_next_hands_out_every_event_in_order_then_none():
    queue: asyncio.Queue = asyncio.Queue()
    tap = EventTap(_stream(queue)).start()
    for value in ("a", "b"):
        queue.put_nowait(value)
    assert (await tap.next()).event == "a"
    queue.put_nowait("c")
    queue.put_nowait(None)
    assert [(await tap.next()).event, (await tap.next()).event] == ["b", "c"]
    assert await tap.next() is None and await tap.next() is None
    assert [s.event for s in tap.stamped] == ["a", "b", "c"] and tap.ended
    assert [s.t for s in tap.stamped] == sorted(s.t for s in tap.stamped)


async def test_watch_reads_where_events_are_stamped_and_leaves_the_rest_to_next():
    queue: asyncio.Queue = asyncio.Queue()
    tap = EventTap(_stream(queue)).start()
    queue.put_nowait("early")
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    seen: list[str] = []
    done = tap.watch(lambda item: seen.append(item.event) or item.event == "done")
    assert seen == ["early"] and not done.done()  # what had arrived is handed over at once
    for value in ("x", "done", "after"):
        queue.put_nowait(value)
    await asyncio.wait_for(done, 5)
    assert seen == ["early", "x", "done"]
    assert (await tap.next()).event == "after"  # not the watcher's
    queue.put_nowait(None)
    assert await tap.next() is None


async def test_a_watchers_error_and_the_end_of_the_stream_reach_its_future():
    queue: asyncio.Queue = asyncio.Queue()
    tap = EventTap(_stream(queue)).start()

    def fail(item):
        raise ValueError(f"bad {item.event}")

    failing = tap.watch(fail)
    queue.put_nowait("e1")
    with pytest.raises(ValueError, match="bad e1"):
        await asyncio.wait_for(failing, 5)
    ends: list[object] = []
    ended = tap.watch(lambda item: ends.append(item) or False)
    queue.put_nowait("e2")
    queue.put_nowait(None)
    await asyncio.wait_for(ended, 5)
    assert [getattr(i, "event", i) for i in ends] == ["e2", None]


async def test_a_cancelled_watch_stops_and_a_new_one_can_start():
    queue: asyncio.Queue = asyncio.Queue()
    tap = EventTap(_stream(queue)).start()
    first: list[str] = []
    watch = tap.watch(lambda item: first.append(item.event) or False)
    watch.cancel()
    second = tap.watch(lambda item: item is None or item.event == "stop")  # the cancelled one no longer counts
    queue.put_nowait("stop")
    await asyncio.wait_for(second, 5)
    assert first == []
    with pytest.raises(RuntimeError):
        tap.watch(lambda item: True) and tap.watch(lambda item: True)


def _records(tmp_path):
    from bench.store import Store
    from bench.store.sqlite import StoredEvent
    from tests.store.test_store_v2 import _conversation, _run

    store = Store(tmp_path / "s.sqlite")
    store.create_run(_run())
    good = [_conversation(conversation_id=f"E-{i}") for i in range(5)]
    bad = _conversation(conversation_id="E-bad")
    bad.events = [StoredEvent(seq=1, t_ms=0.0, type="x"), StoredEvent(seq=1, t_ms=1.0, type="y")]  # one key twice
    return store, good, bad


def test_a_batch_is_one_transaction_all_or_nothing(tmp_path):
    store, good, bad = _records(tmp_path)
    with pytest.raises(sqlite3.IntegrityError):
        store.record_conversations([*good[:2], bad])
    assert store.conversations("r1") == [] and store.count_turns("r1") == 0
    store.record_conversations(good)
    assert [c["conversation_id"] for c in store.conversations("r1")] == [f"E-{i}" for i in range(5)]
    assert [e.type for e in store.events("r1", "s", "E-3")] == ["session_ready", "text_delta"]
    store.record_conversations([good[3]])  # recorded again (a resumed conversation): replaced, not doubled
    assert store.count_turns("r1") == 5 and len(store.events("r1", "s", "E-3")) == 2
    store.close()


def test_writer_batch_with_a_bad_record_keeps_the_others(tmp_path):
    from bench.store import StoreWriter

    store, good, bad = _records(tmp_path)
    written: list[str] = []
    writer = StoreWriter(store, on_written=lambda r: written.append(r.conversation_id))
    with pytest.raises(sqlite3.IntegrityError):
        writer._write([(r, []) for r in [*good[:3], bad, *good[3:]]])  # the batch the thread would write
    writer.close()
    assert written == [f"E-{i}" for i in range(5)]
    assert sorted(c["conversation_id"] for c in store.conversations("r1")) == [f"E-{i}" for i in range(5)]
    assert store.count_turns("r1") == 5
    store.close()


def test_writer_commits_everything_submitted_before_close(tmp_path):
    from bench.store import StoreWriter

    store, good, _ = _records(tmp_path)
    writer = StoreWriter(store)
    many = [good[0].model_copy(update={"conversation_id": f"C-{i}"}, deep=True) for i in range(300)]
    for record in many:
        record.turns[0].entry_id = record.conversation_id
        writer.submit(record)
    writer.close()
    assert len(store.conversations("r1")) == 300 == store.count_turns("r1")
    store.close()


# ---------------------------------------------------------------------------------------- the writer's process
def test_writer_process_records_everything_with_artifacts_and_the_runs_credentials(tmp_path):
    from bench.protocol.redact import register_secret
    from bench.store import StoreWriter
    from bench.store.writer import PendingArtifact

    store, good, _ = _records(tmp_path)
    written: list[str] = []
    writer = StoreWriter(store, tmp_path / "reports", on_written=lambda r: written.append(r.conversation_id),
                         process=True)
    assert writer.process
    assert writer.wait_ready(60) and written == []  # started and its store open: nothing recorded by that
    register_secret("Proc-canary-5150-xyzzy")  # resolved after the writer started: the child still knows it
    many = [good[0].model_copy(update={"conversation_id": f"C-{i:03d}"}, deep=True) for i in range(300)]
    for record in many:
        record.turns[0].entry_id = record.conversation_id
        record.turns[0].answer = "echo Proc-canary-5150-xyzzy"
        writer.submit(record, [PendingArtifact("note", f"a-{record.conversation_id}".encode(), "text/plain")]
                      if record.conversation_id == "C-007" else None)
    writer.flush()
    assert len(written) == 300
    writer.close()
    assert sorted(written) == [r.conversation_id for r in many]
    assert len(store.conversations("r1")) == 300 == store.count_turns("r1")
    [artifact] = store.artifacts("r1")
    assert (tmp_path / "reports" / artifact["path"]).read_bytes() == b"a-C-007"
    assert {t.artifacts.get("note") for t in store.turns("r1") if t.entry_id == "C-007"} == {artifact["sha256"]}
    dump = "\n".join(sqlite3.connect(tmp_path / "s.sqlite").iterdump())
    assert "Proc-canary-5150-xyzzy" not in dump and "echo ***" in dump
    store.close()


def test_writer_process_reraises_a_bad_record_and_keeps_the_others(tmp_path):
    from bench.store import StoreWriter

    store, good, bad = _records(tmp_path)
    writer = StoreWriter(store, process=True)
    for record in [*good[:2], bad, *good[2:]]:
        writer.submit(record)
    with pytest.raises(sqlite3.IntegrityError):
        writer.close()
    assert sorted(c["conversation_id"] for c in store.conversations("r1")) == [f"E-{i}" for i in range(5)]
    store.close()


def test_a_store_in_memory_is_written_by_a_thread():
    from bench.store import Store, StoreWriter

    writer = StoreWriter(Store(":memory:"), process=True)
    assert not writer.process and writer.wait_ready(0)
    writer.close()


KILLED = """
import os, signal, sys
sys.path.insert(0, sys.argv[2])
from tests.store.test_store_v2 import _conversation, _run
from bench.store import Store, StoreWriter
store = Store(sys.argv[1])
store.create_run(_run())
writer = StoreWriter(store, process=True)
for i in range(60):
    writer.submit(_conversation(conversation_id=f"K-{i:02d}"))
    if i == 29:
        writer.flush()  # the first 30 are committed
os.kill(os.getpid(), signal.SIGKILL)  # the rest may or may not have reached the writer's process
"""


def _snapshot(path) -> tuple[list[str], int, dict[str, int]]:
    """Conversations, turn count and events per conversation, read in one transaction (one consistent view)."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("BEGIN")
        ids = [r[0] for r in conn.execute("SELECT conversation_id FROM conversations ORDER BY conversation_id")]
        turns = conn.execute("SELECT COUNT(*) FROM turns").fetchone()[0]
        events = dict(conn.execute("SELECT conversation_id, COUNT(*) FROM events GROUP BY conversation_id"))
        conn.execute("COMMIT")
        return ids, turns, events
    finally:
        conn.close()


def test_a_killed_harness_leaves_whole_conversations_only(tmp_path):
    import subprocess
    import sys
    import time
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    path = tmp_path / "k.sqlite"
    subprocess.run([sys.executable, "-c", KILLED, str(path), str(root)], cwd=root, timeout=120)
    seen, deadline = None, time.monotonic() + 60
    while time.monotonic() < deadline:  # the orphaned writer process commits what it received, then exits
        snapshot = _snapshot(path)
        ids, turns, events = snapshot
        assert turns == len(ids) and all(events.get(cid) == 2 for cid in ids) and len(events) == len(ids)
        if snapshot == seen:
            break
        seen = snapshot
        time.sleep(1.0)
    ids = seen[0]
    assert 30 <= len(ids) <= 60 and ids[:30] == [f"K-{i:02d}" for i in range(30)]
