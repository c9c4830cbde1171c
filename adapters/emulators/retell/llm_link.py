"""Retell's side of one custom-LLM WebSocket: it connects to ``{llm_websocket_url}/{call_id}``, reads ``config``
and the begin ``response``, sends ``call_details`` (when asked) and ``ping_pong`` every 2 s (with
``auto_reconnect``), then one ``response_required`` per caller turn with the whole transcript, reading the
streamed ``response`` chunks (with ``tool_call_invocation`` / ``tool_call_result`` / ``metadata`` in between)
until ``content_complete``. A newer ``response_id`` supersedes older ones.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from adapters.retell import wire

PING_INTERVAL_S = 2.0
CONFIG_TIMEOUT_S = 5.0


def now_ms() -> int:
    return int(time.time() * 1000)


class LlmLink:
    """One custom-LLM socket; ``request_response`` returns a queue of that response's messages (``None`` = the
    socket closed)."""

    def __init__(self, url: str, call_id: str):
        self.url = f"{url.rstrip('/')}/{call_id}"
        self.ws: ClientConnection | None = None
        self.config: asyncio.Future[wire.LlmConfig] = asyncio.get_running_loop().create_future()
        self.queues: dict[int, asyncio.Queue[wire.Wire | None]] = {}
        self.current_id = 0
        self.rtt_ms: list[float] = []
        self.corrupt: str | None = None
        self.closed = asyncio.Event()
        self._pings: dict[int, float] = {}
        self._tasks: list[asyncio.Task[None]] = []

    async def open(self, call_details: dict[str, Any], timeout: float = 10.0) -> None:
        """Connect, wait for the server's ``config`` and act on it."""
        self.ws = await connect(self.url, open_timeout=timeout, max_size=None, close_timeout=2, proxy=None)
        self._tasks.append(asyncio.create_task(self._read()))
        with contextlib.suppress(TimeoutError):
            config = await asyncio.wait_for(asyncio.shield(self.config), CONFIG_TIMEOUT_S)
            if config.call_details:
                await self.send(wire.CallDetailsRequest(call=call_details))
            if config.auto_reconnect:
                self._tasks.append(asyncio.create_task(self._ping_loop()))

    async def send(self, message: wire.Wire) -> None:
        if self.ws is None:
            raise ConnectionError("the LLM websocket is not open")
        await self.ws.send(message.to_json())

    async def request_response(self, transcript: list[wire.Utterance]) -> asyncio.Queue[wire.Wire | None]:
        self.current_id += 1
        queue: asyncio.Queue[wire.Wire | None] = asyncio.Queue()
        self.queues[self.current_id] = queue
        if self.closed.is_set():
            queue.put_nowait(None)
        else:
            await self.send(wire.ResponseRequiredRequest(response_id=self.current_id, transcript=transcript))
        return queue

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        if self.ws is not None:
            with contextlib.suppress(Exception):
                await self.ws.close()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def _ping_loop(self) -> None:
        with contextlib.suppress(ConnectionClosed, ConnectionError):
            while not self.closed.is_set():
                stamp = now_ms()
                while stamp in self._pings:
                    stamp += 1
                self._pings[stamp] = time.monotonic()
                await self.send(wire.PingPongRequest(timestamp=stamp))
                await asyncio.sleep(PING_INTERVAL_S)

    async def _read(self) -> None:
        assert self.ws is not None
        try:
            async for frame in self.ws:
                try:
                    message = wire.parse_llm_response(frame)
                except wire.MalformedFrame as exc:
                    self.corrupt = str(exc)
                    continue
                if isinstance(message, wire.ConfigResponse):
                    if not self.config.done():
                        self.config.set_result(message.config)
                elif isinstance(message, wire.PingPongResponse):
                    sent = self._pings.pop(message.timestamp, None)
                    if sent is not None:
                        self.rtt_ms.append((time.monotonic() - sent) * 1000.0)
                elif isinstance(message, wire.ResponseResponse):
                    queue = self.queues.get(message.response_id)
                    if queue is not None:
                        queue.put_nowait(message)
                else:  # tool calls, metadata, agent interrupts belong to the response being answered
                    queue = self.queues.get(self.current_id)
                    if queue is not None:
                        queue.put_nowait(message)
        except ConnectionClosed:
            pass
        finally:
            self.closed.set()
            if not self.config.done():
                self.config.set_result(wire.LlmConfig())
            for queue in self.queues.values():
                queue.put_nowait(None)
