"""The store writer: commits finished conversations off the event loop that is timing other sessions.

Conversations that finished while the previous transaction was being written are committed together, in one
transaction (up to ``MAX_BATCH``): each is recorded whole or not at all, and a batch that fails is written again
one conversation at a time, so a bad record costs only itself.

Two ways to run it. By default a thread of this process does everything. With ``process=True`` (the scheduler's
choice for a store file) the redaction, JSON and SQLite work runs in a child process
(``bench.store.writer_process``) — off this interpreter's lock, on the other core — and records are handed over
serialized: made inside a running event loop (the scheduler), by that loop itself (``_LoopSender``: one frame per
loop turn, written without blocking, artifact files written by one thread of its own), otherwise by a thread here
that also writes the artifact files. The child commits them and says which, and ``on_written`` is called (on the
thread that reads its answers) for each. Killing the harness loses at most what the child had not received; the
child commits every batch it received whole before it exits.

``submit`` only queues (it never blocks the loop); ``flush`` waits until everything queued is committed; ``close``
flushes and stops the thread (and the child) — with a loop sender, both are called from another thread while the
loop runs (``asyncio.to_thread``), and refuse to wait on the loop's own thread. A write that fails is re-raised by
the next ``flush``/``close`` — nothing is dropped silently; records a dead child never reported committed are
reported by ``close``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import itertools
import os
import pickle
import queue
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from bench.store.artifacts import ArtifactStore
from bench.store.sqlite import ArtifactRef, ConversationRecord, Store, _record_json

#: at most this many conversations per transaction
MAX_BATCH = 500


class PendingArtifact:
    """Artifact content to be written by the writer thread (hashing and file I/O stay off the loop)."""

    def __init__(self, kind: str, data: bytes | Callable[[], bytes], media_type: str, *,
                 turn_index: int | None = None):
        self.kind = kind
        self.data = data
        self.media_type = media_type
        #: the turn the artifact belongs to (its hash goes into that turn's record); None: every turn's
        self.turn_index = turn_index


#: one finished conversation for the writer: its record, its artifacts and the record's JSON when already encoded
_Work = tuple[ConversationRecord, list[PendingArtifact], bytes | None]


def write_batch(store: Store, records: list[ConversationRecord],
                committed: Callable[[int], None]) -> BaseException | None:
    """Commit ``records`` in one transaction; if that fails, one by one. ``committed(i)`` for each recorded one;
    returns the first error (``None`` when every record was committed)."""
    try:
        store.record_conversations(records)
    except BaseException as exc:  # noqa: BLE001 - returned to the caller, who re-raises it
        if len(records) == 1:
            return exc
        failed: BaseException | None = None
        for index, record in enumerate(records):  # the batch was rolled back as a whole
            try:
                store.record_conversations([record])
            except BaseException as one:  # noqa: BLE001
                failed = failed or one
                continue
            committed(index)
        return failed
    for index in range(len(records)):
        committed(index)
    return None


class StoreWriter:
    def __init__(self, store: Store, reports_dir: Path | None = None, *,
                 on_written: Callable[[ConversationRecord], None] | None = None, process: bool = False):
        self.store = store
        self.reports_dir = reports_dir
        self.on_written = on_written
        #: whether a child process commits (a store in memory cannot be shared: a thread here does)
        self.process = process and store.path != ":memory:"
        #: records to commit, then None (the stop mark)
        self._queue: queue.Queue[_Work | None] = queue.Queue()
        self._error: BaseException | None = None
        self._pending: dict[int, ConversationRecord] = {}
        self._settled = threading.Condition()
        self._child: subprocess.Popen[bytes] | None = None
        self._acks: threading.Thread | None = None
        #: the child answered for the first time (its store is open), or it could not start
        self._ready = threading.Event()
        if not self.process:
            self._ready.set()
        #: made inside a running event loop, a child's records are sent from that loop (``_LoopSender``): no thread
        #: of this process wakes per record to take the interpreter lock from the loop that is timing sessions
        self._sender: _LoopSender | None = None
        self._thread: threading.Thread | None = None
        loop = _running_loop() if self.process else None
        if loop is not None:
            self._start_sending_from(loop)
            return
        target = self._send if self.process else self._run
        self._thread = threading.Thread(target=target, name="store-writer", daemon=True)
        self._thread.start()

    def submit(self, record: ConversationRecord, artifacts: list[PendingArtifact] | None = None) -> None:
        """Queue ``record``. For the child process a record without artifacts is serialized here, by the caller:
        the JSON is work under this interpreter's lock wherever it is done, and done here it runs when the caller
        chooses (the scheduler: after the next conversation has started) instead of whenever the writer's thread
        gets the lock."""
        if self._sender is not None:
            self._sender.submit(record, artifacts or [])
            return
        data = None
        if self.process and not artifacts:
            try:
                data = _record_json(record).encode("utf-8")
            except Exception:  # noqa: BLE001 - left to the writer's thread, which keeps the error
                data = None
        self._queue.put((record, artifacts or [], data))

    def _batch(self) -> tuple[list[_Work], int, bool]:
        """The next batch from the queue: (work, items taken, whether it ends with the stop mark)."""
        batch = [self._queue.get()]
        while len(batch) < MAX_BATCH:  # everything that finished meanwhile: one transaction for all of it
            try:
                batch.append(self._queue.get_nowait())
            except queue.Empty:
                break
        work = [item for item in batch if item is not None]
        return work, len(batch), len(work) != len(batch)

    # -- in this process --------------------------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            work, taken, stop = self._batch()
            try:
                if work:
                    self._write([(record, artifacts) for record, artifacts, _data in work])
            except BaseException as exc:  # noqa: BLE001 - kept and re-raised on the caller's thread
                self._keep(exc)
            finally:
                for _ in range(taken):
                    self._queue.task_done()
            if stop:
                return

    def _write(self, batch: list[tuple[ConversationRecord, list[PendingArtifact]]]) -> None:
        records = [self._with_artifacts(record, artifacts) for record, artifacts in batch]
        error = write_batch(self.store, records, lambda index: self._written(records[index]))
        if error is not None:
            raise error

    # -- in a child process -----------------------------------------------------------------------------------
    def _start_child(self) -> subprocess.Popen[bytes]:
        root = str(Path(__file__).resolve().parents[2])  # where ``bench`` is importable from
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        return subprocess.Popen([sys.executable, "-m", "bench.store.writer_process", self.store.path],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, close_fds=True)

    def _start_sending_from(self, loop: asyncio.AbstractEventLoop) -> None:
        try:
            self._child = self._start_child()
        except BaseException as exc:  # noqa: BLE001 - no child: nothing can be recorded (close says so)
            self._keep(exc)
            self._ready.set()
            self._sender = _LoopSender(self, loop, None)
            return
        self._acks = threading.Thread(target=self._receive, name="store-writer-acks", daemon=True)
        self._acks.start()
        assert self._child.stdin is not None
        self._sender = _LoopSender(self, loop, self._child.stdin.fileno())

    def _send(self) -> None:
        from bench.framing import write_frame
        from bench.privacy import redaction_state

        try:
            self._child = self._start_child()
        except BaseException as exc:  # noqa: BLE001 - no child: nothing can be recorded
            self._keep(exc)
            self._ready.set()
            self._drain_unrecorded()
            return
        self._acks = threading.Thread(target=self._receive, name="store-writer-acks", daemon=True)
        self._acks.start()
        assert self._child.stdin is not None
        fd, numbers, sent_secrets = self._child.stdin.fileno(), itertools.count(), None
        try:
            while True:
                work, taken, stop = self._batch()
                try:
                    items: list[tuple[int, bytes]] = []
                    for record, artifacts, data in work:
                        if data is None:
                            try:
                                record = self._with_artifacts(record, artifacts)
                                data = _record_json(record).encode("utf-8")
                            except BaseException as exc:  # noqa: BLE001 - this record is not recorded; kept
                                self._keep(exc)
                                continue
                        number = next(numbers)
                        with self._settled:
                            self._pending[number] = record
                        items.append((number, data))
                    if items:
                        secrets = redaction_state()  # credentials and personal-data settings, for the child
                        write_frame(fd, pickle.dumps((secrets if secrets != sent_secrets else None, items)))
                        sent_secrets = secrets
                except BaseException as exc:  # noqa: BLE001 - the child is gone (its reason comes with close)
                    self._keep(exc)
                finally:
                    for _ in range(taken):
                        self._queue.task_done()
                if stop:
                    return
        finally:
            with self._settled:
                self._settled.notify_all()
            self._child.stdin.close()  # the child commits what it has and exits

    def _receive(self) -> None:
        from bench.framing import FrameReader

        assert self._child is not None and self._child.stdout is not None
        reader = FrameReader(self._child.stdout.fileno())
        try:
            while (frame := reader.read()) is not None:
                self._ready.set()
                committed, error = pickle.loads(frame)
                if error is not None:
                    self._keep(error)
                for number in committed:
                    with self._settled:
                        record = self._pending.pop(number)
                    self._written(record)
                with self._settled:
                    self._settled.notify_all()
        except BaseException as exc:  # noqa: BLE001
            self._keep(exc)
        finally:
            self._ready.set()
            with self._settled:
                self._settled.notify_all()

    def wait_ready(self, timeout_s: float = 30.0) -> bool:
        """Wait until the child process has started and opened the store (at once for the thread). Its start-up
        is CPU work: done before the first conversation, it does not slow the first conversations of the run.
        False when it took longer (the run goes on; records queue meanwhile)."""
        return self._ready.wait(timeout_s)

    def _drain_unrecorded(self) -> None:
        while True:
            work, taken, stop = self._batch()
            for _ in range(taken):
                self._queue.task_done()
            if stop:
                return

    def _unrecorded_error(self) -> BaseException | None:
        """What to raise when the child ended with conversations it never reported committed."""
        with self._settled:
            left = len(self._pending)
            self._pending.clear()
        if not left:
            return None
        code = self._child.returncode if self._child is not None else None
        return RuntimeError(f"the store writer process ended (exit code {code}) before recording {left} "
                            "conversation(s); they are left for --resume")

    # -- shared -----------------------------------------------------------------------------------------------
    def _keep(self, exc: BaseException) -> None:
        self._error = self._error or exc

    def _written(self, record: ConversationRecord) -> None:
        if self.on_written is not None:
            self.on_written(record)

    def _with_artifacts(self, record: ConversationRecord, artifacts: list[PendingArtifact]) -> ConversationRecord:
        if artifacts and self.reports_dir is not None:
            files = ArtifactStore(self.reports_dir, record.run_id)
            for artifact in artifacts:
                data = artifact.data() if callable(artifact.data) else artifact.data
                sha, path = files.put(data, artifact.media_type)
                record.artifacts.append(ArtifactRef(kind=artifact.kind, sha256=sha, bytes=len(data),
                                                    media_type=artifact.media_type,
                                                    path=str(path.relative_to(self.reports_dir))))
                for turn in record.turns:
                    if artifact.turn_index is None or artifact.turn_index == turn.turn_index:
                        turn.artifacts[artifact.kind] = sha
        return record

    def flush(self) -> None:
        if self._sender is not None:
            self._sender.drain(close=False)
        else:
            self._queue.join()
        if self.process:
            with self._settled:  # every record handed over is reported committed (or the child is gone)
                self._settled.wait_for(lambda: not self._pending or self._acks is None
                                       or not self._acks.is_alive())
        self._raise()

    def close(self) -> None:
        if self._sender is not None:
            self._sender.drain(close=True)  # everything handed over, then the child's input closed
        elif self._thread is not None and self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()
        if self._acks is not None:
            self._acks.join()
        if self._child is not None:
            self._child.wait()
            self._keep_unrecorded()
        self._raise()

    def _keep_unrecorded(self) -> None:
        error = self._unrecorded_error()
        if error is not None:
            self._keep(error)

    def _raise(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class _LoopSender:
    """Sends a child writer its records from the event loop that made the writer: each record is serialized by the
    caller (the scheduler builds records after the next conversation has started), everything submitted in one loop
    turn goes in one frame, written without blocking (what the pipe does not take waits for it to be writable).
    Records with artifacts are prepared on one thread (file I/O, in order) and sent when ready. ``drain`` is called
    from another thread (``flush``/``close`` while the loop runs) and waits for the loop to have handed everything
    over."""

    def __init__(self, writer: StoreWriter, loop: asyncio.AbstractEventLoop, fd: int | None):
        self.writer = writer
        self.loop = loop
        self.fd = fd
        self._numbers = itertools.count()
        self._outbox: list[tuple[int, bytes]] = []
        self._unsent = bytearray()
        self._scheduled = False
        self._waiting_writable = False
        self._preparing = 0
        self._sent_secrets: tuple[object, ...] | None = None
        self._files: concurrent.futures.ThreadPoolExecutor | None = None
        self._idle = asyncio.Event()
        self._idle.set()
        if fd is not None:
            os.set_blocking(fd, False)

    def submit(self, record: ConversationRecord, artifacts: list[PendingArtifact]) -> None:
        if artifacts:
            self._preparing += 1
            self._idle.clear()
            if self._files is None:  # one thread writes the files, in the order records finished
                self._files = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="store-artifacts")
            future = self.loop.run_in_executor(self._files, self._prepare, record, artifacts)
            future.add_done_callback(functools.partial(self._prepared, record))
            return
        try:
            data = _record_json(record).encode("utf-8")
        except BaseException as exc:  # noqa: BLE001 - this record is not recorded; kept
            self.writer._keep(exc)
            return
        self._queue(record, data)

    def _prepare(self, record: ConversationRecord, artifacts: list[PendingArtifact]) -> bytes:  # executor
        return _record_json(self.writer._with_artifacts(record, artifacts)).encode("utf-8")

    def _prepared(self, record: ConversationRecord, done: asyncio.Future[bytes]) -> None:
        self._preparing -= 1
        try:
            data = done.result()
        except BaseException as exc:  # noqa: BLE001 - this record is not recorded; kept
            self.writer._keep(exc)
            self._check_idle()
            return
        self._queue(record, data)

    def _queue(self, record: ConversationRecord, data: bytes) -> None:
        number = next(self._numbers)
        with self.writer._settled:  # until the child reports it committed (``close`` counts what it never did)
            self.writer._pending[number] = record
        if self.fd is None:  # the child is gone
            return
        self._outbox.append((number, data))
        self._idle.clear()
        if not self._scheduled:
            self._scheduled = True
            self.loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._scheduled = False
        self._encode()
        self._write()

    def _encode(self) -> None:
        """The outbox as one frame at the end of what is still unsent (credentials when they changed)."""
        from bench.framing import encode_frame
        from bench.privacy import redaction_state

        items, self._outbox = self._outbox, []
        if items and self.fd is not None:
            secrets = redaction_state()
            self._unsent += encode_frame(pickle.dumps((secrets if secrets != self._sent_secrets else None, items)))
            self._sent_secrets = secrets

    def _write(self) -> None:
        if self._unsent and self.fd is not None:
            try:
                written = os.write(self.fd, self._unsent)
            except BlockingIOError:
                written = 0
            except OSError:  # the child is gone: ``close`` reports what it never said it committed
                self._unsent.clear()
                self._stop_watching()
                self.fd = None
                written = 0
            del self._unsent[:written]
        if self._unsent and not self._waiting_writable and self.fd is not None:
            self._waiting_writable = True
            self.loop.add_writer(self.fd, self._write)
        elif not self._unsent:
            self._stop_watching()
        self._check_idle()

    def _stop_watching(self) -> None:
        if self._waiting_writable and self.fd is not None:
            self._waiting_writable = False
            self.loop.remove_writer(self.fd)

    def _check_idle(self) -> None:
        if not self._unsent and not self._outbox and not self._preparing and not self._scheduled:
            self._idle.set()

    async def _drained(self, close: bool) -> None:
        self._check_idle()
        await self._idle.wait()
        if close:
            self._stop_watching()
            self._close_input()

    def drain(self, *, close: bool) -> None:
        """Wait (on another thread) until the loop has handed every submitted record to the child; with
        ``close``, then close the child's input."""
        if _running_loop() is self.loop:
            raise RuntimeError("StoreWriter.flush/close wait for the event loop that sends the records: call them "
                               "from another thread (asyncio.to_thread)")
        if self.loop.is_closed() or not self.loop.is_running():
            self._drain_without_loop(close)
        else:
            asyncio.run_coroutine_threadsafe(self._drained(close), self.loop).result()
        if close and self._files is not None:
            self._files.shutdown(wait=True)

    def _drain_without_loop(self, close: bool) -> None:
        """The loop is gone: write what it had not, blocking (records still being prepared are lost)."""
        if self._preparing:
            self.writer._keep(RuntimeError(f"{self._preparing} conversation(s) with artifacts were not recorded: "
                                           "the event loop ended before their files were written"))
        if self.fd is not None:
            self._encode()
            os.set_blocking(self.fd, True)
            view = memoryview(bytes(self._unsent))
            with contextlib.suppress(OSError):  # the child is gone: ``close`` reports what it never committed
                while view:
                    view = view[os.write(self.fd, view):]
            self._unsent.clear()
        if close:
            self._close_input()

    def _close_input(self) -> None:
        """The child's input ends: it commits what it has and exits."""
        self.fd = None
        child = self.writer._child
        if child is not None and child.stdin is not None:
            with contextlib.suppress(OSError):
                child.stdin.close()
