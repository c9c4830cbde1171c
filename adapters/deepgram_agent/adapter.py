"""Deepgram Voice Agent adapter: one agent socket per turn, live (deepgram-sdk) or against the loopback
emulator.

Per turn: retrieve the top-k knowledge-base passages for the question and put them in the agent prompt
(``Settings.agent.think.prompt`` — how seed 003's "Deepgram knowledge-base upload" is emulated, since the
Voice Agent API has no upload), give the agent the ``set_conversational_intent`` client-side function, send
the user turn and hand the socket to :class:`~adapters.deepgram_agent.session.TurnDriver`. Usage: audio
seconds in/out, billed minutes (connection time) and Deepgram's own latencies in ms
(``deepgram_total_latency``, ``deepgram_ttt_latency``, ``deepgram_tts_latency``, ``deepgram_report_*`` from
``LatencyReport``).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, Field
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import InvalidHandshake, InvalidStatus

from adapters.base import AdapterBase, AdapterError, Capabilities, NormalizedEvent, TurnInput
from adapters.deepgram_agent import wire
from adapters.deepgram_agent.session import AgentTransport, DriverOptions, TurnDriver
from adapters.emulators.common import EmulatorSettings, RunningEmulator
from adapters.intent_tool import INTENT_TOOL_DESCRIPTION, INTENT_TOOL_NAME, INTENT_TOOL_PARAMETERS
from adapters.options import parse_options, require_live_credentials, require_live_or_emulated
from adapters.prompts import instructions_with_context
from bench.config import SystemConfig
from bench.knowledge import load_knowledge_base

API_KEY_VAR = "DEEPGRAM_API_KEY"
EMULATOR_ID = "deepgram-agent"
DEFAULT_SPEAK_MODELS = {
    "en": "aura-2-thalia-en",
    "nl": "aura-2-beatrix-nl",
    "fr": "aura-2-agathe-fr",
    "it": "aura-2-cinzia-it",
}


class DeepgramAgentOptions(BaseModel):
    """``options`` of a ``deepgram_agent`` system."""

    model_config = ConfigDict(extra="forbid")

    emulator: dict[str, Any] = Field(default_factory=dict, description="EmulatorSettings (emulated mode)")
    brain: dict[str, Any] = Field(default_factory=dict, description="BrainProfile of the emulator")
    base_url: str | None = Field(
        default=None, description="agent socket base, default wss://agent.deepgram.com"
    )
    listen_model: str = "nova-3"
    think_provider: dict[str, Any] = Field(
        default_factory=lambda: {"type": "open_ai", "model": "gpt-4o-mini", "temperature": 0.2}
    )
    speak_models: dict[str, str] = Field(default_factory=lambda: dict(DEFAULT_SPEAK_MODELS))
    kb_top_k: int = Field(default=3, ge=0, le=20)
    output_sample_rate: int = 24000
    stall_timeout_s: float = Field(default=15.0, gt=0)
    latency_report_grace_s: float = Field(default=1.0, ge=0)
    keepalive_s: float = Field(default=5.0, gt=0)
    audio_pacing: float | None = Field(default=None, ge=0, description="default 1.0 live, 0 emulated")
    silence_tail_ms: int = Field(default=1500, ge=0)


def build_settings(turn: TurnInput, options: DeepgramAgentOptions, prompt: str) -> wire.Settings:
    """The ``Settings`` message for one turn (listen/think/speak per language, prompt with KB passages)."""
    speak_model = (
        options.speak_models.get(turn.language) or options.speak_models.get("en") or "aura-2-thalia-en"
    )
    return wire.Settings(
        tags=["voice-agent-bench"],
        audio=wire.AudioSettings(
            input=wire.AudioInputSettings(encoding="linear16", sample_rate=turn.sample_rate),
            output=wire.AudioOutputSettings(
                encoding="linear16", sample_rate=options.output_sample_rate, container="none"
            ),
        ),
        agent=wire.AgentSettings(
            listen=wire.ListenSettings(
                provider=wire.Provider(
                    type="deepgram", model=options.listen_model, language=turn.language, version="v1"
                )
            ),
            think=wire.ThinkSettings(
                provider=wire.Provider(**options.think_provider),
                prompt=prompt,
                functions=[
                    wire.FunctionDefinition(
                        name=INTENT_TOOL_NAME,
                        description=INTENT_TOOL_DESCRIPTION,
                        parameters=INTENT_TOOL_PARAMETERS,
                    )
                ],
            ),
            speak=wire.SpeakSettings(provider=wire.Provider(type="deepgram", model=speak_model)),
        ),
    )


class WebsocketTransport:
    """The driver's transport over a plain ``websockets`` client connection (emulated mode)."""

    def __init__(self, ws: ClientConnection):
        self.ws = ws

    async def send(self, message: wire.Message) -> None:
        await self.ws.send(message.to_json())

    async def send_audio(self, pcm: bytes) -> None:
        await self.ws.send(pcm)

    async def recv(self) -> str | bytes:
        return await self.ws.recv()


