"""Speech synthesis of the caller's words with espeak-ng, cached by content hash so a rerun synthesizes nothing.

``espeak_pcm`` is the one espeak-ng runner of the harness: golden runs (``SpeechSynthesizer``), simulations
(``bench.simulation.speech.EspeakSpeech``, with the persona's rate, pitch and loudness) and review clips use it.
The cache key is the SHA-256 of (engine, voice, rate, pitch, loudness, text); the cache holds 24 kHz mono pcm_s16le
files. espeak-ng's
own output (22,050 Hz) is resampled with the one resampler. Voices per golden language: en, nl, fr, it.

The text goes to espeak-ng on its standard input (``--stdin``), never as a command-line argument: an answer is
hostile input (a NUL byte or an argument over the kernel's 128 KiB limit broke the call). Control characters
other than tab and line breaks are dropped first; a text longer than ``MAX_SPEECH_CHARS`` (about twenty minutes of
speech) is not spoken. A text espeak-ng cannot speak raises ``SpeechFailed`` naming why (exit 4), so a caller that
makes many clips can record the one that failed and go on.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import subprocess
import threading
import wave
from pathlib import Path

from bench.audio.pcm import CANONICAL_RATE, resample_pcm16
from bench.errors import ConfigError, ExecutionFailure

VOICES = {"en": "en", "nl": "nl", "fr": "fr", "it": "it"}
DEFAULT_CACHE = Path.home() / ".cache" / "voice-bench" / "speech"
#: longer texts are not spoken: about twenty minutes at 165 words per minute (and a WAV of ~50 MB)
MAX_SPEECH_CHARS = 20_000
SYNTHESIS_TIMEOUT_S = 120
_UNSPEAKABLE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


class SpeechFailed(ExecutionFailure):
    """espeak-ng could not speak a text (too long, timed out, or it failed); the message says which."""


def speakable(text: str) -> str:
    """``text`` without the control characters espeak-ng cannot take (NUL and the other C0 codes but tab and line
    breaks, and DEL)."""
    return _UNSPEAKABLE.sub("", text)


#: espeak-ng's own pitch and amplitude (what a voice without a persona speaks with)
DEFAULT_PITCH = 50
DEFAULT_AMPLITUDE = 100


def espeak_key(text: str, voice: str, rate_wpm: int, pitch: int = DEFAULT_PITCH,
               amplitude: int = DEFAULT_AMPLITUDE) -> str:
    return hashlib.sha256(f"espeak-ng|{voice}|{rate_wpm}|{pitch}|{amplitude}|{text}".encode()).hexdigest()


def espeak_pcm(text: str, voice: str, *, rate_wpm: int = 165, pitch: int = DEFAULT_PITCH,
               amplitude: int = DEFAULT_AMPLITUDE, cache_dir: Path | None = None) -> tuple[bytes, bool]:
    """24 kHz mono pcm_s16le of ``text`` spoken by espeak-ng voice ``voice`` (no lead-in), and whether it came
    from the cache. ``SpeechFailed`` when it cannot be spoken; a missing espeak-ng is a configuration error."""
    text = speakable(text)
    path = (cache_dir or DEFAULT_CACHE) / f"{espeak_key(text, voice, rate_wpm, pitch, amplitude)}.pcm"
    if path.exists():
        return path.read_bytes(), True
    if len(text) > MAX_SPEECH_CHARS:
        raise SpeechFailed(f"the text is too long to speak ({len(text)} characters > {MAX_SPEECH_CHARS})")
    binary = shutil.which("espeak-ng")
    if binary is None:
        raise ConfigError("audio input needs espeak-ng (Debian package espeak-ng); scripts/test installs it")
    try:
        result = subprocess.run(
            [binary, "-v", voice, "-s", str(rate_wpm), "-p", str(pitch), "-a", str(amplitude), "--stdout",
             "--stdin"],
            input=text.encode("utf-8", "replace"), capture_output=True, timeout=SYNTHESIS_TIMEOUT_S, check=False,
        )
    except subprocess.TimeoutExpired:
        raise SpeechFailed(f"espeak-ng did not finish speaking {len(text)} characters in "
                           f"{SYNTHESIS_TIMEOUT_S} s") from None
    if result.returncode != 0 or not result.stdout:
        raise SpeechFailed(f"espeak-ng could not speak with voice {voice!r} (exit {result.returncode}): "
                           f"{result.stderr.decode(errors='replace')[:200]}")
    with wave.open(io.BytesIO(result.stdout)) as wav:
        rate = wav.getframerate()
        frames = wav.readframes(wav.getnframes())
    pcm = resample_pcm16(frames, rate, CANONICAL_RATE)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.{threading.get_ident()}.tmp")  # parallel writers
    tmp.write_bytes(pcm)
    tmp.replace(path)
    return pcm, False


class SpeechSynthesizer:
    """The golden caller's voice: espeak-ng's voice for the entry's language at ``words_per_minute``."""

    def __init__(self, cache_dir: Path | None = None, *, words_per_minute: int = 165):
        self.cache_dir = cache_dir or DEFAULT_CACHE
        self.words_per_minute = words_per_minute
        self.synthesized = 0
        self.cached = 0

    def key(self, text: str, language: str) -> str:
        return espeak_key(speakable(text), VOICES.get(language, language), self.words_per_minute)

    def pcm(self, text: str, language: str) -> bytes:
        """24 kHz mono pcm_s16le of ``text`` spoken in ``language`` (``SpeechFailed`` if it cannot be spoken)."""
        pcm, cached = espeak_pcm(text, VOICES.get(language, language), rate_wpm=self.words_per_minute,
                                 cache_dir=self.cache_dir)
        if cached:
            self.cached += 1
        else:
            self.synthesized += 1
        return pcm
