"""Audio conversations (live only): one Retell web call per conversation, joined as the caller over LiveKit.

This is what Retell's own web client does (retell-client-js-sdk ``livekit-transport.ts``): ``call.create_web_call``
returns an ``access_token``; the caller joins the call's LiveKit room with it (``livekit`` rtc SDK), publishes a
microphone track — here fed by ``push_audio`` frames — plays the track ``agent_audio`` and reads JSON data packets
from the participant ``server``:

* ``update`` {transcript}: a new user utterance is ``UserSpeechStarted``; when the agent's turn begins it is
  ``UserSpeechStopped`` and the user's final ``Transcript``; the agent utterance's growth is ``TextDelta``.
  Retell sends no VAD events to the caller, so the speech events follow its transcript (they lag the audio by
  Retell's ASR delay);
* ``agent_start_talking`` / ``agent_stop_talking``: ``AgentSpeechStarted`` / ``AgentSpeechStopped``; the stop ends
  the response (``ResponseDone``; ``Interrupted`` first when the caller spoke over the agent);
* agent audio frames (resampled to the session's rate) are ``AudioDelta`` of the open response.

Retell detects the end of the caller's speech itself (server VAD): ``end_input`` is only a hint. Retell has no
caller-side cancel, so ``interrupt`` is unsupported: a barge-in is the caller's audio. On ``aclose`` the caller
leaves the room and the call object (``call.retrieve``) gives ``call_cost`` (cents), duration and Retell's latency
figures as ``Usage(scope="session")``. No LiveKit server runs offline, so only a live run exercises this path; the
event mapping is tested with a fake room (``CallRoom``).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from adapters._kit.call_meter import CallMeter
from adapters.retell import wire
from adapters.retell.errors import rest_error, room_error
from adapters.retell.session import RetellSession, SessionSetup
from bench.protocol import (
    AdapterError,
    AgentSpeechStarted,
    AgentSpeechStopped,
    AudioDelta,
    CallControl,
    Capabilities,
    ContextUpdate,
    ErrorCode,
    ErrorEvent,
    Interrupted,
    SessionReady,
    StreamResampler,
    TextDelta,
    Transcript,
    Usage,
    UserSpeechStarted,
    UserSpeechStopped,
)
from bench.protocol.redact import redact

#: the LiveKit server Retell's web client joins (retell-client-js-sdk ``LIVEKIT_HOST``)
RETELL_LIVEKIT_URL = "wss://retell-ai-4ihahnq7.livekit.cloud"
AGENT_AUDIO_TRACK = "agent_audio"
SERVER_IDENTITY = "server"
#: agent audio frames quieter than this (peak sample) outside a response are line silence, not speech
SILENCE_PEAK = 64

WEB_CALL_CAPABILITIES = Capabilities(text_input=False, audio_input=True, streaming_output=True, audio_output=True,
                                     tool_events=False, interruption=False, usage=True, server_vad=True,
                                     multi_turn=True, call_control=True)


@dataclass
class RoomHandlers:
    """What a joined room reports to the session."""

    #: a data packet and its sender's identity
    on_data: Callable[[bytes, str | None], None]
    #: mono pcm_s16le of the agent's audio track and its sample rate
    on_agent_audio: Callable[[bytes, int], None]
    on_disconnected: Callable[[str], None]
    #: a participant left the room (its identity); the agent (``server``) leaving is its hang-up
    on_participant_left: Callable[[str | None], None] = lambda identity: None


class CallRoom(Protocol):
    """The caller's side of a web call's room."""

    async def join(self, url: str, token: str, handlers: RoomHandlers) -> None: ...

    async def push_audio(self, pcm: bytes, sample_rate: int) -> None: ...

    async def leave(self) -> None: ...


class LiveKitCallRoom:
    """``CallRoom`` over the ``livekit`` rtc SDK: microphone published, ``agent_audio`` subscribed."""

    def __init__(self, sample_rate: int = 24000):
        self.sample_rate = sample_rate
        self._room: Any = None
        self._source: Any = None
        #: the microphone's stream resampler (filter state kept across frames), for the rate frames come at
        self._mic: StreamResampler | None = None
        self._readers: set[asyncio.Task[None]] = set()

    async def join(self, url: str, token: str, handlers: RoomHandlers) -> None:
        from livekit import rtc

        room = rtc.Room()
        self._room = room

        def on_data(packet: Any) -> None:
            participant = getattr(packet, "participant", None)
            handlers.on_data(bytes(packet.data), getattr(participant, "identity", None))

        def on_track(track: Any, publication: Any, participant: Any) -> None:
            if track.kind == rtc.TrackKind.KIND_AUDIO and publication.name == AGENT_AUDIO_TRACK:
                task = asyncio.ensure_future(self._read_agent_audio(rtc, track, handlers))
                self._readers.add(task)
                task.add_done_callback(self._readers.discard)

        room.on("data_received", on_data)
        room.on("track_subscribed", on_track)
        room.on("disconnected", lambda reason=None: handlers.on_disconnected(str(reason)))
        room.on("participant_disconnected",
                lambda participant: handlers.on_participant_left(getattr(participant, "identity", None)))
        await room.connect(url, token, rtc.RoomOptions(auto_subscribe=True))
        self._source = rtc.AudioSource(self.sample_rate, 1)
        track = rtc.LocalAudioTrack.create_audio_track("microphone", self._source)
        await room.local_participant.publish_track(
            track, rtc.TrackPublishOptions(source=rtc.TrackSource.SOURCE_MICROPHONE))

    async def _read_agent_audio(self, rtc: Any, track: Any, handlers: RoomHandlers) -> None:
        stream = rtc.AudioStream(track, sample_rate=self.sample_rate, num_channels=1)
        try:
            async for event in stream:
                handlers.on_agent_audio(bytes(event.frame.data), event.frame.sample_rate)
        finally:
            with contextlib.suppress(Exception):
                await stream.aclose()

    async def push_audio(self, pcm: bytes, sample_rate: int) -> None:
        from livekit import rtc

        if self._mic is None or self._mic.source_rate != sample_rate:
            self._mic = StreamResampler(sample_rate, self.sample_rate)
        pcm = self._mic.push(pcm)
        samples = len(pcm) // 2
        if samples:
            await self._source.capture_frame(rtc.AudioFrame(pcm[: samples * 2], self.sample_rate, 1, samples))

    async def leave(self) -> None:
        for task in list(self._readers):
            task.cancel()
        if self._room is not None:
            room, self._room = self._room, None
            await room.disconnect()


class _Response:
    def __init__(self, response_id: str):
        self.response_id = response_id
        self.text = ""
        self.audio_bytes = 0
        self.speaking = False
        #: the caller started a new utterance while this response was being spoken
        self.barged_in = False


class RetellWebCallSession(RetellSession):
    """One Retell web call (see the module docstring)."""

    def __init__(self, setup: SessionSetup, room: CallRoom, *, livekit_url: str, call_end_timeout_s: float = 10.0):
        super().__init__(WEB_CALL_CAPABILITIES, setup)
        self.room = room
        self.livekit_url = livekit_url
        self.call_end_timeout_s = call_end_timeout_s
        self._response: _Response | None = None
        #: transcript utterances already seen: (role, content)
        self._seen: list[tuple[str, str]] = []
        self._user_speaking = False
        self._user_text = ""
        self._audio_in_bytes = 0
        self._audio_out_bytes = 0
        #: the agent's audio to the session's rate (filter state kept across frames), for the rate it comes at
        self._speaker: StreamResampler | None = None
        self._leaving = False
        #: the call as heard (connect to the end of the agent's playout), a floor under Retell's own duration
        self.meter = CallMeter()
        self._left_at: float | None = None

    async def open(self) -> None:
        try:
            created = await self.client.call.create_web_call(
                agent_id=self.setup.agent_id, metadata=self.metadata(),
                retell_llm_dynamic_variables=self.dynamic_variables())
        except Exception as exc:
            raise rest_error(exc, "call.create_web_call", connected=False) from None
        call_id = getattr(created, "call_id", None)
        token = getattr(created, "access_token", None)
        if not call_id or not token:
            raise AdapterError("Retell create_web_call returned no call_id/access_token", code=ErrorCode.MALFORMED,
                               retryable=False)
        if getattr(created, "transport", None) == "gateway":
            raise AdapterError("Retell returned a gateway (WHIP) web call; the harness joins LiveKit web calls only",
                               code=ErrorCode.UNSUPPORTED, retryable=False)
        self.register(call_id)
        handlers = RoomHandlers(on_data=self._on_data, on_agent_audio=self._on_agent_audio,
                                on_disconnected=self._on_disconnected, on_participant_left=self._on_participant_left)
        try:
            await self.room.join(self.livekit_url, token, handlers)
        except Exception as exc:
            raise room_error(exc, "joining the call's room") from None
        self.trace.append("room.join")
        self.emit(SessionReady(vendor_session_id=call_id))

    # -- Session ------------------------------------------------------------------------------------
    async def send_text(self, text: str) -> None:
        raise AdapterError("a Retell web call takes audio only (text conversations are Retell chats)",
                           code=ErrorCode.UNSUPPORTED, retryable=False)

    async def push_audio(self, frame: bytes) -> None:
        if self.ended:
            return
        try:
            await self.room.push_audio(frame, self.spec.audio.sample_rate)
        except Exception as exc:
            raise room_error(exc, "publishing microphone audio") from None
        self._audio_in_bytes += len(frame)

    async def end_input(self) -> None:
        """Retell decides the end of the caller's turn from the audio (server VAD): nothing to commit."""

    async def update_context(self, update: ContextUpdate) -> None:
        self.check_context_update()
        variables = {wire.KNOWLEDGE_VARIABLE: wire.knowledge_text(update.passages)}
        try:
            await self.client.call.update_live(self.vendor_id,
                                               fields_to_override={"override_dynamic_variables": variables})
        except Exception as exc:
            raise rest_error(exc, "call.update_live") from None
        self.passages = list(update.passages)

    async def close_connection(self) -> None:
        self._leaving = True
        self._left_at = time.monotonic()
        try:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.room.leave(), 10.0)
            if self.vendor_id is not None:
                await self._report_call()
        finally:
            self.forget()
            await self.close_client()

    # -- room events --------------------------------------------------------------------------------
    def _on_disconnected(self, reason: str) -> None:
        if not self._leaving and not self.ended:
            self.fail(AdapterError(redact(f"Retell web call: the room disconnected ({reason})"),
                                   code=ErrorCode.DISCONNECTED))

    def _on_participant_left(self, identity: str | None) -> None:
        """The agent (participant ``server``) left the room: it hung up, as the JS client reads it. The response it
        was giving ends and ``CallControl(agent_hung_up)`` is reported; the caller's side then hangs up
        (``aclose``, which also reads the call's cost back)."""
        if identity != SERVER_IDENTITY or self._leaving or self.ended:
            return
        self._finish_response()
        self.emit(CallControl(kind="agent_hung_up", reason="the agent left the call's room"))

    def _on_data(self, payload: bytes, identity: str | None) -> None:
        if identity != SERVER_IDENTITY or self.ended:
            return
        try:
            event = wire.parse_call_event(payload)
        except wire.MalformedFrame as exc:
            self.emit(ErrorEvent(message=redact(f"Retell web call: unreadable data packet ({exc})"),
                                 code=ErrorCode.MALFORMED, fatal=False))
            return
        kind = str(getattr(event, "event_type", "unknown"))
        self.trace.append(kind)
        try:
            if isinstance(event, wire.UpdateEvent):
                self._on_update(event.transcript)
            elif isinstance(event, wire.AgentStartTalkingEvent):
                self._user_turn_over()
                response = self._open_response()
                if not response.speaking:
                    response.speaking = True
                    self.emit(AgentSpeechStarted(response_id=response.response_id))
            elif isinstance(event, wire.AgentStopTalkingEvent):
                self._finish_response()
        except AdapterError as exc:
            self.fail(exc)

    def _on_update(self, transcript: list[wire.Utterance]) -> None:
        current = [(u.role, u.content) for u in transcript if u.role in ("user", "agent")]
        shift = _window_shift(self._seen, current)
        for index, (role, content) in enumerate(current):
            before = shift + index
            previous = self._seen[before] if before < len(self._seen) else None
            if role == "user":
                if previous is None:  # a new caller utterance
                    if self._response is not None and self._response.speaking:
                        self._response.barged_in = True
                    if not self._user_speaking:
                        self._user_speaking = True
                        self.emit(UserSpeechStarted())
                self._user_text = content
            elif role == "agent" and index >= self._last_user_index(current):
                grown = content[len(previous[1]):] if previous and content.startswith(previous[1]) else (
                    content if previous is None else "")
                if grown:
                    self._user_turn_over()
                    response = self._open_response()
                    response.text += grown
                    self.emit(TextDelta(response_id=response.response_id, text=grown))
        self._seen = current

    @staticmethod
    def _last_user_index(current: list[tuple[str, str]]) -> int:
        users = [i for i, (role, _) in enumerate(current) if role == "user"]
        return users[-1] + 1 if users else 0

    def _on_agent_audio(self, pcm: bytes, sample_rate: int) -> None:
        self.meter.heard(len(pcm) / 2 / sample_rate)
        if self.ended:
            return
        if self._speaker is None or self._speaker.source_rate != sample_rate:
            self._speaker = StreamResampler(sample_rate, self.spec.audio.sample_rate)
        pcm = self._speaker.push(pcm)
        response = self._response
        if response is None:
            if _peak(pcm) < SILENCE_PEAK:
                return  # the line's silence between responses
            response = self._open_response()
        response.audio_bytes += len(pcm)
        self._audio_out_bytes += len(pcm)
        self.emit(AudioDelta(response_id=response.response_id, pcm16=pcm, sample_rate=self.spec.audio.sample_rate))

    # -- turn bookkeeping ---------------------------------------------------------------------------
    def _user_turn_over(self) -> None:
        if self._user_speaking:
            self._user_speaking = False
            self.emit(UserSpeechStopped())
            if self._user_text:
                self.emit(Transcript(role="user", text=self._user_text))
            self._user_text = ""

    def _open_response(self) -> _Response:
        if self._response is None:
            self._response = _Response(self.new_response_id())
        return self._response

    def _finish_response(self) -> None:
        response = self._response
        if response is None:
            return
        self._response = None
        if response.speaking:
            self.emit(AgentSpeechStopped(response_id=response.response_id))
        status = "completed"
        if response.barged_in:
            status = "interrupted"
            self.emit(Interrupted(response_id=response.response_id, by="caller",
                                  played_ms=self.spec.audio.ms_for_bytes(response.audio_bytes)))
        if response.text:
            self.emit(Transcript(response_id=response.response_id, role="agent", text=response.text.strip()))
        done = self.response_done(response.response_id, response.text.strip(), tool_arguments=None, status=status)
        if self.record is not None:
            self.record.clear_response()
        self.emit(done)

    async def _report_call(self) -> None:
        """Wait until Retell has closed the call (cost and latency exist only then) and report them."""
        deadline = time.monotonic() + self.call_end_timeout_s
        delay = 0.05
        call: wire.CallObject | None = None
        while True:
            try:
                raw = await asyncio.wait_for(self.client.call.retrieve(self.vendor_id), self.setup.request_timeout_s)
                call = wire.CallObject.model_validate(raw.model_dump() if hasattr(raw, "model_dump") else raw)
            except Exception as exc:
                error = rest_error(exc, "call.retrieve")
                self.emit(ErrorEvent(message=str(error), code=error.code, fatal=False, retryable=error.retryable))
                return
            if call.call_status in ("ended", "error", "not_connected") or time.monotonic() > deadline:
                break
            await asyncio.sleep(delay)
            delay = min(delay * 2, 1.0)
        cost = call.call_cost
        seconds = cost.total_duration_seconds if cost is not None else (call.duration_ms or 0) / 1000.0
        seconds = max(seconds or 0.0, self.meter.billed_seconds(self._left_at))
        self.emit(Usage(
            scope="session",
            input_audio_seconds=round(self.spec.audio.ms_for_bytes(self._audio_in_bytes) / 1000.0, 3),
            output_audio_seconds=round(self.spec.audio.ms_for_bytes(self._audio_out_bytes) / 1000.0, 3),
            billed_minutes=round(seconds / 60.0, 5) if seconds else None,
            vendor_cost_usd=wire.cents_to_usd(cost.combined_cost) if cost is not None else None,
            vendor_latency_ms=wire.vendor_latency_keys(call.latency),
        ))