@asynccontextmanager
async def open_emulated(
    base_url: str, session_id: str, transcript_hint: str | None
) -> AsyncIterator[AgentTransport]:
    """Open the emulator's agent socket the way the SDK opens Deepgram's (same path and headers)."""
    headers = {"Authorization": "Token emulated", wire.SESSION_HEADER: session_id}
    if transcript_hint:
        headers[wire.HINT_HEADER] = quote(transcript_hint)
    try:
        ws = await connect(
            base_url.rstrip("/") + wire.AGENT_PATH,
            additional_headers=headers,
            max_size=None,
            compression=None,
            open_timeout=15,
            close_timeout=2,
        )
    except InvalidStatus as exc:
        retry_after = exc.response.headers.get("Retry-After")
        raise AdapterError.from_status(
            exc.response.status_code,
            "the agent socket upgrade was refused",
            retry_after_s=float(retry_after) if retry_after else None,
        ) from None
    except (OSError, TimeoutError, InvalidHandshake) as exc:
        raise AdapterError(
            f"cannot reach the agent socket: {type(exc).__name__}", retryable=True, code="connect"
        ) from None
    try:
        yield WebsocketTransport(ws)
    finally:
        await ws.close()


class DeepgramAgentAdapter(AdapterBase):
    """Adapter for ``deepgram_agent`` systems (see the module docstring)."""

    capabilities = Capabilities(
        text_input=True,
        audio_input=True,
        streaming_output=True,
        audio_output=True,
        tool_events=True,
        interruption=False,
        usage=True,
    )

    def __init__(self, system: SystemConfig, options: DeepgramAgentOptions, api_key: str | None):
        self.system_id = system.id
        self.mode = system.mode
        self.options = options
        self._api_key = api_key
        self._emulator: RunningEmulator | None = None
        self._base_url: str | None = options.base_url
        self._kb = load_knowledge_base()

    async def start(self) -> None:
        if self.mode == "emulated" and self._emulator is None:
            from adapters.emulators.registry import start_emulator

            self._emulator = await start_emulator(
                EMULATOR_ID, EmulatorSettings(**self.options.emulator), brain=self.options.brain
            )
            self._base_url = self._emulator.url

    async def close(self) -> None:
        if self._emulator is not None:
            await self._emulator.close()
            self._emulator = None

    @property
    def emulator(self) -> RunningEmulator | None:
        return self._emulator

    def driver_options(self, trace: list[str] | None = None) -> DriverOptions:
        pacing = self.options.audio_pacing
        if pacing is None:
            pacing = 0.0 if self.mode == "emulated" else 1.0
        return DriverOptions(
            stall_timeout_s=self.options.stall_timeout_s,
            latency_report_grace_s=self.options.latency_report_grace_s,
            keepalive_s=self.options.keepalive_s,
            audio_pacing=pacing,
            silence_tail_ms=self.options.silence_tail_ms,
            output_sample_rate=self.options.output_sample_rate,
            trace=trace,
        )

    def prepare(self, turn: TurnInput) -> tuple[wire.Settings, list[str]]:
        passages = (
            self._kb.search(turn.text, k=self.options.kb_top_k, language=turn.language)
            if self.options.kb_top_k
            else []
        )
        settings = build_settings(turn, self.options, instructions_with_context(passages))
        return settings, [p.document.body for p in passages]

    def _open(self, turn: TurnInput, session_id: str) -> Any:
        if self.mode == "emulated":
            if self._base_url is None:
                raise AdapterError("the emulator is not started (call start() first)", retryable=False)
            return open_emulated(self._base_url, session_id, turn.text if turn.audio_pcm16 else None)
        from adapters.deepgram_agent.live import open_live

        return open_live(self._api_key or "", self._base_url, session_id)

    async def run_turn(
        self, turn: TurnInput, trace: list[str] | None = None
    ) -> AsyncIterator[NormalizedEvent]:
        settings, context = self.prepare(turn)
        session_id = turn.conversation_id or uuid.uuid4().hex
        async with self._open(turn, session_id) as transport:
            driver = TurnDriver(
                transport, settings, turn, self.driver_options(trace), context, connected_at=time.monotonic()
            )
            async for event in driver.run():
                yield event


def create(system: SystemConfig) -> DeepgramAgentAdapter:
    from adapters.emulators.brain import BrainProfile

    # the emulator and brain settings are validated here too, so their mistakes are exit-2 config errors
    nested = {"emulator": EmulatorSettings, "brain": BrainProfile}
    options = parse_options(system, DeepgramAgentOptions, nested=nested)
    api_key = None
    if system.mode == "live":
        api_key = require_live_credentials(system.id, API_KEY_VAR, "deepgram", "deepgram")
    require_live_or_emulated(system, "deepgram_agent")
    return DeepgramAgentAdapter(system, options, api_key)
