"""The Vapi adapter: one Vapi call (or one chat chain) per conversation, our in-house stack as Vapi's custom LLM.

The harness hosts the custom LLM (``adapters.custom_llm.CustomLlmServer`` around ``options.orchestrator``, default
the reference stack) from ``start``; with ``orchestrator: null`` the assistant uses Vapi's own model instead.
``open_session`` creates the inline assistant for the conversation and opens a ``VapiCallSession``
(``channel: call``, the default: text and audio over the call's WebSocket transport) or a ``VapiChatSession``
(``channel: chat``: text only, chats chained with ``previousChatId``).

Emulated and live run the same client code: the official SDK (``AsyncVapi``) for REST and the shared WebSocket
transport for the call. Emulated mode connects to the endpoint the engine hands over (``spec.endpoint``: REST base
URL and placeholder key); live mode to api.vapi.ai (or ``options.base_url``) with ``VAPI_API_KEY`` and needs
``options.custom_llm_url`` (the public URL Vapi calls, tunnelled to ``custom_llm_host``:``custom_llm_port``)
unless ``options.assistant_id`` names an assistant already pointing there. The options are in
``adapters.vapi.options``.
"""

from __future__ import annotations

import asyncio

import httpx

from adapters._kit.options import parse_options, require_env, require_extra, require_live_or_emulated
from adapters.custom_llm import CustomLlmServer
from adapters.vapi.api import VapiRest
from adapters.vapi.assistant import SessionSetup, build_assistant
from adapters.vapi.call import CALL_CAPABILITIES, VapiCallSession
from adapters.vapi.chat import CHAT_CAPABILITIES, VapiChatSession
from adapters.vapi.options import LIVE_CUSTOM_LLM_PORT, VapiOptions
from bench.protocol import AdapterError, Capabilities, ErrorCode, Session, SessionSpec
from bench.protocol.config import AdapterConfig
from bench.protocol.errors import ConfigError
from bench.protocol.orchestrator import Orchestrator, load_system_orchestrator

API_KEY_VAR = "VAPI_API_KEY"


class VapiAdapter:
    """Vapi as a system under test (``SystemUnderTest``)."""

    # the SystemUnderTest attributes, typed as the protocol types them
    system_id: str
    mode: str
    capabilities: Capabilities

    def __init__(self, system: AdapterConfig, orchestrator: Orchestrator | None = None):
        require_live_or_emulated(system, "vapi")
        self.system = system
        self.system_id = system.id
        self.mode = system.mode
        self.options = parse_options(system, VapiOptions)
        require_extra(system.id, "vapi", "vapi")
        # Loaded here, not in start(): a bad orchestrator path or option is a configuration error (exit 2)
        # reported before the run is recorded, not a system that fails every conversation.
        if orchestrator is None and self.options.orchestrator is not None:
            orchestrator = load_system_orchestrator(system.id, str(self.options.orchestrator),
                                                    self.options.orchestrator_options)
        self._orchestrator = orchestrator
        self._token: str | None = None
        self._custom_llm_secret: str | None = None
        options = self.options
        if options.custom_llm_api_key_env:
            self._custom_llm_secret = require_env(system.id, options.custom_llm_api_key_env)
        if self.mode == "live":
            self._token = require_env(system.id, API_KEY_VAR)
            if self.uses_custom_llm and not options.assistant_id and not options.custom_llm_url:
                raise ConfigError(
                    f"system {system.id!r} runs Vapi live with an inline custom-llm assistant and needs "
                    "options.custom_llm_url: the public URL Vapi calls for the custom LLM (tunnelled to "
                    "options.custom_llm_host:options.custom_llm_port), or options.assistant_id"
                )
        base = CHAT_CAPABILITIES if options.channel == "chat" else CALL_CAPABILITIES
        tools = options.declare_intent_tool or self.uses_custom_llm
        self.capabilities: Capabilities = base.model_copy(update={"tool_events": tools})
        self.llm_server: CustomLlmServer | None = None
        self._http: httpx.AsyncClient | None = None
        self._start_lock = asyncio.Lock()

    @property
    def uses_custom_llm(self) -> bool:
        return self.options.orchestrator is not None or self._orchestrator is not None

    # -- lifecycle --------------------------------------------------------------------------------------
    async def start(self) -> None:
        async with self._start_lock:
            if self._http is not None:
                return
            options = self.options
            if self.uses_custom_llm:
                assert self._orchestrator is not None  # loaded in __init__ whenever uses_custom_llm
                server = CustomLlmServer(self._orchestrator, api_key=self._custom_llm_secret,
                                         default_language=options.default_language, model_name=options.model_name)
                port = options.custom_llm_port
                if port is None:
                    port = LIVE_CUSTOM_LLM_PORT if self.mode == "live" else 0
                await server.start(options.custom_llm_host, port)
                self.llm_server = server
            self._http = httpx.AsyncClient(timeout=httpx.Timeout(self.system.timeout_s, connect=10.0))

    async def close(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None
        if self.llm_server is not None:
            await self.llm_server.close()
            self.llm_server = None

    # -- sessions ---------------------------------------------------------------------------------------
    async def open_session(self, spec: SessionSpec) -> Session:
        await self.start()
        options = self.options
        if options.channel == "chat" and spec.input_mode == "audio":
            raise AdapterError("a Vapi chat takes text only; use channel 'call' for audio input",
                               code=ErrorCode.UNSUPPORTED, retryable=False)
        setup = SessionSetup(spec=spec, rest=self._rest(spec), options=options, llm=self.llm_server,
                             assistant=build_assistant(options, spec, custom_llm_url=self._custom_llm_url(),
                                                       custom_llm_secret=self._custom_llm_secret),
                             readback_timeout_s=options.readback_timeout_s or (15.0 if self.mode == "live" else 5.0),
                             readback_interval_s=1.0 if self.mode == "live" else 0.1)
        if options.channel == "chat":
            return await VapiChatSession.open(setup)
        return await VapiCallSession.open(setup)

    def _rest(self, spec: SessionSpec) -> VapiRest:
        assert self._http is not None
        endpoint = spec.endpoint
        if self.mode == "emulated":
            if endpoint is None:
                raise AdapterError("emulated Vapi needs the endpoint the engine hands over (spec.endpoint)",
                                   code=ErrorCode.CONNECT, retryable=False)
            return VapiRest(token=endpoint.credentials.get("api_key", "emulated-key"), http=self._http,
                            base_url=endpoint.urls.get("rest", endpoint.url))
        assert self._token is not None
        base_url = endpoint.urls.get("rest", endpoint.url) if endpoint is not None else self.options.base_url
        return VapiRest(token=self._token, http=self._http, base_url=base_url)

    def _custom_llm_url(self) -> str | None:
        if not self.uses_custom_llm:
            return None
        if self.mode == "live":
            return self.options.custom_llm_url
        assert self.llm_server is not None
        return self.llm_server.url


def create(system: AdapterConfig) -> VapiAdapter:
    return VapiAdapter(system)
