"""The hospital scenario library: the whole library validates, bad entries are named, the SQLite tool backend keeps
the brief's rules, the caller answers by topic, and a few scenarios run end to end against the in-house desk with
their outcomes checked on each trial's database."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import yaml

from bench.errors import ValidationFailed
from bench.simulation.hospital import library
from bench.simulation.hospital.backend import HospitalBackend, ToolRefused
from bench.simulation.hospital.caller import TopicCaller, classify_topics
from bench.simulation.hospital.checks import LibraryProbe
from tests.simulation.conftest import load_json, run_cli

RUN_FILE = library.LIBRARY_DIR.parent / "run-hospital-library.yaml"


def test_the_whole_library_loads_and_covers_every_family_and_language():
    entries = [entry for entry, _ in library.load_all()]
    assert len(entries) >= 130
    table = library.coverage(entries)
    assert set(table) == set(library.FAMILIES)
    for family, row in table.items():
        assert row["total"] >= 13, family
        assert all(row[language] >= 3 for language in library.LANGUAGES), (family, row)
    splits = {entry.split for entry in entries}
    assert splits == {"dev", "heldout"}


def test_simulate_validate_passes_over_the_whole_library(capsys):
    assert run_cli("simulate", "validate", str(RUN_FILE)) == 0
    out = capsys.readouterr().out
    assert out.count("__fixture") >= 130
    assert run_cli("simulate", "coverage") == 0
    table = capsys.readouterr().out
    assert all(f"| {family} |" in table for family in library.FAMILIES)


def _entry(entry_id: str) -> dict:
    family = entry_id.split("-")[0]
    data = yaml.safe_load((library.LIBRARY_DIR / f"{family}.yaml").read_text(encoding="utf-8"))
    return next(e for e in data if e["id"] == entry_id)


def test_a_bad_entry_is_named_by_file_entry_and_field(tmp_path, capsys):
    entry = _entry("booking-en-001")
    entry["expect"]["database"][0]["where"]["colour"] = "blue"
    entry["caller"]["answers"]["favourite_food"] = "chips"
    path = tmp_path / "booking.yaml"
    path.write_text(yaml.safe_dump([entry], allow_unicode=True), encoding="utf-8")
    with pytest.raises(ValidationFailed) as raised:
        library.load_library(path)
    fields = {(p.file, p.entry, p.field) for p in raised.value.problems}
    assert (str(path), "booking-en-001", "caller.answers.favourite_food") in fields
    assert any(f[2] == "expect.database.0" and "colour" in p.message
               for f, p in zip(sorted(fields), sorted(raised.value.problems, key=lambda p: (p.file, p.entry, p.field)),
                               strict=True))
    run = tmp_path / "run.yaml"
    run.write_text(f"scenario_path: {path}\nendpoints:\n  - {{id: inhouse, adapter: inhouse, mode: local, options: "
                   "{orchestrator: 'adapters.inhouse.hospital.desk:HospitalDesk', speech_input: null}}\n",
                   encoding="utf-8")
    capsys.readouterr()
    assert run_cli("simulate", "validate", str(run)) == 2
    assert "favourite_food" in capsys.readouterr().err


def test_the_backend_refuses_changes_before_the_identity_check():
    fixture = _entry("booking-en-001")["fixture"]
    backend = HospitalBackend(fixture)
    try:
        patient = fixture["patients"][0]
        with pytest.raises(ToolRefused, match="identity"):
            backend.call_now("book_appointment", {"patient_id": patient["patient_id"], "department": "cardiology",
                                                  "day": "tuesday", "part_of_day": "afternoon"})
        wrong = backend.call_now("find_patient", {"name": patient["name"], "date_of_birth": "1900-01-01"})
        assert wrong == {"result": "not found"}
        found = backend.call_now("find_patient", {"name": patient["name"].upper(),
                                                  "date_of_birth": patient["date_of_birth"]})
        assert found["patient_id"] == patient["patient_id"]
        booked = backend.call_now("book_appointment", {"patient_id": patient["patient_id"], "department": "cardiology",
                                                       "day": "Tuesday", "part_of_day": "afternoon"})
        assert booked["status"] == "booked"
        with pytest.raises(ToolRefused, match="department"):
            backend.call_now("book_appointment", {"patient_id": patient["patient_id"], "department": "dentistry",
                                                  "day": "tuesday", "part_of_day": "afternoon"})
        other = fixture["appointments"][0]["appointment_id"]  # another patient's: not verified in this call
        with pytest.raises(ToolRefused, match="identity"):
            backend.call_now("cancel_appointment", {"appointment_id": other})
        backend.call_now("hand_over_to_emergency", {"reason": "chest pain"})
        assert [r["kind"] for r in backend.rows("handoffs")] == ["emergency"]
        assert len(backend.rows("appointments", {"patient_id": patient["patient_id"]})) == 1
        assert [c.name for c in backend.calls if c.refused] == ["book_appointment", "book_appointment",
                                                                "cancel_appointment"]
    finally:
        backend.close()


def test_database_checks_report_the_reason_they_failed():
    entry = library.LibraryScenario.model_validate(_entry("booking-en-001"))
    backend = HospitalBackend(entry.fixture.model_dump(mode="json"))
    try:
        probe = LibraryProbe(entry.expect.model_dump(mode="json"))
        results = probe.check({"tool_backend": backend, "tool_calls": [], "transcript": [
            {"role": "assistant", "content": "Goodbye!"}]})
        assert results["database[0]"] == "appointments where patient_id=P-2101, department=cardiology: 0 row(s), " \
                                         "expected 1"
        assert results["tools.must_call.find_patient"] == "find_patient was never called"
        assert results["conversation.must_end_politely"] is True
        assert set(results) == set(library.check_names(entry.expect))
    finally:
        backend.close()


@pytest.mark.parametrize(("reply", "topics"), [
    ("May I have the patient's full name and date of birth?", ["date_of_birth", "name"]),
    ("Mag ik uw geboortedatum?", ["date_of_birth"]),
    ("Pour quel service ?", ["department"]),
    ("Quale giorno preferisce, e di mattina o di pomeriggio?", ["part_of_day", "day"]),
    ("Voulez-vous que j'annule le rendez-vous ?", ["confirm"]),
    ("Kan ik u nog ergens anders mee helpen?", ["anything_else"]),
    ("The weather is nice.", ["other"]),
])
def test_the_caller_hears_what_the_agent_asks_in_four_languages(reply, topics):
    assert classify_topics(reply)[: len(topics)] == topics


def test_the_caller_switches_language_and_barges_in_on_its_turn():
    entry = library.LibraryScenario.model_validate(_entry("language_switch-en-001"))
    caller = TopicCaller(entry.caller.model_copy(update={"interrupt": library.Interrupt(turn=2, after_ms=500,
                                                                                      say="Sorry, one thing!")}))
    opening = asyncio.run(caller.next_line("", []))
    assert opening is not None and opening.text == entry.caller.opening
    assert caller.barge_in_for(opening) is None
    line = asyncio.run(caller.next_line("What is your name?", []))
    assert line is not None and line.text == entry.caller.answers_after_switch.name  # switch at caller turn 2
    barge = caller.barge_in_for(line)
    assert barge is not None and barge.interrupt_at_ms == 500


@pytest.fixture
def few_scenarios(tmp_path) -> Path:
    """Four dev scenarios (booking, emergency, visiting hours, cancel) in a library file of their own."""
    entries = [_entry(i) for i in ("booking-en-001", "emergency-en-002", "visiting_hours-en-001", "cancel-en-002")]
    folder = tmp_path / "library"
    folder.mkdir()
    (folder / "few.yaml").write_text(yaml.safe_dump(entries, allow_unicode=True, sort_keys=False), encoding="utf-8")
    run = yaml.safe_load(RUN_FILE.read_text(encoding="utf-8"))
    run["scenario_path"] = "library/"
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(run), encoding="utf-8")
    return path


def test_a_few_scenarios_pass_end_to_end_against_the_inhouse_desk(few_scenarios, tmp_path, capsys):
    artifacts = tmp_path / "out"
    code = run_cli("simulate", "run", str(few_scenarios), "--no-audio", "--artifacts-dir", str(artifacts),
                   "--no-progress", "--trials", "1")
    out = capsys.readouterr().out
    report = load_json(artifacts / "run-report.json")
    assert code == 0, out
    assert {c["scenario_id"] for c in report["cells"]} == {"booking-en-001", "emergency-en-002",
                                                           "visiting_hours-en-001", "cancel-en-002"}
    assert {row["family"] for row in report["families"]} == {"booking", "emergency", "visiting_hours", "cancel"}
    assert "pass^k and churn per scenario family" in out
    for cell in report["cells"]:
        trial = load_json(Path(cell["trials"][0]["bundle_path"]) / "trial-report.json")
        outcome = trial["outcome"]
        assert outcome and all(value is True for value in outcome.values()), outcome
        calls = [c["name"] for c in json.loads((Path(trial["bundle_path"]) / "tool-calls.json").read_text())]
        if cell["scenario_id"] == "booking-en-001":
            assert calls[:1] == ["find_patient"] and "book_appointment" in calls
        if cell["scenario_id"] == "emergency-en-002":
            assert calls == ["hand_over_to_emergency"]


def test_an_expectation_the_database_does_not_meet_fails_with_its_reason(few_scenarios, tmp_path):
    file = few_scenarios.parent / "library" / "few.yaml"
    entries = yaml.safe_load(file.read_text(encoding="utf-8"))
    entries = [e for e in entries if e["id"] == "visiting_hours-en-001"]
    entries[0]["expect"]["database"].append({"table": "handoffs", "where": {"kind": "nurse_line"}, "count": 1})
    file.write_text(yaml.safe_dump(entries, allow_unicode=True, sort_keys=False), encoding="utf-8")
    artifacts = tmp_path / "out"
    assert run_cli("simulate", "run", str(few_scenarios), "--no-audio", "--artifacts-dir", str(artifacts),
                   "--no-progress") == 3
    report = load_json(artifacts / "run-report.json")
    trial = load_json(Path(report["cells"][0]["trials"][0]["bundle_path"]) / "trial-report.json")
    failed = [v for v in trial["verdicts"] if not v["passed"]]
    assert [v["name"] for v in failed] == [f"outcome_database[{len(entries[0]['expect']['database']) - 1}]"]
    assert "handoffs where kind=nurse_line: 0 row(s), expected 1" in failed[0]["detail"]


def test_pass_power_k_and_churn_per_family():
    from bench.simulation.report import family_lines, family_summary

    def cell(scenario: str, *passed: bool) -> dict:
        return {"system_id": "inhouse", "scenario_id": scenario, "tags": ["hospital"],
                "trials": [{"passed": p, "execution_status": "succeeded"} for p in passed]}

    rows = family_summary([cell("booking-en-001", True, True, True), cell("booking-nl-002", True, False, True),
                           cell("cancel-fr-001", False, False, False),
                           {**cell("cancel-it-002", True, True), "trials": [
                               {"passed": True, "execution_status": "succeeded"},
                               {"passed": None, "execution_status": "failed"}]}])
    booking, cancel = rows
    assert (booking["family"], booking["pass_power_k"]["k"], booking["pass_power_k"]["n"]) == ("booking", 1, 2)
    assert (booking["churn"]["k"], booking["pass_at_k"]["k"], booking["trials"]) == (1, 2, 3)
    assert (cancel["scenarios"], cancel["complete"], cancel["pass_power_k"]["k"]) == (2, 1, 0)
    assert any("| booking | 2/2 complete, k=3 | 1/2 = 0.50" in line for line in family_lines(rows))
