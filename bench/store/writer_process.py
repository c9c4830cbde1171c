"""The store writer's own process (``StoreWriter(..., process=True)``): redaction, JSON and SQLite off the harness's
interpreter lock, on the machine's other core.

Run as ``python -m bench.store.writer_process STORE_PATH``. It reads framed batches on stdin — each a pickle of
``(credentials or None, [(seq, conversation JSON), ...])`` from the harness's own ``StoreWriter`` — commits each
batch (and whatever else has already arrived) in one transaction, as the writer thread does, and answers on stdout
with ``(committed seqs, error or None)``. The harness's known credentials come with the batches (whenever they
changed), so its redactor here knows every value the run resolved. At the end of its input (the run closed the
writer, or the harness was killed) it commits what it has received whole and exits: a batch cut short is dropped,
never half-recorded.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import struct
import sys

_HEADER = struct.Struct(">I")


class FrameReader:
    """Length-prefixed frames from a file descriptor (``None`` at the end of the input or a frame cut short)."""

    def __init__(self, fd: int):
        self.fd = fd
        self.buffer = bytearray()

    def _fill(self, size: int) -> bool:
        while len(self.buffer) < size:
            chunk = os.read(self.fd, max(65536, size - len(self.buffer)))
            if not chunk:
                return False
            self.buffer += chunk
        return True

    def read(self) -> bytes | None:
        if not self._fill(_HEADER.size):
            return None
        (length,) = _HEADER.unpack_from(self.buffer)
        if not self._fill(_HEADER.size + length):
            return None
        frame = bytes(self.buffer[_HEADER.size:_HEADER.size + length])
        del self.buffer[:_HEADER.size + length]
        return frame

    def ready(self) -> bool:
        """Whether a read would not wait (something buffered, or the descriptor is readable)."""
        if len(self.buffer) >= _HEADER.size:
            return True
        readable, _, _ = select.select([self.fd], [], [], 0)
        return bool(readable)


def write_frame(fd: int, payload: bytes) -> None:
    data = _HEADER.pack(len(payload)) + payload
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _picklable(exc: BaseException) -> BaseException:
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:  # noqa: BLE001 - sent as text instead
        return RuntimeError(f"{type(exc).__name__}: {exc}")


def _marker(flags: list[bool]):
    def mark(index: int) -> None:
        flags[index] = True

    return mark


def main(argv: list[str]) -> int:
    from bench.protocol.redact import register_secret
    from bench.store.sqlite import ConversationRecord, Store
    from bench.store.writer import MAX_BATCH, write_batch

    if len(argv) != 1:
        print("usage: python -m bench.store.writer_process STORE_PATH", file=sys.stderr)
        return 2
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the harness's; the end of the input stops this
    out = os.dup(sys.stdout.fileno())  # the answers' own descriptor: anything printed goes to stderr
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    store = Store(argv[0])
    reader = FrameReader(sys.stdin.fileno())
    try:
        while (frame := reader.read()) is not None:
            seqs: list[int] = []
            records: list[ConversationRecord] = []
            while True:  # everything that has arrived meanwhile: one transaction for all of it
                secrets, items = pickle.loads(frame)
                for value in secrets or ():
                    register_secret(value)
                for seq, data in items:
                    seqs.append(seq)
                    records.append(ConversationRecord.model_validate_json(data))
                if len(records) >= MAX_BATCH or not reader.ready() or (frame := reader.read()) is None:
                    break
            flags = [False] * len(records)
            error = write_batch(store, records, _marker(flags))
            committed = [seq for seq, done in zip(seqs, flags, strict=True) if done]
            write_frame(out, pickle.dumps((committed, _picklable(error) if error is not None else None)))
            if frame is None:
                break
    finally:
        store.close()
    return 0


def run(argv: list[str]) -> int:
    """``main`` with any failure reported as one redacted line (a traceback could carry record text)."""
    try:
        return main(argv)
    except BaseException as exc:  # noqa: BLE001
        from bench.protocol.redact import redact

        print(redact(f"store writer process failed: {type(exc).__name__}: {exc}")[:2000], file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(run(sys.argv[1:]))
