"""The in-house stack as a system under test: any orchestrator (``async query(request, user_id, tenant_id)``,
``bench.orchestrator``) loaded by dotted path, run in process (mode ``local``, no endpoint).

Isolation: the orchestrator runs on its own event loop in its own (daemon) thread, one per adapter
(``OrchestratorLoop``), never on the engine's loop. A stack that blocks (``time.sleep`` inside ``async def``, a
synchronous client) therefore stalls only itself: the engine's loop keeps stamping other systems' events, the
idle and turn timeouts still fire (the turn is recorded failed with its reason) and the run finishes; closing
the adapter does not wait for a thread that is still blocked. Tokens cross to the engine's loop in bursts (one
wake-up per burst, ``_Bridge``), where they are emitted and stamped like a vendor socket's frames; tokens that
arrive in one burst become one text delta (they would carry the same stamp anyway). A CPU-bound
pure-Python stack still shares the interpreter lock: it slows the engine's loop by at most the interpreter's
switch interval per wake-up instead of freezing it.

One ``InhouseSession`` per conversation keeps the conversation so far (``spec.history`` first, then every user
turn and the answer to it) and passes it to the orchestrator as ``QueryRequest.history`` with each new question.
Calling ``query`` is sending the user turn, so ``UserTurnSent`` comes just before the call; the orchestrator's
token stream gives the text deltas, so time to first token is observed exactly as for a vendor socket.
Responses run one at a time in the order they were asked, each seeing the answers before it.

Errors: an ``AdapterError`` the orchestrator raises keeps its code; any other exception (a bug in the stack
under test) is a fatal ``ErrorCode.INTERNAL`` error; no token for ``spec.idle_timeout_s`` is ``STALLED``.
The stack does its own retrieval: ``spec.context`` is not used and ``update_context`` is unsupported.

Audio input (``speech_input``): the orchestrator protocol takes text, so the adapter puts a speech front end in
front of it. End of speech is found with a streaming TEN VAD endpointer (``endpointing_silence_ms`` of silence,
like a telephony agent; the endpointer is the adapter's, so its delay counts in the row's latency). Recognition is
``asr: oracle``: the caller's words are taken from ``spec.caller_script`` (what the harness synthesized), so the row
measures the stack behind a perfect recognizer — it says nothing about speech recognition, and the system's
details in the store say so. ``speech_input: null`` declares no audio input.

Options (unknown keys are refused): ``orchestrator`` (dotted path, default the reference stack),
``orchestrator_options`` (keyword arguments for it, when it is a class or factory) and ``speech_input``
(``{"asr": "oracle", "endpointing_silence_ms": 300}``).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import weakref
from collections.abc import Coroutine
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from adapters.options import parse_options, require_local
from bench.config import SystemConfig
from bench.orchestrator import Orchestrator, QueryRequest, QueryResponse, load_system_orchestrator
from bench.protocol import (
    AdapterError,
    Capabilities,
    ErrorCode,
    ResponseDone,
    SessionReady,
    SessionSpec,
    StreamingSession,
    TextDelta,
    Transcript,
    UserSpeechStarted,
    UserSpeechStopped,
    UserTurnSent,
)
from bench.protocol.redact import redact

DEFAULT_ORCHESTRATOR = "adapters.inhouse.reference:ReferenceVoiceStack"

CAPABILITIES = Capabilities(text_input=True, streaming_output=True, multi_turn=True)


class SpeechInput(BaseModel):
    """The speech front end in front of the orchestrator (audio input)."""

    model_config = ConfigDict(extra="forbid")

    asr: Literal["oracle"] = "oracle"
    endpointing_silence_ms: float = Field(default=300.0, ge=50, le=5000)


class InhouseOptions(BaseModel):
    """``system.options`` of an in-house system."""

    model_config = ConfigDict(extra="forbid")

    orchestrator: str = DEFAULT_ORCHESTRATOR
    orchestrator_options: dict[str, Any] = Field(default_factory=dict)
    speech_input: SpeechInput | None = SpeechInput()


class InhouseSession(StreamingSession):
    """One conversation with the orchestrator; the history lives here, not in the orchestrator."""

    def __init__(self, orchestrator: Orchestrator, spec: SessionSpec, capabilities: Capabilities = CAPABILITIES,
                 speech_input: SpeechInput | None = None, runner: OrchestratorLoop | None = None):
        super().__init__(capabilities)
        self.orchestrator = orchestrator
        #: the orchestrator's own loop (a session made on its own gets a loop of its own)
        self.runner = runner if runner is not None else _own_loop(self, spec.conversation_id)
        self.spec = spec
        self.speech_input = speech_input
        self._endpointer: Any = None
        self._script = list(spec.caller_script)
        #: the conversation so far as the orchestrator receives it (``{"role", "content"}``)
        self.history: list[dict[str, str]] = [{"role": m.role, "content": m.text} for m in spec.history]
        self._one_at_a_time = asyncio.Lock()
        self.emit(SessionReady(vendor_session_id=spec.conversation_id))

    async def send_text(self, text: str) -> None:
        if self.ended:
            raise AdapterError("the session has ended", code=ErrorCode.BAD_REQUEST, retryable=False)
        self.spawn(self._respond(self.new_response_id(), text), name=f"inhouse-{self.spec.conversation_id}")

    async def push_audio(self, frame: bytes) -> None:
        if self.speech_input is None:
            await super().push_audio(frame)
            return
        if self._endpointer is None:
            from bench.audio.endpointer import StreamingEndpointer

            self._endpointer = StreamingEndpointer(silence_ms=self.speech_input.endpointing_silence_ms,
                                                   sample_rate=self.spec.audio.sample_rate)
        for event in self._endpointer.push(frame):
            if event == "speech_started":
                self.emit(UserSpeechStarted())
                continue
            self.emit(UserSpeechStopped())
            if not self._script:
                raise AdapterError("oracle speech recognition has no caller words left for this segment",
                                   code=ErrorCode.UNSUPPORTED, retryable=False)
            words = self._script.pop(0)
            self.emit(Transcript(role="user", text=words))
            self.spawn(self._respond(self.new_response_id(), words, announce=False))

    async def end_input(self) -> None:
        """Nothing to commit: the front end's endpointer decides when the caller has finished."""

    def expect_utterance(self, text: str) -> None:
        """Oracle transcript of the next speech segment, for callers whose words are chosen turn by turn."""
        self._script.append(text)

    async def _respond(self, response_id: str, text: str, announce: bool = True) -> None:
        async with self._one_at_a_time:
            request = QueryRequest(question=text, language=self.spec.language,
                                   conversation_id=self.spec.conversation_id, history=list(self.history))
            if announce:
                self.emit(UserTurnSent(response_id=response_id))
            try:
                response = await self._stream(request, response_id)
            except AdapterError as exc:
                raise AdapterError(redact(str(exc)), code=exc.code, retryable=exc.retryable,
                                   retry_after_s=exc.retry_after_s, vendor_code=exc.vendor_code) from None
            except Exception as exc:  # a bug in the stack under test fails this conversation, not the run
                raise AdapterError(redact(f"orchestrator raised {type(exc).__name__}: {exc}"),
                                   code=ErrorCode.INTERNAL, retryable=False) from None
            self.history += [{"role": "user", "content": text}, {"role": "assistant", "content": response.answer}]
            self.emit(ResponseDone(
                response_id=response_id,
                conversational_intent=response.conversational_intent,
                target_language=response.target_language,
                self_reported_compliant=response.voice_shape_compliant,
                retrieved_context=list(response.retrieved_context),
                final_text=response.answer,
            ))

    async def _stream(self, request: QueryRequest, response_id: str) -> QueryResponse:
        """Ask the orchestrator (on its own loop) and emit its tokens here; a silence longer than the idle limit is
        a stall, timed on this loop, so it fires even when the orchestrator's loop is blocked."""
        idle = self.spec.idle_timeout_s
        bridge = _Bridge(self.runner.courier(asyncio.get_running_loop()), idle)
        produced = self.runner.submit(_produce(self.orchestrator, request, self.spec, bridge))
        try:
            while True:
                items = await bridge.batch()
                text: list[str] = []  # tokens that arrived together are one delta: they share one stamp
                for kind, value in items:
                    if kind == _TOKEN:
                        if value:
                            text.append(value)
                        continue
                    if text:
                        self.emit(TextDelta(response_id=response_id, text="".join(text)))
                        text = []
                    if kind == _DONE:
                        return value
                    if kind == _FAILED:
                        raise value
                if text:
                    self.emit(TextDelta(response_id=response_id, text="".join(text)))
        except TimeoutError:
            if not bridge.stalled:
                raise
            raise AdapterError(f"the orchestrator sent nothing for {idle:g} s", code=ErrorCode.STALLED) from None
        finally:
            bridge.close()
            if not bridge.settled:
                produced.cancel()  # reaches the orchestrator's loop whenever it is free again


