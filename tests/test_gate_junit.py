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


def test_xml_text_replaces_only_what_xml_cannot_hold():
    assert xml_text("a\tb\nc\r") == "a\tb\nc\r"
    assert xml_text("a\x00b\x1fc") == "a\ufffdb\ufffdc"
