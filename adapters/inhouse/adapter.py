"""The in-house stack as a system under test: any orchestrator (``async query(request, user_id, tenant_id)``,
``bench.protocol.orchestrator``) loaded by dotted path (mode ``local``, no endpoint).

Isolation: an orchestrator named in the run config runs in its own process (``adapters.inhouse.process``, one per
adapter, built when the adapter is created, so a stack that cannot be built is exit 2 before the run), never on
the engine's loop or under its interpreter lock. A stack that blocks (``time.sleep`` inside ``async def``, a
synchronous client) or spins the CPU therefore stalls only itself: the engine's loop keeps stamping other
systems' events, the idle and turn timeouts still fire (the turn is recorded failed with its reason), the run
finishes, and closing the adapter stops the process by its PID. An orchestrator *object* handed to
``InhouseAdapter`` (the programmatic API, the generic RAG baseline) runs on its own event loop in its own daemon
thread instead (``OrchestratorLoop``): blocking is contained the same way, but a CPU-bound pure-Python stack
shares the interpreter lock with the engine. Either way the answers reach the engine's loop in bursts and are
emitted there at once, stamped like a vendor socket's frames (``_Reply``); tokens that arrive in one burst become
one text delta (they would carry the same stamp anyway).

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
``orchestrator_options`` (keyword arguments for it, when it is a class or factory: plain JSON data, since they go to
its process), ``speech_input`` (``{"asr": "oracle", "endpointing_silence_ms": 300}``), ``startup_timeout_s``
(how long building the orchestrator in its process may take, default 120), ``client_tools`` and ``interruption``
(declare those capabilities; default off).

Client tools: an orchestrator that answers with ``tool_calls`` (and no answer) gets each call emitted as a
``ToolCall(awaits_result=True)`` with an empty ``ResponseDone`` (a tool-only response, which does not end the
exchange); once the engine has sent every result (``send_tool_result``) the same question is asked again with the
calls and results at the end of the history, up to ``MAX_TOOL_ROUNDS`` rounds. Interruption: ``interrupt`` cancels
the response being produced (``Interrupted`` and ``ResponseDone(status="interrupted")``) and asks the next turn.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import threading
import weakref
from collections.abc import Callable, Coroutine
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from adapters._kit.options import parse_options, require_local
from adapters.inhouse.process import ANSWERED, DONE, FAILED, TOKEN, OrchestratorProcess, OrchestratorRaised
from bench.protocol import (
    AdapterError,
    Capabilities,
    ErrorCode,
    Interrupted,
    ResponseDone,
    SessionReady,
    SessionSpec,
    StreamingSession,
    TextDelta,
    ToolCall,
    ToolResult,
    Transcript,
    UserSpeechStarted,
    UserSpeechStopped,
    UserTurnSent,
)
from bench.protocol.config import AdapterConfig
from bench.protocol.orchestrator import Orchestrator, QueryRequest
from bench.protocol.redact import redact

DEFAULT_ORCHESTRATOR = "adapters.inhouse.reference:ReferenceVoiceStack"

CAPABILITIES = Capabilities(text_input=True, streaming_output=True, multi_turn=True)
#: tool rounds one user turn may take before the orchestrator must answer
MAX_TOOL_ROUNDS = 6


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
    #: how long the orchestrator's process may take to build it (a stack loading models needs more)
    startup_timeout_s: float = Field(default=120.0, ge=1, le=3600)
    #: the orchestrator asks for client tools (``QueryResponse.tool_calls``): declare ``client_tools``
    client_tools: bool = False
    #: a barge-in cancels the response being produced (``interrupt``): declare ``interruption``
    interruption: bool = False


class InhouseSession(StreamingSession):
    """One conversation with the orchestrator; the history lives here, not in the orchestrator."""

    def __init__(self, orchestrator: Orchestrator | None, spec: SessionSpec, capabilities: Capabilities = CAPABILITIES,
                 speech_input: SpeechInput | None = None,
                 runner: OrchestratorLoop | OrchestratorProcess | None = None):
        super().__init__(capabilities)
        self.orchestrator = orchestrator
        #: the orchestrator's own loop (a session made on its own gets a loop of its own) or process
        self.runner = runner if runner is not None else _own_loop(self, spec.conversation_id)
        self.spec = spec
        self.speech_input = speech_input
        self._endpointer: Any = None
        self._script = list(spec.caller_script)
        #: the conversation so far as the orchestrator receives it (``{"role", "content"}``)
        self.history: list[dict[str, str]] = [{"role": m.role, "content": m.text} for m in spec.history]
        #: user turns not yet asked (one response at a time): (response id, text, whether to announce it)
        self._waiting: collections.deque[tuple[str, str, bool]] = collections.deque()
        self._current: _Reply | None = None
        #: the user turn whose tool calls are out: its text, the calls and results so far, calls still unanswered
        self._tool_turn: tuple[str, list[dict[str, str]], dict[str, tuple[str, str]]] | None = None
        self._tool_rounds = 0
        self._tool_history: list[dict[str, str]] = []
        self.emit(SessionReady(vendor_session_id=spec.conversation_id))

    async def send_text(self, text: str) -> None:
        if self.ended:
            raise AdapterError("the session has ended", code=ErrorCode.BAD_REQUEST, retryable=False)
        self._ask(self.new_response_id(), text, announce=True)

    async def push_audio(self, frame: bytes) -> None:
        if self.speech_input is None:
            await super().push_audio(frame)
            return
        if self._endpointer is None:
            from adapters.inhouse.endpointer import StreamingEndpointer

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
            self._ask(self.new_response_id(), words, announce=False)

    async def end_input(self) -> None:
        """Nothing to commit: the front end's endpointer decides when the caller has finished."""

    def expect_utterance(self, text: str) -> None:
        """Oracle transcript of the next speech segment, for callers whose words are chosen turn by turn."""
        self._script.append(text)

    async def interrupt(self, played_ms: float | None = None) -> None:
        """Barge-in: the response being produced is cancelled where it runs (the caller heard ``played_ms`` of it;
        a text stack has no audio to truncate) and the next waiting turn is asked."""
        current, self._current = self._current, None
        tool_turn, self._tool_turn = self._tool_turn, None
        if current is None and tool_turn is None:
            return
        if current is not None:
            current.abandon()
        response_id = current.response_id if current is not None else None
        text = current.text if current is not None else tool_turn[0] if tool_turn is not None else ""
        self.history += [{"role": "user", "content": text}, {"role": "assistant", "content": ""}]
        self.emit(Interrupted(response_id=response_id, played_ms=played_ms, by="caller"))
        self.emit(ResponseDone(response_id=response_id, status="interrupted"))
        self._next()

    async def close_connection(self) -> None:
        """Hang up: a response still running is cancelled where it runs, the turns not yet asked are dropped."""
        self._waiting.clear()
        current, self._current = self._current, None
        if current is not None:
            current.abandon()

    # -- responses, one at a time ----------------------------------------------------------------------------
    def _ask(self, response_id: str, text: str, announce: bool) -> None:
        self._waiting.append((response_id, text, announce))
        if self._current is None:
            self._next()

    def _next(self) -> None:
        """Ask the next waiting turn now, in the caller's loop turn (asking is sending the user turn)."""
        if self._tool_turn is not None or not self._waiting or self.ended or self._closed:
            return
        response_id, text, announce = self._waiting.popleft()
        if announce:
            self.emit(UserTurnSent(response_id=response_id))
        self._tool_rounds = 0
        self._query(response_id, text, [])

    def _query(self, response_id: str, text: str, tool_history: list[dict[str, str]]) -> None:
        tools = [tool.model_dump(mode="json") for tool in self.spec.tools]
        request = QueryRequest(question=text, language=self.spec.language, conversation_id=self.spec.conversation_id,
                               history=list(self.history) + tool_history, tools=tools)
        self._tool_history = tool_history
        reply = self._current = _Reply(self, response_id, text, asyncio.get_running_loop(), self.spec.idle_timeout_s)
        handle = self.runner.ask(self.orchestrator, request, self.spec, reply)
        if not reply.settled:
            reply.handle = handle

    def _call_tools(self, reply: _Reply, response: Any, tool_history: list[dict[str, str]]) -> None:
        """The orchestrator asked for client tools: each becomes a ``ToolCall`` the engine answers
        (``send_tool_result``); once every result is in, the same question is asked again with them."""
        self._tool_rounds += 1
        if self._tool_rounds > MAX_TOOL_ROUNDS or not self.spec.tools:
            why = "no tools were declared" if not self.spec.tools else f"more than {MAX_TOOL_ROUNDS} tool rounds"
            self._failed(reply, AdapterError(f"the orchestrator asked for tools: {why}", code=ErrorCode.INTERNAL,
                                             retryable=False))
            return
        self._current = None
        pending: dict[str, tuple[str, str]] = {}
        for index, call in enumerate(response.tool_calls):
            call_id = f"{reply.response_id}-tool-{self._tool_rounds}-{index}"
            pending[call_id] = (call.name, json.dumps(call.arguments, ensure_ascii=False, sort_keys=True))
            self.emit(ToolCall(response_id=reply.response_id, call_id=call_id, name=call.name,
                               arguments=dict(call.arguments), awaits_result=True))
        self._tool_turn = (reply.text, tool_history, pending)
        self.emit(ResponseDone(response_id=reply.response_id, final_text=""))

    async def send_tool_result(self, call_id: str, output: str, *, is_error: bool = False) -> None:
        turn = self._tool_turn
        if turn is None or call_id not in turn[2]:
            raise AdapterError(f"no tool call {call_id!r} is waiting for a result", code=ErrorCode.BAD_REQUEST,
                               retryable=False)
        text, tool_history, pending = turn
        name, arguments = pending.pop(call_id)
        tool_history.append({"role": "tool", "name": name, "arguments": arguments, "content": output})
        self.emit(ToolResult(call_id=call_id, output=output, is_error=is_error))
        if pending or self.ended or self._closed:
            return
        self._tool_turn = None
        self._query(self.new_response_id(), text, tool_history)

    def _answered(self, reply: _Reply, response: Any) -> None:
        """``response``: the orchestrator's ``QueryResponse`` (or, from its own process, the same fields)."""
        if reply is not self._current:
            return
        tool_history = self._tool_history
        if response.tool_calls and not response.answer:
            self._call_tools(reply, response, tool_history)
            return
        self._current = None
        self.history += [{"role": "user", "content": reply.text}, *tool_history,
                         {"role": "assistant", "content": response.answer}]
        self.emit(ResponseDone(
            response_id=reply.response_id,
            conversational_intent=response.conversational_intent,
            target_language=response.target_language,
            self_reported_compliant=response.voice_shape_compliant,
            retrieved_context=list(response.retrieved_context),
            final_text=response.answer,
        ))
        self._next()

    def _failed(self, reply: _Reply, exc: BaseException) -> None:
        if reply is not self._current:
            return
        self._current = None
        self._waiting.clear()
        if isinstance(exc, AdapterError):
            error = AdapterError(redact(str(exc)), code=exc.code, retryable=exc.retryable,
                                 retry_after_s=exc.retry_after_s, vendor_code=exc.vendor_code)
        elif isinstance(exc, OrchestratorRaised):  # raised in the orchestrator's own process
            error = AdapterError(redact(f"orchestrator raised {exc.type_name}: {exc}"), code=ErrorCode.INTERNAL,
                                 retryable=False)
        else:  # a bug in the stack under test fails this conversation, not the run
            error = AdapterError(redact(f"orchestrator raised {type(exc).__name__}: {exc}"), code=ErrorCode.INTERNAL,
                                 retryable=False)
        self.fail(error)


