"""Retell adapter: one Retell chat (text) or web call (audio, live only) per conversation, through retell-sdk.

Two response engines:

* ``options.orchestrator`` set (the default, seed 003's "Retell → our RAG"): the adapter hosts
  :class:`~adapters.retell.llm_server.RetellLlmServer`, Retell's custom-LLM WebSocket around the in-house
  orchestrator, and the Retell agent's response engine is ``custom-llm`` pointing at it. Our stack retrieves its
  own knowledge, so ``spec.context`` is not sent and ``update_context`` is unsupported; earlier exchanges
  (``spec.history``) are told to our server, which puts them before Retell's transcript.
* ``orchestrator: null``: the agent's own Retell LLM answers. The passages go in the dynamic variable
  ``knowledge`` (the prompt says ``{{knowledge}}``), earlier exchanges in ``conversation_history``, the language
  in ``language``; ``update_context`` overrides ``knowledge`` mid-conversation.

Text conversations are Retell chats (``adapters.retell.chat``): ``chat.create`` once, ``create_chat_completion``
per turn — Retell keeps the history; not streamed. Audio conversations are web calls joined over LiveKit
(``adapters.retell.web_call``): streamed transcript and audio, Retell's own VAD and barge-in handling.

Emulated mode (``spec.endpoint`` set by the engine): the same retell-sdk client code, pointed at the emulator's REST
API (``endpoint.urls["rest"]``). The adapter first sets up what a user would have set up in Retell's dashboard: a
chat agent (custom LLM at our server's loopback URL, or a Retell LLM created with ``llm.create`` with the
``{{knowledge}}`` prompt and the ``set_conversational_intent`` tool). The emulator then plays Retell: it drives our
custom LLM over the real LLM-WebSocket protocol, or answers as the Retell LLM with the engine's answerer. A web
call needs a LiveKit server, which no emulator provides, so emulated systems take text only.

**Only a live run exercises**: Retell's LiveKit room (joining with the access token, the published microphone,
Retell's ASR, VAD, turn-taking and barge-in, its TTS on ``agent_audio``, the ``update`` / ``agent_*_talking`` data
packets), Retell relaying our ``tool_call_invocation`` into chat messages, a Retell-hosted LLM, and Retell's real
latency and cost figures. Offline, the chat path (REST + our custom LLM over the LLM WebSocket) is exercised end
to end; the web-call event mapping is tested against a fake room.

Live mode needs ``RETELL_API_KEY``, ``options.chat_agent_id`` (text) and/or ``options.voice_agent_id`` (audio),
and with a custom LLM ``options.llm_websocket_url``: the public ``wss://`` URL at which Retell reaches our server
(e.g. a tunnel to ``llm_server_host:llm_server_port``); ``start`` checks the agents' response engine points there.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from adapters._kit.intent_tool import INTENT_TOOL_DESCRIPTION, INTENT_TOOL_NAME, INTENT_TOOL_PARAMETERS
from adapters._kit.options import parse_options, require_extra, require_live_credentials, require_live_or_emulated
from adapters._kit.prompts import VOICE_AGENT_INSTRUCTIONS
from adapters.retell import wire
from adapters.retell.chat import CHAT_CAPABILITIES, open_chat
from adapters.retell.errors import rest_error
from adapters.retell.llm_server import RetellLlmServer
from adapters.retell.session import SessionSetup
from adapters.retell.web_call import RETELL_LIVEKIT_URL, WEB_CALL_CAPABILITIES, CallRoom, LiveKitCallRoom, open_web_call
from bench.protocol import AdapterError, Capabilities, ErrorCode, Session, SessionSpec
from bench.protocol.config import AdapterConfig
from bench.protocol.errors import ConfigError
from bench.protocol.orchestrator import load_system_orchestrator

API_KEY_VAR = "RETELL_API_KEY"
DEFAULT_ORCHESTRATOR = "adapters.inhouse.reference:ReferenceVoiceStack"
LIVE_LLM_SERVER_PORT = 8765
#: the emulated Retell LLM's intent tool is never called over HTTP (the emulator reports it in the chat messages)
EMULATED_TOOL_URL = "http://127.0.0.1:9/set_conversational_intent"


class RetellOptions(BaseModel):
    """``options`` of a ``retell`` system (the engine owns ``options.emulator``)."""

    model_config = ConfigDict(extra="forbid")

    orchestrator: str | None = Field(
        default=DEFAULT_ORCHESTRATOR, description="our stack as Retell's custom LLM; null: the agent's Retell LLM")
    orchestrator_options: dict[str, Any] = Field(default_factory=dict)
    chat_agent_id: str | None = Field(default=None, description="live, text: the Retell chat agent")
    voice_agent_id: str | None = Field(default=None, description="live, audio: the Retell voice agent (web calls)")
    llm_websocket_url: str | None = Field(
        default=None, description="live with a custom LLM: public URL at which Retell reaches our server")
    llm_server_host: str = "127.0.0.1"
    llm_server_port: int | None = Field(default=None, description=f"default 0 emulated, {LIVE_LLM_SERVER_PORT} live")
    base_url: str | None = Field(default=None, description="live REST base URL override (default api.retellai.com)")
    livekit_url: str = Field(default=RETELL_LIVEKIT_URL, description="live: the LiveKit server of Retell's web calls")
    request_timeout_s: float = Field(default=60.0, gt=0)
    call_end_timeout_s: float = Field(default=10.0, gt=0, description="web call: wait this long for its cost")


def make_client(api_key: str, base_url: str | None, timeout_s: float) -> Any:
    """An ``AsyncRetell`` client without SDK-level retries (the engine owns retries)."""
    from retell import AsyncRetell

    return AsyncRetell(api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout_s)


def union(*capabilities: Capabilities) -> Capabilities:
    """What at least one of the adapter's session kinds can do."""
    names = Capabilities.model_fields
    return Capabilities(**{name: any(getattr(c, name) for c in capabilities) for name in names})


