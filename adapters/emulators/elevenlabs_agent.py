"""Loopback emulator of the ElevenLabs Agents platform: the conversation WebSocket and the two REST calls the
adapter's live path uses.

``url`` is an HTTP base (``http://127.0.0.1:PORT``) to give the SDK as ``ElevenLabs(base_url=...)``; the
socket is ``ws://127.0.0.1:PORT/v1/convai/conversation?agent_id=...``. What it implements:

- ``GET /v1/convai/conversation/get-signed-url?agent_id=`` (``xi-api-key`` required) → ``{signed_url}``; ``GET
  /v1/convai/conversations/{id}`` → the conversation (status, transcript, ``metadata.call_duration_secs``;
  ``metadata.cost`` / ``cost_fiat`` are null: an emulator has no bill);
- socket: the first client message may be ``conversation_initiation_client_data`` (waited for up to
  ``init_wait_s``) → ``conversation_initiation_metadata`` (PCM formats) → one ``ping`` (the client must
  ``pong``); ``user_message {text}`` or ``user_audio_chunk`` frames (end of speech = ``vad_silence_ms`` of
  quiet audio or ``vad_idle_ms`` without frames) → ``user_transcript`` → the ``set_conversational_intent``
  ``client_tool_call`` (when the brain routes intents; the reply ``client_tool_result`` is awaited up to
  ``tool_timeout_s``) → in voice mode ``agent_response`` (the whole text) and ``audio`` chunks, in text-only
  mode (``conversation_config_override.conversation.text_only`` or the SDK's top-level ``text_only``)
  ``agent_chat_response_part`` start/delta…/stop and ``agent_response`` → ``agent_response_complete``;
- a user message or speech while the agent speaks → ``interruption`` + ``agent_response_correction`` (the text
  truncated to the share of audio already sent).

Emulator-only request headers (never sent to ElevenLabs) as for the OpenAI emulator: ``x-bench-turn``,
``x-bench-utterance`` (what the emulator 'hears' in audio input) and ``x-bench-language``.

Faults: ``rate_limit`` rejects the upgrade with 429 + ``Retry-After``; in the agent's response ``error_event``
sends ``client_error`` and closes with 1011, ``malformed`` sends a broken JSON frame after ``agent_response``,
``stall`` goes silent there, ``disconnect`` drops the TCP connection after the first audio chunk.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import copy
import json
import re
import time
import urllib.parse
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from adapters.elevenlabs_agent import wire
from adapters.emulators.brain import BrainAnswer, BrainProfile, EmulatedBrain
from adapters.emulators.common import (
    EmulatorSettings,
    FaultKind,
    RunningEmulator,
    SendStamps,
    TurnAttempts,
    chunk_audio,
    guess_language,
    pcm16_silence_tone,
    pick_fault,
    sleep_until,
    speech_duration_ms,
)
from adapters.intent_tool import INTENT_TOOL_NAME

CONVERSATION_PATH = "/v1/convai/conversation"
SIGNED_URL_PATH = "/v1/convai/conversation/get-signed-url"
CONVERSATIONS_PATH = "/v1/convai/conversations/"


class ElevenLabsEmulatorOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    brain: BrainProfile = Field(default_factory=BrainProfile)
    output_format: str = "pcm_16000"
    input_format: str = "pcm_16000"
    first_message: str = ""
    init_wait_s: float = Field(default=1.0, ge=0)
    tool_timeout_s: float = Field(default=10.0, ge=0)
    vad_silence_ms: int = Field(default=300, ge=20)
    vad_idle_ms: int = Field(default=800, ge=20)
    vad_threshold: float = Field(default=200.0, ge=0, description="RMS of int16 samples counted as speech")
    ping_interval_s: float | None = Field(
        default=None, gt=0, description="periodic pings besides the first one"
    )
    emit_response_complete: bool = True
    #: a signed URL (``conversation_signature``) is required on the socket when True
    require_signed_url: bool = False
    record: bool = False
    max_conversations: int = Field(default=10_000, ge=1)


class RunningElevenLabs(RunningEmulator):
    """A started emulator; ``url`` is the HTTP base URL for ``ElevenLabs(base_url=...)``."""

    def __init__(self, url: str, stamps: SendStamps, closer: Any, log_: list[dict[str, Any]]):
        super().__init__(url, stamps, closer)
        self.log = log_

    @property
    def ws_url(self) -> str:
        return "ws" + self.url[len("http") :] + CONVERSATION_PATH


def _elide(data: dict[str, Any]) -> dict[str, Any]:
    data = copy.deepcopy(data)
    if "user_audio_chunk" in data:
        data["user_audio_chunk"] = f"<{len(data['user_audio_chunk'])} base64 chars>"
    if isinstance(data.get("audio_event"), dict) and "audio_base_64" in data["audio_event"]:
        data["audio_event"]["audio_base_64"] = f"<{len(data['audio_event']['audio_base_64'])} base64 chars>"
    return data


def _rms(pcm: bytes) -> float:
    import numpy as np

    samples = np.frombuffer(pcm[: len(pcm) // 2 * 2], dtype="<i2").astype(np.float64)
    return float(np.sqrt(np.mean(samples * samples))) if samples.size else 0.0


class _Conversation:
    """One socket = one conversation."""

    def __init__(
        self,
        emulator: ElevenLabsEmulator,
        ws: ServerConnection,
        key: str,
        attempt: int,
        fault: FaultKind | None,
        agent_id: str,
        utterance: str | None,
        language: str | None,
    ):
        self.emulator = emulator
        self.ws = ws
        self.key = key
        self.attempt = attempt
        #: send stamps are keyed by the turn key (``x-bench-turn``), suffixed ``#<n>`` from the first retry on
        self.stamp_key = key if attempt == 0 else f"{key}#{attempt}"
        self.fault = fault
        self.agent_id = agent_id
        self.utterance = utterance
        self.language = language
        self.id = f"conv_{abs(hash((key, attempt, time.monotonic_ns()))):x}"[:30]
        self.text_only = False
        self.event_id = 0
        self.ping_id = 0
        self.response_task: asyncio.Task[None] | None = None
        self.tool_results: dict[str, asyncio.Future[Any]] = {}
        self.speech = bytearray()
        self.silence_ms = 0.0
        self.idle_timer: asyncio.TimerHandle | None = None
        self.started = time.time()
        self.in_rate = wire.audio_format_rate(emulator.options.input_format)
        self.out_rate = wire.audio_format_rate(emulator.options.output_format)
        self.record = emulator.conversation_record(self)
        self.current_text = ""
        self.audio_sent_ms = 0
        self.audio_total_ms = 0

    async def send(self, message: BaseModel) -> None:
        text = wire.dump(message)
        await self.ws.send(text)
        if self.emulator.options.record:
            self.emulator.log.append({"conn": self.key, "dir": "send", "event": _elide(json.loads(text))})

    # ------------------------------------------------------------ set-up
    async def initiate(self) -> None:
        first: str | bytes | None = None
        try:
            first = await asyncio.wait_for(self.ws.recv(), self.emulator.options.init_wait_s)
        except TimeoutError:
            first = None
        override: dict[str, Any] = {}
        if first is not None:
            self.log_recv(first)
            try:
                message = wire.parse_client_message(first)
            except wire.MalformedMessage:
                message = None
            if isinstance(message, wire.ConversationInitiationClientData):
                override = message.conversation_config_override
                first = None
        self.text_only = bool(
            override.get("text_only") or (override.get("conversation") or {}).get("text_only")
        )
        agent = override.get("agent") or {}
        if agent.get("language"):
            self.language = self.language or agent["language"]
        await self.send(
            wire.ConversationInitiationMetadata(
                conversation_initiation_metadata_event=wire.InitiationMetadataEvent(
                    conversation_id=self.id,
                    agent_output_audio_format=self.emulator.options.output_format,
                    user_input_audio_format=self.emulator.options.input_format,
                )
            )
        )
        await self.ping()
        greeting = agent.get("first_message", self.emulator.options.first_message)
        if greeting:
            self.start_response(BrainAnswer(text=greeting), time.monotonic(), greeting=True)
        if first is not None:
            await self.handle(first, logged=True)

    async def ping(self) -> None:
        self.ping_id += 1
        await self.send(
            wire.Ping(
                ping_event=wire.PingEvent(event_id=self.ping_id, ping_ms=None if self.ping_id == 1 else 20)
            )
        )

    def log_recv(self, raw: str | bytes) -> None:
        if self.emulator.options.record:
            try:
                data = json.loads(raw)
            except ValueError:
                data = {"raw": str(raw)[:80]}
            self.emulator.log.append({"conn": self.key, "dir": "recv", "event": _elide(data)})

    # ------------------------------------------------------------ client messages
    async def handle(self, raw: str | bytes, logged: bool = False) -> None:
        if not logged:
            self.log_recv(raw)
        try:
            message = wire.parse_client_message(raw)
        except wire.MalformedMessage:
            await self.ws.close(1003, "Invalid message received")  # unsupported data
            return
        if isinstance(message, wire.UserMessage):
            await self.on_user_text(message.text)
        elif isinstance(message, wire.UserAudioChunk):
            await self.on_audio(message.user_audio_chunk)
        elif isinstance(message, wire.ClientToolResult):
            future = self.tool_results.get(message.tool_call_id)
            if future is not None and not future.done():
                future.set_result(message.result)
        elif isinstance(message, wire.ConversationInitiationClientData):
            await self.ws.close(1008, "Conversation already initiated")

    async def interrupt_if_speaking(self) -> None:
        if self.response_task is None or self.response_task.done():
            return
        self.response_task.cancel()
        await asyncio.wait({self.response_task})
        await self.send(wire.Interruption(interruption_event=wire.InterruptionEvent(event_id=self.event_id)))
        if self.current_text:
            share = self.audio_sent_ms / self.audio_total_ms if self.audio_total_ms else 0.0
            words = self.current_text.split()
            corrected = " ".join(words[: int(len(words) * share)])
            await self.send(
                wire.AgentResponseCorrection(
                    agent_response_correction_event=wire.AgentResponseCorrectionEvent(
                        original_agent_response=self.current_text,
                        corrected_agent_response=corrected,
                        event_id=self.event_id,
                    )
                )
            )

    async def on_user_text(self, text: str) -> None:
        await self.interrupt_if_speaking()
        await self.user_turn(text)

    async def on_audio(self, payload: str) -> None:
        try:
            pcm = base64.b64decode(payload, validate=True)
        except (binascii.Error, ValueError):
            await self.ws.close(1003, "Invalid audio chunk")
            return
        chunk_ms = len(pcm) / (self.in_rate * 2) * 1000
        options = self.emulator.options
        if _rms(pcm) >= options.vad_threshold:
            if not self.speech:
                await self.interrupt_if_speaking()
            self.speech.extend(pcm)
            self.silence_ms = 0.0
        elif self.speech:
            self.silence_ms += chunk_ms
        if self.idle_timer:
            self.idle_timer.cancel()
            self.idle_timer = None
        if self.speech and self.silence_ms >= options.vad_silence_ms:
            await self.end_of_speech()
        elif self.speech:
            loop = asyncio.get_running_loop()
            self.idle_timer = loop.call_later(
                options.vad_idle_ms / 1000, lambda: asyncio.ensure_future(self.end_of_speech_quietly())
            )

    async def end_of_speech_quietly(self) -> None:
        with contextlib.suppress(ConnectionClosed):
            await self.end_of_speech()

    async def end_of_speech(self) -> None:
        if not self.speech:
            return
        if self.idle_timer:
            self.idle_timer.cancel()
            self.idle_timer = None
        self.speech.clear()
        self.silence_ms = 0.0
        await self.user_turn(self.utterance or "")

    async def user_turn(self, text: str) -> None:
        started = time.monotonic()
        self.event_id += 1
        self.record["transcript"].append(
            {"role": "user", "message": text, "time_in_call_secs": int(time.time() - self.started)}
        )
        await self.send(
            wire.UserTranscript(
                user_transcription_event=wire.UserTranscriptionEvent(
                    user_transcript=text, event_id=self.event_id
                )
            )
        )
        self.start_response(self.emulator.answer(text, self.language), started)

    def start_response(self, answer: BrainAnswer, started: float, greeting: bool = False) -> None:
        self.response_task = asyncio.create_task(self.respond(answer, started, greeting))

    # ------------------------------------------------------------ the agent's turn
    async def respond(self, answer: BrainAnswer, started: float, greeting: bool) -> None:
        with contextlib.suppress(ConnectionClosed):
            await self._respond(answer, started, greeting)

    async def _respond(self, answer: BrainAnswer, started: float, greeting: bool) -> None:
        settings = self.emulator.settings
        latency = settings.latency
        stamps = self.emulator.stamps
        event_id = self.event_id
        rng = latency.rng(f"{self.key}#{self.attempt}#{event_id}")
        first_text_at = started + latency.sample_first_token_ms(rng) / 1000
        fault = None if greeting else self.fault
        if not greeting and self.emulator.options.brain.route_intents:
            await sleep_until(started + (first_text_at - started) / 2)
            call_id = f"toolu_{event_id}_{int(time.monotonic_ns()) % 10**9}"
            future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            self.tool_results[call_id] = future
            await self.send(
                wire.ClientToolCall(
                    client_tool_call=wire.ClientToolCallPayload(
                        tool_name=INTENT_TOOL_NAME,
                        tool_call_id=call_id,
                        expects_response=True,
                        parameters={
                            "intent": answer.conversational_intent,
                            "target_language": answer.target_language,
                        },
                    )
                )
            )
            try:
                await asyncio.wait_for(future, self.emulator.options.tool_timeout_s)
            except TimeoutError:
                pass
            finally:
                self.tool_results.pop(call_id, None)
        await sleep_until(max(first_text_at, time.monotonic()))
        if fault == "error_event":
            await self.send(
                wire.ClientError(
                    client_error_event={
                        "error_type": "internal_error",
                        "message": "An internal error occurred (emulated).",
                    }
                )
            )
            await self.ws.close(1011, "Internal error")
            return
        text = answer.text
        self.current_text = text
        self.audio_sent_ms = 0
        if self.text_only:
            await self.send(
                wire.AgentChatResponsePart(
                    text_response_part=wire.TextResponsePart(text="", type="start", event_id=event_id)
                )
            )
            for i, word in enumerate(re.findall(r"\S+\s*", text) or [text]):
                await sleep_until(first_text_at + i * latency.token_interval_ms / 1000)
                await self.send(
                    wire.AgentChatResponsePart(
                        text_response_part=wire.TextResponsePart(text=word, type="delta", event_id=event_id)
                    )
                )
                stamps.mark(stamps.first_text, self.stamp_key)
            await self.send(
                wire.AgentChatResponsePart(
                    text_response_part=wire.TextResponsePart(text="", type="stop", event_id=event_id)
                )
            )
        await self.send(
            wire.AgentResponse(
                agent_response_event=wire.AgentResponseEvent(agent_response=text, event_id=event_id)
            )
        )
        stamps.mark(stamps.first_text, self.stamp_key)
        if fault == "malformed":
            await self.ws.send('{"type": "audio", "audio_event": {"audio_base_64": "AAAA')
        elif fault == "stall":
            await asyncio.sleep(settings.faults.stall_s)
        if not self.text_only:
            pcm = pcm16_silence_tone(speech_duration_ms(text), self.out_rate)
            chunks = chunk_audio(pcm, latency.audio_chunk_ms, self.out_rate)
            self.audio_total_ms = len(pcm) * 1000 // (self.out_rate * 2)
            first_audio_at = first_text_at + latency.first_audio_extra_ms / 1000
            stamps.scheduled_first_audio.setdefault(self.stamp_key, first_audio_at)
            step_s = latency.audio_chunk_ms / 1000 * latency.audio_pacing
            for j, chunk in enumerate(chunks):
                await sleep_until(first_audio_at + j * step_s)
                await self.send(
                    wire.Audio(
                        audio_event=wire.AudioEvent(
                            audio_base_64=base64.b64encode(chunk).decode(), event_id=event_id
                        )
                    )
                )
                self.audio_sent_ms += len(chunk) * 1000 // (self.out_rate * 2)
                if j == 0:
                    stamps.mark(stamps.first_audio, self.stamp_key)
                    if fault == "disconnect":
                        self.ws.transport.abort()
                        return
        self.record["transcript"].append(
            {"role": "agent", "message": text, "time_in_call_secs": int(time.time() - self.started)}
        )
        self.current_text = ""
        if self.emulator.options.emit_response_complete:
            await self.send(
                wire.AgentResponseComplete(
                    agent_response_complete_event=wire.AgentResponseCompleteEvent(event_id=event_id)
                )
            )

    async def periodic_pings(self, interval: float) -> None:
        while True:
            await asyncio.sleep(interval)
            await self.ping()


class ElevenLabsEmulator:
    def __init__(self, settings: EmulatorSettings, options: ElevenLabsEmulatorOptions):
        self.settings = settings
        self.options = options
        self.stamps = SendStamps()
        self.brain = EmulatedBrain(options.brain)
        self.attempts = TurnAttempts()
        self.log: list[dict[str, Any]] = []
        self.conversations: dict[str, dict[str, Any]] = {}
        self._pending: dict[int, tuple[str, int, FaultKind | None, str]] = {}
        self.base_url = ""

    def answer(self, question: str, language: str | None) -> BrainAnswer:
        if not question.strip():
            return BrainAnswer(
                text="Sorry, I did not catch that. Could you say it again?", conversational_intent="clarify"
            )
        return self.brain.answer(question, language or guess_language(question) or "en")

    def conversation_record(self, conversation: _Conversation) -> dict[str, Any]:
        while len(self.conversations) >= self.options.max_conversations:
            self.conversations.pop(next(iter(self.conversations)))
        record = {
            "agent_id": conversation.agent_id,
            "conversation_id": conversation.id,
            "status": "in-progress",
            "start": conversation.started,
            "end": None,
            "transcript": [],
            "text_only": False,
        }
        self.conversations[conversation.id] = record
        return record

    # ------------------------------------------------------------ HTTP
    def process_request(self, connection: ServerConnection, request: Request) -> Response | None:
        url = urllib.parse.urlsplit(request.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        path = url.path.rstrip("/")
        upgrade = "websocket" in request.headers.get("Upgrade", "").lower()
        if self.options.record:
            self.log.append(
                {"conn": None, "dir": "http", "event": {"method": "GET", "path": path, "upgrade": upgrade}}
            )
        if path == SIGNED_URL_PATH and not upgrade:
            if not request.headers.get("xi-api-key"):
                return _json(
                    connection, 401, {"detail": {"status": "invalid_api_key", "message": "Invalid API key"}}
                )
            if "agent_id" not in query:
                return _json(
                    connection, 422, {"detail": [{"loc": ["query", "agent_id"], "msg": "field required"}]}
                )
            signature = f"sig_{abs(hash((query['agent_id'], time.monotonic_ns()))):x}"
            params = urllib.parse.urlencode(
                {"agent_id": query["agent_id"], "conversation_signature": signature}
            )
            host = request.headers.get("Host", "")
            return _json(connection, 200, {"signed_url": f"ws://{host}{CONVERSATION_PATH}?{params}"})
        if path.startswith(CONVERSATIONS_PATH.rstrip("/")) and not upgrade:
            if not request.headers.get("xi-api-key"):
                return _json(
                    connection, 401, {"detail": {"status": "invalid_api_key", "message": "Invalid API key"}}
                )
            record = self.conversations.get(path.rsplit("/", 1)[-1])
            if record is None:
                return _json(
                    connection,
                    404,
                    {"detail": {"status": "conversation_not_found", "message": "Conversation not found"}},
                )
            return _json(connection, 200, conversation_details(record))
        if path != CONVERSATION_PATH:
            return _json(connection, 404, {"detail": "Not Found"})
        if not upgrade:
            return _json(connection, 426, {"detail": "Upgrade Required"})
        if not query.get("agent_id"):
            return _json(
                connection, 400, {"detail": {"status": "invalid_request", "message": "agent_id missing"}}
            )
        if self.options.require_signed_url and not query.get("conversation_signature"):
            return _json(
                connection,
                403,
                {"detail": {"status": "auth_required", "message": "This agent requires a signed URL"}},
            )
        key, attempt = self.attempts.next(request.headers.get("x-bench-turn"))
        fault = pick_fault(self.settings, key, attempt)
        if fault == "rate_limit":
            response = _json(
                connection,
                429,
                {
                    "detail": {
                        "status": "too_many_concurrent_requests",
                        "message": "Too many concurrent requests (emulated).",
                    }
                },
            )
            response.headers["Retry-After"] = f"{self.settings.faults.retry_after_s:g}"
            return response
        self._pending[id(connection)] = (key, attempt, fault, query["agent_id"])
        return None

    # ------------------------------------------------------------ socket
    async def handler(self, ws: ServerConnection) -> None:
        key, attempt, fault, agent_id = self._pending.pop(id(ws), (f"conn-{id(ws)}", 0, None, "agent"))
        headers = ws.request.headers if ws.request else {}
        utterance = headers.get("x-bench-utterance")
        conversation = _Conversation(
            self,
            ws,
            key,
            attempt,
            fault,
            agent_id,
            urllib.parse.unquote(utterance) if utterance else None,
            headers.get("x-bench-language"),
        )
        pinger: asyncio.Task[None] | None = None
        try:
            await conversation.initiate()
            conversation.record["text_only"] = conversation.text_only
            if self.options.ping_interval_s:
                pinger = asyncio.create_task(conversation.periodic_pings(self.options.ping_interval_s))
            async for message in ws:
                await conversation.handle(message)
        except ConnectionClosed:
            pass
        finally:
            for task in (pinger, conversation.response_task):
                if task is not None and not task.done():
                    task.cancel()
                    await asyncio.wait({task})
            if conversation.idle_timer:
                conversation.idle_timer.cancel()
            conversation.record["status"] = "done"
            conversation.record["end"] = time.time()


def conversation_details(record: dict[str, Any]) -> dict[str, Any]:
    """The ``GET /v1/convai/conversations/{id}`` body (``GetConversationResponseModel`` fields)."""
    end = record["end"] or time.time()
    return {
        "agent_id": record["agent_id"],
        "conversation_id": record["conversation_id"],
        "status": "done" if record["status"] == "done" else "in-progress",
        "transcript": record["transcript"],
        "metadata": {
            "start_time_unix_secs": int(record["start"]),
            "call_duration_secs": max(0, round(end - record["start"])),
            "cost": None,
            "cost_fiat": None,
            "text_only": record["text_only"],
        },
        "has_audio": not record["text_only"],
        "has_user_audio": False,
        "has_response_audio": not record["text_only"],
        "has_auxiliary_audio": False,
    }


def _json(connection: ServerConnection, status: int, body: Any) -> Response:
    response = connection.respond(status, json.dumps(body))
    response.headers["Content-Type"] = "application/json"
    return response


async def start(settings: EmulatorSettings, **options: Any) -> RunningElevenLabs:
    """Start the emulator on ``settings.host:settings.port`` (port 0 = ephemeral)."""
    emulator = ElevenLabsEmulator(settings, ElevenLabsEmulatorOptions(**options))
    server = await serve(
        emulator.handler,
        settings.host,
        settings.port,
        process_request=emulator.process_request,
        max_size=16 * 1024 * 1024,
        compression=None,
        ping_interval=None,
    )
    port = server.sockets[0].getsockname()[1] if server.sockets else settings.port
    emulator.base_url = f"http://{settings.host}:{port}"

    async def closer() -> None:
        server.close()
        await server.wait_closed()

    return RunningElevenLabs(emulator.base_url, emulator.stamps, closer, emulator.log)
