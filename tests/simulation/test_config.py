"""The file formats load as the seeds write them; ${ENV} substitution; validation names file, entry and field
(exit 2) and opens no connection."""

from __future__ import annotations

import textwrap

import pytest

from bench.errors import ValidationFailed
from bench.simulation.config import load_run_file, load_scenarios
from bench.simulation.suite import load_suite
from tests.simulation.conftest import EXAMPLES, edit_yaml, run_cli

SEED_004 = """
evals:
  - name: "successful_order_lookup"
    tags: ["P0", "order_management"]
    session_parameters:
      order_12345_status: "shipped"
      order_12345_eta: "2026-04-18"
    steps:
      - goal: "Ask about the status of order ORD-12345"
        success_criteria: "The user has provided order ID ORD-12345 and the agent has acknowledged it"
        response_guide: "The user is a customer checking on a recent purchase. They are polite but want a quick answer."
        max_turns: 3

      - goal: "Get the order status and delivery date"
        success_criteria: "The agent has provided the shipping status and the estimated delivery date"
        max_turns: 2

    expectations:
      - "The agent correctly identified the order as shipped"
      - "The agent mentioned the estimated delivery date"
      - "The agent maintained a friendly, helpful tone throughout"
  - name: upset_caller_billing_dispute
    tags: [P0, voice, naturalness]
    naturalness_metric:
      enabled: true
      model: "gemini-3.1-pro-preview"
      turn_qualities: [emotion, pacing, grammarStyle, disfluency, spokenNumbers]
      conversation_qualities: [personaConsistency, emotionalArcTracking]
      extra_guidance: >
        This is a US English voice agent.
      turn_weight: 0.8
      bot_like_below: 2.5
      human_like_at_or_above: 4.0
      pass_threshold: 3.5
      use_audio: true
      audio_source: auto
      latency_bands_ms: [1000, 2000, 3000, 4000]
      latency_weight: 3.0
      latency_failure_threshold_ms: 4000
      include_tool_calls: true
    steps:
      - goal: Complain about an incorrect charge and get it refunded
        success_criteria: Agent apologizes, looks up the account, and issues a refund
        max_turns: 10
        static_utterance: I was charged twice for my last order.
        inject_variables: {account: A-17}
"""


def test_seed_000_files_load_as_written():
    suite = load_suite(EXAMPLES / "daily_planning" / "run-workload-neutral-voice.yaml")
    (cell,) = suite.cells
    assert cell.scenario.id == "workload-neutral-voice-exchange"
    assert cell.scenario.expected_topics == ["plan recorded", "reminder saved"]
    # seed capability names map onto the engine's
    assert cell.scenario.conversation.required_capabilities == ["audio_input", "streaming_output"]
    assert cell.scenario.eval_spec.expected_exit == "endpoint_completion"
    assert cell.scenario.eval_spec.limits.max_time_seconds == 30
    assert cell.persona.name == "Jordan" and cell.persona.session_behavior.conclude_quickly
    assert cell.data == {"session_id": "planning-session-001",
                         "context": {"topic": "daily planning", "requested_reminder": "Submit the weekly summary "
                                                                                      "at 16:00"}}
    assert cell.script.turns[0].keywords == ["daily plan", "reminder"]
    assert suite.run.pace_audio is False and suite.run.trial_seed == 42
    assert suite.systems[0].config.adapter == "websocket" and suite.systems[0].config.mode == "emulated"


def test_seed_004_goal_form_loads_as_written(tmp_path):
    path = tmp_path / "evals.yaml"
    path.write_text(SEED_004, encoding="utf-8")
    lookup, dispute = load_scenarios(path)
    assert lookup.id == "successful_order_lookup" and lookup.tags == ["P0", "order_management"]
    assert lookup.session_parameters["order_12345_status"] == "shipped"
    assert [s.max_turns for s in lookup.steps] == [3, 2]
    assert len(lookup.expectations) == 3
    assert lookup.max_turns == 8  # the default turn limit; it grows when the steps need more (3 + 2 do not)
    assert dispute.naturalness_metric["pass_threshold"] == 3.5
    assert dispute.steps[0].static_utterance.startswith("I was charged twice")
    assert dispute.goal_data == {"account": "A-17"}