class _Reply:
    """One response in flight, on the engine's loop: the orchestrator's items arrive here in bursts (``deliver``,
    from the process's pipe reader or the thread's courier) and are emitted at once — stamped like a vendor
    socket's frames, with no task in between; tokens that arrived together are one text delta (they would carry
    the same stamp anyway). Silence longer than the idle limit is a stall, timed on this loop (one timer, moved
    on only when it fires early), so it fires even when the orchestrator is blocked."""

    __slots__ = ("session", "response_id", "text", "loop", "handle", "settled", "items", "flagged", "_idle_s",
                 "_last", "_timer")

    def __init__(self, session: InhouseSession, response_id: str, text: str, loop: asyncio.AbstractEventLoop,
                 idle_s: float):
        self.session = session
        self.response_id = response_id
        self.text = text
        self.loop = loop
        #: what cancels the query where it runs (set once it is asked)
        self.handle: Any = None
        #: its last item (done or failed) arrived, or it was abandoned: nothing more is emitted
        self.settled = False
        #: items waiting in a thread's courier, and whether the courier has this reply in its next delivery
        self.items: list[tuple[str, Any]] = []
        self.flagged = False
        self._idle_s = idle_s
        self._last = loop.time()
        self._timer: asyncio.TimerHandle | None = loop.call_at(self._last + idle_s, self._check_idle)

    def deliver(self, items: list[tuple[str, Any]]) -> None:
        """Items that arrived together (on the engine's loop)."""
        if self.settled:
            return
        self._last = self.loop.time()
        session = self.session
        text: list[str] = []
        try:
            for kind, value in items:
                if kind == TOKEN:
                    if value:
                        text.append(value)
                    continue
                if text:
                    session.emit(TextDelta(response_id=self.response_id, text="".join(text)))
                    text = []
                if kind == DONE:
                    self._settle()
                    session._answered(self, value)
                    return
                if kind == FAILED:
                    self._settle()
                    session._failed(self, value)
                    return
            if text:
                session.emit(TextDelta(response_id=self.response_id, text="".join(text)))
        except Exception as exc:  # noqa: BLE001 - ends this conversation, never the reader that delivered
            self.abandon()
            session.fail(exc)

    def abandon(self) -> None:
        """Stop listening and cancel the query where it runs (whenever that is free again)."""
        if self.settled:
            return
        self._settle()
        if self.handle is not None:
            self.handle.cancel()

    def _settle(self) -> None:
        self.settled = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _check_idle(self) -> None:
        if self.settled:
            return
        now = self.loop.time()
        if now >= self._last + self._idle_s:
            self._timer = None
            self.abandon()
            self.session._failed(self, AdapterError(f"the orchestrator sent nothing for {self._idle_s:g} s",
                                                    code=ErrorCode.STALLED))
            return
        self._timer = self.loop.call_at(self._last + self._idle_s, self._check_idle)


