"""ElevenLabs Agents adapter: the conversation socket, live (URL from the official SDK) or against the
emulator.

One conversation per turn. The knowledge base reaches the agent in context: the top-k passages for the
question go into the prompt override of ``conversation_initiation_client_data`` (the agent's security settings
must allow the prompt, first-message and language overrides, or set the matching ``override_*`` option to
false). The agent must have a client tool named ``set_conversational_intent`` (parameters:
``adapters.intent_tool.INTENT_TOOL_PARAMETERS``, "wait for response" on) — tools cannot be added per
conversation.

Usage: the socket reports none; the adapter meters connected seconds (``billed_minutes`` = connected seconds /
60; ElevenLabs bills agent conversations by the minute) and audio seconds both ways; ``vendor_cost_usd`` only
with ``fetch_cost`` (live; see ``live.py``). The last ``ping_ms`` the server reports is kept as
``vendor_latency_ms["elevenlabs_ping_ms"]`` (network round trip, not agent latency).

Options (``system.options``): ``agent_id`` (required live), ``requires_auth`` (signed URL, default true),
``base_url`` (live: SDK base URL), ``text_only``, ``kb_top_k``, ``override_prompt`` / ``override_language`` /
``override_first_message``, ``idle_timeout_s``, ``end_of_turn`` (``complete_event``: the agent must send
``agent_response_complete``, enable it in the agent's client events; or ``idle``), ``end_of_turn_idle_s``,
``audio_chunk_ms``, ``silence_tail_ms``, ``pace_audio``, ``fetch_cost``, ``cost_wait_s``, ``trace``, and for
emulated mode ``emulator`` / ``latency`` / ``faults`` / ``brain``.
"""

from __future__ import annotations

import contextlib
import time
import urllib.parse
from collections.abc import AsyncIterator
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from adapters.base import AdapterBase, Capabilities, NormalizedEvent, TurnDone, TurnInput, Usage
from adapters.elevenlabs_agent.live import API_KEY_VAR
from adapters.elevenlabs_agent.session import (
    Trace,
    TurnOutcome,
    TurnSettings,
    build_initiation,
    run_conversation_turn,
)
from adapters.emulators.common import RunningEmulator, split_emulator_options
from adapters.openai_realtime.adapter import turn_key
from adapters.openai_realtime.transport import WebsocketTransport
from adapters.options import parse_options, require_env, require_extra, require_live_or_emulated
from adapters.prompts import instructions_with_context
from bench.config import SystemConfig
from bench.errors import ConfigError
from bench.knowledge import load_knowledge_base

EMULATOR_ID = "elevenlabs-agent"
EMULATED_AGENT_ID = "agent_emulated"


class ElevenLabsAgentOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    agent_id: str | None = None
    requires_auth: bool = True
    base_url: str | None = None
    text_only: bool = False
    kb_top_k: int = Field(default=3, ge=0)
    override_prompt: bool = True
    override_language: bool = True
    override_first_message: bool = True
    idle_timeout_s: float | None = Field(default=None, gt=0)
    end_of_turn: Literal["complete_event", "idle"] = "complete_event"
    end_of_turn_idle_s: float = Field(default=1.5, gt=0)
    audio_chunk_ms: int = Field(default=250, ge=10, le=5000)
    silence_tail_ms: int = Field(default=600, ge=0, le=10_000)
    pace_audio: bool = False
    fetch_cost: bool = False
    cost_wait_s: float = Field(default=30.0, ge=0)
    trace: bool = False
    emulator: dict[str, Any] = Field(default_factory=dict)
    latency: dict[str, Any] | None = None
    faults: dict[str, Any] | None = None
    brain: dict[str, Any] = Field(default_factory=dict)


