"""Emulator of the generic HTTP endpoint: stateless requests that carry the conversation.

Any ``POST`` / ``PUT`` path under the conversation prefix takes an ``HttpTurnRequest`` — ``text``, ``language``,
``session_id``, the ``history`` so far and the knowledge ``context`` — and answers from the injected answerer
with exactly that history and context (the emulator keeps no conversation state; the request is the state).
The answer is one ``HttpTurnResponse`` JSON document (sent when the spoken answer would have been ready on the
latency profile), or with ``stream: true`` a ``text/event-stream`` paced by the kit speaker: ``event: delta``
per token, ``event: audio`` chunks when ``audio: true``, then ``event: done`` with the whole document.
Connections are counted per TCP connection, so a client that pools its connections shows one.

Faults, per response through the one picker: ``rate_limit`` = 429 with ``Retry-After``, ``error_event`` = 500,
``malformed`` = a truncated JSON body (or event), ``disconnect`` = the connection aborted before the answer (or
after the first streamed delta), ``stall`` = nothing for ``faults.stall_s``.
"""

from __future__ import annotations

import asyncio
import base64
import time
from typing import Any

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from adapters.emulators._kit.answerer import Answerer, BrainAnswer
from adapters.emulators._kit.control import ControlPlane, split_conversation_path
from adapters.emulators._kit.faults import FaultKey
from adapters.emulators._kit.running import EmulatorSettings, sleep_until
from adapters.emulators._kit.speaker import speak
from adapters.emulators.evaluator.common import (
    ConversationState,
    Disconnected,
    EmulatorContext,
    EvaluatorEmulator,
    drop_after_first,
)
from adapters.generic import wire


class HttpEmulatorOptions(BaseModel):
    """This emulator's own keys of ``options.emulator``."""

    model_config = ConfigDict(extra="forbid")

    max_audio_ms: int | None = Field(default=None, ge=0, description="cap on the spoken answer's audio length")


def _error(status: int, error_type: str, code: str, message: str,
           headers: dict[str, str] | None = None) -> web.Response:
    body = wire.HttpError(error=wire.ErrorBody(type=error_type, code=code, message=message))
    return web.json_response(body.model_dump(exclude_none=True), status=status, headers=headers)


