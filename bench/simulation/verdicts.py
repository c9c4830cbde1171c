"""Deterministic verdicts of a trial, outcome probes, and the repeated-trial aggregates pass@k and pass^k (re-exported
from ``bench.metrics.trials``, the one implementation golden runs share).

Deterministic verdicts (each named, each critical):

* ``expected_topics`` — every expected topic occurs in the agent's transcript: all of the topic's words appear in
  what the agent said (case-insensitive, punctuation ignored; token based, so a paraphrase can fail — use it for
  stable contractual phrases);
* ``expected_exit`` — the conversation ended the way the scenario expects (``endpoint_completion``,
  ``script_exhaustion``, …);
* ``concise`` — every agent turn has at most ``max_sentences`` sentences and ``max_words`` words;
* ``outcome_<key>`` — the outcome probe, queried after the conversation, reports the value the scenario's
  ``outcome_spec`` expects for ``key``. A probe that is missing, fails or returns nothing fails every outcome
  verdict (fail closed): a spoken "booked" is not a booking.

Clean execution (no provider, adapter, timeout or cleanup failure) is the trial's ``execution_status``; a trial
that did not execute is an execution failure (exit 4), not a failed verdict.
"""

from __future__ import annotations

import asyncio
import inspect
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.metrics.trials import aggregate as aggregate
from bench.metrics.trials import pass_at_k as pass_at_k
from bench.metrics.trials import pass_power_k as pass_power_k
from bench.protocol.redact import redact
from bench.simulation.config import Scenario
from bench.simulation.imports import instantiate, load_custom


@dataclass
class Verdict:
    name: str
    passed: bool
    critical: bool = True
    kind: str = "deterministic"
    detail: str = ""
    evidence: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "passed": self.passed, "critical": self.critical, "kind": self.kind,
                "detail": self.detail, "evidence": self.evidence}


_TOKEN = re.compile(r"[\w']+")


def tokens(text: str) -> set[str]:
    return {t.strip("'") for t in _TOKEN.findall(text.lower()) if t.strip("'")}


def expected_topics(topics: list[str], agent_texts: list[str]) -> Verdict:
    said = tokens(" ".join(agent_texts))
    missing = [topic for topic in topics if not tokens(topic) <= said]
    return Verdict("expected_topics", not missing,
                   detail="all topics covered" if not missing else f"not covered: {', '.join(missing)}",
                   evidence={"topics": topics, "missing": missing})


def expected_exit(expected: str, observed: str) -> Verdict:
    return Verdict("expected_exit", expected == observed, detail=f"expected {expected}, observed {observed}",
                   evidence={"expected": expected, "observed": observed})


def concise(agent_texts: list[str], language: str, max_sentences: int, max_words: int) -> Verdict:
    from bench.voice_shape import count_sentences

    long_turns = []
    for index, text in enumerate(agent_texts):
        if not text.strip():
            continue
        sentences, words = count_sentences(text, language), len(text.split())
        if sentences > max_sentences or words > max_words:
            long_turns.append({"agent_turn": index, "sentences": sentences, "words": words})
    return Verdict("concise", not long_turns,
                   detail=f"every agent turn ≤ {max_sentences} sentences and ≤ {max_words} words" if not long_turns
                   else f"{len(long_turns)} agent turn(s) too long", evidence={"too_long": long_turns})


def _same(expected: Any, actual: Any) -> bool:
    if expected == actual:
        return True
    scalar = (str, int, float, bool)
    if isinstance(expected, scalar) and isinstance(actual, scalar) and not isinstance(expected, bool):
        return str(expected).strip().lower() == str(actual).strip().lower()
    return False


def outcome_verdicts(spec: dict[str, Any], outcome: dict[str, Any] | None, status: str,
                     error: str | None) -> list[Verdict]:
    verdicts = []
    for key, expected in spec.items():
        if outcome is None:
            verdicts.append(Verdict(f"outcome_{key}", False, kind="outcome",
                                    detail=f"outcome {status}" + (f": {error}" if error else ""),
                                    evidence={"expected": expected}))
            continue
        actual = outcome.get(key)
        verdicts.append(Verdict(f"outcome_{key}", _same(expected, actual), kind="outcome",
                                detail=f"expected {expected!r}, probe reported {actual!r}",
                                evidence={"expected": expected, "actual": actual}))
    return verdicts


@dataclass
class OutcomeResult:
    status: str  # available | unavailable | error | not_configured
    values: dict[str, Any] | None = None
    error: str | None = None


async def run_probe(scenario: Scenario, context: dict[str, Any], directories: list[Path],
                    timeout_s: float = 30.0) -> OutcomeResult:
    """Build the scenario's outcome probe and ask it about this conversation."""
    spec = scenario.eval_spec.outcome_probe
    if spec is None:
        return OutcomeResult("not_configured")
    try:
        target = load_custom(spec.target, directories, f"scenario {scenario.id!r}: eval_spec.outcome_probe")
        probe = instantiate(target, dict(spec.settings), f"scenario {scenario.id!r}: eval_spec.outcome_probe")
        method = getattr(probe, "probe", None) or probe
        value = method(context)
        if inspect.isawaitable(value):
            value = await asyncio.wait_for(value, timeout_s)
    except Exception as exc:  # a failing probe fails the outcome verdicts, never the run
        return OutcomeResult("error", error=redact(f"{type(exc).__name__}: {exc}")[:500])
    if value is None:
        return OutcomeResult("unavailable")
    if not isinstance(value, dict):
        try:
            value = dict(value)
        except (TypeError, ValueError):
            return OutcomeResult("error", error=f"the probe returned {type(value).__name__}, not a mapping")
    return OutcomeResult("available", values=value)


def deterministic_verdicts(scenario: Scenario, *, agent_texts: list[str], exit_reason: str,
                           outcome: OutcomeResult) -> list[Verdict]:
    verdicts: list[Verdict] = []
    if scenario.expected_topics:
        verdicts.append(expected_topics(scenario.expected_topics, agent_texts))
    if scenario.eval_spec.expected_exit:
        verdicts.append(expected_exit(scenario.eval_spec.expected_exit, exit_reason))
    concise_spec = scenario.eval_spec.concise_spec
    if concise_spec is not None:
        verdicts.append(concise(agent_texts, scenario.language, concise_spec.max_sentences, concise_spec.max_words))
    verdicts += outcome_verdicts(scenario.eval_spec.outcome_spec, outcome.values, outcome.status, outcome.error)
    return verdicts
