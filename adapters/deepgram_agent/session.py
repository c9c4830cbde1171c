"""One Deepgram Voice Agent turn over an open socket, independent of how the socket was opened.

The same driver runs the live path (deepgram-sdk socket) and the emulated path (plain ``websockets``): it
waits for ``Welcome``, sends ``Settings``, waits for ``SettingsApplied``, sends the user turn
(``InjectUserMessage``, or PCM16 audio followed by a silence tail so the agent's end-of-turn detection fires),
answers client-side function calls, and turns server messages into normalized events until ``AgentAudioDone``
(+ ``LatencyReport``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from websockets.exceptions import ConnectionClosed

from adapters.base import (
    AdapterError,
    AudioDelta,
    NormalizedEvent,
    TextDelta,
    ToolCall,
    ToolResult,
    Transcript,
    TurnDone,
    TurnInput,
    Usage,
    UserTurnSent,
)
from adapters.deepgram_agent import wire
from adapters.intent_tool import INTENT_TOOL_NAME, intent_from_arguments

AUDIO_FRAME_MARK = "<audio>"


class AgentTransport(Protocol):
    """An open Voice Agent socket: JSON messages and binary audio both ways."""

    async def send(self, message: wire.Message) -> None: ...

    async def send_audio(self, pcm: bytes) -> None: ...

    async def recv(self) -> str | bytes | dict[str, Any]:
        """The next frame: raw text, binary audio, or an already-decoded JSON object."""
        ...


@dataclass
class DriverOptions:
    """Knobs of one turn (timeouts in seconds)."""

    stall_timeout_s: float = 15.0
    handshake_timeout_s: float = 15.0
    latency_report_grace_s: float = 1.0
    keepalive_s: float = 5.0
    audio_frame_ms: int = 20
    audio_pacing: float = 1.0
    silence_tail_ms: int = 1500
    output_sample_rate: int = 24000
    function_ack: str = "ok"
    #: wire message types in arrival order (binary frames as ``<audio>``), filled when not None
    trace: list[str] | None = None


@dataclass
class _TurnState:
    connected_at: float
    audio_in_bytes: int = 0
    audio_out_bytes: int = 0
    texts: list[str] = field(default_factory=list)
    intent: str | None = None
    target_language: str | None = None
    started_speaking: wire.AgentStartedSpeaking | None = None
    latency_report: wire.LatencyReport | None = None
    audio_done_at: float | None = None
    report_after_done: bool = False


def error_from_server(message: wire.Error) -> AdapterError:
    """``Error`` messages are retryable unless the code says the request itself was wrong."""
    retryable = message.code.upper() not in wire.CLIENT_ERROR_CODES
    return AdapterError(
        f"Deepgram Error {message.code}: {message.description}",
        retryable=retryable,
        code=message.code or "error",
    )


def vendor_latencies(state: _TurnState) -> dict[str, float]:
    """Deepgram's own latency figures converted from seconds to ms under ``deepgram_*`` keys."""
    out: dict[str, float] = {}
    speaking, report = state.started_speaking, state.latency_report
    if speaking is not None:
        out["deepgram_total_latency"] = speaking.total_latency * 1000.0
        out["deepgram_ttt_latency"] = speaking.ttt_latency * 1000.0
        out["deepgram_tts_latency"] = speaking.tts_latency * 1000.0
    if report is not None:
        fields = (
            "stt_latency",
            "ttt_token_latency",
            "ttt_text_latency",
            "ttt_tool_latency",
            "ttt_thinking_latency",
            "tts_latency",
            "total_latency",
        )
        for name in fields:
            value = getattr(report, name)
            if value is not None:
                out[f"deepgram_report_{name}"] = value * 1000.0
        fallback = {
            "deepgram_total_latency": report.total_latency,
            "deepgram_tts_latency": report.tts_latency,
            "deepgram_ttt_latency": report.ttt_text_latency or report.ttt_token_latency,
        }
        for key, value in fallback.items():
            if key not in out and value is not None:
                out[key] = value * 1000.0
    return {k: round(v, 3) for k, v in out.items()}


