"""Raw PCM-over-WebSocket endpoint adapter: a frame-driven voice endpoint with its own VAD.

One socket per conversation. On open: the ``options.start_message`` template once (default: session id,
language, encoding, channels, sample rates, the knowledge passages, instructions and history). Then the
caller's audio streams through: ``push_audio`` forwards every frame as it comes (resampled to
``options.input_sample_rate``) — the engine's pump paces them and keeps sending silence after the speech, like
a phone line — and the endpoint decides itself when the caller stopped (``server_vad``); nothing waits for the
whole utterance before reading. ``end_input`` is only a hint unless ``options.end_message`` is set (then it is
sent). A text turn sends ``options.text_message``. ``interrupt`` reports the cut at once and sends
``options.cancel_message``; the endpoint's own barge-in (caller speech while it talks) arrives as an
``end`` with ``status: interrupted``. ``send_dtmf`` sends ``options.dtmf_message`` (``{digits}``; ``dtmf`` is
declared only when it is set).

Back: binary frames are agent audio at ``options.output_sample_rate`` (→ ``AudioDelta`` at the session rate);
JSON ``transcript`` (partial → ``TextDelta``, final → ``Transcript``), ``tool_call``, ``speech_started`` /
``speech_stopped`` (→ ``UserSpeechStarted/Stopped``), ``error`` and ``end`` (routing labels). The endpoint's own
type names can be mapped with ``options.message_types``. A response ends with the end marker, or — when
configured — when the endpoint goes quiet for ``idle_end_ms`` (no frame), or after ``silence_end_ms`` of output
audio below ``silence_threshold`` following voiced audio. Silent frames outside a response (a phone line's
idle noise floor) are handed on without a response id and start nothing. ``update_context`` is unsupported.
"""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np
from pydantic import Field, ValidationError, field_validator

from adapters._kit.intent_tool import INTENT_TOOL_NAME, intent_from_arguments
from adapters._kit.options import parse_options
from adapters._kit.ws import WebsocketTransport
from adapters.generic import wire
from adapters.generic.common import EndpointOptions, endpoint_error, malformed, render_template, template_values
from adapters.generic.endpoint import EndpointSystem, ResponseState, WebSocketEndpointSession
from adapters.generic.websocket import INTENT_TOOL
from bench.protocol import (
    AdapterError,
    Capabilities,
    ErrorCode,
    SessionSpec,
    TextDelta,
    ToolCall,
    Transcript,
    UserSpeechStarted,
    UserSpeechStopped,
    UserTurnSent,
)
from bench.protocol.config import AdapterConfig

#: what ``send_dtmf`` accepts (the 16 DTMF keys)
DTMF_DIGITS = re.compile(r"^[0-9*#A-D]+$")


class PcmWebSocketOptions(EndpointOptions):
    """Options of the raw PCM WebSocket adapter."""

    start_message: dict[str, Any] = Field(
        default_factory=lambda: dict(wire.DEFAULT_PCM_START),
        description="template; placeholders: session_id, language, user_id, tenant_id, context, instructions, "
        "history, input_sample_rate, output_sample_rate, …",
    )
    end_message: dict[str, Any] | None = Field(
        default=None, description="sent by end_input(); null: the endpoint detects the end of speech itself"
    )
    text_message: dict[str, Any] | None = Field(
        default_factory=lambda: dict(wire.DEFAULT_PCM_TEXT), description="text turn template; null = audio only"
    )
    cancel_message: dict[str, Any] | None = Field(
        default_factory=lambda: dict(wire.DEFAULT_PCM_CANCEL), description="sent on interrupt(); null = none"
    )
    dtmf_message: dict[str, Any] | None = Field(
        default=None, description="sent by send_dtmf(); placeholder {digits}; null = the endpoint takes no DTMF"
    )
    declare_intent_tool: bool = Field(default=False, description="add the intent tool as start_message.tools")
    input_sample_rate: int = Field(default=24000, gt=0)
    output_sample_rate: int = Field(default=24000, gt=0)
    message_types: dict[str, str] = Field(
        default_factory=dict, description=f"endpoint type name -> one of {', '.join(wire.PCM_SERVER_MESSAGES)}"
    )
    idle_end_ms: int | None = Field(default=None, gt=0, description="a response ends after N ms without frames")
    silence_end_ms: int | None = Field(default=None, gt=0, description="a response ends after N ms of silent audio")
    silence_threshold: int = Field(default=256, ge=0, le=32767, description="peak sample level counted as silence")

    @field_validator("message_types")
    @classmethod
    def _known_targets(cls, value: dict[str, str]) -> dict[str, str]:
        unknown = sorted(set(value.values()) - set(wire.PCM_SERVER_MESSAGES))
        if unknown:
            raise ValueError(f"unknown target(s) {unknown}; known: {sorted(wire.PCM_SERVER_MESSAGES)}")
        return value


