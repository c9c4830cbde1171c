"""Settings every emulator takes and the handle the engine gets back when it starts one."""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from adapters.emulators._kit.channel import ConversationIdentity, StampTable
from adapters.emulators._kit.control import ControlPlane
from adapters.emulators._kit.faults import FaultPlan
from adapters.emulators._kit.turntaking import DEFAULT_TURN_TAKING, turn_taking_profile
from bench.protocol import Endpoint


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
        """A generator seeded by profile seed + a per-response key, so delays don't depend on scheduling."""
        return random.Random(f"{self.seed}:{key}")

    def sample_first_token_ms(self, rng: random.Random) -> float:
        if self.first_token_sigma == 0 or self.first_token_median_ms == 0:
            return self.first_token_median_ms
        return self.first_token_median_ms * math.exp(rng.gauss(0.0, self.first_token_sigma))


class VadSettings(BaseModel):
    """Server-side VAD of an emulator: the caller's turn ends after this much silence; the answer starts after
    ``response_delay_ms`` more (telephony agents: 300 ms endpointing, 400 ms to answer)."""

    model_config = ConfigDict(extra="forbid")

    endpointing_silence_ms: float = Field(default=300.0, ge=20)
    response_delay_ms: float = Field(default=400.0, ge=0)
    #: RMS level (dBFS) above which a 20 ms frame counts as speech
    threshold_dbfs: float = Field(default=-45.0, le=0)
    #: how fast the agent stops speaking once the caller barges in
    barge_in_reaction_ms: float = Field(default=150.0, ge=0)
    #: speech a segment must hold before it counts (it interrupts the agent, or starts a turn)
    min_speech_ms: float = Field(default=60.0, ge=0)
    #: whether noise-like frames (high spectral flatness: a cough, a door) count as speech
    noise_is_speech: bool = True
    #: track the room's noise floor: a frame is speech only when it is also ``noise_margin_db`` above the floor
    #: (steady background noise louder than ``threshold_dbfs`` then still lets a segment end)
    adaptive_noise_floor: bool = True
    #: how far above the tracked noise floor (dB) a frame must be to count as speech
    noise_margin_db: float = Field(default=10.0, ge=0, le=60)
    #: how fast the tracked floor may rise (dB per second; it falls at once to a quieter frame)
    noise_floor_rise_db_per_s: float = Field(default=3.0, gt=0, le=60)


class EmulatorSettings(BaseModel):
    """Knobs common to every emulator (``options.emulator`` of a system; the brain profile is separate)."""

    model_config = ConfigDict(extra="forbid")

    latency: LatencyProfile = LatencyProfile()
    faults: FaultPlan = FaultPlan()
    vad: VadSettings = VadSettings()
    #: the turn-taking profile (``_kit.turntaking``): sets the VAD fields not given under ``vad``
    turn_taking: str = DEFAULT_TURN_TAKING
    host: str = "127.0.0.1"
    port: int = Field(default=0, ge=0, le=65535)

    @model_validator(mode="after")
    def _apply_turn_taking(self) -> EmulatorSettings:
        preset = turn_taking_profile(self.turn_taking)
        chosen = {k: v for k, v in preset.vad_fields().items() if k not in self.vad.model_fields_set}
        if chosen:
            self.vad = VadSettings.model_validate({**self.vad.model_dump(exclude_unset=True), **chosen})
        return self


class SendStamps:
    """``time.monotonic()`` right after an emulator wrote a frame, keyed by a label (e.g. conversation:response)."""

    def __init__(self) -> None:
        self.first_text: dict[str, float] = {}
        self.first_audio: dict[str, float] = {}
        self.scheduled_first_audio: dict[str, float] = {}

    def mark(self, table: dict[str, float], key: str) -> None:
        table.setdefault(key, time.monotonic())


class RunningEmulator:
    """A started emulator on this process's event loop: its base URLs, control plane, send stamps, and how to stop
    it. It is an ``EmulatorHandle`` (``_kit.process``) like an emulator in its own process; contract tests that read
    its wire log use it directly.

    ``urls`` names every base URL the emulator serves (``"ws"``, ``"rest"``, …; the first is the main one).
    ``endpoint(token)`` is what the engine hands an adapter for one conversation.
    """

    #: no child process: the emulator runs on the caller's event loop
    pid: int | None = None

    def __init__(self, urls: dict[str, str], control: ControlPlane, stamps: SendStamps,
                 closer: Callable[[], Any], credentials: dict[str, str] | None = None):
        if not urls:
            raise ValueError("an emulator serves at least one URL")
        self.urls = dict(urls)
        self.control = control
        self.stamps = stamps
        self.credentials = dict(credentials or {"api_key": "emulated-key"})
        self._closer = closer

    @property
    def url(self) -> str:
        return next(iter(self.urls.values()))

    def endpoint(self, token: str) -> Endpoint:
        scoped = {name: f"{base.rstrip('/')}/c/{token}" for name, base in self.urls.items()}
        return Endpoint(url=next(iter(scoped.values())), urls=scoped, emulated=True, credentials=self.credentials)

    async def register(self, identity: ConversationIdentity) -> str:
        """Register one conversation; its token goes into the endpoint path the adapter connects to."""
        return self.control.register(run_id=identity.run_id, system_id=identity.system_id,
                                     conversation_id=identity.conversation_id, attempt=identity.attempt,
                                     language=identity.language).token

    async def release(self, token: str) -> None:
        self.control.release(token)

    async def expect_utterance(self, token: str, text: str) -> None:
        self.control.expect_utterance(token, text)

    async def send_stamps(self) -> StampTable:
        return StampTable(first_text=dict(self.stamps.first_text), first_audio=dict(self.stamps.first_audio),
                          scheduled_first_audio=dict(self.stamps.scheduled_first_audio))

    async def close(self) -> None:
        result = self._closer()
        if asyncio.iscoroutine(result):
            await result


class LoggedHttpEmulator(RunningEmulator):
    """A started HTTP emulator (one ``"http"`` base URL) that logs what it answered in ``requests`` (for
    contract tests); each emulator says what one log entry holds."""

    def __init__(self, url: str, control: ControlPlane, stamps: SendStamps, closer: Callable[[], Any],
                 credentials: dict[str, str], requests: list[Any]):
        super().__init__({"http": url}, control, stamps, closer, credentials)
        self.requests = requests


async def sleep_until(deadline: float) -> None:
    """Sleep until ``time.monotonic()`` reaches ``deadline`` (coarse sleep, then a short precise wait)."""
    remaining = deadline - time.monotonic()
    if remaining > 0.002:
        await asyncio.sleep(remaining - 0.001)
    while time.monotonic() < deadline:
        await asyncio.sleep(0)
