"""ElevenLabs Agents conversation-socket messages: one pydantic model per message, both directions.

Verified against the elevenlabs SDK 2.78 (``elevenlabs/conversational_ai/conversation.py``: what its
``Conversation`` client sends and which fields it reads; ``elevenlabs/types/client_event.py``: the server
event names). Server messages carry their payload under ``<name>_event`` (``audio_event``, ``ping_event``,
``agent_response_event``, ...), except ``client_tool_call`` (payload under ``client_tool_call``) and
``agent_chat_response_part`` (under ``text_response_part``). The client's audio message has no ``type`` at
all: ``{"user_audio_chunk": "<base64>"}``. Second-hand, not in the Python SDK (kept tolerant): the payloads of
``agent_response_complete`` (``agent_response_complete_event.event_id``), ``vad_score``
(``vad_score_event.vad_score``, 0–1) and ``client_error``. ``agent_response_complete`` and ``vad_score`` arrive
only when the agent lists them in its client events.
"""

from __future__ import annotations

import json
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bench.protocol.redact import redact


class WireModel(BaseModel):
    model_config = ConfigDict(extra="allow")


# ------------------------------------------------------------ client → server
class ConversationInitiationClientData(WireModel):
    type: Literal["conversation_initiation_client_data"] = "conversation_initiation_client_data"
    conversation_config_override: dict[str, Any] = Field(default_factory=dict)
    custom_llm_extra_body: dict[str, Any] = Field(default_factory=dict)
    dynamic_variables: dict[str, Any] = Field(default_factory=dict)
    user_id: str | None = None


class UserAudioChunk(WireModel):
    """``{"user_audio_chunk": "<base64 PCM16>"}`` — the one message without a ``type``."""

    user_audio_chunk: str


class UserMessage(WireModel):
    type: Literal["user_message"] = "user_message"
    text: str


class Pong(WireModel):
    type: Literal["pong"] = "pong"
    event_id: int


class ClientToolResult(WireModel):
    type: Literal["client_tool_result"] = "client_tool_result"
    tool_call_id: str
    result: Any = None
    is_error: bool = False


class ContextualUpdate(WireModel):
    type: Literal["contextual_update"] = "contextual_update"
    text: str


class UserActivity(WireModel):
    type: Literal["user_activity"] = "user_activity"


CLIENT_MESSAGES: dict[str, type[WireModel]] = {
    "conversation_initiation_client_data": ConversationInitiationClientData,
    "user_audio_chunk": UserAudioChunk,
    "user_message": UserMessage,
    "pong": Pong,
    "client_tool_result": ClientToolResult,
    "contextual_update": ContextualUpdate,
    "user_activity": UserActivity,
}


# ------------------------------------------------------------ server → client
class InitiationMetadataEvent(WireModel):
    conversation_id: str
    agent_output_audio_format: str = "pcm_16000"
    user_input_audio_format: str = "pcm_16000"


class ConversationInitiationMetadata(WireModel):
    type: Literal["conversation_initiation_metadata"] = "conversation_initiation_metadata"
    conversation_initiation_metadata_event: InitiationMetadataEvent


class PingEvent(WireModel):
    event_id: int
    #: the server's estimate of the round trip (the SDK reads ``event["ping_ms"]``: the key must be present,
    #: null until a round trip was measured); a fraction is tolerated
    ping_ms: float | None = None


class Ping(WireModel):
    type: Literal["ping"] = "ping"
    ping_event: PingEvent


class UserTranscriptionEvent(WireModel):
    user_transcript: str
    event_id: int | None = None


class UserTranscript(WireModel):
    type: Literal["user_transcript"] = "user_transcript"
    user_transcription_event: UserTranscriptionEvent


class AgentResponseEvent(WireModel):
    agent_response: str
    event_id: int | None = None


class AgentResponse(WireModel):
    type: Literal["agent_response"] = "agent_response"
    agent_response_event: AgentResponseEvent


class AgentResponseCorrectionEvent(WireModel):
    original_agent_response: str
    corrected_agent_response: str
    event_id: int | None = None


class AgentResponseCorrection(WireModel):
    type: Literal["agent_response_correction"] = "agent_response_correction"
    agent_response_correction_event: AgentResponseCorrectionEvent


class TextResponsePart(WireModel):
    text: str = ""
    #: ``start`` / ``delta`` / ``stop``; an unknown kind is read as a delta, as the SDK does
    type: str = "delta"
    event_id: int | None = None


class AgentChatResponsePart(WireModel):
    type: Literal["agent_chat_response_part"] = "agent_chat_response_part"
    text_response_part: TextResponsePart


class Alignment(WireModel):
    chars: list[str] = Field(default_factory=list)
    char_start_times_ms: list[int] = Field(default_factory=list)
    char_durations_ms: list[int] = Field(default_factory=list)


class AudioEvent(WireModel):
    audio_base_64: str
    event_id: int
    alignment: Alignment | None = None


class Audio(WireModel):
    type: Literal["audio"] = "audio"
    audio_event: AudioEvent


class InterruptionEvent(WireModel):
    event_id: int
    reason: str | None = None


