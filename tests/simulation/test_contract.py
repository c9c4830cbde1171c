"""Seed 000's end-to-end contract: a two-trial run over the fake WebSocket endpoint (the loopback evaluator
emulator, driven through the production WebSocket adapter and the engine's audio pump)."""

from __future__ import annotations

import asyncio
import itertools

from bench.engine import launch as engine_launch
from bench.simulation import trial as trial_module
from bench.simulation.bundle import BUNDLE_FILES
from bench.simulation.runner import RunOptions, SimulationRun
from bench.simulation.suite import load_suite
from tests.simulation.conftest import load_json

SEED_VERDICTS = ["expected_topics", "expected_exit", "concise", "outcome_follow_up_created",
                 "outcome_report_fields_complete"]


def _collapse(labels: list[str]) -> list[str]:
    return [label for label, _ in itertools.groupby(labels)]


async def _launch_on_this_loop(system, adapter, *, answerer=None):
    """A run starts the emulator in its own process; this test reads the emulator's wire log, which only an emulator
    on this event loop keeps, so it builds the same answerer here."""
    from adapters.emulators._kit.answerer import BrainProfile

    recipe = answerer or engine_launch.answerer_recipe(engine_launch.DEFAULT_ANSWERER, {"profile": BrainProfile()})
    return await engine_launch.launch(system, adapter, answerer=recipe.build())


def test_two_trials_over_the_fake_websocket_endpoint(planning, tmp_path, monkeypatch):
    monkeypatch.setattr(trial_module, "launch", _launch_on_this_loop)
    artifacts = tmp_path / "artifacts"
    simulation = SimulationRun(load_suite(planning), RunOptions(artifacts_dir=artifacts, trials=2, progress=False))
    result = asyncio.run(simulation.execute())
    run_report = load_json(artifacts / "run-report.json")

    contract = {key: run_report[key] for key in ("process_exit_code", "trial_count", "pass_power_k",
                                                 "trial_reports_present", "artifact_bundle_path_recorded")}
    assert contract == {"process_exit_code": 0, "trial_count": 2, "pass_power_k": True,
                        "trial_reports_present": True, "artifact_bundle_path_recorded": True}
    assert result.exit_code == 0

    emulator = simulation.emulators["fake"]
    for trial in (1, 2):
        report = load_json(artifacts / f"trial-{trial:03d}" / "trial-report.json")
        assert report["execution_status"] == "succeeded"
        assert report["exit_reason"] == "endpoint_completion"
        assert report["passed"] is True
        assert report["outcome_status"] == "available"
        assert report["voice_event_schema_versions"] == ["1.0"]
        assert report["interoperability_schema_version"] == "1.0"
        assert report["audio_format"] == "24000 Hz, mono, 16-bit PCM"
        assert [v["name"] for v in report["verdicts"]] == SEED_VERDICTS
        assert all(v["passed"] for v in report["verdicts"])
        assert report["bundle_path"] == str(artifacts / f"trial-{trial:03d}")

        # protocol order on the one socket of the conversation: init once, then per turn audio, commit, response
        received = emulator.log.received[report["session_id"]]
        assert _collapse(received) == ["evaluator.init", "binary_audio", "input_audio_buffer.commit",
                                       "response.create"] + ["binary_audio", "input_audio_buffer.commit",
                                                             "response.create"]
        assert received[:3] == ["evaluator.init", "binary_audio", "binary_audio"]
        assert received.count("evaluator.init") == 1  # one socket for the whole conversation
        setup = emulator.log.setup[report["session_id"]]
        assert setup["session_id"] == "planning-session-001"
        assert setup["context"]["topic"] == "daily planning"

        files = sorted(p.name for p in (artifacts / f"trial-{trial:03d}").iterdir())
        assert files == sorted(BUNDLE_FILES)
        metrics = load_json(artifacts / f"trial-{trial:03d}" / "voice-metrics.json")
        assert metrics["audio_format"] == {"encoding": "pcm_s16le", "sample_rate_hz": 24000, "channels": 1}
        for turn in metrics["turns"]:
            assert turn["input_pcm"]["sample_rate_hz"] == 24000 and turn["input_pcm"]["byte_count"] > 0
            assert turn["output_pcm"]["byte_count"] > 0
            assert turn["caller_heard_latency_ms"] is not None and turn["caller_heard_latency_ms"] >= 0
        events = (artifacts / f"trial-{trial:03d}" / "voice-events.jsonl").read_text().splitlines()
        import json

        records = [json.loads(line) for line in events]
        assert [r["sequence"] for r in records] == list(range(1, len(records) + 1))
        assert {r["schema_version"] for r in records} == {"1.0"}
        assert {"user.audio.sent", "user.speech.ended", "agent.audio.delta", "agent.response.done"} <= \
            {r["event_type"] for r in records}
        assert len({r["trace"]["trace_id"] for r in records}) == 1
    assert (artifacts / "evaluator.log").stat().st_size > 0

    # the store holds both conversations, one turn record per exchange, and the trial reports
    from bench.store import Store

    store = Store(artifacts / "simulation.sqlite")
    try:
        conversations = store.conversations(result.run_id)
        assert [c["status"] for c in conversations] == ["succeeded", "succeeded"]
        turns = store.turns(result.run_id)
        assert len(turns) == 4 and {t.turn_index for t in turns} == {1, 2}
        kinds = {a["kind"] for a in store.artifacts(result.run_id)}
        assert {"trial_report", "voice_metrics"} <= kinds
    finally:
        store.close()