_TOKEN, _ANSWERED, _DONE, _FAILED = "token", "answered", "done", "failed"
#: how long a stopping orchestrator loop lets its cancelled tasks clean up
CANCEL_WAIT_S = 1.0


async def _produce(orchestrator: Orchestrator, request: QueryRequest, spec: SessionSpec, bridge: _Bridge) -> None:
    """Runs on the orchestrator's loop: the query and its token stream, every item handed to ``bridge``."""
    try:
        response = await orchestrator.query(request, spec.user_id, spec.tenant_id)
        bridge.put(_ANSWERED, None)
        async for token in response.tokens():
            bridge.put(_TOKEN, token)
        bridge.put(_DONE, response)
    except asyncio.CancelledError:
        raise
    except BaseException as exc:  # handed to the engine's loop, which fails the conversation with it
        bridge.put(_FAILED, exc)


class _Courier:
    """Carries items from the orchestrator's thread to the engine's loop for every response at once: the
    responses that got news since the last delivery are woken together, one thread-safe call per burst (the
    orchestrator's loop typically finishes many queries in one turn)."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop
        self.lock = threading.Lock()
        self._ready: list[_Bridge] = []
        self._scheduled = False

    def post(self, bridge: _Bridge, item: tuple[str, Any]) -> None:  # from any thread
        with self.lock:
            bridge.items.append(item)
            if bridge.flagged:
                return
            bridge.flagged = True
            self._ready.append(bridge)
            if self._scheduled:
                return
            self._scheduled = True
        with contextlib.suppress(RuntimeError):  # the engine's loop is gone: nobody is waiting any more
            self.loop.call_soon_threadsafe(self._deliver)

    def _deliver(self) -> None:  # on the engine's loop
        with self.lock:
            ready, self._ready, self._scheduled = self._ready, [], False
            for bridge in ready:
                bridge.flagged = False
        for bridge in ready:
            bridge.wake()


class _Bridge:
    """Items from the orchestrator's thread to one response on the engine's loop: ``put`` from any thread,
    ``batch`` on the engine's loop returns everything that arrived since the last call (one wake-up per burst) and
    raises ``TimeoutError`` (``stalled``) after ``idle_s`` without any — one timer per response, moved on only
    when it fires early."""

    __slots__ = ("courier", "items", "flagged", "settled", "stalled", "_idle_s", "_last", "_waiter", "_timer")

    def __init__(self, courier: _Courier, idle_s: float):
        self.courier = courier
        self.items: list[tuple[str, Any]] = []
        #: waiting in the courier's delivery
        self.flagged = False
        #: the response's last item (done or failed) arrived: nothing left to cancel
        self.settled = False
        self.stalled = False
        self._idle_s = idle_s
        self._last = courier.loop.time()
        self._waiter: asyncio.Future[None] | None = None
        self._timer: asyncio.TimerHandle | None = courier.loop.call_at(self._last + idle_s, self._check_idle)

    def put(self, kind: str, value: Any) -> None:
        self.courier.post(self, (kind, value))

    def wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def _check_idle(self) -> None:
        loop = self.courier.loop
        waiting = self._waiter is not None and not self._waiter.done()
        if waiting and loop.time() >= self._last + self._idle_s:
            self._timer = None
            self.stalled = True
            self._waiter.set_exception(TimeoutError())  # type: ignore[union-attr]
            return
        # news since the timer was set: the limit runs from the latest batch (or from now, while one is handed in)
        self._timer = loop.call_at((self._last if waiting else loop.time()) + self._idle_s, self._check_idle)

    async def batch(self) -> list[tuple[str, Any]]:
        while True:
            with self.courier.lock:
                if self.items:
                    items, self.items = self.items, []
                    break
            self._waiter = self.courier.loop.create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        self._last = self.courier.loop.time()
        if items[-1][0] in (_DONE, _FAILED):
            self.settled = True
        return items

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


class OrchestratorLoop:
    """The system under test's own event loop on its own daemon thread (started on first use, restartable)."""

    #: how long ``stop`` waits for the thread; a stack still blocked after that is left to finish on its own
    STOP_WAIT_S = 2.0

    def __init__(self, name: str):
        self.name = name
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        #: submissions waiting for the orchestrator's loop to take them (one per loop started)
        self._inbox: _Inbox | None = None
        self._couriers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Courier] = weakref.WeakKeyDictionary()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is not None and self.running:
                return self._loop
            ready = threading.Event()
            holder: list[asyncio.AbstractEventLoop] = []

            def run() -> None:
                loop = asyncio.new_event_loop()
                asyncio.set_event_loop(loop)
                holder.append(loop)
                ready.set()
                try:
                    loop.run_forever()
                finally:
                    _cancel_all(loop)
                    loop.close()

            thread = threading.Thread(target=run, name=f"orchestrator-{self.name}", daemon=True)
            thread.start()
            ready.wait()
            self._loop, self._thread, self._inbox = holder[0], thread, _Inbox(holder[0])
            return self._loop

    def submit(self, coroutine: Coroutine[Any, Any, Any]) -> _Submitted:
        """Run ``coroutine`` on the orchestrator's loop (no result is handed back: the coroutine reports through
        its ``_Bridge``). Submissions made while the orchestrator's loop has not yet taken the previous ones go
        with them: one thread-safe call per burst."""
        inbox = self._inbox
        if inbox is None or inbox.loop.is_closed():
            self.start()
            inbox = self._inbox
            assert inbox is not None
        submitted = _Submitted(inbox.loop, coroutine)
        inbox.put(submitted)
        return submitted

    def courier(self, loop: asyncio.AbstractEventLoop) -> _Courier:
        """The courier that carries this orchestrator's results to ``loop`` (one per engine loop)."""
        courier = self._couriers.get(loop)
        if courier is None:
            courier = self._couriers[loop] = _Courier(loop)
        return courier

    def stop_nowait(self) -> threading.Thread | None:
        """Ask the loop to stop (its tasks are cancelled); returns the thread to wait for, if any."""
        with self._lock:
            loop, thread, self._loop, self._thread, self._inbox = self._loop, self._thread, None, None, None
        if loop is not None and thread is not None and thread.is_alive():
            with contextlib.suppress(RuntimeError):  # already closed
                loop.call_soon_threadsafe(loop.stop)
            return thread
        return None

    async def stop(self) -> bool:
        """Stop the loop and wait up to ``STOP_WAIT_S`` for its thread; False when the stack is still blocked."""
        thread = self.stop_nowait()
        if thread is None:
            return True
        await asyncio.to_thread(thread.join, self.STOP_WAIT_S)
        return not thread.is_alive()


