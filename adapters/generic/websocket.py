"""Generic WebSocket endpoint adapter speaking the seed-000 evaluator protocol.

Per turn (a fresh connection): ``evaluator.init`` JSON (session id, language, audio format 24 kHz mono PCM16,
``options.init_extra`` merged into ``request``), then the user audio as binary PCM16 frames followed by
``input_audio_buffer.commit`` — or, for a text-only turn, the ``options.text_message`` template (default: a
realtime-style ``conversation.item.create``) — then ``response.create``. ``UserTurnSent`` is yielded right
after ``response.create`` is written. Realtime-style events come back (GA and beta names) and are normalized:
audio deltas → ``AudioDelta``; transcript / text deltas → ``TextDelta``; ``…transcript.done`` → agent
``Transcript``; input transcription → user ``Transcript``; ``response.function_call_arguments.done`` →
``ToolCall`` (``set_conversational_intent`` sets the turn's intent); ``response.done`` → ``Usage`` (when
reported) and ``TurnDone`` (``response.metadata`` may carry intent / target language / retrieved context);
``error`` → ``AdapterError``. Binary frames from the server are taken as output audio.

Options (``system.options``): see ``WebSocketOptions`` and ``adapters.generic.common.EndpointOptions``.
"""

from __future__ import annotations

import binascii
import json
from collections.abc import AsyncIterator
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from adapters.base import (
    AdapterBase,
    AdapterError,
    AudioDelta,
    Capabilities,
    NormalizedEvent,
    TextDelta,
    ToolCall,
    Transcript,
    TurnDone,
    TurnInput,
    Usage,
    UserTurnSent,
)
from adapters.generic import wire
from adapters.generic.common import (
    SESSION_HEADER,
    EmulatedEndpoint,
    EndpointOptions,
    RecvWatchdog,
    StreamResampler,
    close_quietly,
    load_options,
    redact,
    render_template,
    resample_pcm16,
    resolve_headers,
    send_audio_frames,
    session_id_for,
    status_error,
    template_values,
    websocket_proxy,
)
from adapters.intent_tool import INTENT_TOOL_NAME, intent_from_arguments
from bench.config import SystemConfig

RETRYABLE_ERROR_TYPES = {"server_error", "rate_limit_error", "rate_limit_exceeded", "overloaded", "timeout"}


class WebSocketOptions(EndpointOptions):
    """Options of the evaluator-protocol WebSocket adapter."""

    init_extra: dict[str, Any] = Field(default_factory=dict, description="merged into evaluator.init's request")
    text_message: dict[str, Any] | None = Field(
        default_factory=lambda: dict(wire.DEFAULT_TEXT_MESSAGE),
        description="template for a text-only turn ({text}, {language}, {session_id}); null = audio only",
    )
    response_create: dict[str, Any] = Field(default_factory=lambda: {"type": "response.create"})
    input_sample_rate: int = Field(default=24000, gt=0, description="rate of the PCM16 the endpoint expects")
    output_sample_rate: int = Field(default=24000, gt=0, description="rate of the PCM16 the endpoint sends")
    frame_ms: int = Field(default=100, ge=5, le=1000, description="user audio frame length (20 is typical when paced)")
    pace_audio: bool = Field(default=False, description="send user audio in real time (server-side VAD)")
    max_message_bytes: int = Field(default=4 * 1024 * 1024, gt=0)
    compression: bool = Field(default=False, description="offer permessage-deflate (costs CPU and latency)")


