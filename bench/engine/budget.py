"""Expected spend of a golden run (``voice-bench run --estimate``) and its cost cap (``--max-cost-usd X``).

**Estimate.** A golden conversation is one exchange. Its meters are derived from the entry's own text and stated
assumptions (``Assumptions``), then priced with the system's dated plan from ``datasets/pricing`` by the same code
and plan choice as the report's cost per 1,000 turns (``bench.cost.resolve_plan`` / ``turn_costs``):

- caller speech = the question's words at the harness's espeak-ng rate (165 words/min); audio input only;
- the answer = ``voice_expected.max_sentences`` x 12 words, spoken at 150 words/min;
- text tokens = characters / 4 (the prompt: the voice-agent instructions with the passages the engine retrieves
  for this question, plus the question in text runs), words x 4/3 (the answer, known only by its length);
- two model calls per exchange (the instructions ask for one ``set_conversational_intent`` tool call before the
  answer): the prompt and the caller's audio are billed on each, nothing cached; 20 tokens per tool call;
- audio tokens (OpenAI Realtime): 10 per second of caller audio, 20 per second of agent audio (none when the
  system's ``output_modalities`` is text only);
- connected minutes (per-minute vendors) = 1.5 s connect and hang-up + caller speech + 1 s to answer + agent
  speech, in real time.

**Who pays.** EMULATED systems are never billed: their actual is $0, and the estimate shows their list price
labelled as what they would cost live. Every other system is charged its plan (the local stacks' plans are $0 a
turn). A system no price table covers is shown unpriced and charged $0. ``--price-emulated`` charges EMULATED
systems their list price under the cap as well (a rehearsal of a live budget, offline).

**Cap.** ``CostCap.keep_going`` is the executor's ``keep_going(unit)``: it is asked once per conversation before
it starts. A conversation that costs nothing always starts. A paid one starts only when spend so far (the metered
actual of each finished conversation where its turn carries usage for the plan's meters, else its estimate; plus
the estimates of those running; plus, on ``--resume``, what the run's stored conversations cost) + its own
estimate stays within the cap. Each conversation is decided on its own, in run order, so a later, cheaper
conversation may still fit. One that does not start is not recorded: it is left for ``voice-bench run --resume``
(the cap is per invocation; the spend of earlier invocations counts against it). The command exits 4, like a
simulation the cap left unstarted (seed 000's "a trial failed to execute"), the run is stored as ``incomplete``,
and ``reports/<run>/cost-cap.json`` holds the cap, the estimate and actual spend and every conversation not started.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel

from bench.config import RunConfig, SystemConfig
from bench.cost import Plan, billing_basis, describe, load_price_tables, resolve_plan, turn_costs
from bench.dataset import GoldenEntry, GoldenSet
from bench.errors import ConfigError

#: float slack when comparing spend with the cap
_EPS = 1e-9


@dataclass(frozen=True)
class Assumptions:
    """What a golden exchange is assumed to use (see the module docstring)."""

    caller_words_per_minute: float = 165.0  # bench.audio.speech.SpeechSynthesizer's espeak-ng rate
    agent_words_per_minute: float = 150.0
    words_per_sentence: float = 12.0
    chars_per_token: float = 4.0
    tokens_per_word: float = 4.0 / 3.0
    model_calls_per_exchange: int = 2
    tool_call_tokens: float = 20.0
    input_audio_tokens_per_s: float = 10.0  # OpenAI Realtime: user audio ~ 1 token / 100 ms (vendor-protocols.md)
    output_audio_tokens_per_s: float = 20.0  # assistant audio ~ 1 token / 50 ms
    connect_s: float = 1.5
    response_s: float = 1.0

    def describe(self) -> str:
        return (f"caller speech at {self.caller_words_per_minute:g} words/min (the espeak-ng rate); answers of "
                f"max_sentences x {self.words_per_sentence:g} words spoken at {self.agent_words_per_minute:g} "
                f"words/min; text tokens = characters / {self.chars_per_token:g} (the answer: words x "
                f"{self.tokens_per_word:.3g}); {self.model_calls_per_exchange} model calls per exchange (the "
                f"intent tool call, {self.tool_call_tokens:g} tokens, then the answer), the prompt billed on each, "
                f"none cached; audio tokens {self.input_audio_tokens_per_s:g}/s in, "
                f"{self.output_audio_tokens_per_s:g}/s out; connected time = {self.connect_s:g} s connect + caller "
                f"speech + {self.response_s:g} s to answer + agent speech")


ASSUMPTIONS = Assumptions()


@dataclass(frozen=True)
class ExchangeEstimate:
    """The assumed meters of one golden exchange of one system and their price under its plan."""

    meters: dict[str, float]
    caller_s: float
    agent_s: float
    usd: float


@dataclass
class SystemPricing:
    """A system's plan, how it bills, and whether it is charged (see *Who pays*)."""

    system: SystemConfig
    plan: Plan | None
    label: str
    basis: str
    billed: bool
    charged: bool


