"""The simulated caller's voice: one interface, two offline providers and one live one.

``SpeechProvider.synthesize(text, voice) -> bytes`` returns canonical audio (pcm_s16le, 24 kHz, mono) with a short
lead-in of silence, as a caller draws breath before speaking.

* ``ToneSpeech`` — deterministic and seeded: each word is a tone burst whose pitch and length come from the seed and
  the word (transport tests; no speech recognizer can read it).
* ``EspeakSpeech`` — espeak-ng (offline, per language) with the persona's rate, pitch and loudness, through the
  harness's one espeak-ng runner and cache (``bench.audio.speech.espeak_pcm``).
* ``ElevenLabsSpeech`` — ElevenLabs text-to-speech (live) through the official ``elevenlabs`` SDK
  (``text_to_speech.stream`` with ``output_format=pcm_24000`` by default; other ``pcm_*`` rates are resampled). The
  voice id is the persona's voice when it is an ElevenLabs voice id (20 letters and digits), else
  ``ElevenLabsSettings.voice_id``; the persona's rate becomes ``voice_settings.speed`` (0.7–1.2) and its loudness
  a gain applied here. The API key is read from the environment only (``ELEVENLABS_API_KEY``; a missing key is a
  configuration error, never a silent fall-back to another engine) and registered with the redactor, so an error
  body quoting it is scrubbed before any message is logged or written. Audio is cached by content hash (endpoint,
  voice, model, format, speed, seed, text), so a rerun calls nothing and emulated audio never stands in for live.

``voice_for`` derives rate, pitch and loudness from the persona (a senior, concise caller speaks faster; a hesitant
one slower), the script's voice and the environment (a noisy place makes the caller speak up).
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from bench.audio.elevenlabs import make_client, synthesize_pcm
from bench.audio.pcm import CANONICAL_RATE
from bench.audio.speech import DEFAULT_CACHE, VOICES, espeak_key, espeak_pcm, speakable
from bench.errors import ConfigError, ExecutionFailure
from bench.protocol.redact import register_secret

if TYPE_CHECKING:  # config imports this module's settings model; only the annotations need config's types
    from bench.simulation.config import Environment, Persona, Script

LEAD_IN_MS = 200
BASE_RATE_WPM = 165


@dataclass(frozen=True)
class Voice:
    language: str = "en"
    name: str | None = None
    rate_wpm: int = BASE_RATE_WPM
    pitch: int = 50
    amplitude: int = 100


class SpeechProvider(Protocol):
    name: str
    deterministic: bool

    def synthesize(self, text: str, voice: Voice) -> bytes: ...


def _lead_in() -> bytes:
    return b"\x00" * (CANONICAL_RATE * LEAD_IN_MS // 1000 * 2)


class ToneSpeech:
    """Seeded tone bursts standing in for speech (one per word)."""

    name = "tone"
    deterministic = True

    def __init__(self, seed: int = 0):
        self.seed = seed

    def synthesize(self, text: str, voice: Voice) -> bytes:
        words = text.split() or ["..."]
        pace = BASE_RATE_WPM / max(voice.rate_wpm, 1)
        gain = 0.25 * voice.amplitude / 100.0
        base = 140.0 + voice.pitch * 2.0
        pieces = [_lead_in()]
        for index, word in enumerate(words):
            digest = hashlib.sha256(f"{self.seed}|{index}|{word}".encode()).digest()
            frequency = base + digest[0] % 120
            duration = max(0.12, 0.055 * len(word)) * pace
            n = int(CANONICAL_RATE * duration)
            t = np.arange(n) / CANONICAL_RATE
            ramp = min(n // 2, int(CANONICAL_RATE * 0.01))
            envelope = np.ones(n)
            if ramp:
                envelope[:ramp] = np.linspace(0, 1, ramp)
                envelope[-ramp:] = np.linspace(1, 0, ramp)
            burst = gain * 32767 * envelope * np.sin(2 * math.pi * frequency * t)
            pieces.append(np.round(burst).astype("<i2").tobytes())
            pieces.append(b"\x00" * (int(CANONICAL_RATE * 0.06 * pace) * 2))
        return b"".join(pieces)


class EspeakSpeech:
    """espeak-ng with rate, pitch, loudness and voice; the cache key covers all of them."""

    name = "espeak"
    deterministic = True

    def __init__(self, cache_dir: Path | None = None):
        self.cache_dir = cache_dir or DEFAULT_CACHE
        self.synthesized = 0
        self.cached = 0

    @staticmethod
    def espeak_voice(voice: Voice) -> str:
        return voice.name if voice.name and _espeak_has_voice(voice.name) else VOICES.get(voice.language,
                                                                                          voice.language)

    def key(self, text: str, voice: Voice) -> str:
        return espeak_key(speakable(text), self.espeak_voice(voice), voice.rate_wpm, voice.pitch, voice.amplitude)

    def synthesize(self, text: str, voice: Voice) -> bytes:
        pcm, cached = espeak_pcm(text, self.espeak_voice(voice), rate_wpm=voice.rate_wpm, pitch=voice.pitch,
                                 amplitude=voice.amplitude, cache_dir=self.cache_dir)
        if cached:
            self.cached += 1
        else:
            self.synthesized += 1
        return _lead_in() + pcm


def _write_cache(path: Path, pcm: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.{threading.get_ident()}.tmp")  # parallel trials race here
    tmp.write_bytes(pcm)
    tmp.replace(path)


# --- ElevenLabs (live) -----------------------------------------------------------------------------------------
ELEVENLABS_KEY_VAR = "ELEVENLABS_API_KEY"
#: ElevenLabs voice ids are 20 letters and digits (e.g. a premade voice's id); other persona voice names (an
#: espeak ``en-us``, an Azure ``en-US-AvaNeural``) are not sent to ElevenLabs
ELEVENLABS_VOICE_ID = re.compile(r"^[A-Za-z0-9]{20}$")
#: ``voice_settings.speed`` bounds the API accepts
MIN_SPEED, MAX_SPEED = 0.7, 1.2
PcmFormat = Literal["pcm_8000", "pcm_16000", "pcm_22050", "pcm_24000", "pcm_32000", "pcm_44100", "pcm_48000"]


class ElevenLabsSettings(BaseModel):
    """Run-level settings of the ElevenLabs caller voice (the key itself is never a setting)."""

    model_config = ConfigDict(extra="forbid")

    #: used when the persona names no ElevenLabs voice id
    voice_id: str | None = Field(default=None, pattern=ELEVENLABS_VOICE_ID.pattern)
    model_id: str = "eleven_flash_v2_5"
    #: raw PCM only (s16le mono); anything but 24 kHz is resampled to the canonical rate
    output_format: PcmFormat = "pcm_24000"
    #: None: the SDK's production environment (https://api.elevenlabs.io); set it for a regional or emulated API
    base_url: str | None = None
    #: the environment variable holding the API key
    api_key_env: str = Field(default=ELEVENLABS_KEY_VAR, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    #: sent as ``seed`` (ElevenLabs: best-effort determinism); part of the cache key
    seed: int | None = Field(default=None, ge=0, le=4294967295)
    timeout_s: float = Field(default=60.0, gt=0, le=600)


class SpeechFailure(ExecutionFailure):
    """The speech provider could not speak a line (exit 4); the message is redacted."""


def elevenlabs_voice_id(voice: Voice, settings: ElevenLabsSettings) -> str | None:
    """The voice id to speak ``voice`` with: the persona's when it is an ElevenLabs id, else the run's."""
    if voice.name and ELEVENLABS_VOICE_ID.match(voice.name):
        return voice.name
    return settings.voice_id


def elevenlabs_problems(settings: ElevenLabsSettings | None, voices: Iterable[Voice] = ()) -> list[tuple[str, str]]:
    """What keeps ElevenLabs speech from running, as (field, message) pairs: the API key missing from the
    environment, the SDK not installed, a caller voice with no ElevenLabs voice id. Opens no connection."""
    settings = settings or ElevenLabsSettings()
    problems: list[tuple[str, str]] = []
    if not os.environ.get(settings.api_key_env):
        problems.append(("speech_provider", f"ElevenLabs speech needs its API key in the environment variable "
                                            f"{settings.api_key_env}, which is not set (the key is read from the "
                                            f"environment only; tone and espeak run offline)"))
    try:
        import elevenlabs  # noqa: F401
    except ImportError:
        problems.append(("speech_provider", "ElevenLabs speech needs the Python package elevenlabs "
                                            "(pip install elevenlabs)"))
    for voice in voices:
        if elevenlabs_voice_id(voice, settings) is None:
            named = f" ({voice.name!r} is not an ElevenLabs voice id)" if voice.name else ""
            problems.append(("elevenlabs.voice_id", f"no ElevenLabs voice for a caller{named}: set the persona's "
                                                    f"speech.voice to an ElevenLabs voice id, or elevenlabs.voice_id "
                                                    f"in the run file"))
            break
    return problems


class ElevenLabsSpeech:
    """ElevenLabs text-to-speech through the official SDK, canonical PCM out, cached by content hash."""

    name = "elevenlabs"
    deterministic = False

    def __init__(self, settings: ElevenLabsSettings | None = None, *, cache_dir: Path | None = None):
        self.settings = settings or ElevenLabsSettings()
        key = os.environ.get(self.settings.api_key_env)
        if not key:
            raise ConfigError(f"speech_provider elevenlabs: the environment variable {self.settings.api_key_env} "
                              f"(the ElevenLabs API key) is not set")
        register_secret(key)
        self._key = key
        self.cache_dir = cache_dir or DEFAULT_CACHE
        self._client: Any = None
        self._lock = threading.Lock()
        self.synthesized = 0
        self.cached = 0
        #: characters sent to ElevenLabs (what it bills); cached lines cost nothing
        self.characters = 0

    @property
    def endpoint(self) -> str:
        return (self.settings.base_url or "https://api.elevenlabs.io").rstrip("/")

    @staticmethod
    def speed(voice: Voice) -> float:
        return round(min(MAX_SPEED, max(MIN_SPEED, voice.rate_wpm / BASE_RATE_WPM)), 2)

    def key(self, text: str, voice: Voice) -> str:
        s = self.settings
        parts = ["elevenlabs", self.endpoint, elevenlabs_voice_id(voice, s) or "", s.model_id, s.output_format,
                 f"{self.speed(voice):.2f}", "" if s.seed is None else str(s.seed), text]
        return hashlib.sha256("|".join(parts).encode()).hexdigest()

    def client(self) -> Any:
        with self._lock:
            if self._client is None:
                self._client = make_client(self._key, base_url=self.settings.base_url,
                                           timeout_s=self.settings.timeout_s)
            return self._client

    def synthesize(self, text: str, voice: Voice) -> bytes:
        path = self.cache_dir / f"{self.key(text, voice)}.pcm"
        if path.exists():
            self.cached += 1
            return _lead_in() + _gain(path.read_bytes(), voice.amplitude)
        pcm = self._request(text, voice)
        _write_cache(path, pcm)
        self.synthesized += 1
        self.characters += len(text)
        return _lead_in() + _gain(pcm, voice.amplitude)

    def _request(self, text: str, voice: Voice) -> bytes:
        s = self.settings
        voice_id = elevenlabs_voice_id(voice, s)
        if voice_id is None:
            raise ConfigError(f"speech_provider elevenlabs: no ElevenLabs voice id for voice {voice.name!r}; set "
                              f"the persona's speech.voice or elevenlabs.voice_id")
        try:
            return synthesize_pcm(self.client(), voice_id, text, model_id=s.model_id, output_format=s.output_format,
                                  speed=self.speed(voice), seed=s.seed)
        except ExecutionFailure as exc:
            raise SpeechFailure(str(exc)) from None


def _gain(pcm: bytes, amplitude: int) -> bytes:
    """espeak's loudness (100 = as synthesized) applied to audio that has none, clipped to PCM16."""
    if amplitude == 100 or not pcm:
        return pcm
    samples = np.frombuffer(pcm[: len(pcm) // 2 * 2], dtype="<i2").astype(np.float64) * (amplitude / 100.0)
    return np.clip(np.round(samples), -32768, 32767).astype("<i2").tobytes()


_VOICE_CACHE: dict[str, bool] = {}


def _espeak_has_voice(name: str) -> bool:
    """Whether espeak-ng knows ``name`` (e.g. ``en-us``, ``en+f3``); a vendor voice name it does not know (an
    Azure ``en-US-AvaNeural``) falls back to the language's voice."""
    if name not in _VOICE_CACHE:
        binary = shutil.which("espeak-ng")
        base = name.split("+")[0]
        known = False
        if binary is not None:
            result = subprocess.run([binary, "--voices"], capture_output=True, timeout=30, check=False, text=True)
            names = {line.split()[1] for line in result.stdout.splitlines()[1:] if len(line.split()) > 1}
            known = base in names or base.lower() in names
        _VOICE_CACHE[name] = known
    return _VOICE_CACHE[name]


_FAST = ("concise", "precise", "brisk", "direct", "impatient", "hurried", "efficient")
_SLOW = ("hesitant", "slow", "elderly", "confused", "uncertain", "anxious", "careful")


def voice_for(persona: Persona | None, *, language: str, script: Script | None = None,
              environment: Environment | None = None) -> Voice:
    """The caller's voice: explicit ``persona.speech`` settings win, the rest is derived from the persona."""
    rate, pitch, amplitude = BASE_RATE_WPM, 50, 100
    name = script.persona_voice if script else None
    if persona is not None:
        text = f"{persona.communication_style} {persona.verbosity} {' '.join(persona.traits)}".lower()
        if persona.experience_level.lower() in ("senior", "expert", "familiar"):
            rate += 15 if persona.experience_level.lower() != "familiar" else 5
        if any(word in text for word in _FAST) or persona.session_behavior.conclude_quickly:
            rate += 10
        if any(word in text for word in _SLOW) or persona.experience_level.lower() in ("novice", "first-time"):
            rate -= 30
        if persona.experience_level.lower() == "senior":
            pitch -= 6  # "faster and flatter"
        pitch += int(hashlib.sha256(persona.name.encode()).digest()[0]) % 21 - 10
        name = persona.speech.voice or persona.voice or name
        rate = persona.speech.rate_wpm or rate
        pitch = persona.speech.pitch if persona.speech.pitch is not None else pitch
        amplitude = persona.speech.amplitude if persona.speech.amplitude is not None else amplitude
        language = persona.language or language
    if environment is not None and (persona is None or persona.speech.amplitude is None):
        level = environment.impact * (environment.base_noise_volume * bool(environment.base_noise)
                                      + environment.background_voices_volume * bool(environment.background_voices))
        amplitude = int(min(200, amplitude * (1.0 + min(level, 1.0) * 0.6)))
    return Voice(language=language, name=name, rate_wpm=max(80, min(450, rate)), pitch=max(0, min(99, pitch)),
                 amplitude=amplitude)


def create_provider(name: str, *, seed: int = 0, cache_dir: Path | None = None,
                    settings: ElevenLabsSettings | dict[str, Any] | None = None) -> SpeechProvider:
    """The speech provider ``name`` (``settings``: ElevenLabs' run settings; a missing key raises ``ConfigError``)."""
    if name == "tone":
        return ToneSpeech(seed)
    if name == "espeak":
        return EspeakSpeech(cache_dir)
    if name == "elevenlabs":
        parsed = settings if isinstance(settings, ElevenLabsSettings) else ElevenLabsSettings.model_validate(
            settings or {})
        return ElevenLabsSpeech(parsed, cache_dir=cache_dir)
    raise ConfigError(f"speech_provider {name!r} is not known (tone, espeak, elevenlabs)")
