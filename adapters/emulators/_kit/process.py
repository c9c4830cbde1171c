"""An emulator in its own process, and the typed handle the engine holds for any emulator it started.

``EmulatorProcess.start(HostStart)`` runs ``python -m adapters.emulators._kit.host`` (``host``), waits for its
``Ready`` line and returns a handle with the emulator's URLs and credentials. The control plane crosses the process
boundary on the child's stdin/stdout (``channel``): ``register`` (a conversation's identity → its token, acknowledged
before the adapter connects), ``release``, ``expect_utterance`` (the test double's "recognizer" for audio input) and
``send_stamps`` (for benchmarks). Each call is one JSON line out and one back, matched by request id, with a timeout.

``close()`` asks the child to stop, waits ``STOP_GRACE_S``, then kills it by PID; it never hangs. A child that
fails to start or dies is an ``EmulatorFailed`` carrying the (redacted) tail of its stderr.

``EmulatorHandle`` is what both this class and the in-process ``RunningEmulator`` offer the engine.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import signal
import sys
import tempfile
from pathlib import Path
from typing import IO, Protocol, runtime_checkable

from adapters.emulators._kit.channel import (
    ConversationIdentity,
    Failed,
    HostStart,
    Ready,
    Reply,
    Request,
    StampTable,
)
from bench.protocol import Endpoint
from bench.protocol.redact import redact

START_TIMEOUT_S = 60.0
#: a control-plane call (register, release, ...) is answered at once by a healthy child; this only guards against a
#: hung one, and it happens before a conversation's clock starts, so it is sized for a heavily loaded machine (15 s
#: failed conversations at a load average of 9 on 2 cores)
CALL_TIMEOUT_S = 60.0
STOP_GRACE_S = 5.0
STDERR_TAIL_CHARS = 2000
#: the directory holding the ``adapters`` and ``bench`` packages, put on the child's path so it imports the same code
_CODE_ROOT = str(Path(__file__).resolve().parents[3])


class EmulatorFailed(RuntimeError):
    """The emulator process did not start, died, or did not answer; ``config`` when its settings were wrong."""

    def __init__(self, message: str, *, config: bool = False):
        super().__init__(message)
        self.config = config


@runtime_checkable
class EmulatorHandle(Protocol):
    """An emulator the engine started: where it listens, its control plane and how to stop it."""

    urls: dict[str, str]
    credentials: dict[str, str]

    @property
    def pid(self) -> int | None:
        """The child's PID (None: on the engine's own event loop)."""

    def endpoint(self, token: str) -> Endpoint: ...

    async def register(self, identity: ConversationIdentity) -> str: ...

    async def release(self, token: str) -> None: ...

    async def expect_utterance(self, token: str, text: str) -> None: ...

    async def send_stamps(self) -> StampTable: ...

    async def close(self) -> None: ...


def scoped_endpoint(urls: dict[str, str], credentials: dict[str, str], token: str) -> Endpoint:
    """The endpoint of one conversation: every base URL with ``/c/<token>`` appended."""
    scoped = {name: f"{base.rstrip('/')}/c/{token}" for name, base in urls.items()}
    return Endpoint(url=next(iter(scoped.values())), urls=scoped, emulated=True, credentials=dict(credentials))


class EmulatorProcess:
    """An emulator running in a child process (see the module docstring)."""

    def __init__(self, process: asyncio.subprocess.Process, stderr: IO[bytes], who: str):
        self.process = process
        self.who = who
        self.urls: dict[str, str] = {}
        self.credentials: dict[str, str] = {}
        self._stderr = stderr
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[Reply]] = {}
        self._ready: asyncio.Future[Ready] = asyncio.get_running_loop().create_future()
        self._reader: asyncio.Task[None] | None = None
        self._closed = False
        self._death: str | None = None

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def url(self) -> str:
        return next(iter(self.urls.values()))

    # -- life cycle ---------------------------------------------------------------------------------------------
    @classmethod
    async def start(cls, start: HostStart, *, who: str = "emulator",
                    timeout_s: float = START_TIMEOUT_S) -> EmulatorProcess:
        """Start the child and wait (at most ``timeout_s``) until it listens."""
        stderr = tempfile.TemporaryFile()  # noqa: SIM115 - kept open for the child's life, closed by close()
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_CODE_ROOT, env.get("PYTHONPATH", "")) if p)
        env.setdefault("PYTHONUNBUFFERED", "1")
        env["VOICE_BENCH_EMULATOR_PARENT"] = str(os.getpid())  # host.PARENT_ENV: the child dies with this process
        try:
            process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "adapters.emulators._kit.host", stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE, stderr=stderr, env=env,
                start_new_session=True,  # Ctrl-C reaches the engine, which stops the child itself
                limit=16 * 1024 * 1024)
        except OSError as exc:
            stderr.close()
            raise EmulatorFailed(f"{who}: the emulator process could not be started: {exc}") from None
        handle = cls(process, stderr, who)
        handle._reader = asyncio.create_task(handle._read_replies(), name=f"{who} control channel")
        try:
            handle._write(start)
            ready = await asyncio.wait_for(asyncio.shield(handle._ready), timeout_s)
        except TimeoutError:
            await handle.close()
            raise EmulatorFailed(f"{who}: the emulator process did not become ready within {timeout_s:g} s"
                                 f"{handle._stderr_tail()}") from None
        except BaseException:
            await handle.close()
            raise
        handle.urls, handle.credentials = dict(ready.urls), dict(ready.credentials)
        return handle

    async def close(self) -> None:
        """Stop the child: ``stop`` on the channel, then SIGKILL by PID after ``STOP_GRACE_S``; idempotent."""
        if self._closed:
            return
        self._closed = True
        process = self.process
        try:
            if process.returncode is None:
                with contextlib.suppress(OSError, RuntimeError, ConnectionError):
                    self._write(Request(id=next(self._ids), op="stop"))
                    if process.stdin is not None:
                        process.stdin.close()
                try:
                    await asyncio.wait_for(process.wait(), STOP_GRACE_S)
                except TimeoutError:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(process.pid, signal.SIGKILL)
                    await asyncio.wait_for(process.wait(), STOP_GRACE_S)
        finally:
            if self._reader is not None:
                self._reader.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await self._reader
            self._fail_pending("the emulator process was stopped")
            self._stderr.close()

    # -- control plane ------------------------------------------------------------------------------------------
    def endpoint(self, token: str) -> Endpoint:
        return scoped_endpoint(self.urls, self.credentials, token)

    async def register(self, identity: ConversationIdentity) -> str:
        reply = await self._call(Request(id=next(self._ids), op="register", identity=identity))
        if not reply.token:
            raise EmulatorFailed(f"{self.who}: register was answered without a token")
        return reply.token

    async def release(self, token: str) -> None:
        if self._death is not None or self._closed:
            return  # nothing to release in an emulator that is gone
        await self._call(Request(id=next(self._ids), op="release", token=token))

    async def expect_utterance(self, token: str, text: str) -> None:
        await self._call(Request(id=next(self._ids), op="expect_utterance", token=token, text=text))

    async def send_stamps(self) -> StampTable:
        reply = await self._call(Request(id=next(self._ids), op="stamps"))
        return reply.stamps or StampTable()

    def cpu_s(self) -> float:
        """CPU seconds the child has used so far (Linux /proc; NaN elsewhere)."""
        try:
            fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return float("nan")
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    # -- plumbing -----------------------------------------------------------------------------------------------
    def _write(self, message: HostStart | Request) -> None:
        stdin = self.process.stdin
        if stdin is None or stdin.is_closing():
            raise EmulatorFailed(f"{self.who}: the emulator process is not running{self._stderr_tail()}")
        stdin.write(message.model_dump_json().encode() + b"\n")

    async def _call(self, request: Request, timeout_s: float = CALL_TIMEOUT_S) -> Reply:
        if self._death is not None:
            raise EmulatorFailed(self._death)
        if self._closed:
            raise EmulatorFailed(f"{self.who}: the emulator process was stopped")
        future: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        self._pending[request.id] = future
        try:
            self._write(request)
            reply = await asyncio.wait_for(future, timeout_s)
        except TimeoutError:
            raise EmulatorFailed(f"{self.who}: no answer to {request.op!r} within {timeout_s:g} s"
                                 f"{self._stderr_tail()}") from None
        finally:
            self._pending.pop(request.id, None)
        if not reply.ok:
            raise EmulatorFailed(f"{self.who}: {request.op} failed: {reply.error}")
        return reply

    async def _read_replies(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        try:
            while True:
                line = await stdout.readline()
                if not line:
                    break
                try:
                    message = _parse(line)
                except ValueError:
                    continue  # not a channel line (cannot happen: the child's stdout is the channel only)
                if isinstance(message, Reply):
                    future = self._pending.get(message.id)
                    if future is not None and not future.done():
                        future.set_result(message)
                elif isinstance(message, Ready) and not self._ready.done():
                    self._ready.set_result(message)
                elif isinstance(message, Failed) and not self._ready.done():
                    self._ready.set_exception(EmulatorFailed(f"{self.who}: {message.message}"
                                                             f"{'' if message.config else self._stderr_tail()}",
                                                             config=message.config))
        finally:
            code = await _returncode(self.process)
            if not self._closed:
                self._death = (f"{self.who}: the emulator process (pid {self.pid}) exited"
                               f"{f' with status {code}' if code is not None else ''}{self._stderr_tail()}")
            if not self._ready.done():
                self._ready.set_exception(EmulatorFailed(self._death or f"{self.who}: the emulator process exited"))
            self._fail_pending(self._death or "the emulator process was stopped")

    def _fail_pending(self, message: str) -> None:
        for future in self._pending.values():
            if not future.done():
                future.set_exception(EmulatorFailed(message))
        if not self._ready.done():
            self._ready.set_exception(EmulatorFailed(message))
        with contextlib.suppress(asyncio.CancelledError, EmulatorFailed, Exception):
            self._ready.exception()  # retrieved: no "exception was never retrieved" warning

    def _stderr_tail(self) -> str:
        try:
            self._stderr.flush()
            size = self._stderr.seek(0, os.SEEK_END)
            self._stderr.seek(max(0, size - STDERR_TAIL_CHARS))
            tail = self._stderr.read().decode("utf-8", "replace").strip()
        except (OSError, ValueError):
            return ""
        return f"; its stderr ends with:\n{redact(tail)}" if tail else ""


def _parse(line: bytes) -> Reply | Ready | Failed:
    import json

    kind = json.loads(line).get("kind")
    models: dict[str, type[Reply] | type[Ready] | type[Failed]] = {"ready": Ready, "failed": Failed}
    model = models.get(kind, Reply)
    return model.model_validate_json(line)


async def _returncode(process: asyncio.subprocess.Process) -> int | None:
    """The child's exit status once its stdout closed (it normally follows at once)."""
    try:
        return await asyncio.wait_for(process.wait(), 2.0)
    except TimeoutError:
        return None
