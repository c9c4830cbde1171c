"""One Deepgram Voice Agent conversation on one agent socket, as a ``StreamingSession``.

The socket is opened and configured once (``Welcome`` → ``Settings`` → ``SettingsApplied``, see
``adapters.deepgram_agent.adapter``); then every user turn goes over it and Deepgram keeps the conversation:

* text turn — ``InjectUserMessage``; ``UserTurnSent`` once it is written (the zero point);
* audio — binary linear16 frames at the session rate, streamed as they come; Deepgram detects the end of the
  caller's turn itself (server VAD): ``UserStartedSpeaking`` → ``UserSpeechStarted``; the caller's
  ``ConversationText`` (sent once Deepgram closed the turn; it has no speech-stopped message of its own) →
  ``UserSpeechStopped`` + ``Transcript(role="user")``. ``end_input`` sends nothing (Deepgram has no commit; its
  ``ForceEndTurn`` would replace the vendor's own endpointing) and only starts the stall watch;
* agent — ``ConversationText(assistant)`` → ``TextDelta``; ``AgentStartedSpeaking`` (or the first audio
  frame) → ``AgentSpeechStarted``; binary frames → ``AudioDelta``; ``AgentAudioDone`` → ``AgentSpeechStopped``,
  ``Usage`` and ``ResponseDone``. With audio output off the response ends on the agent's (default-behaviour)
  ``ConversationText`` and the audio that still follows is dropped;
* the ``set_conversational_intent`` client-side function — ``FunctionCallRequest`` → ``ToolCall``, answered at
  once with ``FunctionCallResponse`` → ``ToolResult``; its arguments label the response.

Deepgram has no response ids, so responses are delimited by the order of events: a response opens with the
user turn that asks for it (or with agent output nobody asked for, e.g. a greeting) and closes on its end
marker. After an interruption, agent output is dropped until the next user turn's reply starts (its assistant
text or ``AgentStartedSpeaking``), so audio still in flight is never credited to the next response.

Usage: per response the agent audio seconds and Deepgram's own latencies in ms (``deepgram_total_latency``,
``deepgram_ttt_latency``, ``deepgram_tts_latency`` from ``AgentStartedSpeaking``; ``deepgram_report_*`` from a
``LatencyReport`` that came before the response ended); per session the billed connection minutes, the caller
audio seconds and the mean of each ``LatencyReport`` figure that arrived after its response had ended.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from dataclasses import dataclass, field
from typing import Literal

from websockets.exceptions import ConnectionClosed

from adapters._kit.intent_tool import INTENT_TOOL_NAME, intent_from_arguments
from adapters._kit.prompts import instructions_with_passages
from adapters._kit.ws import disconnect_error
from adapters.deepgram_agent import wire
from adapters.deepgram_agent.connection import AgentSocket, safe_message
from bench.protocol import (
    AdapterError,
    AgentSpeechStarted,
    AgentSpeechStopped,
    AudioDelta,
    Capabilities,
    ContextUpdate,
    ErrorCode,
    ErrorEvent,
    Interrupted,
    ResponseDone,
    SessionReady,
    SessionSpec,
    StreamingSession,
    TextDelta,
    ToolCall,
    ToolResult,
    Transcript,
    Usage,
    UserSpeechStarted,
    UserSpeechStopped,
    UserTurnSent,
)

REPORT_FIELDS = ("stt_latency", "ttt_token_latency", "ttt_text_latency", "ttt_tool_latency", "ttt_thinking_latency",
                 "tts_latency", "total_latency")
#: conversational behaviours of an assistant ConversationText that are not the reply itself
FILLER_BEHAVIOURS = frozenset({"backchannel", "presence_check", "filler"})


def error_from_server(message: wire.Error) -> AdapterError:
    """The normalized error for a Deepgram ``Error`` message (every one ends the session)."""
    code = (message.code or "").upper()
    text = safe_message(f"Deepgram Error {message.code or '(no code)'}: {message.description}")
    if code in wire.AUTH_ERROR_CODES:
        return AdapterError(text, code=ErrorCode.AUTH, retryable=False, vendor_code=message.code)
    if code in wire.RATE_LIMIT_ERROR_CODES:
        return AdapterError(text, code=ErrorCode.RATE_LIMITED, vendor_code=message.code)
    if code in wire.CLIENT_ERROR_CODES:
        return AdapterError(text, code=ErrorCode.BAD_REQUEST, retryable=False, vendor_code=message.code)
    return AdapterError(text, code=ErrorCode.SERVER_ERROR, vendor_code=message.code or None)


@dataclass
class _Response:
    """What one agent response has produced so far."""

    id: str
    #: ``text`` (InjectUserMessage), ``audio`` (caller speech) or ``agent`` (output nobody asked for)
    origin: Literal["text", "audio", "agent"]
    #: a response is awaited (the stall watch runs) from this monotonic time on
    awaited_since: float | None = None
    user_speech_stopped: bool = False
    texts: list[str] = field(default_factory=list)
    intent: str | None = None
    target_language: str | None = None
    speaking: bool = False
    audio_bytes: int = 0
    started_speaking: wire.AgentStartedSpeaking | None = None
    latency_report: wire.LatencyReport | None = None
    done: bool = False

    @property
    def has_output(self) -> bool:
        return bool(self.texts or self.speaking or self.audio_bytes)


AUDIO_MARK = "<audio>"


@dataclass
class SessionTrace:
    """What a session saw on the wire, for tests and debugging (message types in arrival order; a run of
    binary frames counts once as ``<audio>``)."""

    wire: list[str] = field(default_factory=list)
    sent: list[str] = field(default_factory=list)

    def received(self, label: str) -> None:
        if not (label == AUDIO_MARK and self.wire and self.wire[-1] == AUDIO_MARK):
            self.wire.append(label)


class DeepgramSession(StreamingSession):
    """A Deepgram agent conversation (see the module docstring).

    ``interrupt()``: the Voice Agent protocol has no cancel message — Deepgram stops its reply when it hears
    the caller (``UserStartedSpeaking`` while the agent speaks is its barge-in). So ``interrupt()`` does what a
    phone does when the caller talks over the agent: it stops playback on the caller's side at once (the rest
    of the reply's audio is dropped), reports ``Interrupted(played_ms=<audio delivered so far>)`` and
    ``ResponseDone(status="interrupted")``; the caller's speech pushed with ``push_audio`` (or the next
    ``send_text``) is what makes Deepgram stop. A barge-in Deepgram detects itself is reported the same way
    with ``by="vendor"``.
    """

    def __init__(self, socket: AgentSocket, spec: SessionSpec, capabilities: Capabilities, *,
                 passages: list[str], instructions: str | None, audio_output: bool, keepalive_s: float,
                 vendor_session_id: str | None = None, trace: SessionTrace | None = None,
                 function_ack: str = "ok"):
        super().__init__(capabilities)
        self.socket = socket
        self.spec = spec
        self.trace = trace or SessionTrace()
        self.passages = list(passages)
        self.instructions = instructions
        self.audio_output = audio_output
        self.keepalive_s = keepalive_s
        self.function_ack = function_ack
        self.connected_at = time.monotonic()
        self.input_audio_bytes = 0
        self._current: _Response | None = None
        #: after an interruption: drop agent output until the next user turn's reply starts
        self._stale_output = False
        self._stale_turn_started = False
        self._late_reports: list[wire.LatencyReport] = []
        self._last_frame_at = time.monotonic()
        self.emit(SessionReady(vendor_session_id=vendor_session_id))

    def start(self) -> None:
        self.spawn(self._read(), name="deepgram-reader")
        self.spawn(self._keepalive(), name="deepgram-keepalive")
        self.spawn(self._watch_stall(), name="deepgram-stall-watch")

    # -- Session ------------------------------------------------------------------------------------
    async def send_text(self, text: str) -> None:
        self._check_open()
        self._interrupt_open_response(by="caller")
        response = self._begin_user_turn("text")
        await self._send(wire.InjectUserMessage(content=text))
        response.awaited_since = time.monotonic()
        self.emit(UserTurnSent(response_id=response.id))

    async def push_audio(self, frame: bytes) -> None:
        self._check_open()
        try:
            await self.socket.send_audio(frame)
        except ConnectionClosed as exc:
            raise disconnect_error(exc) from None
        self.input_audio_bytes += len(frame)

    async def end_input(self) -> None:
        """The caller stopped speaking: Deepgram decides the end of the turn itself (server VAD); from now on a
        silent agent counts as a stall."""
        self._check_open()
        response = self._current
        if response is None or response.has_output:
            response = self._begin_user_turn("audio")
        if response.awaited_since is None:
            response.awaited_since = time.monotonic()

    async def interrupt(self) -> None:
        """Stop the agent's reply on the caller's side (see the class docstring)."""
        self._check_open()
        self._interrupt_open_response(by="caller")

    async def update_context(self, update: ContextUpdate) -> None:
        """New knowledge for the next replies: the whole think prompt is replaced with ``UpdatePrompt``."""
        self._check_open()
        instructions = update.instructions if update.instructions is not None else self.instructions
        await self._send(wire.UpdatePrompt(prompt=instructions_with_passages(update.passages, instructions)))
        self.passages = list(update.passages)
        self.instructions = instructions

    async def close_connection(self) -> None:
        usage = Usage(scope="session", billed_minutes=round((time.monotonic() - self.connected_at) / 60.0, 5),
                      input_audio_seconds=round(self.spec.audio.ms_for_bytes(self.input_audio_bytes) / 1000.0, 3),
                      vendor_latency_ms=_mean_report_ms(self._late_reports))
        self.emit(usage)
        await self.socket.close()

    # -- responses ----------------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self.ended or self._closed:
            raise AdapterError("the Deepgram session has ended", code=ErrorCode.NO_RESPONSE, retryable=False)

    def _begin_user_turn(self, origin: Literal["text", "audio"], response: _Response | None = None) -> _Response:
        """The response the caller's new turn asks for."""
        response = response or _Response(id=self.new_response_id(), origin=origin)
        self._current = response
        if self._stale_output:
            self._stale_turn_started = True
        return response

    def _response_for_agent_output(self) -> _Response | None:
        """The response agent output belongs to (opening one for output nobody asked for), or None while the
        output is a cut-off reply's leftovers."""
        if self._stale_output:
            return None
        if self._current is None or self._current.done:
            self._current = _Response(id=self.new_response_id(), origin="agent")
        return self._current

    def _interrupt_open_response(self, *, by: Literal["caller", "vendor"]) -> None:
        response = self._current
        if response is None or response.done or not (response.has_output or response.awaited_since):
            return
        self._stale_output = True
        self._stale_turn_started = False
        self._finish(response, "interrupted", by=by)

    def _finish(self, response: _Response, status: Literal["completed", "interrupted"], *,
                by: Literal["caller", "vendor"] = "caller") -> None:
        if response.done:
            return
        response.done = True
        played_ms = self.spec.audio.ms_for_bytes(response.audio_bytes)
        if status == "interrupted":
            self.emit(Interrupted(response_id=response.id, played_ms=round(played_ms, 1), by=by))
        if response.speaking:
            self.emit(AgentSpeechStopped(response_id=response.id))
        self.emit(Usage(scope="response", response_id=response.id,
                        output_audio_seconds=round(played_ms / 1000.0, 3) if self.audio_output else None,
                        vendor_latency_ms=_response_latencies_ms(response)))
        final_text = " ".join(t.strip() for t in response.texts if t.strip()) or None
        self.emit(ResponseDone(response_id=response.id, status=status, conversational_intent=response.intent,
                               target_language=response.target_language, retrieved_context=list(self.passages),
                               final_text=final_text))
        if self._current is response:
            self._current = None

    # -- receiving ----------------------------------------------------------------------------------
    async def _read(self) -> None:
        while True:
            try:
                frame = await self.socket.recv()
            except ConnectionClosed as exc:
                if self._closed:
                    return
                raise disconnect_error(exc) from None
            except wire.MalformedFrame as exc:
                raise AdapterError(safe_message(f"malformed Deepgram frame: {exc}"), code=ErrorCode.MALFORMED,
                                   retryable=False) from None
            self._last_frame_at = time.monotonic()
            if isinstance(frame, bytes):
                self.trace.received(AUDIO_MARK)
                self._on_agent_audio(frame)
            else:
                self.trace.received(frame.type)
                await self._on_message(frame)

    def _on_agent_audio(self, pcm: bytes) -> None:
        if not self.audio_output:
            return
        response = self._response_for_agent_output()
        if response is None:
            return
        self._agent_speech_started(response)
        response.audio_bytes += len(pcm)
        self.emit(AudioDelta(response_id=response.id, pcm16=pcm, sample_rate=self.spec.audio.sample_rate))

    def _agent_speech_started(self, response: _Response) -> None:
        if not response.speaking:
            response.speaking = True
            self.emit(AgentSpeechStarted(response_id=response.id))

    async def _on_message(self, message: wire.Message) -> None:
        if isinstance(message, wire.UserStartedSpeaking):
            self._on_user_started_speaking()
        elif isinstance(message, wire.ConversationText):
            if message.role == "user":
                self._on_user_text(message.content)
            else:
                self._on_agent_text(message)
        elif isinstance(message, wire.FunctionCallRequest):
            await self._on_function_call(message)
        elif isinstance(message, wire.AgentStartedSpeaking):
            self._on_agent_started_speaking(message)
        elif isinstance(message, wire.AgentAudioDone):
            self._on_agent_audio_done()
        elif isinstance(message, wire.LatencyReport):
            self._on_latency_report(message)
        elif isinstance(message, wire.Error):
            raise error_from_server(message)
        elif isinstance(message, wire.Warning):
            self.emit(ErrorEvent(message=safe_message(f"Deepgram Warning {message.code}: {message.description}"),
                                 code=ErrorCode.SERVER_ERROR, fatal=False, retryable=False,
                                 vendor_code=message.code or None))
        elif isinstance(message, wire.InjectionRefused):
            raise AdapterError(safe_message(f"Deepgram refused the user message: {message.message}"),
                               code=ErrorCode.BAD_REQUEST, retryable=True, vendor_code="InjectionRefused")
        # Welcome, SettingsApplied, PromptUpdated, AgentThinking, History, FunctionCallCancelled and unknown
        # types carry nothing to normalize.

    def _clear_stale_if_new_reply(self) -> None:
        if self._stale_output and self._stale_turn_started:
            self._stale_output = False

    def _on_user_started_speaking(self) -> None:
        """The caller speaks; over the agent's reply this is Deepgram's barge-in (it stops the reply)."""
        current = self._current
        barged = current if current is not None and not current.done and current.has_output else None
        if barged is None and current is not None and not current.done:
            if self._stale_output:
                self._stale_turn_started = True
            self.emit(UserSpeechStarted(response_id=current.id))
            return
        upcoming = _Response(id=self.new_response_id(), origin="audio")
        self.emit(UserSpeechStarted(response_id=upcoming.id))
        if barged is not None:
            self._interrupt_open_response(by="vendor")
        self._begin_user_turn("audio", upcoming)

    def _on_user_text(self, text: str) -> None:
        current = self._current
        if current is not None and not current.done and current.has_output:
            self._interrupt_open_response(by="vendor")
            current = None
        if current is None or current.done:
            current = self._begin_user_turn("audio")
        elif self._stale_output:
            self._stale_turn_started = True
        if current.origin == "audio" and not current.user_speech_stopped:
            current.user_speech_stopped = True
            self.emit(UserSpeechStopped(response_id=current.id))
        if current.awaited_since is None:
            current.awaited_since = time.monotonic()
        self.emit(Transcript(response_id=current.id, role="user", text=text, final=True))

    def _on_agent_text(self, message: wire.ConversationText) -> None:
        self._clear_stale_if_new_reply()
        response = self._response_for_agent_output()
        if response is None:
            return
        text = message.content if not response.texts else " " + message.content
        response.texts.append(message.content)
        self.emit(TextDelta(response_id=response.id, text=text))
        if not self.audio_output and message.conversational_behavior not in FILLER_BEHAVIOURS:
            self._finish(response, "completed")

    async def _on_function_call(self, message: wire.FunctionCallRequest) -> None:
        response = self._response_for_agent_output()
        for call in message.functions:
            arguments = call.parsed_arguments()
            if response is not None:
                self.emit(ToolCall(response_id=response.id, call_id=call.id, name=call.name, arguments=arguments))
                if call.name == INTENT_TOOL_NAME:
                    response.intent, response.target_language = intent_from_arguments(arguments)
            if call.client_side:
                content = json.dumps({"result": self.function_ack})
                await self._send(wire.FunctionCallResponse(id=call.id, name=call.name, content=content))
                if response is not None:
                    self.emit(ToolResult(response_id=response.id, call_id=call.id, output=content))

    def _on_agent_started_speaking(self, message: wire.AgentStartedSpeaking) -> None:
        if not self.audio_output:
            return
        self._clear_stale_if_new_reply()
        response = self._response_for_agent_output()
        if response is not None:
            response.started_speaking = response.started_speaking or message
            self._agent_speech_started(response)

    def _on_agent_audio_done(self) -> None:
        if self._stale_output:
            self._stale_output = False  # the end of the cut-off reply's audio
            return
        response = self._current
        if response is not None and not response.done and response.has_output and self.audio_output:
            self._finish(response, "completed")

    def _on_latency_report(self, report: wire.LatencyReport) -> None:
        response = self._current
        if response is not None and not response.done and response.has_output:
            response.latency_report = report
        else:
            self._late_reports.append(report)

    # -- background -----------------------------------------------------------------------------------
    async def _send(self, message: wire.Message) -> None:
        try:
            await self.socket.send(message)
        except ConnectionClosed as exc:
            raise disconnect_error(exc) from None
        self.trace.sent.append(message.type)

    async def _keepalive(self) -> None:
        """Deepgram closes a socket that carries neither audio nor messages for a while."""
        with contextlib.suppress(ConnectionClosed):
            while True:
                await asyncio.sleep(self.keepalive_s)
                await self.socket.send(wire.KeepAlive())

    async def _watch_stall(self) -> None:
        idle_s = self.spec.idle_timeout_s
        while True:
            await asyncio.sleep(min(0.25, idle_s / 4))
            response = self._current
            if response is None or response.done or response.awaited_since is None:
                continue
            quiet_since = max(self._last_frame_at, response.awaited_since)
            if time.monotonic() - quiet_since >= idle_s:
                raise AdapterError(f"Deepgram sent nothing for {idle_s:g} s while a response was awaited",
                                   code=ErrorCode.STALLED)


