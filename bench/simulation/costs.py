"""Spend of a simulation: an estimate before each conversation (for the cost cap) and the metered actual after.

The estimate prices a conservative conversation — the scenario's turn limit × a typical voice turn (``TURN_PROFILE``:
about three seconds of caller speech, six of agent speech, instructions and knowledge in the prompt) — with the
system's dated price plan (``bench.cost``: the same tables and plan choice as the golden report), plus the persona
model's and the judges' calls at their configured ``usd_per_call``. The actual cost prices the meters each recorded
turn carries under the same plan, plus the model calls that were really made. A system no price table covers costs
nothing here, and the report says so.

EMULATED systems follow ``voice-bench run``'s rule (``bench.engine.budget``): they are not billed, so they cost
nothing and count nothing against the cap, unless ``--price-emulated`` asks to charge their list price (an offline
rehearsal of a live budget; the plan label then says EMULATED).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from bench.cost import describe, resolve_plan, turn_costs
from bench.simulation.suite import Cell, SystemSetup

#: the meters of one typical exchange (used only for estimates)
TURN_PROFILE = {
    "input_text_tokens": 900,
    "cached_input_tokens": 0,
    "output_text_tokens": 60,
    "input_audio_tokens": 30,
    "output_audio_tokens": 120,
    "billed_minutes": 0.2,
    "input_audio_seconds": 3.0,
}
#: judge calls per trial per configured judge / criterion
JUDGE_CALLS_PER_ITEM = 1


@dataclass
class PricedSystem:
    setup: SystemSetup
    plan: object | None
    plan_label: str

    def turn_usd(self, meters: pd.DataFrame) -> pd.Series:
        if self.plan is None:
            return pd.Series(0.0, index=meters.index)
        return turn_costs(meters, self.plan).fillna(0.0)  # type: ignore[arg-type]


def price(setup: SystemSetup, *, price_emulated: bool = False) -> PricedSystem:
    config = setup.config
    if config.mode == "emulated" and not price_emulated:
        return PricedSystem(setup, None, "EMULATED: not billed ($0; --price-emulated charges its list price)")
    resolved = resolve_plan(config.adapter, config.mode, {"options": config.options})
    if resolved is None:
        return PricedSystem(setup, None, f"no price table covers adapter {config.adapter!r}")
    table, plan, how = resolved
    info = describe(table, plan, how)
    emulated = " at list price, EMULATED (not billed)" if config.mode == "emulated" else ""
    return PricedSystem(setup, plan, f"{info.vendor}/{info.plan_id} ({info.pricing_date}, {how}){emulated}")


def estimate_conversation(priced: PricedSystem, cell: Cell, *, persona_usd_per_call: float,
                          judge_usd_per_call: float, judge_items: int, input_mode: str) -> float:
    turns = cell.scenario.max_turns
    profile = dict(TURN_PROFILE)
    if input_mode == "text":
        profile.update(input_audio_tokens=0, input_audio_seconds=0.0)
    meters = pd.DataFrame([profile] * turns)
    system = float(priced.turn_usd(meters).sum())
    persona = persona_usd_per_call * turns
    return round(system + persona + judge_usd_per_call * judge_items * JUDGE_CALLS_PER_ITEM, 6)


def actual_conversation(priced: PricedSystem, turn_rows: list[dict], *, model_calls_usd: float) -> float:
    if not turn_rows:
        return round(model_calls_usd, 6)
    frame = pd.DataFrame(turn_rows)
    return round(float(priced.turn_usd(frame).sum()) + model_calls_usd, 6)


def persona_usd_per_call(run: Any, cell: Cell) -> float:
    """What one call of the simulated caller's model costs: the realtime persona's ``usd_per_response``, the chat
    provider's ``usd_per_call`` for synthesized and goal personas, nothing for a scripted caller."""
    if run.persona_mode == "realtime" and not cell.scenario.steps:
        return run.realtime_persona.usd_per_response if run.realtime_persona is not None else 0.0
    if run.persona_mode == "synthesized" or cell.scenario.steps:
        provider = run.providers.get(run.persona_provider)
        return provider.usd_per_call if provider is not None else 0.0
    return 0.0

