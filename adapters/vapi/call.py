"""One Vapi call per conversation on the ``vapi.websocket`` transport.

``open`` creates the call (``POST /call`` with the inline assistant and ``transport: {provider:
"vapi.websocket", audioFormat: pcm_s16le}``) and connects to its ``transport.websocketCallUrl``. On that socket
binary frames are PCM16 audio both ways and text frames JSON: the caller's text turns go out as ``add-message``
(``UserTurnSent`` once written), caller audio as PCM (Vapi's own VAD ends the turn: ``speech-update`` of the user
becomes ``UserSpeechStarted`` / ``UserSpeechStopped``, its final ``transcript`` opens the response), and the
agent's side comes back as ``model-output`` → ``TextDelta``, binary → ``AudioDelta``, ``tool-calls`` /
``tool-calls-result`` → ``ToolCall`` / ``ToolResult``, ``transcript`` → ``Transcript``, ``speech-update`` →
``AgentSpeechStarted`` / ``AgentSpeechStopped``. A response ends at the assistant's ``speech-update stopped``
once its final transcript is in (or ``final_transcript_wait_s`` later). ``user-interrupted`` (Vapi's barge-in)
and ``interrupt(played_ms)`` (``control: mute-assistant``, lifted again before the caller's next turn) report
``Interrupted`` at once; the audio the assistant still sends for it is emitted under it (the engine measures the
stop time from it) until it drains (the assistant's ``speech-update stopped`` or the caller's next turn), then
``ResponseDone(status="interrupted")``.

Call control: ``transfer-update`` → ``CallControl(transfer_requested, target=<number / SIP URI / assistant>)``; a
``status-update`` ``ended`` whose ``endedReason`` says the assistant ended the call (``assistant-ended-call…``,
``assistant-said-end-call-phrase``) or forwarded it → ``CallControl(agent_hung_up / transfer_requested)`` after
the response it was giving, and the session ends normally when the socket closes. Otherwise, when the socket
closes mid-conversation the call's ``endedReason`` (``GET /call/{id}``) decides the error code.
``aclose`` hangs up and reads the ended call back for its cost: ``Usage(scope="session")`` with ``cost`` (USD),
the billed minutes, the audio both ways and ``artifact.performanceMetrics`` averages (milliseconds, as
``vapi_*_latency``). The billed minutes are the call's duration as heard (``adapters._kit.call_meter``: connect to
the end of the last answer's playout, plus ``billing_endpointing_ms`` per text turn) or Vapi's own platform
minutes when those are longer: Vapi bills by the minute and a caller stays on the line while the answer plays.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any, Literal

from websockets.exceptions import ConnectionClosed

from adapters._kit.call_meter import CallMeter
from adapters._kit.prompts import instructions_with_passages as assistant_prompt
from adapters._kit.ws import WebsocketTransport, disconnect_error
from adapters.custom_llm import TurnContext
from adapters.vapi.assistant import SessionSetup, assistant_overrides
from adapters.vapi.response import ResponseState
from adapters.vapi.wire import (
    AGENT_HANGUP_REASONS,
    AGENT_TRANSFER_REASONS,
    AddMessage,
    AudioFormat,
    CallRecord,
    Control,
    CreateCallRequest,
    Hangup,
    MalformedMessage,
    ModelOutput,
    OpenAiMessage,
    SpeechUpdate,
    StatusUpdate,
    ToolCalls,
    ToolCallsResult,
    TranscriptMessage,
    TransferUpdate,
    TransportMessage,
    TransportSpec,
    UserInterrupted,
    parse_transport_message,
)
from bench.protocol import (
    AdapterError,
    AgentSpeechStarted,
    AgentSpeechStopped,
    AudioDelta,
    CallControl,
    Capabilities,
    ContextUpdate,
    ErrorCode,
    Interrupted,
    SessionReady,
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

#: how long a new text turn waits for the messages of a response it cut off
DRAIN_WAIT_S = 2.0

CALL_CAPABILITIES = Capabilities(
    text_input=True, audio_input=True, streaming_output=True, audio_output=True, tool_events=True,
    interruption=True, usage=True, server_vad=True, multi_turn=True, call_control=True,
)


def ended_reason_code(reason: str) -> ErrorCode:
    """The normalized code of a call that Vapi ended with ``reason`` while the conversation was going on."""
    lowered = reason.lower()
    if "-429-" in lowered or "rate-limit" in lowered:
        return ErrorCode.RATE_LIMITED
    if "-401-" in lowered or "-403-" in lowered:
        return ErrorCode.AUTH
    if "-400-" in lowered or "-404-" in lowered or "not-valid" in lowered or "not-found" in lowered:
        return ErrorCode.BAD_REQUEST
    if any(marker in lowered for marker in ("fault", "error", "worker", "failed")):
        return ErrorCode.SERVER_ERROR
    return ErrorCode.DISCONNECTED  # e.g. assistant-ended-call, silence-timed-out: the call is over regardless


def ended_reason_error(reason: str) -> AdapterError:
    return AdapterError(redact(f"Vapi ended the call: {reason}"), code=ended_reason_code(reason),
                        vendor_code=redact(reason))


class VapiCallSession(StreamingSession):
    """A conversation over one Vapi call."""

    def __init__(self, setup: SessionSetup, call: CallRecord, transport: WebsocketTransport):
        super().__init__(CALL_CAPABILITIES)
        self.setup = setup
        self.call_id = call.id
        self._transport = transport
        self._rate = setup.options.sample_rate
        self._out_rate = setup.spec.audio.sample_rate
        #: one stream resampler per direction (filter state kept across frames)
        self._audio_in = StreamResampler(self._out_rate, self._rate)
        self._audio_out = StreamResampler(self._rate, self._out_rate)
        self._passages = list(setup.spec.context)
        self._current: ResponseState | None = None
        #: cleared after an interruption while what the assistant still sends for the cut-off response is dropped
        self._drained = asyncio.Event()
        self._drained.set()
        #: the interrupted response whose audio may still arrive (until the assistant's speech drains)
        self._cut: ResponseState | None = None
        self._muted = False
        self._awaiting = False
        self._last_activity = time.monotonic()
        self._hanging_up = False
        self._input_bytes = 0
        self._output_bytes = 0
        #: the call's duration as heard (the line stays open while the answer plays); ``_hung_up_at`` ends it
        self.meter = CallMeter(endpointing_s=setup.options.billing_endpointing_ms / 1000.0)
        self._hung_up_at: float | None = None
        self._reader: asyncio.Task[Any] | None = None
        self._finish_timer: asyncio.Task[Any] | None = None
        self._transfer_reported = False
        #: the assistant ended or forwarded the call: the socket's close is the normal end
        self._call_over = False

    @classmethod
    async def open(cls, setup: SessionSetup) -> VapiCallSession:
        options = setup.options
        request = CreateCallRequest(
            assistant_id=options.assistant_id, assistant=setup.assistant,
            assistant_overrides=assistant_overrides(setup.spec),
            transport=TransportSpec(audio_format=AudioFormat(sample_rate=options.sample_rate)), name=setup.name,
        )
        call = await setup.rest.create_call(request)
        url = call.websocket_call_url()
        if not url:
            raise AdapterError("the Vapi call has no transport.websocketCallUrl", code=ErrorCode.MALFORMED)
        transport = await WebsocketTransport.open(url)
        if setup.llm is not None:  # every custom-LLM request of this call gets the session's identity
            spec = setup.spec
            setup.llm.register_call(call.id, TurnContext(language=spec.language, user_id=spec.user_id,
                                                         tenant_id=spec.tenant_id,
                                                         conversation_id=spec.conversation_id))
        session = cls(setup, call, transport)
        session.emit(SessionReady(vendor_session_id=call.id))
        session._reader = session.spawn(session._read(), name=f"vapi-call-{call.id}")
        session.spawn(session._watch_idle(), name=f"vapi-idle-{call.id}")
        return session

    # -- Session --------------------------------------------------------------------------------------
    async def send_text(self, text: str) -> None:
        if self._current is not None:  # a new turn over an unfinished response: the caller cuts it off
            await self.interrupt()
        if not self._drained.is_set():  # let the cut-off response's last messages go by first
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._drained.wait(), DRAIN_WAIT_S)
            self._set_drained()
        await self._unmute()
        response = self._start_response(question=text)
        self.meter.text_turn()
        await self._send(AddMessage(message=OpenAiMessage(role="user", content=text)).wire())
        self.emit(UserTurnSent(response_id=response.response_id))
        self._last_activity = time.monotonic()

    async def push_audio(self, frame: bytes) -> None:
        if self.ended:  # the stream already carries the reason; the caller's line just goes quiet
            return
        self._input_bytes += len(frame)
        await self._send(self._audio_in.push(frame))

    async def end_input(self) -> None:
        """Vapi ends the caller's turn with its own VAD; nothing to commit."""

    async def interrupt(self, played_ms: float | None = None) -> None:
        if self._current is None or self.ended:
            return
        self._muted = True
        await self._send(Control(control="mute-assistant").wire())
        self._interrupted(by="caller", played_ms=played_ms)

    async def update_context(self, update: ContextUpdate) -> None:
        self._passages = list(update.passages)
        prompt = assistant_prompt(self._passages, update.instructions or self.setup.spec.instructions)
        message = AddMessage(message=OpenAiMessage(role="system", content=prompt), trigger_response_enabled=False)
        await self._send(message.wire())

    async def close_connection(self) -> None:
        self._hanging_up = True
        self._hung_up_at = time.monotonic()
        self._end_cut()
        with contextlib.suppress(Exception):
            await self._transport.send(Hangup().wire())
        if self._reader is not None and not self._reader.done():
            with contextlib.suppress(Exception):
                await asyncio.wait({self._reader}, timeout=self.setup.options.hangup_timeout_s)
        with contextlib.suppress(Exception):
            await self._transport.close(graceful=not self.ended)
        if not self.ended:
            self.emit(self._session_usage(await self._read_back()))
        if self.setup.llm is not None:
            self.setup.llm.forget_call(self.call_id)

    # -- reading --------------------------------------------------------------------------------------
    async def _read(self) -> None:
        while True:
            try:
                frame = await self._transport.recv()
            except ConnectionClosed as exc:
                if self._hanging_up:
                    return
                if self._call_over:  # the assistant hung up or forwarded the call (reported as CallControl)
                    self.emit(self._session_usage(await self._read_back()))
                    self.finish()
                    return
                raise await self._closed_error(exc) from None
            self._last_activity = time.monotonic()
            if isinstance(frame, bytes):
                self._on_audio(frame)
                continue
            try:
                message = parse_transport_message(frame)
            except MalformedMessage as exc:
                raise AdapterError(redact(f"malformed Vapi transport frame: {exc}"), code=ErrorCode.MALFORMED,
                                   retryable=False) from None
            self._on_message(message)

    async def _watch_idle(self) -> None:
        idle = self.setup.spec.idle_timeout_s
        while True:
            await asyncio.sleep(min(0.25, idle / 4))
            if self._awaiting and time.monotonic() - self._last_activity > idle:
                raise AdapterError(f"no Vapi event for {idle:g} s while a response was awaited",
                                   code=ErrorCode.STALLED)

    def _on_message(self, message: TransportMessage) -> None:
        if isinstance(message, SpeechUpdate):
            self._on_speech(message)
        elif isinstance(message, TranscriptMessage):
            self._on_transcript(message)
        elif isinstance(message, ModelOutput):
            token = message.token()
            response = self._agent_response() if token else None
            if response is not None:
                response.text_parts.append(token)
                self.emit(TextDelta(response_id=response.response_id, text=token))
        elif isinstance(message, ToolCalls):
            if (response := self._agent_response()) is not None:
                for item in message.tool_call_list:
                    arguments = item.function.argument_dict()
                    response.note_tool_call(item.function.name, arguments)
                    self.emit(ToolCall(response_id=response.response_id, call_id=item.id, name=item.function.name,
                                       arguments=arguments))
        elif isinstance(message, ToolCallsResult):
            if (response := self._agent_response()) is not None:
                result = message.tool_call_result
                self.emit(ToolResult(response_id=response.response_id, call_id=str(result.get("toolCallId", "")),
                                     output=str(result.get("result", ""))))
        elif isinstance(message, UserInterrupted):
            self._interrupted(by="vendor")
        elif isinstance(message, TransferUpdate):
            self._transfer_reported = True
            self.emit(CallControl(kind="transfer_requested", target=message.target(),
                                  response_id=self._current.response_id if self._current else None))
        elif isinstance(message, StatusUpdate) and message.status == "ended":
            self._on_ended(message.ended_reason or "ended")

    def _on_ended(self, reason: str) -> None:
        """The call ended: the assistant hanging up or forwarding the call is a ``CallControl`` and ends the
        session normally (after the response it was giving); any other reason is an error."""
        if reason.startswith(AGENT_HANGUP_REASONS):
            kind: Literal["agent_hung_up", "transfer_requested"] | None = "agent_hung_up"
        elif reason.startswith(AGENT_TRANSFER_REASONS):
            kind = None if self._transfer_reported else "transfer_requested"
        else:
            raise ended_reason_error(reason)
        self._end_cut()
        response = self._current
        if response is not None:
            if not (response.text_parts or response.audio_bytes):
                raise ended_reason_error(reason)  # ended before answering: the exchange failed
            self._finish(response)
        if kind is not None:
            self.emit(CallControl(kind=kind, reason=reason))
        self._call_over = True

    def _on_speech(self, message: SpeechUpdate) -> None:
        if message.role == "user":
            if message.status == "started":
                self.emit(UserSpeechStarted())
                if self._muted:
                    self.spawn(self._unmute(), name="vapi-unmute")
            elif message.status == "stopped":
                self.emit(UserSpeechStopped())
            return
        if message.status == "started":
            response = self._agent_response()
            if response is not None and not response.speech_started:
                response.speech_started = True
                self.emit(AgentSpeechStarted(response_id=response.response_id))
        elif message.status == "stopped":
            if not self._drained.is_set():
                self._set_drained()
                return
            response = self._current
            if response is None or response.speech_stopped:
                return
            response.speech_stopped = True
            if response.speech_started:
                self.emit(AgentSpeechStopped(response_id=response.response_id))
            if response.final_transcript is not None:
                self._finish(response)
            else:
                self._finish_later(response)

    def _on_transcript(self, message: TranscriptMessage) -> None:
        final = message.transcript_type == "final" or "final" in str(message.type)
        if message.role == "user":
            if not final:
                self.emit(Transcript(role="user", text=message.transcript, final=False))
                return
            # the caller's turn as Vapi heard it: the response to it starts here
            if self._current is not None:
                self._interrupted(by="caller")
            self._set_drained()
            started = self._start_response(question=message.transcript)
            self.emit(Transcript(response_id=started.response_id, role="user", text=message.transcript))
            return
        response = self._agent_response()
        if response is None:
            return
        if not final:
            self.emit(Transcript(response_id=response.response_id, role="agent", text=message.transcript,
                                 final=False))
            return
        response.final_transcript = message.transcript
        if not response.text_parts and message.transcript:  # no model-output: the transcript is the text
            response.text_parts.append(message.transcript)
            self.emit(TextDelta(response_id=response.response_id, text=message.transcript))
        self.emit(Transcript(response_id=response.response_id, role="agent", text=message.transcript))
        if response.speech_stopped:
            self._finish(response)

    def _on_audio(self, frame: bytes) -> None:
        self._output_bytes += len(frame)
        if self._cut is None and not self._muted:  # the caller hears it
            self.meter.heard(len(frame) / 2 / self._rate)
        response = self._agent_response() if self._cut is None else self._cut  # a cut reply's audio is evidence
        if response is None:
            return
        response.audio_bytes += len(frame)
        self.emit(AudioDelta(response_id=response.response_id, sample_rate=self._out_rate,
                             pcm16=self._audio_out.push(frame)))

    # -- responses ------------------------------------------------------------------------------------
    def _start_response(self, question: str | None = None) -> ResponseState:
        self._current = ResponseState(self.new_response_id(), question=question)
        self._awaiting = True
        self._last_activity = time.monotonic()
        return self._current

    def _agent_response(self) -> ResponseState | None:
        """The response agent output belongs to (opened if the agent speaks unprompted); none while draining."""
        if not self._drained.is_set():
            return None
        return self._current if self._current is not None else self._start_response()

    def _finish(self, response: ResponseState) -> None:
        if self._current is not response:
            return
        self._cancel_finish_timer()
        self.emit(response.done(self._record(), self._passages))
        self._current = None
        self._awaiting = False

    def _finish_later(self, response: ResponseState) -> None:
        async def wait_for_transcript() -> None:
            await asyncio.sleep(self.setup.options.final_transcript_wait_s)
            self._finish(response)

        self._cancel_finish_timer()
        self._finish_timer = self.spawn(wait_for_transcript(), name="vapi-final-transcript")

    def _cancel_finish_timer(self) -> None:
        if self._finish_timer is not None and not self._finish_timer.done() \
                and self._finish_timer is not asyncio.current_task():
            self._finish_timer.cancel()
        self._finish_timer = None

    def _interrupted(self, *, by: Literal["caller", "vendor"], played_ms: float | None = None) -> None:
        """Report the cut; the response ends once the assistant's audio has drained (``_set_drained``)."""
        response = self._current
        if response is None:
            return
        self._cancel_finish_timer()
        self._end_cut()
        if played_ms is None:
            played_ms = self.played_position(response.response_id)
        if played_ms is None:
            played_ms = response.audio_bytes / 2 / self._rate * 1000.0
        self.emit(Interrupted(response_id=response.response_id, played_ms=played_ms, by=by))
        self.meter.cut()
        self._cut = response
        self._current = None
        self._awaiting = False
        self._drained.clear()

    def _set_drained(self) -> None:
        self._drained.set()
        self._end_cut()

    def _end_cut(self) -> None:
        cut, self._cut = self._cut, None
        if cut is not None:
            self.emit(cut.done(self._record(), self._passages, status="interrupted"))

    def _record(self) -> Any:
        return self.setup.llm.record(call_id=self.call_id) if self.setup.llm is not None else None

    # -- plumbing -------------------------------------------------------------------------------------
    async def _send(self, frame: dict[str, Any] | bytes) -> None:
        if self.ended:
            raise AdapterError("the Vapi call is over", code=ErrorCode.DISCONNECTED)
        try:
            await self._transport.send(frame)
        except ConnectionClosed as exc:
            error = disconnect_error(exc)
            self.fail(error)
            raise error from None

    async def _unmute(self) -> None:
        if self._muted:
            self._muted = False
            await self._send(Control(control="unmute-assistant").wire())

    async def _closed_error(self, exc: ConnectionClosed) -> AdapterError:
        """Why the call's socket closed: the call's ``endedReason`` when Vapi closed it, a disconnect when the
        connection just dropped."""
        if exc.rcvd is None:
            return disconnect_error(exc)
        reason: str | None = None
        with contextlib.suppress(AdapterError, TimeoutError):
            reason = (await asyncio.wait_for(self.setup.rest.get_call(self.call_id), 5.0)).ended_reason
        reason = reason or exc.rcvd.reason or None
        return ended_reason_error(reason) if reason else disconnect_error(exc)

    async def _read_back(self) -> CallRecord | None:
        """``GET /call/{id}`` until the call has ended and carries its cost, or the read-back times out."""
        deadline = time.monotonic() + self.setup.readback_timeout_s
        record: CallRecord | None = None
        while True:
            with contextlib.suppress(AdapterError):
                record = await self.setup.rest.get_call(self.call_id)
            if (record is not None and record.status == "ended" and record.cost is not None) \
                    or time.monotonic() >= deadline:
                return record
            await asyncio.sleep(self.setup.readback_interval_s)

    def _session_usage(self, record: CallRecord | None) -> Usage:
        in_rate = self.setup.spec.audio.sample_rate
        usage = Usage(
            scope="session",
            input_audio_seconds=self._input_bytes / 2 / in_rate if self._input_bytes else None,
            output_audio_seconds=self._output_bytes / 2 / self._rate if self._output_bytes else None,
            billed_minutes=self.meter.billed_minutes(self._hung_up_at),
        )
        if record is None:
            return usage
        usage.vendor_cost_usd = record.cost
        for item in record.costs or []:  # Vapi's own minutes count when longer than the call as heard
            if item.get("type") == "vapi" and isinstance(item.get("minutes"), int | float):
                usage.billed_minutes = max(float(item["minutes"]), usage.billed_minutes or 0.0)
        metrics = record.artifact.performance_metrics if record.artifact else None
        if metrics is not None:
            averages = {
                "turn": metrics.turn_latency_average, "model": metrics.model_latency_average,
                "voice": metrics.voice_latency_average, "transcriber": metrics.transcriber_latency_average,
                "endpointing": metrics.endpointing_latency_average,
            }
            usage.vendor_latency_ms = {f"vapi_{name}_latency": float(value)
                                       for name, value in averages.items() if value is not None}
        return usage