def _response_latencies_ms(response: _Response) -> dict[str, float]:
    """Deepgram's own latency figures of one response, converted from seconds to ms."""
    out: dict[str, float] = {}
    speaking = response.started_speaking
    if speaking is not None:
        for name, value in (("total", speaking.total_latency), ("ttt", speaking.ttt_latency),
                            ("tts", speaking.tts_latency)):
            if value is not None:
                out[f"deepgram_{name}_latency"] = value * 1000.0
    report = response.latency_report
    if report is not None:
        out.update(_report_ms(report))
        fallback = {"deepgram_total_latency": report.total_latency, "deepgram_tts_latency": report.tts_latency,
                    "deepgram_ttt_latency": report.ttt_text_latency or report.ttt_token_latency}
        for key, value in fallback.items():
            if key not in out and value is not None:
                out[key] = value * 1000.0
    return {k: round(v, 3) for k, v in out.items()}


def _report_ms(report: wire.LatencyReport) -> dict[str, float]:
    return {f"deepgram_report_{name}": getattr(report, name) * 1000.0 for name in REPORT_FIELDS
            if getattr(report, name) is not None}


def _mean_report_ms(reports: list[wire.LatencyReport]) -> dict[str, float]:
    """The mean of each ``LatencyReport`` figure over ``reports`` (ms)."""
    sums: dict[str, list[float]] = {}
    for report in reports:
        for key, value in _report_ms(report).items():
            sums.setdefault(key, []).append(value)
    return {key: round(sum(values) / len(values), 3) for key, values in sums.items()}
