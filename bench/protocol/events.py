"""Normalized session events: what every adapter turns its vendor's wire events into.

Each event carries ``seq`` (its position in the session's one event stream, assigned by the session) and, when
it belongs to an agent response, that response's ``response_id``. The engine stamps each event on its own
monotonic clock when it is read; adapters never stamp.

Ordering rules every adapter keeps:

* ``SessionReady`` comes first, once the vendor has accepted the session configuration.
* Per response: deltas, transcripts and tool events, then ``Usage(scope="response")`` if the vendor meters
  it, then exactly one ``ResponseDone``. A response cut short by ``interrupt()`` reports ``Interrupted`` and
  still ends with ``ResponseDone(status="interrupted")``.
* ``Usage(scope="session")`` (connected minutes, call cost) comes when the session closes, if at all.
* ``ErrorEvent(fatal=True)`` is the last event of a session; a non-fatal error leaves it usable.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from bench.protocol.errors import ErrorCode


class _Event(BaseModel):
    model_config = ConfigDict(extra="forbid")

    seq: int = 0
    response_id: str | None = None


class SessionReady(_Event):
    """The vendor accepted the session (e.g. ``session.updated``, ``SettingsApplied``, call connected)."""

    type: Literal["session_ready"] = "session_ready"
    vendor_session_id: str | None = None


class UserTurnSent(_Event):
    """Text input: the harness finished sending the user's turn (the zero point of the response's latencies).

    Sessions emit it for text turns only; for audio the engine's pump knows the end of speech itself."""

    type: Literal["user_turn_sent"] = "user_turn_sent"


class TextDelta(_Event):
    type: Literal["text_delta"] = "text_delta"
    text: str


class AudioDelta(_Event):
    """Agent audio, mono pcm_s16le (resampled to the session's output rate by the adapter)."""

    model_config = ConfigDict(extra="forbid", ser_json_bytes="base64", val_json_bytes="base64")

    type: Literal["audio_delta"] = "audio_delta"
    pcm16: bytes = Field(repr=False)
    sample_rate: int = 24000


class Transcript(_Event):
    type: Literal["transcript"] = "transcript"
    role: Literal["user", "agent"]
    text: str
    final: bool = True


class UserSpeechStarted(_Event):
    """The endpoint's own VAD heard the caller start speaking."""

    type: Literal["user_speech_started"] = "user_speech_started"


class UserSpeechStopped(_Event):
    """The endpoint's own VAD decided the caller stopped speaking."""

    type: Literal["user_speech_stopped"] = "user_speech_stopped"


class AgentSpeechStarted(_Event):
    type: Literal["agent_speech_started"] = "agent_speech_started"


class AgentSpeechStopped(_Event):
    type: Literal["agent_speech_stopped"] = "agent_speech_stopped"


class Interrupted(_Event):
    """The agent's response was cut off (by ``interrupt()`` or the vendor's barge-in handling).

    It is not the end of the agent's audio: whatever audio the vendor still sends for the response is emitted as
    ``AudioDelta`` (never dropped; the engine measures the stop time from it) before ``ResponseDone``."""

    type: Literal["interrupted"] = "interrupted"
    #: how much of the response's audio the caller had heard at the cut (the engine's played position where it
    #: gave one, else the audio received)
    played_ms: float | None = None
    by: Literal["caller", "vendor"] = "caller"


class ToolCall(_Event):
    """The agent called a tool. ``awaits_result``: a tool of ``SessionSpec.tools`` the session waits on — the
    engine answers it with ``Session.send_tool_result(call_id, output)``; otherwise the call is reported for the
    record and already answered (the intent tool, which the adapter answers itself, or a vendor-side tool)."""

    type: Literal["tool_call"] = "tool_call"
    call_id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    awaits_result: bool = False


class ToolResult(_Event):
    type: Literal["tool_result"] = "tool_result"
    call_id: str
    output: str
    is_error: bool = False


class CallControl(_Event):
    """The agent ended the call or asked for it to be transferred (where the vendor signals it)."""

    type: Literal["call_control"] = "call_control"
    kind: Literal["agent_hung_up", "transfer_requested"]
    #: the transfer destination (a number or SIP URI) as the vendor gave it
    target: str | None = None
    reason: str | None = None


class Usage(_Event):
    """Metered usage of one response or of the whole session; what the system does not report stays ``None``."""

    type: Literal["usage"] = "usage"
    scope: Literal["response", "session"] = "response"
    input_text_tokens: int | None = None
    output_text_tokens: int | None = None
    input_audio_tokens: int | None = None
    output_audio_tokens: int | None = None
    cached_input_tokens: int | None = None
    input_audio_seconds: float | None = None
    output_audio_seconds: float | None = None
    billed_minutes: float | None = None
    #: speech recognition of the caller's audio when the vendor bills it apart (e.g. OpenAI input transcription)
    transcription_input_tokens: int | None = None
    transcription_output_tokens: int | None = None
    transcription_seconds: float | None = None
    vendor_cost_usd: float | None = None
    vendor_latency_ms: dict[str, float] = Field(
        default_factory=dict, description="latencies the vendor itself reports, e.g. retell_e2e_p50"
    )


#: the summable meters of ``Usage``
USAGE_METERS: tuple[str, ...] = tuple(
    name for name in Usage.model_fields if name not in ("type", "scope", "seq", "response_id", "vendor_latency_ms")
)


class ResponseDone(_Event):
    """The end of one agent response, with whatever routing labels the system exposes."""

    type: Literal["response_done"] = "response_done"
    status: Literal["completed", "interrupted"] = "completed"
    conversational_intent: str | None = None
    target_language: str | None = None
    self_reported_compliant: bool | None = None
    retrieved_context: list[str] = Field(default_factory=list)
    final_text: str | None = Field(default=None, description="authoritative full answer, if the system sends one")


#: the name the single-turn code used; a response is what a golden turn waits for
TurnDone = ResponseDone


class ErrorEvent(_Event):
    """A failure; ``fatal`` ends the session, a non-fatal one is recorded and the session goes on."""

    type: Literal["error"] = "error"
    message: str
    code: ErrorCode = ErrorCode.INTERNAL
    fatal: bool = True
    retryable: bool = False
    retry_after_s: float | None = None
    vendor_code: str | None = None


Event = Annotated[
    SessionReady | UserTurnSent | TextDelta | AudioDelta | Transcript | UserSpeechStarted | UserSpeechStopped
    | AgentSpeechStarted | AgentSpeechStopped | Interrupted | ToolCall | ToolResult | CallControl | Usage
    | ResponseDone | ErrorEvent,
    Field(discriminator="type"),
]
