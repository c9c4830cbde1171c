"""The store writer's process fed from an event loop (``StoreWriter`` made inside a running loop, as the scheduler
makes it): records go over the pipe from the loop itself (no sending thread), artifacts are written on the loop's
executor, ``flush``/``close`` from another thread wait for the loop to have handed everything over; a bad record
costs only itself, a writer process that dies leaves its records reported unrecorded, and waiting on the loop's
own thread is refused instead of hanging."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import threading

import pytest

from bench.protocol.redact import register_secret
from bench.store import StoreWriter
from bench.store.writer import PendingArtifact
from tests.engine.test_event_tap import _records


async def test_records_and_artifacts_sent_from_the_loop_are_all_committed(tmp_path):
    store, good, _ = _records(tmp_path)
    written: list[str] = []
    writer = StoreWriter(store, tmp_path / "reports", on_written=lambda r: written.append(r.conversation_id),
                         process=True)
    assert writer._sender is not None and writer._thread is None  # no sending thread
    assert not [t for t in threading.enumerate() if t.name == "store-writer"]
    assert await asyncio.to_thread(writer.wait_ready, 60)
    register_secret("Loop-canary-8080-plugh")  # resolved after the writer started: the child still knows it
    many = [good[0].model_copy(update={"conversation_id": f"L-{i:03d}"}, deep=True) for i in range(400)]
    for index, record in enumerate(many):
        record.turns[0].entry_id = record.conversation_id
        record.turns[0].answer = "echo Loop-canary-8080-plugh"
        writer.submit(record, [PendingArtifact("note", f"a-{record.conversation_id}".encode(), "text/plain")]
                      if record.conversation_id == "L-007" else None)
        if index % 50 == 0:
            await asyncio.sleep(0)  # other loop turns: several frames
    await asyncio.to_thread(writer.flush)
    assert len(written) == 400
    await asyncio.to_thread(writer.close)
    assert sorted(written) == [r.conversation_id for r in many]
    assert len(store.conversations("r1")) == 400 == store.count_turns("r1")
    [artifact] = store.artifacts("r1")
    assert (tmp_path / "reports" / artifact["path"]).read_bytes() == b"a-L-007"
    dump = "\n".join(sqlite3.connect(tmp_path / "s.sqlite").iterdump())
    assert "Loop-canary-8080-plugh" not in dump and "echo ***" in dump
    store.close()


async def test_a_bad_record_is_reraised_and_costs_only_itself(tmp_path):
    store, good, bad = _records(tmp_path)
    writer = StoreWriter(store, process=True)
    for record in [*good[:2], bad, *good[2:]]:
        writer.submit(record)
    with pytest.raises(sqlite3.IntegrityError):
        await asyncio.to_thread(writer.close)
    assert sorted(c["conversation_id"] for c in store.conversations("r1")) == [f"E-{i}" for i in range(5)]
    store.close()


async def test_a_writer_process_that_dies_leaves_its_records_reported_unrecorded(tmp_path):
    store, good, _ = _records(tmp_path)
    writer = StoreWriter(store, process=True)
    assert await asyncio.to_thread(writer.wait_ready, 60)
    os.kill(writer._child.pid, signal.SIGKILL)
    await asyncio.to_thread(writer._child.wait)
    for record in good:
        writer.submit(record)
        await asyncio.sleep(0.01)
    with pytest.raises(RuntimeError, match=r"store writer process ended \(exit code -9\) before recording 5"):
        await asyncio.wait_for(asyncio.to_thread(writer.close), 60)
    store.close()


async def test_waiting_on_the_loops_own_thread_is_refused(tmp_path):
    store, good, _ = _records(tmp_path)
    writer = StoreWriter(store, process=True)
    writer.submit(good[0])
    with pytest.raises(RuntimeError, match="from another thread"):
        writer.flush()
    await asyncio.to_thread(writer.close)
    assert len(store.conversations("r1")) == 1
    store.close()


def test_the_same_artifact_written_by_many_threads_at_once_is_one_file(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    from bench.store.artifacts import ArtifactStore

    files = ArtifactStore(tmp_path, "r1")
    data = b"RIFF" + b"\x01" * 200_000  # the same answer audio for two conversations, say
    barrier = threading.Barrier(8)

    def put(_):
        barrier.wait()
        return files.put(data, "audio/wav")

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(put, range(8)))
    assert len({sha for sha, _ in results}) == 1
    (path,) = {path for _, path in results}
    assert path.read_bytes() == data
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file left behind
