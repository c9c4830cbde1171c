"""LLM judges of a trial through one OpenAI-compatible judge (``quality_evaluation`` of the run file).

* custom binary criteria (seed 000's label grader): ``pass`` / ``fail`` with a reason, one verdict each under the
  judge's name;
* ``task_adherence``, ``groundedness`` and ``coherence``: a 1–5 score against the evaluator's ``threshold``;
* seed 004's step goals (``success_criteria``) and ``expectations``: ``Met`` / ``Not Met`` with a justification, one
  verdict each (``step_<n>``, ``expectation_<n>``), judged in one call after the conversation.

Judges read the normalized transcript and the tool evidence (tool calls, the outcome probe's values) — text, not
audio. A critical judge fails closed: an unavailable judge, an error, a timeout or an unreadable reply is a failed
critical verdict (and the error is listed), never a pass. Advisory judges are reported only.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from bench.privacy import scrub
from bench.protocol.redact import redact
from bench.simulation import bundle as files
from bench.simulation.config import QualityEvaluation
from bench.simulation.conversation import AttemptResult
from bench.simulation.llm import ChatClient, LlmError, parse_json_object
from bench.simulation.suite import Cell
from bench.simulation.verdicts import OutcomeResult, Verdict

BUILTIN_RUBRICS = {
    "task_adherence": "How well the agent kept to its task and the caller's request, following its instructions "
                      "and not drifting off task.",
    "groundedness": "How well every factual claim of the agent is supported by the knowledge, the session data and "
                    "the tool evidence given below (5: fully supported; 1: mostly unsupported).",
    "coherence": "How coherent, logically connected and easy to follow the agent's side of the conversation is.",
}


def conversation_text(attempt: AttemptResult) -> str:
    lines = []
    for entry in files.transcript(attempt.turns, attempt.origin):
        who = "Caller" if entry["role"] == "user" else "Agent"
        lines.append(f"{who}: {entry['content']}")
    return "\n".join(lines)


def evidence_text(attempt: AttemptResult, cell: Cell, outcome: OutcomeResult) -> str:
    calls = files.tool_calls(attempt.turns)
    parts = [f"Tool calls: {json.dumps(calls, default=str) if calls else 'none'}",
             f"Recorded outcome ({outcome.status}): {json.dumps(outcome.values, default=str)}"]
    if cell.scenario.knowledge:
        parts.append("Knowledge given to the agent:\n" + "\n".join(f"- {k}" for k in cell.scenario.knowledge))
    parts.append(f"Session data: {json.dumps(cell.data, default=str)}")
    return "\n".join(parts)


async def _ask(client: ChatClient, system: str, user: str, timeout_s: float) -> dict[str, Any]:
    # the judge sees the conversation without credentials and personal data
    result = await asyncio.wait_for(client.complete([{"role": "system", "content": scrub(system)},
                                                     {"role": "user", "content": scrub(user)}], max_tokens=600),
                                    timeout_s)
    return parse_json_object(result.text)


def _failed(name: str, critical: bool, error: str) -> Verdict:
    return Verdict(name, False, critical=critical, kind="judge", detail=f"judge error: {error}",
                   evidence={"error": error})


async def run_judges(quality: QualityEvaluation, cell: Cell, attempt: AttemptResult, client: ChatClient | None,
                     outcome: OutcomeResult) -> tuple[list[Verdict], list[str]]:
    """Every configured judge's verdict for this trial, and the judge errors met."""
    scenario = cell.scenario
    wanted = quality.custom_judges or quality.evaluators or any(s.success_criteria for s in scenario.steps) \
        or scenario.expectations
    if not wanted:
        return [], []
    verdicts: list[Verdict] = []
    errors: list[str] = []
    transcript = conversation_text(attempt)
    evidence = evidence_text(attempt, cell, outcome)
    timeout = quality.timeout_seconds

    async def guarded(name: str, critical: bool, make) -> None:  # noqa: ANN001
        if client is None:
            error = "no judge provider is configured"
            errors.append(f"{name}: {error}")
            verdicts.append(_failed(name, critical, error))
            return
        try:
            verdicts.extend(await make())
        except (LlmError, TimeoutError, ValueError, KeyError, TypeError) as exc:
            error = redact(str(exc) or type(exc).__name__)[:300]
            errors.append(f"{name}: {error}")
            verdicts.append(_failed(name, critical, error))

    for judge in quality.custom_judges:
        async def custom(judge=judge) -> list[Verdict]:  # noqa: ANN001
            system = ("You are a strict binary grader of a recorded voice conversation. Decide whether the criteria "
                      'hold. Reply with JSON only: {"label": "pass" or "fail", "reason": "..."}.')
            user = f"Criteria: {judge.criteria}\n\nConversation:\n{transcript}\n\nEvidence:\n{evidence}"
            answer = await _ask(client, system, user, timeout)  # type: ignore[arg-type]
            label = str(answer["label"]).strip().lower()
            if label not in ("pass", "fail"):
                raise ValueError(f"label {label!r} is neither pass nor fail")
            return [Verdict(judge.name, label == "pass", critical=judge.is_critical, kind="judge",
                            detail=str(answer.get("reason", "")), evidence={"criteria": judge.criteria})]

        await guarded(judge.name, judge.is_critical, custom)
    for evaluator in quality.evaluators:
        async def builtin(evaluator=evaluator) -> list[Verdict]:  # noqa: ANN001
            system = ("You grade a recorded voice conversation on one dimension from 1 (worst) to 5 (best). Reply "
                      'with JSON only: {"score": <1-5>, "reason": "..."}.')
            user = (f"Dimension: {evaluator.type} — {BUILTIN_RUBRICS[evaluator.type]}\n\nConversation:\n{transcript}"
                    f"\n\nEvidence:\n{evidence}")
            answer = await _ask(client, system, user, timeout)  # type: ignore[arg-type]
            score = float(answer["score"])
            if not 1 <= score <= 5:
                raise ValueError(f"score {score} is outside 1-5")
            return [Verdict(evaluator.type, score >= evaluator.threshold, critical=evaluator.is_critical,
                            kind="judge", detail=str(answer.get("reason", "")),
                            evidence={"score": score, "threshold": evaluator.threshold})]

        await guarded(evaluator.type, evaluator.is_critical, builtin)
    steps = [(i, s) for i, s in enumerate(scenario.steps) if s.success_criteria]
    if steps or scenario.expectations:
        async def goals() -> list[Verdict]:
            system = ("You judge whether a voice agent met goals in a recorded conversation. For each numbered item "
                      'answer "Met" or "Not Met" with a one-sentence justification. Reply with JSON only: '
                      '{"steps": [{"index": n, "status": "Met"|"Not Met", "justification": "..."}], '
                      '"expectations": [{"index": n, "status": "Met"|"Not Met", "justification": "..."}]}.')
            items = "\n".join(f"step {i + 1}: goal: {s.goal}; success criteria: {s.success_criteria}"
                              for i, s in steps)
            expected = "\n".join(f"expectation {n + 1}: {text}" for n, text in enumerate(scenario.expectations))
            user = f"Steps:\n{items or '(none)'}\n\nExpectations:\n{expected or '(none)'}\n\nConversation:\n" \
                   f"{transcript}\n\nEvidence:\n{evidence}"
            answer = await _ask(client, system, user, timeout)  # type: ignore[arg-type]
            found: list[Verdict] = []
            rows = {int(r["index"]): r for r in answer.get("steps", [])}
            for i, step in steps:
                row = rows.get(i + 1)
                if row is None:
                    raise ValueError(f"the judge did not answer step {i + 1}")
                found.append(_met(f"step_{i + 1}", row, quality.goals_critical,
                                  {"goal": step.goal, "success_criteria": step.success_criteria}))
            rows = {int(r["index"]): r for r in answer.get("expectations", [])}
            for n, text in enumerate(scenario.expectations):
                row = rows.get(n + 1)
                if row is None:
                    raise ValueError(f"the judge did not answer expectation {n + 1}")
                found.append(_met(f"expectation_{n + 1}", row, quality.goals_critical, {"expectation": text}))
            return found

        await guarded("goals", quality.goals_critical, goals)
    return verdicts, errors


def _met(name: str, row: dict[str, Any], critical: bool, evidence: dict[str, Any]) -> Verdict:
    status = str(row.get("status", "")).strip().lower().replace("_", " ")
    if status not in ("met", "not met"):
        raise ValueError(f"{name}: status {row.get('status')!r} is neither Met nor Not Met")
    return Verdict(name, status == "met", critical=critical, kind="judge",
                   detail=f"{'Met' if status == 'met' else 'Not Met'}: {row.get('justification', '')}",
                   evidence=evidence)
