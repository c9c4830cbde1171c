"""Generic WebSocket endpoint adapter speaking the evaluator protocol of seeds 000/001.

One socket per conversation. On open: ``evaluator.init`` once, injecting the session — conversation id,
language, audio format, the knowledge passages (``spec.context``), instructions, earlier history, user and
tenant, the declared tools, and ``options.init_extra`` merged into ``request`` (the seed's opaque ``context``
mapping or an ``agentConfig`` override). Then on the same socket:

* text turn — the ``options.text_message`` template (default: a realtime-style ``conversation.item.create``),
  ``response.create``, then ``UserTurnSent`` (the zero point);
* audio turn — ``push_audio`` forwards each frame as a binary PCM16 frame as it comes (resampled to
  ``options.input_sample_rate``), ``end_input`` sends ``input_audio_buffer.commit`` + ``response.create``;
* barge-in — ``interrupt`` sends ``options.cancel_message`` (default ``response.cancel``).

Realtime-style events come back (GA and beta names): audio deltas → ``AudioDelta``; transcript / text deltas →
``TextDelta``; ``…transcript.done`` → agent ``Transcript``; input transcription → user ``Transcript``;
``input_audio_buffer.speech_started/stopped`` → ``UserSpeechStarted/Stopped``;
``response.function_call_arguments.done`` → ``ToolCall`` (``set_conversational_intent`` labels the response);
``response.done`` → ``Usage`` (when reported) and ``ResponseDone`` (``response.metadata`` may carry intent,
target language, retrieved context); ``error`` → a fatal ``ErrorEvent`` with the normalized code.
``update_context`` is unsupported: the protocol injects the session once.
"""

from __future__ import annotations

import binascii
import json
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from adapters._kit.intent_tool import (
    INTENT_TOOL_DESCRIPTION,
    INTENT_TOOL_NAME,
    INTENT_TOOL_PARAMETERS,
    intent_from_arguments,
)
from adapters._kit.options import parse_options
from adapters._kit.ws import WebsocketTransport
from adapters.generic import wire
from adapters.generic.common import (
    EndpointOptions,
    endpoint_error,
    history_entries,
    malformed,
    render_template,
    template_values,
)
from adapters.generic.endpoint import EndpointSystem, WebSocketEndpointSession
from bench.protocol import (
    AdapterError,
    Capabilities,
    ErrorCode,
    SessionSpec,
    TextDelta,
    ToolCall,
    Transcript,
    Usage,
    UserSpeechStarted,
    UserSpeechStopped,
    UserTurnSent,
)
from bench.protocol.config import AdapterConfig

INTENT_TOOL: dict[str, Any] = {"type": "function", "name": INTENT_TOOL_NAME, "description": INTENT_TOOL_DESCRIPTION,
                               "parameters": INTENT_TOOL_PARAMETERS}


class WebSocketOptions(EndpointOptions):
    """Options of the evaluator-protocol WebSocket adapter."""

    init_extra: dict[str, Any] = Field(default_factory=dict, description="merged into evaluator.init's request")
    text_message: dict[str, Any] | None = Field(
        default_factory=lambda: dict(wire.DEFAULT_TEXT_MESSAGE),
        description="template for a text turn ({text} and the session placeholders); null = audio only",
    )
    response_create: dict[str, Any] = Field(default_factory=lambda: wire.ResponseCreate().model_dump(exclude_none=True))
    cancel_message: dict[str, Any] | None = Field(
        default_factory=lambda: wire.ResponseCancel().model_dump(), description="sent on interrupt(); null = none"
    )
    declare_intent_tool: bool = Field(default=False, description="declare set_conversational_intent in init")
    input_sample_rate: int = Field(default=24000, gt=0, description="rate of the PCM16 the endpoint expects")
    output_sample_rate: int = Field(default=24000, gt=0, description="rate of the PCM16 the endpoint sends")


