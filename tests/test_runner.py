"""Runner: retries only retryable errors, honours Retry-After, times out stalls, records every turn exactly once."""

from __future__ import annotations

import asyncio
import time

from adapters.base import (
    AdapterBase,
    AdapterError,
    AudioDelta,
    TextDelta,
    ToolCall,
    TurnDone,
    Usage,
    UserTurnSent,
)
from bench.config import RetryPolicy, RunConfig, SystemConfig
from bench.runner import run_benchmark
from bench.scoring import score_turn
from bench.store import Store, turns_dataframe


class ScriptedAdapter(AdapterBase):
    """Fails each entry according to a plan: {entry_id: [exception or None per attempt]}."""

    def __init__(self, plan: dict[str, list[BaseException | None]], stall_ids: set[str] = frozenset()):
        self.system_id = "fake"
        self.plan = {k: list(v) for k, v in plan.items()}
        self.stall_ids = stall_ids
        self.attempts: dict[str, int] = {}
        self.attempt_times: dict[str, list[float]] = {}

    async def run_turn(self, turn):
        self.attempts[turn.entry_id] = self.attempts.get(turn.entry_id, 0) + 1
        self.attempt_times.setdefault(turn.entry_id, []).append(time.monotonic())
        yield UserTurnSent()
        failures = self.plan.get(turn.entry_id, [])
        failure = failures.pop(0) if failures else None
        if failure is not None:
            raise failure
        if turn.entry_id in self.stall_ids:
            await asyncio.sleep(3600)
        yield ToolCall(call_id="c1", name="set_conversational_intent", arguments={"intent": "answered"})
        yield TextDelta(text="Goed. ")
        yield AudioDelta(pcm16=b"\x00\x00" * 2400)
        yield TextDelta(text="Tot ziens.")
        yield Usage(input_text_tokens=10, output_text_tokens=4, vendor_cost_usd=0.001,
                    vendor_latency_ms={"fake_e2e": 12.0})
        yield TurnDone()


def _config(**system_overrides) -> RunConfig:
    settings = {"id": "fake", "adapter": "custom", "concurrency": 4, "timeout_s": 5.0,
                "retry": RetryPolicy(max_attempts=3, initial_backoff_s=0.0, max_backoff_s=0.0), **system_overrides}
    system = SystemConfig(**settings)
    return RunConfig(systems=[system])


async def test_retries_retryable_and_records_non_retryable(golden, tmp_path):
    ids = [e.id for e in golden.entries]
    plan = {
        ids[0]: [AdapterError("HTTP 503", retryable=True)],  # recovers on attempt 2
        ids[1]: [AdapterError("auth", retryable=False)],  # never retried
        ids[2]: [AdapterError("down", retryable=True)] * 3,  # exhausts attempts
        ids[3]: [RuntimeError("adapter bug")],  # unexpected exception: recorded, run continues
    }
    adapter = ScriptedAdapter(plan)
    store = Store(tmp_path / "s.sqlite")
    outcome = await run_benchmark(_config(), golden, store, progress=False, adapters={"fake": adapter})
    records = {r.entry_id: r for r in store.turns(outcome.run_id)}
    assert len(records) == len(golden.entries) == store.count_turns(outcome.run_id)
    assert records[ids[0]].status == "succeeded" and records[ids[0]].attempts == 2
    assert records[ids[1]].status == "failed" and adapter.attempts[ids[1]] == 1
    assert "not retryable" in records[ids[1]].failure_reason
    assert records[ids[2]].status == "failed" and adapter.attempts[ids[2]] == 3
    assert "3 attempts" in records[ids[2]].failure_reason
    assert records[ids[3]].status == "failed" and "RuntimeError" in records[ids[3]].failure_reason
    assert outcome.execution_failures == 3
    assert store.get_run(outcome.run_id).status == "completed_with_failures"
    # failed executions are not scored as quality failures
    entry = golden.by_id()[ids[1]]
    assert score_turn(entry, records[ids[1]]).scored is False


async def test_retry_after_is_honoured(golden, tmp_path):
    first = golden.entries[0].id
    adapter = ScriptedAdapter({first: [AdapterError("HTTP 429", retryable=True, retry_after_s=0.3)]})
    store = Store(tmp_path / "s.sqlite")
    await run_benchmark(_config(), golden.model_copy(update={"entries": golden.entries[:1]}), store,
                        progress=False, adapters={"fake": adapter})
    times = adapter.attempt_times[first]
    assert len(times) == 2 and times[1] - times[0] >= 0.3


async def test_stall_times_out_and_is_recorded(golden, tmp_path):
    stalled = golden.entries[0].id
    adapter = ScriptedAdapter({}, stall_ids={stalled})
    store = Store(tmp_path / "s.sqlite")
    config = _config(timeout_s=0.2)
    outcome = await run_benchmark(config, golden.model_copy(update={"entries": golden.entries[:3]}), store,
                                  progress=False, adapters={"fake": adapter})
    record = {r.entry_id: r for r in store.turns(outcome.run_id)}[stalled]
    assert record.status == "failed" and "no turn_done within 0.2 s" in record.failure_reason
    assert adapter.attempts[stalled] == 3


async def test_timing_usage_and_dataframe(golden, tmp_path):
    store = Store(tmp_path / "s.sqlite")
    outcome = await run_benchmark(_config(), golden, store, progress=False, adapters={"fake": ScriptedAdapter({})})
    record = store.turns(outcome.run_id)[0]
    assert record.answer == "Goed. Tot ziens."
    assert 0 <= record.ttft_ms <= record.ttfa_ms <= record.completion_ms
    assert record.input_text_tokens == 10 and record.vendor_cost_usd == 0.001
    assert record.output_audio_seconds == 0.1  # 2400 samples at 24 kHz, derived from the audio bytes
    assert record.tool_calls[0]["name"] == "set_conversational_intent"
    frame = turns_dataframe(store, outcome.run_id)
    assert len(frame) == len(golden.entries)
    assert {"ttft_ms", "status", "vendor_latency.fake_e2e", "mode"} <= set(frame.columns)


async def test_resume_repeats_only_failed_turns(golden, tmp_path):
    ids = [e.id for e in golden.entries]
    store = Store(tmp_path / "s.sqlite")
    first = ScriptedAdapter({ids[5]: [AdapterError("auth", retryable=False)]})
    outcome = await run_benchmark(_config(), golden, store, progress=False, adapters={"fake": first})
    assert outcome.execution_failures == 1
    second = ScriptedAdapter({})
    resumed = await run_benchmark(_config(), golden, store, run_id=outcome.run_id, resume=True, progress=False,
                                  adapters={"fake": second})
    assert set(second.attempts) == {ids[5]}
    assert resumed.skipped_as_done == len(ids) - 1
    assert all(r.status == "succeeded" for r in store.turns(outcome.run_id))
    assert store.count_turns(outcome.run_id) == len(ids)


async def test_turns_are_committed_as_they_finish(golden, tmp_path):
    path = tmp_path / "s.sqlite"
    store = Store(path)
    seen_by_other_connection: list[int] = []

    class Peeking(ScriptedAdapter):
        async def run_turn(self, turn):
            reader = Store(path)
            runs = reader.list_runs()
            seen_by_other_connection.append(reader.count_turns(runs[0].run_id) if runs else 0)
            reader.close()
            async for event in super().run_turn(turn):
                yield event

    config = _config()
    config.systems[0].concurrency = 1
    await run_benchmark(config, golden.model_copy(update={"entries": golden.entries[:4]}), store, progress=False,
                        adapters={"fake": Peeking({})})
    assert seen_by_other_connection == [0, 1, 2, 3]
