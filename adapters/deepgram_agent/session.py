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
marker. An interrupted response stays open for the agent's audio that still arrives — it is emitted under the
cut response's id, never dropped, so the engine measures when the agent's own audio stopped — and ends
(``ResponseDone(status="interrupted")``) at ``AgentAudioDone``, when the next reply starts (its assistant text or
``AgentStartedSpeaking``), or after ``cut_quiet_s`` without agent audio (Deepgram sends no end marker for a reply
it cut off).

Client tools (``SessionSpec.tools``) are client-side functions of the think settings (no ``endpoint``); a
``FunctionCallRequest`` of one → ``ToolCall(awaits_result=True)``, answered by ``send_tool_result`` with
``FunctionCallResponse{id,name,content}``.

Usage: per response the agent audio seconds and Deepgram's own latencies in ms (``deepgram_total_latency``,
``deepgram_ttt_latency``, ``deepgram_tts_latency`` from ``AgentStartedSpeaking``; ``deepgram_report_*`` from a
``LatencyReport`` that came before the response ended); per session the billed call minutes, the caller audio
seconds and the mean of each ``LatencyReport`` figure that arrived after its response had ended. Deepgram bills
the Voice Agent per connected minute and a caller stays on the line while the answer plays, so the billed minutes
are the call's duration as heard (``adapters._kit.call_meter``: connect to the end of the last answer's playout,
plus the configured endpointing per text turn), never the socket's open time alone — which ends right after the
last audio byte and understated a turn's bill about five-fold.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from dataclasses import dataclass, field
from typing import Literal

from websockets.exceptions import ConnectionClosed

