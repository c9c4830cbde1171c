"""Loopback emulator of the Deepgram Voice Agent v1 socket (``/v1/agent/converse``).

Speaks the protocol as deepgram-sdk 7.x expects it (the official ``client.agent.v1.connect()`` works against
it through a ``DeepgramClientEnvironment`` whose ``agent`` URL is this server): ``Welcome`` on connect,
``SettingsApplied`` after ``Settings``, then per user turn (``InjectUserMessage``, or binary PCM16 whose end
is found by an energy endpointer): ``UserStartedSpeaking`` (audio only), ``ConversationText`` (user),
``FunctionCallRequest`` for ``set_conversational_intent`` when the agent was given that function (waiting for
the client's ``FunctionCallResponse``), ``ConversationText`` (assistant), ``AgentStartedSpeaking`` with
latencies in seconds, binary audio frames, ``AgentAudioDone`` and ``LatencyReport``. ``KeepAlive`` is accepted
silently.

The emulator has no speech recogniser: for audio turns the client may pass the spoken text in the
``x-bench-transcript-hint`` header (URL-encoded); the harness does so only in emulated mode. The turn key used
for seeded latency, fault choice and send stamps is the ``x-deepgram-session-id`` header the SDK always sends.
Faults: ``rate_limit`` rejects the upgrade with 429 + Retry-After; ``error_event`` sends ``Error`` and closes
with 1011; ``malformed`` sends a non-JSON text frame; ``stall`` goes silent; ``disconnect`` drops the TCP
connection after the first audio frame.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from http import HTTPStatus
from typing import Any
from urllib.parse import unquote

import numpy as np
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from adapters.deepgram_agent import wire
from adapters.emulators.brain import BrainProfile, EmulatedBrain
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
from adapters.intent_tool import INTENT_TOOL_NAME

AGENT_PATH = wire.AGENT_PATH
HINT_HEADER = wire.HINT_HEADER
SESSION_HEADER = wire.SESSION_HEADER


def decide_fault(plan: FaultPlan, attempts: dict[str, int], key: str) -> str | None:
    """The fault for this attempt of turn ``key`` (seeded; retries re-draw unless ``first_attempt_only``)."""
    attempt = attempts.get(key, 0) + 1
    attempts[key] = attempt
    if plan.first_attempt_only:
        return plan.pick(key) if attempt == 1 else None
    return plan.pick(f"{key}#{attempt}")


class Endpointer:
    """Energy-based end-of-turn detection on PCM16, counted in samples so it works paced or unpaced."""

    def __init__(self, sample_rate: int, threshold: float = 300.0, endpoint_ms: int = 500):
        self.block = max(1, sample_rate // 100)  # 10 ms
        self.threshold = threshold
        self.endpoint_blocks = max(1, endpoint_ms // 10)
        self._pending = b""
        self.speaking = False
        self.heard_speech = False
        self._silent_blocks = 0

    def feed(self, pcm: bytes) -> list[str]:
        """Returns the events this chunk caused: ``speech_started`` and/or ``endpoint``."""
        events: list[str] = []
        data = self._pending + pcm
        usable = len(data) - len(data) % (self.block * 2)
        self._pending = data[usable:]
        samples = np.frombuffer(data[:usable], dtype="<i2").astype(np.float64)
        for start in range(0, len(samples), self.block):
            block = samples[start : start + self.block]
            loud = float(np.sqrt(np.mean(block * block))) >= self.threshold if len(block) else False
            if loud:
                self._silent_blocks = 0
                if not self.speaking:
                    self.speaking = True
                    if not self.heard_speech:
                        events.append("speech_started")
                    self.heard_speech = True
            elif self.speaking:
                self._silent_blocks += 1
                if self._silent_blocks >= self.endpoint_blocks:
                    self.speaking = False
                    self.heard_speech = False
                    events.append("endpoint")
        return events


class _Session:
    """State of one client connection."""

    def __init__(self, key: str, fault: str | None, hint: str):
        self.key = key
        self.fault = fault
        self.hint = hint
        self.settings: wire.Settings | None = None
        self.pending_functions: dict[str, asyncio.Future[str]] = {}
        self.responding: asyncio.Task[None] | None = None
        self.endpointer: Endpointer | None = None
        self.turns = 0

    @property
    def language(self) -> str:
        agent = self.settings.agent if self.settings else None
        provider = agent.listen.provider if agent and agent.listen else None
        language = (provider.model_extra or {}).get("language") if provider else None
        return str(language or (agent.language if agent else None) or "en")

    @property
    def output_rate(self) -> int:
        output = self.settings.audio.output if self.settings else None
        return int(output.sample_rate) if output and output.sample_rate else 24000

    @property
    def has_intent_function(self) -> bool:
        think = self.settings.agent.think if self.settings else None
        return bool(think and any(f.name == INTENT_TOOL_NAME for f in think.functions or []))


class DeepgramAgentEmulator:
    def __init__(
        self,
        settings: EmulatorSettings,
        brain: EmulatedBrain,
        endpoint_ms: int = 500,
        function_timeout_s: float = 10.0,
    ):
        self.settings = settings
        self.brain = brain
        self.stamps = SendStamps()
        self.endpoint_ms = endpoint_ms
        self.function_timeout_s = function_timeout_s
        self._attempts: dict[str, int] = {}
        self._sessions: dict[int, _Session] = {}

    # ------------------------------------------------------------------ HTTP upgrade

    def process_request(self, connection: ServerConnection, request: Request) -> Response | None:
        if request.path.split("?", 1)[0].rstrip("/") != AGENT_PATH:
            return connection.respond(
                HTTPStatus.NOT_FOUND, f"unknown path; the agent socket is {AGENT_PATH}\n"
            )
        if not request.headers.get("Authorization"):
            return connection.respond(HTTPStatus.UNAUTHORIZED, "missing Authorization header\n")
        key = request.headers.get(SESSION_HEADER) or uuid.uuid4().hex
        fault = decide_fault(self.settings.faults, self._attempts, key)
        if fault == "rate_limit":
            response = connection.respond(HTTPStatus.TOO_MANY_REQUESTS, "emulated rate limit\n")
            response.headers["Retry-After"] = f"{self.settings.faults.retry_after_s:g}"
            return response
        hint = unquote(request.headers.get(HINT_HEADER, ""))
        self._sessions[id(connection)] = _Session(key, fault, hint)
        return None

    # ------------------------------------------------------------------ the socket

    async def handle(self, ws: ServerConnection) -> None:
        session = self._sessions.pop(id(ws), None) or _Session(uuid.uuid4().hex, None, "")
        await ws.send(wire.Welcome(request_id=str(uuid.uuid4())).to_json())
        try:
            async for frame in ws:
                if isinstance(frame, bytes):
                    await self._on_audio(ws, session, frame)
                else:
                    await self._on_text(ws, session, frame)
        except ConnectionClosed:
            pass
        finally:
            if session.responding is not None:
                session.responding.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await session.responding

    async def _on_text(self, ws: ServerConnection, session: _Session, frame: str) -> None:
        try:
            message = wire.parse_client_message(frame)
        except wire.MalformedFrame as exc:
            await ws.send(wire.Error(description=str(exc), code="UNPARSABLE_CLIENT_MESSAGE").to_json())
            return
        if isinstance(message, wire.Settings):
            session.settings = message
            input_rate = message.audio.input.sample_rate if message.audio.input else 24000
            session.endpointer = Endpointer(input_rate, endpoint_ms=self.endpoint_ms)
            await ws.send(wire.SettingsApplied().to_json())
        elif session.settings is None:
            await ws.send(wire.Error(description="send Settings first", code="SETTINGS_REQUIRED").to_json())
        elif isinstance(message, wire.InjectUserMessage):
            self._start_response(ws, session, message.content, audio=False)
        elif isinstance(message, wire.FunctionCallResponse):
            future = session.pending_functions.pop(message.id or "", None)
            if future is not None and not future.done():
                future.set_result(message.content)
        # KeepAlive, UpdatePrompt, InjectAgentMessage and unknown client messages need no answer here.

    async def _on_audio(self, ws: ServerConnection, session: _Session, pcm: bytes) -> None:
        if session.settings is None or session.endpointer is None:
            await ws.send(wire.Error(description="audio before Settings", code="SETTINGS_REQUIRED").to_json())
            return
        for event in session.endpointer.feed(pcm):
            if event == "speech_started":
                await ws.send(wire.UserStartedSpeaking().to_json())
            elif event == "endpoint":
                self._start_response(ws, session, session.hint, audio=True)

    def _start_response(self, ws: ServerConnection, session: _Session, text: str, audio: bool) -> None:
        if session.responding is not None and not session.responding.done():
            asyncio.create_task(ws.send(wire.InjectionRefused(message="the agent is responding").to_json()))
            return
        session.turns += 1
        session.responding = asyncio.create_task(self._respond(ws, session, text, time.monotonic()))

    async def _call_intent_function(
        self, ws: ServerConnection, session: _Session, arguments: dict[str, Any]
    ) -> None:
        call_id = f"call_{uuid.uuid4().hex[:12]}"
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        session.pending_functions[call_id] = future
        request = wire.FunctionCallRequest(
            functions=[
                wire.FunctionCallItem(
                    id=call_id, name=INTENT_TOOL_NAME, arguments=json.dumps(arguments), client_side=True
                )
            ]
        )
        await ws.send(request.to_json())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(future, self.function_timeout_s)

    async def _respond(self, ws: ServerConnection, session: _Session, text: str, t0: float) -> None:
        latency = self.settings.latency
        key = session.key
        rng = latency.rng(f"{key}:{session.turns}")
        first_token_at = t0 + latency.sample_first_token_ms(rng) / 1000.0
        await ws.send(wire.ConversationText(role="user", content=text).to_json())
        if session.fault == "error_event":
            await ws.send(
                wire.Error(description="emulated internal error", code="INTERNAL_SERVER_ERROR").to_json()
            )
            await ws.close(1011, "emulated internal error")
            return
        if session.fault == "stall":
            await asyncio.sleep(self.settings.faults.stall_s)
            return
        answer = self.brain.answer(text, session.language)
        if self.brain.profile.route_intents and session.has_intent_function:
            await sleep_until(t0 + (first_token_at - t0) / 2)
            arguments = {"intent": answer.conversational_intent, "target_language": answer.target_language}
            await self._call_intent_function(ws, session, arguments)
        await sleep_until(max(first_token_at, time.monotonic() + latency.token_interval_ms / 1000.0))
        await ws.send(wire.ConversationText(role="assistant", content=answer.text).to_json())
        text_sent = time.monotonic()
        self.stamps.mark(self.stamps.first_text, key)
        if session.fault == "malformed":
            await ws.send("{this is not json")
            return
        first_audio_at = text_sent + latency.first_audio_extra_ms / 1000.0
        self.stamps.scheduled_first_audio.setdefault(key, first_audio_at)
        await sleep_until(first_audio_at)
        started = time.monotonic()
        await ws.send(
            wire.AgentStartedSpeaking(
                total_latency=round(started - t0, 4),
                ttt_latency=round(text_sent - t0, 4),
                tts_latency=round(started - text_sent, 4),
            ).to_json()
        )
        rate = session.output_rate
        chunks = chunk_audio(
            pcm16_silence_tone(speech_duration_ms(answer.text), rate), latency.audio_chunk_ms, rate
        )
        for index, chunk in enumerate(chunks):
            if latency.audio_pacing > 0:
                await sleep_until(started + index * latency.audio_chunk_ms / 1000.0 / latency.audio_pacing)
            await ws.send(chunk)
            if index == 0:
                self.stamps.mark(self.stamps.first_audio, key)
                if session.fault == "disconnect":
                    ws.transport.abort()
                    return
        await ws.send(wire.AgentAudioDone().to_json())
        await ws.send(
            wire.LatencyReport(
                ttt_token_latency=round(text_sent - t0, 4),
                ttt_text_latency=round(text_sent - t0, 4),
                tts_latency=round(started - text_sent, 4),
                total_latency=round(started - t0, 4),
            ).to_json()
        )


async def start(settings: EmulatorSettings, **options: Any) -> RunningEmulator:
    """Start the emulator on ``settings.host:settings.port`` (0 = ephemeral); the URL is the agent base
    URL."""
    brain = EmulatedBrain(BrainProfile(**options.get("brain", {})))
    emulator = DeepgramAgentEmulator(settings, brain, endpoint_ms=int(options.get("endpoint_ms", 500)))
    server = await serve(
        emulator.handle,
        settings.host,
        settings.port,
        process_request=emulator.process_request,
        max_size=None,
        compression=None,
    )
    port = server.sockets[0].getsockname()[1] if server.sockets else settings.port
    url = f"ws://{settings.host}:{port}"

    async def close() -> None:
        server.close()
        await server.wait_closed()

    return RunningEmulator(url, emulator.stamps, close)


__all__ = ["AGENT_PATH", "HINT_HEADER", "SESSION_HEADER", "DeepgramAgentEmulator", "Endpointer", "start"]
