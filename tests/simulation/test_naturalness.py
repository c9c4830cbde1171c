"""Seed 004's naturalness metric against hand-computed cases: bands, weights, labels, the formula, the gates and
the tri-state switch."""

from __future__ import annotations

import pytest

from bench.simulation.naturalness import (
    NaturalnessConfig,
    compute,
    label_for,
    latency_score,
    resolve_config,
    turn_score,
)

DEFAULT = NaturalnessConfig()


@pytest.mark.parametrize(("ms", "score"), [(0, 5), (999, 5), (1000, 4), (1999, 4), (2000, 3), (2999, 3), (3000, 2),
                                           (3999, 2), (4000, 1), (9000, 1)])
def test_latency_bands(ms, score):
    assert latency_score(ms, DEFAULT.latency_bands_ms) == score


def test_labels_use_the_bands():
    assert label_for(2.49, DEFAULT) == "Bot-like"
    assert label_for(2.5, DEFAULT) == "Transitional"
    assert label_for(3.74, DEFAULT) == "Transitional"
    assert label_for(3.75, DEFAULT) == "Human-like"


def test_turn_score_weights_latency_three_factors():
    # (4 + 3 + 4·3) / (1 + 1 + 3) = 19 / 5
    assert turn_score({"emotion": 4, "pacing": 3}, 4, DEFAULT) == 3.8
    # no measurement: no latency factor at all (not a neutral 3)
    assert turn_score({"a": 3, "b": 3, "c": 2}, None, DEFAULT) == 2.67
    # latency_weight 0 reports latency without scoring it
    assert turn_score({"emotion": 4}, 1, NaturalnessConfig(latency_weight=0)) == 4.0
    # no factors: the judge's own score
    assert turn_score({}, None, DEFAULT, fallback=3.3) == 3.3


def test_overall_formula_labels_and_latency_failure():
    turns = [{"factors": {"emotion": 4, "pacing": 3}}, {"factors": {"emotion": 2, "pacing": 2}},
             {"factors": {"a": 3, "b": 3, "c": 2}}]
    result = compute(DEFAULT, turns, {"personaConsistency": 4, "conversationalFlow": 2}, [1500, 4500, None])
    details = result["naturalness_details"]
    assert [t["score"] for t in details["turns"]] == [3.8, 1.4, 2.67]
    assert [t["label"] for t in details["turns"]] == ["Human-like", "Bot-like", "Transitional"]
    # 0.75 · mean(3.8, 1.4, 2.67) + 0.25 · mean(4, 2) = 0.75 · 2.62333… + 0.75 = 2.7175
    assert result["overall_score"] == 2.72
    assert result["naturalness"] == "2.72/5" and result["naturalness_label"] == "Transitional"
    assert result["passed"] is False  # a turn at 4.5 s fails the simulation outright
    assert details["failure_reasons"] == ["turn 1: perceived latency 4500 ms >= 4000 ms"]
    assert result["headline"] == ("Overall: 2.72/5 (Transitional) | FAILED: turn 1: perceived latency 4500 ms >= "
                                  "4000 ms")
    assert details["label_counts"] == {"Bot-like": 1, "Transitional": 1, "Human-like": 1}
    assert details["factor_averages"]["emotion"] == 3.0
    assert details["latency_ms_by_turn"] == {"0": 1500, "1": 4500, "2": None}


def test_without_conversation_factors_overall_is_the_turn_mean_clamped():
    turns = [{"factors": {"emotion": 7, "pacing": 0}}]  # factors clamp to 5 and 1
    result = compute(DEFAULT, turns, {}, [None])
    assert result["naturalness_details"]["turns"][0]["factors"] == {"emotion": 5, "pacing": 1}
    assert result["overall_score"] == 3.0 and result["passed"] is True


def test_a_judged_perceived_latency_is_discarded():
    # the judge claims 5; measured 3.5 s scores 2: (4 + 2·3) / 4 = 2.5
    result = compute(DEFAULT, [{"factors": {"emotion": 4, "perceivedLatency": 5}}], {}, [3500])
    turn = result["naturalness_details"]["turns"][0]
    assert turn["factors"] == {"emotion": 4, "perceivedLatency": 2} and turn["score"] == 2.5


def test_pass_threshold_and_disabled_latency_failure():
    config = NaturalnessConfig(pass_threshold=3.5, latency_failure_threshold_ms=None)
    good = compute(config, [{"factors": {"emotion": 5}}], {}, [500])
    assert good["overall_score"] == 5.0 and good["passed"] is True
    assert good["headline"] == "Overall: 5.0/5 (Human-like) | threshold 3.5 -> PASS"
    slow = compute(config, [{"factors": {"emotion": 3}}], {}, [9000])  # (3 + 1·3) / 4 = 1.5 < 3.5
    assert slow["overall_score"] == 1.5 and slow["passed"] is False
    assert slow["naturalness_details"]["failure_reasons"] == ["overall 1.5 below pass_threshold 3.5"]


def test_turn_weight_is_clamped():
    assert NaturalnessConfig(turn_weight=1.5).turn_weight == 1.0
    assert NaturalnessConfig(turn_weight=-1).turn_weight == 0.0
    result = compute(NaturalnessConfig(turn_weight=0.0), [{"factors": {"a": 5}}], {"b": 2}, [None])
    assert result["overall_score"] == 2.0


def test_tri_state_switch_and_blocks():
    assert resolve_config(None, None) is None
    assert resolve_config(True, None) is not None
    assert resolve_config(False, None) is None
    assert resolve_config(None, True) is not None  # run-level True enables where the scenario is silent
    assert resolve_config(False, True) is None  # an explicit false stays off
    assert resolve_config(True, False) is None  # run-level False disables everywhere
    merged = resolve_config({"pass_threshold": 3.0, "turn_weight": 0.5}, {"pass_threshold": 4.0})
    assert merged is not None and merged.pass_threshold == 4.0 and merged.turn_weight == 0.5
    assert resolve_config(None, {"model": "judge-2"}).model == "judge-2"
    assert resolve_config({"enabled": False}, None) is None
    assert resolve_config({"future_key": 1}, None) is not None  # unknown keys are tolerated
    assert resolve_config("yes", None) is None  # malformed: off, never an error
    assert resolve_config({"turn_weight": "heavy"}, None) is None


def test_no_graded_turn_is_an_error_for_the_caller_to_log():
    with pytest.raises(ValueError):
        compute(DEFAULT, [{}], {}, [None])
