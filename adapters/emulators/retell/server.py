"""The Retell emulator's REST API (as retell-sdk 6.2 calls it), per conversation under ``/c/<token>``.

Routes: ``POST /create-retell-llm``, ``GET /get-retell-llm/{id}``, ``POST /create-agent``, ``GET /get-agent/{id}``,
``POST /create-chat-agent``, ``GET /get-chat-agent/{id}``, ``POST /create-chat``, ``POST
/create-chat-completion``, ``GET /get-chat/{id}``, ``PATCH /update-chat/{id}``, ``PATCH /end-chat/{id}``, ``POST
/v3/create-web-call``, ``GET /v2/get-call/{id}``. Every request needs ``Authorization: Bearer <key>``.

``create-chat`` (and ``create-web-call``) is the conversation's connection (``control.connect``); a chat with a
custom-LLM agent opens Retell's LLM socket to it right away. Each ``create-chat-completion`` is one agent
response and draws its fault from the kit's picker: ``rate_limit`` → 429 with Retry-After, ``error_event`` → 500,
``malformed`` → a 200 whose body is not JSON, ``stall`` → no answer for ``faults.stall_s``, ``disconnect`` → the
TCP connection drops. The first text of each answer is stamped right after its write.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field

from adapters.emulators._kit.answerer import Answerer
from adapters.emulators._kit.control import ControlPlane, Conversation, split_conversation_path
from adapters.emulators._kit.running import EmulatorSettings, SendStamps
from adapters.emulators.retell.llm_link import LlmLink, now_ms
from adapters.emulators.retell.responder import LlmUnavailable, answer_as_retell_llm, answer_with_custom_llm
from adapters.emulators.retell.state import AgentRecord, ChatState, LlmRecord, WebCallState, new_id
from adapters.retell import wire

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class RetellEmulatorOptions(BaseModel):
    """The Retell emulator's own keys in ``options.emulator``."""

    model_config = ConfigDict(extra="forbid")

    chat_cents_per_completion: float = Field(default=0.2, ge=0, description="emulated chat price, cents")
    llm_timeout_s: float = Field(default=60.0, gt=0, description="how long Retell waits for the custom LLM")


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
    return web.json_response({"status": "error", "message": message}, status=status, headers=headers)


