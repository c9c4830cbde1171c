"""Wire messages of the generic endpoints: one pydantic model per message, plus type→class maps.

Three protocols, each spoken on ONE connection (or, for HTTP, one connection pool) per conversation:

- **evaluator** (seeds 000/001, WebSocket): client ``evaluator.init`` once per connection (session id,
  language, audio format, knowledge passages, instructions, history, user/tenant, declared tools), then per
  turn binary PCM16 frames + ``input_audio_buffer.commit`` or a text item, then ``response.create``;
  ``response.cancel`` barges in. The server answers with realtime-style events (GA and beta names accepted).
- **pcm** (WebSocket): client JSON ``start`` once, then binary PCM16 frames continuously (the endpoint's own VAD
  decides when the caller stopped), JSON ``text`` for a text turn, optional ``end`` / ``cancel``; the server
  sends binary PCM16 and JSON ``transcript`` / ``tool_call`` / ``speech_started`` / ``speech_stopped`` /
  ``end`` / ``error`` control messages.
- **http**: one JSON request per turn carrying the conversation id, the history and the knowledge; the answer is
  one JSON document or a ``text/event-stream`` of ``delta`` / ``audio`` / ``done`` / ``error`` events.

Server models ignore unknown fields (``extra="allow"``) so an endpoint may send more than we read.
"""

from __future__ import annotations

import json
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field


class _Wire(BaseModel):
    model_config = ConfigDict(extra="allow")


class HistoryEntry(_Wire):
    role: Literal["user", "assistant"]
    text: str


# ------------------------------------------------------------------------------ evaluator: client → server


class AudioFormat(_Wire):
    encoding: Literal["pcm_s16le"] = "pcm_s16le"
    sample_rate_hz: int = 24000
    channels: Literal[1] = 1


class InitRequest(_Wire):
    """The ``request`` of ``evaluator.init``; ``options.init_extra`` keys are merged in (e.g. the seed's opaque
    ``context`` mapping or an ``agentConfig`` override)."""

    session_id: str
    language: str | None = None
    audio_format: AudioFormat = AudioFormat()
    #: knowledge passages the harness retrieved for this conversation
    knowledge: list[str] = Field(default_factory=list)
    instructions: str | None = None
    #: earlier exchanges to seed the agent with
    history: list[HistoryEntry] = Field(default_factory=list)
    user_id: str | None = None
    tenant_id: str | None = None
    metadata: dict[str, str] = Field(default_factory=dict)
    tools: list[dict[str, Any]] = Field(default_factory=list)


class EvaluatorInit(_Wire):
    type: Literal["evaluator.init"] = "evaluator.init"
    request: InitRequest


class InputAudioBufferCommit(_Wire):
    type: Literal["input_audio_buffer.commit"] = "input_audio_buffer.commit"


class ResponseCreate(_Wire):
    type: Literal["response.create"] = "response.create"
    response: dict[str, Any] | None = None


class ResponseCancel(_Wire):
    type: Literal["response.cancel"] = "response.cancel"


class InputText(_Wire):
    type: Literal["input_text"] = "input_text"
    text: str


class UserMessageItem(_Wire):
    type: Literal["message"] = "message"
    role: Literal["user"] = "user"
    content: list[InputText]


class ConversationItemCreate(_Wire):
    """The default text-turn message (realtime-style); the adapter's ``text_message`` template may differ."""

    type: Literal["conversation.item.create"] = "conversation.item.create"
    item: UserMessageItem


DEFAULT_TEXT_MESSAGE: dict[str, Any] = {
    "type": "conversation.item.create",
    "item": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "{text}"}]},
}


# ------------------------------------------------------------------------------ evaluator: server → client


class ResponseCreated(_Wire):
    type: Literal["response.created"] = "response.created"
    response: dict[str, Any] = Field(default_factory=dict)


class OutputAudioDelta(_Wire):
    type: Literal["response.output_audio.delta", "response.audio.delta"] = "response.output_audio.delta"
    delta: str = Field(description="base64 PCM16")


class OutputAudioDone(_Wire):
    type: Literal["response.output_audio.done", "response.audio.done"] = "response.output_audio.done"


class OutputTextDelta(_Wire):
    type: Literal[
        "response.output_audio_transcript.delta",
        "response.audio_transcript.delta",
        "response.output_text.delta",
        "response.text.delta",
    ] = "response.output_audio_transcript.delta"
    delta: str