def _window_shift(seen: list[tuple[str, str]], current: list[tuple[str, str]]) -> int:
    """Where ``current`` starts in ``seen``: the transcript may be a window that drops its oldest utterances.

    The smallest shift at which every overlapping utterance has the same role and every agent utterance extends
    (or equals) its older text (the caller's may be revised by ASR); ``len(seen)`` when nothing overlaps."""
    for shift in range(len(seen) + 1):
        overlap = zip(seen[shift:], current, strict=False)
        if all(old_role == role and (role == "user" or text.startswith(old_text))
               for (old_role, old_text), (role, text) in overlap):
            return shift
    return len(seen)


def _peak(pcm: bytes) -> int:
    import numpy as np

    samples = np.frombuffer(pcm[: len(pcm) // 2 * 2], dtype="<i2")
    return int(np.abs(samples.astype(np.int32)).max()) if len(samples) else 0


async def open_web_call(setup: SessionSetup, room: CallRoom, *, livekit_url: str,
                        call_end_timeout_s: float) -> RetellWebCallSession:
    session = RetellWebCallSession(setup, room, livekit_url=livekit_url, call_end_timeout_s=call_end_timeout_s)
    try:
        await session.open()
    except BaseException:
        with contextlib.suppress(Exception):
            await room.leave()
        session.forget()
        await session.close_client()
        raise
    return session