class RetellEmulator:
    def __init__(self, settings: EmulatorSettings, control: ControlPlane, answerer: Answerer,
                 options: RetellEmulatorOptions):
        self.settings = settings
        self.control = control
        self.answerer = answerer
        self.options = options
        self.stamps = SendStamps()
        self.llms: dict[str, LlmRecord] = {}
        self.agents: dict[str, AgentRecord] = {}
        self.chats: dict[str, ChatState] = {}
        self.web_calls: dict[str, WebCallState] = {}

    # -- app ----------------------------------------------------------------------------------------
    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._auth])
        routes: list[tuple[str, str, Handler]] = [
            ("POST", "/create-retell-llm", self.create_llm),
            ("GET", "/get-retell-llm/{item_id}", self.get_llm),
            ("POST", "/create-agent", self.create_voice_agent),
            ("GET", "/get-agent/{item_id}", self.get_agent),
            ("POST", "/create-chat-agent", self.create_chat_agent),
            ("GET", "/get-chat-agent/{item_id}", self.get_agent),
            ("POST", "/create-chat", self.create_chat),
            ("POST", "/create-chat-completion", self.chat_completion),
            ("GET", "/get-chat/{item_id}", self.get_chat),
            ("PATCH", "/update-chat/{item_id}", self.update_chat),
            ("PATCH", "/end-chat/{item_id}", self.end_chat),
            ("POST", "/v3/create-web-call", self.create_web_call),
            ("GET", "/v2/get-call/{item_id}", self.get_call),
        ]
        for method, path, handler in routes:
            app.router.add_route(method, path, handler)
            app.router.add_route(method, "/c/{token}" + path, handler)
        return app

    @web.middleware
    async def _auth(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        auth = request.headers.get("Authorization", "")
        if not auth.startswith("Bearer ") or len(auth) <= len("Bearer "):
            return _error(401, "missing or malformed Authorization header (Bearer <api key>)")
        return await handler(request)

    async def _json(self, request: web.Request) -> dict[str, Any]:
        try:
            body = await request.json()
        except ValueError:
            raise web.HTTPBadRequest(text='{"status": "error", "message": "body is not JSON"}',
                                     content_type="application/json") from None
        if not isinstance(body, dict):
            raise web.HTTPBadRequest(text='{"status": "error", "message": "body is not an object"}',
                                     content_type="application/json")
        return body

    def _conversation(self, request: web.Request, *, connect: bool) -> Conversation:
        """The conversation a request belongs to; ``connect`` counts a new vendor session (chat or call)."""
        if connect:
            return self.control.connect(request.path_qs)[0]
        token, _ = split_conversation_path(request.path_qs)
        return self.control.get(token)

    # -- LLMs and agents ----------------------------------------------------------------------------
    async def create_llm(self, request: web.Request) -> web.Response:
        llm = LlmRecord(new_id("llm"), await self._json(request))
        self.llms[llm.llm_id] = llm
        return web.json_response(llm.public(), status=201)

    async def get_llm(self, request: web.Request) -> web.Response:
        llm = self.llms.get(request.match_info["item_id"])
        return web.json_response(llm.public()) if llm else _error(404, "llm not found")

    async def _create_agent(self, request: web.Request, kind: str) -> web.Response:
        body = await self._json(request)
        engine = body.get("response_engine") or {}
        kind_of_engine = engine.get("type") if isinstance(engine, dict) else None
        if kind_of_engine == "custom-llm" and not engine.get("llm_websocket_url"):
            return _error(400, "response_engine custom-llm needs llm_websocket_url")
        if kind_of_engine == "retell-llm" and engine.get("llm_id") not in self.llms:
            return _error(400, f"llm {engine.get('llm_id')!r} not found")
        if kind_of_engine not in ("custom-llm", "retell-llm"):
            return _error(400, "the emulator supports response engines custom-llm and retell-llm")
        agent = AgentRecord(new_id("agent"), kind, body)
        self.agents[agent.agent_id] = agent
        return web.json_response(agent.public(), status=201)

    async def create_voice_agent(self, request: web.Request) -> web.Response:
        return await self._create_agent(request, "voice")

    async def create_chat_agent(self, request: web.Request) -> web.Response:
        return await self._create_agent(request, "chat")

    async def get_agent(self, request: web.Request) -> web.Response:
        agent = self.agents.get(request.match_info["item_id"])
        return web.json_response(agent.public()) if agent else _error(404, "agent not found")

    # -- chats --------------------------------------------------------------------------------------
    async def create_chat(self, request: web.Request) -> web.Response:
        body = await self._json(request)
        agent = self.agents.get(str(body.get("agent_id")))
        if agent is None or agent.kind != "chat":
            return _error(404, f"chat agent {body.get('agent_id')!r} not found")
        conversation = self._conversation(request, connect=True)
        chat = ChatState(new_id("chat"), agent, conversation, _dict(body.get("metadata")),
                         _variables(body.get("retell_llm_dynamic_variables")))
        self.chats[chat.chat_id] = chat
        if agent.llm_websocket_url:
            chat.link = LlmLink(agent.llm_websocket_url, chat.chat_id)
            try:
                await chat.link.open(self._call_details(chat))
            except Exception as exc:  # refused, timed out, bad handshake
                chat.status = "error"
                return _error(502, f"cannot open the custom LLM websocket: {type(exc).__name__}")
        return web.json_response(chat.public(self.options.chat_cents_per_completion), status=201)

    def _call_details(self, chat: ChatState) -> dict[str, Any]:
        return {"call_id": chat.chat_id, "chat_id": chat.chat_id, "call_type": "chat",
                "agent_id": chat.agent.agent_id, "call_status": chat.status, "metadata": chat.metadata,
                "retell_llm_dynamic_variables": chat.variables}

    def _chat(self, chat_id: Any) -> ChatState | None:
        return self.chats.get(str(chat_id))

    async def chat_completion(self, request: web.Request) -> web.StreamResponse:
        body = await self._json(request)
        chat = self._chat(body.get("chat_id"))
        if chat is None:
            return _error(404, "chat not found")
        if chat.status != "ongoing":
            return _error(400, f"chat is {chat.status}")
        content = body.get("content")
        if not isinstance(content, str):
            return _error(400, "content must be a string")
        started = time.monotonic()
        key = chat.conversation.next_fault_key()
        stamp_key = f"{chat.conversation.conversation_id}:{key.response}"
        faults = self.settings.faults
        fault = faults.pick(key)
        if fault == "rate_limit":
            return _error(429, "emulated rate limit", headers={"Retry-After": f"{faults.retry_after_s:g}"})
        if fault == "error_event":
            return _error(500, "emulated internal error")
        if fault == "disconnect":
            if request.transport is not None:
                request.transport.abort()
            return web.Response(status=500)
        if fault == "stall":
            await asyncio.sleep(faults.stall_s)
        chat.completions += 1
        user = {"role": "user", "content": content, "message_id": new_id("msg"), "created_timestamp": now_ms()}
        chat.transcript.append(wire.Utterance(role="user", content=content))
        chat.messages.append(user)
        end_call = False
        try:
            if chat.link is not None:
                rng = self.settings.latency.rng(stamp_key)  # Retell's own turn-taking before it asks the LLM
                await asyncio.sleep(self.settings.latency.sample_first_token_ms(rng) / 1000.0)
                messages, end_call = await answer_with_custom_llm(chat, self.options.llm_timeout_s)
            else:
                messages = await answer_as_retell_llm(chat, self._llm_of(chat), self.answerer, content,
                                                      self.settings.latency, stamp_key, started)
        except LlmUnavailable as exc:
            chat.status = "error"
            return _error(500, f"error_llm_websocket: {exc}")
        chat.messages.extend(messages)
        if end_call:
            await self._end(chat)
        payload = "{this is not json" if fault == "malformed" else json.dumps({"messages": messages})
        response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
        await response.prepare(request)
        await response.write(payload.encode())
        self.stamps.mark(self.stamps.first_text, stamp_key)
        await response.write_eof()
        return response

    def _llm_of(self, chat: ChatState) -> LlmRecord | None:
        return self.llms.get(str(chat.agent.engine.get("llm_id")))

    async def get_chat(self, request: web.Request) -> web.Response:
        chat = self._chat(request.match_info["item_id"])
        if chat is None:
            return _error(404, "chat not found")
        return web.json_response(chat.public(self.options.chat_cents_per_completion))

    async def update_chat(self, request: web.Request) -> web.Response:
        chat = self._chat(request.match_info["item_id"])
        if chat is None:
            return _error(404, "chat not found")
        body = await self._json(request)
        overrides = body.get("override_dynamic_variables")
        if isinstance(overrides, dict):
            chat.variables.update(_variables(overrides))
        if isinstance(body.get("metadata"), dict):
            chat.metadata = body["metadata"]
        return web.json_response(chat.public(self.options.chat_cents_per_completion))

    async def end_chat(self, request: web.Request) -> web.Response:
        chat = self._chat(request.match_info["item_id"])
        if chat is None:
            return _error(404, "chat not found")
        if chat.status != "ongoing":
            return _error(400, f"chat is {chat.status}")
        await self._end(chat)
        return web.Response(status=204)

    async def _end(self, chat: ChatState) -> None:
        chat.status = "ended"
        chat.end_ms = now_ms()
        if chat.link is not None:
            await chat.link.close()

    # -- web calls ----------------------------------------------------------------------------------
    async def create_web_call(self, request: web.Request) -> web.Response:
        body = await self._json(request)
        agent = self.agents.get(str(body.get("agent_id")))
        if agent is None or agent.kind != "voice":
            return _error(404, f"agent {body.get('agent_id')!r} not found")
        call = WebCallState(new_id("call"), agent, self._conversation(request, connect=True),
                            _dict(body.get("metadata")), _variables(body.get("retell_llm_dynamic_variables")))
        self.web_calls[call.call_id] = call
        return web.json_response(call.created(), status=201)

    async def get_call(self, request: web.Request) -> web.Response:
        call = self.web_calls.get(request.match_info["item_id"])
        return web.json_response(call.public()) if call else _error(404, "call not found")

    async def close(self) -> None:
        for chat in self.chats.values():
            if chat.link is not None:
                with contextlib.suppress(Exception):
                    await chat.link.close()


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _variables(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}
