"""The per-turn record: everything the runner observed for one (system, entry, trial), as stored.

Scoring and reporting work only from these records, so a stored run can be re-scored without calling any system.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

TurnStatus = Literal["succeeded", "failed"]


class TimelineEvent(BaseModel):
    """One normalized event as the runner stamped it, relative to the end of the user turn (ms)."""

    t_ms: float
    type: str
    detail: dict[str, Any] = Field(default_factory=dict)


class TurnRecord(BaseModel):
    """One exchange (user turn → agent response) of a conversation, with everything observed about it."""

    run_id: str
    system_id: str
    #: what the turn is scored against: its golden entry (a conversation entry's turn: ``<conversation>/<n>``); a
    #: simulation turn names its conversation (the matrix cell)
    entry_id: str
    trial: int = 0
    status: TurnStatus
    failure_reason: str | None = None
    #: the normalized ``ErrorCode`` of a failure (the same for every vendor)
    failure_code: str | None = None
    attempts: int = 1
    #: the store's key of a turn is (run, system, conversation, trial, turn index); None (a record made on its own)
    #: is stored as the conversation of its entry
    conversation_id: str | None = None
    turn_index: int = 0
    input_mode: Literal["text", "audio"] = "text"
    answer: str = ""
    conversational_intent: str | None = None
    target_language: str | None = None
    self_reported_compliant: bool | None = None
    retrieved_context: list[str] = Field(default_factory=list)
    #: the passages the engine retrieved once for this question and gave every system (``context_strategy``)
    shared_context: list[str] = Field(default_factory=list)
    ttft_ms: float | None = None
    ttfa_ms: float | None = None
    completion_ms: float | None = None
    #: audio input: end of the caller's speech → start of the agent's speech as the caller hears it (VAD)
    caller_heard_ms: float | None = None
    #: the agent spoke (text or non-silent audio) this long before the zero point: talk-over, not a latency
    talk_over_ms: float | None = None
    interrupted: bool = False
    #: audio input: frames the pump sent late after event-loop stalls, the latest one and the total stretch (ms)
    pump_late_frames: int | None = None
    pump_max_late_ms: float | None = None
    pump_total_late_ms: float | None = None
    #: a planned barge-in: the caller spoke ``barge_in_offset_ms`` into the agent's audio (as played), having heard
    #: ``barge_in_played_ms`` of it; ``barge_in_stopped`` False = the agent did not stop (its audio went on);
    #: the stop times run from the caller's speech start to the agent's last audio arriving / playing
    barge_in_offset_ms: float | None = None
    barge_in_played_ms: float | None = None
    barge_in_stopped: bool | None = None
    barge_in_stop_ms: float | None = None
    barge_in_played_stop_ms: float | None = None
    #: a turn-taking probe of this exchange (``bench.audio.probes``): barge_in, cough, backchannel, noise or
    #: long_pause; ``agent_yielded`` = the agent signalled it yielded after the caller's sound started (for cough,
    #: backchannel and noise a false barge-in), ``yield_ms`` after how long
    turn_probe: str | None = None
    agent_yielded: bool | None = None
    yield_ms: float | None = None
    input_text_tokens: int | None = None
    output_text_tokens: int | None = None
    input_audio_tokens: int | None = None
    output_audio_tokens: int | None = None
    cached_input_tokens: int | None = None
    input_audio_seconds: float | None = None
    output_audio_seconds: float | None = None
    billed_minutes: float | None = None
    transcription_input_tokens: int | None = None
    transcription_output_tokens: int | None = None
    transcription_seconds: float | None = None
    vendor_cost_usd: float | None = None
    vendor_latency_ms: dict[str, float] = Field(default_factory=dict)
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)
    timeline: list[TimelineEvent] = Field(default_factory=list)
    started_at: str = ""
    #: artifact kind → content hash (e.g. ``"audio": "<sha256>"``, the stereo caller/agent recording)
    artifacts: dict[str, str] = Field(default_factory=dict)