class Interruption(WireModel):
    type: Literal["interruption"] = "interruption"
    interruption_event: InterruptionEvent


class ClientToolCallPayload(WireModel):
    tool_name: str
    tool_call_id: str
    parameters: dict[str, Any] = Field(default_factory=dict)
    expects_response: bool | None = None


class ClientToolCall(WireModel):
    type: Literal["client_tool_call"] = "client_tool_call"
    client_tool_call: ClientToolCallPayload


class AgentResponseCompleteEvent(WireModel):
    event_id: int | None = None


class AgentResponseComplete(WireModel):
    type: Literal["agent_response_complete"] = "agent_response_complete"
    agent_response_complete_event: AgentResponseCompleteEvent = Field(
        default_factory=AgentResponseCompleteEvent
    )


class VadScoreEvent(WireModel):
    vad_score: float = 0.0


class VadScore(WireModel):
    """The server VAD's probability that the caller is speaking."""

    type: Literal["vad_score"] = "vad_score"
    vad_score_event: VadScoreEvent = Field(default_factory=VadScoreEvent)


class ClientError(WireModel):
    """An error the server reports before closing (payload shape second-hand; every field optional)."""

    type: Literal["client_error"] = "client_error"
    client_error_event: dict[str, Any] = Field(default_factory=dict)


class UnknownServerMessage(WireModel):
    """Any other server message (``vad_score``, ``agent_response_metadata``, ``internal_*`` ...): ignored."""

    type: str


SERVER_MESSAGE_MODELS: tuple[type[WireModel], ...] = (
    ConversationInitiationMetadata,
    Ping,
    UserTranscript,
    AgentResponse,
    AgentResponseCorrection,
    AgentChatResponsePart,
    Audio,
    Interruption,
    ClientToolCall,
    AgentResponseComplete,
    VadScore,
    ClientError,
)
SERVER_MESSAGES: dict[str, type[WireModel]] = {
    get_args(m.model_fields["type"].annotation)[0]: m for m in SERVER_MESSAGE_MODELS
}

ServerMessage = (
    ConversationInitiationMetadata
    | Ping
    | UserTranscript
    | AgentResponse
    | AgentResponseCorrection
    | AgentChatResponsePart
    | Audio
    | Interruption
    | ClientToolCall
    | AgentResponseComplete
    | VadScore
    | ClientError
    | UnknownServerMessage
)


class MalformedMessage(ValueError):
    """A frame that is not a well-formed message."""


def _load(raw: str | bytes | dict[str, Any]) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise MalformedMessage(f"not JSON: {redact(str(raw))[:80]!r}") from exc
    if not isinstance(data, dict):
        raise MalformedMessage(f"not a JSON object: {redact(str(raw))[:80]!r}")
    return data


def parse_server_message(raw: str | bytes | dict[str, Any]) -> ServerMessage:
    data = _load(raw)
    kind = data.get("type")
    if not isinstance(kind, str):
        raise MalformedMessage(f"message without a type: {redact(str(raw))[:80]!r}")
    model = SERVER_MESSAGES.get(kind, UnknownServerMessage)
    try:
        return model.model_validate(data)  # type: ignore[return-value]
    except ValidationError as exc:
        raise MalformedMessage(f"{kind}: {exc.errors()[0]['loc']}: {exc.errors()[0]['msg']}") from exc


def client_message_type(data: dict[str, Any]) -> str | None:
    if "user_audio_chunk" in data and "type" not in data:
        return "user_audio_chunk"
    kind = data.get("type")
    return kind if isinstance(kind, str) else None


def parse_client_message(raw: str | bytes | dict[str, Any]) -> WireModel | None:
    """Parse one client frame (emulator side); ``None`` for an unknown type."""
    data = _load(raw)
    model = CLIENT_MESSAGES.get(client_message_type(data) or "")
    if model is None:
        return None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise MalformedMessage(f"{client_message_type(data)}: {exc.errors()[0]['msg']}") from exc


def message_type(message: BaseModel) -> str:
    return "user_audio_chunk" if isinstance(message, UserAudioChunk) else str(getattr(message, "type", "?"))


def dump(message: BaseModel) -> str:
    """``message`` as JSON without unset optional fields, except ``ping_event.ping_ms``: the SDK indexes it, so a
    ping always carries it (null when no round trip was measured yet)."""
    if isinstance(message, Ping):
        return json.dumps({"type": message.type, "ping_event": {
            **message.ping_event.model_dump(exclude_none=True), "ping_ms": message.ping_event.ping_ms}})
    return message.model_dump_json(exclude_none=True)


def audio_format_rate(audio_format: str, default: int = 16000) -> int:
    """``pcm_16000`` → 16000; ``ulaw_8000`` → 8000."""
    try:
        return int(audio_format.rsplit("_", 1)[1])
    except (IndexError, ValueError):
        return default


def is_pcm(audio_format: str) -> bool:
    """Whether ``audio_format`` is raw pcm_s16le (``pcm_<rate>``), the only audio the adapter handles."""
    return audio_format.startswith("pcm_")
