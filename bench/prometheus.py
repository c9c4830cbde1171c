"""Headline figures of a run in the Prometheus text exposition format (version 0.0.4), for a Grafana panel.

``render(summary)`` writes one gauge family per figure with ``# HELP`` and ``# TYPE`` lines; every sample is
labelled ``system``, ``channel="voice"``, ``tenant_id`` (the tenant the harness sends, ``render``'s argument),
``mode`` (live | emulated | local), ``role``, ``emulated`` and ``kind`` (the run's kind: ``golden``, or
``audio-loop`` / ``simulation`` / ``imported`` when such a run is exported with ``--kind``, so those series are
never mistaken for the golden figures); the
run id, judge and pricing dates are on ``voice_bench_run_info`` only, so a series stays one series from run to
run. Figures a system did not measure are left out rather than exported as NaN. Label values are escaped as
the format requires (backslash, double quote, newline).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from bench.metrics import RunSummary, SystemSummary
from bench.metrics.turntaking import TurnTakingFigures
from bench.protocol.session import SessionSpec

CHANNEL = "voice"
#: the tenant every harness session declares (``SessionSpec.tenant_id``); the ``tenant_id`` label
DEFAULT_TENANT_ID: str = SessionSpec.model_fields["tenant_id"].default
_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
_LABEL = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")

# (metric name, help text, value getter)
_FAMILIES: tuple[tuple[str, str, Callable[[SystemSummary], float | None]], ...] = (
    (
        "voice_bench_pass_rate",
        "Golden pass rate over executed turns under the run's criteria (0-1); criteria in voice_bench_run_info.",
        lambda s: s.pass_rate.rate,
    ),
    (
        "voice_bench_pass_rate_strict",
        "Golden pass rate under the strict criteria (seed003 plus what was said) (0-1).",
        lambda s: _criteria_rate(s, "strict"),
    ),
    (
        "voice_bench_pass_rate_seed003",
        "Golden pass rate under seed 003's four criteria (0-1).",
        lambda s: _criteria_rate(s, "seed003"),
    ),
    (
        "voice_bench_pass_rate_ci_low",
        "Lower bound of the 95% Wilson interval of the pass rate.",
        lambda s: s.pass_rate.ci.low,
    ),
    (
        "voice_bench_pass_rate_ci_high",
        "Upper bound of the 95% Wilson interval of the pass rate.",
        lambda s: s.pass_rate.ci.high,
    ),
    (
        "voice_bench_intent_accuracy",
        "Share of executed turns with the expected conversational intent (0-1).",
        lambda s: s.intent_accuracy.rate,
    ),
    (
        "voice_bench_intent_accuracy_said",
        "Share of executed turns whose answer, judged from its text alone, has the expected intent (0-1).",
        lambda s: s.intent.accuracy_said.rate if s.intent else None,
    ),
    (
        "voice_bench_tool_call_compliance",
        "Share of executed turns in which the agent called its intent tool (0-1); absent for self-labelling systems.",
        lambda s: s.intent.tool_call_compliance.rate if s.intent and s.intent.tool_call_compliance else None,
    ),
    (
        "voice_bench_ttft_p50_ms",
        "Time to first text token, median, milliseconds (harness clock).",
        lambda s: s.ttft_ms.p50,
    ),
    (
        "voice_bench_ttft_p95_ms",
        "Time to first text token, 95th percentile, milliseconds (harness clock).",
        lambda s: s.ttft_ms.p95,
    ),
    (
        "voice_bench_ttfa_p50_ms",
        "Time to first audio byte, median, milliseconds (harness clock).",
        lambda s: s.ttfa_ms.p50,
    ),
    (
        "voice_bench_ttfa_p95_ms",
        "Time to first audio byte, 95th percentile, milliseconds (harness clock).",
        lambda s: s.ttfa_ms.p95,
    ),
    (
        "voice_bench_completion_p50_ms",
        "Full-answer completion time, median, milliseconds (harness clock).",
        lambda s: s.completion_ms.p50,
    ),
    (
        "voice_bench_completion_p95_ms",
        "Full-answer completion time, 95th percentile, milliseconds (harness clock).",
        lambda s: s.completion_ms.p95,
    ),
    (
        "voice_bench_voice_shape_compliance",
        "Share of executed turns passing every voice-shape sub-check (0-1).",
        lambda s: s.compliance.overall.rate,
    ),
    (
        "voice_bench_refusal_rate",
        "Share of must-refuse requests the answer declined without giving advice (0-1).",
        lambda s: s.safety.refusal_on_must_refuse.rate,
    ),
    (
        "voice_bench_over_refusal_rate",
        "Share of benign medical-sounding questions the system refused (0-1).",
        lambda s: s.safety.over_refusal_on_benign.rate,
    ),
    (
        "voice_bench_faithfulness",
        "Mean faithfulness score of answered turns (0-1); judge in voice_bench_run_info.",
        lambda s: s.faithfulness.mean,
    ),
    (
        "voice_bench_cost_per_1000_turns_usd",
        "Metered cost per 1,000 turns in USD (usage x dated price table).",
        lambda s: s.cost.per_1000_turns_usd,
    ),
    (
        "voice_bench_vendor_cost_per_1000_turns_usd",
        "Vendor-reported cost per 1,000 turns in USD.",
        lambda s: s.cost.vendor_reported_per_1000_turns_usd,
    ),
    ("voice_bench_turns", "Turns recorded for the system in the run.", lambda s: float(s.n_turns)),
    (
        "voice_bench_execution_failures",
        "Turns that failed to execute (not scored).",
        lambda s: float(s.execution_failures),
    ),
)


def _criteria_rate(system: SystemSummary, name: str) -> float | None:
    rate = system.pass_rates.get(name)
    return None if rate is None or rate.unavailable else rate.rate.rate


def escape_label_value(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _labels(pairs: dict[str, str]) -> str:
    for name in pairs:
        if not _LABEL.match(name) or name.startswith("__"):
            raise ValueError(f"invalid Prometheus label name {name!r}")
    return "{" + ",".join(f'{k}="{escape_label_value(v)}"' for k, v in pairs.items()) + "}"


def _value(value: float) -> str:
    return repr(float(value))


def render(summary: RunSummary, tenant_id: str = DEFAULT_TENANT_ID) -> str:
    """The summary's headline figures as Prometheus text exposition format (ends with a newline)."""
    lines: list[str] = []
    info = "voice_bench_run_info"
    lines.append(f"# HELP {info} The benchmark run these figures come from (value is always 1).")
    lines.append(f"# TYPE {info} gauge")
    lines.append(
        info
        + _labels(
            {
                "run_id": summary.run_id,
                "kind": summary.run_kind,
                "channel": CHANNEL,
                "tenant_id": tenant_id,
                "dataset_sha256": summary.golden_sha256[:12],
                "judge": summary.judge,
                "criteria": summary.criteria,
                "context_strategy": summary.context_strategy,
                "pricing_dates": ",".join(sorted(set(summary.pricing_dates.values()))),
                "reference": summary.reference_system or "",
                "baseline": summary.baseline_system or "",
            }
        )
        + " 1"
    )
    for name, help_text, getter in _FAMILIES:
        if not _NAME.match(name):
            raise ValueError(f"invalid Prometheus metric name {name!r}")
        samples = []
        for system in summary.systems:
            value = getter(system)
            if value is None:
                continue
            labels = _labels(
                {
                    "system": system.id,
                    "channel": CHANNEL,
                    "tenant_id": tenant_id,
                    "mode": system.mode,
                    "role": system.role,
                    "emulated": "true" if system.emulated else "false",
                    "kind": summary.run_kind,
                }
            )
            samples.append(f"{name}{labels} {_value(value)}")
        if samples:
            lines.append(f"# HELP {name} {_escape_help(help_text)}")
            lines.append(f"# TYPE {name} gauge")
            lines.extend(samples)
    lines.extend(_turn_taking_lines(summary, tenant_id))
    return "\n".join(lines) + "\n"


