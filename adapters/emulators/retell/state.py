"""What the Retell emulator keeps: agents, Retell LLMs, chats and web calls, as its REST API shows them.

Agents and LLMs belong to the emulated account (shared by every conversation); a chat or a web call belongs to
the conversation whose endpoint created it. Shapes follow retell-sdk 6.2 (``ChatAgentResponse``,
``AgentResponse``, ``LlmResponse``, ``ChatResponse``, ``WebCallResponse``); costs are in CENTS.
"""

from __future__ import annotations

import secrets
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from adapters._kit.intent_tool import INTENT_TOOL_NAME
from adapters.emulators._kit.control import Conversation
from adapters.emulators.retell.llm_link import LlmLink, now_ms
from adapters.retell import wire

WEB_CALL_TOKEN_TTL_MS = 30_000


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:24]}"


@dataclass
class LlmRecord:
    """A Retell LLM (``POST /create-retell-llm``): the prompt with ``{{variables}}`` and its tools."""

    llm_id: str
    body: dict[str, Any]
    created_ms: int = field(default_factory=now_ms)

    @property
    def tool_names(self) -> list[str]:
        return [str(t.get("name")) for t in self.body.get("general_tools") or [] if isinstance(t, dict)]

    @property
    def declares_intent_tool(self) -> bool:
        return INTENT_TOOL_NAME in self.tool_names

    def public(self) -> dict[str, Any]:
        data = {k: v for k, v in self.body.items() if v is not None}
        data.update({"llm_id": self.llm_id, "last_modification_timestamp": self.created_ms, "version": 0,
                     "is_published": False})
        return data


@dataclass
class AgentRecord:
    """A voice agent (``/create-agent``) or chat agent (``/create-chat-agent``) and its response engine."""

    agent_id: str
    kind: str  # "voice" | "chat"
    body: dict[str, Any]
    created_ms: int = field(default_factory=now_ms)

    @property
    def engine(self) -> dict[str, Any]:
        engine = self.body.get("response_engine")
        return engine if isinstance(engine, dict) else {}

    @property
    def llm_websocket_url(self) -> str | None:
        url = self.engine.get("llm_websocket_url")
        return url if self.engine.get("type") == "custom-llm" and isinstance(url, str) else None

    def public(self) -> dict[str, Any]:
        data = {k: v for k, v in self.body.items() if v is not None}
        data.update({"agent_id": self.agent_id, "response_engine": self.engine, "version": 0, "is_published": False,
                     "last_modification_timestamp": self.created_ms})
        if self.kind == "voice":
            data.setdefault("voice_id", "11labs-Adrian")
        return data


@dataclass
class ChatState:
    """One chat: Retell's transcript of it, its dynamic variables and the custom-LLM socket, if any."""

    chat_id: str
    agent: AgentRecord
    conversation: Conversation
    metadata: dict[str, Any]
    variables: dict[str, str]
    status: str = "ongoing"
    transcript: list[wire.Utterance] = field(default_factory=list)
    #: every message as ``message_with_tool_calls`` lists it
    messages: list[dict[str, Any]] = field(default_factory=list)
    completions: int = 0
    link: LlmLink | None = None
    start_ms: int = field(default_factory=now_ms)
    end_ms: int | None = None

    def transcript_text(self) -> str:
        return "\n".join(f"{'Agent' if u.role == 'agent' else 'User'}: {u.content}" for u in self.transcript)

    def public(self, cents_per_completion: float) -> dict[str, Any]:
        data: dict[str, Any] = {
            "chat_id": self.chat_id, "agent_id": self.agent.agent_id, "chat_status": self.status,
            "chat_type": "api_chat", "metadata": self.metadata, "retell_llm_dynamic_variables": self.variables,
            "start_timestamp": self.start_ms, "transcript": self.transcript_text(),
            "message_with_tool_calls": list(self.messages), "version": 0,
        }
        if self.status in ("ended", "error"):
            cost = round(self.completions * cents_per_completion, 4)
            data["end_timestamp"] = self.end_ms
            data["chat_cost"] = {"combined_cost": cost, "product_costs": [
                {"product": "retell_chat_emulated", "cost": cost, "unit_price": cents_per_completion}]}
        return data


@dataclass
class WebCallState:
    """A registered web call. Nobody can join it (the emulator has no LiveKit server), so it never starts."""

    call_id: str
    agent: AgentRecord
    conversation: Conversation
    metadata: dict[str, Any]
    variables: dict[str, str]
    access_token: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    created_ms: int = field(default_factory=now_ms)
    created_mono: float = field(default_factory=time.monotonic)

    @property
    def expires_at(self) -> int:
        return self.created_ms + WEB_CALL_TOKEN_TTL_MS

    @property
    def status(self) -> str:
        return "not_connected" if now_ms() > self.expires_at else "registered"

    def created(self) -> dict[str, Any]:
        """``POST /v3/create-web-call``: a LiveKit web call (room-scoped ``access_token``)."""
        return {"call_id": self.call_id, "access_token": self.access_token, "expires_at": self.expires_at,
                "ice_servers": []}

    def public(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "call_id": self.call_id, "call_type": "web_call", "agent_id": self.agent.agent_id, "agent_version": 0,
            "call_status": self.status, "access_token": self.access_token, "metadata": self.metadata,
            "retell_llm_dynamic_variables": self.variables, "data_storage_setting": "everything",
            "opt_in_signed_url": False,
        }
        if self.status == "not_connected":
            data.update({"disconnection_reason": "error_user_not_joined", "end_timestamp": self.expires_at,
                         "duration_ms": 0})
        return data