class OutputTranscriptDone(_Wire):
    type: Literal["response.output_audio_transcript.done", "response.audio_transcript.done"] = (
        "response.output_audio_transcript.done"
    )
    transcript: str = ""


class OutputTextDone(_Wire):
    type: Literal["response.output_text.done", "response.text.done"] = "response.output_text.done"
    text: str = ""


class FunctionCallArgumentsDone(_Wire):
    type: Literal["response.function_call_arguments.done"] = "response.function_call_arguments.done"
    call_id: str
    name: str | None = None
    arguments: str = "{}"


class InputAudioTranscriptionCompleted(_Wire):
    type: Literal["conversation.item.input_audio_transcription.completed"] = (
        "conversation.item.input_audio_transcription.completed"
    )
    transcript: str = ""


class SpeechStarted(_Wire):
    type: Literal["input_audio_buffer.speech_started"] = "input_audio_buffer.speech_started"


class SpeechStopped(_Wire):
    type: Literal["input_audio_buffer.speech_stopped"] = "input_audio_buffer.speech_stopped"


class InputTokenDetails(_Wire):
    text_tokens: int | None = None
    audio_tokens: int | None = None
    cached_tokens: int | None = None


class OutputTokenDetails(_Wire):
    text_tokens: int | None = None
    audio_tokens: int | None = None


class RealtimeUsage(_Wire):
    total_tokens: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    input_token_details: InputTokenDetails | None = None
    output_token_details: OutputTokenDetails | None = None


class ResponseBody(_Wire):
    id: str | None = None
    #: completed, incomplete (still an answer), cancelled, failed
    status: str | None = None
    status_details: dict[str, Any] | None = None
    usage: RealtimeUsage | None = None
    metadata: dict[str, Any] | None = Field(
        default=None,
        description="optional routing labels: conversational_intent, target_language, retrieved_context",
    )


class ResponseDone(_Wire):
    type: Literal["response.done"] = "response.done"
    response: ResponseBody = ResponseBody()


class ErrorBody(_Wire):
    type: str | None = None
    code: str | None = None
    message: str = ""
    retry_after_s: float | None = None


class ServerError(_Wire):
    type: Literal["error"] = "error"
    error: ErrorBody


SERVER_EVENTS: dict[str, type[BaseModel]] = {}
for _model in (
    ResponseCreated,
    OutputAudioDelta,
    OutputAudioDone,
    OutputTextDelta,
    OutputTranscriptDone,
    OutputTextDone,
    FunctionCallArgumentsDone,
    InputAudioTranscriptionCompleted,
    SpeechStarted,
    SpeechStopped,
    ResponseDone,
    ServerError,
):
    for _name in get_args(_model.model_fields["type"].annotation):
        SERVER_EVENTS[_name] = _model

#: the hot-path event types (thousands per second): the adapter checks their one field by hand
AUDIO_DELTA_TYPES: frozenset[str] = frozenset(get_args(OutputAudioDelta.model_fields["type"].annotation))
TEXT_DELTA_TYPES: frozenset[str] = frozenset(get_args(OutputTextDelta.model_fields["type"].annotation))

#: GA name → beta name, for the emulator's ``event_names: beta`` option
BETA_NAMES: dict[str, str] = {
    "response.output_audio.delta": "response.audio.delta",
    "response.output_audio.done": "response.audio.done",
    "response.output_audio_transcript.delta": "response.audio_transcript.delta",
    "response.output_audio_transcript.done": "response.audio_transcript.done",
    "response.output_text.delta": "response.text.delta",
    "response.output_text.done": "response.text.done",
}


class _TypedEvent(BaseModel):
    type: str | None = None


def parse_server_event(data: dict[str, Any]) -> BaseModel | None:
    """The model for a decoded server event, or None for event types we do not read (ignored); a ``type`` that
    is not a string is a ``ValidationError`` like any other malformed event."""
    kind = data.get("type")
    if kind is not None and not isinstance(kind, str):
        _TypedEvent.model_validate(data)  # raises: the type is not a string
    model = SERVER_EVENTS.get(kind) if isinstance(kind, str) else None
    return model.model_validate(data) if model is not None else None


# ------------------------------------------------------------------------------------------- pcm protocol


