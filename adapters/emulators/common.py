"""Shared emulator parts: seeded latency profiles, fault injection, frame-send stamping and the audio pacer.

Every emulator draws its delays from a ``LatencyProfile`` and its faults from a ``FaultPlan``, both seeded so
that a run is reproducible. Emulators stamp the moment they actually write a frame with ``time.monotonic()``
(one clock for every process on the machine) so the harness's own timing error can be measured.
``split_emulator_options`` turns an adapter's ``options`` into ``EmulatorSettings`` plus the emulator's own
start options; ``TurnAttempts`` / ``pick_fault`` decide per connection whether a fault fires (first attempt
only, if so configured); ``guess_language`` guesses the language of a question for the emulated brain.
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

FaultKind = Literal["disconnect", "error_event", "rate_limit", "malformed", "stall"]
FAULT_KINDS: tuple[str, ...] = ("disconnect", "error_event", "rate_limit", "malformed", "stall")


class LatencyProfile(BaseModel):
    """Delay distributions of an emulated system (log-normal around the given medians, in milliseconds)."""

    model_config = ConfigDict(extra="forbid")

    first_token_median_ms: float = Field(default=300.0, ge=0)
    first_token_sigma: float = Field(default=0.25, ge=0, description="log-normal shape; 0 = fixed delay")
    first_audio_extra_ms: float = Field(default=150.0, ge=0, description="first audio after first text")
    token_interval_ms: float = Field(default=15.0, ge=0)
    audio_chunk_ms: int = Field(default=40, ge=5, le=1000)
    audio_pacing: float = Field(default=0.0, ge=0, description="1.0 = real time, 0 = as fast as possible")
    seed: int = 0

    def rng(self, key: str) -> random.Random:
        """A generator seeded by profile seed + a per-turn key, so turn delays don't depend on scheduling."""
        return random.Random(f"{self.seed}:{key}")

    def sample_first_token_ms(self, rng: random.Random) -> float:
        if self.first_token_sigma == 0 or self.first_token_median_ms == 0:
            return self.first_token_median_ms
        return self.first_token_median_ms * math.exp(rng.gauss(0.0, self.first_token_sigma))


class FaultPlan(BaseModel):
    """Which faults to inject and how often. ``rate`` is the probability per turn, drawn from a seeded RNG."""

    model_config = ConfigDict(extra="forbid")

    rate: float = Field(default=0.0, ge=0, le=1)
    kinds: list[FaultKind] = Field(default_factory=lambda: list(FAULT_KINDS))
    retry_after_s: float = Field(default=0.05, ge=0)
    stall_s: float = Field(
        default=3600.0, ge=0, description="how long a stalled response waits (the harness times out)"
    )
    seed: int = 0
    #: faults fire on the first attempt of a turn only when True, so retries can recover
    first_attempt_only: bool = False

    def pick(self, key: str) -> FaultKind | None:
        if self.rate <= 0 or not self.kinds:
            return None
        rng = random.Random(f"fault:{self.seed}:{key}")
        if rng.random() >= self.rate:
            return None
        return rng.choice(self.kinds)


class EmulatorSettings(BaseModel):
    """Knobs common to every emulator."""

    model_config = ConfigDict(extra="forbid")

    latency: LatencyProfile = LatencyProfile()
    faults: FaultPlan = FaultPlan()
    host: str = "127.0.0.1"
    port: int = 0


SETTINGS_KEYS: tuple[str, ...] = ("latency", "faults", "host", "port")


def split_emulator_options(
    options: Mapping[str, Any] | BaseModel, forward: Iterable[str] = ()
) -> tuple[EmulatorSettings, dict[str, Any]]:
    """``EmulatorSettings`` from ``options.emulator`` (top-level ``latency`` / ``faults`` / ``host`` / ``port``
    override it), plus the emulator-specific start options: the other keys under ``emulator``, the top-level
    keys named in ``forward`` (e.g. ``brain``) and ``options.emulator_options``. A pydantic options model is
    read without its unset (``None``) fields."""
    if isinstance(options, BaseModel):
        fields = {name: getattr(options, name) for name in type(options).model_fields}
        options = {name: value for name, value in fields.items() if value is not None}
    raw = dict(options.get("emulator") or {})
    for key in SETTINGS_KEYS:
        if key in options:
            raw[key] = options[key]
    extra = {k: raw.pop(k) for k in list(raw) if k not in SETTINGS_KEYS}
    for key in forward:
        if key in options:
            extra[key] = options[key]
    extra.update(options.get("emulator_options") or {})
    return EmulatorSettings(**raw), extra


class TurnAttempts:
    """Counts connections per turn key, so faults can fire on the first attempt only and retries recover."""

    def __init__(self) -> None:
        self._seen: dict[str, int] = defaultdict(int)
        self._connections = 0

    def next(self, header_key: str | None) -> tuple[str, int]:
        self._connections += 1
        key = header_key or f"conn-{self._connections}"
        attempt = self._seen[key]
        self._seen[key] += 1
        return key, attempt