class WebSocketAdapter(AdapterBase):
    """Seed-000 evaluator protocol over WebSocket."""

    def __init__(self, system: SystemConfig):
        self.system_id = system.id
        self.mode = system.mode
        self.options = load_options(WebSocketOptions, system)
        self.timeout_s = system.timeout_s
        self.headers = resolve_headers(self.options, system.id) if system.mode != "emulated" else {}
        self.capabilities = Capabilities(
            text_input=self.options.text_message is not None,
            audio_input=True,
            streaming_output=True,
            audio_output=True,
            tool_events=True,
            interruption=False,
            usage=True,
        )
        self._emulator = EmulatedEndpoint(self.options, "websocket") if system.mode == "emulated" else None
        self.url = self.options.url

    async def start(self) -> None:
        if self._emulator is not None and self._emulator.running is None:
            self.url = await self._emulator.start()

    async def close(self) -> None:
        if self._emulator is not None:
            await self._emulator.close()

    @property
    def send_hint(self) -> bool:
        hint = self.options.send_transcript_hint
        return self.mode == "emulated" if hint is None else hint

    def init_message(self, turn: TurnInput) -> dict[str, Any]:
        request: dict[str, Any] = {
            "session_id": session_id_for(turn),
            "language": turn.language,
            "audio_format": wire.AudioFormat(sample_rate_hz=self.options.input_sample_rate).model_dump(),
        }
        request.update(self.options.init_extra)
        if turn.audio_pcm16 is not None and self.send_hint:
            request["transcript_hint"] = turn.text
        return wire.EvaluatorInit(request=wire.InitRequest.model_validate(request)).model_dump(exclude_none=True)

    async def run_turn(self, turn: TurnInput) -> AsyncIterator[NormalizedEvent]:
        from websockets.asyncio.client import connect
        from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus

        if self.url is None:
            raise AdapterError(f"system {self.system_id!r}: adapter not started (no URL)", retryable=False)
        if turn.audio_pcm16 is None and self.options.text_message is None:
            raise AdapterError(
                "text-only turn but options.text_message is null (audio-only endpoint)",
                code="unsupported_input",
            )
        headers = {**self.headers, SESSION_HEADER: session_id_for(turn)}
        try:
            ws = await connect(
                self.url,
                additional_headers=headers,
                open_timeout=self.options.connect_timeout_s,
                max_size=self.options.max_message_bytes,
                compression="deflate" if self.options.compression else None,
                proxy=websocket_proxy(self.url),
            )
        except InvalidStatus as exc:
            response = exc.response
            raise status_error(
                response.status_code, response.headers, response.body.decode("utf-8", "replace"), self.headers
            ) from None
        except (OSError, TimeoutError, InvalidHandshake) as exc:
            raise AdapterError(
                f"cannot connect to endpoint: {redact(str(exc), self.headers)}",
                retryable=True,
                code="connect",
            ) from None
        try:
            try:
                await self._send_turn(ws, turn)
            except ConnectionClosed as exc:
                raise AdapterError(
                    f"connection closed while sending the turn: {exc}", retryable=True, code="disconnect"
                ) from None
            yield UserTurnSent()
            watchdog = RecvWatchdog(ws, self.options.receive_timeout_s or self.timeout_s)
            try:
                async for event in self._events(watchdog, turn):
                    yield event
            finally:
                watchdog.cancel()
        finally:
            await close_quietly(ws)

    async def _send_turn(self, ws: Any, turn: TurnInput) -> None:
        await ws.send(json.dumps(self.init_message(turn)))
        if turn.audio_pcm16 is not None:
            pcm = resample_pcm16(turn.audio_pcm16, turn.sample_rate, self.options.input_sample_rate)
            options = self.options
            await send_audio_frames(ws, pcm, options.frame_ms, options.input_sample_rate, options.pace_audio)
            await ws.send(wire.InputAudioBufferCommit().model_dump_json())
        else:
            assert self.options.text_message is not None
            await ws.send(json.dumps(render_template(self.options.text_message, template_values(turn))))
        await ws.send(json.dumps(self.options.response_create))

    async def _events(self, watchdog: RecvWatchdog, turn: TurnInput) -> AsyncIterator[NormalizedEvent]:
        from websockets.exceptions import ConnectionClosed

        resampler = (
            StreamResampler(self.options.output_sample_rate, turn.sample_rate)
            if self.options.output_sample_rate != turn.sample_rate
            else None
        )
        out_rate = turn.sample_rate
        text_parts: list[str] = []
        final_text: str | None = None
        intent: str | None = None
        target_language: str | None = None
        while True:
            try:
                message = await watchdog.recv()
            except ConnectionClosed as exc:
                if watchdog.fired:
                    raise AdapterError(
                        f"stalled: no event for {watchdog.idle_s:g} s", retryable=True, code="stall"
                    ) from None
                raise AdapterError(
                    f"connection closed mid-response ({exc})", retryable=True, code="disconnect"
                ) from None
            if isinstance(message, bytes):
                pcm = resampler.process(message) if resampler else message
                yield AudioDelta.model_construct(pcm16=pcm, sample_rate=out_rate)  # hot path: trusted values
                continue
            data = _decode(message)
            kind, delta = data.get("type"), data.get("delta")
            # hot path (every audio/text delta): the models' single field is checked here instead of by a
            # pydantic validation per frame; everything else goes through wire.parse_server_event
            if kind in wire.AUDIO_DELTA_TYPES and isinstance(delta, str):
                try:
                    pcm = binascii.a2b_base64(delta, strict_mode=True)  # C-level check, no regex
                except (binascii.Error, ValueError):
                    raise AdapterError("malformed audio delta (not base64)", code="malformed") from None
                if resampler is not None:
                    pcm = resampler.process(pcm)
                yield AudioDelta.model_construct(pcm16=pcm, sample_rate=out_rate)
                continue
            if kind in wire.TEXT_DELTA_TYPES and isinstance(delta, str):
                text_parts.append(delta)
                yield TextDelta.model_construct(text=delta)
                continue
            event = _parse(data)
            if isinstance(event, wire.OutputTranscriptDone | wire.OutputTextDone):
                final_text = event.transcript if isinstance(event, wire.OutputTranscriptDone) else event.text
                yield Transcript(role="agent", text=final_text, final=True)
            elif isinstance(event, wire.InputAudioTranscriptionCompleted):
                yield Transcript(role="user", text=event.transcript, final=True)
            elif isinstance(event, wire.FunctionCallArgumentsDone):
                try:
                    arguments = json.loads(event.arguments or "{}")
                except ValueError:
                    raise AdapterError("malformed function call arguments", code="malformed") from None
                if not isinstance(arguments, dict):
                    raise AdapterError("function call arguments are not an object", code="malformed")
                name = event.name or ""
                if name == INTENT_TOOL_NAME:
                    intent, target_language = intent_from_arguments(arguments)
                yield ToolCall(call_id=event.call_id, name=name, arguments=arguments)
            elif isinstance(event, wire.ServerError):
                raise _error_from_event(event.error)
            elif isinstance(event, wire.ResponseDone):
                body = event.response
                if body.status in ("failed", "cancelled"):  # "incomplete" (e.g. token limit) still answered
                    details = (body.status_details or {}).get("error") or {}
                    error = wire.ErrorBody.model_validate(details) if isinstance(details, dict) else wire.ErrorBody()
                    error.message = error.message or f"response {body.status}"
                    raise _error_from_event(error)
                if body.usage is not None:
                    yield _usage(body.usage)
                metadata = body.metadata or {}
                yield TurnDone(
                    conversational_intent=intent or metadata.get("conversational_intent"),
                    target_language=target_language or metadata.get("target_language"),
                    retrieved_context=list(metadata.get("retrieved_context") or []),
                    final_text=final_text if final_text is not None else ("".join(text_parts) or None),
                )
                return


def _decode(message: str) -> dict[str, Any]:
    try:
        data = json.loads(message)
    except ValueError:
        raise AdapterError("malformed event (not JSON)", code="malformed") from None
    if not isinstance(data, dict):
        raise AdapterError("malformed event (not a JSON object)", code="malformed")
    return data


def _parse(data: dict[str, Any]) -> BaseModel | None:
    try:
        return wire.parse_server_event(data)
    except ValidationError as exc:
        raise AdapterError(
            f"malformed {data.get('type')!r} event: {exc.errors()[0]['msg']}", code="malformed"
        ) from None


def _error_from_event(error: wire.ErrorBody) -> AdapterError:
    kinds = {error.type or "", error.code or ""}
    retryable = bool(kinds & RETRYABLE_ERROR_TYPES)
    return AdapterError(
        f"endpoint error: {error.message or error.code or error.type}",
        retryable=retryable,
        retry_after_s=error.retry_after_s,
        code=error.code or error.type,
    )


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


def create(system: SystemConfig) -> WebSocketAdapter:
    return WebSocketAdapter(system)
