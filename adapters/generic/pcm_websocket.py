"""Raw PCM-over-WebSocket endpoint adapter: binary PCM16 both ways, JSON control messages.

Per turn (a fresh connection): the ``options.start_message`` template (default: ``{"type": "start",
"session_id", "language", "encoding", "channels", "input_sample_rate", "output_sample_rate"}``), then the
user audio as binary PCM16 frames at ``options.input_sample_rate`` (resampled from the turn's rate when they
differ) and the ``options.end_message`` template (default ``{"type": "end"}``); a text-only turn sends the
``options.text_message`` template instead (null = the endpoint takes audio only). ``UserTurnSent`` is
yielded once the last of these is written.

Back: binary frames are agent audio at ``options.output_sample_rate`` (resampled to the turn's rate, yielded
as ``AudioDelta``); JSON ``transcript`` (partial → ``TextDelta``, final → ``Transcript``), ``tool_call``,
``error`` and ``end`` (with optional intent / target language / retrieved context). The endpoint's own type
names can be mapped with ``options.message_types``. End of the agent's turn: an end message, or — when
configured — no frame for ``idle_end_ms`` after audio started (``TurnDone`` then comes ``idle_end_ms`` late),
or ``silence_end_ms`` of output audio below ``silence_threshold`` after non-silent audio.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from pydantic import Field, ValidationError

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


class PcmWebSocketOptions(EndpointOptions):
    """Options of the raw PCM WebSocket adapter."""

    start_message: dict[str, Any] = Field(
        default_factory=lambda: dict(wire.DEFAULT_PCM_START),
        description="template; placeholders: session_id, language, text, entry_id, user_id, tenant_id, "
        "sample_rate, input_sample_rate, output_sample_rate",
    )
    end_message: dict[str, Any] | None = Field(
        default_factory=lambda: dict(wire.DEFAULT_PCM_END),
        description="sent after the user audio; null when the endpoint detects the end of speech itself",
    )
    text_message: dict[str, Any] | None = Field(
        default_factory=lambda: dict(wire.DEFAULT_PCM_TEXT),
        description="text-only turn template; null = audio only",
    )
    input_sample_rate: int = Field(default=24000, gt=0)
    output_sample_rate: int = Field(default=24000, gt=0)
    frame_ms: int = Field(default=100, ge=5, le=1000, description="user audio frame length (20 is typical when paced)")
    pace_audio: bool = False
    message_types: dict[str, str] = Field(
        default_factory=dict, description="endpoint type name -> one of transcript, tool_call, end, error"
    )
    idle_end_ms: int | None = Field(default=None, gt=0, description="end the turn after N ms without frames")
    silence_end_ms: int | None = Field(default=None, gt=0, description="end the turn after N ms of silent audio")
    silence_threshold: int = Field(default=256, ge=0, le=32767)
    max_message_bytes: int = Field(default=4 * 1024 * 1024, gt=0)


class PcmWebSocketAdapter(AdapterBase):
    """Binary PCM16 over WebSocket with JSON control messages."""

    def __init__(self, system: SystemConfig):
        self.system_id = system.id
        self.mode = system.mode
        self.options = load_options(PcmWebSocketOptions, system)
        unknown = set(self.options.message_types.values()) - set(wire.PCM_SERVER_MESSAGES)
        if unknown:
            from bench.errors import ConfigError

            raise ConfigError(
                f"system {system.id!r}: options.message_types: unknown target(s) {sorted(unknown)}; "
                f"known: {sorted(wire.PCM_SERVER_MESSAGES)}"
            )
        self.timeout_s = system.timeout_s
        self.headers = resolve_headers(self.options, system.id) if system.mode != "emulated" else {}
        self.capabilities = Capabilities(
            text_input=self.options.text_message is not None,
            audio_input=True,
            streaming_output=True,
            audio_output=True,
            tool_events=True,
            interruption=False,
            usage=False,
        )
        self._emulator = EmulatedEndpoint(self.options, "websocket") if system.mode == "emulated" else None
        self.url = self.options.url

    async def start(self) -> None:
        if self._emulator is not None and self._emulator.running is None:
            self.url = (await self._emulator.start()) + "/pcm"

    async def close(self) -> None:
        if self._emulator is not None:
            await self._emulator.close()

    @property
    def send_hint(self) -> bool:
        hint = self.options.send_transcript_hint
        return self.mode == "emulated" if hint is None else hint

    def _values(self, turn: TurnInput) -> dict[str, Any]:
        return template_values(
            turn,
            input_sample_rate=self.options.input_sample_rate,
            output_sample_rate=self.options.output_sample_rate,
        )

    async def run_turn(self, turn: TurnInput) -> AsyncIterator[NormalizedEvent]:
        from websockets.asyncio.client import connect
        from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus

        if self.url is None:
            raise AdapterError(f"system {self.system_id!r}: adapter not started (no URL)")
        if turn.audio_pcm16 is None and self.options.text_message is None:
            raise AdapterError(
                "text-only turn but options.text_message is null (audio-only endpoint)",
                code="unsupported_input",
            )
        values = self._values(turn)
        start = render_template(self.options.start_message, values)
        if turn.audio_pcm16 is not None and self.send_hint:
            start["transcript_hint"] = turn.text
        try:
            ws = await connect(
                self.url,
                additional_headers={**self.headers, SESSION_HEADER: session_id_for(turn)},
                open_timeout=self.options.connect_timeout_s,
                max_size=self.options.max_message_bytes,
                compression=None,
                proxy=websocket_proxy(self.url),
            )
        except InvalidStatus as exc:
            response = exc.response
            body = response.body.decode("utf-8", "replace")
            raise status_error(response.status_code, response.headers, body, self.headers) from None
        except (OSError, TimeoutError, InvalidHandshake) as exc:
            message = f"cannot connect to endpoint: {redact(str(exc), self.headers)}"
            raise AdapterError(message, retryable=True, code="connect") from None
        try:
            try:
                await ws.send(json.dumps(start))
                if turn.audio_pcm16 is not None:
                    pcm = resample_pcm16(turn.audio_pcm16, turn.sample_rate, self.options.input_sample_rate)
                    options = self.options
                    await send_audio_frames(ws, pcm, options.frame_ms, options.input_sample_rate, options.pace_audio)
                    if self.options.end_message is not None:
                        await ws.send(json.dumps(render_template(self.options.end_message, values)))
                else:
                    assert self.options.text_message is not None
                    await ws.send(json.dumps(render_template(self.options.text_message, values)))
            except ConnectionClosed as exc:
                raise AdapterError(
                    f"connection closed while sending the turn: {exc}", retryable=True, code="disconnect"
                ) from None
            yield UserTurnSent()
            async for event in self._receive(ws, turn):
                yield event
        finally:
            await close_quietly(ws)

    async def _receive(self, ws: Any, turn: TurnInput) -> AsyncIterator[NormalizedEvent]:
        watchdog = RecvWatchdog(ws, self.options.receive_timeout_s or self.timeout_s)
        try:
            async for event in self._events(watchdog, turn):
                yield event
        finally:
            watchdog.cancel()

    async def _events(self, watchdog: RecvWatchdog, turn: TurnInput) -> AsyncIterator[NormalizedEvent]:
        import numpy as np
        from websockets.exceptions import ConnectionClosed

        options = self.options
        resampler = (
            StreamResampler(options.output_sample_rate, turn.sample_rate)
            if options.output_sample_rate != turn.sample_rate
            else None
        )
        types = {name: name for name in wire.PCM_SERVER_MESSAGES}
        types.update(options.message_types)
        parts: list[str] = []
        final_text: str | None = None
        intent: str | None = None
        target_language: str | None = None
        heard_voice = False
        silent_ms = 0.0
        audio_started = False
        while True:
            try:
                if audio_started and options.idle_end_ms:
                    async with asyncio.timeout(options.idle_end_ms / 1000):
                        message = await watchdog.recv()
                else:
                    message = await watchdog.recv()
            except TimeoutError:
                break  # end of turn by idle
            except ConnectionClosed as exc:
                if watchdog.fired:
                    raise AdapterError(
                        f"stalled: no frame for {watchdog.idle_s:g} s", retryable=True, code="stall"
                    ) from None
                raise AdapterError(
                    f"connection closed mid-response ({exc})", retryable=True, code="disconnect"
                ) from None
            if isinstance(message, bytes):
                audio_started = True
                if options.silence_end_ms:
                    samples = np.frombuffer(message[: len(message) // 2 * 2], dtype="<i2")
                    loud = samples.size > 0 and int(np.abs(samples.astype(np.int32)).max()) > options.silence_threshold
                    if loud:
                        heard_voice, silent_ms = True, 0.0
                    else:
                        silent_ms += samples.size / options.output_sample_rate * 1000
                pcm = resampler.process(message) if resampler else message
                yield AudioDelta.model_construct(pcm16=pcm, sample_rate=turn.sample_rate)  # hot path
                if options.silence_end_ms and heard_voice and silent_ms >= options.silence_end_ms:
                    break  # end of turn by silence
                continue
            try:
                data = json.loads(message)
            except ValueError:
                raise AdapterError("malformed control message (not JSON)", code="malformed") from None
            if not isinstance(data, dict):
                raise AdapterError("malformed control message (not a JSON object)", code="malformed")
            kind = types.get(str(data.get("type")))
            model = wire.PCM_SERVER_MESSAGES.get(kind or "")
            if model is None:
                continue  # a control message we do not read
            try:
                event = model.model_validate({**data, "type": kind})
            except ValidationError as exc:
                raise AdapterError(f"malformed {kind} message: {exc.errors()[0]['msg']}", code="malformed") from None
            if isinstance(event, wire.PcmTranscript):
                if event.role == "user":
                    yield Transcript(role="user", text=event.text, final=event.final)
                elif event.final:
                    final_text = event.text
                    yield Transcript(role="agent", text=event.text, final=True)
                else:
                    parts.append(event.text)
                    yield TextDelta(text=event.text)
            elif isinstance(event, wire.PcmToolCall):
                try:
                    arguments = event.parsed_arguments()
                except ValueError as exc:
                    raise AdapterError(f"malformed tool call arguments: {exc}", code="malformed") from None
                if event.name == INTENT_TOOL_NAME:
                    intent, target_language = intent_from_arguments(arguments)
                yield ToolCall(call_id=event.call_id, name=event.name, arguments=arguments)
            elif isinstance(event, wire.PcmError):
                retryable = (
                    event.retryable
                    if event.retryable is not None
                    else (event.code or "") in ("server_error", "rate_limit_exceeded", "overloaded")
                )
                raise AdapterError(
                    f"endpoint error: {event.message or event.code}",
                    retryable=retryable,
                    retry_after_s=event.retry_after_s,
                    code=event.code,
                )
            elif isinstance(event, wire.PcmEnd):
                intent = intent or event.conversational_intent
                target_language = target_language or event.target_language
                yield TurnDone(
                    conversational_intent=intent,
                    target_language=target_language,
                    retrieved_context=event.retrieved_context,
                    final_text=final_text or event.text or ("".join(parts) or None),
                )
                return
        yield TurnDone(
            conversational_intent=intent,
            target_language=target_language,
            final_text=final_text or ("".join(parts) or None),
        )


def create(system: SystemConfig) -> PcmWebSocketAdapter:
    return PcmWebSocketAdapter(system)