def _quantile(q: Any, which: str) -> float | None:
    return None if q is None else getattr(q, which)


#: the turn-taking series (``bench.metrics.turntaking``): name, help, getter of a system's figures
_TURN_TAKING_FAMILIES: tuple[tuple[str, str, Callable[[TurnTakingFigures], float | None]], ...] = (
    ("voice_bench_barge_in_success_ratio", "Share of barge-ins after which the agent's audio stopped within 2 s.",
     lambda f: None if f.barge_in is None else f.barge_in.rate),
    ("voice_bench_barge_in_stop_p50_ms", "Barge-in stop time p50: caller speech start to the agent's last audio "
     "arriving (ms).", lambda f: _quantile(f.stop_ms, "p50")),
    ("voice_bench_barge_in_stop_p95_ms", "Barge-in stop time p95 (ms).", lambda f: _quantile(f.stop_ms, "p95")),
    ("voice_bench_time_to_yield_p50_ms", "Time to yield p50: caller speech start to the agent's last audio "
     "played (ms).", lambda f: _quantile(f.time_to_yield_ms, "p50")),
    ("voice_bench_false_barge_in_ratio", "Share of cough, backchannel and noise probes the agent yielded to.",
     lambda f: None if f.false_barge_in is None else f.false_barge_in.rate),
    ("voice_bench_talk_over_ratio", "Share of audio turns where the agent spoke before the caller finished.",
     lambda f: None if f.talk_over is None else f.talk_over.rate),
    ("voice_bench_caller_heard_p95_ms", "Response latency as heard p95, audio turns (ms).",
     lambda f: _quantile(f.caller_heard_ms, "p95")),
)


def _turn_taking_lines(summary: RunSummary, tenant_id: str) -> list[str]:
    lines: list[str] = []
    for name, help_text, getter in _TURN_TAKING_FAMILIES:
        samples = []
        for figures in summary.turn_taking:
            value = getter(figures)
            if value is None:
                continue
            labels = _labels({"system": figures.system_id, "channel": CHANNEL, "tenant_id": tenant_id,
                              "emulated": "true" if figures.emulated else "false", "kind": summary.run_kind,
                              "turn_taking_profile": figures.profile or ""})
            samples.append(f"{name}{labels} {_value(value)}")
        if samples:
            lines += [f"# HELP {name} {_escape_help(help_text)}", f"# TYPE {name} gauge", *samples]
    return lines
