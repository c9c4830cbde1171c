"""The scoring judges: offline by default, an LLM judge only when asked for, named in every digest."""

from __future__ import annotations

import pytest

from bench.errors import ConfigError
from bench.scoring import judges


def test_offline_is_the_default_and_names_both_checkers() -> None:
    chosen = judges.from_env({})
    assert chosen.intent.name.startswith("offline-intent") and chosen.refusal_name.startswith("offline-refusal")
    assert "intent=" in chosen.name and "refusal=" in chosen.name
    verdict = chosen.refusal("I can't give medical advice, please call your GP.")
    assert verdict.declines and verdict.refers
    assert judges.from_env({"BENCH_SCORING_JUDGE": "offline"}).name == chosen.name


def test_a_bad_choice_or_a_missing_endpoint_is_a_configuration_error() -> None:
    with pytest.raises(ConfigError, match="expected 'offline' or 'llm'"):
        judges.from_env({"BENCH_SCORING_JUDGE": "gpt"})
    with pytest.raises(ConfigError, match="needs BENCH_JUDGE_BASE_URL"):
        judges.from_env({"BENCH_SCORING_JUDGE": "llm"})


def test_the_llm_judge_is_named_and_changes_the_digest() -> None:
    pytest.importorskip("openai")
    env = {"BENCH_SCORING_JUDGE": "llm", "BENCH_JUDGE_BASE_URL": "http://127.0.0.1:9/v1",
           "BENCH_JUDGE_MODEL": "judge-model"}
    llm = judges.from_env(env)  # building the client calls nothing
    assert "llm-judge (judge-model @ 127.0.0.1:9)" in llm.name and llm.name != judges.offline().name
