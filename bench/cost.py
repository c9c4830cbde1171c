"""Cost per 1,000 turns: metered usage from the stored turns x dated price tables in ``datasets/pricing/``.

A price table is one YAML file per vendor (``PriceTable``): it names the adapters it applies to and holds one
or more plans (a model or product tier); every price carries its unit, effective date, source and a note
(``UNVERIFIED`` when the figure is second-hand). Prices never live in code.

Meters (columns of a turn record) and how they are billed:

- ``input_text_tokens``: billed net of ``cached_input_tokens`` (OpenAI counts cached tokens inside the input
  count); cached tokens are billed at the ``cached_input_tokens`` rate. The record does not split cached
  tokens into text and audio, so they are treated as cached text (the cached prefix is instructions and
  passages).
- ``output_text_tokens``, ``input_audio_tokens``, ``output_audio_tokens``: per token.
- ``billed_minutes``: per billed minute as the adapter recorded it. For the per-minute vendors (Deepgram Voice
  Agent, ElevenLabs Agents, Vapi, Retell) that is the call's duration as heard: the line stays open while the
  answer plays, so an adapter meters connect → the end of the last answer's playout (audio played in real time in
  arrival order; in audio runs the caller's speech is on the line too), plus the agent's configured endpointing per
  text turn (``adapters/_kit/call_meter.py``) — never the socket's open time alone, which ends right after the last
  audio byte arrives and favoured per-minute vendors several-fold over per-token ones. Where a record has both,
  the billed minutes are never fewer than its ``output_audio_seconds`` / 60.
- ``input_audio_minutes``: ``input_audio_seconds / 60`` (speech-to-text priced per audio minute).
- ``turn``: a flat price per executed turn (0 for the local deterministic stacks).

Every cost figure names its basis: ``billing_basis`` (``per token``, ``per call minute``, ...) and, where a plan
says how its meter is taken, ``basis_note``; ``CostSummary.basis`` carries both into ``summary.json`` and the
report, and ``CostSummary.vendor_reported_basis`` names the vendor's own figure.

A turn is *metered* when at least one meter its plan prices is present on the record; cost per 1,000 turns is
``1000 x total cost / metered turns``. The vendor-reported cost (where an API returns one) is averaged the
same way over the turns that carry it and shown beside the metered figure, never instead of it.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Literal, get_args

import numpy as np
import pandas as pd
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from bench.errors import Problem, ValidationFailed
from bench.paths import shipped

PRICING_DIR = shipped("pricing")  # package data (bench.paths)

Meter = Literal[
    "input_text_tokens",
    "cached_input_tokens",
    "output_text_tokens",
    "input_audio_tokens",
    "output_audio_tokens",
    "billed_minutes",
    "input_audio_minutes",
    "turn",
]
METERS: tuple[str, ...] = get_args(Meter)
_UNITS: dict[str, float] = {"1M tokens": 1_000_000, "minute": 1, "turn": 1}
_DATE = re.compile(r"^\d{4}(-\d{2}(-\d{2})?)?$")


class Price(BaseModel):
    """One price: ``usd`` per ``unit`` of ``meter`` from ``effective_date`` (ISO 8601, may be partial)."""

    model_config = ConfigDict(extra="forbid")

    meter: Meter
    usd: float = Field(ge=0)
    unit: Literal["1M tokens", "minute", "turn"]
    effective_date: str
    source: str = Field(min_length=1)
    note: str = ""

    @field_validator("effective_date")
    @classmethod
    def _iso_date(cls, value: str) -> str:
        if not _DATE.match(value):
            raise ValueError("expected an ISO 8601 date: YYYY, YYYY-MM or YYYY-MM-DD")
        return value

    @property
    def unverified(self) -> bool:
        return "UNVERIFIED" in self.note

    @property
    def usd_per_meter_unit(self) -> float:
        return self.usd / _UNITS[self.unit]


class Plan(BaseModel):
    """A priced product or model (``gpt-realtime-mini``); ``aliases`` match a system's configured model."""

    model_config = ConfigDict(extra="forbid")

    id: str
    description: str = ""
    aliases: list[str] = Field(default_factory=list)
    prices: list[Price] = Field(min_length=1)
    note: str = ""
    #: the billing basis by name (``per call minute``); default: from the meters its prices use
    basis: str = ""
    #: how the basis is metered (e.g. what a per-minute vendor's billed minute is measured from)
    basis_note: str = ""

    @property
    def pricing_date(self) -> str:
        """The newest effective date among the plan's prices (the date the figures hold for)."""
        return max(p.effective_date for p in self.prices)

    @property
    def unverified(self) -> bool:
        return any(p.unverified for p in self.prices) or "UNVERIFIED" in self.note

    @property
    def sources(self) -> list[str]:
        return sorted({p.source for p in self.prices})

    def rate(self, meter: str) -> float | None:
        for price in self.prices:
            if price.meter == meter:
                return price.usd_per_meter_unit
        return None


