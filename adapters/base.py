"""The Adapter boundary: capabilities, the turn input, normalized events and adapter errors.

Every system under test turns its own wire events into the normalized events below. The adapter yields them
as they arrive; the runner stamps each one on a monotonic clock at that moment, so all systems are timed
the same way. An adapter yields ``UserTurnSent`` as soon as it has finished sending the user turn (text sent,
or last audio frame + commit): that stamp is the zero point of TTFT, TTFA and completion.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

Mode = Literal["live", "emulated", "local"]


class Capabilities(BaseModel):
    """What interaction surface an adapter provides; scenarios needing more fail at configuration time."""

    model_config = ConfigDict(frozen=True)

    text_input: bool = True
    audio_input: bool = False
    streaming_output: bool = True
    audio_output: bool = False
    tool_events: bool = False
    interruption: bool = False
    usage: bool = False

    def missing(self, required: list[str]) -> list[str]:
        return [name for name in required if not getattr(self, name, False)]


class TurnInput(BaseModel):
    """One user turn sent to a system."""

    entry_id: str
    text: str
    language: str
    audio_pcm16: bytes | None = Field(default=None, description="mono 16-bit little-endian PCM, if audio input")
    sample_rate: int = 24000
    user_id: str = "bench-user"
    tenant_id: str = "bench-tenant"
    conversation_id: str | None = None
    history: list[dict[str, str]] = Field(default_factory=list)


class UserTurnSent(BaseModel):
    type: Literal["user_turn_sent"] = "user_turn_sent"


class TextDelta(BaseModel):
    type: Literal["text_delta"] = "text_delta"
    text: str


class AudioDelta(BaseModel):
    type: Literal["audio_delta"] = "audio_delta"
    pcm16: bytes = Field(repr=False)
    sample_rate: int = 24000


class Transcript(BaseModel):
    type: Literal["transcript"] = "transcript"
    role: Literal["user", "agent"]
    text: str
    final: bool = True


class ToolCall(BaseModel):
    type: Literal["tool_call"] = "tool_call"
    call_id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class ToolResult(BaseModel):
    type: Literal["tool_result"] = "tool_result"
    call_id: str
    output: str


class Usage(BaseModel):
    """Metered usage for the turn; any field the system does not report stays ``None``."""

    type: Literal["usage"] = "usage"
    input_text_tokens: int | None = None
    output_text_tokens: int | None = None
    input_audio_tokens: int | None = None
    output_audio_tokens: int | None = None
    cached_input_tokens: int | None = None
    input_audio_seconds: float | None = None
    output_audio_seconds: float | None = None
    billed_minutes: float | None = None
    vendor_cost_usd: float | None = None
    vendor_latency_ms: dict[str, float] = Field(
        default_factory=dict, description="latencies the vendor itself reports, e.g. retell_e2e_p50"
    )


class TurnDone(BaseModel):
    """End of the agent's turn, with whatever routing labels the system exposes."""

    type: Literal["turn_done"] = "turn_done"
    conversational_intent: str | None = None
    target_language: str | None = None
    self_reported_compliant: bool | None = None
    retrieved_context: list[str] = Field(default_factory=list)
    final_text: str | None = Field(default=None, description="authoritative full answer, if the system sends one")


class ErrorEvent(BaseModel):
    type: Literal["error"] = "error"
    message: str
    code: str | None = None
    retryable: bool = False
    retry_after_s: float | None = None


NormalizedEvent = Annotated[
    UserTurnSent | TextDelta | AudioDelta | Transcript | ToolCall | ToolResult | Usage | TurnDone | ErrorEvent,
    Field(discriminator="type"),
]


class AdapterError(Exception):
    """A turn could not complete. ``retryable`` decides whether the runner tries again."""

    def __init__(self, message: str, *, retryable: bool = False, retry_after_s: float | None = None,
                 code: str | None = None):
        super().__init__(message)
        self.retryable = retryable
        self.retry_after_s = retry_after_s
        self.code = code

    @classmethod
    def from_status(cls, status: int, message: str, retry_after_s: float | None = None) -> AdapterError:
        """HTTP-style decision: 408, 409, 429 and 5xx are retryable; other 4xx are not."""
        retryable = status in (408, 409, 429) or status >= 500
        return cls(f"HTTP {status}: {message}", retryable=retryable, retry_after_s=retry_after_s, code=str(status))


@runtime_checkable
class Adapter(Protocol):
    """A system under test."""

    system_id: str
    mode: Mode
    capabilities: Capabilities

    async def start(self) -> None:
        """Open long-lived resources (emulator, client session). Called once before the first turn."""

    async def close(self) -> None:
        """Release everything ``start`` opened."""

    def run_turn(self, turn: TurnInput) -> AsyncIterator[NormalizedEvent]:
        """Send one user turn and yield normalized events until ``TurnDone``; raise ``AdapterError`` on failure."""
        ...


class AdapterBase:
    """Convenience base with no-op lifecycle; subclasses implement ``run_turn``."""

    system_id: str = "unnamed"
    mode: Mode = "local"
    capabilities: Capabilities = Capabilities()

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None

    @property
    def emulated(self) -> bool:
        return self.mode == "emulated"