from adapters._kit.call_meter import CallMeter
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
    #: interrupted: ``Interrupted`` was reported, the response ends when the agent's audio has stopped
    cut: bool = False
    cut_by: Literal["caller", "vendor"] = "caller"
    last_audio_at: float = 0.0
    client_calls: set[str] = field(default_factory=set)

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

    ``interrupt(played_ms)``: the Voice Agent protocol has no cancel message (and no truncation) — Deepgram stops
    its reply when it hears the caller (``UserStartedSpeaking`` while the agent speaks is its barge-in). So
    ``interrupt()`` reports ``Interrupted(played_ms=<what the caller heard>)`` and keeps emitting the audio Deepgram
    still sends (see the module docstring); the caller's speech pushed with ``push_audio`` (or the next
    ``send_text``) is what makes Deepgram stop. A barge-in Deepgram detects itself is reported the same way with
    ``by="vendor"``.
    """

    def __init__(self, socket: AgentSocket, spec: SessionSpec, capabilities: Capabilities, *,
                 passages: list[str], instructions: str | None, audio_output: bool, keepalive_s: float,
                 vendor_session_id: str | None = None, trace: SessionTrace | None = None,
                 function_ack: str = "ok", cut_quiet_s: float = 0.5, endpointing_s: float = 0.0):
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
        #: the call's billed duration (the line stays open while the answer plays)
        self.meter = CallMeter(endpointing_s=endpointing_s, opened=self.connected_at)
        self.input_audio_bytes = 0
        self.cut_quiet_s = cut_quiet_s
        self.client_tools = {tool.name for tool in spec.tools}
        self._current: _Response | None = None
        #: an interrupted response whose audio may still arrive (see the module docstring)
        self._cut: _Response | None = None
        self._cut_wake = asyncio.Event()
        self._late_reports: list[wire.LatencyReport] = []
        self._call_names: dict[str, str] = {}
        self._last_frame_at = time.monotonic()
        self.emit(SessionReady(vendor_session_id=vendor_session_id))

    def start(self) -> None:
        self.spawn(self._read(), name="deepgram-reader")
        self.spawn(self._keepalive(), name="deepgram-keepalive")
        self.spawn(self._watch_stall(), name="deepgram-stall-watch")
        self.spawn(self._end_quiet_cuts(), name="deepgram-cut-watch")

    # -- Session ------------------------------------------------------------------------------------
    async def send_text(self, text: str) -> None:
        self._check_open()
        self._interrupt_open_response(by="caller")
        response = self._begin_user_turn("text")
        self.meter.text_turn()
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

    async def interrupt(self, played_ms: float | None = None) -> None:
        """Report the barge-in (see the class docstring); the audio still arriving is emitted."""
        self._check_open()
        self._interrupt_open_response(by="caller", played_ms=played_ms)

    async def send_tool_result(self, call_id: str, output: str, *, is_error: bool = False) -> None:
        """Answer a client function call with ``FunctionCallResponse``."""
        self._check_open()
        owner = next((r for r in (self._current, self._cut) if r is not None and call_id in r.client_calls), None)
        if owner is None:
            raise AdapterError(f"no client function call {call_id!r} awaits a result", code=ErrorCode.BAD_REQUEST,
                               retryable=False)
        owner.client_calls.discard(call_id)
        name = self._call_names.pop(call_id, "")
        await self._send(wire.FunctionCallResponse(id=call_id, name=name, content=output))
        self.emit(ToolResult(response_id=owner.id, call_id=call_id, output=output, is_error=is_error))
        if owner.awaited_since is not None:
            owner.awaited_since = time.monotonic()

    async def update_context(self, update: ContextUpdate) -> None:
        """New knowledge for the next replies: the whole think prompt is replaced with ``UpdatePrompt``."""
        self._check_open()
        instructions = update.instructions if update.instructions is not None else self.instructions
        await self._send(wire.UpdatePrompt(prompt=instructions_with_passages(update.passages, instructions)))
        self.passages = list(update.passages)
        self.instructions = instructions

    async def close_connection(self) -> None:
        self._end_cut()
        usage = Usage(scope="session", billed_minutes=self.meter.billed_minutes(),
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
        return response

    def _response_for_agent_output(self) -> _Response:
        """The response agent output belongs to (opening one for output nobody asked for)."""
        if self._current is None or self._current.done:
            self._current = _Response(id=self.new_response_id(), origin="agent")
        return self._current

    def _interrupt_open_response(self, *, by: Literal["caller", "vendor"], played_ms: float | None = None) -> None:
        """Report the cut of the open response; it stays open for the audio still in flight (``_cut``)."""
        response = self._current
        if response is None or response.done or not (response.has_output or response.awaited_since):
            return
        self._end_cut()  # an earlier cut response: its audio has surely stopped by now
        if played_ms is None:
            played_ms = self.played_position(response.id)
        if played_ms is None:
            played_ms = self.spec.audio.ms_for_bytes(response.audio_bytes)
        response.cut, response.cut_by = True, by
        response.last_audio_at = time.monotonic()
        self.meter.cut()
        self.emit(Interrupted(response_id=response.id, played_ms=round(played_ms, 1), by=by))
        self._current = None
        self._cut = response
        self._cut_wake.set()

    def _end_cut(self) -> None:
        """The interrupted response's audio has stopped: it ends now."""
        cut, self._cut = self._cut, None
        if cut is not None:
            self._finish(cut, "interrupted")

    def _finish(self, response: _Response, status: Literal["completed", "interrupted"]) -> None:
        if response.done:
            return
        response.done = True
        played_ms = self.spec.audio.ms_for_bytes(response.audio_bytes)
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
        cut = self._cut
        if cut is None:  # the caller hears it (and the line stays open), reported or not
            self.meter.heard(self.spec.audio.ms_for_bytes(len(pcm)) / 1000.0)
        if not self.audio_output:
            return
        if cut is not None:  # the interrupted reply is still talking: its audio is the stop-time evidence
            cut.last_audio_at = time.monotonic()
            cut.audio_bytes += len(pcm)
            self.emit(AudioDelta(response_id=cut.id, pcm16=pcm, sample_rate=self.spec.audio.sample_rate))
            return
        response = self._response_for_agent_output()
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

    def _on_user_started_speaking(self) -> None:
        """The caller speaks; over the agent's reply this is Deepgram's barge-in (it stops the reply)."""
        current = self._current
        barged = current if current is not None and not current.done and current.has_output else None
        if barged is None and current is not None and not current.done:
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
        if current.origin == "audio" and not current.user_speech_stopped:
            current.user_speech_stopped = True
            self.emit(UserSpeechStopped(response_id=current.id))
        if current.awaited_since is None:
            current.awaited_since = time.monotonic()
        self.emit(Transcript(response_id=current.id, role="user", text=text, final=True))

    def _on_agent_text(self, message: wire.ConversationText) -> None:
        self._end_cut()  # the next reply starts
        response = self._response_for_agent_output()
        text = message.content if not response.texts else " " + message.content
        response.texts.append(message.content)
        self.emit(TextDelta(response_id=response.id, text=text))
        if not self.audio_output and message.conversational_behavior not in FILLER_BEHAVIOURS:
            self._finish(response, "completed")

    async def _on_function_call(self, message: wire.FunctionCallRequest) -> None:
        response = self._response_for_agent_output()
        for call in message.functions:
            arguments = call.parsed_arguments()
            if call.client_side and call.name in self.client_tools:  # the engine answers (send_tool_result)
                response.client_calls.add(call.id)
                self._call_names[call.id] = call.name
                self.emit(ToolCall(response_id=response.id, call_id=call.id, name=call.name, arguments=arguments,
                                   awaits_result=True))
                continue
            self.emit(ToolCall(response_id=response.id, call_id=call.id, name=call.name, arguments=arguments))
            if call.name == INTENT_TOOL_NAME:
                response.intent, response.target_language = intent_from_arguments(arguments)
            if call.client_side:
                content = json.dumps({"result": self.function_ack})
                await self._send(wire.FunctionCallResponse(id=call.id, name=call.name, content=content))
                self.emit(ToolResult(response_id=response.id, call_id=call.id, output=content))

    def _on_agent_started_speaking(self, message: wire.AgentStartedSpeaking) -> None:
        if not self.audio_output:
            return
        self._end_cut()  # the next reply starts
        response = self._response_for_agent_output()
        response.started_speaking = response.started_speaking or message
        self._agent_speech_started(response)

    def _on_agent_audio_done(self) -> None:
        if self._cut is not None:
            self._end_cut()  # the end of the cut-off reply's audio
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

    async def _end_quiet_cuts(self) -> None:
        """An interrupted reply with no agent audio for ``cut_quiet_s`` has stopped (Deepgram sends no marker)."""
        while True:
            cut = self._cut
            if cut is None:
                self._cut_wake.clear()
                await self._cut_wake.wait()
                continue
            remaining = cut.last_audio_at + self.cut_quiet_s - time.monotonic()
            if remaining <= 0:
                if self._cut is cut:
                    self._end_cut()
                continue
            await asyncio.sleep(remaining)

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
