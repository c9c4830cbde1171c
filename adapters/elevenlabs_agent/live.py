"""The live path's use of the official ``elevenlabs`` SDK (imported lazily): the socket URL and the call's
cost.

The SDK's ``Conversation`` client hides the raw messages (no access to event ids, ``agent_response_complete``
or timing of individual frames) and runs tool handlers on its own loop, so the turn itself is spoken by
``session.run_conversation_turn`` over a ``websockets`` connection — the same code as emulated mode — to the
URL the SDK hands out: ``conversations.get_signed_url(agent_id)`` for agents that require authentication
(default), or the public ``/v1/convai/conversation?agent_id=`` URL built from the SDK client's base URL.

Metering: the socket carries no usage or cost. ElevenLabs bills agents per connected minute, so the adapter
meters connected seconds itself. With ``fetch_cost`` the conversation is read back after the socket closes
(``conversations.get(conversation_id)``: ``metadata.cost_fiat`` in USD, ``metadata.cost`` in credits,
``metadata.call_duration_secs``), polling until its status is ``done``; this delays ``TurnDone`` and so
inflates the measured completion time of that turn, which is why it is off by default.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from pydantic import BaseModel

from adapters.base import AdapterError

API_KEY_VAR = "ELEVENLABS_API_KEY"


class ConversationCost(BaseModel):
    cost_usd: float | None = None
    cost_credits: float | None = None
    call_duration_secs: float | None = None
    status: str | None = None


def _client(base_url: str | None) -> Any:
    import os

    from elevenlabs.client import AsyncElevenLabs

    # pass the key explicitly: the SDK's default argument reads the environment once, at import time
    api_key = os.environ.get(API_KEY_VAR)
    return (
        AsyncElevenLabs(api_key=api_key, base_url=base_url) if base_url else AsyncElevenLabs(api_key=api_key)
    )


def _sdk_error(exc: Exception, what: str) -> AdapterError:
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        headers = getattr(exc, "headers", None) or {}
        retry_after = headers.get("retry-after") if isinstance(headers, dict) else None
        try:
            retry_s = float(retry_after) if retry_after else None
        except ValueError:
            retry_s = None
        return AdapterError.from_status(status, f"{what} failed", retry_s)
    return AdapterError(f"{what} failed: {type(exc).__name__}", retryable=True, code="connect")


async def conversation_url(agent_id: str, *, requires_auth: bool, base_url: str | None) -> str:
    """The WebSocket URL for a new conversation with ``agent_id``."""
    client = _client(base_url)
    if requires_auth:
        try:
            response = await client.conversational_ai.conversations.get_signed_url(agent_id=agent_id)
        except Exception as exc:
            raise _sdk_error(exc, "get_signed_url") from None
        return response.signed_url
    from elevenlabs.url_utils import build_ws_url

    http_base = (
        client._client_wrapper.get_base_url()
    )  # the SDK's own resolution of the environment / base_url
    return build_ws_url(http_base, ["v1", "convai", "conversation"], [("agent_id", agent_id)])


async def conversation_cost(conversation_id: str, *, base_url: str | None, wait_s: float) -> ConversationCost:
    """Read the conversation's cost back, polling until it is processed or ``wait_s`` has passed."""
    client = _client(base_url)
    deadline = time.monotonic() + wait_s
    while True:
        try:
            conversation = await client.conversational_ai.conversations.get(conversation_id)
        except Exception as exc:
            raise _sdk_error(exc, "conversations.get") from None
        status = str(conversation.status)
        metadata = conversation.metadata
        cost = ConversationCost(
            cost_usd=metadata.cost_fiat,
            cost_credits=metadata.cost,
            call_duration_secs=metadata.call_duration_secs,
            status=status,
        )
        if status in ("done", "failed") or time.monotonic() >= deadline:
            return cost
        await asyncio.sleep(1.0)
