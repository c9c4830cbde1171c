"""Seed 004's naturalness metric: how human the agent sounds, per turn and over the call.

Configuration (``naturalness_metric`` of a scenario, aliases ``naturalness`` and ``naturalness_config``): ``true`` /
``false`` or a mapping of the documented fields (unknown keys tolerated; a malformed block is a warning and counts
as off). The run-level switch is tri-state: ``None`` defers to each scenario, ``True`` enables the defaults where a
scenario does not declare the key (an explicit ``false`` stays off), ``False`` disables it everywhere, a mapping is
merged over the scenario's block (run keys win).

Scores: the judge grades every agent turn 1–5 on the turn qualities and the call on the conversation qualities.
``perceivedLatency`` is measured, never judged — the caller-heard latency of the turn (VAD on the recorded audio)
against ``latency_bands_ms`` (under 1 s → 5 … 4 s and over → 1); a factor the judge returns under that name is
discarded, and a turn without a measurement gets no latency factor. Then, exactly as the seed specifies:

1. turn score = weighted mean of the turn's factors (judged factors weight 1, ``perceivedLatency`` weight
   ``latency_weight``), rounded to 2 decimals; with no factors, the judge's own score for the turn;
2. turn label: ``Bot-like`` below ``bot_like_below``, ``Human-like`` at or above ``human_like_at_or_above``, else
   ``Transitional``;
3. overall = ``turn_weight`` × mean(turn scores) + (1 − ``turn_weight``) × mean(conversation factors) — or the mean
   of the turn scores when there are no conversation factors — clamped to 1–5 and rounded to 2 decimals;
4. the overall label from the same bands.

Pass/fail: informational unless ``pass_threshold`` is set (then the trial fails below it); independently a turn at
or above ``latency_failure_threshold_ms`` fails the trial (``null`` disables that). Grading failures (judge errors,
unreadable replies, no agent turns) are logged and give no result; they never fail the trial.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from bench.privacy import scrub
from bench.simulation.llm import ChatClient, LlmError, parse_json_object

LOG = logging.getLogger("voice_bench.simulation")

TURN_QUALITIES = ("emotion", "pacing", "grammarStyle", "disfluency", "lexicalVariety", "concision", "spokenNumbers",
                  "empathyCalibration", "scriptedness", "turnTaking")
CONVERSATION_QUALITIES = ("personaConsistency", "repetitionAvoidance", "emotionalArcTracking", "conversationalFlow")
LATENCY_FACTOR = "perceivedLatency"
LATENCY_LABELS = {5: "excellent", 4: "very good", 3: "good", 2: "needs improvement", 1: "unacceptable"}
Label = Literal["Bot-like", "Transitional", "Human-like"]


class NaturalnessConfig(BaseModel):
    model_config = ConfigDict(extra="ignore")

    enabled: bool = True
    model: str | None = None
    turn_qualities: list[str] = Field(default_factory=list)
    conversation_qualities: list[str] = Field(default_factory=list)
    extra_guidance: str = ""
    turn_weight: float = 0.75
    bot_like_below: float = 2.5
    human_like_at_or_above: float = 3.75
    pass_threshold: float | None = None
    use_audio: bool = False
    audio_source: Literal["auto", "gcs", "local", "none"] = "auto"
    latency_bands_ms: list[float] = Field(default_factory=lambda: [1000.0, 2000.0, 3000.0, 4000.0])
    latency_weight: float = Field(default=3.0, ge=0)
    latency_failure_threshold_ms: float | None = 4000.0
    latency_fetch_timeout_s: float = 120.0
    include_tool_calls: bool = True

    @field_validator("turn_weight")
    @classmethod
    def _clamp(cls, value: float) -> float:
        return min(1.0, max(0.0, value))

    @property
    def turn_factors(self) -> list[str]:
        return [q for q in (self.turn_qualities or list(TURN_QUALITIES)) if q != LATENCY_FACTOR]

    @property
    def conversation_factors(self) -> list[str]:
        return list(self.conversation_qualities or CONVERSATION_QUALITIES)


def _block(value: Any) -> dict[str, Any] | bool | None:
    """A scenario's block as a mapping, a bool or None (absent); malformed → False with a warning."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, dict):
        return value
    LOG.warning("naturalness_metric: expected true/false or a mapping, got %r; treated as off", value)
    return False


