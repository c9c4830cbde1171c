"""The hospital example: booking and escalation through tools that write to its SQLite hospital system, against
the in-house stack and every emulated vendor; the outcome probe reads the database."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from tests.simulation.conftest import copy_example, edit_yaml, load_json, run_cli


@pytest.fixture
def hospital(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("VOICE_BENCH_HOSPITAL_DB", str(tmp_path / "hospital.sqlite"))
    folder = copy_example("hospital", tmp_path / "hospital")
    shutil.copytree(Path(__file__).resolve().parents[2] / "bench" / "data" / "simulation" / "noise", tmp_path / "noise",
                    ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    return folder / "run-hospital.yaml"


def _run(run: Path, artifacts: Path, *extra: str) -> int:
    return run_cli("simulate", "run", str(run), "--artifacts-dir", str(artifacts), "--no-progress", "--trials", "1",
                   *extra)


def test_booking_and_escalation_against_the_inhouse_stack_and_every_emulated_vendor(hospital, tmp_path):
    artifacts = tmp_path / "out"
    assert _run(hospital, artifacts, "--no-audio", "--parallel", "3") == 0
    report = load_json(artifacts / "run-report.json")
    systems = {c["system_id"] for c in report["cells"]}
    assert systems == {"inhouse", "openai-realtime", "deepgram-agent", "elevenlabs-agent", "vapi", "retell",
                       "livekit-baseline"}
    assert all(c["pass_power_k"] for c in report["cells"])
    with sqlite3.connect(tmp_path / "hospital.sqlite") as conn:
        booked = {row[0] for row in conn.execute("SELECT conversation_id FROM appointments")}
        tickets = {row[0] for row in conn.execute("SELECT conversation_id FROM escalations")}
        patients = {row[0] for row in conn.execute("SELECT patient FROM appointments")}
    assert patients == {"Maria Jansen"}  # the system under test's own database holds the data's patient
    for cell in report["cells"]:
        trial = load_json(Path(cell["trials"][0]["bundle_path"]) / "trial-report.json")
        outcome = trial["outcome"]
        if cell["scenario_id"] == "hospital-booking":
            # the exported bundle does not: personal data is redacted (bench.privacy)
            assert outcome["appointment_booked"] and outcome["patient"] == "[NAME]"
            assert trial["session_id"] in booked and trial["session_id"] not in tickets
            assert [c["name"] for c in outcome["tool_calls"]] == ["book_appointment"]
        else:
            assert outcome["escalation_created"] and not outcome["appointment_booked"]
            assert trial["session_id"] in tickets
        assert trial["exit_reason"] == "script_exhaustion"


def test_a_spoken_booking_without_a_row_fails(hospital, tmp_path):
    # a defective integration: the agent says "booked" but never calls the booking tool
    edit_yaml(hospital, lambda d: next(e for e in d["endpoints"] if e["id"] == "openai-realtime")[
        "answerer_options"].update(write_bookings=False))
    artifacts = tmp_path / "out"
    assert _run(hospital, artifacts, "--no-audio", "--systems", "openai-realtime", "--tags", "booking") == 3
    trial = load_json(artifacts / "trial-001" / "trial-report.json")
    verdicts = {v["name"]: v["passed"] for v in trial["verdicts"]}
    assert verdicts["expected_topics"] is True  # it did say "appointment … booked"
    assert verdicts["outcome_appointment_booked"] is False and trial["outcome"]["appointments"] == 0
    assert trial["critical_failures"] == ["outcome_appointment_booked", "outcome_department", "outcome_patient"]


@pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng not installed")
def test_audio_booking_with_environment_noise_on_the_evaluator_side(hospital, tmp_path):
    artifacts = tmp_path / "out"
    assert _run(hospital, artifacts, "--systems", "openai-realtime", "--tags", "booking") == 0
    folder = artifacts / "trial-001"
    trial = load_json(folder / "trial-report.json")
    assert trial["input_mode"] == "audio" and trial["outcome"]["appointment_booked"]
    metrics = load_json(folder / "voice-metrics.json")
    transients = [t for turn in metrics["turns"] if turn["environment"] for t in turn["environment"]["transients"]]
    assert [t["file"].rsplit("/", 1)[-1] for t in transients] == ["door-close.wav"]
    assert metrics["turns"][1]["environment"]["transients"]  # on turn 2
    assert all(turn["caller_heard_latency_ms"] is not None for turn in metrics["turns"])
    events = [json.loads(line) for line in (folder / "voice-events.jsonl").read_text().splitlines()]
    assert sum(1 for e in events if e["event_type"] == "environment.mixed") == len(metrics["turns"])

    def samples(name: str) -> np.ndarray:
        return np.frombuffer((folder / name).read_bytes()[44:], dtype="<i2")

    caller, agent = samples("technician.wav"), samples("product.wav")
    first = metrics["turns"][0]
    start = int(first["user_speech_start_ms"] * 24)  # the 200 ms before the caller's first word: the room only
    room = caller[start - 4000:start - 800].astype(np.float64)
    assert np.sqrt(np.mean(room ** 2)) > 20
    # the agent's track stays clean: digital silence before its first reply
    assert not agent[: int(first["user_speech_end_ms"] * 24)].any()
