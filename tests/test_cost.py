"""Cost per 1,000 turns: price tables, plan resolution and the arithmetic against hand-computed cases."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bench.cost import (
    Plan,
    Price,
    load_price_tables,
    resolve_plan,
    summarize_cost,
    turn_costs,
)
from bench.errors import ValidationFailed


def _tables():
    return load_price_tables()


def test_every_price_is_dated_and_sourced_and_matches_the_protocol_notes() -> None:
    tables = {t.vendor: t for t in _tables()}
    assert {"openai", "deepgram", "retell", "vapi", "elevenlabs", "inhouse", "baseline"} <= set(tables)
    for table in tables.values():
        for plan in table.plans:
            for price in plan.prices:
                assert price.effective_date and price.source
    gpt = tables["openai"].plan("gpt-realtime-1.5")
    assert gpt is not None
    assert {p.meter: p.usd for p in gpt.prices} == {
        "input_text_tokens": 4.0,
        "cached_input_tokens": 0.40,
        "output_text_tokens": 16.0,
        "input_audio_tokens": 32.0,
        "output_audio_tokens": 64.0,
    }
    mini = tables["openai"].plan("gpt-realtime-mini")
    assert mini is not None and mini.unverified  # the mini cached rates are marked UNVERIFIED
    for vendor in ("retell", "vapi", "elevenlabs"):
        assert tables[vendor].plan(tables[vendor].default_plan).unverified
    assert tables["deepgram"].plan("voice-agent").rate("billed_minutes") == pytest.approx(0.075)
    local = tables["inhouse"].plan("local-reference")
    assert local.rate("turn") == 0.0 and "local deterministic stack" in local.prices[0].note


def test_token_cost_hand_computed() -> None:
    plan = next(t for t in _tables() if t.vendor == "openai").plan("gpt-realtime-1.5")
    turns = pd.DataFrame(
        {
            "input_text_tokens": [1000, 1000, None],
            "cached_input_tokens": [200, 200, None],
            "output_text_tokens": [500, 500, None],
            "input_audio_tokens": [0, 0, None],
            "output_audio_tokens": [3000, 3000, None],
        }
    )
    costs = turn_costs(turns, plan)
    # 800 text in x $4/M + 200 cached x $0.40/M + 500 text out x $16/M + 3000 audio out x $64/M
    expected = 800 * 4 / 1e6 + 200 * 0.40 / 1e6 + 500 * 16 / 1e6 + 3000 * 64 / 1e6
    assert expected == pytest.approx(0.20328)
    assert costs.iloc[0] == pytest.approx(expected)
    assert np.isnan(costs.iloc[2])  # nothing metered on that turn
    summary, _ = summarize_cost(turns, "openai_realtime", "live")
    assert summary.n_metered == 2
    assert summary.per_1000_turns_usd == pytest.approx(203.28)
    assert summary.plan is not None and summary.plan.pricing_date == "2026"


def test_per_minute_cost_and_vendor_reported_beside_it() -> None:
    turns = pd.DataFrame({"billed_minutes": [1.5, 0.5], "vendor_cost_usd": [0.12, None]})
    summary, costs = summarize_cost(turns, "retell", "live")
    assert list(costs) == pytest.approx([0.105, 0.035])  # $0.07 per minute
    assert summary.per_1000_turns_usd == pytest.approx(70.0)  # (0.105 + 0.035) / 2 * 1000
    assert summary.vendor_reported_n == 1
    assert summary.vendor_reported_per_1000_turns_usd == pytest.approx(120.0)
    assert summary.plan is not None and summary.plan.unverified


def test_local_reference_stack_costs_nothing_with_a_note() -> None:
    turns = pd.DataFrame({"answer": ["a", "b", "c"]})
    summary, costs = summarize_cost(turns, "inhouse", "local")
    assert summary.per_1000_turns_usd == 0.0 and summary.n_metered == 3
    assert summary.plan is not None and "local deterministic stack" in summary.plan.note
    assert summarize_cost(turns, "no_such_adapter", "live")[0].plan is None


def test_plan_resolution_order() -> None:
    tables = _tables()
    _, plan, how = resolve_plan(
        "openai_realtime", "live", {"pricing_plan": "openai/gpt-realtime-mini"}, tables
    )
    assert plan.id == "gpt-realtime-mini" and "pricing_plan" in how
    _, plan, how = resolve_plan("openai_realtime", "live", {"options": {"model": "gpt-realtime"}}, tables)
    assert plan.id == "gpt-realtime-1.5" and "model" in how  # matched through the alias
    _, plan, how = resolve_plan("generic_rag", "local", {}, tables)
    assert plan.id == "local-generic-rag" and how == "local mode"
    _, plan, how = resolve_plan("livekit_baseline", "live", {}, tables)
    assert plan.id == "gpt-4o-mini" and how == "default plan"
    assert resolve_plan("websocket", "live", {}, tables) is None


def test_a_bad_price_table_names_file_and_field(tmp_path: Path) -> None:
    (tmp_path / "broken.yaml").write_text(
        "vendor: acme\nadapters: [acme]\ndefault_plan: x\nplans:\n  - id: x\n    prices:\n"
        "      - {meter: billed_minutes, usd: 0.1, unit: minute, effective_date: 'June 2025', source: s}\n",
        encoding="utf-8",
    )
    with pytest.raises(ValidationFailed) as info:
        load_price_tables(tmp_path)
    message = str(info.value)
    assert "broken.yaml" in message and "effective_date" in message


def test_price_units() -> None:
    price = Price(meter="output_audio_tokens", usd=64, unit="1M tokens", effective_date="2026", source="s")
    assert price.usd_per_meter_unit == pytest.approx(64e-6)
    plan = Plan(
        id="p",
        prices=[
            price,
            Price(
                meter="billed_minutes",
                usd=0.1,
                unit="minute",
                effective_date="2025-06-01",
                source="s",
                note="UNVERIFIED",
            ),
        ],
    )
    assert plan.pricing_date == "2026" and plan.unverified


@pytest.mark.parametrize("adapter", ["deepgram_agent", "elevenlabs_agent", "vapi", "retell"])
def test_per_minute_vendors_name_their_basis_as_the_call_minute(adapter: str) -> None:
    summary, _ = summarize_cost(pd.DataFrame({"billed_minutes": [0.2]}), adapter, "live")
    assert summary.basis.startswith("per call minute (") and summary.plan is not None
    assert summary.plan.basis == summary.basis and "vendor-reported" in summary.vendor_reported_basis


def test_every_cost_figure_names_its_basis() -> None:
    token, _ = summarize_cost(pd.DataFrame({"output_audio_tokens": [100]}), "openai_realtime", "live")
    local, _ = summarize_cost(pd.DataFrame({"answer": ["a"]}), "inhouse", "local")
    unpriced, _ = summarize_cost(pd.DataFrame({"answer": ["a"]}), "no_such_adapter", "live")
    assert (token.basis, local.basis, unpriced.basis) == ("per token", "per turn", "unpriced")
    assert '"basis":"per token"' in token.model_dump_json()  # what summary.json carries


def test_billed_minutes_are_never_fewer_than_the_answer_audio() -> None:
    """A stored record metered from socket time (1.54 s against 7.31 s of agent audio) is billed for the audio."""
    turns = pd.DataFrame({"billed_minutes": [1.54 / 60, 10 / 60, None], "output_audio_seconds": [7.31, 7.31, 7.31]})
    costs = turn_costs(turns, next(t for t in _tables() if t.vendor == "deepgram").plan("voice-agent"))
    assert list(costs[:2]) == pytest.approx([7.31 / 60 * 0.075, 10 / 60 * 0.075]) and np.isnan(costs.iloc[2])


def test_an_emulated_deepgram_run_bills_at_least_the_agent_audio(tmp_path: Path) -> None:
    """Through the whole run path (engine, store, summary): Deepgram's billed seconds per turn are at least its
    output audio seconds, although the emulator sends the audio as fast as it can, and summary.json names the
    basis."""
    import json

    import yaml

    from bench.cli import main
    from bench.store.sqlite import turns_dataframe

    config = {"store": str(tmp_path / "store.sqlite"), "reports_dir": str(tmp_path / "reports"),
              "systems": [{"id": "dg", "adapter": "deepgram_agent", "mode": "emulated"}]}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    assert main(["run", "--config", str(path), "--limit", "3", "--trials", "1", "--no-progress"]) == 0
    turns = turns_dataframe(tmp_path / "store.sqlite")
    assert len(turns) == 3 and (turns["output_audio_seconds"] > 0).all()
    assert (turns["billed_minutes"] * 60.0 >= turns["output_audio_seconds"]).all()
    (summary_file,) = (tmp_path / "reports").glob("*/summary.json")
    cost = json.loads(summary_file.read_text(encoding="utf-8"))["systems"][0]["cost"]
    assert cost["basis"].startswith("per call minute") and cost["per_1000_turns_usd"] > 0
