"""The harness's side of an in-house orchestrator running in its own process (``adapters.inhouse.worker``).

Why a process: a stack sharing the harness's interpreter shares its lock, so a CPU-heavy stack slows the engine
that stamps every system's events, and every hand-over between the engine's loop and the stack's thread waits up
to the interpreter's switch interval while the other side is busy (at 200 concurrent conversations that added
several milliseconds to each answer of the in-house row). In its own process the stack has its own interpreter and
its own core, a blocked stack is killed by its PID when the adapter closes, and the engine's loop sees its answers
as it sees a vendor socket's frames: a readable pipe.

``OrchestratorProcess.start_sync`` spawns the worker, sends ``Hello`` and waits for ``Ready``; a stack that cannot
be built is the worker's ``StartFailed``, raised here as the same ``OrchestratorError`` (exit 2, naming the option
and the class) the harness would raise in process. ``ask`` sends a query (a batch of them per loop turn, one write)
and hands what comes back to the response's ``_Reply`` on the loop that asked, as it is read. A worker that dies
fails every query in flight (``ErrorCode.INTERNAL``, with its exit code); the next query starts a new one on a
thread (queries wait for it; at most ``MAX_RESTARTS`` per ``start``), so one crash costs the conversations it was
serving, not the rest of the run. ``start`` after ``stop`` spawns a new one.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import select
import subprocess
import sys
import time
import weakref
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from adapters.inhouse.wire import (
    FLUSH_AT,
    FROM_WORKER,
    TO_WORKER,
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
from bench.protocol import AdapterError, ErrorCode, SessionSpec
from bench.protocol.framing import FrameBuffer, encode_frame, write_frame
from bench.protocol.orchestrator import OrchestratorError, QueryRequest
from bench.protocol.redact import known_secrets, redact

if TYPE_CHECKING:
    from adapters.inhouse.adapter import _Reply

#: what a reply receives, whichever way the orchestrator runs: ``(kind, value)`` items
TOKEN, ANSWERED, DONE, FAILED = "token", "answered", "done", "failed"

_ROOT = str(Path(__file__).resolve().parents[2])  # where ``bench`` and ``adapters`` are importable from


class OrchestratorRaised(Exception):
    """What an orchestrator in another process raised that was not an ``AdapterError``: its type's name and
    message (the exception itself stays there)."""

    def __init__(self, type_name: str, message: str):
        super().__init__(message)
        self.type_name = type_name


def _exception(failure: Failure) -> BaseException:
    if failure.adapter_error:
        return AdapterError(failure.message, code=failure.code or ErrorCode.INTERNAL, retryable=failure.retryable,
                            retry_after_s=failure.retry_after_s, vendor_code=failure.vendor_code)
    return OrchestratorRaised(failure.type_name, failure.message)


class _Asked:
    """One query sent to the worker; ``cancel`` tells the worker to cancel it (nothing once it has finished)."""

    __slots__ = ("process", "query_id")

    def __init__(self, process: OrchestratorProcess, query_id: int):
        self.process = process
        self.query_id = query_id

    def cancel(self) -> None:
        self.process._cancel(self.query_id)


def _kill(child: subprocess.Popen[bytes]) -> None:
    if child.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            child.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(timeout=5)


def _pipe(stream: IO[bytes] | None) -> IO[bytes]:
    """One of the worker's pipes (it is started with stdin and stdout as pipes; subprocess types them optional)."""
    if stream is None:
        raise RuntimeError("the orchestrator's process was started without its pipes")
    return stream


