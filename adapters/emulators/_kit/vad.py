"""Server-side VAD of an emulator: decides from incoming caller audio when a speech segment starts and ends.

Vendors with server VAD answer a fixed time after they hear the caller stop; the emulator does the same over
the harness's paced frames. Frames are judged 20 ms at a time by RMS level against two bars: the absolute
``threshold_dbfs`` and, with ``adaptive_noise_floor``, ``noise_margin_db`` above the tracked noise floor. The floor
falls at once to a quieter frame and rises at most ``noise_floor_rise_db_per_s`` (a minimum-statistics tracker), so
steady room noise louder than the absolute threshold is learned as background instead of holding the segment open
forever. A segment ends after ``endpointing_silence_ms`` of non-speech and must hold ``min_speech_ms`` of speech.
With ``noise_is_speech`` off (a noise-robust VAD, the turn-taking profile's ``noise_interrupts``) a loud frame whose
spectrum is flat over the voice band (300–3,400 Hz; spectral flatness above ``NOISE_FLATNESS``: a cough, a door,
traffic) counts as silence: voiced speech has harmonics and a far lower flatness.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from adapters.emulators._kit.running import VadSettings

VadEvent = Literal["speech_started", "speech_stopped"]


@dataclass
class VadState:
    speaking: bool = False
    speech_ms: float = 0.0
    silence_ms: float = 0.0
    #: audio position (ms since the first frame) where the current or last segment's speech ended
    last_speech_end_ms: float = 0.0
    position_ms: float = 0.0


class ServerVad:
    """Feed frames with ``push``; it returns the events each frame caused."""

    FRAME_MS = 20.0
    #: spectral flatness (geometric / arithmetic mean of the voice-band power spectrum) above which a frame is noise
    NOISE_FLATNESS = 0.3

    def __init__(self, settings: VadSettings, sample_rate: int = 24000):
        self.settings = settings
        self.sample_rate = sample_rate
        self.state = VadState()
        self._pending = b""
        self._threshold = 32768.0 * math.pow(10.0, settings.threshold_dbfs / 20.0)
        self._margin = math.pow(10.0, settings.noise_margin_db / 20.0)
        self._rise = math.pow(10.0, settings.noise_floor_rise_db_per_s * self.FRAME_MS / 1000.0 / 20.0)
        #: the tracked noise floor (RMS); starts at the absolute threshold so a loud first frame is not the floor
        self.noise_floor: float | None = None

    def speech_threshold(self) -> float:
        """The RMS a frame needs now to count as speech."""
        if not self.settings.adaptive_noise_floor or self.noise_floor is None:
            return self._threshold
        return max(self._threshold, self.noise_floor * self._margin)

    def _track_floor(self, rms: float) -> None:
        if not self.settings.adaptive_noise_floor:
            return
        if self.noise_floor is None:
            self.noise_floor = min(rms, self._threshold)
        elif rms <= self.noise_floor:
            self.noise_floor = rms
        else:
            self.noise_floor = min(rms, max(self.noise_floor, 1.0) * self._rise)

    def push(self, pcm: bytes) -> list[VadEvent]:
        data = self._pending + pcm
        step = int(self.sample_rate * self.FRAME_MS / 1000) * 2
        events: list[VadEvent] = []
        offset = 0
        while offset + step <= len(data):
            frame = np.frombuffer(data[offset : offset + step], dtype="<i2").astype(np.float64)
            offset += step
            rms = float(np.sqrt(np.mean(frame * frame))) if len(frame) else 0.0
            if rms >= self._threshold and not self.settings.noise_is_speech and self._noise_like(frame):
                rms = 0.0
            events.extend(self._frame(rms))
        self._pending = data[offset:]
        return events

    def _noise_like(self, frame: np.ndarray) -> bool:
        spectrum = np.abs(np.fft.rfft(frame * np.hanning(len(frame)))) ** 2
        freqs = np.fft.rfftfreq(len(frame), 1.0 / self.sample_rate)
        band = spectrum[(freqs >= 300.0) & (freqs <= 3400.0)] + 1e-12
        if not len(band):
            return False
        flatness = float(np.exp(np.mean(np.log(band))) / np.mean(band))
        return flatness > self.NOISE_FLATNESS

    def _frame(self, rms: float) -> list[VadEvent]:
        state = self.state
        state.position_ms += self.FRAME_MS
        threshold = self.speech_threshold()
        self._track_floor(rms)
        if rms >= threshold:
            state.speech_ms += self.FRAME_MS
            state.silence_ms = 0.0
            state.last_speech_end_ms = state.position_ms
            if not state.speaking and state.speech_ms >= self.settings.min_speech_ms:
                state.speaking = True
                return ["speech_started"]
            return []
        state.silence_ms += self.FRAME_MS
        if not state.speaking:
            if state.silence_ms >= self.settings.endpointing_silence_ms:
                state.speech_ms = 0.0
            return []
        if state.silence_ms >= self.settings.endpointing_silence_ms:
            state.speaking = False
            state.speech_ms = 0.0
            return ["speech_stopped"]
        return []
