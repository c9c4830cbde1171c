"""Repeat trials: pass^k, pass@k and churn (bench.metrics.trials) — one implementation for simulations and golden
runs — and where golden runs show them: summary.json, report.md, report.html, the gate's output and its JUnit file."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pandas as pd
import pytest

from bench.gate import evaluate_gate, write_junit
from bench.metrics import trials
from bench.records import TurnRecord
from bench.store import RunInfo, Store, SystemInfo

ANSWER = "Thank you for calling, goodbye."


def test_the_simulation_uses_the_same_implementation() -> None:
    from bench.simulation import verdicts

    assert verdicts.pass_power_k is trials.pass_power_k and verdicts.pass_at_k is trials.pass_at_k
    assert verdicts.aggregate is trials.aggregate


@pytest.mark.parametrize(("results", "power", "at", "churn"), [
    ([True, True, True], True, True, False),
    ([False, False, False], False, False, False),
    ([True, False, True], False, True, True),
    ([], False, False, False),
])
def test_per_item_figures(results, power, at, churn) -> None:
    assert (trials.pass_power_k(results), trials.pass_at_k(results), trials.churned(results)) == (power, at, churn)
    assert trials.aggregate(results) == {"trial_count": len(results), "passed_trials": sum(results),
                                         "pass_at_k": at, "pass_power_k": power}


def _frame(rows: list[tuple[str, int, bool, bool | None]]) -> pd.DataFrame:
    """(entry, trial, executed, verdict) rows as a scored frame of one system."""
    return pd.DataFrame({
        "entry_id": [r[0] for r in rows], "trial": [r[1] for r in rows], "in_golden": True,
        "scored": [r[2] for r in rows],
        "passed_strict": pd.array([r[3] for r in rows], dtype="boolean"),
    })


def test_stability_counts_complete_entries_only() -> None:
    frame = _frame([
        ("steady", 0, True, True), ("steady", 1, True, True), ("steady", 2, True, True),
        ("wrong", 0, True, False), ("wrong", 1, True, False), ("wrong", 2, True, False),
        ("flaky", 0, True, True), ("flaky", 1, True, False), ("flaky", 2, True, True),
        ("broken", 0, True, True), ("broken", 1, False, None), ("broken", 2, True, True),
        ("unjudged", 0, True, True), ("unjudged", 1, True, None), ("unjudged", 2, True, True),
        ("short", 0, True, True),  # a run cut short (cost cap): one of three trials
    ])
    result = trials.trial_stability(frame, "strict", 3)
    assert (result.complete_entries, result.incomplete_entries) == (3, 3)
    assert (result.pass_power_k.k, result.pass_power_k.n) == (1, 3)
    assert (result.pass_at_k.k, result.churn.k, result.churned_entries) == (2, 1, ["flaky"])
    assert result.describe() == "pass^3 0.333 (1/3 entries) · churn 0.333 (1/3) · 3 incomplete entries left out"
    per_entry = trials.entry_trials(frame, "strict", 3).set_index("entry_id")
    assert per_entry.loc["flaky", "passed_trials"] == 2 and not per_entry.loc["broken", "complete"]


def test_one_trial_has_no_churn_and_no_entries_is_said() -> None:
    single = trials.trial_stability(_frame([("a", 0, True, True), ("b", 0, True, False)]), "strict", 1)
    assert single.churn is None and single.pass_power_k.rate == 0.5
    assert single.describe().endswith("churn n/a (one trial)")
    empty = trials.trial_stability(_frame([]), "strict", 3)
    assert empty.complete_entries == 0 and "no entry has all 3 trials" in empty.describe()


@pytest.fixture
def three_trial_run(golden, tmp_path) -> tuple[Store, dict[str, str]]:
    """A stored run of 3 trials: one entry passes every trial, one fails every trial, one churns."""
    store = Store(tmp_path / "s.sqlite")
    store.create_run(RunInfo(run_id="r", created_at="t", finished_at=None, status="completed",
                             dataset_path=golden.path, dataset_sha256=golden.sha256, trials=3,
                             systems=[SystemInfo(id="inhouse", adapter="inhouse", mode="local", role="reference")],
                             config={"criteria": "seed003"}, harness_version="t"))
    by_id = golden.by_id()
    roles = {"steady": "T-001", "wrong": "T-005", "flaky": "T-013"}  # farewell, out_of_scope, clarify (English)
    said = {"steady": ["farewell"] * 3, "wrong": ["answered"] * 3, "flaky": ["clarify", "answered", "clarify"]}
    for role, entry_id in roles.items():
        assert by_id[entry_id].language == "en"
        for trial, intent in enumerate(said[role]):
            store.record_turn(TurnRecord(run_id="r", system_id="inhouse", entry_id=entry_id, trial=trial,
                                         status="succeeded", answer=ANSWER, conversational_intent=intent))
    return store, roles


def test_the_gate_prints_pass_k_and_churn(three_trial_run, golden, tmp_path) -> None:
    store, roles = three_trial_run
    result = evaluate_gate(store, "r", "inhouse", golden, 0.95)
    assert result.exit_code == 3
    assert result.repeat_trials.churned_entries == [roles["flaky"]]
    assert "repeat trials (3 per entry): pass^3 0.333 (1/3 entries) · churn 0.333 (1/3)" in result.message
    out = tmp_path / "junit.xml"
    write_junit(out, store, result, golden)
    props = {p.get("name"): p.get("value") for p in ET.parse(out).getroot().iter("property")}
    assert props["trials"] == "3" and props["pass_power_k"] == "0.3333" and props["churn"] == "0.3333"


def test_summary_and_reports_show_pass_k_and_churn(three_trial_run, golden, tmp_path) -> None:
    from bench.report import write_report

    store, roles = three_trial_run
    paths = write_report(store, "r", golden, tmp_path / "report")
    summary = json.loads(paths.summary_json.read_text(encoding="utf-8"))
    repeat = summary["systems"][0]["repeat_trials"]
    assert repeat["pass_power_k"]["k"] == 1 and repeat["churn"]["k"] == 1 and repeat["complete_entries"] == 3
    markdown = (paths.summary_json.parent / "report.md").read_text(encoding="utf-8")
    assert "## Repeat trials" in markdown and "| inhouse | 33.3%" in markdown
    html = paths.html.read_text(encoding="utf-8")
    assert 'id="trials-table"' in html and f"<code>{roles['flaky']}</code>" in html
