"""OpenAI Realtime wire events: one pydantic model per client / server event, GA names with their beta
aliases.

Checked against openai-python 3.57 (``openai/types/realtime/*`` for GA, ``openai/types/beta/realtime/*`` for
the beta interface). GA renamed ``response.audio.*`` → ``response.output_audio.*``,
``response.audio_transcript.*`` → ``response.output_audio_transcript.*`` and ``response.text.*`` →
``response.output_text.*``, and replaced the beta ``conversation.item.created`` by ``conversation.item.added``
+ ``conversation.item.done``. A model whose ``type`` literal lists two names accepts both; ``SERVER_EVENTS``
maps every wire name to its model, and ``wire_name`` gives the name to emit for either interface.

The server models are at least as lenient as the SDK's own types: they allow extra fields, every field the SDK
makes optional is optional here, and enumerations the SDK may grow (item types, statuses, reasons) are plain
strings, so a frame the SDK accepts never fails a conversation as malformed. Unknown event types parse as
``UnknownServerEvent``.
"""

from __future__ import annotations

import json
import uuid
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bench.protocol.redact import redact

BETA_HEADER = ("OpenAI-Beta", "realtime=v1")

#: GA event name → beta event name, for the events that were renamed
GA_TO_BETA: dict[str, str] = {
    "response.output_audio.delta": "response.audio.delta",
    "response.output_audio.done": "response.audio.done",
    "response.output_audio_transcript.delta": "response.audio_transcript.delta",
    "response.output_audio_transcript.done": "response.audio_transcript.done",
    "response.output_text.delta": "response.text.delta",
    "response.output_text.done": "response.text.done",
    "conversation.item.added": "conversation.item.created",
}
BETA_TO_GA: dict[str, str] = {beta: ga for ga, beta in GA_TO_BETA.items()}


def wire_name(ga_name: str, beta: bool) -> str:
    """The name of a GA event as the chosen interface spells it."""
    return GA_TO_BETA.get(ga_name, ga_name) if beta else ga_name


def canonical_name(name: str) -> str:
    """The GA spelling of a GA or beta event name."""
    return BETA_TO_GA.get(name, name)


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:22]}"


class WireModel(BaseModel):
    model_config = ConfigDict(extra="allow")


# ------------------------------------------------------------ shared objects
class FunctionTool(WireModel):
    type: Literal["function"] = "function"
    name: str
    description: str | None = None
    parameters: dict[str, Any] = Field(default_factory=dict)


class ContentPart(WireModel):
    """A content part of an item: input_text / input_audio (user), output_text / output_audio (GA assistant),
    text / audio (beta assistant and content-part events)."""

    type: str | None = None
    text: str | None = None
    audio: str | None = None
    transcript: str | None = None


class ConversationItem(WireModel):
    """A conversation item: ``message``, ``function_call``, ``function_call_output`` or any other item type the
    server knows (``mcp_call``, ``mcp_list_tools``, approvals …), whose extra fields are kept."""

    id: str | None = None
    object: str | None = "realtime.item"
    #: required by the GA types, optional in the beta ones
    type: str | None = None
    status: str | None = None
    role: str | None = None
    content: list[ContentPart] | None = None
    call_id: str | None = None
    name: str | None = None
    arguments: str | None = None
    output: str | None = None


class InputTokenDetails(WireModel):
    text_tokens: int | None = None
    audio_tokens: int | None = None
    image_tokens: int | None = None
    cached_tokens: int | None = None
    cached_tokens_details: dict[str, int] | None = None


class OutputTokenDetails(WireModel):
    text_tokens: int | None = None
    audio_tokens: int | None = None


class ResponseUsage(WireModel):
    total_tokens: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    input_token_details: InputTokenDetails | None = None
    output_token_details: OutputTokenDetails | None = None


class ErrorDetail(WireModel):
    """The ``error`` object of an ``error`` event or of a failed response's ``status_details`` (where the SDK
    makes every field optional)."""

    type: str | None = None
    message: str | None = None
    code: str | None = None
    param: str | None = None
    event_id: str | None = None


