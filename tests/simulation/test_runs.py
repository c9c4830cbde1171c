"""Real runs through the CLI reach every exit code; the cost cap; no secret reaches a written file."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.simulation.conftest import edit_yaml, load_json, run_cli


def _run(planning: Path, artifacts: Path, *extra: str) -> int:
    return run_cli("simulate", "run", str(planning), "--artifacts-dir", str(artifacts), "--no-progress", *extra)


def test_exit_0_when_every_trial_passes(planning, tmp_path, capsys):
    assert _run(planning, tmp_path / "out", "--trials", "1") == 0
    out = capsys.readouterr().out
    assert "pass^k=True" in out and "exit 0: passed" in out


def test_exit_2_for_configuration_errors(planning, tmp_path, capsys):
    edit_yaml(planning, lambda d: d.update(data_path="nowhere.yaml"))
    assert _run(planning, tmp_path / "out") == 2
    assert "nowhere.yaml: data: -: file not found" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()  # nothing ran
    with pytest.raises(SystemExit) as caught:  # a CLI override out of range: argparse's exit 2
        run_cli("simulate", "run", str(planning), "--trials", "0")
    assert caught.value.code == 2


def test_exit_3_when_a_critical_verdict_fails(planning, tmp_path):
    edit_yaml(planning.parent / "scenario-workload-neutral-voice.yaml",
              lambda d: d.update(expected_topics=["plan recorded", "reminder deleted"]))
    assert _run(planning, tmp_path / "out", "--trials", "2") == 3
    report = load_json(tmp_path / "out" / "run-report.json")
    assert report["process_exit_code"] == 3 and report["pass_power_k"] is False
    (cell,) = report["cells"]
    assert cell["passed_trials"] == 0 and cell["trials"][0]["critical_failures"] == ["expected_topics"]
    trial = load_json(tmp_path / "out" / "trial-001" / "trial-report.json")
    assert trial["execution_status"] == "succeeded" and trial["passed"] is False


def test_exit_4_when_the_endpoint_cannot_run(planning, tmp_path):
    edit_yaml(planning, lambda d: d["endpoint"]["emulator"].update(
        faults={"rate": 1.0, "kinds": ["error_event"], "retry_after_s": 0.01}))
    assert _run(planning, tmp_path / "out", "--trials", "1") == 4
    trial = load_json(tmp_path / "out" / "trial-001" / "trial-report.json")
    assert trial["execution_status"] == "failed" and trial["failure_code"] == "server_error"
    # the engine's one retry policy (``RetryPolicy``: three attempts by default, as for a golden entry)
    assert trial["attempts"] == 3 and "3 attempts" in trial["failure_reason"]
    report = load_json(tmp_path / "out" / "run-report.json")
    assert report["execution_failures"] == 1 and report["process_exit_code"] == 4


def _priced(planning: Path) -> None:
    """The planning scenario against the emulated OpenAI Realtime endpoint (which has a price table)."""
    edit_yaml(planning, lambda d: d.update(endpoint={
        "adapter": "openai_realtime", "answerer": "planner_agent:PlanningAgent",
        "answerer_options": {"database": "${VOICE_BENCH_PLANNER_DB:-}"}, "session_delivery": ["context"],
        "emulator": {"latency": {"first_token_median_ms": 20, "first_token_sigma": 0, "audio_pacing": 0}}}))


def test_cost_cap_stops_starting_conversations(planning, tmp_path, capsys):
    _priced(planning)
    assert _run(planning, tmp_path / "estimate", "--trials", "3", "--no-audio", "--estimate") == 0
    assert "EMULATED: not billed" in capsys.readouterr().out  # the rule of voice-bench run: $0 unless asked
    assert _run(planning, tmp_path / "estimate", "--trials", "3", "--no-audio", "--estimate",
                "--price-emulated") == 0
    line = capsys.readouterr().out.splitlines()[0]
    estimate = float(line.split("$")[1].split()[0]) / 3  # one conversation
    assert estimate > 0
    cap = 1.5 * estimate
    assert _run(planning, tmp_path / "out", "--trials", "3", "--parallel", "3", "--no-audio",
                "--max-cost-usd", f"{cap:.6f}", "--price-emulated") == 4
    report = load_json(tmp_path / "out" / "run-report.json")
    cost = report["cost"]
    assert len(cost["not_started"]) == 2 and report["trial_count"] == 1
    each = cost["not_started"][0]["estimate_usd"]
    assert abs(each - estimate) < 1e-4  # the --estimate figure is printed to 4 decimals
    assert cost["estimate_usd"] == each and 0 < cost["actual_usd"] <= cap
    assert abs(cost["cap_usd"] - cap) < 1e-6
    assert report["cells"][0]["pass_power_k"] is False  # an incomplete cell does not pass the gate
    trial = load_json(Path(report["artifact_bundle_paths"][0]) / "trial-report.json")
    assert trial["cost"]["estimate_usd"] == cost["estimate_usd"] and trial["cost"]["actual_usd"] > 0
    assert "cost cap: 2 conversation(s) not started" in capsys.readouterr().err


CANARY = "canary-SECRET-7f3a91c2"


def test_a_canary_secret_in_settings_is_written_nowhere(planning, tmp_path, monkeypatch):
    # seed 000's shape: the endpoint URL (with its access token) and a provider key come from the environment
    monkeypatch.setenv("SIM_CANARY_URL", f"wss://agent.invalid/api/evaluator/ws?accessToken={CANARY}")
    monkeypatch.setenv("SIM_CANARY_KEY", CANARY + "-judge")
    edit_yaml(planning, lambda d: (
        d["endpoint"].update(options={"url": "${SIM_CANARY_URL}"}),
        d.update(providers={"judge": {"base_url": "http://127.0.0.1:9/v1?api_key=${SIM_CANARY_KEY}",
                                      "model": "m", "api_key": "${SIM_CANARY_KEY}"}})))
    artifacts = tmp_path / "out"
    assert _run(planning, artifacts, "--trials", "1") == 0
    written = [p for p in artifacts.rglob("*") if p.is_file()]
    assert any(p.name == "resolved-settings.json" for p in written) and any(p.suffix == ".sqlite" for p in written)
    assert any(p.name == "evaluator.log" for p in written)
    for path in written:
        assert CANARY.encode() not in path.read_bytes(), path
    settings = load_json(artifacts / "trial-001" / "resolved-settings.json")
    assert settings["system"]["options"]["url"] == "${SIM_CANARY_URL}"
    assert settings["run"]["providers"]["judge"]["api_key"] == "***"


def test_a_custom_adapter_by_dotted_path(tmp_path):
    (tmp_path / "my_agent.py").write_text(
        "from tests.fakes.system import FakeSystem\n\n\ndef create(system):\n    return FakeSystem(system.id)\n",
        encoding="utf-8")
    (tmp_path / "scenario.yaml").write_text(
        "id: custom\nexpected_topics: [answer]\nconversation: {max_turns: 3}\n"
        "eval_spec: {expected_exit: script_exhaustion}\n", encoding="utf-8")
    (tmp_path / "script.yaml").write_text(
        "opening: Hello there.\nturns:\n  - {response: Thank you, keywords: [answer to], final: true}\n",
        encoding="utf-8")
    run = tmp_path / "run.yaml"
    run.write_text("scenario_path: scenario.yaml\nscript_path: script.yaml\n"
                   "endpoint: {id: mine, adapter: 'my_agent:create'}\n", encoding="utf-8")
    assert run_cli("simulate", "validate", str(run)) == 0
    artifacts = tmp_path / "out"
    assert run_cli("simulate", "run", str(run), "--artifacts-dir", str(artifacts), "--no-progress",
                   "--no-audio") == 0
    trial = load_json(artifacts / "trial-001" / "trial-report.json")
    assert trial["system_id"] == "mine" and trial["emulated"] is False
    assert [t["content"] for t in trial["evidence"]["turns"]] == ["Hello there.", "Answer to: Hello there.",
                                                                  "Thank you", "Answer to: Thank you"]
    (run.parent / "run.yaml").write_text("scenario_path: scenario.yaml\nscript_path: script.yaml\n"
                                         "endpoint: {adapter: 'my_agent:missing'}\n", encoding="utf-8")
    assert run_cli("simulate", "validate", str(run)) == 2
