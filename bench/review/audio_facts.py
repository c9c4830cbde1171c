"""Measured facts of one answer clip's audio, for the naturalness judge (measured from the PCM, never judged).

``measure(path, media_type, answer_text)`` reads a WAV clip (pcm_s16le; several channels are averaged to mono) and
returns ``AudioFacts``: the duration, the speech found by TEN VAD (``bench.audio.vad.speech_segments``, 16 ms hop,
gaps under 160 ms merged), the leading and trailing silence, the pauses between speech segments (count, longest,
mean) and the speaking rate (words of the answer text per minute of detected speech). A clip that is not a WAV
file gets facts with ``measured=False`` and the reason, so the judge still reads the text.
"""

from __future__ import annotations

import re
import wave
from pathlib import Path

import numpy as np
from pydantic import BaseModel

from bench.audio.vad import speech_segments

_WORD = re.compile(r"\w+", re.UNICODE)


class AudioFacts(BaseModel):
    """What was measured on a clip (milliseconds; None where it cannot be measured)."""

    measured: bool
    reason: str = ""
    duration_ms: float | None = None
    speech_ms: float | None = None
    leading_silence_ms: float | None = None
    trailing_silence_ms: float | None = None
    pauses: int | None = None
    longest_pause_ms: float | None = None
    mean_pause_ms: float | None = None
    words: int = 0
    speaking_rate_wpm: float | None = None

    def for_prompt(self) -> dict[str, object]:
        """The facts as given to the judge (unmeasured fields left out)."""
        return self.model_dump(exclude_none=True, exclude={"measured"} if self.measured else set())


def word_count(text: str) -> int:
    return len(_WORD.findall(text))


def read_pcm(path: Path) -> tuple[bytes, int]:
    """Mono pcm_s16le and the sample rate of a WAV file (ValueError naming the file when it cannot be read)."""
    try:
        with wave.open(str(path), "rb") as wav:
            channels, width, rate = wav.getnchannels(), wav.getsampwidth(), wav.getframerate()
            frames = wav.readframes(wav.getnframes())
    except (wave.Error, EOFError, OSError) as exc:
        raise ValueError(f"{path}: not a readable WAV file ({exc})") from None
    if width != 2:
        raise ValueError(f"{path}: {8 * width}-bit WAV; only 16-bit PCM is measured")
    if channels > 1:
        samples = np.frombuffer(frames[: len(frames) // (2 * channels) * 2 * channels], dtype="<i2")
        frames = samples.reshape(-1, channels).mean(axis=1).astype("<i2").tobytes()
    return frames, rate


def measure(path: Path, media_type: str, answer_text: str) -> AudioFacts:
    """The clip's measured facts (see the module docstring)."""
    words = word_count(answer_text)
    if media_type not in ("audio/wav", "audio/x-wav", "audio/wave"):
        return AudioFacts(measured=False, reason=f"media type {media_type} is not measured", words=words)
    try:
        pcm, rate = read_pcm(path)
    except ValueError as exc:
        return AudioFacts(measured=False, reason=str(exc), words=words)
    duration = len(pcm) / 2 / rate * 1000.0 if rate else 0.0
    try:
        segments = speech_segments(pcm, rate) if duration > 0 else []
    except RuntimeError as exc:  # TEN VAD's native library is missing
        return AudioFacts(measured=False, reason=str(exc), duration_ms=round(duration, 1), words=words)
    if not segments:
        return AudioFacts(measured=True, duration_ms=round(duration, 1), speech_ms=0.0, pauses=0,
                          leading_silence_ms=round(duration, 1), trailing_silence_ms=0.0, words=words,
                          reason="no speech detected")
    gaps = [b.start_ms - a.end_ms for a, b in zip(segments, segments[1:], strict=False)]
    speech = sum(s.end_ms - s.start_ms for s in segments)
    return AudioFacts(
        measured=True, duration_ms=round(duration, 1), speech_ms=round(speech, 1),
        leading_silence_ms=round(segments[0].start_ms, 1),
        trailing_silence_ms=round(max(0.0, duration - segments[-1].end_ms), 1),
        pauses=len(gaps), longest_pause_ms=round(max(gaps), 1) if gaps else 0.0,
        mean_pause_ms=round(sum(gaps) / len(gaps), 1) if gaps else 0.0, words=words,
        speaking_rate_wpm=round(words / (speech / 60000.0), 1) if speech > 0 and words else None)
