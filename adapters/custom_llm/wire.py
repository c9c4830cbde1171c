"""OpenAI chat-completions wire models (request, streamed chunks, errors) and SSE framing helpers.

Shared by the custom-LLM server (which answers Vapi), the ``openai-chat`` emulator (which the LiveKit
baseline's OpenAI plugin talks to) and the Vapi emulator (which reads our custom-LLM stream the way Vapi
does). Field names follow the ``openai`` package's ``ChatCompletionChunk`` / ``ChoiceDeltaToolCall`` types
(openai 3.x, ``openai/types/chat/chat_completion_chunk.py``): a stream is ``data: {chunk}\\n\\n`` frames
ending with ``data: [DONE]``; when the request asks ``stream_options.include_usage`` a final chunk with
``choices: []`` carries ``usage``. An in-stream failure is ``data: {"error": {...}}`` (the openai client
raises ``APIError`` on it).
"""

from __future__ import annotations

import json
import math
import time
import uuid
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SSE_DONE = b"data: [DONE]\n\n"


class WireModel(BaseModel):
    """Lenient base: unknown fields are kept, so newer vendor payloads still parse."""

    model_config = ConfigDict(extra="allow")


# --- request --------------------------------------------------------------------------------------


class ChatMessage(WireModel):
    """One message of ``messages``; ``content`` may be a string or a list of content parts."""

    role: str
    content: str | list[dict[str, Any]] | None = None
    name: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None

    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        if isinstance(self.content, list):
            return "".join(str(part.get("text", "")) for part in self.content if isinstance(part, dict))
        return ""


class StreamOptions(WireModel):
    include_usage: bool = False


class FunctionDefinition(WireModel):
    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None


class ToolDefinition(WireModel):
    type: str = "function"
    function: FunctionDefinition | None = None


class ChatCompletionRequest(WireModel):
    """``POST /chat/completions`` body; Vapi adds ``call``, ``metadata`` and ``customer`` (accepted)."""

    model: str = ""
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    stream_options: StreamOptions | None = None
    tools: list[ToolDefinition] | None = None
    tool_choice: Any = None
    temperature: float | None = None
    max_tokens: int | None = None
    user: str | None = None
    call: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    customer: dict[str, Any] | None = None

    @property
    def include_usage(self) -> bool:
        return bool(self.stream_options and self.stream_options.include_usage)

    def last_user_text(self) -> str | None:
        for message in reversed(self.messages):
            if message.role == "user":
                return message.text()
        return None

    def tool_names(self) -> list[str]:
        return [t.function.name for t in self.tools or [] if t.function is not None]


# --- streamed response ----------------------------------------------------------------------------


class FunctionCallDelta(WireModel):
    name: str | None = None
    arguments: str | None = None


class ToolCallDelta(WireModel):
    index: int
    id: str | None = None
    type: Literal["function"] | None = None
    function: FunctionCallDelta | None = None


class ChoiceDelta(WireModel):
    role: str | None = None
    content: str | None = None
    tool_calls: list[ToolCallDelta] | None = None


class ChunkChoice(WireModel):
    index: int = 0
    delta: ChoiceDelta = Field(default_factory=ChoiceDelta)
    finish_reason: str | None = None