def price_system(system: SystemConfig, *, price_emulated: bool = False) -> SystemPricing:
    """The plan of ``system`` (the report's choice: ``pricing_plan``, ``model``, mode plan, default plan)."""
    from bench.engine.registry import REGISTRY

    if system.adapter not in REGISTRY:
        raise ConfigError(f"system {system.id!r}: unknown adapter {system.adapter!r}; known: {', '.join(REGISTRY)}")
    resolved = resolve_plan(system.adapter, system.mode, {"options": system.options}, load_price_tables())
    billed = system.mode != "emulated"
    if resolved is None:
        return SystemPricing(system, None, f"no price table covers adapter {system.adapter!r}", "unpriced",
                             billed=billed, charged=False)
    table, plan, how = resolved
    info = describe(table, plan, how)
    label = f"{info.vendor}/{info.plan_id} (prices of {info.pricing_date}, {how}" + (
        ", UNVERIFIED" if info.unverified else "") + ")"
    return SystemPricing(system, plan, label, billing_basis(plan), billed=billed,
                         charged=billed or price_emulated)


def _audio_out(system: SystemConfig) -> bool:
    modalities = system.options.get("output_modalities")
    return not (isinstance(modalities, list) and "audio" not in modalities)


def estimate_exchange(pricing: SystemPricing, entry: GoldenEntry, passages: list[str], input_mode: str,
                      assumptions: Assumptions = ASSUMPTIONS) -> ExchangeEstimate:
    """Meters and list price of one golden exchange (module docstring, *Estimate*)."""
    from adapters._kit.prompts import instructions_with_passages

    a = assumptions
    audio_in = input_mode == "audio"
    caller_s = len(entry.phone_question.split()) / a.caller_words_per_minute * 60.0 if audio_in else 0.0
    answer_words = entry.voice_expected.max_sentences * a.words_per_sentence
    agent_s = answer_words / a.agent_words_per_minute * 60.0
    prompt = len(instructions_with_passages(passages)) / a.chars_per_token
    if not audio_in:
        prompt += len(entry.phone_question) / a.chars_per_token
    calls = a.model_calls_per_exchange
    meters = {
        "input_text_tokens": calls * prompt + (calls - 1) * a.tool_call_tokens,
        "cached_input_tokens": 0.0,
        "output_text_tokens": answer_words * a.tokens_per_word + (calls - 1) * a.tool_call_tokens,
        "input_audio_tokens": calls * caller_s * a.input_audio_tokens_per_s,
        "output_audio_tokens": agent_s * a.output_audio_tokens_per_s if _audio_out(pricing.system) else 0.0,
        "billed_minutes": (a.connect_s + caller_s + a.response_s + agent_s) / 60.0,
        "input_audio_seconds": caller_s,
    }
    usd = 0.0
    if pricing.plan is not None:
        usd = float(turn_costs(pd.DataFrame([meters]), pricing.plan).fillna(0.0).iloc[0])
    return ExchangeEstimate(meters, caller_s, agent_s, usd)


