"""The call object as Vapi reports it (``GET /call/{id}``, the ``call`` field of custom-LLM requests and
webhooks): status, ``endedReason``, cost, ``artifact.messages`` / ``transcript`` and
``artifact.performanceMetrics`` (``turnLatencies[]`` and their averages, in milliseconds)."""

from __future__ import annotations

from typing import Any

from adapters.emulators.vapi.state import CallState, TurnTiming, epoch_ms
from adapters.vapi.wire import Artifact, AudioFormat, CallRecord, PerformanceMetrics, TurnLatency


def call_json(call: CallState, org_id: str) -> dict[str, Any]:
    latencies = call.turn_latencies
    metrics = None
    if latencies:
        metrics = PerformanceMetrics(
            turn_latencies=latencies,
            model_latency_average=_average([t.model_latency for t in latencies]),
            voice_latency_average=_average([t.voice_latency for t in latencies]),
            transcriber_latency_average=_average([t.transcriber_latency for t in latencies]),
            endpointing_latency_average=_average([t.endpointing_latency for t in latencies]),
            turn_latency_average=_average([t.turn_latency for t in latencies]),
        )
    transcript = "\n".join(f"{'AI' if m['role'] == 'bot' else 'User'}: {m['message']}"
                           for m in call.artifact_messages if m["role"] in ("bot", "user"))
    record = CallRecord(
        id=call.id, org_id=org_id, created_at=call.created_at, updated_at=call.updated_at,
        type="vapi.websocketCall", status=call.status, started_at=call.started_at, ended_at=call.ended_at,
        ended_reason=call.ended_reason, cost=call.cost if call.cost is not None else 0.0,
        cost_breakdown=call.cost_breakdown, costs=call.costs or None,
        artifact=Artifact(messages=call.artifact_messages, messages_open_ai_formatted=call.messages,
                          transcript=transcript, performance_metrics=metrics),
        assistant=call.assistant.wire(), assistant_overrides=call.request.assistant_overrides,
        name=call.request.name,
        transport={"provider": "vapi.websocket", "websocketCallUrl": call.websocket_url,
                   "audioFormat": AudioFormat(sample_rate=call.sample_rate).wire()},
    )
    return record.wire()


def artifact_message(call: CallState, role: str, text: str, **extra: Any) -> dict[str, Any]:
    """One ``artifact.messages`` entry (``bot`` / ``user`` / ``tool_calls`` / ``tool_call_result``)."""
    now = epoch_ms()
    entry: dict[str, Any] = {"role": role, "time": now, "secondsFromStart": call.seconds_from_start()}
    if role in ("bot", "user"):
        entry.update(message=text, endTime=now, duration=0.0)
    elif role == "tool_calls":
        entry["message"] = text
    entry.update(extra)
    return entry


def turn_latency(timing: TurnTiming) -> TurnLatency:
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
