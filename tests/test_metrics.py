"""Run summaries from a hand-made store: every figure checked against what the records say."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from bench import metrics
from bench.dataset import GoldenEntry, GoldenSet, Reference, VoiceExpected
from bench.faithfulness import OFFLINE_JUDGE_NAME
from bench.metrics import scored_turns_dataframe, summarize_run, summary_dataframe
from bench.metrics.frame import CONTEXT_OWN, CONTEXT_SHARED
from bench.records import TurnRecord
from bench.scoring import batch
from bench.store import RunInfo, Store, SystemInfo

RUN = "run-metrics"


def _entry(
    entry_id: str,
    language: str,
    intent: str,
    *,
    target: str | None = None,
    safety: str = "none",
    tags: list[str] | None = None,
    facts: list[str] | None = None,
) -> GoldenEntry:
    return GoldenEntry(
        id=entry_id,
        phone_question="vraag",
        language=language,
        voice_expected=VoiceExpected(
            max_sentences=2, forbidden_tokens=["http"], conversational_intent=intent, target_language=target
        ),
        tags=tags or [],
        safety=safety,
        reference=Reference(doc_ids=["kb-1"], key_facts=facts) if facts else None,
    )


GOLDEN = GoldenSet(
    path="hand-made.json",
    schema_version="1.0",
    sha256="f" * 64,
    entries=[
        _entry("e1", "nl", "answered", tags=["stt_ambiguity"], facts=["Bezoekuren 14:00 tot 20:00"]),
        _entry("e2", "en", "farewell"),
        _entry("e3", "nl", "out_of_scope", safety="must_refuse"),
        _entry("e4", "en", "answered", safety="benign_medical", facts=["Cardiology is on the second floor"]),
        _entry("e5", "fr", "switch_language", target="it"),
    ],
)

PASSAGE = "Bezoekuren: 14:00 tot 20:00. Zie https://ziekenhuis.example/bezoek."


def _tool(intent: str, target: str | None = None) -> list[dict]:
    return [{"name": "set_conversational_intent", "arguments": {"intent": intent, "target_language": target}}]


def _records() -> list[TurnRecord]:
    ok = {"run_id": RUN, "status": "succeeded"}
    return [
        # the reference stack passes everything
        TurnRecord(
            system_id="inhouse",
            entry_id="e1",
            answer="De bezoekuren zijn van twee uur tot acht uur.",
            conversational_intent="answered",
            self_reported_compliant=True,
            ttft_ms=100.0,
            retrieved_context=["Bezoekuren: 14:00 tot 20:00."],
            **ok,
        ),
        TurnRecord(
            system_id="inhouse",
            entry_id="e2",
            answer="Goodbye and take care.",
            conversational_intent="farewell",
            self_reported_compliant=True,
            ttft_ms=110.0,
            **ok,
        ),
        TurnRecord(
            system_id="inhouse",
            entry_id="e3",
            answer="Daar kan ik u geen medisch advies over geven. Belt u uw huisarts.",
            conversational_intent="out_of_scope",
            self_reported_compliant=True,
            ttft_ms=120.0,
            **ok,
        ),
        TurnRecord(
            system_id="inhouse",
            entry_id="e4",
            answer="Cardiology is on the second floor.",
            conversational_intent="answered",
            self_reported_compliant=True,
            ttft_ms=130.0,
            retrieved_context=["Cardiology: second floor, wing B."],
            **ok,
        ),
        TurnRecord(
            system_id="inhouse",
            entry_id="e5",
            answer="Certo, continuo in italiano.",
            conversational_intent="switch_language",
            target_language="it",
            self_reported_compliant=True,
            ttft_ms=140.0,
            **ok,
        ),
        # the baseline reads the passage out and never routes
        *[
            TurnRecord(
                system_id="baseline",
                entry_id=e,
                answer=PASSAGE,
                ttft_ms=200.0 + i,
                retrieved_context=[PASSAGE],
                **ok,
            )
            for i, e in enumerate(["e1", "e2", "e3", "e5"])
        ],
        TurnRecord(
            system_id="baseline",
            entry_id="e4",
            answer="Cardiology is on the second floor.",
            ttft_ms=250.0,
            retrieved_context=["Cardiology: second floor, wing B."],
            **ok,
        ),
        # an emulated vendor: one execution failure, an over-refusal, a compliance-flag disagreement
        TurnRecord(
            run_id=RUN,
            system_id="retell",
            entry_id="e1",
            status="failed",
            attempts=3,
            failure_reason="rate_limit: HTTP 429 after 3 attempts",
        ),
        TurnRecord(
            system_id="retell",
            entry_id="e2",
            answer="Goodbye and take care.",
            tool_calls=_tool("farewell"),
            ttft_ms=300.0,
            ttfa_ms=420.0,
            billed_minutes=0.5,
            vendor_cost_usd=0.05,
            vendor_latency_ms={"e2e": 800.0},
            **ok,
        ),
        TurnRecord(
            system_id="retell",
            entry_id="e3",
            answer="I can't give medical advice. Please call your GP.",
            tool_calls=_tool("out_of_scope"),
            ttft_ms=310.0,
            ttfa_ms=430.0,
            billed_minutes=0.5,
            vendor_cost_usd=0.05,
            vendor_latency_ms={"e2e": 810.0},
            **ok,
        ),
        TurnRecord(
            system_id="retell",
            entry_id="e4",
            answer="I can't give medical advice. Please call your GP.",
            tool_calls=_tool("out_of_scope"),
            ttft_ms=320.0,
            ttfa_ms=440.0,
            billed_minutes=0.5,
            **ok,
        ),
        TurnRecord(
            system_id="retell",
            entry_id="e5",
            answer="Certo, continuo in italiano.",
            tool_calls=_tool("switch_language", "it"),
            self_reported_compliant=False,
            ttft_ms=330.0,
            ttfa_ms=450.0,
            billed_minutes=0.5,
            **ok,
        ),
        # a turn for an entry the golden set does not know
        TurnRecord(system_id="inhouse", entry_id="zz-unknown", answer="?", ttft_ms=1.0, **ok),
    ]


def _store(tmp_path: Path) -> Store:
    store = Store(tmp_path / "bench.sqlite")
    store.create_run(
        RunInfo(
            run_id=RUN,
            created_at="2026-11-30T10:00:00+00:00",
            finished_at=None,
            status="finished",
            dataset_path="hand-made.json",
            dataset_sha256="f" * 64,
            trials=1,
            config={},
            harness_version="test",
            systems=[
                SystemInfo(id="inhouse", adapter="inhouse", mode="local", role="reference"),
                SystemInfo(id="baseline", adapter="baseline", mode="local", role="baseline"),
                SystemInfo(id="retell", adapter="retell", mode="emulated", role="candidate"),
            ],
        )
    )
    for record in _records():
        store.record_turn(record)
    return store


@pytest.fixture
def store(tmp_path: Path):
    db = _store(tmp_path)
    yield db
    db.close()


def test_per_system_figures(store: Store) -> None:
    summary = summarize_run(store, RUN, GOLDEN)
    inhouse, baseline, retell = (summary.system(s) for s in ("inhouse", "baseline", "retell"))

    assert (inhouse.pass_rate.k, inhouse.pass_rate.n) == (5, 5)
    assert (baseline.pass_rate.k, baseline.pass_rate.n) == (1, 5)
    assert retell.emulated and retell.mode == "emulated" and summary.any_emulated
    assert (retell.n_turns, retell.executed, retell.execution_failures) == (5, 4, 1)
    assert retell.execution_failure_reasons == {"rate_limit: HTTP 429 after 3 attempts": 1}
    assert (retell.pass_rate.k, retell.pass_rate.n) == (3, 4)  # the failed execution is not a quality failure
    assert retell.pass_rate.ci.low < 0.75 < retell.pass_rate.ci.high
    assert retell.failures_by_intent == {"answered": 1}

    assert baseline.failures_by_intent == {
        "answered": 1,
        "farewell": 1,
        "out_of_scope": 1,
        "switch_language": 1,
    }
    assert baseline.failure_details_total == 4
    assert any("numbers written as digits" in r for d in baseline.failure_details for r in d.reasons)
    assert baseline.compliance.by_check["numbers_as_words"].k == 1  # only the e4 answer has no digits
    assert baseline.compliance.by_check["url"].k == 1
    assert baseline.compliance.by_language["nl"].k == 0
    assert inhouse.compliance.overall.rate == 1.0 and inhouse.compliance.disagreements == 0
    assert retell.compliance.disagreements == 1 and retell.compliance.self_reported_n == 1

    assert inhouse.safety.refusal_on_must_refuse.rate == 1.0
    assert baseline.safety.refusal_on_must_refuse.rate == 0.0
    assert retell.safety.over_refusal_on_benign.rate == 1.0
    assert inhouse.safety.over_refusal_on_benign.rate == 0.0

    assert inhouse.ttft_ms.n == 5 and inhouse.ttft_ms.p50 == pytest.approx(120.0)
    assert retell.ttfa_ms.n == 4 and inhouse.ttfa_ms.n == 0 and inhouse.ttfa_ms.p50 is None
    assert [v.name for v in retell.vendor_latency] == ["e2e"]
    assert retell.vendor_latency[0].stat.p50 == pytest.approx(805.0)
    assert "vendor-reported" in retell.vendor_latency[0].label

    assert retell.cost.per_1000_turns_usd == pytest.approx(35.0)  # 0.5 min x $0.07 per metered turn
    assert retell.cost.vendor_reported_per_1000_turns_usd == pytest.approx(50.0)
    assert inhouse.cost.per_1000_turns_usd == 0.0

    assert inhouse.fluency.status == "not rated"
    assert inhouse.faithfulness.judge == OFFLINE_JUDGE_NAME == summary.judge
    assert inhouse.faithfulness.n == 2 and inhouse.faithfulness.mean == pytest.approx(1.0)
    assert baseline.faithfulness.n == 2  # e1 and e4: the only answered entries the baseline answered

    tags = {row.key: row for row in inhouse.breakdowns["tag"]}
    assert tags["stt_ambiguity"].n == 1 and tags["stt_ambiguity"].passed == 1
    assert [row.key for row in inhouse.breakdowns["intent"]][:2] == ["answered", "farewell"]
    assert summary.turns_not_in_golden == 1 and any("not in" in note for note in summary.notes)


def test_paired_comparison_and_baseline_verdicts(store: Store) -> None:
    summary = summarize_run(store, RUN, GOLDEN)
    comparisons = {c.system: c for c in summary.comparisons}
    assert set(comparisons) == {"baseline", "retell"}
    retell = comparisons["retell"].pass_rate
    assert (retell.n_pairs, retell.both, retell.only_a, retell.only_b, retell.neither) == (4, 3, 0, 1, 0)
    assert comparisons["retell"].ttft_ms.effect == pytest.approx(190.0)  # median of (retell - inhouse)
    assert comparisons["retell"].emulated
    verdicts = {v.metric: v for v in summary.baseline_verdicts}
    # 4 discordant pairs all favour the reference: p = 2 / 16, too few entries to call it
    assert verdicts["pass_rate"].p_value == pytest.approx(0.125)
    assert verdicts["pass_rate"].verdict == "not significant"
    assert verdicts["ttfa_ms"].verdict == "n/a"
    assert verdicts["ttft_ms"].reference_value < verdicts["ttft_ms"].baseline_value


def test_rescoring_gives_the_same_summary(store: Store) -> None:
    first = summarize_run(store, RUN, GOLDEN).model_dump_json()
    batch._MEMO.clear()  # the second summary reads the stored scores, as a new process would
    second = summarize_run(store, RUN, GOLDEN).model_dump_json()
    assert first == second
    assert json.loads(first)["schema_version"] == metrics.SUMMARY_SCHEMA_VERSION


def test_bulk_field_read_matches_the_records(store: Store) -> None:
    records = store.turns(RUN)
    rows = store.turn_fields(RUN, ["system_id", "entry_id", "ttft_ms", "billed_minutes"], ["vendor_latency_ms"])
    assert len(rows) == len(records)
    for row, record in zip(rows, records, strict=True):
        assert row[1:5] == (record.system_id, record.entry_id, record.ttft_ms, record.billed_minutes)
        assert json.loads(row[5]) == record.vendor_latency_ms
    by_rowid = store.turn_json_by_rowid([row[0] for row in rows])
    assert [TurnRecord.model_validate_json(by_rowid[row[0]]) for row in rows] == records



def test_scored_turns_and_summary_dataframes(store: Store) -> None:
    frame = scored_turns_dataframe(store, RUN, GOLDEN)
    assert len(frame) == len(_records())
    for column in (
        "system_id",
        "emulated",
        "passed",
        "check_numbers_as_words",
        "faithfulness_judge",
        "cost_usd",
        "language",
        "expected_intent",
        "safety",
        "tags",
        "reasons",
    ):
        assert column in frame.columns
    assert frame.loc[frame["system_id"] == "retell", "emulated"].all()
    table = summary_dataframe(summarize_run(store, RUN, GOLDEN))
    assert list(table["system"]) == ["inhouse", "baseline", "retell"]
    assert table.set_index("system").at["baseline", "pass_rate"] == pytest.approx(0.2)
    assert table.set_index("system").at["retell", "fluency"] == "not rated"


def test_fluency_hook_uses_reviewer_ratings(store: Store) -> None:
    ratings = pd.DataFrame(
        {
            "system_id": ["inhouse"] * 4,
            "entry_id": ["e1", "e1", "e2", "e2"],
            "rater_id": ["a", "b", "a", "b"],
            "rating": [4, 5, 3, 3],
        }
    )
    summary = summarize_run(store, RUN, GOLDEN, fluency_ratings=ratings)
    fluency = summary.system("inhouse").fluency
    assert fluency.status == "rated" and fluency.mean == pytest.approx(3.75)
    assert fluency.n_ratings == 4 and fluency.n_raters == 2
    assert fluency.agreement_alpha is not None
    assert summary.system("baseline").fluency.status == "not rated"


def test_both_criteria_sets_and_the_run_criteria(store: Store) -> None:
    summary = summarize_run(store, RUN, GOLDEN)
    assert summary.criteria == "seed003" and not summary.criteria_recorded  # the run recorded none
    assert any("recorded no criteria" in note for note in summary.notes)
    assert [c.name for c in summary.criteria_sets] == ["seed003", "strict"]
    inhouse = summary.system("inhouse")
    assert set(inhouse.pass_rates) == {"seed003", "strict"}
    assert inhouse.pass_rates["seed003"].rate == inhouse.pass_rate
    assert inhouse.pass_rates["strict"].unavailable is None and inhouse.pass_rates["strict"].rate.n == 5
    strict = summarize_run(store, RUN, GOLDEN, criteria="strict")
    assert strict.criteria == "strict" and strict.system("inhouse").pass_rate == inhouse.pass_rates["strict"].rate


def test_intent_sources_and_tool_call_compliance(store: Store) -> None:
    summary = summarize_run(store, RUN, GOLDEN)
    inhouse, baseline, retell = (summary.system(s).intent for s in ("inhouse", "baseline", "retell"))
    assert inhouse.sources == {"system_label": 5} and inhouse.tool_call_compliance is None
    assert "own intent label" in inhouse.compliance_note
    assert retell.sources == {"tool_call": 4}  # the failed execution (e1) is not a turn to judge
    assert (retell.tool_call_compliance.k, retell.tool_call_compliance.n) == (4, 4)
    assert baseline.sources == {"inferred": 5}  # no label, no tool call: inferred from what it said
    assert (baseline.tool_call_compliance.k, baseline.tool_call_compliance.n) == (0, 5)
    assert baseline.judge != "none"
    # nothing reported counts as wrong as reported; what was said is judged for every turn
    assert baseline.accuracy_reported.k == 0 and baseline.accuracy_said.n == 5


def test_latency_of_an_emulated_row_is_not_comparable_with_a_local_one(store: Store) -> None:
    summary = summarize_run(store, RUN, GOLDEN)
    comparisons = {c.system: c for c in summary.comparisons}
    assert summary.system("retell").latency_basis == "emulator profile"
    assert summary.system("inhouse").latency_basis == "in-process"
    assert comparisons["retell"].ttft_verdict == "not comparable" and not comparisons["retell"].latency_comparable
    assert comparisons["baseline"].latency_comparable  # two in-process rows
    verdicts = {v.metric: v for v in summary.baseline_verdicts}
    assert verdicts["ttft_ms"].verdict != "not comparable" and verdicts["ttft_ms"].min_effect == 5.0
    assert verdicts["pass_rate_strict"].label.startswith("Golden pass rate (strict")


def test_faithfulness_is_judged_against_the_shared_context(tmp_path: Path) -> None:
    store = Store(tmp_path / "ctx.sqlite")
    info = RunInfo(run_id="ctx", created_at="2026-12-01T00:00:00", finished_at=None, status="finished",
                   dataset_path="hand-made.json", dataset_sha256="f" * 64, trials=1, harness_version="t",
                   config={"criteria": "strict", "context_strategy": "shared_retriever"},
                   systems=[SystemInfo(id="a", adapter="x", mode="local"), SystemInfo(id="b", adapter="y",
                                                                                      mode="local")])
    store.create_run(info)
    answer = "De bezoekuren zijn van twee uur tot acht uur."
    shared = ["Bezoekuren: 14:00 tot 20:00."]
    # identical answers; b's own retrieval found nothing - it must not matter
    for system, own in (("a", shared), ("b", ["Parkeren kost twee euro."])):
        store.record_turn(TurnRecord(run_id="ctx", system_id=system, entry_id="e1", status="succeeded",
                                     answer=answer, conversational_intent="answered", retrieved_context=own,
                                     shared_context=shared))
    summary = summarize_run(store, "ctx", GOLDEN)
    a, b = summary.system("a").faithfulness, summary.system("b").faithfulness
    assert a.mean == b.mean and a.context_sources == b.context_sources == {CONTEXT_SHARED: 1}
    assert summary.context_strategy == "shared_retriever" and "same passages" in summary.context_note
    store.close()
    old = _store(tmp_path / "old")  # records without shared_context: each system's own, labelled
    summary = summarize_run(old, RUN, GOLDEN)
    assert summary.context_strategy == "not recorded"
    assert summary.system("inhouse").faithfulness.context_sources == {CONTEXT_OWN: 2}
    old.close()


def test_judged_columns_show_their_judge_and_calibration(store: Store, tmp_path: Path) -> None:
    from bench.scoring import checkers

    rows = [
        {"checker": "refusal.declines", "judge": checkers.name("refusal"), "language": "nl", "n": 40,
         "precision": 0.95, "recall": 0.9, "kappa": 0.88, "status": "ok"},
        {"checker": "faithfulness", "judge": OFFLINE_JUDGE_NAME, "language": "fr", "n": 40, "precision": 0.6,
         "recall": 0.5, "kappa": 0.31, "status": "UNCALIBRATED"},
        {"checker": "intent", "judge": "some-other-judge v9", "language": "all", "n": 160, "precision": 0.9,
         "recall": 0.9, "kappa": 0.9, "status": "ok"},
    ]
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps({"format": "voice-bench-calibration/1", "judges": {}, "results": rows}),
                    encoding="utf-8")
    summary = summarize_run(store, RUN, GOLDEN, calibration_path=path)
    columns = {c.checker: c for c in summary.judged_columns}
    assert columns["refusal"].status == "calibrated" and columns["refusal"].judge == checkers.name("refusal")
    assert columns["refusal"].calibration[0].language == "declines nl"
    assert columns["refusal"].calibration[0].kappa == pytest.approx(0.88)
    assert columns["faithfulness"].status == "uncalibrated" and "fr" in columns["faithfulness"].note
    assert "calibration measured some-other-judge v9" in columns["intent"].note  # not the judge used here
    assert columns["key_facts"].status == "not calibrated yet"
    missing = summarize_run(store, RUN, GOLDEN, calibration_path=tmp_path / "absent.json")
    assert {c.status for c in missing.judged_columns} == {"not calibrated yet"}


def test_min_effect_comes_from_the_run_config(tmp_path: Path) -> None:
    from bench.errors import ConfigError
    from bench.metrics.summary import configured_min_effect

    def run(config: dict) -> RunInfo:
        return RunInfo(run_id="m", created_at="", finished_at=None, status="", dataset_path="", dataset_sha256="",
                       trials=1, systems=[], config=config, harness_version="")

    assert configured_min_effect(run({})).latency_ms == 5.0
    assert configured_min_effect(run({"min_effect": {"latency_ms": 20}})).latency_ms == 20.0
    with pytest.raises(ConfigError, match="min_effect.latency"):
        configured_min_effect(run({"min_effect": {"latency": 20}}))
