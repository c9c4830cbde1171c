"""The YAML-defined outcome probe: outcome values from the recorded tool calls and the run's data, checked against
``outcome_spec`` by the ordinary outcome verdicts."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bench.simulation.config import Scenario
from bench.simulation.data_outcome import DataOutcome
from bench.simulation.verdicts import outcome_verdicts, run_probe

CONTEXT = {
    "conversation_id": "c-1", "exit_reason": "endpoint_completion", "patient": {"name": "Maria Lopez"},
    "tool_calls": [
        {"name": "book_appointment", "arguments": '{"time": "09:00"}', "result": None},
        {"name": "book_appointment", "arguments": {"time": "09:30", "slot": {"room": 4}},
         "result": '{"reference": "APT-7"}'},
    ],
}


def _probe(**values) -> DataOutcome:  # noqa: ANN003
    return DataOutcome(values=values)


def test_values_come_from_tool_calls_and_data():
    probe = _probe(booked={"tool": "book_appointment"}, time={"tool": "book_appointment", "argument": "time"},
                   room={"tool": "book_appointment", "argument": "slot.room"},
                   reference={"tool": "book_appointment", "result": True},
                   cancelled={"tool": "cancel_appointment"}, patient={"path": "patient.name"},
                   exit={"path": "exit_reason"})
    assert asyncio.run(probe.probe(CONTEXT)) == {
        "booked": True, "time": "09:30", "room": 4, "reference": {"reference": "APT-7"}, "cancelled": False,
        "patient": "Maria Lopez", "exit": "endpoint_completion"}


def test_a_value_source_needs_exactly_one_origin():
    with pytest.raises(ValueError, match="exactly one of tool or path"):
        _probe(bad={"tool": "x", "path": "y"})
    with pytest.raises(ValueError, match="argument and result go with tool"):
        _probe(bad={"path": "y", "argument": "z"})


def test_a_scenario_checks_outcomes_with_yaml_alone():
    scenario = Scenario.model_validate({
        "id": "booking", "eval_spec": {
            "outcome_spec": {"booked": True, "time": "09:30"},
            "outcome_probe": {"class": "bench.simulation.data_outcome:DataOutcome",
                              "settings": {"values": {"booked": {"tool": "book_appointment"},
                                                      "time": {"tool": "book_appointment", "argument": "time"}}}}}})
    result = asyncio.run(run_probe(scenario, CONTEXT, [Path.cwd()]))
    assert result.status == "available"
    verdicts = outcome_verdicts(scenario.eval_spec.outcome_spec, result.values, result.status, result.error)
    assert [(v.name, v.passed) for v in verdicts] == [("outcome_booked", True), ("outcome_time", True)]
    missed = asyncio.run(run_probe(scenario, {**CONTEXT, "tool_calls": []}, [Path.cwd()]))
    verdicts = outcome_verdicts(scenario.eval_spec.outcome_spec, missed.values, missed.status, missed.error)
    assert [(v.name, v.passed) for v in verdicts] == [("outcome_booked", False), ("outcome_time", False)]
