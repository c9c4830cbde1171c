"""Simulations with turn-taking probes and realistic caller audio: a script turn's cough and noise are played into
the agent's reply by the one driver and stored as turn-taking figures; an impairment profile (run file or
``--impairment``) changes the caller's audio, seeded, and is recorded per turn in the voice events."""

from __future__ import annotations

import json
import textwrap

import pytest

from bench.store import Store
from tests.simulation.conftest import load_json, run_cli

RUN = """
scenario_path: scenario.yaml
script_path: script.yaml
speech_provider: tone
pace_audio: true
{extra}
endpoint:
  adapter: openai_realtime
  emulator:
    turn_taking: {profile}
    latency: {{first_token_median_ms: 100, first_token_sigma: 0, first_audio_extra_ms: 40, token_interval_ms: 40,
              audio_chunk_ms: 40, audio_pacing: 1.0}}
"""
SCENARIO = """
id: visiting-hours-probes
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
    turn_taking: {kind: cough, at_ms: 500}
  - response: Thank you, goodbye.
    keywords: [visit, eight, evening, children, flowers]
    final: true
"""


def _suite(tmp_path, *, profile: str = "patient", extra: str = ""):  # noqa: ANN202
    (tmp_path / "run.yaml").write_text(textwrap.dedent(RUN.format(profile=profile, extra=extra)), encoding="utf-8")
    (tmp_path / "scenario.yaml").write_text(textwrap.dedent(SCENARIO), encoding="utf-8")
    (tmp_path / "script.yaml").write_text(textwrap.dedent(SCRIPT), encoding="utf-8")
    return tmp_path / "run.yaml"


def _turns(artifacts):  # noqa: ANN001, ANN202
    report = load_json(artifacts / "run-report.json")
    store = Store(report["store"])
    try:
        return store.turns(report["run_id"])
    finally:
        store.close()


def test_a_scripted_cough_is_a_turn_taking_probe_with_figures(tmp_path, capsys):
    artifacts = tmp_path / "out"
    run_cli("simulate", "run", str(_suite(tmp_path)), "--artifacts-dir", str(artifacts), "--no-progress")
    out = capsys.readouterr().out
    probed = [t for t in _turns(artifacts) if t.turn_probe == "cough"]
    assert len(probed) == 1 and probed[0].agent_yielded is False  # the patient profile ignores a cough
    assert "turn-taking:" in out and "false barge-in 0.0% (0/1)" in out
    figures = json.loads((artifacts / "turn-taking.json").read_text(encoding="utf-8"))
    assert figures[0]["profile"] == "patient" and figures[0]["false_barge_in"]["n"] == 1


def test_a_script_probe_cannot_be_a_barge_in(tmp_path):
    run = _suite(tmp_path)
    (tmp_path / "script.yaml").write_text(SCRIPT.replace("kind: cough", "kind: barge_in"), encoding="utf-8")
    assert run_cli("simulate", "validate", str(run)) == 2


def test_a_simulation_with_an_impairment_profile_runs_and_records_it(tmp_path):
    artifacts = tmp_path / "out"
    run_cli("simulate", "run", str(_suite(tmp_path, extra="impairment: pstn")), "--artifacts-dir", str(artifacts),
            "--no-progress")
    trial = load_json(artifacts / "trial-001" / "trial-report.json")
    assert trial["execution_status"] == "succeeded"
    events = [json.loads(line) for line in (artifacts / "trial-001" / "voice-events.jsonl").read_text().splitlines()]
    mixed = [e for e in events if e.get("event_type") == "environment.mixed"]
    assert mixed and all(e["attributes"]["impairment"]["profile"] == "pstn" for e in mixed)
    assert len({e["attributes"]["impairment"]["seed"] for e in mixed}) == len(mixed)  # seeded per turn


@pytest.mark.parametrize("argv", [["--impairment", "tin-can"]])
def test_simulate_run_refuses_an_unknown_impairment(tmp_path, capsys, argv):
    assert run_cli("simulate", "run", str(_suite(tmp_path)), "--artifacts-dir", str(tmp_path / "out"),
                   "--no-progress", *argv) == 2
    assert "tin-can" in capsys.readouterr().err
