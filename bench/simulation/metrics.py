"""Voice evidence computed from the recorded audio: seed 000's PCM fields and the timing of speech on the line.

``pcm_metrics`` — byte count, duration, silence ratio (samples with |x| ≤ 256), peak, RMS, clipped-sample ratio
(samples at the PCM16 limits) and possible truncation (a non-silent final 10 ms). All vectorized; RMS is accumulated
per second in float64.

``speech_onset_ms`` — where speech starts on a track at or after a time: a 10 ms energy gate finds candidate sound,
and TEN VAD (``bench.audio.vad``, the VAD behind the caller-heard latency) is run only on a short window around each
candidate; the VAD's onset is refined to 1 ms as ``bench.audio.vad.refine_onset_ms`` does. It agrees with
``first_speech_ms`` over the whole track (tested) while touching a few hundred milliseconds of audio per onset, which
is what makes the metrics run thousands of times faster than real time (``scripts/bench-pcm-metrics``).

``sound_intervals`` — where a track is non-silent (10 ms frames above the silence level), for dead air.
"""

from __future__ import annotations

import math
from functools import lru_cache
from math import gcd
from typing import Any

import numpy as np

from bench.audio.pcm import CANONICAL_RATE
from bench.audio.vad import HOP, HOP_MS, ONSET_LEVEL, VAD_RATE

SILENCE_LEVEL = 256
TRUNCATION_MS = 10.0
GATE_FRAME_MS = 10.0
#: TEN VAD window around a candidate onset: context before it, and how far after it speech may be confirmed
VAD_LEAD_MS = 96.0
VAD_SPAN_MS = 320.0
#: as ``bench.audio.vad.speech_segments``: flagged hops closer than this are one segment, which needs this length
MIN_GAP_MS = 160.0
MIN_SPEECH_MS = 48.0


