"""Both sides of a conversation's audio on one timeline, and the one caller-heard latency measured on it.

The caller track holds every frame the pump sent, placed where the caller spoke it (a frame sent at ``t`` covers
the audio just before ``t``, as a microphone delivers it). The agent track holds the agent's audio as a caller
would hear it: each chunk plays when it arrives, or right after the previous chunk if that is still playing
(a jitter buffer that never stretches). Pieces that overlap on a track are **mixed** (added, clipped to 16 bits):
nothing is overwritten.

Silence is never agent audio and never a backlog: a chunk whose every sample is below ``SILENCE_LEVEL`` (an endpoint
that streams silence between replies) adds nothing to the track and does not hold back later audio, as an
adaptive jitter buffer drops silence to catch up. ``cut`` empties the playback queue at a moment (the caller's
client flushes it when the caller barges in). Agent audio at another rate than the recording's is resampled as a
stream (one soxr stream per source rate).

``caller_heard_ms`` finds the start of the agent's speech on the agent track with the VAD, so silence at the head
of the agent's audio counts, as it does for a caller.
"""

from __future__ import annotations

import io
import wave
from dataclasses import dataclass

import numpy as np

from bench.audio.pcm import CANONICAL_RATE, is_silent
from bench.audio.vad import caller_heard_ms, speech_onset_ms
from bench.protocol import StreamResampler


@dataclass
class _Piece:
    start: int  # samples from the origin
    pcm: bytes
    response_id: str | None = None
    #: samples of it that play (a cut ends playback early); None: all of it
    played: int | None = None

    @property
    def samples(self) -> int:
        return len(self.pcm) // 2 if self.played is None else self.played


class DuplexRecorder:
    def __init__(self, origin: float, sample_rate: int = CANONICAL_RATE):
        self.origin = origin
        self.sample_rate = sample_rate
        self._caller: list[tuple[int, bytes]] = []
        self._agent: list[_Piece] = []
        self._agent_cursor = 0  # samples: where the agent's queued playback ends
        self._resamplers: dict[int, StreamResampler] = {}

    def _samples(self, t: float) -> int:
        return max(0, round((t - self.origin) * self.sample_rate))

    def _time(self, samples: int) -> float:
        """The engine time of a position on the timeline (inverse of ``_samples`` for the recorder's origin)."""
        return self.origin + samples / self.sample_rate

    def caller(self, t_sent: float, frame: bytes) -> None:
        end = self._samples(t_sent)
        self._caller.append((max(0, end - len(frame) // 2), frame))

    def agent(self, t_received: float, pcm: bytes, sample_rate: int, response_id: str | None = None) -> float | None:
        """Queue a chunk of the agent's audio for playback; returns the engine time it starts playing (``None``
        for silence, which is not queued)."""
        if sample_rate != self.sample_rate:
            resampler = self._resamplers.get(sample_rate)
            if resampler is None:
                resampler = self._resamplers[sample_rate] = StreamResampler(sample_rate, self.sample_rate)
            pcm = resampler.push(pcm)
        if not pcm or is_silent(pcm):
            return None
        start = max(self._samples(t_received), self._agent_cursor)
        self._agent.append(_Piece(start, pcm, response_id))
        self._agent_cursor = start + len(pcm) // 2
        return self._time(start)

    def cut(self, t: float) -> None:
        """The caller's client flushes its playback queue at ``t``: what has not played by then never plays."""
        at = self._samples(t)
        for piece in self._agent:
            if piece.start + piece.samples > at:
                piece.played = max(0, at - piece.start)
        self._agent_cursor = min(self._agent_cursor, max(at, 0))

    def played_ms(self, t: float, response_id: str | None = None) -> float:
        """How much of the agent's audio (of ``response_id``, or all of it) the caller has heard by ``t``, in ms."""
        at = self._samples(t)
        samples = sum(min(piece.samples, max(0, at - piece.start)) for piece in self._agent
                      if response_id is None or piece.response_id == response_id)
        return samples / self.sample_rate * 1000.0

    def playback_end(self, response_id: str | None = None) -> float | None:
        """The engine time the agent's audio (of ``response_id``, or any) stops playing, ``None`` when none."""
        ends = [piece.start + piece.samples for piece in self._agent
                if piece.samples and (response_id is None or piece.response_id == response_id)]
        return self._time(max(ends)) if ends else None

    @property
    def has_agent_audio(self) -> bool:
        return any(piece.samples for piece in self._agent)

    def _flush_resamplers(self) -> None:
        for resampler in self._resamplers.values():
            tail = resampler.flush()
            if tail and not is_silent(tail):
                self._agent.append(_Piece(self._agent_cursor, tail))
                self._agent_cursor += len(tail) // 2

    @staticmethod
    def _track(pieces: list[tuple[int, bytes]], length: int) -> np.ndarray:
        """``pieces`` mixed on one track: overlapping audio is added and clipped, never overwritten."""
        track = np.zeros(length, dtype=np.int32)
        for start, pcm in pieces:
            samples = np.frombuffer(pcm[: len(pcm) // 2 * 2], dtype="<i2")
            end = min(length, start + len(samples))
            if end > start:
                track[start:end] += samples[: end - start]
        return np.clip(track, -32768, 32767).astype("<i2")

    def tracks(self) -> tuple[np.ndarray, np.ndarray]:
        self._flush_resamplers()
        agent = [(piece.start, piece.pcm[: piece.samples * 2]) for piece in self._agent]
        length = max([s + len(p) // 2 for s, p in self._caller + agent] or [0])
        return self._track(self._caller, length), self._track(agent, length)

    def agent_speech_start(self, after: float) -> float | None:
        """The monotonic time the agent's speech starts on the caller's side, at or after ``after``."""
        _, agent = self.tracks()
        if not len(agent):
            return None
        after_ms = (after - self.origin) * 1000.0
        onset = speech_onset_ms(agent, self.sample_rate, after_ms=after_ms)
        return None if onset is None else self.origin + onset / 1000.0

    def caller_heard_ms(self, speech_end: float) -> float | None:
        """From the end of the caller's speech to the start of the agent's speech as heard (VAD), in ms."""
        _, agent = self.tracks()
        if not len(agent):
            return None
        return caller_heard_ms(agent, self.sample_rate, (speech_end - self.origin) * 1000.0)

    def wav(self) -> bytes:
        """A stereo WAV: left = caller, right = agent."""
        caller, agent = self.tracks()
        stereo = np.empty(len(caller) * 2, dtype="<i2")
        stereo[0::2] = caller
        stereo[1::2] = agent
        buffer = io.BytesIO()
        with wave.open(buffer, "wb") as out:
            out.setnchannels(2)
            out.setsampwidth(2)
            out.setframerate(self.sample_rate)
            out.writeframes(stereo.tobytes())
        return buffer.getvalue()
