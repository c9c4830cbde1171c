"""OpenAI Realtime as a system under test: one Realtime socket per conversation, through the official SDK.

Live, the SDK connects to OpenAI (``OPENAI_API_KEY`` from the environment; ``options.base_url`` or a live
endpoint overrides the SDK's ``websocket_base_url``). Emulated, the engine starts the emulator and hands each
conversation an ``Endpoint``; the adapter runs the very same SDK client against ``endpoint.url`` + ``/v1`` with
the endpoint's placeholder key. The conversation's knowledge passages (``SessionSpec.context``) go into the
session instructions once, at session start; ``update_context`` replaces them.

Options (``system.options``): ``model`` (gpt-realtime), ``beta`` (the beta interface, ``client.beta.realtime``),
``voice``, ``output_modalities`` (["audio"] or ["text"]), ``base_url`` (live only), ``turn_detection``
(``auto``: the server's VAD for audio sessions, none for text sessions; ``server_vad``; ``none``: the caller
commits with ``end_input``), ``vad`` (server VAD tuning: ``threshold``, ``prefix_padding_ms``,
``silence_duration_ms``, ``interrupt_response``), ``input_transcription_model`` (user transcripts of audio input),
``intent_tool`` (give the model ``set_conversational_intent``; default on), ``max_tool_rounds`` and ``trace``
(keep every wire event type on ``session.trace``). The conversation's client tools (``SessionSpec.tools``) are
declared as functions beside the intent tool.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from adapters._kit.options import parse_options, require_env, require_live_credentials, require_live_or_emulated
from adapters._kit.prompts import instructions_with_passages
from adapters.openai_realtime.language import with_language
from adapters.openai_realtime.live import SdkTransport, websocket_base_url
from adapters.openai_realtime.session import (
    RealtimeSession,
    SessionConfig,
    build_session,
    function_tool,
    intent_tool,
)
from bench.protocol import AdapterError, Capabilities, ErrorCode, SessionSpec
from bench.protocol.config import AdapterConfig
from bench.protocol.errors import ConfigError

API_KEY_VAR = "OPENAI_API_KEY"
EMULATED_API_KEY = "emulated-key"


class ServerVadOptions(BaseModel):
    """``turn_detection`` fields of OpenAI's ``server_vad`` (None: the server's default)."""

    model_config = ConfigDict(extra="forbid")

    threshold: float | None = Field(default=None, ge=0, le=1)
    prefix_padding_ms: int | None = Field(default=None, ge=0)
    silence_duration_ms: int | None = Field(default=None, ge=0)
    #: the server cancels the agent's response when it hears the caller
    interrupt_response: bool = True


def _audio_only() -> list[Literal["audio", "text"]]:
    return ["audio"]


class OpenAIRealtimeOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str = "gpt-realtime"
    beta: bool = False
    voice: str | None = None
    output_modalities: list[Literal["audio", "text"]] = Field(default_factory=_audio_only, min_length=1)
    base_url: str | None = None
    turn_detection: Literal["auto", "server_vad", "none"] = "auto"
    vad: ServerVadOptions = Field(default_factory=ServerVadOptions)
    input_transcription_model: str | None = None
    intent_tool: bool = True
    max_tool_rounds: int = Field(default=3, ge=0, le=10)
    trace: bool = False


class OpenAIRealtimeAdapter:
    """A system backed by OpenAI Realtime (or its emulator): ``open_session`` opens one socket."""

    # the SystemUnderTest attributes, typed as the protocol types them
    system_id: str
    mode: str
    capabilities: Capabilities

    def __init__(self, system: AdapterConfig, options: OpenAIRealtimeOptions):
        self.system_id = system.id
        self.mode = system.mode
        self.options = options
        self.capabilities = Capabilities(
            text_input=True,
            audio_input=True,
            streaming_output=True,
            audio_output="audio" in options.output_modalities,
            tool_events=options.intent_tool,
            interruption=True,
            usage=True,
            server_vad=options.turn_detection != "none",
            multi_turn=True,
            client_tools=True,
            truncation=True,
        )

    async def start(self) -> None:
        """Nothing shared to open: every conversation has its own client and socket."""

    async def close(self) -> None:
        """Nothing shared to release."""

    def uses_server_vad(self, spec: SessionSpec) -> bool:
        if self.options.turn_detection == "auto":
            return spec.input_mode == "audio"
        return self.options.turn_detection == "server_vad"

    def session_config(self, spec: SessionSpec) -> SessionConfig:
        """The ``session.update`` and the session settings for one conversation."""
        options = self.options
        server_vad = self.uses_server_vad(spec)
        turn_detection: dict[str, Any] | None = None
        if server_vad:
            turn_detection = {"type": "server_vad", "create_response": True,
                              **options.vad.model_dump(exclude_none=True)}
        transcription = ({"model": options.input_transcription_model, "language": spec.language}
                         if options.input_transcription_model else None)
        session = build_session(
            with_language(instructions_with_passages(spec.context, spec.instructions), spec.language),
            beta=options.beta,
            voice=options.voice,
            output_modalities=list(options.output_modalities),
            tools=[*([intent_tool()] if options.intent_tool else []), *(function_tool(t) for t in spec.tools)],
            turn_detection=turn_detection,
            transcription=transcription,
        )
        return SessionConfig(beta=options.beta, session=session, base_instructions=spec.instructions,
                             language=spec.language,
                             passages=list(spec.context), history=list(spec.history), server_vad=server_vad,
                             idle_timeout_s=spec.idle_timeout_s, max_tool_rounds=options.max_tool_rounds,
                             sample_rate=spec.audio.sample_rate, trace=options.trace,
                             client_tools=[tool.name for tool in spec.tools])

    def connection_target(self, spec: SessionSpec) -> tuple[str, str | None]:
        """(api key, ``websocket_base_url``) for one conversation."""
        endpoint = spec.endpoint
        if self.mode == "emulated":
            if endpoint is None:
                raise AdapterError(f"system {self.system_id!r}: emulated session without an endpoint (the engine "
                                   "starts the emulator and hands one over)", code=ErrorCode.INTERNAL,
                                   retryable=False)
            return (endpoint.credentials.get("api_key") or EMULATED_API_KEY,
                    websocket_base_url(endpoint.url, emulated=True))
        api_key = require_env(self.system_id, API_KEY_VAR)
        if endpoint is not None:
            return api_key, websocket_base_url(endpoint.url, emulated=endpoint.emulated)
        return api_key, self.options.base_url

    async def open_session(self, spec: SessionSpec) -> RealtimeSession:
        api_key, base_url = self.connection_target(spec)
        config = self.session_config(spec)
        transport = await SdkTransport.open(api_key=api_key, model=self.options.model, beta=self.options.beta,
                                            base_url=base_url, open_timeout_s=spec.idle_timeout_s)
        session = RealtimeSession(transport, config, self.capabilities)
        try:
            await session.start()
        except BaseException:
            await session.aclose()
            raise
        return session


def create(system: AdapterConfig) -> OpenAIRealtimeAdapter:
    options = parse_options(system, OpenAIRealtimeOptions)
    require_live_or_emulated(system, "openai_realtime")
    if system.mode == "live":
        require_live_credentials(system.id, API_KEY_VAR, "openai", "openai")
    elif options.base_url is not None:
        raise ConfigError(f"system {system.id!r}: options.base_url: only for live mode (emulated sessions connect "
                          "to the endpoint the engine hands over)")
    return OpenAIRealtimeAdapter(system, options)