def pick_fault(settings: EmulatorSettings, key: str, attempt: int) -> FaultKind | None:
    """The fault for attempt ``attempt`` (0-based, from ``TurnAttempts``) of turn ``key``, seeded on
    ``key#attempt``; none for retries when the plan is ``first_attempt_only``."""
    if attempt > 0 and settings.faults.first_attempt_only:
        return None
    return settings.faults.pick(f"{key}#{attempt}")


class SendStamps:
    """Records ``time.monotonic()`` right after a frame is written, keyed by a label (e.g. the turn id)."""

    def __init__(self) -> None:
        self.first_text: dict[str, float] = {}
        self.first_audio: dict[str, float] = {}
        self.scheduled_first_audio: dict[str, float] = {}

    def mark(self, table: dict[str, float], key: str) -> None:
        table.setdefault(key, time.monotonic())


async def sleep_until(deadline: float) -> None:
    """Sleep until ``time.monotonic()`` reaches ``deadline`` (coarse sleep, then a short precise wait)."""
    remaining = deadline - time.monotonic()
    if remaining > 0.002:
        await asyncio.sleep(remaining - 0.001)
    while time.monotonic() < deadline:
        await asyncio.sleep(0)


def pcm16_silence_tone(duration_ms: int, sample_rate: int = 24000, frequency: float = 220.0) -> bytes:
    """A quiet deterministic tone standing in for synthesized speech (emulators have no TTS engine)."""
    import numpy as np

    samples = int(sample_rate * duration_ms / 1000)
    t = np.arange(samples) / sample_rate
    wave = (0.1 * 32767 * np.sin(2 * math.pi * frequency * t)).astype("<i2")
    return wave.tobytes()


def speech_duration_ms(text: str, words_per_minute: float = 165.0) -> int:
    """How long speaking ``text`` would take at a typical phone-agent pace."""
    words = max(1, len(text.split()))
    return int(words / words_per_minute * 60_000)


def chunk_audio(pcm: bytes, chunk_ms: int, sample_rate: int = 24000) -> list[bytes]:
    step = int(sample_rate * chunk_ms / 1000) * 2
    return [pcm[i : i + step] for i in range(0, len(pcm), step)] or [b""]



class RunningEmulator:
    """A started emulator: its base URL, its send stamps, and how to stop it."""

    def __init__(self, url: str, stamps: SendStamps, closer: Callable[[], object]):
        self.url = url
        self.stamps = stamps
        self._closer = closer

    async def close(self) -> None:
        result = self._closer()
        if asyncio.iscoroutine(result):
            await result


#: frequent function words per golden-set language (emulators have no language identification model)
FUNCTION_WORDS: dict[str, str] = {
    "en": "the a an is are what when where how can could i my me you your do does to of for at on and or it "
    "this please hello visit hours open there have",
    "nl": "de het een is zijn wat wanneer waar hoe kan kun ik mijn me u uw je jij mag naar van voor op en of "
    "dit alstublieft hallo bezoek uur open er heb hebben",
    "fr": "le la les un une est sont que quoi quand ou comment puis peux je mon ma me vous votre tu faire de "
    "du des pour sur et ce cette bonjour visite heures ouvert y ai avez",
    "it": "il lo la gli un una e sono che cosa quando dove come posso puo io mio mia mi lei suo tu fare di "
    "del della per su questo questa buongiorno visita orari aperto ci ho avete",
}


@lru_cache(maxsize=1)
def _language_vocabularies() -> dict[str, tuple[set[str], set[str]]]:
    from bench.knowledge import load_knowledge_base, normalize_tokens  # lazy: loads BM25 + the corpus

    vocab: dict[str, set[str]] = defaultdict(set)
    for document in load_knowledge_base().documents:
        vocab[document.language].update(normalize_tokens(f"{document.title} {document.body}"))
    languages = set(vocab) | set(FUNCTION_WORDS)
    return {
        lang: (set(normalize_tokens(FUNCTION_WORDS.get(lang, ""))), vocab.get(lang, set()))
        for lang in languages
    }


def guess_language(text: str) -> str | None:
    """The golden-set language ``text`` is most likely in.

    Function words count double, knowledge-base vocabulary once, each token weighted down by the number of
    languages sharing it. Used only when the client gives no ``x-bench-language`` hint (the official SDK
    clients in contract tests, standalone use).
    """
    from bench.knowledge import normalize_tokens

    tables = _language_vocabularies()
    scores: dict[str, float] = {}
    for token in normalize_tokens(text):
        function_langs = [lang for lang, (words, _) in tables.items() if token in words]
        vocab_langs = [lang for lang, (_, vocab) in tables.items() if token in vocab]
        for lang in function_langs:
            scores[lang] = scores.get(lang, 0.0) + 2 / len(function_langs)
        for lang in vocab_langs:
            scores[lang] = scores.get(lang, 0.0) + 1 / len(vocab_langs)
    if not scores:
        return None
    return max(sorted(scores), key=lambda lang: scores[lang])