class CompletionUsage(WireModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


class ChatCompletionChunk(WireModel):
    """One ``chat.completion.chunk``."""

    id: str
    object: Literal["chat.completion.chunk"] = "chat.completion.chunk"
    created: int
    model: str
    choices: list[ChunkChoice] = Field(default_factory=list)
    usage: CompletionUsage | None = None


class ErrorDetail(WireModel):
    message: str
    type: str = "server_error"
    code: str | None = None
    param: str | None = None


class ErrorBody(WireModel):
    """The JSON error body of an HTTP error response, also sent in-stream as ``data: {"error": ...}``."""

    error: ErrorDetail


class ResponseMessage(WireModel):
    role: str = "assistant"
    content: str | None = None
    tool_calls: list[dict[str, Any]] | None = None


class CompletionChoice(WireModel):
    index: int = 0
    message: ResponseMessage
    finish_reason: str = "stop"


class ChatCompletion(WireModel):
    """Non-streamed ``chat.completion`` response."""

    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[CompletionChoice]
    usage: CompletionUsage | None = None


# --- helpers --------------------------------------------------------------------------------------


class ChunkFactory:
    """Builds the chunks of one streamed completion with a shared id, timestamp and model name."""

    def __init__(self, model: str):
        self.id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
        self.created = int(time.time())
        self.model = model or "unknown"

    def _chunk(self, delta: ChoiceDelta, finish_reason: str | None = None) -> ChatCompletionChunk:
        return ChatCompletionChunk(
            id=self.id,
            created=self.created,
            model=self.model,
            choices=[ChunkChoice(delta=delta, finish_reason=finish_reason)],
        )

    def role(self) -> ChatCompletionChunk:
        return self._chunk(ChoiceDelta(role="assistant", content=""))

    def content(self, text: str) -> ChatCompletionChunk:
        return self._chunk(ChoiceDelta(content=text))

    def tool_call_start(self, index: int, call_id: str, name: str) -> ChatCompletionChunk:
        return self._chunk(
            ChoiceDelta(
                tool_calls=[
                    ToolCallDelta(
                        index=index,
                        id=call_id,
                        type="function",
                        function=FunctionCallDelta(name=name, arguments=""),
                    )
                ]
            )
        )

    def tool_call_arguments(self, index: int, fragment: str) -> ChatCompletionChunk:
        return self._chunk(
            ChoiceDelta(
                tool_calls=[ToolCallDelta(index=index, function=FunctionCallDelta(arguments=fragment))]
            )
        )

    def finish(self, reason: str) -> ChatCompletionChunk:
        return self._chunk(ChoiceDelta(), finish_reason=reason)

    def usage(self, usage: CompletionUsage) -> ChatCompletionChunk:
        return ChatCompletionChunk(
            id=self.id, created=self.created, model=self.model, choices=[], usage=usage
        )


def sse_frame(model: BaseModel) -> bytes:
    """``data: <json>\\n\\n`` for one chunk (``None`` fields left out, as the OpenAI API does for deltas)."""
    return b"data: " + model.model_dump_json(exclude_none=True).encode() + b"\n\n"


def split_arguments(arguments: str, pieces: int = 3) -> list[str]:
    """Cut a JSON argument string into a few fragments, the way models stream ``function.arguments``."""
    if not arguments:
        return [""]
    size = max(1, math.ceil(len(arguments) / pieces))
    return [arguments[i : i + size] for i in range(0, len(arguments), size)]


def estimate_tokens(text: str) -> int:
    """Rough token count (≈ 4 characters per token), used where no tokenizer is available."""
    return max(1, math.ceil(len(text) / 4)) if text else 0


def estimate_usage(request: ChatCompletionRequest, completion_text: str) -> CompletionUsage:
    prompt = sum(estimate_tokens(m.text()) + 4 for m in request.messages)
    completion = estimate_tokens(completion_text)
    return CompletionUsage(
        prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion
    )


class SseEvent(BaseModel):
    """One parsed SSE ``data:`` payload of a chat-completions stream."""

    done: bool = False
    chunk: ChatCompletionChunk | None = None
    error: ErrorDetail | None = None


class MalformedStream(ValueError):
    """A ``data:`` line that is neither ``[DONE]`` nor a valid chunk / error object."""


def parse_sse_data(data: str) -> SseEvent:
    """Parse the payload of one ``data:`` line."""
    if data.strip() == "[DONE]":
        return SseEvent(done=True)
    try:
        obj = json.loads(data)
    except json.JSONDecodeError as exc:
        raise MalformedStream(f"invalid JSON in SSE data: {exc.msg}") from None
    if not isinstance(obj, dict):
        raise MalformedStream("SSE data is not a JSON object")
    if "error" in obj and isinstance(obj["error"], dict):
        return SseEvent(error=ErrorDetail.model_validate(obj["error"]))
    try:
        return SseEvent(chunk=ChatCompletionChunk.model_validate(obj))
    except ValueError as exc:
        raise MalformedStream(f"SSE data is not a chat.completion.chunk: {exc}") from None
