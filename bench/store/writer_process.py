"""The store writer's own process (``StoreWriter(..., process=True)``): redaction, JSON and SQLite off the harness's
interpreter lock, on the machine's other core.

Run as ``python -m bench.store.writer_process STORE_PATH``. It reads framed batches on stdin — each a pickle of
``(redaction state or None, [(seq, conversation JSON), ...])`` (``bench.privacy.RedactionState``: credentials and
personal-data settings) from the harness's own ``StoreWriter`` — commits each
batch (and whatever else has already arrived) in one transaction, as the writer thread does, and answers on stdout
with ``(committed seqs, error or None)`` — the first answer, empty, as soon as the store is open (the harness
waits for it before the first conversation). The harness's known credentials come with the batches (whenever
they changed), so its redactor here knows every value the run resolved. At the end of its input (the run closed the
writer, or the harness was killed) it commits what it has received whole and exits: a batch cut short is dropped,
never half-recorded.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys

from bench.framing import FrameReader, write_frame


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
    from bench.privacy import apply_redaction_state
    from bench.store.sqlite import ConversationRecord, Store
    from bench.store.writer import MAX_BATCH, write_batch

    if len(argv) != 1:
        print("usage: python -m bench.store.writer_process STORE_PATH", file=sys.stderr)
        return 2
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the harness's; the end of the input stops this
    out = os.dup(sys.stdout.fileno())  # the answers' own descriptor: anything printed goes to stderr
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    store = Store(argv[0])
    write_frame(out, pickle.dumps(([], None)))  # ready: an answer that commits nothing (``StoreWriter.wait_ready``)
    reader = FrameReader(sys.stdin.fileno())
    try:
        while (frame := reader.read()) is not None:
            seqs: list[int] = []
            records: list[ConversationRecord] = []
            while True:  # everything that has arrived meanwhile: one transaction for all of it
                secrets, items = pickle.loads(frame)
                if secrets is not None:  # the harness's credentials and personal-data settings
                    apply_redaction_state(secrets)
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
