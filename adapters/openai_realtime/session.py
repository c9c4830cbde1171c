"""One OpenAI Realtime conversation on one socket, as a ``bench.protocol`` session.

Set-up (``start``): wait for ``session.created`` → ONE ``session.update`` (instructions with the conversation's
knowledge passages, the ``set_conversational_intent`` tool, turn detection ``null`` or ``server_vad``) → wait for
``session.updated`` → seed ``spec.history`` as conversation items → ``SessionReady``. From then on the server
keeps the conversation: every turn adds items to it.

* Text turn: ``conversation.item.create`` (``input_text``) + ``response.create`` → ``UserTurnSent``.
* Audio: ``input_audio_buffer.append`` per pushed frame. With server VAD the server hears the end of speech,
  commits and responds itself (``input_audio_buffer.speech_started/stopped`` → ``UserSpeechStarted/Stopped``);
  without it ``end_input`` = ``input_audio_buffer.commit`` + ``response.create``.
* A response: transcript/text deltas → ``TextDelta``, audio deltas → ``AudioDelta`` (framed by
  ``AgentSpeechStarted/Stopped``), a finished function call → ``ToolCall``, answered at once with a
  ``function_call_output`` item (``ToolResult``). Only a response that called a function and said nothing gets
  a follow-up ``response.create`` (so the model speaks its answer); a response that spoke and called the tool
  is complete. Then ``Usage`` (summed over the turn's server responses) and ``ResponseDone``.
* Client tools (``SessionSpec.tools``): declared as functions in the ``session.update``; a call of one →
  ``ToolCall(awaits_result=True)``, the turn waits; ``send_tool_result`` adds the ``function_call_output`` item
  (``ToolResult``) and, once every call of the response is answered and the response is done, asks for the
  spoken answer with ``response.create``.
* ``interrupt(played_ms)``: ``response.cancel`` + ``conversation.item.truncate`` of the assistant audio item at
  the position the caller heard (``played_ms``; else the engine's ``track_playback`` position; else the audio
  received) → ``Interrupted``; the audio the server still sends is emitted, and ``ResponseDone(status=
  "interrupted")`` follows the server's ``response.done``. A barge-in after the last byte arrived (the caller still
  listening) truncates the last audio item only. A response the server cancels because its VAD heard the caller
  (``turn_detected``) ends the same way, ``by="vendor"``, truncated at the played position the engine gave for
  the moment the server reported ``speech_started``.
* ``update_context``: ``session.update`` with new instructions; later responses report the new passages.

Errors: a server ``error`` while a response is awaited, a failed response, a dropped socket, a malformed frame or
no server event for ``idle_timeout_s`` while a response is awaited end the session with one fatal ``ErrorEvent``;
an ``error`` about a best-effort request (cancel, truncate, a context update) or while idle is not fatal.
GA and beta event names are both accepted.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import re
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from websockets.exceptions import ConnectionClosed

from adapters._kit.intent_tool import (
    INTENT_TOOL_DESCRIPTION,
    INTENT_TOOL_NAME,
    INTENT_TOOL_PARAMETERS,
    intent_from_arguments,
)
from adapters._kit.prompts import instructions_with_passages
from adapters._kit.ws import Transport, disconnect_error
from adapters.openai_realtime import wire
from adapters.openai_realtime.language import with_language
from bench.protocol import (
    AdapterError,
    AgentSpeechStarted,
    AgentSpeechStopped,
    AudioDelta,
    Capabilities,
    ContextUpdate,
    ErrorCode,
    ErrorEvent,
    HistoryMessage,
    Interrupted,
    ResponseDone,
    SessionReady,
    StreamingSession,
    StreamResampler,
    TextDelta,
    ToolCall,
    ToolResult,
    ToolSpec,
    Transcript,
    Usage,
    UserSpeechStarted,
    UserSpeechStopped,
    UserTurnSent,
)
from bench.protocol.redact import redact

#: the only PCM rate the Realtime API speaks
SAMPLE_RATE = 24000
BYTES_PER_SECOND = SAMPLE_RATE * 2
TOOL_ACK = json.dumps({"ok": True})

#: client events whose failure leaves the conversation usable
BEST_EFFORT_EVENTS = frozenset({"response.cancel", "conversation.item.truncate", "input_audio_buffer.clear",
                                "session.update"})
#: server error codes that report a harmless race rather than a broken conversation
BENIGN_ERROR_CODES = frozenset({"response_cancel_not_active", "conversation_already_has_active_response"})
_RETRY_IN = re.compile(r"(?i)try again in (\d+(?:\.\d+)?)\s*(ms|s\b|sec|second)")

Trace = list[tuple[str, str]]


# ------------------------------------------------------------ configuration
class SessionConfig(BaseModel):
    """What one conversation's session needs besides the transport."""

    model_config = ConfigDict(extra="forbid")

    beta: bool = False
    #: the ``session`` object of the one ``session.update``
    session: dict[str, Any]
    #: the instructions around the passages (None: the voice-agent prompt), kept for ``update_context``
    base_instructions: str | None = None
    #: the conversation's language, kept at the head of the instructions (``language.with_language``)
    language: str | None = None
    passages: list[str] = Field(default_factory=list)
    history: list[HistoryMessage] = Field(default_factory=list)
    server_vad: bool = False
    idle_timeout_s: float = Field(default=15.0, gt=0)
    max_tool_rounds: int = Field(default=3, ge=0)
    #: names of the conversation's client tools (answered by the engine with ``send_tool_result``)
    client_tools: list[str] = Field(default_factory=list)
    #: the caller's audio rate (``SessionSpec.audio``); PCM is resampled to and from 24 kHz
    sample_rate: int = SAMPLE_RATE
    trace: bool = False


