"""Secrets come from the environment and never reach the store, the report files or the printed output."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.config import RetryPolicy, RunConfig, SystemConfig
from bench.dataset import validate_files
from bench.engine.launch import start_emulator
from bench.engine.scheduler import build_adapters, run_benchmark
from bench.faithfulness import OfflineFaithfulnessChecker
from bench.report import write_report
from bench.store import Store

ROOT = Path(__file__).resolve().parent.parent
SECRET = "sk-test-DO-NOT-LEAK-0123456789abcdefghijklmnop"


async def test_live_path_key_is_never_recorded(tmp_path, monkeypatch, capsys):
    pytest.importorskip("openai")
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    emulated = SystemConfig(id="openai-realtime", adapter="openai_realtime", mode="emulated", options={"emulator": {
        "latency": {"first_token_median_ms": 0, "first_token_sigma": 0},
        "faults": {"rate": 0.5, "kinds": ["error_event", "rate_limit", "malformed"], "seed": 3, "retry_after_s": 0.01},
    }})
    emulator = await start_emulator(emulated)
    try:
        golden = validate_files([ROOT / "bench" / "data" / "voice_golden_seed.json"])[0]
        system = SystemConfig(id="openai-realtime", adapter="openai_realtime", mode="live", concurrency=4,
                              retry=RetryPolicy(max_attempts=2, initial_backoff_s=0.0),
                              options={"base_url": f"{emulator.url}/v1", "output_modalities": ["text"]})
        config = RunConfig(dataset=golden.path, trials=1, systems=[system])
        store = Store(tmp_path / "store.sqlite")
        outcome = await run_benchmark(config, golden, store, progress=False, adapters=build_adapters(config))
        records = store.turns(outcome.run_id)
        assert len(records) == len(golden.entries)
        assert any(r.status == "failed" for r in records) and any(r.status == "succeeded" for r in records)
        paths = write_report(store, outcome.run_id, golden, tmp_path / "report", judge=OfflineFaithfulnessChecker())
        store.close()
    finally:
        await emulator.close()
    written = [tmp_path / "store.sqlite", *(Path(p) for p in (paths.html, paths.markdown, paths.summary_json,
                                                                  paths.turns_csv))]
    for path in written:
        assert SECRET.encode() not in path.read_bytes(), f"secret found in {path}"
    captured = capsys.readouterr()
    assert SECRET not in captured.out and SECRET not in captured.err
