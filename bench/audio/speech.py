"""Speech synthesis of the caller's words with espeak-ng, cached by content hash so a rerun synthesizes nothing.

The cache key is the SHA-256 of (engine, voice, rate, text); the cache holds 24 kHz mono pcm_s16le files. espeak-ng's
own output (22,050 Hz) is resampled with the one resampler. Voices per golden language: en, nl, fr, it.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import threading
import wave
from pathlib import Path

from bench.audio.pcm import CANONICAL_RATE, resample_pcm16
from bench.errors import ConfigError

VOICES = {"en": "en", "nl": "nl", "fr": "fr", "it": "it"}
DEFAULT_CACHE = Path.home() / ".cache" / "voice-bench" / "speech"


class SpeechSynthesizer:
    def __init__(self, cache_dir: Path | None = None, *, words_per_minute: int = 165):
        self.cache_dir = cache_dir or DEFAULT_CACHE
        self.words_per_minute = words_per_minute
        self.synthesized = 0
        self.cached = 0

    def key(self, text: str, language: str) -> str:
        voice = VOICES.get(language, language)
        return hashlib.sha256(f"espeak-ng|{voice}|{self.words_per_minute}|{text}".encode()).hexdigest()

    def pcm(self, text: str, language: str) -> bytes:
        """24 kHz mono pcm_s16le of ``text`` spoken in ``language``."""
        path = self.cache_dir / f"{self.key(text, language)}.pcm"
        if path.exists():
            self.cached += 1
            return path.read_bytes()
        binary = shutil.which("espeak-ng")
        if binary is None:
            raise ConfigError("audio input needs espeak-ng (Debian package espeak-ng); scripts/test installs it")
        result = subprocess.run(
            [binary, "-v", VOICES.get(language, language), "-s", str(self.words_per_minute), "--stdout", text],
            capture_output=True, timeout=60, check=False,
        )
        if result.returncode != 0 or not result.stdout:
            raise ConfigError(f"espeak-ng could not speak {language!r}: {result.stderr.decode(errors='replace')[:200]}")
        with wave.open(io.BytesIO(result.stdout)) as wav:
            rate = wav.getframerate()
            frames = wav.readframes(wav.getnframes())
        pcm = resample_pcm16(frames, rate, CANONICAL_RATE)
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.stem}.{os.getpid()}.{threading.get_ident()}.tmp")  # parallel writers
        tmp.write_bytes(pcm)
        tmp.replace(path)
        self.synthesized += 1
        return pcm