class ElevenLabsAgentAdapter(AdapterBase):
    """A system backed by an ElevenLabs agent (or its emulator)."""

    def __init__(self, system: SystemConfig, options: ElevenLabsAgentOptions):
        self.system_id = system.id
        self.mode = system.mode
        self.options = options
        self.idle_timeout_s = options.idle_timeout_s or min(15.0, system.timeout_s / 2)
        self.capabilities = Capabilities(
            text_input=True,
            audio_input=True,
            streaming_output=True,
            audio_output=not options.text_only,
            tool_events=True,
            interruption=False,
            usage=True,
        )
        self.emulator: RunningEmulator | None = None
        self.last_trace: Trace | None = None
        self.last_conversation_id: str | None = None

    async def start(self) -> None:
        if self.mode == "emulated" and self.emulator is None:
            from adapters.emulators.registry import start_emulator

            settings, extra = split_emulator_options(self.options, forward=("brain",))
            self.emulator = await start_emulator(EMULATOR_ID, settings, **extra)

    async def close(self) -> None:
        if self.emulator is not None:
            emulator, self.emulator = self.emulator, None
            await emulator.close()

    async def _target(self, turn: TurnInput) -> tuple[str, dict[str, str]]:
        agent_id = self.options.agent_id or EMULATED_AGENT_ID
        if self.mode == "live":
            from adapters.elevenlabs_agent.live import conversation_url

            url = await conversation_url(
                agent_id, requires_auth=self.options.requires_auth, base_url=self.options.base_url
            )
            return url, {}
        if self.emulator is None:
            raise ConfigError(f"system {self.system_id!r}: emulated adapter used before start()")
        base = (
            "ws" + self.emulator.url[len("http") :]
            if self.emulator.url.startswith("http")
            else self.emulator.url
        )
        url = f"{base}/v1/convai/conversation?{urllib.parse.urlencode({'agent_id': agent_id})}"
        headers = {
            "x-bench-turn": turn_key(turn),
            "x-bench-utterance": urllib.parse.quote(turn.text),
            "x-bench-language": turn.language,
        }
        return url, headers

    def turn_settings(self, turn: TurnInput) -> TurnSettings:
        options = self.options
        passages = (
            load_knowledge_base().search(turn.text, k=options.kb_top_k, language=turn.language)
            if options.kb_top_k
            else []
        )
        initiation = build_initiation(
            instructions_with_context(passages) if options.override_prompt else None,
            turn.language if options.override_language else None,
            first_message="" if options.override_first_message else None,
            text_only=options.text_only,
            user_id=turn.user_id,
        )
        return TurnSettings(
            initiation=initiation,
            idle_timeout_s=self.idle_timeout_s,
            end_of_turn=options.end_of_turn,
            end_of_turn_idle_s=options.end_of_turn_idle_s,
            expect_audio=not options.text_only,
            audio_chunk_ms=options.audio_chunk_ms,
            silence_tail_ms=options.silence_tail_ms,
            pace_audio=options.pace_audio,
            retrieved_context=[p.document.body for p in passages],
        )

    async def run_turn(self, turn: TurnInput) -> AsyncIterator[NormalizedEvent]:
        settings = self.turn_settings(turn)
        trace: Trace | None = [] if self.options.trace else None
        self.last_trace = trace
        outcome = TurnOutcome()
        url, headers = await self._target(turn)
        opened = time.monotonic()
        transport = await WebsocketTransport.open(url, headers, open_timeout=self.idle_timeout_s)
        done: TurnDone | None = None
        try:
            async for event in run_conversation_turn(transport, turn, settings, outcome, trace):
                if isinstance(event, TurnDone):
                    done = event
                else:
                    yield event
        finally:
            with contextlib.suppress(Exception):  # a broken socket must not mask the turn's own outcome
                await transport.close(graceful=done is not None)
        connected_s = time.monotonic() - opened
        self.last_conversation_id = outcome.conversation_id
        usage = Usage(
            input_audio_seconds=outcome.input_audio_seconds,
            output_audio_seconds=outcome.output_audio_bytes / (outcome.output_sample_rate * 2) or None,
            billed_minutes=connected_s / 60,
            vendor_latency_ms={"elevenlabs_ping_ms": outcome.last_ping_ms} if outcome.last_ping_ms else {},
        )
        if self.mode == "live" and self.options.fetch_cost and outcome.conversation_id:
            from adapters.elevenlabs_agent.live import conversation_cost

            cost = await conversation_cost(
                outcome.conversation_id, base_url=self.options.base_url, wait_s=self.options.cost_wait_s
            )
            usage.vendor_cost_usd = cost.cost_usd
        yield usage
        if done is not None:
            yield done


def create(system: SystemConfig) -> ElevenLabsAgentAdapter:
    options = parse_options(system, ElevenLabsAgentOptions)
    require_live_or_emulated(system, "elevenlabs_agent")
    if system.mode == "live":
        require_env(system.id, API_KEY_VAR)
        if not options.agent_id:
            raise ConfigError(f"system {system.id!r}: options: agent_id: required in live mode")
        require_extra(system.id, "elevenlabs", "elevenlabs")
    return ElevenLabsAgentAdapter(system, options)
