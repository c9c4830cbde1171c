"""Speech detection on recorded tracks with TEN VAD (``ten-vad``), used for caller-heard latency.

Why TEN VAD: measured here on espeak-ng speech in four languages, its speech onset was within 2 ms of the true onset
(16 ms hop at 16 kHz) and its offset within 6–41 ms, at about 4 ms of CPU per second of audio; webrtcvad-wheels was
13 ms early at onset and 77–119 ms late at offset (its hang-over) and flags low noise as speech; silero-vad needs
torch. TEN VAD's native library needs Debian's ``libc++1`` (installed by the scripts).

Tracks reach the VAD's 16 kHz through ``to_vad_rate`` (scipy's polyphase filter, its filter built once per length;
whole windows off the event loop); frames on the live path are resampled by soxr streams instead.

``speech_onset_ms`` is the one onset computation, and ``caller_heard_ms`` (end of the caller's speech → start of the
agent's speech as heard) the one caller-heard latency, for golden runs (``DuplexRecorder``) and simulations
(``bench.simulation.evidence``) alike: a 10 ms energy gate finds candidate sound and TEN VAD runs only on a short
window around each candidate (on the whole track's hop grid, with a fresh VAD as a whole-track run starts), the
onset refined to 1 ms. It agrees with ``first_speech_ms`` — TEN VAD over the whole track, kept as the reference the
tests and ``scripts/bench-pcm-metrics`` compare against — to one hop, while touching a few hundred milliseconds of
audio per onset (thousands of times faster than real time on long conversations).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from math import gcd

import numpy as np

VAD_RATE = 16000
HOP = 256  # samples at 16 kHz = 16 ms
HOP_MS = HOP / VAD_RATE * 1000.0


#: the energy gate: 10 ms frames; TEN VAD window around a candidate onset (context before it, and how far after it
#: speech may be confirmed)
GATE_FRAME_MS = 10.0
VAD_LEAD_MS = 96.0
VAD_SPAN_MS = 320.0
#: as ``speech_segments``: flagged hops closer than this are one segment, which needs this length
MIN_GAP_MS = 160.0
MIN_SPEECH_MS = 48.0


def as_samples(pcm: bytes | np.ndarray) -> np.ndarray:
    if isinstance(pcm, np.ndarray):
        return pcm
    return np.frombuffer(pcm[: len(pcm) // 2 * 2], dtype="<i2")


def to_vad_rate(pcm: bytes, sample_rate: int) -> bytes:
    """A whole track of mono pcm_s16le at the VAD's 16 kHz (``scipy.signal.resample_poly``'s result)."""
    if sample_rate == VAD_RATE or not pcm:
        return pcm
    return _to_vad_rate(as_samples(pcm), sample_rate).tobytes()


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
    audio = _to_vad_rate(as_samples(pcm), sample_rate)
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
    once per window length instead of on every window; the result equals ``scipy.signal.resample_poly(x, up, down)``."""
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
    if sample_rate == VAD_RATE or not len(x):
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


def speech_onset_ms(track: bytes | np.ndarray, sample_rate: int = 24000, *, after_ms: float = 0.0,
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
        window_start = _window_onset(x[lo:hi], sample_rate)
        if window_start is not None:
            vad_onset = lo_ms + window_start * HOP_MS
            return max(refine_onset(x, sample_rate, vad_onset), after_ms)
        # not speech (a click, a tone the VAD rejects): continue after this burst of sound
        quiet = np.flatnonzero(~loud[candidate:])
        if not len(quiet):
            return None
        frame = candidate + int(quiet[0])
    return None


def caller_heard_ms(agent_track: bytes | np.ndarray, sample_rate: int, speech_end_ms: float, *,
                    until_ms: float | None = None) -> float | None:
    """From the end of the caller's speech (``speech_end_ms`` on the track) to the start of the agent's speech on
    ``agent_track`` as the caller heard it (before ``until_ms``), in ms; None when the agent did not speak."""
    onset = speech_onset_ms(agent_track, sample_rate, after_ms=speech_end_ms, until_ms=until_ms)
    return None if onset is None else round(onset - speech_end_ms, 3)