def intent_tool() -> dict[str, Any]:
    return {"type": "function", "name": INTENT_TOOL_NAME, "description": INTENT_TOOL_DESCRIPTION,
            "parameters": INTENT_TOOL_PARAMETERS}


def function_tool(tool: ToolSpec) -> dict[str, Any]:
    """A client tool as a Realtime ``function`` tool (same shape in GA and beta)."""
    return {"type": "function", "name": tool.name, "description": tool.description, "parameters": tool.parameters}


def build_session(instructions: str, *, beta: bool, voice: str | None, output_modalities: list[str],
                  tools: list[dict[str, Any]], turn_detection: dict[str, Any] | None = None,
                  transcription: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ``session`` object of ``session.update`` for the GA or the beta interface (``turn_detection: None``
    is sent as an explicit ``null``: it switches the server's VAD off)."""
    if beta:
        session: dict[str, Any] = {
            "modalities": ["text", "audio"] if "audio" in output_modalities else ["text"],
            "instructions": instructions,
            "input_audio_format": "pcm16",
            "output_audio_format": "pcm16",
            "turn_detection": turn_detection,
            "tools": tools,
            "tool_choice": "auto",
        }
        if voice:
            session["voice"] = voice
        if transcription:
            session["input_audio_transcription"] = transcription
        return session
    pcm = {"type": "audio/pcm", "rate": SAMPLE_RATE}
    output: dict[str, Any] = {"format": pcm}
    if voice:
        output["voice"] = voice
    audio_input: dict[str, Any] = {"format": pcm, "turn_detection": turn_detection}
    if transcription:
        audio_input["transcription"] = transcription
    return {
        "type": "realtime",
        "instructions": instructions,
        "output_modalities": list(output_modalities),
        "tools": tools,
        "tool_choice": "auto",
        "audio": {"input": audio_input, "output": output},
    }


def instructions_update(instructions: str, *, beta: bool) -> dict[str, Any]:
    """The ``session`` object of a ``session.update`` that only changes the instructions."""
    return {"instructions": instructions} if beta else {"type": "realtime", "instructions": instructions}


def history_items(history: list[HistoryMessage], *, beta: bool) -> list[wire.ConversationItem]:
    """Earlier exchanges as conversation items (assistant text is ``output_text`` in GA, ``text`` in beta)."""
    items = []
    for message in history:
        if message.role == "assistant":
            part = wire.ContentPart(type="text" if beta else "output_text", text=message.text)
        else:
            part = wire.ContentPart(type="input_text", text=message.text)
        items.append(wire.ConversationItem(type="message", role=message.role, content=[part]))
    return items


# ------------------------------------------------------------ errors
def retry_after_from_message(message: str | None) -> float | None:
    """OpenAI's rate-limit messages say "Please try again in 1.5s" / "in 250ms"."""
    match = _RETRY_IN.search(message or "")
    if not match:
        return None
    value = float(match.group(1))
    return value / 1000.0 if match.group(2).lower() == "ms" else value


def error_code(detail: wire.ErrorDetail) -> tuple[ErrorCode, bool | None]:
    """The normalized code (and a retryable override) for a server error object."""
    kind, code = (detail.type or "").lower(), (detail.code or "").lower()
    if code == "insufficient_quota" or kind == "insufficient_quota":
        return ErrorCode.RATE_LIMITED, False  # a billing limit: waiting does not help
    if "rate_limit" in code or "rate_limit" in kind or kind in ("tokens", "requests"):
        return ErrorCode.RATE_LIMITED, None
    if code in ("invalid_api_key", "missing_api_key") or "authentication" in kind or "permission" in kind:
        return ErrorCode.AUTH, None
    if code == "session_expired":
        return ErrorCode.DISCONNECTED, None
    if "server" in kind or "server" in code or code == "internal_error":
        return ErrorCode.SERVER_ERROR, None
    if "invalid_request" in kind or kind.startswith("invalid") or code.startswith("invalid"):
        return ErrorCode.BAD_REQUEST, None
    return ErrorCode.SERVER_ERROR, None


def error_from_detail(detail: wire.ErrorDetail | None, context: str) -> AdapterError:
    if detail is None:
        return AdapterError(f"{context}: no error detail", code=ErrorCode.SERVER_ERROR)
    code, retryable = error_code(detail)
    retry_after = retry_after_from_message(detail.message) if code == ErrorCode.RATE_LIMITED else None
    message = redact(f"{context}: {detail.message or 'no message'} ({detail.type}, {detail.code})")
    return AdapterError(message, code=code, retryable=retryable, retry_after_s=retry_after,
                        vendor_code=detail.code or detail.type)


def non_fatal(error: AdapterError) -> ErrorEvent:
    return ErrorEvent(message=str(error), code=error.code, fatal=False, retryable=error.retryable,
                      retry_after_s=error.retry_after_s, vendor_code=error.vendor_code)


# ------------------------------------------------------------ per-turn state
@dataclass
class _Turn:
    """One normalized response: everything the server does for one user turn (possibly several server
    responses when a function call needs a follow-up)."""

    response_id: str
    passages: list[str]
    input_audio_bytes: int = 0
    #: a server response of this turn is in progress
    active: bool = False
    interrupt_requested: bool = False
    tool_rounds: int = 0
    intent: str | None = None
    target_language: str | None = None
    segments: list[str] = field(default_factory=list)
    current: list[str] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    output_audio_bytes: int = 0
    speaking: bool = False
    #: the assistant audio item being received and how much of its audio arrived (for truncation)
    audio_item_id: str | None = None
    audio_item_bytes: int = 0
    handled_calls: set[str] = field(default_factory=set)
    call_names: dict[str, str] = field(default_factory=dict)
    #: client tool calls the engine has not answered yet, and whether answered ones await a follow-up response
    pending_results: set[str] = field(default_factory=set)
    results_sent: bool = False
    #: the played position the engine gave when the server heard the caller start (a server-VAD barge-in)
    vad_cut_ms: float | None = None
    # per server response
    calls_in_response: int = 0
    spoke_in_response: bool = False

    @property
    def played_ms(self) -> float:
        return self.output_audio_bytes / BYTES_PER_SECOND * 1000.0

    @property
    def item_received_ms(self) -> float:
        return self.audio_item_bytes / BYTES_PER_SECOND * 1000.0

    def new_server_response(self) -> None:
        self.active = True
        self.calls_in_response = 0
        self.spoke_in_response = False

    def flush_text(self) -> None:
        if self.current:
            self.segments.append("".join(self.current))
            self.current = []


def add_usage(total: Usage, usage: wire.ResponseUsage | None) -> None:
    if usage is None:
        return
    inp = usage.input_token_details or wire.InputTokenDetails()
    out = usage.output_token_details or wire.OutputTokenDetails()
    for name, value in (("input_text_tokens", inp.text_tokens), ("input_audio_tokens", inp.audio_tokens),
                        ("cached_input_tokens", inp.cached_tokens), ("output_text_tokens", out.text_tokens),
                        ("output_audio_tokens", out.audio_tokens)):
        if value is not None:
            setattr(total, name, (getattr(total, name) or 0) + value)


class TranscriptionTotals(BaseModel):
    """Input-transcription usage over the session (billed at the transcription model's price, apart from the
    realtime model's tokens)."""

    input_tokens: int = 0
    output_tokens: int = 0
    input_audio_tokens: int = 0
    seconds: float = 0.0
    events: int = 0

    def add(self, usage: wire.TranscriptionUsage | None) -> None:
        if usage is None:
            return
        self.events += 1
        self.input_tokens += usage.input_tokens or 0
        self.output_tokens += usage.output_tokens or 0
        if usage.input_token_details is not None:
            self.input_audio_tokens += usage.input_token_details.audio_tokens or 0
        self.seconds += usage.seconds or 0.0


# ------------------------------------------------------------ the session
class RealtimeSession(StreamingSession):
    """One conversation over one Realtime socket (``transport``: the SDK connection, see ``live``)."""

    def __init__(self, transport: Transport, config: SessionConfig, capabilities: Capabilities):
        super().__init__(capabilities)
        self.transport = transport
        self.config = config
        #: one stream resampler per direction (filter state kept across frames)
        self.audio_in = StreamResampler(config.sample_rate, SAMPLE_RATE)
        self.audio_out = StreamResampler(SAMPLE_RATE, config.sample_rate)
        self.passages = list(config.passages)
        self.base_instructions = config.base_instructions
        #: (direction, wire event type) of every frame, when ``config.trace``
        self.trace: Trace | None = [] if config.trace else None
        self.vendor_session_id: str | None = None
        self.transcription_usage = TranscriptionTotals()
        self._turn: _Turn | None = None
        self._queued: deque[_Turn] = deque()
        self._state_lock = asyncio.Lock()
        self._send_lock = asyncio.Lock()
        self._sent_types: OrderedDict[str, str] = OrderedDict()
        self._buffered_audio_bytes = 0
        self._item_turns: dict[str, str] = {}
        self._last_activity = time.monotonic()
        #: the last assistant audio item of a finished response: (response id, item id, ms received) — a caller
        #: still listening to it can barge in after the response ended
        self._last_audio: tuple[str, str, float] | None = None
        self._truncated: set[str] = set()
        #: the position sent with the last truncate (for ``Interrupted.played_ms``)
        self._cut_ms: dict[str, float] = {}

    # -- set-up ------------------------------------------------------------------------------------
    async def start(self) -> None:
        """Configure the server session, seed the history, start reading. Raises ``AdapterError``."""
        created = await self._wait_for("session.created")
        if isinstance(created, wire.SessionCreated):
            self.vendor_session_id = created.session.get("id")
        await self._send(wire.SessionUpdate(session=self.config.session))
        await self._wait_for("session.updated")
        for item in history_items(self.config.history, beta=self.config.beta):
            await self._send(wire.ConversationItemCreate(item=item))
        self.emit(SessionReady(vendor_session_id=self.vendor_session_id))
        self.spawn(self._read_loop(), name="openai-realtime-reader")
        self.spawn(self._watchdog(), name="openai-realtime-watchdog")

    async def _wait_for(self, wanted: str) -> wire.ServerEvent | wire.UnknownServerEvent:
        timeout = self.config.idle_timeout_s
        while True:
            try:
                raw = await asyncio.wait_for(self.transport.recv(), timeout)
            except TimeoutError:
                raise AdapterError(f"no {wanted} from the server within {timeout:g} s",
                                   code=ErrorCode.CONNECT) from None
            except ConnectionClosed as exc:
                raise disconnect_error(exc) from None
            event = self._parse(raw)
            if isinstance(event, wire.ErrorEvent):
                raise error_from_detail(event.error, f"session set-up failed before {wanted}")
            if event.type == wanted:
                return event

    # -- Session -----------------------------------------------------------------------------------
    async def send_text(self, text: str) -> None:
        async with self._state_lock:
            turn = self._open_turn_for_input()
            item = wire.ConversationItem(type="message", role="user",
                                         content=[wire.ContentPart(type="input_text", text=text)])
            await self._send(wire.ConversationItemCreate(item=item))
            await self._send(wire.ResponseCreate())
            self._last_activity = time.monotonic()
            self.emit(UserTurnSent(response_id=turn.response_id))

    async def push_audio(self, frame: bytes) -> None:
        self._check_open()
        pcm = self.audio_in.push(frame)
        self._buffered_audio_bytes += len(pcm)
        await self._send(wire.InputAudioBufferAppend(audio=base64.b64encode(pcm).decode()))

    async def end_input(self) -> None:
        """Commit the caller's audio and ask for a response; under server VAD only a hint (the server commits)."""
        if self.config.server_vad:
            return
        async with self._state_lock:
            turn = self._open_turn_for_input()
            turn.input_audio_bytes, self._buffered_audio_bytes = self._buffered_audio_bytes, 0
            await self._send(wire.InputAudioBufferCommit())
            await self._send(wire.ResponseCreate())
            self._last_activity = time.monotonic()

    async def interrupt(self, played_ms: float | None = None) -> None:
        async with self._state_lock:
            turn = self._turn
            if turn is None:
                await self._truncate_last_audio(played_ms)
                return
            if turn.interrupt_requested:
                return
            turn.interrupt_requested = True
            turn.vad_cut_ms = played_ms if played_ms is not None else self.played_position(turn.response_id)
            if turn.active:
                await self._cancel(turn)
            # else: the response is still to be created; it is cancelled as soon as it is

    async def send_tool_result(self, call_id: str, output: str, *, is_error: bool = False) -> None:
        """Answer a client tool call: a ``function_call_output`` item; the follow-up ``response.create`` once every
        call of the response is answered and the response is done."""
        async with self._state_lock:
            self._check_open()
            turn = self._turn
            if turn is None or call_id not in turn.pending_results:
                raise AdapterError(f"no client tool call {call_id!r} awaits a result", code=ErrorCode.BAD_REQUEST,
                                   retryable=False)
            turn.pending_results.discard(call_id)
            item = wire.ConversationItem(type="function_call_output", call_id=call_id, output=output)
            await self._send(wire.ConversationItemCreate(item=item))
            self.emit(ToolResult(call_id=call_id, output=output, is_error=is_error, response_id=turn.response_id))
            turn.results_sent = True
            self._last_activity = time.monotonic()
            if not turn.active and not turn.pending_results:
                await self._follow_up(turn)

    async def update_context(self, update: ContextUpdate) -> None:
        self._check_open()
        self.passages = list(update.passages)
        if update.instructions is not None:
            self.base_instructions = update.instructions
        instructions = with_language(instructions_with_passages(self.passages, self.base_instructions),
                                     self.config.language)
        await self._send(wire.SessionUpdate(session=instructions_update(instructions, beta=self.config.beta)))

    async def close_connection(self) -> None:
        totals = self.transcription_usage
        if totals.events:  # billed at the transcription model's price, once for the session
            self.emit(Usage(scope="session", transcription_input_tokens=totals.input_tokens,
                            transcription_output_tokens=totals.output_tokens,
                            transcription_seconds=totals.seconds or None))
        with contextlib.suppress(Exception):  # a broken socket must not mask how the conversation ended
            await self.transport.close(graceful=not self.ended)

    # -- helpers for the caller-side methods -------------------------------------------------------
    def _check_open(self) -> None:
        if self.ended:
            raise AdapterError("the session has ended", code=ErrorCode.DISCONNECTED, retryable=False)

    def _open_turn_for_input(self) -> _Turn:
        self._check_open()
        if self._turn is not None:
            raise AdapterError(f"response {self._turn.response_id} is still in progress: wait for its "
                               "ResponseDone or interrupt() it", code=ErrorCode.BAD_REQUEST, retryable=False)
        turn = _Turn(self.new_response_id(), passages=list(self.passages))
        self._turn = turn
        return turn

    async def _send(self, event: wire.ClientEvent) -> None:
        event.event_id = event.event_id or wire.new_id("event")
        data = json.loads(wire.dump(event))
        if isinstance(event, wire.SessionUpdate):
            data["session"] = event.session  # keep explicit nulls (turn_detection: null disables VAD)
        async with self._send_lock:
            try:
                await self.transport.send(data)
            except ConnectionClosed as exc:
                raise disconnect_error(exc) from None
        self._sent_types[event.event_id] = event.type
        if len(self._sent_types) > 256:
            self._sent_types.popitem(last=False)
        if self.trace is not None:
            self.trace.append(("send", event.type))

    async def _cancel(self, turn: _Turn) -> None:
        await self._send(wire.ResponseCancel())
        if turn.audio_item_id and turn.audio_item_bytes:
            await self._truncate(turn.response_id, turn.audio_item_id, turn.item_received_ms, turn.vad_cut_ms)

    async def _truncate(self, response_id: str, item_id: str, received_ms: float, played_ms: float | None) -> None:
        """``conversation.item.truncate`` at what the caller heard (never past the audio received: the server
        refuses that), once per item."""
        if item_id in self._truncated:
            return
        self._truncated.add(item_id)
        heard = received_ms if played_ms is None else min(max(0.0, played_ms), received_ms)
        audio_end_ms = int(heard)
        self._cut_ms[response_id] = float(audio_end_ms)
        await self._send(wire.ConversationItemTruncate(item_id=item_id, content_index=0, audio_end_ms=audio_end_ms))

    async def _truncate_last_audio(self, played_ms: float | None) -> None:
        """A barge-in after the response ended: the caller may still be hearing its audio."""
        if self._last_audio is None:
            return
        response_id, item_id, received_ms = self._last_audio
        heard = played_ms if played_ms is not None else self.played_position(response_id)
        if heard is not None and heard < received_ms:
            await self._truncate(response_id, item_id, received_ms, heard)

    async def _follow_up(self, turn: _Turn) -> None:
        """Every client call of the response is answered and the response is done: ask for the spoken answer."""
        turn.results_sent = False
        if turn.tool_rounds >= self.config.max_tool_rounds:
            self._finish(turn)
            return
        turn.tool_rounds += 1
        await self._send(wire.ResponseCreate())

    # -- reading -----------------------------------------------------------------------------------
    def _parse(self, raw: str | bytes) -> wire.ServerEvent | wire.UnknownServerEvent:
        try:
            event = wire.parse_server_event(raw)
        except wire.MalformedEvent as exc:
            raise AdapterError(redact(f"malformed frame from the server: {exc}"), code=ErrorCode.MALFORMED,
                               retryable=False) from None
        if self.trace is not None:
            self.trace.append(("recv", event.type))
        return event

    async def _read_loop(self) -> None:
        while not self.ended:
            try:
                raw = await self.transport.recv()
            except ConnectionClosed as exc:
                raise disconnect_error(exc) from None
            self._last_activity = time.monotonic()
            event = self._parse(raw)
            async with self._state_lock:
                await self._dispatch(event)

    async def _watchdog(self) -> None:
        """A response awaited with no server event for ``idle_timeout_s`` is a (retryable) stall."""
        limit = self.config.idle_timeout_s
        while not self.ended:
            await asyncio.sleep(min(0.25, limit / 4))
            awaiting = self._turn is not None or bool(self._queued)
            if awaiting and time.monotonic() - self._last_activity > limit:
                raise AdapterError(f"stalled: no server event for {limit:g} s while a response was awaited",
                                   code=ErrorCode.STALLED)

    async def _dispatch(self, event: wire.ServerEvent | wire.UnknownServerEvent) -> None:
        turn = self._turn
        if isinstance(event, wire.ErrorEvent):
            self._on_error(event.error)
        elif isinstance(event, wire.InputAudioBufferSpeechStarted):
            await self._on_speech_started()
            self.emit(UserSpeechStarted())
        elif isinstance(event, wire.InputAudioBufferSpeechStopped):
            self._on_speech_stopped(event.item_id)
        elif isinstance(event, wire.InputAudioBufferCommitted):
            if event.item_id not in self._item_turns and turn is not None:
                self._item_turns[event.item_id] = turn.response_id
        elif isinstance(event, wire.InputAudioTranscriptionCompleted):
            self.transcription_usage.add(event.usage)
            self.emit(Transcript(role="user", text=event.transcript, response_id=self._item_turns.get(event.item_id)))
        elif isinstance(event, wire.InputAudioTranscriptionFailed):
            self.emit(non_fatal(error_from_detail(event.error, "input transcription failed")))
        elif isinstance(event, wire.ResponseCreated):
            await self._on_response_created()
        elif turn is None:
            return  # the tail of a response that has already ended (or not one of ours)
        elif isinstance(event, wire.ResponseOutputItemAdded):
            self._on_item(turn, event.item)
        elif isinstance(event, (wire.ResponseOutputAudioTranscriptDelta, wire.ResponseOutputTextDelta)):
            if event.delta:
                turn.current.append(event.delta)
                turn.spoke_in_response = True
                self.emit(TextDelta(text=event.delta, response_id=turn.response_id))
        elif isinstance(event, wire.ResponseOutputAudioDelta):
            self._on_audio(turn, event)
        elif isinstance(event, wire.ResponseOutputAudioDone):
            self._stop_speaking(turn)
        elif isinstance(event, wire.ResponseOutputAudioTranscriptDone):
            turn.current = []
            if event.transcript:
                turn.spoke_in_response = True
                turn.segments.append(event.transcript)
                self.emit(Transcript(role="agent", text=event.transcript, response_id=turn.response_id))
        elif isinstance(event, wire.ResponseOutputTextDone):
            turn.current = []
            if event.text:
                turn.spoke_in_response = True
                turn.segments.append(event.text)
        elif isinstance(event, wire.ResponseFunctionCallArgumentsDone):
            name = event.name or turn.call_names.get(event.call_id) or turn.call_names.get(event.item_id)
            if name:
                await self._on_call(turn, event.call_id, name, event.arguments)
        elif isinstance(event, wire.ResponseOutputItemDone):
            item = event.item
            if item.type == "function_call" and item.call_id and item.name:
                await self._on_call(turn, item.call_id, item.name, item.arguments or "")
            elif item.type == "message" and _has_content(item):
                turn.spoke_in_response = True
        elif isinstance(event, wire.ResponseDone):
            await self._on_response_done(turn, event.response)

    def _on_error(self, detail: wire.ErrorDetail) -> None:
        error = error_from_detail(detail, "server error")
        about = self._sent_types.get(detail.event_id or "")
        idle = self._turn is None and not self._queued
        if (detail.code or "") in BENIGN_ERROR_CODES or about in BEST_EFFORT_EVENTS or idle:
            self.emit(non_fatal(error))
            return
        raise error

    async def _on_speech_started(self) -> None:
        """The server heard the caller: note what the caller had heard of the agent's audio at this moment (the
        truncation point should the server cancel the response), or truncate an ended response's last item."""
        turn = self._turn
        if turn is not None and turn.audio_item_bytes and turn.vad_cut_ms is None:
            turn.vad_cut_ms = self.played_position(turn.response_id)
        elif turn is None:
            await self._truncate_last_audio(None)

    def _on_speech_stopped(self, item_id: str) -> None:
        turn = _Turn(self.new_response_id(), passages=list(self.passages),
                     input_audio_bytes=self._buffered_audio_bytes)
        self._buffered_audio_bytes = 0
        self._item_turns[item_id] = turn.response_id
        if self._turn is None:
            self._turn = turn
        else:
            self._queued.append(turn)
        self._last_activity = time.monotonic()
        self.emit(UserSpeechStopped(response_id=turn.response_id))

    async def _on_response_created(self) -> None:
        if self._turn is None:  # a response the server started on its own
            self._turn = _Turn(self.new_response_id(), passages=list(self.passages))
        turn = self._turn
        turn.new_server_response()
        if turn.interrupt_requested:
            await self._cancel(turn)

    def _on_item(self, turn: _Turn, item: wire.ConversationItem) -> None:
        if item.type == "function_call" and item.name:
            for key in (item.call_id, item.id):
                if key:
                    turn.call_names[key] = item.name
        elif item.type == "message" and item.id:
            turn.audio_item_id, turn.audio_item_bytes = item.id, 0

    def _on_audio(self, turn: _Turn, event: wire.ResponseOutputAudioDelta) -> None:
        try:
            pcm = base64.b64decode(event.delta, validate=True)
        except ValueError as exc:
            raise AdapterError(f"malformed audio delta: {exc}", code=ErrorCode.MALFORMED, retryable=False) from None
        if not pcm:
            return
        turn.spoke_in_response = True
        turn.output_audio_bytes += len(pcm)
        if event.item_id == turn.audio_item_id:
            turn.audio_item_bytes += len(pcm)
        if not turn.speaking:
            turn.speaking = True
            self.emit(AgentSpeechStarted(response_id=turn.response_id))
        rate = self.config.sample_rate
        self.emit(AudioDelta(pcm16=self.audio_out.push(pcm), sample_rate=rate,
                             response_id=turn.response_id))

    def _stop_speaking(self, turn: _Turn) -> None:
        if turn.speaking:
            turn.speaking = False
            self.emit(AgentSpeechStopped(response_id=turn.response_id))

    async def _on_call(self, turn: _Turn, call_id: str, name: str, arguments: str) -> None:
        if call_id in turn.handled_calls:
            return
        turn.handled_calls.add(call_id)
        turn.calls_in_response += 1
        try:
            parsed = json.loads(arguments) if arguments else {}
        except ValueError:
            parsed = {"_unparsed": arguments}
        if not isinstance(parsed, dict):
            parsed = {"_value": parsed}
        if name in self.config.client_tools:  # the engine answers it (send_tool_result)
            turn.pending_results.add(call_id)
            self.emit(ToolCall(call_id=call_id, name=name, arguments=parsed, response_id=turn.response_id,
                               awaits_result=True))
            return
        self.emit(ToolCall(call_id=call_id, name=name, arguments=parsed, response_id=turn.response_id))
        if name == INTENT_TOOL_NAME:
            turn.intent, turn.target_language = intent_from_arguments(parsed)
            output = TOOL_ACK
        else:
            output = json.dumps({"error": f"unknown tool {name}"})
        item = wire.ConversationItem(type="function_call_output", call_id=call_id, output=output)
        await self._send(wire.ConversationItemCreate(item=item))
        self.emit(ToolResult(call_id=call_id, output=output, response_id=turn.response_id))

    async def _on_response_done(self, turn: _Turn, response: wire.RealtimeResponse) -> None:
        turn.active = False
        add_usage(turn.usage, response.usage)
        turn.flush_text()
        details = response.status_details
        if turn.interrupt_requested:
            self._finish(turn, interrupted_by="caller")
            return
        if response.status == "cancelled" and details is not None and details.reason == "turn_detected":
            if turn.audio_item_id and turn.audio_item_bytes and turn.vad_cut_ms is not None:
                await self._truncate(turn.response_id, turn.audio_item_id, turn.item_received_ms, turn.vad_cut_ms)
            self._finish(turn, interrupted_by="vendor")
            return
        if response.status == "failed":
            raise error_from_detail(details.error if details else None, "response failed")
        if response.status == "cancelled":
            reason = details.reason if details else None
            raise AdapterError(f"the server cancelled the response ({reason or 'no reason given'})",
                               code=ErrorCode.CANCELLED)
        spoke = turn.spoke_in_response or any(
            item.type == "message" and _has_content(item) for item in response.output or [])
        if turn.pending_results:
            return  # the engine answers the client tool calls; send_tool_result asks for the follow-up
        if turn.results_sent:
            await self._follow_up(turn)
            return
        if turn.calls_in_response and not spoke and turn.tool_rounds < self.config.max_tool_rounds:
            turn.tool_rounds += 1  # the model only called the tool: ask it for the spoken answer
            await self._send(wire.ResponseCreate())
            return
        self._finish(turn)

    def _finish(self, turn: _Turn, interrupted_by: str | None = None) -> None:
        self._stop_speaking(turn)
        if interrupted_by is not None:
            played = self._cut_ms.pop(turn.response_id, None)
            self.emit(Interrupted(played_ms=played if played is not None else turn.played_ms, by=interrupted_by,
                                  response_id=turn.response_id))
        if turn.audio_item_id and turn.audio_item_bytes:
            self._last_audio = (turn.response_id, turn.audio_item_id, turn.item_received_ms)
        usage = turn.usage
        usage.response_id = turn.response_id
        usage.input_audio_seconds = turn.input_audio_bytes / BYTES_PER_SECOND if turn.input_audio_bytes else None
        usage.output_audio_seconds = turn.output_audio_bytes / BYTES_PER_SECOND if turn.output_audio_bytes else None
        self.emit(usage)
        final_text = " ".join(s.strip() for s in turn.segments if s.strip()) or None
        self.emit(ResponseDone(response_id=turn.response_id,
                               status="interrupted" if interrupted_by else "completed",
                               conversational_intent=turn.intent, target_language=turn.target_language,
                               retrieved_context=list(turn.passages), final_text=final_text))
        self._turn = self._queued.popleft() if self._queued else None
        self._last_activity = time.monotonic()


def _has_content(item: wire.ConversationItem) -> bool:
    return item.role in (None, "assistant") and any(
        (part.text or part.transcript or part.audio) for part in item.content or [])
