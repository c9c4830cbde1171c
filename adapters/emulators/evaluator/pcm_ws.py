"""Emulator of a raw-PCM voice endpoint: a frame-driven agent with its own energy VAD, one socket per conversation.

JSON ``start`` first (else an ``error`` and close 1002): language, sample rates, knowledge passages, history,
declared tools. Then the caller's audio streams in as binary PCM16 at ``input_sample_rate``; the kit
``ServerVad`` decides from it when the caller speaks (``speech_started``) and when they stopped
(``speech_stopped``, after ``vad.endpointing_silence_ms`` of silence). ``vad.response_delay_ms`` later the first
audio chunk of the answer goes out — the utterance the engine queued for this conversation is the transcript
(sent back as a final user ``transcript``), the answer comes from the injected answerer. The answer is paced
by the kit speaker: partial agent ``transcript`` messages beside binary PCM16 at ``output_sample_rate``, then
a final agent transcript and the ``end`` marker with the routing labels (``end_marker: false`` leaves the end
to the client's quiet-gap / silence detection; ``trailing_silence_ms`` appends silent audio first).

Barge-in: caller speech detected while the agent talks — or a ``cancel`` message — stops the speech within
``vad.barge_in_reaction_ms``; the ``end`` marker then says ``status: interrupted`` with ``played_ms``. A JSON
``text`` message is a text turn (answered at once, on the latency profile); a client ``end`` message closes
the caller's current speech segment without waiting for the silence.

Faults, per response through the one picker: ``error_event`` / ``rate_limit`` = an ``error`` message
(``server_error`` / ``rate_limit_exceeded`` with ``retry_after_s``), ``malformed`` = a truncated JSON message,
``disconnect`` = the TCP connection aborted after the first audio frame, ``stall`` = silence for ``stall_s``.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from websockets.asyncio.server import ServerConnection

from adapters._kit.intent_tool import INTENT_TOOL_NAME
from adapters.emulators._kit.answerer import Answerer
from adapters.emulators._kit.control import ControlPlane, Conversation
from adapters.emulators._kit.running import EmulatorSettings, sleep_until
from adapters.emulators._kit.speaker import SAMPLE_RATE, speak
from adapters.emulators._kit.vad import ServerVad
from adapters.emulators.evaluator.common import (
    ConversationState,
    Disconnected,
    EmulatorContext,
    EvaluatorEmulator,
    after,
    drop_after_first,
    start_websocket_emulator,
    starting_now,
)
from adapters.generic import wire
from bench.protocol.audio import resample as resample_pcm16


class PcmEmulatorOptions(BaseModel):
    """This emulator's own keys of ``options.emulator``."""

    model_config = ConfigDict(extra="forbid")

    max_audio_ms: int | None = Field(default=None, ge=0, description="cap on the spoken answer's audio length")
    end_marker: bool = Field(default=True, description="send the end message after each response")
    trailing_silence_ms: int = Field(default=0, ge=0, description="silent audio after each answer")


