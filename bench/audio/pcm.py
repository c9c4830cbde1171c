"""PCM helpers (mono pcm_s16le): whole-buffer resampling (soxr, as the stream resampler adapters use), frame
slicing, silence and duration."""

from __future__ import annotations

import numpy as np

# the WAV container and the stand-in tone live with the audio formats (adapters and emulators use them too)
from bench.protocol.audio import CANONICAL_RATE, mono_wav, resample, tone_pcm16

__all__ = ["CANONICAL_RATE", "SILENCE_LEVEL", "duration_ms", "frame_bytes", "is_silent", "mono_wav", "resample_pcm16",
           "silence", "split_frames", "tone_pcm16"]

#: samples no louder than this (about -54 dBFS) are silence: the end-of-speech stamp, streamed silence
SILENCE_LEVEL = 64


def is_silent(pcm: bytes) -> bool:
    """Whether every sample of mono pcm_s16le ``pcm`` is at or below ``SILENCE_LEVEL`` (empty audio is silent)."""
    samples = np.frombuffer(pcm[: len(pcm) // 2 * 2], dtype="<i2")
    return not len(samples) or int(np.abs(samples.astype(np.int32)).max()) <= SILENCE_LEVEL


def resample_pcm16(pcm: bytes, source_rate: int, target_rate: int) -> bytes:
    """``pcm`` at ``target_rate``, the whole buffer at once (soxr; a stream is ``bench.protocol.audio.
    StreamResampler``); unchanged when the rates agree."""
    return resample(pcm, source_rate, target_rate)


def frame_bytes(frame_ms: float, sample_rate: int = CANONICAL_RATE) -> int:
    return int(sample_rate * frame_ms / 1000) * 2


def split_frames(pcm: bytes, frame_ms: float, sample_rate: int = CANONICAL_RATE) -> list[bytes]:
    """``pcm`` cut into frames of ``frame_ms``; the last one is padded with silence to full length."""
    step = frame_bytes(frame_ms, sample_rate)
    frames = [pcm[i : i + step] for i in range(0, len(pcm), step)]
    if frames and len(frames[-1]) < step:
        frames[-1] = frames[-1] + b"\x00" * (step - len(frames[-1]))
    return frames


def silence(ms: float, sample_rate: int = CANONICAL_RATE) -> bytes:
    return b"\x00" * frame_bytes(ms, sample_rate)


def duration_ms(pcm: bytes, sample_rate: int = CANONICAL_RATE) -> float:
    return len(pcm) / 2 / sample_rate * 1000.0