class RunEstimator:
    """Estimates of every (system, entry) of a run, from its config, its shared passages and its input mode."""

    def __init__(self, config: RunConfig, golden: GoldenSet, ctx: Any, input_mode: str, *,
                 price_emulated: bool = False, assumptions: Assumptions = ASSUMPTIONS):
        self.config = config
        self.input_mode = input_mode
        self.assumptions = assumptions
        self.entries = golden.by_id()
        self.ctx = ctx
        self.pricing = {s.id: price_system(s, price_emulated=price_emulated) for s in config.systems}
        self._cache: dict[tuple[str, str], ExchangeEstimate] = {}

    def exchange(self, system_id: str, entry: GoldenEntry) -> ExchangeEstimate:
        key = (system_id, entry.id)
        if key not in self._cache:
            self._cache[key] = estimate_exchange(self.pricing[system_id], entry, self.passages(system_id, entry.id),
                                                 self.input_mode, self.assumptions)
        return self._cache[key]

    def passages(self, system_id: str, entry_id: str) -> list[str]:
        """The knowledge passages the system's session gets for the entry (its context strategy's)."""
        own = getattr(self.ctx, "session_context", None)
        passages: list[str] = own(system_id, entry_id) if own is not None else self.ctx.context.get(entry_id, [])
        return passages

    def charge(self, system_id: str, entry: GoldenEntry) -> float:
        """What the cap charges for one conversation before it runs (0 for a system that is not charged)."""
        pricing = self.pricing[system_id]
        return self.exchange(system_id, entry).usd if pricing.charged else 0.0

    def actual(self, system_id: str, turns: list[Any]) -> float | None:
        """Metered cost of a conversation's turns under the system's plan; None when no turn carries usage."""
        plan = self.pricing[system_id].plan
        if plan is None or not turns:
            return None
        frame = pd.DataFrame([t.model_dump() if hasattr(t, "model_dump") else dict(t) for t in turns])
        costs = turn_costs(frame, plan).dropna()
        return float(costs.sum()) if len(costs) else None


def run_context(golden: GoldenSet, config: RunConfig) -> Any:
    """The run's ``RunContext`` without the caller's speech: the passages each system's session gets for each
    question, from the scheduler's own retrieval (local; nothing is called, nothing is synthesized)."""
    from bench.engine.scheduler import _prepare_inputs

    return asyncio.run(_prepare_inputs(golden, config, "text", "estimate", None))


# estimate -------------------------------------------------------------------------------------------------------
class SystemEstimate(BaseModel):
    system_id: str
    mode: str
    plan: str
    basis: str
    conversations: int
    turns: int
    estimate_usd: float
    billed_usd: float
    charged: bool
    mean_meters: dict[str, float]
    mean_caller_s: float
    mean_agent_s: float


class RunEstimate(BaseModel):
    input_mode: str
    entries: int
    trials: int
    already_done: int
    assumptions: str
    systems: list[SystemEstimate]
    billed_usd: float
    emulated_list_usd: float
    cap_usd: float | None = None
    cap_would_start: int | None = None
    cap_paid: int | None = None
    cap_spent_before_usd: float = 0.0


_SHOWN = {"input_audio_minutes": "input_audio_seconds"}
_METER_LABELS = {"input_text_tokens": "input text tokens", "cached_input_tokens": "cached input tokens",
                 "output_text_tokens": "output text tokens", "input_audio_tokens": "input audio tokens",
                 "output_audio_tokens": "output audio tokens", "billed_minutes": "connected minutes",
                 "input_audio_seconds": "seconds of caller audio"}


def run_order(config: RunConfig, golden: GoldenSet, done: set[tuple[str, str, int]]) -> list[Any]:
    """The run's conversations in the order the scheduler hands them to the executor (round-robin by system)."""
    from bench.engine.scheduler import GoldenUnit, _interleave

    per_system = {s.id: [GoldenUnit(s.id, tuple(turns), trial, conversation_id) for trial in range(config.trials)
                         for conversation_id, turns in golden.plan() if (s.id, conversation_id, trial) not in done]
                  for s in config.systems}
    return _interleave(per_system)


