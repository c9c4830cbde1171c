"""Loopback emulator of Retell's side of a custom-LLM agent: REST API, web-call event stream, LLM-socket
client.

What it plays:
- the REST API as retell-sdk 6.x calls it (``Retell(base_url=<this>)``): ``POST /create-agent``,
  ``POST /create-chat-agent``, ``GET /get-agent/{id}``, ``POST /v3/create-web-call``, ``GET
  /v2/get-call/{id}``, ``POST /create-chat``, ``POST /create-chat-completion``, ``GET /get-chat/{id}``,
  ``PATCH /end-chat/{id}``;
- Retell's client of the custom-LLM WebSocket: it connects to ``{llm_websocket_url}/{call_id}``, reads
  ``config`` and the begin ``response``, sends ``call_details`` (if asked), ``ping_pong`` every 2 s (if
  ``auto_reconnect``), ``update_only`` and ``response_required`` with the transcript containing the caller's
  utterance, and reads the streamed ``response`` chunks (a newer response_id supersedes older ones);
- the web-call frontend stream, on ``/audio-websocket/{call_id}`` (the path of Retell's documented audio
  websocket): JSON data-channel events ``update`` {transcript, turntaking}, ``metadata``,
  ``agent_start_talking``, ``agent_stop_talking``, and the agent's audio as binary PCM16 frames. The emulator
  has no speech recogniser, so the caller's words arrive as the bench-only ``bench_user_text`` event (for
  audio turns: before the PCM, whose end an energy endpointer finds). Text reaches the frontend as ``update``
  events as soon as each response chunk arrives; emulated audio starts ``first_audio_extra_ms`` after the
  first chunk and follows the text.

Afterwards ``GET /v2/get-call/{id}`` returns the call with ``latency`` (e2e, llm, llm_websocket_network_rtt,
tts — ms, {p50,p90,p95,p99,min,max,num,values}) and ``call_cost`` (CENTS) computed from what happened; these
figures describe the emulator's configured profile, not Retell. Faults are chosen per call (key: the call
metadata's ``conversation_id``): ``rate_limit`` → 429 + Retry-After on call/chat creation; ``error_event`` →
the call socket closes with 1011 (chat: HTTP 500); ``malformed`` → a non-JSON text frame (chat: a non-JSON
body); ``stall`` → silence; ``disconnect`` → the TCP connection drops after the first audio frame (chat:
mid-request).
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import WSMsgType, web
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from adapters.emulators.common import (
    EmulatorSettings,
    FaultPlan,
    RunningEmulator,
    SendStamps,
    chunk_audio,
    pcm16_silence_tone,
    sleep_until,
    speech_duration_ms,
)
from adapters.emulators.deepgram_agent import Endpointer
from adapters.retell import wire

PING_INTERVAL_S = 2.0


def _now_ms() -> int:
    return int(time.time() * 1000)


def decide_fault(plan: FaultPlan, attempts: dict[str, int], key: str) -> str | None:
    """The fault for this attempt of turn ``key`` (seeded; retries re-draw unless ``first_attempt_only``)."""
    attempt = attempts.get(key, 0) + 1
    attempts[key] = attempt
    if plan.first_attempt_only:
        return plan.pick(key) if attempt == 1 else None
    return plan.pick(f"{key}#{attempt}")


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
    return web.json_response(
        {"status": "error", "message": message, "error_message": message}, status=status, headers=headers
    )


class _Agent:
    def __init__(self, agent_id: str, kind: str, llm_websocket_url: str, body: dict[str, Any]):
        self.agent_id = agent_id
        self.kind = kind
        self.llm_websocket_url = llm_websocket_url.rstrip("/")
        self.body = body
        self.created_ms = _now_ms()

    def public(self) -> dict[str, Any]:
        engine = {"type": "custom-llm", "llm_websocket_url": self.llm_websocket_url}
        data = {k: v for k, v in self.body.items() if k not in ("response_engine",)}
        data.update(
            {
                "agent_id": self.agent_id,
                "response_engine": engine,
                "version": 0,
                "is_published": False,
                "last_modification_timestamp": self.created_ms,
            }
        )
        if self.kind == "voice":
            data.setdefault("voice_id", "11labs-Adrian")
        return data


class LlmLink:
    """Retell's side of one custom-LLM WebSocket."""

    def __init__(self, url: str, call_id: str):
        self.url = f"{url}/{call_id}"
        self.ws: ClientConnection | None = None
        self.config: asyncio.Future[wire.LlmConfig] = asyncio.get_running_loop().create_future()
        self.queues: dict[int, asyncio.Queue[wire.Wire | None]] = {}
        self.current_id = 0
        self.rtt_ms: list[float] = []
        self._pings: dict[int, float] = {}
        self.closed = asyncio.Event()
        self.corrupt: str | None = None
        self._tasks: list[asyncio.Task[None]] = []

    async def open(self, timeout: float) -> None:
        self.ws = await connect(self.url, open_timeout=timeout, max_size=None, close_timeout=2)
        self._tasks.append(asyncio.create_task(self._read()))

    async def send(self, message: wire.Wire) -> None:
        if self.ws is None:
            raise ConnectionError("the LLM websocket is not open")
        await self.ws.send(message.to_json())

    def start_pings(self) -> None:
        self._tasks.append(asyncio.create_task(self._ping_loop()))

    async def _ping_loop(self) -> None:
        with contextlib.suppress(ConnectionClosed, ConnectionError):
            while not self.closed.is_set():
                stamp = _now_ms()
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
                elif isinstance(
                    message,
                    wire.ToolCallInvocationResponse
                    | wire.ToolCallResultResponse
                    | wire.MetadataResponse
                    | wire.AgentInterruptResponse,
                ):
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

    async def request_response(self, transcript: list[wire.Utterance]) -> tuple[int, asyncio.Queue[Any]]:
        self.current_id += 1
        queue: asyncio.Queue[wire.Wire | None] = asyncio.Queue()
        self.queues[self.current_id] = queue
        if self.closed.is_set():
            queue.put_nowait(None)
        else:
            await self.send(wire.ResponseRequiredRequest(response_id=self.current_id, transcript=transcript))
        return self.current_id, queue

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        if self.ws is not None:
            with contextlib.suppress(Exception):
                await self.ws.close()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


