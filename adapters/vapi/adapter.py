"""The Vapi adapter: our in-house stack behind Vapi's custom-LLM mode, one Vapi call (or chat) per turn.

The harness hosts the custom LLM (``adapters.custom_llm.CustomLlmServer`` around the configured orchestrator,
``options.orchestrator``, default the reference stack). Per turn:

* **call channel** (emulated mode, and live audio turns): ``POST /call`` with an inline assistant (``model:
  {provider: "custom-llm", url, model}``, the ``set_conversational_intent`` tool declared, the caller language
  in ``assistantOverrides.variableValues``) or ``options.assistant_id``, on the ``vapi.websocket`` transport;
  connect to ``transport.websocketCallUrl``, send the user turn (``add-message``, or PCM16 frames paced in
  real time followed by silence for endpointing), yield ``UserTurnSent``, then relay ``model-output`` →
  ``TextDelta``, binary frames → ``AudioDelta``, ``tool-calls`` → ``ToolCall`` (the intent),
  ``tool-calls-result`` → ``ToolResult``, ``transcript`` → ``Transcript``; the turn ends at the assistant's
  ``speech-update stopped``. Then ``hangup``, and the call is read back (``GET /call/{id}``, polled until it
  has ended and carries its cost) for ``Usage``: ``cost`` (USD), billed minutes and
  ``artifact.performanceMetrics.turnLatencies`` as ``vapi_turn_latency``, ``vapi_model_latency``,
  ``vapi_voice_latency``, ``vapi_transcriber_latency``, ``vapi_endpointing_latency`` (ms).
* **chat channel** (live text turns by default): ``chats.create(input, assistant)``; one ``TextDelta`` with
  the whole answer (the chat API answers in one piece, so TTFT equals completion there), ``cost`` read from
  the chat (a chat has no performance metrics).

Labels that never cross Vapi's API (retrieved context, the stack's own compliance flag) come from the
custom-LLM server's record of the turn. ``emulated`` mode starts the Vapi
emulator and talks to it with httpx + websockets; ``live`` uses vapi-server-sdk (``VAPI_API_KEY``,
``options.base_url``) and needs ``options.custom_llm_url`` (the public URL Vapi calls, tunnelled to
``options.custom_llm_host``:``options.custom_llm_port``) unless ``options.assistant_id`` names an assistant
already pointing there. Nothing falls back from live to emulated.

Options: ``orchestrator`` / ``orchestrator_options``, ``channel`` (``auto`` | ``call`` | ``chat``),
``assistant_id``, ``custom_llm_url`` / ``custom_llm_host`` / ``custom_llm_port``, ``custom_llm_api_key_env``
(env var holding the secret Vapi must send to the custom LLM), ``model_name``, ``voice`` / ``transcriber``
(inline assistant), ``declare_intent_tool`` (default true), ``default_language``, ``sample_rate`` (16000),
``readback_timeout_s`` (live 15, emulated 5), ``hangup_timeout_s`` (5), ``stall_timeout_s`` (none: the
runner's turn timeout applies), ``base_url`` (live), ``emulator`` (``EmulatorSettings``: ``latency``,
``faults``; other keys such as ``cost`` go to the emulator), ``emulator_options``.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import os
import time
from collections.abc import AsyncIterator
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus

from adapters.base import (
    AdapterBase,
    AdapterError,
    AudioDelta,
    Capabilities,
    NormalizedEvent,
    TextDelta,
    ToolCall,
    ToolResult,
    Transcript,
    TurnDone,
    TurnInput,
    Usage,
    UserTurnSent,
)
from adapters.custom_llm import CustomLlmServer, TurnContext, TurnRecord
from adapters.custom_llm.http import parse_retry_after
from adapters.emulators.common import RunningEmulator, split_emulator_options
from adapters.emulators.registry import start_emulator
from adapters.intent_tool import (
    INTENT_TOOL_DESCRIPTION,
    INTENT_TOOL_NAME,
    INTENT_TOOL_PARAMETERS,
    intent_from_arguments,
)
from adapters.options import require_env, require_extra, require_live_or_emulated
from adapters.vapi.api import HttpVapiApi, VapiApi
from adapters.vapi.wire import (
    AddMessage,
    AssistantSpec,
    AudioFormat,
    CallRecord,
    ChatRecord,
    CreateCallRequest,
    CreateChatRequest,
    CustomLlmModelSpec,
    Hangup,
    MalformedMessage,
    ModelOutput,
    OpenAiMessage,
    SpeechUpdate,
    StatusUpdate,
    ToolCalls,
    ToolCallsResult,
    TranscriptMessage,
    TransportMessage,
    TransportSpec,
    parse_transport_message,
)
from bench.config import SystemConfig
from bench.errors import ConfigError
from bench.orchestrator import Orchestrator, load_orchestrator

API_KEY_VAR = "VAPI_API_KEY"
EMULATOR_ID = "vapi"
DEFAULT_ORCHESTRATOR = "adapters.inhouse.reference:ReferenceVoiceStack"
CLIENT_MESSAGES = [
    "conversation-update",
    "model-output",
    "speech-update",
    "transcript",
    "tool-calls",
    "tool-calls-result",
    "hang",
    "user-interrupted",
]
SILENCE_AFTER_AUDIO_S = 3.0
FRAME_MS = 20


def vapi_intent_parameters() -> dict[str, Any]:
    """``INTENT_TOOL_PARAMETERS`` as a fresh copy (it already uses only string enums, which Vapi's
    ``JsonSchema`` requires)."""
    return copy.deepcopy(INTENT_TOOL_PARAMETERS)


def ended_reason_retryable(reason: str) -> bool:
    """Whether a call that Vapi ended with ``reason`` is worth retrying (vendor/provider faults, 429, 5xx)."""
    if any(f"-{code}-" in reason for code in ("400", "401", "403", "404")):
        return False
    transient = ("429", "-500-", "-503-", "vapifault", "providerfault", "worker", "llm-failed", "timeout")
    return any(marker in reason for marker in transient)


class _TurnState:
    """Folds transport messages into normalized events and the turn's labels."""

    def __init__(self) -> None:
        self.text_parts: list[str] = []
        self.final_transcript: str | None = None
        self.intent: str | None = None
        self.target_language: str | None = None
        self.speech_stopped = False
        self.ended_reason: str | None = None

    @property
    def finished(self) -> bool:
        return self.speech_stopped and self.final_transcript is not None

    def handle(self, message: TransportMessage) -> list[NormalizedEvent]:
        events: list[NormalizedEvent] = []
        if isinstance(message, ModelOutput):
            token = message.token()
            if token:
                self.text_parts.append(token)
                events.append(TextDelta(text=token))
        elif isinstance(message, ToolCalls):
            for item in message.tool_call_list:
                arguments = item.function.argument_dict()
                if item.function.name == INTENT_TOOL_NAME:
                    self.intent, self.target_language = intent_from_arguments(arguments)
                events.append(ToolCall(call_id=item.id, name=item.function.name, arguments=arguments))
        elif isinstance(message, ToolCallsResult):
            result = message.tool_call_result
            events.append(
                ToolResult(call_id=str(result.get("toolCallId", "")), output=str(result.get("result", "")))
            )
        elif isinstance(message, TranscriptMessage):
            final = message.transcript_type == "final" or "final" in str(message.type)
            if message.role == "assistant" and final:
                self.final_transcript = message.transcript
                if not self.text_parts and message.transcript:
                    # the assistant does not stream model-output: the transcript is the first text seen
                    self.text_parts.append(message.transcript)
                    events.append(TextDelta(text=message.transcript))
            role = "agent" if message.role == "assistant" else "user"
            events.append(Transcript(role=role, text=message.transcript, final=final))
        elif isinstance(message, SpeechUpdate):
            if message.role == "assistant" and message.status == "stopped":
                self.speech_stopped = True
        elif isinstance(message, StatusUpdate) and message.status == "ended":
            self.ended_reason = message.ended_reason or "ended"
        return events


