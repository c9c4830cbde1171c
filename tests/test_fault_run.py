"""A ≥ 500-conversation run against a real emulator with 10 % injected faults records each exactly once, every
failure with its normalized code."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from bench.config import RetryPolicy, RunConfig, SystemConfig
from bench.dataset import validate_files
from bench.engine.scheduler import build_adapters, run_benchmark
from bench.store import Store

ROOT = Path(__file__).resolve().parent.parent


async def test_faulty_emulator_run_records_every_turn_once(tmp_path):
    golden = validate_files([ROOT / "bench" / "data" / "voice_golden_expanded.json"])[0]
    system = SystemConfig(
        id="openai-realtime", adapter="openai_realtime", mode="emulated", concurrency=16,
        retry=RetryPolicy(max_attempts=2, initial_backoff_s=0.01, max_backoff_s=0.05),
        timeout_s=3.0,
        options={
            "output_modalities": ["text"],
            "emulator": {
                "latency": {"first_token_median_ms": 0, "first_token_sigma": 0, "token_interval_ms": 0, "seed": 7},
                "faults": {"rate": 0.10, "seed": 11, "retry_after_s": 0.01, "stall_s": 30.0},
            },
        },
    )
    config = RunConfig(dataset=golden.path, trials=2, systems=[system])
    store = Store(tmp_path / "faults.sqlite")
    outcome = await run_benchmark(config, golden, store, progress=False, adapters=build_adapters(config))
    records = store.turns(outcome.run_id)
    expected = len(golden.entries) * 2
    assert expected >= 500
    assert len(records) == expected == store.count_turns(outcome.run_id)
    keys = Counter((r.system_id, r.entry_id, r.trial) for r in records)
    assert set(keys.values()) == {1}
    statuses = Counter(r.status for r in records)
    assert statuses["succeeded"] + statuses["failed"] == expected
    # ~10 % of first attempts fault; retries recover some, the rest are recorded as failed with a reason
    retried = [r for r in records if r.attempts > 1]
    assert len(retried) >= expected * 0.03
    failed = [r for r in records if r.status == "failed"]
    assert failed and all(r.failure_reason for r in failed)
    assert outcome.execution_failures == len(failed)
    assert any("not retryable" in r.failure_reason for r in failed)  # malformed frames are never retried
    assert {r.failure_code for r in failed} <= {"malformed", "server_error", "rate_limited", "disconnected",
                                                 "stalled", "timeout"}
