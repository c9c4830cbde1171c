"""Speech synthesis of answer text for review clips: espeak-ng offline, ElevenLabs live, one interface.

``make_synthesizer(engine, cache_dir)`` returns an object with ``name`` (recorded with every clip, e.g.
``"espeak-ng"``), ``voice_for(language)`` and ``pcm(text, language) -> bytes`` (24 kHz mono pcm_s16le), both cached
by content hash so a rerun synthesizes nothing it already has:

- ``espeak-ng`` (default, offline) is ``bench.audio.speech.SpeechSynthesizer``;
- ``elevenlabs`` (live) calls the official ``elevenlabs`` SDK (``bench.audio.elevenlabs``: ``text_to_speech.stream``,
  ``pcm_24000``) with the key from ``ELEVENLABS_API_KEY``. Asking for it without the key is a configuration error
  (exit 2) naming the variable; nothing falls back to espeak-ng. ``ELEVENLABS_VOICE_ID`` and
  ``ELEVENLABS_TTS_MODEL`` choose voice and model; ``ELEVENLABS_BASE_URL`` points the SDK at another endpoint
  (used by the tests' local fake).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Protocol

from bench.audio.elevenlabs import make_client, synthesize_pcm
from bench.audio.pcm import CANONICAL_RATE
from bench.audio.speech import DEFAULT_CACHE, VOICES, SpeechSynthesizer
from bench.errors import ConfigError
from bench.protocol.redact import register_secret

ENGINES = ("espeak-ng", "elevenlabs")
#: a premade ElevenLabs voice that speaks all four golden languages with the multilingual model
DEFAULT_ELEVENLABS_VOICE = "JBFqnCBsd6RMkjVDRZzb"
DEFAULT_ELEVENLABS_MODEL = "eleven_multilingual_v2"


class Synthesizer(Protocol):
    name: str
    synthesized: int
    cached: int

    def voice_for(self, language: str) -> str: ...

    def pcm(self, text: str, language: str) -> bytes: ...


class EspeakSynthesizer(SpeechSynthesizer):
    """espeak-ng through the harness's speech cache (one voice per golden language)."""

    name = "espeak-ng"

    def voice_for(self, language: str) -> str:
        return VOICES.get(language, language)


class ElevenLabsSynthesizer:
    """ElevenLabs text to speech through the official SDK; responses cached by (model, voice, language, text)."""

    name = "elevenlabs"

    def __init__(self, api_key: str, cache_dir: Path | None = None, *, voice_id: str | None = None,
                 model_id: str | None = None, base_url: str | None = None):
        self._client = make_client(api_key, base_url=base_url)
        self.cache_dir = cache_dir or DEFAULT_CACHE
        self.voice_id = voice_id or DEFAULT_ELEVENLABS_VOICE
        self.model_id = model_id or DEFAULT_ELEVENLABS_MODEL
        self.synthesized = 0
        self.cached = 0

    def voice_for(self, language: str) -> str:
        return f"{self.voice_id} ({self.model_id}, {language})"

    def key(self, text: str, language: str) -> str:
        return hashlib.sha256(f"elevenlabs|{self.model_id}|{self.voice_id}|{language}|{text}".encode()).hexdigest()

    def pcm(self, text: str, language: str) -> bytes:
        path = self.cache_dir / f"{self.key(text, language)}.pcm"
        if path.exists():
            self.cached += 1
            return path.read_bytes()
        pcm = synthesize_pcm(self._client, self.voice_id, text, model_id=self.model_id, language_code=language,
                             output_format=f"pcm_{CANONICAL_RATE}", seed=0)
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(pcm)
        tmp.replace(path)
        self.synthesized += 1
        return pcm


def make_synthesizer(engine: str = "espeak-ng", cache_dir: Path | None = None) -> Synthesizer:
    """The synthesizer for ``engine``; ``elevenlabs`` without ``ELEVENLABS_API_KEY`` is exit 2 (no fallback)."""
    if engine == "espeak-ng":
        return EspeakSynthesizer(cache_dir)
    if engine == "elevenlabs":
        key = os.environ.get("ELEVENLABS_API_KEY", "").strip()
        register_secret(key)  # as it is read: redacted in every error that might quote it
        if not key:
            raise ConfigError("--tts elevenlabs synthesizes with the live ElevenLabs API and needs the environment "
                              "variable ELEVENLABS_API_KEY; set it, or use --tts espeak-ng (offline)")
        return ElevenLabsSynthesizer(key, cache_dir, voice_id=os.environ.get("ELEVENLABS_VOICE_ID") or None,
                                     model_id=os.environ.get("ELEVENLABS_TTS_MODEL") or None,
                                     base_url=os.environ.get("ELEVENLABS_BASE_URL") or None)
    raise ConfigError(f"--tts: unknown speech engine {engine!r}; choose one of {', '.join(ENGINES)}")