class PcmSession(WebSocketEndpointSession):
    """One conversation with a raw-PCM voice endpoint."""

    def __init__(self, options: PcmWebSocketOptions, capabilities: Capabilities, spec: SessionSpec,
                 transport: WebsocketTransport):
        super().__init__(capabilities, spec, transport, input_rate=options.input_sample_rate,
                         output_rate=options.output_sample_rate)
        self.options = options
        self.quiet_gap_s = options.idle_end_ms / 1000 if options.idle_end_ms else None
        self._types = {name: name for name in wire.PCM_SERVER_MESSAGES} | options.message_types

    def start_message(self) -> dict[str, Any]:
        values = template_values(self.spec, input_sample_rate=self.options.input_sample_rate,
                                 output_sample_rate=self.options.output_sample_rate)
        message = render_template(self.options.start_message, values)
        if self.options.declare_intent_tool:
            message["tools"] = [INTENT_TOOL]
        return message

    def _begin_turn(self) -> None:
        """The caller finished a turn: an answer is due. (A response cut earlier stays open, its audio still
        delivered, until the endpoint ends it: the protocol has no response ids, so that end separates the two.)"""
        self.watchdog.expect()

    # -- Session ------------------------------------------------------------------------------------
    async def send_text(self, text: str) -> None:
        if self.options.text_message is None:
            raise AdapterError("this endpoint takes audio only (options.text_message is null)",
                               code=ErrorCode.UNSUPPORTED, retryable=False)
        self._begin_turn()
        response_id = self.pending_response_id()
        if await self.send(render_template(self.options.text_message, template_values(self.spec, text=text))):
            self.emit(UserTurnSent(response_id=response_id))
            self.watchdog.expect()

    async def end_input(self) -> None:
        self._begin_turn()
        if self.options.end_message is not None:
            await self.send(render_template(self.options.end_message, template_values(self.spec)))

    async def send_cancel(self) -> None:
        if self.options.cancel_message is not None:
            await self.send(render_template(self.options.cancel_message, template_values(self.spec)))

    async def send_dtmf(self, digits: str) -> None:
        """Keypad digits as ``options.dtmf_message`` (declared as ``dtmf`` only when that is configured)."""
        if self.options.dtmf_message is None:
            raise AdapterError("this endpoint takes no DTMF (options.dtmf_message is null)",
                               code=ErrorCode.UNSUPPORTED, retryable=False)
        if not DTMF_DIGITS.match(digits):
            raise AdapterError(f"not DTMF digits: {digits!r} (0-9, *, #, A-D)", code=ErrorCode.BAD_REQUEST,
                               retryable=False)
        await self.send(render_template(self.options.dtmf_message, template_values(self.spec, digits=digits)))

    # -- events -------------------------------------------------------------------------------------
    def on_audio(self, pcm: bytes) -> None:
        options = self.options
        response = self.response
        samples = np.frombuffer(pcm[: len(pcm) // 2 * 2], dtype="<i2")
        voiced = samples.size > 0 and int(np.abs(samples.astype(np.int32)).max()) > options.silence_threshold
        if response is None and not voiced:
            self.deliver_audio(None, pcm)  # the line's silence between responses belongs to no response
            return
        self.watchdog.activity()
        response = response or self.start_response()
        self.deliver_audio(response, pcm)  # a cut response's audio too: the stop-time evidence
        if voiced:
            response.heard_voice, response.silent_ms = True, 0.0
        else:
            response.silent_ms += samples.size / options.output_sample_rate * 1000
        if options.silence_end_ms and response.heard_voice and response.silent_ms >= options.silence_end_ms:
            self.finish_response()

    def on_quiet(self) -> None:
        self.finish_response()

    def on_text(self, message: str) -> None:
        self.watchdog.activity()
        try:
            data = json.loads(message)
        except ValueError:
            raise malformed("control message is not JSON") from None
        if not isinstance(data, dict):
            raise malformed("control message is not a JSON object")
        kind = self._types.get(str(data.get("type")))
        model = wire.PCM_SERVER_MESSAGES.get(kind or "")
        if model is None:
            return  # a control message we do not read
        try:
            event = model.model_validate({**data, "type": kind})
        except ValidationError as exc:
            raise malformed(f"{kind} message: {exc.errors()[0]['msg']}") from None
        if isinstance(event, wire.PcmSpeechStarted):
            self.emit(UserSpeechStarted())
        elif isinstance(event, wire.PcmSpeechStopped):
            self.emit(UserSpeechStopped())
            self._begin_turn()
        elif isinstance(event, wire.PcmTranscript):
            self._on_transcript(event)
        elif isinstance(event, wire.PcmToolCall):
            self._on_tool_call(event)
        elif isinstance(event, wire.PcmError):
            raise endpoint_error(f"endpoint error: {event.message or event.code}", event.code or ErrorCode.SERVER_ERROR,
                                 retry_after_s=event.retry_after_s)
        elif isinstance(event, wire.PcmEnd):
            self._on_end(event)

    def _on_transcript(self, event: wire.PcmTranscript) -> None:
        if event.role == "user":
            self.emit(Transcript(role="user", text=event.text, final=event.final,
                                 response_id=self.user_turn_response_id()))
            return
        response = self.open_response()
        if response.cut:
            return
        if event.final:
            response.final_text = event.text
            self.emit(Transcript(role="agent", text=event.text, final=True, response_id=response.response_id))
        else:
            response.text.append(event.text)
            self.emit(TextDelta(text=event.text, response_id=response.response_id))

    def _on_tool_call(self, event: wire.PcmToolCall) -> None:
        try:
            arguments = event.parsed_arguments()
        except ValueError as exc:
            raise malformed(f"tool call arguments: {exc}") from None
        response = self.open_response()
        if response.cut:
            return
        if event.name == INTENT_TOOL_NAME:
            response.intent, response.target_language = intent_from_arguments(arguments)
        self.emit(ToolCall(call_id=event.call_id, name=event.name, arguments=arguments,
                           response_id=response.response_id))

    def _on_end(self, event: wire.PcmEnd) -> None:
        response: ResponseState | None = self.response
        if response is None:
            return  # an end marker with nothing before it (e.g. after a response that ended by silence)
        if event.status == "interrupted" and not response.cut:
            self.report_interruption(response, by="vendor")
        self.finish_response(intent=event.conversational_intent, target_language=event.target_language,
                             retrieved_context=event.retrieved_context or None,
                             final_text=response.final_text or event.text or None)


class PcmWebSocketSystem(EndpointSystem):
    """Raw PCM over WebSocket, one socket per conversation."""

    options: PcmWebSocketOptions

    async def open_session(self, spec: SessionSpec) -> PcmSession:
        return await self.open_websocket_session(
            spec, lambda transport: PcmSession(self.options, self.capabilities, spec, transport),
            lambda session: session.start_message(), "the start message")


def create(system: AdapterConfig) -> PcmWebSocketSystem:
    options = parse_options(system, PcmWebSocketOptions)
    capabilities = Capabilities(
        text_input=options.text_message is not None,
        audio_input=True,
        streaming_output=True,
        audio_output=True,
        tool_events=True,
        interruption=True,
        usage=False,
        server_vad=options.end_message is None,
        multi_turn=True,
        dtmf=options.dtmf_message is not None,
    )
    return PcmWebSocketSystem(system, options, capabilities)