def estimate_run(config: RunConfig, golden: GoldenSet, input_mode: str, *,
                 done: set[tuple[str, str, int]] | None = None, price_emulated: bool = False,
                 cap_usd: float | None = None, ctx: Any | None = None,
                 stored_turns: list[Any] | None = None) -> RunEstimate:
    """The expected spend of the conversations of ``config`` x ``golden`` not in ``done``; with ``cap_usd``, how
    many would start under the cap if every conversation cost its estimate (after what ``stored_turns``, the
    resumed run's, cost)."""
    ctx = run_context(golden, config) if ctx is None else ctx
    estimator = RunEstimator(config, golden, ctx, input_mode, price_emulated=price_emulated)
    done = done or set()
    units = run_order(config, golden, done)
    systems = []
    for system in config.systems:
        pricing = estimator.pricing[system.id]
        mine = [u for u in units if u.system_id == system.id]
        estimates = [estimator.exchange(system.id, entry) for u in mine for entry in u.turns]
        n = max(len(estimates), 1)
        total = sum(e.usd for e in estimates)
        # the mean of each meter the plan prices (speech-to-text minutes shown as seconds of caller audio)
        priced = [_SHOWN.get(p.meter, p.meter) for p in (pricing.plan.prices if pricing.plan else [])]
        means = {m: sum(e.meters[m] for e in estimates) / n for m in dict.fromkeys(priced) if m in _METER_LABELS}
        systems.append(SystemEstimate(
            system_id=system.id, mode=system.mode, plan=pricing.label, basis=pricing.basis,
            conversations=len(mine), turns=len(estimates), estimate_usd=round(total, 6),
            billed_usd=round(total if pricing.billed else 0.0, 6), charged=pricing.charged, mean_meters=means,
            mean_caller_s=sum(e.caller_s for e in estimates) / n, mean_agent_s=sum(e.agent_s for e in estimates) / n))
    result = RunEstimate(
        input_mode=input_mode, entries=len(golden.entries), trials=config.trials, already_done=len(done),
        assumptions=estimator.assumptions.describe(), systems=systems,
        billed_usd=round(sum(s.billed_usd for s in systems), 6),
        emulated_list_usd=round(sum(s.estimate_usd for s in systems if s.mode == "emulated"), 6))
    if cap_usd is not None:
        cap = CostCap(cap_usd, price_emulated=price_emulated)
        cap.prepare(config, golden, ctx, input_mode, stored_turns or [])
        paid = [u for u in units if any(estimator.charge(u.system_id, e) > 0 for e in u.turns)]
        for unit in paid:  # each one finishes at its estimate before the next is decided
            if cap.keep_going(unit):
                cap.spent += cap.reserved.pop(unit.key)
        result.cap_usd, result.cap_would_start, result.cap_paid = cap_usd, cap.started, len(paid)
        result.cap_spent_before_usd = round(cap.spent_before, 6)
    return result


def _usd(value: float) -> str:
    """Dollars with enough decimals to read a fraction of a cent."""
    if value == 0:
        return "$0"
    return f"${value:,.6f}" if value < 0.01 else f"${value:,.4f}" if value < 1000 else f"${value:,.2f}"


def format_estimate(estimate: RunEstimate) -> str:
    """The estimate as the lines ``voice-bench run --estimate`` prints."""
    lines = [f"estimated spend (price tables in datasets/pricing; nothing was called): {estimate.entries} entries x "
             f"{estimate.trials} trial{'s' if estimate.trials != 1 else ''}, --input {estimate.input_mode}"
             + (f", {estimate.already_done} conversations already done" if estimate.already_done else ""),
             f"assumptions: {estimate.assumptions}", ""]
    for s in estimate.systems:
        lines.append(f"{s.system_id} [{s.mode.upper()}]: {s.conversations} conversations, {s.turns} turns")
        lines.append(f"  plan: {s.plan}; billed {s.basis}")
        if s.mean_meters:
            per_turn = ", ".join(f"{v:,.4g} {_METER_LABELS.get(k, k)}" for k, v in s.mean_meters.items())
            lines.append(f"  per turn (mean): {per_turn}; agent speech {s.mean_agent_s:.1f} s"
                         + (f", caller speech {s.mean_caller_s:.1f} s" if estimate.input_mode == "audio" else ""))
        per_conv = s.estimate_usd / s.conversations if s.conversations else 0.0
        if s.mode == "emulated":
            lines.append(f"  actual: $0 (EMULATED: nothing is billed); list price {_usd(s.estimate_usd)} "
                         f"({_usd(per_conv)} a conversation) is what it would cost live (EMULATED)")
        elif s.basis == "unpriced":
            lines.append("  estimate: unpriced (no price table; not counted against --max-cost-usd)")
        else:
            lines.append(f"  estimate: {_usd(s.estimate_usd)} ({_usd(per_conv)} a conversation)")
        lines.append(f"  counts against --max-cost-usd: {'yes' if s.charged and s.estimate_usd > 0 else 'no'}")
    lines.append("")
    lines.append(f"total: {_usd(estimate.billed_usd)} expected spend (systems that are billed); "
                 f"{_usd(estimate.emulated_list_usd)} list price of the EMULATED systems (not billed)")
    if estimate.cap_usd is not None:
        before = (f", after the {_usd(estimate.cap_spent_before_usd)} the run's stored conversations cost"
                  if estimate.cap_spent_before_usd else "")
        lines.append(f"under --max-cost-usd {estimate.cap_usd:g}: {estimate.cap_would_start} of {estimate.cap_paid} "
                     f"paid conversations would start (if each costs its estimate{before})")
    return "\n".join(lines)