def resolve_config(scenario_value: Any, run_switch: bool | dict[str, Any] | None) -> NaturalnessConfig | None:
    """The naturalness configuration that applies, or None when the metric is off (the tri-state rules)."""
    block = _block(scenario_value)
    if run_switch is False:
        return None
    merged: dict[str, Any] | None
    if run_switch is None:
        merged = {} if block is True else (block if isinstance(block, dict) else None)
    elif run_switch is True:
        merged = None if block is False else ({} if block in (None, True) else dict(block))  # type: ignore[arg-type]
    else:
        if block is False and run_switch.get("enabled") is not True:
            return None
        merged = {**(block if isinstance(block, dict) else {}), **run_switch}
    if merged is None:
        return None
    try:
        config = NaturalnessConfig.model_validate(merged)
    except ValidationError as exc:
        LOG.warning("naturalness_metric: invalid block (%s); treated as off", exc.errors()[0]["msg"])
        return None
    return config if config.enabled else None


def clamp_factor(value: Any) -> int:
    return int(min(5, max(1, round(float(value)))))


def latency_score(latency_ms: float, bands: list[float]) -> int:
    """5 under the first band … 1 at or above the last (seed 004's table for the default bands)."""
    return max(1, 5 - sum(1 for bound in bands if latency_ms >= bound))


def label_for(score: float, config: NaturalnessConfig) -> Label:
    if score < config.bot_like_below:
        return "Bot-like"
    if score >= config.human_like_at_or_above:
        return "Human-like"
    return "Transitional"


def turn_score(factors: dict[str, int], latency: int | None, config: NaturalnessConfig,
               fallback: float | None = None) -> float | None:
    weights = [(float(v), 1.0) for k, v in factors.items() if k != LATENCY_FACTOR]
    if latency is not None and config.latency_weight > 0:
        weights.append((float(latency), config.latency_weight))
    total = sum(w for _, w in weights)
    if total == 0:
        return round(float(fallback), 2) if fallback is not None else None
    return round(sum(v * w for v, w in weights) / total, 2)


def compute(config: NaturalnessConfig, turns: list[dict[str, Any]], conversation_factors: dict[str, Any],
            latencies_ms: list[float | None], *, summary: str = "", model: str | None = None) -> dict[str, Any]:
    """The metric from the judge's gradings (``turns``: per agent turn ``factors``, optional ``score`` and
    ``justification``) and the measured latencies (one per agent turn, None when not measured)."""
    graded: list[dict[str, Any]] = []
    failure_reasons = []
    for index, grading in enumerate(turns):
        factors = {k: clamp_factor(v) for k, v in (grading.get("factors") or {}).items() if k != LATENCY_FACTOR}
        latency_ms = latencies_ms[index] if index < len(latencies_ms) else None
        latency = latency_score(latency_ms, config.latency_bands_ms) if latency_ms is not None else None
        shown = dict(factors)
        if latency is not None:
            shown[LATENCY_FACTOR] = latency
        own = grading.get("score")
        score = turn_score(factors, latency, config, fallback=float(own) if own is not None else None)
        if score is None:
            continue
        graded.append({"turn": index, "score": score, "label": label_for(score, config), "factors": shown,
                       "latency_ms": latency_ms, "justification": str(grading.get("justification", ""))})
        threshold = config.latency_failure_threshold_ms
        if threshold is not None and latency_ms is not None and latency_ms >= threshold:
            failure_reasons.append(f"turn {index}: perceived latency {latency_ms:.0f} ms >= {threshold:.0f} ms")
    if not graded:
        raise ValueError("no agent turn was graded")
    conversation = {k: clamp_factor(v) for k, v in (conversation_factors or {}).items() if k != LATENCY_FACTOR}
    turn_mean = sum(t["score"] for t in graded) / len(graded)
    if conversation:
        overall = config.turn_weight * turn_mean + (1 - config.turn_weight) * (sum(conversation.values())
                                                                               / len(conversation))
    else:
        overall = turn_mean
    overall = round(min(5.0, max(1.0, overall)), 2)
    if config.pass_threshold is not None and overall < config.pass_threshold:
        failure_reasons.append(f"overall {overall} below pass_threshold {config.pass_threshold}")
    names = sorted({k for t in graded for k in t["factors"]})
    averages = {k: round(sum(t["factors"][k] for t in graded if k in t["factors"])
                         / sum(1 for t in graded if k in t["factors"]), 2) for k in names}
    counts = {label: sum(1 for t in graded if t["label"] == label) for label in ("Bot-like", "Transitional",
                                                                                   "Human-like")}
    label = label_for(overall, config)
    headline = f"Overall: {overall}/5 ({label})"
    if config.pass_threshold is not None:
        headline += f" | threshold {config.pass_threshold} -> {'PASS' if overall >= config.pass_threshold else 'FAIL'}"
    latency_failures = [r for r in failure_reasons if "perceived latency" in r]
    if latency_failures:
        headline += f" | FAILED: {'; '.join(latency_failures)}"
    return {
        "naturalness": f"{overall}/5",
        "naturalness_label": label,
        "overall_score": overall,
        "headline": headline,
        "passed": not failure_reasons,
        "naturalness_details": {
            "turns": graded, "conversation_factors": conversation, "factor_averages": averages,
            "label_counts": counts, "summary": summary, "model": model, "pass_threshold": config.pass_threshold,
            "passed": not failure_reasons,
            "latency_ms_by_turn": {str(t["turn"]): t["latency_ms"] for t in graded},
            "failure_reasons": failure_reasons,
        },
    }


