"""A loopback server that refuses every request and echoes what it was sent, as careless vendor APIs do.

Every request (any method, any path) is answered with an error that repeats the request: its headers, query and
body. The first path segment picks how:

* ``/e401/...`` and ``/e500/...`` — HTTP 401 / 500 with a JSON error body;
* ``/reject/...`` — a WebSocket upgrade refused with 401 and the same JSON body;
* ``/frame/...`` — a WebSocket accepted, then (after the client's first message, or half a second) one error
  frame echoing the request — alternately a JSON error event and a text frame that is not JSON — and a close
  whose reason carries the credential.

The credential the request carried (one of ``canaries``, wherever it was: a header, the query, the body) is
also laid out at offsets where code that cuts a text before redacting it (``[:80]``, ``[:120]``, ``[:200]``,
``[:300]`` of the raw body or of its ``message`` field) would keep a piece of it: each system (second path
segment) gets the layouts in turn, so eight requests of one system see them all.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import Counter
from dataclasses import dataclass, field

from aiohttp import WSMsgType, web

#: where code is known to cut texts; a canary starts ``_VISIBLE`` characters before each cut
CUTS = (80, 120, 200, 300)
_VISIBLE = 14


@dataclass
class Seen:
    """One request as the server received it."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: str
    first_message: str | None = None

    def text(self) -> str:
        return json.dumps([self.method, self.path, self.query, self.headers, self.body, self.first_message])


@dataclass
class EchoServer:
    canaries: list[str]
    host: str = "127.0.0.1"
    seen: list[Seen] = field(default_factory=list)
    _counts: Counter = field(default_factory=Counter)
    _runner: web.AppRunner | None = None
    port: int = 0

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://{self.host}:{self.port}"

    async def start(self) -> EchoServer:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # noqa: SLF001 - the ephemeral port
        return self

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    # ----------------------------------------------------------------------------------------------------------
    def _canary_in(self, seen: Seen) -> str:
        text = seen.text()
        return next((c for c in self.canaries if c in text), "(no credential was sent)")

    def _layout(self, seen: Seen) -> tuple[int, bool]:
        """(cut, cut the raw body rather than the message) for this request of this system."""
        parts = seen.path.strip("/").split("/")
        key = "/".join(parts[:2])
        index = self._counts[key]
        self._counts[key] += 1
        return CUTS[index % len(CUTS)], (index // len(CUTS)) % 2 == 0

    def error_document(self, seen: Seen, status: int) -> str:
        """A JSON error body in every vendor's shape at once, echoing the request, with the credential in it at
        the offsets of this request's layout."""
        canary = self._canary_in(seen)
        cut, raw = self._layout(seen)
        start = cut - _VISIBLE
        prefix = '{"message": "'
        lead = start - len(prefix) if raw else start
        intro = f"Incorrect API key provided: {canary}. "
        filler = intro + "." * (lead - len(intro)) if lead >= len(intro) else "." * max(lead, 0)
        message = f"{filler}{canary} is not valid (request echoed below)"
        echo = {"method": seen.method, "path": seen.path, "query": seen.query, "headers": seen.headers,
                "body": seen.body}
        rest = json.dumps({
            "error": {"message": message, "type": "invalid_request_error", "code": "invalid_api_key"},
            "detail": {"status": "invalid_api_key", "message": message},
            "err_code": "INVALID_AUTH", "err_msg": message, "error_message": message, "statusCode": status,
            "request": echo,
        })
        return prefix + message + '", ' + rest[1:]

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = (await request.read()).decode("utf-8", "replace")
        seen = Seen(method=request.method, path=request.path, query=request.query_string,
                    headers=dict(request.headers), body=body)
        self.seen.append(seen)
        mode = request.path.strip("/").split("/")[0]
        upgrade = request.headers.get("Upgrade", "").lower() == "websocket"
        if upgrade and mode == "frame":
            return await self._frame(request, seen)
        status = 500 if mode == "e500" else 401
        return web.Response(status=status, text=self.error_document(seen, status), content_type="application/json")

    async def _frame(self, request: web.Request, seen: Seen) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(max_msg_size=0, autoping=True)
        await ws.prepare(request)
        with contextlib.suppress(TimeoutError, Exception):
            async with asyncio.timeout(0.5):
                message = await ws.receive()
                if message.type in (WSMsgType.TEXT, WSMsgType.BINARY):
                    data = message.data
                    seen.first_message = data if isinstance(data, str) else f"<{len(data)} bytes>"
        canary = self._canary_in(seen)
        document = self.error_document(seen, 401)
        index = self._counts["frames"]
        self._counts["frames"] += 1
        with contextlib.suppress(Exception):
            if index % 2 == 0:
                event = json.loads(document)
                await ws.send_str(json.dumps({"type": "error", "event_id": "evt_1", **event,
                                              "description": event["message"]}))
            else:  # not JSON: parsers quote the start of such a frame in their error
                await ws.send_str("invalid api key: " + "." * (80 - _VISIBLE - 17) + canary + " " + document)
            reason = f"invalid api key {canary}".encode()[:123]
            await ws.close(code=1008 if index % 4 < 2 else 1011, message=reason)
        return ws
