"""Retell wire formats: the custom-LLM WebSocket, a web call's data packets, dynamic variables, REST objects.

Sources (retell-sdk 6.2 has REST types only, no custom-LLM socket types):
- custom-LLM socket: Retell's "LLM WebSocket" API reference (``interaction_type`` Retell→server:
  ``ping_pong``, ``call_details``, ``update_only``, ``response_required``, ``reminder_required``;
  ``response_type`` server→Retell: ``config``, ``update_agent``, ``ping_pong``, ``response``,
  ``agent_interrupt``, ``tool_call_invocation``, ``tool_call_result``, ``metadata``) and
  RetellAI/retell-custom-llm-python-demo ``custom_types.py``;
- web call: RetellAI/retell-client-js-sdk ``src/livekit-transport.ts`` (the caller joins the LiveKit room with
  the ``access_token`` of ``create-web-call``, publishes its microphone, plays the track ``agent_audio`` and
  reads JSON data packets from the participant ``server``) and ``src/index.ts`` (``event_type`` ``update``
  {transcript}, ``metadata`` {metadata}, ``agent_start_talking``, ``agent_stop_talking``, ``node_transition``);
- REST: retell-sdk ``types/web_call_response.py`` (``latency.*.{p50,p90,p95,p99,min,max,num,values}`` in ms,
  ``call_cost`` in CENTS), ``types/chat_response.py`` and ``types/chat_create_chat_completion_response.py``.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

LLM_WEBSOCKET_PATH = "/llm-websocket"


class MalformedFrame(ValueError):
    """A frame that is not the JSON object its protocol requires."""


class Wire(BaseModel):
    model_config = ConfigDict(extra="allow")

    def to_json(self) -> str:
        return json.dumps(self.model_dump(mode="json", exclude_none=True), ensure_ascii=False)


class Utterance(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: str = Field(
        description="agent | user | transfer_target (tool_call_* in transcript_with_tool_calls)"
    )
    content: str = ""


# --------------------------------------------------------------------------- Retell → custom LLM server


class PingPongRequest(Wire):
    interaction_type: Literal["ping_pong"] = "ping_pong"
    timestamp: int


class CallDetailsRequest(Wire):
    interaction_type: Literal["call_details"] = "call_details"
    call: dict[str, Any] = Field(default_factory=dict)


class UpdateOnlyRequest(Wire):
    interaction_type: Literal["update_only"] = "update_only"
    transcript: list[Utterance] = Field(default_factory=list)
    turntaking: Literal["agent_turn", "user_turn"] | None = None


class ResponseRequiredRequest(Wire):
    interaction_type: Literal["response_required"] = "response_required"
    response_id: int
    transcript: list[Utterance] = Field(default_factory=list)


class ReminderRequiredRequest(Wire):
    interaction_type: Literal["reminder_required"] = "reminder_required"
    response_id: int
    transcript: list[Utterance] = Field(default_factory=list)


RETELL_REQUESTS: dict[str, type[Wire]] = {
    "ping_pong": PingPongRequest,
    "call_details": CallDetailsRequest,
    "update_only": UpdateOnlyRequest,
    "response_required": ResponseRequiredRequest,
    "reminder_required": ReminderRequiredRequest,
}


# --------------------------------------------------------------------------- custom LLM server → Retell


class LlmConfig(BaseModel):
    model_config = ConfigDict(extra="allow")
    auto_reconnect: bool = False
    call_details: bool = False
    transcript_with_tool_calls: bool = False


class ConfigResponse(Wire):
    response_type: Literal["config"] = "config"
    config: LlmConfig = Field(default_factory=LlmConfig)


class UpdateAgentResponse(Wire):
    response_type: Literal["update_agent"] = "update_agent"
    agent_config: dict[str, Any] = Field(default_factory=dict)


class PingPongResponse(Wire):
    response_type: Literal["ping_pong"] = "ping_pong"
    timestamp: int


class ResponseResponse(Wire):
    response_type: Literal["response"] = "response"
    response_id: int
    content: str
    content_complete: bool
    no_interruption_allowed: bool | None = None
    end_call: bool | None = None
    transfer_number: str | None = None


class AgentInterruptResponse(Wire):
    response_type: Literal["agent_interrupt"] = "agent_interrupt"
    interrupt_id: int
    content: str
    content_complete: bool
    no_interruption_allowed: bool | None = None
    end_call: bool | None = None


class ToolCallInvocationResponse(Wire):
    response_type: Literal["tool_call_invocation"] = "tool_call_invocation"
    tool_call_id: str
    name: str
    arguments: str = Field(description="stringified JSON object")


class ToolCallResultResponse(Wire):
    response_type: Literal["tool_call_result"] = "tool_call_result"
    tool_call_id: str
    content: str
    successful: bool | None = None


class MetadataResponse(Wire):
    """Forwarded by Retell to the web-call frontend as a ``metadata`` event."""

    response_type: Literal["metadata"] = "metadata"
    metadata: dict[str, Any] = Field(default_factory=dict)


LLM_RESPONSES: dict[str, type[Wire]] = {
    "config": ConfigResponse,
    "update_agent": UpdateAgentResponse,
    "ping_pong": PingPongResponse,
    "response": ResponseResponse,
    "agent_interrupt": AgentInterruptResponse,
    "tool_call_invocation": ToolCallInvocationResponse,
    "tool_call_result": ToolCallResultResponse,
    "metadata": MetadataResponse,
}


# --------------------------------------------------------------------------- web call: data packets to the caller


class UpdateEvent(Wire):
    """The call's transcript so far (every utterance, growing as ASR and the agent's text go on)."""

    event_type: Literal["update"] = "update"
    transcript: list[Utterance] = Field(default_factory=list)
    turntaking: str | None = None


class MetadataEvent(Wire):
    """A custom LLM's ``metadata`` response, forwarded to the web client."""

    event_type: Literal["metadata"] = "metadata"
    metadata: Any = None


