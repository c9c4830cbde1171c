"""Issue 19 item 6: seed 000's fixture, written from the seed text (bench/data/simulation/seed000), runs with the
fake endpoint as the seed describes it — no opening, answerer or outcome probe the seed does not name — and exits 0;
the fake endpoint's agent is driven by YAML data alone."""

from __future__ import annotations

import shutil

from adapters.emulators.fixture_agent import FixtureAgent, requested_actions
from tests.simulation.conftest import EXAMPLES, load_json, run_cli


def test_seed_000_fixture_as_written_passes_three_trials(tmp_path, capsys):
    folder = tmp_path / "seed000"
    shutil.copytree(EXAMPLES / "seed000", folder)
    run = folder / "run-workload-neutral-voice.yaml"
    assert run_cli("simulate", "validate", str(run)) == 0
    artifacts = tmp_path / "artifacts"
    code = run_cli("simulate", "run", str(run), "--trials", "3", "--artifacts-dir", str(artifacts), "--no-progress")
    assert code == 0, capsys.readouterr().err[-2000:]
    for trial in ("trial-001", "trial-002", "trial-003"):
        report = load_json(artifacts / trial / "trial-report.json")
        assert report["execution_status"] == "succeeded" and report["passed"] is True
        assert report["exit_reason"] == "endpoint_completion"
        verdicts = {v["name"]: v["passed"] for v in report["verdicts"]}
        assert verdicts == {"expected_topics": True, "expected_exit": True, "concise": True}
        transcript = (artifacts / trial / "transcript.md").read_text(encoding="utf-8")
        assert "Please record the plan and save the reminder." in transcript
        assert "planning-session-001" not in transcript  # the opaque data is never read aloud
        raw = load_json(artifacts / trial / "raw-endpoint-events.json")  # the vendor's own frames, not normalized
        sent = [r["frame"]["type"] if "frame" in r else "binary_audio" for r in raw if r.get("direction") == "sent"]
        assert sent[0] == "evaluator.init" and sent[1] == "binary_audio"
        assert sent[-2:] == ["input_audio_buffer.commit", "response.create"]
        init = next(r["frame"] for r in raw if r.get("frame", {}).get("type") == "evaluator.init")
        assert init["request"]["session_id"] == "planning-session-001"  # the data, delivered in evaluator.init
        assert any(r.get("direction") == "received" for r in raw)


def test_the_fake_agent_confirms_requested_actions():
    assert requested_actions("Please record the plan and save the reminder.") == ["plan recorded", "reminder saved"]
    assert requested_actions("Could you send my invoice, then cancel the order?") == ["invoice sent", "order canceled"]
    assert requested_actions("Hi, what are your opening hours?") == []


def test_the_fake_agent_follows_a_yaml_reply_table():
    from adapters.emulators._kit.answerer import BrainRequest

    agent = FixtureAgent(replies=[{"keywords": ["opening hours"], "say": "We open at {open}.",
                                   "values": {"open": "eight"}},
                                  {"keywords": ["bye"], "say": "Goodbye.", "intent": "farewell"}],
                         fallback="Sorry?")
    assert agent.answer(BrainRequest(utterance="What are your opening hours?")).text == "We open at eight."
    farewell = agent.answer(BrainRequest(utterance="Thanks, bye"))
    assert farewell.conversational_intent == "farewell"
    assert agent.answer(BrainRequest(utterance="Hmm, I wonder.")).text == "Sorry?"


def _endpoint(tmp_path, settings: dict) -> object:
    import yaml

    folder = tmp_path / "seed000"
    shutil.copytree(EXAMPLES / "seed000", folder)
    run = folder / "run-workload-neutral-voice.yaml"
    data = yaml.safe_load(run.read_text(encoding="utf-8"))
    data["endpoint"] = {"adapter": "websocket", "settings": settings}
    run.write_text(yaml.safe_dump(data), encoding="utf-8")
    return run


SEED_SETTINGS = {"uri": "${VOICE_AGENT_URL}", "access_token": "${VOICE_AGENT_ACCESS_TOKEN}",
                 "connect_timeout_seconds": 10, "receive_timeout_seconds": 45}


def test_the_seeds_endpoint_settings_are_mapped(tmp_path, monkeypatch):
    from bench.simulation.suite import load_suite

    monkeypatch.setenv("VOICE_AGENT_URL", "ws://127.0.0.1:9/agent")
    monkeypatch.setenv("VOICE_AGENT_ACCESS_TOKEN", "tok-seed000-canary")
    setup = load_suite(_endpoint(tmp_path, SEED_SETTINGS)).systems[0]
    options = setup.config.options
    assert options["url"] == "${VOICE_AGENT_URL}" and options["connect_timeout_s"] == 10
    assert options["headers"] == {"Authorization": "${VOICE_AGENT_ACCESS_TOKEN}"}
    assert options["bearer_headers"] == ["Authorization"]
    assert setup.spec.idle_timeout_s == 45


def test_an_unknown_seed_setting_lists_the_accepted_names(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("VOICE_AGENT_URL", "ws://127.0.0.1:9/agent")
    monkeypatch.setenv("VOICE_AGENT_ACCESS_TOKEN", "tok-seed000-canary")
    run = _endpoint(tmp_path, {**SEED_SETTINGS, "max_message_bytes": 4194304})
    assert run_cli("simulate", "validate", str(run)) == 2
    err = capsys.readouterr().err
    assert "max_message_bytes not accepted by the 'websocket' adapter; accepted:" in err
    assert "uri" in err and "access_token" in err and "receive_timeout_seconds" in err
    assert "tok-seed000-canary" not in err and "Traceback" not in err
