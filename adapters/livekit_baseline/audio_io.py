"""The caller's microphone and speaker as LiveKit Agents I/O, so an ``AgentSession`` runs its audio path without a
LiveKit room: the engine's audio pump is the microphone, the session's audio output is the caller's speaker.

``livekit`` is imported when the first microphone or speaker is made (``make_microphone`` / ``make_speaker``
build the classes on first use), never at module import.

* ``CallerMicrophone`` (``io.AudioInput``): ``push(pcm)`` turns one pumped frame (mono pcm_s16le at the session's
  rate) into an ``rtc.AudioFrame`` for the session's audio forwarding task (VAD → STT → turn detection).
  Frames pushed while the framework has the input detached are dropped, as a muted microphone's would be.
* ``CallerSpeaker`` (``io.AudioOutput``): the framework captures TTS frames faster than real time; the speaker
  plays them out in real time, ``frame_ms`` at a time, and hands each piece to the session the moment it starts
  playing (``on_audio``) — what a caller on a phone line hears, when they hear it. Segments follow the
  framework's contract: a segment starts at the first ``capture_frame`` after a ``flush``; ``flush`` ends it
  and it finishes once its audio has played (``on_playback_finished(interrupted=False)``); ``clear_buffer``
  drops what has not played and finishes every open segment at once as interrupted, with the playback
  position where it stopped; ``pause`` / ``resume`` hold and continue playback (the framework pauses on a
  possible barge-in and resumes after a false one). ``on_playback_started`` fires when a segment's first
  piece plays. ``on_segment_start`` / ``on_segment_end`` tell the session (agent speech started / stopped,
  played seconds, interrupted or not).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

_CLOSED = object()


def make_microphone(sample_rate: int = 24000) -> Any:
    """A ``CallerMicrophone`` (an ``io.AudioInput``) taking mono pcm_s16le at ``sample_rate``."""
    return _classes()[0](sample_rate=sample_rate)


def make_speaker(*, on_segment_start: Callable[[], Any], on_audio: Callable[[Any, bytes, int], None],
                 on_segment_end: Callable[[Any, float, bool], None], sample_rate: int = 24000,
                 frame_ms: float = 20.0) -> Any:
    """A ``CallerSpeaker`` (an ``io.AudioOutput``) playing out at ``sample_rate`` in pieces of ``frame_ms``."""
    return _classes()[1](on_segment_start=on_segment_start, on_audio=on_audio, on_segment_end=on_segment_end,
                         sample_rate=sample_rate, frame_ms=frame_ms)


@dataclass
class _Segment:
    pieces: deque[bytes] = field(default_factory=deque)
    flushed: bool = False
    cleared: bool = False
    started: bool = False
    played_s: float = 0.0
    #: what ``on_segment_start`` returned (the session's response for this audio)
    owner: Any = None


async def _sleep_until(deadline: float) -> None:
    delay = deadline - time.monotonic()
    if delay > 0:
        await asyncio.sleep(delay)


@functools.cache
def _classes() -> tuple[type, type]:
    from livekit import rtc
    from livekit.agents.voice import io

    class CallerMicrophone(io.AudioInput):
        """Pumped caller frames as the session's audio input."""

        def __init__(self, sample_rate: int = 24000):
            super().__init__(label="voice-bench caller microphone")
            self.sample_rate = sample_rate
            self._frames: asyncio.Queue[Any] = asyncio.Queue()
            self._attached = True
            self._closed = False

        def push(self, pcm: bytes) -> None:
            if self._closed or not self._attached or len(pcm) < 2:
                return
            pcm = pcm[: len(pcm) // 2 * 2]
            self._frames.put_nowait(rtc.AudioFrame(data=pcm, sample_rate=self.sample_rate, num_channels=1,
                                                   samples_per_channel=len(pcm) // 2))

        def close(self) -> None:
            if not self._closed:
                self._closed = True
                self._frames.put_nowait(_CLOSED)

        async def __anext__(self) -> rtc.AudioFrame:
            item = await self._frames.get()
            if item is _CLOSED:
                self._frames.put_nowait(_CLOSED)
                raise StopAsyncIteration
            return item

        def on_attached(self) -> None:
            self._attached = True

        def on_detached(self) -> None:
            self._attached = False



    class CallerSpeaker(io.AudioOutput):
        """Plays the agent's audio out to the caller in real time."""

        def __init__(self, *, on_segment_start: Callable[[], Any], on_audio: Callable[[Any, bytes, int], None],
                     on_segment_end: Callable[[Any, float, bool], None], sample_rate: int = 24000,
                     frame_ms: float = 20.0):
            super().__init__(label="voice-bench caller speaker", next_in_chain=None, sample_rate=sample_rate,
                             capabilities=io.AudioOutputCapabilities(pause=True))
            self._on_segment_start = on_segment_start
            self._on_audio = on_audio
            self._on_segment_end = on_segment_end
            self._piece_bytes = max(2, int(sample_rate * frame_ms / 1000) * 2)
            self._segments: deque[_Segment] = deque()
            self._open: _Segment | None = None
            self._wake = asyncio.Event()
            self._playing = asyncio.Event()
            self._playing.set()
            self._player: asyncio.Task[None] | None = None
            #: monotonic time the next piece may start playing (the end of the one playing now)
            self._free_at = 0.0

        # -- io.AudioOutput ---------------------------------------------------------------------------------------
        async def capture_frame(self, frame: rtc.AudioFrame) -> None:
            await super().capture_frame(frame)
            segment = self._open
            if segment is None:
                segment = self._open = _Segment()
                self._segments.append(segment)
            if segment.cleared:
                return
            data = bytes(frame.data)
            for i in range(0, len(data), self._piece_bytes):
                segment.pieces.append(data[i : i + self._piece_bytes])
            self._ensure_player()
            self._wake.set()

        def flush(self) -> None:
            super().flush()
            segment, self._open = self._open, None
            if segment is None:  # nothing captured since the last flush: no segment to finish
                return
            segment.flushed = True
            if segment.cleared:
                self._finish(segment, interrupted=True)
            self._wake.set()

        def clear_buffer(self) -> None:
            for segment in list(self._segments):
                segment.pieces.clear()
                segment.cleared = True
                if segment.flushed:
                    self._finish(segment, interrupted=True)
            self._free_at = 0.0
            self._wake.set()

        def pause(self) -> None:
            super().pause()
            self._playing.clear()

        def resume(self) -> None:
            super().resume()
            self._playing.set()

        async def aclose(self) -> None:
            if self._player is not None:
                self._player.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._player
                self._player = None

        # -- playback ---------------------------------------------------------------------------------------------
        def _ensure_player(self) -> None:
            if self._player is None or self._player.done():
                self._player = asyncio.ensure_future(self._play())

        def _finish(self, segment: _Segment, *, interrupted: bool) -> None:
            if segment in self._segments:
                self._segments.remove(segment)
            self.on_playback_finished(playback_position=segment.played_s, interrupted=interrupted)
            if segment.started:
                self._on_segment_end(segment.owner, segment.played_s, interrupted)

        async def _play(self) -> None:
            while True:
                segment = self._segments[0] if self._segments else None
                if segment is None or (not segment.pieces and not segment.flushed):
                    self._wake.clear()
                    await self._wake.wait()
                    continue
                await self._playing.wait()
                if not segment.pieces:  # flushed and all of it handed out: finished once the last piece has played
                    await _sleep_until(self._free_at)
                    if segment.pieces or segment not in self._segments:
                        continue
                    self._finish(segment, interrupted=False)
                    continue
                await _sleep_until(self._free_at)
                if segment not in self._segments or not segment.pieces or not self._playing.is_set():
                    continue
                piece = segment.pieces.popleft()
                start = max(self._free_at, time.monotonic())
                duration = len(piece) / 2 / (self.sample_rate or 24000)
                self._free_at = start + duration
                if not segment.started:
                    segment.started = True
                    segment.owner = self._on_segment_start()
                    self.on_playback_started(created_at=time.time())
                segment.played_s += duration
                self._on_audio(segment.owner, piece, self.sample_rate or 24000)

    return CallerMicrophone, CallerSpeaker