# the cap --------------------------------------------------------------------------------------------------------
class NotStarted(BaseModel):
    system_id: str
    entry_id: str
    trial: int
    estimate_usd: float


class CapSummary(BaseModel):
    """What the cap did in one invocation (``cost-cap.json``)."""

    cap_usd: float
    price_emulated: bool
    spent_before_usd: float
    estimate_usd: float
    actual_usd: float
    actual_unknown: int
    charged_usd: float
    started: int
    not_started: list[NotStarted]
    not_started_by_system: dict[str, int]
    plans: dict[str, str]


@dataclass
class CostCap:
    """The ``--max-cost-usd`` cap of one ``voice-bench run`` (module docstring, *Cap*)."""

    cap_usd: float
    price_emulated: bool = False
    assumptions: Assumptions = ASSUMPTIONS
    estimator: RunEstimator | None = None
    spent: float = 0.0
    spent_before: float = 0.0
    reserved: dict[tuple[str, str, int], float] = field(default_factory=dict)
    estimate_total: float = 0.0
    actual_total: float = 0.0
    actual_unknown: int = 0
    started: int = 0
    not_started: list[NotStarted] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not (isinstance(self.cap_usd, int | float) and math.isfinite(self.cap_usd) and self.cap_usd >= 0):
            raise ConfigError(f"--max-cost-usd must be a non-negative number of US dollars, not {self.cap_usd!r}")

    def prepare(self, config: RunConfig, golden: GoldenSet, ctx: Any, input_mode: str,
                stored_turns: list[Any]) -> None:
        """Price the run's systems; on ``--resume`` charge what the run's stored conversations cost: the metered
        actual where a turn carries usage, the estimate of a succeeded one without, nothing for a failed one
        without (it runs again and is charged then)."""
        self.estimator = RunEstimator(config, golden, ctx, input_mode, price_emulated=self.price_emulated,
                                      assumptions=self.assumptions)
        before = 0.0
        for turn in stored_turns:
            pricing = self.estimator.pricing.get(turn.system_id)
            if pricing is None or not pricing.charged:
                continue
            actual = self.estimator.actual(turn.system_id, [turn])
            entry = self.estimator.entries.get(turn.entry_id)
            if actual is not None:
                before += actual
            elif turn.status == "succeeded" and entry is not None:
                before += self.estimator.charge(turn.system_id, entry)
        self.spent_before = self.spent = before

    def _need(self) -> RunEstimator:
        if self.estimator is None:
            raise RuntimeError("CostCap.prepare was not called")
        return self.estimator

    def charge(self, unit: Any) -> float:
        """What the cap charges for ``unit`` before it runs: its turns' estimates (0 for a system not charged)."""
        estimator = self._need()
        return sum(estimator.charge(unit.system_id, entry) for entry in unit.turns)

    def actual(self, record: Any) -> float | None:
        """The metered actual of a finished conversation (None: unknown, its estimate is charged)."""
        return self._need().actual(record.system_id, record.turns)

    def keep_going(self, unit: Any) -> bool:
        """The executor's ``keep_going(unit)``: may this conversation start?"""
        charge = self.charge(unit)
        if charge <= 0:
            return True
        committed = self.spent + sum(self.reserved.values())
        if committed + charge > self.cap_usd + _EPS:
            self.not_started.append(NotStarted(system_id=unit.system_id, entry_id=unit.key[1],
                                               trial=unit.trial, estimate_usd=round(charge, 6)))
            return False
        self.reserved[unit.key] = charge
        self.estimate_total += charge
        self.started += 1
        return True

    def finished(self, record: Any) -> None:
        """A conversation finished (``on_result``): charge its metered actual, or its estimate when unknown."""
        key = (record.system_id, record.conversation_id, record.trial)
        estimate = self.reserved.pop(key, None)
        if estimate is None:  # not charged (free, or its system did not start)
            return
        actual = self.actual(record)
        if actual is None:
            self.actual_unknown += 1
        else:
            self.actual_total += actual
        self.spent += actual if actual is not None else estimate

    def summary(self) -> CapSummary:
        by_system: dict[str, int] = {}
        for item in self.not_started:
            by_system[item.system_id] = by_system.get(item.system_id, 0) + 1
        plans = {k: p.label for k, p in self._need().pricing.items()} if self.estimator else {}
        return CapSummary(cap_usd=self.cap_usd, price_emulated=self.price_emulated,
                          spent_before_usd=round(self.spent_before, 6), estimate_usd=round(self.estimate_total, 6),
                          actual_usd=round(self.actual_total, 6), actual_unknown=self.actual_unknown,
                          charged_usd=round(self.spent, 6), started=self.started, not_started=self.not_started,
                          not_started_by_system=by_system, plans=plans)

    def report_lines(self) -> list[str]:
        """What ``voice-bench run`` prints about the cap."""
        s = self.summary()
        counted = "billed systems" + (" and EMULATED ones at list price" if self.price_emulated else "")
        lines = [f"cost cap: ${s.cap_usd:g} ({counted}); {s.started} paid conversations started, estimate "
                 f"{_usd(s.estimate_usd)}, actual {_usd(s.actual_usd)}"
                 + (f" ({s.actual_unknown} without usage, charged their estimate)" if s.actual_unknown else "")
                 + (f"; spent before this resume {_usd(s.spent_before_usd)}" if s.spent_before_usd else "")
                 + f"; total charged {_usd(s.charged_usd)}"]
        if s.not_started:
            detail = ", ".join(f"{k}: {v}" for k, v in s.not_started_by_system.items())
            lines.append(f"not started by the cost cap: {len(s.not_started)} conversations ({detail}), estimate "
                         f"{_usd(sum(n.estimate_usd for n in s.not_started))}; not recorded, left for --resume")
        return lines

    def write(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"assumptions": asdict(self.assumptions), **self.summary().model_dump()},
                                   indent=2), encoding="utf-8")
        return path