class _Inbox:
    """Submissions on their way to one orchestrator loop: ``put`` from the engine's loop, taken all at once on the
    orchestrator's loop (one thread-safe call per burst, like ``_Courier`` the other way)."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop
        self._lock = threading.Lock()
        self._items: list[_Submitted] = []
        self._scheduled = False

    def put(self, submitted: _Submitted) -> None:
        with self._lock:
            self._items.append(submitted)
            if self._scheduled:
                return
            self._scheduled = True
        try:
            self.loop.call_soon_threadsafe(self._take)
        except RuntimeError:  # the orchestrator's loop closed meanwhile: nothing will run
            with self._lock:
                items, self._items, self._scheduled = self._items, [], False
            for item in items:
                item.discard()

    def _take(self) -> None:  # on the orchestrator's loop
        with self._lock:
            items, self._items, self._scheduled = self._items, [], False
        for item in items:
            item.start()


class _Submitted:
    """A coroutine handed to the orchestrator's loop, cancellable from the engine's loop."""

    __slots__ = ("loop", "coroutine", "task", "cancelled", "finished")

    def __init__(self, loop: asyncio.AbstractEventLoop, coroutine: Coroutine[Any, Any, Any]):
        self.loop = loop
        self.coroutine: Coroutine[Any, Any, Any] | None = coroutine
        self.task: asyncio.Task[Any] | None = None
        self.cancelled = False
        self.finished = False

    def start(self) -> None:  # on the orchestrator's loop
        coroutine, self.coroutine = self.coroutine, None
        if coroutine is None:
            return
        if self.cancelled:
            coroutine.close()
            return
        self.task = self.loop.create_task(coroutine)
        self.task.add_done_callback(self._done)

    def discard(self) -> None:
        coroutine, self.coroutine = self.coroutine, None
        if coroutine is not None:
            coroutine.close()

    def _done(self, _task: asyncio.Task[Any]) -> None:
        self.finished = True

    def cancel(self) -> None:
        """Cancel it on the orchestrator's loop (whenever that loop is free again); nothing to do once done."""
        if self.finished or self.cancelled:
            return
        self.cancelled = True
        with contextlib.suppress(RuntimeError):  # the orchestrator's loop is already closed
            self.loop.call_soon_threadsafe(self._cancel)

    def _cancel(self) -> None:
        if self.task is not None:
            self.task.cancel()