class VapiAdapter(AdapterBase):
    """Vapi with our stack as its custom LLM; emulated (loopback Vapi) or live (vapi-server-sdk)."""

    def __init__(self, system: SystemConfig, orchestrator: Orchestrator | None = None):
        self.system = system
        self.system_id = system.id
        require_live_or_emulated(system, "vapi")
        self.mode = system.mode
        options = system.options
        self.options = options
        self._orchestrator = orchestrator
        self.assistant_id: str | None = options.get("assistant_id")
        self.channel = str(options.get("channel", "auto"))
        if self.channel not in ("auto", "call", "chat"):
            raise ConfigError(f"system {system.id!r}: options.channel must be auto, call or chat")
        self.sample_rate = int(options.get("sample_rate", 16000))
        default_readback = 15.0 if self.mode == "live" else 5.0
        self.readback_timeout_s = float(options.get("readback_timeout_s", default_readback))
        self.hangup_timeout_s = float(options.get("hangup_timeout_s", 5.0))
        stall = options.get("stall_timeout_s")
        self.stall_timeout_s = float(stall) if stall is not None else None
        self._token: str | None = None
        self.custom_llm_url: str | None = options.get("custom_llm_url")
        if self.mode == "live":
            require_extra(system.id, "vapi", "vapi")
            self._token = require_env(system.id, API_KEY_VAR)
            if not self.assistant_id and not self.custom_llm_url:
                raise ConfigError(
                    f"system {system.id!r} runs Vapi live with an inline custom-llm assistant and needs "
                    "options.custom_llm_url: the public URL Vapi calls for the custom LLM (tunnelled to "
                    "options.custom_llm_host:options.custom_llm_port), or options.assistant_id"
                )
        uses_call = self.mode == "emulated" or self.channel == "call"
        self.capabilities = Capabilities(
            text_input=True,
            audio_input=self.mode == "live" and self.channel in ("auto", "call"),
            streaming_output=uses_call,
            audio_output=uses_call,
            tool_events=True,
            interruption=False,
            usage=True,
        )
        self.emulator: RunningEmulator | None = None
        self.llm_server: CustomLlmServer | None = None
        self.api: VapiApi | None = None

    # --- lifecycle ---------------------------------------------------------------------------------------

    async def start(self) -> None:
        if self.llm_server is not None:
            return
        options = self.options
        orchestrator = self._orchestrator or load_orchestrator(
            str(options.get("orchestrator", DEFAULT_ORCHESTRATOR)), options.get("orchestrator_options")
        )
        api_key_var = options.get("custom_llm_api_key_env")
        server = CustomLlmServer(
            orchestrator,
            api_key=os.environ.get(api_key_var) if api_key_var else None,
            default_language=str(options.get("default_language", "nl")),
            model_name=str(options.get("model_name", "inhouse-orchestrator")),
        )
        if self.mode == "emulated":
            await server.start("127.0.0.1", 0)
            self.custom_llm_url = server.url
            settings, extra = split_emulator_options(options)
            self.emulator = await start_emulator(EMULATOR_ID, settings, **extra)
            self.api = HttpVapiApi(self.emulator.url, token="emulated-no-key")
        else:
            await server.start(
                str(options.get("custom_llm_host", "127.0.0.1")), int(options.get("custom_llm_port", 0))
            )
            from adapters.vapi.live import SdkVapiApi

            assert self._token is not None
            self.api = SdkVapiApi(
                self._token, base_url=options.get("base_url"), timeout_s=self.system.timeout_s
            )
        self.llm_server = server

    async def close(self) -> None:
        if self.api is not None:
            await self.api.close()
            self.api = None
        if self.emulator is not None:
            await self.emulator.close()
            self.emulator = None
        if self.llm_server is not None:
            await self.llm_server.close()
            self.llm_server = None

    # --- turns ----------------------------------------------------------------------------------------------

    def _assistant(self) -> AssistantSpec | None:
        if self.assistant_id:
            return None
        assert self.custom_llm_url
        tools = []
        if self.options.get("declare_intent_tool", True):
            tools.append(
                {
                    "type": "function",
                    "function": {
                        "name": INTENT_TOOL_NAME,
                        "description": INTENT_TOOL_DESCRIPTION,
                        "parameters": vapi_intent_parameters(),
                    },
                }
            )
        model = CustomLlmModelSpec(
            url=self.custom_llm_url,
            model=str(self.options.get("model_name", "inhouse-orchestrator")),
            tools=tools or None,
        )
        return AssistantSpec(
            name="voice-agent-bench in-house stack",
            model=model.wire(),
            first_message_mode="assistant-waits-for-user",
            voice=self.options.get("voice"),
            transcriber=self.options.get("transcriber"),
            client_messages=CLIENT_MESSAGES,
        )

    def _overrides(self, turn: TurnInput) -> dict[str, Any]:
        return {"variableValues": {"language": turn.language, "entry_id": turn.entry_id}}

    def _expect(self, turn: TurnInput) -> None:
        assert self.llm_server is not None
        self.llm_server.expect(
            turn.text,
            TurnContext(
                language=turn.language,
                user_id=turn.user_id,
                tenant_id=turn.tenant_id,
                conversation_id=turn.conversation_id,
            ),
        )

    async def run_turn(self, turn: TurnInput) -> AsyncIterator[NormalizedEvent]:
        if self.llm_server is None:
            await self.start()
        use_chat = self.channel == "chat" or (
            self.channel == "auto" and self.mode == "live" and turn.audio_pcm16 is None
        )
        events = self._chat_turn(turn) if use_chat else self._call_turn(turn)
        async for event in events:
            yield event

    async def _chat_turn(self, turn: TurnInput) -> AsyncIterator[NormalizedEvent]:
        assert self.api is not None and self.llm_server is not None
        self._expect(turn)
        request = CreateChatRequest(
            input=turn.text,
            assistant_id=self.assistant_id,
            assistant=self._assistant(),
            assistant_overrides=self._overrides(turn),
            name=_turn_name(turn),
        )
        yield UserTurnSent()  # the chat API answers in one piece: TTFT here is the full response time
        chat = await self.api.create_chat(request)
        state = _TurnState()
        for item in chat.tool_calls():
            arguments = item.function.argument_dict()
            if item.function.name == INTENT_TOOL_NAME:
                state.intent, state.target_language = intent_from_arguments(arguments)
            yield ToolCall(call_id=item.id, name=item.function.name, arguments=arguments)
        text = chat.output_text()
        if text:
            state.text_parts.append(text)
            yield TextDelta(text=text)
        yield _chat_usage(chat)
        yield self._turn_done(turn, state, self.llm_server.record(question=turn.text))

    async def _call_turn(self, turn: TurnInput) -> AsyncIterator[NormalizedEvent]:
        assert self.api is not None and self.llm_server is not None
        self._expect(turn)
        audio = turn.audio_pcm16 if self.capabilities.audio_input else None
        sample_rate = turn.sample_rate if audio is not None else self.sample_rate
        request = CreateCallRequest(
            assistant_id=self.assistant_id,
            assistant=self._assistant(),
            assistant_overrides=self._overrides(turn),
            transport=TransportSpec(audio_format=AudioFormat(sample_rate=sample_rate)),
            name=_turn_name(turn),
        )
        call = await self.api.create_call(request)
        url = call.websocket_call_url()
        if not url:
            raise AdapterError("Vapi call has no transport.websocketCallUrl", code="malformed")
        ws = await _open(url)
        state = _TurnState()
        audio_bytes = 0
        silence: asyncio.Task[None] | None = None
        try:
            if audio is not None:
                await _send_audio(ws, audio, sample_rate)
                silence = asyncio.create_task(_send_silence(ws, sample_rate, SILENCE_AFTER_AUDIO_S))
            else:
                message = AddMessage(message=OpenAiMessage(role="user", content=turn.text))
                await ws.send(message.wire_json())
            yield UserTurnSent()
            while not state.finished:
                try:
                    timeout = self.hangup_timeout_s if state.speech_stopped else self.stall_timeout_s
                    frame = await asyncio.wait_for(ws.recv(), timeout=timeout)
                except TimeoutError:
                    if state.speech_stopped:
                        break  # speech stopped but no final transcript arrived: the turn is over anyway
                    raise AdapterError(
                        f"Vapi call went silent for {self.stall_timeout_s} s mid-turn",
                        retryable=True,
                        code="stall",
                    ) from None
                except ConnectionClosed as exc:
                    raise await self._closed_early(call.id, exc) from None
                if isinstance(frame, bytes):
                    audio_bytes += len(frame)
                    yield AudioDelta(pcm16=frame, sample_rate=sample_rate)
                    continue
                try:
                    message = parse_transport_message(frame)
                except MalformedMessage as exc:
                    raise AdapterError(f"malformed Vapi transport frame: {exc}", code="malformed") from None
                for event in state.handle(message):
                    yield event
                if state.ended_reason is not None:
                    raise AdapterError(
                        f"Vapi ended the call mid-turn: {state.ended_reason}",
                        retryable=ended_reason_retryable(state.ended_reason),
                        code=state.ended_reason,
                    )
            with contextlib.suppress(ConnectionClosed):
                await ws.send(Hangup().wire_json())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(ws.wait_closed(), timeout=self.hangup_timeout_s)
        finally:
            if silence is not None:
                silence.cancel()
            await ws.close()
        record = await self._read_back(call.id)
        input_seconds = len(audio) / 2 / sample_rate if audio is not None else None
        yield _call_usage(record, audio_bytes / 2 / sample_rate if audio_bytes else None, input_seconds)
        yield self._turn_done(turn, state, self.llm_server.record(call_id=call.id, question=turn.text))

    def _turn_done(self, turn: TurnInput, state: _TurnState, record: TurnRecord | None) -> TurnDone:
        intent = state.intent or (record.conversational_intent if record else None)
        target = state.target_language if state.intent else (record.target_language if record else None)
        final_text = (
            state.final_transcript or "".join(state.text_parts) or (record.answer if record else None)
        )
        return TurnDone(
            conversational_intent=intent,
            target_language=target,
            self_reported_compliant=record.voice_shape_compliant if record else None,
            retrieved_context=list(record.retrieved_context) if record else [],
            final_text=final_text,
        )

    async def _closed_early(self, call_id: str, exc: ConnectionClosed) -> AdapterError:
        """Why the transport closed before the turn ended: the call's ``endedReason`` when Vapi sent a close
        frame, a retryable disconnect when the connection just dropped."""
        if exc.rcvd is None:
            return AdapterError(
                "Vapi call transport dropped mid-turn (no close frame)", retryable=True, code="disconnect"
            )
        reason = None
        with contextlib.suppress(AdapterError):
            assert self.api is not None
            reason = (await self.api.get_call(call_id)).ended_reason
        if reason:
            return AdapterError(
                f"Vapi ended the call mid-turn: {reason}",
                retryable=ended_reason_retryable(reason),
                code=reason,
            )
        code = exc.rcvd.code
        return AdapterError(
            f"Vapi closed the call transport mid-turn (code {code})", retryable=code != 1000, code=str(code)
        )

    async def _read_back(self, call_id: str) -> CallRecord | None:
        """``GET /call/{id}`` until the call has ended with cost and metrics, or the read-back times out."""
        assert self.api is not None
        deadline = time.monotonic() + self.readback_timeout_s
        record: CallRecord | None = None
        while True:
            with contextlib.suppress(AdapterError):
                record = await self.api.get_call(call_id)
            complete = (
                record is not None
                and record.status == "ended"
                and record.cost is not None
                and record.artifact is not None
                and record.artifact.performance_metrics is not None
            )
            if complete or time.monotonic() >= deadline:
                return record
            await asyncio.sleep(0.25 if self.mode == "emulated" else 1.0)


