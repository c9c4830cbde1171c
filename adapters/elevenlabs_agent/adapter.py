"""ElevenLabs Agents as a system under test: one agent conversation (one socket) per harness conversation.

``open_session`` gets the conversation URL from the official SDK (``sdk.conversation_url``: a signed URL, or the
public URL for agents without authentication), opens the socket with the shared transport and starts an
``ElevenLabsSession``. Live mode uses the SDK's default environment (or ``base_url``) and ``ELEVENLABS_API_KEY``;
emulated mode runs the same code against ``spec.endpoint.url`` with the endpoint's placeholder key.

The agent must be set up for the benchmark: its security settings must allow the prompt, first-message and
language overrides (or turn the matching ``override_*`` option off), and it needs a client tool named
``set_conversational_intent`` (parameters: ``adapters._kit.intent_tool.INTENT_TOOL_PARAMETERS``; tools cannot be
added per conversation) for intent labels. Output and input audio formats must be PCM (``pcm_16000``).

Options (``system.options``): ``agent_id`` (required live), ``requires_auth`` (signed URL, default true),
``base_url`` (live: SDK base URL), ``text_only``, ``override_prompt`` / ``override_language`` /
``override_first_message``, ``dynamic_variables`` (plus ``spec.metadata``), ``intent_tool`` (the agent has the
intent tool), ``response_complete_event`` (the agent lists ``agent_response_complete`` in its client events:
only that event ends a response), ``response_quiet_s`` (the fallback end where the agent's audio carries no
``alignment``; see ``session``), ``fetch_cost`` / ``cost_wait_s`` (read the cost
back after hanging up), ``trace`` (keep the message types on the session as ``session.trace``),
``knowledge_usage_mode`` (``auto``: the agent's RAG retrieves from the uploaded documents; ``prompt``: whole
documents in its prompt).

Knowledge: with the system's ``context_strategy`` ``vendor_native`` (``native_knowledge``) the knowledge base is
uploaded through the SDK (``knowledge``; live: at ``start``, emulated: before the first conversation, when the
engine has handed over the emulator's endpoint — its ``knowledge`` URL) and each conversation references the
documents of its language; ``spec.context`` is then empty. Otherwise the passages go into the prompt.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from typing import Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field

from adapters._kit.options import parse_options, require_env, require_extra, require_live_or_emulated
from adapters._kit.ws import WebsocketTransport
from adapters.elevenlabs_agent import knowledge, sdk, wire
from adapters.elevenlabs_agent.initiation import agent_prompt, build_initiation, knowledge_base_prompt
from adapters.elevenlabs_agent.session import ElevenLabsSession, SessionSettings
from bench.protocol import Capabilities, SessionSpec
from bench.protocol.config import AdapterConfig
from bench.protocol.errors import ConfigError

EMULATED_AGENT_ID = "agent_emulated"


class ElevenLabsAgentOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    agent_id: str | None = None
    requires_auth: bool = True
    base_url: str | None = None
    text_only: bool = False
    override_prompt: bool = True
    override_language: bool = True
    override_first_message: bool = True
    dynamic_variables: dict[str, str | int | float | bool] = Field(default_factory=dict)
    intent_tool: bool = True
    response_complete_event: bool = False
    response_quiet_s: float = Field(default=1.0, gt=0, le=30)
    fetch_cost: bool = False
    cost_wait_s: float = Field(default=30.0, ge=0)
    trace: bool = False
    knowledge_usage_mode: Literal["auto", "prompt"] = "auto"
    #: the agent's end-of-speech wait after a caller's turn (its turn timeout settings); a text turn has no caller
    #: speech on the line, so the billed call time adds this much per text turn
    billing_endpointing_ms: float = Field(default=300.0, ge=0, le=5000)


class ElevenLabsAgentAdapter:
    """A system backed by an ElevenLabs agent (or its emulator)."""

    # the SystemUnderTest attributes, typed as the protocol types them
    system_id: str
    mode: str
    capabilities: Capabilities

    #: can run ``context_strategy: vendor_native`` (declared in ``adapters.elevenlabs_agent.plugin``)
    native_knowledge = True

    def __init__(self, system: AdapterConfig, options: ElevenLabsAgentOptions):
        self.system_id = system.id
        self.mode = system.mode
        self.options = options
        self.context_strategy = system.context_strategy or "shared_retriever"
        #: the uploaded knowledge base (``vendor_native``), once per adapter
        self.uploaded: list[knowledge.UploadedDocument] | None = None
        self._upload_lock = asyncio.Lock()
        voice = not options.text_only
        self.capabilities = Capabilities(
            text_input=True,
            audio_input=voice,
            streaming_output=True,
            audio_output=voice,
            tool_events=options.intent_tool,
            interruption=True,
            client_tools=True,
            call_control=True,
            usage=True,
            server_vad=voice,
            multi_turn=True,
        )
        self._http: httpx.AsyncClient | None = None

    @property
    def vendor_native(self) -> bool:
        return self.context_strategy == "vendor_native"

    async def start(self) -> None:
        self._pool()
        if self.vendor_native and self.mode == "live":
            client = sdk.sdk_client(self.options.base_url, require_env(self.system_id, sdk.API_KEY_VAR), self._pool())
            await self.upload_knowledge(client)

    async def upload_knowledge(self, client: object) -> list[knowledge.UploadedDocument]:
        """Upload the knowledge base once (documents the vendor already holds, by digest, are reused)."""
        async with self._upload_lock:
            if self.uploaded is None:
                from bench.protocol.knowledge import load_knowledge_base

                self.uploaded = await knowledge.upload_knowledge(client, load_knowledge_base().documents)
            return self.uploaded

    async def close(self) -> None:
        if self._http is not None:
            http, self._http = self._http, None
            await http.aclose()

    def _pool(self) -> httpx.AsyncClient:
        if self._http is None:  # emulators are on loopback: no proxy from the environment
            self._http = httpx.AsyncClient(timeout=30.0, trust_env=self.mode != "emulated")
        return self._http

    def _target(self, spec: SessionSpec) -> tuple[str | None, str]:
        """(SDK base URL, API key) for one conversation."""
        endpoint = spec.endpoint
        if endpoint is not None and endpoint.emulated:
            return endpoint.url, endpoint.credentials.get("api_key", "emulated-key")
        base_url = endpoint.url if endpoint is not None else self.options.base_url
        return base_url, require_env(self.system_id, sdk.API_KEY_VAR)

    def settings(self, spec: SessionSpec) -> SessionSettings:
        options = self.options
        return SessionSettings(text_only=options.text_only, response_complete_event=options.response_complete_event,
                               response_quiet_s=options.response_quiet_s, idle_timeout_s=spec.idle_timeout_s,
                               trace=options.trace, endpointing_s=options.billing_endpointing_ms / 1000.0)

    def initiation(self, spec: SessionSpec) -> wire.ConversationInitiationClientData:
        options = self.options
        located = None
        if self.vendor_native:
            located = knowledge.locators(self.uploaded or [], spec.language, options.knowledge_usage_mode)
            prompt = knowledge_base_prompt(spec.instructions)
        else:
            prompt = agent_prompt(spec.context, spec.instructions)
        return build_initiation(
            prompt=prompt if options.override_prompt else None, knowledge_base=located,
            language=spec.language if options.override_language else None,
            empty_first_message=options.override_first_message,
            text_only=options.text_only,
            dynamic_variables={**options.dynamic_variables, **spec.metadata},
            user_id=spec.user_id,
        )

    async def open_session(self, spec: SessionSpec) -> ElevenLabsSession:
        base_url, api_key = self._target(spec)
        client = sdk.sdk_client(base_url, api_key, self._pool())
        if self.vendor_native and self.uploaded is None:
            endpoint = spec.endpoint  # the emulator serves its knowledge-base API on its own URL
            kb_url = endpoint.urls.get("knowledge", base_url) if endpoint is not None else base_url
            await self.upload_knowledge(client if kb_url == base_url else sdk.sdk_client(kb_url, api_key,
                                                                                          self._pool()))
        agent_id = self.options.agent_id or EMULATED_AGENT_ID
        url = await sdk.conversation_url(client, agent_id, requires_auth=self.options.requires_auth,
                                         base_url=base_url)
        # built before the socket opens: the server waits only briefly for it (the emulator 1 s) and then starts
        # the conversation with the agent's defaults, so one built on a busy machine after the open arrived late
        # and was refused as a second initiation (1008 "Conversation already initiated")
        initiation = self.initiation(spec)
        transport = await WebsocketTransport.open(url, open_timeout=spec.idle_timeout_s)
        cost_reader = None
        if self.options.fetch_cost:
            cost_reader = functools.partial(_cost_usd, client, wait_s=self.options.cost_wait_s)
        session = ElevenLabsSession(transport, spec, self.settings(spec), self.capabilities,
                                    cost_reader=cost_reader)
        try:
            await session.start(initiation)
        except BaseException:
            with contextlib.suppress(Exception):
                await transport.close(graceful=False)
            raise
        return session


async def _cost_usd(client: object, conversation_id: str, *, wait_s: float) -> float | None:
    return (await sdk.conversation_cost(client, conversation_id, wait_s=wait_s)).cost_usd


def create(system: AdapterConfig) -> ElevenLabsAgentAdapter:
    options = parse_options(system, ElevenLabsAgentOptions)
    require_live_or_emulated(system, "elevenlabs_agent")
    if system.mode == "live":
        require_env(system.id, sdk.API_KEY_VAR)
        if not options.agent_id:
            raise ConfigError(f"system {system.id!r}: options: agent_id: required in live mode")
        require_extra(system.id, "elevenlabs", "elevenlabs")
    return ElevenLabsAgentAdapter(system, options)

