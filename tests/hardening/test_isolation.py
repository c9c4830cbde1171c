"""Isolation of the system under test (issue 9, item 5): the in-house orchestrator runs in its own process (with
its own event loop), so a stack that blocks (``time.sleep`` inside ``async def``) or spins the CPU neither hangs
the run nor holds up another system of the same run; its turns are recorded failed with the reason, and closing
the run stops its process.

No timing thresholds: the assertions are about order (the other system finished before the blocked stack woke
up; the run finished before it) and about what was recorded.
"""

from __future__ import annotations

import asyncio
import time
from datetime import datetime

from bench.config import RetryPolicy, RunConfig, SystemConfig
from bench.engine.scheduler import build_adapters, run_benchmark
from bench.store import Store
from tests.fakes.process_orchestrators import recorded as traced

STEADY = "tests.fakes.orchestrator:MemoryOrchestrator"


def _config(golden, blocking_orchestrator: str, options: dict) -> RunConfig:
    return RunConfig(dataset=golden.path, trials=1, context_top_k=0, systems=[
        SystemConfig(id="blocking", adapter="inhouse", timeout_s=1, concurrency=1, retry=RetryPolicy(max_attempts=1),
                     options={"orchestrator": blocking_orchestrator, "orchestrator_options": options,
                              "speech_input": None}),
        SystemConfig(id="steady", adapter="inhouse", concurrency=1, retry=RetryPolicy(max_attempts=1),
                     options={"orchestrator": STEADY, "speech_input": None}),
    ])


def _monotonic(iso: str) -> float:
    """A stored wall-clock stamp on this process's monotonic clock."""
    return datetime.fromisoformat(iso).timestamp() - time.time() + time.monotonic()


async def _run(tmp_path, golden, config: RunConfig):
    adapters = build_adapters(config)
    store = Store(tmp_path / "store.sqlite")
    try:
        outcome = await asyncio.wait_for(run_benchmark(config, golden, store, progress=False, adapters=adapters),
                                         timeout=120)
        finished = time.monotonic()
        turns = {(t.system_id, t.entry_id): t for t in store.turns(outcome.run_id)}
        run = store.get_run(outcome.run_id)
    finally:
        store.close()
    return adapters, outcome, turns, run, finished


async def test_a_blocking_orchestrator_fails_its_turns_and_holds_up_nothing_else(tmp_path, golden):
    golden = golden.model_copy(update={"entries": golden.entries[:3]})
    trace = tmp_path / "trace.jsonl"
    config = _config(golden, "tests.hardening.orchestrators:SleepingOrchestrator",
                     {"sleep_s": 10, "trace": str(trace)})
    adapters, outcome, turns, run, finished = await _run(tmp_path, golden, config)
    calls = [line["t"] for line in traced(trace) if line["event"] == "call"]

    # the run finished and recorded every conversation of both systems
    assert outcome.recorded == 6 and len(turns) == 6 and run.status == "completed_with_failures"
    assert outcome.failures_by_system == {"blocking": 3, "steady": 0}
    for entry in golden.entries:
        blocked = turns[("blocking", entry.id)]
        assert blocked.status == "failed" and blocked.failure_code in ("stalled", "timeout")
        assert "orchestrator sent nothing" in blocked.failure_reason or "no response within" in blocked.failure_reason
        steady = turns[("steady", entry.id)]
        assert steady.status == "succeeded" and steady.answer == f"You said: {entry.phone_question}"
        assert steady.ttft_ms is not None and steady.completion_ms is not None

    # the stack really was blocked: its first call was still asleep when the run had finished (and never woke:
    # closing the run stopped its process)
    wake_time = calls[0] + 10
    assert finished < wake_time, "the run waited for the blocked orchestrator"
    assert not [line for line in traced(trace) if line["event"] == "woke"]
    # ... and the other system's conversations all finished while it slept
    assert max(_monotonic(t.started_at) + t.completion_ms / 1000.0
               for (system, _), t in turns.items() if system == "steady") < wake_time
    # its later conversations never reached the blocked loop in time: each failed on the engine's clock
    assert len(calls) <= 3


async def test_a_cpu_bound_orchestrator_does_not_freeze_the_run(tmp_path, golden):
    golden = golden.model_copy(update={"entries": golden.entries[:3]})
    trace = tmp_path / "trace.jsonl"
    config = _config(golden, "tests.hardening.orchestrators:SpinningOrchestrator", {"spin_s": 4, "trace": str(trace)})
    adapters, outcome, turns, run, finished = await _run(tmp_path, golden, config)
    calls = [line["t"] for line in traced(trace) if line["event"] == "call"]
    assert outcome.recorded == 6 and calls
    spin_end = calls[0] + 4
    first = turns[("blocking", golden.entries[0].id)]
    assert first.status == "failed" and first.failure_code in ("stalled", "timeout")
    steady = [t for (system, _), t in turns.items() if system == "steady"]
    assert all(t.status == "succeeded" for t in steady)
    # the other system got its turns in while the stack was still spinning
    assert max(_monotonic(t.started_at) for t in steady) < spin_end
