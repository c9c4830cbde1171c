"""JUnit XML from the gate: valid XML for any answer text, one testcase per entry the run actually ran."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from bench.gate import evaluate_gate, write_junit, xml_text
from bench.records import TurnRecord
from bench.store import RunInfo, Store, SystemInfo


def test_junit_parses_with_control_characters_and_lists_only_run_entries(golden, tmp_path):
    store = Store(tmp_path / "s.sqlite")
    store.create_run(RunInfo(run_id="r", created_at="t", finished_at=None, status="completed",
                             dataset_path=golden.path, dataset_sha256=golden.sha256, trials=1,
                             systems=[SystemInfo(id="inhouse", adapter="inhouse", mode="local")], config={},
                             harness_version="t"))
    ran = golden.entries[:3]
    nasty = "Bel ons\x00 op \x1b[31m nul\x0b \ud800 twee \ufffe."
    for entry in ran:
        store.record_turn(TurnRecord(run_id="r", system_id="inhouse", entry_id=entry.id, status="succeeded",
                                     answer=nasty, conversational_intent="answered"))
    result = evaluate_gate(store, "r", "inhouse", golden, 0.95)
    out = tmp_path / "junit.xml"
    write_junit(out, store, result, golden)
    root = ET.parse(out).getroot()  # the standard parser rejects invalid XML characters
    cases = root.findall(".//testcase")
    assert [c.get("name") for c in cases] == [e.id for e in ran]
    suite = root.find("testsuite")
    assert suite.get("tests") == "3" and suite.get("skipped") == "0"
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["criteria"] == "seed003" and props["run_id"] == "r"


def test_the_gate_follows_the_run_criteria_and_the_flag(golden, tmp_path):
    store = Store(tmp_path / "c.sqlite")
    store.create_run(RunInfo(run_id="r", created_at="t", finished_at=None, status="completed",
                             dataset_path=golden.path, dataset_sha256=golden.sha256, trials=1,
                             systems=[SystemInfo(id="inhouse", adapter="inhouse", mode="local")],
                             config={"criteria": "strict"}, harness_version="t"))
    answered = [e for e in golden.entries if e.voice_expected.conversational_intent == "answered"][:2]
    for entry, answer in zip(answered, ("We are open until five.", "The car park is free."), strict=True):
        store.record_turn(TurnRecord(run_id="r", system_id="inhouse", entry_id=entry.id, status="succeeded",
                                     answer=answer, conversational_intent="answered"))
    strict = evaluate_gate(store, "r", "inhouse", golden, 0.95)  # the run recorded strict
    assert strict.criteria == "strict" and (strict.report.passed, strict.report.total) == (1, 2)
    assert strict.exit_code == 3
    seed = evaluate_gate(store, "r", "inhouse", golden, 0.95, criteria="seed003")
    assert seed.exit_code == 0 and seed.report.pass_rate == 1.0
    out = tmp_path / "junit.xml"
    write_junit(out, store, strict, golden)
    failures = ET.parse(out).getroot().findall(".//failure")
    assert len(failures) == 1 and "key facts" in failures[0].get("message")


def test_xml_text_replaces_only_what_xml_cannot_hold():
    assert xml_text("a\tb\nc\r") == "a\tb\nc\r"
    assert xml_text("a\x00b\x1fc") == "a\ufffdb\ufffdc"