class PcmStart(_Wire):
    """Default start message of the raw-PCM protocol (the adapter's ``start_message`` template)."""

    type: Literal["start"] = "start"
    session_id: str
    language: str | None = None
    encoding: Literal["pcm_s16le"] = "pcm_s16le"
    channels: Literal[1] = 1
    input_sample_rate: int = 24000
    output_sample_rate: int = 24000
    knowledge: list[str] = Field(default_factory=list)
    instructions: str | None = None
    history: list[HistoryEntry] = Field(default_factory=list)
    tools: list[dict[str, Any]] = Field(default_factory=list)


class PcmText(_Wire):
    type: Literal["text"] = "text"
    text: str


class PcmCancel(_Wire):
    type: Literal["cancel"] = "cancel"


class PcmEnd(_Wire):
    """End of a turn, in either direction; the server's may carry routing labels and say it was cut off."""

    type: Literal["end"] = "end"
    status: Literal["completed", "interrupted"] = "completed"
    played_ms: float | None = None
    conversational_intent: str | None = None
    target_language: str | None = None
    retrieved_context: list[str] = Field(default_factory=list)
    text: str | None = None


class PcmTranscript(_Wire):
    type: Literal["transcript"] = "transcript"
    role: Literal["user", "agent"] = "agent"
    text: str
    final: bool = False


class PcmToolCall(_Wire):
    type: Literal["tool_call"] = "tool_call"
    call_id: str
    name: str
    arguments: dict[str, Any] | str = Field(default_factory=dict)

    def parsed_arguments(self) -> dict[str, Any]:
        if isinstance(self.arguments, dict):
            return self.arguments
        value = json.loads(self.arguments or "{}")
        if not isinstance(value, dict):
            raise ValueError("tool call arguments are not a JSON object")
        return value


class PcmSpeechStarted(_Wire):
    """The endpoint's VAD heard the caller start speaking."""

    type: Literal["speech_started"] = "speech_started"


class PcmSpeechStopped(_Wire):
    """The endpoint's VAD decided the caller stopped speaking (an answer is now due)."""

    type: Literal["speech_stopped"] = "speech_stopped"


class PcmError(_Wire):
    type: Literal["error"] = "error"
    message: str = ""
    code: str | None = None
    retry_after_s: float | None = None


DEFAULT_PCM_START: dict[str, Any] = {
    "type": "start",
    "session_id": "{session_id}",
    "language": "{language}",
    "encoding": "pcm_s16le",
    "channels": 1,
    "input_sample_rate": "{input_sample_rate}",
    "output_sample_rate": "{output_sample_rate}",
    "knowledge": "{context}",
    "instructions": "{instructions}",
    "history": "{history}",
}
DEFAULT_PCM_TEXT: dict[str, Any] = {"type": "text", "text": "{text}"}
DEFAULT_PCM_CANCEL: dict[str, Any] = PcmCancel().model_dump()

PCM_SERVER_MESSAGES: dict[str, type[BaseModel]] = {
    "transcript": PcmTranscript,
    "tool_call": PcmToolCall,
    "speech_started": PcmSpeechStarted,
    "speech_stopped": PcmSpeechStopped,
    "end": PcmEnd,
    "error": PcmError,
}


# ------------------------------------------------------------------------------------------ http protocol


class HttpTurnRequest(_Wire):
    """The default request body (the adapter's ``body`` template): stateless HTTP carries the conversation."""

    text: str
    language: str | None = None
    session_id: str
    history: list[HistoryEntry] = Field(default_factory=list)
    context: list[str] = Field(default_factory=list)
    instructions: str | None = None
    stream: bool = Field(default=False, description="answer as a text/event-stream")
    audio: bool = Field(default=False, description="include base64 PCM16 audio in the answer")


class HttpTurnResponse(_Wire):
    """The JSON answer, and the payload of the stream's ``done`` event."""

    answer: str
    conversational_intent: str | None = None
    target_language: str | None = None
    retrieved_context: list[str] = Field(default_factory=list)
    session_id: str | None = None
    audio_b64: str | None = None


class HttpDelta(_Wire):
    """``event: delta`` of a streamed answer."""

    delta: str


class HttpAudioChunk(_Wire):
    """``event: audio`` of a streamed answer (base64 PCM16)."""

    audio_b64: str


class HttpError(_Wire):
    """An error body (HTTP status ≥ 400) or ``event: error`` payload."""

    error: ErrorBody


DEFAULT_HTTP_BODY: dict[str, Any] = {
    "text": "{text}",
    "language": "{language}",
    "session_id": "{session_id}",
    "history": "{history}",
    "context": "{context}",
    "instructions": "{instructions}",
    "stream": "{stream}",
}
