"""The live path: the official deepgram-sdk socket (``AsyncDeepgramClient(...).agent.v1.connect()``).

deepgram-sdk is imported inside the functions, so the core never needs it. ``base_url`` overrides the agent
socket's base (``wss://agent.deepgram.com``) through a ``DeepgramClientEnvironment``; tests point it at the
loopback emulator. The API key is passed to the SDK and never logged (the SDK also masks it in websocket
logs).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from websockets.exceptions import InvalidHandshake

from adapters.base import AdapterError
from adapters.deepgram_agent import wire


def _retry_after(exc: BaseException) -> float | None:
    """Retry-After from the HTTP response that refused the upgrade (the SDK keeps it as the error's
    context)."""
    context = exc.__context__
    headers = getattr(context, "headers", None) or getattr(
        getattr(context, "response", None), "headers", None
    )
    value = headers.get("Retry-After") if headers is not None else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


class SdkTransport:
    """Adapts the SDK's ``AsyncV1SocketClient`` to the driver's transport: typed sends, dict/bytes
    receives."""

    def __init__(self, socket: Any):
        self.socket = socket

    async def send(self, message: wire.Message) -> None:
        from deepgram.agent.v1.types import (
            AgentV1InjectUserMessage,
            AgentV1SendFunctionCallResponse,
            AgentV1Settings,
        )

        data = message.model_dump(mode="json", exclude_none=True)
        if isinstance(message, wire.Settings):
            await self.socket.send_settings(AgentV1Settings.model_validate(data))
        elif isinstance(message, wire.InjectUserMessage):
            await self.socket.send_inject_user_message(AgentV1InjectUserMessage.model_validate(data))
        elif isinstance(message, wire.FunctionCallResponse):
            await self.socket.send_function_call_response(
                AgentV1SendFunctionCallResponse.model_validate(data)
            )
        elif isinstance(message, wire.KeepAlive):
            await self.socket.send_keep_alive()
        else:
            await self.socket.send_raw(data)

    async def send_audio(self, pcm: bytes) -> None:
        await self.socket.send_media(pcm)

    async def recv(self) -> str | bytes | dict[str, Any]:
        try:
            item = await self.socket.recv()
        except json.JSONDecodeError as exc:
            raise wire.MalformedFrame(f"text frame is not JSON: {exc.msg}") from None
        if isinstance(item, bytes | bytearray | dict):
            return item if not isinstance(item, bytearray) else bytes(item)
        return item.model_dump(mode="json", exclude_none=True)


@asynccontextmanager
async def open_live(
    api_key: str, base_url: str | None, session_id: str | None
) -> AsyncIterator[SdkTransport]:
    """Open the agent socket with the SDK; connection refusals become ``AdapterError`` with a retry
    decision."""
    from deepgram import AsyncDeepgramClient, DeepgramClientEnvironment
    from deepgram.core.api_error import ApiError

    production = DeepgramClientEnvironment.PRODUCTION
    environment = (
        production
        if not base_url
        else DeepgramClientEnvironment(
            base=production.base,
            production=production.production,
            agent=base_url.rstrip("/"),
            agent_rest=production.agent_rest,
        )
    )
    kwargs: dict[str, Any] = {"api_key": api_key, "environment": environment}
    if session_id:
        kwargs["session_id"] = session_id
    client = AsyncDeepgramClient(**kwargs)
    try:
        async with client.agent.v1.connect() as socket:
            yield SdkTransport(socket)
    except ApiError as exc:
        status = exc.status_code
        if status is None:
            raise AdapterError("Deepgram refused the agent socket", retryable=True, code="connect") from None
        raise AdapterError.from_status(
            status, "Deepgram refused the agent socket", retry_after_s=_retry_after(exc)
        ) from None
    except (OSError, TimeoutError, InvalidHandshake) as exc:
        raise AdapterError(
            f"cannot reach the Deepgram agent socket: {type(exc).__name__}", retryable=True, code="connect"
        ) from None
