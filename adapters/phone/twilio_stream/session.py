"""One phone call as a bidirectional Twilio Media Stream, with the harness in Twilio's place.

On open the session sends ``connected`` and ``start`` (fresh stream, call and account SIDs, the custom parameters,
μ-law 8 kHz mono). ``push_audio`` converts the caller's frames (the session's format) into μ-law 8 kHz as a stream and
sends them as 20 ms ``media`` messages with their sequence number, chunk number and timestamp (ms of audio from the
start of the stream); the line stays open after the speech (``server_vad``: the agent decides when the caller
stopped). ``send_dtmf`` sends one ``dtmf`` message per key. ``aclose`` sends ``stop`` and closes the socket.

Back, the agent's ``media`` goes into Twilio's playback queue (``Playout``): it is handed on as ``AudioDelta`` when
the line would play it, so the audio events are what the caller hears, at real time. The agent's ``mark`` is
answered when the line reaches it; its ``clear`` drops the unplayed audio, answers the pending marks and ends the
response as interrupted by the agent (``Interrupted(by="vendor")`` unless the caller's barge-in was reported
first). The protocol has no response boundaries: a response starts with the first voiced audio on the line and ends
when the line goes quiet (``idle_end_ms`` after the queued audio finished playing) or after ``silence_end_ms`` of
silent audio. It carries no text either: responses have audio only (their text is empty unless transcribed).

``interrupt(played_ms)`` is the caller barging in: on a phone line there is nothing to send but the caller's voice
(the pump keeps sending it), so the cut is reported at once and the agent's audio that still arrives is played and
delivered: the stop time is measured from it, and the agent's ``clear`` (or its silence) ends the response.

A response is due when the caller's audio goes from voiced to silent; nothing from the agent for
``spec.idle_timeout_s`` after that is a stall. A WebSocket close with 1011 (internal error) or 1013 (try again
later) maps onto ``SERVER_ERROR`` / ``RATE_LIMITED``; any other unexpected close is a disconnect.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import secrets
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ValidationError
from websockets.exceptions import ConnectionClosed

from adapters._kit.ws import WebsocketTransport, disconnect_error
from adapters.phone.twilio_stream import wire
from adapters.phone.twilio_stream.playout import Playout
from bench.protocol import (
    AdapterError,
    AudioConverter,
    AudioDelta,
    AudioFormat,
    Capabilities,
    ErrorCode,
    ErrorEvent,
    Interrupted,
    ResponseDone,
    SessionSpec,
    StreamingSession,
)
from bench.protocol.redact import redact

#: the line's format (Twilio Media Streams carry nothing else)
LINE_FORMAT = AudioFormat(encoding="mulaw", sample_rate=wire.SAMPLE_RATE, channels=1)
#: what a WebSocket close code from the agent means
CLOSE_CODES = {1011: ErrorCode.SERVER_ERROR, 1013: ErrorCode.RATE_LIMITED}


def new_sid(prefix: str) -> str:
    """A Twilio-shaped SID: two letters and 32 hex digits."""
    return prefix + secrets.token_hex(16)


@dataclass(frozen=True)
class StreamIds:
    stream_sid: str
    call_sid: str
    account_sid: str


@dataclass
class LineSettings:
    """The session's knobs (from the adapter's options)."""

    custom_parameters: dict[str, str]
    idle_end_ms: float
    silence_end_ms: float | None
    silence_threshold: int


@dataclass
class Response:
    response_id: str
    audio_bytes: int = 0
    cut: bool = False
    silent_ms: float = 0.0


class TwilioStreamSession(StreamingSession):
    """The harness as Twilio on one bidirectional Media Stream."""

    def __init__(self, capabilities: Capabilities, spec: SessionSpec, transport: WebsocketTransport,
                 ids: StreamIds, settings: LineSettings):
        super().__init__(capabilities)
        self.spec = spec
        self.transport = transport
        self.ids = ids
        self.settings = settings
        self._sequence = itertools.count(1)
        self._chunks = itertools.count(1)
        self._to_line = AudioConverter(spec.audio, LINE_FORMAT)
        self._from_line = AudioConverter(LINE_FORMAT, AudioFormat(sample_rate=spec.audio.sample_rate))
        self._outgoing = b""
        self._caller_voiced = False
        self.response: Response | None = None
        self._pending_id: str | None = None
        self._wrong_stream_reported = False
        output_rate = spec.audio.sample_rate
        self.playout = Playout(bytes_per_second=output_rate * 2.0, quiet_s=settings.idle_end_ms / 1000.0,
                               on_audio=self._play, on_mark=self._answer_mark, on_quiet=self._on_quiet)
        self._loop = asyncio.get_running_loop()
        self._awaiting = False
        self._last_activity = self._loop.time()
        self._stall_timer: asyncio.TimerHandle | None = None
        self._send_tasks: set[asyncio.Task[Any]] = set()

    # -- opening -----------------------------------------------------------------------------------------------
    def opening(self) -> list[dict[str, Any]]:
        """``connected`` and ``start``, as Twilio sends them when the call's stream begins."""
        start = wire.Start(
            sequence_number=self._next_sequence(), stream_sid=self.ids.stream_sid,
            start=wire.StartMetadata(stream_sid=self.ids.stream_sid, account_sid=self.ids.account_sid,
                                     call_sid=self.ids.call_sid, tracks=["inbound"],
                                     custom_parameters=self.settings.custom_parameters,
                                     media_format=wire.MediaFormat()),
        )
        return [wire.dump(wire.Connected()), wire.dump(start)]

    def start_reading(self) -> None:
        self.spawn(self._read(), name=f"twilio-reader-{self.spec.conversation_id}")
        self.spawn(self.playout.run(), name=f"twilio-playout-{self.spec.conversation_id}")

    def _next_sequence(self) -> str:
        return str(next(self._sequence))

    # -- Session -----------------------------------------------------------------------------------------------
    async def send_text(self, text: str) -> None:
        raise AdapterError("a phone line carries no text: this session takes audio only", code=ErrorCode.UNSUPPORTED,
                           retryable=False)

    async def push_audio(self, frame: bytes) -> None:
        if self.ended:
            return
        self._track_caller(frame)
        self._outgoing += self._to_line.push(frame)
        while len(self._outgoing) >= wire.CHUNK_BYTES:
            chunk, self._outgoing = self._outgoing[: wire.CHUNK_BYTES], self._outgoing[wire.CHUNK_BYTES:]
            number = next(self._chunks)
            media = wire.Media(sequence_number=self._next_sequence(), stream_sid=self.ids.stream_sid,
                               media=wire.InboundMedia(track="inbound", chunk=str(number),
                                                       timestamp=str((number - 1) * wire.CHUNK_MS),
                                                       payload=wire.encode_payload(chunk)))
            if not await self._send(wire.dump(media)):
                return

    async def end_input(self) -> None:
        """A phone line has no commit: the agent hears the caller stop. A response is due from now on."""
        self._expect()

    async def interrupt(self, played_ms: float | None = None) -> None:
        """The caller barged in (its voice is on the line): reported at once; the agent's own reaction follows."""
        response = self.response
        if response is None or response.cut or self.ended:
            return
        self._report_cut(response, by="caller", played_ms=played_ms)

    async def send_dtmf(self, digits: str) -> None:
        if not digits or any(key not in wire.DTMF_KEYS for key in digits):
            raise AdapterError(f"not DTMF keys a phone sends: {digits!r} (0-9, *, #)", code=ErrorCode.BAD_REQUEST,
                               retryable=False)
        for key in digits:
            message = wire.Dtmf(stream_sid=self.ids.stream_sid, sequence_number=self._next_sequence(),
                                dtmf=wire.DtmfDigit(digit=key))
            if not await self._send(wire.dump(message)):
                return

    async def close_connection(self) -> None:
        self._cancel_stall()
        for task in list(self._send_tasks):
            task.cancel()
        if not self.ended:
            stop = wire.Stop(sequence_number=self._next_sequence(), stream_sid=self.ids.stream_sid,
                             stop=wire.StopMetadata(account_sid=self.ids.account_sid, call_sid=self.ids.call_sid))
            with contextlib.suppress(Exception):
                await self.transport.send(wire.dump(stop))
        with contextlib.suppress(Exception):
            await self.transport.close(graceful=not self.ended)

    # -- sending -----------------------------------------------------------------------------------------------
    async def _send(self, message: dict[str, Any]) -> bool:
        try:
            await self.transport.send(message)
        except ConnectionClosed as exc:
            self.fail(disconnect_error(exc))
            return False
        return True

    def _track_caller(self, frame: bytes) -> None:
        """The caller's speech ending (voiced → silent) makes a response due."""
        if self.spec.audio.encoding != "s16le":
            return
        samples = np.frombuffer(frame[: len(frame) // 2 * 2], dtype="<i2")
        voiced = samples.size > 0 and int(np.abs(samples.astype(np.int32)).max()) > self.settings.silence_threshold
        if self._caller_voiced and not voiced:
            self._expect()
        self._caller_voiced = voiced

    # -- the stall watchdog ---------------------------------------------------------------------------------------
    def _expect(self) -> None:
        self._awaiting = True
        self._last_activity = self._loop.time()
        if self._stall_timer is None:
            self._stall_timer = self._loop.call_at(self._last_activity + self.spec.idle_timeout_s, self._check_stall)

    def _activity(self) -> None:
        self._last_activity = self._loop.time()

    def _check_stall(self) -> None:
        self._stall_timer = None
        if not self._awaiting or self.ended:
            return
        quiet_until = max(self._last_activity, self.playout.playing_until) + self.spec.idle_timeout_s
        if self._loop.time() >= quiet_until:
            self._awaiting = False
            self.fail(AdapterError(f"stalled: nothing from the agent for {self.spec.idle_timeout_s:g} s after the "
                                   "caller stopped speaking", code=ErrorCode.STALLED))
            task = asyncio.ensure_future(self.transport.close(graceful=False))
            self._send_tasks.add(task)
            task.add_done_callback(self._send_tasks.discard)
            return
        self._stall_timer = self._loop.call_at(quiet_until, self._check_stall)

    def _cancel_stall(self) -> None:
        self._awaiting = False
        if self._stall_timer is not None:
            self._stall_timer.cancel()
            self._stall_timer = None

    # -- the line's audio ----------------------------------------------------------------------------------------
    def _play(self, pcm: bytes) -> None:
        """Twilio starts playing ``pcm`` (s16le at the session's rate) on the line now."""
        samples = np.frombuffer(pcm[: len(pcm) // 2 * 2], dtype="<i2")
        voiced = samples.size > 0 and int(np.abs(samples.astype(np.int32)).max()) > self.settings.silence_threshold
        response = self.response
        if response is None and not voiced:
            self._emit_audio(None, pcm)  # the line's silence between answers belongs to no response
            return
        if response is None:
            response = self._start_response()
        self._emit_audio(response, pcm)
        if voiced:
            response.silent_ms = 0.0
            return
        response.silent_ms += self.spec.audio.ms_for_bytes(len(pcm))
        if self.settings.silence_end_ms is not None and response.silent_ms >= self.settings.silence_end_ms:
            self._finish_response()

    def _emit_audio(self, response: Response | None, pcm: bytes) -> None:
        if response is not None:
            response.audio_bytes += len(pcm)
        self.emit(AudioDelta.model_construct(pcm16=pcm, sample_rate=self.spec.audio.sample_rate,
                                             response_id=response.response_id if response is not None else None))

    def _start_response(self) -> Response:
        self._cancel_stall()
        response_id, self._pending_id = self._pending_id or self.new_response_id(), None
        self.response = Response(response_id=response_id)
        return self.response

    def _finish_response(self) -> None:
        response, self.response = self.response, None
        if response is None:
            return
        self.emit(ResponseDone(response_id=response.response_id,
                               status="interrupted" if response.cut else "completed",
                               retrieved_context=list(self.spec.context)))

    def _report_cut(self, response: Response, *, by: Literal["caller", "vendor"], played_ms: float | None) -> None:
        response.cut = True
        if played_ms is None:
            played_ms = self.played_position(response.response_id)
        if played_ms is None:
            played_ms = self.spec.audio.ms_for_bytes(response.audio_bytes)
        self.emit(Interrupted(response_id=response.response_id, by=by, played_ms=played_ms))

    def _on_quiet(self) -> None:
        self._finish_response()

    def _answer_mark(self, name: str) -> None:
        message = wire.MarkPlayed(sequence_number=self._next_sequence(), stream_sid=self.ids.stream_sid,
                                  mark=wire.MarkName(name=name))
        task = asyncio.ensure_future(self._send(wire.dump(message)))
        self._send_tasks.add(task)
        task.add_done_callback(self._send_tasks.discard)

    def _on_clear(self) -> None:
        """The agent stopped its own playback: the unplayed audio is gone and the response ends interrupted."""
        self.playout.clear()
        response = self.response
        if response is None:
            return
        if not response.cut:
            self._report_cut(response, by="vendor", played_ms=None)
        self._finish_response()

    # -- reading -----------------------------------------------------------------------------------------------
    async def _read(self) -> None:
        while True:
            try:
                frame = await self.transport.recv()
            except ConnectionClosed as exc:
                if self._closed:
                    return
                code = exc.rcvd.code if exc.rcvd is not None else None
                if code in CLOSE_CODES:
                    reason = f" {exc.rcvd.reason}" if exc.rcvd is not None and exc.rcvd.reason else ""
                    raise AdapterError(redact(f"the agent closed the stream (code {code}{reason})"),
                                       code=CLOSE_CODES[code]) from None
                if code == 1000 and self.response is None and not self._awaiting:
                    self.finish()  # the agent ended the call between answers
                    return
                raise disconnect_error(exc) from None
            self._activity()
            if isinstance(frame, bytes):
                raise _malformed("a binary frame (Media Streams carry JSON text only)")
            self._on_message(frame)

    def _on_message(self, frame: str) -> None:
        try:
            data = json.loads(frame)
        except ValueError:
            raise _malformed("a message that is not JSON") from None
        if not isinstance(data, dict):
            raise _malformed("a message that is not a JSON object")
        if data.get("event") not in ("media", "mark", "clear"):
            return  # Twilio ignores what it does not know
        try:
            message: BaseModel = wire.AGENT_MESSAGE.validate_python(data)
        except ValidationError as exc:
            error = exc.errors()[0]
            raise _malformed(f"{data.get('event')} message: {'.'.join(map(str, error['loc']))}: {error['msg']}") \
                from None
        if getattr(message, "stream_sid", None) != self.ids.stream_sid:
            self._report_wrong_stream()
            return
        if isinstance(message, wire.AgentMedia):
            self.playout.add_audio(self._from_line.push(message.media.audio()))
        elif isinstance(message, wire.AgentMark):
            self.playout.add_mark(message.mark.name)
        elif isinstance(message, wire.Clear):
            self._on_clear()

    def _report_wrong_stream(self) -> None:
        if not self._wrong_stream_reported:
            self._wrong_stream_reported = True
            self.emit(ErrorEvent(message="the agent sent messages for another streamSid; Twilio would not play them",
                                 code=ErrorCode.MALFORMED, fatal=False))


def _malformed(what: str) -> AdapterError:
    return AdapterError(redact(f"malformed frame from the agent: {what}"), code=ErrorCode.MALFORMED, retryable=False)