class OrchestratorProcess:
    """One orchestrator in its own process, asked from the engine's event loop."""

    #: how long ``stop`` lets the worker end by itself before it is terminated by its PID
    STOP_WAIT_S = 2.0
    #: crashed workers replaced per ``start``; after that every query fails at once with the last crash's reason
    MAX_RESTARTS = 5

    def __init__(self, system_id: str, orchestrator: str, options: dict[str, Any] | None = None, *,
                 startup_timeout_s: float = 120.0):
        self.system_id = system_id
        self.orchestrator = orchestrator
        self.options = dict(options or {})
        self.startup_timeout_s = startup_timeout_s
        self.pid: int | None = None
        self._child: subprocess.Popen[bytes] | None = None
        self._finalizer: weakref.finalize | None = None
        self._ids = itertools.count(1)
        self._replies: dict[int, _Reply] = {}
        self._outbox: list[Ask | Cancel] = []
        self._unsent = bytearray()
        self._frames = FrameBuffer()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._flush_scheduled = False
        self._writing = False
        #: why the worker stopped serving (it ended), ``None`` while it serves
        self._ended: str | None = None
        #: ``stop`` was called: nothing is started again until ``start``
        self._stopped = False
        self._restarts = 0
        self._restarting: asyncio.Future[Any] | None = None

    @property
    def running(self) -> bool:
        return self._child is not None and self._child.poll() is None and self._ended is None

    # -- starting and stopping --------------------------------------------------------------------------------
    def start_sync(self) -> None:
        """Spawn the worker and build the orchestrator there; ``OrchestratorError`` when it cannot be built."""
        if self.running:
            return
        self._adopt(self._spawn())
        self._restarts, self._stopped = 0, False

    def _spawn(self) -> tuple[subprocess.Popen[bytes], weakref.finalize, int]:
        """A new worker with the orchestrator built (touches nothing of this object's state: it may run on a
        thread while the loop serves)."""
        try:  # what crosses to the worker is JSON: refuse what would not arrive as it was written
            json.dumps(self.options, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise OrchestratorError("options.orchestrator_options", f"must be plain data (JSON) to reach the "
                                    f"orchestrator's process: {exc}", self.system_id) from None
        hello = Hello(system_id=self.system_id, orchestrator=self.orchestrator, options=self.options,
                      sys_path=[p for p in sys.path if p], secrets=sorted(known_secrets()))
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_ROOT, env.get("PYTHONPATH")) if p)
        child = subprocess.Popen([sys.executable, "-m", "adapters.inhouse.worker"], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, env=env, close_fds=True)
        finalizer = weakref.finalize(self, _kill, child)
        assert child.stdin is not None and child.stdout is not None
        try:
            write_frame(child.stdin.fileno(), hello.model_dump_json().encode())
            reply = self._first_reply(child)
        except BaseException:
            finalizer()
            raise
        if isinstance(reply, StartFailed):
            finalizer()
            raise OrchestratorError(reply.field, reply.message, self.system_id)
        os.set_blocking(child.stdin.fileno(), False)
        os.set_blocking(child.stdout.fileno(), False)
        return child, finalizer, reply.pid

    def _adopt(self, spawned: tuple[subprocess.Popen[bytes], weakref.finalize, int]) -> None:
        if self._finalizer is not None:
            self._finalizer()  # the process before it (ended) is reaped
        self._child, self._finalizer, self.pid = spawned
        self._ended, self._loop, self._frames, self._unsent = None, None, FrameBuffer(), bytearray()

    def _first_reply(self, child: subprocess.Popen[bytes]) -> Ready | StartFailed:
        assert child.stdout is not None
        fd, frames = child.stdout.fileno(), FrameBuffer()
        deadline = time.monotonic() + self.startup_timeout_s
        while True:
            left = deadline - time.monotonic()
            readable, _, _ = select.select([fd], [], [], max(0.0, left))
            if not readable:
                raise OrchestratorError("options.orchestrator", f"{self.orchestrator!r} did not start within "
                                        f"{self.startup_timeout_s:g} s (options.startup_timeout_s)", self.system_id)
            data = os.read(fd, 65536)
            if not data:
                code = child.wait()
                raise OrchestratorError("options.orchestrator", f"{self.orchestrator!r}: its process ended "
                                        f"(exit code {code}) before the orchestrator was built", self.system_id)
            for frame in frames.feed(data):
                reply = FROM_WORKER.validate_json(b"[" + frame + b"]")[0]
                if isinstance(reply, Ready | StartFailed):
                    return reply

    async def start(self) -> None:
        if not self.running:
            await asyncio.to_thread(self.start_sync)

    async def stop(self) -> bool:
        """Close the worker's input (it cancels its queries and exits), wait up to ``STOP_WAIT_S``, then
        terminate it by its PID; False when it had to be terminated."""
        child = self._detach("the in-house adapter was closed")
        if child is None:
            return True
        return await asyncio.to_thread(self._reap, child)

    def stop_nowait(self) -> None:
        child = self._detach("the in-house adapter was closed")
        if child is not None:
            _kill(child)

    def _detach(self, reason: str) -> subprocess.Popen[bytes] | None:
        self._stopped = True
        self._end(reason)
        for reply in self._waiting_restart():
            reply.deliver([(FAILED, AdapterError(reason, code=ErrorCode.INTERNAL, retryable=False))])
        child, self._child = self._child, None
        if child is not None:
            with contextlib.suppress(OSError):
                _pipe(child.stdin).close()
        return child

    def _reap(self, child: subprocess.Popen[bytes]) -> bool:
        try:
            child.wait(timeout=self.STOP_WAIT_S)
            ended = True
        except subprocess.TimeoutExpired:  # a stack still blocked: stopped by its PID
            child.terminate()
            try:
                child.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
            ended = False
        with contextlib.suppress(OSError):
            _pipe(child.stdout).close()
        if self._finalizer is not None:
            self._finalizer.detach()
        return ended

    # -- asking -----------------------------------------------------------------------------------------------
    def ask(self, _orchestrator: Any, request: QueryRequest, spec: SessionSpec, reply: _Reply) -> _Asked:
        """Send one query (with the others asked in this loop turn); what comes back goes to ``reply``, on the
        loop that asked, as soon as the pipe has it."""
        query_id = next(self._ids)
        if self._stopped or self._child is None:
            reply.deliver([(FAILED, AdapterError("the orchestrator's process is not running (the adapter was not "
                                                 "started, or was closed)", code=ErrorCode.INTERNAL,
                                                 retryable=False))])
            return _Asked(self, query_id)
        if self._ended is not None:  # it crashed: the next query asks a new one
            if self._restarts >= self.MAX_RESTARTS and self._restarting is None:
                reply.deliver([(FAILED, AdapterError(f"{self._ended}; restarted {self._restarts} times, not again",
                                                     code=ErrorCode.INTERNAL, retryable=False))])
                return _Asked(self, query_id)
            self._replies[query_id] = reply
            self._outbox.append(Ask(id=query_id, request=request, user_id=spec.user_id, tenant_id=spec.tenant_id))
            self._restart(reply.loop)
            return _Asked(self, query_id)
        self._attach(reply.loop)
        self._replies[query_id] = reply
        self._send(Ask(id=query_id, request=request, user_id=spec.user_id, tenant_id=spec.tenant_id))
        return _Asked(self, query_id)

    def _restart(self, loop: asyncio.AbstractEventLoop) -> None:
        """A new worker, spawned on a thread (the engine's loop keeps serving); queries asked meanwhile wait in
        the outbox and go to it once it is ready."""
        if self._restarting is not None:
            return
        self._restarts += 1
        self._restarting = loop.run_in_executor(None, self._spawn)
        self._restarting.add_done_callback(self._restarted)

    def _restarted(self, future: asyncio.Future[Any]) -> None:
        self._restarting = None
        crashed = self._ended
        try:
            spawned = future.result()
        except BaseException as exc:  # noqa: BLE001 - every query waiting for it fails with the reason
            for reply in self._waiting_restart():
                reply.deliver([(FAILED, AdapterError(redact(f"{crashed}; starting it again failed: {exc}"),
                                                     code=ErrorCode.INTERNAL, retryable=False))])
            return
        if self._stopped:  # closed meanwhile
            _kill(spawned[0])
            spawned[1].detach()
            return
        waiting = self._replies
        self._adopt(spawned)
        self._replies = waiting
        self._attach(asyncio.get_running_loop())
        self._flush()

    def _waiting_restart(self) -> list[_Reply]:
        """The replies of queries that were waiting for a new worker (they are taken: the caller fails them)."""
        self._outbox = []
        replies, self._replies = list(self._replies.values()), {}
        return replies

    def _cancel(self, query_id: int) -> None:
        if self._replies.pop(query_id, None) is None:
            return
        if self._ended is None:
            self._send(Cancel(id=query_id))
        else:  # still waiting for a new worker: never sent
            self._outbox = [message for message in self._outbox if message.id != query_id]

    def _attach(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._loop is loop:
            return
        if self._loop is not None:  # another loop had it: its queries have nobody waiting any more
            if not self._loop.is_closed():
                if self._loop.is_running():
                    raise RuntimeError("an in-house orchestrator process answers one event loop at a time")
                self._loop.remove_reader(self._stdout_fd())
                self._loop.remove_writer(self._stdin_fd())
            self._replies.clear()
        self._loop, self._writing = loop, False
        loop.add_reader(self._stdout_fd(), self._readable)

    def _started(self) -> subprocess.Popen[bytes]:
        if self._child is None:
            raise RuntimeError("the orchestrator's process is not running")
        return self._child

    def _stdout_fd(self) -> int:
        return _pipe(self._started().stdout).fileno()

    def _stdin_fd(self) -> int:
        return _pipe(self._started().stdin).fileno()

    def _send(self, message: Ask | Cancel) -> None:
        self._outbox.append(message)
        if len(self._outbox) >= FLUSH_AT:  # the worker starts on these while this loop turn asks the rest
            self._flush()
            return
        if not self._flush_scheduled and self._loop is not None:
            self._flush_scheduled = True
            self._loop.call_soon(self._flush_turn)

    def _flush_turn(self) -> None:
        self._flush_scheduled = False
        self._flush()

    def _flush(self) -> None:
        """What was asked in this loop turn, in one frame (``FLUSH_AT`` at most)."""
        messages, self._outbox = self._outbox, []
        if not messages or self._ended is not None:
            return
        self._unsent += encode_frame(TO_WORKER.dump_json(messages))
        self._write()

    def _write(self) -> None:
        if self._child is None or self._ended is not None:
            return
        try:
            written = os.write(self._stdin_fd(), self._unsent)
        except BlockingIOError:
            written = 0
        except OSError:  # the worker is gone; its end of stdout says how
            self._end_with_exit_code()
            return
        del self._unsent[:written]
        loop = self._loop
        if loop is None:  # not attached to a loop yet: nothing waits for the pipe
            return
        if self._unsent and not self._writing:
            self._writing = True
            loop.add_writer(self._stdin_fd(), self._write)
        elif not self._unsent and self._writing:
            self._writing = False
            loop.remove_writer(self._stdin_fd())

    def _readable(self) -> None:
        try:
            data = os.read(self._stdout_fd(), 1 << 20)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._end_with_exit_code()
            return
        for frame in self._frames.feed(data):
            for item in FROM_WORKER.validate_json(frame):
                self._dispatch(item)

    def _dispatch(self, item: Any) -> None:
        if isinstance(item, Tokens):
            reply = self._replies.get(item.id)
            if reply is not None:
                reply.deliver([(TOKEN, item.text)])
        elif isinstance(item, Answered):
            reply = self._replies.get(item.id)
            if reply is not None:
                reply.deliver([(ANSWERED, None)])
        elif isinstance(item, Done):
            reply = self._replies.pop(item.id, None)
            if reply is not None:
                reply.deliver([(TOKEN, item.text), (DONE, item.answer)])
        elif isinstance(item, Failed):
            reply = self._replies.pop(item.id, None)
            if reply is not None:
                reply.deliver([(TOKEN, item.text), (FAILED, _exception(item.failure))])

    def _end_with_exit_code(self) -> None:
        child = self._child
        code = child.poll() if child is not None else None
        if child is not None and code is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                code = child.wait(timeout=0.2)  # its output has ended: it is exiting
        self._end(redact(f"the orchestrator's process ended (exit code {code})"))

    def _end(self, reason: str) -> None:
        """Fail every query in flight with ``reason`` and stop watching the worker's pipes."""
        if self._ended is None:
            self._ended = reason
        loop, self._loop = self._loop, None
        if loop is not None and not loop.is_closed() and self._child is not None:
            with contextlib.suppress(Exception):
                loop.remove_reader(self._stdout_fd())
                loop.remove_writer(self._stdin_fd())
        replies, self._replies = self._replies, {}
        for reply in replies.values():
            reply.deliver([(FAILED, AdapterError(reason, code=ErrorCode.INTERNAL, retryable=False))])
