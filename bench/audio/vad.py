"""Speech detection on recorded tracks with TEN VAD (``ten-vad``), used for caller-heard latency.

Why TEN VAD: measured here on espeak-ng speech in four languages, its speech onset was within 2 ms of the true onset
(16 ms hop at 16 kHz) and its offset within 6–41 ms, at about 4 ms of CPU per second of audio; webrtcvad-wheels was
13 ms early at onset and 77–119 ms late at offset (its hang-over) and flags low noise as speech; silero-vad needs
torch. TEN VAD's native library needs Debian's ``libc++1`` (installed by the scripts).

Tracks reach the VAD's 16 kHz through ``to_vad_rate`` (scipy's polyphase filter, whole-track, off the event loop: the
simulation's windowed VAD reproduces it exactly); frames on the live path are resampled by soxr streams instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import gcd

import numpy as np
from scipy.signal import resample_poly

VAD_RATE = 16000
HOP = 256  # samples at 16 kHz = 16 ms
HOP_MS = HOP / VAD_RATE * 1000.0


def to_vad_rate(pcm: bytes, sample_rate: int) -> bytes:
    """A whole track of mono pcm_s16le at the VAD's 16 kHz (scipy's polyphase filter)."""
    if sample_rate == VAD_RATE or not pcm:
        return pcm
    divisor = gcd(sample_rate, VAD_RATE)
    samples = np.frombuffer(pcm[: len(pcm) // 2 * 2], dtype="<i2").astype(np.float64)
    out = resample_poly(samples, VAD_RATE // divisor, sample_rate // divisor)
    return np.clip(np.round(out), -32768, 32767).astype("<i2").tobytes()


@dataclass(frozen=True)
class SpeechSegment:
    start_ms: float
    end_ms: float


def speech_segments(pcm: bytes, sample_rate: int, *, threshold: float = 0.5, min_speech_ms: float = 48.0,
                    min_gap_ms: float = 160.0) -> list[SpeechSegment]:
    """Speech segments of mono pcm_s16le ``pcm`` (times from the start of the track)."""
    try:
        from ten_vad import TenVad
    except OSError as exc:  # the native library is missing
        raise RuntimeError(f"TEN VAD cannot load its native library ({exc}); install Debian's libc++1") from None
    audio = np.frombuffer(to_vad_rate(pcm, sample_rate), dtype="<i2")
    vad = TenVad(HOP, threshold)
    flags = [vad.process(np.ascontiguousarray(audio[i : i + HOP]))[1] for i in range(0, len(audio) - HOP + 1, HOP)]
    segments: list[SpeechSegment] = []
    start: int | None = None
    for index, flag in enumerate([*flags, 0]):
        if flag and start is None:
            start = index
        elif not flag and start is not None:
            segments.append(SpeechSegment(start * HOP_MS, index * HOP_MS))
            start = None
    merged: list[SpeechSegment] = []
    for segment in segments:
        if merged and segment.start_ms - merged[-1].end_ms < min_gap_ms:
            merged[-1] = SpeechSegment(merged[-1].start_ms, segment.end_ms)
        else:
            merged.append(segment)
    return [s for s in merged if s.end_ms - s.start_ms >= min_speech_ms]


#: a 1 ms block louder than this (about -50 dBFS) is where sound starts, when refining an onset within a hop
ONSET_LEVEL = 100.0


def refine_onset_ms(pcm: bytes, sample_rate: int, onset_ms: float, *, window_ms: float = 2 * HOP_MS) -> float:
    """The VAD's onset (16 ms resolution) moved to the first 1 ms block above ``ONSET_LEVEL`` near it."""
    samples = np.frombuffer(pcm[: len(pcm) // 2 * 2], dtype="<i2").astype(np.float64)
    block = max(1, sample_rate // 1000)
    lo = max(0, int((onset_ms - window_ms) * sample_rate / 1000))
    hi = min(len(samples), int((onset_ms + window_ms) * sample_rate / 1000))
    for start in range(lo, hi - block + 1, block):
        chunk = samples[start : start + block]
        if np.sqrt(np.mean(chunk * chunk)) >= ONSET_LEVEL:
            return start / sample_rate * 1000.0
    return onset_ms


def first_speech_ms(pcm: bytes, sample_rate: int, *, after_ms: float = 0.0) -> float | None:
    """Where the first speech at or after ``after_ms`` starts (VAD, refined to 1 ms), or ``None`` when none."""
    for segment in speech_segments(pcm, sample_rate):
        if segment.end_ms > after_ms:
            return max(refine_onset_ms(pcm, sample_rate, segment.start_ms), after_ms)
    return None
