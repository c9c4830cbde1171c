"""Loopback emulator of Vapi's side of a custom-LLM assistant: REST calls/chats, WebSocket call transport.

What it plays (vapi-server-sdk 1.9 types; Vapi docs "WebSocket Transport" and "Custom LLM"):

* ``POST /call`` with an inline ``assistant`` whose ``model`` is ``{provider: "custom-llm", url, model}`` and
  ``transport: {provider: "vapi.websocket", audioFormat}`` → a ``Call`` (``type: "vapi.websocketCall"``,
  ``status: "queued"``, ``transport.websocketCallUrl``). ``GET /call/{id}`` / ``GET /call`` return calls in
  the shape of Vapi's ``Call`` (``cost`` USD, ``costBreakdown``, ``costs[]``, ``endedReason``,
  ``artifact.messages`` / ``transcript`` / ``performanceMetrics.turnLatencies[]`` in milliseconds).
* The call transport ``ws://…/{id}/transport``: binary frames are PCM16 audio (agent speech out; caller audio
  in is accepted and only metered, the emulator has no STT), text frames are JSON. The client sends
  ``add-message`` (a user message, ``triggerResponseEnabled``), ``hangup`` / ``end-call``. Per user message
  the emulator waits an endpointing delay (``LatencyProfile.first_token_*``), POSTs the conversation to the
  custom-LLM URL as Vapi does (OpenAI chat-completions body, ``stream: true``,
  ``stream_options.include_usage``, plus ``call``, ``metadata``, ``customer``), forwards each content token
  as ``model-output``, reports streamed tool calls as ``tool-calls`` (then posts the tool result back to the
  LLM in a follow-up request, as Vapi does, and sends ``tool-calls-result``), and emulates TTS:
  ``speech-update started`` + PCM frames from first token + ``first_audio_extra_ms``, paced by
  ``audio_pacing``, then the final assistant ``transcript`` and ``speech-update stopped``. Which client
  messages are sent follows ``assistant.clientMessages`` when given.
* When the client hangs up the call is ended (``customer-ended-call``), costs are computed from the
  emulator's cost profile (``VapiCostProfile``: emulator knobs, not a price source) and, when the assistant
  has ``server.url`` / ``serverUrl``, ``status-update`` and ``end-of-call-report`` webhooks are POSTed as
  ``{"message": {...}}``. Tool calls are POSTed there as ``tool-calls`` webhooks for their result.
* ``POST /chat`` (``stream`` false → ``Chat`` JSON; true → SSE ``{id, path, delta}`` events then
  ``[DONE]``) and ``GET /chat/{id}`` for text-only chats against the same custom LLM.

Faults (``FaultPlan``, per turn key = the call/chat ``name`` or the first user text, attempts counted per
key): ``rate_limit`` → ``POST /call`` / ``POST /chat`` answered 429 with ``Retry-After``; mid-answer (after
``fault_after_tokens`` tokens) ``error_event`` → call ended with an error ``endedReason`` and the socket
closed 1011, ``disconnect`` → socket dropped without a close frame, ``malformed`` → a broken JSON frame,
``stall`` → the call goes silent. The emulator stamps the first ``model-output`` and the first audio frame
of each turn.
Where Vapi's behaviour is not documented (``model-output`` payload shape, ``add-message`` over the WebSocket
transport, the result Vapi feeds back for a tool without a server, ``[DONE]`` at the end of a chat stream) the
emulator picks the OpenAI-like reading and the adapter tolerates the alternatives.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import httpx
from aiohttp import WSMsgType, web
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from adapters.custom_llm.http import retry_after_headers, serve
from adapters.custom_llm.wire import CompletionUsage, MalformedStream, parse_sse_data
from adapters.emulators.common import (
    EmulatorSettings,
    RunningEmulator,
    SendStamps,
    chunk_audio,
    pcm16_silence_tone,
    sleep_until,
    speech_duration_ms,
)
from adapters.emulators.openai_chat import pick_fault
from adapters.vapi.wire import (
    AddMessage,
    ApiErrorBody,
    Artifact,
    AssistantSpec,
    AudioFormat,
    CallRecord,
    ChatRecord,
    ChatStreamEvent,
    ConversationUpdate,
    CostBreakdown,
    CreateCallRequest,
    CreateChatRequest,
    EndCall,
    Hangup,
    MalformedMessage,
    ModelOutput,
    PerformanceMetrics,
    SpeechUpdate,
    ToolCallFunction,
    ToolCallItem,
    ToolCalls,
    ToolCallsResult,
    TranscriptMessage,
    TurnLatency,
    UserInterrupted,
    VapiModel,
    WebhookEnvelope,
    parse_control_message,
)

DEFAULT_CLIENT_MESSAGES = (
    "conversation-update",
    "model-output",
    "speech-update",
    "transcript",
    "tool-calls",
    "tool-calls-result",
    "hang",
    "user-interrupted",
)
NO_TOOL_RESULT = "No result returned."
LLM_STATUS_REASONS = {
    400: "pipeline-error-custom-llm-400-bad-request-validation-failed",
    401: "pipeline-error-custom-llm-401-unauthorized",
    403: "pipeline-error-custom-llm-403-model-access-denied",
    429: "pipeline-error-custom-llm-429-exceeded-quota",
    500: "pipeline-error-custom-llm-500-server-error",
    503: "pipeline-error-custom-llm-503-server-overloaded-error",
}
LLM_FAILED = "pipeline-error-custom-llm-llm-failed"
FAULT_REASONS = {
    "error_event": "call.in-progress.error-vapifault-worker-died",
    "disconnect": "call.in-progress.error-vapifault-call-started-but-connection-to-transport-missing",
    "malformed": "call.in-progress.error-vapifault-worker-died",
}


class VapiCostProfile(BaseModel):
    """Emulated per-minute / per-character rates in USD. Emulator knobs that make ``cost`` non-trivial and
    visibly EMULATED; never a price source (the cost metric uses ``datasets/pricing``)."""

    model_config = ConfigDict(extra="forbid")

    vapi_per_minute: float = Field(default=0.05, ge=0)
    transport_per_minute: float = Field(default=0.0, ge=0)
    stt_per_minute: float = Field(default=0.0, ge=0)
    llm_per_minute: float = Field(default=0.0, ge=0)
    tts_per_1k_characters: float = Field(default=0.0, ge=0)
    chat_per_chat: float = Field(default=0.0, ge=0)


class VapiEmulatorOptions(BaseModel):
    model_config = ConfigDict(extra="ignore")

    cost: VapiCostProfile = VapiCostProfile()
    org_id: str = "5f0c2a91-7d1e-4c3b-9a55-0e6b8e1d2c4f"
    fault_after_tokens: int = Field(default=2, ge=0)
    llm_timeout_s: float = Field(default=20.0, gt=0)
    max_llm_rounds: int = Field(default=3, ge=1)
    webhook_timeout_s: float = Field(default=5.0, gt=0)


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _epoch_ms() -> float:
    return time.time() * 1000.0


@dataclass
class TurnTiming:
    received_at: float
    endpointing_ms: float = 0.0
    llm_started_at: float | None = None
    first_token_at: float | None = None
    first_audio_at: float | None = None


@dataclass
class CallState:
    id: str
    key: str
    attempt: int
    request: CreateCallRequest
    assistant: AssistantSpec
    fault: str | None
    sample_rate: int
    created_at: str = field(default_factory=_now_iso)
    updated_at: str = field(default_factory=_now_iso)
    status: str = "queued"
    started_at: str | None = None
    started_mono: float | None = None
    ended_at: str | None = None
    ended_mono: float | None = None
    ended_reason: str | None = None
    connected: bool = False
    fault_fired: bool = False
    conversation: list[dict[str, Any]] = field(default_factory=list)
    artifact_messages: list[dict[str, Any]] = field(default_factory=list)
    turn_latencies: list[TurnLatency] = field(default_factory=list)
    usage: CompletionUsage = field(default_factory=CompletionUsage)
    tts_characters: int = 0
    input_audio_bytes: int = 0
    turns: int = 0
    cost: float | None = None
    cost_breakdown: CostBreakdown | None = None
    costs: list[dict[str, Any]] = field(default_factory=list)
    llm_log: list[str] = field(default_factory=list)
    websocket_url: str = ""


class _CallEnded(Exception):
    """Raised inside a turn when a fault or an LLM failure ended the call."""


class VapiEmulator(RunningEmulator):
    """A running Vapi emulator; ``calls`` / ``chats`` / ``webhooks`` are exposed for tests."""

    def __init__(self, url: str, stamps: SendStamps, closer: Any, state: _Server):
        super().__init__(url, stamps, closer)
        self._state = state

    @property
    def calls(self) -> dict[str, CallState]:
        return self._state.calls

    @property
    def chats(self) -> dict[str, ChatRecord]:
        return self._state.chats

    @property
    def webhooks(self) -> list[dict[str, Any]]:
        return self._state.webhooks_sent


class _Server:
    def __init__(self, settings: EmulatorSettings, options: VapiEmulatorOptions, stamps: SendStamps):
        self.settings = settings
        self.options = options
        self.stamps = stamps
        self.url = ""
        self.calls: dict[str, CallState] = {}
        self.chats: dict[str, ChatRecord] = {}
        self.webhooks_sent: list[dict[str, Any]] = []
        self.attempts: dict[str, int] = {}
        self.http = httpx.AsyncClient(timeout=httpx.Timeout(options.llm_timeout_s, connect=5.0))
        self.tasks: set[asyncio.Task[Any]] = set()

    # --- REST ---------------------------------------------------------------------------------------------

    def _unauthorized(self, request: web.Request) -> web.Response | None:
        header = request.headers.get("Authorization", "")
        if not header.startswith("Bearer ") or not header[7:].strip():
            return _api_error(
                401,
                "Invalid Key. Hot tip, you may be using the private key instead of the public "
                "key, or vice versa.",
                "Unauthorized",
            )
        return None

    def _next_attempt(self, key: str) -> int:
        self.attempts[key] = self.attempts.get(key, 0) + 1
        return self.attempts[key]

    async def create_call(self, request: web.Request) -> web.Response:
        if (denied := self._unauthorized(request)) is not None:
            return denied
        try:
            body = CreateCallRequest.model_validate(await request.json())
        except (ValidationError, json.JSONDecodeError) as exc:
            return _api_error(400, f"invalid call request: {exc}", "Bad Request")
        if body.assistant is None:
            return _api_error(
                400,
                "the emulator needs an inline `assistant` (assistantId is not stored here)",
                "Bad Request",
            )
        problem = _custom_llm_problem(body.assistant)
        if problem:
            return _api_error(400, problem, "Bad Request")
        transport = body.transport
        if transport is None or transport.provider != "vapi.websocket":
            return _api_error(
                400, "the emulator supports transport.provider 'vapi.websocket' only", "Bad Request"
            )
        call_id = str(uuid.uuid4())
        key = body.name or call_id
        attempt = self._next_attempt(key)
        fault = pick_fault(self.settings, key, attempt)
        if fault == "rate_limit":
            return _api_error(
                429,
                "Too many requests (emulated)",
                "Too Many Requests",
                headers=retry_after_headers(self.settings.faults.retry_after_s),
            )
        audio = transport.audio_format or AudioFormat()
        ws_url = self.url.replace("http://", "ws://", 1) + f"/{call_id}/transport"
        call = CallState(
            id=call_id,
            key=key,
            attempt=attempt,
            request=body,
            assistant=body.assistant,
            fault=fault,
            sample_rate=audio.sample_rate,
            websocket_url=ws_url,
        )
        self.calls[call_id] = call
        return web.json_response(self.call_json(call), status=201)

    async def get_call(self, request: web.Request) -> web.Response:
        if (denied := self._unauthorized(request)) is not None:
            return denied
        call = self.calls.get(request.match_info["call_id"])
        if call is None:
            return _api_error(404, "Couldn't Get Call. Call Not Found.", "Not Found")
        return web.json_response(self.call_json(call))

    async def list_calls(self, request: web.Request) -> web.Response:
        if (denied := self._unauthorized(request)) is not None:
            return denied
        return web.json_response([self.call_json(c) for c in self.calls.values()])

    def call_json(self, call: CallState) -> dict[str, Any]:
        metrics = None
        if call.turn_latencies:
            metrics = PerformanceMetrics(
                turn_latencies=call.turn_latencies,
                model_latency_average=_average([t.model_latency for t in call.turn_latencies]),
                voice_latency_average=_average([t.voice_latency for t in call.turn_latencies]),
                transcriber_latency_average=_average([t.transcriber_latency for t in call.turn_latencies]),
                endpointing_latency_average=_average([t.endpointing_latency for t in call.turn_latencies]),
                turn_latency_average=_average([t.turn_latency for t in call.turn_latencies]),
            )
        transcript = "\n".join(
            f"{'AI' if m['role'] == 'bot' else 'User'}: {m['message']}"
            for m in call.artifact_messages
            if m["role"] in ("bot", "user")
        )
        record = CallRecord(
            id=call.id,
            org_id=self.options.org_id,
            created_at=call.created_at,
            updated_at=call.updated_at,
            type="vapi.websocketCall",
            status=call.status,
            started_at=call.started_at,
            ended_at=call.ended_at,
            ended_reason=call.ended_reason,
            cost=call.cost if call.cost is not None else 0.0,
            cost_breakdown=call.cost_breakdown,
            costs=call.costs or None,
            artifact=Artifact(
                messages=call.artifact_messages,
                messages_open_ai_formatted=call.conversation,
                transcript=transcript,
                performance_metrics=metrics,
            ),
            assistant=call.assistant.wire(),
            assistant_overrides=call.request.assistant_overrides,
            name=call.request.name,
            transport={
                "provider": "vapi.websocket",
                "websocketCallUrl": call.websocket_url,
                "audioFormat": AudioFormat(sample_rate=call.sample_rate).wire(),
            },
        )
        return record.wire()

    # --- call transport ---------------------------------------------------------------------------------

    async def transport(self, request: web.Request) -> web.StreamResponse:
        call = self.calls.get(request.match_info["call_id"])
        if call is None or call.connected or call.status == "ended":
            return _api_error(404, "no such call, or its transport is already in use", "Not Found")
        ws = web.WebSocketResponse(heartbeat=None, autoping=True, max_msg_size=16 * 1024 * 1024)
        await ws.prepare(request)
        call.connected = True
        call.status = "in-progress"
        call.started_at = call.updated_at = _now_iso()
        call.started_mono = time.monotonic()
        await self._webhook(call, {"type": "status-update", "status": "in-progress"})
        turn_task: asyncio.Task[Any] | None = None
        try:
            async for message in ws:
                if message.type == WSMsgType.BINARY:
                    call.input_audio_bytes += len(message.data)
                    continue
                if message.type != WSMsgType.TEXT:
                    continue
                try:
                    control = parse_control_message(message.data)
                except MalformedMessage:
                    continue  # Vapi ignores control frames it cannot read
                if isinstance(control, Hangup | EndCall):
                    break
                if isinstance(control, AddMessage):
                    call.conversation.append(
                        {"role": control.message.role, "content": control.message.content or ""}
                    )
                    if control.message.role == "user":
                        call.artifact_messages.append(
                            _artifact_message(call, "user", control.message.content or "")
                        )
                    if control.message.role == "user" and control.trigger_response_enabled:
                        if turn_task is not None and not turn_task.done():
                            turn_task.cancel()
                            await self._send(ws, call, UserInterrupted())
                        turn_task = asyncio.create_task(self._turn(ws, request, call))
                        self.tasks.add(turn_task)
                        turn_task.add_done_callback(self.tasks.discard)
        finally:
            if turn_task is not None and not turn_task.done():
                turn_task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await turn_task
            await self.end_call(call, call.ended_reason or "customer-ended-call")
            if not ws.closed:
                await ws.close(code=1000, message=b"call ended")
        return ws

    async def _send(self, ws: web.WebSocketResponse, call: CallState, message: VapiModel) -> bool:
        """Send a client message if the assistant subscribes to its type; returns whether it was sent."""
        kind = getattr(message, "type", "")
        wanted = call.assistant.client_messages
        if wanted is not None and kind not in wanted:
            return False
        if kind not in DEFAULT_CLIENT_MESSAGES and wanted is None:
            return False
        payload = message.wire()
        payload.setdefault("timestamp", _epoch_ms())
        await ws.send_str(json.dumps(payload))
        return True

    async def _turn(self, ws: web.WebSocketResponse, request: web.Request, call: CallState) -> None:
        """One assistant turn; a fault, an LLM failure or a vanished client ends it quietly."""
        try:
            await self._run_turn(ws, request, call)
        except _CallEnded:
            return
        except (ConnectionError, RuntimeError):
            return  # the client went away mid-turn; the transport handler ends the call
        except Exception:  # an emulator bug must still end the call visibly, not hang it
            await self.end_call(call, FAULT_REASONS["error_event"])
            if not ws.closed:
                await ws.close(code=1011, message=b"emulator error")

    async def _run_turn(self, ws: web.WebSocketResponse, request: web.Request, call: CallState) -> None:
        call.turns += 1
        timing = TurnTiming(received_at=time.monotonic())
        key = call.key if call.turns == 1 else f"{call.key}:{call.turns}"
        profile = self.settings.latency
        rng = profile.rng(key)
        await self._send(
            ws,
            call,
            ConversationUpdate(
                messages=list(call.artifact_messages), messages_open_ai_formatted=list(call.conversation)
            ),
        )
        timing.endpointing_ms = profile.sample_first_token_ms(rng)
        await sleep_until(timing.received_at + timing.endpointing_ms / 1000.0)
        tokens: asyncio.Queue[str | None] = asyncio.Queue()
        llm = asyncio.create_task(self._llm_rounds(ws, request, call, timing, tokens, key))
        try:
            spoken = await self._speak(ws, call, timing, tokens, key, call.turns)
            await llm
        finally:
            if not llm.done():
                llm.cancel()
                with contextlib.suppress(BaseException):
                    await llm
        call.artifact_messages.append(_artifact_message(call, "bot", spoken))
        await self._send(
            ws, call, TranscriptMessage(role="assistant", transcript_type="final", transcript=spoken)
        )
        await self._send(ws, call, SpeechUpdate(status="stopped", role="assistant", turn=call.turns))
        await self._send(
            ws,
            call,
            ConversationUpdate(
                messages=list(call.artifact_messages), messages_open_ai_formatted=list(call.conversation)
            ),
        )
        call.turn_latencies.append(_turn_latency(timing))

    async def _speak(
        self,
        ws: web.WebSocketResponse,
        call: CallState,
        timing: TurnTiming,
        tokens: asyncio.Queue[str | None],
        key: str,
        turn: int,
    ) -> str:
        """Emulated TTS: audio for the text as it arrives, first frame ``first_audio_extra_ms`` after the
        first token, paced by ``audio_pacing``. Returns the spoken text."""
        profile = self.settings.latency
        spoken: list[str] = []
        item = await tokens.get()
        scheduled = (timing.first_token_at or time.monotonic()) + profile.first_audio_extra_ms / 1000.0
        self.stamps.scheduled_first_audio.setdefault(key, scheduled)
        await sleep_until(scheduled)
        await self._send(ws, call, SpeechUpdate(status="started", role="assistant", turn=turn))
        chunk_s = profile.audio_chunk_ms / 1000.0
        next_frame = time.monotonic()
        while item is not None:
            pending = [item]
            while not tokens.empty():
                queued = tokens.get_nowait()
                if queued is None:
                    item = None
                    break
                pending.append(queued)
            text = "".join(pending)
            spoken.append(text)
            call.tts_characters += len(text)
            pcm = pcm16_silence_tone(speech_duration_ms(text), call.sample_rate)
            for frame in chunk_audio(pcm, profile.audio_chunk_ms, call.sample_rate):
                if profile.audio_pacing > 0:
                    next_frame = max(next_frame, time.monotonic())
                    await sleep_until(next_frame)
                    next_frame += chunk_s * profile.audio_pacing
                await ws.send_bytes(frame)
                if timing.first_audio_at is None:
                    timing.first_audio_at = time.monotonic()
                    self.stamps.mark(self.stamps.first_audio, key)
            if item is not None:
                item = await tokens.get()
        return "".join(spoken).strip()

    async def _llm_rounds(
        self,
        ws: web.WebSocketResponse,
        request: web.Request,
        call: CallState,
        timing: TurnTiming,
        tokens: asyncio.Queue[str | None],
        key: str,
    ) -> None:
        """Ask the custom LLM (with follow-up rounds after tool calls) and feed tokens to the TTS queue."""
        try:
            for _ in range(self.options.max_llm_rounds):
                results = await self._llm_round(ws, request, call, timing, tokens, key)
                if not results:
                    break
                for item, result in results:
                    call.conversation.append({"role": "tool", "tool_call_id": item.id, "content": result})
        finally:
            tokens.put_nowait(None)

    async def _llm_round(
        self,
        ws: web.WebSocketResponse,
        request: web.Request,
        call: CallState,
        timing: TurnTiming,
        tokens: asyncio.Queue[str | None],
        key: str,
    ) -> list[tuple[ToolCallItem, str]]:
        model = call.assistant.model or {}
        url = str(model.get("url", "")).rstrip("/")
        if not url.endswith("/chat/completions"):
            url += "/chat/completions"
        messages = [m for m in model.get("messages") or [] if isinstance(m, dict)] + call.conversation
        body: dict[str, Any] = {
            "model": model.get("model", "custom"),
            "messages": messages,
            "temperature": model.get("temperature", 0),
            "stream": True,
            "stream_options": {"include_usage": True},
            "call": self.call_json(call),
            "metadata": (call.request.assistant_overrides or {}).get("metadata")
            or call.request.metadata
            or {},
            "customer": call.request.customer or {},
        }
        tools = _openai_tools(model.get("tools"))
        if tools:
            body["tools"] = tools
        if model.get("maxTokens"):
            body["max_tokens"] = model["maxTokens"]
        headers = {"Content-Type": "application/json"}
        secret = (model.get("headers") or {}).get("Authorization")
        if secret:
            headers["Authorization"] = secret
        if timing.llm_started_at is None:
            timing.llm_started_at = time.monotonic()
        partial: dict[int, dict[str, str]] = {}
        reported: list[tuple[ToolCallItem, str]] = []
        content: list[str] = []
        sent_tokens = 0

        async def report_tool_calls() -> None:
            """A completed tool call: report it, get its result (as Vapi runs the tool), report that."""
            if not partial:
                return
            items = [
                ToolCallItem(id=p["id"], function=ToolCallFunction(name=p["name"], arguments=p["arguments"]))
                for _, p in sorted(partial.items())
            ]
            partial.clear()
            call.artifact_messages.append(
                {
                    "role": "tool_calls",
                    "message": "",
                    "time": _epoch_ms(),
                    "secondsFromStart": _seconds_from_start(call),
                    "toolCalls": [i.wire() for i in items],
                }
            )
            await self._send(
                ws,
                call,
                ToolCalls(
                    tool_call_list=items,
                    tool_with_tool_call_list=[
                        {"type": "function", "function": {"name": i.function.name}, "toolCall": i.wire()}
                        for i in items
                    ],
                ),
            )
            for item in items:
                result = await self._tool_result(call, item)
                reported.append((item, result))
                call.artifact_messages.append(
                    {
                        "role": "tool_call_result",
                        "toolCallId": item.id,
                        "name": item.function.name,
                        "result": result,
                        "time": _epoch_ms(),
                        "secondsFromStart": _seconds_from_start(call),
                    }
                )
                await self._send(
                    ws,
                    call,
                    ToolCallsResult(
                        tool_call_result={"toolCallId": item.id, "name": item.function.name, "result": result}
                    ),
                )

        try:
            async with self.http.stream("POST", url, json=body, headers=headers) as response:
                if response.status_code >= 400:
                    call.llm_log.append(f"http_{response.status_code}")
                    await self._fail(
                        ws, request, call, LLM_STATUS_REASONS.get(response.status_code, LLM_FAILED)
                    )
                async for line in response.aiter_lines():
                    if not line.startswith("data:"):
                        continue
                    event = parse_sse_data(line[5:].strip())
                    if event.done:
                        call.llm_log.append("[DONE]")
                        break
                    if event.error is not None:
                        call.llm_log.append("error")
                        await self._fail(ws, request, call, LLM_FAILED)
                    chunk = event.chunk
                    assert chunk is not None
                    if chunk.usage is not None:
                        call.llm_log.append("usage")
                        call.usage.prompt_tokens += chunk.usage.prompt_tokens
                        call.usage.completion_tokens += chunk.usage.completion_tokens
                        call.usage.total_tokens += chunk.usage.total_tokens
                    for choice in chunk.choices:
                        delta = choice.delta
                        if delta.role and not delta.content and not delta.tool_calls:
                            call.llm_log.append("role")
                        for tool in delta.tool_calls or []:
                            slot = partial.setdefault(tool.index, {"id": "", "name": "", "arguments": ""})
                            if tool.id:
                                slot["id"] = tool.id
                            if tool.function and tool.function.name:
                                slot["name"] = tool.function.name
                                call.llm_log.append("tool_call")
                            elif tool.function and tool.function.arguments:
                                call.llm_log.append("tool_call.arguments")
                            if tool.function and tool.function.arguments:
                                slot["arguments"] += tool.function.arguments
                        if delta.content:
                            await report_tool_calls()
                            if (
                                call.fault
                                and not call.fault_fired
                                and sent_tokens == self.options.fault_after_tokens
                            ):
                                await self._inject(ws, request, call)
                            call.llm_log.append("content")
                            content.append(delta.content)
                            await self._send(ws, call, ModelOutput(output=delta.content))
                            if timing.first_token_at is None:
                                timing.first_token_at = time.monotonic()
                                self.stamps.mark(self.stamps.first_text, key)
                            sent_tokens += 1
                            tokens.put_nowait(delta.content)
                        if choice.finish_reason:
                            call.llm_log.append(f"finish:{choice.finish_reason}")
                            await report_tool_calls()
        except (httpx.HTTPError, MalformedStream) as exc:
            call.llm_log.append(f"failed:{type(exc).__name__}")
            await self._fail(ws, request, call, LLM_FAILED)
        await report_tool_calls()
        if call.fault and not call.fault_fired and sent_tokens > 0:
            await self._inject(ws, request, call)
        text = "".join(content)
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if reported:
            message["tool_calls"] = [
                {
                    "id": i.id,
                    "type": "function",
                    "function": {"name": i.function.name, "arguments": i.function.arguments},
                }
                for i, _ in reported
            ]
        if text or reported:
            call.conversation.append(message)
        return reported

    async def _tool_result(self, call: CallState, item: ToolCallItem) -> str:
        """The result Vapi feeds back for a tool call: from the assistant's server URL when it has one."""
        url = _server_url(call.assistant)
        if not url:
            return NO_TOOL_RESULT
        envelope = WebhookEnvelope(
            message={
                "type": "tool-calls",
                "timestamp": _epoch_ms(),
                "call": self.call_json(call),
                "toolCallList": [item.wire()],
                "toolWithToolCallList": [
                    {"type": "function", "function": {"name": item.function.name}, "toolCall": item.wire()}
                ],
            }
        )
        self.webhooks_sent.append(envelope.wire())
        try:
            response = await self.http.post(url, json=envelope.wire(), timeout=self.options.webhook_timeout_s)
            results = response.json().get("results") or []
            for result in results:
                if result.get("toolCallId") == item.id:
                    return str(result.get("result", ""))
        except (httpx.HTTPError, ValueError, AttributeError):
            pass
        return NO_TOOL_RESULT

    async def _inject(self, ws: web.WebSocketResponse, request: web.Request, call: CallState) -> None:
        """Fire the call's planned mid-answer fault (never returns normally except for nothing-to-do)."""
        call.fault_fired = True
        fault = call.fault
        if fault == "stall":
            await asyncio.sleep(self.settings.faults.stall_s)
            raise _CallEnded()
        if fault == "malformed":
            await ws.send_str('{"type": "model-output", "output": ')
            await self._fail(ws, request, call, FAULT_REASONS["malformed"], close=False)
        if fault == "disconnect":
            call.ended_reason = FAULT_REASONS["disconnect"]
            if request.transport is not None:
                request.transport.abort()
            raise _CallEnded()
        await self._fail(ws, request, call, FAULT_REASONS.get(fault or "", FAULT_REASONS["error_event"]))

    async def _fail(
        self,
        ws: web.WebSocketResponse,
        request: web.Request,
        call: CallState,
        reason: str,
        close: bool = True,
    ) -> None:
        await self.end_call(call, reason)
        if close and not ws.closed:
            await ws.close(code=1011, message=reason.encode()[:120])
        raise _CallEnded()

    async def end_call(self, call: CallState, reason: str) -> None:
        if call.status == "ended":
            return
        call.status = "ended"
        call.ended_reason = reason
        call.ended_at = call.updated_at = _now_iso()
        call.ended_mono = time.monotonic()
        minutes = ((call.ended_mono - call.started_mono) / 60.0) if call.started_mono is not None else 0.0
        rates = self.options.cost
        transport = rates.transport_per_minute * minutes
        vapi = rates.vapi_per_minute * minutes
        stt = rates.stt_per_minute * minutes
        llm = rates.llm_per_minute * minutes
        tts = rates.tts_per_1k_characters * call.tts_characters / 1000.0
        total = transport + vapi + stt + llm + tts
        model = call.assistant.model or {}
        call.costs = [
            {"type": "transport", "provider": "vapi.websocket", "minutes": minutes, "cost": transport},
            {
                "type": "transcriber",
                "transcriber": dict(call.assistant.transcriber or {"provider": "none"}),
                "minutes": minutes,
                "cost": stt,
            },
            {
                "type": "model",
                "model": {"provider": "custom-llm", "model": model.get("model", "custom")},
                "promptTokens": call.usage.prompt_tokens,
                "completionTokens": call.usage.completion_tokens,
                "cost": llm,
            },
            {
                "type": "voice",
                "voice": dict(call.assistant.voice or {"provider": "emulated"}),
                "characters": call.tts_characters,
                "cost": tts,
            },
            {"type": "vapi", "subType": "normal", "minutes": minutes, "cost": vapi},
        ]
        call.cost_breakdown = CostBreakdown(
            transport=transport,
            stt=stt,
            llm=llm,
            tts=tts,
            vapi=vapi,
            total=total,
            llm_prompt_tokens=call.usage.prompt_tokens,
            llm_completion_tokens=call.usage.completion_tokens,
            tts_characters=call.tts_characters,
        )
        call.cost = total
        await self._webhook(call, {"type": "status-update", "status": "ended", "endedReason": reason})
        snapshot = self.call_json(call)
        await self._webhook(
            call,
            {
                "type": "end-of-call-report",
                "endedReason": reason,
                "cost": total,
                "costs": call.costs,
                "artifact": snapshot.get("artifact", {}),
                "analysis": {},
                "startedAt": call.started_at,
                "endedAt": call.ended_at,
                "call": snapshot,
            },
        )

    async def _webhook(self, call: CallState, message: dict[str, Any]) -> None:
        url = _server_url(call.assistant)
        if not url:
            return
        wanted = call.assistant.server_messages
        if wanted is not None and message["type"] not in wanted:
            return
        message.setdefault("timestamp", _epoch_ms())
        message.setdefault("call", self.call_json(call))
        envelope = WebhookEnvelope(message=message).wire()
        self.webhooks_sent.append(envelope)
        with contextlib.suppress(httpx.HTTPError):
            await self.http.post(url, json=envelope, timeout=self.options.webhook_timeout_s)

    # --- chats ------------------------------------------------------------------------------------------

    async def create_chat(self, request: web.Request) -> web.StreamResponse:
        if (denied := self._unauthorized(request)) is not None:
            return denied
        try:
            body = CreateChatRequest.model_validate(await request.json())
        except (ValidationError, json.JSONDecodeError) as exc:
            return _api_error(400, f"invalid chat request: {exc}", "Bad Request")
        if body.assistant is None:
            return _api_error(400, "the emulator needs an inline `assistant`", "Bad Request")
        problem = _custom_llm_problem(body.assistant)
        if problem:
            return _api_error(400, problem, "Bad Request")
        text = (
            body.input
            if isinstance(body.input, str)
            else " ".join(str(m.get("content", "")) for m in body.input if m.get("role") == "user")
        )
        key = body.name or text
        attempt = self._next_attempt(key)
        fault = pick_fault(self.settings, key, attempt)
        if fault == "rate_limit":
            return _api_error(
                429,
                "Too many requests (emulated)",
                "Too Many Requests",
                headers=retry_after_headers(self.settings.faults.retry_after_s),
            )
        if fault in ("error_event", "malformed", "disconnect", "stall"):
            return await self._chat_fault(request, fault)
        chat_id = str(uuid.uuid4())
        call = CallState(
            id=chat_id,
            key=key,
            attempt=attempt,
            request=CreateCallRequest(
                assistant=body.assistant, assistant_overrides=body.assistant_overrides, name=body.name
            ),
            assistant=body.assistant,
            fault=None,
            sample_rate=16000,
        )
        call.conversation.append({"role": "user", "content": text})
        if body.stream:
            return await self._chat_stream(request, body, call, chat_id, key)
        output = await self._chat_answer(call, key)
        if output is None:
            return _api_error(502, "the custom LLM failed", "Bad Gateway")
        record = self._chat_record(body, call, chat_id, text, output)
        return web.json_response(record.wire(), status=201)

    async def _chat_answer(self, call: CallState, key: str) -> list[dict[str, Any]] | None:
        tokens: asyncio.Queue[str | None] = asyncio.Queue()
        timing = TurnTiming(received_at=time.monotonic())
        sink = _NullSocket()
        try:
            await self._llm_rounds(sink, _NullRequest(), call, timing, tokens, key)  # type: ignore[arg-type]
        except _CallEnded:
            return None
        return [m for m in call.conversation[1:] if m.get("role") in ("assistant", "tool")]

    def _chat_record(
        self, body: CreateChatRequest, call: CallState, chat_id: str, text: str, output: list[dict[str, Any]]
    ) -> ChatRecord:
        rates = self.options.cost
        record = ChatRecord(
            id=chat_id,
            org_id=self.options.org_id,
            created_at=call.created_at,
            updated_at=_now_iso(),
            assistant_id=body.assistant_id,
            name=body.name,
            input=body.input,
            messages=[{"role": "user", "content": text}],
            output=output,
            cost=rates.chat_per_chat,
            costs=[
                {
                    "type": "model",
                    "model": {"provider": "custom-llm"},
                    "promptTokens": call.usage.prompt_tokens,
                    "completionTokens": call.usage.completion_tokens,
                    "cost": 0.0,
                },
                {"type": "chat", "cost": rates.chat_per_chat},
            ],
        )
        self.chats[chat_id] = record
        return record

    async def _chat_stream(
        self, request: web.Request, body: CreateChatRequest, call: CallState, chat_id: str, key: str
    ) -> web.StreamResponse:
        response = web.StreamResponse(status=200, headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        tokens: asyncio.Queue[str | None] = asyncio.Queue()
        timing = TurnTiming(received_at=time.monotonic())
        llm = asyncio.create_task(self._llm_rounds(_NullSocket(), _NullRequest(), call, timing, tokens, key))  # type: ignore[arg-type]
        while (token := await tokens.get()) is not None:
            event = ChatStreamEvent(id=chat_id, path="chat.output[0].content", delta=token)
            await response.write(f"data: {event.wire_json()}\n\n".encode())
            self.stamps.mark(self.stamps.first_text, key)
        with contextlib.suppress(_CallEnded):
            await llm
        output = [m for m in call.conversation[1:] if m.get("role") in ("assistant", "tool")]
        text = body.input if isinstance(body.input, str) else ""
        self._chat_record(body, call, chat_id, text, output)
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response

    async def _chat_fault(self, request: web.Request, fault: str) -> web.StreamResponse:
        if fault == "error_event":
            return _api_error(500, "Internal server error (emulated)", "Internal Server Error")
        if fault == "malformed":
            return web.Response(
                status=201, text='{"id": "broken", "output": [', content_type="application/json"
            )
        if fault == "disconnect":
            if request.transport is not None:
                request.transport.abort()
            return web.Response(status=500)
        await asyncio.sleep(self.settings.faults.stall_s)
        return _api_error(504, "stalled (emulated)", "Gateway Timeout")

    async def get_chat(self, request: web.Request) -> web.Response:
        if (denied := self._unauthorized(request)) is not None:
            return denied
        record = self.chats.get(request.match_info["chat_id"])
        if record is None:
            return _api_error(404, "Chat not found", "Not Found")
        return web.json_response(record.wire())

    async def close(self) -> None:
        for task in list(self.tasks):
            task.cancel()
        await self.http.aclose()


class _NullSocket:
    """Stands in for the transport when a chat (not a call) runs the LLM loop: client messages go nowhere."""

    closed = True

    async def send_str(self, data: str) -> None:
        return None

    async def send_bytes(self, data: bytes) -> None:
        return None

    async def close(self, **_: Any) -> None:
        return None


class _NullRequest:
    transport = None


def _custom_llm_problem(assistant: AssistantSpec) -> str | None:
    model = assistant.model or {}
    if model.get("provider") != "custom-llm" or not model.get("url"):
        return (
            "the emulator plays Vapi for custom-llm assistants only: assistant.model needs provider "
            "'custom-llm' and a url"
        )
    return None


def _server_url(assistant: AssistantSpec) -> str | None:
    server = assistant.server or {}
    url = server.get("url") or assistant.server_url
    return str(url) if url else None


def _openai_tools(tools: Any) -> list[dict[str, Any]]:
    """Vapi function tools (``{type: "function", function: {...}, server?}``) as OpenAI tool definitions."""
    result = []
    for tool in tools or []:
        if (
            isinstance(tool, dict)
            and tool.get("type") == "function"
            and isinstance(tool.get("function"), dict)
        ):
            result.append({"type": "function", "function": tool["function"]})
    return result


def _artifact_message(call: CallState, role: str, text: str) -> dict[str, Any]:
    now = _epoch_ms()
    return {
        "role": role,
        "message": text,
        "time": now,
        "endTime": now,
        "secondsFromStart": _seconds_from_start(call),
        "duration": 0.0,
    }


def _seconds_from_start(call: CallState) -> float:
    return (time.monotonic() - call.started_mono) if call.started_mono is not None else 0.0


def _turn_latency(timing: TurnTiming) -> TurnLatency:
    def ms(start: float | None, end: float | None) -> float | None:
        return round((end - start) * 1000.0, 3) if start is not None and end is not None else None

    return TurnLatency(
        model_latency=ms(timing.llm_started_at, timing.first_token_at),
        voice_latency=ms(timing.first_token_at, timing.first_audio_at),
        transcriber_latency=0.0,
        endpointing_latency=round(timing.endpointing_ms, 3),
        turn_latency=ms(timing.received_at, timing.first_audio_at),
    )


def _average(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def _api_error(status: int, message: str, error: str, headers: dict[str, str] | None = None) -> web.Response:
    body = ApiErrorBody(message=message, error=error, status_code=status)
    return web.json_response(body.wire(), status=status, headers=headers)


async def start(settings: EmulatorSettings, **options: Any) -> VapiEmulator:
    """Start the Vapi emulator; the REST base URL (what ``Vapi(base_url=...)`` takes) is ``url``."""
    parsed = VapiEmulatorOptions.model_validate(options)
    stamps = SendStamps()
    state = _Server(settings, parsed, stamps)
    app = web.Application()
    app.router.add_post("/call", state.create_call)
    app.router.add_get("/call", state.list_calls)
    app.router.add_get("/call/{call_id}", state.get_call)
    app.router.add_get("/{call_id}/transport", state.transport)
    app.router.add_post("/chat", state.create_chat)
    app.router.add_get("/chat/{chat_id}", state.get_chat)
    url, close_app = await serve(app, settings.host, settings.port)
    state.url = url

    async def close() -> None:
        await state.close()
        await close_app()

    return VapiEmulator(url, stamps, close, state)
