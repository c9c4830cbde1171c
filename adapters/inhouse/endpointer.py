"""The in-house front end's streaming end-of-speech detector (the adapter's own: its delay counts in the row).

Frames of 24 kHz mono pcm_s16le are resampled to 16 kHz as one stream (``bench.protocol.StreamResampler``) and
judged by TEN VAD hop by hop (16 ms); a segment starts after ``min_speech_ms`` of speech and ends after
``silence_ms`` of non-speech, as a telephony endpointer decides. ``push`` returns the events each frame caused.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from bench.protocol import StreamResampler
from bench.protocol.audio import CANONICAL_RATE

#: TEN VAD's input: 16 kHz, judged in hops of 256 samples (16 ms), as ``bench.audio.vad`` runs it
VAD_RATE = 16000
HOP = 256
HOP_MS = HOP / VAD_RATE * 1000.0

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
        self._resampler = StreamResampler(sample_rate, VAD_RATE)
        self._pending = np.zeros(0, dtype="<i2")
        self.speaking = False
        self._speech_ms = 0.0
        self._silence_ms = 0.0

    def push(self, frame: bytes) -> list[EndpointEvent]:
        samples = np.frombuffer(self._resampler.push(frame), dtype="<i2")
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
