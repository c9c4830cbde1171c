"""The store writer: commits finished conversations from its own thread, so no SQLite commit or artifact write
ever runs on the event loop that is timing other sessions.

``submit`` only queues (it never blocks the loop); ``flush`` waits until everything queued is committed; ``close``
flushes and stops the thread. A write that fails is re-raised by the next ``flush``/``close`` — nothing is dropped
silently.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from pathlib import Path

from bench.store.artifacts import ArtifactStore
from bench.store.sqlite import ArtifactRef, ConversationRecord, Store

_STOP = object()


class PendingArtifact:
    """Artifact content to be written by the writer thread (hashing and file I/O stay off the loop)."""

    def __init__(self, kind: str, data: bytes | Callable[[], bytes], media_type: str):
        self.kind = kind
        self.data = data
        self.media_type = media_type


class StoreWriter:
    def __init__(self, store: Store, reports_dir: Path | None = None, *,
                 on_written: Callable[[ConversationRecord], None] | None = None):
        self.store = store
        self.reports_dir = reports_dir
        self.on_written = on_written
        self._queue: queue.Queue[object] = queue.Queue()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="store-writer", daemon=True)
        self._thread.start()

    def submit(self, record: ConversationRecord, artifacts: list[PendingArtifact] | None = None) -> None:
        self._queue.put((record, artifacts or []))

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is _STOP:
                    return
                record, artifacts = item  # type: ignore[misc]
                self._write(record, artifacts)
            except BaseException as exc:  # noqa: BLE001 - kept and re-raised on the caller's thread
                self._error = self._error or exc
            finally:
                self._queue.task_done()

    def _write(self, record: ConversationRecord, artifacts: list[PendingArtifact]) -> None:
        if artifacts and self.reports_dir is not None:
            files = ArtifactStore(self.reports_dir, record.run_id)
            for artifact in artifacts:
                data = artifact.data() if callable(artifact.data) else artifact.data
                sha, path = files.put(data, artifact.media_type)
                record.artifacts.append(ArtifactRef(kind=artifact.kind, sha256=sha, bytes=len(data),
                                                    media_type=artifact.media_type,
                                                    path=str(path.relative_to(self.reports_dir))))
                for turn in record.turns:
                    turn.artifacts[artifact.kind] = sha
        self.store.record_conversation(record)
        if self.on_written is not None:
            self.on_written(record)

    def flush(self) -> None:
        self._queue.join()
        self._raise()

    def close(self) -> None:
        if self._thread.is_alive():
            self._queue.put(_STOP)
            self._thread.join()
        self._raise()

    def _raise(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error
