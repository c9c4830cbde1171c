"""Barge-in: a scripted turn interrupts the agent at an offset into its reply; the bundle records when and whether
the agent stopped; an adapter that declares no interruption fails validation."""

from __future__ import annotations

import textwrap

from tests.simulation.conftest import load_json, run_cli

RUN = """
scenario_path: scenario.yaml
script_path: script.yaml
speech_provider: tone
pace_audio: true
endpoint:
  adapter: {adapter}
  emulator:
    latency: {{first_token_median_ms: 100, first_token_sigma: 0, first_audio_extra_ms: 40, token_interval_ms: 40,
              audio_chunk_ms: 40, audio_pacing: 1.0}}
    vad: {{endpointing_silence_ms: 300, response_delay_ms: 100}}
"""
SCENARIO = """
id: visiting-hours-barge-in
knowledge:
  - Visiting hours are from two in the afternoon to eight in the evening every day. Children under twelve visit with
    an adult. Flowers are not allowed on the intensive care unit.
conversation: {max_turns: 4, completion_intents: []}
eval_spec: {expected_exit: script_exhaustion}
"""
SCRIPT = """
opening: What are the rules for visitors?
turns:
  - response: Please tell me everything about the visiting rules.
    keywords: [visit, visiting]
  - response: Sorry, only the evening hours please.
    interrupt_at_ms: 600
  - response: Thank you, goodbye.
    keywords: [evening, eight, visit]
    final: true
"""


def _suite(tmp_path, adapter: str):  # noqa: ANN202
    (tmp_path / "run.yaml").write_text(textwrap.dedent(RUN.format(adapter=adapter)), encoding="utf-8")
    (tmp_path / "scenario.yaml").write_text(textwrap.dedent(SCENARIO), encoding="utf-8")
    (tmp_path / "script.yaml").write_text(textwrap.dedent(SCRIPT), encoding="utf-8")
    return tmp_path / "run.yaml"


def _check_barge_in(artifacts, input_mode: str) -> None:  # noqa: ANN001
    trial = load_json(artifacts / "trial-001" / "trial-report.json")
    assert trial["execution_status"] == "succeeded" and trial["input_mode"] == input_mode
    metrics = load_json(artifacts / "trial-001" / "voice-metrics.json")
    interrupted = [t for t in metrics["turns"] if t["interrupted"]]
    barged = [t for t in metrics["turns"] if t.get("barge_in")]
    assert len(interrupted) == 1 and len(barged) == 1
    assert interrupted[0]["index"] + 1 == barged[0]["index"]  # the reply cut is the one spoken over
    evidence = barged[0]["barge_in"]
    assert evidence["barged_in"] and evidence["agent_stopped"] and evidence["agent_response_status"] == "interrupted"
    assert evidence["requested_offset_ms"] == 600 and evidence["actual_offset_ms"] >= 600
    assert evidence["agent_response_done_after_ms"] is not None and evidence["agent_response_done_after_ms"] >= 0
    transcript = (artifacts / "trial-001" / "transcript.md").read_text()
    assert "_(barge-in)_" in transcript and "_(interrupted)_" in transcript
    assert trial["exit_reason"] == "script_exhaustion" and trial["passed"] is True


def test_scripted_barge_in_over_audio(tmp_path):
    artifacts = tmp_path / "out"
    assert run_cli("simulate", "run", str(_suite(tmp_path, "openai_realtime")), "--artifacts-dir", str(artifacts),
                   "--no-progress") == 0
    _check_barge_in(artifacts, "audio")
    metrics = load_json(artifacts / "trial-001" / "voice-metrics.json")
    evidence = next(t for t in metrics["turns"] if t.get("barge_in"))["barge_in"]
    assert "agent_heard_after_barge_in_ms" in evidence


def test_scripted_barge_in_over_text(tmp_path):
    artifacts = tmp_path / "out"
    assert run_cli("simulate", "run", str(_suite(tmp_path, "fake")), "--artifacts-dir", str(artifacts),
                   "--no-progress", "--no-audio") == 0
    _check_barge_in(artifacts, "text")


def test_an_adapter_without_interruption_fails_validation(tmp_path, capsys):
    assert run_cli("simulate", "validate", str(_suite(tmp_path, "http")), "--no-audio") == 2
    err = capsys.readouterr().err
    assert "visiting-hours-barge-in" in err and "interruption" in err and "'http' does not provide" in err
