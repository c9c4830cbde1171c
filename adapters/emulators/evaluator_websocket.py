"""Loopback emulator for the generic endpoints: the seed-000 ``evaluator.init`` WebSocket protocol, a raw
PCM-over-WebSocket protocol and a JSON-over-HTTP protocol, answering with ``EmulatedBrain``.

WebSocket transport (default), one port:
- any path except ``/pcm``: the evaluator protocol. Strict order: ``evaluator.init`` first (else an ``error``
  event and close 1002), then binary PCM16 frames and ``input_audio_buffer.commit`` (or a
  ``conversation.item.create`` text item), then ``response.create``. Answer: ``response.created``,
  [``conversation.item.input_audio_transcription.completed``], [``response.function_call_arguments.done`` for
  ``set_conversational_intent``], interleaved ``response.output_audio_transcript.delta`` /
  ``response.output_audio.delta`` (GA names, or beta names with ``event_names: beta``),
  ``response.output_audio.done``, ``response.output_audio_transcript.done``, ``response.done`` with usage and
  ``metadata`` (intent, target language, retrieved context).
- ``/pcm``: the raw PCM protocol: JSON ``start`` → binary PCM16 → JSON ``end`` (or JSON ``text``); answer:
  JSON ``transcript`` messages, JSON ``tool_call``, binary PCM16 at the requested output rate, JSON ``end``
  (omitted with ``pcm_end_message: false``, to exercise silence/idle end-of-turn detection).
- ``GET /stamps`` (plain HTTP): the send-stamp side channel, a ``StampsReport`` JSON document.

HTTP transport (``transport: http``): ``POST /turn`` with ``{text, language, session_id, audio?}`` →
``{answer, conversational_intent, target_language, retrieved_context, session_id, audio_b64?}``;
``GET /stamps``.

Timing: each response is scheduled from the moment ``response.create`` / ``end`` / the request arrives, per
``settings.latency`` seeded by the turn key (the session id; ``<session>#<n>`` for the n-th later turn of
the same session). The first text and first audio frames are sent with a precise sleep; ``time.monotonic()``
is stamped right after the frame is written (``stamps.first_text`` / ``stamps.first_audio``) beside the
scheduled time (``stamps.scheduled_first_audio``). The timing benchmark reads them through ``GET /stamps``
(a side channel, so the protocol frames stay unchanged).

Faults (``settings.faults`` via the shared ``pick_fault``: seeded on ``<turn key>#<attempt>``, so a retry draws
again, and ``first_attempt_only`` spares retries; decided on the WebSocket upgrade when the client sends the
``X-Evaluator-Session`` header): ``rate_limit`` = HTTP 429 + Retry-After (upgrade rejection / HTTP
response; an ``error`` event with ``code: rate_limit_exceeded`` when the session is only known after the
upgrade), ``error_event`` = ``error`` event / HTTP 500, ``malformed`` = a truncated JSON frame / body,
``disconnect`` = the TCP connection is aborted right after the first audio frame (HTTP: before the
response), ``stall`` = nothing more is sent for ``faults.stall_s``.

Standalone: ``python -m adapters.emulators.evaluator_websocket [--port N] [--transport http]
[--settings JSON] [--options JSON]`` prints ``LISTENING <url>`` and serves until terminated.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import gc
import json
import re
import signal
import time
import uuid
from http import HTTPStatus
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from adapters.emulators.brain import BrainAnswer, BrainProfile, EmulatedBrain
from adapters.emulators.common import (
    EmulatorSettings,
    RunningEmulator,
    SendStamps,
    chunk_audio,
    pcm16_silence_tone,
    pick_fault,
    sleep_until,
    speech_duration_ms,
)
from adapters.generic import wire
from adapters.intent_tool import INTENT_TOOL_NAME

SESSION_HEADER = "X-Evaluator-Session"
_UNDECIDED = "undecided"
_TOKEN = re.compile(r"\S+\s*")


class EvaluatorEmulatorOptions(BaseModel):
    """Start options of this emulator (beside the common ``EmulatorSettings``)."""

    model_config = ConfigDict(extra="forbid")

    transport: Literal["websocket", "http"] = "websocket"
    brain: dict[str, Any] = Field(default_factory=dict)
    event_names: Literal["ga", "beta"] = "ga"
    max_audio_ms: int | None = Field(default=None, ge=0, description="cap on the spoken answer's audio length")
    answer_text: str | None = Field(default=None, description="fixed reply instead of the brain (benchmarks)")
    pcm_end_message: bool = True
    pcm_trailing_silence_ms: int = Field(default=0, ge=0, description="silent PCM after the answer (pcm mode)")
    pcm_output_sample_rate: int | None = Field(default=None, description="override the rate asked for in start")


class EvaluatorRunning(RunningEmulator):
    """RunningEmulator with access to the emulator (``received``: client message order per session)."""

    def __init__(self, url: str, emulator: EvaluatorEmulator, closer: Any):
        super().__init__(url, emulator.stamps, closer)
        self.emulator = emulator


class EvaluatorEmulator:
    """Protocol handlers and per-turn state shared by the three transports."""

    def __init__(self, settings: EmulatorSettings, options: EvaluatorEmulatorOptions):
        self.settings = settings
        self.options = options
        self.stamps = SendStamps()
        self.brain = EmulatedBrain(BrainProfile(**options.brain)) if options.answer_text is None else None
        #: client messages per session in arrival order ("binary_audio" for a binary frame)
        self.received: dict[str, list[str]] = {}
        #: the evaluator.init request / pcm start message per session, and user audio bytes received
        self.init_requests: dict[str, dict[str, Any]] = {}
        self.audio_bytes: dict[str, int] = {}
        self._answers: dict[tuple[str, str], BrainAnswer] = {}
        self._attempts: dict[str, int] = {}
        self._completed: dict[str, int] = {}
        self._audio: dict[tuple[int, int, int], tuple[list[bytes], list[str]]] = {}
        self._upgrade_faults: dict[Any, str | None] = {}
        self._tasks: set[asyncio.Task[Any]] = set()

    # ------------------------------------------------------------------------------------------ helpers

    def turn_key(self, session_id: str) -> str:
        done = self._completed.get(session_id, 0)
        return session_id if done == 0 else f"{session_id}#{done}"

    def decide_fault(self, key: str) -> str | None:
        """The fault for this attempt at turn ``key`` (shared convention: seeded on ``key#attempt``)."""
        attempt = self._attempts.get(key, 0)
        self._attempts[key] = attempt + 1
        return pick_fault(self.settings, key, attempt)

    def answer(self, question: str, language: str | None) -> BrainAnswer:
        if self.options.answer_text is not None:
            return BrainAnswer(text=self.options.answer_text, target_language=None)
        cache_key = (question, language or "en")
        if cache_key not in self._answers:
            assert self.brain is not None
            self._answers[cache_key] = self.brain.answer(question, language or "en")
        return self._answers[cache_key]

    def routes_intents(self) -> bool:
        return self.brain is not None and self.brain.profile.route_intents

    def schedule(self, key: str) -> tuple[float, float]:
        """(first text, first audio) offsets in seconds from the turn's start."""
        latency = self.settings.latency
        first_token = latency.sample_first_token_ms(latency.rng(key)) / 1000
        return first_token, first_token + latency.first_audio_extra_ms / 1000

    def audio(self, text: str, sample_rate: int) -> tuple[list[bytes], list[str]]:
        """Deterministic tone standing in for speech, chunked (raw and base64), cached by duration."""
        duration = speech_duration_ms(text)
        if self.options.max_audio_ms is not None:
            duration = min(duration, self.options.max_audio_ms)
        chunk_ms = self.settings.latency.audio_chunk_ms
        cache_key = (duration, chunk_ms, sample_rate)
        if cache_key not in self._audio:
            chunks = chunk_audio(pcm16_silence_tone(max(duration, chunk_ms), sample_rate), chunk_ms, sample_rate)
            self._audio[cache_key] = (chunks, [base64.b64encode(c).decode("ascii") for c in chunks])
        return self._audio[cache_key]

    def stamps_report(self) -> bytes:
        return (
            wire.StampsReport(
                first_text=self.stamps.first_text,
                first_audio=self.stamps.first_audio,
                scheduled_first_audio=self.stamps.scheduled_first_audio,
            )
            .model_dump_json()
            .encode()
        )

    def _name(self, name: str) -> str:
        return wire.BETA_NAMES.get(name, name) if self.options.event_names == "beta" else name

    def _record(self, session_id: str, label: str, size: int = 0) -> None:
        self.received.setdefault(session_id, []).append(label)
        if size:
            self.audio_bytes[session_id] = self.audio_bytes.get(session_id, 0) + size

    async def _stream(
        self,
        key: str,
        t0: float,
        text: str,
        sample_rate: int,
        send_text: Any,
        send_audio: Any,
        cut_after_first_audio: bool,
        b64: bool,
    ) -> bool:
        """Send text deltas and audio chunks on schedule; False when cut after the first audio frame."""
        latency = self.settings.latency
        first_token_s, first_audio_s = self.schedule(key)
        raw, encoded = self.audio(text, sample_rate)
        chunks = encoded if b64 else raw
        token_step = latency.token_interval_ms / 1000
        audio_step = latency.audio_chunk_ms * latency.audio_pacing / 1000
        timeline: list[tuple[float, int, int, Any]] = [
            (t0 + first_token_s + i * token_step, 0, i, token) for i, token in enumerate(_TOKEN.findall(text) or [text])
        ]
        timeline += [(t0 + first_audio_s + j * audio_step, 1, j, chunk) for j, chunk in enumerate(chunks)]
        timeline.sort(key=lambda item: (item[0], item[1], item[2]))
        self.stamps.scheduled_first_audio[key] = t0 + first_audio_s
        for when, kind, index, payload in timeline:
            if index == 0:
                await sleep_until(when)  # precise for the frames that are timed
            else:
                remaining = when - time.monotonic()
                if remaining > 0:
                    await asyncio.sleep(remaining)
            if kind == 0:
                await send_text(payload)
                if index == 0:
                    self.stamps.mark(self.stamps.first_text, key)
            else:
                await send_audio(payload)
                if index == 0:
                    self.stamps.mark(self.stamps.first_audio, key)
                    if cut_after_first_audio:
                        return False
        return True

    # ------------------------------------------------------------------------------- websocket server

    async def process_request(self, connection: Any, request: Any) -> Any:
        if request.path.split("?")[0] == "/stamps":
            response = connection.respond(HTTPStatus.OK, self.stamps_report().decode())
            response.headers["Content-Type"] = "application/json"
            return response
        session_id = request.headers.get(SESSION_HEADER)
        if session_id:
            fault = self.decide_fault(self.turn_key(session_id))
            if fault == "rate_limit":
                response = connection.respond(HTTPStatus.TOO_MANY_REQUESTS, "rate limited (emulated)\n")
                response.headers["Retry-After"] = _seconds(self.settings.faults.retry_after_s)
                return response
            self._upgrade_faults[connection.id] = fault
        return None

    async def handler(self, connection: Any) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            pre_fault = self._upgrade_faults.pop(connection.id, _UNDECIDED)
            path = connection.request.path.split("?")[0] if connection.request else "/"
            if path.rstrip("/") == "/pcm":
                await self._pcm(connection, pre_fault)
            else:
                await self._evaluator(connection, pre_fault)
        except Exception as exc:  # a client that goes away mid-turn is normal
            from websockets.exceptions import ConnectionClosed

            if not isinstance(exc, ConnectionClosed):
                raise
        finally:
            if task is not None:
                self._tasks.discard(task)

    async def _evaluator(self, ws: Any, pre_fault: str | None) -> None:
        init: wire.InitRequest | None = None
        audio_bytes = 0
        text: str | None = None
        async for message in ws:
            if isinstance(message, bytes):
                if init is None:
                    await self._protocol_error(ws, "binary audio before evaluator.init")
                    return
                self._record(init.session_id, "binary_audio", len(message))
                audio_bytes += len(message)
                continue
            try:
                data = json.loads(message)
                kind = data.get("type")
            except (ValueError, AttributeError):
                await self._send_error(ws, "invalid_request_error", "invalid_json", "message is not a JSON object")
                continue
            if init is None:
                if kind != "evaluator.init":
                    await self._protocol_error(ws, f"expected evaluator.init first, got {kind!r}")
                    return
                try:
                    init = wire.EvaluatorInit.model_validate(data).request
                except ValidationError as exc:
                    await self._protocol_error(ws, f"invalid evaluator.init: {exc.errors()[0]['msg']}")
                    return
                self._record(init.session_id, "evaluator.init")
                self.init_requests[init.session_id] = data["request"]
                continue
            self._record(init.session_id, str(kind))
            if kind == "conversation.item.create":
                try:
                    item = wire.ConversationItemCreate.model_validate(data).item
                except ValidationError as exc:
                    await self._send_error(ws, "invalid_request_error", "invalid_item", exc.errors()[0]["msg"])
                    continue
                text = " ".join(part.text for part in item.content)
            elif kind == "response.create":
                question = text if text is not None else (init.transcript_hint or "")
                if text is None and audio_bytes == 0:
                    await self._send_error(ws, "invalid_request_error", "empty_input", "no input to respond to")
                    continue
                key = self.turn_key(init.session_id)
                fault = pre_fault if pre_fault != _UNDECIDED else self.decide_fault(key)
                pre_fault = _UNDECIDED
                completed = await self._respond_evaluator(
                    ws, key, question, init.language, fault, audio_turn=text is None, audio_bytes=audio_bytes
                )
                if completed:
                    self._completed[init.session_id] = self._completed.get(init.session_id, 0) + 1
                else:
                    return
                text, audio_bytes = None, 0
            elif kind == "evaluator.init":
                await self._send_error(ws, "invalid_request_error", "duplicate_init", "evaluator.init sent twice")

    async def _respond_evaluator(
        self,
        ws: Any,
        key: str,
        question: str,
        language: str | None,
        fault: str | None,
        *,
        audio_turn: bool,
        audio_bytes: int,
    ) -> bool:
        t0 = time.monotonic()
        response_id = f"resp_{uuid.uuid4().hex[:16]}"
        await ws.send(
            json.dumps({"type": "response.created", "response": {"id": response_id, "status": "in_progress"}})
        )
        if audio_turn and question:
            await ws.send(
                json.dumps(
                    {
                        "type": "conversation.item.input_audio_transcription.completed",
                        "item_id": f"item_{response_id}",
                        "content_index": 0,
                        "transcript": question,
                    }
                )
            )
        if fault == "stall":
            await asyncio.sleep(self.settings.faults.stall_s)
            return False
        first_token_s, _ = self.schedule(key)
        if fault in ("error_event", "malformed", "rate_limit"):
            await sleep_until(t0 + first_token_s)
            if fault == "error_event":
                await self._send_error(ws, "server_error", "server_error", "emulated server error")
            elif fault == "rate_limit":
                await ws.send(
                    json.dumps(
                        {
                            "type": "error",
                            "error": {
                                "type": "rate_limit_error",
                                "code": "rate_limit_exceeded",
                                "message": "rate limited (emulated)",
                                "retry_after_s": self.settings.faults.retry_after_s,
                            },
                        }
                    )
                )
            else:
                await ws.send('{"type": "response.output_audio.delta", "delta": ')
            return False
        answer = self.answer(question, language)
        if self.routes_intents():
            await sleep_until(t0 + first_token_s)
            arguments = {"intent": answer.conversational_intent, "target_language": answer.target_language}
            await ws.send(
                json.dumps(
                    {
                        "type": "response.function_call_arguments.done",
                        "response_id": response_id,
                        "call_id": f"call_{response_id[5:]}",
                        "name": INTENT_TOOL_NAME,
                        "arguments": json.dumps(arguments),
                    }
                )
            )
        text_type = self._name("response.output_audio_transcript.delta")
        audio_type = self._name("response.output_audio.delta")

        async def send_text(token: str) -> None:
            await ws.send(json.dumps({"type": text_type, "response_id": response_id, "delta": token}))

        async def send_audio(b64: str) -> None:
            # audio frames are the hot path: build the JSON by hand (base64 needs no escaping)
            await ws.send(f'{{"type": "{audio_type}", "response_id": "{response_id}", "delta": "{b64}"}}')

        finished = await self._stream(
            key,
            t0,
            answer.text,
            24000,
            send_text,
            send_audio,
            cut_after_first_audio=fault == "disconnect",
            b64=True,
        )
        if not finished:
            ws.transport.abort()
            return False
        audio_ms = len(b"".join(self.audio(answer.text, 24000)[0])) / 48
        await ws.send(json.dumps({"type": self._name("response.output_audio.done"), "response_id": response_id}))
        await ws.send(
            json.dumps(
                {
                    "type": self._name("response.output_audio_transcript.done"),
                    "response_id": response_id,
                    "transcript": answer.text,
                }
            )
        )
        input_words = len(question.split())
        usage = {
            "input_tokens": 0,
            "output_tokens": 0,
            "input_token_details": {
                "text_tokens": 0 if audio_turn else int(input_words * 1.3) + 1,
                "audio_tokens": int(audio_bytes / 48 / 100) if audio_turn else 0,
                "cached_tokens": 0,
            },
            "output_token_details": {
                "text_tokens": int(len(answer.text.split()) * 1.3) + 1,
                "audio_tokens": int(audio_ms / 50),
            },
        }
        usage["input_tokens"] = sum(v for k, v in usage["input_token_details"].items() if k != "cached_tokens")
        usage["output_tokens"] = sum(usage["output_token_details"].values())
        usage["total_tokens"] = usage["input_tokens"] + usage["output_tokens"]
        await ws.send(
            json.dumps(
                {
                    "type": "response.done",
                    "response": {
                        "id": response_id,
                        "status": "completed",
                        "usage": usage,
                        "metadata": {
                            "conversational_intent": answer.conversational_intent,
                            "target_language": answer.target_language,
                            "retrieved_context": answer.retrieved_context,
                        },
                    },
                }
            )
        )
        return True

    async def _pcm(self, ws: Any, pre_fault: str | None) -> None:
        start: wire.PcmStart | None = None
        audio_bytes = 0
        async for message in ws:
            if isinstance(message, bytes):
                if start is None:
                    await self._pcm_error(ws, "protocol_error", "binary audio before start", close=True)
                    return
                self._record(start.session_id, "binary_audio", len(message))
                audio_bytes += len(message)
                continue
            try:
                data = json.loads(message)
                kind = data.get("type")
            except (ValueError, AttributeError):
                await self._pcm_error(ws, "invalid_json", "control message is not a JSON object")
                continue
            if start is None:
                if kind != "start":
                    await self._pcm_error(ws, "protocol_error", f"expected start first, got {kind!r}", close=True)
                    return
                try:
                    start = wire.PcmStart.model_validate(data)
                except ValidationError as exc:
                    await self._pcm_error(ws, "protocol_error", f"invalid start: {exc.errors()[0]['msg']}", close=True)
                    return
                self._record(start.session_id, "start")
                self.init_requests[start.session_id] = data
                continue
            self._record(start.session_id, str(kind))
            if kind not in ("text", "end"):
                continue
            if kind == "text":
                question, audio_turn = wire.PcmText.model_validate(data).text, False
            else:
                if audio_bytes == 0:
                    await self._pcm_error(ws, "empty_input", "end without audio")
                    continue
                question, audio_turn = start.transcript_hint or "", True
            key = self.turn_key(start.session_id)
            fault = pre_fault if pre_fault != _UNDECIDED else self.decide_fault(key)
            pre_fault = _UNDECIDED
            if not await self._respond_pcm(ws, key, question, start, fault, audio_turn):
                return
            self._completed[start.session_id] = self._completed.get(start.session_id, 0) + 1
            audio_bytes = 0

    async def _respond_pcm(
        self, ws: Any, key: str, question: str, start: wire.PcmStart, fault: str | None, audio_turn: bool
    ) -> bool:
        t0 = time.monotonic()
        if audio_turn and question:
            await ws.send(json.dumps({"type": "transcript", "role": "user", "text": question, "final": True}))
        if fault == "stall":
            await asyncio.sleep(self.settings.faults.stall_s)
            return False
        first_token_s, _ = self.schedule(key)
        if fault in ("error_event", "malformed", "rate_limit"):
            await sleep_until(t0 + first_token_s)
            if fault == "error_event":
                await self._pcm_error(ws, "server_error", "emulated server error", retryable=True)
            elif fault == "rate_limit":
                await ws.send(
                    json.dumps(
                        {
                            "type": "error",
                            "code": "rate_limit_exceeded",
                            "retryable": True,
                            "message": "rate limited (emulated)",
                            "retry_after_s": self.settings.faults.retry_after_s,
                        }
                    )
                )
            else:
                await ws.send('{"type": "transcript", "text": ')
            return False
        answer = self.answer(question, start.language)
        if self.routes_intents():
            await sleep_until(t0 + first_token_s)
            await ws.send(
                json.dumps(
                    {
                        "type": "tool_call",
                        "call_id": f"call_{uuid.uuid4().hex[:12]}",
                        "name": INTENT_TOOL_NAME,
                        "arguments": {
                            "intent": answer.conversational_intent,
                            "target_language": answer.target_language,
                        },
                    }
                )
            )
        rate = self.options.pcm_output_sample_rate or start.output_sample_rate

        async def send_text(token: str) -> None:
            await ws.send(json.dumps({"type": "transcript", "role": "agent", "text": token, "final": False}))

        async def send_audio(chunk: bytes) -> None:
            await ws.send(chunk)

        finished = await self._stream(
            key,
            t0,
            answer.text,
            rate,
            send_text,
            send_audio,
            cut_after_first_audio=fault == "disconnect",
            b64=False,
        )
        if not finished:
            ws.transport.abort()
            return False
        if self.options.pcm_trailing_silence_ms:
            chunk_ms = self.settings.latency.audio_chunk_ms
            silence = bytes(int(rate * chunk_ms / 1000) * 2)
            for _ in range(max(1, self.options.pcm_trailing_silence_ms // chunk_ms)):
                await ws.send(silence)
                await asyncio.sleep(chunk_ms * self.settings.latency.audio_pacing / 1000)
        await ws.send(json.dumps({"type": "transcript", "role": "agent", "text": answer.text, "final": True}))
        if self.options.pcm_end_message:
            await ws.send(
                json.dumps(
                    {
                        "type": "end",
                        "conversational_intent": answer.conversational_intent,
                        "target_language": answer.target_language,
                        "retrieved_context": answer.retrieved_context,
                    }
                )
            )
        return True

    async def _send_error(self, ws: Any, error_type: str, code: str, message: str) -> None:
        await ws.send(json.dumps({"type": "error", "error": {"type": error_type, "code": code, "message": message}}))

    async def _protocol_error(self, ws: Any, message: str) -> None:
        await self._send_error(ws, "invalid_request_error", "protocol_error", message)
        await ws.close(1002, "protocol error")

    async def _pcm_error(
        self, ws: Any, code: str, message: str, *, close: bool = False, retryable: bool = False
    ) -> None:
        await ws.send(json.dumps({"type": "error", "code": code, "message": message, "retryable": retryable}))
        if close:
            await ws.close(1002, "protocol error")

    # ------------------------------------------------------------------------------------ http server

    async def http_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        import h11

        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        conn = h11.Connection(h11.SERVER)
        try:
            while True:
                request, body = await _read_http_request(conn, reader)
                if request is None:
                    break
                keep = await self._http_route(conn, writer, request, body)
                if not keep or conn.our_state is h11.MUST_CLOSE or conn.their_state is h11.MUST_CLOSE:
                    break
                try:
                    conn.start_next_cycle()
                except h11.LocalProtocolError:
                    break
        except (ConnectionError, h11.RemoteProtocolError):
            pass
        except asyncio.CancelledError:
            # stopped by close(): end quietly (asyncio.start_server on 3.11 logs a cancelled client task)
            writer.transport.abort()
        finally:
            if task is not None:
                self._tasks.discard(task)
            writer.close()

    async def _http_route(self, conn: Any, writer: asyncio.StreamWriter, request: Any, body: bytes) -> bool:
        method = request.method.decode()
        target = request.target.decode().split("?")[0]
        if method == "GET" and target == "/stamps":
            await _http_send(conn, writer, 200, self.stamps_report())
            return True
        if method != "POST":
            await _http_send(conn, writer, 405, _error_body("invalid_request_error", "method_not_allowed", method))
            return True
        t0 = time.monotonic()
        try:
            turn = wire.HttpTurnRequest.model_validate_json(body)
        except ValidationError as exc:
            await _http_send(
                conn,
                writer,
                400,
                _error_body("invalid_request_error", "invalid_body", exc.errors()[0]["msg"]),
            )
            return True
        key = self.turn_key(turn.session_id)
        fault = self.decide_fault(key)
        if fault == "rate_limit":
            await _http_send(
                conn,
                writer,
                429,
                _error_body("rate_limit_error", "rate_limit_exceeded", "emulated"),
                [("retry-after", _seconds(self.settings.faults.retry_after_s))],
            )
            return True
        if fault == "stall":
            await asyncio.sleep(self.settings.faults.stall_s)
            return False
        answer = self.answer(turn.text, turn.language)
        first_token_s, _ = self.schedule(key)
        tokens = _TOKEN.findall(answer.text)
        ready = t0 + first_token_s + max(0, len(tokens) - 1) * self.settings.latency.token_interval_ms / 1000
        self.stamps.scheduled_first_audio[key] = ready
        await sleep_until(ready)
        if fault == "disconnect":
            writer.transport.abort()
            return False
        if fault == "error_event":
            await _http_send(conn, writer, 500, _error_body("server_error", "server_error", "emulated server error"))
            return True
        if fault == "malformed":
            await _http_send(conn, writer, 200, b'{"answer": ')
            return True
        payload = wire.HttpTurnResponse(
            answer=answer.text,
            conversational_intent=answer.conversational_intent,
            target_language=answer.target_language,
            retrieved_context=answer.retrieved_context,
            session_id=turn.session_id,
            audio_b64=base64.b64encode(b"".join(self.audio(answer.text, 24000)[0])).decode() if turn.audio else None,
        )
        await _http_send(conn, writer, 200, payload.model_dump_json(exclude_none=True).encode())
        self.stamps.mark(self.stamps.first_text, key)
        if turn.audio:
            self.stamps.mark(self.stamps.first_audio, key)
        self._completed[turn.session_id] = self._completed.get(turn.session_id, 0) + 1
        return True

    async def cancel_handlers(self) -> None:
        tasks = [t for t in self._tasks if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)


def _seconds(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _error_body(error_type: str, code: str, message: str) -> bytes:
    return json.dumps({"error": {"type": error_type, "code": code, "message": message}}).encode()


async def _read_http_request(conn: Any, reader: asyncio.StreamReader) -> tuple[Any, bytes]:
    import h11

    request = None
    body = bytearray()
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            conn.receive_data(await reader.read(65536))
        elif isinstance(event, h11.Request):
            request = event
        elif isinstance(event, h11.Data):
            body += event.data
        elif isinstance(event, h11.EndOfMessage):
            return request, bytes(body)
        else:  # ConnectionClosed or PAUSED
            return None, b""


async def _http_send(
    conn: Any,
    writer: asyncio.StreamWriter,
    status: int,
    payload: bytes,
    headers: list[tuple[str, str]] | None = None,
) -> None:
    import h11

    all_headers = [
        ("content-type", "application/json"),
        ("content-length", str(len(payload))),
        *(headers or []),
    ]
    writer.write(conn.send(h11.Response(status_code=status, headers=all_headers)))
    writer.write(conn.send(h11.Data(data=payload)))
    writer.write(conn.send(h11.EndOfMessage()))
    await writer.drain()


async def start(settings: EmulatorSettings, **options: Any) -> EvaluatorRunning:
    """Start the emulator on ``settings.host:settings.port`` (port 0 = ephemeral)."""
    opts = EvaluatorEmulatorOptions.model_validate(options)
    emulator = EvaluatorEmulator(settings, opts)
    if opts.transport == "http":
        server = await asyncio.start_server(emulator.http_connection, settings.host, settings.port)
        port = server.sockets[0].getsockname()[1]

        async def close_http() -> None:
            server.close()
            await emulator.cancel_handlers()
            await server.wait_closed()

        return EvaluatorRunning(f"http://{settings.host}:{port}", emulator, close_http)

    from websockets.asyncio.server import serve

    ws_server = await serve(
        emulator.handler,
        settings.host,
        settings.port,
        process_request=emulator.process_request,
        compression=None,
        max_size=None,
    )
    port = ws_server.sockets[0].getsockname()[1]

    async def close_ws() -> None:
        await emulator.cancel_handlers()
        ws_server.close()
        await ws_server.wait_closed()

    return EvaluatorRunning(f"ws://{settings.host}:{port}", emulator, close_ws)


async def _serve_forever(settings: EmulatorSettings, options: dict[str, Any], freeze_gc: bool = False) -> None:
    running = await start(settings, **options)
    if freeze_gc:
        gc.collect()
        gc.freeze()  # modules and the knowledge base leave the collector's view: shorter pauses
    print(f"LISTENING {running.url}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await running.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m adapters.emulators.evaluator_websocket",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--transport", choices=["websocket", "http"], default="websocket")
    parser.add_argument("--settings", default="{}", help="EmulatorSettings as JSON (latency, faults)")
    parser.add_argument("--options", default="{}", help="start options as JSON (brain, max_audio_ms, ...)")
    parser.add_argument("--gc-freeze", action="store_true", help="gc.freeze() once started (timing runs)")
    args = parser.parse_args(argv)
    settings = EmulatorSettings.model_validate({**json.loads(args.settings), "host": args.host, "port": args.port})
    options = {**json.loads(args.options), "transport": args.transport}
    asyncio.run(_serve_forever(settings, options, args.gc_freeze))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