def emulated_llm_prompt(spec: SessionSpec) -> str:
    """The prompt of the Retell LLM the adapter creates on the emulator (dynamic variables in ``{{…}}``)."""
    knowledge = "{{" + wire.KNOWLEDGE_VARIABLE + "}}"
    if spec.instructions:
        prompt = f"{spec.instructions}\n\nHospital information:\n{knowledge}\n"
    else:
        prompt = VOICE_AGENT_INSTRUCTIONS.format(context=knowledge)
    return (prompt + "\nThe caller speaks {{" + wire.LANGUAGE_VARIABLE + "}}. Earlier in this conversation:\n{{"
            + wire.HISTORY_VARIABLE + "}}\n")


class RetellAdapter:
    """``SystemUnderTest`` for ``retell`` systems (see the module docstring)."""

    # the SystemUnderTest attributes, typed as the protocol types them
    system_id: str
    mode: str
    capabilities: Capabilities

    def __init__(self, system: AdapterConfig, options: RetellOptions, api_key: str | None,
                 room_factory: Callable[[], CallRoom] = LiveKitCallRoom):
        self.system_id = system.id
        self.mode = system.mode
        self.options = options
        self.room_factory = room_factory
        self._api_key = api_key
        self.server: RetellLlmServer | None = None
        # Loaded here, not in start(): a bad orchestrator path or option is a configuration error (exit 2)
        # reported before the run is recorded, not a system that fails every conversation.
        self._orchestrator = (load_system_orchestrator(system.id, options.orchestrator, options.orchestrator_options)
                              if options.orchestrator else None)
        self._client: Any = None
        if system.mode == "emulated":
            self.capabilities = CHAT_CAPABILITIES
        else:
            kinds = ([CHAT_CAPABILITIES] if options.chat_agent_id else []) + (
                [WEB_CALL_CAPABILITIES] if options.voice_agent_id else [])
            self.capabilities = union(*kinds)

    async def start(self) -> None:
        if self._orchestrator is not None and self.server is None:
            port = self.options.llm_server_port
            if port is None:
                port = 0 if self.mode == "emulated" else LIVE_LLM_SERVER_PORT
            self.server = RetellLlmServer(self._orchestrator, host=self.options.llm_server_host, port=port)
            await self.server.start()
        if self.mode == "live" and self._client is None:
            self._client = make_client(self._api_key or "", self.options.base_url, self.options.request_timeout_s)
            await self._check_live_agents()

    async def close(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            with contextlib.suppress(Exception):
                await client.close()
        if self.server is not None:
            server, self.server = self.server, None
            await server.close()

    async def open_session(self, spec: SessionSpec) -> Session:
        if self.options.orchestrator and self.server is None:
            raise AdapterError("the Retell adapter is not started (call start() first)", code=ErrorCode.INTERNAL,
                               retryable=False)
        client, owns_client = self._client_for(spec)
        emulated = spec.endpoint is not None and spec.endpoint.emulated
        try:
            if spec.input_mode == "audio":
                agent_id = self._live_agent(emulated, self.options.voice_agent_id, "voice_agent_id", "audio")
            elif emulated:
                agent_id = await self._emulated_chat_agent(client, spec)
            else:
                agent_id = self._live_agent(emulated, self.options.chat_agent_id, "chat_agent_id", "text")
        except BaseException:
            if owns_client:
                with contextlib.suppress(Exception):
                    await client.close()
            raise
        setup = SessionSetup(spec=spec, client=client, owns_client=owns_client, agent_id=agent_id, server=self.server,
                             request_timeout_s=self.options.request_timeout_s)
        if spec.input_mode == "audio":
            return await open_web_call(setup, self.room_factory(), livekit_url=self.options.livekit_url,
                                       call_end_timeout_s=self.options.call_end_timeout_s)
        return await open_chat(setup)

    # -- internals ----------------------------------------------------------------------------------
    def _client_for(self, spec: SessionSpec) -> tuple[Any, bool]:
        endpoint = spec.endpoint
        if endpoint is not None and endpoint.emulated:
            key = endpoint.credentials.get("api_key") or "emulated-key"
            return make_client(key, endpoint.urls.get("rest") or endpoint.url, self.options.request_timeout_s), True
        if self.mode == "emulated":
            raise AdapterError("an emulated Retell system needs the endpoint the engine hands over",
                               code=ErrorCode.INTERNAL, retryable=False)
        if self._client is None:
            raise AdapterError("the Retell adapter is not started (call start() first)", code=ErrorCode.INTERNAL,
                               retryable=False)
        if endpoint is not None:  # a live system with a configured base URL
            return make_client(self._api_key or "", endpoint.url, self.options.request_timeout_s), True
        return self._client, False

    def _live_agent(self, emulated: bool, agent_id: str | None, option: str, kind: str) -> str:
        if emulated:
            raise AdapterError("an emulated Retell web call needs a LiveKit server: emulated Retell systems take "
                               "text only", code=ErrorCode.UNSUPPORTED, retryable=False)
        if not agent_id:
            raise AdapterError(f"system {self.system_id!r}: {kind} conversations need options.{option}",
                               code=ErrorCode.UNSUPPORTED, retryable=False)
        return agent_id

    async def _emulated_chat_agent(self, client: Any, spec: SessionSpec) -> str:
        """Create the chat agent a user would have configured (on the emulator: cheap, one per conversation)."""
        name = f"voice-agent-bench {self.system_id}"
        try:
            if self.server is not None:
                engine: dict[str, Any] = {"type": "custom-llm", "llm_websocket_url": self.server.url}
            else:
                tool = {"type": "custom", "name": INTENT_TOOL_NAME, "description": INTENT_TOOL_DESCRIPTION,
                        "parameters": INTENT_TOOL_PARAMETERS, "url": EMULATED_TOOL_URL,
                        "speak_during_execution": False, "speak_after_execution": True}
                llm = await client.llm.create(general_prompt=emulated_llm_prompt(spec), general_tools=[tool],
                                              start_speaker="user", begin_message="")
                engine = {"type": "retell-llm", "llm_id": llm.llm_id}
            agent = await client.chat_agent.create(response_engine=engine, agent_name=name)
        except Exception as exc:
            raise rest_error(exc, "chat agent set-up", connected=False) from None
        return agent.agent_id

    async def _check_live_agents(self) -> None:
        """Refuse to run when a configured agent's custom LLM is not our server (its answers would not be ours)."""
        if not self.options.orchestrator:
            return
        expected = (self.options.llm_websocket_url or "").rstrip("/")
        checks = [("chat_agent_id", self.options.chat_agent_id, self._client.chat_agent.retrieve),
                  ("voice_agent_id", self.options.voice_agent_id, self._client.agent.retrieve)]
        for option, agent_id, retrieve in checks:
            if not agent_id:
                continue
            try:
                agent = await asyncio.wait_for(retrieve(agent_id), self.options.request_timeout_s)
            except Exception:  # the first conversation reports API problems with a proper error code
                continue
            engine = getattr(agent, "response_engine", None)
            url = getattr(engine, "llm_websocket_url", None)
            if getattr(engine, "type", None) != "custom-llm" or (url and url.rstrip("/") != expected):
                raise ConfigError(
                    f"system {self.system_id!r}: Retell agent {agent_id} (options.{option}) uses response engine "
                    f"{getattr(engine, 'type', None)!r} at {url!r}, not our custom LLM at options.llm_websocket_url "
                    f"{expected!r}")


def create(system: AdapterConfig) -> RetellAdapter:
    options = parse_options(system, RetellOptions)
    require_live_or_emulated(system, "retell")
    api_key = None
    if system.mode == "live":
        api_key = require_live_credentials(system.id, API_KEY_VAR, "retell", "retell")
        if not (options.chat_agent_id or options.voice_agent_id):
            raise ConfigError(f"system {system.id!r}: live Retell needs options.chat_agent_id (text conversations, "
                              "a Retell chat agent) and/or options.voice_agent_id (audio conversations, a voice agent)")
        if options.orchestrator and not options.llm_websocket_url:
            raise ConfigError(
                f"system {system.id!r}: live Retell with a custom LLM needs options.llm_websocket_url (the public "
                f"wss:// URL at which Retell reaches our custom-LLM server; tunnel it to {options.llm_server_host}:"
                f"{options.llm_server_port or LIVE_LLM_SERVER_PORT}), or orchestrator: null for the agent's Retell LLM")
        if options.voice_agent_id:
            require_extra(system.id, "livekit", "livekit.rtc")
    return RetellAdapter(system, options, api_key)