class TurnDriver:
    """Runs one turn on an open transport; ``run()`` is the async generator of normalized events."""

    def __init__(
        self,
        transport: AgentTransport,
        settings: wire.Settings,
        turn: TurnInput,
        options: DriverOptions,
        retrieved_context: list[str],
        connected_at: float | None = None,
    ):
        self.transport = transport
        self.settings = settings
        self.turn = turn
        self.options = options
        self.retrieved_context = retrieved_context
        self.state = _TurnState(connected_at=connected_at if connected_at is not None else time.monotonic())
        self._background: list[asyncio.Task[None]] = []

    # ------------------------------------------------------------------ receiving

    async def _recv(self, timeout: float, what: str) -> wire.Message | bytes:
        try:
            frame = await asyncio.wait_for(self.transport.recv(), timeout)
        except TimeoutError:
            raise AdapterError(
                f"Deepgram sent nothing for {timeout:g} s while waiting for {what}",
                retryable=True,
                code="stall",
            ) from None
        except ConnectionClosed as exc:
            raise AdapterError(
                f"Deepgram socket closed while waiting for {what}: {exc}", retryable=True, code="disconnect"
            ) from None
        except wire.MalformedFrame as exc:
            raise AdapterError(
                f"malformed Deepgram frame: {exc}", retryable=False, code="malformed"
            ) from None
        if isinstance(frame, bytes | bytearray):
            self._trace(AUDIO_FRAME_MARK)
            return bytes(frame)
        try:
            message = wire.parse_server_message(frame)
        except wire.MalformedFrame as exc:
            raise AdapterError(
                f"malformed Deepgram frame: {exc}", retryable=False, code="malformed"
            ) from None
        self._trace(message.type)
        return message

    def _trace(self, label: str) -> None:
        trace = self.options.trace
        if trace is None:
            return
        if label == AUDIO_FRAME_MARK and trace and trace[-1] == AUDIO_FRAME_MARK:
            return
        trace.append(label)

    async def _await_type(self, wanted: type[wire.Message]) -> wire.Message:
        while True:
            message = await self._recv(self.options.handshake_timeout_s, wanted.__name__)
            if isinstance(message, wanted):
                return message
            if isinstance(message, wire.Error):
                raise error_from_server(message)

    # ------------------------------------------------------------------ sending

    async def _send_audio_turn(self, pcm: bytes) -> None:
        rate = self.turn.sample_rate
        step = max(2, int(rate * self.options.audio_frame_ms / 1000) * 2)
        frame_s = self.options.audio_frame_ms / 1000.0
        start = time.monotonic()
        for index, offset in enumerate(range(0, len(pcm), step)):
            chunk = pcm[offset : offset + step]
            if self.options.audio_pacing > 0:
                delay = start + index * frame_s / self.options.audio_pacing - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
            await self.transport.send_audio(chunk)
            self.state.audio_in_bytes += len(chunk)

    async def _silence_tail(self) -> None:
        """Trailing silence after the caller's last word, so the agent's end-of-turn detection can fire."""
        rate = self.turn.sample_rate
        frame = bytes(int(rate * self.options.audio_frame_ms / 1000) * 2)
        frames = max(1, self.options.silence_tail_ms // self.options.audio_frame_ms)
        frame_s = self.options.audio_frame_ms / 1000.0
        with contextlib.suppress(ConnectionClosed):
            for _ in range(frames):
                await self.transport.send_audio(frame)
                self.state.audio_in_bytes += len(frame)
                if self.options.audio_pacing > 0:
                    await asyncio.sleep(frame_s / self.options.audio_pacing)

    async def _keepalive(self) -> None:
        with contextlib.suppress(ConnectionClosed):
            while True:
                await asyncio.sleep(self.options.keepalive_s)
                await self.transport.send(wire.KeepAlive())

    def _spawn(self, coro: Any) -> None:
        self._background.append(asyncio.create_task(coro))

    async def _cancel_background(self) -> None:
        for task in self._background:
            task.cancel()
        for task in self._background:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._background.clear()

    # ------------------------------------------------------------------ the turn

    async def run(self) -> AsyncIterator[NormalizedEvent]:
        try:
            async for event in self._run():
                yield event
        finally:
            await self._cancel_background()

    async def _run(self) -> AsyncIterator[NormalizedEvent]:
        await self._await_type(wire.Welcome)
        await self._send(self.settings)
        await self._await_type(wire.SettingsApplied)
        if self.turn.audio_pcm16:
            await self._send_audio_turn(self.turn.audio_pcm16)
            yield UserTurnSent()
            self._spawn(self._silence_tail())
        else:
            await self._send(wire.InjectUserMessage(content=self.turn.text))
            yield UserTurnSent()
        self._spawn(self._keepalive())
        async for event in self._receive_until_done():
            yield event
        yield self._usage()
        yield TurnDone(
            conversational_intent=self.state.intent,
            target_language=self.state.target_language,
            retrieved_context=list(self.retrieved_context),
            final_text=" ".join(t.strip() for t in self.state.texts if t.strip()) or None,
        )

    async def _send(self, message: wire.Message) -> None:
        try:
            await self.transport.send(message)
        except ConnectionClosed as exc:
            raise AdapterError(
                f"Deepgram socket closed while sending {message.type}: {exc}",
                retryable=True,
                code="disconnect",
            ) from None

    async def _receive_until_done(self) -> AsyncIterator[NormalizedEvent]:
        state = self.state
        while True:
            timeout = self.options.stall_timeout_s
            if state.audio_done_at is not None:
                if state.report_after_done:
                    return
                timeout = state.audio_done_at + self.options.latency_report_grace_s - time.monotonic()
                if timeout <= 0:
                    return
            try:
                message = await self._recv(timeout, "the agent's reply")
            except AdapterError as exc:
                if state.audio_done_at is not None and exc.code in ("stall", "disconnect"):
                    # the reply is complete: a missing LatencyReport or a closing socket is not a failure
                    return
                raise
            if isinstance(message, bytes):
                state.audio_out_bytes += len(message)
                state.audio_done_at = None  # more speech: the reply goes on after an AgentAudioDone
                state.report_after_done = False
                yield AudioDelta(pcm16=message, sample_rate=self.options.output_sample_rate)
                continue
            async for event in self._handle(message):
                yield event

    async def _handle(self, message: wire.Message) -> AsyncIterator[NormalizedEvent]:
        state = self.state
        if isinstance(message, wire.ConversationText):
            if message.role == "user":
                yield Transcript(role="user", text=message.content)
            else:
                text = message.content if not state.texts else " " + message.content
                state.texts.append(message.content)
                yield TextDelta(text=text)
        elif isinstance(message, wire.FunctionCallRequest):
            for call in message.functions:
                arguments = call.parsed_arguments()
                yield ToolCall(call_id=call.id, name=call.name, arguments=arguments)
                if call.name == INTENT_TOOL_NAME:
                    state.intent, state.target_language = intent_from_arguments(arguments)
                if call.client_side:
                    content = json.dumps({"result": self.options.function_ack})
                    await self._send(wire.FunctionCallResponse(id=call.id, name=call.name, content=content))
                    yield ToolResult(call_id=call.id, output=content)
        elif isinstance(message, wire.AgentStartedSpeaking):
            if state.started_speaking is None:
                state.started_speaking = message
            state.audio_done_at = None
            state.report_after_done = False
        elif isinstance(message, wire.AgentAudioDone):
            state.audio_done_at = time.monotonic()
            state.report_after_done = False
        elif isinstance(message, wire.LatencyReport):
            state.latency_report = message
            if state.audio_done_at is not None:
                state.report_after_done = True
        elif isinstance(message, wire.Error):
            raise error_from_server(message)
        elif isinstance(message, wire.InjectionRefused):
            raise AdapterError(
                f"Deepgram refused the injected message: {message.message}",
                retryable=True,
                code="injection_refused",
            )
        # UserStartedSpeaking, AgentThinking, History, Warning and unknown types carry nothing to normalize.

    def _usage(self) -> Usage:
        state = self.state
        rate_in = self.turn.sample_rate
        return Usage(
            input_audio_seconds=round(state.audio_in_bytes / 2 / rate_in, 3) if state.audio_in_bytes else 0.0,
            output_audio_seconds=round(state.audio_out_bytes / 2 / self.options.output_sample_rate, 3),
            billed_minutes=round((time.monotonic() - state.connected_at) / 60.0, 5),
            vendor_latency_ms=vendor_latencies(state),
        )