def _cancel_all(loop: asyncio.AbstractEventLoop) -> None:
    tasks = [task for task in asyncio.all_tasks(loop) if not task.done()]
    for task in tasks:
        task.cancel()
    if tasks:
        with contextlib.suppress(BaseException):
            loop.run_until_complete(asyncio.wait(tasks, timeout=CANCEL_WAIT_S))
    with contextlib.suppress(BaseException):
        loop.run_until_complete(loop.shutdown_asyncgens())


class InhouseAdapter:
    """``SystemUnderTest`` for an in-process orchestrator (also used by ``generic_rag``)."""

    def __init__(self, system_id: str, orchestrator: Orchestrator, mode: Literal["local"] = "local", *,
                 capabilities: Capabilities = CAPABILITIES, speech_input: SpeechInput | None = None):
        self.system_id = system_id
        self.mode = mode
        self.orchestrator = orchestrator
        self.speech_input = speech_input
        self.capabilities = (capabilities.model_copy(update={"audio_input": True, "server_vad": True})
                             if speech_input is not None else capabilities)
        #: how the row was obtained, recorded with the run
        self.notes = ([f"audio input: TEN VAD endpointing ({speech_input.endpointing_silence_ms:g} ms) and an oracle "
                       "transcript; speech recognition is not measured"] if speech_input is not None else [])
        #: the orchestrator's own event loop and thread (started by ``start`` or the first session)
        self.runner = OrchestratorLoop(system_id)
        weakref.finalize(self, self.runner.stop_nowait)

    async def start(self) -> None:
        """Start the orchestrator's own loop and thread."""
        self.runner.start()

    async def close(self) -> None:
        """Stop the orchestrator's loop; a stack still blocked after ``OrchestratorLoop.STOP_WAIT_S`` is left to
        finish on its daemon thread (the run does not wait for it)."""
        await self.runner.stop()

    async def open_session(self, spec: SessionSpec) -> InhouseSession:
        return InhouseSession(self.orchestrator, spec, self.capabilities, self.speech_input, runner=self.runner)


def _own_loop(session: InhouseSession, name: str) -> OrchestratorLoop:
    runner = OrchestratorLoop(name)
    weakref.finalize(session, runner.stop_nowait)
    return runner


def create(system: SystemConfig) -> InhouseAdapter:
    require_local(system, "inhouse")
    options = parse_options(system, InhouseOptions)
    orchestrator = load_system_orchestrator(system.id, options.orchestrator, options.orchestrator_options)
    return InhouseAdapter(system.id, orchestrator,
                          speech_input=options.speech_input)

