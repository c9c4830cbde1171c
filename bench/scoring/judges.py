"""Which judges infer intent and classify refusal/advice while scoring: offline by default, an LLM when asked.

``ScoringJudges`` bundles the intent judge (``IntentJudge``) and the refusal judge (a callable returning a
``RefusalVerdict``) with their names; the names go into every stored score's digest and beside every figure.

- ``offline()`` — the calibrated offline checkers ``bench.checks.intent`` and ``bench.checks.refusal``.
- ``from_env()`` — ``BENCH_SCORING_JUDGE=llm`` selects the OpenAI-compatible LLM judge of ``bench.checks.judge``
  (``BENCH_JUDGE_BASE_URL``, ``BENCH_JUDGE_MODEL``, ``BENCH_JUDGE_API_KEY`` — the variables of the DeepEval
  faithfulness judge) for both; anything else, or unset, is offline. Opt-in, because it is one model call per
  distinct answer (stored afterwards, so paid once).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from bench.dataset import INTENTS, LANGUAGES
from bench.errors import ConfigError
from bench.scoring import checkers
from bench.scoring.intent import IntentJudge, OfflineIntentJudge

ENV_SCORING_JUDGE = "BENCH_SCORING_JUDGE"


@dataclass(frozen=True)
class ScoringJudges:
    intent: IntentJudge
    refusal: Callable[[str], Any] | None
    refusal_name: str
    refusal_unavailable: str | None = None

    @property
    def name(self) -> str:
        """Both judges' names: part of every stored score's digest."""
        return f"intent={self.intent.name}; refusal={self.refusal_name}"


def offline() -> ScoringJudges:
    function = checkers.get("refusal")
    return ScoringJudges(
        intent=OfflineIntentJudge(),
        refusal=(lambda answer: function(answer, language=None)) if function is not None else None,
        refusal_name=checkers.name("refusal"),
        refusal_unavailable=checkers.unavailable("refusal"),
    )


class _LLMIntentJudge:
    def __init__(self, judge: Any):
        self._judge = judge
        self.name = judge.name
        self.unavailable = None

    def classify(self, answer: str, question: str | None, language: str | None) -> tuple[str | None, str | None]:
        verdict = self._judge.intent_from_answer(answer, question=question, language=language)
        intent, answer_language = verdict.intent, verdict.answer_language
        return (intent if intent in INTENTS else None, answer_language if answer_language in LANGUAGES else None)


def from_env(environ: Mapping[str, str] | None = None) -> ScoringJudges:
    env = os.environ if environ is None else environ
    choice = env.get(ENV_SCORING_JUDGE, "offline").strip().lower()
    if choice in ("", "offline"):
        return offline()
    if choice != "llm":
        raise ConfigError(f"{ENV_SCORING_JUDGE}={choice!r}: expected 'offline' or 'llm'")
    from bench.checks.judge import JudgeConfig, LLMJudge

    config = JudgeConfig.from_env(env)
    if config is None:
        raise ConfigError(f"{ENV_SCORING_JUDGE}=llm needs BENCH_JUDGE_BASE_URL and BENCH_JUDGE_MODEL")
    judge = LLMJudge(config, env)
    return ScoringJudges(intent=_LLMIntentJudge(judge), refusal=lambda answer: judge.classify_refusal(answer),
                         refusal_name=judge.name)
