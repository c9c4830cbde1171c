"""Emulator of a voice agent behind a bidirectional Twilio Media Stream (the agent's WebSocket server).

It accepts the stream as Twilio opens it: ``connected``, then ``start`` (μ-law 8 kHz mono, else the socket is closed
with 1003), then the caller's ``media``; ``dtmf``, ``mark`` answers and ``stop`` are read as well. The kit
``ServerVad`` decides from the decoded caller audio when the caller speaks and when they stopped; after
``vad.response_delay_ms`` the answer starts: the utterance the engine queued for the conversation is what the caller
said, the injected answerer gives the reply (language from ``start.customParameters.language``), the kit speaker
paces its audio (a tone as long as the reply would take to say; emulators have no TTS), sent as base64 μ-law
``media`` messages, followed by a ``mark`` (``response-<n>``) the agent learns from when its audio has played.

Turn-taking profile: caller speech while the agent talks — while it still sends audio, or until Twilio answers the
mark behind it (an agent whose TTS runs ahead of the line is still talking while Twilio plays its queue) — is a
barge-in; the agent stops within ``vad.barge_in_reaction_ms`` and then sends ``clear`` so Twilio drops what it still
has queued. A ``dtmf`` key is
answered like an utterance (``the caller pressed <key>``) when ``answer_dtmf`` is on (the default).

Faults, per response through the kit's one picker: ``error_event`` / ``rate_limit`` close the socket with 1011
(internal error) / 1013 (try again later), as a WebSocket server reports them; ``malformed`` sends a truncated JSON
message; ``disconnect`` aborts the TCP connection after the first audio message; ``stall`` keeps silent for
``faults.stall_s``.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from websockets.asyncio.server import ServerConnection

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
from adapters.phone.twilio_stream import wire
from bench.protocol import AudioConverter, AudioFormat

LINE_FORMAT = AudioFormat(encoding="mulaw", sample_rate=wire.SAMPLE_RATE)


class TwilioEmulatorOptions(BaseModel):
    """This emulator's own keys of ``options.emulator``."""

    model_config = ConfigDict(extra="forbid")

    max_audio_ms: int | None = Field(default=None, ge=0, description="cap on the spoken answer's audio length")
    answer_dtmf: bool = Field(default=True, description="answer a keypad key like an utterance")
    knowledge: list[str] = Field(default_factory=list, description="passages the agent answers from")


