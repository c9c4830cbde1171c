"""OpenAI Realtime adapter: live through the official SDK, emulated through the loopback emulator.

Both modes run the same turn code (``session.run_realtime_turn``) on a fresh connection per turn; they differ
only in the transport. The knowledge base reaches the model by in-context injection: the top-k passages for
the question go into the session instructions (``adapters.prompts``), and those passages are the turn's
retrieved context.

Options (``system.options``): ``model`` (gpt-realtime), ``beta`` (use the beta interface), ``voice``,
``output_modalities`` (["audio"] or ["text"]), ``kb_top_k``, ``base_url`` (live: a ``websocket_base_url``),
``idle_timeout_s`` (no server event for this long = a retryable stall; default half the system timeout, at
most 15 s), ``audio_chunk_ms``, ``pace_audio``, ``input_transcription_model``, ``max_tool_rounds``, ``trace``
(keep the wire event types of the last turn in ``last_trace``), and for emulated mode ``emulator``
(``EmulatorSettings`` fields; other keys go to the emulator), ``latency`` / ``faults`` (shortcuts into it,
overriding ``emulator``) and ``brain`` (``BrainProfile``).
"""

from __future__ import annotations

import contextlib
import urllib.parse
from collections.abc import AsyncIterator
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from adapters.base import AdapterBase, Capabilities, NormalizedEvent, TurnInput
from adapters.emulators.common import RunningEmulator, split_emulator_options
from adapters.openai_realtime.session import Trace, TurnSettings, build_session, run_realtime_turn
from adapters.openai_realtime.transport import Transport, WebsocketTransport
from adapters.openai_realtime.wire import BETA_HEADER
from adapters.options import parse_options, require_live_credentials, require_live_or_emulated
from adapters.prompts import instructions_with_context
from bench.config import SystemConfig
from bench.errors import ConfigError
from bench.knowledge import load_knowledge_base

API_KEY_VAR = "OPENAI_API_KEY"
EMULATOR_ID = "openai-realtime"


class OpenAIRealtimeOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str = "gpt-realtime"
    beta: bool = False
    voice: str | None = None
    output_modalities: list[Literal["audio", "text"]] = Field(default_factory=lambda: ["audio"], min_length=1)
    kb_top_k: int = Field(default=3, ge=0)
    base_url: str | None = None
    idle_timeout_s: float | None = Field(default=None, gt=0)
    audio_chunk_ms: int = Field(default=100, ge=10, le=5000)
    pace_audio: bool = False
    input_transcription_model: str | None = None
    max_tool_rounds: int = Field(default=3, ge=0, le=10)
    trace: bool = False
    emulator: dict[str, Any] = Field(default_factory=dict)
    latency: dict[str, Any] | None = None
    faults: dict[str, Any] | None = None
    brain: dict[str, Any] = Field(default_factory=dict)


def turn_key(turn: TurnInput) -> str:
    return f"{turn.entry_id}:{turn.language}"


class OpenAIRealtimeAdapter(AdapterBase):
    """A system backed by OpenAI Realtime (or its emulator)."""

    def __init__(self, system: SystemConfig, options: OpenAIRealtimeOptions):
        self.system_id = system.id
        self.mode = system.mode
        self.options = options
        self.idle_timeout_s = options.idle_timeout_s or min(15.0, system.timeout_s / 2)
        self.capabilities = Capabilities(
            text_input=True,
            audio_input=True,
            streaming_output=True,
            audio_output="audio" in options.output_modalities,
            tool_events=True,
            interruption=False,
            usage=True,
        )
        self.emulator: RunningEmulator | None = None
        self.last_trace: Trace | None = None

    async def start(self) -> None:
        if self.mode == "emulated" and self.emulator is None:
            from adapters.emulators.registry import start_emulator

            settings, extra = split_emulator_options(self.options, forward=("brain",))
            self.emulator = await start_emulator(EMULATOR_ID, settings, **extra, model=self.options.model)

    async def close(self) -> None:
        if self.emulator is not None:
            emulator, self.emulator = self.emulator, None
            await emulator.close()

    async def _open(self, turn: TurnInput) -> Transport:
        if self.mode == "live":
            from adapters.openai_realtime.live import SdkTransport

            return await SdkTransport.open(
                model=self.options.model, beta=self.options.beta, base_url=self.options.base_url
            )
        if self.emulator is None:
            raise ConfigError(f"system {self.system_id!r}: emulated adapter used before start()")
        url = f"{self.emulator.url}/realtime?{urllib.parse.urlencode({'model': self.options.model})}"
        headers = {
            "Authorization": "Bearer emulated",
            "x-bench-turn": turn_key(turn),
            "x-bench-utterance": urllib.parse.quote(turn.text),
            "x-bench-language": turn.language,
        }
        if self.options.beta:
            headers[BETA_HEADER[0]] = BETA_HEADER[1]
        return await WebsocketTransport.open(url, headers, open_timeout=self.idle_timeout_s)

    def turn_settings(self, turn: TurnInput) -> TurnSettings:
        passages = (
            load_knowledge_base().search(turn.text, k=self.options.kb_top_k, language=turn.language)
            if self.options.kb_top_k
            else []
        )
        session = build_session(
            instructions_with_context(passages),
            beta=self.options.beta,
            voice=self.options.voice,
            output_modalities=list(self.options.output_modalities),
            transcription_model=self.options.input_transcription_model,
        )
        return TurnSettings(
            beta=self.options.beta,
            session=session,
            idle_timeout_s=self.idle_timeout_s,
            max_tool_rounds=self.options.max_tool_rounds,
            audio_chunk_ms=self.options.audio_chunk_ms,
            pace_audio=self.options.pace_audio,
            retrieved_context=[p.document.body for p in passages],
        )

    async def run_turn(self, turn: TurnInput) -> AsyncIterator[NormalizedEvent]:
        settings = self.turn_settings(turn)
        trace: Trace | None = [] if self.options.trace else None
        self.last_trace = trace
        transport = await self._open(turn)
        finished = False
        try:
            async for event in run_realtime_turn(transport, turn, settings, trace):
                yield event
            finished = True
        finally:
            with contextlib.suppress(Exception):  # a broken socket must not mask the turn's own outcome
                await transport.close(graceful=finished)


def create(system: SystemConfig) -> OpenAIRealtimeAdapter:
    options = parse_options(system, OpenAIRealtimeOptions)
    require_live_or_emulated(system, "openai_realtime")
    if system.mode == "live":
        require_live_credentials(system.id, API_KEY_VAR, "openai", "openai")
    return OpenAIRealtimeAdapter(system, options)