class AgentStartTalkingEvent(Wire):
    event_type: Literal["agent_start_talking"] = "agent_start_talking"


class AgentStopTalkingEvent(Wire):
    event_type: Literal["agent_stop_talking"] = "agent_stop_talking"


class UnknownEvent(Wire):
    """An event type the harness does not use (e.g. ``node_transition``)."""

    event_type: str = "unknown"


#: JSON data packets the participant ``server`` sends in a web call's room (retell-client-js-sdk ``index.ts``)
CALL_EVENTS: dict[str, type[Wire]] = {
    "update": UpdateEvent,
    "metadata": MetadataEvent,
    "agent_start_talking": AgentStartTalkingEvent,
    "agent_stop_talking": AgentStopTalkingEvent,
}


# --------------------------------------------------------------------------- dynamic variables


#: ``retell_llm_dynamic_variables`` the adapter sets on every chat and web call. A Retell LLM's prompt uses them
#: as ``{{language}}``, ``{{knowledge}}`` and ``{{conversation_history}}``; our custom LLM reads the language.
LANGUAGE_VARIABLE = "language"
KNOWLEDGE_VARIABLE = "knowledge"
HISTORY_VARIABLE = "conversation_history"
#: between two passages in the ``knowledge`` variable
PASSAGE_SEPARATOR = "\n\n---\n\n"
_HISTORY_LINE = {"user": "User", "assistant": "Agent"}


def knowledge_text(passages: list[str]) -> str:
    return PASSAGE_SEPARATOR.join(p.strip() for p in passages if p.strip())


def knowledge_passages(text: str | None) -> list[str]:
    return [p for p in (text or "").split(PASSAGE_SEPARATOR) if p.strip()]


def history_text(turns: list[tuple[str, str]]) -> str:
    """``User: …`` / ``Agent: …`` lines for (role, text) pairs with role ``user`` or ``assistant``."""
    return "\n".join(f"{_HISTORY_LINE[role]}: {' '.join(text.split())}" for role, text in turns)


def history_turns(text: str | None) -> list[tuple[str, str]]:
    """The (role, text) pairs of a ``conversation_history`` variable."""
    roles = {label: role for role, label in _HISTORY_LINE.items()}
    turns: list[tuple[str, str]] = []
    for line in (text or "").splitlines():
        label, sep, said = line.partition(": ")
        if sep and label in roles:
            turns.append((roles[label], said))
    return turns


# --------------------------------------------------------------------------- REST objects (the parts we read)


