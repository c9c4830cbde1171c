"""Loopback emulator of the OpenAI Realtime WebSocket (``ws://127.0.0.1:PORT/v1/realtime?model=...``).

It speaks the GA event names by default and the beta names when the client sends ``OpenAI-Beta: realtime=v1``
(the official SDK's ``client.beta.realtime``), so the official ``openai`` client works against it
(``AsyncOpenAI(websocket_base_url=<url>)``). What it implements:

- handshake: ``Authorization: Bearer`` required (401 otherwise); ``session.created`` on connect;
- ``session.update`` (GA ``{type: realtime, output_modalities, audio: {...}, tools}`` or the beta flat shape)
  → ``session.updated``; ``conversation.item.create`` (``input_text`` messages, ``function_call_output``) →
  ``conversation.item.added`` + ``conversation.item.done`` (beta ``conversation.item.created``);
  ``input_audio_buffer.append`` / ``.commit`` / ``.clear``; ``response.create``; ``response.cancel``;
- a response to a user message first emits the ``set_conversational_intent`` function call (output item,
  argument deltas, ``.done``, ``response.done``) when the session has that tool and the brain routes intents;
  after the client's ``function_call_output`` + ``response.create`` it streams the spoken answer: transcript
  deltas interleaved with audio deltas (or text deltas for text-only sessions), the done events, and
  ``response.done`` with usage (text tokens ≈ characters / 4, audio tokens 1 per 100 ms in and 1 per 50 ms
  out);
- ``rate_limits.updated`` after each ``response.created``; ``error`` events for protocol misuse.

Emulator-only request headers (never sent to OpenAI): ``x-bench-turn`` (turn key for seeded latency, faults
and send stamps), ``x-bench-utterance`` (percent-encoded text the emulator 'hears' in audio input — it has no
ASR) and ``x-bench-language``. Without them a turn is keyed ``conn-<n>`` and the language is guessed from the
knowledge base.

Faults (``settings.faults``): ``rate_limit`` rejects the upgrade with 429 + ``Retry-After``; in the spoken
response ``error_event`` sends a ``server_error`` then a failed ``response.done``, ``malformed`` sends a
broken JSON frame after the first transcript delta, ``stall`` goes silent after it, ``disconnect`` drops the
TCP connection after the first audio delta.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import copy
import json
import logging
import math
import re
import time
import urllib.parse
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

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
from adapters.openai_realtime import wire

log = logging.getLogger(__name__)

SAMPLE_RATE = 24000
BYTES_PER_MS = SAMPLE_RATE * 2 // 1000


class OpenAIRealtimeEmulatorOptions(BaseModel):
    """Emulator options beyond the common settings."""

    model_config = ConfigDict(extra="forbid")

    brain: BrainProfile = Field(default_factory=BrainProfile)
    model: str = "gpt-realtime"
    #: keep every frame (audio payloads elided) in ``RunningOpenAIRealtime.log`` — for contract tests
    record: bool = False


class RunningOpenAIRealtime(RunningEmulator):
    """A started emulator; ``url`` is the ``websocket_base_url`` (``ws://127.0.0.1:PORT/v1``)."""

    def __init__(self, url: str, stamps: SendStamps, closer: Any, log_: list[dict[str, Any]]):
        super().__init__(url, stamps, closer)
        self.log = log_


def estimate_tokens(text: str) -> int:
    return max(1, math.ceil(len(text) / 4)) if text else 0


def _elide_audio(event: dict[str, Any]) -> dict[str, Any]:
    event = copy.deepcopy(event)
    for key in ("audio", "delta"):
        if (
            key in event
            and isinstance(event[key], str)
            and event.get("type", "").endswith(("append", "audio.delta"))
        ):
            event[key] = f"<{len(event[key])} base64 chars>"
    return event


class _Connection:
    """State of one client connection (one realtime session)."""

    def __init__(
        self,
        emulator: OpenAIRealtimeEmulator,
        ws: ServerConnection,
        key: str,
        attempt: int,
        fault: FaultKind | None,
        beta: bool,
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
        self.beta = beta
        self.utterance = utterance
        self.language = language
        self.session = emulator.initial_session(beta)
        self.items: list[wire.ConversationItem] = []
        self.audio = bytearray()
        self.audio_ms_total = 0
        self.turn_started: float | None = None
        self.response_task: asyncio.Task[None] | None = None
        self.previous_cached = 0
        self.current_response: wire.RealtimeResponse | None = None
        self.lock = asyncio.Lock()
        self.closed = False

    # ------------------------------------------------------------ sending
    async def send(self, event: wire.ServerEvent) -> None:
        if isinstance(event, wire.ServerEvent) and event.type in wire.GA_TO_BETA:
            event.type = wire.wire_name(event.type, self.beta)  # type: ignore[assignment]
        text = wire.dump(event)
        await self.ws.send(text)
        if self.emulator.options.record:
            self.emulator.log.append(
                {"conn": self.key, "beta": self.beta, "dir": "send", "event": _elide_audio(json.loads(text))}
            )

    async def send_error(
        self,
        message: str,
        code: str,
        type_: str = "invalid_request_error",
        event_id: str | None = None,
        param: str | None = None,
    ) -> None:
        await self.send(
            wire.ErrorEvent(
                error=wire.ErrorDetail(type=type_, code=code, message=message, param=param, event_id=event_id)
            )
        )

    async def item_added(self, item: wire.ConversationItem, previous: str | None, done: bool = True) -> None:
        await self.send(wire.ConversationItemAdded(item=item, previous_item_id=previous))
        if done and not self.beta:
            await self.send(wire.ConversationItemDone(item=item, previous_item_id=previous))

    # ------------------------------------------------------------ session
    def output_modalities(self) -> list[str]:
        if self.beta:
            modalities = self.session.get("modalities") or ["text", "audio"]
            return ["audio"] if "audio" in modalities else ["text"]
        return list(self.session.get("output_modalities") or ["audio"])

    def turn_detection(self) -> Any:
        if self.beta:
            return self.session.get("turn_detection")
        return ((self.session.get("audio") or {}).get("input") or {}).get("turn_detection")

    def transcription(self) -> Any:
        if self.beta:
            return self.session.get("input_audio_transcription")
        return ((self.session.get("audio") or {}).get("input") or {}).get("transcription")

    def has_intent_tool(self) -> bool:
        if self.session.get("tool_choice") == "none":
            return False
        return any(
            isinstance(t, dict) and t.get("name") == INTENT_TOOL_NAME for t in self.session.get("tools") or []
        )

    # ------------------------------------------------------------ client events
    async def handle(self, raw: str | bytes) -> None:
        # a burst the server emits back to back (the tail of a function-call response) is never split by the
        # events a client event causes; this keeps the emulator's event order deterministic
        async with self.lock:
            await self._handle(raw)

    async def _handle(self, raw: str | bytes) -> None:
        try:
            event = wire.parse_client_event(raw)
        except wire.MalformedEvent as exc:
            await self.send_error(
                f"Invalid event: {exc}", "invalid_json" if "JSON" in str(exc) else "invalid_event"
            )
            return
        if self.emulator.options.record:
            self.emulator.log.append(
                {"conn": self.key, "beta": self.beta, "dir": "recv", "event": _elide_audio(json.loads(raw))}
            )
        if event is None:
            data = json.loads(raw)
            await self.send_error(
                f"Invalid value: '{data['type']}'. Unknown event type.",
                "invalid_value",
                event_id=data.get("event_id"),
                param="type",
            )
        elif isinstance(event, wire.SessionUpdate):
            await self.on_session_update(event)
        elif isinstance(event, wire.ConversationItemCreate):
            await self.on_item_create(event)
        elif isinstance(event, wire.InputAudioBufferAppend):
            try:
                self.audio.extend(base64.b64decode(event.audio, validate=True))
            except (binascii.Error, ValueError):
                await self.send_error(
                    "Invalid base64 audio.", "invalid_value", event_id=event.event_id, param="audio"
                )
        elif isinstance(event, wire.InputAudioBufferCommit):
            await self.on_commit(event)
        elif isinstance(event, wire.InputAudioBufferClear):
            self.audio.clear()
            await self.send(wire.InputAudioBufferCleared())
        elif isinstance(event, wire.ResponseCreate):
            await self.on_response_create(event)
        elif isinstance(event, wire.ResponseCancel):
            if self.response_task and not self.response_task.done():
                self.response_task.cancel()
                await asyncio.wait({self.response_task})
                if self.current_response is not None:
                    self.current_response.status = "cancelled"
                    self.current_response.status_details = wire.ResponseStatusDetails(
                        type="cancelled", reason="client_cancelled"
                    )
                    await self.send(wire.ResponseDone(response=self.current_response))
            else:
                await self.send_error(
                    "Cancellation failed: no active response found",
                    "response_cancel_not_active",
                    event_id=event.event_id,
                )

    async def on_session_update(self, event: wire.SessionUpdate) -> None:
        update = dict(event.session)
        if not self.beta and update.get("type") not in ("realtime", None):
            await self.send_error(
                "Invalid value for 'session.type'.",
                "invalid_value",
                event_id=event.event_id,
                param="session.type",
            )
            return
        if not self.beta and "type" not in update:
            await self.send_error(
                "Missing required parameter: 'session.type'.",
                "missing_required_parameter",
                event_id=event.event_id,
                param="session.type",
            )
            return
        _deep_merge(self.session, update)
        await self.send(wire.SessionUpdated(session=copy.deepcopy(self.session)))

    async def on_item_create(self, event: wire.ConversationItemCreate) -> None:
        item = event.item.model_copy(
            update={
                "id": event.item.id or wire.new_id("item"),
                "status": "completed",
                "object": "realtime.item",
            }
        )
        previous = self.items[-1].id if self.items else None
        self.items.append(item)
        await self.item_added(item, previous)

    async def on_commit(self, event: wire.InputAudioBufferCommit) -> None:
        if len(self.audio) < 100 * BYTES_PER_MS:
            await self.send_error(
                f"Error committing input audio buffer: buffer too small. Expected at least 100ms of audio, "
                f"but "
                f"buffer only has {len(self.audio) / BYTES_PER_MS:.2f}ms of audio.",
                "input_audio_buffer_commit_empty",
                event_id=event.event_id,
            )
            return
        audio_ms = len(self.audio) // BYTES_PER_MS
        self.audio_ms_total += audio_ms
        self.audio.clear()
        item = wire.ConversationItem(
            id=wire.new_id("item"),
            type="message",
            role="user",
            status="completed",
            content=[wire.ContentPart(type="input_audio", transcript=None)],
        )
        previous = self.items[-1].id if self.items else None
        self.items.append(item)
        await self.send(wire.InputAudioBufferCommitted(item_id=item.id or "", previous_item_id=previous))
        await self.item_added(item, previous)
        heard = self.utterance or ""
        item.content = [wire.ContentPart(type="input_audio", transcript=heard)]
        if self.transcription():
            await self.send(wire.InputAudioTranscriptionCompleted(item_id=item.id or "", transcript=heard))
        detection = self.turn_detection()
        if detection and detection.get("create_response", True):
            await self.on_response_create(wire.ResponseCreate())

    async def on_response_create(self, event: wire.ResponseCreate) -> None:
        if self.response_task and not self.response_task.done():
            await self.send_error(
                "Conversation already has an active response in progress.",
                "conversation_already_has_active_response",
                event_id=event.event_id,
            )
            return
        last = self.items[-1] if self.items else None
        if last is not None and last.type == "message" and last.role == "user" or self.turn_started is None:
            self.turn_started = time.monotonic()
        self.response_task = asyncio.create_task(self.respond())

    # ------------------------------------------------------------ responses
    def last_user_text(self) -> str:
        for item in reversed(self.items):
            if item.type == "message" and item.role == "user":
                parts = item.content or []
                return " ".join(p.text or p.transcript or "" for p in parts).strip()
        return ""

    def answered_call_since_user(self) -> bool:
        for item in reversed(self.items):
            if item.type == "message" and item.role == "user":
                return False
            if item.type == "function_call_output":
                return True
        return False

    def input_tokens(self) -> tuple[int, int]:
        text = self.session.get("instructions") or ""
        text += json.dumps(self.session.get("tools") or [])
        for item in self.items:
            for part in item.content or []:
                text += part.text or part.transcript or ""
            text += (item.arguments or "") + (item.output or "")
        return estimate_tokens(text), math.ceil(self.audio_ms_total / 100)

    async def respond(self) -> None:
        try:
            answer = self.emulator.answer(self.last_user_text(), self.language)
            started = self.turn_started or time.monotonic()
            rng = self.emulator.settings.latency.rng(f"{self.key}#{self.attempt}")
            first_token_s = self.emulator.settings.latency.sample_first_token_ms(rng) / 1000
            route = self.emulator.options.brain.route_intents and self.has_intent_tool()
            if route and not self.answered_call_since_user():
                await self.respond_with_tool_call(answer, started + first_token_s / 2)
            else:
                await self.respond_with_speech(answer, started + first_token_s)
        except ConnectionClosed:
            pass
        except Exception as exc:  # an emulator bug: tell the client rather than leave it waiting
            log.exception("openai-realtime emulator response failed")
            with contextlib.suppress(ConnectionClosed):
                await self.send_error(f"emulator error: {type(exc).__name__}", "server_error", "server_error")

    def _usage(self, output_text: str, output_audio_ms: int) -> wire.ResponseUsage:
        text_in, audio_in = self.input_tokens()
        cached = min(self.previous_cached, text_in)
        self.previous_cached = text_in
        text_out = estimate_tokens(output_text)
        audio_out = math.ceil(output_audio_ms / 50)
        details = wire.InputTokenDetails(text_tokens=text_in, audio_tokens=audio_in, cached_tokens=cached)
        if not self.beta:
            details.image_tokens = 0
            details.cached_tokens_details = {"text_tokens": cached, "audio_tokens": 0, "image_tokens": 0}
        return wire.ResponseUsage(
            total_tokens=text_in + audio_in + text_out + audio_out,
            input_tokens=text_in + audio_in,
            output_tokens=text_out + audio_out,
            input_token_details=details,
            output_token_details=wire.OutputTokenDetails(text_tokens=text_out, audio_tokens=audio_out),
        )

    async def _start_response(self) -> wire.RealtimeResponse:
        self.current_response = response = wire.RealtimeResponse(
            id=wire.new_id("resp"),
            status="in_progress",
            output=[],
            conversation_id=None if self.beta else "conv_emulated",
        )
        await self.send(wire.ResponseCreated(response=response))
        await self.send(
            wire.RateLimitsUpdated(
                rate_limits=[
                    wire.RateLimit(name="requests", limit=5000, remaining=4999, reset_seconds=0.012),
                    wire.RateLimit(name="tokens", limit=400000, remaining=395000, reset_seconds=0.75),
                ]
            )
        )
        return response

    async def respond_with_tool_call(self, answer: BrainAnswer, at: float) -> None:
        response = await self._start_response()
        await sleep_until(at)
        async with self.lock:
            await self._emit_tool_call(response, answer)

    async def _emit_tool_call(self, response: wire.RealtimeResponse, answer: BrainAnswer) -> None:
        arguments = json.dumps(
            {"intent": answer.conversational_intent, "target_language": answer.target_language}
        )
        call_id = wire.new_id("call")
        item = wire.ConversationItem(
            id=wire.new_id("item"),
            type="function_call",
            status="in_progress",
            name=INTENT_TOOL_NAME,
            call_id=call_id,
            arguments="",
        )
        previous = self.items[-1].id if self.items else None
        await self.send(
            wire.ResponseOutputItemAdded(response_id=response.id or "", output_index=0, item=item)
        )
        await self.send(wire.ConversationItemAdded(item=item, previous_item_id=previous))
        step = max(1, math.ceil(len(arguments) / 3))
        for i in range(0, len(arguments), step):
            await self.send(
                wire.ResponseFunctionCallArgumentsDelta(
                    response_id=response.id or "",
                    item_id=item.id or "",
                    call_id=call_id,
                    delta=arguments[i : i + step],
                )
            )
        await self.send(
            wire.ResponseFunctionCallArgumentsDone(
                response_id=response.id or "",
                item_id=item.id or "",
                call_id=call_id,
                name=INTENT_TOOL_NAME,
                arguments=arguments,
            )
        )
        done_item = item.model_copy(update={"status": "completed", "arguments": arguments})
        self.items.append(done_item)
        await self.send(
            wire.ResponseOutputItemDone(response_id=response.id or "", output_index=0, item=done_item)
        )
        if not self.beta:
            await self.send(wire.ConversationItemDone(item=done_item, previous_item_id=previous))
        response.status = "completed"
        response.output = [done_item]
        response.usage = self._usage(arguments, 0)
        await self.send(wire.ResponseDone(response=response))

    async def respond_with_speech(self, answer: BrainAnswer, first_text_at: float) -> None:
        settings = self.emulator.settings
        latency = settings.latency
        stamps = self.emulator.stamps
        audio_out = "audio" in self.output_modalities()
        response = await self._start_response()
        if self.fault == "error_event":
            detail = wire.ErrorDetail(
                type="server_error",
                code="server_error",
                message="The server had an error while processing your request (emulated).",
            )
            await self.send(wire.ErrorEvent(error=detail))
            response.status = "failed"
            response.status_details = wire.ResponseStatusDetails(type="failed", error=detail)
            await self.send(wire.ResponseDone(response=response))
            return
        item = wire.ConversationItem(
            id=wire.new_id("item"), type="message", role="assistant", status="in_progress", content=[]
        )
        previous = self.items[-1].id if self.items else None
        ids = {
            "response_id": response.id or "",
            "item_id": item.id or "",
            "output_index": 0,
            "content_index": 0,
        }
        await self.send(
            wire.ResponseOutputItemAdded(response_id=response.id or "", output_index=0, item=item)
        )
        await self.send(wire.ConversationItemAdded(item=item, previous_item_id=previous))
        part_type = "audio" if audio_out else "text"
        await self.send(
            wire.ResponseContentPartAdded(
                **ids,
                part=wire.ContentPart(type=part_type, transcript="")
                if audio_out
                else wire.ContentPart(type="text", text=""),
            )
        )

        words = re.findall(r"\S+\s*", answer.text) or [answer.text]
        schedule: list[tuple[float, int, str, str]] = []
        first_text_at = max(first_text_at, time.monotonic())
        for i, word in enumerate(words):
            schedule.append((first_text_at + i * latency.token_interval_ms / 1000, 0, "text", word))
        audio_ms = 0
        if audio_out:
            pcm = pcm16_silence_tone(speech_duration_ms(answer.text), SAMPLE_RATE)
            audio_ms = len(pcm) // BYTES_PER_MS
            first_audio_at = first_text_at + latency.first_audio_extra_ms / 1000
            stamps.scheduled_first_audio.setdefault(self.stamp_key, first_audio_at)
            step_s = latency.audio_chunk_ms / 1000 * latency.audio_pacing
            for j, chunk in enumerate(chunk_audio(pcm, latency.audio_chunk_ms, SAMPLE_RATE)):
                schedule.append((first_audio_at + j * step_s, 1, "audio", base64.b64encode(chunk).decode()))
        schedule.sort(key=lambda entry: (entry[0], entry[1]))

        sent_text = sent_audio = False
        for at, _, kind, payload in schedule:
            await sleep_until(at)
            if kind == "text":
                if audio_out:
                    await self.send(wire.ResponseOutputAudioTranscriptDelta(**ids, delta=payload))
                else:
                    await self.send(wire.ResponseOutputTextDelta(**ids, delta=payload))
                if not sent_text:
                    stamps.mark(stamps.first_text, self.stamp_key)
                    sent_text = True
                    if self.fault == "malformed":
                        await self.ws.send('{"type": "response.output_audio.delta", "delta": "AAAA')
                    elif self.fault == "stall":
                        await asyncio.sleep(settings.faults.stall_s)
            else:
                await self.send(wire.ResponseOutputAudioDelta(**ids, delta=payload))
                if not sent_audio:
                    stamps.mark(stamps.first_audio, self.stamp_key)
                    sent_audio = True
                    if self.fault == "disconnect":
                        self.ws.transport.abort()
                        return

        text = answer.text
        if audio_out:
            await self.send(wire.ResponseOutputAudioDone(**ids))
            await self.send(wire.ResponseOutputAudioTranscriptDone(**ids, transcript=text))
            part = wire.ContentPart(type="audio", transcript=text)
            content = wire.ContentPart(type="audio" if self.beta else "output_audio", transcript=text)
        else:
            await self.send(wire.ResponseOutputTextDone(**ids, text=text))
            part = wire.ContentPart(type="text", text=text)
            content = wire.ContentPart(type="text" if self.beta else "output_text", text=text)
        await self.send(wire.ResponseContentPartDone(**ids, part=part))
        done_item = item.model_copy(update={"status": "completed", "content": [content]})
        self.items.append(done_item)
        await self.send(
            wire.ResponseOutputItemDone(response_id=response.id or "", output_index=0, item=done_item)
        )
        if not self.beta:
            await self.send(wire.ConversationItemDone(item=done_item, previous_item_id=previous))
        response.status = "completed"
        response.output = [done_item]
        response.usage = self._usage(text, audio_ms)
        await self.send(wire.ResponseDone(response=response))


def _deep_merge(target: dict[str, Any], update: dict[str, Any]) -> None:
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict) and value:
            _deep_merge(target[key], value)
        else:
            target[key] = copy.deepcopy(value)


class OpenAIRealtimeEmulator:
    """The server: handshake checks, fault decisions at upgrade, one ``_Connection`` per socket."""

    def __init__(self, settings: EmulatorSettings, options: OpenAIRealtimeEmulatorOptions):
        self.settings = settings
        self.options = options
        self.stamps = SendStamps()
        self.brain = EmulatedBrain(options.brain)
        self.attempts = TurnAttempts()
        self.log: list[dict[str, Any]] = []
        self._pending: dict[int, tuple[str, int, FaultKind | None]] = {}

    def initial_session(self, beta: bool) -> dict[str, Any]:
        vad = {
            "type": "server_vad",
            "threshold": 0.5,
            "prefix_padding_ms": 300,
            "silence_duration_ms": 200,
            "create_response": True,
            "interrupt_response": True,
        }
        if beta:
            return {
                "id": wire.new_id("sess"),
                "object": "realtime.session",
                "model": self.options.model,
                "modalities": ["text", "audio"],
                "instructions": "",
                "voice": "alloy",
                "input_audio_format": "pcm16",
                "output_audio_format": "pcm16",
                "input_audio_transcription": None,
                "turn_detection": vad,
                "tools": [],
                "tool_choice": "auto",
                "temperature": 0.8,
                "max_response_output_tokens": "inf",
            }
        pcm = {"type": "audio/pcm", "rate": SAMPLE_RATE}
        return {
            "type": "realtime",
            "object": "realtime.session",
            "id": wire.new_id("sess"),
            "model": self.options.model,
            "output_modalities": ["audio"],
            "instructions": "",
            "tools": [],
            "tool_choice": "auto",
            "max_output_tokens": "inf",
            "tracing": None,
            "prompt": None,
            "expires_at": int(time.time()) + 3600,
            "audio": {
                "input": {
                    "format": pcm,
                    "transcription": None,
                    "noise_reduction": None,
                    "turn_detection": {**vad, "idle_timeout_ms": None},
                },
                "output": {"format": pcm, "voice": "marin", "speed": 1.0},
            },
        }

    def answer(self, question: str, language: str | None) -> BrainAnswer:
        if not question.strip():
            return BrainAnswer(
                text="Sorry, I did not catch that. Could you repeat your question?",
                conversational_intent="clarify",
            )
        return self.brain.answer(question, language or guess_language(question) or "en")

    def process_request(self, connection: ServerConnection, request: Request) -> Response | None:
        path = urllib.parse.urlsplit(request.path).path.rstrip("/")
        if not path.endswith("/realtime"):
            return _json_response(connection, 404, "invalid_request_error", f"Invalid URL (GET {path})")
        auth = request.headers.get("Authorization", "")
        if not auth.startswith("Bearer ") or not auth[7:].strip():
            return _json_response(
                connection,
                401,
                "invalid_request_error",
                "You didn't provide an API key.",
                code="missing_api_key",
            )
        key, attempt = self.attempts.next(request.headers.get("x-bench-turn"))
        fault = pick_fault(self.settings, key, attempt)
        if fault == "rate_limit":
            response = _json_response(
                connection,
                429,
                "rate_limit_exceeded",
                "Rate limit reached (emulated).",
                code="rate_limit_exceeded",
            )
            response.headers["Retry-After"] = f"{self.settings.faults.retry_after_s:g}"
            return response
        self._pending[id(connection)] = (key, attempt, fault)
        return None

    async def handler(self, ws: ServerConnection) -> None:
        key, attempt, fault = self._pending.pop(id(ws), (f"conn-{id(ws)}", 0, None))
        headers = ws.request.headers if ws.request else {}
        beta = "realtime=v1" in headers.get("OpenAI-Beta", "")
        utterance = headers.get("x-bench-utterance")
        conn = _Connection(
            self,
            ws,
            key,
            attempt,
            fault,
            beta,
            urllib.parse.unquote(utterance) if utterance else None,
            headers.get("x-bench-language"),
        )
        try:
            await conn.send(wire.SessionCreated(session=copy.deepcopy(conn.session)))
            async for message in ws:
                await conn.handle(message)
        except ConnectionClosed:
            pass
        finally:
            if conn.response_task and not conn.response_task.done():
                conn.response_task.cancel()
                await asyncio.wait({conn.response_task})


def _json_response(
    connection: ServerConnection, status: int, type_: str, message: str, code: str | None = None
) -> Response:
    response = connection.respond(
        status, json.dumps({"error": {"type": type_, "code": code, "message": message}})
    )
    response.headers["Content-Type"] = "application/json"
    return response


async def start(settings: EmulatorSettings, **options: Any) -> RunningOpenAIRealtime:
    """Start the emulator on ``settings.host:settings.port`` (port 0 = ephemeral)."""
    emulator = OpenAIRealtimeEmulator(settings, OpenAIRealtimeEmulatorOptions(**options))
    server = await serve(
        emulator.handler,
        settings.host,
        settings.port,
        process_request=emulator.process_request,
        max_size=None,
        compression=None,
        ping_interval=None,
    )
    port = server.sockets[0].getsockname()[1] if server.sockets else settings.port

    async def closer() -> None:
        server.close()
        await server.wait_closed()

    return RunningOpenAIRealtime(f"ws://{settings.host}:{port}/v1", emulator.stamps, closer, emulator.log)
