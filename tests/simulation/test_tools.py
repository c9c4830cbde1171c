"""Client tools in a simulation: the scenario declares the tools and names its tool backend; the agent's tool calls
reach the backend through the engine's ``ToolRouter`` (the same driver as golden runs) and the agent speaks the
result. A backend that gives neither a ToolBackend nor a mapping is a configuration error naming the scenario."""

from __future__ import annotations

import json
import textwrap

from tests.simulation.conftest import load_json, run_cli

RUN = """
scenario_path: scenario.yaml
script_path: script.yaml
speech_provider: tone
endpoint:
  adapter: openai_realtime
  emulator:
    latency: {first_token_median_ms: 20, first_token_sigma: 0, token_interval_ms: 5}
"""
SCENARIO = """
id: booking-with-tools
knowledge: [The clinic books appointments on weekdays.]
conversation: {{max_turns: 3, completion_intents: []}}
eval_spec: {{expected_exit: script_exhaustion}}
tools:
  - name: book_appointment
    description: Book an appointment for the caller.
    parameters:
      type: object
      properties: {{request: {{type: string}}}}
      required: [request]
tool_backend: {backend}
tool_backend_options: {{log: "{log}"}}
"""
SCRIPT = """
opening: I would like to book an appointment please.
turns:
  - response: Thank you, goodbye.
    keywords: [Tuesday]
    final: true
"""
BACKEND = '''
import json
from pathlib import Path


def backend(log):
    def book(arguments):
        Path(log).write_text(json.dumps(arguments), encoding="utf-8")
        return "Booked for Tuesday at ten."
    return {"book_appointment": book}
'''


def _suite(tmp_path, backend: str):  # noqa: ANN001, ANN202
    log = tmp_path / "calls.json"
    (tmp_path / "tool_backend.py").write_text(BACKEND, encoding="utf-8")
    (tmp_path / "run.yaml").write_text(textwrap.dedent(RUN), encoding="utf-8")
    (tmp_path / "scenario.yaml").write_text(textwrap.dedent(SCENARIO.format(backend=backend, log=log)),
                                            encoding="utf-8")
    (tmp_path / "script.yaml").write_text(textwrap.dedent(SCRIPT), encoding="utf-8")
    return tmp_path / "run.yaml", log


def test_the_agents_tool_call_reaches_the_scenarios_backend(tmp_path):
    run, log = _suite(tmp_path, "tool_backend:backend")
    artifacts = tmp_path / "out"
    assert run_cli("simulate", "run", str(run), "--artifacts-dir", str(artifacts), "--no-progress",
                   "--no-audio") == 0
    assert "appointment" in json.loads(log.read_text(encoding="utf-8"))["request"]
    trial = load_json(artifacts / "trial-001" / "trial-report.json")
    assert trial["execution_status"] == "succeeded" and trial["exit_reason"] == "script_exhaustion"
    transcript = (artifacts / "trial-001" / "transcript.md").read_text(encoding="utf-8")
    assert "Booked for Tuesday at ten" in transcript


def test_a_tool_backend_that_cannot_be_loaded_fails_validation_naming_the_scenario(tmp_path, capsys):
    run, _ = _suite(tmp_path, "tool_backend:missing")
    assert run_cli("simulate", "validate", str(run), "--no-audio") == 2
    err = capsys.readouterr().err
    assert "booking-with-tools" in err and "tool_backend" in err and "'missing'" in err


def test_an_adapter_without_client_tools_fails_validation(tmp_path, capsys):
    run, _ = _suite(tmp_path, "tool_backend:backend")
    run.write_text(run.read_text(encoding="utf-8").replace("openai_realtime", "http"), encoding="utf-8")
    assert run_cli("simulate", "validate", str(run), "--no-audio") == 2
    assert "client_tools" in capsys.readouterr().err
