"""One Realtime turn over any transport: session set-up, the user turn, the tool round trip and normalized
events.

Flow: wait for ``session.created`` → ``session.update`` (instructions with the knowledge-base passages, the
``set_conversational_intent`` function tool, VAD off) → wait for ``session.updated`` → send the user turn (an
``input_text`` message, or ``input_audio_buffer.append``×N + ``commit``) and ``response.create`` → yield
``UserTurnSent`` → read events: transcript/text deltas → ``TextDelta``, audio deltas → ``AudioDelta``, a
finished function call → ``ToolCall``, answered at once with a ``function_call_output`` item (``ToolResult``),
and after that response's ``response.done`` a new ``response.create`` so the model speaks its answer; the
first ``response.done`` without a function call ends the turn → ``Usage`` (summed over responses) and
``TurnDone``. GA and beta event names are both accepted.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator
from math import gcd
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from websockets.exceptions import ConnectionClosed

from adapters.base import (
    AdapterError,
    AudioDelta,
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
from adapters.intent_tool import (
    INTENT_TOOL_DESCRIPTION,
    INTENT_TOOL_NAME,
    INTENT_TOOL_PARAMETERS,
    intent_from_arguments,
)
from adapters.openai_realtime import wire
from adapters.openai_realtime.transport import Transport, redact

SAMPLE_RATE = 24000
TOOL_ACK = json.dumps({"ok": True})
RETRYABLE_ERROR_TYPES = {"server_error", "rate_limit_exceeded", "rate_limit_error"}
RETRYABLE_ERROR_CODES = {"server_error", "rate_limit_exceeded", "session_expired", "internal_error"}

Trace = list[tuple[str, str]]


class TurnSettings(BaseModel):
    """Everything a turn needs besides the transport and the user input."""

    model_config = ConfigDict(extra="forbid")

    beta: bool = False
    session: dict[str, Any]
    idle_timeout_s: float = Field(default=15.0, gt=0)
    max_tool_rounds: int = Field(default=3, ge=0)
    audio_chunk_ms: int = Field(default=100, ge=10)
    pace_audio: bool = False
    retrieved_context: list[str] = Field(default_factory=list)


def build_session(
    instructions: str,
    *,
    beta: bool,
    voice: str | None,
    output_modalities: list[str],
    transcription_model: str | None = None,
) -> dict[str, Any]:
    """The ``session`` object of ``session.update`` for the GA or the beta interface."""
    tool = {
        "type": "function",
        "name": INTENT_TOOL_NAME,
        "description": INTENT_TOOL_DESCRIPTION,
        "parameters": INTENT_TOOL_PARAMETERS,
    }
    transcription = {"model": transcription_model} if transcription_model else None
    if beta:
        session: dict[str, Any] = {
            "modalities": ["text", "audio"] if "audio" in output_modalities else ["text"],
            "instructions": instructions,
            "input_audio_format": "pcm16",
            "output_audio_format": "pcm16",
            "turn_detection": None,
            "tools": [tool],
            "tool_choice": "auto",
        }
        if voice:
            session["voice"] = voice
        if transcription:
            session["input_audio_transcription"] = transcription
        return session
    pcm = {"type": "audio/pcm", "rate": SAMPLE_RATE}
    output: dict[str, Any] = {"format": pcm}
    if voice:
        output["voice"] = voice
    audio_input: dict[str, Any] = {"format": pcm, "turn_detection": None}
    if transcription:
        audio_input["transcription"] = transcription
    return {
        "type": "realtime",
        "instructions": instructions,
        "output_modalities": list(output_modalities),
        "tools": [tool],
        "tool_choice": "auto",
        "audio": {"input": audio_input, "output": output},
    }


def resample_pcm16(pcm: bytes, source_rate: int, target_rate: int) -> bytes:
    """Mono PCM16 at ``target_rate`` (polyphase filter from scipy)."""
    if source_rate == target_rate or not pcm:
        return pcm
    import numpy as np
    from scipy.signal import resample_poly

    divisor = gcd(source_rate, target_rate)
    samples = np.frombuffer(pcm[: len(pcm) // 2 * 2], dtype="<i2").astype(np.float64)
    out = resample_poly(samples, target_rate // divisor, source_rate // divisor)
    return np.clip(np.round(out), -32768, 32767).astype("<i2").tobytes()


def error_from_detail(detail: wire.ErrorDetail | None, context: str) -> AdapterError:
    if detail is None:
        return AdapterError(f"{context}: no error detail", retryable=True, code="failed")
    retryable = detail.type in RETRYABLE_ERROR_TYPES or (detail.code or "") in RETRYABLE_ERROR_CODES
    return AdapterError(
        redact(f"{context}: {detail.type}/{detail.code}: {detail.message}"),
        retryable=retryable,
        code=detail.code or detail.type,
    )


def disconnect_error(exc: ConnectionClosed) -> AdapterError:
    frame = exc.rcvd
    code = frame.code if frame else 1006
    reason = f" {frame.reason}" if frame and frame.reason else ""
    # 1008 (policy violation) is how a server refuses a session it would refuse again; the rest may recover
    return AdapterError(
        f"connection closed mid-turn (code {code}{reason})", retryable=code != 1008, code="disconnect"
    )


def _history_items(turn: TurnInput, beta: bool) -> list[dict[str, Any]]:
    items = []
    for message in turn.history:
        text = message.get("content") or message.get("text") or ""
        if message.get("role") == "assistant":
            part = {"type": "text" if beta else "output_text", "text": text}
            items.append({"type": "message", "role": "assistant", "content": [part]})
        elif message.get("role") == "user":
            items.append(
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}
            )
    return items


class _TurnState:
    def __init__(self) -> None:
        self.handled_calls: set[str] = set()
        self.needs_followup = False
        self.intent: str | None = None
        self.target_language: str | None = None
        self.segments: list[str] = []
        self.current: list[str] = []
        self.usage = Usage()
        self.output_audio_bytes = 0


async def run_realtime_turn(
    transport: Transport, turn: TurnInput, settings: TurnSettings, trace: Trace | None = None
) -> AsyncIterator[NormalizedEvent]:
    """Yield the normalized events of one turn; raise ``AdapterError`` on failure."""
    try:
        async for event in _run(transport, turn, settings, trace):
            yield event
    except ConnectionClosed as exc:
        raise disconnect_error(exc) from None
    except wire.MalformedEvent as exc:
        raise AdapterError(f"malformed frame from server: {exc}", retryable=False, code="malformed") from None


async def _send(transport: Transport, event: wire.ClientEvent, trace: Trace | None) -> None:
    data = json.loads(wire.dump(event))
    if isinstance(event, wire.SessionUpdate):
        data["session"] = event.session  # keep explicit nulls (turn_detection: null disables VAD)
    await transport.send(data)
    if trace is not None:
        trace.append(("send", event.type))


async def _recv(
    transport: Transport, timeout: float, trace: Trace | None
) -> wire.ServerEvent | wire.UnknownServerEvent:
    try:
        raw = await asyncio.wait_for(transport.recv(), timeout)
    except TimeoutError:
        raise AdapterError(
            f"stalled: no server event for {timeout:g} s", retryable=True, code="stall"
        ) from None
    event = wire.parse_server_event(raw)
    if trace is not None:
        trace.append(("recv", event.type))
    return event


async def _wait_for(
    transport: Transport, wanted: str, settings: TurnSettings, trace: Trace | None
) -> wire.ServerEvent | wire.UnknownServerEvent:
    while True:
        event = await _recv(transport, settings.idle_timeout_s, trace)
        if isinstance(event, wire.ErrorEvent):
            raise error_from_detail(event.error, f"error before {wanted}")
        if event.type == wanted:
            return event


async def _send_user_turn(
    transport: Transport, turn: TurnInput, settings: TurnSettings, trace: Trace | None
) -> float:
    """Send the user turn; return the seconds of user audio sent (0 for text)."""
    for item in _history_items(turn, settings.beta):
        await _send(
            transport, wire.ConversationItemCreate(item=wire.ConversationItem.model_validate(item)), trace
        )
    if turn.audio_pcm16:
        pcm = resample_pcm16(turn.audio_pcm16, turn.sample_rate, SAMPLE_RATE)
        step = SAMPLE_RATE * 2 * settings.audio_chunk_ms // 1000
        for offset in range(0, len(pcm), step):
            chunk = pcm[offset : offset + step]
            await _send(transport, wire.InputAudioBufferAppend(audio=base64.b64encode(chunk).decode()), trace)
            if settings.pace_audio:
                await asyncio.sleep(len(chunk) / (SAMPLE_RATE * 2))
        await _send(transport, wire.InputAudioBufferCommit(), trace)
        seconds = len(pcm) / (SAMPLE_RATE * 2)
    else:
        item = wire.ConversationItem(
            type="message", role="user", content=[wire.ContentPart(type="input_text", text=turn.text)]
        )
        await _send(transport, wire.ConversationItemCreate(item=item), trace)
        seconds = 0.0
    await _send(transport, wire.ResponseCreate(), trace)
    return seconds


def _add_usage(total: Usage, usage: wire.ResponseUsage | None) -> None:
    if usage is None:
        return
    inp = usage.input_token_details or wire.InputTokenDetails()
    out = usage.output_token_details or wire.OutputTokenDetails()
    for field, value in (
        ("input_text_tokens", inp.text_tokens),
        ("input_audio_tokens", inp.audio_tokens),
        ("cached_input_tokens", inp.cached_tokens),
        ("output_text_tokens", out.text_tokens),
        ("output_audio_tokens", out.audio_tokens),
    ):
        if value is not None:
            setattr(total, field, (getattr(total, field) or 0) + value)


async def _handle_call(
    transport: Transport, state: _TurnState, call_id: str, name: str, arguments: str, trace: Trace | None
) -> AsyncIterator[NormalizedEvent]:
    if call_id in state.handled_calls:
        return
    state.handled_calls.add(call_id)
    try:
        parsed = json.loads(arguments) if arguments else {}
    except ValueError:
        parsed = {"_unparsed": arguments}
    if not isinstance(parsed, dict):
        parsed = {"_value": parsed}
    yield ToolCall(call_id=call_id, name=name, arguments=parsed)
    if name == INTENT_TOOL_NAME:
        state.intent, state.target_language = intent_from_arguments(parsed)
        output = TOOL_ACK
    else:
        output = json.dumps({"error": f"unknown tool {name}"})
    item = wire.ConversationItem(type="function_call_output", call_id=call_id, output=output)
    await _send(transport, wire.ConversationItemCreate(item=item), trace)
    state.needs_followup = True
    yield ToolResult(call_id=call_id, output=output)


async def _run(
    transport: Transport, turn: TurnInput, settings: TurnSettings, trace: Trace | None
) -> AsyncIterator[NormalizedEvent]:
    await _wait_for(transport, "session.created", settings, trace)
    await _send(transport, wire.SessionUpdate(session=settings.session), trace)
    await _wait_for(transport, "session.updated", settings, trace)
    input_seconds = await _send_user_turn(transport, turn, settings, trace)
    yield UserTurnSent()

    state = _TurnState()
    rounds = 0
    while True:
        event = await _recv(transport, settings.idle_timeout_s, trace)
        kind = wire.canonical_name(event.type)
        if isinstance(event, wire.ErrorEvent):
            raise error_from_detail(event.error, "server error event")
        if isinstance(event, (wire.ResponseOutputAudioTranscriptDelta, wire.ResponseOutputTextDelta)):
            if event.delta:
                state.current.append(event.delta)
                yield TextDelta(text=event.delta)
        elif isinstance(event, wire.ResponseOutputAudioDelta):
            try:
                pcm = base64.b64decode(event.delta, validate=True)
            except ValueError as exc:
                raise AdapterError(
                    f"malformed audio delta: {exc}", retryable=False, code="malformed"
                ) from None
            state.output_audio_bytes += len(pcm)
            yield AudioDelta(pcm16=pcm, sample_rate=SAMPLE_RATE)
        elif isinstance(event, wire.ResponseOutputAudioTranscriptDone):
            state.segments.append(event.transcript)
            state.current = []
            yield Transcript(role="agent", text=event.transcript)
        elif isinstance(event, wire.ResponseOutputTextDone):
            state.segments.append(event.text)
            state.current = []
        elif isinstance(event, wire.InputAudioTranscriptionCompleted):
            yield Transcript(role="user", text=event.transcript)
        elif isinstance(event, wire.ResponseFunctionCallArgumentsDone):
            async for normalized in _handle_call(
                transport, state, event.call_id, event.name, event.arguments, trace
            ):
                yield normalized
        elif isinstance(event, wire.ResponseOutputItemDone) and event.item.type == "function_call":
            if event.item.call_id and event.item.name:
                async for normalized in _handle_call(
                    transport, state, event.item.call_id, event.item.name, event.item.arguments or "", trace
                ):
                    yield normalized
        elif kind == "response.done" and isinstance(event, wire.ResponseDone):
            response = event.response
            _add_usage(state.usage, response.usage)
            if state.current:  # deltas without a done event
                state.segments.append("".join(state.current))
                state.current = []
            if response.status == "failed":
                details = response.status_details
                raise error_from_detail(details.error if details else None, "response failed")
            if response.status == "cancelled":
                raise AdapterError("response cancelled by the server", retryable=True, code="cancelled")
            if state.needs_followup and rounds < settings.max_tool_rounds:
                rounds += 1
                state.needs_followup = False
                await _send(transport, wire.ResponseCreate(), trace)
                continue
            break

    usage = state.usage
    usage.input_audio_seconds = input_seconds or None
    usage.output_audio_seconds = (
        state.output_audio_bytes / (SAMPLE_RATE * 2) if state.output_audio_bytes else None
    )
    yield usage
    final_text = " ".join(s.strip() for s in state.segments if s.strip()) or None
    yield TurnDone(
        conversational_intent=state.intent,
        target_language=state.target_language,
        retrieved_context=list(settings.retrieved_context),
        final_text=final_text,
    )
