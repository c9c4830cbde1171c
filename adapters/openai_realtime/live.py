"""The live path: the official ``openai`` SDK's realtime connection as a transport (imported lazily).

``AsyncOpenAI()`` reads ``OPENAI_API_KEY`` from the environment; ``base_url`` (a ``ws://`` or ``wss://`` base
such as ``ws://127.0.0.1:PORT/v1``) becomes the SDK's ``websocket_base_url`` — that is how tests point the
live code path at the emulator. ``beta=True`` uses ``client.beta.realtime`` (header ``OpenAI-Beta:
realtime=v1``). Frames are read raw (``recv_bytes``) so the GA/beta parsing in ``wire`` is the same as in
emulated mode. The SDK's automatic reconnection stays off (no ``on_reconnecting``): a dropped socket fails the
turn and the runner decides on a retry.
"""

from __future__ import annotations

from typing import Any

from adapters.openai_realtime.transport import CLOSE_TIMEOUT_S, connect_error


class SdkTransport:
    """Wraps an ``AsyncRealtimeConnection`` (GA) or the beta connection."""

    def __init__(self, client: Any, connection: Any):
        self.client = client
        self.connection = connection

    @classmethod
    async def open(cls, *, model: str, beta: bool, base_url: str | None) -> SdkTransport:
        from openai import AsyncOpenAI

        client = AsyncOpenAI(websocket_base_url=base_url) if base_url else AsyncOpenAI()
        realtime = client.beta.realtime if beta else client.realtime
        try:
            options: Any = {"close_timeout": CLOSE_TIMEOUT_S}  # passed through to websockets' connect
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
        try:
            await self.connection.close()
        finally:
            await self.client.close()
