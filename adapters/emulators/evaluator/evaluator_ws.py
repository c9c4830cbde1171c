"""Emulator of the evaluator WebSocket endpoint (seeds 000/001): one socket per conversation, stateful.

Strict order: ``evaluator.init`` first (else an ``error`` event and close 1002), once; it sets the session —
language, knowledge passages (the answerer's context), history (seeded), declared tools. Then any number of
turns on the same socket: binary PCM16 frames + ``input_audio_buffer.commit`` (the transcript is the
utterance the engine queued for this conversation, sent back as
``conversation.item.input_audio_transcription.completed``) or a ``conversation.item.create`` text item, then
``response.create``. The answer: ``response.created``, [``response.function_call_arguments.done`` for
``set_conversational_intent`` when declared and the brain routes intents], paced
``response.output_audio_transcript.delta`` / ``response.output_audio.delta`` from the kit speaker (GA names, or
beta names with ``event_names: beta``), ``response.output_audio.done``, ``…transcript.done``, ``response.done``
with usage and ``metadata`` (intent, target language, retrieved context). ``response.cancel`` stops the speech
within ``vad.barge_in_reaction_ms`` and ends the response with ``status: cancelled``.

Faults, per response through the one picker: ``error_event`` = an ``error`` event (``server_error``),
``rate_limit`` = an ``error`` event ``rate_limit_exceeded`` with ``retry_after_s``, ``malformed`` = a truncated
JSON frame, ``disconnect`` = the TCP connection aborted right after the first audio frame, ``stall`` = nothing
more for ``faults.stall_s``.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from websockets.asyncio.server import ServerConnection

from adapters._kit.intent_tool import INTENT_TOOL_NAME
from adapters.emulators._kit.answerer import Answerer
from adapters.emulators._kit.control import ControlPlane, Conversation
from adapters.emulators._kit.running import EmulatorSettings
from adapters.emulators._kit.speaker import speak
from adapters.emulators.evaluator.common import (
    ConversationState,
    Disconnected,
    EmulatorContext,
    EvaluatorEmulator,
    after,
    drop_after_first,
    start_websocket_emulator,
)
from adapters.generic import wire


class EvaluatorWsOptions(BaseModel):
    """This emulator's own keys of ``options.emulator``."""

    model_config = ConfigDict(extra="forbid")

    event_names: Literal["ga", "beta"] = "ga"
    max_audio_ms: int | None = Field(default=None, ge=0, description="cap on the spoken answer's audio length")