# command line ---------------------------------------------------------------------------------------------------
def usd_option(option: str) -> Callable[[str], float]:
    """An argparse type: a finite, non-negative amount of US dollars, else exit 2 naming the option."""
    import argparse

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{option} takes an amount of US dollars, not {text!r}") from None
        if not math.isfinite(value) or value < 0:
            raise argparse.ArgumentTypeError(f"{option} must be a finite amount >= 0, not {text!r}")
        return value

    return parse


def estimate_command(config: RunConfig, golden: GoldenSet, input_mode: str, *, resume: str | None,
                     store_path: Path, cap_usd: float | None, price_emulated: bool) -> int:
    """``voice-bench run --estimate``: print the estimate (of what is left, with ``--resume``) and return 0."""
    from bench.errors import EXIT_OK

    done: set[tuple[str, str, int]] = set()
    stored: list[Any] = []
    if resume:  # the stored run was read already (its config); read what it finished (nothing is written)
        from bench.store import Store

        store = Store(store_path)
        try:
            run_id = store.get_run(resume).run_id
            done, stored = store.completed_keys(run_id), store.turns(run_id)
        finally:
            store.close()
    estimate = estimate_run(config, golden, input_mode, done=done, price_emulated=price_emulated, cap_usd=cap_usd,
                            stored_turns=stored)
    print(format_estimate(estimate))
    return EXIT_OK