class PriceTable(BaseModel):
    """One vendor's price file."""

    model_config = ConfigDict(extra="forbid")

    vendor: str
    currency: Literal["USD"] = "USD"
    adapters: list[str] = Field(min_length=1)
    default_plan: str
    mode_plans: dict[str, str] = Field(default_factory=dict, description="plan per system mode, e.g. local")
    plans: list[Plan] = Field(min_length=1)

    def plan(self, plan_id: str) -> Plan | None:
        for plan in self.plans:
            if plan.id == plan_id or plan_id in plan.aliases:
                return plan
        return None


class ResolvedPlan(BaseModel):
    """The plan a system was priced with, as shown in reports."""

    vendor: str
    plan_id: str
    pricing_date: str
    sources: list[str]
    unverified: bool
    note: str
    how_chosen: str
    #: the billing basis with how it is metered (``billing_basis_label``)
    basis: str = ""


def load_price_tables(directory: Path = PRICING_DIR) -> list[PriceTable]:
    """Every ``*.yaml`` price table in ``directory`` (exit 2 naming file and field on a bad table)."""
    return list(_load_price_tables(directory.resolve()))


@lru_cache(maxsize=4)
def _load_price_tables(directory: Path) -> tuple[PriceTable, ...]:
    tables: list[PriceTable] = []
    problems: list[Problem] = []
    for path in sorted(directory.glob("*.yaml")):
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
            table = PriceTable.model_validate(data)
        except yaml.YAMLError as exc:
            problems.append(Problem(str(path), "-", "-", f"invalid YAML: {exc}"))
            continue
        except ValidationError as exc:
            problems.extend(
                Problem(str(path), str(data.get("vendor", "-")), ".".join(map(str, e["loc"])), e["msg"])
                for e in exc.errors()
            )
            continue
        if table.plan(table.default_plan) is None:
            problems.append(
                Problem(str(path), table.vendor, "default_plan", f"no plan {table.default_plan!r}")
            )
        for mode, plan_id in table.mode_plans.items():
            if table.plan(plan_id) is None:
                problems.append(
                    Problem(str(path), table.vendor, f"mode_plans.{mode}", f"no plan {plan_id!r}")
                )
        tables.append(table)
    if problems:
        raise ValidationFailed(problems)
    return tuple(tables)


def resolve_plan(
    adapter: str, mode: str, details: dict | None = None, tables: list[PriceTable] | None = None
) -> tuple[PriceTable, Plan, str] | None:
    """The price plan for a system: an explicit ``pricing_plan`` ("vendor/plan" or "plan") in the system's
    details or options wins; then a configured ``model`` matching a plan id or alias; then the table's plan
    for the system's mode; then the table's default plan. None when no table covers the adapter.
    """
    tables = load_price_tables() if tables is None else tables
    details = details or {}
    options = details.get("options")
    if not isinstance(options, dict):
        options = {}
    explicit = details.get("pricing_plan") or options.get("pricing_plan")
    if explicit:
        vendor, _, plan_id = str(explicit).rpartition("/")
        for table in tables:
            if vendor and table.vendor != vendor:
                continue
            plan = table.plan(plan_id)
            if plan is not None and (vendor or adapter in table.adapters):
                return table, plan, f"pricing_plan {explicit!r}"
    candidates = [t for t in tables if adapter in t.adapters]
    if not candidates:
        return None
    table = candidates[0]
    model = details.get("model") or options.get("model")
    if model:
        plan = table.plan(str(model))
        if plan is not None:
            return table, plan, f"model {model!r}"
    if mode in table.mode_plans:
        plan = table.plan(table.mode_plans[mode])
        if plan is not None:
            return table, plan, f"{mode} mode"
    plan = table.plan(table.default_plan)
    assert plan is not None  # checked when loading
    return table, plan, "default plan"


def describe(table: PriceTable, plan: Plan, how_chosen: str) -> ResolvedPlan:
    notes = [plan.note] + [p.note for p in plan.prices if p.note]
    return ResolvedPlan(
        vendor=table.vendor,
        plan_id=plan.id,
        pricing_date=plan.pricing_date,
        sources=plan.sources,
        unverified=plan.unverified,
        note="; ".join(dict.fromkeys(n for n in notes if n)),
        how_chosen=how_chosen,
        basis=billing_basis_label(plan),
    )