class _Call:
    """A web call or a chat, with what the REST API reports about it."""

    def __init__(
        self, call_id: str, agent: _Agent, kind: str, body: dict[str, Any], key: str, fault: str | None
    ):
        self.call_id = call_id
        self.agent = agent
        self.kind = kind  # "web_call" | "chat"
        self.metadata = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
        self.variables = body.get("retell_llm_dynamic_variables") or {}
        self.key = key
        self.fault = fault
        self.status = "registered" if kind == "web_call" else "ongoing"
        self.access_token = secrets.token_urlsafe(24)
        self.created_ms = _now_ms()
        self.start_ms: int | None = None if kind == "web_call" else self.created_ms
        self.end_ms: int | None = None
        self.started_mono: float | None = None if kind == "web_call" else time.monotonic()
        self.ended_mono: float | None = None
        self.transcript: list[wire.Utterance] = []
        self.tool_events: list[dict[str, Any]] = []
        self.latency: dict[str, list[float]] = {"e2e": [], "llm": [], "tts": []}
        self.disconnection_reason: str | None = None
        self.link: LlmLink | None = None
        self.completions = 0

    def transcript_text(self) -> str:
        return "\n".join(f"{'Agent' if u.role == 'agent' else 'User'}: {u.content}" for u in self.transcript)

    def duration_s(self) -> float:
        if self.started_mono is None:
            return 0.0
        end = self.ended_mono if self.ended_mono is not None else time.monotonic()
        return max(0.0, end - self.started_mono)