class ResponseStatusDetails(WireModel):
    type: str | None = None
    reason: str | None = None
    error: ErrorDetail | None = None


class RealtimeResponse(WireModel):
    id: str | None = None
    object: str | None = "realtime.response"
    #: completed, cancelled, failed, incomplete or in_progress
    status: str | None = None
    status_details: ResponseStatusDetails | None = None
    output: list[ConversationItem] | None = None
    usage: ResponseUsage | None = None
    conversation_id: str | None = None


class TranscriptionUsage(WireModel):
    """``usage`` of an input transcription: token-billed (``type: tokens``) or duration-billed
    (``type: duration``, ``seconds``), billed at the transcription model's price."""

    type: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    input_token_details: InputTokenDetails | None = None
    seconds: float | None = None


class RateLimit(WireModel):
    name: str | None = None
    limit: int | None = None
    remaining: int | None = None
    reset_seconds: float | None = None


# ------------------------------------------------------------ client events
class ClientEvent(WireModel):
    event_id: str | None = None
    #: each event narrows it to its own name
    type: str


class SessionUpdate(ClientEvent):
    """``session.update``; ``session`` is the GA shape (``type: realtime``) or the beta shape."""

    type: Literal["session.update"] = "session.update"
    session: dict[str, Any]


class ConversationItemCreate(ClientEvent):
    type: Literal["conversation.item.create"] = "conversation.item.create"
    item: ConversationItem
    previous_item_id: str | None = None


class InputAudioBufferAppend(ClientEvent):
    type: Literal["input_audio_buffer.append"] = "input_audio_buffer.append"
    audio: str


class InputAudioBufferCommit(ClientEvent):
    type: Literal["input_audio_buffer.commit"] = "input_audio_buffer.commit"


class InputAudioBufferClear(ClientEvent):
    type: Literal["input_audio_buffer.clear"] = "input_audio_buffer.clear"


class ResponseCreate(ClientEvent):
    type: Literal["response.create"] = "response.create"
    response: dict[str, Any] | None = None


class ResponseCancel(ClientEvent):
    type: Literal["response.cancel"] = "response.cancel"
    response_id: str | None = None


class ConversationItemTruncate(ClientEvent):
    """Cut an assistant audio item at what the caller actually heard (the server drops the unheard transcript)."""

    type: Literal["conversation.item.truncate"] = "conversation.item.truncate"
    item_id: str
    content_index: int = 0
    audio_end_ms: int = Field(ge=0)


class ConversationItemDelete(ClientEvent):
    type: Literal["conversation.item.delete"] = "conversation.item.delete"
    item_id: str


CLIENT_EVENT_MODELS: tuple[type[ClientEvent], ...] = (
    SessionUpdate,
    ConversationItemCreate,
    InputAudioBufferAppend,
    InputAudioBufferCommit,
    InputAudioBufferClear,
    ResponseCreate,
    ResponseCancel,
    ConversationItemTruncate,
    ConversationItemDelete,
)


# ------------------------------------------------------------ server events
class ServerEvent(WireModel):
    event_id: str = Field(default_factory=lambda: new_id("event"))
    #: each event narrows it to its own name
    type: str


class ErrorEvent(ServerEvent):
    type: Literal["error"] = "error"
    error: ErrorDetail


class SessionCreated(ServerEvent):
    type: Literal["session.created"] = "session.created"
    session: dict[str, Any]


class SessionUpdated(ServerEvent):
    type: Literal["session.updated"] = "session.updated"
    session: dict[str, Any]


class ConversationItemAdded(ServerEvent):
    """GA ``conversation.item.added``; beta ``conversation.item.created`` has the same fields."""

    type: Literal["conversation.item.added", "conversation.item.created"] = "conversation.item.added"
    item: ConversationItem
    previous_item_id: str | None = None


class ConversationItemDone(ServerEvent):
    type: Literal["conversation.item.done"] = "conversation.item.done"
    item: ConversationItem
    previous_item_id: str | None = None