def _prompt(config: NaturalnessConfig, agent_turns: list[dict[str, Any]]) -> tuple[str, str]:
    system = ("You grade how closely each agent turn of a phone call resembles a warm, competent human contact-centre "
              "agent rather than a script-reading bot. Score every factor as an integer from 1 (bot-like) to 5 "
              "(fully human-like). Do not grade latency. Reply with JSON only: "
              '{"turns": [{"turn": n, "factors": {...}, "justification": "..."}], "conversation_factors": {...}, '
              '"summary": "..."}.')
    if config.extra_guidance:
        system += f"\n\nAdditional guidance: {config.extra_guidance}"
    lines = []
    for turn in agent_turns:
        lines.append(f"[turn {turn['turn']}] Caller: {turn['caller']}")
        if config.include_tool_calls and turn.get("tools"):
            lines.append(f"  (agent tool calls: {json.dumps(turn['tools'], default=str)})")
        lines.append(f"[turn {turn['turn']}] Agent: {turn['agent']}")
    user = (f"Turn factors: {', '.join(config.turn_factors)}\nConversation factors: "
            f"{', '.join(config.conversation_factors)}\n\nTranscript:\n" + "\n".join(lines))
    return system, user


async def grade(config: NaturalnessConfig, attempt: Any, metrics: dict[str, Any] | None,
                client: ChatClient | None) -> dict[str, Any] | None:
    """Grade one trial; None (and a warning in the log) when grading is not possible."""
    agent_turns: list[dict[str, Any]] = []
    latencies: list[float | None] = []
    rows = {r["turn_id"]: r for r in (metrics or {}).get("turns", [])}
    for turn in attempt.turns:
        if not turn.agent_text.strip():
            continue
        agent_turns.append({"turn": len(agent_turns), "caller": turn.user_text, "agent": turn.agent_text,
                            "tools": turn.folded.get("tool_calls") or []})
        latencies.append(rows.get(turn.turn_id, {}).get("caller_heard_latency_ms"))
    if not agent_turns:
        LOG.warning("naturalness: the trial has no agent turns; no result")
        return None
    if client is None:
        LOG.warning("naturalness: no judge provider is configured; no result")
        return None
    system, user = _prompt(config, agent_turns)
    try:
        reply = await client.complete([{"role": "system", "content": scrub(system)},
                                       {"role": "user", "content": scrub(user)}],  # no personal data to the judge
                                      max_tokens=1500, model=config.model)
        answer = parse_json_object(reply.text)
        gradings = {int(t["turn"]): t for t in answer.get("turns", []) if isinstance(t, dict) and "turn" in t}
        turns = [gradings.get(i, {}) for i in range(len(agent_turns))]
        return compute(config, turns, answer.get("conversation_factors") or {}, latencies,
                       summary=str(answer.get("summary", "")), model=config.model or client.provider.model)
    except (LlmError, ValueError, TypeError, KeyError) as exc:
        LOG.warning("naturalness: grading failed (%s); no result", exc)
        return None
