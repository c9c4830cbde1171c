"""The one fault picker for every emulator.

A fault is decided per agent response from a seeded RNG keyed by (run, system, conversation, response number,
attempt), so the same plan injects the same faults into the same responses whatever the vendor, the
scheduling order or the process. Each kind maps to one normalized ``ErrorCode`` on the harness side.
"""

from __future__ import annotations

import random
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from bench.protocol import ErrorCode

FaultKind = Literal["disconnect", "error_event", "rate_limit", "malformed", "stall"]
FAULT_KINDS: tuple[FaultKind, ...] = ("disconnect", "error_event", "rate_limit", "malformed", "stall")

#: what the harness must record for each injected fault, whatever the adapter
EXPECTED_CODE: dict[str, ErrorCode] = {
    "disconnect": ErrorCode.DISCONNECTED,
    "error_event": ErrorCode.SERVER_ERROR,
    "rate_limit": ErrorCode.RATE_LIMITED,
    "malformed": ErrorCode.MALFORMED,
    "stall": ErrorCode.STALLED,
}


class FaultKey(BaseModel):
    model_config = ConfigDict(frozen=True)

    run_id: str = "adhoc"
    system_id: str = "system"
    conversation_id: str = "conversation"
    response: int = 1
    attempt: int = 0

    def label(self) -> str:
        return f"{self.run_id}|{self.system_id}|{self.conversation_id}|{self.response}|{self.attempt}"


class FaultPlan(BaseModel):
    """Which faults to inject and how often. ``rate`` is the probability per response."""

    model_config = ConfigDict(extra="forbid")

    rate: float = Field(default=0.0, ge=0, le=1)
    kinds: list[FaultKind] = Field(default_factory=lambda: list(FAULT_KINDS), min_length=1)
    retry_after_s: float = Field(default=0.05, ge=0)
    stall_s: float = Field(default=3600.0, ge=0, description="how long a stalled response waits")
    seed: int = 0
    #: faults fire on the first attempt of a conversation only, so a retry can recover
    first_attempt_only: bool = False

    def pick(self, key: FaultKey) -> FaultKind | None:
        if self.rate <= 0:
            return None
        if key.attempt > 0 and self.first_attempt_only:
            return None
        rng = random.Random(f"fault:{self.seed}:{key.label()}")
        if rng.random() >= self.rate:
            return None
        return rng.choice(self.kinds)