def test_env_substitution(tmp_path, monkeypatch):
    monkeypatch.setenv("SIM_JUDGE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("SIM_JUDGE_KEY", "judge-key-123456")
    run = tmp_path / "run.yaml"
    run.write_text(textwrap.dedent("""
        scenario_path: s.yaml
        endpoint:
          adapter: websocket
          settings:
            headers: {Authorization: "${SIM_TOKEN}"}
        providers:
          judge: {base_url: "${SIM_JUDGE_URL}", model: "${SIM_MODEL:-judge-small}", api_key: "${SIM_JUDGE_KEY}"}
    """), encoding="utf-8")
    loaded = load_run_file(run)
    judge = loaded.providers["judge"]
    assert judge.base_url == "http://127.0.0.1:9/v1" and judge.model == "judge-small"
    assert judge.api_key == "judge-key-123456"
    # a whole reference in endpoint options (here in their former spelling, settings) is left for the engine (it
    # resolves and redacts it)
    assert loaded.endpoint.options["headers"]["Authorization"] == "${SIM_TOKEN}"
    monkeypatch.delenv("SIM_JUDGE_KEY")
    with pytest.raises(ValidationFailed) as caught:
        load_run_file(run)
    (problem,) = caught.value.problems
    assert (problem.file, problem.entry, problem.field) == (str(run), "providers", "providers.judge.api_key")
    assert "SIM_JUDGE_KEY" in problem.message


def test_validate_cli_ok_and_opens_no_connection(planning, monkeypatch, capsys):
    import bench.engine.launch as launch

    def refuse(*args, **kwargs):  # noqa: ANN002, ANN003
        raise AssertionError("validate must not start an emulator")

    monkeypatch.setattr(launch, "start_emulator", refuse)
    monkeypatch.setattr(launch, "launch", refuse)
    assert run_cli("simulate", "validate", str(planning)) == 0
    assert "no connection was opened" in capsys.readouterr().out


def test_validate_catches_a_missing_file(planning, capsys):
    edit_yaml(planning, lambda d: d.update(persona_path="persona-missing.yaml"))
    assert run_cli("simulate", "validate", str(planning)) == 2
    err = capsys.readouterr().err
    assert "persona-missing.yaml: persona: -: file not found" in err
    assert "Traceback" not in err


def test_validate_catches_an_unsupported_capability(planning, capsys):
    # the HTTP endpoint streams no audio in: the seed's streaming_input requirement refuses it before any run
    edit_yaml(planning, lambda d: d.update(endpoint={"adapter": "http"}))
    assert run_cli("simulate", "validate", str(planning)) == 2
    err = capsys.readouterr().err
    assert "scenario-workload-neutral-voice.yaml: workload-neutral-voice-exchange: conversation." \
           "required_capabilities:" in err
    assert "audio_input" in err and "'http' does not provide" in err


def test_validate_names_environment_and_probe_problems(planning, capsys):
    folder = planning.parent
    (folder / "env.yaml").write_text("id: room\nbase_noise: nowhere.wav\ntransient_events:\n"
                                     "  - {type: also-missing.wav, trigger_mode: on_turn}\n", encoding="utf-8")
    edit_yaml(planning, lambda d: d.update(environment_path="env.yaml"))
    edit_yaml(folder / "scenario-workload-neutral-voice.yaml",
              lambda d: d["eval_spec"]["outcome_probe"].update({"class": "no_such_module:Probe"}))
    assert run_cli("simulate", "validate", str(planning)) == 2
    err = capsys.readouterr().err
    assert "env.yaml: environment: transient_events.0: trigger_mode on_turn needs on_turn_number" in err
    assert "workload-neutral-voice-exchange: eval_spec.outcome_probe.class:" in err and "no_such_module" in err


def test_validate_reports_an_unreadable_environment_wav(planning, capsys):
    folder = planning.parent
    (folder / "bad.wav").write_bytes(b"RIFF\x00\x00\x00\x00WAVEfmt " + b"\x10\x00\x00\x00" + b"\x07\x00\x01\x00"
                                     + b"\x40\x1f\x00\x00" * 2 + b"\x01\x00\x08\x00" + b"data\x00\x00\x00\x00")
    (folder / "env.yaml").write_text("id: room\nbase_noise: bad.wav\n", encoding="utf-8")
    edit_yaml(planning, lambda d: d.update(environment_path="env.yaml"))
    assert run_cli("simulate", "validate", str(planning)) == 2
    assert "env.yaml: room: base_noise:" in capsys.readouterr().err


def test_the_hospital_example_validates(monkeypatch):
    monkeypatch.setenv("VOICE_BENCH_HOSPITAL_DB", "")
    suite = load_suite(EXAMPLES / "hospital" / "run-hospital.yaml")
    assert {s.id for s in suite.systems} >= {"inhouse", "openai-realtime", "deepgram-agent", "elevenlabs-agent",
                                             "vapi", "retell", "livekit-baseline"}
    assert len(suite.environment_audio) == 3
    assert all(len(pcm) % 2 == 0 and len(pcm) > 24000 for pcm in suite.environment_audio.values())


def test_an_endpoint_takes_the_run_configs_vocabulary_and_the_old_one_with_a_notice(tmp_path, capsys):
    """``options`` and ``retry`` mean what they mean for a run config's system; ``settings`` and ``max_attempts``
    are still read, with a deprecation notice naming the file and the key; both spellings at once are refused."""
    from bench.config import RetryPolicy
    from bench.simulation.suite import system_config

    new, old, both = (tmp_path / name for name in ("new.yaml", "old.yaml", "both.yaml"))
    new.write_text(textwrap.dedent("""
        scenario_path: s.yaml
        endpoint:
          adapter: websocket
          options: {url: "ws://127.0.0.1:9/ws"}
          retry: {max_attempts: 4, initial_backoff_s: 0.5}
    """), encoding="utf-8")
    old.write_text(textwrap.dedent("""
        scenario_path: s.yaml
        endpoint:
          adapter: websocket
          settings: {url: "ws://127.0.0.1:9/ws"}
          max_attempts: 4
    """), encoding="utf-8")
    both.write_text(textwrap.dedent("""
        scenario_path: s.yaml
        endpoint: {adapter: websocket, settings: {}, options: {}}
    """), encoding="utf-8")
    current = load_run_file(new)
    assert capsys.readouterr().err == ""
    former = load_run_file(old)
    err = capsys.readouterr().err
    assert "old.yaml: endpoint.settings is deprecated; write options" in err
    assert "endpoint.max_attempts is deprecated; write retry.max_attempts" in err
    assert current.endpoint.options == former.endpoint.options == {"url": "ws://127.0.0.1:9/ws"}
    assert current.endpoint.retry == RetryPolicy(max_attempts=4, initial_backoff_s=0.5)
    assert former.endpoint.retry == RetryPolicy(max_attempts=4)
    config = system_config(current.endpoint, [tmp_path]).config
    assert config.retry == current.endpoint.retry and config.options["url"] == "ws://127.0.0.1:9/ws"
    with pytest.raises(ValidationFailed) as caught:
        load_run_file(both)
    assert "give options only" in str(caught.value.problems)