#: how long a stopping orchestrator loop lets its cancelled tasks clean up
CANCEL_WAIT_S = 1.0


async def _produce(orchestrator: Orchestrator, request: QueryRequest, spec: SessionSpec,
                   post: Callable[[tuple[str, Any]], None]) -> None:
    """Runs on the orchestrator's loop: the query and its token stream, every item handed to ``post``."""
    try:
        response = await orchestrator.query(request, spec.user_id, spec.tenant_id)
        post((ANSWERED, None))
        async for token in response.tokens():
            post((TOKEN, token))
        post((DONE, response))
    except asyncio.CancelledError:
        raise
    except BaseException as exc:  # handed to the engine's loop, which fails the conversation with it
        post((FAILED, exc))


class _Courier:
    """Carries items from the orchestrator's thread to the engine's loop for every response at once: the
    responses that got news since the last delivery get them together, one thread-safe call per burst (the
    orchestrator's loop typically finishes many queries in one turn)."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop
        self.lock = threading.Lock()
        self._ready: list[_Reply] = []
        self._scheduled = False

    def post(self, reply: _Reply, item: tuple[str, Any]) -> None:  # from any thread
        with self.lock:
            reply.items.append(item)
            if reply.flagged:
                return
            reply.flagged = True
            self._ready.append(reply)
            if self._scheduled:
                return
            self._scheduled = True
        with contextlib.suppress(RuntimeError):  # the engine's loop is gone: nobody is waiting any more
            self.loop.call_soon_threadsafe(self._deliver)

    def _deliver(self) -> None:  # on the engine's loop
        with self.lock:
            ready, self._ready, self._scheduled = self._ready, [], False
            batches = []
            for reply in ready:
                reply.flagged = False
                batches.append((reply, reply.items))
                reply.items = []
        for reply, items in batches:
            reply.deliver(items)


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
        its ``post``). Submissions made while the orchestrator's loop has not yet taken the previous ones go
        with them: one thread-safe call per burst."""
        inbox = self._inbox
        if inbox is None or inbox.loop.is_closed():
            self.start()
            inbox = self._inbox
            assert inbox is not None
        submitted = _Submitted(inbox.loop, coroutine)
        inbox.put(submitted)
        return submitted

    def ask(self, orchestrator: Orchestrator | None, request: QueryRequest, spec: SessionSpec,
            reply: _Reply) -> _Submitted:
        """Run one query on this orchestrator's loop; its items go to ``reply`` on the engine's loop."""
        if orchestrator is None:
            raise ValueError("an orchestrator loop runs an orchestrator object, and none was given")
        courier = self.courier(reply.loop)
        return self.submit(_produce(orchestrator, request, spec, lambda item: courier.post(reply, item)))

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
    """``SystemUnderTest`` for an in-house orchestrator (also used by ``generic_rag``): an orchestrator object runs
    on its own loop and thread of this process (``OrchestratorLoop``); one built from the run config runs in its
    own process (``runner``, an ``OrchestratorProcess``)."""

    # the SystemUnderTest attributes, typed as the protocol types them (a narrower ``Literal`` would not satisfy it)
    system_id: str
    mode: str
    capabilities: Capabilities

    def __init__(self, system_id: str, orchestrator: Orchestrator | None = None, mode: Literal["local"] = "local", *,
                 capabilities: Capabilities = CAPABILITIES, speech_input: SpeechInput | None = None,
                 runner: OrchestratorProcess | None = None):
        if (orchestrator is None) == (runner is None):
            raise ValueError("give an orchestrator object or the process that runs one, not both")
        self.system_id = system_id
        self.mode = mode
        #: the orchestrator object (``None`` when it lives in its own process)
        self.orchestrator = orchestrator
        self.speech_input = speech_input
        self.capabilities = (capabilities.model_copy(update={"audio_input": True, "server_vad": True})
                             if speech_input is not None else capabilities)
        #: how the row was obtained, recorded with the run
        self.notes = ([f"audio input: TEN VAD endpointing ({speech_input.endpointing_silence_ms:g} ms) and an oracle "
                       "transcript; speech recognition is not measured"] if speech_input is not None else [])
        #: where the orchestrator runs: its own process, or its own event loop and thread here (started by
        #: ``start`` or the first session)
        self.runner: OrchestratorProcess | OrchestratorLoop = runner if runner is not None else \
            OrchestratorLoop(system_id)
        weakref.finalize(self, self.runner.stop_nowait)

    async def start(self) -> None:
        """Start the orchestrator's process (again, after ``close``) or its own loop and thread."""
        if isinstance(self.runner, OrchestratorProcess):
            await self.runner.start()
        else:
            self.runner.start()

    async def close(self) -> None:
        """Stop the orchestrator: its process ends (terminated by its PID after ``STOP_WAIT_S`` when blocked), or
        its loop stops (a stack still blocked after ``OrchestratorLoop.STOP_WAIT_S`` is left to finish on its
        daemon thread; the run does not wait for it)."""
        await self.runner.stop()

    async def open_session(self, spec: SessionSpec) -> InhouseSession:
        return InhouseSession(self.orchestrator, spec, self.capabilities, self.speech_input, runner=self.runner)


def _own_loop(session: InhouseSession, name: str) -> OrchestratorLoop:
    runner = OrchestratorLoop(name)
    weakref.finalize(session, runner.stop_nowait)
    return runner


def create(system: AdapterConfig) -> InhouseAdapter:
    """The orchestrator is built now, in its own process: a path, an option or a constructor that fails is an
    ``OrchestratorError`` (exit 2) before any conversation starts."""
    require_local(system, "inhouse")
    options = parse_options(system, InhouseOptions)
    runner = OrchestratorProcess(system.id, options.orchestrator, options.orchestrator_options,
                                 startup_timeout_s=options.startup_timeout_s)
    runner.start_sync()
    capabilities = CAPABILITIES.model_copy(update={"client_tools": options.client_tools,
                                                   "interruption": options.interruption})
    return InhouseAdapter(system.id, runner=runner, speech_input=options.speech_input, capabilities=capabilities)
