"""A streaming end-of-speech detector for speech front ends that run in process (e.g. the in-house stack's).

Frames of 24 kHz mono pcm_s16le are resampled to 16 kHz and judged by TEN VAD hop by hop (16 ms); a segment
starts after ``min_speech_ms`` of speech and ends after ``silence_ms`` of non-speech, as a telephony endpointer
decides. ``push`` returns the events each frame caused.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from bench.audio.pcm import CANONICAL_RATE, resample_pcm16
from bench.audio.vad import HOP, HOP_MS, VAD_RATE

EndpointEvent = Literal["speech_started", "speech_stopped"]


class StreamingEndpointer:
    def __init__(self, *, silence_ms: float = 300.0, min_speech_ms: float = 64.0, threshold: float = 0.5,
                 sample_rate: int = CANONICAL_RATE):
        try:
            from ten_vad import TenVad
        except OSError as exc:
            raise RuntimeError(f"TEN VAD cannot load its native library ({exc}); install Debian's libc++1") from None
        self._vad = TenVad(HOP, threshold)
        self.silence_ms = silence_ms
        self.min_speech_ms = min_speech_ms
        self.sample_rate = sample_rate
        self._pending = np.zeros(0, dtype="<i2")
        self.speaking = False
        self._speech_ms = 0.0
        self._silence_ms = 0.0

    def push(self, frame: bytes) -> list[EndpointEvent]:
        samples = np.frombuffer(resample_pcm16(frame, self.sample_rate, VAD_RATE), dtype="<i2")
        self._pending = np.concatenate([self._pending, samples])
        events: list[EndpointEvent] = []
        while len(self._pending) >= HOP:
            hop, self._pending = self._pending[:HOP], self._pending[HOP:]
            speech = bool(self._vad.process(np.ascontiguousarray(hop))[1])
            events.extend(self._hop(speech))
        return events

    def _hop(self, speech: bool) -> list[EndpointEvent]:
        if speech:
            self._speech_ms += HOP_MS
            self._silence_ms = 0.0
            if not self.speaking and self._speech_ms >= self.min_speech_ms:
                self.speaking = True
                return ["speech_started"]
            return []
        self._silence_ms += HOP_MS
        if not self.speaking:
            self._speech_ms = 0.0
            return []
        if self._silence_ms >= self.silence_ms:
            self.speaking = False
            self._speech_ms = 0.0
            return ["speech_stopped"]
        return []
