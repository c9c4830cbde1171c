"""Both sides of a conversation's audio on one timeline, and the caller-heard latency measured on it.

The caller track holds every frame the pump sent, placed where the caller spoke it (a frame sent at ``t`` covers
the audio just before ``t``, as a microphone delivers it). The agent track holds the agent's audio as a caller
would hear it: each chunk plays when it arrives, or right after the previous chunk if that is still playing
(a jitter buffer that never stretches). ``caller_heard_ms`` finds the start of the agent's speech on that track
with the VAD, so silence at the head of the agent's audio counts, as it does for a caller.
"""

from __future__ import annotations

import io
import wave

import numpy as np

from bench.audio.pcm import CANONICAL_RATE, resample_pcm16
from bench.audio.vad import first_speech_ms


class DuplexRecorder:
    def __init__(self, origin: float, sample_rate: int = CANONICAL_RATE):
        self.origin = origin
        self.sample_rate = sample_rate
        self._caller: list[tuple[int, bytes]] = []
        self._agent: list[tuple[int, bytes]] = []
        self._agent_cursor = 0  # samples

    def _samples(self, t: float) -> int:
        return max(0, round((t - self.origin) * self.sample_rate))

    def caller(self, t_sent: float, frame: bytes) -> None:
        end = self._samples(t_sent)
        self._caller.append((max(0, end - len(frame) // 2), frame))

    def agent(self, t_received: float, pcm: bytes, sample_rate: int) -> None:
        if sample_rate != self.sample_rate:
            pcm = resample_pcm16(pcm, sample_rate, self.sample_rate)
        start = max(self._samples(t_received), self._agent_cursor)
        self._agent.append((start, pcm))
        self._agent_cursor = start + len(pcm) // 2

    @property
    def has_agent_audio(self) -> bool:
        return any(len(pcm) for _, pcm in self._agent)

    def _track(self, pieces: list[tuple[int, bytes]], length: int) -> np.ndarray:
        track = np.zeros(length, dtype="<i2")
        for start, pcm in pieces:
            samples = np.frombuffer(pcm[: len(pcm) // 2 * 2], dtype="<i2")
            end = min(length, start + len(samples))
            if end > start:
                track[start:end] = samples[: end - start]
        return track

    def tracks(self) -> tuple[np.ndarray, np.ndarray]:
        length = max([s + len(p) // 2 for s, p in self._caller + self._agent] or [0])
        return self._track(self._caller, length), self._track(self._agent, length)

    def agent_speech_start(self, after: float) -> float | None:
        """The monotonic time the agent's speech starts on the caller's side, at or after ``after``."""
        _, agent = self.tracks()
        if not len(agent):
            return None
        after_ms = (after - self.origin) * 1000.0
        onset = first_speech_ms(agent.tobytes(), self.sample_rate, after_ms=after_ms)
        return None if onset is None else self.origin + onset / 1000.0

    def caller_heard_ms(self, speech_end: float) -> float | None:
        """From the end of the caller's speech to the start of the agent's speech as heard (VAD), in ms."""
        start = self.agent_speech_start(speech_end)
        return None if start is None else round((start - speech_end) * 1000.0, 3)

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