class StreamConnection:
    """One call's stream: VAD over the caller's audio, one answer at a time, listening while it speaks."""

    def __init__(self, context: EmulatorContext, options: TwilioEmulatorOptions, ws: ServerConnection,
                 conversation: Conversation):
        self.context = context
        self.options = options
        self.ws = ws
        self.conversation = conversation
        self.connected = False
        self.start: wire.Start | None = None
        self.state: ConversationState | None = None
        self.vad = ServerVad(context.settings.vad, sample_rate=wire.SAMPLE_RATE)
        self.from_line = AudioConverter(LINE_FORMAT, AudioFormat(sample_rate=wire.SAMPLE_RATE))
        self.responder: asyncio.Task[Any] | None = None
        self.barge_in = asyncio.Event()
        #: marks sent and not yet answered by Twilio (its playback has not reached them)
        self.marks: dict[str, asyncio.Event] = {}

    @property
    def responding(self) -> bool:
        return self.responder is not None and not self.responder.done()

    @property
    def stream_sid(self) -> str:
        assert self.start is not None
        return self.start.stream_sid

    async def run(self) -> None:
        try:
            async for message in self.ws:
                if not await self.on_message(message):
                    return
        finally:
            if self.responder is not None:
                self.responder.cancel()

    async def on_message(self, frame: str | bytes) -> bool:
        if isinstance(frame, bytes):
            return await self.refuse("binary frame (Media Streams carry JSON text)")
        try:
            data = json.loads(frame)
            message = wire.TWILIO_MESSAGE.validate_python(data)
        except (ValueError, ValidationError) as exc:
            return await self.refuse(f"not a Media Streams message: {str(exc)[:200]}")
        if isinstance(message, wire.Connected):
            self.connected = True
            self.log("connected")
            return True
        if isinstance(message, wire.Start):
            return await self.on_start(message, data)
        if self.start is None or message.stream_sid != self.stream_sid:
            return await self.refuse(f"{message.event} for an unknown stream")
        if isinstance(message, wire.Media):
            self.log("media")
            for event in self.vad.push(self.from_line.push(message.media.audio())):
                if event == "speech_started":
                    self.on_speech_started()
                else:
                    self.on_speech_stopped()
        elif isinstance(message, wire.Dtmf):
            self.log(f"dtmf:{message.dtmf.digit}")
            if self.options.answer_dtmf:
                self.queue_response(f"the caller pressed {message.dtmf.digit}", origin=time.monotonic())
        elif isinstance(message, wire.MarkPlayed):
            self.log(f"mark:{message.mark.name}")
            played = self.marks.get(message.mark.name)
            if played is not None:
                played.set()
        elif isinstance(message, wire.Stop):
            self.log("stop")
            return False
        return True

    async def on_start(self, message: wire.Start, data: dict[str, Any]) -> bool:
        media = message.start.media_format
        if not self.connected or self.start is not None:
            return await self.refuse("start must follow connected, once")
        if (media.encoding, media.sample_rate, media.channels) != (wire.MULAW_ENCODING, wire.SAMPLE_RATE, 1):
            return await self.refuse(f"unsupported media format {media.model_dump(by_alias=True)}")
        self.log("start")
        self.context.log.setup[self.conversation.conversation_id] = data
        self.start = message
        self.state = ConversationState(self.context, self.conversation,
                                       language=message.start.custom_parameters.get("language"),
                                       knowledge=self.options.knowledge, history=[], tools=[])
        return True

    def log(self, label: str) -> None:
        self.context.log.record(self.conversation, label)

    async def refuse(self, reason: str) -> bool:
        self.log(f"refused:{reason[:80]}")
        await self.ws.close(1003, reason[:100])
        return False

    # -- turns ------------------------------------------------------------------------------------------------
    def on_speech_started(self) -> None:
        if self.responding:
            self.barge_in.set()  # the caller talks over the agent

    def on_speech_stopped(self) -> None:
        queued = self.conversation.utterances
        utterance = queued.popleft() if queued else ""
        self.queue_response(utterance, origin=time.monotonic() + self.context.settings.vad.response_delay_ms / 1000)

    def queue_response(self, utterance: str, *, origin: float) -> None:
        self.barge_in = asyncio.Event()
        self.responder = asyncio.ensure_future(self.respond(utterance, origin, self.barge_in, self.responder))

    async def respond(self, utterance: str, origin: float, barge_in: asyncio.Event,
                      previous: asyncio.Task[Any] | None) -> None:
        await after(previous)
        state = self.state
        assert state is not None
        key, fault = state.next_response()
        await sleep_until(origin)
        if fault == "stall":
            await asyncio.sleep(self.context.settings.faults.stall_s)
            return
        if fault in ("error_event", "rate_limit"):
            await self.ws.close(1011 if fault == "error_event" else 1013, "emulated fault")
            return
        if fault == "malformed":
            await self.ws.send('{"event": "media", "streamSid": ')
            return
        answer = state.answer(utterance)
        plan = starting_now(state.speech_plan(answer.text, key, max_audio_ms=self.options.max_audio_ms))
        begin = max(origin, time.monotonic())
        state.mark_scheduled(key, begin, plan)
        to_line = AudioConverter(AudioFormat(sample_rate=SAMPLE_RATE), LINE_FORMAT)

        async def send_audio(chunk: bytes) -> None:
            await self.send(wire.AgentMedia(stream_sid=self.stream_sid,
                                            media=wire.OutboundMedia(payload=wire.encode_payload(to_line.push(chunk)))))

        sender = drop_after_first(send_audio, self.ws.transport.abort) if fault == "disconnect" else send_audio
        try:
            result = await speak(plan, send_text=None, send_audio=sender, stamps=self.context.stamps,
                                 stamp_key=state.stamp_key(key), barge_in=barge_in,
                                 reaction_ms=self.context.settings.vad.barge_in_reaction_ms, start=begin)
        except Disconnected:
            return
        interrupted = result.interrupted or await self.play_out(f"response-{key.response}", barge_in)
        if interrupted:
            await self.send(wire.Clear(stream_sid=self.stream_sid))
            self.log(f"sent:clear:{key.response}")
        state.remember(utterance, answer.text if not interrupted else "")

    async def play_out(self, name: str, barge_in: asyncio.Event) -> bool:
        """All audio is sent; Twilio may still be playing it. Mark its end and wait for Twilio's answer: a barge-in
        before it comes stops the agent (after its reaction time). True when it did."""
        played = self.marks[name] = asyncio.Event()
        await self.send(wire.AgentMark(stream_sid=self.stream_sid, mark=wire.MarkName(name=name)))
        waits = {asyncio.ensure_future(played.wait()), asyncio.ensure_future(barge_in.wait())}
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in waits:
                task.cancel()
            self.marks.pop(name, None)
        if played.is_set():
            return False
        await asyncio.sleep(self.context.settings.vad.barge_in_reaction_ms / 1000)
        return not played.is_set()

    async def send(self, message: BaseModel) -> None:
        await self.ws.send(json.dumps(wire.dump(message)))


async def start(settings: EmulatorSettings, *, control: ControlPlane, answerer: Answerer,
                options: dict[str, Any]) -> EvaluatorEmulator:
    """Start the Twilio-stream agent emulator on ``settings.host:settings.port`` (port 0 = ephemeral)."""
    return await start_websocket_emulator(settings, control, answerer, options, TwilioEmulatorOptions,
                                          StreamConnection)
