"""The official ``elevenlabs`` SDK's part of a conversation (imported lazily): the socket URL and the call's cost.

Live and emulated mode run this same code; only the base URL and the key differ (the SDK's default environment
and ``ELEVENLABS_API_KEY`` live, ``spec.endpoint.url`` and its placeholder key emulated).

* URL: ``conversations.get_signed_url(agent_id)`` for agents that require authentication (the default), or the
  public ``/v1/convai/conversation?agent_id=`` URL built with the SDK's own ``build_ws_url`` from the base URL,
  as the SDK's ``Conversation`` does. The SDK's ``Conversation`` client itself is not used for the conversation:
  it hides the raw messages (event ids, ``agent_response_complete``, frame timing) and runs tool handlers on its
  own loop, so ``session.ElevenLabsSession`` speaks the socket with ``adapters._kit.ws``.
* Cost: the socket carries no usage. With ``fetch_cost`` the conversation is read back after hanging up
  (``conversations.get``: ``metadata.cost_fiat`` in USD, ``metadata.call_duration_secs``), polling until its
  status is ``done``.

SDK-level retries are off (``max_retries=0``): the engine restarts a conversation, honouring Retry-After.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
from pydantic import BaseModel

from adapters._kit.http import status_error
from bench.protocol import AdapterError, ErrorCode
from bench.protocol.redact import redact

API_KEY_VAR = "ELEVENLABS_API_KEY"
CONVERSATION_PATH = ("v1", "convai", "conversation")
NO_SDK_RETRIES = {"max_retries": 0}


class ConversationCost(BaseModel):
    cost_usd: float | None = None
    call_duration_secs: float | None = None
    status: str | None = None


def sdk_client(base_url: str | None, api_key: str, http: httpx.AsyncClient) -> Any:
    """An ``AsyncElevenLabs`` on the shared HTTP pool (``base_url`` None: the SDK's production environment)."""
    from elevenlabs.client import AsyncElevenLabs

    if base_url:
        return AsyncElevenLabs(api_key=api_key, base_url=base_url, httpx_client=http)
    return AsyncElevenLabs(api_key=api_key, httpx_client=http)


def public_base_url(base_url: str | None) -> str:
    """The HTTP base the SDK would use: ``base_url`` or its production environment."""
    from elevenlabs.environment import ElevenLabsEnvironment

    return base_url or ElevenLabsEnvironment.PRODUCTION.value


def sdk_error(exc: Exception, what: str) -> AdapterError:
    """A redacted ``AdapterError`` for a failed SDK call (the SDK's own ``str`` echoes request headers: never used)."""
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        headers = getattr(exc, "headers", None) or {}
        retry_after = next((v for k, v in headers.items() if k.lower() == "retry-after"), None)
        body = getattr(exc, "body", None)
        return status_error(status, str(body) if body is not None else "", retry_after, context=what)
    if isinstance(exc, (httpx.TransportError, OSError, TimeoutError)):
        return AdapterError(redact(f"{what}: could not connect ({type(exc).__name__})"), code=ErrorCode.CONNECT)
    return AdapterError(redact(f"{what} failed: {type(exc).__name__}"), code=ErrorCode.CONNECT, retryable=False)


async def conversation_url(client: Any, agent_id: str, *, requires_auth: bool, base_url: str | None) -> str:
    """The WebSocket URL for a new conversation with ``agent_id``."""
    if requires_auth:
        try:
            response = await client.conversational_ai.conversations.get_signed_url(
                agent_id=agent_id, request_options=NO_SDK_RETRIES)
        except Exception as exc:
            raise sdk_error(exc, "get_signed_url") from None
        return str(response.signed_url)
    from elevenlabs.url_utils import build_ws_url

    return build_ws_url(public_base_url(base_url), CONVERSATION_PATH, [("agent_id", agent_id)])


async def conversation_cost(client: Any, conversation_id: str, *, wait_s: float) -> ConversationCost:
    """Read the conversation's cost back, polling until it is processed or ``wait_s`` has passed."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            conversation = await client.conversational_ai.conversations.get(
                conversation_id, request_options=NO_SDK_RETRIES)
        except Exception as exc:
            raise sdk_error(exc, "conversations.get") from None
        status = str(conversation.status)
        metadata = conversation.metadata
        cost = ConversationCost(cost_usd=metadata.cost_fiat, call_duration_secs=metadata.call_duration_secs,
                                status=status)
        if status in ("done", "failed") or time.monotonic() >= deadline:
            return cost
        await asyncio.sleep(1.0)