class EvaluatorSession(WebSocketEndpointSession):
    """One conversation over the evaluator protocol."""

    def __init__(self, options: WebSocketOptions, capabilities: Capabilities, spec: SessionSpec,
                 transport: WebsocketTransport):
        super().__init__(capabilities, spec, transport, input_rate=options.input_sample_rate,
                         output_rate=options.output_sample_rate)
        self.options = options

    def init_message(self) -> dict[str, Any]:
        spec = self.spec
        request: dict[str, Any] = {
            "session_id": spec.conversation_id,
            "language": spec.language,
            "audio_format": wire.AudioFormat(sample_rate_hz=self.options.input_sample_rate).model_dump(),
            "knowledge": list(spec.context),
            "instructions": spec.instructions,
            "history": history_entries(spec),
            "user_id": spec.user_id,
            "tenant_id": spec.tenant_id,
            "metadata": dict(spec.metadata),
            "tools": [INTENT_TOOL] if self.options.declare_intent_tool else [],
        }
        request.update(self.options.init_extra)
        init = wire.EvaluatorInit(request=wire.InitRequest.model_validate(request))
        return init.model_dump(exclude_none=True)

    # -- Session ------------------------------------------------------------------------------------
    async def send_text(self, text: str) -> None:
        if self.options.text_message is None:
            raise AdapterError("this endpoint takes audio only (options.text_message is null)",
                               code=ErrorCode.UNSUPPORTED, retryable=False)
        message = render_template(self.options.text_message, template_values(self.spec, text=text))
        response_id = self.pending_response_id()
        if await self.send(message) and await self.send(self.options.response_create):
            self.emit(UserTurnSent(response_id=response_id))
            self.watchdog.expect()

    async def end_input(self) -> None:
        self.pending_response_id()
        if await self.send(wire.InputAudioBufferCommit().model_dump()) and await self.send(
                self.options.response_create):
            self.watchdog.expect()

    async def send_cancel(self) -> None:
        if self.options.cancel_message is not None:
            await self.send(self.options.cancel_message)

    # -- events -------------------------------------------------------------------------------------
    def on_text(self, message: str) -> None:
        self.watchdog.activity()
        data = _decode(message)
        kind, delta = data.get("type"), data.get("delta")
        if kind is not None and not isinstance(kind, str):
            raise malformed("event 'type' is not a string")
        # hot path (every audio/text delta): the single field is checked here instead of by a pydantic validation
        if kind in wire.AUDIO_DELTA_TYPES and isinstance(delta, str):
            response = self.open_response()
            try:  # a cut response's audio too: the stop-time evidence
                pcm = binascii.a2b_base64(delta, strict_mode=True)
            except (binascii.Error, ValueError):
                raise malformed("audio delta is not base64") from None
            self.deliver_audio(response, pcm)
            return
        if kind in wire.TEXT_DELTA_TYPES and isinstance(delta, str):
            response = self.open_response()
            if not response.cut:
                response.text.append(delta)
                self.emit(TextDelta(text=delta, response_id=response.response_id))
            return
        self._on_event(_parse(data))

    def _on_event(self, event: BaseModel | None) -> None:
        if isinstance(event, wire.ResponseCreated):
            vendor_id = event.response.get("id")
            self.start_response(vendor_id if isinstance(vendor_id, str) else None)
        elif isinstance(event, wire.OutputTranscriptDone | wire.OutputTextDone):
            response = self.open_response()
            if not response.cut:
                response.final_text = event.transcript if isinstance(event, wire.OutputTranscriptDone) else event.text
                self.emit(Transcript(role="agent", text=response.final_text, response_id=response.response_id))
        elif isinstance(event, wire.InputAudioTranscriptionCompleted):
            self.emit(Transcript(role="user", text=event.transcript, response_id=self.user_turn_response_id()))
        elif isinstance(event, wire.SpeechStarted):
            self.emit(UserSpeechStarted())
        elif isinstance(event, wire.SpeechStopped):
            self.emit(UserSpeechStopped())
            self.watchdog.expect()
        elif isinstance(event, wire.FunctionCallArgumentsDone):
            self._on_tool_call(event)
        elif isinstance(event, wire.ServerError):
            raise _error(event.error)
        elif isinstance(event, wire.ResponseDone):
            self._on_response_done(event.response)

    def _on_tool_call(self, event: wire.FunctionCallArgumentsDone) -> None:
        try:
            arguments = json.loads(event.arguments or "{}")
        except ValueError:
            raise malformed("function call arguments are not JSON") from None
        if not isinstance(arguments, dict):
            raise malformed("function call arguments are not an object")
        response = self.open_response()
        if response.cut:
            return
        name = event.name or ""
        if name == INTENT_TOOL_NAME:
            response.intent, response.target_language = intent_from_arguments(arguments)
        self.emit(ToolCall(call_id=event.call_id, name=name, arguments=arguments, response_id=response.response_id))

    def _on_response_done(self, body: wire.ResponseBody) -> None:
        response = self.response if self.response is not None else self.start_response(body.id)
        if response.cut:
            self.finish_response()
            return
        details = body.status_details or {}
        if body.status == "cancelled" and details.get("reason") == "turn_detected":
            self.report_interruption(response, by="vendor")
            self.finish_response()
            return
        if body.status in ("failed", "cancelled"):  # "incomplete" (e.g. a token limit) still answered
            error = details.get("error")
            body_error = wire.ErrorBody.model_validate(error) if isinstance(error, dict) else wire.ErrorBody()
            if body.status == "cancelled":
                raise endpoint_error(f"the endpoint cancelled the response: {body_error.message}", ErrorCode.CANCELLED)
            body_error.message = body_error.message or "response failed"
            raise _error(body_error, default=ErrorCode.SERVER_ERROR)
        metadata = body.metadata or {}
        context = metadata.get("retrieved_context")
        self.finish_response(
            intent=_str_or_none(metadata.get("conversational_intent")),
            target_language=_str_or_none(metadata.get("target_language")),
            retrieved_context=[str(c) for c in context] if isinstance(context, list) and context else None,
            usage=_usage(body.usage) if body.usage is not None else None,
        )