def _seconds(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


class HttpEndpoint:
    """The request handler; one instance per running emulator."""

    def __init__(self, context: EmulatorContext, options: HttpEmulatorOptions):
        self.context = context
        self.options = options
        #: (conversation token, client address) pairs already counted as a connection
        self._connections: set[tuple[str | None, Any]] = set()

    def conversation_of(self, request: web.Request) -> Any:
        token, _ = split_conversation_path(request.path_qs)
        peer = request.transport.get_extra_info("peername") if request.transport is not None else None
        if (token, peer) in self._connections:
            return self.context.control.get(token)
        self._connections.add((token, peer))
        conversation, _ = self.context.control.connect(request.path_qs)
        return conversation

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if request.method not in ("POST", "PUT"):
            return _error(405, "invalid_request_error", "method_not_allowed", request.method)
        conversation = self.conversation_of(request)
        try:
            turn = wire.HttpTurnRequest.model_validate_json(await request.read())
        except ValidationError as exc:
            return _error(400, "invalid_request_error", "invalid_body", exc.errors()[0]["msg"])
        self.context.log.record(conversation, "request")
        self.context.log.setup[conversation.conversation_id] = turn.model_dump(mode="json")
        state = ConversationState(self.context, conversation, language=turn.language, knowledge=turn.context,
                                  history=turn.history, tools=[])
        key, fault = state.next_response()
        faults = self.context.settings.faults
        if fault == "rate_limit":
            return _error(429, "rate_limit_error", "rate_limit_exceeded", "rate limited (emulated)",
                          {"Retry-After": _seconds(faults.retry_after_s)})
        if fault == "stall":
            await asyncio.sleep(faults.stall_s)
            return _error(504, "server_error", "stalled", "stalled (emulated)")
        if fault == "error_event":
            await asyncio.sleep(state.first_token_s(key))
            return _error(500, "server_error", "server_error", "emulated server error")
        if turn.stream:
            return await self.stream(request, state, key, turn, fault)
        return await self.document(request, state, key, turn, fault)

    def payload(self, turn: wire.HttpTurnRequest, text: str, answer: BrainAnswer,
                audio: bytes | None) -> wire.HttpTurnResponse:
        return wire.HttpTurnResponse(
            answer=text, conversational_intent=answer.conversational_intent, target_language=answer.target_language,
            retrieved_context=answer.retrieved_context, session_id=turn.session_id,
            audio_b64=base64.b64encode(audio).decode("ascii") if audio else None,
        )

    async def document(self, request: web.Request, state: ConversationState, key: FaultKey,
                       turn: wire.HttpTurnRequest, fault: str | None) -> web.StreamResponse:
        """The whole answer at once, when its last token would have been spoken."""
        answer = state.answer(turn.text)
        plan = state.speech_plan(answer.text, key, max_audio_ms=self.options.max_audio_ms, audio=turn.audio)
        origin = time.monotonic()
        ready = origin + (plan.tokens[-1][0] if plan.tokens else 0.0)
        await sleep_until(ready)
        if fault == "disconnect":
            assert request.transport is not None
            request.transport.abort()
            return web.Response(status=200)  # never written: the connection is gone
        if fault == "malformed":
            return web.Response(status=200, body=b'{"answer": ', content_type="application/json")
        audio = b"".join(chunk for _, chunk in plan.audio) if turn.audio else None
        document = self.payload(turn, answer.text, answer, audio)
        response = web.Response(body=document.model_dump_json(exclude_none=True), content_type="application/json")
        stamp = state.stamp_key(key)
        self.context.stamps.scheduled_first_audio[stamp] = ready
        await response.prepare(request)
        await response.write_eof()
        self.context.stamps.mark(self.context.stamps.first_text, stamp)
        if audio:
            self.context.stamps.mark(self.context.stamps.first_audio, stamp)
        return response

    async def stream(self, request: web.Request, state: ConversationState, key: FaultKey,
                     turn: wire.HttpTurnRequest, fault: str | None) -> web.StreamResponse:
        """The answer as server-sent events paced by the speaker."""
        answer = state.answer(turn.text)
        plan = state.speech_plan(answer.text, key, max_audio_ms=self.options.max_audio_ms, audio=turn.audio)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await response.prepare(request)

        async def event(name: str, data: BaseModel) -> None:
            await response.write(f"event: {name}\ndata: {data.model_dump_json(exclude_none=True)}\n\n".encode())

        async def send_text(token: str) -> None:
            if fault == "malformed":
                await response.write(b'event: delta\ndata: {"delta": \n\n')
                raise Disconnected
            await event("delta", wire.HttpDelta(delta=token))

        async def send_audio(chunk: bytes) -> None:
            await event("audio", wire.HttpAudioChunk(audio_b64=base64.b64encode(chunk).decode("ascii")))

        if fault == "disconnect":
            assert request.transport is not None
            send_text = drop_after_first(send_text, request.transport.abort)  # type: ignore[assignment]
        origin = time.monotonic()
        state.mark_scheduled(key, origin, plan)
        try:
            result = await speak(plan, send_text=send_text, send_audio=send_audio if turn.audio else None,
                                 stamps=self.context.stamps, stamp_key=state.stamp_key(key), start=origin)
        except Disconnected:
            return response
        except ConnectionResetError:  # the client stopped reading (interrupted)
            return response
        await event("done", self.payload(turn, result.sent_text if result.interrupted else answer.text, answer, None))
        await response.write_eof()
        return response


async def start(settings: EmulatorSettings, *, control: ControlPlane, answerer: Answerer,
                options: dict[str, Any]) -> EvaluatorEmulator:
    """Start the HTTP endpoint emulator on ``settings.host:settings.port`` (port 0 = ephemeral)."""
    own = HttpEmulatorOptions.model_validate(options)
    context = EmulatorContext(settings=settings, control=control, answerer=answerer)
    endpoint = HttpEndpoint(context, own)
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", endpoint.handle)
    runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=0.5,
                           handler_cancellation=True)
    await runner.setup()
    site = web.TCPSite(runner, settings.host, settings.port)
    await site.start()
    host, port = runner.addresses[0][:2]
    return EvaluatorEmulator({"http": f"http://{host}:{port}"}, context, runner.cleanup)
