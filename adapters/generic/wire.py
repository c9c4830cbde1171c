"""Wire messages of the generic endpoints: one pydantic model per message, plus type→class maps.

Three protocols:
- **evaluator** (seed 000, WebSocket): client ``evaluator.init`` → binary PCM16 frames (or a text item) →
  ``input_audio_buffer.commit`` → ``response.create``; server answers with realtime-style events (GA and beta
  names both accepted).
- **pcm** (WebSocket): client JSON ``start`` → binary PCM16 → JSON ``end`` (or JSON ``text``); server sends
  binary PCM16 and JSON ``transcript`` / ``tool_call`` / ``end`` / ``error`` control messages.
- **http**: one JSON POST, one JSON answer.

Server models ignore unknown fields (``extra="allow"``) so an endpoint may send more than we read.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Wire(BaseModel):
    model_config = ConfigDict(extra="allow")


# ------------------------------------------------------------------------------ evaluator: client → server


class AudioFormat(_Wire):
    encoding: Literal["pcm_s16le"] = "pcm_s16le"
    sample_rate_hz: int = 24000
    channels: Literal[1] = 1


class InitRequest(_Wire):
    """The ``request`` of ``evaluator.init``; ``options.init_extra`` keys are merged in (e.g. ``context``)."""

    session_id: str
    language: str | None = None
    audio_format: AudioFormat = AudioFormat()
    transcript_hint: str | None = Field(
        default=None,
        description="reference text of the user audio; sent to emulators only (they have no ASR)",
    )


class EvaluatorInit(_Wire):
    type: Literal["evaluator.init"] = "evaluator.init"
    request: InitRequest


class InputAudioBufferCommit(_Wire):
    type: Literal["input_audio_buffer.commit"] = "input_audio_buffer.commit"


class ResponseCreate(_Wire):
    type: Literal["response.create"] = "response.create"
    response: dict[str, Any] | None = None


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

CLIENT_EVENTS: dict[str, type[BaseModel]] = {
    "evaluator.init": EvaluatorInit,
    "input_audio_buffer.commit": InputAudioBufferCommit,
    "response.create": ResponseCreate,
    "conversation.item.create": ConversationItemCreate,
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


ServerEvent = (
    ResponseCreated
    | OutputAudioDelta
    | OutputAudioDone
    | OutputTextDelta
    | OutputTranscriptDone
    | OutputTextDone
    | FunctionCallArgumentsDone
    | InputAudioTranscriptionCompleted
    | ResponseDone
    | ServerError
)

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
    ResponseDone,
    ServerError,
):
    for _name in _model.model_fields["type"].annotation.__args__:  # type: ignore[union-attr]
        SERVER_EVENTS[_name] = _model

#: the hot-path event types (thousands per second): the adapter checks their one field by hand
AUDIO_DELTA_TYPES: frozenset[str] = frozenset(OutputAudioDelta.model_fields["type"].annotation.__args__)  # type: ignore[union-attr]
TEXT_DELTA_TYPES: frozenset[str] = frozenset(OutputTextDelta.model_fields["type"].annotation.__args__)  # type: ignore[union-attr]

#: GA name → beta name, for the emulator's ``event_names: beta`` option
BETA_NAMES: dict[str, str] = {
    "response.output_audio.delta": "response.audio.delta",
    "response.output_audio.done": "response.audio.done",
    "response.output_audio_transcript.delta": "response.audio_transcript.delta",
    "response.output_audio_transcript.done": "response.audio_transcript.done",
    "response.output_text.delta": "response.text.delta",
    "response.output_text.done": "response.text.done",
}


def parse_server_event(data: dict[str, Any]) -> BaseModel | None:
    """The model for a decoded server event, or None for event types we do not read (ignored)."""
    model = SERVER_EVENTS.get(data.get("type"))  # type: ignore[arg-type]
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
    transcript_hint: str | None = None


class PcmText(_Wire):
    type: Literal["text"] = "text"
    text: str


class PcmEnd(_Wire):
    """End of a turn, in either direction; the server's may carry routing labels."""

    type: Literal["end"] = "end"
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


class PcmError(_Wire):
    type: Literal["error"] = "error"
    message: str = ""
    code: str | None = None
    retryable: bool | None = None
    retry_after_s: float | None = None


DEFAULT_PCM_START: dict[str, Any] = {
    "type": "start",
    "session_id": "{session_id}",
    "language": "{language}",
    "encoding": "pcm_s16le",
    "channels": 1,
    "input_sample_rate": "{input_sample_rate}",
    "output_sample_rate": "{output_sample_rate}",
}
DEFAULT_PCM_END: dict[str, Any] = {"type": "end"}
DEFAULT_PCM_TEXT: dict[str, Any] = {"type": "text", "text": "{text}"}

PCM_CLIENT_MESSAGES: dict[str, type[BaseModel]] = {"start": PcmStart, "text": PcmText, "end": PcmEnd}
PCM_SERVER_MESSAGES: dict[str, type[BaseModel]] = {
    "transcript": PcmTranscript,
    "tool_call": PcmToolCall,
    "end": PcmEnd,
    "error": PcmError,
}


# ------------------------------------------------------------------------------------------ http protocol


class HttpTurnRequest(_Wire):
    """The default request body (the adapter's ``body`` template)."""

    text: str
    language: str | None = None
    session_id: str
    audio: bool = Field(default=False, description="ask the emulator to include base64 PCM16 in the answer")


class HttpTurnResponse(_Wire):
    answer: str
    conversational_intent: str | None = None
    target_language: str | None = None
    retrieved_context: list[str] = Field(default_factory=list)
    session_id: str | None = None
    audio_b64: str | None = None


class HttpError(_Wire):
    error: ErrorBody


DEFAULT_HTTP_BODY: dict[str, Any] = {"text": "{text}", "language": "{language}", "session_id": "{session_id}"}


# ------------------------------------------------------------------------------------ emulator side channel


class StampsReport(_Wire):
    """``GET /stamps`` on the emulator: its send stamps (``time.monotonic()`` of the emulator process, which
    on Linux is the same clock as every other process's), keyed by turn key (session id, ``<session>#<n>``
    for later turns of a session)."""

    clock: Literal["time.monotonic"] = "time.monotonic"
    first_text: dict[str, float] = Field(default_factory=dict)
    first_audio: dict[str, float] = Field(default_factory=dict)
    scheduled_first_audio: dict[str, float] = Field(default_factory=dict)
