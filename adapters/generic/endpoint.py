"""The base of the generic endpoint adapters: the ``SystemUnderTest`` and the WebSocket session skeleton.

``EndpointSystem`` resolves the live URL and headers once (missing credentials are configuration errors) and
opens one session per conversation. ``WebSocketEndpointSession`` is one persistent socket: a background
reader hands each frame to the protocol subclass (``on_text`` / ``on_audio``), which opens, feeds and finishes
responses through the helpers here. Response bookkeeping lives here too: the response id handed out with
``UserTurnSent`` is the one the response's events carry, and a response cut by ``interrupt(played_ms)`` reports
``Interrupted`` at once (``played_ms``: what the caller heard, else the audio delivered) but stays open: the audio
the endpoint still sends for it is delivered (the engine measures the stop time from it; its text is not), and its
``ResponseDone(status="interrupted")`` comes when the endpoint ends it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from websockets.exceptions import ConnectionClosed

from adapters._kit.ws import WebsocketTransport, disconnect_error
from adapters.generic.common import (
    EndpointOptions,
    StallWatchdog,
    Target,
    endpoint_error,
    live_target,
    session_target,
)
from bench.protocol import (
    AdapterError,
    AudioDelta,
    Capabilities,
    ErrorCode,
    Interrupted,
    ResponseDone,
    SessionReady,
    SessionSpec,
    StreamingSession,
    StreamResampler,
    Usage,
)
from bench.protocol.config import AdapterConfig


class EndpointSystem:
    """One configured generic endpoint; each conversation gets its own session (connection)."""

    # the SystemUnderTest attributes, typed as the protocol types them
    system_id: str
    mode: str
    capabilities: Capabilities

    def __init__(self, system: AdapterConfig, options: EndpointOptions, capabilities: Capabilities):
        self.system_id = system.id
        self.mode = system.mode
        self.options = options
        self.capabilities = capabilities
        self._live = live_target(options, system)

    async def start(self) -> None:
        """Nothing is shared between conversations: every session opens its own connection."""

    async def close(self) -> None:
        """Sessions close their own connections."""

    def target(self, spec: SessionSpec) -> Target:
        return session_target(self.options, self._live, spec, self.system_id)

    async def open_websocket_session(self, spec: SessionSpec, make_session: Callable[[WebsocketTransport], Any],
                                     opening: Callable[[Any], dict[str, Any]], what: str) -> Any:
        """Connect, send the session's opening message (``what`` names it in errors), start reading."""
        target = self.target(spec)
        transport = await WebsocketTransport.open(target.url, target.headers, self.options.connect_timeout_s)
        session = make_session(transport)
        try:
            await transport.send(opening(session))
        except Exception as exc:
            await transport.close(graceful=False)
            raise endpoint_error(f"connection lost while sending {what}: {exc}", ErrorCode.CONNECT) from None
        session.emit(SessionReady())
        session.start_reading()
        return session


@dataclass
class ResponseState:
    """What one agent response delivered so far."""

    response_id: str
    vendor_id: str | None = None
    text: list[str] = field(default_factory=list)
    final_text: str | None = None
    intent: str | None = None
    target_language: str | None = None
    #: bytes of audio handed on (at the session's output rate)
    audio_bytes: int = 0
    #: cut off (``Interrupted`` reported): its audio is still delivered, its text no longer; it ends interrupted
    cut: bool = False
    #: output audio louder than the silence threshold has arrived (PCM end-by-silence)
    heard_voice: bool = False
    silent_ms: float = 0.0

    def answer_text(self) -> str | None:
        return self.final_text if self.final_text is not None else ("".join(self.text) or None)


