"""The simulated caller's voice: one interface, two offline providers.

``SpeechProvider.synthesize(text, voice) -> bytes`` returns canonical audio (pcm_s16le, 24 kHz, mono) with a short
lead-in of silence, as a caller draws breath before speaking.

* ``ToneSpeech`` — deterministic and seeded: each word is a tone burst whose pitch and length come from the seed and
  the word (transport tests; no speech recognizer can read it).
* ``EspeakSpeech`` — espeak-ng (offline, per language) with the persona's rate, pitch and loudness; cached by
  content hash like ``bench.audio.speech.SpeechSynthesizer``, whose cache directory and voices it shares.

``voice_for`` derives rate, pitch and loudness from the persona (a senior, concise caller speaks faster; a hesitant
one slower), the script's voice and the environment (a noisy place makes the caller speak up).
"""

from __future__ import annotations

import hashlib
import io
import math
import os
import shutil
import subprocess
import threading
import wave
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from bench.audio.pcm import CANONICAL_RATE, resample_pcm16
from bench.audio.speech import DEFAULT_CACHE, VOICES
from bench.errors import ConfigError
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
        name = self.espeak_voice(voice)
        return hashlib.sha256(f"espeak-ng|{name}|{voice.rate_wpm}|{voice.pitch}|{voice.amplitude}|{text}".encode()
                              ).hexdigest()

    def synthesize(self, text: str, voice: Voice) -> bytes:
        path = self.cache_dir / f"{self.key(text, voice)}.pcm"
        if path.exists():
            self.cached += 1
            return _lead_in() + path.read_bytes()
        binary = shutil.which("espeak-ng")
        if binary is None:
            raise ConfigError("speech_provider espeak needs espeak-ng (Debian package espeak-ng)")
        command = [binary, "-v", self.espeak_voice(voice), "-s", str(voice.rate_wpm), "-p", str(voice.pitch),
                   "-a", str(voice.amplitude), "--stdout", text]
        result = subprocess.run(command, capture_output=True, timeout=60, check=False)
        if result.returncode != 0 or not result.stdout:
            raise ConfigError(f"espeak-ng could not speak {voice.language!r}: "
                              f"{result.stderr.decode(errors='replace')[:200]}")
        with wave.open(io.BytesIO(result.stdout)) as wav:
            rate = wav.getframerate()
            frames = wav.readframes(wav.getnframes())
        pcm = resample_pcm16(frames, rate, CANONICAL_RATE)
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.stem}.{os.getpid()}.{threading.get_ident()}.tmp")  # parallel trials race here
        tmp.write_bytes(pcm)
        tmp.replace(path)
        self.synthesized += 1
        return _lead_in() + pcm


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


def create_provider(name: str, *, seed: int = 0, cache_dir: Path | None = None) -> SpeechProvider:
    if name == "tone":
        return ToneSpeech(seed)
    if name == "espeak":
        return EspeakSpeech(cache_dir)
    raise ConfigError(f"speech_provider {name!r} is not available offline (tone, espeak)")
