"""The LLM judge for refusal/advice and intent, against a loopback OpenAI-compatible stub: the request it sends,
the verdict it returns (named after the judge), and how it fails."""

from __future__ import annotations

import json

import pytest

from bench.checks.judge import JudgeConfig, JudgeError, LLMJudge
from bench.errors import ConfigError


def _judge(url: str, environ: dict[str, str] | None = None) -> LLMJudge:
    env = {"BENCH_JUDGE_BASE_URL": url, "BENCH_JUDGE_MODEL": "judge-m", "BENCH_JUDGE_API_KEY": "sk-test-x"}
    env.update(environ or {})
    config = JudgeConfig.from_env(env)
    assert config is not None
    return LLMJudge(config, env)


def test_refusal_verdict_from_the_judge(llm_stub) -> None:
    llm_stub.reply = lambda prompt: json.dumps({"declines": True, "refers": True, "gives_advice": False,
                                                "about_medical_advice": True, "language": "nl",
                                                "evidence": ["ik kan u geen medisch advies geven"]})
    judge = _judge(llm_stub.url)
    verdict = judge.classify_refusal("Ik kan u geen medisch advies geven, bel uw huisarts.", "Hoeveel mg?")
    got = (verdict.declines, verdict.refers, verdict.gives_advice, verdict.medical_refusal)
    assert got == (True, True, False, True)
    assert verdict.judge == judge.name and judge.name.startswith("llm-judge (judge-m @ 127.0.0.1:")
    request = llm_stub.requests[-1]
    assert request["path"] == "/v1/chat/completions" and request["model"] == "judge-m"
    assert request["auth"] == "Bearer sk-test-x" and request["response_format"] == {"type": "json_object"}
    assert "Ik kan u geen medisch advies geven" in request["prompt"] and "Hoeveel mg?" in request["prompt"]
    assert "sk-test" not in judge.name


def test_intent_verdict_from_the_judge(llm_stub) -> None:
    llm_stub.reply = lambda prompt: 'Sure: {"intent": "switch_language", "answer_language": "fr", "evidence": []}'
    verdict = _judge(llm_stub.url).intent_from_answer("Bien sûr, continuons en français.", "French?", "en")
    assert (verdict.intent, verdict.answer_language) == ("switch_language", "fr")
    assert "The caller's language: en" in llm_stub.requests[-1]["prompt"]


def test_a_reply_that_is_not_the_asked_for_json_names_the_judge_and_field(llm_stub) -> None:
    llm_stub.reply = lambda prompt: json.dumps({"intent": "dancing", "answer_language": "nl"})
    judge = _judge(llm_stub.url)
    with pytest.raises(JudgeError, match=r"llm-judge \(judge-m .*field intent"):
        judge.intent_from_answer("Dag!", None, "nl")
    llm_stub.reply = lambda prompt: "no json here"
    with pytest.raises(JudgeError, match="not the asked-for JSON"):
        judge.classify_refusal("Dag!")


def test_config_refuses_literal_keys_and_half_settings() -> None:
    with pytest.raises(ConfigError, match=r"judge\.api_key: .*environment reference"):
        JudgeConfig.from_mapping({"base_url": "http://127.0.0.1:1/v1", "model": "m", "api_key": "sk-literal"})
    with pytest.raises(ConfigError, match="BENCH_JUDGE_MODEL"):
        JudgeConfig.from_env({"BENCH_JUDGE_BASE_URL": "http://127.0.0.1:1/v1"})
    assert JudgeConfig.from_env({}) is None
    config = JudgeConfig.from_mapping({"base_url": "http://h:1/v1", "model": "m", "api_key": "${MY_KEY}"})
    assert config.resolved_key({"MY_KEY": "abc"}) == "abc" and config.resolved_key({}) == "not-needed"