async def _open(url: str) -> ClientConnection:
    try:
        # a deep receive queue keeps the socket drained while the consumer is slow or has given up (a
        # shallow one stalls the close handshake behind unread audio); a short close timeout bounds teardown
        return await connect(
            url, open_timeout=15, max_size=None, max_queue=1024, ping_interval=None, close_timeout=2
        )
    except InvalidStatus as exc:
        status = exc.response.status_code
        raise AdapterError.from_status(
            status, "Vapi call transport refused", parse_retry_after(exc.response.headers)
        ) from None
    except (OSError, InvalidHandshake, TimeoutError) as exc:
        raise AdapterError(
            f"cannot open the Vapi call transport: {exc}", retryable=True, code="disconnect"
        ) from None


async def _send_audio(ws: ClientConnection, pcm: bytes, sample_rate: int) -> None:
    """Caller audio in real time (Vapi endpoints on live audio), 20 ms frames."""
    step = sample_rate * FRAME_MS // 1000 * 2
    start = time.monotonic()
    for index, offset in enumerate(range(0, len(pcm), step)):
        delay = start + index * FRAME_MS / 1000.0 - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        await ws.send(pcm[offset : offset + step])


async def _send_silence(ws: ClientConnection, sample_rate: int, seconds: float) -> None:
    """Trailing silence so the vendor's endpointing sees the caller stop."""
    frame = b"\x00\x00" * (sample_rate * FRAME_MS // 1000)
    with contextlib.suppress(ConnectionClosed):
        for _ in range(int(seconds * 1000 / FRAME_MS)):
            await ws.send(frame)
            await asyncio.sleep(FRAME_MS / 1000.0)


def _turn_name(turn: TurnInput) -> str:
    """Stable per turn (so the emulator's fault plan counts attempts), unique per conversation."""
    return f"bench-{turn.entry_id}" + (f"-{turn.conversation_id}" if turn.conversation_id else "")


def _call_usage(
    record: CallRecord | None, output_seconds: float | None, input_seconds: float | None
) -> Usage:
    latencies: dict[str, float] = {}
    minutes: float | None = None
    cost: float | None = None
    if record is not None:
        cost = record.cost
        metrics = record.artifact.performance_metrics if record.artifact else None
        if metrics is not None:
            turn = metrics.turn_latencies[-1] if metrics.turn_latencies else None
            values = {
                "turn": turn.turn_latency if turn else metrics.turn_latency_average,
                "model": turn.model_latency if turn else metrics.model_latency_average,
                "voice": turn.voice_latency if turn else metrics.voice_latency_average,
                "transcriber": turn.transcriber_latency if turn else metrics.transcriber_latency_average,
                "endpointing": turn.endpointing_latency if turn else metrics.endpointing_latency_average,
            }
            latencies = {f"vapi_{name}_latency": float(v) for name, v in values.items() if v is not None}
        for item in record.costs or []:
            if item.get("type") == "vapi" and isinstance(item.get("minutes"), int | float):
                minutes = float(item["minutes"])
    return Usage(
        vendor_cost_usd=cost,
        billed_minutes=minutes,
        output_audio_seconds=output_seconds,
        input_audio_seconds=input_seconds,
        vendor_latency_ms=latencies,
    )


def _chat_usage(chat: ChatRecord) -> Usage:
    return Usage(vendor_cost_usd=chat.cost)


def create(system: SystemConfig) -> VapiAdapter:
    return VapiAdapter(system)
