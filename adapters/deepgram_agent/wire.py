"""Deepgram Voice Agent v1 wire messages: one pydantic model per JSON message, and type→class maps.

Verified against deepgram-sdk 7.17 (``deepgram/agent/v1/types/agent_v1*.py`` and ``socket_client.py``):
message names, field names and types below match the SDK's models; binary frames are agent audio
(server→client) or caller audio (client→server). Models allow extra fields, because the server adds fields
over time (e.g. ``ConversationText.conversational_behavior``); unknown message types parse to
:class:`UnknownMessage`.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

#: path of the agent socket under the agent base URL (``wss://agent.deepgram.com``)
AGENT_PATH = "/v1/agent/converse"
#: request header the SDK sends on every connection (``DeepgramClient(session_id=...)``)
SESSION_HEADER = "x-deepgram-session-id"


class MalformedFrame(ValueError):
    """A text frame that is not a JSON object with a string ``type``, or a known message with bad fields."""


class Message(BaseModel):
    model_config = ConfigDict(extra="allow")

    type: str

    def to_json(self) -> str:
        return json.dumps(self.model_dump(mode="json", exclude_none=True), ensure_ascii=False)


# --------------------------------------------------------------------------- client → server


class AudioInputSettings(BaseModel):
    model_config = ConfigDict(extra="allow")
    encoding: str = "linear16"
    sample_rate: int = 24000


class AudioOutputSettings(BaseModel):
    model_config = ConfigDict(extra="allow")
    encoding: str | None = "linear16"
    sample_rate: int | None = 24000
    bitrate: int | None = None
    container: str | None = "none"


class AudioSettings(BaseModel):
    model_config = ConfigDict(extra="allow")
    input: AudioInputSettings | None = None
    output: AudioOutputSettings | None = None


class Provider(BaseModel):
    """A listen/think/speak provider: ``type`` plus provider-specific fields (model, language,
    temperature…)."""

    model_config = ConfigDict(extra="allow")
    type: str
    model: str | None = None


class FunctionDefinition(BaseModel):
    """A think function; without ``endpoint`` it is client-side (the client answers
    ``FunctionCallRequest``)."""

    model_config = ConfigDict(extra="allow")
    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None
    endpoint: dict[str, Any] | None = None


class ListenSettings(BaseModel):
    model_config = ConfigDict(extra="allow")
    provider: Provider | None = None


class ThinkSettings(BaseModel):
    model_config = ConfigDict(extra="allow")
    provider: Provider
    prompt: str | None = None
    functions: list[FunctionDefinition] | None = None


class SpeakSettings(BaseModel):
    model_config = ConfigDict(extra="allow")
    provider: Provider


class HistoryItem(BaseModel):
    """One earlier message of the conversation (SDK ``ConversationHistoryMessage``)."""

    model_config = ConfigDict(extra="allow")
    type: Literal["History"] = "History"
    role: Literal["user", "assistant"]
    content: str


class AgentContext(BaseModel):
    """``agent.context``: the conversation so far, which the agent continues from."""

    model_config = ConfigDict(extra="allow")
    messages: list[HistoryItem] | None = None


class AgentSettings(BaseModel):
    model_config = ConfigDict(extra="allow")
    language: str | None = None
    context: AgentContext | None = None
    listen: ListenSettings | None = None
    think: ThinkSettings | None = None
    speak: SpeakSettings | None = None
    greeting: str | None = None


class Settings(Message):
    type: Literal["Settings"] = "Settings"
    tags: list[str] | None = None
    experimental: bool | None = None
    mip_opt_out: bool | None = None
    audio: AudioSettings
    agent: AgentSettings


class InjectUserMessage(Message):
    type: Literal["InjectUserMessage"] = "InjectUserMessage"
    content: str


class FunctionCallResponse(Message):
    """Client answer to a client-side ``FunctionCallRequest`` (the server uses the same shape for its own)."""

    type: Literal["FunctionCallResponse"] = "FunctionCallResponse"
    id: str | None = None
    name: str
    content: str


class KeepAlive(Message):
    type: Literal["KeepAlive"] = "KeepAlive"


class InjectAgentMessage(Message):
    type: Literal["InjectAgentMessage"] = "InjectAgentMessage"
    message: str | None = None
    content: str | None = None


class UpdatePrompt(Message):
    type: Literal["UpdatePrompt"] = "UpdatePrompt"
    prompt: str


class UnknownMessage(Message):
    """Any message type this harness does not model (tolerated and ignored)."""


ClientMessage = (
    Settings | InjectUserMessage | FunctionCallResponse | KeepAlive | InjectAgentMessage | UpdatePrompt
)

CLIENT_MESSAGES: dict[str, type[Message]] = {
    "Settings": Settings,
    "InjectUserMessage": InjectUserMessage,
    "FunctionCallResponse": FunctionCallResponse,
    "KeepAlive": KeepAlive,
    "InjectAgentMessage": InjectAgentMessage,
    "UpdatePrompt": UpdatePrompt,
}


# --------------------------------------------------------------------------- server → client


class Welcome(Message):
    type: Literal["Welcome"] = "Welcome"
    request_id: str


class SettingsApplied(Message):
    type: Literal["SettingsApplied"] = "SettingsApplied"


class ConversationText(Message):
    """What the user or the agent said; ``conversational_behavior`` other than ``default`` marks backchannels,
    presence checks and fillers (SDK ``AgentV1ConversationTextConversationalBehavior``)."""

    type: Literal["ConversationText"] = "ConversationText"
    role: Literal["user", "assistant"]
    content: str
    conversational_behavior: str = "default"


class UserStartedSpeaking(Message):
    type: Literal["UserStartedSpeaking"] = "UserStartedSpeaking"


class AgentThinking(Message):
    type: Literal["AgentThinking"] = "AgentThinking"
    content: str = ""


class FunctionCallItem(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: str
    name: str
    arguments: str = Field(description="JSON string")
    client_side: bool

    def parsed_arguments(self) -> dict[str, Any]:
        try:
            value = json.loads(self.arguments or "{}")
        except json.JSONDecodeError:
            return {}
        return value if isinstance(value, dict) else {}


class FunctionCallRequest(Message):
    type: Literal["FunctionCallRequest"] = "FunctionCallRequest"
    functions: list[FunctionCallItem]


class FunctionCallCancelled(Message):
    type: Literal["FunctionCallCancelled"] = "FunctionCallCancelled"
    functions: list[dict[str, Any]] = Field(default_factory=list)


class AgentStartedSpeaking(Message):
    """Latencies in SECONDS (SDK: total from receiving the user's utterance to producing the reply). The SDK
    requires all three; Deepgram documents the message as experimental, so a missing one is tolerated."""

    type: Literal["AgentStartedSpeaking"] = "AgentStartedSpeaking"
    total_latency: float | None = None
    tts_latency: float | None = None
    ttt_latency: float | None = None


class AgentAudioDone(Message):
    type: Literal["AgentAudioDone"] = "AgentAudioDone"


class LatencyReport(Message):
    """Per-turn latency breakdown in SECONDS; every field optional (deepgram-sdk ``AgentV1LatencyReport``)."""

    type: Literal["LatencyReport"] = "LatencyReport"
    stt_latency: float | None = None
    ttt_token_latency: float | None = None
    ttt_text_latency: float | None = None
    ttt_tool_latency: float | None = None
    ttt_thinking_latency: float | None = None
    tts_latency: float | None = None
    total_latency: float | None = None


class History(Message):
    type: Literal["History"] = "History"


class InjectionRefused(Message):
    type: Literal["InjectionRefused"] = "InjectionRefused"
    message: str = ""


class Error(Message):
    type: Literal["Error"] = "Error"
    description: str = ""
    code: str = ""


class Warning(Message):  # noqa: A001 - the wire name
    type: Literal["Warning"] = "Warning"
    description: str = ""
    code: str = ""


class PromptUpdated(Message):
    type: Literal["PromptUpdated"] = "PromptUpdated"


class SpeakUpdated(Message):
    type: Literal["SpeakUpdated"] = "SpeakUpdated"


SERVER_MESSAGES: dict[str, type[Message]] = {
    "Welcome": Welcome,
    "SettingsApplied": SettingsApplied,
    "ConversationText": ConversationText,
    "UserStartedSpeaking": UserStartedSpeaking,
    "AgentThinking": AgentThinking,
    "FunctionCallRequest": FunctionCallRequest,
    "FunctionCallCancelled": FunctionCallCancelled,
    "FunctionCallResponse": FunctionCallResponse,
    "AgentStartedSpeaking": AgentStartedSpeaking,
    "AgentAudioDone": AgentAudioDone,
    "LatencyReport": LatencyReport,
    "History": History,
    "InjectionRefused": InjectionRefused,
    "Error": Error,
    "Warning": Warning,
    "PromptUpdated": PromptUpdated,
    "SpeakUpdated": SpeakUpdated,
}

#: Deepgram ``Error.code`` values that mean the request itself was wrong (retrying cannot help). This list is
#: the harness's own reading of Deepgram's error names; no vendor list of agent error codes was found.
CLIENT_ERROR_CODES = frozenset(
    {
        "INVALID_SETTINGS",
        "UNPARSABLE_CLIENT_MESSAGE",
        "BAD_REQUEST",
        "PAYMENT_REQUIRED",
        "UNSUPPORTED_SETTINGS",
        "SETTINGS_REQUIRED",
    }
)
#: ``Error.code`` values that mean the credentials were refused
AUTH_ERROR_CODES = frozenset({"UNAUTHORIZED", "FORBIDDEN", "INSUFFICIENT_PERMISSIONS", "INVALID_AUTH"})
#: ``Error.code`` values that mean Deepgram asks the client to slow down
RATE_LIMIT_ERROR_CODES = frozenset({"TOO_MANY_REQUESTS", "RATE_LIMITED", "CONCURRENCY_LIMIT_REACHED"})


def _parse(data: str | dict[str, Any], table: dict[str, type[Message]]) -> Message:
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except json.JSONDecodeError as exc:
            raise MalformedFrame(f"text frame is not JSON: {exc.msg} at {exc.pos}") from None
    if not isinstance(data, dict) or not isinstance(data.get("type"), str):
        raise MalformedFrame("text frame is not a JSON object with a string 'type'")
    model = table.get(data["type"], UnknownMessage)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise MalformedFrame(f"{data['type']}: {exc.errors()[0]['loc']}: {exc.errors()[0]['msg']}") from None


def parse_server_message(data: str | dict[str, Any]) -> Message:
    """Parse one server→client text frame (or an already-decoded dict)."""
    return _parse(data, SERVER_MESSAGES)


def parse_client_message(data: str | dict[str, Any]) -> Message:
    """Parse one client→server text frame (used by the emulator)."""
    return _parse(data, CLIENT_MESSAGES)
