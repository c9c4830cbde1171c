"""One phone call over SIP: the harness is the caller's user agent, the agent's audio comes back over RTP (G.711).

Opening sends the INVITE (through the adapter's account: digest credentials and an outbound proxy when configured)
and waits for the call to be answered and its media to flow; a final error response is mapped onto ``ErrorCode``
(401/403/407 auth, 486/600/503 busy or overloaded, other 4xx bad request, 5xx server error, no answer: connect).

``push_audio`` converts the caller's frames (the session's format) into s16le 8 kHz as a stream and queues them on
the line; PJSIP encodes them (PCMU or PCMA, as negotiated) and sends one RTP packet every 20 ms, silence when
nothing is queued, so the line stays open after the speech (``server_vad``: the agent hears the caller stop).
``send_dtmf`` sends RFC 4733 telephone-events. ``aclose`` sends BYE.

Back, every 20 ms frame PJSIP decodes (after its jitter buffer) is delivered as ``AudioDelta`` the moment it is
played out of the bridge, so the audio events are what the caller hears, at real time; caller-heard latency, the
barge-in stop time and the answer to a keypad key are all measured on them. A response starts with the first voiced
frame and ends after ``quiet_end_ms`` of silence on the line. SIP carries no text: responses have audio only.

``interrupt(played_ms)`` is the caller barging in: on a phone line there is nothing to send but the caller's voice,
so the cut is reported at once and the agent's audio that still arrives is delivered (the stop time comes from it).

The far end's BYE ends the call: with ``Reason: SIP;cause=500`` (RFC 3326) it is a server error, with cause 503 a
rate limit (SIP's overload signal), without a cause between answers the agent hung up (the session finishes), and
during an answer the line dropped (``DISCONNECTED``). An in-dialog request that breaks its protocol (a DTMF INFO
without a valid signal) is ``MALFORMED``. Nothing voiced for ``spec.idle_timeout_s`` after the caller stopped is a
stall.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import Literal

import numpy as np

from adapters.phone.sip.line import DTMF_KEYS, CallEnd, Line, LineListener
from adapters.phone.sip.stack import FRAME_MS, SAMPLE_RATE
from bench.protocol import (
    AdapterError,
    AudioConverter,
    AudioDelta,
    AudioFormat,
    Capabilities,
    ErrorCode,
    Interrupted,
    ResponseDone,
    SessionSpec,
    StreamingSession,
)
from bench.protocol.redact import redact

#: what the bridge exchanges with the session: s16le 8 kHz mono (G.711 is decoded/encoded by PJSIP)
LINE_PCM = AudioFormat(encoding="s16le", sample_rate=SAMPLE_RATE, channels=1)
#: what a BYE's RFC 3326 cause means
BYE_CAUSES = {500: ErrorCode.SERVER_ERROR, 503: ErrorCode.RATE_LIMITED}


def invite_error(status: int, reason: str) -> AdapterError:
    """The ``AdapterError`` of an INVITE that got final response ``status`` (0: none came)."""
    if status in (401, 403, 407):
        code, retryable = ErrorCode.AUTH, False
    elif status in (486, 600, 503):
        code, retryable = ErrorCode.RATE_LIMITED, True
    elif status in (0, 408, 480):
        code, retryable = ErrorCode.CONNECT, True
    elif 400 <= status < 500 or status in (603, 604, 606):
        code, retryable = ErrorCode.BAD_REQUEST, False
    else:
        code, retryable = ErrorCode.SERVER_ERROR, True
    return AdapterError(redact(f"the call was not answered: SIP {status} {reason}".rstrip()), code=code,
                        retryable=retryable)


@dataclass
class LineSettings:
    """The session's knobs (from the adapter's options)."""

    quiet_end_ms: float
    silence_threshold: int


@dataclass
class Response:
    response_id: str
    audio_bytes: int = 0
    cut: bool = False
    silent_ms: float = 0.0


class SipSession(StreamingSession, LineListener):
    """The harness as the caller on one SIP call."""

    def __init__(self, capabilities: Capabilities, spec: SessionSpec, line: Line, settings: LineSettings):
        super().__init__(capabilities)
        self.spec = spec
        self.line = line
        self.settings = settings
        self._to_line = AudioConverter(spec.audio, LINE_PCM)
        self._from_line = AudioConverter(LINE_PCM, AudioFormat(sample_rate=spec.audio.sample_rate))
        self._caller_voiced = False
        self.response: Response | None = None
        self._loop = asyncio.get_running_loop()
        self._awaiting = False
        self._last_activity = self._loop.time()
        self._stall_timer: asyncio.TimerHandle | None = None
        self._closing = False

    # -- Session -----------------------------------------------------------------------------------------------
    async def send_text(self, text: str) -> None:
        raise AdapterError("a phone line carries no text: this session takes audio only", code=ErrorCode.UNSUPPORTED,
                           retryable=False)

    async def push_audio(self, frame: bytes) -> None:
        if self.ended:
            return
        self._track_caller(frame)
        self.line.write(self._to_line.push(frame))

    async def end_input(self) -> None:
        """A phone line has no commit: the agent hears the caller stop. A response is due from now on."""
        self._expect()

    async def interrupt(self, played_ms: float | None = None) -> None:
        """The caller barged in (its voice is on the line): reported at once; the agent's own reaction follows."""
        response = self.response
        if response is None or response.cut or self.ended:
            return
        self._report_cut(response, played_ms=played_ms)

    async def send_dtmf(self, digits: str) -> None:
        if not digits or any(key not in DTMF_KEYS for key in digits):
            raise AdapterError(f"not DTMF keys a phone sends: {digits!r} (0-9, *, #)", code=ErrorCode.BAD_REQUEST,
                               retryable=False)
        await self.line.send_dtmf(digits)
        self._expect()

    async def close_connection(self) -> None:
        self._closing = True
        self._cancel_stall()
        if not self.line.ended.is_set():
            with contextlib.suppress(Exception):
                await self.line.hangup()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(5):
                    await self.line.ended.wait()

    # -- the line (LineListener, on the event loop) ------------------------------------------------------------
    def on_audio(self, pcm: bytes, heard_at: float) -> None:
        if self.ended:
            return
        samples = np.frombuffer(pcm[: len(pcm) // 2 * 2], dtype="<i2")
        voiced = samples.size > 0 and int(np.abs(samples.astype(np.int32)).max()) > self.settings.silence_threshold
        audio = self._from_line.push(pcm)
        response = self.response
        if response is None and not voiced:
            self._emit_audio(None, audio)  # the line's silence between answers belongs to no response
            return
        if response is None:
            response = self._start_response()
        self._emit_audio(response, audio)
        if voiced:
            response.silent_ms = 0.0
            return
        response.silent_ms += FRAME_MS
        if response.silent_ms >= self.settings.quiet_end_ms:
            self._finish_response()

    def on_ended(self, end: CallEnd) -> None:
        if self._closing or self.ended:
            return
        cause = self.line.bye_cause
        if cause in BYE_CAUSES:
            self.fail(AdapterError(f"the agent ended the call: SIP cause {cause}", code=BYE_CAUSES[cause]))
        elif self.response is None and not self._awaiting:
            self.finish()  # the agent hung up between answers
        else:
            self.fail(AdapterError(f"the call dropped (SIP {end.status} {end.reason})".rstrip(),
                                   code=ErrorCode.DISCONNECTED))

    def on_protocol_error(self, problem: str) -> None:
        if not self.ended:
            self.fail(AdapterError(redact(f"malformed request from the agent: {problem}"), code=ErrorCode.MALFORMED,
                                   retryable=False))

    # -- responses ---------------------------------------------------------------------------------------------
    def _emit_audio(self, response: Response | None, pcm: bytes) -> None:
        if response is not None:
            response.audio_bytes += len(pcm)
        self.emit(AudioDelta.model_construct(pcm16=pcm, sample_rate=self.spec.audio.sample_rate,
                                             response_id=response.response_id if response is not None else None))

    def _start_response(self) -> Response:
        self._cancel_stall()
        self.response = Response(response_id=self.new_response_id())
        return self.response

    def _finish_response(self) -> None:
        response, self.response = self.response, None
        if response is None:
            return
        self.emit(ResponseDone(response_id=response.response_id,
                               status="interrupted" if response.cut else "completed",
                               retrieved_context=list(self.spec.context)))

    def _report_cut(self, response: Response, *, played_ms: float | None,
                    by: Literal["caller", "vendor"] = "caller") -> None:
        response.cut = True
        if played_ms is None:
            played_ms = self.played_position(response.response_id)
        if played_ms is None:
            played_ms = self.spec.audio.ms_for_bytes(response.audio_bytes)
        self.emit(Interrupted(response_id=response.response_id, by=by, played_ms=played_ms))

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

    def _check_stall(self) -> None:
        self._stall_timer = None
        if not self._awaiting or self.ended:
            return
        quiet_until = self._last_activity + self.spec.idle_timeout_s
        if self._loop.time() >= quiet_until:
            self._awaiting = False
            self.fail(AdapterError(f"stalled: nothing from the agent for {self.spec.idle_timeout_s:g} s after the "
                                   "caller stopped speaking", code=ErrorCode.STALLED))
            return
        self._stall_timer = self._loop.call_at(quiet_until, self._check_stall)

    def _cancel_stall(self) -> None:
        self._awaiting = False
        if self._stall_timer is not None:
            self._stall_timer.cancel()
            self._stall_timer = None
