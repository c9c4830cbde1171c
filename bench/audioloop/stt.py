"""Speech recognition for the audio loop, cached by content hash so a rerun transcribes nothing new.

``make_transcriber(engine, cache_dir)`` returns a ``CachedTranscriber`` around one engine:

- ``pocketsphinx`` (offline): the CMU Sphinx decoder with the US-English model the ``pocketsphinx`` package ships;
  it has no Dutch, French or Italian model, so it transcribes English only (``languages``);
- ``deepgram`` (live): Deepgram's pre-recorded API through the official ``deepgram-sdk``
  (``listen.v1.media.transcribe_file``, model ``nova-3`` or ``DEEPGRAM_STT_MODEL``), all four languages; without
  ``DEEPGRAM_API_KEY`` it is a configuration error (exit 2) naming the variable — never a silent fallback.

The cache key is SHA-256 of (engine, model, language, SHA-256 of the 24 kHz audio); entries are small JSON files.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path
from typing import Protocol

from bench.audio.pcm import CANONICAL_RATE, resample_pcm16
from bench.errors import ConfigError, ExecutionFailure, MissingExtra
from bench.protocol.audio import mono_wav
from bench.protocol.redact import redact, register_secret

ENGINES = ("pocketsphinx", "deepgram")
DEFAULT_CACHE = Path.home() / ".cache" / "voice-bench" / "transcripts"


class Engine(Protocol):
    name: str
    model: str
    languages: tuple[str, ...]

    def transcribe(self, pcm: bytes, language: str) -> str: ...


class PocketSphinx:
    """Offline English recognition with the model shipped inside the pocketsphinx wheel."""

    name = "pocketsphinx"
    model = "en-us (pocketsphinx package)"
    languages: tuple[str, ...] = ("en",)

    def __init__(self) -> None:
        try:
            from pocketsphinx import Decoder
        except ImportError:
            raise MissingExtra("audio-loop speech recognition", "audio", "pocketsphinx") from None
        self._decoder = Decoder(samprate=16000, loglevel="FATAL")
        self._lock = threading.Lock()

    def transcribe(self, pcm: bytes, language: str) -> str:
        if language not in self.languages:
            raise ConfigError(f"pocketsphinx has no {language!r} model here (English only); use --stt deepgram")
        audio = resample_pcm16(pcm, CANONICAL_RATE, 16000)
        with self._lock:
            self._decoder.start_utt()
            self._decoder.process_raw(audio, full_utt=True)
            self._decoder.end_utt()
            hyp = self._decoder.hyp()
        return hyp.hypstr.strip() if hyp is not None else ""


class Deepgram:
    """Deepgram pre-recorded transcription through the official SDK (live; needs DEEPGRAM_API_KEY)."""

    name = "deepgram"
    languages: tuple[str, ...] = ("nl", "en", "fr", "it")

    def __init__(self, api_key: str, model: str | None = None):
        try:
            from deepgram import DeepgramClient
        except ImportError:
            raise MissingExtra("audio-loop speech recognition", "deepgram", "deepgram") from None
        register_secret(api_key)
        self.model = model or "nova-3"
        self._client = DeepgramClient(api_key=api_key)

    def transcribe(self, pcm: bytes, language: str) -> str:
        try:
            response = self._client.listen.v1.media.transcribe_file(
                request=mono_wav(pcm, CANONICAL_RATE), model=self.model, language=language, smart_format=False,
                punctuate=True)
            return response.results.channels[0].alternatives[0].transcript.strip()
        except Exception as exc:  # the SDK's API and transport errors; the key never reaches the message
            raise ExecutionFailure(f"Deepgram transcription failed: {redact(str(exc))[:300]}") from None


class CachedTranscriber:
    """An engine behind the transcript cache; counts what it transcribed and what came from the cache."""

    def __init__(self, engine: Engine, cache_dir: Path | None = None):
        self.engine = engine
        self.cache_dir = cache_dir or DEFAULT_CACHE
        self.transcribed = 0
        self.cached = 0

    @property
    def name(self) -> str:
        return self.engine.name

    @property
    def languages(self) -> tuple[str, ...]:
        return self.engine.languages

    def key(self, pcm: bytes, language: str) -> str:
        audio = hashlib.sha256(pcm).hexdigest()
        return hashlib.sha256(f"{self.engine.name}|{self.engine.model}|{language}|{audio}".encode()).hexdigest()

    def transcribe(self, pcm: bytes, language: str) -> str:
        path = self.cache_dir / f"{self.key(pcm, language)}.json"
        if path.exists():
            self.cached += 1
            return str(json.loads(path.read_text(encoding="utf-8"))["transcript"])
        text = self.engine.transcribe(pcm, language)
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"engine": self.engine.name, "model": self.engine.model, "language": language,
                                   "transcript": text}), encoding="utf-8")
        tmp.replace(path)
        self.transcribed += 1
        return text


def make_transcriber(engine: str = "pocketsphinx", cache_dir: Path | None = None) -> CachedTranscriber:
    if engine == "pocketsphinx":
        return CachedTranscriber(PocketSphinx(), cache_dir)
    if engine == "deepgram":
        key = os.environ.get("DEEPGRAM_API_KEY", "").strip()
        if not key:
            raise ConfigError("--stt deepgram transcribes with the live Deepgram API and needs the environment "
                              "variable DEEPGRAM_API_KEY; set it, or use --stt pocketsphinx (offline, English)")
        return CachedTranscriber(Deepgram(key, os.environ.get("DEEPGRAM_STT_MODEL") or None), cache_dir)
    raise ConfigError(f"--stt: unknown speech recognizer {engine!r}; choose one of {', '.join(ENGINES)}")
