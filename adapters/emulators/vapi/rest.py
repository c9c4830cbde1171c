"""The emulator's REST API for calls, and the routing of every path under ``/c/<token>`` (and bare).

``POST /call`` with an inline ``assistant`` and ``transport: {provider: "vapi.websocket", audioFormat}`` → a
``Call`` (``type: "vapi.websocketCall"``, ``status: "queued"``, ``transport.websocketCallUrl`` under the same
conversation prefix); ``GET /call/{id}`` and ``GET /call`` read calls back in Vapi's ``Call`` shape. Every
request needs ``Authorization: Bearer <the key the emulator handed out>``. Creating a call is not yet a
connection: the conversation's connection is the call's transport socket.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Awaitable, Callable

from aiohttp import web
from pydantic import ValidationError

from adapters.emulators.vapi.chat import create_chat, get_chat
from adapters.emulators.vapi.records import call_json
from adapters.emulators.vapi.state import CallState, EmulatorState, api_error
from adapters.emulators.vapi.transport import transport_handler
from adapters.vapi.wire import AudioFormat, CreateCallRequest

Handler = Callable[[EmulatorState, web.Request], Awaitable[web.StreamResponse]]


async def create_call(state: EmulatorState, request: web.Request) -> web.StreamResponse:
    if (denied := state.unauthorized(request)) is not None:
        return denied
    try:
        body = CreateCallRequest.model_validate(await request.json())
    except (ValidationError, json.JSONDecodeError) as exc:
        return api_error(400, f"invalid call request: {exc.__class__.__name__}", "Bad Request")
    if body.assistant is None:
        return api_error(400, "the emulator needs an inline `assistant` (it stores no assistants)", "Bad Request")
    transport = body.transport
    if transport is None or transport.provider != "vapi.websocket":
        return api_error(400, "the emulator supports transport.provider 'vapi.websocket' only", "Bad Request")
    conversation = state.conversation(request)
    call_id = str(uuid.uuid4())
    ws_base = state.url.replace("http://", "ws://", 1)
    call = CallState(
        id=call_id, conversation=conversation, request=body, assistant=body.assistant,
        sample_rate=(transport.audio_format or AudioFormat()).sample_rate,
        websocket_url=f"{ws_base}/c/{conversation.token}/{call_id}/transport",
    )
    state.calls[call_id] = call
    return web.json_response(call_json(call, state.options.org_id), status=201)


async def get_call(state: EmulatorState, request: web.Request) -> web.StreamResponse:
    if (denied := state.unauthorized(request)) is not None:
        return denied
    call = state.calls.get(request.match_info["call_id"])
    if call is None:
        return api_error(404, "Couldn't Get Call. Call Not Found.", "Not Found")
    return web.json_response(call_json(call, state.options.org_id))


async def list_calls(state: EmulatorState, request: web.Request) -> web.StreamResponse:
    if (denied := state.unauthorized(request)) is not None:
        return denied
    return web.json_response([call_json(c, state.options.org_id) for c in state.calls.values()])


ROUTES: list[tuple[str, str, Handler]] = [
    ("POST", "/call", create_call),
    ("GET", "/call", list_calls),
    ("GET", "/call/{call_id}", get_call),
    ("GET", "/{call_id}/transport", transport_handler),
    ("POST", "/chat", create_chat),
    ("GET", "/chat/{chat_id}", get_chat),
]


def build_app(state: EmulatorState) -> web.Application:
    """Every route twice: under the engine's ``/c/<token>`` conversation prefix and bare (an SDK client pointed
    at the base URL)."""
    app = web.Application()
    for method, path, handler in ROUTES:
        async def bound(request: web.Request, handler: Handler = handler) -> web.StreamResponse:
            return await handler(state, request)

        app.router.add_route(method, "/c/{token}" + path, bound)
        app.router.add_route(method, path, bound)
    return app
