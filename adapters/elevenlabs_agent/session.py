"""One ElevenLabs Agents conversation turn over a socket, as normalized events.

Flow: send ``conversation_initiation_client_data`` (prompt override with the knowledge-base passages, empty
first message, language) → wait for ``conversation_initiation_metadata`` (audio formats) → send the user turn
(``user_message``, or ``user_audio_chunk`` frames resampled to the announced input rate followed by a silence
tail for the server's voice-activity detection) → yield ``UserTurnSent`` → read messages: ``ping`` → ``pong``;
``user_transcript`` → ``Transcript(user)``; ``client_tool_call`` → ``ToolCall`` and an immediate
``client_tool_result`` ack (``ToolResult``); ``agent_chat_response_part`` deltas (text-only mode) →
``TextDelta``; ``agent_response`` → the whole text as one ``TextDelta`` when no parts were streamed (voice
mode sends the text with its first audio chunk); ``audio`` → ``AudioDelta`` (chunks older than the last
``interruption`` dropped, as the SDK does); ``agent_response_correction`` replaces the text;
``agent_response_complete`` ends the turn.

The socket has no commit message: with audio input, ``UserTurnSent`` is yielded after the last speech frame,
so the vendor's end-of-speech detection counts as latency, as it does for a caller.

End of the agent's turn: ``end_of_turn="complete_event"`` (default) waits for ``agent_response_complete``; the
agent must list it in its client events, and silence in its place is a (retryable) stall. ``"idle"`` is for
agents that do not send it: the turn ends ``end_of_turn_idle_s`` after the last agent frame once the response
text (and, in voice mode, its audio) has started — completion then includes that wait, and a stall in the
middle of the audio cannot be told from the end of the answer.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator
from typing import Any, Literal

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
    UserTurnSent,
)
from adapters.elevenlabs_agent import wire
from adapters.intent_tool import INTENT_TOOL_NAME, intent_from_arguments
from adapters.openai_realtime.session import resample_pcm16
from adapters.openai_realtime.transport import Transport, redact

TOOL_ACK = "ok"
Trace = list[tuple[str, str]]


class TurnSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    initiation: dict[str, Any]
    idle_timeout_s: float = Field(default=15.0, gt=0)
    end_of_turn: Literal["complete_event", "idle"] = "complete_event"
    end_of_turn_idle_s: float = Field(default=1.5, gt=0)
    expect_audio: bool = True
    audio_chunk_ms: int = Field(default=250, ge=10)
    silence_tail_ms: int = Field(default=600, ge=0)
    pace_audio: bool = False
    retrieved_context: list[str] = Field(default_factory=list)


class TurnOutcome(BaseModel):
    """What the adapter needs after the turn for metering (filled while the turn runs)."""

    conversation_id: str | None = None
    input_audio_seconds: float | None = None
    output_audio_bytes: int = 0
    output_sample_rate: int = 16000
    last_ping_ms: float | None = None


def build_initiation(
    instructions: str | None,
    language: str | None,
    *,
    first_message: str | None,
    text_only: bool,
    user_id: str | None = None,
) -> dict[str, Any]:
    """``conversation_initiation_client_data`` with the overrides the agent must allow (security settings)."""
    agent: dict[str, Any] = {}
    if instructions is not None:
        agent["prompt"] = {"prompt": instructions}
    if first_message is not None:
        agent["first_message"] = first_message
    if language is not None:
        agent["language"] = language
    override: dict[str, Any] = {"agent": agent} if agent else {}
    if text_only:
        override["conversation"] = {"text_only": True}
    message = wire.ConversationInitiationClientData(conversation_config_override=override, user_id=user_id)
    return json.loads(wire.dump(message))


def error_from_close(exc: ConnectionClosed) -> AdapterError:
    frame = exc.rcvd
    code = frame.code if frame else 1006
    reason = f" {frame.reason}" if frame and frame.reason else ""
    # 1002/1003/1007/1008 are protocol or policy refusals (bad override, quota, auth) that a retry repeats
    retryable = code not in (1002, 1003, 1007, 1008)
    return AdapterError(
        f"connection closed mid-turn (code {code}{reason})",
        retryable=retryable,
        code="disconnect" if retryable else f"close_{code}",
    )


def error_from_client_error(message: wire.ClientError) -> AdapterError:
    payload = message.client_error_event
    kind = str(payload.get("error_type") or payload.get("type") or payload.get("code") or "unknown")
    text = str(payload.get("message") or payload.get("reason") or "")
    retryable = any(
        word in kind.lower() for word in ("internal", "server", "timeout", "unavailable", "overload")
    )
    return AdapterError(redact(f"client_error {kind}: {text}"), retryable=retryable, code=kind)


async def run_conversation_turn(
    transport: Transport,
    turn: TurnInput,
    settings: TurnSettings,
    outcome: TurnOutcome,
    trace: Trace | None = None,
) -> AsyncIterator[NormalizedEvent]:
    """Yield the normalized events of one turn (no ``Usage``: the adapter meters after closing the socket)."""
    try:
        async for event in _run(transport, turn, settings, outcome, trace):
            yield event
    except ConnectionClosed as exc:
        raise error_from_close(exc) from None
    except wire.MalformedMessage as exc:
        raise AdapterError(f"malformed frame from server: {exc}", retryable=False, code="malformed") from None


async def _send(transport: Transport, data: dict[str, Any], trace: Trace | None) -> None:
    await transport.send(data)
    if trace is not None:
        trace.append(("send", wire.client_message_type(data) or "?"))


async def _recv(transport: Transport, timeout: float, trace: Trace | None) -> wire.ServerMessage:
    raw = await asyncio.wait_for(transport.recv(), timeout)
    message = wire.parse_server_message(raw)
    if trace is not None:
        trace.append(("recv", message.type))
    return message


async def _send_pong(
    transport: Transport, message: wire.Ping, outcome: TurnOutcome, trace: Trace | None
) -> None:
    await _send(transport, {"type": "pong", "event_id": message.ping_event.event_id}, trace)
    if message.ping_event.ping_ms:
        outcome.last_ping_ms = float(message.ping_event.ping_ms)


async def _send_user_audio(
    transport: Transport, turn: TurnInput, rate: int, settings: TurnSettings, trace: Trace | None
) -> bytes:
    pcm = resample_pcm16(turn.audio_pcm16 or b"", turn.sample_rate, rate)
    step = rate * 2 * settings.audio_chunk_ms // 1000
    for offset in range(0, len(pcm), step):
        chunk = pcm[offset : offset + step]
        await _send(transport, {"user_audio_chunk": base64.b64encode(chunk).decode()}, trace)
        if settings.pace_audio:
            await asyncio.sleep(len(chunk) / (rate * 2))
    return pcm


async def _send_silence(transport: Transport, rate: int, settings: TurnSettings, trace: Trace | None) -> None:
    remaining = rate * 2 * settings.silence_tail_ms // 1000
    step = rate * 2 * settings.audio_chunk_ms // 1000
    while remaining > 0:
        size = min(step, remaining)
        await _send(transport, {"user_audio_chunk": base64.b64encode(bytes(size)).decode()}, trace)
        remaining -= size
        if settings.pace_audio:
            await asyncio.sleep(size / (rate * 2))


async def _run(
    transport: Transport, turn: TurnInput, settings: TurnSettings, outcome: TurnOutcome, trace: Trace | None
) -> AsyncIterator[NormalizedEvent]:
    await _send(transport, settings.initiation, trace)
    input_rate = 16000
    while True:
        try:
            message = await _recv(transport, settings.idle_timeout_s, trace)
        except TimeoutError:
            raise AdapterError(
                "stalled: no conversation_initiation_metadata", retryable=True, code="stall"
            ) from None
        if isinstance(message, wire.ConversationInitiationMetadata):
            meta = message.conversation_initiation_metadata_event
            outcome.conversation_id = meta.conversation_id
            outcome.output_sample_rate = wire.audio_format_rate(meta.agent_output_audio_format)
            input_rate = wire.audio_format_rate(meta.user_input_audio_format)
            break
        if isinstance(message, wire.ClientError):
            raise error_from_client_error(message)
        if isinstance(message, wire.Ping):
            await _send_pong(transport, message, outcome, trace)

    if turn.audio_pcm16:
        pcm = await _send_user_audio(transport, turn, input_rate, settings, trace)
        outcome.input_audio_seconds = len(pcm) / (input_rate * 2)
        yield UserTurnSent()
        await _send_silence(transport, input_rate, settings, trace)
    else:
        await _send(transport, {"type": "user_message", "text": turn.text}, trace)
        yield UserTurnSent()

    intent: str | None = None
    target_language: str | None = None
    segments: list[str] = []
    streamed: list[str] = []
    last_interrupt = 0
    responded = False
    spoke = False
    while True:
        idle_ends_turn = settings.end_of_turn == "idle" and responded and (spoke or not settings.expect_audio)
        timeout = settings.end_of_turn_idle_s if idle_ends_turn else settings.idle_timeout_s
        try:
            message = await _recv(transport, timeout, trace)
        except TimeoutError:
            if idle_ends_turn:
                break
            raise AdapterError(
                f"stalled: no agent message for {timeout:g} s", retryable=True, code="stall"
            ) from None
        if isinstance(message, wire.Ping):
            await _send_pong(transport, message, outcome, trace)
        elif isinstance(message, wire.UserTranscript):
            yield Transcript(role="user", text=message.user_transcription_event.user_transcript)
        elif isinstance(message, wire.ClientToolCall):
            call = message.client_tool_call
            yield ToolCall(call_id=call.tool_call_id, name=call.tool_name, arguments=call.parameters)
            if call.tool_name == INTENT_TOOL_NAME:
                intent, target_language = intent_from_arguments(call.parameters)
                result, is_error = TOOL_ACK, False
            else:
                result, is_error = f"unknown tool {call.tool_name}", True
            await _send(
                transport,
                {
                    "type": "client_tool_result",
                    "tool_call_id": call.tool_call_id,
                    "result": result,
                    "is_error": is_error,
                },
                trace,
            )
            yield ToolResult(call_id=call.tool_call_id, output=result)
        elif isinstance(message, wire.AgentChatResponsePart):
            part = message.text_response_part
            if part.type == "delta" and part.text:
                streamed.append(part.text)
                yield TextDelta(text=part.text)
        elif isinstance(message, wire.AgentResponse):
            text = message.agent_response_event.agent_response
            if not streamed and text:
                yield TextDelta(text=text)
            streamed = []
            segments.append(text.strip())
            responded = True
        elif isinstance(message, wire.AgentResponseCorrection):
            event = message.agent_response_correction_event
            original = event.original_agent_response.strip()
            if original in segments:
                segments[segments.index(original)] = event.corrected_agent_response.strip()
        elif isinstance(message, wire.Interruption):
            last_interrupt = message.interruption_event.event_id
        elif isinstance(message, wire.Audio):
            if message.audio_event.event_id <= last_interrupt:
                continue
            try:
                pcm = base64.b64decode(message.audio_event.audio_base_64, validate=True)
            except ValueError as exc:
                raise AdapterError(
                    f"malformed audio chunk: {exc}", retryable=False, code="malformed"
                ) from None
            outcome.output_audio_bytes += len(pcm)
            spoke = True
            yield AudioDelta(pcm16=pcm, sample_rate=outcome.output_sample_rate)
        elif isinstance(message, wire.AgentResponseComplete):
            if responded:
                break
        elif isinstance(message, wire.ClientError):
            raise error_from_client_error(message)

    yield TurnDone(
        conversational_intent=intent,
        target_language=target_language,
        retrieved_context=list(settings.retrieved_context),
        final_text=" ".join(s for s in segments if s) or None,
    )
