"""Vapi wire messages: WebSocket-transport frames, control messages, REST call/chat objects, webhooks.

Field names are checked against vapi-server-sdk 1.9 (``vapi/types``): the messages a client observes during a
call are the ``ClientMessage*`` types (``client_message_model_output.py``, ``..._speech_update.py``,
``..._transcript.py``, ``..._tool_calls.py``, ``..._tool_calls_result.py``, ``..._user_interrupted.py``,
``..._conversation_update.py``); client → Vapi control messages are ``ClientInboundMessage*`` (``add-message``
with ``triggerResponseEnabled``, ``control`` such as ``mute-assistant``, ``end-call``) plus ``{"type": "hangup"}``
from Vapi's WebSocket-transport guide; the call object is ``Call`` (``cost`` USD, ``costBreakdown``, ``costs[]``,
``artifact.performanceMetrics.turnLatencies[]``, ``endedReason``) and a chat is ``Chat``. Over the
``vapi.websocket`` transport binary frames are raw PCM16 audio and text frames are JSON. The client sends control
messages flat (``{"type": "add-message", ...}``, the form Vapi's live-call-control URL takes); whether Vapi wraps
the messages it sends as ``{"message": {...}}`` on the transport is not documented, so
:func:`parse_transport_message` accepts both the flat and the wrapped form (UNVERIFIED against a live call).
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel


class VapiModel(BaseModel):
    """camelCase on the wire, snake_case in Python; unknown fields kept."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")

    def wire(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")

    def wire_json(self) -> str:
        return self.model_dump_json(by_alias=True, exclude_none=True)


class MalformedMessage(ValueError):
    """A transport text frame that is not a JSON object with a ``type``."""


# --- messages the client observes on the call transport -------------------------------------------


class ConversationUpdate(VapiModel):
    type: Literal["conversation-update"] = "conversation-update"
    messages: list[dict[str, Any]] | None = None
    messages_open_ai_formatted: list[dict[str, Any]] = Field(
        default_factory=list, alias="messagesOpenAIFormatted"
    )
    timestamp: float | None = None


class ModelOutput(VapiModel):
    """Model output as it streams. The SDK types ``output`` as an object ("a token or tool call",
    ``vapi/types/client_message_model_output.py``); which keys carry the token is not documented, so a plain string
    and an object with ``content`` / ``token`` / ``text`` (or an OpenAI-style ``delta.content``) are all read as
    text, and an object without one (a tool-call fragment) as no text. ``turnId`` (newer API versions) groups the
    tokens of one LLM turn."""

    type: Literal["model-output"] = "model-output"
    output: str | dict[str, Any]
    turn_id: str | None = None
    timestamp: float | None = None

    def token(self) -> str:
        if isinstance(self.output, str):
            return self.output
        for key in ("content", "token", "text"):
            value = self.output.get(key)
            if isinstance(value, str):
                return value
        delta = self.output.get("delta")
        if isinstance(delta, dict) and isinstance(delta.get("content"), str):
            return delta["content"]
        return ""


class SpeechUpdate(VapiModel):
    type: Literal["speech-update"] = "speech-update"
    status: Literal["started", "stopped"] | str
    role: Literal["assistant", "user"] | str
    turn: int | None = None
    timestamp: float | None = None


class TranscriptMessage(VapiModel):
    type: Literal["transcript"] | str = "transcript"
    role: Literal["assistant", "user"] | str
    transcript_type: Literal["partial", "final"] | str = Field(alias="transcriptType")
    transcript: str
    timestamp: float | None = None


class ToolCallFunction(VapiModel):
    name: str
    arguments: str | dict[str, Any] = "{}"

    def argument_dict(self) -> dict[str, Any]:
        if isinstance(self.arguments, dict):
            return self.arguments
        try:
            value = json.loads(self.arguments or "{}")
        except json.JSONDecodeError:
            return {"_raw": self.arguments}
        return value if isinstance(value, dict) else {"_value": value}


class ToolCallItem(VapiModel):
    id: str
    type: str = "function"
    function: ToolCallFunction


class ToolCalls(VapiModel):
    type: Literal["tool-calls"] = "tool-calls"
    tool_call_list: list[ToolCallItem] = Field(alias="toolCallList")
    tool_with_tool_call_list: list[dict[str, Any]] = Field(default_factory=list, alias="toolWithToolCallList")
    timestamp: float | None = None


class ToolCallsResult(VapiModel):
    type: Literal["tool-calls-result"] = "tool-calls-result"
    tool_call_result: dict[str, Any] = Field(alias="toolCallResult")
    timestamp: float | None = None


class Hang(VapiModel):
    type: Literal["hang"] = "hang"
    timestamp: float | None = None


class UserInterrupted(VapiModel):
    type: Literal["user-interrupted"] = "user-interrupted"
    timestamp: float | None = None


class StatusUpdate(VapiModel):
    """Server-URL message; tolerated on the transport too."""

    type: Literal["status-update"] = "status-update"
    status: str
    ended_reason: str | None = None
    timestamp: float | None = None


class TransferUpdate(VapiModel):
    """The assistant transfers the call (SDK ``ClientMessageTransferUpdate``); ``destination`` is a number, SIP or
    assistant destination object."""

    type: Literal["transfer-update"] = "transfer-update"
    destination: dict[str, Any] | None = None
    timestamp: float | None = None

    def target(self) -> str | None:
        destination = self.destination or {}
        for key in ("number", "sipUri", "assistantName"):
            if isinstance(destination.get(key), str):
                return destination[key]
        return None


#: ``endedReason`` values that say the assistant itself ended the call (SDK ``CallEndedReason``)
AGENT_HANGUP_REASONS = ("assistant-ended-call", "assistant-said-end-call-phrase")
#: the assistant forwarded the call
AGENT_TRANSFER_REASONS = ("assistant-forwarded-call",)


class UnknownMessage(VapiModel):
    """Any other typed message (kept, ignored by the adapter)."""

    type: str


TransportMessage = (
    ConversationUpdate
    | ModelOutput
    | SpeechUpdate
    | TranscriptMessage
    | ToolCalls
    | ToolCallsResult
    | Hang
    | UserInterrupted
    | StatusUpdate
    | TransferUpdate
    | UnknownMessage
)

TRANSPORT_MESSAGE_TYPES: dict[str, type[TransportMessage]] = {
    "conversation-update": ConversationUpdate,
    "model-output": ModelOutput,
    "speech-update": SpeechUpdate,
    "transcript": TranscriptMessage,
    'transcript[transcriptType="final"]': TranscriptMessage,
    "tool-calls": ToolCalls,
    "tool-calls-result": ToolCallsResult,
    "hang": Hang,
    "user-interrupted": UserInterrupted,
    "status-update": StatusUpdate,
    "transfer-update": TransferUpdate,
}


def parse_transport_message(text: str) -> TransportMessage:
    """Parse one JSON text frame of the call transport (flat or ``{"message": {...}}``)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise MalformedMessage(f"transport frame is not JSON: {exc.msg}") from None
    if isinstance(data, dict) and "type" not in data and isinstance(data.get("message"), dict):
        data = data["message"]
    if not isinstance(data, dict) or not isinstance(data.get("type"), str):
        raise MalformedMessage("transport frame has no 'type'")
    model = TRANSPORT_MESSAGE_TYPES.get(data["type"], UnknownMessage)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise MalformedMessage(
            f"invalid {data['type']} message: {exc.error_count()} field error(s)"
        ) from None


# --- control messages the client sends ------------------------------------------------------------


class OpenAiMessage(VapiModel):
    role: str
    content: str | None = None


class AddMessage(VapiModel):
    """Add a message to the conversation; a user message with ``triggerResponseEnabled`` asks for a response, a
    system message changes the agent's instructions mid-call."""

    type: Literal["add-message"] = "add-message"
    message: OpenAiMessage
    trigger_response_enabled: bool = True


class Control(VapiModel):
    """``mute-assistant`` / ``unmute-assistant`` (the assistant stops / resumes speaking), ``mute-customer``, …"""

    type: Literal["control"] = "control"
    control: str


class Hangup(VapiModel):
    type: Literal["hangup"] = "hangup"


class EndCall(VapiModel):
    type: Literal["end-call"] = "end-call"


InboundMessage = AddMessage | Control | Hangup | EndCall
INBOUND_MESSAGE_TYPES: dict[str, type[InboundMessage]] = {
    "add-message": AddMessage,
    "control": Control,
    "hangup": Hangup,
    "end-call": EndCall,
}


def parse_control_message(text: str) -> InboundMessage | UnknownMessage:
    """One JSON text frame the client sent on the call transport (flat, or the SDK's ``{"message": {...}}``)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise MalformedMessage(f"control frame is not JSON: {exc.msg}") from None
    if isinstance(data, dict) and "type" not in data and isinstance(data.get("message"), dict):
        data = data["message"]
    if not isinstance(data, dict) or not isinstance(data.get("type"), str):
        raise MalformedMessage("control frame has no 'type'")
    model = INBOUND_MESSAGE_TYPES.get(data["type"], UnknownMessage)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise MalformedMessage(f"invalid {data['type']} control message") from exc


# --- REST: assistant, call, chat ------------------------------------------------------------------


class CustomLlmModelSpec(VapiModel):
    provider: str = "custom-llm"
    url: str
    model: str = "inhouse-orchestrator"
    messages: list[dict[str, Any]] | None = None
    tools: list[dict[str, Any]] | None = None
    headers: dict[str, str] | None = None
    metadata_send_mode: str | None = None
    timeout_seconds: float | None = None


class AssistantSpec(VapiModel):
    name: str | None = None
    model: dict[str, Any] | None = None
    first_message: str | None = None
    first_message_mode: str | None = None
    voice: dict[str, Any] | None = None
    transcriber: dict[str, Any] | None = None
    client_messages: list[str] | None = None
    server_messages: list[str] | None = None
    server: dict[str, Any] | None = None
    server_url: str | None = None


class AudioFormat(VapiModel):
    format: str = "pcm_s16le"
    container: str = "raw"
    sample_rate: int = 16000


class TransportSpec(VapiModel):
    provider: str = "vapi.websocket"
    audio_format: AudioFormat | None = None
    websocket_call_url: str | None = None


class CreateCallRequest(VapiModel):
    assistant_id: str | None = None
    assistant: AssistantSpec | None = None
    assistant_overrides: dict[str, Any] | None = None
    transport: TransportSpec | None = None
    name: str | None = None
    customer: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None


class TurnLatency(VapiModel):
    """Per-turn latencies. The SDK does not state the unit; sibling ``PerformanceMetrics`` transport fields
    and Vapi's analytics ``LatencyMetrics`` are documented in milliseconds, so milliseconds are assumed."""

    model_latency: float | None = None
    voice_latency: float | None = None
    transcriber_latency: float | None = None
    endpointing_latency: float | None = None
    turn_latency: float | None = None


class PerformanceMetrics(VapiModel):
    turn_latencies: list[TurnLatency] | None = None
    model_latency_average: float | None = None
    voice_latency_average: float | None = None
    transcriber_latency_average: float | None = None
    endpointing_latency_average: float | None = None
    turn_latency_average: float | None = None


class CostBreakdown(VapiModel):
    transport: float | None = None
    stt: float | None = None
    llm: float | None = None
    tts: float | None = None
    vapi: float | None = None
    chat: float | None = None
    total: float | None = None
    llm_prompt_tokens: float | None = None
    llm_completion_tokens: float | None = None
    tts_characters: float | None = None


class Artifact(VapiModel):
    messages: list[dict[str, Any]] | None = None
    messages_open_ai_formatted: list[dict[str, Any]] | None = Field(
        default=None, alias="messagesOpenAIFormatted"
    )
    transcript: str | None = None
    performance_metrics: PerformanceMetrics | None = None


class CallRecord(VapiModel):
    """The call object of ``GET /call/{id}`` (subset the harness reads; the rest is kept as extra fields)."""

    id: str
    org_id: str
    created_at: str
    updated_at: str
    type: str | None = None
    status: str | None = None
    started_at: str | None = None
    ended_at: str | None = None
    ended_reason: str | None = None
    cost: float | None = None
    cost_breakdown: CostBreakdown | None = None
    costs: list[dict[str, Any]] | None = None
    artifact: Artifact | None = None
    assistant_id: str | None = None
    assistant: dict[str, Any] | None = None
    assistant_overrides: dict[str, Any] | None = None
    name: str | None = None
    transport: dict[str, Any] | None = None

    def websocket_call_url(self) -> str | None:
        url = (self.transport or {}).get("websocketCallUrl")
        return str(url) if url else None


class ChatRecord(VapiModel):
    """``POST /chat`` (non-streamed) / ``GET /chat/{id}`` object."""

    id: str
    org_id: str
    created_at: str
    updated_at: str
    assistant_id: str | None = None
    name: str | None = None
    session_id: str | None = None
    previous_chat_id: str | None = None
    input: str | list[dict[str, Any]] | None = None
    messages: list[dict[str, Any]] | None = None
    output: list[dict[str, Any]] | None = None
    cost: float | None = None
    costs: list[dict[str, Any]] | None = None

    def output_text(self) -> str:
        return "".join(str(m.get("content") or "") for m in self.output or [] if m.get("role") == "assistant")

    def tool_calls(self) -> list[ToolCallItem]:
        calls: list[ToolCallItem] = []
        for message in self.output or []:
            for call in message.get("tool_calls") or message.get("toolCalls") or []:
                try:
                    calls.append(ToolCallItem.model_validate(call))
                except ValidationError:
                    continue
        return calls


class CreateChatRequest(VapiModel):
    input: str | list[dict[str, Any]]
    assistant_id: str | None = None
    assistant: AssistantSpec | None = None
    assistant_overrides: dict[str, Any] | None = None
    name: str | None = None
    stream: bool | None = None
    session_id: str | None = None
    previous_chat_id: str | None = None


# --- server-URL webhooks ------------------------------------------------------------------------


class WebhookEnvelope(VapiModel):
    """``POST {server.url}`` body: ``{"message": {type, ...}}``."""

    message: dict[str, Any]


class ApiErrorBody(VapiModel):
    message: str | list[str]
    error: str | None = None
    status_code: int | None = None
