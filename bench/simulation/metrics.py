"""Voice evidence computed from the recorded audio: seed 000's PCM fields and where the line is silent.

``pcm_metrics`` — byte count, duration, silence ratio (samples with |x| ≤ 256), peak, RMS, clipped-sample ratio
(samples at the PCM16 limits) and possible truncation (a non-silent final 10 ms). All vectorized; RMS is accumulated
per second in float64.

The onset of speech (and the caller-heard latency) is ``bench.audio.vad.speech_onset_ms`` / ``caller_heard_ms``,
the one computation golden runs and simulations share.

``sound_intervals`` — where a track is non-silent (10 ms frames above the silence level), for dead air.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.audio.pcm import CANONICAL_RATE
from bench.audio.vad import as_samples, speech_onset_ms

__all__ = ["as_samples", "dead_air", "pcm_metrics", "sound_intervals", "speech_onset_ms"]

SILENCE_LEVEL = 256
TRUNCATION_MS = 10.0
GATE_FRAME_MS = 10.0


def pcm_metrics(pcm: bytes | np.ndarray, sample_rate: int = CANONICAL_RATE) -> dict[str, Any]:
    """Seed 000's signal fields of mono pcm_s16le audio."""
    x = as_samples(pcm)
    n = len(x)
    base = {"encoding": "pcm_s16le", "sample_rate_hz": sample_rate, "channels": 1, "byte_count": n * 2,
            "duration_seconds": round(n / sample_rate, 6)}
    if n == 0:
        return {**base, "silence_ratio": 1.0, "peak_amplitude": 0, "rms_amplitude": 0.0, "clipped_sample_ratio": 0.0,
                "possible_truncation": False}
    silent = clipped = peak = 0
    energy = 0.0
    offset = np.int16(SILENCE_LEVEL)
    for start in range(0, n, sample_rate * 4):  # chunks stay in cache; int16 arithmetic where it is exact
        chunk = x[start:start + sample_rate * 4]
        # |x| <= 256  <=>  0 <= x + 256 <= 512 (x > 32511 wraps to a negative value, i.e. a large unsigned one)
        silent += int(np.count_nonzero((chunk + offset).view(np.uint16) <= 2 * SILENCE_LEVEL))
        high, low = int(chunk.max()), int(chunk.min())
        peak = max(peak, high, -low)
        if high == 32767 or low == -32768:
            clipped += int(np.count_nonzero(chunk == 32767) + np.count_nonzero(chunk == -32768))
        floats = chunk.astype(np.float32)
        energy += float(np.dot(floats, floats))
    tail = x[-max(1, int(sample_rate * TRUNCATION_MS / 1000)):].astype(np.int32)
    return {**base, "silence_ratio": round(silent / n, 6), "peak_amplitude": peak,
            "rms_amplitude": round(float(np.sqrt(energy / n)), 1), "clipped_sample_ratio": round(clipped / n, 6),
            "possible_truncation": bool(np.abs(tail).max() > SILENCE_LEVEL)}


def sound_intervals(track: bytes | np.ndarray, sample_rate: int = CANONICAL_RATE, *,
                    level: float = SILENCE_LEVEL, frame_ms: float = GATE_FRAME_MS,
                    bridge_ms: float = 200.0) -> list[tuple[float, float]]:
    """Non-silent stretches of ``track`` in ms (frames whose peak exceeds ``level``; gaps under ``bridge_ms``
    joined, as pauses between words are not dead air)."""
    x = as_samples(track)
    size = max(1, int(sample_rate * frame_ms / 1000))
    frames = len(x) // size
    if frames == 0:
        return []
    peaks = np.abs(x[: frames * size].astype(np.int32)).reshape(frames, size).max(axis=1)
    loud = np.concatenate([[False], peaks > level, [False]])
    edges = np.flatnonzero(np.diff(loud.astype(np.int8)))
    intervals: list[tuple[float, float]] = []
    for begin, end in zip(edges[0::2], edges[1::2], strict=True):
        a, b = begin * frame_ms, end * frame_ms
        if intervals and a - intervals[-1][1] < bridge_ms:
            intervals[-1] = (intervals[-1][0], b)
        else:
            intervals.append((a, b))
    return intervals


def dead_air(intervals: list[tuple[float, float]], *, threshold_ms: float,
             span: tuple[float, float] | None = None) -> list[tuple[float, float]]:
    """Silences of at least ``threshold_ms`` between the sound ``intervals`` (both parties merged), clipped to
    ``span``; silence before the first and after the last sound is not dead air."""
    merged: list[list[float]] = []
    for a, b in sorted(intervals):
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    gaps = [(merged[i][1], merged[i + 1][0]) for i in range(len(merged) - 1)]
    found = []
    for a, b in gaps:
        if span is not None:
            a, b = max(a, span[0]), min(b, span[1])
        if b - a >= threshold_ms:
            found.append((round(a, 1), round(b, 1)))
    return found
