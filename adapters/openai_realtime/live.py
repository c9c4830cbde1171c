"""The one client connection: the official ``openai`` SDK's realtime socket, live and emulated alike.

``AsyncOpenAI(api_key=…, websocket_base_url=…).realtime.connect(model=…)`` (``beta=True``:
``client.beta.realtime``, which adds ``OpenAI-Beta: realtime=v1``). The SDK builds the socket URL as
``websocket_base_url + "/realtime?model=…"``, so an emulator endpoint ``ws://127.0.0.1:PORT/c/<token>`` is
given as ``…/c/<token>/v1`` and the emulator sees ``/c/<token>/v1/realtime?model=…``; live, without a base URL,
the SDK's own ``wss://api.openai.com/v1`` is used. Frames are read raw (``recv_bytes``) and parsed by ``wire``
for both interfaces. The SDK's automatic reconnection stays off (no ``on_reconnecting``): a dropped socket
ends the session and the engine decides on a retry.
"""

from __future__ import annotations

from typing import Any

from adapters._kit.ws import CLOSE_TIMEOUT_S, connect_error, is_loopback


def websocket_base_url(url: str, *, emulated: bool) -> str:
    """The SDK's ``websocket_base_url`` for an endpoint URL: an emulator's conversation URL gets the ``/v1``
    the real API has; a live base URL is used as given."""
    url = url.rstrip("/")
    if emulated and not url.endswith("/v1"):
        url += "/v1"
    return url


class SdkTransport:
    """An ``AsyncRealtimeConnection`` (GA) or the beta connection, as a ``Transport``."""

    def __init__(self, client: Any, connection: Any):
        self.client = client
        self.connection = connection

    @classmethod
    async def open(cls, *, api_key: str, model: str, beta: bool, base_url: str | None,
                   open_timeout_s: float) -> SdkTransport:
        """Connect; a refused upgrade or an unreachable server raises ``AdapterError`` (CONNECT, AUTH,
        RATE_LIMITED with the server's Retry-After, …) with no secret in its message."""
        from openai import AsyncOpenAI

        client = AsyncOpenAI(api_key=api_key, websocket_base_url=base_url, max_retries=0)
        realtime = client.beta.realtime if beta else client.realtime
        # passed through to websockets' connect(); loopback sockets skip proxies and keepalive pings
        options: Any = {"close_timeout": CLOSE_TIMEOUT_S, "open_timeout": open_timeout_s}
        if base_url and is_loopback(base_url):
            options.update(proxy=None, ping_interval=None)
        try:
            connection = await realtime.connect(model=model, websocket_connection_options=options).enter()
        except Exception as exc:
            await client.close()
            raise connect_error(exc) from None
        return cls(client, connection)

    async def send(self, event: dict[str, Any]) -> None:
        await self.connection.send(event)

    async def recv(self) -> str | bytes:
        return await self.connection.recv_bytes()

    async def close(self, graceful: bool = True) -> None:
        """Close the socket (a close handshake bounded by ``CLOSE_TIMEOUT_S`` either way: the SDK offers no
        abort) and the client."""
        try:
            await self.connection.close(code=1000 if graceful else 1011)
        finally:
            await self.client.close()
