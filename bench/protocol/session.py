"""The Session boundary: one persistent connection to a system under test for one conversation.

``SystemUnderTest.open_session(spec)`` opens the vendor connection (authentication, session configuration) and
returns a ``Session``. The caller then sends text turns (``send_text``) or streams audio (``push_audio`` with
paced frames; ``end_input`` commits where the endpoint does not detect the end of speech itself), may barge in
(``interrupt(played_ms)``), answers the agent's tool calls (``send_tool_result``), sends keypad digits
(``send_dtmf``, where declared), may change the knowledge given to the agent between turns
(``update_context``), reads one event stream for the whole conversation (``events()``) and finally ``aclose()``-s it.

``StreamingSession`` is the base most adapters build on: a background reader turns wire frames into events
with ``emit``; a failure becomes one fatal ``ErrorEvent`` that ends the stream. Its ``events()`` is an
``EventStream``: read it with ``async for``, or ``listen`` to it — the engine's tap does, and so stamps each event
where the adapter emits it. ``run_turn`` is the one-exchange helper on top (open, send, read to ``ResponseDone``,
close), like livekit's ``recognize()`` beside ``stream()``.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import inspect
import itertools
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from bench.protocol.audio import AUDIO_FORMAT, AudioFormat
from bench.protocol.capabilities import Capabilities
from bench.protocol.errors import AdapterError, ErrorCode
from bench.protocol.events import ErrorEvent, Event, ResponseDone
from bench.protocol.redact import redact
from bench.protocol.tools import ToolSpec

#: the engine's played position (``Session.track_playback``): response id → how many ms of that response's audio
#: the caller has heard so far (None: unknown, e.g. no audio of it was played)
PlayedPosition = Callable[[str], float | None]


class Endpoint(BaseModel):
    """Where the adapter connects, handed over by the engine: an emulator it started, or the live vendor.

    Live systems get ``None`` (the SDK's own default URL) unless the config names a base URL. ``credentials``
    holds placeholder keys an emulator accepts; live credentials come only from environment variables.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    url: str
    emulated: bool = True
    #: further URLs of the same system (e.g. the REST API beside a WebSocket), by name
    urls: dict[str, str] = Field(default_factory=dict)
    credentials: dict[str, str] = Field(default_factory=dict, repr=False)


class HistoryMessage(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    role: Literal["user", "assistant"]
    text: str


class ContextUpdate(BaseModel):
    """Knowledge for the agent's next responses (per-turn retrieval without reconnecting)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    passages: list[str] = Field(default_factory=list)
    instructions: str | None = None


class SessionSpec(BaseModel):
    """Everything an adapter needs to open one conversation."""

    model_config = ConfigDict(extra="forbid")

    run_id: str = "adhoc"
    system_id: str = "system"
    conversation_id: str
    #: 0 for the first try of this conversation; the engine restarts a failed conversation with attempt + 1
    attempt: int = 0
    language: str
    input_mode: Literal["text", "audio"] = "text"
    audio: AudioFormat = AUDIO_FORMAT
    #: knowledge passages for the first exchange (the engine's retrieval; ``update_context`` changes them)
    context: list[str] = Field(default_factory=list)
    instructions: str | None = None
    #: earlier exchanges to seed the agent with (restarted conversations, scenario set-up)
    history: list[HistoryMessage] = Field(default_factory=list)
    #: client tools the agent may call (answered by the engine's tool backend; needs ``client_tools``)
    tools: list[ToolSpec] = Field(default_factory=list)
    endpoint: Endpoint | None = None
    #: audio input: what the caller will say, in order — for speech front ends that run with an oracle transcript
    #: (labelled as such); vendors never see it
    caller_script: list[str] = Field(default_factory=list)
    #: no vendor event for this long while a response is awaited = a retryable stall
    idle_timeout_s: float = Field(default=15.0, gt=0)
    user_id: str = "bench-user"
    tenant_id: str = "bench-tenant"
    metadata: dict[str, str] = Field(default_factory=dict)


class Session(ABC):
    """One live conversation with a system under test."""

    capabilities: Capabilities
    _played_position: PlayedPosition | None = None

    @abstractmethod
    async def send_text(self, text: str) -> None:
        """Send one user turn as text and ask for a response."""

    async def push_audio(self, frame: bytes) -> None:
        """Stream one frame of caller audio (``spec.audio`` format), paced by the caller."""
        raise AdapterError("this session takes no audio input", code=ErrorCode.UNSUPPORTED, retryable=False)

    async def end_input(self) -> None:
        """The caller stopped speaking: commit the audio and ask for a response (a hint under server VAD)."""
        raise AdapterError("this session takes no audio input", code=ErrorCode.UNSUPPORTED, retryable=False)

    async def interrupt(self, played_ms: float | None = None) -> None:
        """Barge in: stop the agent's current response. ``played_ms``: how much of it the caller actually heard
        (the engine's playback position); adapters that can truncate cut the agent's context there (None: the
        ``track_playback`` position, else the audio received). The agent's audio that still arrives is emitted,
        never dropped: the stop time is measured from it."""
        raise AdapterError("this session cannot be interrupted", code=ErrorCode.UNSUPPORTED, retryable=False)

    async def send_tool_result(self, call_id: str, output: str, *, is_error: bool = False) -> None:
        """Answer a ``ToolCall(awaits_result=True)`` on the vendor's wire (needs ``client_tools``)."""
        raise AdapterError("this session takes no tool results", code=ErrorCode.UNSUPPORTED, retryable=False)

    async def send_dtmf(self, digits: str) -> None:
        """Send keypad digits (``0-9*#``) to the agent (needs ``dtmf``)."""
        raise AdapterError("this session takes no DTMF", code=ErrorCode.UNSUPPORTED, retryable=False)

    def track_playback(self, position: PlayedPosition | None) -> None:
        """The engine hands over its played position, for cuts the adapter learns of from the vendor (e.g. a
        server-VAD barge-in, where no ``interrupt(played_ms)`` call comes): the adapter asks it then."""
        self._played_position = position

    def played_position(self, response_id: str) -> float | None:
        """What the engine says the caller heard of ``response_id`` (None without ``track_playback``)."""
        position = self._played_position
        return position(response_id) if position is not None else None

    async def update_context(self, update: ContextUpdate) -> None:
        """Give the agent new knowledge for its next responses."""
        raise AdapterError("this session cannot change its context", code=ErrorCode.UNSUPPORTED, retryable=False)

    @abstractmethod
    def events(self) -> AsyncIterator[Event]:
        """The conversation's events, in order; ends after ``aclose`` or a fatal ``ErrorEvent``."""

    @abstractmethod
    async def aclose(self) -> None:
        """Hang up and release the connection (idempotent)."""

    async def __aenter__(self) -> Session:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


_END = object()

#: a listener of a session's event stream (``EventStream.listen``): called with each event as it is emitted, then
#: with ``None`` once the stream has ended
Listener = Callable[[Any], None]


class EventStream:
    """What ``StreamingSession.events()`` returns: an async iterator over the session's events, in order.

    Any number of readers may iterate (each event goes to one of them, and the end reaches all). Instead, one
    consumer may ``listen``: its callback is then called with every event right where the adapter emits it (no
    hand-off through the loop per event; the engine stamps events there) and with ``None`` once the stream has
    ended; what was emitted before it listened is handed over at once, in order.
    """

    __slots__ = ("_session",)

    def __init__(self, session: StreamingSession):
        self._session = session

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> Any:
        session = self._session
        pending = session._pending
        while True:
            if pending:
                item = pending[0]
                if item is _END:  # stays: a second reader also ends
                    raise StopAsyncIteration
                return pending.popleft()
            waiter = asyncio.get_running_loop().create_future()
            session._readers.append(waiter)
            try:
                await waiter
            finally:
                with contextlib.suppress(ValueError):
                    session._readers.remove(waiter)

    async def aclose(self) -> None:
        """Stop reading (nothing to release: the events stay with the session)."""

    def listen(self, listener: Listener) -> Callable[[], None]:
        """Hand every event to ``listener`` as it is emitted (see the class docstring); returns the function that
        stops listening (later events queue for readers again). ``listener`` must not raise."""
        return self._session._listen(listener)


class StreamingSession(Session):
    """A session whose events come from background tasks through one stream.

    Subclasses start their reader with ``spawn`` and call ``emit`` for each normalized event; an exception in a
    spawned task (``AdapterError`` or anything else) ends the stream with one fatal ``ErrorEvent``.
    ``new_response_id`` numbers responses ``r1``, ``r2``, … per session. Events wait in a queue for ``events()``
    readers, or go straight to the stream's one listener (``EventStream.listen``, what the engine's tap uses).
    """

    def __init__(self, capabilities: Capabilities):
        self.capabilities = capabilities
        self._pending: collections.deque[Any] = collections.deque()
        self._readers: list[asyncio.Future[None]] = []
        self._listener: Listener | None = None
        self._seq = itertools.count(1)
        self._responses = itertools.count(1)
        self._tasks: set[asyncio.Task[Any]] = set()
        self._ended = False
        self._closed = False

    # -- for subclasses ------------------------------------------------------------------------------
    def new_response_id(self) -> str:
        return f"r{next(self._responses)}"

    def emit(self, event: Event) -> None:
        """Hand ``event`` on with the next sequence number (ignored once the stream has ended)."""
        if self._ended:
            return
        event.seq = next(self._seq)
        if self._listener is not None:
            self._listener(event)
        else:
            self._pending.append(event)
            if self._readers:
                self._wake_readers()
        if isinstance(event, ErrorEvent) and event.fatal:
            self._end()

    def fail(self, exc: BaseException) -> None:
        """End the stream with a fatal error built from ``exc``."""
        if isinstance(exc, AdapterError):
            error = ErrorEvent(message=redact(str(exc)), code=exc.code, retryable=exc.retryable,
                               retry_after_s=exc.retry_after_s, vendor_code=exc.vendor_code, fatal=True)
        else:
            error = ErrorEvent(message=redact(f"unexpected {type(exc).__name__}: {exc}"), code=ErrorCode.INTERNAL,
                               retryable=False, fatal=True)
        self.emit(error)

    def finish(self) -> None:
        """End the stream normally (the connection closed after ``aclose``)."""
        self._end()

    def spawn(self, coroutine: Awaitable[Any], *, name: str | None = None) -> asyncio.Task[Any]:
        async def guarded() -> None:
            try:
                await coroutine
            except asyncio.CancelledError:
                raise
            except BaseException as exc:
                if not self._closed:
                    self.fail(exc)

        task = asyncio.ensure_future(guarded())
        if inspect.iscoroutine(coroutine):  # no "never awaited" warning when cancelled before it started
            task.add_done_callback(lambda _: coroutine.close())
        if name:
            task.set_name(name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def cancel_tasks(self) -> None:
        tasks = [task for task in self._tasks if not task.done()]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task

    @property
    def ended(self) -> bool:
        return self._ended

    def _end(self) -> None:
        if not self._ended:
            self._ended = True
            if self._listener is not None:
                self._listener(None)
            else:
                self._pending.append(_END)
                if self._readers:
                    self._wake_readers()

    def _wake_readers(self) -> None:
        readers, self._readers = self._readers, []
        for waiter in readers:
            if not waiter.done():
                waiter.set_result(None)

    def _listen(self, listener: Listener) -> Callable[[], None]:
        if self._listener is not None:
            raise RuntimeError("this session's event stream already has a listener")
        pending, self._pending = self._pending, collections.deque()
        self._listener = listener
        for item in pending:
            listener(None if item is _END else item)

        def stop() -> None:
            if self._listener is listener:
                self._listener = None
                if self._ended:  # what ``events()`` readers would see after it
                    self._pending.append(_END)

        return stop

    # -- Session ------------------------------------------------------------------------------------
    def events(self) -> EventStream:
        return EventStream(self)

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            await self.close_connection()
        finally:
            await self.cancel_tasks()
            self._end()

    async def close_connection(self) -> None:
        """Hang up the vendor connection; emit any session-scoped ``Usage`` before returning."""


@runtime_checkable
class SystemUnderTest(Protocol):
    """What an adapter gives the engine: identity, capabilities, a lifecycle and sessions."""

    system_id: str
    mode: str
    capabilities: Capabilities

    async def start(self) -> None:
        """Open long-lived resources shared by all sessions (an HTTP client pool). Called once."""

    async def close(self) -> None:
        """Release what ``start`` opened."""

    async def open_session(self, spec: SessionSpec) -> Session:
        """Connect for one conversation; raise ``AdapterError`` when the connection cannot be made."""
        ...


async def run_turn(system: SystemUnderTest, spec: SessionSpec, text: str) -> AsyncIterator[Event]:
    """One text exchange on its own session: yields every event up to and including the ``ResponseDone``.

    A fatal ``ErrorEvent`` is raised as ``AdapterError``; a stream that ends early raises ``NO_RESPONSE``.
    """
    session = await system.open_session(spec)
    try:
        await session.send_text(text)
        async for event in session.events():
            if isinstance(event, ErrorEvent) and event.fatal:
                raise AdapterError(event.message, code=event.code, retryable=event.retryable,
                                   retry_after_s=event.retry_after_s, vendor_code=event.vendor_code)
            yield event
            if isinstance(event, ResponseDone):
                return
        raise AdapterError("the event stream ended before the response was done", code=ErrorCode.NO_RESPONSE)
    finally:
        with contextlib.suppress(Exception):
            await session.aclose()