class WebSocketSystem(EndpointSystem):
    """The evaluator protocol over WebSocket, one socket per conversation."""

    options: WebSocketOptions

    async def open_session(self, spec: SessionSpec) -> EvaluatorSession:
        return await self.open_websocket_session(
            spec, lambda transport: EvaluatorSession(self.options, self.capabilities, spec, transport),
            lambda session: session.init_message(), "evaluator.init")


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _decode(message: str) -> dict[str, Any]:
    try:
        data = json.loads(message)
    except ValueError:
        raise malformed("event is not JSON") from None
    if not isinstance(data, dict):
        raise malformed("event is not a JSON object")
    return data


def _parse(data: dict[str, Any]) -> BaseModel | None:
    try:
        return wire.parse_server_event(data)
    except ValidationError as exc:
        raise malformed(f"{data.get('type')!r} event: {exc.errors()[0]['msg']}") from None


def _error(error: wire.ErrorBody, default: ErrorCode = ErrorCode.SERVER_ERROR) -> AdapterError:
    """The endpoint's error event as an ``AdapterError``: its code picks the normalized code, else its type."""
    message = f"endpoint error: {error.message or error.code or error.type}"
    for vendor in (error.code, error.type):
        if vendor:
            exc = endpoint_error(message, vendor, retry_after_s=error.retry_after_s)
            if exc.code is not ErrorCode.INTERNAL:
                exc.vendor_code = error.code or vendor
                return exc
    exc = endpoint_error(message, default, retry_after_s=error.retry_after_s)
    exc.vendor_code = error.code or error.type
    return exc


def _usage(usage: wire.RealtimeUsage) -> Usage:
    inp = usage.input_token_details
    out = usage.output_token_details
    return Usage(
        input_text_tokens=inp.text_tokens if inp else usage.input_tokens,
        input_audio_tokens=inp.audio_tokens if inp else None,
        cached_input_tokens=inp.cached_tokens if inp else None,
        output_text_tokens=out.text_tokens if out else usage.output_tokens,
        output_audio_tokens=out.audio_tokens if out else None,
    )


def create(system: AdapterConfig) -> WebSocketSystem:
    options = parse_options(system, WebSocketOptions)
    capabilities = Capabilities(
        text_input=options.text_message is not None,
        audio_input=True,
        streaming_output=True,
        audio_output=True,
        tool_events=True,
        interruption=options.cancel_message is not None,
        usage=True,
        server_vad=False,
        multi_turn=True,
    )
    return WebSocketSystem(system, options, capabilities)
