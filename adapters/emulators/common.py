"""Shared emulator parts: seeded latency profiles, fault injection, frame-send stamping and the audio pacer.

Every emulator draws its delays from a ``LatencyProfile`` and its faults from a ``FaultPlan``, both seeded so
that a run is reproducible. Emulators stamp the moment they actually write a frame with ``time.monotonic()``
(one clock for every process on the machine) so the harness's own timing error can be measured.
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections.abc import Callable
from typing import Literal

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


OnListening = Callable[[str, int], None]


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
