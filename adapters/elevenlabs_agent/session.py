"""One ElevenLabs Agents conversation on one socket, as a ``Session``.

Start (``ElevenLabsSession.start``): send ``conversation_initiation_client_data`` once → wait for
``conversation_initiation_metadata`` (the conversation id and both audio formats) → ``SessionReady`` → the
earlier exchanges of ``spec.history``, if any, as one ``contextual_update``. Then one reader runs for the whole
conversation:

* ``ping`` → ``pong`` (``ping_ms`` kept as the session's network round trip);
* ``vad_score`` ≥ 0.5 → ``UserSpeechStarted``; ``user_transcript`` → for audio input ``UserSpeechStopped`` (the
  server's turn detection ended the caller's turn: it starts a new response), then ``Transcript(user)``;
* ``client_tool_call`` → ``ToolCall``, a ``client_tool_result`` ack at once, ``ToolResult`` (the intent tool's
  arguments become the response's intent and target language); a call of one of the conversation's client tools
  (``SessionSpec.tools``; the agent must list them as client tools with "wait for response") →
  ``ToolCall(awaits_result=True)``, answered by ``send_tool_result`` with ``client_tool_result``;
* ``agent_chat_response_part`` deltas (text-only) → ``TextDelta``; ``agent_response`` → the whole text as one
  ``TextDelta`` when no parts were streamed (voice: it comes with the first audio chunk);
* ``audio`` → ``AgentSpeechStarted`` once, ``AudioDelta`` resampled to the session's rate;
* ``interruption`` (the server heard the caller barge in) → ``Interrupted(by="vendor")``. An interrupted
  response stays open for its audio still arriving (frames at or below its ``event_id``): unlike the SDK, which
  drops them from playback, the adapter emits them — the engine measures when the agent's own audio stopped — and
  ends it (``AgentSpeechStopped``, ``ResponseDone(status="interrupted")``) when a newer response's frame arrives
  or after ``cut_quiet_s`` without one of its frames;
* ``client_error`` → a fatal error (its ``error_type`` decides the code); a normal close by the agent (its
  end-call tool) ends the session after the response it was giving, reported as
  ``CallControl(kind="agent_hung_up")``.

Input: ``send_text`` = ``user_message``; ``push_audio`` = ``user_audio_chunk`` resampled from the canonical 24 kHz
to the announced input rate (``pcm_16000`` by default). The server detects the end of the caller's speech, so
``end_input`` sends nothing. ``update_context`` = ``contextual_update``. ElevenLabs has no cancel or truncate
message: ``interrupt(played_ms)`` reports ``Interrupted(by="caller", played_ms=…)`` and the response is cut as
above; the agent itself is interrupted by the caller's voice or next message.

End of a response, on the vendor's own signals (never on a quiet timer alone):

* ``agent_response_complete`` when the agent lists it in its client events (``response_complete_event``: then it
  is the only end, so a pause or a second message of the turn never splits it);
* voice: the turn's ``agent_response`` (the complete agent message, sent with its first audio chunk) has arrived
  and its audio is done — the ``alignment`` of the turn's ``audio`` events (the characters each chunk voices; the
  SDK's ``AudioEventAlignment``) covers the whole message. A pause inside the reply (audio arriving 1.3 s apart)
  keeps it open, and completion is the last audio frame, with no quiet period added;
* text-only: ``agent_response`` once the ``agent_chat_response_part`` stream (start … stop) is closed;
* no response ends while one of the conversation's client tool calls awaits its result, nor before the agent's
  message after that result (``follow_up``); a frame of a newer turn
  (a higher ``event_id``) or the caller's next turn ends an earlier one.

An alignment has voiced the message when it has at least as many non-blank characters; one that never does (a
TTS normalization that drops characters) ends the response ``max(3 s, 3 × response_quiet_s)`` after its last frame
rather than stalling.

Only where the vendor gives no such signal does a quiet period (``response_quiet_s`` after the last frame) end a
response that already has all its known content: voice audio without ``alignment``, a closed text-part stream
whose ``agent_response`` never came, or a client tool's result the agent did not speak after. Audio of a turn
that ended by its signals and voices no further character (trailing silence) is dropped, not taken for a new
reply. A response awaited with no agent frame (pings do not count) for ``spec.idle_timeout_s`` is a stall.

Usage: the socket reports none; ``close_connection`` emits ``Usage(scope="session")`` with the billed minutes —
ElevenLabs bills agent conversations by the minute and the caller stays on the line while the answer plays, so they
are the call's duration as heard (``adapters._kit.call_meter``: connect to the end of the last answer's playout,
plus ``endpointing_s`` per text turn), not the socket's open time — the last ping and, given a cost reader
(``fetch_cost``), the cost read back from the conversation (``sdk.conversation_cost``). Audio seconds are not
metered here: the engine counts them from the ``AudioDelta``s and the frames it pushed.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel
from websockets.exceptions import ConnectionClosed, ConnectionClosedOK

from adapters._kit.call_meter import CallMeter
from adapters._kit.intent_tool import INTENT_TOOL_NAME, intent_from_arguments
from adapters._kit.ws import Transport
from adapters.elevenlabs_agent import wire
from adapters.elevenlabs_agent.errors import client_error, close_error
from adapters.elevenlabs_agent.initiation import context_update_text, history_text
from bench.protocol import (
    AdapterError,
    AgentSpeechStarted,
    AgentSpeechStopped,
    AudioDelta,
    CallControl,
    Capabilities,
    ContextUpdate,
    ErrorCode,
    ErrorEvent,
    Interrupted,
    ResponseDone,
    SessionReady,
    SessionSpec,
    StreamingSession,
    StreamResampler,
    TextDelta,
    ToolCall,
    ToolResult,
    Transcript,
    Usage,
    UserSpeechStarted,
    UserSpeechStopped,
    UserTurnSent,
)
from bench.protocol.redact import redact

TOOL_ACK = "ok"
#: a ``vad_score`` at or above this means the caller is speaking
SPEECH_SCORE = 0.5
Trace = list[tuple[str, str]]
#: reads the conversation's cost in USD back from the vendor after hanging up
CostReader = Callable[[str], Awaitable[float | None]]


class SessionSettings(BaseModel):
    """The per-conversation knobs the adapter derives from its options."""

    text_only: bool = False
    response_complete_event: bool = False
    #: the fallback end where the vendor gives no signal (audio without ``alignment``); not used otherwise
    response_quiet_s: float = 1.0
    #: an interrupted response ends this long after its last frame (its audio has stopped)
    cut_quiet_s: float = 0.5
    idle_timeout_s: float = 15.0
    trace: bool = False
    #: the agent's end-of-speech wait after a caller turn, added to the billed call time per text turn
    endpointing_s: float = 0.0


@dataclass
class _Response:
    """One agent response while it is being received."""

    id: str
    origin: Literal["text", "audio", "agent"]
    started: float
    last_frame: float
    transcribed: bool = False
    responded: bool = False
    streamed: list[str] = field(default_factory=list)
    segments: list[str] = field(default_factory=list)
    audio_bytes: int = 0
    #: the audio carried ``alignment``, and how many non-blank characters it has voiced so far
    aligned: bool = False
    aligned_chars: int = 0
    #: text-only: an ``agent_chat_response_part`` stream is open (start without stop) / was closed
    part_open: bool = False
    part_stopped: bool = False
    intent: str | None = None
    target_language: str | None = None
    #: the highest ``event_id`` among the frames of this response
    event_id: int | None = None
    done: bool = False
    #: interrupted (``Interrupted`` reported); it ends once its audio has stopped
    cut_by: Literal["caller", "vendor"] | None = None
    client_calls: set[str] = field(default_factory=set)
    #: a client tool's result went back: the agent speaks again in this turn (its next ``agent_response``)
    follow_up: bool = False

    @property
    def spoke(self) -> bool:
        return self.audio_bytes > 0

    @property
    def has_output(self) -> bool:
        return self.responded or self.spoke or bool(self.streamed)


class ElevenLabsSession(StreamingSession):
    """A conversation with an ElevenLabs agent (or its emulator) over one socket."""

    def __init__(self, transport: Transport, spec: SessionSpec, settings: SessionSettings,
                 capabilities: Capabilities, *, cost_reader: CostReader | None = None):
        super().__init__(capabilities)
        self.transport = transport
        self.spec = spec
        self.settings = settings
        self.trace: Trace | None = [] if settings.trace else None
        self.conversation_id: str | None = None
        self.input_rate = 16000
        self.output_rate = 16000
        #: one stream resampler per direction (filter state kept across frames), set for the agreed rates
        self.audio_in = StreamResampler(spec.audio.sample_rate, self.input_rate)
        self.audio_out = StreamResampler(self.output_rate, spec.audio.sample_rate)
        self.passages = list(spec.context)
        self._cost_reader = cost_reader
        self._lock = asyncio.Lock()
        self._response: _Response | None = None
        #: the interrupted response whose audio may still arrive
        self._cut_response: _Response | None = None
        #: the response that ended last (its turn's trailing audio, voicing nothing more, is not a new response)
        self._finished: _Response | None = None
        self._client_tools = {tool.name for tool in spec.tools}
        self._last_event_id = 0
        self._wake = asyncio.Event()
        self._user_speaking = False
        self._audio_since_turn = False
        self._last_ping_ms: float | None = None
        self._last_frame = time.monotonic()
        self._opened = time.monotonic()
        self.meter = CallMeter(endpointing_s=settings.endpointing_s, opened=self._opened)
        self._session_usage_sent = False
        self._hanging_up = False

    # -- start --------------------------------------------------------------------------------------
    async def start(self, initiation: wire.ConversationInitiationClientData) -> None:
        """Initiate the conversation and start the reader; raises ``AdapterError`` when it cannot start."""
        self._opened = time.monotonic()
        self.meter = CallMeter(endpointing_s=self.settings.endpointing_s, opened=self._opened)
        try:
            await self._send(initiation)
            meta = await self._await_metadata()
        except ConnectionClosed as exc:
            raise close_error(exc) from None
        except wire.MalformedMessage as exc:
            raise AdapterError(redact(f"malformed frame from server: {exc}"), code=ErrorCode.MALFORMED) from None
        for name, audio_format in (("output", meta.agent_output_audio_format),
                                   ("input", meta.user_input_audio_format)):
            if not wire.is_pcm(audio_format):
                raise AdapterError(f"the agent's {name} audio format is {audio_format}; set it to pcm_16000",
                                   code=ErrorCode.UNSUPPORTED, retryable=False)
        self.conversation_id = meta.conversation_id
        self.output_rate = wire.audio_format_rate(meta.agent_output_audio_format)
        self.input_rate = wire.audio_format_rate(meta.user_input_audio_format)
        self.audio_in = StreamResampler(self.spec.audio.sample_rate, self.input_rate)
        self.audio_out = StreamResampler(self.output_rate, self.spec.audio.sample_rate)
        self.emit(SessionReady(vendor_session_id=meta.conversation_id))
        if self.spec.history:
            await self._send(wire.ContextualUpdate(text=history_text(self.spec.history)))
        self.spawn(self._read(), name=f"elevenlabs-reader-{self.spec.conversation_id}")

    async def _await_metadata(self) -> wire.InitiationMetadataEvent:
        deadline = time.monotonic() + self.settings.idle_timeout_s
        while True:
            try:
                message = await self._recv(max(0.0, deadline - time.monotonic()))
            except TimeoutError:
                raise AdapterError(f"no conversation_initiation_metadata within {self.settings.idle_timeout_s:g} s",
                                   code=ErrorCode.CONNECT) from None
            if isinstance(message, wire.ConversationInitiationMetadata):
                return message.conversation_initiation_metadata_event
            if isinstance(message, wire.ClientError):
                raise client_error(message)
            if isinstance(message, wire.Ping):
                await self._pong(message)

    # -- Session --------------------------------------------------------------------------------------
    async def send_text(self, text: str) -> None:
        async with self._lock:
            self._cut(by="caller")
            response = self._begin("text")
            self.meter.text_turn()
            await self._send(wire.UserMessage(text=text))
            self.emit(UserTurnSent(response_id=response.id))

    async def push_audio(self, frame: bytes) -> None:
        if self.settings.text_only:
            raise AdapterError("a text-only conversation takes no audio", code=ErrorCode.UNSUPPORTED, retryable=False)
        pcm = self.audio_in.push(frame)
        self._audio_since_turn = True
        await self.transport.send({"user_audio_chunk": base64.b64encode(pcm).decode()})
        if self.trace is not None:
            self.trace.append(("send", "user_audio_chunk"))

    async def end_input(self) -> None:
        """Nothing to send: the server's turn detection ends the caller's turn."""
        if self.settings.text_only:
            raise AdapterError("a text-only conversation takes no audio", code=ErrorCode.UNSUPPORTED, retryable=False)

    async def interrupt(self, played_ms: float | None = None) -> None:
        async with self._lock:
            self._cut(by="caller", played_ms=played_ms)

    async def send_tool_result(self, call_id: str, output: str, *, is_error: bool = False) -> None:
        """Answer a client tool call with ``client_tool_result``."""
        async with self._lock:
            owner = next((r for r in (self._response, self._cut_response)
                          if r is not None and call_id in r.client_calls), None)
            if owner is None:
                raise AdapterError(f"no client tool call {call_id!r} awaits a result", code=ErrorCode.BAD_REQUEST,
                                   retryable=False)
            owner.client_calls.discard(call_id)
            owner.follow_up = True
            await self._send(wire.ClientToolResult(tool_call_id=call_id, result=output, is_error=is_error))
            self.emit(ToolResult(response_id=owner.id, call_id=call_id, output=output, is_error=is_error))
            owner.last_frame = self._last_frame = time.monotonic()
            self._end_if_signalled()

    async def update_context(self, update: ContextUpdate) -> None:
        async with self._lock:
            await self._send(wire.ContextualUpdate(text=context_update_text(update)))
            self.passages = list(update.passages)

    async def close_connection(self) -> None:
        self._hanging_up = True
        with contextlib.suppress(Exception):  # a broken socket must not keep the session usage back
            await self.transport.close(graceful=not self.ended)
        await self._emit_session_usage()

    # -- responses ------------------------------------------------------------------------------------
    def _begin(self, origin: Literal["text", "audio", "agent"]) -> _Response:
        now = time.monotonic()
        self._response = _Response(id=self.new_response_id(), origin=origin, started=now, last_frame=now)
        self._wake.set()  # the reader now has a deadline to keep
        return self._response

    def _active(self) -> _Response | None:
        response = self._response
        return response if response is not None and not response.done else None

    def _current(self) -> _Response:
        """The response an agent frame belongs to (one the agent started on its own, e.g. a greeting)."""
        return self._active() or self._begin("agent")

    def _finish(self, response: _Response) -> None:
        if response.done:
            return
        response.done = True
        self._finished = response
        if self._cut_response is response:
            self._cut_response = None
        if response.spoke:
            self.emit(AgentSpeechStopped(response_id=response.id))
        self.emit(ResponseDone(
            response_id=response.id, status="completed" if response.cut_by is None else "interrupted",
            conversational_intent=response.intent, target_language=response.target_language,
            retrieved_context=list(self.passages), final_text=" ".join(s for s in response.segments if s) or None))

    def _cut(self, *, by: Literal["caller", "vendor"], played_ms: float | None = None) -> None:
        """Report the active response interrupted; it stays open for its audio still arriving (``_cut_response``)."""
        response = self._active()
        if response is None or response is self._cut_response:
            return
        if self._cut_response is not None:
            self._finish(self._cut_response)
        if played_ms is None:
            played_ms = self.played_position(response.id)
        if played_ms is None:
            played_ms = response.audio_bytes / 2 / self.output_rate * 1000.0
        response.cut_by = by
        self.meter.cut()
        response.event_id = max(response.event_id or 0, self._last_event_id) if by == "caller" else response.event_id
        response.last_frame = time.monotonic()
        self.emit(Interrupted(response_id=response.id, by=by, played_ms=played_ms))
        self._cut_response = response
        self._response = None
        self._wake.set()

    def _for_frame(self, event_id: int | None) -> _Response:
        """The response an agent output frame belongs to: the cut one while its frames still arrive (a frame of a
        newer agent turn ends it), else the active one."""
        cut = self._cut_response
        if cut is not None:
            if event_id is None or event_id <= (cut.event_id or 0):
                return cut
            self._finish(cut)  # a newer turn's frame: the cut reply's audio has stopped
        return self._current()

    def _signalled_end(self, response: _Response) -> bool:
        """Whether the vendor's signals say ``response`` is over (module docstring, *End of a response*)."""
        if (self.settings.response_complete_event or response.client_calls or response.follow_up
                or response.cut_by is not None):
            return False
        if self.settings.text_only:
            return response.responded and not response.part_open
        return response.responded and response.aligned and _voiced(response)

    def _quiet_deadline(self, response: _Response) -> float | None:
        """The fallback end of a response whose closing signal the vendor does not send, else None."""
        if self.settings.response_complete_event or response.client_calls:
            return None
        if response.follow_up:  # the agent may say nothing after the tool's result
            waiting = True
        elif self.settings.text_only:
            waiting = response.part_stopped and not response.responded
        elif response.responded and response.spoke and response.aligned:
            # an alignment that never voices the whole message (the vendor's text normalization): a long fallback,
            # well past a pause inside a reply, instead of a stall
            return response.last_frame + max(3.0, 3 * self.settings.response_quiet_s)
        else:
            waiting = response.responded and response.spoke
        return response.last_frame + self.settings.response_quiet_s if waiting else None

    def _end_if_signalled(self) -> None:
        response = self._active()
        if response is not None and self._signalled_end(response):
            self._finish(response)

    # -- the reader -----------------------------------------------------------------------------------
    async def _read(self) -> None:
        receiving: asyncio.Future[str | bytes] | None = None
        try:
            while True:
                if receiving is None:
                    receiving = asyncio.ensure_future(self.transport.recv())
                woken = asyncio.ensure_future(self._wake.wait())
                try:
                    waiting: set[asyncio.Future[Any]] = {receiving, woken}
                    done, _ = await asyncio.wait(waiting, timeout=self._timeout(), return_when=asyncio.FIRST_COMPLETED)
                finally:  # also when the reader is cancelled: no waiter is left pending on the event
                    woken.cancel()
                self._wake.clear()
                if receiving not in done:
                    async with self._lock:
                        self._check_deadlines()
                    continue
                raw, receiving = receiving, None
                message = await self._parse(raw)
                if message is None:
                    return
                async with self._lock:
                    await self._handle(message)
        finally:
            if receiving is not None:
                receiving.cancel()

    def _timeout(self) -> float | None:
        """Seconds until the active response ends quietly or stalls, or the cut one ends (None: no deadline)."""
        deadlines = []
        if self._cut_response is not None:
            deadlines.append(self._cut_response.last_frame + self.settings.cut_quiet_s)
        response = self._active()
        if response is not None:
            deadlines.append(max(self._last_frame, response.started) + self.settings.idle_timeout_s)
            quiet = self._quiet_deadline(response)
            if quiet is not None:
                deadlines.append(quiet)
        return max(0.0, min(deadlines) - time.monotonic()) if deadlines else None

    def _check_deadlines(self) -> None:
        cut = self._cut_response
        if cut is not None and time.monotonic() >= cut.last_frame + self.settings.cut_quiet_s:
            self._finish(cut)
        response = self._active()
        if response is None:
            return
        now = time.monotonic()
        quiet = self._quiet_deadline(response)
        if quiet is not None and now >= quiet:
            self._finish(response)
        elif now >= max(self._last_frame, response.started) + self.settings.idle_timeout_s:
            raise AdapterError(f"stalled: no agent message for {self.settings.idle_timeout_s:g} s",
                               code=ErrorCode.STALLED)

    async def _parse(self, raw: asyncio.Future[str | bytes]) -> wire.ServerMessage | None:
        """The next message, or None when the conversation ended normally (we hung up, or the agent did — e.g. its
        end-call tool after a goodbye — with no response still awaited)."""
        try:
            message = wire.parse_server_message(raw.result())
        except ConnectionClosedOK:
            if self._hanging_up:
                return None
            async with self._lock:
                if self._cut_response is not None:
                    self._finish(self._cut_response)
                response = self._active()
                if response is not None and not response.has_output:
                    raise AdapterError("the agent ended the conversation before responding",
                                       code=ErrorCode.DISCONNECTED) from None
                if response is not None:
                    self._finish(response)
                self.emit(CallControl(kind="agent_hung_up", reason="the agent closed the conversation"))
            await self._emit_session_usage()
            self.finish()
            return None
        except ConnectionClosed as exc:
            raise close_error(exc) from None
        except wire.MalformedMessage as exc:
            raise AdapterError(redact(f"malformed frame from server: {exc}"), code=ErrorCode.MALFORMED) from None
        if self.trace is not None:
            self.trace.append(("recv", message.type))
        return message

    async def _handle(self, message: wire.ServerMessage) -> None:
        if isinstance(message, wire.Ping):
            await self._pong(message)
            return
        self._last_frame = time.monotonic()
        event_id = _event_id(message)
        if event_id is not None:
            self._last_event_id = max(self._last_event_id, event_id)
        if isinstance(message, wire.Audio) and self._trailing(message.audio_event):
            self.meter.heard(self._seconds(message.audio_event))
            return  # after the turn's last voiced character: nothing the caller would take for a new reply
        if isinstance(message, (wire.Audio, wire.AgentResponse, wire.AgentChatResponsePart)):
            response = self._for_frame(event_id)
            if event_id is not None:
                response.event_id = max(response.event_id or 0, event_id)
            response.last_frame = time.monotonic()
        if isinstance(message, wire.UserTranscript):
            self._on_user_transcript(message.user_transcription_event.user_transcript)
        elif isinstance(message, wire.VadScore):
            if message.vad_score_event.vad_score >= SPEECH_SCORE and not self._user_speaking:
                self._user_speaking = True
                self.emit(UserSpeechStarted())
        elif isinstance(message, wire.ClientToolCall):
            await self._on_tool_call(message.client_tool_call)
        elif isinstance(message, wire.AgentChatResponsePart):
            self._on_part(message.text_response_part)
        elif isinstance(message, wire.AgentResponse):
            self._on_agent_response(message.agent_response_event.agent_response, event_id)
        elif isinstance(message, wire.AgentResponseCorrection):
            self._on_correction(message.agent_response_correction_event)
        elif isinstance(message, wire.Audio):
            self._on_audio(message.audio_event)
        elif isinstance(message, wire.Interruption):
            interrupted = message.interruption_event.event_id
            active = self._active()
            if active is not None and active.has_output and (active.event_id or 0) <= interrupted:
                self._cut(by="vendor")
        elif isinstance(message, wire.AgentResponseComplete):
            active = self._active()
            if active is not None and active.has_output:
                self._finish(active)
        elif isinstance(message, wire.ClientError):
            raise client_error(message)
        if isinstance(message, (wire.Audio, wire.AgentResponse, wire.AgentChatResponsePart)):
            self._end_if_signalled()

    def _on_user_transcript(self, text: str) -> None:
        response = self._active()
        if response is None or response.origin != "text" or response.transcribed or response.has_output:
            self._cut(by="vendor")  # the server took a new caller turn while the agent was still answering
            response = self._begin("audio")
            if self._audio_since_turn:
                self.emit(UserSpeechStopped(response_id=response.id))
        response.transcribed = True
        self._user_speaking = False
        self._audio_since_turn = False
        self.emit(Transcript(response_id=response.id, role="user", text=text.strip()))

    async def _on_tool_call(self, call: wire.ClientToolCallPayload) -> None:
        response = self._current()
        if call.tool_name in self._client_tools:  # the engine answers it (send_tool_result)
            response.client_calls.add(call.tool_call_id)
            self.emit(ToolCall(response_id=response.id, call_id=call.tool_call_id, name=call.tool_name,
                               arguments=call.parameters, awaits_result=True))
            return
        self.emit(ToolCall(response_id=response.id, call_id=call.tool_call_id, name=call.tool_name,
                           arguments=call.parameters))
        if call.tool_name == INTENT_TOOL_NAME:
            response.intent, response.target_language = intent_from_arguments(call.parameters)
            result, is_error = TOOL_ACK, False
        else:
            result, is_error = f"unknown tool {call.tool_name}", True
        await self._send(wire.ClientToolResult(tool_call_id=call.tool_call_id, result=result, is_error=is_error))
        self.emit(ToolResult(response_id=response.id, call_id=call.tool_call_id, output=result))

    def _on_part(self, part: wire.TextResponsePart) -> None:
        response = self._for_frame(part.event_id)
        if part.type == "start":
            response.part_open = True
        elif part.type == "stop":
            response.part_open, response.part_stopped = False, True
        if part.type not in ("start", "stop") and part.text:  # an unknown kind is a delta (SDK)
            response.streamed.append(part.text)
            response.last_frame = time.monotonic()
            self.emit(TextDelta(response_id=response.id, text=part.text))

    def _on_agent_response(self, text: str, event_id: int | None = None) -> None:
        response = self._for_frame(event_id)
        if not response.streamed and text:
            self.emit(TextDelta(response_id=response.id, text=text))
        response.streamed = []
        response.segments.append(text.strip())
        response.responded = True
        response.follow_up = False
        response.last_frame = time.monotonic()

    def _on_correction(self, event: wire.AgentResponseCorrectionEvent) -> None:
        response = self._active()
        original = event.original_agent_response.strip()
        if response is not None and original in response.segments:
            response.segments[response.segments.index(original)] = event.corrected_agent_response.strip()

    def _trailing(self, event: wire.AudioEvent) -> bool:
        """Audio of the turn that just ended by its signals, voicing no further letter or digit (trailing silence, the
        closing punctuation) — also when it arrives after the caller's next message went out."""
        finished, active = self._finished, self._active()
        if finished is None or finished.cut_by is not None or not finished.aligned or self._cut_response is not None:
            return False
        if active is not None and active.event_id is not None:
            return False  # the newer turn's frames have begun: an older frame is not silently dropped
        return (event.event_id == finished.event_id
                and (event.alignment is None or not _alnum("".join(event.alignment.chars))))

    def _seconds(self, event: wire.AudioEvent) -> float:
        """How long an audio frame plays (its base64 length: 4 characters per 3 bytes, 2 bytes per sample)."""
        return len(event.audio_base_64) * 3 / 4 / 2 / self.output_rate

    def _on_audio(self, event: wire.AudioEvent) -> None:
        try:
            pcm = base64.b64decode(event.audio_base_64, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise AdapterError(f"malformed audio chunk: {exc}", code=ErrorCode.MALFORMED) from None
        response = self._for_frame(event.event_id)
        if response.cut_by is None:  # the caller hears it (a cut reply's late audio is not played)
            self.meter.heard(len(pcm) / 2 / self.output_rate)
        if not response.spoke and pcm:
            self.emit(AgentSpeechStarted(response_id=response.id))
        response.audio_bytes += len(pcm)
        if event.alignment is not None:
            response.aligned = True
            response.aligned_chars += _letters("".join(event.alignment.chars))
        response.last_frame = time.monotonic()
        rate = self.spec.audio.sample_rate
        self.emit(AudioDelta(response_id=response.id, pcm16=self.audio_out.push(pcm),
                             sample_rate=rate))

    # -- wire -----------------------------------------------------------------------------------------
    async def _send(self, message: BaseModel) -> None:
        await self.transport.send(message.model_dump(exclude_none=True))
        if self.trace is not None:
            self.trace.append(("send", wire.message_type(message)))

    async def _recv(self, timeout: float | None) -> wire.ServerMessage:
        raw = await (self.transport.recv() if timeout is None else asyncio.wait_for(self.transport.recv(), timeout))
        message = wire.parse_server_message(raw)
        if self.trace is not None:
            self.trace.append(("recv", message.type))
        return message

    async def _pong(self, message: wire.Ping) -> None:
        await self._send(wire.Pong(event_id=message.ping_event.event_id))
        if message.ping_event.ping_ms:
            self._last_ping_ms = float(message.ping_event.ping_ms)

    async def _emit_session_usage(self) -> None:
        if self._session_usage_sent:
            return
        self._session_usage_sent = True
        usage = Usage(
            scope="session",
            billed_minutes=self.meter.billed_minutes(),
            vendor_latency_ms={"elevenlabs_ping_ms": self._last_ping_ms} if self._last_ping_ms else {},
        )
        if self._cost_reader is not None and self.conversation_id:
            try:
                usage.vendor_cost_usd = await self._cost_reader(self.conversation_id)
            except AdapterError as exc:
                self._emit_non_fatal(exc)
        self.emit(usage)

    def _emit_non_fatal(self, exc: AdapterError) -> None:
        self.emit(ErrorEvent(message=str(exc), code=exc.code, fatal=False, retryable=exc.retryable,
                             retry_after_s=exc.retry_after_s, vendor_code=exc.vendor_code))


def _letters(text: str) -> int:
    """The non-blank characters of ``text`` (what an alignment and a message are compared by)."""
    return sum(1 for char in text if not char.isspace())


def _alnum(text: str) -> str:
    return "".join(char for char in text.lower() if char.isalnum())


def _voiced(response: _Response) -> bool:
    """Whether the alignment has voiced the whole message: at least as many non-blank characters (a TTS that
    normalizes text — "8" → "eight", "Dr." → "Doctor" — voices more, not fewer)."""
    return response.aligned_chars >= _letters(" ".join(response.segments))


def _event_id(message: wire.ServerMessage) -> int | None:
    if isinstance(message, wire.Audio):
        return message.audio_event.event_id
    if isinstance(message, wire.AgentResponse):
        return message.agent_response_event.event_id
    if isinstance(message, wire.AgentChatResponsePart):
        return message.text_response_part.event_id
    if isinstance(message, wire.UserTranscript):
        return message.user_transcription_event.event_id
    return None