class LatencyStats(BaseModel):
    """One latency series of a call, in milliseconds."""

    model_config = ConfigDict(extra="allow")
    p50: float | None = None
    p90: float | None = None
    p95: float | None = None
    p99: float | None = None
    min: float | None = None
    max: float | None = None
    num: float | None = None
    values: list[float] | None = None

    @classmethod
    def of(cls, values: list[float]) -> LatencyStats:
        if not values:
            return cls(num=0, values=[])
        import numpy as np

        array = np.asarray(values, dtype=float)
        pct = {p: round(float(np.percentile(array, p)), 3) for p in (50, 90, 95, 99)}
        return cls(
            p50=pct[50],
            p90=pct[90],
            p95=pct[95],
            p99=pct[99],
            min=round(float(array.min()), 3),
            max=round(float(array.max()), 3),
            num=len(values),
            values=[round(v, 3) for v in values],
        )


class CallLatency(BaseModel):
    model_config = ConfigDict(extra="allow")
    e2e: LatencyStats | None = None
    llm: LatencyStats | None = None
    llm_websocket_network_rtt: LatencyStats | None = None
    tts: LatencyStats | None = None
    asr: LatencyStats | None = None
    knowledge_base: LatencyStats | None = None
    s2s: LatencyStats | None = None


class ProductCost(BaseModel):
    model_config = ConfigDict(extra="allow")
    product: str
    cost: float = Field(description="cents")
    unit_price: float | None = Field(default=None, description="cents per second")


class CallCost(BaseModel):
    """Costs in CENTS (retell-sdk ``CallCost``)."""

    model_config = ConfigDict(extra="allow")
    combined_cost: float
    product_costs: list[ProductCost] = Field(default_factory=list)
    total_duration_seconds: float = 0.0
    total_duration_unit_price: float = 0.0


class CallObject(BaseModel):
    """The parts of ``GET /v2/get-call/{call_id}`` the adapter reads."""

    model_config = ConfigDict(extra="allow")
    call_id: str
    call_status: str
    agent_id: str | None = None
    call_type: str | None = None
    duration_ms: int | None = None
    latency: CallLatency | None = None
    call_cost: CallCost | None = None
    disconnection_reason: str | None = None
    metadata: Any = None


class ChatCost(BaseModel):
    model_config = ConfigDict(extra="allow")
    combined_cost: float | None = None
    product_costs: list[ProductCost] | None = None


def cents_to_usd(cents: float | None) -> float | None:
    return None if cents is None else round(cents / 100.0, 6)


def vendor_latency_keys(latency: CallLatency | None) -> dict[str, float]:
    """``retell_<series>_<stat>`` in ms for every series Retell reported (e.g. ``retell_e2e_p50``)."""
    out: dict[str, float] = {}
    if latency is None:
        return out
    for series in ("e2e", "llm", "llm_websocket_network_rtt", "tts", "asr", "knowledge_base", "s2s"):
        stats: LatencyStats | None = getattr(latency, series)
        if stats is None:
            continue
        for stat in ("p50", "p90", "p95", "p99"):
            value = getattr(stats, stat)
            if value is not None:
                out[f"retell_{series}_{stat}"] = float(value)
    return out


# --------------------------------------------------------------------------- parsing


def _decode(data: str | bytes | dict[str, Any]) -> dict[str, Any]:
    if isinstance(data, dict):
        return data
    try:
        value = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise MalformedFrame(f"frame is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise MalformedFrame("frame is not a JSON object")
    return value


def _parse(
    data: str | bytes | dict[str, Any],
    field: str,
    table: dict[str, type[Wire]],
    unknown: type[Wire] | None = None,
) -> Wire:
    value = _decode(data)
    kind = value.get(field)
    model = table.get(kind) if isinstance(kind, str) else None
    if model is None:
        if unknown is not None and isinstance(kind, str):
            return unknown.model_validate(value)
        raise MalformedFrame(f"unknown or missing {field!r}: {kind!r}")
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        error = exc.errors()[0]
        raise MalformedFrame(f"{kind}: {'.'.join(map(str, error['loc']))}: {error['msg']}") from None


def parse_retell_request(data: str | bytes | dict[str, Any]) -> Wire:
    """A Retell→custom-LLM message (by ``interaction_type``)."""
    return _parse(data, "interaction_type", RETELL_REQUESTS)


def parse_llm_response(data: str | bytes | dict[str, Any]) -> Wire:
    """A custom-LLM→Retell message (by ``response_type``)."""
    return _parse(data, "response_type", LLM_RESPONSES)


def parse_call_event(data: str | bytes | dict[str, Any]) -> Wire:
    """A web call's data packet (by ``event_type``); unknown event types are tolerated."""
    return _parse(data, "event_type", CALL_EVENTS, unknown=UnknownEvent)