class ConversationItemTruncated(ServerEvent):
    type: Literal["conversation.item.truncated"] = "conversation.item.truncated"
    item_id: str
    content_index: int = 0
    audio_end_ms: int = 0


class ConversationItemDeleted(ServerEvent):
    type: Literal["conversation.item.deleted"] = "conversation.item.deleted"
    item_id: str


class InputAudioBufferCommitted(ServerEvent):
    type: Literal["input_audio_buffer.committed"] = "input_audio_buffer.committed"
    item_id: str
    previous_item_id: str | None = None


class InputAudioBufferCleared(ServerEvent):
    type: Literal["input_audio_buffer.cleared"] = "input_audio_buffer.cleared"


class InputAudioBufferSpeechStarted(ServerEvent):
    type: Literal["input_audio_buffer.speech_started"] = "input_audio_buffer.speech_started"
    audio_start_ms: int = 0
    item_id: str


class InputAudioBufferSpeechStopped(ServerEvent):
    type: Literal["input_audio_buffer.speech_stopped"] = "input_audio_buffer.speech_stopped"
    audio_end_ms: int = 0
    item_id: str


class InputAudioTranscriptionCompleted(ServerEvent):
    type: Literal["conversation.item.input_audio_transcription.completed"] = (
        "conversation.item.input_audio_transcription.completed"
    )
    item_id: str
    content_index: int = 0
    transcript: str
    #: required by the SDK; optional here so an older server's frame still parses
    usage: TranscriptionUsage | None = None


class InputAudioTranscriptionFailed(ServerEvent):
    type: Literal["conversation.item.input_audio_transcription.failed"] = (
        "conversation.item.input_audio_transcription.failed"
    )
    item_id: str
    content_index: int = 0
    error: ErrorDetail | None = None


class ResponseCreated(ServerEvent):
    type: Literal["response.created"] = "response.created"
    response: RealtimeResponse


class ResponseDone(ServerEvent):
    type: Literal["response.done"] = "response.done"
    response: RealtimeResponse


class ResponseOutputItemAdded(ServerEvent):
    type: Literal["response.output_item.added"] = "response.output_item.added"
    response_id: str
    output_index: int
    item: ConversationItem


class ResponseOutputItemDone(ServerEvent):
    type: Literal["response.output_item.done"] = "response.output_item.done"
    response_id: str
    output_index: int
    item: ConversationItem


class _PartEvent(ServerEvent):
    response_id: str
    item_id: str
    output_index: int = 0
    content_index: int = 0


class ResponseContentPartAdded(_PartEvent):
    type: Literal["response.content_part.added"] = "response.content_part.added"
    part: ContentPart


class ResponseContentPartDone(_PartEvent):
    type: Literal["response.content_part.done"] = "response.content_part.done"
    part: ContentPart


class ResponseOutputTextDelta(_PartEvent):
    type: Literal["response.output_text.delta", "response.text.delta"] = "response.output_text.delta"
    delta: str


class ResponseOutputTextDone(_PartEvent):
    type: Literal["response.output_text.done", "response.text.done"] = "response.output_text.done"
    text: str


class ResponseOutputAudioTranscriptDelta(_PartEvent):
    type: Literal["response.output_audio_transcript.delta", "response.audio_transcript.delta"] = (
        "response.output_audio_transcript.delta"
    )
    delta: str


class ResponseOutputAudioTranscriptDone(_PartEvent):
    type: Literal["response.output_audio_transcript.done", "response.audio_transcript.done"] = (
        "response.output_audio_transcript.done"
    )
    transcript: str


class ResponseOutputAudioDelta(_PartEvent):
    type: Literal["response.output_audio.delta", "response.audio.delta"] = "response.output_audio.delta"
    delta: str = Field(description="base64 PCM16 audio")


class ResponseOutputAudioDone(_PartEvent):
    type: Literal["response.output_audio.done", "response.audio.done"] = "response.output_audio.done"


class ResponseFunctionCallArgumentsDelta(ServerEvent):
    type: Literal["response.function_call_arguments.delta"] = "response.function_call_arguments.delta"
    response_id: str
    item_id: str
    output_index: int = 0
    call_id: str
    delta: str