class PcmConnection:
    """One client socket: VAD over the incoming audio, one response at a time, listening while speaking."""

    def __init__(self, context: EmulatorContext, options: PcmEmulatorOptions, ws: ServerConnection,
                 conversation: Conversation):
        self.context = context
        self.options = options
        self.ws = ws
        self.conversation = conversation
        self.start: wire.PcmStart | None = None
        self.state: ConversationState | None = None
        self.vad: ServerVad | None = None
        self.responder: asyncio.Task[Any] | None = None
        self.barge_in = asyncio.Event()

    @property
    def responding(self) -> bool:
        return self.responder is not None and not self.responder.done()

    async def run(self) -> None:
        try:
            async for message in self.ws:
                if not await self.on_message(message):
                    return
        finally:
            if self.responder is not None:
                self.responder.cancel()

    async def on_message(self, message: str | bytes) -> bool:
        if isinstance(message, bytes):
            if self.vad is None:
                return await self.error("protocol_error", "binary audio before start", close=True)
            self.context.log.record(self.conversation, "binary_audio")
            for event in self.vad.push(message):
                if event == "speech_started":
                    await self.on_speech_started()
                else:
                    await self.on_speech_stopped()
            return True
        try:
            data = json.loads(message)
            kind = data.get("type")
        except (ValueError, AttributeError):
            await self.error("invalid_json", "control message is not a JSON object")
            return True
        if self.start is None:
            return await self.on_start(data, kind)
        self.context.log.record(self.conversation, str(kind))
        if kind == "text":
            try:
                text = wire.PcmText.model_validate(data).text
            except ValidationError as exc:
                await self.error("invalid_text", exc.errors()[0]["msg"])
                return True
            self.queue_response(text, audio_turn=False, origin=time.monotonic())
        elif kind == "end" and self.vad is not None and self.vad.state.speaking:
            self.vad.state.speaking, self.vad.state.speech_ms = False, 0.0
            await self.on_speech_stopped()
        elif kind == "cancel":
            self.barge_in.set()
        return True

    async def on_start(self, data: dict[str, Any], kind: Any) -> bool:
        if kind != "start":
            return await self.error("protocol_error", f"expected start first, got {kind!r}", close=True)
        try:
            start = wire.PcmStart.model_validate(data)
        except ValidationError as exc:
            return await self.error("protocol_error", f"invalid start: {exc.errors()[0]['msg']}", close=True)
        self.context.log.record(self.conversation, "start")
        self.context.log.setup[self.conversation.conversation_id] = data
        self.start = start
        self.vad = ServerVad(self.context.settings.vad, sample_rate=start.input_sample_rate)
        self.state = ConversationState(self.context, self.conversation, language=start.language,
                                       knowledge=start.knowledge, history=start.history, tools=start.tools)
        return True

    async def on_speech_started(self) -> None:
        await self.send({"type": "speech_started"})
        if self.responding:
            self.barge_in.set()  # the caller talks over the agent

    async def on_speech_stopped(self) -> None:
        heard = time.monotonic()
        await self.send({"type": "speech_stopped"})
        queued = self.conversation.utterances
        utterance = queued.popleft() if queued else ""
        delay = self.context.settings.vad.response_delay_ms / 1000.0
        self.queue_response(utterance, audio_turn=True, origin=heard + delay)

    def queue_response(self, utterance: str, *, audio_turn: bool, origin: float) -> None:
        self.barge_in = asyncio.Event()
        self.responder = asyncio.ensure_future(self.respond(utterance, audio_turn, origin, self.barge_in,
                                                            self.responder))

    async def respond(self, utterance: str, audio_turn: bool, origin: float, barge_in: asyncio.Event,
                      previous: asyncio.Task[Any] | None) -> None:
        await after(previous)
        state, start = self.state, self.start
        assert state is not None and start is not None
        key, fault = state.next_response()
        if audio_turn:
            await self.send({"type": "transcript", "role": "user", "text": utterance, "final": True})
            await sleep_until(origin)
        if fault == "stall":
            await asyncio.sleep(self.context.settings.faults.stall_s)
            return
        if fault in ("error_event", "rate_limit", "malformed"):
            await asyncio.sleep(0.0 if audio_turn else state.first_token_s(key))
            await self.send_fault(fault)
            return
        answer = state.answer(utterance)
        if state.routes_intents:
            await self.send({"type": "tool_call", "call_id": f"call_{key.response}", "name": INTENT_TOOL_NAME,
                             "arguments": {"intent": answer.conversational_intent,
                                           "target_language": answer.target_language}})
        plan = state.speech_plan(answer.text, key, max_audio_ms=self.options.max_audio_ms)
        if audio_turn:
            plan = starting_now(plan)  # the first audio goes out response_delay_ms after the speech stopped
        begin = max(origin, time.monotonic()) if audio_turn else origin
        state.mark_scheduled(key, begin, plan)
        rate = start.output_sample_rate

        async def send_text(token: str) -> None:
            await self.send({"type": "transcript", "role": "agent", "text": token, "final": False})

        async def send_audio(chunk: bytes) -> None:
            await self.ws.send(resample_pcm16(chunk, SAMPLE_RATE, rate))

        sender = drop_after_first(send_audio, self.ws.transport.abort) if fault == "disconnect" else send_audio
        try:
            result = await speak(plan, send_text=send_text, send_audio=sender, stamps=self.context.stamps,
                                 stamp_key=state.stamp_key(key), barge_in=barge_in,
                                 reaction_ms=self.context.settings.vad.barge_in_reaction_ms, start=begin)
        except Disconnected:
            return
        spoken = result.sent_text.strip() if result.interrupted else answer.text
        state.remember(utterance, spoken)
        await self.trailing_silence(rate)
        await self.send({"type": "transcript", "role": "agent", "text": spoken, "final": True})
        if self.options.end_marker:
            await self.send({"type": "end", "status": "interrupted" if result.interrupted else "completed",
                             "played_ms": result.played_ms, "conversational_intent": answer.conversational_intent,
                             "target_language": answer.target_language,
                             "retrieved_context": answer.retrieved_context})

    async def trailing_silence(self, rate: int) -> None:
        latency = self.context.settings.latency
        chunk_ms = latency.audio_chunk_ms
        silence = bytes(int(rate * chunk_ms / 1000) * 2)
        for _ in range(self.options.trailing_silence_ms // chunk_ms):
            await self.ws.send(silence)
            await asyncio.sleep(chunk_ms * latency.audio_pacing / 1000)

    async def send_fault(self, fault: str) -> None:
        if fault == "error_event":
            await self.error("server_error", "emulated server error")
        elif fault == "rate_limit":
            await self.send({"type": "error", "code": "rate_limit_exceeded", "message": "rate limited (emulated)",
                             "retry_after_s": self.context.settings.faults.retry_after_s})
        else:
            await self.ws.send('{"type": "transcript", "text": ')

    async def send(self, message: dict[str, Any]) -> None:
        await self.ws.send(json.dumps(message))

    async def error(self, code: str, message: str, *, close: bool = False) -> bool:
        await self.send({"type": "error", "code": code, "message": message})
        if close:
            await self.ws.close(1002, "protocol error")
        return not close


async def start(settings: EmulatorSettings, *, control: ControlPlane, answerer: Answerer,
                options: dict[str, Any]) -> EvaluatorEmulator:
    """Start the raw-PCM endpoint emulator on ``settings.host:settings.port`` (port 0 = ephemeral)."""
    return await start_websocket_emulator(settings, control, answerer, options, PcmEmulatorOptions, PcmConnection)