class WebSocketEndpointSession(StreamingSession):
    """One conversation on one WebSocket; subclasses speak the protocol."""

    #: how long the endpoint may stay quiet during a response before it counts as done (None: never)
    quiet_gap_s: float | None = None

    def __init__(self, capabilities: Capabilities, spec: SessionSpec, transport: WebsocketTransport, *,
                 input_rate: int, output_rate: int):
        super().__init__(capabilities)
        self.spec = spec
        self.transport = transport
        self.input_rate = input_rate
        self.output_rate = output_rate
        #: one stream resampler per direction (filter state kept across frames)
        self.audio_in = StreamResampler(spec.audio.sample_rate, input_rate)
        self.audio_out = StreamResampler(output_rate, spec.audio.sample_rate)
        self.watchdog = StallWatchdog(spec.idle_timeout_s, self._stalled)
        self.response: ResponseState | None = None
        self._pending_id: str | None = None

    def start_reading(self) -> None:
        self.spawn(self._read(), name=f"endpoint-reader-{self.spec.conversation_id}")

    # -- protocol hooks ------------------------------------------------------------------------------
    def on_text(self, message: str) -> None:
        raise NotImplementedError

    def on_audio(self, pcm: bytes) -> None:
        """A binary frame: agent audio at ``output_rate``."""
        self.deliver_audio(self.open_response(), pcm)

    def on_quiet(self) -> None:
        """The endpoint sent nothing for ``quiet_gap_s`` during a response."""

    async def send_cancel(self) -> None:
        """Ask the endpoint to stop the current response (protocols without a cancel message do nothing)."""

    # -- sending -------------------------------------------------------------------------------------
    async def send(self, frame: dict[str, Any] | bytes) -> bool:
        """Write one frame; a dropped connection ends the session (``False``)."""
        try:
            await self.transport.send(frame)
        except ConnectionClosed as exc:
            self.fail(disconnect_error(exc))
            return False
        return True

    async def push_audio(self, frame: bytes) -> None:
        if self.ended:
            return
        frame = self.audio_in.push(frame)
        try:
            await self.transport.send(frame)
        except ConnectionClosed as exc:
            self.fail(disconnect_error(exc))

    def user_turn_response_id(self) -> str:
        """The response a caller transcript belongs to: the one in progress, else (or after a cut) the next."""
        if self.response is not None and not self.response.cut:
            return self.response.response_id
        return self.pending_response_id()

    def pending_response_id(self) -> str:
        """The id the next response will carry (handed out with ``UserTurnSent`` before it exists)."""
        if self._pending_id is None:
            self._pending_id = self.new_response_id()
        return self._pending_id

    # -- responses -----------------------------------------------------------------------------------
    def start_response(self, vendor_id: str | None = None) -> ResponseState:
        """A new response begins (an unfinished cut one ends: its audio has stopped)."""
        if self.response is not None and self.response.cut:
            self.finish_response()
        response_id, self._pending_id = self._pending_id or self.new_response_id(), None
        self.response = ResponseState(response_id=response_id, vendor_id=vendor_id)
        self.watchdog.expect()
        return self.response

    def open_response(self) -> ResponseState:
        """The response in progress, started by this frame if there is none."""
        return self.response if self.response is not None else self.start_response()

    def deliver_audio(self, response: ResponseState | None, pcm: bytes) -> None:
        """Hand on agent audio at the session's rate (``response`` None: line audio outside any response)."""
        pcm = self.audio_out.push(pcm)
        if response is not None:
            response.audio_bytes += len(pcm)
        self.emit(AudioDelta.model_construct(pcm16=pcm, sample_rate=self.spec.audio.sample_rate,
                                             response_id=response.response_id if response is not None else None))

    def finish_response(self, *, intent: str | None = None, target_language: str | None = None,
                        retrieved_context: list[str] | None = None, final_text: str | None = None,
                        usage: Usage | None = None) -> None:
        """The endpoint finished the current response: ``Usage`` (if metered), then ``ResponseDone``."""
        response, self.response = self.response, None
        self.watchdog.settle()
        if response is None:
            return
        if response.cut:
            self.emit(ResponseDone(response_id=response.response_id, status="interrupted",
                                   conversational_intent=response.intent, target_language=response.target_language,
                                   retrieved_context=list(self.spec.context), final_text=response.answer_text()))
            return
        if usage is not None:
            usage.response_id = response.response_id
            self.emit(usage)
        self.emit(ResponseDone(
            response_id=response.response_id,
            conversational_intent=response.intent or intent,
            target_language=response.target_language or target_language,
            retrieved_context=list(retrieved_context or self.spec.context),
            final_text=final_text if final_text is not None else response.answer_text(),
        ))

    def report_interruption(self, response: ResponseState, *, by: Literal["caller", "vendor"],
                            played_ms: float | None = None) -> None:
        """``Interrupted`` with what the caller heard; the response ends (interrupted) when the endpoint ends it."""
        if response.cut:
            return
        response.cut = True
        if played_ms is None:
            played_ms = self.played_position(response.response_id)
        self.emit(Interrupted(response_id=response.response_id, by=by,
                              played_ms=played_ms if played_ms is not None
                              else self.spec.audio.ms_for_bytes(response.audio_bytes)))

    async def interrupt(self, played_ms: float | None = None) -> None:
        """Barge in: reported at once; the endpoint is asked to stop (its audio until then is still delivered)."""
        response = self.response
        if response is None or response.cut or self.ended:
            return
        self.report_interruption(response, by="caller", played_ms=played_ms)
        await self.send_cancel()

    # -- reading -------------------------------------------------------------------------------------
    async def _read(self) -> None:
        while True:
            gap = self.quiet_gap_s if self.response is not None else None
            try:
                if gap is None:
                    frame = await self.transport.recv()
                else:
                    async with asyncio.timeout(gap):
                        frame = await self.transport.recv()
            except TimeoutError:
                self.on_quiet()
                continue
            except ConnectionClosed as exc:
                if self._closed:
                    return
                normal = exc.rcvd is not None and exc.rcvd.code == 1000
                if normal and self.response is None and not self.watchdog.awaiting:
                    self.finish()  # the endpoint ended the conversation between responses
                    return
                raise disconnect_error(exc) from None
            if isinstance(frame, bytes):
                self.on_audio(frame)
            else:
                self.on_text(frame)

    def _stalled(self) -> None:
        self.fail(AdapterError(f"stalled: no event for {self.spec.idle_timeout_s:g} s while a response was awaited",
                               code=ErrorCode.STALLED))
        self.spawn(self.transport.close(graceful=False))

    async def close_connection(self) -> None:
        self.watchdog.cancel()
        with contextlib.suppress(Exception):
            await self.transport.close(graceful=not self.ended)