class ResponseFunctionCallArgumentsDone(ServerEvent):
    type: Literal["response.function_call_arguments.done"] = "response.function_call_arguments.done"
    response_id: str
    item_id: str
    output_index: int = 0
    call_id: str
    #: GA only: the beta event carries no name (it is on the function-call item)
    name: str | None = None
    arguments: str


class RateLimitsUpdated(ServerEvent):
    type: Literal["rate_limits.updated"] = "rate_limits.updated"
    rate_limits: list[RateLimit]


class UnknownServerEvent(WireModel):
    """Any server event this adapter does not interpret (kept so traces stay complete)."""

    type: str
    event_id: str | None = None


SERVER_EVENT_MODELS: tuple[type[ServerEvent], ...] = (
    ErrorEvent,
    SessionCreated,
    SessionUpdated,
    ConversationItemAdded,
    ConversationItemDone,
    ConversationItemTruncated,
    ConversationItemDeleted,
    InputAudioBufferCommitted,
    InputAudioBufferCleared,
    InputAudioBufferSpeechStarted,
    InputAudioBufferSpeechStopped,
    InputAudioTranscriptionCompleted,
    InputAudioTranscriptionFailed,
    ResponseCreated,
    ResponseDone,
    ResponseOutputItemAdded,
    ResponseOutputItemDone,
    ResponseContentPartAdded,
    ResponseContentPartDone,
    ResponseOutputTextDelta,
    ResponseOutputTextDone,
    ResponseOutputAudioTranscriptDelta,
    ResponseOutputAudioTranscriptDone,
    ResponseOutputAudioDelta,
    ResponseOutputAudioDone,
    ResponseFunctionCallArgumentsDelta,
    ResponseFunctionCallArgumentsDone,
    RateLimitsUpdated,
)


def _type_names(model: type[BaseModel]) -> tuple[str, ...]:
    return get_args(model.model_fields["type"].annotation)


#: every wire name (GA and beta) → its model
SERVER_EVENTS: dict[str, type[ServerEvent]] = {
    name: m for m in SERVER_EVENT_MODELS for name in _type_names(m)
}
CLIENT_EVENTS: dict[str, type[ClientEvent]] = {
    name: m for m in CLIENT_EVENT_MODELS for name in _type_names(m)
}


class MalformedEvent(ValueError):
    """A frame that is not a well-formed event (bad JSON, no type, wrong field types)."""


def _load(raw: str | bytes | dict[str, Any]) -> dict[str, Any]:
    if isinstance(raw, dict):
        data = raw
    else:
        try:
            data = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            raise MalformedEvent(f"not JSON: {redact(str(raw))[:80]!r}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("type"), str):
        raise MalformedEvent(f"event without a type: {redact(str(raw))[:80]!r}")
    return data


def parse_server_event(raw: str | bytes | dict[str, Any]) -> ServerEvent | UnknownServerEvent:
    """Parse one server frame: unknown types → ``UnknownServerEvent``, bad frames → ``MalformedEvent``."""
    data = _load(raw)
    model = SERVER_EVENTS.get(data["type"])
    try:
        return model.model_validate(data) if model else UnknownServerEvent.model_validate(data)
    except ValidationError as exc:
        raise MalformedEvent(
            f"{data['type']}: {exc.error_count()} invalid field(s): {exc.errors()[0]['msg']}"
        ) from exc


def parse_client_event(raw: str | bytes | dict[str, Any]) -> ClientEvent | None:
    """Parse one client frame (emulator side); ``None`` for a type this protocol does not define."""
    data = _load(raw)
    model = CLIENT_EVENTS.get(data["type"])
    if model is None:
        return None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise MalformedEvent(f"{data['type']}: {exc.errors()[0]['msg']}") from exc


def dump(event: BaseModel) -> str:
    """Serialize an event for the wire (``None`` fields omitted)."""
    return event.model_dump_json(exclude_none=True)