class EvaluatorConnection:
    """One client socket: the evaluator protocol, one response at a time, reading while speaking."""

    def __init__(self, context: EmulatorContext, options: EvaluatorWsOptions, ws: ServerConnection,
                 conversation: Conversation):
        self.context = context
        self.options = options
        self.ws = ws
        self.conversation = conversation
        self.state: ConversationState | None = None
        self.text: str | None = None
        self.utterance: str | None = None
        self.audio_bytes = 0
        self.responder: asyncio.Task[Any] | None = None
        self.barge_in = asyncio.Event()

    async def run(self) -> None:
        try:
            async for message in self.ws:
                if not await self.on_message(message):
                    return
        finally:
            if self.responder is not None:
                self.responder.cancel()

    async def on_message(self, message: str | bytes) -> bool:
        log = self.context.log
        if isinstance(message, bytes):
            if self.state is None:
                return await self.protocol_error("binary audio before evaluator.init")
            log.record(self.conversation, "binary_audio")
            self.audio_bytes += len(message)
            return True
        try:
            data = json.loads(message)
            kind = data.get("type")
        except (ValueError, AttributeError):
            await self.send_error("invalid_request_error", "invalid_json", "message is not a JSON object")
            return True
        if self.state is None:
            if kind != "evaluator.init":
                return await self.protocol_error(f"expected evaluator.init first, got {kind!r}")
            try:
                init = wire.EvaluatorInit.model_validate(data).request
            except ValidationError as exc:
                return await self.protocol_error(f"invalid evaluator.init: {exc.errors()[0]['msg']}")
            log.record(self.conversation, "evaluator.init")
            log.setup[self.conversation.conversation_id] = data["request"]
            self.state = ConversationState(self.context, self.conversation, language=init.language,
                                           knowledge=init.knowledge, history=init.history, tools=init.tools)
            return True
        log.record(self.conversation, str(kind))
        if kind == "conversation.item.create":
            try:
                item = wire.ConversationItemCreate.model_validate(data).item
            except ValidationError as exc:
                await self.send_error("invalid_request_error", "invalid_item", exc.errors()[0]["msg"])
                return True
            self.text = " ".join(part.text for part in item.content)
        elif kind == "input_audio_buffer.commit":
            queued = self.conversation.utterances
            self.utterance = queued.popleft() if queued else ""
            await self.send({"type": "conversation.item.input_audio_transcription.completed",
                             "item_id": f"item_{self.conversation.responses + 1}", "content_index": 0,
                             "transcript": self.utterance})
        elif kind == "response.create":
            await self.create_response()
        elif kind == "response.cancel":
            self.barge_in.set()
        elif kind == "evaluator.init":
            await self.send_error("invalid_request_error", "duplicate_init", "evaluator.init sent twice")
        return True

    async def create_response(self) -> None:
        audio_turn = self.text is None
        utterance = self.text if self.text is not None else self.utterance
        if utterance is None and self.audio_bytes == 0:
            await self.send_error("invalid_request_error", "empty_input", "no input to respond to")
            return
        self.barge_in = asyncio.Event()
        self.responder = asyncio.ensure_future(self.respond(utterance or "", audio_turn, self.audio_bytes,
                                                            self.barge_in, self.responder))
        self.text, self.utterance, self.audio_bytes = None, None, 0

    async def respond(self, utterance: str, audio_turn: bool, audio_bytes: int, barge_in: asyncio.Event,
                      previous: asyncio.Task[Any] | None) -> None:
        await after(previous)
        state = self.state
        assert state is not None
        key, fault = state.next_response()
        response_id = f"resp_{key.response}"
        await self.send({"type": "response.created", "response": {"id": response_id, "status": "in_progress"}})
        if fault == "stall":
            await asyncio.sleep(self.context.settings.faults.stall_s)
            return
        if fault in ("error_event", "rate_limit", "malformed"):
            await asyncio.sleep(state.first_token_s(key))
            await self.send_fault(fault)
            return
        answer = state.answer(utterance)
        if state.routes_intents:
            await asyncio.sleep(state.first_token_s(key))
            arguments = {"intent": answer.conversational_intent, "target_language": answer.target_language}
            await self.send({"type": "response.function_call_arguments.done", "response_id": response_id,
                             "call_id": f"call_{key.response}", "name": INTENT_TOOL_NAME,
                             "arguments": json.dumps(arguments)})
        text_type = self.name("response.output_audio_transcript.delta")
        audio_type = self.name("response.output_audio.delta")

        async def send_text(token: str) -> None:
            await self.send({"type": text_type, "response_id": response_id, "delta": token})

        async def send_audio(chunk: bytes) -> None:
            # audio frames are the hot path: the JSON is built by hand (base64 needs no escaping)
            b64 = base64.b64encode(chunk).decode("ascii")
            await self.ws.send(f'{{"type": "{audio_type}", "response_id": "{response_id}", "delta": "{b64}"}}')

        plan = state.speech_plan(answer.text, key, max_audio_ms=self.options.max_audio_ms)
        origin = time.monotonic()
        state.mark_scheduled(key, origin, plan)
        sender = drop_after_first(send_audio, self.ws.transport.abort) if fault == "disconnect" else send_audio
        try:
            result = await speak(plan, send_text=send_text, send_audio=sender, stamps=self.context.stamps,
                                 stamp_key=state.stamp_key(key), barge_in=barge_in,
                                 reaction_ms=self.context.settings.vad.barge_in_reaction_ms, start=origin)
        except Disconnected:
            return
        spoken = result.sent_text.strip() if result.interrupted else answer.text
        state.remember(utterance, spoken)
        if result.interrupted:
            await self.send({"type": "response.done", "response": {
                "id": response_id, "status": "cancelled",
                "status_details": {"type": "cancelled", "reason": "client_cancelled"}}})
            return
        await self.send({"type": self.name("response.output_audio.done"), "response_id": response_id})
        await self.send({"type": self.name("response.output_audio_transcript.done"), "response_id": response_id,
                         "transcript": answer.text})
        await self.send({"type": "response.done", "response": {
            "id": response_id, "status": "completed",
            "usage": _usage(utterance, answer.text, audio_turn, audio_bytes, result.played_ms),
            "metadata": {"conversational_intent": answer.conversational_intent,
                         "target_language": answer.target_language,
                         "retrieved_context": answer.retrieved_context}}})

    async def send_fault(self, fault: str) -> None:
        if fault == "error_event":
            await self.send_error("server_error", "server_error", "emulated server error")
        elif fault == "rate_limit":
            await self.send({"type": "error", "error": {
                "type": "rate_limit_error", "code": "rate_limit_exceeded", "message": "rate limited (emulated)",
                "retry_after_s": self.context.settings.faults.retry_after_s}})
        else:
            await self.ws.send('{"type": "response.output_audio.delta", "delta": ')

    def name(self, event_type: str) -> str:
        return wire.BETA_NAMES.get(event_type, event_type) if self.options.event_names == "beta" else event_type

    async def send(self, event: dict[str, Any]) -> None:
        await self.ws.send(json.dumps(event))

    async def send_error(self, error_type: str, code: str, message: str) -> None:
        await self.send({"type": "error", "error": {"type": error_type, "code": code, "message": message}})

    async def protocol_error(self, message: str) -> bool:
        await self.send_error("invalid_request_error", "protocol_error", message)
        await self.ws.close(1002, "protocol error")
        return False


def _usage(utterance: str, answer: str, audio_turn: bool, audio_bytes: int, played_ms: float) -> dict[str, Any]:
    """Token counts in the realtime shape (emulated: about 1.3 tokens a word, 10 audio tokens a second in,
    20 out)."""
    input_details = {
        "text_tokens": 0 if audio_turn else int(len(utterance.split()) * 1.3) + 1,
        "audio_tokens": int(audio_bytes / 48 / 100) if audio_turn else 0,
        "cached_tokens": 0,
    }
    output_details = {"text_tokens": int(len(answer.split()) * 1.3) + 1, "audio_tokens": int(played_ms / 50)}
    usage: dict[str, Any] = {
        "input_tokens": input_details["text_tokens"] + input_details["audio_tokens"],
        "output_tokens": sum(output_details.values()),
        "input_token_details": input_details,
        "output_token_details": output_details,
    }
    usage["total_tokens"] = usage["input_tokens"] + usage["output_tokens"]
    return usage


async def start(settings: EmulatorSettings, *, control: ControlPlane, answerer: Answerer,
                options: dict[str, Any]) -> EvaluatorEmulator:
    """Start the evaluator WebSocket emulator on ``settings.host:settings.port`` (port 0 = ephemeral)."""
    return await start_websocket_emulator(settings, control, answerer, options, EvaluatorWsOptions, EvaluatorConnection)
