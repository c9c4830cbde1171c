"""Transports for the Realtime socket and the mapping of socket failures onto ``AdapterError``.

A transport sends one JSON event and receives one raw frame. ``WebsocketTransport`` speaks the socket with
``websockets`` (emulated mode; no SDK needed); ``adapters.openai_realtime.live.SdkTransport`` wraps the
official SDK connection. Both raise the same ``websockets`` exceptions, so ``connect_error`` and the turn loop
treat them alike.
"""

from __future__ import annotations

import json
import os
import re
import urllib.parse
from typing import Any, Protocol

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import InvalidHandshake, InvalidStatus

from adapters.base import AdapterError


class Transport(Protocol):
    async def send(self, event: dict[str, Any]) -> None: ...

    async def recv(self) -> str | bytes: ...

    async def close(self, graceful: bool = True) -> None: ...


#: a peer that has queued many frames we will never read cannot complete a close handshake quickly
CLOSE_TIMEOUT_S = 2.0


def is_loopback(url: str) -> bool:
    host = urllib.parse.urlsplit(url).hostname or ""
    return host in ("127.0.0.1", "localhost", "::1")


def retry_after_seconds(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None  # an HTTP date; the runner falls back to its own backoff


SECRET_VARIABLES = ("OPENAI_API_KEY", "ELEVENLABS_API_KEY")
_SIGNATURE = re.compile(r"\b(conversation_signature|token|api_key|key)=[^&\s]+")
_KEY_LIKE = re.compile(r"\b(sk|sk_|xi)[-_][A-Za-z0-9_\-*]{6,}")


def redact(text: str) -> str:
    """``text`` without our API keys or anything key-shaped (servers echo masked keys in auth errors)."""
    for variable in SECRET_VARIABLES:
        value = os.environ.get(variable)
        if value and len(value) >= 8:
            text = text.replace(value, "***")
    text = _SIGNATURE.sub(r"\1=***", text)
    return _KEY_LIKE.sub(lambda m: f"{m.group(1)}-***", text)


def connect_error(exc: BaseException) -> AdapterError:
    """An ``AdapterError`` for a failed WebSocket upgrade or connection attempt (no secrets in it)."""
    if isinstance(exc, InvalidStatus):
        response = exc.response
        body = response.body.decode("utf-8", "replace") if response.body else ""
        try:
            message = json.loads(body)["error"]["message"]
        except (ValueError, KeyError, TypeError):
            message = body[:200] or response.reason_phrase
        return AdapterError.from_status(
            response.status_code,
            redact(f"upgrade rejected: {message}"),
            retry_after_seconds(response.headers.get("Retry-After")),
        )
    if isinstance(exc, InvalidHandshake):
        return AdapterError(redact(f"handshake failed: {exc}"), retryable=False, code="handshake")
    if isinstance(exc, (OSError, TimeoutError)):
        return AdapterError(
            redact(f"could not connect: {type(exc).__name__}: {exc}"), retryable=True, code="connect"
        )
    return AdapterError(
        redact(f"could not connect: {type(exc).__name__}: {exc}"), retryable=False, code="connect"
    )


class WebsocketTransport:
    """A plain ``websockets`` client connection."""

    def __init__(self, connection: ClientConnection):
        self.connection = connection

    @classmethod
    async def open(cls, url: str, headers: dict[str, str], open_timeout: float = 10.0) -> WebsocketTransport:
        try:
            connection = await connect(
                url,
                additional_headers=headers,
                max_size=None,
                compression=None,
                open_timeout=open_timeout,
                proxy=None if is_loopback(url) else True,
                ping_interval=None,
                close_timeout=CLOSE_TIMEOUT_S,
            )
        except Exception as exc:
            raise connect_error(exc) from None
        return cls(connection)

    async def send(self, event: dict[str, Any]) -> None:
        await self.connection.send(json.dumps(event))

    async def recv(self) -> str | bytes:
        return await self.connection.recv()

    async def close(self, graceful: bool = True) -> None:
        """Close handshake after a finished turn; after a failure, drop the TCP connection at once."""
        if graceful:
            await self.connection.close()
        else:
            self.connection.transport.abort()