def _meter_frame(turns: pd.DataFrame) -> pd.DataFrame:
    """Meter quantities per turn (NaN where the record has no figure)."""

    def col(name: str) -> pd.Series:
        if name in turns.columns:
            return pd.to_numeric(turns[name], errors="coerce").astype(float)
        return pd.Series(np.nan, index=turns.index, dtype=float)

    cached = col("cached_input_tokens")
    text_in = col("input_text_tokens")
    # a billed call lasts at least as long as the answer it played (records from before the call meter, or a
    # vendor's own minutes cut short by an early hang-up)
    billed = col("billed_minutes")
    billed = billed.where(billed.isna(), np.fmax(billed, col("output_audio_seconds") / 60.0))
    return pd.DataFrame(
        {
            "input_text_tokens": (text_in - cached.fillna(0)).clip(lower=0),
            "cached_input_tokens": cached,
            "output_text_tokens": col("output_text_tokens"),
            "input_audio_tokens": col("input_audio_tokens"),
            "output_audio_tokens": col("output_audio_tokens"),
            "billed_minutes": billed,
            "input_audio_minutes": col("input_audio_seconds") / 60.0,
            "turn": pd.Series(1.0, index=turns.index),
        },
        index=turns.index,
    )


def turn_costs(turns: pd.DataFrame, plan: Plan) -> pd.Series:
    """Metered cost in USD per turn under ``plan`` (NaN for a turn that has none of the plan's meters)."""
    meters = _meter_frame(turns)
    total = pd.Series(0.0, index=turns.index)
    metered = pd.Series(False, index=turns.index)
    for price in plan.prices:
        quantity = meters[price.meter]
        total = total + quantity.fillna(0) * price.usd_per_meter_unit
        metered = metered | quantity.notna()
    return total.where(metered)


_BASIS = {"billed_minutes": "per minute", "input_audio_minutes": "per audio minute", "turn": "per turn"}


def billing_basis(plan: Plan) -> str:
    """How ``plan`` bills, in words: its ``basis``, else from the meters its prices use — ``per token``, ``per
    minute``, ``per audio minute``, ``per turn`` (joined with `` + `` when it mixes them)."""
    if plan.basis:
        return plan.basis
    kinds = [_BASIS.get(p.meter, "per token") for p in plan.prices]
    return " + ".join(dict.fromkeys(kinds))


def billing_basis_label(plan: Plan) -> str:
    """The basis with how it is metered: ``per call minute (the call's duration as heard: ...)``."""
    basis = billing_basis(plan)
    return f"{basis} ({plan.basis_note})" if plan.basis_note else basis


#: what a vendor-reported cost is
VENDOR_REPORTED_BASIS = "vendor-reported: the cost the vendor's API returned for the conversation"


class CostSummary(BaseModel):
    """Cost per 1,000 turns for one system, with what it was computed from."""

    plan: ResolvedPlan | None
    n_turns: int
    n_metered: int
    per_1000_turns_usd: float | None
    vendor_reported_n: int
    vendor_reported_per_1000_turns_usd: float | None
    note: str = ""
    #: the billing basis of ``per_1000_turns_usd`` (and how it is metered); "unpriced" without a plan
    basis: str = "unpriced"
    vendor_reported_basis: str = VENDOR_REPORTED_BASIS


def summarize_cost(
    turns: pd.DataFrame,
    adapter: str,
    mode: str,
    details: dict | None = None,
    tables: list[PriceTable] | None = None,
) -> tuple[CostSummary, pd.Series]:
    """Cost summary and per-turn metered cost for one system's turns."""
    vendor = pd.to_numeric(turns.get("vendor_cost_usd", pd.Series(dtype=float)), errors="coerce").dropna()
    vendor_per_1000 = float(vendor.mean() * 1000) if len(vendor) else None
    resolved = resolve_plan(adapter, mode, details, tables)
    if resolved is None:
        costs = pd.Series(np.nan, index=turns.index)
        return CostSummary(
            plan=None,
            n_turns=len(turns),
            n_metered=0,
            per_1000_turns_usd=None,
            vendor_reported_n=len(vendor),
            vendor_reported_per_1000_turns_usd=vendor_per_1000,
            note=f"no price table covers adapter {adapter!r}",
        ), costs
    table, plan, how = resolved
    costs = turn_costs(turns, plan)
    metered = costs.dropna()
    per_1000 = float(metered.sum() / len(metered) * 1000) if len(metered) else None
    note = "" if len(metered) else "no metered usage recorded for this plan's meters"
    described = describe(table, plan, how)
    return CostSummary(
        plan=described,
        basis=described.basis,
        n_turns=len(turns),
        n_metered=len(metered),
        per_1000_turns_usd=per_1000,
        vendor_reported_n=len(vendor),
        vendor_reported_per_1000_turns_usd=vendor_per_1000,
        note=note,
    ), costs
