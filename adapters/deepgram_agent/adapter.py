"""Deepgram Voice Agent adapter: one agent socket per conversation, through the official deepgram-sdk.

``open_session(spec)`` connects (live: Deepgram or ``options.base_url`` with ``DEEPGRAM_API_KEY``; emulated: the
endpoint the engine handed over, with its placeholder key — the same SDK code either way), waits for
``Welcome``, sends ``Settings`` once and waits for ``SettingsApplied``. ``Settings`` carries the listen / think /
speak providers for the conversation's language, the think prompt with the conversation's knowledge passages
(``spec.context``; the API has no knowledge-base upload), the ``set_conversational_intent`` client-side function
and, when ``spec.history`` is given, the earlier messages as ``agent.context.messages``. The conversation then
runs in :class:`~adapters.deepgram_agent.session.DeepgramSession`.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from websockets.exceptions import ConnectionClosed

from adapters._kit.intent_tool import INTENT_TOOL_DESCRIPTION, INTENT_TOOL_NAME, INTENT_TOOL_PARAMETERS
from adapters._kit.options import parse_options, require_live_credentials, require_live_or_emulated
from adapters._kit.prompts import instructions_with_passages
from adapters._kit.ws import disconnect_error
from adapters.deepgram_agent import wire
from adapters.deepgram_agent.connection import AgentSocket, safe_message
from adapters.deepgram_agent.session import AUDIO_MARK, DeepgramSession, SessionTrace, error_from_server
from bench.protocol import AdapterError, Capabilities, ErrorCode, SessionSpec
from bench.protocol.config import AdapterConfig

API_KEY_VAR = "DEEPGRAM_API_KEY"
DEFAULT_SPEAK_MODELS = {
    "en": "aura-2-thalia-en",
    "nl": "aura-2-beatrix-nl",
    "fr": "aura-2-agathe-fr",
    "it": "aura-2-cinzia-it",
}


class DeepgramAgentOptions(BaseModel):
    """``options`` of a ``deepgram_agent`` system (emulator settings live under ``options.emulator``, which the
    engine reads)."""

    model_config = ConfigDict(extra="forbid")

    base_url: str | None = Field(default=None, description="live: agent socket base, default wss://agent.deepgram.com")
    listen_model: str = "nova-3"
    think_provider: dict[str, Any] = Field(
        default_factory=lambda: {"type": "open_ai", "model": "gpt-4o-mini", "temperature": 0.2}
    )
    speak_models: dict[str, str] = Field(default_factory=lambda: dict(DEFAULT_SPEAK_MODELS))
    audio_output: bool = Field(default=True, description="report the agent's audio; off: a response ends on its text")
    keepalive_s: float = Field(default=5.0, gt=0)
    open_timeout_s: float = Field(default=15.0, gt=0)
    tags: list[str] = Field(default_factory=lambda: ["voice-agent-bench"])
    #: the end-of-speech silence the agent waits after a caller's turn (Deepgram's endpointing); a text turn has
    #: no caller speech on the line, so the billed call time adds this much per text turn
    billing_endpointing_ms: float = Field(default=300.0, ge=0, le=5000)


def build_settings(spec: SessionSpec, options: DeepgramAgentOptions, prompt: str) -> wire.Settings:
    """The one ``Settings`` message of a conversation."""
    speak_model = options.speak_models.get(spec.language) or options.speak_models.get("en") or "aura-2-thalia-en"
    context = None
    if spec.history:
        context = wire.AgentContext(messages=[wire.HistoryItem(role=m.role, content=m.text) for m in spec.history])
    rate = spec.audio.sample_rate
    return wire.Settings(
        tags=list(options.tags) or None,
        audio=wire.AudioSettings(
            input=wire.AudioInputSettings(encoding="linear16", sample_rate=rate),
            output=wire.AudioOutputSettings(encoding="linear16", sample_rate=rate, container="none"),
        ),
        agent=wire.AgentSettings(
            context=context,
            listen=wire.ListenSettings(
                provider=wire.Provider(type="deepgram", version="v1", model=options.listen_model,
                                       language=spec.language)
            ),
            think=wire.ThinkSettings(
                provider=wire.Provider(**options.think_provider),
                prompt=prompt,
                functions=[wire.FunctionDefinition(name=INTENT_TOOL_NAME, description=INTENT_TOOL_DESCRIPTION,
                                                   parameters=INTENT_TOOL_PARAMETERS),
                           # the conversation's client tools: no endpoint = client-side, answered by the engine
                           *(wire.FunctionDefinition(name=tool.name, description=tool.description,
                                                     parameters=dict(tool.parameters)) for tool in spec.tools)],
            ),
            speak=wire.SpeakSettings(provider=wire.Provider(type="deepgram", model=speak_model)),
        ),
    )


class DeepgramAgentAdapter:
    """``SystemUnderTest`` for ``deepgram_agent`` systems (see the module docstring)."""

    # the SystemUnderTest attributes, typed as the protocol types them
    system_id: str
    mode: str
    capabilities: Capabilities

    def __init__(self, system: AdapterConfig, options: DeepgramAgentOptions, api_key: str | None):
        self.system_id = system.id
        self.mode = system.mode
        self.options = options
        self._api_key = api_key
        self.capabilities = Capabilities(
            text_input=True, audio_input=True, streaming_output=True, audio_output=options.audio_output,
            tool_events=True, interruption=True, usage=True, server_vad=True, multi_turn=True, client_tools=True,
        )

    async def start(self) -> None:
        """Nothing is shared between conversations (one SDK client per socket)."""

    async def close(self) -> None:
        """Nothing to release."""

    def _where(self, spec: SessionSpec) -> tuple[str | None, str]:
        """(agent base URL, API key) of one conversation."""
        endpoint = spec.endpoint
        if endpoint is not None and endpoint.emulated:
            return endpoint.url, endpoint.credentials.get("api_key", "")
        if self.mode == "emulated":
            raise AdapterError("emulated mode needs the endpoint the engine hands over (spec.endpoint)",
                               code=ErrorCode.CONNECT, retryable=False)
        url = endpoint.url if endpoint is not None else self.options.base_url
        return url, self._api_key or ""

    async def open_session(self, spec: SessionSpec) -> DeepgramSession:
        url, api_key = self._where(spec)
        instructions = spec.instructions
        settings = build_settings(spec, self.options, instructions_with_passages(spec.context, instructions))
        socket = await AgentSocket.open(api_key=api_key, agent_url=url, open_timeout_s=self.options.open_timeout_s)
        trace = SessionTrace()
        try:
            welcome = await _expect(socket, wire.Welcome, spec.idle_timeout_s, trace)
            await socket.send(settings)
            trace.sent.append(settings.type)
            await _expect(socket, wire.SettingsApplied, spec.idle_timeout_s, trace)
        except BaseException:
            await socket.close()
            raise
        session = DeepgramSession(socket, spec, self.capabilities, passages=spec.context, instructions=instructions,
                                  audio_output=self.options.audio_output, keepalive_s=self.options.keepalive_s,
                                  vendor_session_id=getattr(welcome, "request_id", None), trace=trace,
                                  endpointing_s=self.options.billing_endpointing_ms / 1000.0)
        session.start()
        return session


async def _expect(socket: AgentSocket, wanted: type[wire.Message], timeout_s: float,
                  trace: SessionTrace) -> wire.Message:
    """The next message of type ``wanted``; an ``Error``, a closed socket or silence raise ``AdapterError``."""
    try:
        async with asyncio.timeout(timeout_s):
            while True:
                message = await socket.recv()
                trace.received(AUDIO_MARK if isinstance(message, bytes) else message.type)
                if isinstance(message, wanted):
                    return message
                if isinstance(message, wire.Error):
                    raise error_from_server(message)
    except TimeoutError:
        raise AdapterError(f"Deepgram sent no {wanted.__name__} within {timeout_s:g} s",
                           code=ErrorCode.STALLED) from None
    except ConnectionClosed as exc:
        raise disconnect_error(exc) from None
    except wire.MalformedFrame as exc:
        raise AdapterError(safe_message(f"malformed Deepgram frame: {exc}"), code=ErrorCode.MALFORMED,
                           retryable=False) from None


def create(system: AdapterConfig) -> DeepgramAgentAdapter:
    require_live_or_emulated(system, "deepgram_agent")
    options = parse_options(system, DeepgramAgentOptions)
    api_key = None
    if system.mode == "live":
        api_key = require_live_credentials(system.id, API_KEY_VAR, "deepgram", "deepgram")
    return DeepgramAgentAdapter(system, options, api_key)
