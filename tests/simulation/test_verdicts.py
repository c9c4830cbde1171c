"""Repeated-trial aggregates and the deterministic verdicts, on hand-made inputs."""

from __future__ import annotations

from bench.simulation.verdicts import (
    aggregate,
    concise,
    expected_exit,
    expected_topics,
    outcome_verdicts,
    pass_at_k,
    pass_power_k,
)


def test_pass_at_k_and_pass_power_k_on_true_false_true():
    results = [True, False, True]
    assert aggregate(results) == {"trial_count": 3, "passed_trials": 2, "pass_at_k": True, "pass_power_k": False}
    assert pass_at_k(results) is True and pass_power_k(results) is False
    assert pass_power_k([True, True]) is True
    assert pass_at_k([False, False]) is False
    assert pass_power_k([]) is False  # no trials is not a pass


def test_expected_topics_are_token_based_and_case_insensitive():
    said = ["Done: your daily PLAN is recorded, and the reminder is saved."]
    assert expected_topics(["plan recorded", "reminder saved"], said).passed
    missed = expected_topics(["plan recorded", "reminder deleted"], said)
    assert not missed.passed and missed.evidence["missing"] == ["reminder deleted"]
    # a paraphrase is not the contractual phrase
    assert not expected_topics(["appointment booked"], ["You are all set for Tuesday."]).passed


def test_expected_exit_and_concise():
    assert expected_exit("endpoint_completion", "endpoint_completion").passed
    assert not expected_exit("endpoint_completion", "max_turns").passed
    short = ["Your plan is recorded. Goodbye."]
    assert concise(short, "en", 3, 60).passed
    long_turn = ["One. Two. Three. Four."]
    verdict = concise(long_turn, "en", 3, 60)
    assert not verdict.passed and verdict.evidence["too_long"][0]["sentences"] == 4
    assert not concise([" ".join(["word"] * 61)], "en", 3, 60).passed


def test_outcome_verdicts_fail_closed_without_an_outcome():
    spec = {"appointment_booked": True, "department": "cardiology"}
    found = outcome_verdicts(spec, {"appointment_booked": True, "department": "Cardiology"}, "available", None)
    assert [v.name for v in found] == ["outcome_appointment_booked", "outcome_department"]
    assert all(v.passed for v in found)
    wrong = outcome_verdicts(spec, {"appointment_booked": False, "department": "cardiology"}, "available", None)
    assert [v.passed for v in wrong] == [False, True]
    missing = outcome_verdicts(spec, None, "error", "RuntimeError: database locked")
    assert [v.passed for v in missing] == [False, False]
    assert "database locked" in missing[0].detail
    # booleans are compared as booleans, never as text
    assert not outcome_verdicts({"booked": True}, {"booked": "True"}, "available", None)[0].passed
