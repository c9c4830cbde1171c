"""``voice-events.jsonl``: the ordered voice timeline of one trial (contract version 1.0).

Every record has the contract version, an event id, a sequence number, the session and turn ids, the UTC time and
the monotonic offset from the start of the trial, the source (``evaluator``, ``persona``, ``mixer``, ``endpoint``),
the direction (``outbound`` to the agent, ``inbound`` from it, ``internal``), the event type, the speaker role
(``user``, ``agent``, ``system``), optional PCM metadata, W3C trace context (trace id, span id, parent span id: one
root span per trial, one child span per turn) and event-specific normalized attributes.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from bench.engine.clock import Stamped
from bench.protocol import (
    AudioDelta,
    ErrorEvent,
    Interrupted,
    ResponseDone,
    TextDelta,
    ToolCall,
    ToolResult,
    Transcript,
    Usage,
)
from bench.protocol.redact import redact, redact_value

SCHEMA_VERSION = "1.0"


def new_trace_id() -> str:
    return secrets.token_hex(16)


def new_span_id() -> str:
    return secrets.token_hex(8)


def pcm_meta(byte_count: int, sample_rate: int = 24000) -> dict[str, Any]:
    return {"encoding": "pcm_s16le", "sample_rate_hz": sample_rate, "channels": 1, "byte_count": byte_count,
            "duration_ms": round(byte_count / 2 / sample_rate * 1000.0, 3)}


@dataclass
class VoiceEventLog:
    session_id: str
    origin: float
    origin_utc: datetime
    trace_id: str = field(default_factory=new_trace_id)
    root_span_id: str = field(default_factory=new_span_id)
    turn_spans: dict[str, str] = field(default_factory=dict)
    _records: list[tuple[float, int, dict[str, Any]]] = field(default_factory=list)

    def span_for(self, turn_id: str | None) -> str:
        if turn_id is None:
            return self.root_span_id
        return self.turn_spans.setdefault(turn_id, new_span_id())

    def traceparent(self, turn_id: str | None = None) -> str:
        return f"00-{self.trace_id}-{self.span_for(turn_id)}-01"

    def add(self, t: float, *, source: str, direction: str, event_type: str, speaker: str,
            turn_id: str | None = None, pcm: dict[str, Any] | None = None,
            attributes: dict[str, Any] | None = None) -> None:
        span = self.span_for(turn_id)
        record = {
            "schema_version": SCHEMA_VERSION,
            "event_id": secrets.token_hex(8),
            "sequence": 0,
            "session_id": self.session_id,
            "turn_id": turn_id,
            "timestamp_utc": (self.origin_utc + timedelta(seconds=t - self.origin)).isoformat(timespec="microseconds"),
            "monotonic_offset_ms": round((t - self.origin) * 1000.0, 3),
            "source": source,
            "direction": direction,
            "event_type": event_type,
            "speaker": speaker,
            "pcm": pcm,
            "trace": {"trace_id": self.trace_id, "span_id": span,
                      "parent_span_id": None if span == self.root_span_id else self.root_span_id},
            "attributes": redact_value(attributes or {}),
        }
        self._records.append((t, len(self._records), record))

    def add_endpoint_events(self, stamps: list[Stamped], turn_of: dict[int, str]) -> None:
        """The normalized session events, each under the turn it belongs to (``turn_of`` maps event seq → turn)."""
        for item in stamps:
            event = item.event
            turn = turn_of.get(event.seq)
            kind, speaker = event.type, "system"
            attributes: dict[str, Any] = {}
            pcm: dict[str, Any] | None = None
            if isinstance(event, AudioDelta):
                kind, speaker, pcm = "agent.audio.delta", "agent", pcm_meta(len(event.pcm16), event.sample_rate)
            elif isinstance(event, TextDelta):
                kind, speaker, attributes = "agent.text.delta", "agent", {"text": event.text}
            elif isinstance(event, Transcript):
                kind, speaker = f"transcript.{event.role}", event.role
                attributes = {"text": event.text, "final": event.final}
            elif isinstance(event, ToolCall):
                kind, speaker = "tool.call", "agent"
                attributes = {"call_id": event.call_id, "name": event.name, "arguments": event.arguments}
            elif isinstance(event, ToolResult):
                kind, speaker, attributes = "tool.result", "agent", {"call_id": event.call_id, "output": event.output}
            elif isinstance(event, Interrupted):
                kind, speaker, attributes = "agent.interrupted", "agent", {"played_ms": event.played_ms, "by": event.by}
            elif isinstance(event, ResponseDone):
                kind, speaker = "agent.response.done", "agent"
                attributes = {"status": event.status, "conversational_intent": event.conversational_intent}
            elif isinstance(event, Usage):
                kind = "usage"
                attributes = event.model_dump(exclude={"type", "seq", "response_id"}, exclude_none=True)
            elif isinstance(event, ErrorEvent):
                kind = "error"
                attributes = {"code": str(event.code), "fatal": event.fatal, "message": redact(event.message)}
            elif kind in ("user_speech_started", "user_speech_stopped"):
                kind, speaker = f"endpoint.vad.{kind.removeprefix('user_')}", "user"
            elif kind in ("agent_speech_started", "agent_speech_stopped"):
                kind, speaker = f"agent.{kind.removeprefix('agent_')}", "agent"
            elif kind == "session_ready":
                kind = "session.ready"
            elif kind == "user_turn_sent":
                kind, speaker = "user.turn.acknowledged", "user"
            attributes = {**attributes, "seq": event.seq, "response_id": event.response_id}
            self.add(item.t, source="endpoint", direction="inbound", event_type=kind, speaker=speaker, turn_id=turn,
                     pcm=pcm, attributes=attributes)

    def records(self) -> list[dict[str, Any]]:
        ordered = [record for _, _, record in sorted(self._records, key=lambda r: (r[0], r[1]))]
        for index, record in enumerate(ordered, start=1):
            record["sequence"] = index
        return ordered

    def jsonl(self) -> str:
        return "".join(json.dumps(record, ensure_ascii=False, default=str) + "\n" for record in self.records())


def utc_now() -> datetime:
    return datetime.now(UTC)
