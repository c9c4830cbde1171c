"""Orchestrators that misbehave the way real stacks do, loaded by dotted path from hardening test configs."""

from __future__ import annotations

import json
import time

from bench.orchestrator import QueryRequest, QueryResponse


def _trace(path: str | None, event: str) -> None:
    """One JSON line (event, monotonic time) — these run in the orchestrator's own process when loaded by path."""
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps({"event": event, "t": time.monotonic()}) + "\n")


class SleepingOrchestrator:
    """Blocks its own event loop: ``time.sleep`` inside ``async def`` (a synchronous client in an async stack)."""

    def __init__(self, sleep_s: float = 10.0, trace: str | None = None):
        self.sleep_s = sleep_s
        self.trace = trace

    async def query(self, request: QueryRequest, user_id: str, tenant_id: str) -> QueryResponse:
        _trace(self.trace, "call")
        time.sleep(self.sleep_s)  # noqa: ASYNC251 - the point of this orchestrator
        _trace(self.trace, "woke")
        return QueryResponse(answer="This answer comes far too late.", conversational_intent="answered")


class SpinningOrchestrator:
    """CPU-bound pure Python for ``spin_s`` on its first call, prompt afterwards."""

    def __init__(self, spin_s: float = 4.0, trace: str | None = None):
        self.spin_s = spin_s
        self.trace = trace
        self.first_call: list[float] = []

    async def query(self, request: QueryRequest, user_id: str, tenant_id: str) -> QueryResponse:
        if not self.first_call:
            _trace(self.trace, "call")
            started = time.monotonic()
            self.first_call += [started, started + self.spin_s]
            total = 0
            while time.monotonic() < started + self.spin_s:
                total += sum(i * i for i in range(2000))
        return QueryResponse(answer="Done thinking.", conversational_intent="answered")


class ExplodingOrchestrator:
    """A constructor that raises (a stack whose configuration is wrong)."""

    def __init__(self, region: str = "eu"):
        raise ValueError(f"no such region {region!r}")


class PickyOrchestrator:
    """Takes exactly the options ``model`` and ``temperature``."""

    def __init__(self, model: str, temperature: float = 0.0):
        self.model = model
        self.temperature = temperature

    async def query(self, request: QueryRequest, user_id: str, tenant_id: str) -> QueryResponse:
        return QueryResponse(answer=f"{self.model} says hello.", conversational_intent="answered")


def make_picky(model: str = "small") -> PickyOrchestrator:
    """A factory function (called with the options like a class)."""
    return PickyOrchestrator(model)


NOT_AN_ORCHESTRATOR = object()