class RetellEmulator:
    def __init__(
        self,
        settings: EmulatorSettings,
        llm_websocket_url: str | None = None,
        cents_per_minute: float = 7.0,
        chat_cents_per_completion: float = 0.2,
        llm_timeout_s: float = 60.0,
        sample_rate: int = 24000,
        endpoint_ms: int = 500,
    ):
        self.settings = settings
        self.default_llm_url = llm_websocket_url
        self.cents_per_minute = cents_per_minute
        self.chat_cents_per_completion = chat_cents_per_completion
        self.llm_timeout_s = llm_timeout_s
        self.sample_rate = sample_rate
        self.endpoint_ms = endpoint_ms
        self.stamps = SendStamps()
        self.agents: dict[str, _Agent] = {}
        self.calls: dict[str, _Call] = {}
        self._attempts: dict[str, int] = {}
        self._sockets: set[web.WebSocketResponse] = set()

    # ------------------------------------------------------------------ app

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._auth])
        routes = [
            web.post("/create-agent", self.create_agent),
            web.post("/create-chat-agent", self.create_chat_agent),
            web.get("/get-agent/{agent_id}", self.get_agent),
            web.get("/get-chat-agent/{agent_id}", self.get_agent),
            web.post("/v3/create-web-call", self.create_web_call),
            web.post("/v2/create-web-call", self.create_web_call),
            web.get("/v2/get-call/{call_id}", self.get_call),
            web.post("/create-chat", self.create_chat),
            web.post("/create-chat-completion", self.chat_completion),
            web.get("/get-chat/{chat_id}", self.get_chat),
            web.patch("/end-chat/{chat_id}", self.end_chat),
            web.get(wire.AUDIO_WEBSOCKET_PATH + "/{call_id}", self.audio_websocket),
        ]
        app.add_routes(routes)
        return app

    @web.middleware
    async def _auth(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        if not request.path.startswith(wire.AUDIO_WEBSOCKET_PATH):
            auth = request.headers.get("Authorization", "")
            if not auth.startswith("Bearer ") or len(auth) <= len("Bearer "):
                return _error(401, "missing or malformed Authorization header (Bearer <api key>)")
        return await handler(request)

    async def _json(self, request: web.Request) -> dict[str, Any]:
        try:
            body = await request.json()
        except ValueError:
            raise web.HTTPBadRequest(
                text='{"error_message": "body is not JSON"}', content_type="application/json"
            ) from None
        if not isinstance(body, dict):
            raise web.HTTPBadRequest(
                text='{"error_message": "body is not an object"}', content_type="application/json"
            )
        return body

    # ------------------------------------------------------------------ agents

    async def _create(self, request: web.Request, kind: str) -> web.Response:
        body = await self._json(request)
        engine = body.get("response_engine") or {}
        if engine.get("type") != "custom-llm" or not engine.get("llm_websocket_url"):
            return _error(400, "the emulator supports response_engine {type: custom-llm, llm_websocket_url}")
        agent = _Agent(f"agent_{uuid.uuid4().hex[:24]}", kind, engine["llm_websocket_url"], body)
        self.agents[agent.agent_id] = agent
        return web.json_response(agent.public(), status=201)

    async def create_agent(self, request: web.Request) -> web.Response:
        return await self._create(request, "voice")

    async def create_chat_agent(self, request: web.Request) -> web.Response:
        return await self._create(request, "chat")

    async def get_agent(self, request: web.Request) -> web.Response:
        agent = self._agent(request.match_info["agent_id"])
        return web.json_response(agent.public()) if agent else _error(404, "agent not found")

    def _agent(self, agent_id: Any) -> _Agent | None:
        if not isinstance(agent_id, str) or not agent_id:
            return None
        agent = self.agents.get(agent_id)
        if agent is None and self.default_llm_url:
            agent = _Agent(agent_id, "any", self.default_llm_url, {})
            self.agents[agent_id] = agent
        return agent

    def _new_call(self, body: dict[str, Any], kind: str) -> _Call | web.Response:
        agent = self._agent(body.get("agent_id"))
        if agent is None:
            return _error(404, f"agent {body.get('agent_id')!r} not found")
        call_id = ("call_" if kind == "web_call" else "chat_") + uuid.uuid4().hex[:26]
        metadata = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
        key = str(metadata.get("conversation_id") or call_id)
        fault = decide_fault(self.settings.faults, self._attempts, key)
        if fault == "rate_limit":
            retry_after = f"{self.settings.faults.retry_after_s:g}"
            return _error(429, "emulated rate limit", headers={"Retry-After": retry_after})
        call = _Call(call_id, agent, kind, body, key, fault)
        self.calls[call_id] = call
        return call

    # ------------------------------------------------------------------ web calls

    async def create_web_call(self, request: web.Request) -> web.Response:
        call = self._new_call(await self._json(request), "web_call")
        if isinstance(call, web.Response):
            return call
        data = self.call_object(call)
        data.update({"expires_at": call.created_ms + 30_000, "ice_servers": [], "transport": "gateway"})
        return web.json_response(data, status=201)

    async def get_call(self, request: web.Request) -> web.Response:
        call = self.calls.get(request.match_info["call_id"])
        if call is None or call.kind != "web_call":
            return _error(404, "call not found")
        return web.json_response(self.call_object(call))

    def call_object(self, call: _Call) -> dict[str, Any]:
        """The call as ``GET /v2/get-call`` shows it (retell-sdk ``WebCallResponse`` shape)."""
        data: dict[str, Any] = {
            "call_id": call.call_id,
            "call_type": "web_call",
            "agent_id": call.agent.agent_id,
            "agent_version": 0,
            "call_status": call.status,
            "access_token": call.access_token,
            "metadata": call.metadata,
            "retell_llm_dynamic_variables": call.variables,
            "data_storage_setting": "everything",
            "opt_in_signed_url": False,
        }
        if call.start_ms is not None:
            data["start_timestamp"] = call.start_ms
        if call.status in ("ended", "error"):
            data.update(self._ended_fields(call))
        return data

    def _ended_fields(self, call: _Call) -> dict[str, Any]:
        duration = call.duration_s()
        unit = self.cents_per_minute / 60.0
        cost = round(duration * unit, 4)
        latency = {
            name: wire.LatencyStats.of(values).model_dump(exclude_none=True)
            for name, values in call.latency.items()
            if values
        }
        if call.link is not None and call.link.rtt_ms:
            latency["llm_websocket_network_rtt"] = wire.LatencyStats.of(call.link.rtt_ms).model_dump(
                exclude_none=True
            )
        transcript = [{"role": u.role, "content": u.content, "words": []} for u in call.transcript]
        return {
            "end_timestamp": call.end_ms,
            "duration_ms": int(duration * 1000),
            "disconnection_reason": call.disconnection_reason or "user_hangup",
            "transcript": call.transcript_text(),
            "transcript_object": transcript,
            "transcript_with_tool_calls": transcript[:1] + call.tool_events + transcript[1:],
            "latency": latency,
            "call_cost": {
                "combined_cost": cost,
                "total_duration_seconds": round(duration, 3),
                "total_duration_unit_price": round(unit, 6),
                "product_costs": [
                    {"product": "retell_platform_emulated", "unit_price": round(unit, 6), "cost": cost}
                ],
            },
        }

    async def audio_websocket(self, request: web.Request) -> web.StreamResponse:
        call = self.calls.get(request.match_info["call_id"])
        if call is None or call.kind != "web_call":
            return _error(404, "call not found")
        if call.status != "registered":
            return _error(409, f"call is {call.status}")
        ws = web.WebSocketResponse(autoping=True, max_msg_size=0, compress=False)
        await ws.prepare(request)
        self._sockets.add(ws)
        try:
            await _VoiceCall(self, call, ws, request.transport).run()
        finally:
            self._sockets.discard(ws)
        return ws

    # ------------------------------------------------------------------ chats

    async def create_chat(self, request: web.Request) -> web.Response:
        call = self._new_call(await self._json(request), "chat")
        if isinstance(call, web.Response):
            return call
        try:
            await self._open_link(call)
        except (OSError, TimeoutError, ConnectionClosed, InvalidHandshake) as exc:
            call.status = "error"
            return _error(502, f"cannot open the LLM websocket: {type(exc).__name__}")
        return web.json_response(self.chat_object(call), status=201)

    async def _open_link(self, call: _Call) -> LlmLink:
        link = LlmLink(call.agent.llm_websocket_url, call.call_id)
        call.link = link
        await link.open(timeout=10)
        with contextlib.suppress(TimeoutError):
            config = await asyncio.wait_for(asyncio.shield(link.config), 5.0)
            if config.call_details:
                await link.send(wire.CallDetailsRequest(call=self.call_details(call)))
            if config.auto_reconnect:
                link.start_pings()
        return link

    def call_details(self, call: _Call) -> dict[str, Any]:
        return {
            "call_id": call.call_id,
            "call_type": call.kind,
            "agent_id": call.agent.agent_id,
            "call_status": call.status,
            "metadata": call.metadata,
            "retell_llm_dynamic_variables": call.variables,
        }

    async def chat_completion(self, request: web.Request) -> web.StreamResponse:
        body = await self._json(request)
        call = self.calls.get(str(body.get("chat_id")))
        if call is None or call.kind != "chat":
            return _error(404, "chat not found")
        if call.status != "ongoing" or call.link is None:
            return _error(409, f"chat is {call.status}")
        call.completions += 1
        fault = call.fault if call.completions == 1 else None
        if fault == "error_event":
            return _error(500, "emulated internal error")
        if fault == "stall":
            await asyncio.sleep(self.settings.faults.stall_s)
        if fault == "disconnect" and request.transport is not None:
            request.transport.abort()
            return web.Response(status=500)
        call.transcript.append(wire.Utterance(role="user", content=str(body.get("content", ""))))
        messages, end_call = await self._chat_turn(call)
        if fault == "malformed":
            return web.Response(text="{this is not json", content_type="application/json")
        if end_call:
            await self._end(call, "agent_hangup")
        return web.json_response({"messages": messages})

    async def _chat_turn(self, call: _Call) -> tuple[list[dict[str, Any]], bool]:
        assert call.link is not None
        _, queue = await call.link.request_response(list(call.transcript))
        messages: list[dict[str, Any]] = []
        parts: list[str] = []
        end_call = False
        while True:
            try:
                item = await asyncio.wait_for(queue.get(), self.llm_timeout_s)
            except TimeoutError:
                break
            if item is None:
                break
            if isinstance(item, wire.ToolCallInvocationResponse | wire.ToolCallResultResponse):
                event = item.model_dump(exclude_none=True)
                event["role"] = event.pop("response_type")
                event["message_id"] = uuid.uuid4().hex[:12]
                event["created_timestamp"] = _now_ms()
                messages.append(event)
                call.tool_events.append(event)
            elif isinstance(item, wire.ResponseResponse):
                parts.append(item.content)
                if item.content_complete:
                    end_call = bool(item.end_call)
                    break
        content = "".join(parts)
        call.transcript.append(wire.Utterance(role="agent", content=content))
        messages.append(
            {
                "role": "agent",
                "content": content,
                "message_id": uuid.uuid4().hex[:12],
                "created_timestamp": _now_ms(),
            }
        )
        return messages, end_call

    async def _end(self, call: _Call, reason: str) -> None:
        if call.status in ("ended", "error"):
            return
        call.status = "ended"
        call.disconnection_reason = reason
        call.end_ms = _now_ms()
        call.ended_mono = time.monotonic()
        if call.link is not None:
            await call.link.close()

    async def end_chat(self, request: web.Request) -> web.Response:
        call = self.calls.get(request.match_info["chat_id"])
        if call is None or call.kind != "chat":
            return _error(404, "chat not found")
        await self._end(call, "user_hangup")
        return web.Response(status=204)

    async def get_chat(self, request: web.Request) -> web.Response:
        call = self.calls.get(request.match_info["chat_id"])
        if call is None or call.kind != "chat":
            return _error(404, "chat not found")
        return web.json_response(self.chat_object(call))

    def chat_object(self, call: _Call) -> dict[str, Any]:
        """The chat as ``GET /get-chat`` shows it (retell-sdk ``ChatResponse`` shape; costs in CENTS)."""
        messages = [{"role": u.role, "content": u.content} for u in call.transcript]
        data: dict[str, Any] = {
            "chat_id": call.call_id,
            "agent_id": call.agent.agent_id,
            "chat_status": call.status,
            "chat_type": "api_chat",
            "metadata": call.metadata,
            "retell_llm_dynamic_variables": call.variables,
            "start_timestamp": call.start_ms,
            "transcript": call.transcript_text(),
            "message_with_tool_calls": messages[:1] + call.tool_events + messages[1:],
        }
        if call.status in ("ended", "error"):
            cost = round(call.completions * self.chat_cents_per_completion, 4)
            data.update(
                {
                    "end_timestamp": call.end_ms,
                    "chat_cost": {
                        "combined_cost": cost,
                        "product_costs": [
                            {
                                "product": "retell_chat_emulated",
                                "cost": cost,
                                "unit_price": self.chat_cents_per_completion,
                            }
                        ],
                    },
                }
            )
        return data

    async def close(self) -> None:
        for ws in list(self._sockets):
            with contextlib.suppress(Exception):
                await ws.close()
        for call in self.calls.values():
            if call.link is not None:
                await call.link.close()


class _VoiceCall:
    """One web call: the frontend socket on one side, the custom-LLM socket on the other."""

    def __init__(
        self,
        emulator: RetellEmulator,
        call: _Call,
        ws: web.WebSocketResponse,
        transport: asyncio.BaseTransport | None,
    ):
        self.emulator = emulator
        self.call = call
        self.ws = ws
        self.transport = transport
        self.latency = emulator.settings.latency
        self.stall_s = emulator.settings.faults.stall_s
        self.turn_task: asyncio.Task[None] | None = None
        self.turns = 0
        self.hint = ""
        self.endpointer: Endpointer | None = None
        self.speaker: _Speaker | None = None

    async def send_event(self, event: wire.Wire) -> None:
        await self.ws.send_str(event.to_json())

    def transcript(self) -> list[wire.Utterance]:
        return [u.model_copy() for u in self.call.transcript]

    async def run(self) -> None:
        call = self.call
        call.status = "ongoing"
        call.start_ms = _now_ms()
        call.started_mono = time.monotonic()
        try:
            await self.emulator._open_link(call)
        except (OSError, TimeoutError, ConnectionClosed, InvalidHandshake):
            call.status = "error"
            call.disconnection_reason = "error_llm_websocket_open"
            call.end_ms = _now_ms()
            call.ended_mono = time.monotonic()
            await self.ws.close(code=1011, message=b"error_llm_websocket_open")
            return
        try:
            async for message in self.ws:
                if message.type == WSMsgType.TEXT:
                    self._on_text(message.data)
                elif message.type == WSMsgType.BINARY:
                    self._on_audio(message.data)
        finally:
            if self.turn_task is not None and not self.turn_task.done():
                self.turn_task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await self.turn_task
            if call.status == "ongoing":
                await self.emulator._end(call, call.disconnection_reason or "user_hangup")
            elif call.link is not None:
                await call.link.close()

    def _on_text(self, data: str) -> None:
        try:
            event = wire.parse_frontend_request(data)
        except wire.MalformedFrame:
            return
        if isinstance(event, wire.BenchUserText):
            if event.final:
                self._start_turn(event.content)
            else:
                self.hint = event.content

    def _on_audio(self, pcm: bytes) -> None:
        if self.endpointer is None:
            self.endpointer = Endpointer(self.emulator.sample_rate, endpoint_ms=self.emulator.endpoint_ms)
        if "endpoint" in self.endpointer.feed(pcm):
            self._start_turn(self.hint)

    def _start_turn(self, text: str) -> None:
        if self.turn_task is not None and not self.turn_task.done():
            return  # the agent is already answering; a barge-in is not modelled
        self.turns += 1
        self.turn_task = asyncio.create_task(self._guarded_turn(text, time.monotonic()))

    async def _guarded_turn(self, text: str, t_user: float) -> None:
        """A caller who hangs up mid-answer is normal: the writes that fail then end the turn quietly."""
        try:
            with contextlib.suppress(ConnectionError, ConnectionClosed):
                await self._agent_turn(text, t_user)
        finally:
            if self.speaker is not None:
                self.speaker.stop()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await self.speaker.task

    async def _fail(self, code: int, reason: str) -> None:
        self.call.status = "error"
        self.call.disconnection_reason = reason
        self.call.end_ms = _now_ms()
        self.call.ended_mono = time.monotonic()
        await self.ws.close(code=code, message=reason.encode())

    async def _agent_turn(self, text: str, t_user: float) -> None:
        call, link = self.call, self.call.link
        assert link is not None
        call.transcript.append(wire.Utterance(role="user", content=text))
        await self.send_event(wire.UpdateEvent(transcript=self.transcript(), turntaking="agent_turn"))
        await link.send(wire.UpdateOnlyRequest(transcript=self.transcript(), turntaking="agent_turn"))
        rng = self.latency.rng(f"{call.key}:{self.turns}")
        await sleep_until(t_user + self.latency.sample_first_token_ms(rng) / 1000.0)
        _, queue = await link.request_response(self.transcript())
        t_request = time.monotonic()
        agent: wire.Utterance | None = None
        speaker: _Speaker | None = None
        self.speaker = None
        end_call = False
        while True:
            try:
                item = await asyncio.wait_for(queue.get(), self.emulator.llm_timeout_s)
            except TimeoutError:
                item = None
            if item is None:
                if speaker is not None:
                    speaker.stop()
                await self._fail(1011, "error_llm_websocket_lost_connection")
                return
            if isinstance(item, wire.MetadataResponse):
                await self.send_event(wire.MetadataEvent(metadata=item.metadata))
            elif isinstance(item, wire.ToolCallInvocationResponse | wire.ToolCallResultResponse):
                event = item.model_dump(exclude_none=True)
                event["role"] = event.pop("response_type")
                call.tool_events.append(event)
            elif isinstance(item, wire.ResponseResponse):
                if item.content:
                    now = time.monotonic()
                    if agent is None:
                        agent = wire.Utterance(role="agent", content="")
                        call.transcript.append(agent)
                        call.latency["llm"].append((now - t_request) * 1000.0)
                        speaker = self.speaker = _Speaker(
                            self, t_user, now, now + self.latency.first_audio_extra_ms / 1000.0
                        )
                    agent.content += item.content
                    await self.send_event(wire.UpdateEvent(transcript=self.transcript()))
                    if self.emulator.stamps.first_text.get(call.key) is None:
                        self.emulator.stamps.mark(self.emulator.stamps.first_text, call.key)
                    if call.fault in ("malformed", "stall", "error_event") and self.turns == 1:
                        assert speaker is not None
                        speaker.stop()
                        await self._inject(call.fault)
                        return
                    assert speaker is not None
                    speaker.feed(item.content)
                if item.content_complete:
                    end_call = bool(item.end_call)
                    break
        if speaker is not None:
            speaker.finish()
            if not await speaker.done():
                return  # the connection was dropped on purpose
            await self.send_event(wire.AgentStopTalkingEvent())
        await self.send_event(wire.UpdateEvent(transcript=self.transcript(), turntaking="user_turn"))
        if end_call:
            call.disconnection_reason = "agent_hangup"
            await self.emulator._end(call, "agent_hangup")
            await self.ws.close(code=1000, message=b"agent_hangup")

    async def _inject(self, fault: str) -> None:
        if fault == "malformed":
            await self.ws.send_str("{this is not json")
        elif fault == "stall":
            await asyncio.sleep(self.stall_s)
        else:
            await self._fail(1011, "error_retell")


class _Speaker:
    """Emulated TTS of one response: starts at ``start_at``, then follows the text as it streams in."""

    def __init__(self, voice: _VoiceCall, t_user: float, first_chunk_at: float, start_at: float):
        self.voice = voice
        self.t_user = t_user
        self.first_chunk_at = first_chunk_at
        self.start_at = start_at
        self.queue: asyncio.Queue[str | None] = asyncio.Queue()
        self.aborted = False
        self.task = asyncio.create_task(self._run())
        key = voice.call.key
        voice.emulator.stamps.scheduled_first_audio.setdefault(key, start_at)

    def feed(self, text: str) -> None:
        self.queue.put_nowait(text)

    def finish(self) -> None:
        self.queue.put_nowait(None)

    def stop(self) -> None:
        self.task.cancel()

    async def done(self) -> bool:
        with contextlib.suppress(asyncio.CancelledError):
            await self.task
        return not self.aborted and not self.task.cancelled()

    async def _run(self) -> None:
        with contextlib.suppress(ConnectionError):
            await self._speak()

    async def _speak(self) -> None:
        voice, latency = self.voice, self.voice.latency
        rate = voice.emulator.sample_rate
        await sleep_until(self.start_at)
        cursor: float | None = None
        first = True
        while (piece := await self.queue.get()) is not None:
            for chunk in chunk_audio(
                pcm16_silence_tone(speech_duration_ms(piece), rate), latency.audio_chunk_ms, rate
            ):
                if first:
                    await voice.send_event(wire.AgentStartTalkingEvent())
                if latency.audio_pacing > 0:
                    cursor = time.monotonic() if cursor is None else cursor
                    await sleep_until(cursor)
                    cursor += latency.audio_chunk_ms / 1000.0 / latency.audio_pacing
                await voice.ws.send_bytes(chunk)
                if first:
                    first = False
                    now = time.monotonic()
                    stamps = voice.emulator.stamps
                    stamps.mark(stamps.first_audio, voice.call.key)
                    voice.call.latency["e2e"].append((now - self.t_user) * 1000.0)
                    voice.call.latency["tts"].append((now - self.first_chunk_at) * 1000.0)
                    if voice.call.fault == "disconnect" and voice.turns == 1:
                        self.aborted = True
                        voice.call.disconnection_reason = "error_retell"
                        if voice.transport is not None:
                            voice.transport.abort()  # type: ignore[attr-defined]
                        return


async def start(settings: EmulatorSettings, **options: Any) -> RunningEmulator:
    """Start the emulator; ``options``: ``llm_websocket_url`` (used for agents it was not told about),
    ``cents_per_minute`` (voice), ``chat_cents_per_completion``, ``sample_rate``, ``endpoint_ms``."""
    emulator = RetellEmulator(
        settings,
        llm_websocket_url=options.get("llm_websocket_url"),
        cents_per_minute=float(options.get("cents_per_minute", 7.0)),
        chat_cents_per_completion=float(options.get("chat_cents_per_completion", 0.2)),
        llm_timeout_s=float(options.get("llm_timeout_s", 60.0)),
        sample_rate=int(options.get("sample_rate", 24000)),
        endpoint_ms=int(options.get("endpoint_ms", 500)),
    )
    runner = web.AppRunner(emulator.app(), access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    site = web.TCPSite(runner, settings.host, settings.port)
    await site.start()
    port = runner.addresses[0][1]

    async def close() -> None:
        await emulator.close()
        await runner.cleanup()

    running = RunningEmulator(f"http://{settings.host}:{port}", emulator.stamps, close)
    running.emulator = emulator  # type: ignore[attr-defined]
    return running
