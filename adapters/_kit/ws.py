"""The one WebSocket client transport the adapters share, and the mapping of socket failures onto ``AdapterError``.

A transport sends one JSON event (or raw bytes) and receives one raw frame. Vendor SDK connections wrap
themselves in the same ``Transport`` protocol (e.g. ``adapters.openai_realtime.live``), so a session's code is
the same whichever is underneath. ``WebsocketTransport`` keeps the frames it carried (``FrameLog``): the raw
evidence a simulation bundle writes as ``raw-endpoint-events.json``.
"""

from __future__ import annotations

import json
import time
import urllib.parse
from typing import Any, Protocol

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus

from adapters._kit.http import retry_after_seconds
from bench.protocol import AdapterError, ErrorCode
from bench.protocol.redact import redact


class Transport(Protocol):
    async def send(self, event: dict[str, Any]) -> None: ...

    async def recv(self) -> str | bytes: ...

    async def close(self, graceful: bool = True) -> None: ...


#: a peer that has queued many frames we will never read cannot complete a close handshake quickly
CLOSE_TIMEOUT_S = 2.0


def is_loopback(url: str) -> bool:
    host = urllib.parse.urlsplit(url).hostname or ""
    return host in ("127.0.0.1", "localhost", "::1")


def connect_error(exc: BaseException) -> AdapterError:
    """An ``AdapterError`` for a failed WebSocket upgrade or connection attempt (no secrets in it)."""
    if isinstance(exc, InvalidStatus):
        response = exc.response
        body = response.body.decode("utf-8", "replace") if response.body else ""
        try:
            message = json.loads(body)["error"]["message"]
        except (ValueError, KeyError, TypeError):
            message = redact(body)[:200] or response.reason_phrase
        return AdapterError.from_status(response.status_code, redact(f"upgrade rejected: {message}"),
                                        retry_after_seconds(response.headers.get("Retry-After")))
    if isinstance(exc, InvalidHandshake):
        return AdapterError(redact(f"handshake failed: {exc}"), code=ErrorCode.CONNECT, retryable=False)
    if isinstance(exc, (OSError, TimeoutError)):
        return AdapterError(redact(f"could not connect: {type(exc).__name__}: {exc}"), code=ErrorCode.CONNECT)
    return AdapterError(redact(f"could not connect: {type(exc).__name__}: {exc}"), code=ErrorCode.CONNECT,
                        retryable=False)


def disconnect_error(exc: ConnectionClosed) -> AdapterError:
    """The error for a connection that closed while the conversation was still going."""
    frame = exc.rcvd
    code = frame.code if frame else 1006
    reason = f" {frame.reason}" if frame and frame.reason else ""
    if code == 1008:  # policy violation: how servers refuse a session they would refuse again (often auth)
        return AdapterError(redact(f"connection closed by the server (code 1008{reason})"), code=ErrorCode.AUTH
                            if "auth" in reason.lower() or "key" in reason.lower() else ErrorCode.BAD_REQUEST,
                            retryable=False)
    return AdapterError(redact(f"connection closed mid-conversation (code {code}{reason})"),
                        code=ErrorCode.DISCONNECTED)


#: the most frames one connection keeps for the evidence bundle (later ones are counted, not kept)
MAX_KEPT_FRAMES = 20_000
#: longer strings inside a frame (base64 audio) are kept as their length only
MAX_KEPT_STRING = 512


def _clipped(value: Any) -> Any:
    if isinstance(value, str):
        return value if len(value) <= MAX_KEPT_STRING else f"<{len(value)} characters>"
    if isinstance(value, dict):
        return {k: _clipped(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clipped(v) for v in value]
    return value


class FrameLog:
    """The vendor's own frames on one connection, as sent and received (for ``raw-endpoint-events.json``): JSON
    text frames parsed, long strings (base64 audio) and binary frames kept as their size. Redacted when written."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self.dropped = 0

    def add(self, direction: str, frame: str | bytes | dict[str, Any]) -> None:
        if len(self.rows) >= MAX_KEPT_FRAMES:
            self.dropped += 1
            return
        row: dict[str, Any] = {"t": time.monotonic(), "direction": direction}
        if isinstance(frame, bytes | bytearray | memoryview):
            row["binary_bytes"] = len(frame)
        elif isinstance(frame, dict):
            row["frame"] = _clipped(frame)
        else:
            try:
                row["frame"] = _clipped(json.loads(frame))
            except ValueError:
                row["text"] = _clipped(frame)
        self.rows.append(row)


class WebsocketTransport:
    """A plain ``websockets`` client connection; every frame is also kept in ``frames`` (``FrameLog``)."""

    def __init__(self, connection: ClientConnection):
        self.connection = connection
        self.frames = FrameLog()

    @classmethod
    async def open(cls, url: str, headers: dict[str, str] | None = None,
                   open_timeout: float = 10.0) -> WebsocketTransport:
        try:
            connection = await connect(url, additional_headers=headers or {}, max_size=None, compression=None,
                                       open_timeout=open_timeout, proxy=None if is_loopback(url) else True,
                                       ping_interval=None, close_timeout=CLOSE_TIMEOUT_S)
        except Exception as exc:
            raise connect_error(exc) from None
        return cls(connection)

    async def send(self, event: dict[str, Any] | bytes) -> None:
        await self.connection.send(event if isinstance(event, bytes) else json.dumps(event))
        self.frames.add("sent", event)

    async def recv(self) -> str | bytes:
        frame = await self.connection.recv()
        self.frames.add("received", frame)
        return frame

    async def close(self, graceful: bool = True) -> None:
        """Close handshake after a finished conversation; after a failure, drop the TCP connection at once."""
        if graceful:
            await self.connection.close()
        else:
            self.connection.transport.abort()