def as_samples(pcm: bytes | np.ndarray) -> np.ndarray:
    if isinstance(pcm, np.ndarray):
        return pcm
    return np.frombuffer(pcm[: len(pcm) // 2 * 2], dtype="<i2")


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


def _frame_levels(x: np.ndarray, sample_rate: int, frame_ms: float) -> np.ndarray:
    """RMS per frame of ``frame_ms`` (the last partial frame dropped)."""
    size = max(1, int(sample_rate * frame_ms / 1000))
    frames = len(x) // size
    if frames == 0:
        return np.zeros(0, dtype=np.float32)
    block = x[: frames * size].astype(np.float32).reshape(frames, size)
    return np.sqrt(np.einsum("ij,ij->i", block, block) / size)


@lru_cache(maxsize=64)
def _resampler(up: int, down: int, n_in: int) -> tuple[np.ndarray, int, int]:
    """What ``scipy.signal.resample_poly(x, up, down)`` computes before filtering, for inputs of ``n_in`` samples:
    its default low-pass filter (Kaiser window, beta 5) padded so the output is centred, and the output slice. Built
    once per window length instead of on every window; the result equals ``bench.audio.vad.to_vad_rate``."""
    from scipy.signal import firwin

    def output_len(len_h: int) -> int:  # what upfirdn returns for n_in samples
        return ((n_in - 1) * up + len_h - 1) // down + 1

    max_rate = max(up, down)
    half_len = 10 * max_rate
    h = firwin(2 * half_len + 1, 1.0 / max_rate, window=("kaiser", 5.0)) * up
    n_out = n_in * up // down + bool(n_in * up % down)
    n_pre_pad = down - half_len % down
    n_post_pad = 0
    n_pre_remove = (half_len + n_pre_pad) // down
    while output_len(len(h) + n_pre_pad + n_post_pad) < n_out + n_pre_remove:
        n_post_pad += 1
    return np.concatenate([np.zeros(n_pre_pad), h, np.zeros(n_post_pad)]), n_pre_remove, n_pre_remove + n_out


def _to_vad_rate(x: np.ndarray, sample_rate: int) -> np.ndarray:
    if sample_rate == VAD_RATE:
        return x
    from scipy.signal import upfirdn

    divisor = gcd(sample_rate, VAD_RATE)
    up, down = VAD_RATE // divisor, sample_rate // divisor
    h, begin, end = _resampler(up, down, len(x))
    out = upfirdn(h, x.astype(np.float64), up, down)[begin:end]
    return np.clip(np.round(out), -32768, 32767).astype("<i2")


def refine_onset(x: np.ndarray, sample_rate: int, onset_ms: float, window_ms: float = 2 * HOP_MS) -> float:
    """``bench.audio.vad.refine_onset_ms`` vectorized: the first 1 ms block within ``window_ms`` of the VAD's onset
    whose RMS reaches ``ONSET_LEVEL``, else the VAD's onset."""
    block = max(1, sample_rate // 1000)
    lo = max(0, int((onset_ms - window_ms) * sample_rate / 1000))
    hi = min(len(x), int((onset_ms + window_ms) * sample_rate / 1000))
    count = (hi - lo - block) // block + 1
    if count <= 0:
        return onset_ms
    blocks = x[lo:lo + count * block].astype(np.float64).reshape(count, block)
    loud = np.flatnonzero(np.sqrt(np.mean(blocks * blocks, axis=1)) >= ONSET_LEVEL)
    return (lo + int(loud[0]) * block) / sample_rate * 1000.0 if len(loud) else onset_ms


def _window_onset(x: np.ndarray, sample_rate: int) -> int | None:
    """The first hop of the first speech segment in the window (as ``speech_segments`` would keep it), reading hop
    by hop with a fresh TEN VAD (as a whole-track run starts) and stopping as soon as that segment is certain (its
    length reached 48 ms)."""
    from ten_vad import TenVad

    audio = _to_vad_rate(x, sample_rate)
    vad = TenVad(HOP, 0.5)
    flags: list[int] = []
    for i in range(0, len(audio) - HOP + 1, HOP):
        flags.append(int(vad.process(np.ascontiguousarray(audio[i:i + HOP]))[1]))
        if flags[-1]:
            start = _first_segment(flags, open_end=True)
            if start is not None:
                return start
    return _first_segment(flags)


def _first_segment(flags: list[int], open_end: bool = False) -> int | None:
    """The first hop of the first segment that ``speech_segments`` would keep (gaps < 160 ms merged, ≥ 48 ms).
    With ``open_end`` the flags so far may end inside a segment: it counts with its length so far (a segment that
    is already long enough keeps its start whatever follows)."""
    segments: list[list[int]] = []
    begin: int | None = None
    for index, flag in enumerate([*flags, 0]):
        if flag and begin is None:
            begin = index
        elif not flag and begin is not None:
            if segments and (begin - segments[-1][1]) * HOP_MS < MIN_GAP_MS:
                segments[-1][1] = index
            else:
                segments.append([begin, index])
            begin = None
    for first, end in segments:
        if (end - first) * HOP_MS >= MIN_SPEECH_MS:
            return first
    return None


def speech_onset_ms(track: bytes | np.ndarray, sample_rate: int = CANONICAL_RATE, *, after_ms: float = 0.0,
                    until_ms: float | None = None) -> float | None:
    """Where speech starts on ``track`` at or after ``after_ms`` (before ``until_ms``), in ms from its start."""
    x = as_samples(track)
    start = max(0, int(after_ms * sample_rate / 1000))
    stop = len(x) if until_ms is None else min(len(x), int(until_ms * sample_rate / 1000))
    if stop <= start:
        return None
    levels = _frame_levels(x[start:stop], sample_rate, GATE_FRAME_MS)
    loud = levels >= ONSET_LEVEL
    frame = 0
    while frame < len(loud):
        hits = np.flatnonzero(loud[frame:])
        if not len(hits):
            return None
        candidate = frame + int(hits[0])
        onset_ms = after_ms + candidate * GATE_FRAME_MS
        # on the whole track's hop grid, so the window's hops are the hops a whole-track run would judge
        lo_ms = max(0.0, math.floor((onset_ms - VAD_LEAD_MS) / HOP_MS) * HOP_MS)
        lo = int(lo_ms * sample_rate / 1000)
        hi = min(len(x), int((onset_ms + VAD_SPAN_MS) * sample_rate / 1000))
        window_onset = _window_onset(x[lo:hi], sample_rate)
        if window_onset is not None:
            vad_onset = lo_ms + window_onset * HOP_MS
            return max(refine_onset(x, sample_rate, vad_onset), after_ms)
        # not speech (a click, a tone the VAD rejects): continue after this burst of sound
        quiet = np.flatnonzero(~loud[candidate:])
        if not len(quiet):
            return None
        frame = candidate + int(quiet[0])
    return None


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
