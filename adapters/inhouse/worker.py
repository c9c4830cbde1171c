"""An in-house orchestrator's own process: ``python -m adapters.inhouse.worker``, started by
``adapters.inhouse.process.OrchestratorProcess``.

It reads ``Hello`` on stdin, builds the orchestrator (``protocol.orchestrator.load_orchestrator``: the same checks,
the same errors, answered as ``StartFailed``), answers ``Ready`` and then serves ``Ask``/``Cancel`` messages on its
own event loop: each query is a task; its items (``adapters.inhouse.wire``) are written back on the answer
descriptor, what one loop turn produced in a frame or a few. Stdin is read on this loop too (one thread: no
interpreter-lock hand-overs); while a stack blocks the loop, the harness keeps what it could not write yet (its
writes never block). The end of stdin (the harness closed it, or died) cancels what is
running and ends the process. Anything the stack prints goes to stderr and it reads nothing on stdin: the pipes
are the harness's alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import signal
import sys
from typing import Any

from adapters.inhouse.wire import (
    FLUSH_AT,
    FROM_WORKER,
    TO_WORKER,
    Answer,
    Answered,
    Ask,
    Cancel,
    Done,
    Failed,
    Failure,
    Hello,
    Ready,
    StartFailed,
    Tokens,
)
from bench.protocol.errors import AdapterError
from bench.protocol.framing import FrameBuffer, FrameReader, write_frame
from bench.protocol.redact import redact, register_secret

#: how long the end of input lets cancelled queries clean up
CANCEL_WAIT_S = 1.0


class _Outbox:
    """What the queries produced, written once per loop turn: one item per query (its tokens of this turn joined,
    and folded into its ``Done``/``Failed`` when it ended in the same turn)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, fd: int):
        self.loop = loop
        self.fd = fd
        #: query id → [tokens of this turn, answered, the ending item or None], in the order they got news
        self.news: dict[int, list[Any]] = {}
        self._scheduled = False

    def _entry(self, query_id: int) -> list[Any]:
        entry = self.news.get(query_id)
        if entry is None:
            if len(self.news) >= FLUSH_AT:  # the harness starts on these while this loop turn makes the rest
                self.flush()
            entry = self.news[query_id] = [[], False, None]
            if not self._scheduled:
                self._scheduled = True
                self.loop.call_soon(self._flush_turn)
        return entry

    def _flush_turn(self) -> None:
        self._scheduled = False
        self.flush()

    def answered(self, query_id: int) -> None:
        self._entry(query_id)[1] = True

    def token(self, query_id: int, text: str) -> None:
        self._entry(query_id)[0].append(text)

    def done(self, query_id: int, answer: Answer) -> None:
        self._entry(query_id)[2] = ("done", answer)

    def failed(self, query_id: int, failure: Failure) -> None:
        self._entry(query_id)[2] = ("failed", failure)

    def flush(self) -> None:
        news, self.news = self.news, {}
        items: list[Any] = []
        for query_id, (tokens, _answered, ending) in news.items():
            text = "".join(tokens)
            if ending is None:
                items.append(Tokens(id=query_id, text=text) if text else Answered(id=query_id))
            elif ending[0] == "done":
                items.append(Done(id=query_id, text=text, answer=ending[1]))
            else:
                items.append(Failed(id=query_id, text=text, failure=ending[1]))
        if items:
            with contextlib.suppress(BrokenPipeError):  # the harness is gone: the end of stdin follows
                write_frame(self.fd, FROM_WORKER.dump_json(items))


def _failure(exc: BaseException) -> Failure:
    if isinstance(exc, AdapterError):
        return Failure(adapter_error=True, type_name=type(exc).__name__, message=redact(str(exc)),
                       code=str(exc.code), retryable=exc.retryable, retry_after_s=exc.retry_after_s,
                       vendor_code=exc.vendor_code)
    return Failure(adapter_error=False, type_name=type(exc).__name__, message=redact(str(exc)))


async def _answer(orchestrator: Any, ask: Ask, outbox: _Outbox) -> None:
    try:
        response = await orchestrator.query(ask.request, ask.user_id, ask.tenant_id)
        outbox.answered(ask.id)
        async for token in response.tokens():
            if token:
                outbox.token(ask.id, token)
        outbox.done(ask.id, Answer.of(response))
    except asyncio.CancelledError:
        raise
    except BaseException as exc:  # noqa: BLE001 - the harness fails the conversation with it
        outbox.failed(ask.id, _failure(exc))


def _forget(running: dict[int, asyncio.Task[None]], query_id: int, _task: asyncio.Task[None]) -> None:
    """A query's done callback: its task is no longer running."""
    running.pop(query_id, None)


async def serve(orchestrator: Any, reader: FrameReader, out: int) -> None:
    loop = asyncio.get_running_loop()
    outbox = _Outbox(loop, out)
    running: dict[int, asyncio.Task[None]] = {}
    ended = asyncio.Event()

    def take(messages: list[Ask | Cancel]) -> None:  # on this loop
        for message in messages:
            if isinstance(message, Cancel):
                task = running.get(message.id)
                if task is not None:
                    task.cancel()
                continue
            task = loop.create_task(_answer(orchestrator, message, outbox))
            running[message.id] = task
            task.add_done_callback(functools.partial(_forget, running, message.id))

    fd, frames = reader.fd, FrameBuffer()
    os.set_blocking(fd, False)

    def readable() -> None:
        try:
            data = os.read(fd, 1 << 20)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:  # the harness closed its end (or died)
            loop.remove_reader(fd)
            ended.set()
            return
        for frame in frames.feed(data):
            take(TO_WORKER.validate_json(frame))

    for frame in frames.feed(bytes(reader.buffer)):  # what came with the hello, if anything
        take(TO_WORKER.validate_json(frame))
    loop.add_reader(fd, readable)
    await ended.wait()
    tasks = list(running.values())
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.wait(tasks, timeout=CANCEL_WAIT_S)
    outbox.flush()


def main() -> int:
    from bench.protocol.orchestrator import OrchestratorError, load_orchestrator

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the harness's; the end of stdin stops this
    out = os.dup(sys.stdout.fileno())  # the answers' own descriptor: anything the stack prints goes to stderr
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    inbox = os.dup(sys.stdin.fileno())  # the questions' own descriptor: a stack reading stdin reads nothing
    with open(os.devnull, "rb") as nothing:
        os.dup2(nothing.fileno(), sys.stdin.fileno())
    reader = FrameReader(inbox)
    frame = reader.read()
    if frame is None:
        return 0
    hello = Hello.model_validate_json(frame)
    for value in hello.secrets:
        register_secret(value)
    sys.path[:0] = [entry for entry in hello.sys_path if entry not in sys.path]
    try:
        orchestrator = load_orchestrator(hello.orchestrator, hello.options)
    except OrchestratorError as exc:
        write_frame(out, StartFailed(field=exc.field, message=exc.detail).model_dump_json().encode())
        return 0
    write_frame(out, Ready(pid=os.getpid()).model_dump_json().encode())
    asyncio.run(serve(orchestrator, reader, out))
    return 0


def run() -> int:
    """``main`` with any failure of its own reported as one redacted line (no traceback: it could carry text)."""
    try:
        return main()
    except BaseException as exc:  # noqa: BLE001
        print(redact(f"in-house orchestrator process failed: {type(exc).__name__}: {exc}")[:2000], file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(run())
