"""What the Vapi emulator keeps: its options, the calls and chats it created, and the shared server state."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import httpx
from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field

from adapters.custom_llm.wire import CompletionUsage
from adapters.emulators._kit.answerer import Answerer
from adapters.emulators._kit.control import ControlPlane, Conversation
from adapters.emulators._kit.running import EmulatorSettings, SendStamps
from adapters.emulators.vapi.billing import VapiCostProfile
from adapters.vapi.wire import ApiErrorBody, AssistantSpec, ChatRecord, CostBreakdown, CreateCallRequest, TurnLatency

DEFAULT_ORG_ID = "5f0c2a91-7d1e-4c3b-9a55-0e6b8e1d2c4f"


class VapiEmulatorOptions(BaseModel):
    """The emulator's own keys of ``options.emulator`` (besides latency, faults, vad, brain)."""

    model_config = ConfigDict(extra="forbid")

    cost: VapiCostProfile = VapiCostProfile()
    org_id: str = DEFAULT_ORG_ID
    #: a response's fault fires after this many ``model-output`` tokens (0: before the first)
    fault_after_tokens: int = Field(default=2, ge=0)
    llm_timeout_s: float = Field(default=20.0, gt=0)
    max_llm_rounds: int = Field(default=3, ge=1)
    webhook_timeout_s: float = Field(default=5.0, gt=0)


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def epoch_ms() -> float:
    return time.time() * 1000.0


@dataclass
class TurnTiming:
    """When one response's pieces happened (``time.monotonic()``), for ``performanceMetrics.turnLatencies``."""

    received_at: float
    endpointing_ms: float = 0.0
    llm_started_at: float | None = None
    first_token_at: float | None = None
    first_audio_at: float | None = None


@dataclass
class CallState:
    """One call: what ``GET /call/{id}`` reports, plus the conversation it runs."""

    id: str
    conversation: Conversation
    request: CreateCallRequest
    assistant: AssistantSpec
    sample_rate: int
    websocket_url: str
    created_at: str = field(default_factory=now_iso)
    updated_at: str = field(default_factory=now_iso)
    status: str = "queued"
    started_at: str | None = None
    started_mono: float | None = None
    ended_at: str | None = None
    ended_reason: str | None = None
    connected: bool = False
    #: the conversation in OpenAI format, after the assistant's own ``model.messages``
    messages: list[dict[str, Any]] = field(default_factory=list)
    artifact_messages: list[dict[str, Any]] = field(default_factory=list)
    turn_latencies: list[TurnLatency] = field(default_factory=list)
    usage: CompletionUsage = field(default_factory=CompletionUsage)
    tts_characters: int = 0
    input_audio_bytes: int = 0
    cost: float | None = None
    cost_breakdown: CostBreakdown | None = None
    costs: list[dict[str, Any]] = field(default_factory=list)
    #: what the custom LLM streamed, for contract tests (``role``, ``tool_call``, ``content``, ``[DONE]`` …)
    llm_log: list[str] = field(default_factory=list)

    def seconds_from_start(self) -> float:
        return (time.monotonic() - self.started_mono) if self.started_mono is not None else 0.0


@dataclass
class ChatState:
    """One chat of a chain: its record and everything needed to continue the chain from it."""

    record: ChatRecord
    conversation: Conversation
    assistant: AssistantSpec
    assistant_overrides: dict[str, Any] | None
    #: the whole conversation up to and including this chat's output (OpenAI format)
    messages: list[dict[str, Any]]


class EmulatorState:
    """Shared by every handler: settings, the control plane, the answerer, stamps, calls and chats."""

    def __init__(self, settings: EmulatorSettings, options: VapiEmulatorOptions, control: ControlPlane,
                 answerer: Answerer, credentials: dict[str, str]):
        self.settings = settings
        self.options = options
        self.control = control
        self.answerer = answerer
        self.credentials = credentials
        self.stamps = SendStamps()
        self.url = ""
        self.calls: dict[str, CallState] = {}
        self.chats: dict[str, ChatState] = {}
        self.webhooks_sent: list[dict[str, Any]] = []
        self.http = httpx.AsyncClient(timeout=httpx.Timeout(options.llm_timeout_s, connect=5.0))

    def unauthorized(self, request: web.Request) -> web.Response | None:
        """A 401 unless the request carries the key the emulator handed out (``Authorization: Bearer …``)."""
        header = request.headers.get("Authorization", "")
        if header != f"Bearer {self.credentials['api_key']}":
            return api_error(401, "Invalid Key. Hot tip, you may be using the private key instead of the public "
                             "key, or vice versa.", "Unauthorized")
        return None

    def conversation(self, request: web.Request, *, connect: bool = False) -> Conversation:
        """The conversation a request belongs to (its ``/c/<token>`` prefix); ``connect`` counts a connection."""
        if connect:
            return self.control.connect(request.path)[0]
        return self.control.get(request.match_info.get("token"))

    async def close(self) -> None:
        await self.http.aclose()


def api_error(status: int, message: str, error: str, headers: dict[str, str] | None = None) -> web.Response:
    body = ApiErrorBody(message=message, error=error, status_code=status)
    return web.json_response(body.wire(), status=status, headers=headers)
