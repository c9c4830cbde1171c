"""The agent socket through the official deepgram-sdk, the same code in live and emulated mode.

``AgentSocket.open`` builds ``AsyncDeepgramClient(api_key=..., environment=...)`` whose ``agent`` base URL is
either Deepgram's (``wss://agent.deepgram.com``), a configured one, or the endpoint the engine handed over for an
emulator (the SDK appends ``/v1/agent/converse`` to it), and keeps ``client.agent.v1.connect()`` open for the
whole conversation. Sends go through the SDK's typed methods (``send_settings``, ``send_inject_user_message``,
``send_function_call_response``, ``send_update_prompt``, ``send_keep_alive``, ``send_media``); receives through
``recv()``, re-parsed into this package's strict wire models.

deepgram-sdk is imported inside the functions, so the core never needs it. Nothing here puts the API key into
a message: a refused upgrade is reported by status only (the SDK's ``ApiError`` carries the request headers,
so it is never turned into text).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

from adapters._kit.http import retry_after_seconds
from adapters._kit.ws import connect_error
from adapters.deepgram_agent import wire
from bench.protocol import AdapterError, ErrorCode
from bench.protocol.redact import redact

PRODUCTION_AGENT_URL = "wss://agent.deepgram.com"


def _refused_upgrade_retry_after(exc: BaseException) -> float | None:
    """Retry-After of the HTTP response that refused the upgrade (the SDK raises ``ApiError`` while handling the
    websockets status error, which keeps the response headers)."""
    headers = getattr(exc.__context__, "headers", None)
    if headers is None:
        headers = getattr(getattr(exc.__context__, "response", None), "headers", None)
    return retry_after_seconds(headers.get("Retry-After")) if headers is not None else None


def refused_upgrade_error(status: int | None, retry_after_s: float | None) -> AdapterError:
    if status is None:
        return AdapterError("Deepgram refused the agent socket", code=ErrorCode.CONNECT)
    return AdapterError.from_status(status, "Deepgram refused the agent socket upgrade", retry_after_s)


class AgentSocket:
    """One open agent socket: typed sends (serialized by a lock) and parsed receives."""

    def __init__(self, socket: Any, stack: contextlib.AsyncExitStack, session_id: str):
        self._socket = socket
        self._stack = stack
        self._lock = asyncio.Lock()
        #: the ``x-deepgram-session-id`` the SDK sent
        self.session_id = session_id

    @classmethod
    async def open(cls, *, api_key: str, agent_url: str | None, open_timeout_s: float = 15.0) -> AgentSocket:
        """Connect; a refused or failed connection raises ``AdapterError`` (AUTH / RATE_LIMITED / CONNECT ...)."""
        from deepgram import AsyncDeepgramClient, DeepgramClientEnvironment
        from deepgram.core.api_error import ApiError

        production = DeepgramClientEnvironment.PRODUCTION
        environment = DeepgramClientEnvironment(base=production.base, production=production.production,
                                                agent=(agent_url or PRODUCTION_AGENT_URL).rstrip("/"),
                                                agent_rest=production.agent_rest)
        client = AsyncDeepgramClient(api_key=api_key, environment=environment)
        stack = contextlib.AsyncExitStack()
        try:
            async with asyncio.timeout(open_timeout_s):
                socket = await stack.enter_async_context(client.agent.v1.connect())
        except ApiError as exc:
            await stack.aclose()
            raise refused_upgrade_error(exc.status_code, _refused_upgrade_retry_after(exc)) from None
        except Exception as exc:
            await stack.aclose()
            raise connect_error(exc) from None
        return cls(socket, stack, client.session_id)

    async def send(self, message: wire.Message) -> None:
        """Send one client message with the SDK method made for it."""
        from deepgram.agent.v1.types import (
            AgentV1InjectUserMessage,
            AgentV1SendFunctionCallResponse,
            AgentV1Settings,
            AgentV1UpdatePrompt,
        )

        data = message.model_dump(mode="json", exclude_none=True)
        async with self._lock:
            if isinstance(message, wire.Settings):
                await self._socket.send_settings(AgentV1Settings.model_validate(data))
            elif isinstance(message, wire.InjectUserMessage):
                await self._socket.send_inject_user_message(AgentV1InjectUserMessage.model_validate(data))
            elif isinstance(message, wire.FunctionCallResponse):
                await self._socket.send_function_call_response(AgentV1SendFunctionCallResponse.model_validate(data))
            elif isinstance(message, wire.UpdatePrompt):
                await self._socket.send_update_prompt(AgentV1UpdatePrompt.model_validate(data))
            elif isinstance(message, wire.KeepAlive):
                await self._socket.send_keep_alive()
            else:
                await self._socket.send_raw(data)

    async def send_audio(self, pcm: bytes) -> None:
        async with self._lock:
            await self._socket.send_media(pcm)

    async def recv(self) -> wire.Message | bytes:
        """The next frame: caller-facing agent audio as bytes, anything else as a wire model.

        Raises ``wire.MalformedFrame`` for a text frame that is not a valid message, and the websockets
        ``ConnectionClosed`` when the socket is gone.
        """
        try:
            item = await self._socket.recv()
        except json.JSONDecodeError as exc:
            raise wire.MalformedFrame(f"text frame is not JSON: {exc.msg} at {exc.pos}") from None
        if isinstance(item, (bytes, bytearray)):
            return bytes(item)
        data = item if isinstance(item, dict) else item.dict()
        return wire.parse_server_message(data)

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self._stack.aclose()


def safe_message(text: str) -> str:
    """A vendor-supplied text as it may appear in an error message."""
    return redact(text)[:300]
